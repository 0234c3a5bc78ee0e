"""Softmax, causal masks and scaled dot-product attention (Chapter 6, §6.2–6.3).

Conventions
-----------
* Row vectors, as in Chapter 6: a query is ``q[i] = e[i] W^Q`` and a sequence of ``T`` vectors
  of width ``d`` is an array of shape ``(..., T, d)``; any leading axes are batch axes.
* A boolean mask is ``True`` where a query **may attend** to a key (the same meaning as
  ``torch.nn.functional.scaled_dot_product_attention``'s boolean ``attn_mask``).
* A query row whose keys are all masked gets attention weights that are all zero and an output
  of zeros (never NaN); see :func:`softmax`.

The package :mod:`nextword.attention` also exports :class:`~nextword.attention.multihead.MultiHeadAttention`
and the closed-form gradients :func:`~nextword.attention.gradients.attention_backward` (they live in
their own files so that each file can be read in one sitting).

Worked example (Chapter 6, Exercise 1, position ``i = 3`` attending to keys 1..3)::

    >>> q = np.array([[1., 0., -1., 0.]])
    >>> k = np.array([[1., 1, 0, 0], [0, 1, 1, 0], [-1, 0, 1, 1]])
    >>> w = softmax(q @ k.T / np.sqrt(4))          # scores [0.5, -0.5, -1.0]
    >>> np.round(w, 4)
    array([[0.6285, 0.2312, 0.1402]])
"""
from __future__ import annotations

import numpy as np

from nextword._validate import as_float_array, check_positive_int

__all__ = [
    "softmax",
    "log_softmax",
    "causal_mask",
    "band_mask",
    "scaled_dot_product_attention",
    "attend",
    "check_mask",
]


# --------------------------------------------------------------------------------------------
# softmax
# --------------------------------------------------------------------------------------------
def _check_logits(x: object, name: str) -> np.ndarray:
    """Float array allowing ``-inf`` (a masked entry) but not NaN or ``+inf``."""
    arr = as_float_array(x, name, finite=False)
    if np.isnan(arr).any() or np.isposinf(arr).any():
        raise ValueError(f"{name} contains NaN or +inf; only -inf (a masked entry) is allowed")
    return arr


def _shifted(x: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """``x - max(x)`` along ``axis`` with fully masked rows (all ``-inf``) shifted by 0."""
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isneginf(m), 0.0, m).astype(x.dtype, copy=False)
    return x - m, m


def softmax(x: object, axis: int = -1) -> np.ndarray:
    """Numerically stable softmax ``exp(x_j) / sum_k exp(x_k)`` along ``axis`` (Fig. 6.7).

    Shapes: ``x (..., n) -> (..., n)`` (for the default ``axis=-1``). The maximum is subtracted
    first (log-sum-exp trick), so logits of ±1e4 are fine. Entries equal to ``-inf`` are masked
    out and get probability 0; a row in which *every* entry is ``-inf`` (a query with nothing to
    attend to) returns all zeros rather than NaN. NaN or ``+inf`` input raises ``ValueError``.

    >>> softmax(np.array([0.0, np.log(3.0)]))
    array([0.25, 0.75])
    >>> softmax(np.array([-np.inf, -np.inf]))
    array([0., 0.])
    """
    arr = _check_logits(x, "x")
    if arr.ndim == 0:
        raise ValueError("x must have at least 1 dimension, got a scalar")
    z, _ = _shifted(arr, axis)
    e = np.exp(z)
    s = np.sum(e, axis=axis, keepdims=True)
    return e / np.where(s == 0.0, 1.0, s)


def log_softmax(x: object, axis: int = -1) -> np.ndarray:
    """Numerically stable ``log softmax(x)`` along ``axis``: ``x - logsumexp(x)``.

    Shapes as :func:`softmax`. Masked entries (``-inf``) give ``-inf``; a fully masked row gives
    ``-inf`` everywhere, consistent with ``exp(log_softmax(x)) == softmax(x) == 0`` (no NaN).

    >>> np.exp(log_softmax(np.array([1e4, 1e4])))
    array([0.5, 0.5])
    """
    arr = _check_logits(x, "x")
    if arr.ndim == 0:
        raise ValueError("x must have at least 1 dimension, got a scalar")
    z, _ = _shifted(arr, axis)
    s = np.sum(np.exp(z), axis=axis, keepdims=True)
    # a fully masked row has s = 0: return -inf there (not -inf - (-inf) = NaN)
    return np.where(s > 0, z - np.log(np.where(s > 0, s, 1.0)), -np.inf).astype(z.dtype, copy=False)


# --------------------------------------------------------------------------------------------
# masks
# --------------------------------------------------------------------------------------------
def causal_mask(T: int, *, strict: bool = False, num_keys: int | None = None) -> np.ndarray:
    """Boolean causal mask (Fig. 6.13): ``mask[i, j]`` is True when query ``i`` may attend to ``j``.

    Shape ``(T, T)`` (or ``(T, num_keys)``). Non-strict: ``j <= i`` (Chapter 6, a position sees
    itself and the past). ``strict=True``: ``j < i``, the margins paper's strict causal form
    ``s < t`` (its row 0 has nothing to attend to).

    With ``num_keys = Tk > T`` the queries are the *last* ``T`` positions of a length-``Tk``
    sequence (what a KV cache needs): query ``i`` sits at position ``Tk - T + i``.

    >>> causal_mask(3).astype(int)
    array([[1, 0, 0],
           [1, 1, 0],
           [1, 1, 1]])
    """
    T = check_positive_int(T, "T")
    Tk = T if num_keys is None else check_positive_int(num_keys, "num_keys")
    offset = Tk - T  # key position of query 0
    i = np.arange(T)[:, None] + offset  # (T, 1) absolute positions of the queries
    j = np.arange(Tk)[None, :]  # (1, Tk)
    return j < i if strict else j <= i


def band_mask(T: int, radius: int, *, causal: bool = False) -> np.ndarray:
    """Boolean banded (local / sparse) attention mask, formulation paper §5.3.3.

    ``mask[i, j]`` is True when ``|i - j| <= radius``; with ``causal=True`` also ``j <= i`` (a sliding
    window over the last ``radius + 1`` positions). Shape ``(T, T)``. Each row has at most
    ``2·radius + 1`` (causal: ``radius + 1``) True entries, so attention costs ``O(T·radius)`` instead
    of ``O(T²)`` inner products.

    >>> band_mask(4, 1, causal=True).astype(int)
    array([[1, 0, 0, 0],
           [1, 1, 0, 0],
           [0, 1, 1, 0],
           [0, 0, 1, 1]])
    """
    T = check_positive_int(T, "T")
    if not isinstance(radius, (int, np.integer)) or isinstance(radius, bool) or radius < 0:
        raise ValueError(f"radius must be a non-negative int, got {radius!r}")
    i = np.arange(T)[:, None]  # (T, 1) query positions
    j = np.arange(T)[None, :]  # (1, T) key positions
    band = np.abs(i - j) <= radius
    return band & (j <= i) if causal else band


# --------------------------------------------------------------------------------------------
# scaled dot-product attention
# --------------------------------------------------------------------------------------------
_BLOCK = 128  # query block size of the causal fast path


def _neg_triangle(n: int, dtype: np.dtype) -> np.ndarray:
    """``(n, n)`` additive mask: 0 on and below the diagonal, ``-inf`` above."""
    return np.where(np.tri(n, dtype=bool), 0.0, -np.inf).astype(dtype)


def attend(q: np.ndarray, k: np.ndarray, v: np.ndarray, *, causal: bool,
           mask: np.ndarray | None, scale: float, need_weights: bool
           ) -> tuple[np.ndarray, np.ndarray | None]:
    """Unchecked attention core shared by SDPA, multi-head attention and the KV cache.

    ``q (..., Tq, d)``, ``k (..., Tk, d)``, ``v (..., Tk, dv)``; ``mask`` boolean broadcastable
    to ``(..., Tq, Tk)`` (True = attend) or None. Causal alignment is bottom-right: query ``i``
    is at key position ``Tk - Tq + i``. Returns ``(out (..., Tq, dv), weights or None)``.
    """
    Tq, Tk = q.shape[-2], k.shape[-2]
    offset = Tk - Tq
    qs = q * q.dtype.type(scale)  # fold the scale into q: Tq*d multiplies instead of Tq*Tk
    kT = np.swapaxes(k, -1, -2)  # (..., d, Tk)
    if causal and mask is None and not need_weights and offset >= 0 and Tq > _BLOCK:
        # Fast path: query block [a, b) only needs keys [0, offset + b); the (b-a) x (b-a)
        # triangle at the end is the only part to mask. Roughly halves the work of T x T.
        batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
        out = np.empty(batch + (Tq, v.shape[-1]), dtype=np.result_type(qs, k, v))  # (..., Tq, dv)
        for a in range(0, Tq, _BLOCK):
            b = min(a + _BLOCK, Tq)
            kend = offset + b
            s = qs[..., a:b, :] @ kT[..., :kend]  # (..., b-a, kend)
            s[..., kend - (b - a):] += _neg_triangle(b - a, s.dtype)  # mask the diagonal block
            s -= s.max(axis=-1, keepdims=True)
            np.exp(s, out=s)
            denom = s.sum(axis=-1, keepdims=True)  # (..., b-a, 1), >= 1 (diagonal visible)
            out[..., a:b, :] = (s @ v[..., :kend, :]) / denom
        return out, None
    s = qs @ kT  # (..., Tq, Tk)
    allowed = mask
    if causal:
        cm = causal_mask(Tq, num_keys=Tk)  # (Tq, Tk), bottom-right aligned
        allowed = cm if allowed is None else (allowed & cm)
    if allowed is not None:
        s = np.where(allowed, s, -np.inf)
    z, _ = _shifted(s, -1)
    np.exp(z, out=z)
    denom = z.sum(axis=-1, keepdims=True)
    z /= np.where(denom == 0.0, 1.0, denom).astype(z.dtype, copy=False)  # fully masked -> 0
    return z @ v, z


def check_mask(mask: object, Tq: int, Tk: int) -> np.ndarray:
    """A boolean mask broadcastable to ``(..., Tq, Tk)`` (True = may attend), else a clear error."""
    m = np.asarray(mask)
    if m.dtype != np.bool_:
        raise TypeError(f"mask must be a boolean array (True = may attend), got dtype {m.dtype}")
    if m.ndim < 2 or m.shape[-2] not in (1, Tq) or m.shape[-1] not in (1, Tk):
        raise ValueError(f"mask must have shape (..., Tq, Tk) = (..., {Tq}, {Tk}) "
                         f"(or broadcastable), got {m.shape}")
    return m


def scaled_dot_product_attention(q: object, k: object, v: object, *, mask: object = None,
                                 causal: bool = False, scale: float | None = None,
                                 return_weights: bool = False
                                 ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """``softmax(q k^T * scale + mask) v`` (Chapter 6, Figs. 6.6–6.8; Vaswani et al. Eq. (1)).

    Parameters
    ----------
    q, k, v:
        ``q (..., Tq, d)``, ``k (..., Tk, d)``, ``v (..., Tk, dv)``, row vectors. Leading batch
        axes must be equal or broadcastable (as in torch). Must be finite.
    mask:
        Optional boolean array broadcastable to ``(..., Tq, Tk)``, True where attention is allowed.
    causal:
        Forbid attending to later positions (Fig. 6.13). When ``Tq < Tk`` the queries are the last
        ``Tq`` positions (bottom-right alignment, as with a KV cache); for ``Tq == Tk`` this is the
        usual lower-triangular mask and agrees with torch's ``is_causal=True``.
    scale:
        Multiplies the scores; default ``1/sqrt(d)``.
    return_weights:
        Also return the attention weights ``(..., Tq, Tk)``; each row sums to 1 (or is all zero
        when every key of that row is masked).

    Returns
    -------
    ``out (..., Tq, dv)`` or ``(out, weights)``.

    >>> q = k = v = np.eye(2)
    >>> out, w = scaled_dot_product_attention(q, k, v, causal=True, return_weights=True)
    >>> w[0].tolist()     # position 0 can only see itself
    [1.0, 0.0]
    """
    q = as_float_array(q, "q", min_ndim=2)
    k = as_float_array(k, "k", min_ndim=2)
    v = as_float_array(v, "v", min_ndim=2)
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must share the last dimension d: q {q.shape} (..., Tq, d) vs "
                         f"k {k.shape} (..., Tk, d)")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"k and v must have the same number of positions Tk: k {k.shape} "
                         f"(..., Tk, d) vs v {v.shape} (..., Tk, dv)")
    try:
        np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except ValueError:
        raise ValueError(f"batch axes of q {q.shape}, k {k.shape}, v {v.shape} are not "
                         "broadcastable") from None
    Tq, Tk, d = q.shape[-2], k.shape[-2], q.shape[-1]
    m = None if mask is None else check_mask(mask, Tq, Tk)
    if scale is None:
        scale = 1.0 / np.sqrt(d)
    elif not np.isfinite(scale):
        raise ValueError(f"scale must be finite, got {scale}")
    out, w = attend(q, k, v, causal=bool(causal), mask=m, scale=float(scale),
                     need_weights=return_weights)
    return (out, w) if return_weights else out
