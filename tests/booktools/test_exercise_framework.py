"""The machinery behind the exercises: sub-check reports, messages, hints, model answers and the grader."""

from __future__ import annotations

import math
import re
import shutil

import numpy as np
import pytest

from nextword.booktools.exercises import build as builder
from nextword.booktools.exercises import hints as H
from nextword.booktools.exercises.checks import ExerciseCheckError, check_ex_p1_04, check_ex_p4_01
from nextword.booktools.exercises.checks._common import Report, call_student, check_close, diagnose


def test_report_runs_every_sub_check_and_lists_them():
    r = Report("Demo")
    with r.check("first"):
        check_close("f(1)", 2.0, 2.0)
    with r.check("second"):
        check_close("g(1)", 3.0, 2.0)
    with r.check("third"):
        check_close("h(1)", 1.0, 1.0)
    with pytest.raises(ExerciseCheckError) as info:
        r.done("all good")
    text = str(info.value)
    assert text.startswith("✗ Demo: 2 of 3 checks passed")
    assert "  ✓ first" in text and "  ✗ second: g(1): got 3, expected 2" in text and "  ✓ third" in text


def test_only_the_message_is_rendered_in_jupyter():
    err = ExerciseCheckError("✗ Demo: 0 of 1 checks passed\n  ✗ a: b")
    assert err._render_traceback_() == ["✗ Demo: 0 of 1 checks passed", "  ✗ a: b"]


def test_a_stub_is_reported_for_every_sub_check_as_not_filled_in():
    def stub(*args):
        raise NotImplementedError("return an int")

    with pytest.raises(ExerciseCheckError, match="0 of 1 checks passed \\(stubs not filled in yet\\)"):
        check_ex_p1_04(stub)


def test_a_crash_shows_the_students_frames_not_the_checkers():
    def helper(x):
        return x["missing"]

    def student(x):
        return helper(x)

    with pytest.raises(ExerciseCheckError) as info:
        call_student(student, "student", {})
    text = str(info.value)
    assert "KeyError" in text and "in your code" in text and "helper" in text
    assert "_common.py" not in text and "call_student" not in text


def test_a_crash_inside_a_sub_check_is_listed_and_the_others_still_run():
    r = Report("Demo")
    with r.check("crashes"):
        {}["missing"]
    with r.check("fine"):
        pass
    with pytest.raises(ExerciseCheckError, match="1 of 2 checks passed") as info:
        r.done("")
    assert "✗ crashes: raised KeyError" in str(info.value) and "✓ fine" in str(info.value)


@pytest.mark.parametrize(
    "got, expected, d, phrase",
    [
        (np.array([2.0, -4.0]), np.array([1.0, -2.0]), 4, "√d = 2 too large"),
        (np.array([1.0, 2.0]) / math.log(2), np.array([1.0, 2.0]), None, "1/ln 2"),
        (np.array([[1.0, 3.0], [2.0, 4.0]]), np.array([[1.0, 2.0], [3.0, 4.0]]), None, "transposed"),
        (np.zeros((3, 2)), np.zeros((2, 3)), None, "transposed"),
        (-np.array([1.0, 2.0]), np.array([1.0, 2.0]), None, "wrong sign"),
        (np.array([1.5, 2.5, 3.5]), np.array([1.0, 2.0, 3.0]), None, "same constant +0.5"),
    ],
)
def test_generic_detectors_name_the_mistake(got, expected, d, phrase):
    assert phrase in diagnose(got, expected, d=d)


def test_float32_round_off_says_compute_in_float64_unless_allowed():
    expected = np.array([0.1, 0.2, 0.7])
    got = expected.astype(np.float32)
    with pytest.raises(ExerciseCheckError, match="compute in float64"):
        check_close("w", got, expected, rtol=1e-12, atol=1e-15)
    check_close("w", got, expected, rtol=1e-12, atol=1e-15, allow_float32=True)

    # leftex: an exercise's own slip that explains a float32-sized error exactly is named instead ...
    slip = expected + np.array([0.0, 1e-7, -1e-7])
    with pytest.raises(ExerciseCheckError, match="likely mistake: one term too many") as info:
        check_close("w", slip, expected, rtol=1e-12, atol=1e-15, mistakes={"one term too many": slip})
    assert "float32" not in str(info.value)
    # ... but a float32 result that merely lies near a slip is still told to compute in float64
    with pytest.raises(ExerciseCheckError, match="compute in float64"):
        check_close(
            "w", got, expected, rtol=1e-12, atol=1e-15, mistakes={"one term too many": got.astype(float) + 1e-9}
        )


def test_every_exercise_has_three_tiers_of_hints_and_they_do_not_repeat_the_stub():
    ids = {H.exercise_id(s) for s in builder.solution_sources()}
    assert ids <= set(H.HINTS), f"exercises without hints: {sorted(ids - set(H.HINTS))}"
    for ex, tiers in H.HINTS.items():
        assert len(tiers) == 3 and len(set(tiers)) == 3, ex
        H.solution_for(ex)  # every hinted exercise exists


def test_hint_prints_the_tier_and_points_to_the_next(capsys):
    H.hint("p4_01", 1)
    out = capsys.readouterr().out
    assert out.startswith("Hint 1 of 3 for p4_01:") and "hint('p4_01', 2)" in out
    H.hint("p4_01", 9)
    assert capsys.readouterr().out.startswith("Hint 3 of 3 for p4_01:")
    with pytest.raises(ValueError, match="no hints"):
        H.hint("p9_99")
    with pytest.raises(ValueError, match="tier"):
        H.hint("p4_01", 0)


def test_reveal_prints_the_model_answers_from_the_solution(capsys):
    H.reveal("p4_01")
    out = capsys.readouterr().out
    assert "Model answer 1 of 1 (p4_01)" in out and "re-weights the past" in out
    H.reveal("p5_02", 1)
    assert "underflow" in capsys.readouterr().out
    with pytest.raises(ValueError, match="between 1 and 1"):
        H.reveal("p4_01", 2)


def test_stubs_say_what_to_return_and_give_no_code():
    """No stub message of a generated exercise contains a line of the solution it replaces."""
    for solution in builder.solution_sources():
        stubs = re.findall(r'NotImplementedError\("([^"]*)"\)', builder.expected_exercise(solution))
        assert stubs, solution
        code = {ln.strip() for ln in solution.read_text().splitlines() if len(ln.strip()) > 12}
        for stub in stubs:
            assert stub.startswith(("return", "set", "fill", "build", "write", "show")), (solution.name, stub)
            assert not any(line in stub for line in code), (solution.name, stub)
            assert f"hint('{H.exercise_id(solution)}', 1)" in stub


def test_written_answers_point_at_reveal():
    text = builder.expected_exercise(builder.REPO_ROOT / "solutions/part5_svflow/ex02_vmf_normaliser.py")
    assert '`reveal("p5_02", 1)` shows a model answer' in text
    assert "from nextword.booktools.exercises import hint, reveal" in text


def test_exercise_11_points_at_section_6_6():
    src = (builder.REPO_ROOT / "solutions/part1_chapter6/ex11_complexity.py").read_text()
    assert "6_6_context_representation" in src and "6_1_parallel_attention" not in src
    assert "6_6_context_representation" in builder.exercises_readme().split("Exercise 11")[1].splitlines()[0]


@pytest.fixture()
def student_dir(tmp_path):
    """A student's folder: Part 4 Ex 01 solved, Ex 02 with the argmin mistake, Ex 03 untouched, Ex 04 missing."""
    src = builder.REPO_ROOT / "solutions/part4_margins/ex01_scalar_margin.py"
    part = tmp_path / "part4_margins"
    part.mkdir()
    shutil.copy(src, part / "ex01_scalar_margin.py")
    wrong = src.read_text().replace("np.flatnonzero(m <= m.min() + 1e-12)", "np.array([int(np.argmin(m))])")
    (part / "ex02_matrix_block.py").write_text(wrong)  # graded against Ex 02's pristine cells: it differs
    ex03 = builder.REPO_ROOT / "solutions/part4_margins/ex03_spectral_counterexample.py"
    (part / "ex03_spectral_counterexample.py").write_text(builder.expected_exercise(ex03))
    return tmp_path


def test_grader_prints_done_failed_and_not_started(student_dir, capfd):
    from nextword.booktools.exercises.grade import main

    assert main(["4", "--dir", str(student_dir), "--timeout", "120", "-v"]) == 0
    out, err = capfd.readouterr()  # capfd: the kernels' own stderr too
    # issue 48: the kernel's "running over TCP without encryption" warning does not reach the student
    assert "without encryption" not in err, err
    # issue 48: the likely-mistake line is kept whole, and -v lists every check of a ✗ (✓ ones too)
    assert any(ln.strip().startswith("likely mistake:") and "ties" in ln for ln in out.splitlines()), out
    assert any(ln.strip().startswith("✓ ") for ln in out.splitlines()), out
    rows = {ln.split()[0]: ln for ln in out.splitlines() if ln.startswith("p4_")}
    assert "✓" in rows["p4_01"] and "Definition 3.1" in rows["p4_01"]
    assert "✗" in rows["p4_02"] and "1 of 2 checks passed" in rows["p4_02"]
    assert "not started" in rows["p4_03"] and "not started" in rows["p4_04"]
    assert out.strip().endswith("1 ✓ · 1 ✗ · 2 not started (of 4)")


def test_grader_rejects_an_unknown_part(capsys):
    from nextword.booktools.exercises.grade import main

    assert main(["9"]) == 2
    assert "no exercises for part '9'" in capsys.readouterr().err


def test_checker_accepts_reference_on_ties():
    """The support sub-check has a case where every margin ties (all four positions are support tokens)."""
    from nextword.theory.barrier import scalar_margin, support_tokens

    assert check_ex_p4_01(lambda x, a: scalar_margin(x, a=a), lambda x, a: support_tokens(scalar_margin(x, a=a)))


def test_hint_and_reveal_are_importable_as_the_student_header_does():
    from nextword.booktools.exercises import hint, reveal

    assert hint is H.hint and reveal is H.reveal
