"""Softmax, causal masks and scaled dot-product attention (Chapter 6, §6.2–6.3).

Conventions
-----------
* Row vectors, as in Chapter 6: a query is ``q[i] = e[i] W^Q`` and a sequence of ``T`` vectors
  of width ``d`` is an array of shape ``(..., T, d)``; any leading axes are batch axes.
* A boolean mask is ``True`` where a query **may attend** to a key (the same meaning as
  ``torch.nn.functional.scaled_dot_product_attention``'s boolean ``attn_mask``; the **opposite**
  of ``torch.nn.MultiheadAttention``'s, whose True means blocked — convert with
  :func:`nextword.attention.multihead.mask_from_torch`). A floating mask is added to the scores (an
  attention bias; ``-inf`` blocks), as torch's float ``attn_mask``.
* Causal masks align bottom-right by default (the queries are the last positions, as with a KV
  cache); ``causal="top_left"`` gives torch's ``is_causal=True``.
* A query row whose keys are all masked gets attention weights that are all zero and an output
  of zeros (never NaN; torch does the same); see :func:`softmax`.

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

import functools
import math
from typing import Any

import numpy as np

from nextword._validate import (
    as_array,
    as_float_array,
    check_axis,
    check_finite_scalar,
    check_flag,
    check_positive_int,
    check_same_dtype,
)

__all__ = [
    "softmax",
    "log_softmax",
    "causal_mask",
    "causal_alignment",
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
    m = np.max(x, axis=axis, keepdims=True, initial=-np.inf)  # an empty axis gives -inf, not an error
    m = np.where(np.isneginf(m), 0.0, m).astype(x.dtype, copy=False)
    return x - m, m


def softmax(x: object, axis: int = -1) -> np.ndarray:
    """Numerically stable softmax ``exp(x_j) / sum_k exp(x_k)`` along ``axis`` (Fig. 6.7).

    Shapes: ``x (..., n) -> (..., n)`` (for the default ``axis=-1``). The maximum is subtracted
    first (log-sum-exp trick), so logits of ±1e4 are fine. Entries equal to ``-inf`` are masked
    out and get probability 0; a row in which *every* entry is ``-inf`` (a query with nothing to
    attend to) returns all zeros rather than NaN. An empty axis gives an empty result (as torch).
    NaN or ``+inf`` input raises ``ValueError``.

    >>> softmax(np.array([0.0, np.log(3.0)]))
    array([0.25, 0.75])
    >>> softmax(np.array([-np.inf, -np.inf]))
    array([0., 0.])
    """
    arr = _check_logits(x, "x")
    if arr.ndim == 0:
        raise ValueError("x must have at least 1 dimension, got a scalar")
    axis = check_axis(axis, ndim=arr.ndim)
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
    axis = check_axis(axis, ndim=arr.ndim)
    z, _ = _shifted(arr, axis)
    s = np.sum(np.exp(z), axis=axis, keepdims=True)
    # a fully masked row has s = 0: return -inf there (not -inf - (-inf) = NaN)
    return np.where(s > 0, z - np.log(np.where(s > 0, s, 1.0)), -np.inf).astype(z.dtype, copy=False)


# --------------------------------------------------------------------------------------------
# masks
# --------------------------------------------------------------------------------------------
def causal_mask(
    T: int, *, strict: bool = False, num_keys: int | None = None, align: str = "bottom_right"
) -> np.ndarray:
    """Boolean causal mask (Fig. 6.13): ``mask[i, j]`` is True when query ``i`` may attend to ``j``.

    Shape ``(T, T)`` (or ``(T, num_keys)``). Non-strict: ``j <= i`` (Chapter 6, a position sees
    itself and the past). ``strict=True``: ``j < i``, the margins paper's strict causal form
    ``s < t`` (its row 0 has nothing to attend to).

    With ``num_keys = Tk != T`` the alignment matters. ``align="bottom_right"`` (default): the
    queries are the *last* ``T`` positions of a length-``Tk`` sequence (what a KV cache needs),
    query ``i`` sits at position ``Tk - T + i``; when ``T > Tk`` the first ``T - Tk`` rows see no
    key. ``align="top_left"`` (torch's ``is_causal=True``): query ``i`` sits at position ``i``.

    >>> causal_mask(3).astype(int)
    array([[1, 0, 0],
           [1, 1, 0],
           [1, 1, 1]])
    >>> causal_mask(2, num_keys=3, align="top_left").astype(int)
    array([[1, 0, 0],
           [1, 1, 0]])
    """
    strict = check_flag(strict, "strict")
    T = check_positive_int(T, "T", minimum=0)
    Tk = T if num_keys is None else check_positive_int(num_keys, "num_keys", minimum=0)
    if not isinstance(align, str) or causal_alignment(align) is None:
        raise ValueError(f"align must be 'bottom_right' or 'top_left', got {align!r}")
    offset = Tk - T if align == "bottom_right" else 0  # key position of query 0
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
    causal = check_flag(causal, "causal")
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
_ALIGNMENTS = ("bottom_right", "top_left")


def causal_alignment(causal: object) -> str | None:
    """The causal alignment named by a public ``causal`` argument: ``None`` (no causal mask),
    ``"bottom_right"`` (``True``, the default: what a KV cache needs) or ``"top_left"`` (torch's
    ``is_causal=True``). ``None`` is read as ``False`` (no mask). Anything else raises ``ValueError``.

    >>> causal_alignment(True), causal_alignment(False), causal_alignment("top_left")
    ('bottom_right', None, 'top_left')
    """
    if isinstance(causal, (bool, np.bool_)) or causal is None:
        return "bottom_right" if causal else None
    if isinstance(causal, str) and causal in _ALIGNMENTS:
        return causal
    raise ValueError(f"causal must be False, True (= 'bottom_right'), 'bottom_right' or 'top_left', got {causal!r}")


@functools.lru_cache(maxsize=16)
def _neg_triangle(n: int, dtype: np.dtype) -> np.ndarray:
    """``(n, n)`` additive mask: 0 on and below the diagonal, ``-inf`` above (cached, read-only)."""
    tri = np.where(np.tri(n, dtype=bool), 0.0, -np.inf).astype(dtype)
    tri.flags.writeable = False
    return tri


def _cannot_overflow(qs: np.ndarray, k: np.ndarray) -> bool:
    """Whether no score ``qs_i · k_j`` can overflow: |qs_i · k_j| ≤ ‖qs_i‖ ‖k_j‖ (Cauchy–Schwarz, and
    every partial sum of the dot product obeys the same bound), so the largest row norms bound
    every score; ``False`` for non-finite inputs. Costs two passes over q and k instead of one
    over every block of scores."""
    with np.errstate(over="ignore", invalid="ignore"):
        bound = float(np.sqrt(np.max(np.einsum("...i,...i->...", qs, qs), initial=0.0))) * float(
            np.sqrt(np.max(np.einsum("...i,...i->...", k, k), initial=0.0))
        )
    return bound < 1e-8 * float(np.finfo(qs.dtype).max)  # (an ample margin for rounding)


def combine_masks(a: np.ndarray | None, b: np.ndarray | None, dtype: np.dtype) -> np.ndarray | None:
    """One mask from two (boolean: True = may attend; float: added to the scores)."""
    if a is None or b is None:
        return a if b is None else b
    if a.dtype == np.bool_ and b.dtype == np.bool_:
        return a & b

    def additive(m: np.ndarray) -> np.ndarray:
        return np.where(m, 0.0, -np.inf).astype(dtype) if m.dtype == np.bool_ else m

    return additive(a) + additive(b)


def _pow2_exponent(x: np.ndarray) -> int:
    """``e`` with ``max|x| < 2**e`` (0 for an all-zero ``x``): ``np.ldexp(x, -e)`` is exact."""
    amax = float(np.max(np.abs(x))) if x.size else 0.0
    return int(np.frexp(amax)[1])


def attend(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    *,
    causal: object,
    mask: np.ndarray | None,
    scale: float,
    need_weights: bool,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Unchecked attention core shared by SDPA, multi-head attention and the KV cache.

    ``q (..., Tq, d)``, ``k (..., Tk, d)``, ``v (..., Tk, dv)`` of one float dtype; ``mask``
    broadcastable to ``(..., Tq, Tk)`` — boolean (True = may attend) or float (added to the
    scores, ``-inf`` = blocked) — or None. ``causal``: False/None, True/``"bottom_right"`` (query
    ``i`` is at key position ``Tk - Tq + i``) or ``"top_left"`` (query ``i`` at key position ``i``).
    A query row with no visible key gets zero weights and a zero output (as torch); ``Tq = 0``
    or ``Tk = 0`` give empty / zero results. Scores that overflow (inputs near 1e200) are
    recomputed from power-of-two-scaled ``q`` and ``k``, so the result is their limit, not NaN.
    Returns ``(out (..., Tq, dv), weights (..., Tq, Tk) or None)``.
    """
    align = causal_alignment(causal)
    Tq, Tk = q.shape[-2], k.shape[-2]
    dtype = np.result_type(q, k, v)
    if Tq == 0 or Tk == 0:  # nothing to attend with / to: empty or zero output, as torch
        batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2], () if mask is None else mask.shape[:-2])
        w = np.zeros(batch + (Tq, Tk), dtype) if need_weights else None  # (..., Tq, Tk)
        return np.zeros(batch + (Tq, v.shape[-1]), dtype), w  # (..., Tq, dv)
    offset = Tk - Tq if align == "bottom_right" else 0  # key position of query 0
    qs = q * q.dtype.type(scale)  # fold the scale into q: Tq*d multiplies instead of Tq*Tk
    kT = np.swapaxes(k, -1, -2)  # (..., d, Tk)
    if align is not None and mask is None and not need_weights and offset >= 0 and Tq > _BLOCK:
        # Fast path: query block [a, b) only needs keys [0, offset + b); the (b-a) x (b-a)
        # triangle at the end is the only part to mask. Roughly halves the work of T x T.
        batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
        out = np.empty(batch + (Tq, v.shape[-1]), dtype=dtype)  # (..., Tq, dv)
        check = not _cannot_overflow(qs, k)
        for a in range(0, Tq, _BLOCK):
            b = min(a + _BLOCK, Tq)
            kend = offset + b
            with np.errstate(over="ignore", invalid="ignore"):
                s = qs[..., a:b, :] @ kT[..., :kend]  # (..., b-a, kend)
                if check and not np.isfinite(s.sum()):  # overflow: the general path handles it
                    break
            s[..., kend - (b - a) :] += _neg_triangle(b - a, s.dtype)  # mask the diagonal block
            s -= s.max(axis=-1, keepdims=True)
            np.exp(s, out=s)
            denom = s.sum(axis=-1, keepdims=True)  # (..., b-a, 1), >= 1 (diagonal visible)
            out[..., a:b, :] = (s @ v[..., :kend, :]) / denom
        else:
            return out, None
    allowed = mask
    if align is not None:
        cm = causal_mask(Tq, num_keys=Tk, align=align)  # (Tq, Tk)
        allowed = combine_masks(allowed, cm, dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        s = qs @ kT  # (..., Tq, Tk)
        finite = np.isfinite(s.sum())
    c = 1.0  # true scores = c * s
    if not finite:  # overflow (|q|, |k| near 1e200): rescale by powers of two
        eq, ek = _pow2_exponent(q), _pow2_exponent(k)
        s = (np.ldexp(q, -eq) * q.dtype.type(scale)) @ np.swapaxes(np.ldexp(k, -ek), -1, -2)
        c = math.ldexp(1.0, eq + ek) if eq + ek < 1024 else math.inf  # inf: only row maxima survive
    if allowed is not None:
        if allowed.dtype == np.bool_:
            s = np.where(allowed, s, -np.inf)
        else:
            with np.errstate(invalid="ignore"):
                add = allowed if c == 1.0 else np.where(np.isneginf(allowed), -np.inf, allowed / c)
            s = s + add
    z, _ = _shifted(s, -1)
    if c != 1.0:
        with np.errstate(over="ignore", invalid="ignore"):
            z = np.where(z == 0, 0.0, z * c).astype(z.dtype, copy=False)
    np.exp(z, out=z)
    denom = z.sum(axis=-1, keepdims=True)
    z /= np.where(denom == 0.0, 1.0, denom).astype(z.dtype, copy=False)  # no visible key -> 0
    return z @ v, z


def check_batch_axes(shape: tuple[int, ...], batch: tuple[int, ...] | None, name: str, expected: str) -> None:
    """The leading axes ``shape`` of a mask must broadcast to ``batch`` without enlarging it."""
    if batch is None:
        return
    try:
        ok = np.broadcast_shapes(shape, batch) == tuple(batch)
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(
            f"{name} must have shape {expected} whose leading axes match (or broadcast "
            f"to) the batch axes {tuple(batch)}, got leading axes {tuple(shape)}"
        )


def _check_mask_values(m: np.ndarray, name: str, dtype: Any) -> np.ndarray:
    """Boolean masks pass; float masks (additive) must be free of NaN and ``+inf``."""
    if m.dtype == np.bool_:
        return m
    if m.dtype == object or not np.issubdtype(m.dtype, np.floating):
        raise TypeError(
            f"{name} must be boolean (True = may attend) or floating (added to the "
            f"scores, -inf = blocked), got dtype {m.dtype}"
        )
    if np.isnan(m).any() or np.isposinf(m).any():
        raise ValueError(f"{name} contains NaN or +inf; an additive mask may hold finite values and -inf (blocked)")
    return m.astype(dtype, copy=False) if dtype is not None else m


def check_mask(
    mask: object, Tq: int, Tk: int, batch: tuple[int, ...] | None = None, *, dtype: Any = None, name: str = "mask"
) -> np.ndarray:
    """Validated attention mask of shape ``(..., 1|Tq, 1|Tk)``.

    Boolean: True = may attend (torch SDPA's polarity; the opposite of
    ``nn.MultiheadAttention``'s). Floating: added to the scores (``-inf`` blocks), cast to
    ``dtype``. The leading axes must broadcast to ``batch`` (when given) without enlarging it.
    """
    m = _check_mask_values(as_array(mask, name), name, dtype)
    if m.ndim < 2 or m.shape[-2] not in (1, Tq) or m.shape[-1] not in (1, Tk):
        raise ValueError(f"{name} must have shape (..., Tq, Tk) = (..., {Tq}, {Tk}) (or broadcastable), got {m.shape}")
    check_batch_axes(m.shape[:-2], batch, name, f"(..., {Tq}, {Tk})")
    return m


def check_key_mask(key_mask: object, Tk: int, batch: tuple[int, ...] | None, *, dtype: Any = None) -> np.ndarray:
    """Validated key mask ``(..., Tk)`` returned as a mask ``(..., 1, Tk)`` over the queries.

    Boolean: True = a real key that may be attended (the **opposite** of torch's
    ``key_padding_mask``, where True = padding); floating: added to every query's scores.
    """
    m = _check_mask_values(as_array(key_mask, "key_mask"), "key_mask", dtype)
    if m.ndim < 1 or m.shape[-1] != Tk:
        raise ValueError(f"key_mask must have shape (..., Tk) = (..., {Tk}) (True = real key), got {m.shape}")
    check_batch_axes(m.shape[:-1], batch, "key_mask", f"(..., {Tk})")
    return m[..., None, :]  # (..., 1, Tk)


def scaled_dot_product_attention(
    q: object,
    k: object,
    v: object,
    *,
    mask: object = None,
    key_mask: object = None,
    causal: bool | str = False,
    scale: float | None = None,
    return_weights: bool = False,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """``softmax(q k^T * scale + mask) v`` (Chapter 6, Figs. 6.6–6.8; Vaswani et al. Eq. (1)).

    Parameters
    ----------
    q, k, v:
        ``q (..., Tq, d)``, ``k (..., Tk, d)``, ``v (..., Tk, dv)``, row vectors of one float
        dtype (float32 stays float32; mixed dtypes raise ``TypeError``, as in torch). Leading batch
        axes must be equal or broadcastable (as in torch). Must be finite. ``Tq = 0`` gives an
        empty output, ``Tk = 0`` a zero output (as torch).
    mask:
        Optional array broadcastable to ``(..., Tq, Tk)`` whose leading axes are the batch axes:
        **boolean, True = may attend** (torch ``scaled_dot_product_attention``'s polarity — the
        opposite of ``torch.nn.MultiheadAttention``'s; see
        :func:`nextword.attention.multihead.mask_from_torch`), or **floating, added to the scores**
        (an attention bias such as ALiBi; ``-inf`` blocks), like torch's float ``attn_mask``.
    key_mask:
        Optional ``(..., Tk)`` per-key mask (padding): boolean True = a real key (the opposite of
        torch's ``key_padding_mask``), or floating (added). Combined with ``mask``.
    causal:
        Forbid attending to later positions (Fig. 6.13). ``True`` or ``"bottom_right"`` (default
        alignment): the queries are the *last* ``Tq`` of the ``Tk`` positions, query ``i`` sees keys
        ``j <= Tk - Tq + i`` (what a KV cache needs; torch's ``causal_lower_right``).
        ``"top_left"``: query ``i`` sees keys ``j <= i`` (torch's ``is_causal=True``). Both agree
        when ``Tq == Tk``.
    scale:
        Multiplies the scores; default ``1/sqrt(d)``.
    return_weights:
        Also return the attention weights ``(..., Tq, Tk)``.

    A query row with no visible key (every key masked, or ``Tq > Tk`` with bottom-right
    alignment) gets all-zero weights and a zero output, never NaN — torch returns the same.

    Returns
    -------
    ``out (..., Tq, dv)`` or ``(out, weights)``.

    >>> q = k = v = np.eye(2)
    >>> out, w = scaled_dot_product_attention(q, k, v, causal=True, return_weights=True)
    >>> w[0].tolist()     # position 0 can only see itself
    [1.0, 0.0]
    """
    return_weights = check_flag(return_weights, "return_weights")
    q = as_float_array(q, "q", min_ndim=2)
    k = as_float_array(k, "k", min_ndim=2)
    v = as_float_array(v, "v", min_ndim=2)
    dtype = check_same_dtype(q=q, k=k, v=v)
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"q and k must share the last dimension d: q {q.shape} (..., Tq, d) vs k {k.shape} (..., Tk, d)"
        )
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"k and v must have the same number of positions Tk: k {k.shape} (..., Tk, d) vs v {v.shape} (..., Tk, dv)"
        )
    try:
        batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except ValueError:
        raise ValueError(f"batch axes of q {q.shape}, k {k.shape}, v {v.shape} are not broadcastable") from None
    Tq, Tk, d = q.shape[-2], k.shape[-2], q.shape[-1]
    align = causal_alignment(causal)
    m = None if mask is None else check_mask(mask, Tq, Tk, batch, dtype=dtype)
    if key_mask is not None:
        m = combine_masks(m, check_key_mask(key_mask, Tk, batch, dtype=dtype), dtype)
    if scale is None:
        if d == 0:  # 1/sqrt(0): every score would be 0 * inf; torch gives NaN
            raise ValueError(
                f"q and k have width d = 0 (shapes {q.shape}, {k.shape}): the default scale 1/sqrt(d) is "
                "undefined; give them a non-empty last axis or pass scale="
            )
        scale = 1.0 / np.sqrt(d)
    else:
        scale = check_finite_scalar(scale, "scale")
    out, w = attend(q, k, v, causal=align, mask=m, scale=float(scale), need_weights=return_weights)
    return (out, w) if return_weights else out
