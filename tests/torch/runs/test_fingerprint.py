"""Fingerprints: a run's first steps replayed on one thread, at the run's own commit and here (issue 47 §1)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from nextword import provenance  # noqa: E402
from nextword.torch.barrier.config import preset  # noqa: E402
from nextword.torch.runs import fingerprint as F  # noqa: E402
from nextword.torch.runs import registry  # noqa: E402
from nextword.torch.runs.experiment import Experiment, Saved  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
TINY = preset("tiny", steps=4, eval_every=2).to_dict()


def _toy(name: str) -> Experiment:
    """A trained experiment at the ``tiny`` preset whose fingerprint replays 2 steps of barrier training."""
    return Experiment(
        name,
        "toy",
        "book/none.py",
        lambda: TINY,
        ("nextword.torch.barrier.train",),
        train=lambda w: None,
        save=lambda w: Saved({}),
        fingerprint=("barrier_train", {"config": TINY, "steps": 2}),
    )


def test_load_follows_modules_and_names_that_moved(tmp_path, monkeypatch):
    (tmp_path / "oldpkg").mkdir()
    (tmp_path / "oldpkg" / "__init__.py").write_text("")
    (tmp_path / "oldpkg" / "a.py").write_text("def f():\n    return 'f'\n\ndef g_old():\n    return 'g'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    moved = {"modules": {"oldpkg/a.py": "newpkg/b.py"}, "names": {"oldpkg.a.g_old": "newpkg.c.g"}}
    monkeypatch.setenv("NEXTWORD_MOVED", json.dumps(moved))
    assert F.load("newpkg.b", "f")() == "f"  # the module moved
    assert F.load("newpkg.c", "g")() == "g"  # the function moved (and was renamed)
    with pytest.raises(ImportError, match="cannot find newpkg.b.h"):
        F.load("newpkg.b", "h")


def test_a_barrier_fingerprint_is_the_same_bits_twice_and_sees_one_changed_number():
    torch.set_num_threads(1)
    first = F.barrier_train({"config": TINY, "steps": 2})
    assert first["steps"] == 2 and set(first) >= {"final_train_loss", "val_bpc", "weights_sha256", "weight_sums"}
    assert F.compare(first, F.barrier_train({"config": TINY, "steps": 2})) == (True, 0.0)
    other = F.barrier_train({"config": {**TINY, "lr": TINY["lr"] * (1 + 1e-6)}, "steps": 2})
    same, deviation = F.compare(first, other)
    assert not same and 0 < deviation < 1e-3


def test_the_script_runs_against_a_copy_of_the_package(tmp_path):
    """What ``verify`` does at a run's commit: the script with PYTHONPATH at a copy, printing one JSON line."""
    exp = _toy("toy")
    here = registry.fingerprint(exp, ROOT)
    torch.set_num_threads(1)
    assert here == json.loads(json.dumps(F.barrier_train({"config": TINY, "steps": 2})))


@pytest.mark.skipif(
    bool(subprocess.run(["git", "status", "--porcelain", "nextword"], cwd=ROOT, capture_output=True, text=True).stdout),
    reason="uncommitted changes to the package: HEAD and the working tree may compute differently",
)
def test_verify_replays_at_the_run_commit_and_here_and_records_the_verdict(tmp_path, monkeypatch):
    exp = _toy("toy_verify")
    monkeypatch.setitem(registry.EXPERIMENTS, "toy_verify", exp)
    provenance.save_result(
        "toy_verify", {}, command="c", config=TINY, seeds=[0], wall_time_s=1.0, entries=exp.entry, results_dir=tmp_path
    )
    real = registry.status
    monkeypatch.setattr(registry, "status", lambda n, d=None: ("to verify", "code changed: x"))
    assert registry.verify(["toy_verify"], results_dir=tmp_path, log=lambda line: None)
    record = provenance.load_result("toy_verify", tmp_path)
    assert record["fingerprint"]["commit"] == record["commit"] and record["verification"]["result"] == "bitwise"
    assert record["verification"]["code"] == provenance.closure_digest(exp.entry)
    monkeypatch.setattr(registry, "status", real)
    assert registry.status("toy_verify", tmp_path)[0] == "current"  # and the code is that commit's


def test_every_run_with_numbers_has_a_fingerprint_and_only_timings_have_none():
    for name, exp in registry.EXPERIMENTS.items():
        assert (exp.fingerprint is None) == exp.timing, name
        if exp.fingerprint:
            assert exp.fingerprint[0] in F.PROCEDURES, name


def test_the_script_does_not_import_the_package_it_replays_at_module_level():
    """It runs against another commit's copy of ``nextword``: every import of it goes through :func:`load`."""
    text = (ROOT / "nextword" / "torch" / "runs" / "fingerprint.py").read_text()
    assert "import nextword" not in text and "from nextword" not in text
