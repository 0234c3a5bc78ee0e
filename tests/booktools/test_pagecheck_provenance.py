"""The stale-provenance check (``nextword.booktools.checks.provenance``): a stored output that prints a saved
run's provenance must say what the run's ``result.json`` says now (4.9 kept an old run's commit and wall
time). Tiny fake pages with a fake ``book/results`` beside them; no execution."""

from __future__ import annotations

import json
from pathlib import Path

from nextword.booktools.checks import provenance
from nextword.booktools.pages import REPO_ROOT, read_page

_RUN = {
    "data": {"final_val_bpc": 2.61},
    "command": "nextword results run toy_sweep",
    "commit": "ed379f3e63c2ffe0351678579e067994710801f9",
    "dirty": False,
    "seeds": [0, 1],
    "wall_time_s": 1783.0,
    "created": "2026-11-28T12:54:31+00:00",
}

_PAGE = """# %% [markdown]
# # 9.1 A page

# %% tags=["hide-cell"]
run = load_result("toy_sweep")
print(f"produced by `{run['command']}` at `{run['commit'][:12]}` on {run['created'][:10]}")
"""


def _problems(tmp_path: Path, printed: str, run: dict | None = None) -> list[tuple[int, str]]:
    book = tmp_path / "book"
    page = book / "part9_x" / "page.py"
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(_PAGE, encoding="utf-8")
    saved = book / "results" / "toy_sweep" / "result.json"
    saved.parent.mkdir(parents=True, exist_ok=True)
    saved.write_text(json.dumps(run or _RUN), encoding="utf-8")
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": "# 9.1 A page"},
        {
            "cell_type": "code",
            "metadata": {"tags": ["hide-cell"]},
            "source": "...",
            "execution_count": 1,
            "outputs": [{"output_type": "stream", "name": "stdout", "text": printed}],
        },
    ]
    nb = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    page.with_suffix(".ipynb").write_text(json.dumps(nb), encoding="utf-8")
    return [(p.line, p.message) for p in provenance.check(read_page(page))]


CURRENT = (
    "larger sweep: produced by `nextword results run toy_sweep` at `ed379f3e63c2` on 2026-11-28 "
    "(wall time 30 min for 5 models); seeds [0, 1]\neach model: d_model=64\n"
)


def test_an_output_that_matches_the_saved_run_passes(tmp_path):
    assert _problems(tmp_path, CURRENT) == []
    wrapped = (
        "`nextword results run toy_sweep` at commit ed379f3e on AMD EPYC\n2026-11-28, 2 CPUs, wall time 29.7 min\n"
    )
    assert _problems(tmp_path, wrapped) == []


def test_the_old_runs_commit_date_and_wall_time_are_caught(tmp_path):
    """The defect of 4.9: the run was redone, the page not rebuilt."""
    old = CURRENT.replace("ed379f3e63c2", "6233bea4484c").replace("2026-11-28", "2026-11-26")
    old = old.replace("wall time 30 min", "wall time 4 min")
    assert _problems(tmp_path, old) == [
        (
            5,
            "the stored output about saved run 'toy_sweep' is stale: it prints commit 6233bea4484c (result.json: "
            "ed379f3e63c2); date 2026-11-26 (result.json: 2026-11-28); wall time 4 min (result.json: 30 min); "
            "rebuild the page",
        )
    ]


def test_each_field_is_compared_on_its_own(tmp_path):
    for printed, expected in (
        (CURRENT.replace("seeds [0, 1]", "seeds [0, 1, 2]"), "seeds [0, 1, 2] (result.json: [0, 1])"),
        (CURRENT.replace("30 min", "30 min (uncommitted changes)"), "(uncommitted changes) (result.json: dirty"),
        (CURRENT.replace("wall time 30 min", "wall time 1783.5 s"), "wall time 1783.5 s (result.json: 1783.0 s)"),
    ):
        (problem,) = _problems(tmp_path, printed)
        assert expected in problem[1]


def test_a_record_ends_at_a_blank_line_or_the_next_run(tmp_path):
    later = CURRENT + "\nan unrelated line printed on 2026-01-01, wall time 3 min\n"
    assert _problems(tmp_path, later) == []
    two = CURRENT + "`nextword results run toy_sweep` at `0000000aaaaa`\n"
    assert [m for _, m in _problems(tmp_path, two)] == [
        "the stored output about saved run 'toy_sweep' is stale: it prints commit 0000000aaaaa (result.json: "
        "ed379f3e63c2); rebuild the page"
    ]


def test_a_run_that_does_not_exist_and_an_untied_commit_are_caught(tmp_path):
    gone = CURRENT.replace("run toy_sweep", "run old_sweep")
    assert [m for _, m in _problems(tmp_path, gone)] == [
        "the output names the saved run 'old_sweep', which has no old_sweep/result.json"
    ]
    untied = "larger sweep at commit ed379f3e63c2 on 2026-11-28\n"
    assert [m for _, m in _problems(tmp_path, untied)] == [
        "the output prints 'at commit ed379f3e63c2' without the command of the saved run it belongs to "
        "(print `result['command']` before it)"
    ]


def test_a_command_the_result_json_holds_starts_a_record_too(tmp_path):
    run = dict(_RUN, command="python -m nextword.torch.old_runner --sweep")
    printed = "produced by `python -m nextword.torch.old_runner --sweep` at `6233bea4484c`\n"
    assert "commit 6233bea4484c" in _problems(tmp_path, printed, run)[0][1]


def test_solutions_and_exercises_print_no_stale_provenance():
    notebooks = sorted((REPO_ROOT / "solutions").rglob("*.ipynb")) + sorted((REPO_ROOT / "exercises").rglob("*.ipynb"))
    found = []
    for path in notebooks:
        for index, cell in enumerate(json.loads(path.read_text(encoding="utf-8")).get("cells", [])):
            found += [
                f"{path.relative_to(REPO_ROOT)} cell {index}: {message}"
                for message in provenance.stale_provenance(cell.get("outputs", []))
            ]
    assert not found, "\n".join(found)
