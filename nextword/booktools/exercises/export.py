"""The instructor's builds of the exercises: an otter-grader assignment and an nbgrader source tree.

One source, three builds: ``solutions/`` (with its ``# BEGIN SOLUTION`` markers) and the checkers give the
self-learner's notebooks (:mod:`.build`), and, here, the two formats courses grade Jupyter work with::

    python -m nextword.booktools.exercises export --otter DIR [--part 4]      # DIR/<part>/<part>.ipynb
    python -m nextword.booktools.exercises export --nbgrader DIR [--part 4]   # DIR/source/<part>/exNN_*.ipynb

Every **sub-check** of an exercise's checker (a ``with report.check(label)`` block) becomes one test worth one
point; the first sub-check of each exercise is **public** (the student can run it), the others are
**hidden** (only the autograder has them). Each written answer (``<!-- BEGIN SOLUTION -->``) becomes a
manually graded question worth one point. The labels are found by running the reference solution (which must
pass every sub-check); a test calls :func:`nextword.booktools.exercises.subchecks.sub_check` with its label.

The student's notebooks of both builds import neither the checkers nor ``hint``/``reveal``: the self-check
cell is replaced by the tool's test cells (otter keeps the hidden ones in the autograder zip only, nbgrader
strips ``### BEGIN HIDDEN TESTS`` blocks from the release and restores them when it autogrades).
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import io
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from .build import SOLUTION_BEGIN, SOLUTION_END, REPO_ROOT, exercise_info, PART_NAMES, solution_sources
from .hints import exercise_id

__all__ = [
    "Exercise",
    "read_exercise",
    "otter_master",
    "nbgrader_notebook",
    "export_otter",
    "export_nbgrader",
    "export_main",
]

_MD_BEGIN = re.compile(r"^#?\s*<!--\s*BEGIN SOLUTION\s*-->\s*$")
_MD_END = re.compile(r"^#?\s*<!--\s*END SOLUTION\s*-->\s*$")


@dataclasses.dataclass
class Exercise:
    """One exercise read from its solution notebook, ready to be written in a grading tool's format.

    ``cells``: the notebook's cells without the self-check cell; ``args``: the names the checker takes;
    ``labels``: its sub-checks in order (the first is public, the rest hidden).
    """

    id: str
    title: str
    difficulty: str
    book_notebook: str
    source: Path
    cells: list
    args: list[str]
    labels: list[str]

    @property
    def public(self) -> list[str]:
        return self.labels[:1]

    @property
    def hidden(self) -> list[str]:
        return self.labels[1:]


def _self_check_call(source: str) -> tuple[str, list[str]] | None:
    """``("p4_01", ["scalar_margins", "support"])`` if ``source`` is a self-check cell, else None."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    calls = [node.value for node in tree.body if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)]
    for call in calls:
        name = call.func.id if isinstance(call.func, ast.Name) else ""
        m = re.fullmatch(r"check_ex_(p\d+_\d+)", name)
        if m:
            if call.keywords or not all(isinstance(a, ast.Name) for a in call.args):
                raise ValueError(f"the self-check call {name}(...) must pass plain names, got {ast.unparse(call)}")
            return m[1], [a.id for a in call.args]
    return None


def _labels(solution: Path, cells: list, exercise: str, args: list[str]) -> list[str]:
    """Run the reference solution's code in this process and list its checker's sub-checks (all must pass)."""
    from .subchecks import sub_check_results

    code = "\n\n".join(c.source for c in cells if c.cell_type == "code")
    namespace: dict = {"__name__": "__main__"}
    cwd, backend = os.getcwd(), os.environ.get("MPLBACKEND")
    os.environ["MPLBACKEND"] = "Agg"  # figures drawn by the solution are not shown (nor kept)
    try:
        os.chdir(solution.parent)
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile(code, str(solution), "exec"), namespace)  # noqa: S102 - the project's own solution
    finally:
        os.chdir(cwd)
        if backend is None:
            os.environ.pop("MPLBACKEND", None)
        else:
            os.environ["MPLBACKEND"] = backend
        if "matplotlib.pyplot" in sys.modules:
            sys.modules["matplotlib.pyplot"].close("all")
    results = sub_check_results(exercise, *(namespace.get(a) for a in args))
    failing = [f"{label}: {msg}" for label, msg in results if msg is not None]
    if failing or not results:
        raise ValueError(f"the reference solution {solution} does not pass its checker: {failing or 'no sub-checks'}")
    labels = [label for label, _ in results]
    if len(set(labels)) != len(labels):
        raise ValueError(f"{exercise}: two sub-checks share a label, so they cannot be graded apart: {labels}")
    return labels


def read_exercise(solution: Path) -> Exercise:
    """Read ``solutions/<part>/exNN_*.py``: its cells, its self-check call and (by running it) its sub-checks."""
    from nextword.booktools.notebooks import py_to_notebook

    solution = Path(solution).resolve()
    nb = py_to_notebook(solution)
    ex = exercise_id(solution)
    found = [(i, _self_check_call(c.source)) for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    found = [(i, call) for i, call in found if call is not None]
    if len(found) != 1 or found[0][1][0] != ex:
        raise ValueError(f"{solution} should end with one self-check call check_ex_{ex}(...), found {found}")
    index, (_, args) = found[0]
    cells = [c for i, c in enumerate(nb.cells) if i != index]
    title, difficulty, book_notebook = exercise_info(solution)
    return Exercise(ex, title, difficulty, book_notebook, solution, cells, args, _labels(solution, cells, ex, args))


# ---------------------------------------------------------------------------------------------------------------
# Rewriting the markers for each tool


def _code_with_markers(source: str, begin: str, end: str) -> str:
    """The project's ``# BEGIN SOLUTION hint="..."`` → the hint as a comment, then the tool's own markers."""
    out = []
    for line in source.splitlines():
        b, e = SOLUTION_BEGIN.match(line), SOLUTION_END.match(line)
        if b and not b["md"]:
            if b["hint"]:
                out.append(f"{b['indent']}# TODO: {b['hint']}")
            out.append(f"{b['indent']}{begin}")
        elif e:
            out.append(f"{line[: len(line) - len(line.lstrip())]}{end}")
        else:
            out.append(line)
    return "\n".join(out)


def _has_code_solution(source: str) -> bool:
    return any((m := SOLUTION_BEGIN.match(line)) and not m["md"] for line in source.splitlines())


def _split_written(source: str) -> tuple[str, list[str], str] | None:
    """A markdown cell with ``<!-- BEGIN SOLUTION -->``: (prompt before it, [model answers], text after)."""
    lines = source.splitlines()
    if not any(_MD_BEGIN.match(ln) for ln in lines):
        return None
    before: list[str] = []
    answers: list[str] = []
    after: list[str] = []
    inside: list[str] | None = None
    for line in lines:
        if _MD_BEGIN.match(line):
            inside = []
        elif _MD_END.match(line) and inside is not None:
            answers.append("\n".join(inside).strip())
            inside = None
        elif inside is not None:
            inside.append(line)
        elif answers:
            after.append(line)
        else:
            before.append(line)
    return "\n".join(before).strip(), answers, "\n".join(after).strip()


def _top_level_names(exercise: Exercise) -> set[str]:
    """The names the exercise's code cells bind at top level (assignments, functions, classes, imports)."""
    names: set[str] = set()
    for cell in exercise.cells:
        if cell.cell_type != "code":
            continue
        for node in ast.parse(cell.source).body:
            targets = []
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names |= {(a.asname or a.name).split(".")[0] for a in node.names}
            for target in targets:
                names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
    return names


def _test_name(k: int) -> str:
    return f"test_{k}"


# ---------------------------------------------------------------------------------------------------------------
# otter-grader


def _otter_config(part: str, title: str) -> str:
    return "\n".join(
        [
            "# ASSIGNMENT CONFIG",
            f"name: {part}",
            "init_cell: true",
            "check_all_cell: false",
            "export_cell: false",
            "strip_solutions_from_all_cells: true",
            "tests:",
            "    ok_format: false",
            "generate:",
            "    pdf: false",
            "    show_stdout: true",
            "    show_hidden: true",
            f"# {title}: generated by `python -m nextword.booktools.exercises export --otter`; "
            "regenerate it, do not edit.",
        ]
    )


def _otter_test_cell(exercise: Exercise, k: int, label: str, hidden: bool) -> str:
    params = ", ".join(exercise.args)
    return "\n".join(
        [
            '""" # BEGIN TEST CONFIG',
            f"hidden: {'true' if hidden else 'false'}",
            "points: 1",
            f"failure_message: {_yaml_string(label)}",
            '""" # END TEST CONFIG',
            f"def {_test_name(k)}({params}):",
            "    from nextword.booktools.exercises.subchecks import sub_check",
            f"    sub_check({exercise.id!r}, {label!r}, {params})",
            f"{_test_name(k)}({params})",
        ]
    )


def _yaml_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def otter_master(part: str, exercises: Sequence[Exercise]):
    """The otter-grader master notebook of ``part``: one autograded question per exercise, one manual per answer."""
    import nbformat

    title = PART_NAMES.get(part, part)
    new_md, new_code, new_raw = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell, nbformat.v4.new_raw_cell
    cells = [
        new_raw(_otter_config(part, title)),
        new_md(
            f"# {title}\n\nEach exercise is a question: its first test is public (`grader.check`), the "
            "others are hidden and run when the assignment is graded. Written answers are graded by hand."
        ),
    ]
    defined: set[str] = set()  # names the earlier exercises of the part define (they share one kernel)
    for ex in exercises:
        n = len(ex.labels)
        cells.append(new_raw(f"# BEGIN QUESTION\nname: {ex.id}\npoints: {n}"))
        clash = [a for a in ex.args if a in defined]
        if clash:  # else an earlier exercise's X would be graded as this one's when it is left unanswered
            cells.append(
                new_code(
                    f"# {ex.id} defines its own {', '.join(clash)}: forget the earlier exercises' ones\n"
                    f"for _name in {clash!r}:\n    globals().pop(_name, None)"
                )
            )
        defined |= _top_level_names(ex)
        written: list[tuple[str, str, str]] = []
        for cell in ex.cells:
            if cell.cell_type == "markdown":
                split = _split_written(cell.source)
                if split is None:
                    cells.append(new_md(cell.source))
                else:  # the written answer becomes its own manual question, after this one's tests
                    prompt, answers, after = split
                    written += [(prompt, answer, after) for answer in answers]
            elif cell.cell_type == "code":
                cells.append(new_code(_code_with_markers(cell.source, "# BEGIN SOLUTION", "# END SOLUTION")))
        cells.append(new_raw("# BEGIN TESTS"))
        for k, label in enumerate(ex.labels, start=1):
            cells.append(new_code(_otter_test_cell(ex, k, label, hidden=k > len(ex.public))))
        cells.append(new_raw("# END TESTS"))
        cells.append(new_raw("# END QUESTION"))
        for w, (prompt, answer, after) in enumerate(written, start=1):
            cells.append(new_raw(f"# BEGIN QUESTION\nname: {ex.id}_written_{w}\nmanual: true\npoints: 1"))
            cells.append(new_md(f"**{ex.id}, written answer {w}.** {prompt}" + (f"\n\n{after}" if after else "")))
            cells.append(new_raw("# BEGIN SOLUTION"))
            cells.append(new_md(answer))
            cells.append(new_raw("# END SOLUTION"))
            cells.append(new_raw("# END QUESTION"))
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    return nb


def export_otter(directory: Path, parts: Sequence[str] | None = None, root: Path = REPO_ROOT) -> list[Path]:
    """Write ``directory/<part>/<part>.ipynb`` (otter master notebooks); return the written paths."""
    import nbformat

    written = []
    for part, exercises in _exercises_by_part(parts, root).items():
        target = Path(directory) / part / f"{part}.ipynb"
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(otter_master(part, exercises), target)
        written.append(target)
    return written


# ---------------------------------------------------------------------------------------------------------------
# nbgrader


def _nbgrader_meta(
    grade_id: str, *, solution: bool = False, grade: bool = False, locked: bool = False, points: int | None = None
) -> dict:
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3, "solution": solution}
    if points is not None:
        meta["points"] = points
    return meta


def _nbgrader_test_source(exercise: Exercise, k: int, label: str, hidden: bool) -> str:
    params = ", ".join(exercise.args)
    body = [
        f"# {exercise.id}, test {k}: {label}",
        "from nextword.booktools.exercises.subchecks import sub_check",
        f"sub_check({exercise.id!r}, {label!r}, {params})",
    ]
    if not hidden:
        return "\n".join(body)
    return "\n".join(
        [
            f"# {exercise.id}, test {k}: hidden (run when the assignment is graded)",
            "### BEGIN HIDDEN TESTS",
            *body,
            "### END HIDDEN TESTS",
        ]
    )


def nbgrader_notebook(exercise: Exercise):
    """The nbgrader source notebook of one exercise: solution cells, one autograded test cell per sub-check."""
    import nbformat

    new_md, new_code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    cells = []
    n_code = n_written = 0
    for cell in exercise.cells:
        if cell.cell_type == "markdown":
            split = _split_written(cell.source)
            if split is None:
                cells.append(new_md(cell.source))
                continue
            prompt, answers, after = split
            cells.append(new_md(prompt))
            for answer in answers:
                n_written += 1
                answer_cell = new_md(answer)
                answer_cell.metadata["nbgrader"] = _nbgrader_meta(
                    f"{exercise.id}_written_{n_written}", solution=True, grade=True, points=1
                )
                cells.append(answer_cell)
            if after:
                cells.append(new_md(after))
        elif cell.cell_type == "code":
            if _has_code_solution(cell.source):
                n_code += 1
                code = new_code(_code_with_markers(cell.source, "### BEGIN SOLUTION", "### END SOLUTION"))
                code.metadata["nbgrader"] = _nbgrader_meta(f"{exercise.id}_code_{n_code}", solution=True)
                cells.append(code)
            else:
                cells.append(new_code(cell.source))
    cells.append(
        new_md(
            f"**Tests of {exercise.id}** (one point each; the first is public, the others are hidden "
            "and run when the assignment is graded)."
        )
    )
    for k, label in enumerate(exercise.labels, start=1):
        test = new_code(_nbgrader_test_source(exercise, k, label, hidden=k > len(exercise.public)))
        test.metadata["nbgrader"] = _nbgrader_meta(f"{exercise.id}_test_{k}", grade=True, locked=True, points=1)
        cells.append(test)
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    return nb


NBGRADER_CONFIG = """\
# nbgrader configuration of the nextword course pack (written by
# `python -m nextword.booktools.exercises export --nbgrader`). Run nbgrader from this folder.
import os

c = get_config()  # noqa: F821
c.CourseDirectory.course_id = "nextword"
# the folder of this file, as an absolute path: nbgrader warns about a relative root, and "." would be the
# folder nbgrader was started from, not the course
c.CourseDirectory.root = os.path.dirname(os.path.abspath(__file__))
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\\nraise NotImplementedError()"}
c.ExecutePreprocessor.timeout = 600
"""


def export_nbgrader(directory: Path, parts: Sequence[str] | None = None, root: Path = REPO_ROOT) -> list[Path]:
    """Write an nbgrader course folder: ``nbgrader_config.py`` and ``source/<part>/exNN_*.ipynb``."""
    import nbformat

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    config = directory / "nbgrader_config.py"
    config.write_text(NBGRADER_CONFIG, encoding="utf-8")
    written = [config]
    for part, exercises in _exercises_by_part(parts, root).items():
        for ex in exercises:
            target = directory / "source" / part / ex.source.with_suffix(".ipynb").name
            target.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(nbgrader_notebook(ex), target)
            written.append(target)
    return written


# ---------------------------------------------------------------------------------------------------------------


def _exercises_by_part(parts: Sequence[str] | None, root: Path) -> dict[str, list[Exercise]]:
    from .grade import part_matches

    by_part: dict[str, list[Exercise]] = {}
    for solution in solution_sources(root):
        if parts and not any(part_matches(solution.parent.name, p) for p in parts):
            continue
        by_part.setdefault(solution.parent.name, []).append(read_exercise(solution))
    if parts and not by_part:
        raise ValueError(f"no exercises for part(s) {list(parts)} (try 1, 2, 3, 4 or 5)")
    return by_part


def export_main(argv: Sequence[str] | None = None) -> int:
    """``export (--otter DIR | --nbgrader DIR) [--part N ...]``: write the instructor's builds."""
    import argparse

    from nextword._cli import output_dir

    parser = argparse.ArgumentParser(
        prog="nextword exercises export",
        description="Write the exercises as an otter-grader assignment or an nbgrader source tree "
        "(public and hidden tests, points per test; see exercises/README.md, 'For instructors').",
    )
    parser.add_argument(
        "--otter", type=output_dir, metavar="DIR", help="write otter master notebooks DIR/<part>/<part>.ipynb (default: none)"
    )
    parser.add_argument(
        "--nbgrader",
        type=output_dir,
        metavar="DIR",
        help="write an nbgrader course folder DIR: nbgrader_config.py, source/<part>/ (default: none)",
    )
    parser.add_argument("--part", action="append", help="1..5, part4 or part4_margins (repeatable; default: all)")
    args = parser.parse_args(list(sys.argv[2:] if argv is None else argv))
    if not args.otter and not args.nbgrader:
        parser.error("give --otter DIR or --nbgrader DIR (or both)")
    for target in (args.otter, args.nbgrader):  # an unwritable target fails now, not after the export's work
        if target:
            target.mkdir(parents=True, exist_ok=True)
    try:
        if args.otter:
            for path in export_otter(args.otter, args.part):
                print(f"wrote {path}")
                print(
                    f"  next: otter assign {path} {path.parent / 'dist'}   # then otter run -a "
                    f"{path.parent / 'dist/autograder'}/<zip> <submission.ipynb>"
                )
        if args.nbgrader:
            for path in export_nbgrader(args.nbgrader, args.part):
                print(f"wrote {path}")
            print(f"  next: cd {args.nbgrader} && nbgrader generate_assignment <part> && nbgrader autograde <part>")
    except ValueError as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2
    return 0
