"""Checkers for the exercises of Part 1 (see exercises/README.md)."""
from __future__ import annotations

from ._common import ExerciseCheckError, check_close, check_shape, check_true, fail, passed  # noqa: F401
from .part1_a import *  # noqa: F401,F403  (Exercises 1, 2, 3, 7, 10, 11)
from .part1_a import __all__ as _part1_a_all

__all__: list[str] = []
__all__ += _part1_a_all  # P1a's checkers
