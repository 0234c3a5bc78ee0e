"""Closed-form gradients of single-head attention (Aggarwal, Dalal, Misra, *Gradient Dynamics of
Attention*, §2–3, Eqs. (1)–(32)).

Symbol map (paper → code)
-------------------------
The paper writes column vectors (``q_i = W_Q x_i``); this module keeps the row-vector convention
of Chapter 6 (``q_i = x_i W_Q``), so every weight matrix here is the **transpose** of the paper's
and so is every weight gradient.

=====================  =====================================  ==================================
paper                  meaning                                code (``AttentionGradients`` field)
=====================  =====================================  ==================================
``x_j``                input embedding, Eq. (1)–(3)           row ``j`` of ``X (..., T, d_x)``
``W_Q, W_K, W_V``      projections (``d_k × d_x``)            ``W_Q, W_K, W_V`` args, ``(d_x, d_k)``
``q_i, k_j, v_j``      Eq. (1)–(3)                            rows of ``X W_Q``, ``X W_K``, ``X W_V``
``s_ij``               score ``q_i·k_j/√d_k``, Eq. (4)        ``scale * Q K^T`` (``scale=1/√d_k``)
``α_ij``               attention weight, Eq. (5)              ``.attention (..., T, T)``
``g_i``                context ``Σ_j α_ij v_j``, Eq. (6)      ``.output (..., T, d_v)``
``u_i``                upstream ``∂L/∂g_i``, Eq. (10)/(14)    ``upstream`` arg ``(..., T, d_v)``
``b_ij``               ``u_i·v_j`` = ``∂L/∂α_ij``, Eq. (11)/(17)  ``.weights (..., T, T)``
``E_{α_i}[b]``         ``Σ_j α_ij b_ij``, Eq. (12)            ``.mean_compatibility (..., T, 1)``
``∂L/∂s_ik``           ``α_ik (b_ik − E_{α_i}[b])``, Eq. (23) ``.scores (..., T, T)``
``A_ij``               advantage ``−(b_ij − E_{α_i}[b])``, §3.4 ``.advantage (..., T, T)``
``∂L/∂v_j``            ``Σ_i α_ij u_i``, Eq. (16)             ``.v`` (``= α^T U``)
``∂L/∂q_i, ∂L/∂k_j``   Eq. (25), (27)/(28)                    ``.q``, ``.k``
``∇_{W_Q} L, ∇_{W_K}`` Eq. (29), (30)                         ``.W_Q = X^T ∂L/∂Q``, ``.W_K``
``∇_{W_V} L = U A X^T`` Eq. (31)/(32)                         ``.W_V = X^T α^T U`` = (U A Xᵀ)ᵀ
=====================  =====================================  ==================================

Eq. (13)–(14) (cross-entropy through an output head ``ℓ_i = g_i W_O + b``) are
:func:`cross_entropy_upstream`, which produces the ``upstream`` argument. Leading batch axes are
allowed; weight gradients are summed over them. A mask (as in :mod:`nextword.attention`) is
supported: masked ``α_ij = 0`` so ``∂L/∂s_ij = 0`` there, while ``b_ij`` is still ``u_i·v_j``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from nextword._validate import as_float_array, as_index_array, check_finite_scalar, check_flag, check_same_dtype
from nextword.attention.core import attend, check_mask, log_softmax, softmax

__all__ = ["AttentionGradients", "attention_backward", "CrossEntropyUpstream", "cross_entropy_upstream"]


@dataclass(frozen=True)
class AttentionGradients:
    """Gradients of a loss through one attention head (see the module's symbol map)."""

    scores: np.ndarray  # ∂L/∂s (..., T, T), Eq. (23)
    weights: np.ndarray  # ∂L/∂α = b (..., T, T), Eq. (17)
    q: np.ndarray  # ∂L/∂Q (..., T, d_k), Eq. (25)
    k: np.ndarray  # ∂L/∂K (..., T, d_k), Eq. (27)
    v: np.ndarray  # ∂L/∂V (..., T, d_v), Eq. (16)
    W_Q: np.ndarray  # (d_x, d_k), Eq. (29) transposed
    W_K: np.ndarray  # (d_x, d_k), Eq. (30) transposed
    W_V: np.ndarray  # (d_x, d_v), Eq. (32) transposed
    attention: np.ndarray  # α (..., T, T), Eq. (5)
    output: np.ndarray  # g (..., T, d_v), Eq. (6)
    mean_compatibility: np.ndarray  # E_{α_i}[b] (..., T, 1), Eq. (12)

    @property
    def advantage(self) -> np.ndarray:
        """``A_ij = −(b_ij − E_{α_i}[b])`` (§3.4): positive where more attention lowers the loss."""
        return -(self.weights - self.mean_compatibility)


def attention_backward(
    X: object,
    W_Q: object,
    W_K: object,
    W_V: object,
    upstream: object,
    *,
    mask: object = None,
    causal: bool = False,
    scale: float | None = None,
) -> AttentionGradients:
    """Forward and closed-form backward pass of one attention head (dynamics paper Eqs. (4)–(32)).

    Parameters
    ----------
    X:
        Inputs ``(..., T, d_x)`` (rows ``x_j``).
    W_Q, W_K, W_V:
        ``(d_x, d_k)``, ``(d_x, d_k)``, ``(d_x, d_v)`` — row convention, transposes of the paper's.
    upstream:
        ``U = ∂L/∂G (..., T, d_v)``, rows ``u_i`` (Eq. (10)); e.g. from :func:`cross_entropy_upstream`.
    mask, causal, scale:
        As in :func:`nextword.attention.scaled_dot_product_attention` (default ``scale = 1/√d_k``):
        ``mask`` boolean **True = may attend** (the opposite of ``torch.nn.MultiheadAttention``)
        or float (added to the scores; a constant, so the formulas are unchanged), ``(..., T, T)``
        with ``X``'s leading axes; ``causal`` True/``"bottom_right"`` or ``"top_left"`` (the same
        for ``T_q = T_k = T``); ``scale`` finite. All arrays share one float dtype.

    Returns
    -------
    :class:`AttentionGradients`. Worked example: with ``T = 1`` the single weight is ``α = 1``,
    so ``∂L/∂s = α (b − E[b]) = 0`` — one key gives the scores nothing to learn — while the
    value still gets ``∂L/∂v = α u = u`` (Eq. (16))::

        >>> g = attention_backward(np.ones((1, 2)), np.eye(2), np.eye(2), np.eye(2), [[3.0, -1.0]])
        >>> g.scores.tolist(), g.v.tolist()
        ([[0.0]], [[3.0, -1.0]])
    """
    causal = check_flag(causal, "causal")
    X = as_float_array(X, "X", min_ndim=2)
    W_Q = as_float_array(W_Q, "W_Q", ndim=2)
    W_K = as_float_array(W_K, "W_K", ndim=2)
    W_V = as_float_array(W_V, "W_V", ndim=2)
    U = as_float_array(upstream, "upstream", min_ndim=2)
    d_x = X.shape[-1]
    for name, W in (("W_Q", W_Q), ("W_K", W_K), ("W_V", W_V)):
        if W.shape[0] != d_x:
            raise ValueError(f"{name} must have shape (d_x, ·) with d_x={d_x} (X is {X.shape}), got {W.shape}")
    if W_Q.shape != W_K.shape:
        raise ValueError(f"W_Q and W_K must have the same shape (d_x, d_k), got {W_Q.shape} and {W_K.shape}")
    if U.shape != X.shape[:-1] + (W_V.shape[1],):
        raise ValueError(f"upstream must have shape (..., T, d_v) = {X.shape[:-1] + (W_V.shape[1],)}, got {U.shape}")
    dtype = check_same_dtype(X=X, W_Q=W_Q, W_K=W_K, W_V=W_V, upstream=U)
    T, d_k = X.shape[-2], W_Q.shape[1]
    scale = 1.0 / np.sqrt(d_k) if scale is None else check_finite_scalar(scale, "scale")
    m = None if mask is None else check_mask(mask, T, T, X.shape[:-2], dtype=dtype)

    Q, K, V = X @ W_Q, X @ W_K, X @ W_V  # Eq. (1)–(3): (..., T, d_k), (..., T, d_k), (..., T, d_v)
    G, alpha = attend(Q, K, V, causal=causal, mask=m, scale=scale, need_weights=True)  # Eq. (4)–(6)
    b = U @ np.swapaxes(V, -1, -2)  # Eq. (11)/(17): b_ij = u_i · v_j, (..., T, T)
    Eb = np.sum(alpha * b, axis=-1, keepdims=True)  # Eq. (12), (..., T, 1)
    dS = alpha * (b - Eb)  # Eq. (23)
    dQ = scale * (dS @ K)  # Eq. (25): Σ_k ∂L/∂s_ik k_k / √d_k
    dK = scale * (np.swapaxes(dS, -1, -2) @ Q)  # Eq. (27): Σ_i ∂L/∂s_ij q_i / √d_k
    dV = np.swapaxes(alpha, -1, -2) @ U  # Eq. (16): Σ_i α_ij u_i
    Xf = X.reshape(-1, d_x)  # (B*T, d_x): weight gradients sum over batch and positions

    def _wgrad(D: np.ndarray) -> np.ndarray:  # Σ_i x_i ⊗ D_i, Eq. (29)/(30)/(31) transposed
        return Xf.T @ D.reshape(-1, D.shape[-1])

    return AttentionGradients(
        scores=dS,
        weights=b,
        q=dQ,
        k=dK,
        v=dV,
        W_Q=_wgrad(dQ),
        W_K=_wgrad(dK),
        W_V=_wgrad(dV),
        attention=alpha,
        output=G,
        mean_compatibility=Eb,
    )


class CrossEntropyUpstream(NamedTuple):
    loss: float  # L = −Σ_i log p_{i, y_i}, Eq. (9)
    probs: np.ndarray  # p (..., T, C), Eq. (8)
    dlogits: np.ndarray  # ∂L/∂ℓ = p − e_y (..., T, C), Eq. (13)
    upstream: np.ndarray  # U = ∂L/∂G (..., T, d_v), Eq. (14)


def cross_entropy_upstream(G: object, W_O: object, b_O: object, targets: object) -> CrossEntropyUpstream:
    """Output head and cross-entropy of the dynamics paper, Eqs. (7)–(9), (13)–(14).

    ``G (..., T, d_v)`` contexts, ``W_O (d_v, C)`` (row convention: ``ℓ_i = g_i W_O + b_O``),
    ``b_O (C,)``, ``targets (..., T)`` integer classes. Returns the summed loss, ``p``,
    ``∂L/∂ℓ = p − e_y`` and ``U = (p − e_y) W_O^T`` (the paper's ``W_O^T (p_i − e_{y_i})``).
    """
    G = as_float_array(G, "G", min_ndim=2)
    W_O = as_float_array(W_O, "W_O", ndim=2)
    b_O = as_float_array(b_O, "b_O", ndim=1)
    if W_O.shape[0] != G.shape[-1] or b_O.shape != (W_O.shape[1],):
        raise ValueError(f"need W_O (d_v, C) with d_v={G.shape[-1]} and b_O (C,), got {W_O.shape}, {b_O.shape}")
    y = as_index_array(targets, "targets", upper=W_O.shape[1])
    if y.shape != G.shape[:-1]:
        raise ValueError(f"targets must have shape {G.shape[:-1]} (..., T), got {y.shape}")
    logits = G @ W_O + b_O  # Eq. (7), (..., T, C)
    logp = log_softmax(logits)
    p = softmax(logits)  # Eq. (8)
    picked = np.take_along_axis(logp, y[..., None], axis=-1)  # (..., T, 1)
    dlogits = p.copy()
    np.put_along_axis(dlogits, y[..., None], np.take_along_axis(p, y[..., None], axis=-1) - 1.0, axis=-1)
    return CrossEntropyUpstream(loss=float(-picked.sum()), probs=p, dlogits=dlogits, upstream=dlogits @ W_O.T)
