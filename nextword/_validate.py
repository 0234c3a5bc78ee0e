"""Small argument checks shared by the numpy core (attention, positions, layers, embedding).

Every public function of the core validates its inputs with these helpers so that bad input
fails with a ``ValueError``/``TypeError`` that names the argument and the expected shape,
instead of producing a silent NaN or a numpy broadcasting surprise.
"""
from __future__ import annotations

import numbers

import numpy as np

__all__ = [
    "as_float_array",
    "check_finite",
    "check_positive_int",
    "as_index_array",
]


def as_float_array(x: object, name: str, *, min_ndim: int = 0, ndim: int | None = None,
                   finite: bool = True) -> np.ndarray:
    """``x`` as a floating array (float32/float64 kept, anything else becomes float64).

    Raises ``TypeError`` for non-numeric input, ``ValueError`` for a wrong rank or (when
    ``finite``) NaN/inf entries.
    """
    arr = np.asarray(x)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_):
        raise TypeError(f"{name} must be a numeric array, got dtype {arr.dtype}")
    if np.issubdtype(arr.dtype, np.complexfloating):
        raise TypeError(f"{name} must be real, got dtype {arr.dtype}")
    if arr.dtype not in (np.float32, np.float64):
        arr = arr.astype(np.float64)
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions, got shape {arr.shape}")
    if arr.ndim < min_ndim:
        raise ValueError(f"{name} must have at least {min_ndim} dimensions, got shape {arr.shape}")
    if finite:
        check_finite(arr, name)
    return arr


def check_finite(arr: np.ndarray, name: str) -> None:
    """Raise ``ValueError`` if ``arr`` has a NaN or an infinite entry."""
    if not np.all(np.isfinite(arr)):
        bad = int(np.size(arr) - np.count_nonzero(np.isfinite(arr)))
        raise ValueError(f"{name} contains {bad} non-finite value(s) (NaN or inf)")


def check_positive_int(value: object, name: str, *, minimum: int = 1) -> int:
    """``value`` as a Python int, requiring an integer ``>= minimum`` (bools are refused)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    value = int(value)
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


def as_index_array(ids: object, name: str, *, upper: int | None = None) -> np.ndarray:
    """``ids`` as an int64 array of indices in ``[0, upper)``.

    Python lists of ints are accepted; floats (even integral-valued ones) are refused so that a
    float array of embeddings passed by mistake is caught.
    """
    arr = np.asarray(ids)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.integer)):
        if arr.size == 0 and arr.dtype == np.float64:  # np.asarray([]) is float64
            arr = arr.astype(np.int64)
        else:
            raise TypeError(f"{name} must be an integer array of token ids, got dtype {arr.dtype}")
    arr = arr.astype(np.int64, copy=False)
    if arr.size:
        lo, hi = int(arr.min()), int(arr.max())
        if lo < 0 or (upper is not None and hi >= upper):
            rng = f"[0, {upper})" if upper is not None else ">= 0"
            raise ValueError(f"{name} must lie in {rng}, got values in [{lo}, {hi}]")
    return arr
