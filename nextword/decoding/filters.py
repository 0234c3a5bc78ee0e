"""Logit filters for decoding: temperature, top-k, top-p (formulation paper §6.3, Eq. (5.7)).

Split out of :mod:`nextword.decoding` (which re-exports everything public here) to keep
each module short. All filters act on the last axis of a logits array ``(..., V)``,
return a new array of the same shape and float dtype (float32 stays float32; anything
else becomes float64; the input is never modified), and mark removed tokens with
``-inf`` so that ``softmax`` renormalises over the kept set.
Validation: NaN, ``+inf`` and rows that are entirely ``-inf`` are rejected with a
``ValueError`` naming the argument.
"""

from __future__ import annotations

import numpy as np

__all__ = ["log_softmax", "apply_temperature", "top_k_filter", "top_p_filter", "filter_logits"]


# --------------------------------------------------------------------------- validation
def check_logits(logits: np.ndarray, name: str = "logits") -> np.ndarray:
    """float copy (float32 kept, else float64) of a ``(..., V)`` logits array; NaN / +inf /
    all -inf rows rejected."""
    try:
        raw = np.asarray(logits)
    except ValueError:  # ragged nested lists
        raise TypeError(f"{name} must be a rectangular real numeric array (..., V), got ragged nested lists") from None
    if (
        raw.dtype == object
        or not (np.issubdtype(raw.dtype, np.number) or raw.dtype == np.bool_)
        or np.issubdtype(raw.dtype, np.complexfloating)
    ):
        raise TypeError(f"{name} must be a real numeric array (..., V), got dtype {raw.dtype}")
    z = np.array(raw, dtype=np.float32 if raw.dtype == np.float32 else np.float64)  # copy
    if z.ndim == 0 or z.shape[-1] == 0:
        raise ValueError(f"{name} must have shape (..., V) with V >= 1, got shape {z.shape}")
    if np.isnan(z).any():
        raise ValueError(f"{name} contains NaN")
    if np.isposinf(z).any():
        raise ValueError(f"{name} contains +inf")
    if np.isneginf(z).all(axis=-1).any():
        raise ValueError(f"{name} has a row where every entry is -inf (no token can be chosen)")
    return z


def check_count(x: int, name: str, minimum: int) -> int:
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {x!r}")
    if x < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {x}")
    return int(x)


def check_temperature(t: float) -> float:
    if isinstance(t, (bool, np.bool_)) or not isinstance(t, (int, float, np.floating, np.integer)):
        raise TypeError(f"temperature must be a real number, got {t!r}")
    if not np.isfinite(t) or t <= 0:
        raise ValueError(f"temperature must be finite and > 0, got {t!r}")
    return float(t)


def check_min_tokens(n: int) -> int:
    return check_count(n, "min_tokens_to_keep", 1)


def check_top_p(p: float) -> float:
    if isinstance(p, (bool, np.bool_)) or not isinstance(p, (int, float, np.floating, np.integer)):
        raise TypeError(f"top_p must be a real number, got {p!r}")
    if not (0.0 < p <= 1.0):
        raise ValueError(f"top_p must satisfy 0 < top_p <= 1, got {p!r}")
    return float(p)


# ------------------------------------------------------------------------------ filters
def log_softmax_unchecked(z: np.ndarray) -> np.ndarray:
    """Unchecked kernel of :func:`log_softmax` (``z`` already validated)."""
    m = np.max(z, axis=-1, keepdims=True)  # (..., 1), finite by check_logits
    zm = z - m  # (..., V) <= 0: subtract before adding, so |z| near the float limit is fine
    return zm - np.log(np.sum(np.exp(zm), axis=-1, keepdims=True))


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """Stable ``log softmax`` over the last axis, ``(..., V) -> (..., V)``; ``-inf`` stays ``-inf``."""
    return log_softmax_unchecked(check_logits(logits))


def apply_temperature(logits: np.ndarray, t: float) -> np.ndarray:
    """Divide logits by the decoding temperature ``tau > 0``: Eq. (5.7), Remark 6.2.

    ``softmax(z / tau)``: ``tau < 1`` sharpens, ``tau > 1`` flattens, ``tau -> 0``
    tends to the argmax (greedy, Eq. (6.4)). Shape ``(..., V)`` preserved. Where
    ``z / tau`` would overflow (``tau`` near the smallest float), that row is shifted
    by its maximum first — ``softmax`` is unchanged — so the result is finite or
    ``-inf`` (the argmax limit), never ``+inf`` or NaN.

    >>> apply_temperature(np.array([2.0, 0.0]), 0.5)
    array([4., 0.])
    >>> apply_temperature(np.array([1.0, 2.0]), 1e-308).tolist()   # 2e308 would overflow
    [-1e+308, 0.0]
    """
    t = check_temperature(t)
    return _temper(check_logits(logits), t)


def _temper(z: np.ndarray, t: float) -> np.ndarray:
    """``z / t`` in ``z``'s dtype, with rows that would overflow shifted by their maximum first."""
    with np.errstate(over="ignore", invalid="ignore"):
        out = (z / t).astype(z.dtype)  # (..., V), float64 division then back to z's dtype
        bad = (~np.isfinite(out) & np.isfinite(z)).any(axis=-1)  # (...,) rows that overflowed
        if bad.any():
            zb = z[bad].astype(np.float64)  # (n_bad, V)
            out[bad] = ((zb - zb.max(axis=-1, keepdims=True)) / t).astype(z.dtype)  # max -> 0
    return out


def top_k_filter(logits: np.ndarray, k: int) -> np.ndarray:
    """Keep the ``k`` largest logits per row, set the rest to ``-inf``; shape ``(..., V)``.

    Ties at the ``k``-th largest value are all kept (deterministic; the same rule as
    Hugging Face's ``TopKLogitsWarper``), so more than ``k`` entries survive only
    when there are exact ties. ``k >= V`` keeps everything.

    >>> top_k_filter(np.array([1.0, 3.0, 2.0]), 2)
    array([-inf,   3.,   2.])
    """
    return _top_k(check_logits(logits), check_count(k, "top_k", 1))


def _top_k(z: np.ndarray, k: int) -> np.ndarray:  # kept in z's dtype
    if k >= z.shape[-1]:
        return z
    kth = -np.partition(-z, k - 1, axis=-1)[..., k - 1 : k]  # (..., 1): k-th largest value
    return np.where(z >= kth, z, -np.inf).astype(z.dtype, copy=False)


def top_p_filter(logits: np.ndarray, p: float, *, min_tokens_to_keep: int = 1) -> np.ndarray:
    """Nucleus filter: keep the smallest set of most likely tokens with total probability >= ``p``.

    Tokens are ranked by probability ``softmax(z)``; the kept set is the shortest
    prefix of that ranking whose mass reaches ``p`` — *up to round-off*: a prefix whose
    mass falls short of ``p`` by no more than a few ulps (``16 eps p + V eps_64``, with
    ``eps`` of the input's dtype) counts as reaching it, so ``[0.7, 0.2, 0.1]`` with
    ``p = 0.7`` keeps one token. At least ``min_tokens_to_keep`` tokens are kept (as in
    Hugging Face's ``TopPLogitsWarper``). All tokens tied with the last kept one are kept
    too (ties kept deterministically). Removed entries become ``-inf``; ``p = 1`` keeps
    every token. Shape ``(..., V)`` preserved.

    >>> top_p_filter(np.log([0.5, 0.3, 0.2]), 0.7)   # 0.5 < 0.7 <= 0.5 + 0.3
    array([-0.69314718, -1.2039728 ,        -inf])
    >>> np.isfinite(top_p_filter(np.log([0.7, 0.2, 0.1]), 0.7)).tolist()
    [True, False, False]
    """
    return _top_p(check_logits(logits), check_top_p(p), check_min_tokens(min_tokens_to_keep))


def _top_p(z: np.ndarray, p: float, min_keep: int = 1) -> np.ndarray:
    if p == 1.0:
        return z
    V = z.shape[-1]
    probs = np.exp(log_softmax_unchecked(z.astype(np.float64)))  # (..., V) in float64 whatever z's dtype
    order = np.argsort(-z, axis=-1, kind="stable")  # (..., V) most likely first
    sorted_p = np.take_along_axis(probs, order, axis=-1)  # (..., V)
    cum = np.cumsum(sorted_p, axis=-1)  # (..., V) non-decreasing
    tol = 16 * np.finfo(z.dtype).eps * p + V * np.finfo(np.float64).eps  # round-off of the mass
    n_keep = np.sum(cum < p - tol, axis=-1, keepdims=True) + 1  # (..., 1)
    n_keep = np.minimum(np.maximum(n_keep, min_keep), V)  # (..., 1)
    sorted_z = np.take_along_axis(z, order, axis=-1)  # (..., V)
    threshold = np.take_along_axis(sorted_z, n_keep - 1, axis=-1)  # (..., 1) last kept logit
    return np.where(z >= threshold, z, -np.inf).astype(z.dtype, copy=False)


def filter_logits(
    logits: np.ndarray,
    *,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    min_tokens_to_keep: int = 1,
) -> np.ndarray:
    """Temperature, then top-k, then top-p (the order Hugging Face ``generate`` uses); ``(..., V)``.

    ``min_tokens_to_keep`` applies to both filters (top-k keeps ``max(top_k, min_tokens_to_keep)``,
    as Hugging Face's warpers do).
    """
    temperature = check_temperature(temperature)
    top_k = None if top_k is None else check_count(top_k, "top_k", 1)
    top_p = None if top_p is None else check_top_p(top_p)
    return filter_logits_unchecked(
        check_logits(logits), temperature, top_k, top_p, check_min_tokens(min_tokens_to_keep)
    )


def filter_logits_unchecked(
    z: np.ndarray, temperature: float, top_k: int | None, top_p: float | None, min_keep: int = 1
) -> np.ndarray:
    z = _temper(z, temperature)
    if top_k is not None:
        z = _top_k(z, max(top_k, min_keep))
    if top_p is not None:
        z = _top_p(z, top_p, min_keep)
    return z
