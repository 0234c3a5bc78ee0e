"""Generate student exercise notebooks from the solution notebooks.

Markers in a solution's py:percent source:

* code: ``# BEGIN SOLUTION`` (optionally ``hint="..."``) … ``# END SOLUTION`` — the region is replaced by
  ``raise NotImplementedError("<hint>")`` at the marker's indentation;
* markdown: ``# <!-- BEGIN SOLUTION -->`` … ``# <!-- END SOLUTION -->`` — replaced by
  ``# *Your answer here.*``.

Example
-------
>>> src = 'x = 1\\n# BEGIN SOLUTION hint="add one"\\ny = x + 1\\n# END SOLUTION\\n'
>>> print(strip_solutions(src), end="")
x = 1
raise NotImplementedError("add one")
"""
from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
_BEGIN = re.compile(r'^(?P<indent>\s*)#\s*(?P<md><!--\s*)?BEGIN SOLUTION(?:\s+hint="(?P<hint>[^"]*)")?\s*(-->)?\s*$')
_END = re.compile(r"^\s*#\s*(<!--\s*)?END SOLUTION\s*(-->)?\s*$")
DEFAULT_HINT = "replace this line with your solution"


class MarkerError(ValueError):
    """A solution file has unbalanced or nested BEGIN/END SOLUTION markers."""


def strip_solutions(source: str, *, name: str = "<source>") -> str:
    """Return ``source`` with every marked solution region replaced by its stub."""
    out: list[str] = []
    inside: re.Match[str] | None = None
    for lineno, line in enumerate(source.splitlines(), start=1):
        begin, end = _BEGIN.match(line), _END.match(line)
        if begin:
            if inside:
                raise MarkerError(f"{name}:{lineno}: BEGIN SOLUTION inside another solution region")
            inside = begin
            indent = begin["indent"]
            if begin["md"]:
                out.append(f"{indent}# *Your answer here.*")
            else:
                hint = (begin["hint"] or DEFAULT_HINT).replace("\\", "\\\\").replace('"', '\\"')
                out.append(f'{indent}raise NotImplementedError("{hint}")')
        elif end:
            if not inside:
                raise MarkerError(f"{name}:{lineno}: END SOLUTION without BEGIN SOLUTION")
            inside = None
        elif not inside:
            out.append(line)
    if inside:
        raise MarkerError(f"{name}: BEGIN SOLUTION never closed")
    return "\n".join(out) + "\n"


def solution_sources(root: Path = REPO_ROOT) -> list[Path]:
    """Every solution notebook source ``solutions/<part>/ex*.py``."""
    return sorted((Path(root) / "solutions").glob("*/ex*.py"))


def exercise_path(solution: Path, root: Path = REPO_ROOT) -> Path:
    """Where the student version of ``solution`` lives."""
    rel = Path(solution).resolve().relative_to(Path(root).resolve() / "solutions")
    return Path(root) / "exercises" / rel


def expected_exercise(solution: Path) -> str:
    """The student py:percent text that ``build`` writes for ``solution``."""
    header = (
        "# %% [markdown]\n"
        "# > Student version generated from `solutions/` by `python -m nextword.exercises build`;\n"
        "# > edit the solution, not this file. Replace each `NotImplementedError` stub, then run the\n"
        "# > self-check cell at the end.\n\n"
    )
    text = Path(solution).read_text(encoding="utf-8")
    return header + strip_solutions(text, name=str(solution))


def build(root: Path = REPO_ROOT) -> list[Path]:
    """Write every exercise notebook (``.py`` + output-free ``.ipynb``); return the written paths."""
    import nbformat

    from nextword.notebooks import py_to_notebook

    written = []
    for solution in solution_sources(root):
        target = exercise_path(solution, root)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(expected_exercise(solution), encoding="utf-8")
        nbformat.write(py_to_notebook(target), target.with_suffix(".ipynb"))
        written.append(target)
    return written


def stale_exercises(root: Path = REPO_ROOT) -> list[str]:
    """Describe every exercise that is missing or differs from what :func:`build` would write."""
    problems = []
    solutions = solution_sources(root)
    for solution in solutions:
        target = exercise_path(solution, root)
        if not target.exists():
            problems.append(f"{target} is missing")
        elif target.read_text(encoding="utf-8") != expected_exercise(solution):
            problems.append(f"{target} differs from its solution {solution}")
    expected = {exercise_path(s, root).resolve() for s in solutions}
    for orphan in sorted((Path(root) / "exercises").glob("*/ex*.py")):
        if orphan.resolve() not in expected:
            problems.append(f"{orphan} has no solution in solutions/")
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    command = args[0] if args else "build"
    if command == "build":
        for path in build():
            print(f"wrote {path.relative_to(REPO_ROOT)}")
        return 0
    if command == "check":
        problems = stale_exercises()
        for p in problems:
            print(f"[stale] {p}")
        print(f"{len(solution_sources()) - len(problems)} of {len(solution_sources())} exercises in sync")
        return 1 if problems else 0
    print("usage: python -m nextword.exercises [build|check]", file=sys.stderr)
    return 2
