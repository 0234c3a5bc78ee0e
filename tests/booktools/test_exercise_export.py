"""The instructor's export (nextword.booktools.exercises.export): otter-grader and nbgrader builds of Part 4.

The fast tests check the generated notebooks' structure. The end-to-end tests run the tools themselves,
locally (no Docker, no server): ``otter assign`` + ``otter run`` and ``nbgrader generate_assignment`` +
``nbgrader autograde`` on three submissions each: the reference solutions (full marks), the untouched
student notebooks (zero) and a solution with one known mistake (``support`` returns only ``argmin``, so
ties are lost: exactly the hidden test ``p4_01`` test 2 fails). They need the ``instructor`` extra and are
skipped without it. Part 4 is used because its checks run in well under a second.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from nextword.booktools.exercises.build import REPO_ROOT
from nextword.booktools.exercises.export import export_main, nbgrader_notebook, otter_master, read_exercise
from nextword.booktools.exercises.subchecks import sub_check, sub_check_results

PART = "part4_margins"
SOLUTIONS = sorted((REPO_ROOT / "solutions" / PART).glob("ex*.py"))
MISTAKE = ("np.flatnonzero(m <= m.min() + 1e-12)", "np.array([int(np.argmin(m))])")  # ties at the minimum lost
INSTALL = "install the instructor extra: pip install -e '.[instructor]' (otter-grader 7, nbgrader 0.9.6)"


@pytest.fixture(scope="module")
def exercises():
    return [read_exercise(s) for s in SOLUTIONS]


def _sources(nb, cell_type="code") -> list[str]:
    return [c.source for c in nb.cells if c.cell_type == cell_type]


def test_sub_checks_of_part4_first_public_rest_hidden(exercises):
    assert [ex.id for ex in exercises] == ["p4_01", "p4_02", "p4_03", "p4_04"]
    assert [len(ex.labels) for ex in exercises] == [2, 3, 3, 2]
    for ex in exercises:
        assert ex.public == ex.labels[:1] and ex.hidden == ex.labels[1:]
    assert exercises[0].args == ["scalar_margins", "support"]
    assert exercises[0].hidden == ["support = every 0-based position attaining the minimum margin (ties included)"]


def test_sub_check_names_the_failed_sub_check():
    import numpy as np

    from nextword.theory.barrier import scalar_margin

    def margins(x, a):
        return scalar_margin(np.asarray(x, float), a=a)

    def argmin_only(x, a):
        return np.array([int(np.argmin(margins(x, a)))])

    label_ok, label_bad = (label for label, _ in sub_check_results("p4_01", margins, argmin_only))
    sub_check("p4_01", label_ok, margins, argmin_only)  # passes silently
    with pytest.raises(AssertionError, match="ties at the minimum"):
        sub_check("p4_01", label_bad, margins, argmin_only)
    with pytest.raises(AssertionError, match="not run"):
        sub_check("p4_01", "a label no checker has", margins, argmin_only)
    with pytest.raises(ValueError, match="p4_99"):
        sub_check_results("p4_99")


@pytest.mark.parametrize("answer", [None, "stub"])
def test_no_sub_check_of_any_exercise_passes_on_an_unanswered_exercise(answer):
    """Graded one by one, a sub-check must not pass vacuously (p2_01's third did, before it was fixed)."""
    import inspect

    from nextword.booktools.exercises.build import solution_sources
    from nextword.booktools.exercises.hints import exercise_id
    from nextword.booktools.exercises.subchecks import checker_for

    def stub(*args, **kwargs):
        raise NotImplementedError("stub")

    value = stub if answer == "stub" else None
    passing = {}
    for solution in solution_sources():
        ex = exercise_id(solution)
        n = len(inspect.signature(checker_for(ex)).parameters)
        passing[ex] = [label for label, msg in sub_check_results(ex, *[value] * n) if msg is None]
    assert not any(passing.values()), {ex: labels for ex, labels in passing.items() if labels}


def test_a_checker_without_sub_checks_is_one_all_or_nothing_test(monkeypatch):
    """No shipped checker is Report-less any more (p3_05 and p5_05 were, until they got sub-checks); a checker
    without a Report would still be graded, as one test."""
    from nextword.booktools.exercises import subchecks
    from nextword.booktools.exercises.checks._common import as_array, passed

    def whole(answer):
        as_array("answer", answer)
        return passed("right")

    monkeypatch.setattr(subchecks, "checker_for", lambda exercise: whole)
    ((label, message),) = sub_check_results("p9_01", None)
    assert label == subchecks.WHOLE and "None" in message
    with pytest.raises(AssertionError, match="did the function return its result"):
        sub_check("p9_02", subchecks.WHOLE, None)
    assert sub_check_results("p9_03", 1.0) == [(subchecks.WHOLE, None)]


def test_p3_05_and_p5_05_are_graded_sub_check_by_sub_check():
    """p3_05 and p5_05 were one all-or-nothing test each; now each sub-check is its own test, so a wrong R(z)
    sign loses p5_05's β > 0 point only."""
    from nextword.theory.svflow.gradients import hybrid_gradients

    def cosine(G):
        return -1.0 / (G - 1)

    labels = [label for label, _ in sub_check_results("p3_05", lambda *args: None, cosine)]
    assert len(labels) == 2 and labels[0].startswith("key_gradient") and labels[1].startswith("simplex_cosine")
    assert [msg is None for _, msg in sub_check_results("p3_05", lambda *args: None, cosine)] == [False, True]

    def r_flipped(x0, layer, W_cls, y, beta):
        task = hybrid_gradients(x0, [layer], W_cls, y, 0.0).grad_b_g[0]
        return 2 * task - hybrid_gradients(x0, [layer], W_cls, y, beta).grad_b_g[0]

    results = sub_check_results("p5_05", r_flipped)
    assert len(results) == 3 and [msg is None for _, msg in results] == [True, False, True]
    sub_check("p5_05", results[0][0], r_flipped)  # passes silently
    with pytest.raises(AssertionError, match="R.z. with the wrong sign"):
        sub_check("p5_05", results[1][0], r_flipped)


def test_otter_master_notebook_has_solutions_tests_and_points(exercises):
    nb = otter_master(PART, exercises)
    raw = _sources(nb, "raw")
    assert raw[0].startswith("# ASSIGNMENT CONFIG") and "ok_format: false" in raw[0]
    assert "# BEGIN QUESTION\nname: p4_01\npoints: 2" in raw
    assert "# BEGIN QUESTION\nname: p4_01_written_1\nmanual: true\npoints: 1" in raw
    code = _sources(nb)
    tests = [c for c in code if "BEGIN TEST CONFIG" in c]
    assert len(tests) == 10 and sum("hidden: true" in t for t in tests) == 6
    assert not any("check_ex_" in c or "reveal" in c for c in code)  # no self-check, no model answers
    assert any("# BEGIN SOLUTION" in c and "# TODO: return the margins" in c for c in code)
    # p4_03's X, W_Q, W_K would otherwise be p4_02's when left unanswered (one kernel per part)
    assert any("for _name in ['X', 'W_Q', 'W_K']" in c for c in code)


def test_nbgrader_notebook_marks_solutions_and_hides_tests(exercises):
    nb = nbgrader_notebook(exercises[1])  # p4_02: 3 tests, 1 public
    meta = [c.metadata.get("nbgrader") for c in nb.cells]
    tests = [m for m in meta if m and m["grade"] and not m["solution"]]
    assert [t["grade_id"] for t in tests] == ["p4_02_test_1", "p4_02_test_2", "p4_02_test_3"]
    assert all(t["points"] == 1 and t["locked"] for t in tests)
    sources = _sources(nb)
    assert sum("### BEGIN HIDDEN TESTS" in s for s in sources) == 2
    assert any("### BEGIN SOLUTION" in s for s in sources) and not any("check_ex_" in s for s in sources)
    written = [m for m in meta if m and m["solution"] and m["grade"]]
    assert [w["grade_id"] for w in written] == ["p4_02_written_1"]


def test_export_main_usage(tmp_path, capsys):
    with pytest.raises(SystemExit):
        export_main([])
    assert export_main(["--otter", str(tmp_path), "--part", "9"]) == 2
    assert "no exercises" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------------------------
# End to end with the tools themselves


def _require(module: str, tool: str) -> None:
    """Skip without the tool (a laptop without the extra); in CI (CI set), fail: CI installs the extra."""
    if importlib.util.find_spec(module) is None:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the {tool} end-to-end test: {tool} is not installed; {INSTALL}")
        pytest.skip(f"{tool} is not installed; {INSTALL}")


def _env() -> dict:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"  # alembic, jupyter, otter
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    return env


def _run(args: list[str], cwd: Path) -> str:
    proc = subprocess.run(args, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"{' '.join(args)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout + proc.stderr


def _with_mistake(source: Path, target: Path) -> None:
    text = source.read_text(encoding="utf-8")
    assert MISTAKE[0] in text
    target.write_text(text.replace(MISTAKE[0], MISTAKE[1]), encoding="utf-8")


@pytest.mark.instructor
def test_otter_assign_and_run_grade_three_submissions(tmp_path):
    _require("otter", "otter-grader")
    assert export_main(["--otter", str(tmp_path), "--part", "4"]) == 0
    work = tmp_path / PART
    _run([sys.executable, "-m", "otter", "assign", "--no-run-tests", f"{PART}.ipynb", "dist"], work)
    (zip_path,) = (work / "dist" / "autograder").glob("*.zip")
    student = work / "dist" / "student" / f"{PART}.ipynb"
    student_text = student.read_text(encoding="utf-8")
    assert "check_ex_" not in student_text and "reveal" not in student_text
    assert "flatnonzero" not in student_text  # the solutions are stripped
    assert "ties included" not in student_text  # p4_01's hidden test is not among the student's tests
    reference = work / "dist" / "autograder" / f"{PART}.ipynb"
    submissions = {"reference": reference, "untouched": student, "mistake": tmp_path / "mistake.ipynb"}
    _with_mistake(reference, submissions["mistake"])
    procs = {}
    for name, path in submissions.items():  # the three gradings run side by side
        (tmp_path / name).mkdir()
        args = [sys.executable, "-m", "otter", "run", "-a", str(zip_path), "-o", str(tmp_path / name), str(path)]
        procs[name] = subprocess.Popen(
            args, cwd=tmp_path, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
    scores = {}
    for name, proc in procs.items():
        out, _ = proc.communicate(timeout=900)
        assert proc.returncode == 0, out[-3000:]
        results = json.loads((tmp_path / name / "results.json").read_text())
        per_question = {t["name"]: t for t in results["tests"] if "max_score" in t}
        scores[name] = {q: (t["score"], t["max_score"]) for q, t in per_question.items()}
        if name == "mistake":
            assert "p4_01 - 2 result:\n        ❌ Test case failed" in per_question["p4_01"]["output"]
            assert "ties at the minimum" in per_question["p4_01"]["output"]
    full = {"p4_01": 2, "p4_02": 3, "p4_03": 3, "p4_04": 2}
    assert scores["reference"] == {q: (m, m) for q, m in full.items()}
    assert scores["untouched"] == {q: (0, m) for q, m in full.items()}
    assert scores["mistake"] == {q: (m - (q == "p4_01"), m) for q, m in full.items()}


@pytest.mark.instructor
def test_nbgrader_generate_and_autograde_three_submissions(tmp_path):
    _require("nbgrader", "nbgrader")
    course = tmp_path / "course"
    assert export_main(["--nbgrader", str(course), "--part", "4"]) == 0
    nbgrader = [sys.executable, "-m", "nbgrader"]
    _run([*nbgrader, "generate_assignment", PART], course)
    release = course / "release" / PART
    for nb_path in release.glob("*.ipynb"):
        text = nb_path.read_text(encoding="utf-8")
        assert "HIDDEN TESTS" not in text and "sub_check('p4_0" in text  # the public test stays, hidden ones go
        assert "check_ex_" not in text and "### BEGIN SOLUTION" not in text
    assert "ties included" not in (release / "ex01_scalar_margin.ipynb").read_text(encoding="utf-8")
    for student, folder in (("reference", course / "source" / PART), ("untouched", release), ("mistake", None)):
        target = course / "submitted" / student / PART
        target.mkdir(parents=True)
        for nb_path in (course / "source" / PART).glob("*.ipynb"):
            src = (folder or course / "source" / PART) / nb_path.name
            if student == "mistake" and nb_path.name.startswith("ex01"):
                _with_mistake(src, target / nb_path.name)
            else:
                (target / nb_path.name).write_bytes(src.read_bytes())
        _run([*nbgrader, "db", "student", "add", student], course)
    _run([*nbgrader, "autograde", PART], course)

    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        scores, failed = {}, {}
        for student in ("reference", "untouched", "mistake"):
            grades = [g for nb in gb.find_submission(PART, student).notebooks for g in nb.grades]
            auto = [g for g in grades if g.cell.cell_type == "code"]
            scores[student] = (sum(g.auto_score or 0 for g in auto), sum(g.max_score for g in auto))
            failed[student] = sorted(g.name for g in auto if (g.auto_score or 0) < g.max_score)
            written = [g for g in grades if g.cell.cell_type == "markdown"]
            assert len(written) == 4 and all(g.max_score == 1 for g in written)  # graded by hand
    assert scores == {"reference": (10, 10), "untouched": (0, 10), "mistake": (9, 10)}
    assert failed["mistake"] == ["p4_01_test_2"]
    graded = nbformat.read(course / "autograded" / "mistake" / PART / "ex01_scalar_margin.ipynb", as_version=4)
    test2 = next(c for c in graded.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "p4_01_test_2")
    assert any("ties at the minimum" in "".join(o.get("traceback", [])) + o.get("evalue", "") for o in test2.outputs)
