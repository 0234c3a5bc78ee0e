"""Chapter 6 Figs. 6.24/6.30 helpers: the topic source, the residual stream and the linear probe."""

import numpy as np
import pytest
import torch

from nextword.torch.probes.layer_probe import hidden_states, probe_accuracy, topic_markov_source
from nextword.torch.models.lm import LMConfig, TinyLM


def test_source_rows_are_distributions_and_samples_follow_them():
    src = topic_markov_source(2, 4, rng=np.random.default_rng(0))
    np.testing.assert_allclose(src.transitions.sum(-1), 1.0)
    ids, topics = src.sample(4000, 2, rng=np.random.default_rng(1))
    for k in range(2):
        sel = (topics == k) & (ids[:, 0] == 0)
        freq = np.bincount(ids[sel, 1], minlength=4) / sel.sum()
        assert np.max(np.abs(freq - src.transitions[k, 0])) < 0.1


def test_hidden_states_end_in_the_logits():
    model = TinyLM(LMConfig(vocab_size=5, d_model=8, num_heads=2, num_layers=2, max_len=6), seed=0)
    ids = np.random.default_rng(0).integers(0, 5, size=(3, 6))
    hs = hidden_states(model, ids)
    assert len(hs) == 3 and hs[0].shape == (3, 6, 8)
    with torch.no_grad():
        logits = model(torch.as_tensor(ids)).double().numpy()
        top = (
            model.norm_f(torch.as_tensor(hs[-1], dtype=torch.float32)).double().numpy()
            @ model.W_U.detach().double().numpy()
        )
    np.testing.assert_allclose(top, logits, atol=1e-5)


def test_probe_finds_a_linear_label_and_not_noise():
    rng = np.random.default_rng(2)
    F = rng.normal(size=(400, 3))
    assert probe_accuracy(F, (F[:, 0] > 0).astype(int)) > 0.95
    assert probe_accuracy(F, rng.integers(0, 2, size=400)) < 0.65
    with pytest.raises(ValueError, match="features"):
        probe_accuracy(F[:, 0], F[:, 0])
