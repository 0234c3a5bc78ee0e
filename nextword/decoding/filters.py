"""Logit filters for decoding: temperature, top-k, top-p (formulation paper §6.3, Eq. (5.7)).

Split out of :mod:`nextword.decoding` (which re-exports everything public here) to keep
each module short. All filters act on the last axis of a logits array ``(..., V)``,
return a new float64 array of the same shape (the input is never modified), and mark
removed tokens with ``-inf`` so that ``softmax`` renormalises over the kept set.
Validation: NaN, ``+inf`` and rows that are entirely ``-inf`` are rejected with a
``ValueError`` naming the argument.
"""

from __future__ import annotations

import numpy as np

__all__ = ["log_softmax", "apply_temperature", "top_k_filter", "top_p_filter", "filter_logits"]


# --------------------------------------------------------------------------- validation
def check_logits(logits: np.ndarray, name: str = "logits") -> np.ndarray:
    """float64 copy of a ``(..., V)`` logits array; NaN / +inf / all -inf rows rejected."""
    z = np.array(logits, dtype=np.float64)  # copy: filters never modify the input
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
    return z - (m + np.log(np.sum(np.exp(z - m), axis=-1, keepdims=True)))


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """Stable ``log softmax`` over the last axis, ``(..., V) -> (..., V)``; ``-inf`` stays ``-inf``."""
    return log_softmax_unchecked(check_logits(logits))


def apply_temperature(logits: np.ndarray, t: float) -> np.ndarray:
    """Divide logits by the decoding temperature ``tau > 0``: Eq. (5.7), Remark 6.2.

    ``softmax(z / tau)``: ``tau < 1`` sharpens, ``tau > 1`` flattens, ``tau -> 0``
    tends to the argmax (greedy, Eq. (6.4)). Shape ``(..., V)`` preserved.

    >>> apply_temperature(np.array([2.0, 0.0]), 0.5)
    array([4., 0.])
    """
    t = check_temperature(t)
    return check_logits(logits) / t


def top_k_filter(logits: np.ndarray, k: int) -> np.ndarray:
    """Keep the ``k`` largest logits per row, set the rest to ``-inf``; shape ``(..., V)``.

    Ties at the ``k``-th largest value are all kept (deterministic; the same rule as
    Hugging Face's ``TopKLogitsWarper``), so more than ``k`` entries survive only
    when there are exact ties. ``k >= V`` keeps everything.

    >>> top_k_filter(np.array([1.0, 3.0, 2.0]), 2)
    array([-inf,   3.,   2.])
    """
    return _top_k(check_logits(logits), check_count(k, "top_k", 1))


def _top_k(z: np.ndarray, k: int) -> np.ndarray:
    if k >= z.shape[-1]:
        return z
    kth = -np.partition(-z, k - 1, axis=-1)[..., k - 1 : k]  # (..., 1): k-th largest value
    return np.where(z >= kth, z, -np.inf)


def top_p_filter(logits: np.ndarray, p: float) -> np.ndarray:
    """Nucleus filter: keep the smallest set of most likely tokens with total probability >= ``p``.

    Tokens are ranked by probability ``softmax(z)``; the kept set is the shortest
    prefix of that ranking whose mass reaches ``p``. All tokens tied with the
    last kept one are kept too (ties kept deterministically). Removed entries
    become ``-inf``; ``p = 1`` keeps every token. Shape ``(..., V)`` preserved.

    >>> top_p_filter(np.log([0.5, 0.3, 0.2]), 0.7)   # 0.5 < 0.7 <= 0.5 + 0.3
    array([-0.69314718, -1.2039728 ,        -inf])
    """
    return _top_p(check_logits(logits), check_top_p(p))


def _top_p(z: np.ndarray, p: float) -> np.ndarray:
    if p == 1.0:
        return z
    probs = np.exp(log_softmax_unchecked(z))  # (..., V)
    order = np.argsort(-z, axis=-1, kind="stable")  # (..., V) most likely first
    sorted_p = np.take_along_axis(probs, order, axis=-1)  # (..., V)
    cum = np.cumsum(sorted_p, axis=-1)  # (..., V) non-decreasing
    n_keep = np.minimum(np.sum(cum < p, axis=-1, keepdims=True) + 1, z.shape[-1])  # (..., 1)
    sorted_z = np.take_along_axis(z, order, axis=-1)  # (..., V)
    threshold = np.take_along_axis(sorted_z, n_keep - 1, axis=-1)  # (..., 1) last kept logit
    return np.where(z >= threshold, z, -np.inf)


def filter_logits(
    logits: np.ndarray,
    *,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
) -> np.ndarray:
    """Temperature, then top-k, then top-p (the order Hugging Face ``generate`` uses); ``(..., V)``."""
    temperature = check_temperature(temperature)
    top_k = None if top_k is None else check_count(top_k, "top_k", 1)
    top_p = None if top_p is None else check_top_p(top_p)
    return filter_logits_unchecked(check_logits(logits), temperature, top_k, top_p)


def filter_logits_unchecked(z: np.ndarray, temperature: float, top_k: int | None, top_p: float | None) -> np.ndarray:
    z = z / temperature
    if top_k is not None:
        z = _top_k(z, top_k)
    if top_p is not None:
        z = _top_p(z, top_p)
    return z
