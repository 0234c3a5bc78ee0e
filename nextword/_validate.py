"""The one validation layer of the numpy library (issue #22).

Every public entry point (functions, constructors, setters, converters, loaders) validates its
inputs with these helpers so that bad input fails with a ``ValueError``/``TypeError`` that names
the argument and the expected shape or range, instead of a silent NaN, a numpy broadcasting
surprise or unbounded work: arrays (:func:`as_float_array`, :func:`as_index_array`,
:func:`check_finite`), token-id sequences (:func:`as_token_list`: ``None`` and strings named),
scalars (:func:`check_positive_int`, :func:`check_real`, :func:`check_flag`,
:func:`check_choice`), dtypes (:func:`check_float_dtype`), seeds (:func:`as_generator`: whatever
``np.random.default_rng`` accepts) and sizes (:func:`check_size`, :data:`MAX_ELEMENTS`).

``python -m tests.bad_inputs`` sweeps bad inputs over the public callables and counts the
outcomes; ``tests/test_bad_inputs.py`` asserts it and fuzzes the same callables with hypothesis.
"""

from __future__ import annotations

import numbers
import operator
import os
from collections.abc import Iterable

import numpy as np
from numpy.typing import ArrayLike, DTypeLike, NDArray

__all__ = [
    "MAX_ELEMENTS",
    "as_generator",
    "check_real",
    "check_flag",
    "check_choice",
    "check_float_dtype",
    "check_size",
    "as_token_list",
    "as_float_array",
    "check_finite",
    "check_positive_int",
    "as_index_array",
    "check_finite_scalar",
    "check_same_dtype",
    "check_str_collection",
    "check_rng",
    "check_path",
    "check_iterable",
    "check_int_sequence",
    "check_axis",
    "check_no_overflow",
    "as_array",
    "check_callable",
    "check_broadcast",
]


#: the most array elements one table or result may have (2**26 float64 = 512 MiB); far above every
#: size of the book, low enough that a mistyped size fails by name instead of swapping or MemoryError
MAX_ELEMENTS = 2**26


def as_generator(rng: object, name: str = "rng", *, required: bool = False) -> np.random.Generator:
    """A ``numpy.random.Generator`` from what ``np.random.default_rng`` accepts: ``None`` (fresh
    entropy; refused when ``required``), an int seed ``>= 0``, a ``SeedSequence``, a
    ``BitGenerator`` or a ``Generator`` (returned as is). Anything else (a float, a string, the
    legacy ``RandomState``) is a ``TypeError`` naming ``name``.

    >>> bool(as_generator(7).integers(100) == np.random.default_rng(7).integers(100))
    True
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None and required:
        raise TypeError(
            f"{name} is required: pass a numpy.random.Generator or an int seed, e.g. np.random.default_rng(0)"
        )
    if (
        rng is None
        or isinstance(rng, (np.random.SeedSequence, np.random.BitGenerator))
        or (isinstance(rng, numbers.Integral) and not isinstance(rng, (bool, np.bool_)))
    ):
        try:
            return np.random.default_rng(rng)  # type: ignore[arg-type]
        except ValueError as exc:  # a negative seed
            raise ValueError(f"{name} must be a seed >= 0 or a numpy.random.Generator: {exc}") from None
    raise TypeError(f"{name} must be a numpy.random.Generator, an int seed or None, got {type(rng).__name__}")


def check_real(
    value: object,
    name: str,
    *,
    lo: float | None = None,
    hi: float | None = None,
    lo_open: bool = False,
    hi_open: bool = False,
) -> float:
    """``value`` as a finite Python float in ``[lo, hi]`` (``lo_open``/``hi_open``: strict).

    ``TypeError`` unless a real number (bools, strings, arrays refused), ``ValueError`` for
    NaN/inf or a value out of range, naming ``name``.

    >>> check_real(0.5, "p", lo=0.0, hi=1.0)
    0.5
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    x = float(value)
    if not np.isfinite(x):
        raise ValueError(f"{name} must be finite, got {x!r}")
    if (lo is not None and (x < lo or (lo_open and x == lo))) or (hi is not None and (x > hi or (hi_open and x == hi))):
        left = "-inf" if lo is None else f"{lo!r}"
        right = "inf" if hi is None else f"{hi!r}"
        interval = f"{'(' if lo_open or lo is None else '['}{left}, {right}{')' if hi_open or hi is None else ']'}"
        raise ValueError(f"{name} must lie in {interval}, got {x!r}")
    return x


def check_flag(value: object, name: str) -> bool:
    """``value`` as a bool; anything but ``True``/``False`` (``"yes"``, ``None``, ``2``) is a ``TypeError``."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def check_choice(value: object, name: str, allowed: Iterable[str]) -> str:
    """``value`` if it is one of the strings ``allowed``; ``TypeError``/``ValueError`` naming ``name``."""
    allowed = tuple(allowed)
    if not isinstance(value, str):
        raise TypeError(f"{name} must be one of {allowed}, got {type(value).__name__} {value!r}")
    if value not in allowed:
        raise ValueError(f"{name} must be one of {allowed}, got {value!r}")
    return value


def check_float_dtype(dtype: DTypeLike, name: str = "dtype") -> np.dtype:
    """``dtype`` as ``np.dtype('float32')`` or ``np.dtype('float64')``; any other dtype (integer
    tables would truncate N(0, σ²) draws to zeros, complex ones break the real formulas) is a
    ``TypeError`` naming ``name``.

    >>> check_float_dtype("float32")
    dtype('float32')
    """
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"{name} must be float32 or float64, got {dtype!r}") from None
    if dt not in (np.float32, np.float64):
        raise TypeError(f"{name} must be float32 or float64, got {dt}")
    return dt


def check_size(shape: tuple[int, ...], name: str, *, limit: int = MAX_ELEMENTS) -> None:
    """Refuse by name an allocation of ``prod(shape)`` elements above ``limit`` (a ``ValueError``
    that says how many elements were asked for, instead of a ``MemoryError`` or swapping)."""
    n = 1
    for s in shape:
        n *= int(s)
    if n > limit:
        raise ValueError(
            f"{name} would allocate {n:.3g} elements (shape {tuple(shape)}), more than "
            f"the limit of {limit:.3g}; use smaller sizes"
        )


def as_token_list(ids: object, name: str, *, upper: int | None = None) -> list[int]:
    """``ids`` (a 1-D sequence or array of integer token ids) as a ``list[int]`` in ``[0, upper)``.

    ``None``, a string or a scalar is a ``TypeError`` naming ``name`` (not "'NoneType' object is
    not iterable"); floats and bools are refused like in :func:`as_index_array`.

    >>> as_token_list((1, 2), "prompt")
    [1, 2]
    """
    if ids is None or isinstance(ids, (str, bytes)) or not isinstance(ids, (Iterable, np.ndarray)):
        raise TypeError(f"{name} must be a 1-D sequence of integer token ids, got {type(ids).__name__}")
    out = []
    for i, t in enumerate(ids):
        if isinstance(t, (bool, np.bool_)) or not isinstance(t, numbers.Integral):
            raise TypeError(f"{name}[{i}] must be an integer token id, got {t!r}")
        t = operator.index(t)
        if t < 0 or (upper is not None and t >= upper):
            where = f"[0, {upper})" if upper is not None else ">= 0"
            raise ValueError(f"{name}[{i}] must be a token id in {where}, got {t}")
        out.append(t)
    return out


def as_float_array(
    x: ArrayLike, name: str, *, min_ndim: int = 0, ndim: int | None = None, finite: bool = True
) -> NDArray[np.floating]:
    """``x`` as a floating array (float32/float64 kept, anything else becomes float64).

    Raises ``TypeError`` for non-numeric input, ``ValueError`` for a wrong rank, a ragged nested
    list or (when ``finite``) NaN/inf entries.
    """
    try:
        arr = np.asarray(x)
    except ValueError:  # a ragged nested list
        raise ValueError(f"{name} must be a rectangular numeric array, got a ragged {type(x).__name__}") from None
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
    try:
        arr = np.asarray(ids)
    except (ValueError, OverflowError):  # a ragged nested list
        raise ValueError(f"{name} must be a rectangular integer array of token ids") from None
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


def check_finite_scalar(value: object, name: str, *, positive: bool = False, nonnegative: bool = False) -> float:
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
        raise TypeError(
            f"{', '.join(dtypes)} must share one float dtype, got {listed}; convert them with .astype(...) first"
        )
    return next(iter(dtypes.values()))


def check_str_collection(value: object, name: str) -> list[str]:
    """``value`` as a list of strings; a bare ``str`` is refused (it would be split into its
    characters) and so is any non-string item.

    >>> check_str_collection(("<s>", "</s>"), "special_tokens")
    ['<s>', '</s>']
    """
    if isinstance(value, (str, bytes)):
        raise TypeError(
            f"{name} must be a collection of strings, got a single {type(value).__name__} "
            f"{value!r}; wrap it in a list: [{value!r}]"
        )
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
    if (
        rng is None
        or isinstance(rng, (np.random.SeedSequence, np.random.BitGenerator))
        or (isinstance(rng, numbers.Integral) and not isinstance(rng, (bool, np.bool_)))
    ):
        try:
            return np.random.default_rng(rng)  # type: ignore[arg-type]
        except ValueError as exc:  # a negative seed
            raise ValueError(f"{name}: {exc}") from None
    raise TypeError(f"{name} must be a numpy.random.Generator, an int seed or None, got {type(rng).__name__}")


def check_path(value: object, name: str) -> "os.PathLike[str] | str":
    """``value`` if it is a ``str`` or an ``os.PathLike``; anything else (``None``, an int) is a
    ``TypeError`` naming ``name`` instead of ``expected str, bytes or os.PathLike object``.

    >>> check_path("model.json", "path")
    'model.json'
    """
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{name} must be a file path (str or pathlib.Path), got {type(value).__name__}")
    return value


def check_iterable(value: object, name: str, what: str = "a sequence", *, allow_str: bool = False) -> list:
    """``list(value)``; ``None``, a scalar (and, unless ``allow_str``, a string) is a
    ``TypeError`` naming ``name`` (not "'NoneType' object is not iterable").

    >>> check_iterable((1, 2), "ids")
    [1, 2]
    """
    if isinstance(value, (str, bytes)) and not allow_str:
        raise TypeError(f"{name} must be {what}, got a {type(value).__name__}")
    if (
        value is None
        or not isinstance(value, (Iterable, np.ndarray))
        or (isinstance(value, np.ndarray) and value.ndim == 0)
    ):
        raise TypeError(f"{name} must be {what}, got {type(value).__name__}")
    return list(value)


def check_int_sequence(value: object, name: str, *, minimum: int | None = None) -> np.ndarray:
    """``value`` (a 1-D sequence/array of integers, or ``bytes``) as an int64 array; floats (even
    integral-valued ones), bools and strings are a ``TypeError`` naming ``name``, entries below
    ``minimum`` a ``ValueError``.

    >>> check_int_sequence([3, 4], "chunk").tolist()
    [3, 4]
    """
    if isinstance(value, (bytes, bytearray)):
        return np.frombuffer(bytes(value), dtype=np.uint8).astype(np.int64)
    if isinstance(value, np.ndarray):
        arr = value
    else:
        items = check_iterable(value, name, "a 1-D sequence of integers")
        for i, t in enumerate(items):
            if isinstance(t, (bool, np.bool_)) or not isinstance(t, numbers.Integral):
                raise TypeError(f"{name}[{i}] must be an integer, got {t!r}")
        try:
            arr = np.asarray(items, dtype=np.int64) if items else np.zeros(0, dtype=np.int64)
        except OverflowError:
            raise ValueError(f"{name} has an integer beyond int64") from None
    if arr.ndim != 1 or not (np.issubdtype(arr.dtype, np.integer) or (arr.size == 0 and arr.dtype == np.float64)):
        raise TypeError(f"{name} must be a 1-D sequence of integers, got shape {arr.shape} dtype {arr.dtype}")
    arr = arr.astype(np.int64, copy=False)
    if minimum is not None and arr.size and int(arr.min()) < minimum:
        raise ValueError(f"{name} must have entries >= {minimum}, got {int(arr.min())}")
    return arr


def check_axis(axis: object, name: str = "axis", *, ndim: int | None = None) -> int:
    """``axis`` as a Python int (bools, floats, strings refused), in ``[-ndim, ndim)`` when ``ndim``
    is given.

    >>> check_axis(-1, ndim=2)
    -1
    """
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, numbers.Integral):
        raise TypeError(f"{name} must be an integer axis, got {type(axis).__name__} {axis!r}")
    axis = int(axis)
    if ndim is not None and not -ndim <= axis < ndim:
        raise ValueError(f"{name} {axis} is out of range for an array of {ndim} dimension(s)")
    return axis


def check_no_overflow(arr: np.ndarray, what: str, *, masked: bool = True) -> np.ndarray:
    """``arr`` if it has no NaN or ``+inf``; else a ``ValueError`` saying that ``what`` (an
    expression of the arguments, e.g. ``"the scores (X W_Q^T)(X W_K^T)^T"``) overflowed float64
    for finite inputs. ``-inf``, a masked entry, is allowed unless ``masked=False``. Meant for a
    result or an intermediate the function computes anyway (a scalar or a small array): a check
    after the work, so valid inputs pay one pass over what was computed and nothing else.

    >>> check_no_overflow(np.array([1.0, -np.inf]), "the scores")
    array([  1., -inf])
    """
    bad = (np.isnan(arr).any() or np.isposinf(arr).any()) if masked else not np.isfinite(arr).all()
    if bad:
        raise ValueError(f"{what} overflows float64 (finite inputs too large); rescale the inputs")
    return arr


def as_array(x: object, name: str) -> np.ndarray:
    """``np.asarray(x)``; a ragged nested list is a ``ValueError`` naming ``name`` instead of
    numpy's "setting an array element with a sequence"."""
    try:
        return np.asarray(x)
    except (ValueError, TypeError, OverflowError):
        raise ValueError(f"{name} must be a rectangular array, got a ragged {type(x).__name__}") from None


def check_callable(value: object, name: str, what: str = "a function") -> object:
    """``value`` if it can be called; anything else (``None``, an array, a number) is a ``TypeError``
    naming ``name`` instead of "'NoneType' object is not callable" deep inside.

    >>> check_callable(len, "fn") is len
    True
    """
    if not callable(value):
        raise TypeError(f"{name} must be {what}, got {type(value).__name__}")
    return value


def check_broadcast(**arrays: np.ndarray) -> tuple[int, ...]:
    """The broadcast shape of the named arrays; a ``ValueError`` naming them and their shapes when they do not
    broadcast (instead of numpy's "operands could not be broadcast together").

    >>> check_broadcast(x=np.ones((2, 3)), v=np.ones(3))
    (2, 3)
    """
    try:
        return np.broadcast_shapes(*(np.shape(a) for a in arrays.values()))
    except ValueError:
        shapes = ", ".join(f"{name} {np.shape(a)}" for name, a in arrays.items())
        raise ValueError(f"{' and '.join(arrays)} must have shapes that broadcast together, got {shapes}") from None


def as_log_probs(x: object, name: str, *, prob: bool = True) -> np.ndarray:
    """Log-probabilities ``(..., Z)`` (finite or ``-inf``; with ``prob`` also ``<= 0``: a value
    above 0 is a probability above 1, and ``exp(1e308)`` would turn the sums into NaN)."""
    arr = as_float_array(x, name, min_ndim=1, finite=False).astype(np.float64)
    if np.isnan(arr).any() or np.isposinf(arr).any():
        raise ValueError(f"{name} must be log-probabilities (finite or -inf), got NaN or +inf")
    if prob and (arr > 1e-9).any():
        raise ValueError(f"{name} must be log-probabilities (<= 0), got a value of {float(arr.max()):.3g}")
    return arr


def check_unit_rows(x: np.ndarray, name: str, atol: float = 1e-8) -> None:
    """``x (..., d)`` must have rows of unit length (to ``atol``): a point on the sphere, named ``name``."""
    norms = np.linalg.norm(x, axis=-1)
    if not np.allclose(norms, 1.0, atol=atol):
        worst = float(np.max(np.abs(norms - 1.0)))
        raise ValueError(
            f"{name} must lie on the unit sphere (||{name}|| = 1 along the last axis); largest deviation {worst:.3g}"
        )
