"""The perturbation pass (NEXTWORD_PERTURB): off by default, a fixed small nudge when set, read by the trainers."""

from __future__ import annotations

import numpy as np
import pytest

from nextword.perturbation import ENV, SCALE, nudge, perturbation
from nextword.theory.dynamics.gradients import HeadParams
from nextword.theory.dynamics.toy import ToyConfig, simulate_toy
from nextword.theory.formulation.objectives import fit_table


def test_off_by_default_and_when_zero(monkeypatch):
    w = np.arange(6.0).reshape(2, 3)
    for value in (None, "", "0"):
        if value is None:
            monkeypatch.delenv(ENV, raising=False)
        else:
            monkeypatch.setenv(ENV, value)
        assert perturbation() == 0 and nudge(w, "w") is w


@pytest.mark.parametrize("bad", ["-1", "yes", "0.5"])
def test_bad_value_is_named(monkeypatch, bad):
    monkeypatch.setenv(ENV, bad)
    with pytest.raises(ValueError, match=ENV):
        perturbation()


def test_nudge_is_small_deterministic_and_pattern_dependent(monkeypatch):
    w = np.ones((4, 5), dtype=np.float32)
    monkeypatch.setenv(ENV, "1")
    a, b = nudge(w, "w"), nudge(w, "w")
    assert a.dtype == np.float32 and np.array_equal(a, b) and not np.array_equal(a, w)
    assert np.abs(a - 1).max() <= SCALE * (1 + 1e-6)
    assert not np.array_equal(a, nudge(w, "v"))  # another weight, another pattern
    monkeypatch.setenv(ENV, "2")
    assert not np.array_equal(a, nudge(w, "w"))  # another pattern number
    with pytest.raises(TypeError, match="float"):
        nudge(np.arange(3), "ids")


def test_numpy_trainers_read_it(monkeypatch):
    cfg = ToyConfig(steps=5)
    monkeypatch.delenv(ENV, raising=False)
    plain = simulate_toy(cfg, rng=np.random.default_rng(0))
    W = np.random.default_rng(1).normal(size=(3, 3))
    counts = np.random.default_rng(2).integers(0, 5, size=(3, 3)).astype(float)
    table, _ = fit_table(W, counts, steps=3)
    p = HeadParams.init(3, 2, 2, 2, rng=np.random.default_rng(0))
    assert p.nudged() is p
    monkeypatch.setenv(ENV, "1")
    nudged = simulate_toy(cfg, rng=np.random.default_rng(0))
    assert not np.array_equal(plain.losses, nudged.losses)
    np.testing.assert_allclose(plain.losses, nudged.losses, rtol=1e-2)  # a nudge, not another run
    table2, _ = fit_table(W, counts, steps=3)
    assert not np.array_equal(table, table2) and np.abs(table - table2).max() < 1e-2
    assert p.nudged() is not p


def test_torch_trainer_reads_it(monkeypatch):
    pytest.importorskip("torch")
    from nextword.torch.models.lm import LMConfig, TinyLM
    from nextword.torch.training.token_lm import train_lm

    cfg = LMConfig(vocab_size=5, d_model=8, num_heads=2, num_layers=1, max_len=8)
    data = np.random.default_rng(0).integers(0, 5, size=200)

    def run():
        model = TinyLM(cfg, seed=0)
        return train_lm(model, data, steps=3, batch_size=4, block_size=6, seed=0, progress=False)

    monkeypatch.delenv(ENV, raising=False)
    plain = run()
    assert run() == plain
    monkeypatch.setenv(ENV, "1")
    nudged = run()
    assert nudged != plain and nudged == run()
    np.testing.assert_allclose(plain, nudged, rtol=1e-2)
