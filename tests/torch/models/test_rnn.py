"""Tests for nextword.torch.models.rnn (the recurrent baseline trained with nextword.torch.models.lm.train_lm)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from nextword.chapter6 import copy_task  # noqa: E402
from nextword.torch.training.token_lm import evaluate_loss, torch_threads, train_lm  # noqa: E402
from nextword.torch.models.rnn import RecurrentConfig, RecurrentLM  # noqa: E402


def test_recurrent_lm_is_causal_and_trains():
    with torch_threads(1):
        m = RecurrentLM(RecurrentConfig(vocab_size=4, hidden_size=8), seed=0)
        ids = torch.tensor([[0, 1, 2, 3, 0]])
        alt = ids.clone()
        alt[0, 3:] = 1
        with torch.no_grad():
            assert torch.equal(m(ids)[:, :3], m(alt)[:, :3])
        data, mask = copy_task(200, 2, 3, np.random.default_rng(0))
        before = evaluate_loss(m, data, loss_mask=mask)
        train_lm(m, data, steps=40, batch_size=16, lr=1e-2, seed=0, loss_mask=mask, progress=False)
        assert evaluate_loss(m, data, loss_mask=mask) < before


def test_seed_is_reproducible_and_leaves_global_rng():
    torch.manual_seed(5)
    expected = torch.rand(2)
    torch.manual_seed(5)
    a = RecurrentLM(RecurrentConfig(vocab_size=4, hidden_size=8, cell="rnn"), seed=1)
    assert torch.equal(torch.rand(2), expected)
    b = RecurrentLM(RecurrentConfig(vocab_size=4, hidden_size=8, cell="rnn"), seed=1)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))


def test_bad_config():
    with pytest.raises(ValueError, match="cell"):
        RecurrentConfig(vocab_size=4, hidden_size=8, cell="lstm")
    with pytest.raises(ValueError, match="hidden_size"):
        RecurrentConfig(vocab_size=4, hidden_size=0)
    with pytest.raises(ValueError, match="vocab_size"):
        RecurrentLM(RecurrentConfig(vocab_size=4, hidden_size=8))(torch.tensor([[4]]))
