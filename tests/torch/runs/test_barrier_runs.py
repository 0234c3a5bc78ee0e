"""The §7 experiments of the registry end to end (tiny configs): provenance fields, skipping what is current,
small weights-only checkpoints, and the files the Part 4 notebooks read."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from nextword import provenance  # noqa: E402
from nextword.torch.barrier.config import preset  # noqa: E402
from nextword.torch.runs import barrier_runs as B  # noqa: E402
from nextword.torch.runs import registry as R  # noqa: E402
from nextword.torch.runs.experiment import runs_root  # noqa: E402

REPO = Path(__file__).resolve().parents[3]
NOTEBOOKS = [
    REPO / "book" / "part4_margins" / f"{n}.py"
    for n in ("barrier_training", "robustness_to_noise", "regularisation_path", "06_support_tokens_trained")
]
CPU_TIER = (
    "barrier_ce",
    "barrier_margin",
    "barrier_ce_seed1",
    "barrier_margin_seed1",
    "barrier_robustness",
    "barrier_sweep",
)


@pytest.fixture
def tiny_registry(tmp_path, monkeypatch):
    """The real CPU-tier experiments, with every configuration shrunk to the ``tiny`` preset."""
    monkeypatch.setenv("NEXTWORD_RUNS_DIR", str(tmp_path / "runs"))

    def arm(tier, lam, seed=0):
        return preset("tiny", lambda_margin=lam, seed=seed, steps=4, eval_every=2)

    def sweep(tier, schedule="cpu", lam=B.PAPER_LAMBDA, seed=0):
        return preset("tiny", steps=2, eval_every=2, lambda_margin=lam, seed=seed)

    monkeypatch.setattr(B, "arm_config", arm)
    monkeypatch.setattr(B, "sweep_config", sweep)
    monkeypatch.setattr(B, "SWEEP_LAMBDAS", (0.0, 0.5))
    tiny = {e.name: e for e in B.experiments()}
    monkeypatch.setattr(R, "EXPERIMENTS", {**R.EXPERIMENTS, **tiny})
    return tmp_path / "results"


def test_registry_runs_saves_with_provenance_and_skips_current(tiny_registry, capsys):
    out = tiny_registry
    R.run(list(CPU_TIER), results_dir=out)
    for name in CPU_TIER:
        saved = provenance.load_result(name, results_dir=out)
        assert set(provenance.PROVENANCE_FIELDS) <= set(saved)
        assert saved["command"] == f"nextword results run {name}"
        assert saved["code_entry"] == list(R.EXPERIMENTS[name].entry)
        assert saved["wall_time_s"] >= 0 and saved["machine"]["torch"] == torch.__version__
        assert provenance.load_curves(name, results_dir=out)
    ce = provenance.load_result("barrier_ce", results_dir=out)["data"]
    assert ce["steps"] == ce["total_steps"] == 4 and len(ce["history"]) == 2
    ck = torch.load(out / "barrier_margin" / "model.pt", weights_only=True)  # weights-only loadable
    assert set(ck) == {"model", "prior", "config", "vocab_size"}
    assert (out / "barrier_margin" / "model.pt").stat().st_size < 2 * 1024 * 1024
    assert not (out / "barrier_margin_seed1" / "model.pt").exists()  # the second seed saves numbers only
    seeds = {provenance.load_result(f"barrier_ce{s}", results_dir=out)["config"]["seed"] for s in ("", "_seed1")}
    assert seeds == {0, 1}
    sweep = provenance.load_result("barrier_sweep", results_dir=out)["data"]
    assert [r["lambda"] for r in sweep["rows"]] == [0.0, 0.5]
    assert all("relative_degradation" in r for r in sweep["rows"])
    # the code that produced it is the code here (committed or not): the next run skips it
    assert R.status("barrier_ce", out) == ("current", "")
    capsys.readouterr()
    R.run(["barrier_ce"], results_dir=out)
    assert "barrier_ce: current" in capsys.readouterr().out
    closure = provenance.load_result("barrier_ce", results_dir=out)["code"]
    assert "nextword/torch/barrier/train.py" in closure and "nextword/torch/barrier/prior.py" in closure
    assert "nextword/torch/runs/barrier_runs.py:_train_arm" in closure  # the experiment's own function
    assert "nextword/torch/runs/barrier_runs.py:_save_sweep" not in closure  # another experiment's


def test_the_noise_probe_reads_the_saved_pair_not_their_training_folders(tiny_registry):
    """A fresh clone has the pair's ``model.pt`` under book/results but no ``runs/`` folders: the probe runs."""
    import shutil

    out = tiny_registry
    R.run(["barrier_ce", "barrier_margin"], results_dir=out)
    for arm in ("barrier_ce", "barrier_margin"):
        shutil.rmtree(runs_root() / arm)  # what a fresh clone lacks
    R.run(["barrier_robustness"], results_dir=out)
    data = provenance.load_result("barrier_robustness", results_dir=out)["data"]
    saved_rms = {}
    for arm in ("barrier_ce", "barrier_margin"):
        ck = torch.load(out / arm / "model.pt", weights_only=True)
        saved_rms[arm] = float(ck["model"]["wte.weight"].pow(2).mean().sqrt())
    assert data["embedding_rms"] == pytest.approx(saved_rms, rel=1e-6)  # the saved weights were probed


def test_unfinished_run_is_not_saved(tiny_registry):
    exp = R.EXPERIMENTS["barrier_ce"]
    from nextword.torch.barrier.train import train

    train(B.arm_config("cpu", 0.0), runs_root() / exp.name, progress=False, max_steps_this_run=2)
    with pytest.raises(RuntimeError, match="not finished"):
        exp.save(runs_root() / exp.name)


def test_the_gpu_tier_is_the_same_experiment_on_another_preset():
    cpu, gpu = B.arm_config("cpu", B.PAPER_LAMBDA), B.arm_config("gpu", B.PAPER_LAMBDA)
    assert cpu.model == gpu.model and (cpu.lr, gpu.lr) == (3e-3, 1e-3)
    assert (cpu.margin_positions, gpu.margin_positions) == (16, 0)  # the GPU tier's margin is exact
    gpu_names = [e.name for e in B.experiments() if e.device == "cuda"]
    assert len(gpu_names) == 10 and all(n.startswith("gpu_barrier_") for n in gpu_names)
    for name in gpu_names:  # every GPU result saved in the book has the registry's configuration
        assert provenance.load_result(name)["config"] == provenance._jsonable(R.EXPERIMENTS[name].config()), name


def test_saved_barrier_results_have_provenance_and_the_notebooks_find_them():
    """Every ``book/results/barrier_*`` a Part 4 notebook reads is a registry experiment; each one saved
    carries its provenance (clean commit, the registry's command and configuration); a notebook reading
    one that is not saved yet says so (``make results``) instead of failing."""
    read = {}
    for nb in NOTEBOOKS:
        text = nb.read_text()
        for name in re.findall(r"""load_(?:result|curves|saved_model)\(f?["']((?:gpu_)?barrier_[\w{}]+)["']""", text):
            names = [name.replace("{arm}", arm) for arm in ("ce", "margin")] if "{arm}" in name else [name]
            for n in names:
                read.setdefault(n, set()).add(nb)
    assert set(read) >= {"barrier_ce", "barrier_margin", "barrier_robustness", "barrier_sweep"}
    for name, notebooks in sorted(read.items()):
        assert name in R.EXPERIMENTS, name
        try:
            saved = provenance.load_result(name)
        except FileNotFoundError:
            for nb in notebooks:
                assert "if SAVED:" in nb.read_text() and "all_saved(" in nb.read_text(), (name, nb)
            continue
        assert set(provenance.PROVENANCE_FIELDS) <= set(saved), name
        assert saved["commit"] != "unknown" and not saved["dirty"], name
        assert saved["command"] == R.EXPERIMENTS[name].command, name
        assert saved["config"] == json.loads(json.dumps(R.EXPERIMENTS[name].config())), name
