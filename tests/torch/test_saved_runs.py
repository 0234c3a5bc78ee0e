"""The saved-run machinery: per-seed partial files, resume, partial results, provenance."""

import json

import numpy as np
import pytest

from nextword.provenance import PROVENANCE_FIELDS
from nextword.torch.runs import registry, seeded_runs
from nextword.torch.runs.seeded_runs import Experiment, run_experiment


@pytest.fixture
def toy(monkeypatch):
    calls = []

    def run_seed(seed):
        calls.append(seed)
        rng = np.random.default_rng(seed)
        return {"loss": float(rng.random())}, {"curve": rng.random(4)}

    exp = Experiment(
        "toy_run",
        "book/none.py",
        {"steps": 3},
        (0, 1, 2),
        run_seed,
        ("nextword/torch/runs/seeded_runs.py",),
        lambda rows: {"n": len(rows)},
    )
    monkeypatch.setitem(seeded_runs.EXPERIMENTS, "toy_run", lambda: exp)
    return calls


def test_run_saves_every_seed_with_provenance(toy, tmp_path):
    path = run_experiment("toy_run", results_dir=tmp_path)
    record = json.loads(path.read_text())
    assert set(PROVENANCE_FIELDS) <= set(record) and record["command"] == "nextword results run toy_run"
    assert record["seeds"] == [0, 1, 2] and record["data"]["complete"] and record["data"]["summary"] == {"n": 3}
    assert [r["seed"] for r in record["data"]["per_seed"]] == [0, 1, 2]
    assert record["data"]["per_seed"][1]["loss"] == float(np.random.default_rng(1).random())
    with np.load(tmp_path / "toy_run" / "curves.npz") as f:
        assert f["curve"].shape == (3, 4)
    assert not (tmp_path / "toy_run" / "partial").exists()


def test_resume_runs_only_missing_seeds_and_partial_results_are_labelled(toy, tmp_path):
    assert run_experiment("toy_run", seeds=[0, 2], results_dir=tmp_path) is None  # seed 1 missing: no result
    assert toy == [0, 2] and (tmp_path / "toy_run" / "partial" / "seed0.json").is_file()
    path = run_experiment("toy_run", seeds=[0], partial_ok=True, results_dir=tmp_path)  # nothing new to run
    record = json.loads(path.read_text())
    assert toy == [0, 2] and record["seeds"] == [0, 2] and record["data"]["complete"] is False
    assert record["data"]["seeds_planned"] == [0, 1, 2]
    run_experiment("toy_run", results_dir=tmp_path)  # resume: only seed 1 runs
    assert toy == [0, 2, 1]
    assert json.loads(path.read_text())["data"]["complete"] is True


def test_unreadable_partial_file_reruns_that_seed(toy, tmp_path):
    run_experiment("toy_run", seeds=[0], results_dir=tmp_path)
    (tmp_path / "toy_run" / "partial" / "seed0.json").write_text("{truncated")
    run_experiment("toy_run", seeds=[0], results_dir=tmp_path)
    assert toy == [0, 0]


def test_bad_names_and_seeds_are_rejected(toy, tmp_path):
    with pytest.raises(ValueError, match="name must be one of"):
        run_experiment("nope", results_dir=tmp_path)
    with pytest.raises(ValueError, match="seeds must be among"):
        run_experiment("toy_run", seeds=[7], results_dir=tmp_path)


def test_one_registry_holds_both_kinds_and_one_command_lists_them(capsys):
    assert set(registry.NAMES) == set(seeded_runs.EXPERIMENTS) | {
        n for n in registry.NAMES if registry.kind(n) == "trained"
    }
    assert len(registry.NAMES) == len(set(registry.NAMES)) >= 10
    assert registry.main(["list"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in out] == list(registry.NAMES)
    assert {line.split()[1] for line in out} == {"trained", "seeded"}


@pytest.mark.parametrize(
    "argv, message",
    [
        (["run", "no_such_run"], "must be a saved run"),
        (["run", "barrier_ce", "--jobs", "2"], "apply to per-seed runs"),
        (["run", "hybrid_long", "--train-only"], "applies to trained runs"),
        (["run", "hybrid_long", "--jobs", "0"], "must be >= 1"),
    ],
)
def test_registry_rejects_bad_names_and_options_in_one_line(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        registry.main(argv)
    assert e.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    "module",
    [
        "nextword.torch.runs.registry",
        "nextword.torch.runs.seeded_runs",
        "nextword.theory.dynamics.table1",
        "nextword.torch.probes.fig628",
        "nextword.torch.svflow.hybrid_runs",
        "nextword.torch.svflow.lm",
    ],
)
def test_doctests(module):
    import doctest
    import importlib

    res = doctest.testmod(importlib.import_module(module), extraglobs={"np": np})
    assert res.attempted > 0 and res.failed == 0


def test_experiment_inputs_are_checked():
    from nextword.theory.dynamics.table1 import PAPER_TABLE1, table1_seed
    from nextword.torch.probes.fig628 import Fig628Config, fig628_seed
    from nextword.torch.svflow.hybrid_runs import hybrid_seed
    from nextword.torch.svflow.lm import SVFlowLMConfig

    assert (PAPER_TABLE1.T, PAPER_TABLE1.batch, PAPER_TABLE1.protocol.steps) == (2000, 1, 1000)  # §7.2's size
    with pytest.raises(TypeError, match="seed"):
        table1_seed(PAPER_TABLE1, 0.5)
    with pytest.raises(ValueError, match="L_test"):
        Fig628Config(L_train=32, L_test=32)
    with pytest.raises(ValueError, match="num_windows"):
        fig628_seed(Fig628Config(num_windows=200, steps=1), 0)
    with pytest.raises(TypeError, match="cfg"):
        hybrid_seed({"steps": 2}, 0)
    with pytest.raises(ValueError, match="ps"):
        SVFlowLMConfig(ps=(0.5, 1.0))
    with pytest.raises(TypeError, match="d_model"):
        SVFlowLMConfig(d_model=64.0)


def test_checkpoint_round_trip_is_the_float16_model(tmp_path):
    import torch

    from nextword.torch.models.lm import LMConfig, TinyLM
    from nextword.torch.svflow.lm import load_checkpoint, rounded_copy, save_checkpoint

    cfg = LMConfig(vocab_size=7, d_model=8, num_heads=2, num_layers=2, max_len=6, positional="rope", norm="rms")
    model = TinyLM(cfg, seed=3)
    loaded = load_checkpoint(save_checkpoint(model, tmp_path / "m.pth"), cfg)
    ids = torch.tensor([[1, 2, 3, 4, 5, 6]])
    with torch.no_grad():
        assert torch.equal(loaded(ids), rounded_copy(model)(ids))  # the saved model is the rounded one
    with pytest.raises(TypeError, match="config"):
        load_checkpoint(tmp_path / "m.pth", {"d_model": 8})
