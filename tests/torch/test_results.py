"""The saved barrier runs: the registry end to end (tiny configs), provenance fields, skipping what is
current, small weights-only checkpoints, and the files the Part 4 notebooks read."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from nextword import provenance  # noqa: E402
from nextword.torch.runs import barrier_runs as R  # noqa: E402
from nextword.torch.barrier.config import preset  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = [
    REPO / "book" / "part4_margins" / f"{n}.py"
    for n in ("barrier_training", "robustness_to_noise", "regularisation_path", "06_support_tokens_trained")
]


@pytest.fixture
def tiny_registry(tmp_path, monkeypatch):
    """The real registry, with every configuration shrunk to the ``tiny`` preset."""
    monkeypatch.setenv("NEXTWORD_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.setattr(
        R, "_cpu_arm", lambda lam, seed=0: preset("tiny", lambda_margin=lam, seed=seed, steps=4, eval_every=2)
    )
    monkeypatch.setattr(R, "_sweep_config", lambda: preset("tiny", steps=2, eval_every=2))
    monkeypatch.setattr(R, "SWEEP_LAMBDAS", (0.0, 0.5))
    return tmp_path / "results"


def test_registry_runs_saves_with_provenance_and_skips_current(tiny_registry):
    out = tiny_registry
    for name in R.in_order(list(R.EXPERIMENTS)):
        assert R.run_experiment(R.EXPERIMENTS[name], results_dir=out).startswith("saved")
    for name in R.EXPERIMENTS:
        saved = provenance.load_result(name, results_dir=out)
        assert set(provenance.PROVENANCE_FIELDS) <= set(saved)
        assert saved["command"] == f"nextword results run {name}"
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
    assert R.run_experiment(R.EXPERIMENTS["barrier_ce"], results_dir=out) == "current"
    assert provenance.load_result("barrier_ce", results_dir=out)["code"].keys() == set(R.BARRIER_CODE)


def test_unfinished_run_is_not_saved(tiny_registry, monkeypatch):
    exp = R.EXPERIMENTS["barrier_ce"]
    monkeypatch.setattr(
        R, "_cpu_arm", lambda lam, seed=0: preset("tiny", lambda_margin=lam, seed=seed, steps=4, eval_every=2)
    )
    from nextword.torch.barrier.train import train

    train(R._cpu_arm(0.0), R.runs_root() / exp.name, progress=False, max_steps_this_run=2)
    with pytest.raises(RuntimeError, match="not finished"):
        exp.save(R.runs_root() / exp.name)


def test_wall_time_sums_sessions(tmp_path):
    (tmp_path / "wall.json").write_text(
        json.dumps(
            {
                "sessions": [
                    {"start": "2026-01-01T00:00:00+00:00", "end": "2026-01-01T00:01:00+00:00"},
                    {"start": "2026-01-01T01:00:00+00:00", "end": "2026-01-01T01:00:30+00:00"},
                ]
            }
        )
    )
    assert R.wall_time(tmp_path) == 90.0


def test_cli_lists_and_rejects_unknown_names(capsys):
    from nextword.torch.runs import registry

    assert registry.main(["list"]) == 0
    assert "barrier_ce" in capsys.readouterr().out
    with pytest.raises(SystemExit) as e:
        registry.main(["run", "no_such_experiment"])
    assert e.value.code == 2


def test_saved_barrier_results_have_provenance_and_the_notebooks_find_them():
    """Every ``book/results/barrier_*`` a Part 4 notebook reads is a registry experiment; each one saved
    carries its provenance (clean commit, the registry's command and configuration); a notebook reading
    one that is not saved yet says so (``make results``) instead of failing."""
    read = {}
    for nb in NOTEBOOKS:
        text = nb.read_text()
        for name in re.findall(r"""load_(?:result|curves|saved_model)\(f?["'](barrier_[\w{}]+)["']""", text):
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
        # the command that produced it: the registry's, or the one it had before the torch house moved
        assert saved["command"] in (R.EXPERIMENTS[name].command, f"python -m nextword.torch.results run {name}")
        assert saved["config"] == json.loads(json.dumps(R.EXPERIMENTS[name].config())), name
    assert R.EXPERIMENTS["barrier_ce"].command == "nextword results run barrier_ce"
