"""One sub-check of an exercise's checker at a time: the unit the instructor's export grades and gives points to.

A checker ``check_ex_p4_01(scalar_margins, support)`` runs all its sub-checks in a
:class:`~nextword.booktools.exercises.checks._common.Report`; :func:`sub_check_results` runs it silently and
returns every sub-check's label with ``None`` (passed) or the failure message. The otter-grader and nbgrader
tests written by :mod:`nextword.booktools.exercises.export` call :func:`sub_check` with one label each, so
each sub-check is its own test with its own points (public or hidden).

>>> from nextword.booktools.exercises.checks import check_ex_p4_04
>>> [label for label, msg in sub_check_results("p4_04", lambda w, sigma: 0.0, lambda w, sigma: 0.0)][:1]
['Var(x_1) of the length-2 non-causal model (change of variables ε = J x)']
"""

from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Callable

from .checks._common import ExerciseCheckError, collect_reports

__all__ = ["WHOLE", "checker_for", "sub_check_results", "sub_check"]

WHOLE = "the whole check (this checker has no separate sub-checks)"
_CHECKER_MODULES = ("nextword.booktools.exercises.checks", "nextword.booktools.exercises.checks.new_items")
_last: tuple[str, tuple, list[tuple[str, str | None]]] | None = None


def checker_for(exercise: str) -> Callable:
    """The checker ``check_ex_<exercise>`` (e.g. ``"p4_01"``), wherever in :mod:`.checks` it lives."""
    import importlib

    if not re.fullmatch(r"p\d+_\d+", str(exercise)):
        raise ValueError(f"exercise should look like 'p4_01', got {exercise!r}")
    for name in _CHECKER_MODULES:
        checker = getattr(importlib.import_module(name), f"check_ex_{exercise}", None)
        if checker is not None:
            return checker
    raise ValueError(f"no checker check_ex_{exercise} in {', '.join(_CHECKER_MODULES)}")


def sub_check_results(exercise: str, *args) -> list[tuple[str, str | None]]:
    """Run ``exercise``'s checker on ``args`` without printing; return ``[(label, None or failure message)]``.

    The sub-checks a checker skips after an earlier failure (it stops when its input is unusable) are
    absent. A checker that runs no :class:`Report` (none of the shipped ones) is one sub-check, :data:`WHOLE`. The last call is remembered: the same exercise with the very same argument objects is not
    re-run (a graded notebook calls this once per sub-check, in a row).
    """
    global _last
    if (
        _last is not None
        and _last[0] == exercise
        and len(_last[1]) == len(args)
        and all(a is b for a, b in zip(_last[1], args))
    ):  # the very same objects (kept alive: no id reuse)
        return _last[2]
    checker = checker_for(exercise)
    crash = failure = None
    with collect_reports() as reports, contextlib.redirect_stdout(io.StringIO()):
        try:
            checker(*args)
        except ExerciseCheckError as exc:
            failure = str(exc).removeprefix("✗ ")
        except Exception as exc:  # the checker could not even start (e.g. a wrong argument type)
            crash = f"{type(exc).__name__}: {exc}"
    results = [result for report in reports for result in report.results]
    if not reports:  # a checker without a Report is one all-or-nothing check
        results = [(WHOLE, crash or failure)]
    elif crash is not None:
        results.append(("the checker ran to the end", crash))
    _last = (exercise, args, results)
    return results


def sub_check(exercise: str, label: str, *args) -> None:
    """Pass silently when sub-check ``label`` of ``exercise`` passes on ``args``; else raise AssertionError.

    The error names the sub-check and carries the checker's teaching message (got vs expected, likely mistake).
    """
    results = sub_check_results(exercise, *args)
    for got, message in results:
        if got == label:
            if message is None:
                return
            raise AssertionError(f"✗ {exercise} · {label}: {message}")
    failed = next((f"{got}: {message}" for got, message in results if message is not None), "")
    raise AssertionError(f"✗ {exercise} · {label}: not run, an earlier sub-check failed first ({failed})")
