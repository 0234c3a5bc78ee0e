"""Generate student exercise notebooks from the solution notebooks.

Markers in a solution's py:percent source:

* code: ``# BEGIN SOLUTION`` (optionally ``hint="..."``, which says *what to return*, never how) …
  ``# END SOLUTION`` — the region is replaced by ``raise NotImplementedError("<hint>")`` at the marker's
  indentation (with a pointer to the tiered hints, :func:`nextword.booktools.exercises.hints.hint`, when the
  exercise is known);
* markdown: ``# <!-- BEGIN SOLUTION -->`` … ``# <!-- END SOLUTION -->`` — replaced by
  ``# *Your answer here.*`` (and, for a known exercise, how to reveal the model answer afterwards).

Example
-------
>>> src = 'x = 1\\n# BEGIN SOLUTION hint="add one"\\ny = x + 1\\n# END SOLUTION\\n'
>>> print(strip_solutions(src), end="")
x = 1
raise NotImplementedError("add one")
"""

from __future__ import annotations

import re
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from .hints import exercise_id, repo_root

REPO_ROOT = repo_root()
SOLUTION_BEGIN = re.compile(
    r'^(?P<indent>\s*)#\s*(?P<md><!--\s*)?BEGIN SOLUTION(?:\s+hint="(?P<hint>[^"]*)")?\s*(-->)?\s*$'
)
SOLUTION_END = re.compile(r"^\s*#\s*(<!--\s*)?END SOLUTION\s*(-->)?\s*$")
DEFAULT_HINT = "replace this line with your solution"


class MarkerError(ValueError):
    """A solution file has unbalanced or nested BEGIN/END SOLUTION markers."""


def strip_solutions(source: str, *, name: str = "<source>", exercise: str | None = None) -> str:
    """Return ``source`` with every marked solution region replaced by its stub.

    With ``exercise`` (e.g. ``"p5_02"``) a code stub points at ``hint(exercise, 1)`` and a written answer
    at ``reveal(exercise, k)``.
    """
    out: list[str] = []
    inside: re.Match[str] | None = None
    written = 0
    for lineno, line in enumerate(source.splitlines(), start=1):
        begin, end = SOLUTION_BEGIN.match(line), SOLUTION_END.match(line)
        if begin:
            if inside:
                raise MarkerError(f"{name}:{lineno}: BEGIN SOLUTION inside another solution region")
            inside = begin
            indent = begin["indent"]
            if begin["md"]:
                written += 1
                after = (
                    f' (Once you have written it, `reveal("{exercise}", {written})` shows a model answer.)'
                    if exercise
                    else ""
                )
                out.append(f"{indent}# *Your answer here.*{after}")
            else:
                hint = begin["hint"] or DEFAULT_HINT
                if exercise:
                    hint += f" (stuck? hint('{exercise}', 1))"
                hint = hint.replace("\\", "\\\\").replace('"', '\\"')
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
    ex = exercise_id(solution)
    header = (
        "# %% [markdown]\n"
        "# > Work on your own copy (`.venv/bin/nextword exercises copy ~/my-exercises` in a terminal; a\n"
        "# > `git pull` rewrites the repository's `exercises/`). Replace each `NotImplementedError` stub, then\n"
        '# > run the self-check cell at the end: it lists every check, ✓ or ✗. Stuck? `hint("' + ex + '", 1)`\n'
        '# > gives a first hint, tiers 2 and 3 say more. Written answers: after trying, `reveal("' + ex + '")`.\n'
        "# > Where you stand on all exercises: `.venv/bin/nextword grade --dir ~/my-exercises`.\n"
        "# > (For maintainers: this file is generated from `solutions/` by\n"
        "# > `python -m nextword.booktools.exercises build`; change the solution, not this file.)\n\n"
        "# %%\n"
        "from nextword.booktools.exercises import hint, reveal  # noqa: F401  (hints and model answers on demand)\n\n"
    )
    text = Path(solution).read_text(encoding="utf-8")
    return header + strip_solutions(text, name=str(solution), exercise=ex)


PART_NAMES = {
    "part1_chapter6": "Part 1 — Chapter 6: Transformers",
    "part2_formulation": "Part 2 — LLMs: a mathematical formulation",
    "part3_dynamics": "Part 3 — Gradient dynamics of attention",
    "part4_margins": "Part 4 — Support tokens and stability margins",
    "part5_svflow": "Part 5 — Score-based variational flow",
}
_FIELD = re.compile(r"\*\*(?P<key>Difficulty|Book notebook):\*\*\s*(?P<value>[^·\n]+)")


def exercise_info(solution: Path) -> tuple[str, str, str]:
    """(title, difficulty, book notebook) read from the solution's first markdown cell."""
    text = Path(solution).read_text(encoding="utf-8")
    title = next((ln.lstrip("# ").strip() for ln in text.splitlines() if ln.startswith("# # ")), solution.stem)
    fields = {m["key"]: m["value"].strip().strip("`") for m in _FIELD.finditer(text)}
    return title, fields.get("Difficulty", "?"), fields.get("Book notebook", "?")


def exercises_readme(root: Path = REPO_ROOT) -> str:
    """The text of ``exercises/README.md``: every exercise by part, with difficulty and book notebook."""
    lines = [
        "# Exercises",
        "",
        "Student notebooks, generated from `solutions/` by `make exercises`. Difficulty: ★ direct, ★★ a few",
        "steps, ★★★ open-ended.",
        "",
        "## How to work on an exercise",
        "",
        "Work in a folder of your own, not here: `make exercises` and a `git pull` rewrite this folder.",
        "",
        "```bash",
        ".venv/bin/nextword exercises copy ~/my-exercises      # the notebooks, by part (files already there are kept)",
        ".venv/bin/jupyter lab ~/my-exercises",
        ".venv/bin/nextword grade --dir ~/my-exercises",
        "```",
        "",
        "1. Open an exercise in JupyterLab. Each `NotImplementedError` stub says what to return — not how.",
        "2. Run the self-check cell at the end. It runs **every** check of the exercise and lists them, ✓ or ✗",
        "   (partial credit: `3 of 4 checks passed`). A ✗ names the input it failed on, shows what you got",
        "   and what was expected on the smallest failing case, and where it recognises one, the likely",
        "   mistake (a factor √d, bits instead of nats, a transposed matrix, ties at the minimum, …).",
        "   Two self-checks are a single check, without partial credit: Part 1 Exercise 04 and Part 3",
        "   Exercise 04.",
        '3. Stuck? `hint("p4_01", 1)` prints a first hint for Part 4, Exercise 01; tier 2 names the',
        "   method, tier 3 is close to the code. Take them one at a time.",
        '4. Written answers ("*Your answer here.*"): write yours first, then `reveal("p4_01")` shows the',
        "   model answer to compare with.",
        "",
        "`hint` and `reveal` are imported by the first code cell of every exercise",
        "(`from nextword.booktools.exercises import hint, reveal`).",
        "",
        "## Where you stand: the grader",
        "",
        "```bash",
        ".venv/bin/nextword grade --dir ~/my-exercises                 # every part",
        ".venv/bin/nextword grade 4 --dir ~/my-exercises --timeout 300   # Part 4 only (also: part4, part4_margins)",
        "```",
        "",
        "It runs your filled-in notebooks (in memory, with nbclient; your files are not changed) and prints",
        "one row per exercise:",
        "",
        "```text",
        "exercise  status       detail",
        "p4_01     ✗            1 of 2 checks passed; ✗ support = every 0-based position attaining the minimum margin (ties included): …",
        "                       likely mistake: ties at the minimum — return every position whose margin equals the minimum (up to 1e-12), not only argmin",
        "p4_02     ✓            exact diagonal blocks for W_V = I, 0.5 I and a random W_V at every position",
        "p4_03     not started",
        "p4_04     not started",
        "1 ✓ · 1 ✗ · 2 not started (of 4)",
        "```",
        "",
        "*not started*: the code is still what `make exercises` generated (nothing is run). *✗*: a stub is",
        "left, a check fails (the first failing check is shown) or the code crashes (cell and error shown).",
        "Of a `.py`/`.ipynb` pair the one saved last is graded. Exercises that train a model (Part 1 Ex 3,",
        "9, 12) take up to a minute each.",
        "",
        "## For instructors: otter-grader and nbgrader",
        "",
        "The same solutions and checkers export to the two tools courses grade Jupyter work with. Each",
        "sub-check of an exercise's checker is one test worth one point: the first is public (students can",
        "run it), the others are hidden (only the grader has them); each written answer is a manually graded",
        "question worth one point. The student notebooks of both builds import neither the checkers nor",
        "`hint`/`reveal`. Install the tools with `.venv/bin/pip install -e '.[instructor]'` (otter-grader 7,",
        "nbgrader 0.9.6), then `source .venv/bin/activate`: `otter` and `nbgrader` are on the PATH only then.",
        "",
        "```bash",
        ".venv/bin/nextword exercises export --otter course/otter --part 4",
        "cd course/otter/part4_margins && otter assign part4_margins.ipynb dist     # dist/student, dist/autograder",
        "mkdir -p out && otter run -a dist/autograder/part4_margins-autograder_*.zip -o out submission.ipynb",
        "",
        ".venv/bin/nextword exercises export --nbgrader course/nbgrader --part 4",
        "cd course/nbgrader && nbgrader generate_assignment part4_margins        # release/part4_margins/",
        "nbgrader autograde part4_margins          # reads submitted/<student>/part4_margins/*.ipynb",
        "```",
        "",
        "`otter run` writes `out/results.json` into a folder that must exist. `nbgrader autograde` grades the",
        "submissions it finds under `submitted/<student>/part4_margins/` (one folder per student, the",
        "notebooks inside with the names of `release/part4_margins/`); scores go to `gradebook.db`.",
        "",
        "Neither needs Docker or a server. Students need `nextword` installed to run the notebooks; the checkers",
        "ship inside it, so the hidden tests' inputs are readable by a student who goes looking (see the course",
        "pack page of the book). `tests/booktools/test_exercise_export.py` grades Part 4 with both tools",
        "(`make test-instructor`).",
        "",
        "## For authors",
        "",
        "Write the worked answer in `solutions/<part>/exNN_<topic>.py` between `# BEGIN SOLUTION` and",
        '`# END SOLUTION` (code; `hint="..."` on the BEGIN line says *what to return*, never how) or',
        "`# <!-- BEGIN SOLUTION -->` … `# <!-- END SOLUTION -->` (a written answer: it becomes the model answer",
        "that `reveal` shows). Add three hint tiers to `HINTS` in `nextword/booktools/exercises/hints.py` and a",
        "checker `check_ex_p<part>_<NN>` in `nextword/booktools/exercises/checks/` that runs its sub-checks in a `Report`",
        "(smallest case first, `check_close(..., mistakes={message: value of that mistake})`). Then",
        "`make exercises`, and execute the solution notebook (`nextword book build …`).",
        "",
    ]
    by_part: dict[str, list[Path]] = {}
    for solution in solution_sources(root):
        by_part.setdefault(solution.parent.name, []).append(solution)
    for part in sorted(by_part):
        lines += [f"## {PART_NAMES.get(part, part)}", "", "| exercise | difficulty | book notebook |", "|---|---|---|"]
        for solution in by_part[part]:
            title, difficulty, notebook = exercise_info(solution)
            lines.append(f"| [{title}]({part}/{solution.name}) | {difficulty} | `{notebook}` |")
        lines.append("")
    return "\n".join(lines)


def build(root: Path = REPO_ROOT) -> list[Path]:
    """Write every exercise notebook (``.py`` + output-free ``.ipynb``); return the written paths."""
    import nbformat

    from nextword.booktools.notebooks import py_to_notebook

    written = []
    for solution in solution_sources(root):
        target = exercise_path(solution, root)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(expected_exercise(solution), encoding="utf-8")
        nbformat.write(py_to_notebook(target), target.with_suffix(".ipynb"))
        written.append(target)
    readme = Path(root) / "exercises" / "README.md"
    readme.parent.mkdir(parents=True, exist_ok=True)
    readme.write_text(exercises_readme(root), encoding="utf-8")
    written.append(readme)
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
    readme = Path(root) / "exercises" / "README.md"
    if solutions and (not readme.exists() or readme.read_text(encoding="utf-8") != exercises_readme(root)):
        problems.append(f"{readme} is not what build would write")
    return problems


def part_matches(part_dir: str, part: str | None) -> bool:
    """Whether the folder ``part_dir`` (``part4_margins``) is the ``part`` asked for (``4``, ``part4``, …)."""
    if not part:
        return True
    wanted = part if part.startswith("part") else f"part{part}"
    return part_dir == wanted or part_dir.startswith(wanted + "_")


def copy_exercises(dest: Path, parts: Sequence[str] | None = None, root: Path = REPO_ROOT) -> list[tuple[Path, bool]]:
    """Copy the exercise notebooks (``.py`` and ``.ipynb``) of ``parts`` (all if None) to ``dest/<part>/``.

    A file already in ``dest`` is kept (it is the student's work): ``[(path, copied?)]``. The copies are the
    student's to edit; ``nextword grade --dir DEST`` grades them, and ``make exercises`` or a pull changes
    only the generated ``exercises/``.
    """
    dest = Path(dest)
    done = []
    for solution in solution_sources(root):
        part = solution.parent.name
        if parts and not any(part_matches(part, p) for p in parts):
            continue
        source = exercise_path(solution, root)
        for suffix in (".py", ".ipynb"):
            src, dst = source.with_suffix(suffix), dest / part / source.with_suffix(suffix).name
            if not src.exists():
                continue
            if dst.exists():
                done.append((dst, False))
                continue
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)  # keeps the time stamps: grade compares the pair's
            done.append((dst, True))
    if parts and not done:
        raise ValueError(f"no exercises for part {', '.join(parts)!r} (try 1, 2, 3, 4 or 5)")
    return done


def copy_main(argv: Sequence[str]) -> int:
    """``nextword exercises copy DIR [--part N ...]``."""
    import argparse

    from nextword._cli import output_dir

    parser = argparse.ArgumentParser(
        prog="nextword exercises copy",
        description="Copy the exercise notebooks to a folder of your own, to work on and grade there "
        "(`nextword grade --dir DIR`). Files already there are kept.",
    )
    parser.add_argument("dir", type=output_dir, help="your folder (created if missing)")
    parser.add_argument("--part", action="append", help="1..5, part4 or part4_margins (repeatable; default: all)")
    args = parser.parse_args(list(argv))
    done = copy_exercises(args.dir, args.part)
    copied = [p for p, new in done if new]
    kept = [p for p, new in done if not new]
    print(f"copied {len(copied)} files to {args.dir}" + (f"; kept {len(kept)} already there" if kept else ""))
    print(f"next: jupyter lab {args.dir}   # then: nextword grade --dir {args.dir}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    command = args[0] if args else "build"
    if args[1:] in (["-h"], ["--help"]) and command in ("build", "check"):
        what = {
            "build": "regenerate exercises/ from solutions/ (student notebooks and exercises/README.md)",
            "check": "fail (exit 1) when exercises/ differs from what build would write",
        }[command]
        print(f"usage: nextword exercises {command}\n\n{what}; it takes no options.")
        return 0
    if len(args) > 1 and command in ("build", "check"):
        print(f"nextword exercises {command}: error: unrecognized arguments: {' '.join(args[1:])}", file=sys.stderr)
        return 2
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
    print("usage: nextword exercises [build|check|copy DIR|export ...]", file=sys.stderr)
    return 2
