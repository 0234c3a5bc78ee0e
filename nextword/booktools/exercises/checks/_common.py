"""Shared helpers for exercise checkers: pass with a ✓, fail with a message that teaches.

A checker runs *every* sub-check of its exercise inside a :class:`Report` and lists them all (partial
credit); a failing sub-check names the input it failed on, shows got vs expected on the smallest failing
case and, where it recognises one, names the likely mistake (:func:`diagnose`: a wrong sign, a transposed
matrix, a factor √d or 1/ln 2, a constant offset, float32 round-off, …).

>>> r = Report("demo")
>>> with r.check("two plus two"):
...     _ = check_close("add(2, 2)", 4.0, 4.0)
>>> r.done("adds")
✓ adds
True
"""
from __future__ import annotations

import contextlib
import math
import numbers
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np

__all__ = ["ExerciseCheckError", "Report", "passed", "fail", "check_shape", "check_close", "check_true",
           "as_array", "call_student", "describe", "diagnose", "check_int", "check_cases", "collect_reports"]

_HERE = Path(__file__).resolve().parent
_PACKAGE = _HERE.parent


class ExerciseCheckError(AssertionError):
    """Raised by a checker when an answer is wrong; the message says what is wrong.

    In Jupyter only the message is shown (``_render_traceback_``), not the checker's frames, so a failing
    check never prints the reference computation.
    """

    def _render_traceback_(self) -> list[str]:  # IPython's hook: the lines shown instead of a traceback
        return str(self).splitlines()


class Passed(int):
    """What a passing check returns: true (``assert check_ex_…(…)`` holds, ``== True``), and shown as nothing
    when it is a notebook cell's last value, so the ✓ line is not followed by an echoed ``True``.

    >>> p = Passed()
    >>> bool(p), p == True, repr(p)
    (True, True, 'True')
    """

    def __new__(cls) -> "Passed":
        return super().__new__(cls, 1)

    def __repr__(self) -> str:
        return "True"

    def _ipython_display_(self) -> None:  # IPython's hook: display nothing (the ✓ line is the output)
        return None


def passed(message: str) -> bool:
    """Print a success line for the student and return :class:`Passed` (true, and silent in a notebook)."""
    print(f"✓ {message}")
    return Passed()


def fail(message: str) -> None:
    """Raise :class:`ExerciseCheckError` with ``message``."""
    raise ExerciseCheckError(f"✗ {message}")


def describe(value: object, *, precision: int = 6) -> str:
    """A short printable form of ``value`` (scalar, or array with at most ~12 shown entries).

    >>> describe(np.array([1.0, 2.5]))
    '[1.  2.5]'
    >>> describe(3.0)
    '3'
    """
    try:
        a = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        return repr(value)
    if a.ndim == 0:
        return f"{float(a):.{precision + 4}g}"
    return np.array2string(a, precision=precision, threshold=12, edgeitems=3, max_line_width=100)


# Named ratios got/expected that betray a typical mistake (checked in this order).
def _named_ratios(d: int | None) -> list[tuple[float, str]]:
    ratios = [(1 / math.log(2), "a ratio 1/ln 2 = 1.4427: logarithms in base 2 (bits) instead of natural logs (nats)"),
              (math.log(2), "a ratio ln 2 = 0.6931: natural logs where base-2 logs were expected, or the reverse")]
    if d is not None and d > 1:
        ratios += [(math.sqrt(d), f"a factor √d = {math.sqrt(d):.4g} too large: did you forget to divide by √d?"),
                   (1 / math.sqrt(d), f"a factor √d = {math.sqrt(d):.4g} too small: divided by √d twice, or by d?"),
                   (float(d), f"a factor d = {d} too large"),
                   (1 / d, f"a factor d = {d} too small: divided by d where √d (or nothing) was due?")]
    ratios += [(2.0, "a factor 2 too large (counted something twice?)"),
               (0.5, "a factor 2 too small (a missing factor 2, e.g. of a derivative of a square?)")]
    return ratios


def diagnose(got: np.ndarray, expected: np.ndarray, *, d: int | None = None,
             mistakes: Mapping[str, object] | None = None) -> str | None:
    """Name the likely mistake that turns ``expected`` into ``got``, or None if none is recognised.

    ``mistakes`` maps a message to the value that mistake would produce (exercise-specific detectors);
    then generic ones are tried: transposed matrix, wrong sign, a constant ratio (√d, d, 1/ln 2, 2, …),
    a constant offset.

    >>> diagnose(np.array([2.0, 4.0]), np.array([1.0, 2.0]))
    'a factor 2 too large (counted something twice?)'
    >>> diagnose(np.array([[1.0, 3.0], [2.0, 4.0]]), np.array([[1.0, 2.0], [3.0, 4.0]]))
    'the matrix is transposed (rows and columns swapped)'
    """
    got, expected = np.asarray(got, dtype=float), np.asarray(expected, dtype=float)

    def near(a: np.ndarray, b: np.ndarray) -> bool:
        return a.shape == b.shape and bool(np.all(np.isfinite(a))) and bool(np.allclose(a, b, rtol=1e-6, atol=1e-9))

    for message, value in (mistakes or {}).items():
        try:
            alt = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            continue
        if near(got, alt):
            return message
    if got.shape != expected.shape:
        if got.ndim == 2 and got.shape == expected.shape[::-1]:
            return "the matrix is transposed (rows and columns swapped)"
        return None
    if not np.all(np.isfinite(got)):
        return None
    if got.ndim >= 2 and got.shape[-1] == got.shape[-2] and not near(expected, np.swapaxes(expected, -1, -2)) \
            and near(got, np.swapaxes(expected, -1, -2)):
        return "the matrix is transposed (rows and columns swapped)"
    if np.abs(expected).max(initial=0.0) > 1e-12 and near(got, -expected):
        return "wrong sign everywhere"
    big = np.abs(expected) > 1e-9 * max(1.0, float(np.abs(expected).max(initial=0.0)))
    if big.any() and np.all(np.abs(got[~big]) < 1e-9):
        r = got[big] / expected[big]
        r0 = float(np.median(r))
        if np.all(np.abs(r - r0) <= 1e-6 * abs(r0) + 1e-12) and abs(r0 - 1) > 1e-6 and r0 != 0:
            for value, message in _named_ratios(d):
                if abs(r0 - value) <= 1e-6 * value:
                    return message
            if got.size > 1:  # one number alone says nothing about a constant factor
                return f"every value is {r0:.6g} times the expected one: a missing or extra scale factor"
    if expected.size > 1:
        diff = got - expected
        c = float(np.median(diff))
        if abs(c) > 1e-9 and np.all(np.abs(diff - c) <= 1e-7 * (1 + np.abs(expected))):
            return f"every value is off by the same constant {c:+.6g}: a missing additive term (a normaliser?)"
    return None


def as_array(name: str, value) -> np.ndarray:
    """``value`` as a float array, or a clear failure if it is not numeric."""
    if value is None:
        fail(f"{name} is None — did the function return its result?")
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        fail(f"{name} should be numeric, got {type(value).__name__}")
    return array


def check_shape(name: str, value, shape: Sequence[int]) -> np.ndarray:
    """Fail unless ``value`` has exactly ``shape``; return it as a float array."""
    array = as_array(name, value)
    if array.shape != tuple(shape):
        hint = ""
        if array.ndim == 2 and array.shape == tuple(shape)[::-1]:
            hint = " — transposed?"
        elif array.size == math.prod(shape):
            hint = " — the right number of entries: a reshape or a missing/extra axis?"
        fail(f"{name} has shape {array.shape}, expected {tuple(shape)}{hint}")
    return array


def check_close(name: str, got, expected, *, rtol: float = 1e-7, atol: float = 1e-9, d: int | None = None,
                mistakes: Mapping[str, object] | None = None, allow_float32: bool = False) -> np.ndarray:
    """Fail unless ``got`` matches ``expected`` (same shape, finite, within tolerances).

    The failure shows got vs expected, the largest error and where it is, and the likely mistake
    (:func:`diagnose` with ``d`` and ``mistakes``). An error at float32 round-off level is accepted when
    ``allow_float32`` (the task allows single precision), else it gets "compute in float64".
    """
    expected = np.asarray(expected, dtype=float)
    if got is not None and expected.shape != np.shape(got):
        likely = diagnose(as_array(name, got), expected, d=d, mistakes=mistakes)
        if likely:
            fail(f"{name} has shape {np.shape(got)}, expected {expected.shape}: {likely}")
    array = check_shape(name, got, expected.shape)
    if not np.all(np.isfinite(array)):
        bad = np.argwhere(~np.isfinite(array))
        where = f" (first at index {tuple(int(i) for i in bad[0])})" if array.ndim else ""
        fail(f"{name} contains NaN or infinity{where}: got {describe(array)}, expected {describe(expected)}")
    if np.allclose(array, expected, rtol=rtol, atol=atol):
        return array
    scale = np.maximum(np.abs(expected), 1.0)
    at_float32 = bool(np.allclose(array, expected, rtol=5e-6, atol=5e-6 * scale.max()))
    if at_float32 and allow_float32:
        return array
    err = np.abs(array - expected)
    worst = np.unravel_index(int(np.argmax(err)), err.shape) if err.ndim else ()
    where = f" at index {tuple(int(i) for i in worst)}" if err.ndim else ""
    lines = [f"{name}: got {describe(array)}, expected {describe(expected)} "
             f"(largest error {float(err.max()):.3g}{where}; tolerance rtol={rtol:g}, atol={atol:g})"]
    specific = _closer_mistake(array, expected, mistakes) if at_float32 else None
    if specific:  # a small error that one of the exercise's own slips explains far better than round-off
        lines.append(f"likely mistake: {specific}")
    elif at_float32:
        lines.append("likely: the error is at float32 round-off level — compute in float64 "
                     "(np.float64 arrays / dtype=float)")
    else:
        likely = diagnose(array, expected, d=d, mistakes=mistakes)
        if likely:
            lines.append(f"likely mistake: {likely}")
    fail("\n    ".join(lines))
    return array  # pragma: no cover


def _closer_mistake(got: np.ndarray, expected: np.ndarray, mistakes: Mapping[str, object] | None) -> str | None:
    """The exercise-specific mistake (of ``mistakes``) that ``got`` matches (as :func:`diagnose` does) and lies at
    least 100 times closer to than to ``expected``: an error small enough to pass for float32 round-off, but
    explained exactly by a slip (e.g. a sum that includes one term too many with a tiny weight)."""
    far = float(np.max(np.abs(got - expected), initial=0.0))
    for message, value in (mistakes or {}).items():
        try:
            alt = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            continue
        if alt.shape == got.shape and diagnose(got, expected, mistakes={message: alt}) == message \
                and float(np.max(np.abs(got - alt), initial=0.0)) * 100 <= far:
            return message
    return None


def check_cases(name: str, cases: Sequence[tuple[str, object, object]], *, rtol: float = 1e-7, atol: float = 1e-9,
                mistakes: Sequence[Mapping[str, object]] | None = None) -> None:
    """Compare scalar results case by case (``(label, got, expected)``, smallest case first).

    Fails on the first failing case with got vs expected; the likely mistake is looked for in that case's
    ``mistakes`` and then across *all* cases (a constant offset or factor shows only across several).
    """
    gots = np.array([float(as_array(label, g).reshape(-1)[0]) for label, g, _ in cases])
    exps = np.array([float(e) for _, _, e in cases])
    for k, (label, _, _) in enumerate(cases):
        if not np.isfinite(gots[k]) or not np.isclose(gots[k], exps[k], rtol=rtol, atol=atol):
            break
    else:
        return
    lines = [f"{name} for {label}: got {gots[k]:.10g}, expected {exps[k]:.10g} "
             f"(error {abs(gots[k] - exps[k]):.3g}; tolerance rtol={rtol:g}, atol={atol:g})"]
    likely = diagnose(gots[k:k + 1], exps[k:k + 1], mistakes={m: np.atleast_1d(v) for m, v in
                                                              ((mistakes or [{}] * len(cases))[k]).items()})
    finite = np.isfinite(gots)
    if likely is None and finite.sum() >= 2:
        likely = diagnose(gots[finite], exps[finite])
    if likely:
        lines.append(f"likely mistake: {likely}")
    fail("\n    ".join(lines))


def check_true(condition: bool, message: str) -> None:
    """Fail with ``message`` unless ``condition`` holds."""
    if not bool(condition):
        fail(message)


def check_int(name: str, value) -> int:
    """``value`` as an int, or a failure naming its type."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer, numbers.Integral)):  # sympy's Integer too
        whole = isinstance(value, (float, np.floating)) and math.isfinite(value) and float(value).is_integer()
        fail(f"{name} should be an int, got {type(value).__name__} {value!r}"
             + (" — `/` always gives a float in Python: use `//` for a whole quotient (or int(...))" if whole else ""))
    return int(value)


def _student_frames(exc: BaseException) -> str:
    """The traceback lines of ``exc`` that belong to the student's code (not this package, not libraries)."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if not Path(f.filename).resolve().is_relative_to(_PACKAGE)
              and "site-packages" not in f.filename and "/lib/python" not in f.filename]
    return "".join(traceback.format_list(frames[-3:])).rstrip()


def call_student(fn: Callable, name: str, *args):
    """Call the student's ``fn(*args)``; turn a stub, a non-function or a crash into a teaching failure.

    A crash is reported with the student's own frames (their cells), never the checker's.
    """
    if not callable(fn):
        fail(f"{name} should be a function, got {type(fn).__name__}")
    try:
        return fn(*args)
    except NotImplementedError:
        fail(f"{name} still raises NotImplementedError — fill in the stub first")
    except ExerciseCheckError:
        raise
    except Exception as exc:  # report the student's error with their frames only
        frames = _student_frames(exc)
        where = f"\n    in your code:\n{frames}" if frames else ""
        fail(f"{name} raised {type(exc).__name__}: {exc}{where}")


_COLLECTORS: list[list[Report]] = []


@contextlib.contextmanager
def collect_reports() -> Iterator[list[Report]]:
    """Collect every :class:`Report` a checker creates inside the block (their ``results`` list each sub-check).

    The instructor's export (:mod:`nextword.booktools.exercises.subchecks`) grades one sub-check at a time with it.
    """
    reports: list[Report] = []
    _COLLECTORS.append(reports)
    try:
        yield reports
    finally:
        _COLLECTORS.remove(reports)


class Report:
    """Runs every sub-check of an exercise and lists them all (partial credit).

    ``with report.check(label): ...`` records ✓ or the ✗ message and goes on; :meth:`done` prints the
    ✓ line when all passed, else raises one :class:`ExerciseCheckError` listing every sub-check.
    """

    def __init__(self, exercise: str) -> None:
        self.exercise = exercise
        self.results: list[tuple[str, str | None]] = []
        for reports in _COLLECTORS:
            reports.append(self)

    @contextlib.contextmanager
    def check(self, label: str) -> Iterator[None]:
        try:
            yield
        except ExerciseCheckError as exc:
            self.results.append((label, str(exc).removeprefix("✗ ")))
        except Exception as exc:  # a crash of the student's code called without call_student
            frames = _student_frames(exc)
            where = f"\n    in your code:\n{frames}" if frames else ""
            self.results.append((label, f"raised {type(exc).__name__}: {exc}{where}"))
        else:
            self.results.append((label, None))

    @property
    def failures(self) -> list[tuple[str, str]]:
        return [(label, msg) for label, msg in self.results if msg is not None]

    def done(self, message: str) -> bool:
        """Print ``✓ message`` if every sub-check passed; else raise the full list."""
        if not self.failures:
            return passed(message)
        n, k = len(self.results), len(self.results) - len(self.failures)
        stub = all("NotImplementedError" in msg for _, msg in self.failures)
        head = f"{self.exercise}: {k} of {n} checks passed" + (" (stubs not filled in yet)" if stub and k == 0 else "")
        lines = [head]
        for label, msg in self.results:
            lines.append(f"  ✓ {label}" if msg is None else f"  ✗ {label}: " + msg.replace("\n", "\n    "))
        raise ExerciseCheckError("✗ " + "\n".join(lines))
