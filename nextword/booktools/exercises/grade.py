"""Where a student stands: run the filled-in exercise notebooks and print a ✓ / ✗ / not-started table.

``nextword grade [part] [--dir exercises] [--timeout 600]``

For every exercise notebook of ``part`` (``1``, ``part1`` or ``part1_chapter6``; all parts by default):

* **not started** — its code is still what ``build`` generated (nothing is executed);
* **✓** — it runs to the end and its self-check prints ✓;
* **✗** — a stub is left, the self-check fails (the table shows "k of n checks passed" and the first
  failing check) or the code crashes (the cell and the error are shown).

Notebooks are executed with nbclient in memory, in their own folder; the student's files are not changed.
Of a ``.py``/``.ipynb`` pair the more recently modified file is graded.
"""

from __future__ import annotations

import dataclasses
import re
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from .build import REPO_ROOT, expected_exercise, exercise_path, part_matches, solution_sources
from .hints import exercise_id

__all__ = ["Grade", "grade_notebook", "grade_all", "format_table", "main"]


@dataclasses.dataclass(frozen=True)
class Grade:
    """The outcome for one exercise: ``status`` is ``"✓"``, ``"✗"`` or ``"not started"``."""

    exercise: str
    path: Path
    status: str
    detail: str = ""
    likely: str = ""  #: the checker's "likely mistake: …" line of a failed check, if it named one
    checks: tuple[str, ...] = ()  #: every check's ✓ / ✗ line (shown by ``grade -v``)


def _code_cells(nb) -> list[str]:
    return [c.source.strip() for c in nb.cells if c.cell_type == "code"]


def _notebook(path: Path):
    """The notebook to grade: the ``.ipynb`` or the ``.py`` beside it, whichever was saved last."""
    import nbformat

    from nextword.booktools.notebooks import py_to_notebook

    py, ipynb = path.with_suffix(".py"), path.with_suffix(".ipynb")
    if ipynb.exists() and (not py.exists() or ipynb.stat().st_mtime >= py.stat().st_mtime):
        return nbformat.read(ipynb, as_version=4), ipynb
    return py_to_notebook(py), py


def _pristine(solution: Path):
    from nextword.booktools.notebooks import py_to_notebook

    with tempfile.TemporaryDirectory() as tmp:
        stub = Path(tmp) / "pristine.py"
        stub.write_text(expected_exercise(solution), encoding="utf-8")
        return py_to_notebook(stub)


def _first_line(text: str) -> str:
    text = re.sub(r"\x1b\[[0-9;]*m", "", text or "").strip()  # no terminal colours
    return text.splitlines()[0] if text else ""


def grade_notebook(notebook_path: Path, solution: Path, *, timeout: int = 600) -> Grade:
    """Grade one student notebook against the generated version of ``solution``."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError

    ex = exercise_id(solution)
    if not notebook_path.with_suffix(".py").exists() and not notebook_path.with_suffix(".ipynb").exists():
        return Grade(ex, notebook_path, "not started", "no notebook")
    nb, graded = _notebook(notebook_path)
    if _code_cells(nb) == _code_cells(_pristine(solution)):
        return Grade(ex, graded, "not started")
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(graded.parent.resolve())}},
        # the kernel's own log (its "running over TCP without encryption" warning on every start) is not the
        # student's business: only its errors reach the terminal
        extra_arguments=["--IPKernelApp.log_level=ERROR"],
    )
    try:
        client.execute()
    except CellTimeoutError:
        return Grade(ex, graded, "✗", f"a cell ran longer than {timeout} s")
    except CellExecutionError as err:
        cell = next(
            (i for i, c in enumerate(nb.cells) for o in c.get("outputs", []) if o.get("output_type") == "error"), None
        )
        where = f"cell {cell}" if cell is not None else "a cell"
        if err.ename == "NotImplementedError":
            return Grade(ex, graded, "✗", f"a stub is left ({where}): {_first_line(err.evalue)}")
        if err.ename == "ExerciseCheckError":
            lines = [ln.strip() for ln in re.sub(r"\x1b\[[0-9;]*m", "", err.evalue).splitlines() if ln.strip()]
            head = re.sub(r"^✗\s*(Exercise [\d.]+: )?", "", lines[0]) if lines else ""
            first_fail = next((ln for ln in lines[1:] if ln.startswith("✗")), "")
            likely = next((ln for ln in lines if ln.startswith("likely")), "")  # kept whole in the table
            detail = f"{head}; {first_fail}" if first_fail else head
            return Grade(ex, graded, "✗", detail, likely=likely, checks=tuple(lines[1:]))
        return Grade(ex, graded, "✗", f"{err.ename} in {where}: {_first_line(err.evalue)}")
    texts = [o.get("text", "") for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "stream"]
    ticks = [ln for t in texts for ln in t.splitlines() if ln.startswith("✓")]
    if not ticks:
        return Grade(ex, graded, "✗", "ran to the end but no self-check printed ✓ (was the check cell removed?)")
    return Grade(ex, graded, "✓", ticks[-1].removeprefix("✓").strip())


def grade_all(
    part: str | None = None, *, directory: Path | None = None, root: Path = REPO_ROOT, timeout: int = 600
) -> list[Grade]:
    """Grade every exercise of ``part`` (all parts if None) found in ``directory`` (default ``exercises/``)."""
    grades = []
    for solution in solution_sources(root):
        if not part_matches(solution.parent.name, part):
            continue
        target = exercise_path(solution, root)
        if directory is not None:
            target = Path(directory) / solution.parent.name / solution.name
        grades.append(grade_notebook(target.with_suffix(".ipynb"), solution, timeout=timeout))
    if part and not grades:
        raise ValueError(f"no exercises for part {part!r} (try 1, 2, 3, 4 or 5)")
    if directory is not None and grades and all(g.detail == "no notebook" for g in grades):
        raise ValueError(
            f"no exercise notebooks in {directory} (expected part*/ex*.ipynb there; "
            f"`nextword exercises copy {directory}` copies them)"
        )
    return grades


def format_table(grades: Sequence[Grade], *, width: int = 160, verbose: bool = False) -> str:
    """The table printed by ``grade``: one row per exercise, then the counts.

    >>> print(format_table([Grade("p1_01", Path("x"), "✓", "all good"), Grade("p1_02", Path("y"), "not started")]))
    exercise  status       detail
    p1_01     ✓            all good
    p1_02     not started
    1 ✓ · 0 ✗ · 1 not started (of 2)
    """
    rows = ["exercise  status       detail"]
    for g in grades:
        detail = g.detail if len(g.detail) <= width else g.detail[: width - 1] + "…"
        rows.append(f"{g.exercise:<9} {g.status:<12} {detail}".rstrip())
        if g.likely and g.likely not in detail:
            rows.append(f"{'':<22} {g.likely}")  # never cut: it is the most useful line of a ✗
        if verbose:
            rows += [f"{'':<22} {line}" for line in g.checks if line != g.likely]
    n_ok = sum(g.status == "✓" for g in grades)
    n_bad = sum(g.status == "✗" for g in grades)
    rows.append(f"{n_ok} ✓ · {n_bad} ✗ · {len(grades) - n_ok - n_bad} not started (of {len(grades)})")
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> int:
    """``grade [part] [--dir DIR] [--timeout S]``: print the table; exit 0 (the table is the result)."""
    import argparse

    from nextword._cli import existing_dir, positive_int

    parser = argparse.ArgumentParser(
        prog="nextword grade", description="Run your filled-in exercise notebooks and show ✓ / ✗ / not started."
    )
    parser.add_argument("part", nargs="?", help="1..5, part1 or part1_chapter6 (default: every part)")
    parser.add_argument(
        "--dir", type=existing_dir, default=None, help="folder holding part*/ex*.ipynb (default: exercises/)"
    )
    parser.add_argument("--timeout", type=positive_int, default=600, help="seconds allowed per cell (default 600)")
    parser.add_argument("-v", "--verbose", action="store_true", help="show every check of a ✗ (default: the first)")
    args = parser.parse_args(list(sys.argv[2:] if argv is None else argv))
    try:
        grades = grade_all(args.part, directory=args.dir, timeout=args.timeout)
    except ValueError as exc:
        print(f"nextword grade: error: {exc}", file=sys.stderr)
        return 2
    print(format_table(grades, verbose=args.verbose))
    return 0
