"""One training loop: engine.fit drives both the §7 barrier runs and TinyLM's train_lm, and train_lm can
checkpoint and resume with exactly the losses of an uninterrupted run."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from nextword.torch.models.lm import LMConfig, TinyLM  # noqa: E402
from nextword.torch.training.token_lm import train_lm  # noqa: E402
from nextword.torch.barrier import train as loop  # noqa: E402
from nextword.torch.training import engine, token_lm  # noqa: E402
from nextword.torch.training.checkpoint import CheckpointError  # noqa: E402

CFG = LMConfig(vocab_size=5, d_model=8, num_heads=2, num_layers=1, max_len=16)
IDS = np.tile(np.arange(5), 40)


def test_fit_runs_each_step_once_and_checkpoints_on_the_cadence_and_at_the_end():
    seen, saved = [], []
    assert engine.fit(seen.append, start=0, stop=5, checkpoint=saved.append, checkpoint_every=2) == 5
    assert seen == [0, 1, 2, 3, 4] and saved == [2, 4, 5]
    assert engine.fit(seen.append, start=5, stop=5) == 5 and len(seen) == 5  # nothing left to do
    with pytest.raises(ValueError, match="stop must be >= start"):
        engine.fit(seen.append, start=3, stop=2)


def test_train_lm_and_the_barrier_loop_step_through_fit(monkeypatch, tmp_path):
    calls = []
    real = engine.fit

    def spy(step, **kw):
        calls.append(kw["stop"] - kw["start"])
        return real(step, **kw)

    monkeypatch.setattr(token_lm, "fit", spy)
    monkeypatch.setattr(loop, "fit", spy)
    train_lm(TinyLM(CFG, seed=0), IDS, steps=3, batch_size=2, block_size=8, seed=0, progress=False)
    from nextword.torch.barrier.config import preset

    loop.train(preset("tiny", steps=2, eval_every=2), tmp_path, progress=False, device="cpu")
    assert calls == [3, 2]


def test_train_lm_resumes_exactly(tmp_path):
    whole = train_lm(TinyLM(CFG, seed=0), IDS, steps=7, batch_size=4, block_size=8, seed=1, progress=False)
    rng = np.random.default_rng(1)
    first = token_lm.train_lm(
        TinyLM(CFG, seed=0), IDS, steps=7, batch_size=4, block_size=8, rng=rng, out_dir=tmp_path, stop_after=3
    )
    model = TinyLM(CFG, seed=0)  # a fresh process: new model, new generator, same seed
    rest = train_lm(
        model, IDS, steps=7, batch_size=4, block_size=8, seed=1, progress=False, out_dir=tmp_path, resume=True
    )
    assert len(first) == 3 and rest == whole  # bit for bit
    with pytest.raises(CheckpointError, match="other settings"):
        train_lm(
            TinyLM(CFG, seed=0),
            IDS,
            steps=7,
            batch_size=4,
            block_size=8,
            lr=1e-2,
            seed=1,
            progress=False,
            out_dir=tmp_path,
            resume=True,
        )


def test_train_lm_rejects_bad_options():
    with pytest.raises(TypeError, match="exactly one of seed"):
        train_lm(TinyLM(CFG), IDS, steps=1, batch_size=2, block_size=4)
    with pytest.raises(ValueError, match="resume and stop_after need out_dir"):
        token_lm.train_lm(
            TinyLM(CFG), IDS, steps=1, batch_size=2, block_size=4, rng=np.random.default_rng(0), resume=True
        )
    with pytest.raises(TypeError, match="rng must be a np.random.Generator"):
        token_lm.train_lm(TinyLM(CFG), IDS, steps=1, batch_size=2, block_size=4, rng=0)


def test_hybrid_svflow_training_steps_through_fit_and_resumes_exactly(monkeypatch, tmp_path):
    """Page 5.4's hybrid SVFlow runs on the same loop: a run stopped after 3 of 6 steps and resumed in a
    fresh model returns the log and weights of an uninterrupted run, bit for bit."""
    from nextword.torch.svflow import hybrid
    from nextword.torch.svflow.hybrid import HybridConfig, make_moons, train_hybrid

    calls = []
    real = engine.fit
    monkeypatch.setattr(hybrid, "fit", lambda step, **kw: calls.append(kw["stop"] - kw["start"]) or real(step, **kw))
    X, y = make_moons(64, 0.1, np.random.default_rng(0))
    cfg = HybridConfig(betas=(0.5, None), steps=6, batch_size=16, dt=0.1)
    whole, log = train_hybrid(cfg, X, y)
    _, first = train_hybrid(cfg, X, y, out_dir=tmp_path, stop_after=3, checkpoint_every=2)
    rest, log2 = train_hybrid(cfg, X, y, out_dir=tmp_path, resume=True)
    assert calls == [6, 3, 3] and first.shape == (3, 2, 3) and log.shape == (6, 2, 3)
    assert np.array_equal(log2, log)
    for (name, a), b in zip(whole.state_dict().items(), rest.state_dict().values(), strict=True):
        assert torch.equal(a, b), name
    with pytest.raises(CheckpointError, match="other settings"):
        train_hybrid(
            HybridConfig(betas=(0.5, None), steps=6, batch_size=16, dt=0.1, lr=0.02),
            X,
            y,
            out_dir=tmp_path,
            resume=True,
        )
    with pytest.raises(ValueError, match="resume and stop_after need out_dir"):
        train_hybrid(cfg, X, y, resume=True)


def test_multi_tensor_optimisers_take_bitwise_the_same_steps(monkeypatch):
    """train_lm and train_hybrid build their optimisers with ``foreach=True`` (one call per step, faster);
    a run with torch's per-parameter loop instead gives the same losses and weights, bit for bit."""
    from nextword.torch.svflow import hybrid
    from nextword.torch.svflow.hybrid import HybridConfig, make_moons, train_hybrid

    X, y = make_moons(64, 0.1, np.random.default_rng(0))
    hcfg = HybridConfig(betas=(0.5, None), steps=8, batch_size=16, dt=0.1)

    def runs():
        model = TinyLM(CFG, seed=0)
        losses = token_lm.train_lm(model, IDS, steps=12, batch_size=4, block_size=8, rng=np.random.default_rng(0))
        hmodel, log = train_hybrid(hcfg, X, y)
        return losses, log, [p.detach().clone() for p in (*model.parameters(), *hmodel.parameters())]

    multi = runs()
    for module, name in ((token_lm.torch.optim, "AdamW"), (hybrid.torch.optim, "Adam")):
        real = getattr(module, name)
        monkeypatch.setattr(module, name, lambda params, _real=real, **kw: _real(params, **{**kw, "foreach": False}))
    single = runs()
    assert multi[0] == single[0] and np.array_equal(multi[1], single[1])
    assert all(torch.equal(a, b) for a, b in zip(multi[2], single[2], strict=True))
