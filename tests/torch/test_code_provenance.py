"""A saved run is current while its code computes the same thing: moves, comments and docstrings do not
count, a changed statement does (nextword.provenance.changed_code, the registry's MOVED table)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from nextword import provenance

A_OLD = '''"""Module a."""


def f(x):
    return 2 * x
'''
B_OLD = '''from pkg.a import f


def g(x):
    """Twice x, plus one."""
    return f(x) + 1  # the one
'''


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
    """A git repository with pkg/a.py and pkg/b.py committed, and a legacy record (commit and paths only)."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text(A_OLD)
    (tmp_path / "pkg" / "b.py").write_text(B_OLD)
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-q", "-m", "old layout")
    monkeypatch.setattr(provenance, "_REPO_ROOT", tmp_path)
    monkeypatch.delenv("NEXTWORD_GIT_COMMIT", raising=False)
    results = tmp_path / "results"
    (results / "run").mkdir(parents=True)
    record = {
        "data": {},
        "commit": _git(tmp_path, "rev-parse", "HEAD"),
        "dirty": False,
        "code_paths": ["pkg/a.py", "pkg/b.py"],
        "config": {"steps": 3},
    }
    (results / "run" / "result.json").write_text(json.dumps(record))
    return tmp_path


MOVED = {"pkg/a.py": "pkg/sub/a.py"}
NOW = ("pkg/sub/a.py", "pkg/b.py")


def _move(repo: Path, a_text: str = A_OLD) -> None:
    (repo / "pkg" / "sub").mkdir()
    (repo / "pkg" / "a.py").unlink()
    (repo / "pkg" / "sub" / "a.py").write_text(a_text)
    (repo / "pkg" / "b.py").write_text(B_OLD.replace("pkg.a", "pkg.sub.a"))
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "moved")


def _current(repo: Path, renames=MOVED) -> bool:
    return provenance.is_current("run", {"steps": 3}, repo / "results", code_paths=NOW, renames=renames)


def test_a_run_whose_code_only_moved_is_current(repo):
    _move(repo)
    saved = provenance.load_result("run", repo / "results")
    assert provenance.changed_code(saved, NOW, MOVED) == []
    assert _current(repo)
    assert not _current(repo, renames={})  # without the move table the old file is simply missing
    assert not provenance.is_current("run", {"steps": 4}, repo / "results", code_paths=NOW, renames=MOVED)


def test_comments_docstrings_and_blank_lines_do_not_count(repo):
    _move(
        repo,
        '"""Module a, now documented at length."""\n\n\n# a comment\ndef f(x):\n    """Doc."""\n\n    return 2 * x\n',
    )
    assert _current(repo)


def test_a_changed_statement_makes_the_run_stale_and_is_named(repo):
    _move(repo, A_OLD.replace("2 * x", "3 * x"))
    saved = provenance.load_result("run", repo / "results")
    assert provenance.changed_code(saved, NOW, MOVED) == ["pkg/sub/a.py"]
    assert not _current(repo)


def test_an_uncommitted_edit_counts_and_new_records_keep_digests(repo):
    _move(repo)
    path = provenance.save_result(
        "fresh",
        {"x": 1},
        command="c",
        config={"steps": 3},
        seeds=[0],
        wall_time_s=1.0,
        code_paths=NOW,
        results_dir=repo / "results",
    )
    record = json.loads(path.read_text())
    assert set(record["code"]) == set(NOW)
    assert provenance.is_current("fresh", {"steps": 3}, repo / "results", code_paths=NOW)
    (repo / "pkg" / "b.py").write_text(B_OLD.replace("pkg.a", "pkg.sub.a").replace("+ 1", "+ 2"))  # not committed
    assert provenance.changed_code(record, NOW) == ["pkg/b.py"]
    assert not provenance.is_current("fresh", {"steps": 3}, repo / "results", code_paths=NOW)


def test_a_record_whose_commit_cannot_be_read_is_not_current(repo):
    path = repo / "results" / "run" / "result.json"
    record = json.loads(path.read_text())
    path.write_text(json.dumps({**record, "commit": "0" * 40}))
    assert provenance.changed_code(json.loads(path.read_text()), ("pkg/a.py", "pkg/b.py")) is None
    assert not provenance.is_current("run", {"steps": 3}, repo / "results", code_paths=("pkg/a.py", "pkg/b.py"))


def test_the_registry_moves_point_at_modules_that_exist():
    from nextword.torch.runs.moved import MOVED as REGISTRY_MOVED

    root = Path(__file__).resolve().parents[2]
    assert all((root / new).is_file() for new in REGISTRY_MOVED.values())
    assert not any((root / old).exists() for old in REGISTRY_MOVED)


def test_every_path_a_saved_run_records_exists_or_is_in_the_move_table():
    from nextword.torch.runs.moved import MOVED as REGISTRY_MOVED
    from nextword.torch.runs.registry import NAMES

    root = Path(__file__).resolve().parents[2]
    for name in NAMES:
        for p in provenance.load_result(name).get("code_paths", ()):
            assert (root / REGISTRY_MOVED.get(p, p)).exists(), f"{name} records {p}, which is neither here nor moved"


def test_save_result_copies_files_and_refuses_large_ones(tmp_path):
    small, big = tmp_path / "small.pt", tmp_path / "big.pt"
    small.write_bytes(b"x" * 10)
    big.write_bytes(b"x" * (provenance.MAX_FILE_BYTES + 1))
    kw = dict(command="c", config={}, seeds=[0], wall_time_s=1.0, code_paths=(), results_dir=tmp_path / "r")
    path = provenance.save_result("ok", {}, files={"model.pt": small}, **kw)
    assert (path.parent / "model.pt").read_bytes() == small.read_bytes()
    with pytest.raises(ValueError, match=r"files\['model.pt'\].*larger than"):
        provenance.save_result("too_big", {}, files={"model.pt": big}, **kw)
    assert not (tmp_path / "r" / "too_big").exists()  # nothing written
