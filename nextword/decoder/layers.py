"""Normalisation, feed-forward and the transformer block (Chapter 6, §6.6, Fig. 6.29).

Row-vector convention; activations ``(..., T, d_model)``; every norm acts on the last axis.

* :func:`layer_norm` — ``(x − mean) / sqrt(var + eps) * weight + bias`` (biased variance, as torch).
* :func:`rms_norm` — ``x / sqrt(mean(x²) + eps) * weight``: the practical RMSNorm, whose output
  lies (for ``eps → 0``, unit weight) on the sphere of radius ``sqrt(d)`` (Liao, Eq. (7));
  ``unit=True`` gives the unit-sphere variant the papers analyse, exactly ``1/sqrt(d)`` times it.
* :func:`feed_forward` — ``act(x W1 + b1) W2 + b2`` with GELU (exact or tanh) or ReLU.
* :class:`TransformerBlock` — attention + FFN with residuals, either
  post-norm (Chapter 6's formula ``h' = LN(u + FFN(u))``, ``u = LN(h + MHA(h))``) or
  pre-norm (margins paper Eqs. (41)–(42): ``u = h + MHA(LN(h))``, ``h' = u + MLP(LN(u))``).

The decoder-only language model :class:`~nextword.decoder.lm.DecoderLM` and its
:class:`~nextword.decoder.lm.DecoderConfig` live in :mod:`nextword.decoder.lm`; the package
:mod:`nextword.decoder` exports both modules' names.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
from scipy.special import erf

from nextword._validate import as_float_array, check_finite_scalar, check_flag, check_positive_int, check_rng
from nextword.attention.kv_cache import LayerKVCache
from nextword.attention.multihead import MultiHeadAttention

__all__ = ["layer_norm", "rms_norm", "gelu", "relu", "feed_forward", "TransformerBlock"]

Activation = Literal["gelu", "gelu_tanh", "relu"]


def _as_dtype_of_x(p: object, name: str, dtype: np.dtype, **kw: Any) -> np.ndarray:
    """``p`` as a float array of ``x``'s dtype: a float array of another dtype is refused
    (``TypeError``, as torch; silent promotion would turn a float32 path into float64), lists
    and integer arrays are converted."""
    raw = np.asarray(p)
    if isinstance(p, np.ndarray) and np.issubdtype(raw.dtype, np.floating) and raw.dtype != dtype:
        raise TypeError(
            f"{name} has dtype {raw.dtype} but must match {dtype} (x or the parameters); "
            "convert with .astype(...) first"
        )
    return as_float_array(raw, name, **kw).astype(dtype, copy=False)


def _check_vec(p: object, name: str, d: int, dtype: np.dtype) -> np.ndarray | None:
    if p is None:
        return None
    arr = _as_dtype_of_x(p, name, dtype, ndim=1)
    if arr.shape != (d,):
        raise ValueError(f"{name} must have shape (d,) = ({d},) to match x's last axis, got {arr.shape}")
    return arr


def _check_eps(eps: object) -> float:
    return check_finite_scalar(eps, "eps", nonnegative=True)


def _check_width(x: np.ndarray) -> np.ndarray:
    """``x`` if its last axis (the normalised width ``d``) is non-empty; a row of width 0 has no
    mean or variance, so it is a ``ValueError`` naming ``x``."""
    if x.shape[-1] == 0:
        raise ValueError(f"x must have a non-empty last axis (the width d to normalise), got shape {x.shape}")
    return x


def _row_scale(x: np.ndarray) -> np.ndarray:
    """Per-row power of two ``s >= max|x|`` (1 for an all-zero row), shape ``(..., 1)``.

    Dividing by ``s`` is exact, so ``x / s`` has entries in ``[-1, 1]``: squares neither
    overflow (``x`` near 1e200) nor underflow (near 1e-200).
    """
    amax = np.max(np.abs(x), axis=-1, keepdims=True)  # (..., 1)
    _, e = np.frexp(amax)  # amax = m 2**e with m in [0.5, 1); e = 0 for 0
    return np.ldexp(np.ones_like(amax), e)  # (..., 1)


def layer_norm(x: object, weight: object = None, bias: object = None, *, eps: float = 1e-5) -> np.ndarray:
    """Layer normalisation over the last axis of ``x (..., d)`` (Ba et al.; Chapter 6, §6.6).

    ``(x − μ) / sqrt(σ² + eps) * weight + bias`` with ``μ, σ²`` the mean and biased variance of
    each row. ``weight``/``bias`` are ``(d,)`` or None (1 and 0). ``eps >= 0`` (finite) — the
    default ``1e-5`` is ``torch.nn.LayerNorm``'s. Each row is first divided by a power of two
    ``>= max|x|`` (exact), so rows near the float limits (``[1e200, -1e200]``) normalise correctly
    instead of overflowing; a constant row with ``eps = 0`` gives 0 (the ``eps → 0`` limit; torch
    gives NaN). Float32 input stays float32.

    >>> layer_norm(np.array([1.0, 3.0]), eps=0.0)
    array([-1.,  1.])
    >>> layer_norm(np.array([1e200, -1e200]), eps=0.0)
    array([ 1., -1.])
    """
    x = _check_width(as_float_array(x, "x", min_ndim=1))
    eps = _check_eps(eps)
    d = x.shape[-1]
    w, b = _check_vec(weight, "weight", d, x.dtype), _check_vec(bias, "bias", d, x.dtype)
    s = _row_scale(x)  # (..., 1)
    xs = x / s  # exact
    mu = xs.mean(axis=-1, keepdims=True)
    xc = xs - mu
    with np.errstate(over="ignore", under="ignore", divide="ignore"):
        var = np.mean(xc * xc, axis=-1, keepdims=True) + eps / s / s  # (σ² + eps) / s², exact scaling
    y = xc / np.where(var == 0, 1.0, np.sqrt(var)).astype(x.dtype, copy=False)
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y


def rms_norm(x: object, weight: object = None, *, eps: float | None = 1e-6, unit: bool = False) -> np.ndarray:
    """RMS normalisation over the last axis of ``x (..., d)``.

    ``unit=False`` (practice, ``torch.nn.RMSNorm``): ``x / sqrt(mean(x²) + eps) * weight`` — the
    radius-``sqrt(d)`` sphere of Liao's Eq. (7) as ``eps → 0``.
    ``unit=True`` (the papers' unit sphere ``S^{d−1}``): ``x / sqrt(‖x‖² + d·eps) * weight``,
    i.e. the practical value divided by ``sqrt(d)``.

    ``eps``: finite and ``>= 0``. The default ``1e-6`` is LLaMA's (Hugging Face
    ``LlamaRMSNorm``); it is **not** ``torch.nn.RMSNorm``'s default ``eps=None``, which means
    ``torch.finfo(x.dtype).eps`` — pass ``eps=None`` here for that. Rows are rescaled by a power
    of two first (exact), so inputs near the float limits do not overflow; an all-zero row with
    ``eps = 0`` gives 0. Float32 input stays float32.

    >>> round(float(np.linalg.norm(rms_norm(np.array([3.0, 4.0]), eps=0.0))) ** 2, 12)  # radius sqrt(2)
    2.0
    >>> rms_norm(np.array([3.0, 4.0]), eps=0.0, unit=True)
    array([0.6, 0.8])
    """
    unit = check_flag(unit, "unit")
    x = _check_width(as_float_array(x, "x", min_ndim=1))
    eps = float(np.finfo(x.dtype).eps) if eps is None else _check_eps(eps)
    d = x.shape[-1]
    w = _check_vec(weight, "weight", d, x.dtype)
    s = _row_scale(x)  # (..., 1)
    xs = x / s  # exact
    with np.errstate(over="ignore", under="ignore", divide="ignore"):
        ms = np.mean(xs * xs, axis=-1, keepdims=True) + eps / s / s  # (mean(x²) + eps) / s²
    y = xs / np.where(ms == 0, 1.0, np.sqrt(ms)).astype(x.dtype, copy=False)
    if unit:
        y = y / math.sqrt(d)  # a Python float keeps float32 input float32
    return y if w is None else y * w


def _gelu(x: np.ndarray, approximate: bool = False) -> np.ndarray:
    if approximate:
        return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))
    return 0.5 * x * (1.0 + erf(x * (1.0 / math.sqrt(2.0))))  # Python floats: float32 stays float32


def _relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0)


def gelu(x: object, *, approximate: bool = False) -> np.ndarray:
    """GELU ``x Φ(x)`` (exact, via erf) or its tanh approximation (GPT-2), elementwise on any
    shape; ``x`` is a finite real array (lists accepted; strings, NaN/inf refused by name)."""
    return _gelu(as_float_array(x, "x"), check_flag(approximate, "approximate"))


def relu(x: object) -> np.ndarray:
    """``max(x, 0)`` elementwise; ``x`` a finite real array (lists accepted, strings refused)."""
    return _relu(as_float_array(x, "x"))


# the blocks call these on already-validated arrays
_ACTIVATIONS = {"gelu": _gelu, "gelu_tanh": lambda x: _gelu(x, approximate=True), "relu": _relu}


def feed_forward(
    x: object, W1: object, b1: object | None, W2: object, b2: object | None, *, activation: Activation = "gelu"
) -> np.ndarray:
    """Position-wise FFN ``act(x W1 + b1) W2 + b2`` (Chapter 6, §6.6; ``d_ff`` typically ``4 d``).

    ``x (..., T, d)``, ``W1 (d, d_ff)``, ``b1 (d_ff,)``, ``W2 (d_ff, d)``, ``b2 (d,)``; a bias that is
    ``None`` is left out (a linear map without that bias, like torch's ``nn.Linear(bias=False)``:
    the result equals the one with a zero bias). ``activation`` is ``"gelu"`` (exact, torch's
    default), ``"gelu_tanh"`` or ``"relu"``.
    """
    if not isinstance(activation, str) or activation not in _ACTIVATIONS:
        raise ValueError(f"activation must be one of {sorted(_ACTIVATIONS)}, got {activation!r}")
    x = as_float_array(x, "x", min_ndim=1)
    W1 = _as_dtype_of_x(W1, "W1", x.dtype, ndim=2)
    W2 = _as_dtype_of_x(W2, "W2", x.dtype, ndim=2)
    d = x.shape[-1]
    if W1.shape[0] != d or W2.shape != (W1.shape[1], d):
        raise ValueError(f"need W1 (d, d_ff) and W2 (d_ff, d) with d={d}, got {W1.shape} and {W2.shape}")
    h = x @ W1  # (..., T, d_ff)
    if b1 is not None:
        h = h + _check_vec(b1, "b1", W1.shape[1], h.dtype)
    y = _ACTIVATIONS[activation](h) @ W2  # (..., T, d)
    if b2 is not None:
        y = y + _check_vec(b2, "b2", d, y.dtype)
    return y


class TransformerBlock:
    """One decoder block: multi-head self-attention and a feed-forward network (Fig. 6.29).

    Flags (they exist for the ablations of Chapter 6, Exercise 12):

    * ``pre_norm=False`` — Chapter 6: ``u = N(h + MHA(h))``, ``h' = N(u + FFN(u))``;
      ``pre_norm=True`` — margins paper Eqs. (41)–(42): ``u = h + MHA(N(h))``, ``h' = u + FFN(N(u))``.
    * ``norm`` — ``"layer"`` (:func:`layer_norm`) or ``"rms"`` (:func:`rms_norm`); ``"none"`` drops it.
    * ``residual=False`` drops the ``h +`` / ``u +`` skip terms.
    * ``causal=False`` drops the causal mask.

    Parameters: ``attn`` (a :class:`~nextword.attention.multihead.MultiHeadAttention`), norm weights/biases
    ``norm1_weight, norm1_bias, norm2_weight, norm2_bias`` (biases only for ``"layer"``), and FFN
    ``W1 (d, d_ff), b1, W2 (d_ff, d), b2``; see :meth:`parameters`.
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        d_ff: int,
        *,
        rng: np.random.Generator | None = None,
        norm: Literal["layer", "rms", "none"] = "layer",
        pre_norm: bool = True,
        causal: bool = True,
        residual: bool = True,
        activation: Activation = "gelu",
        rope_base: float | None = None,
        eps: float = 1e-5,
        dtype: Any = np.float64,
    ) -> None:
        if not isinstance(norm, str) or norm not in ("layer", "rms", "none"):
            raise ValueError(f"norm must be 'layer', 'rms' or 'none', got {norm!r}")
        if not isinstance(activation, str) or activation not in _ACTIVATIONS:
            raise ValueError(f"activation must be one of {sorted(_ACTIVATIONS)}, got {activation!r}")
        rng = check_rng(rng)
        d = check_positive_int(d_model, "d_model")
        d_ff = check_positive_int(d_ff, "d_ff")
        for flag, value in (("pre_norm", pre_norm), ("causal", causal), ("residual", residual)):
            check_flag(value, flag)
        self.norm, self.pre_norm, self.causal, self.residual = norm, bool(pre_norm), bool(causal), bool(residual)
        self.activation, self.eps = activation, _check_eps(eps)
        self.attn = MultiHeadAttention(d, num_heads, rng=rng, dtype=dtype, rope_base=rope_base)
        self.norm1_weight = np.ones(d, dtype)
        self.norm2_weight = np.ones(d, dtype)
        self.norm1_bias = np.zeros(d, dtype) if norm == "layer" else None
        self.norm2_bias = np.zeros(d, dtype) if norm == "layer" else None
        self.W1 = (rng.standard_normal((d, d_ff)) / np.sqrt(d)).astype(dtype)
        self.b1 = np.zeros(d_ff, dtype)
        self.W2 = (rng.standard_normal((d_ff, d)) / np.sqrt(d_ff)).astype(dtype)
        self.b2 = np.zeros(d, dtype)

    def parameters(self) -> dict[str, np.ndarray]:
        """Named parameter arrays (live views: editing one edits the block)."""
        p = {f"attn.{k}": v for k, v in self.attn.parameters().items()}
        p["norm1.weight"] = self.norm1_weight
        if self.norm1_bias is not None:
            p["norm1.bias"] = self.norm1_bias
        p["norm2.weight"] = self.norm2_weight
        if self.norm2_bias is not None:
            p["norm2.bias"] = self.norm2_bias
        p.update({"ffn.W1": self.W1, "ffn.b1": self.b1, "ffn.W2": self.W2, "ffn.b2": self.b2})
        return p

    def _norm(self, x: np.ndarray, which: int) -> np.ndarray:
        if self.norm == "none":
            return x
        w = self.norm1_weight if which == 1 else self.norm2_weight
        if self.norm == "rms":
            return rms_norm(x, w, eps=self.eps)
        return layer_norm(x, w, self.norm1_bias if which == 1 else self.norm2_bias, eps=self.eps)

    def __call__(
        self,
        X: object,
        *,
        cache: LayerKVCache | None = None,
        positions: object = None,
        head_mask: object = None,
        return_weights: bool = False,
    ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """``X (..., T, d_model)`` → ``(..., T, d_model)`` (and per-head weights ``(..., h, T, T_keys)``).

        A float ``X`` must have the block's dtype (``TypeError`` otherwise, as torch); lists and
        integer arrays are converted."""
        X = _as_dtype_of_x(X, "X", self.attn.dtype, min_ndim=2)
        if X.shape[-1] != self.attn.d_model:  # checked here, else the norm would blame its weight
            raise ValueError(f"X must have shape (..., T, d_model) with d_model={self.attn.d_model}, got {X.shape}")

        def mha(z: np.ndarray) -> Any:
            return self.attn(z, self.causal, return_weights, positions=positions, cache=cache, head_mask=head_mask)

        def ffn(z: np.ndarray) -> np.ndarray:
            return feed_forward(z, self.W1, self.b1, self.W2, self.b2, activation=self.activation)

        def add(skip: np.ndarray, f: np.ndarray) -> np.ndarray:  # residual connection (or not)
            return skip + f if self.residual else f

        if self.pre_norm:  # Eqs. (41)-(42)
            a = mha(self._norm(X, 1))
            a, w = a if return_weights else (a, None)
            u = add(X, a)
            out = add(u, ffn(self._norm(u, 2)))
        else:  # Chapter 6: LN(u + FFN(u)), u = LN(h + MHA(h))
            a = mha(X)
            a, w = a if return_weights else (a, None)
            u = self._norm(add(X, a), 1)
            out = self._norm(add(u, ffn(u)), 2)
        return (out, w) if return_weights else out
