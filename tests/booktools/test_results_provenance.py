"""Saved results carry their provenance, and every results file a notebook reads exists (issue 16)."""

import json
import re
from pathlib import Path

import pytest

from nextword.provenance import PROVENANCE_FIELDS

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "book" / "results"
RESULT_FILES = sorted(RESULTS.glob("*/result.json"))
NOTEBOOKS = sorted((ROOT / "book").glob("*/*.py")) + sorted((ROOT / "solutions").glob("*/*.py"))
# load_result("name") / load_curves("name"), or a literal path under book/results/
_READS = re.compile(r"load_(result|curves)\(\s*[\"']([\w/-]+)[\"']|book/results/([\w./-]+)")


def test_results_exist_to_check():
    assert RESULT_FILES, "book/results/ holds no saved result"


@pytest.mark.parametrize("path", RESULT_FILES, ids=lambda p: p.parent.name)
def test_result_has_provenance(path):
    record = json.loads(path.read_text())
    missing = [f for f in PROVENANCE_FIELDS if f not in record]
    assert not missing, f"{path.relative_to(ROOT)} lacks provenance fields {missing}"
    assert "data" in record
    assert record["command"].startswith(("nextword ", "python -m ", "make ")), record["command"]
    assert re.fullmatch(r"[0-9a-f]{40}", record["commit"]), f"commit must be a git hash, got {record['commit']!r}"
    assert isinstance(record["dirty"], bool)
    assert isinstance(record["config"], dict) and record["config"]
    assert record["seeds"] and all(isinstance(s, int) for s in record["seeds"])
    assert record["wall_time_s"] > 0
    for key in ("cpu", "cpus", "numpy", "python"):
        assert record["machine"].get(key), f"machine.{key} missing in {path}"
    # files named by the result (a checkpoint) are there and small
    for name in re.findall(r'"checkpoint": "([^"]+)"', path.read_text()):
        f = path.parent / name
        assert f.is_file(), f"{path.relative_to(ROOT)} names {name}, which is not saved"
        assert f.stat().st_size <= 2 * 1024 * 1024, f"{f} is larger than 2 MB"


def test_saved_results_are_small():
    for f in RESULTS.rglob("*"):
        if f.is_file() and "partial" not in f.parts:  # partial/: unfinished seeds, git-ignored
            assert f.stat().st_size <= 2 * 1024 * 1024, f"{f.relative_to(ROOT)} is larger than 2 MB"


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_results_file_a_notebook_reads_exists(nb):
    missing = []
    for kind, name, literal in _READS.findall(nb.read_text(encoding="utf-8")):
        if name:
            target = RESULTS / name / ("result.json" if kind == "result" else "curves.npz")
        else:
            target = RESULTS / literal.rstrip(".")
        if not target.exists():
            missing.append(target.relative_to(ROOT).as_posix())
    assert not missing, f"{nb.relative_to(ROOT)} reads saved results that do not exist: {missing}"


def test_saved_results_are_strict_json():
    """No NaN/Infinity tokens (not JSON): an undefined value is saved as null."""

    def reject(token):
        raise ValueError(f"non-standard JSON constant {token}")

    for path in RESULT_FILES:
        json.loads(path.read_text(), parse_constant=reject)


def test_save_result_writes_undefined_values_as_null(tmp_path):
    from nextword.provenance import load_result, save_result

    save_result(
        "x",
        {"fisher": [1.5, float("nan")], "inf": float("inf")},
        command="python -m x",
        config={"a": 1},
        seeds=[0],
        wall_time_s=1.0,
        results_dir=tmp_path,
    )
    assert load_result("x", tmp_path)["data"] == {"fisher": [1.5, None], "inf": None}
