"""Barrier training: exact resume, atomic weights-only checkpoints, λ = 0 freezes W, CLI, sweep."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")

from nextword.torch import cli  # noqa: E402
from nextword.torch.training.data import load_char_data  # noqa: E402
from nextword.torch.training.checkpoint import CKPT, RESULTS, save_json  # noqa: E402
from nextword.torch.barrier.config import PRESETS, preset  # noqa: E402
from nextword.torch.barrier.train import build, code_hash, load_checkpoint, lr_at, train, train_or_load  # noqa: E402


@pytest.fixture(scope="module")
def data():
    return load_char_data("shakespeare", max_chars=PRESETS["tiny"].max_chars)


def _state(path):
    return torch.load(path / CKPT, weights_only=True)


def test_resume_gives_exactly_the_uninterrupted_result(tmp_path, data):
    cfg = preset("tiny", lambda_margin=0.5, margin_positions=5)
    full = train(cfg, tmp_path / "full", progress=False, data=data)
    part = train(cfg, tmp_path / "split", progress=False, data=data, max_steps_this_run=4)
    assert not part["finished"] and part["steps"] == 4
    resumed = train(cfg, tmp_path / "split", progress=False, data=data, resume=True)
    assert resumed["finished"]
    assert resumed["final_train_loss"] == full["final_train_loss"]
    assert resumed["history"] == full["history"]
    a, b = _state(tmp_path / "full"), _state(tmp_path / "split")
    for k in a["model"]:
        assert torch.equal(a["model"][k], b["model"][k]), k
    assert torch.equal(a["prior"]["W"], b["prior"]["W"])


def test_checkpoint_is_weights_only_and_atomic(tmp_path, data):
    cfg = preset("tiny", steps=2, eval_every=2)
    train(cfg, tmp_path, progress=False, data=data)
    ck = _state(tmp_path)  # weights_only=True load
    assert set(ck) >= {"model", "prior", "optimizer", "rng", "config", "state"}
    assert ck["state"]["step"] == 2
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp files left
    gpt, prior, cfg2, _ = load_checkpoint(tmp_path / CKPT)
    assert cfg2 == cfg and prior.W.shape == (cfg.model.d_model, cfg.model.d_model)


def test_lambda_zero_leaves_prior_untouched_and_margin_moves_W(tmp_path, data):
    cfg0 = preset("tiny", lambda_margin=0.0)
    train(cfg0, tmp_path / "ce", progress=False, data=data)
    W0 = build(cfg0, data.vocab.vocab_size, torch.device("cpu"))[1].W.detach()
    assert torch.equal(_state(tmp_path / "ce")["prior"]["W"], W0)
    cfg1 = preset("tiny", lambda_margin=1.0)
    r1 = train(cfg1, tmp_path / "m", progress=False, data=data)
    assert not torch.equal(_state(tmp_path / "m")["prior"]["W"], W0)
    # both arms start from the same GPT initialisation
    g0 = build(cfg0, data.vocab.vocab_size, torch.device("cpu"))[0].state_dict()
    g1 = build(cfg1, data.vocab.vocab_size, torch.device("cpu"))[0].state_dict()
    assert all(torch.equal(g0[k], g1[k]) for k in g0)
    assert r1["history"][-1]["train_margin"] < r1["history"][0]["train_margin"] or r1["history"][0]["train_margin"] == 0


def test_resume_refuses_a_different_config(tmp_path, data):
    train(preset("tiny", steps=2), tmp_path, progress=False, data=data)
    with pytest.raises(ValueError, match="other settings"):
        train(preset("tiny", steps=3), tmp_path, progress=False, data=data, resume=True)


def test_lr_schedule_is_cosine():
    cfg = preset("tiny", lr=1.0, min_lr_ratio=0.1)
    assert lr_at(cfg, 0, 10) == 1.0
    assert abs(lr_at(cfg, 5, 10) - 0.55) < 1e-12
    assert abs(lr_at(cfg, 10, 10) - 0.1) < 1e-12


def test_cli_train_resume_robustness_report(tmp_path, capsys):
    out = str(tmp_path / "run")
    assert cli.main(["train", "--config", "tiny", "--out", out, "--no-progress", "--max-steps-this-run", "3"]) == 0
    assert cli.main(["train", "--config", "tiny", "--out", out, "--no-progress", "--resume"]) == 0
    assert cli.main(["robustness", "--out", out, "--sigmas", "0,0.4", "--draws", "2"]) == 0
    res = json.loads((tmp_path / "run" / "results.json").read_text())
    assert res["finished"] and res["noise_curve"]["sigmas"] == [0.0, 0.4]
    assert res["noise_curve"]["degradation"][0] == 1.0
    assert cli.main(["report", out]) == 0
    text = capsys.readouterr().out
    assert "| σ | BPC | degradation |" in text and "final train loss" in text


def test_sweep_writes_one_row_per_lambda_and_reuses_runs(tmp_path):
    cfg = preset("tiny", steps=2, eval_every=2)
    from nextword.torch.barrier.sweep import run_sweep

    table = run_sweep(cfg, (0.0, 0.5), tmp_path, progress=False)
    assert [r["lambda"] for r in table["rows"]] == [0.0, 0.5]
    assert all(r["bpc_sigma"] > 0 and "entropy" in r for r in table["rows"])
    mtime = (tmp_path / "lambda_0.5" / "ckpt.pt").stat().st_mtime_ns
    run_sweep(cfg, (0.0, 0.5), tmp_path, progress=False)
    assert (tmp_path / "lambda_0.5" / "ckpt.pt").stat().st_mtime_ns == mtime
    assert json.loads((tmp_path / "sweep.json").read_text())["rows"] == table["rows"]


def test_train_or_load_reuses_only_matching_config_and_code(tmp_path, data):
    cfg = preset("tiny", steps=2, eval_every=2)
    first = train_or_load(cfg, tmp_path, progress=False, data=data)
    assert first["code"] == code_hash()
    mtime = (tmp_path / CKPT).stat().st_mtime_ns
    assert train_or_load(cfg, tmp_path, progress=False, data=data) == first
    assert (tmp_path / CKPT).stat().st_mtime_ns == mtime
    stale = dict(first, code="0" * 16)
    save_json(stale, tmp_path / RESULTS)
    again = train_or_load(cfg, tmp_path, progress=False, data=data)  # retrained
    assert again["code"] == code_hash() and (tmp_path / CKPT).stat().st_mtime_ns != mtime
    assert again["final_train_loss"] == first["final_train_loss"]


def test_the_perturbation_pass_nudges_training_and_has_its_own_cache_entry(tmp_path, data, monkeypatch):
    """NEXTWORD_PERTURB (make test's second notebook pass) changes the run a little, never serves a cached
    unperturbed run (or the reverse), and is recorded in results.json."""
    cfg = preset("tiny", steps=2, eval_every=2)
    monkeypatch.delenv("NEXTWORD_PERTURB", raising=False)
    plain = train_or_load(cfg, tmp_path, progress=False, data=data)
    monkeypatch.setenv("NEXTWORD_PERTURB", "1")
    nudged = train_or_load(cfg, tmp_path, progress=False, data=data)  # not the cached plain run
    assert (plain["perturbation"], nudged["perturbation"]) == (0, 1)
    assert nudged["final_train_loss"] != plain["final_train_loss"]
    assert abs(nudged["final_train_loss"] - plain["final_train_loss"]) < 0.05 * plain["final_train_loss"]
    monkeypatch.delenv("NEXTWORD_PERTURB")
    assert train_or_load(cfg, tmp_path, progress=False, data=data)["final_train_loss"] == plain["final_train_loss"]


def test_cli_epochs_overrides_preset_steps():
    args = cli.build_parser().parse_args(["train", "--config", "quick", "--epochs", "3"])
    cfg = cli.config_from_args(args)
    assert cfg.steps is None and cfg.epochs == 3


def test_cli_keeps_the_preset_steps_unless_asked():
    parse = cli.build_parser().parse_args
    assert cli.config_from_args(parse(["train", "--config", "cpu"])).steps == PRESETS["cpu"].steps
    assert cli.config_from_args(parse(["train", "--config", "quick", "--steps", "7"])).steps == 7
