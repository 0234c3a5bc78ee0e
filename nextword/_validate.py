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
    "check_finite_scalar",
    "check_same_dtype",
    "check_str_collection",
    "check_rng",
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


def check_finite_scalar(value: object, name: str, *, positive: bool = False,
                        nonnegative: bool = False) -> float:
    """``value`` as a finite Python float; ``TypeError`` unless a real number (bools refused),
    ``ValueError`` for NaN/inf or, when asked, a value ``<= 0`` (``positive``) or ``< 0``
    (``nonnegative``).

    >>> check_finite_scalar(2, "scale")
    2.0
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    x = float(value)
    if not np.isfinite(x):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if positive and x <= 0:
        raise ValueError(f"{name} must be > 0, got {value!r}")
    if nonnegative and x < 0:
        raise ValueError(f"{name} must be >= 0, got {value!r}")
    return x


def check_same_dtype(**arrays: np.ndarray) -> np.dtype:
    """The common float dtype of the named arrays; ``TypeError`` naming them if they differ
    (torch raises too; silent promotion to float64 would double the time of a float32 model).

    >>> check_same_dtype(q=np.zeros(2), k=np.zeros(2)).name
    'float64'
    """
    dtypes = {name: a.dtype for name, a in arrays.items()}
    if len(set(dtypes.values())) > 1:
        listed = ", ".join(f"{n} {d}" for n, d in dtypes.items())
        raise TypeError(f"{', '.join(dtypes)} must share one float dtype, got {listed}; convert "
                        "them with .astype(...) first")
    return next(iter(dtypes.values()))


def check_str_collection(value: object, name: str) -> list[str]:
    """``value`` as a list of strings; a bare ``str`` is refused (it would be split into its
    characters) and so is any non-string item.

    >>> check_str_collection(("<s>", "</s>"), "special_tokens")
    ['<s>', '</s>']
    """
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be a collection of strings, got a single {type(value).__name__} "
                        f"{value!r}; wrap it in a list: [{value!r}]")
    try:
        items = list(value)  # type: ignore[call-overload]
    except TypeError:
        raise TypeError(f"{name} must be a collection of strings, got {type(value).__name__}") from None
    for item in items:
        if not isinstance(item, str):
            raise TypeError(f"{name} must contain strings, got {type(item).__name__} {item!r}")
    return items


def check_rng(rng: object, name: str = "rng") -> np.random.Generator:
    """A ``numpy.random.Generator`` from what ``np.random.default_rng`` accepts (``None``, an int
    seed, a ``SeedSequence``, a ``BitGenerator`` or a ``Generator``, returned as is); anything else
    (a float, a string, the legacy ``RandomState``) raises ``TypeError`` naming ``name``.

    >>> bool(check_rng(0).integers(10) == np.random.default_rng(0).integers(10))
    True
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None or isinstance(rng, (np.random.SeedSequence, np.random.BitGenerator)) or (
            isinstance(rng, numbers.Integral) and not isinstance(rng, (bool, np.bool_))):
        try:
            return np.random.default_rng(rng)  # type: ignore[arg-type]
        except ValueError as exc:  # a negative seed
            raise ValueError(f"{name}: {exc}") from None
    raise TypeError(f"{name} must be a numpy.random.Generator, an int seed or None, got "
                    f"{type(rng).__name__}")
