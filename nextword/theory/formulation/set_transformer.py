"""The attention block and the set transformer of the formulation paper (§5.1–5.2, Appendix B).

Baptista, Stuart and Tran define next-token prediction through a *set transformer*

    T(h_{1:m-1}) = P ∘ A_K ∘ … ∘ A_1 (h_{1:m-1}),                       (5.6)
    q_m(· | h_{1:m-1}) = softmax(B T(h_{1:m-1}) / τ),                    (5.7)

whose blocks ``A`` are (5.3a–d): attention with its residual (5.2), a normalisation ``N``, a
residual feed-forward network ``NN`` and ``N`` again. There are no positions and no causal mask,
so the blocks are permutation *equivariant* and the pooled ``T`` is permutation *invariant*;
Appendix B reads the same maps as acting on the empirical measure ``(1/ℓ) Σ_k δ_{h_k}`` (B.1).

Conventions. The paper writes column vectors (``Q h_k``); arrays here hold a sequence as rows,
``h`` of shape ``(..., m, d_e)``, so ``Q h_k`` is row ``k`` of ``h @ Q.T``. Parameter shapes follow
the paper: ``Q, K (c, d_e)``, ``V (d_e, d_e)``, ``W1 (c', d_e)``, ``b1 (c',)``, ``W2 (d_e, c')``,
``b2 (d_e,)``. The attention scores are the raw inner products ``⟨Q h_k, K h_l⟩`` of (5.2) — no
``1/sqrt(c)`` (fold it into ``Q`` if wanted).

Measures. Every map takes optional ``weights (..., m)`` (positive, any scale): the sequence is then
read as the weighted empirical measure ``Σ_l w_l δ_{h_l} / Σ w`` and the attention average is the
expectation under the reweighted law ``π(u; s) ∝ exp(⟨Q s, K u⟩) p(u)`` of (B.4a). Duplicating a
token is the same as doubling its weight, which is why attention and mean/max pooling cannot
count repetitions (see :func:`empirical_measure`).

>>> rng = np.random.default_rng(0)
>>> p = BlockParams.random(4, 3, 8, rng)
>>> h = rng.standard_normal((5, 4))
>>> out = attention_block(h, p)
>>> bool(np.allclose(attention_block(h[::-1], p), out[::-1]))       # equivariant
True
>>> bool(np.allclose(attention_block(np.concatenate([h, h]), p)[:5], out))   # duplicates
True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from nextword._validate import as_float_array, check_finite_scalar, check_flag, check_no_overflow, check_positive_int
from nextword.attention.core import causal_mask, log_softmax, softmax
from nextword.decoder import feed_forward, layer_norm, rms_norm

__all__ = [
    "AttentionParams",
    "BlockParams",
    "att",
    "attention_block",
    "mean_pool",
    "max_pool",
    "soft_max_pool",
    "set_transformer",
    "next_token_distribution",
    "empirical_measure",
]

Norm = Literal["layer", "unit", "none"]
Pool = Literal["mean", "max"]


def _mat(x: object, name: str, shape: tuple[int | None, int | None]) -> np.ndarray:
    a = as_float_array(x, name, ndim=2)
    for got, want in zip(a.shape, shape):
        if want is not None and got != want:
            raise ValueError(f"{name} must have shape {tuple('?' if s is None else s for s in shape)}, got {a.shape}")
    return a


@dataclass(frozen=True)
class AttentionParams:
    """``Q, K (c, d_e)`` and ``V (d_e, d_e)`` of the attention map (5.2)."""

    Q: np.ndarray
    K: np.ndarray
    V: np.ndarray

    def __post_init__(self) -> None:
        Q = _mat(self.Q, "Q", (None, None))
        K = _mat(self.K, "K", Q.shape)
        d = Q.shape[1]
        V = _mat(self.V, "V", (d, d))
        object.__setattr__(self, "Q", Q)
        object.__setattr__(self, "K", K)
        object.__setattr__(self, "V", V)

    @property
    def d_e(self) -> int:
        return int(self.Q.shape[1])


@dataclass(frozen=True)
class BlockParams:
    """Parameters of one attention block (5.3a–d).

    ``att`` (:class:`AttentionParams`), the network ``NN(x) = W2 act(W1 x + b1) + b2`` of Example 5.3
    (``W1 (c', d_e)``, ``b1 (c',)``, ``W2 (d_e, c')``, ``b2 (d_e,)``), the normalisation ``norm``
    (``"layer"``: mean/variance layer norm (5.4) with ``D = I, b = 0``; ``"unit"``: ``u / |u|_2`` as
    in (5.5); ``"none"``), ``activation`` (``"relu"`` or ``"gelu"``) and ``eps`` of the layer norm.
    """

    att: AttentionParams
    W1: np.ndarray
    b1: np.ndarray
    W2: np.ndarray
    b2: np.ndarray
    norm: Norm = "layer"
    activation: Literal["relu", "gelu"] = "relu"
    eps: float = 1e-5

    def __post_init__(self) -> None:
        _check_type(self.att, "att", AttentionParams)
        d = self.att.d_e
        W1 = _mat(self.W1, "W1", (None, d))
        W2 = _mat(self.W2, "W2", (d, W1.shape[0]))
        b1 = as_float_array(self.b1, "b1", ndim=1)
        b2 = as_float_array(self.b2, "b2", ndim=1)
        if b1.shape != (W1.shape[0],) or b2.shape != (d,):
            raise ValueError(f"b1 must have shape ({W1.shape[0]},) and b2 ({d},), got {b1.shape} and {b2.shape}")
        if not isinstance(self.norm, str) or self.norm not in ("layer", "unit", "none"):
            raise ValueError(f"norm must be 'layer', 'unit' or 'none', got {self.norm!r}")
        if not isinstance(self.activation, str) or self.activation not in ("relu", "gelu"):
            raise ValueError(f"activation must be 'relu' or 'gelu', got {self.activation!r}")
        check_finite_scalar(self.eps, "eps", nonnegative=True)
        for name, val in (("W1", W1), ("W2", W2), ("b1", b1), ("b2", b2)):
            object.__setattr__(self, name, val)

    @classmethod
    def random(
        cls, d_e: int, c: int, c_ff: int, rng: np.random.Generator, *, scale: float = 1.0, norm: Norm = "layer"
    ) -> BlockParams:
        """Gaussian parameters with entries ``N(0, scale²/fan_in)`` (biases ``N(0, 0.01)``)."""
        d_e, c, c_ff = (check_positive_int(v, n) for v, n in ((d_e, "d_e"), (c, "c"), (c_ff, "c_ff")))
        g = lambda *s: scale * rng.standard_normal(s) / np.sqrt(s[-1])  # noqa: E731
        att_p = AttentionParams(g(c, d_e), g(c, d_e), g(d_e, d_e))
        return cls(
            att_p,
            g(c_ff, d_e),
            0.1 * rng.standard_normal(c_ff),
            g(d_e, c_ff),
            0.1 * rng.standard_normal(d_e),
            norm=norm,
        )


def _check_type(value: object, name: str, cls: type) -> None:
    if not isinstance(value, cls):
        raise TypeError(f"{name} must be a {cls.__name__}, got {type(value).__name__}")


def _check_blocks(blocks: object) -> list[BlockParams]:
    if isinstance(blocks, (str, bytes)) or not isinstance(blocks, Sequence):
        raise TypeError(f"blocks must be a sequence of BlockParams, got {type(blocks).__name__}")
    for i, p in enumerate(blocks):
        _check_type(p, f"blocks[{i}]", BlockParams)
    return list(blocks)


def _seq(h: object, d: int | None = None) -> np.ndarray:
    a = as_float_array(h, "h", min_ndim=2)
    if d is not None and a.shape[-1] != d:
        raise ValueError(f"h must have shape (..., m, d_e) with d_e = {d}, got {a.shape}")
    if a.shape[-2] == 0:
        raise ValueError("h must contain at least one token (m >= 1)")
    return a


def _log_weights(weights: object, h: np.ndarray) -> np.ndarray | None:
    """``log w`` of shape ``(..., m)`` (or None); weights must be finite and > 0."""
    if weights is None:
        return None
    w = as_float_array(weights, "weights", min_ndim=1)
    if w.shape[-1] != h.shape[-2]:
        raise ValueError(f"weights must have shape (..., m) with m = {h.shape[-2]}, got {w.shape}")
    if np.any(w <= 0):
        raise ValueError("weights must be > 0 (drop zero-weight points instead)")
    return np.log(w)


def att(h: object, params: AttentionParams, *, causal: bool = False, weights: object = None) -> np.ndarray:
    """The attention map with its residual, Eq. (5.2): ``h (..., m, d_e) → (..., m, d_e)``.

    ``ATT(h)_k = h_k + Σ_l exp⟨Q h_k, K h_l⟩ V h_l / Σ_j exp⟨Q h_k, K h_j⟩``.
    ``causal=True`` restricts key ``l`` to ``l <= k`` by masking (weight 0, not score 0).
    ``weights (..., m)`` reads ``h`` as a weighted empirical measure, (B.4a).
    """
    causal = check_flag(causal, "causal")
    _check_type(params, "params", AttentionParams)
    x = _seq(h, params.d_e)
    q = x @ params.Q.T  # (..., m, c): row k is Q h_k
    k = x @ params.K.T  # (..., m, c)
    v = x @ params.V.T  # (..., m, d_e): row l is V h_l
    scores = q @ np.swapaxes(k, -1, -2)  # (..., m, m)
    lw = _log_weights(weights, x)
    if lw is not None:
        scores = scores + lw[..., None, :]  # π(u; s) ∝ exp⟨Qs, Ku⟩ p(u)
    check_no_overflow(scores, "the scores ⟨Q h_k, K h_l⟩ of h", masked=False)
    if causal:
        m = x.shape[-2]
        scores = np.where(causal_mask(m), scores, -np.inf)
    return x + softmax(scores) @ v


def _normalise(x: np.ndarray, p: BlockParams) -> np.ndarray:
    if p.norm == "layer":
        return layer_norm(x, eps=p.eps)
    if p.norm == "unit":
        return rms_norm(x, eps=0.0, unit=True)
    return x


def attention_block(h: object, params: BlockParams, *, causal: bool = False, weights: object = None) -> np.ndarray:
    """One attention block, Eqs. (5.3a–d): ``h ← ATT(h); h ← N(h); h ← h + NN(h); h ← N(h)``.

    Shapes ``(..., m, d_e) → (..., m, d_e)``; ``causal`` and ``weights`` as in :func:`att`. This is
    the post-norm block of Chapter 6 with one head, raw scores and no output projection.
    """
    causal = check_flag(causal, "causal")
    _check_type(params, "params", BlockParams)
    x = _normalise(att(h, params.att, causal=causal, weights=weights), params)  # (5.3a-b)
    nn = feed_forward(x, params.W1.T, params.b1, params.W2.T, params.b2, activation=params.activation)
    return _normalise(x + nn, params)  # (5.3c-d)


def mean_pool(h: object, weights: object = None) -> np.ndarray:
    """Mean pooling (Example 5.4; ``∫ h dp`` of Example B.2): ``(..., m, d_e) → (..., d_e)``."""
    x = _seq(h)
    if weights is None:
        return x.mean(axis=-2)
    w = np.exp(_log_weights(weights, x))  # (..., m)
    total = check_no_overflow(w.sum(axis=-1), "the sum of weights", masked=False)  # (...,)
    return np.sum(w[..., None] * x, axis=-2) / total[..., None]


def max_pool(h: object, weights: object = None) -> np.ndarray:
    """Coordinate-wise max pooling (Example 5.4): ``(..., m, d_e) → (..., d_e)``.

    ``weights`` are only validated: the max over the support does not depend on them.
    """
    x = _seq(h)
    _log_weights(weights, x)
    return x.max(axis=-2)


def soft_max_pool(h: object, beta: float, weights: object = None) -> np.ndarray:
    """``(1/β) log Σ_l p_l exp(β h_l)`` per coordinate (Example B.2); → max pooling as ``β → ∞``.

    ``(..., m, d_e) → (..., d_e)``; ``p`` uniform or ``weights`` normalised. The gap to the max is
    at most ``log(1/p_min) / β``.
    """
    check_finite_scalar(beta, "beta")
    x = _seq(h)
    if not np.isfinite(beta) or beta <= 0:
        raise ValueError(f"beta must be finite and > 0, got {beta!r}")
    lw = _log_weights(weights, x)
    lp = np.full(x.shape[:-1], -np.log(x.shape[-2])) if lw is None else log_softmax(lw)  # (..., m)
    z = beta * x + lp[..., None]  # (..., m, d_e)
    zmax = z.max(axis=-2)
    return (zmax + np.log(np.exp(z - zmax[..., None, :]).sum(axis=-2))) / beta


def set_transformer(
    h: object, blocks: Sequence[BlockParams], pool: Pool = "mean", *, causal: bool = False, weights: object = None
) -> np.ndarray:
    """``T(h) = P ∘ A_K ∘ … ∘ A_1 (h)``, Eq. (5.6) / (B.3): ``(..., m, d_e) → (..., d_e)``."""
    causal = check_flag(causal, "causal")
    if not isinstance(pool, str) or pool not in ("mean", "max"):
        raise ValueError(f"pool must be 'mean' or 'max', got {pool!r}")
    x = _seq(h)
    for p in _check_blocks(blocks):
        x = attention_block(x, p, causal=causal, weights=weights)
    return mean_pool(x, weights) if pool == "mean" else max_pool(x, weights)


def next_token_distribution(
    h: object,
    blocks: Sequence[BlockParams],
    B: object,
    tau: float = 1.0,
    pool: Pool = "mean",
    *,
    causal: bool = False,
    weights: object = None,
) -> np.ndarray:
    """``q_m(· | h) = softmax(B T(h) / τ)``, Eq. (5.7): ``B (|V|, d_e)``; returns ``(..., |V|)``."""
    causal = check_flag(causal, "causal")
    check_finite_scalar(tau, "tau")
    Bm = as_float_array(B, "B", ndim=2)
    if not np.isfinite(tau) or tau <= 0:
        raise ValueError(f"tau must be finite and > 0, got {tau!r}")
    t = set_transformer(h, blocks, pool, causal=causal, weights=weights)
    if Bm.shape[1] != t.shape[-1]:
        raise ValueError(f"B must have shape (|V|, d_e) with d_e = {t.shape[-1]}, got {Bm.shape}")
    return softmax(t @ Bm.T / tau)


def empirical_measure(h: object) -> tuple[np.ndarray, np.ndarray]:
    """The empirical measure (B.1) of one sequence ``h (m, d_e)`` as ``(points (n, d_e), weights (n,))``.

    Equal rows are merged (exact equality) and weighted by multiplicity / m, in order of first
    appearance. ``att(points, weights=weights)`` then equals ``att(h)`` at each point.
    """
    x = as_float_array(h, "h", ndim=2)
    if x.shape[0] == 0:
        raise ValueError("h must contain at least one token")
    _, first, counts = np.unique(x, axis=0, return_index=True, return_counts=True)
    order = np.argsort(first)  # unique rows in order of first appearance
    return x[first[order]], counts[order] / x.shape[0]
