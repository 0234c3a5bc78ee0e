"""Tests of nextword.torch.probes.ablation: honest vs teacher-forced losses, test-time config changes, position curves."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from nextword.torch.probes.ablation import (  # noqa: E402
    ABLATIONS,
    ablated_config,
    position_losses,
    prefix_nll,
    token_nll,
    with_config,
)
from nextword.torch.models.lm import LMConfig, TinyLM  # noqa: E402
from nextword.torch.training.token_lm import evaluate_loss  # noqa: E402


def _model(**kw):
    cfg = LMConfig(vocab_size=7, d_model=8, num_heads=2, num_layers=2, max_len=12, init_std=0.3, **kw)
    return TinyLM(cfg, seed=0)


IDS = np.random.default_rng(0).integers(0, 7, size=(5, 10))


def test_prefix_equals_teacher_forced_for_causal_model_only():
    m = _model()
    np.testing.assert_allclose(prefix_nll(m, IDS), token_nll(m, IDS), atol=1e-5)
    leaky = _model(causal=False)
    gap = np.abs(prefix_nll(leaky, IDS) - token_nll(leaky, IDS))
    assert gap[:, -1].max() < 1e-5  # the last prediction sees the same tokens either way
    assert gap[:, :-1].max() > 1e-3  # earlier ones see the future when teacher-forced


def test_token_nll_matches_evaluate_loss():
    m = _model()
    assert token_nll(m, IDS).mean() == pytest.approx(evaluate_loss(m, IDS), rel=1e-5)


def test_with_config_keeps_weights():
    m = _model()
    x = torch.from_numpy(IDS[:, :-1])
    with torch.no_grad():
        same = with_config(m)(x)
        np.testing.assert_allclose(same.numpy(), m(x).numpy(), atol=1e-6)
        open_mask = with_config(m, causal=False)(x)
        assert not np.allclose(open_mask.numpy(), m(x).numpy(), atol=1e-4)
    learned = _model(positional="learned")
    nopos = with_config(learned, positional="none")
    assert nopos.pos_emb is None and nopos.config.positional == "none"
    with pytest.raises(ValueError, match="alter the parameters"):
        with_config(m, d_ff=8)


def test_ablated_config():
    base = _model().config
    for name, change in ABLATIONS.items():
        cfg = ablated_config(base, name)
        assert all(getattr(cfg, k) == v for k, v in change.items())
    assert ablated_config(base, "baseline") is base
    with pytest.raises(ValueError, match="baseline"):
        ablated_config(base, "no norm")


def test_position_losses():
    stream = np.random.default_rng(1).integers(0, 7, size=400)
    m = _model()
    curve = position_losses(m, stream, 9, num_windows=8)
    windows = stream[:80].reshape(8, 10)
    np.testing.assert_allclose(curve, token_nll(m, windows).mean(0), atol=1e-12)
    longer = position_losses(m, stream, 20, num_windows=8)  # sinusoidal: defined beyond max_len
    assert np.all(np.isfinite(longer))
    assert np.all(np.isnan(position_losses(_model(positional="learned"), stream, 20, num_windows=8)))
    with pytest.raises(ValueError, match="stream has"):
        position_losses(m, stream[:50], 9, num_windows=8)
