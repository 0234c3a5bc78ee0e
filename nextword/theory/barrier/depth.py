"""Depth as a hierarchy of conditional priors (§6, Appendix D; Proposition 3, Corollary 6.1).

Stage 1 is the single-layer attention prior of §2–3 on ``x^(1)``: ``e^(1)_t = x^(1)_t − μ_t(x^(1))``
(strict causal, queries from the variable being generated). Each deeper layer ``ℓ ≥ 2`` is a causal
attention block with a residual path (a schematic of Eq. (41))::

    g_t(x^(ℓ−1)) = x^(ℓ−1)_t + Σ_{s≤t} α_ts W_V x^(ℓ−1)_s ,       e^(ℓ)_t = x^(ℓ)_t − g_t      (Eq. 36)

with keys/values from the previous layer and queries ``q_t = W_Q z_t`` where ``z = x^(ℓ−1)``
(``queries="previous"``, the standard convention of Proposition 3) or ``z = x^(ℓ)`` (``"current"``,
the self-conditioned variant of the remark after Corollary 6.1). Column-vector maps as in
:mod:`nextword.theory.barrier`; arrays ``(T, d)`` per layer, stacked as ``(n_layers, T, d)``.

Diagonal blocks ``∂e^(ℓ)_t/∂x^(ℓ)_t``: ``I`` for ``"previous"`` (Eq. 40) and ``I − W_V C_t A`` for
``"current"`` (``C_t`` the attention-weighted covariance of ``x^(ℓ−1)_{s≤t}``).

>>> rng = np.random.default_rng(0)
>>> lay = DepthLayer(rng.normal(size=(2, 2)), rng.normal(size=(2, 2)), np.eye(2), "previous")
>>> layer_diagonal_blocks(rng.normal(size=(3, 2)), rng.normal(size=(3, 2)), lay).shape
(3, 2, 2)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from nextword._validate import as_float_array, check_no_overflow
from nextword.attention.core import causal_mask, softmax
from nextword.theory.barrier.margins import causal_residual, matrix_margins

__all__ = ["DepthLayer", "layer_residual", "layer_diagonal_blocks", "deep_residual", "deep_log_barrier"]


@dataclass(frozen=True)
class DepthLayer:
    """Parameters of one deeper layer: ``W_Q, W_K (d_k, d)``, ``W_V (d, d)`` and where queries come from."""

    W_Q: np.ndarray
    W_K: np.ndarray
    W_V: np.ndarray
    queries: str = "previous"

    def __post_init__(self) -> None:
        if not isinstance(self.queries, str) or self.queries not in ("previous", "current"):
            raise ValueError(f"queries must be 'previous' or 'current', got {self.queries!r}")
        W_Q, W_K, W_V = (as_float_array(w, n) for w, n in ((self.W_Q, "W_Q"), (self.W_K, "W_K"), (self.W_V, "W_V")))
        if W_Q.ndim != 2 or W_K.shape != W_Q.shape or W_V.shape != (W_Q.shape[1],) * 2:
            raise ValueError(f"need W_Q, W_K (d_k, d) and W_V (d, d); got {W_Q.shape}, {W_K.shape}, {W_V.shape}")


def _attention(X_cur: np.ndarray, X_prev: np.ndarray, layer: DepthLayer) -> tuple[np.ndarray, np.ndarray]:
    Z = X_prev if layer.queries == "previous" else X_cur
    q = Z @ np.asarray(layer.W_Q, dtype=np.float64).T  # (T, d_k)
    k = X_prev @ np.asarray(layer.W_K, dtype=np.float64).T  # (T, d_k)
    scores = np.where(causal_mask(X_prev.shape[0]), q @ k.T, -np.inf)  # (T, T), s <= t
    check_no_overflow(scores, "the scores (Z W_Q^T)(X_prev W_K^T)^T")
    alpha = softmax(scores, axis=-1)
    return alpha, X_prev @ np.asarray(layer.W_V, dtype=np.float64).T  # (T, T), values (T, d)


def _pair(X_cur: object, X_prev: object) -> tuple[np.ndarray, np.ndarray]:
    X_cur = as_float_array(X_cur, "X_cur", ndim=2).astype(np.float64)
    X_prev = as_float_array(X_prev, "X_prev", ndim=2).astype(np.float64)
    if X_cur.shape != X_prev.shape:
        raise ValueError(f"X_cur and X_prev must both have shape (T, d), got {X_cur.shape} and {X_prev.shape}")
    return X_cur, X_prev


def _check_layer(layer: object, name: str = "layer") -> DepthLayer:
    if not isinstance(layer, DepthLayer):
        raise TypeError(f"{name} must be a DepthLayer, got {type(layer).__name__}")
    return layer


def _check_layers(layers: object) -> list[DepthLayer]:
    if isinstance(layers, (str, bytes)) or not isinstance(layers, Sequence):
        raise TypeError(f"layers must be a sequence of DepthLayer, got {type(layers).__name__}")
    return [_check_layer(x, f"layers[{i}]") for i, x in enumerate(layers)]


def layer_residual(X_cur: object, X_prev: object, layer: DepthLayer) -> np.ndarray:
    """``e^(ℓ)_t = x^(ℓ)_t − g_t`` (Eq. 36) for all ``t``; ``(T, d)``."""
    _check_layer(layer)
    X_cur, X_prev = _pair(X_cur, X_prev)
    alpha, v = _attention(X_cur, X_prev, layer)
    return X_cur - (X_prev + alpha @ v)


def layer_diagonal_blocks(X_cur: object, X_prev: object, layer: DepthLayer) -> np.ndarray:
    """Exact ``∂e^(ℓ)_t/∂x^(ℓ)_t`` for all ``t``; ``(T, d, d)``: ``I`` or ``I − W_V C_t A``."""
    _check_layer(layer)
    X_cur, X_prev = _pair(X_cur, X_prev)
    T, d = X_cur.shape
    if layer.queries == "previous":
        return np.broadcast_to(np.eye(d), (T, d, d)).copy()
    alpha, _ = _attention(X_cur, X_prev, layer)
    x_bar = alpha @ X_prev  # (T, d)
    dx = X_prev[None, :, :] - x_bar[:, None, :]  # (t, s, d)
    C = np.einsum("ts,tsi,tsj->tij", alpha, dx, dx)  # (T, d, d)
    A = np.asarray(layer.W_K, dtype=np.float64).T @ np.asarray(layer.W_Q, dtype=np.float64)
    return np.eye(d) - np.asarray(layer.W_V, dtype=np.float64) @ C @ A


def _stack(xs: object, n_layers: int) -> np.ndarray:
    xs = as_float_array(xs, "xs", ndim=3).astype(np.float64)
    if xs.shape[0] != n_layers:
        raise ValueError(f"xs must have shape (n_layers, T, d) with n_layers = {n_layers}, got {xs.shape}")
    return xs


def deep_residual(xs: object, prior: tuple[object, object, object], layers: Sequence[DepthLayer]) -> np.ndarray:
    """The global residual map ``E(x)`` of §6.3, stacked ``(1 + len(layers), T, d)``.

    ``xs[0]`` is ``x^(1)`` (the attention-prior stage with ``prior = (W_Q, W_K, W_V)``, strict
    causal), ``xs[ℓ]`` the output of ``layers[ℓ−1]``.
    """
    if not isinstance(prior, (tuple, list)) or len(prior) != 3:
        raise TypeError(f"prior must be a tuple (W_Q, W_K, W_V), got {type(prior).__name__}")
    layers = _check_layers(layers)
    xs = _stack(xs, 1 + len(layers))
    out = [causal_residual(xs[0], *prior)]
    for ell, layer in enumerate(layers, start=1):
        out.append(layer_residual(xs[ell], xs[ell - 1], layer))
    return np.stack(out)


def deep_log_barrier(
    xs: object, prior: tuple[object, object, object], layers: Sequence[DepthLayer]
) -> tuple[float, np.ndarray]:
    """``(total, per_stage)``: ``Σ_{ℓ,t} log|det ∂e^(ℓ)_t/∂x^(ℓ)_t|`` (Eq. 39) and each stage's share.

    By Proposition 3 every ``"previous"`` layer contributes exactly 0 (Corollary 6.1).
    """
    if not isinstance(prior, (tuple, list)) or len(prior) != 3:
        raise TypeError(f"prior must be a tuple (W_Q, W_K, W_V), got {type(prior).__name__}")
    layers = _check_layers(layers)
    xs = _stack(xs, 1 + len(layers))
    shares = [float(matrix_margins(xs[0], *prior).logabsdet.sum())]
    for ell, layer in enumerate(layers, start=1):
        _, logdet = np.linalg.slogdet(layer_diagonal_blocks(xs[ell], xs[ell - 1], layer))
        shares.append(float(logdet.sum()))
    per_stage = np.array(shares)
    return float(per_stage.sum()), per_stage
