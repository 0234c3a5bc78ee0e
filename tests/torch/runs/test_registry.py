"""The registry: one list of every saved run, per-seed partial files and resume, statuses, and the command."""

import json
import time

import numpy as np
import pytest

from nextword import provenance
from nextword.provenance import PROVENANCE_FIELDS
from nextword.torch.runs import registry
from nextword.torch.runs.experiment import Experiment, Saved


@pytest.fixture
def toy(monkeypatch):
    calls = []

    def run_seed(seed):
        calls.append(seed)
        rng = np.random.default_rng(seed)
        return {"loss": float(rng.random())}, {"curve": rng.random(4)}

    exp = Experiment(
        "toy_run",
        "a toy",
        "book/none.py",
        lambda: {"steps": 3},
        ("nextword.positions:sinusoidal_encoding",),
        run_seed=run_seed,
        summarise=lambda rows: {"n": len(rows)},
        seeds=(0, 1, 2),
    )
    monkeypatch.setitem(registry.EXPERIMENTS, "toy_run", exp)
    return calls


def _run(tmp_path, **kw):
    registry.run(["toy_run"], results_dir=tmp_path, **kw)
    path = tmp_path / "toy_run" / "result.json"
    return path if path.exists() else None


def test_run_saves_every_seed_with_provenance(toy, tmp_path):
    record = json.loads(_run(tmp_path).read_text())
    assert set(PROVENANCE_FIELDS) <= set(record) and record["command"] == "nextword results run toy_run"
    assert record["seeds"] == [0, 1, 2] and record["data"]["complete"] and record["data"]["summary"] == {"n": 3}
    assert [r["seed"] for r in record["data"]["per_seed"]] == [0, 1, 2]
    assert record["data"]["per_seed"][1]["loss"] == float(np.random.default_rng(1).random())
    with np.load(tmp_path / "toy_run" / "curves.npz") as f:
        assert f["curve"].shape == (3, 4)
    assert not (tmp_path / "toy_run" / "partial").exists()
    assert registry.status("toy_run", tmp_path) == ("current", "")
    _run(tmp_path)
    assert toy == [0, 1, 2]  # current: nothing ran again


def test_resume_runs_only_missing_seeds_and_partial_results_are_labelled(toy, tmp_path):
    assert _run(tmp_path, seeds=[0, 2]) is None  # seed 1 missing: no result
    assert toy == [0, 2] and (tmp_path / "toy_run" / "partial" / "seed0.json").is_file()
    path = _run(tmp_path, seeds=[0], partial_ok=True)  # nothing new to run
    record = json.loads(path.read_text())
    assert toy == [0, 2] and record["seeds"] == [0, 2] and record["data"]["complete"] is False
    assert record["data"]["seeds_planned"] == [0, 1, 2]
    assert registry.status("toy_run", tmp_path) == ("to run", "seeds missing")
    _run(tmp_path)  # resume: only seed 1 runs
    assert toy == [0, 2, 1]
    assert json.loads(path.read_text())["data"]["complete"] is True


def test_unreadable_partial_file_reruns_that_seed(toy, tmp_path):
    _run(tmp_path, seeds=[0])
    (tmp_path / "toy_run" / "partial" / "seed0.json").write_text("{truncated")
    _run(tmp_path, seeds=[0])
    assert toy == [0, 0]


def test_files_a_seed_keeps_are_saved_beside_its_result(monkeypatch, tmp_path):
    """A per-seed run that writes a file (the SVFlow LM's checkpoint) has it copied into the results folder
    it is given, not into the book's (issue 47 §3)."""
    src = tmp_path / "made" / "ckpt.pth"
    src.parent.mkdir()
    src.write_bytes(b"weights")
    exp = Experiment(
        "toy_files",
        "a toy",
        "book/none.py",
        lambda: {},
        ("nextword.positions",),
        run_seed=lambda seed: ({"files": {"ckpt.pth": str(src)}, "x": 1}, {"c": np.zeros(2)}),
    )
    monkeypatch.setitem(registry.EXPERIMENTS, "toy_files", exp)
    registry.run(["toy_files"], results_dir=tmp_path / "results")
    assert (tmp_path / "results" / "toy_files" / "ckpt.pth").read_bytes() == b"weights"
    record = provenance.load_result("toy_files", tmp_path / "results")
    assert "files" not in record["data"]["per_seed"][0]


def test_bad_names_and_seeds_are_rejected(toy, tmp_path):
    with pytest.raises(ValueError, match="must be a saved run"):
        registry.run(["nope"], results_dir=tmp_path)
    with pytest.raises(ValueError, match="seeds must be among"):
        registry.run(["toy_run"], seeds=[7], results_dir=tmp_path)


def test_one_registry_lists_every_saved_run_and_every_saved_run_is_in_it(capsys):
    saved = {p.parent.name for p in provenance.results_root().glob("*/result.json")}
    assert saved <= set(registry.NAMES), saved - set(registry.NAMES)
    assert len(registry.NAMES) == len(set(registry.NAMES)) == 26  # 11 CPU runs, 14 GPU ones, a benchmark
    assert sum(registry.EXPERIMENTS[n].device == "cuda" for n in registry.NAMES) == 13  # + gpu_check_cpu_speed


def test_list_prints_one_line_per_run_with_its_status(capsys, monkeypatch):
    monkeypatch.setattr(registry, "status", lambda name, results_dir=None: ("to run", "not saved"))
    assert registry.main(["list"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in out] == list(registry.NAMES)
    assert all("to run" in line and "[not saved]" in line for line in out)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["run", "no_such_run"], "must be a saved run"),
        (["run", "barrier_ce", "--jobs", "2"], "apply to per-seed runs"),
        (["run", "hybrid_long", "--train-only"], "applies to trained runs"),
        (["run", "hybrid_long", "--jobs", "0"], "expected an integer >= 1"),
        (["verify", "no_such_run"], "must be a saved run"),
    ],
)
def test_registry_rejects_bad_names_and_options_in_one_line(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        registry.main(argv)
    assert e.value.code == 2
    assert message in capsys.readouterr().err


def test_another_configuration_is_to_run(toy, tmp_path, monkeypatch):
    _run(tmp_path)
    exp = registry.EXPERIMENTS["toy_run"]
    monkeypatch.setitem(registry.EXPERIMENTS, "toy_run", Experiment(**{**exp.__dict__, "config": lambda: {"steps": 4}}))
    assert registry.status("toy_run", tmp_path) == ("to run", "another configuration")


@pytest.mark.parametrize(
    "module",
    [
        "nextword.torch.runs.experiment",
        "nextword.torch.runs.seeded_runs",
        "nextword.torch.runs.fingerprint",
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
    with pytest.raises(ValueError, match="train and save"):
        Experiment("x", "x", "x", dict, ("nextword",))


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


def test_a_gpu_run_that_would_be_to_run_needs_a_gpu_on_a_machine_without_one(toy, tmp_path, monkeypatch):
    exp = registry.EXPERIMENTS["toy_run"]
    monkeypatch.setitem(registry.EXPERIMENTS, "toy_run", Experiment(**{**exp.__dict__, "device": "cuda"}))
    monkeypatch.setattr(registry, "_cuda", lambda: False)
    state, why = registry.status("toy_run", tmp_path)
    assert state == "needs a GPU" and state in registry.STATES
    assert why == "not saved; a rerun needs a CUDA GPU, which this machine lacks"
    monkeypatch.setattr(registry, "_cuda", lambda: True)
    assert registry.status("toy_run", tmp_path) == ("to run", "not saved")


# ---- trained runs: runs/<name>/ is continued only when made by the same code, configuration and inputs
class Interrupted(Exception):
    """A run stopped midway (Ctrl-C, a killed process)."""


@pytest.fixture
def trained(monkeypatch, tmp_path):
    """Two tiny trained experiments: ``toy_trained`` (4 steps, a checkpoint after each, interruptible) and
    ``toy_reader``, which reads ``toy_trained``'s run once (like the noise probe of a trained pair)."""
    monkeypatch.setenv("NEXTWORD_RUNS_DIR", str(tmp_path / "runs"))
    log = {"steps": [], "stop_after": None, "reads": []}

    def train(workdir):
        ckpt = workdir / "ckpt.json"
        step = json.loads(ckpt.read_text())["step"] if ckpt.exists() else 0
        while step < 4:
            if log["stop_after"] == len(log["steps"]):
                log["stop_after"] = None
                raise Interrupted
            step += 1
            log["steps"].append(step)
            ckpt.write_text(json.dumps({"step": step, "made": registry._code_digest(exp)}))

    def save(workdir):
        return Saved(json.loads((workdir / "ckpt.json").read_text()))

    def read(workdir):
        if not (workdir / "read.json").exists():  # the probe's own reuse of a finished measurement
            log["reads"].append(registry._run_id(workdir.parent / "toy_trained"))
            (workdir / "read.json").write_text(json.dumps({"read": log["reads"][-1]}))

    exp = Experiment("toy_trained", "a toy", "book/none.py", lambda: {"steps": 4}, (ENTRY,), train=train, save=save)
    reader = Experiment(
        "toy_reader",
        "a toy reading toy_trained",
        "book/none.py",
        dict,
        (ENTRY,),
        train=read,
        save=lambda workdir: Saved(json.loads((workdir / "read.json").read_text())),
        depends=("toy_trained",),
    )
    monkeypatch.setitem(registry.EXPERIMENTS, "toy_trained", exp)
    monkeypatch.setitem(registry.EXPERIMENTS, "toy_reader", reader)
    return log


ENTRY = "nextword.positions:sinusoidal_encoding"


def _superseded(tmp_path):
    return sorted(p.name.split("-")[0] for p in (tmp_path / "runs" / registry.SUPERSEDED).glob("*"))


def test_an_interrupted_run_resumes_where_it_stopped(trained, tmp_path):
    trained["stop_after"] = 2
    with pytest.raises(Interrupted):
        registry.run(["toy_trained"], results_dir=tmp_path / "results")
    registry.run(["toy_trained"], results_dir=tmp_path / "results")
    assert trained["steps"] == [1, 2, 3, 4]  # nothing lost, nothing trained twice
    assert provenance.load_result("toy_trained", tmp_path / "results")["data"]["step"] == 4
    made = json.loads((tmp_path / "runs" / "toy_trained" / registry.MADE_BY).read_text())
    assert made["code"] == registry._code_digest(registry.EXPERIMENTS["toy_trained"])
    assert made["config"] == {"steps": 4} and not _superseded(tmp_path)


def test_a_run_made_by_other_code_starts_afresh_and_is_moved_aside(trained, tmp_path, monkeypatch, capsys):
    trained["stop_after"] = 2
    with pytest.raises(Interrupted):
        registry.run(["toy_trained"], results_dir=tmp_path / "results")
    monkeypatch.setattr(registry, "_code_digest", lambda exp: "0123456789abcdef")  # the code changed
    registry.run(["toy_trained"], results_dir=tmp_path / "results")
    assert trained["steps"] == [1, 2, 1, 2, 3, 4]  # the old checkpoint was not continued
    assert provenance.load_result("toy_trained", tmp_path / "results")["data"]["made"] == "0123456789abcdef"
    assert _superseded(tmp_path) == ["toy_trained"]
    (aside,) = (tmp_path / "runs" / registry.SUPERSEDED).glob("toy_trained-*")
    assert json.loads((aside / "ckpt.json").read_text())["step"] == 2  # kept, out of the way
    said = [line for line in capsys.readouterr().out.splitlines() if "moved aside" in line]
    assert len(said) == 1 and "was made by other code" in said[0] and str(aside) in said[0]


def test_a_finished_run_made_by_other_code_or_configuration_is_not_saved_again(trained, tmp_path, monkeypatch):
    registry.run(["toy_trained"], train_only=True)
    monkeypatch.setattr(registry, "_code_digest", lambda exp: "0123456789abcdef")
    registry.run(["toy_trained"], train_only=True)
    assert trained["steps"] == [1, 2, 3, 4] * 2
    exp = registry.EXPERIMENTS["toy_trained"]
    monkeypatch.setitem(registry.EXPERIMENTS, "toy_trained", Experiment(**{**exp.__dict__, "config": lambda: {"s": 5}}))
    registry.run(["toy_trained"], train_only=True)
    assert trained["steps"] == [1, 2, 3, 4] * 3 and _superseded(tmp_path) == ["toy_trained"] * 2


def test_force_starts_afresh(trained, tmp_path):
    registry.run(["toy_trained"], results_dir=tmp_path / "results")
    first = registry._run_id(tmp_path / "runs" / "toy_trained")
    registry.run(["toy_trained"], results_dir=tmp_path / "results", force=True)
    assert trained["steps"] == [1, 2, 3, 4, 1, 2, 3, 4]
    assert _superseded(tmp_path) == ["toy_trained"] and registry._run_id(tmp_path / "runs" / "toy_trained") != first
    registry.run(["toy_trained"], train_only=True, force=True)  # --train-only --force too
    assert trained["steps"] == [1, 2, 3, 4] * 3


def test_a_run_trained_alone_is_saved_later_without_training_again(trained, tmp_path):
    """``--train-only`` then ``run`` (as ``nextword gpu-check`` does): the finished run, made by this code and
    configuration, is saved as it is."""
    registry.run(["toy_trained"], train_only=True)
    assert not (tmp_path / "results").exists()
    registry.run(["toy_trained"], results_dir=tmp_path / "results")
    assert trained["steps"] == [1, 2, 3, 4] and not _superseded(tmp_path)
    assert provenance.load_result("toy_trained", tmp_path / "results")["data"]["step"] == 4


def test_a_run_that_reads_another_starts_afresh_when_that_run_is_made_again(trained, tmp_path):
    out = tmp_path / "results"
    registry.run(["toy_reader"], results_dir=out)  # toy_trained first: it depends on it
    time.sleep(1.1)  # "created" is stamped to the second
    registry.run(["toy_trained"], results_dir=out, force=True)
    assert registry.status("toy_reader", out)[0] == "to run"
    registry.run(["toy_reader"], results_dir=out)
    ids = [registry._run_id(tmp_path / "runs" / "toy_trained")]
    assert len(trained["reads"]) == 2 and trained["reads"][1] == ids[0] != trained["reads"][0]
    assert provenance.load_result("toy_reader", out)["data"]["read"] == ids[0]
    assert _superseded(tmp_path) == ["toy_reader", "toy_trained"]


def test_a_partial_seed_made_by_other_code_is_run_again(toy, tmp_path, monkeypatch):
    _run(tmp_path, seeds=[0])
    monkeypatch.setattr(registry, "_code_digest", lambda exp: "0123456789abcdef")
    _run(tmp_path)
    assert toy == [0, 0, 1, 2]
