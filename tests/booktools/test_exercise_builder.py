"""Exercises are generated from solutions; they stay in sync and stop at their first stub."""

import pytest

from nextword.booktools.exercises import build as builder


def test_code_region_becomes_a_stub_with_the_hint_at_its_indentation():
    src = 'def f(x):\n    # BEGIN SOLUTION hint="square it"\n    return x * x\n    # END SOLUTION\n'
    assert builder.strip_solutions(src) == 'def f(x):\n    raise NotImplementedError("square it")\n'


def test_default_hint_and_markdown_regions():
    src = "# BEGIN SOLUTION\ny = 2\n# END SOLUTION\n# <!-- BEGIN SOLUTION -->\n# The proof.\n# <!-- END SOLUTION -->\n"
    out = builder.strip_solutions(src)
    assert f'raise NotImplementedError("{builder.DEFAULT_HINT}")' in out
    assert "# *Your answer here.*" in out and "The proof" not in out and "y = 2" not in out


@pytest.mark.parametrize(
    "src, message",
    [
        ("# BEGIN SOLUTION\nx = 1\n", "never closed"),
        ("# END SOLUTION\n", "without BEGIN"),
        ("# BEGIN SOLUTION\n# BEGIN SOLUTION\n# END SOLUTION\n", "inside another"),
    ],
)
def test_unbalanced_markers_are_errors(src, message):
    with pytest.raises(builder.MarkerError, match=message):
        builder.strip_solutions(src)


def test_committed_exercises_match_what_build_would_write():
    problems = builder.stale_exercises()
    assert not problems, "\n".join(problems) + "\nrun: python -m nextword.booktools.exercises build"


def test_stale_and_orphan_exercises_are_detected(tmp_path):
    sol = tmp_path / "solutions" / "part9_demo" / "ex01_demo.py"
    sol.parent.mkdir(parents=True)
    sol.write_text("# %%\n# BEGIN SOLUTION\nx = 1\n# END SOLUTION\n")
    assert builder.stale_exercises(tmp_path)[0] == f"{builder.exercise_path(sol, tmp_path)} is missing"
    builder.exercise_path(sol, tmp_path).parent.mkdir(parents=True)
    builder.exercise_path(sol, tmp_path).write_text(builder.expected_exercise(sol))
    assert builder.stale_exercises(tmp_path) == [
        f"{tmp_path / 'exercises' / 'README.md'} is not what build would write"
    ]
    (tmp_path / "exercises" / "README.md").write_text(builder.exercises_readme(tmp_path))
    assert builder.stale_exercises(tmp_path) == []
    (tmp_path / "exercises" / "part9_demo" / "ex02_orphan.py").write_text("x = 1\n")
    assert any("has no solution" in p for p in builder.stale_exercises(tmp_path))


#: the one generated notebook that ``make test`` executes; ``make test-exercises`` (CI) executes them all
IN_MAKE_TEST = "ex01_attention_weights"


def _generated(solutions):
    """One parameter per solution; all but :data:`IN_MAKE_TEST` marked ``exercises``.

    Why not all of them in ``make test``: before its first stub a generated notebook runs the solution's
    own cells (``build`` changes only the regions between the solution markers), and ``make test`` runs
    every solution under nbval on your machine. What executing the generated copies adds is a
    property of the generator and of the committed files, the same on every machine: thirty kernels, about
    a minute of CPU, checked by ``make test-exercises`` on every change (``.ci/run``).
    """
    return [
        pytest.param(s, id=s.stem, marks=() if s.stem == IN_MAKE_TEST else pytest.mark.exercises) for s in solutions
    ]


def test_one_generated_notebook_runs_in_make_test():
    assert IN_MAKE_TEST in [s.stem for s in builder.solution_sources()]


@pytest.mark.parametrize("solution", _generated(builder.solution_sources()))
def test_generated_exercise_runs_until_its_first_stub(solution):
    """Executed as generated, a student notebook stops with NotImplementedError at its first stub."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    target = builder.exercise_path(solution)
    nb = nbformat.read(target.with_suffix(".ipynb"), as_version=4)
    client = NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(target.parent)}}
    )
    with pytest.raises(CellExecutionError) as info:
        client.execute()
    assert info.value.ename == "NotImplementedError", f"{target} failed with {info.value.ename}, not at a stub"


def test_readme_lists_title_difficulty_and_book_notebook(tmp_path):
    sol = tmp_path / "solutions" / "part1_chapter6" / "ex04_params.py"
    sol.parent.mkdir(parents=True)
    sol.write_text(
        "# %% [markdown]\n# # Exercise 04 — Counting parameters\n"
        "# **Part:** 1 · **Difficulty:** ★ · **Book notebook:** `book/part1_chapter6/6_4_multi_head`\n"
    )
    text = builder.exercises_readme(tmp_path)
    assert (
        "| [Exercise 04 — Counting parameters](part1_chapter6/ex04_params.py) | ★ | `book/part1_chapter6/6_4_multi_head` |"
        in text
    )


@pytest.mark.parametrize("solution", builder.solution_sources(), ids=lambda p: p.stem)
def test_before_its_first_stub_a_generated_notebook_is_its_solution(solution):
    """After the header cell that ``build`` puts first (the ``hint, reveal`` import, the same in every
    exercise), the code cells before the first one that ``build`` changed are the solution's, word for
    word, and that first changed cell holds a stub: so ``make test``'s nbval run of the solution covers
    them on your machine (why ``make test`` executes only one generated notebook)."""
    import nbformat

    def code(path):
        return [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]

    sol, ex = code(solution.with_suffix(".ipynb")), code(builder.exercise_path(solution).with_suffix(".ipynb"))
    assert ex[0].startswith("from nextword.booktools.exercises import hint, reveal"), ex[0]
    ex = ex[1:]
    changed = next((i for i, (a, b) in enumerate(zip(sol, ex)) if a != b), None)
    assert changed is not None, f"{solution.stem}: no code cell changed (no stub to stop at)"
    assert "raise NotImplementedError" in ex[changed], f"{solution.stem}: code cell {changed} changed without a stub"


def test_build_and_check_answer_help_without_running(capsys):
    """``nextword exercises build --help`` (and ``check``) print a usage and exit 0; they once failed with
    "unrecognized arguments: --help". Neither writes nor compares anything then."""
    from nextword.booktools.exercises.build import main

    for action in ("build", "check"):
        for flag in ("--help", "-h"):
            assert main([action, flag]) == 0
            out = capsys.readouterr().out
            assert out.startswith(f"usage: nextword exercises {action}") and "wrote" not in out
    assert main(["check", "--bogus"]) == 2
