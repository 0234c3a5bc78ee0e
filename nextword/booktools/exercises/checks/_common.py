"""Shared helpers for exercise checkers: pass with a ✓, fail with a message that teaches."""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

__all__ = ["ExerciseCheckError", "passed", "fail", "check_shape", "check_close", "check_true", "as_array", "call_student"]


class ExerciseCheckError(AssertionError):
    """Raised by a checker when an answer is wrong; the message says what is wrong, not the answer."""


def passed(message: str) -> bool:
    """Print a success line for the student and return True."""
    print(f"✓ {message}")
    return True


def fail(message: str) -> None:
    """Raise :class:`ExerciseCheckError` with ``message``."""
    raise ExerciseCheckError(f"✗ {message}")


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
        fail(f"{name} has shape {array.shape}, expected {tuple(shape)}")
    return array


def check_close(name: str, got, expected, *, rtol: float = 1e-7, atol: float = 1e-9) -> np.ndarray:
    """Fail unless ``got`` matches ``expected`` (same shape, finite, within tolerances)."""
    expected = np.asarray(expected, dtype=float)
    array = check_shape(name, got, expected.shape)
    if not np.all(np.isfinite(array)):
        fail(f"{name} contains NaN or infinity")
    if not np.allclose(array, expected, rtol=rtol, atol=atol):
        err = float(np.max(np.abs(array - expected)))
        fail(f"{name} is off: largest absolute error {err:.3g} exceeds the tolerance (rtol={rtol:g}, atol={atol:g})")
    return array


def check_true(condition: bool, message: str) -> None:
    """Fail with ``message`` unless ``condition`` holds."""
    if not bool(condition):
        fail(message)


def call_student(fn: Callable, name: str, *args):
    """Call the student's ``fn(*args)``; turn a stub, a non-function or a crash into a teaching failure."""
    if not callable(fn):
        fail(f"{name} should be a function, got {type(fn).__name__}")
    try:
        return fn(*args)
    except NotImplementedError:
        fail(f"{name} still raises NotImplementedError — fill in the stub first")
    except ExerciseCheckError:
        raise
    except Exception as exc:  # report the student's error without a traceback wall
        fail(f"{name} raised {type(exc).__name__}: {exc}")
