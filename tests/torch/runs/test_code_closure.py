"""One rule for "current": the import closure of a run's entry functions, read from the code (issue 47 §1).

A change to a file in the closure makes a saved run stale, a change outside it does not; moves,
comments and docstrings do not count, a changed statement does (nextword.provenance.changed_code).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from nextword import provenance

FILES = {
    "pkg/__init__.py": "",
    "pkg/a.py": '"""Module a."""\n\n\ndef f(x):\n    return 2 * x\n',
    "pkg/b.py": 'from pkg.a import f\n\n\ndef g(x):\n    """Twice x, plus one."""\n    return f(x) + 1  # one\n',
    "pkg/c.py": "def h():\n    return 3\n",
    "pkg/d.py": "def k():\n    return 0\n",
    "pkg/runner.py": (
        "from typing import TYPE_CHECKING\n\nfrom pkg.b import g\n\nif TYPE_CHECKING:\n    from pkg import c\n\n"
        "SCALE = 2\n\n\ndef run(x):\n    from pkg.d import k  # imported when it runs\n\n    return SCALE * g(x) + k()\n\n\n"
        "def other():\n    from pkg.c import h\n\n    return h()\n"
    ),
}
ENTRY = ("pkg.runner:run",)


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A git repository holding ``pkg``, and a run saved from its commit."""
    for path, text in FILES.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-q", "-m", "the code of the run")
    monkeypatch.setattr(provenance, "_REPO_ROOT", tmp_path)
    monkeypatch.delenv("NEXTWORD_GIT_COMMIT", raising=False)
    provenance.save_result(
        "run",
        {},
        command="c",
        config={"steps": 3},
        seeds=[0],
        wall_time_s=1.0,
        entries=ENTRY,
        results_dir=tmp_path / "r",
    )
    return tmp_path


def _edit(repo: Path, path: str, old: str, new: str) -> None:
    (repo / path).write_text((repo / path).read_text().replace(old, new))


def _changed(repo: Path, renames=None, entries=ENTRY):
    return provenance.changed_code(provenance.load_result("run", repo / "r"), entries, renames)


def test_the_closure_follows_imports_at_any_depth_and_only_what_the_entry_uses(repo):
    closure = provenance.code_closure(ENTRY)
    assert sorted(closure) == [
        "pkg/__init__.py",
        "pkg/a.py",
        "pkg/b.py",
        "pkg/d.py",
        "pkg/runner.py:SCALE",
        "pkg/runner.py:run",
    ]
    # pkg/c.py: imported only under TYPE_CHECKING and by another function of the entry module
    record = provenance.load_result("run", repo / "r")
    assert record["code"] == closure and record["code_entry"] == list(ENTRY) and not record["dirty"]
    assert _changed(repo) == []


@pytest.mark.parametrize(
    "path, old, new, stale",
    [
        ("pkg/a.py", "2 * x", "3 * x", ["pkg/a.py"]),  # two imports away
        ("pkg/d.py", "return 0", "return 1", ["pkg/d.py"]),  # imported inside the entry function
        ("pkg/runner.py", "SCALE = 2", "SCALE = 3", ["pkg/runner.py:SCALE"]),  # a constant the entry uses
        ("pkg/c.py", "return 3", "return 4", []),  # outside the closure
        ("pkg/runner.py", "return h()", "return h() + 1", []),  # another function of the entry module
        ("pkg/b.py", "# one", "# the one, commented", []),  # a comment
        ("pkg/b.py", "Twice x, plus one.", "Twice x and one.", []),  # a docstring
    ],
)
def test_a_change_in_the_closure_makes_the_run_stale_and_outside_it_does_not(repo, path, old, new, stale):
    _edit(repo, path, old, new)  # not committed: the working tree counts
    assert _changed(repo) == stale
    assert provenance.is_current("run", {"steps": 3}, repo / "r", entries=ENTRY) == (not stale)
    _git(repo, "commit", "-qam", "edit")
    assert _changed(repo) == stale  # and committed


def test_code_that_only_moved_keeps_the_run_current(repo):
    (repo / "pkg" / "sub").mkdir()
    (repo / "pkg" / "sub" / "__init__.py").write_text("")
    _git(repo, "mv", "pkg/a.py", "pkg/sub/a.py")
    _edit(repo, "pkg/b.py", "pkg.a", "pkg.sub.a")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "moved")
    renames = {"pkg/a.py": "pkg/sub/a.py"}
    assert _changed(repo, renames) == ["pkg/sub/__init__.py"]  # a new package on the way: its file is new
    (repo / "pkg" / "sub" / "__init__.py").unlink()  # a namespace package instead: nothing new runs
    assert _changed(repo, renames) == []
    assert _changed(repo) == ["pkg/a.py", "pkg/b.py", "pkg/sub/a.py"]  # without the move table: gone, edited, new
    _edit(repo, "pkg/sub/a.py", "2 * x", "3 * x")
    assert _changed(repo, renames) == ["pkg/sub/a.py"]


def test_a_record_whose_code_cannot_be_read(repo):
    path = repo / "r" / "run" / "result.json"
    record = json.loads(path.read_text())
    unknown = {**record, "commit": "0" * 40}
    assert provenance.changed_code(unknown, ENTRY) == []  # falls back to the digests it stored
    _edit(repo, "pkg/a.py", "2 * x", "3 * x")
    assert provenance.changed_code(unknown, ENTRY) == ["pkg/a.py"]
    legacy = {k: v for k, v in unknown.items() if k not in ("code", "code_entry")}  # commit only, unreadable
    assert provenance.changed_code(legacy, ENTRY) is None


def test_a_scratch_copy_of_the_package_goes_stale_only_through_its_closure(tmp_path, monkeypatch):
    """The rule on the real package (the SVFlow hybrid runs): a file their training imports makes them
    stale, a file of Part 4's theory does not."""
    root = Path(__file__).resolve().parents[3]
    archive = subprocess.run(["git", "archive", "HEAD", "nextword"], cwd=root, check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(tmp_path)], input=archive.stdout, check=True)
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-q", "-m", "scratch copy")
    monkeypatch.setattr(provenance, "_REPO_ROOT", tmp_path)
    entry = ("nextword.torch.runs.seeded_runs:_hybrid_seed",)
    record = {"commit": _git(tmp_path, "rev-parse", "HEAD"), "dirty": False, "code_entry": list(entry)}
    closure = provenance.code_closure(entry)
    assert "nextword/torch/svflow/hybrid.py" in closure and "nextword/torch/training/engine.py" in closure
    assert "nextword/theory/barrier/margins.py" not in closure
    assert provenance.changed_code(record, entry) == []
    _edit(tmp_path, "nextword/theory/barrier/margins.py", "import numpy as np", "import numpy as np\n\nX = 1")
    assert provenance.changed_code(record, entry) == []
    _edit(tmp_path, "nextword/torch/svflow/hybrid.py", "import numpy as np", "import numpy as np\n\nX = 1")
    assert provenance.changed_code(record, entry) == ["nextword/torch/svflow/hybrid.py"]


def test_a_benchmark_entry_follows_its_imports_into_the_library():
    """``bench_margin_cpu`` times the margin step: its closure holds the step (it was once ``benchmarks/`` only)."""
    closure = provenance.code_closure(("benchmarks.bench_margin",))
    assert "benchmarks/bench_margin.py" in closure
    assert "nextword/torch/barrier/prior.py" in closure and "nextword/torch/models/gpt.py" in closure


def test_the_registry_moves_point_at_modules_that_exist():
    from nextword.torch.runs.moved import MOVED

    root = Path(__file__).resolve().parents[3]
    assert all((root / new).is_file() for new in MOVED.values())
    assert not any((root / old).exists() for old in MOVED)


def test_every_saved_run_names_a_commit_of_this_repository():
    from nextword.torch.runs.registry import NAMES

    root = Path(__file__).resolve().parents[3]
    for name in NAMES:
        commit = provenance.load_result(name)["commit"]
        assert subprocess.run(["git", "cat-file", "-e", f"{commit}^{{commit}}"], cwd=root).returncode == 0, name


def test_save_result_copies_files_and_refuses_large_ones(tmp_path):
    small, big = tmp_path / "small.pt", tmp_path / "big.pt"
    small.write_bytes(b"x" * 10)
    big.write_bytes(b"x" * (provenance.MAX_FILE_BYTES + 1))
    kw = dict(
        command="c", config={}, seeds=[0], wall_time_s=1.0, entries=("nextword.positions",), results_dir=tmp_path / "r"
    )
    path = provenance.save_result("ok", {}, files={"model.pt": small}, **kw)
    assert (path.parent / "model.pt").read_bytes() == small.read_bytes()
    with pytest.raises(ValueError, match=r"files\['model.pt'\].*larger than"):
        provenance.save_result("too_big", {}, files={"model.pt": big}, **kw)
    assert not (tmp_path / "r" / "too_big").exists()  # nothing written
