"""Checkers for the exercises of Part 1 (see exercises/README.md)."""
from __future__ import annotations

from ._common import ExerciseCheckError, check_close, check_shape, check_true, fail, passed  # noqa: F401
from .part1_a import *  # noqa: F401,F403  (Exercises 1, 2, 3, 7, 10, 11)
from .part1_a import __all__ as _part1_a_all
from .part1_b import *  # noqa: F401,F403  (Exercises 4, 5, 6, 8, 9, 12)
from .part1_b import __all__ as _part1_b_all

__all__: list[str] = []
__all__ += _part1_a_all  # P1a's checkers
__all__ += _part1_b_all  # P1b's checkers
