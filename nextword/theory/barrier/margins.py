"""Support tokens and stability margins: causal attention as a latent-noise flow (Agarwal et al.).

The paper's single-layer model (§2, Eqs. (1)–(5)): embeddings ``x_1..x_L`` are generated from
Gaussian latent noise ``ε_t ~ N(0, σ² I_d)`` by ``x_t = μ_t(x) + ε_t`` where ``μ_t`` is a causal
attention summary of the past. Reading it backwards gives the *residual map*
``ε_t = e_t(x) = x_t − μ_t(x)`` (Eq. 4) whose Jacobian determinant enters the exact log-density
(Eq. 5). Because the attention weights depend on ``x_t`` through the query, the diagonal Jacobian
block ``∂e_t/∂x_t`` is not the identity: its (log-)determinant is the *log-barrier*, its distance to
singularity the *margin*, and the positions of smallest margin the *support tokens* (Def. 3.1).

Conventions (the paper's, **not** Chapter 6's row-vector one)
-------------------------------------------------------------
* ``X`` has shape ``(..., L, d)``: row ``t`` is the embedding ``x_t`` (leading axes are batch axes).
* Projections are **column-vector maps**: ``q_t = W_Q x_t``, ``k_s = W_K x_s``, ``v_s = W_V x_s``
  with ``W_Q, W_K`` of shape ``(d_k, d)`` and ``W_V`` of shape ``(d, d)`` (the residual
  ``x_t − μ_t`` needs values in ``R^d``). In array form ``Q = X @ W_Q.T``.
* Logits are ``ℓ_ts = q_tᵀ k_s`` with **no** ``1/√d_k`` factor (the paper's Eq. 2; fold a scale
  into ``W_Q`` if you want one). ``A = W_Kᵀ W_Q`` (Eq. 15), so ``ℓ_ts = x_sᵀ A x_t``.
* ``context`` selects who position ``t`` attends to: ``"strict"`` ``s < t`` (Eq. 2, the default),
  ``"inclusive"`` ``s ≤ t`` (Appendix A), ``"bidirectional"`` all ``s`` and ``"others"`` all ``s ≠ t``
  (the non-causal variants used for Proposition 2). Under ``"strict"`` position 1 has no past:
  ``μ_1 = 0`` (empty sum; :func:`nextword.attention.core.softmax` returns zero weights for it).

The exact diagonal block (derived in ``book/part4_margins/03_matrix_margin``) is, with
``C_t = Σ_s α_ts (x_s − x̄_t)(x_s − x̄_t)ᵀ`` the attention-weighted covariance of the *embeddings*::

    ∂e_t/∂x_t = I − W_V C_t A − α_tt [ W_V + (v_t − v̄_t) q_tᵀ W_K ]          (α_tt = 0 if t ∉ S_t)

It equals the paper's (14) ``I − Σ_t A`` (``Σ_t`` the covariance of the *values*) when ``W_V = I``
under strict masking, and (8) ``1 − a Var_t`` in ``d = 1`` when ``w_V = 1``; Appendix A's (53) misses
the key-path term ``α_tt (v_t − v̄_t) q_tᵀ W_K`` (``k_t`` depends on ``x_t`` too).

Worked example (``d = 1``, ``W_V = 1``, ``a = 1``; ``x = (0, 2, 1)``: position 3 weighs its past
``(0, 2)`` by ``softmax(0, 2) = (0.119, 0.881)``, variance ``4·0.119·0.881 = 0.420``)::

    >>> m = scalar_margin(np.array([0.0, 2.0, 1.0]), a=1.0)
    >>> np.round(m, 3)
    array([1.  , 1.  , 0.58])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nextword._validate import as_float_array, check_finite_scalar, check_flag, check_no_overflow, check_positive_int
from nextword.attention.core import causal_mask, softmax

__all__ = [
    "CONTEXTS",
    "AttentionStats",
    "MatrixMargins",
    "context_mask",
    "attention_stats",
    "attention_residual",
    "causal_residual",
    "residual_jacobian",
    "diagonal_blocks",
    "jacobian_diagonal_block",
    "paper_diagonal_block",
    "scalar_margin",
    "scalar_attention_variance",
    "matrix_margins",
    "sequence_margin",
    "support_tokens",
]

CONTEXTS = ("strict", "inclusive", "bidirectional", "others")

# the log-density lives in density.py (to keep this file readable in one sitting); the package
# nextword.theory.barrier exports both modules' names


# --------------------------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------------------------
def _check_inputs(
    X: object, W_Q: object, W_K: object, W_V: object | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    X = as_float_array(X, "X", min_ndim=2).astype(np.float64, copy=False)
    L, d = X.shape[-2:]
    if L < 1 or d < 1:
        raise ValueError(f"X must have shape (..., L, d) with L, d >= 1, got {X.shape}")
    W_Q = as_float_array(W_Q, "W_Q", ndim=2).astype(np.float64, copy=False)
    W_K = as_float_array(W_K, "W_K", ndim=2).astype(np.float64, copy=False)
    if W_Q.shape[1] != d:
        raise ValueError(f"W_Q must have shape (d_k, d) = (d_k, {d}) (q_t = W_Q x_t), got {W_Q.shape}")
    if W_K.shape != W_Q.shape:
        raise ValueError(f"W_K must have the shape of W_Q {W_Q.shape} (k_s = W_K x_s), got {W_K.shape}")
    if W_V is None:
        W_V = np.eye(d)
    W_V = as_float_array(W_V, "W_V", ndim=2).astype(np.float64, copy=False)
    if W_V.shape != (d, d):
        raise ValueError(f"W_V must have shape (d, d) = ({d}, {d}) (v_s = W_V x_s), got {W_V.shape}")
    return X, W_Q, W_K, W_V


def _check_context(context: str) -> str:
    if not isinstance(context, str) or context not in CONTEXTS:
        raise ValueError(f"context must be one of {CONTEXTS}, got {context!r}")
    return context


def context_mask(L: int, context: str = "strict") -> np.ndarray:
    """Boolean ``(L, L)`` mask, ``mask[t, s]`` True when position ``t`` attends to ``s``.

    ``"strict"``/``"inclusive"`` come from :func:`nextword.attention.core.causal_mask`
    (``strict=True`` is the paper's ``s < t`` of Eq. 2).

    >>> context_mask(3, "strict").astype(int)
    array([[0, 0, 0],
           [1, 0, 0],
           [1, 1, 0]])
    """
    L = check_positive_int(L, "L", minimum=0)
    context = _check_context(context)
    if context == "strict":
        return causal_mask(L, strict=True)
    if context == "inclusive":
        return causal_mask(L)
    full = np.ones((L, L), dtype=bool)
    return full if context == "bidirectional" else ~np.eye(L, dtype=bool)


# --------------------------------------------------------------------------------------------
# the attention summary and its moments
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AttentionStats:
    """Everything the formulas need at every position (shapes for ``X (..., L, d)``).

    ``alpha (..., L, L)`` weights (rows sum to 1, or 0 for a row with no context);
    ``q, k (..., L, d_k)``; ``v (..., L, d)``; ``v_bar = μ (..., L, d)`` (Eq. 13);
    ``x_bar (..., L, d)``; ``C (..., L, d, d)`` covariance of the attended *embeddings*;
    ``Sigma (..., L, d, d)`` covariance of the attended *values* (Eq. 13/47), ``= W_V C W_Vᵀ``.
    """

    alpha: np.ndarray
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    v_bar: np.ndarray
    x_bar: np.ndarray
    C: np.ndarray
    Sigma: np.ndarray


def attention_stats(
    X: object, W_Q: object, W_K: object, W_V: object | None = None, *, context: str = "strict"
) -> AttentionStats:
    """Attention weights (Eq. 2/44), mean (Eq. 13) and covariances of the attended context.

    Column-vector convention: ``q_t = W_Q x_t`` etc., computed as ``X @ W_Q.T``.
    """
    X, W_Q, W_K, W_V = _check_inputs(X, W_Q, W_K, W_V)
    L = X.shape[-2]
    q = X @ W_Q.T  # (..., L, d_k)
    k = X @ W_K.T  # (..., L, d_k)
    v = X @ W_V.T  # (..., L, d)
    scores = q @ np.swapaxes(k, -1, -2)  # (..., L, L): scores[t, s] = q_t . k_s
    with np.errstate(over="ignore", invalid="ignore"):
        scores = np.where(context_mask(L, context), scores, -np.inf)
    check_no_overflow(scores, "the scores (X W_Q^T)(X W_K^T)^T")
    alpha = softmax(scores, axis=-1)  # rows with no context -> all zeros
    v_bar = alpha @ v  # (..., L, d)
    x_bar = alpha @ X  # (..., L, d)
    dx = X[..., None, :, :] - x_bar[..., :, None, :]  # (..., t, s, d): x_s - x̄_t
    C = np.einsum("...ts,...tsi,...tsj->...tij", alpha, dx, dx)  # (..., L, d, d)
    Sigma = W_V @ C @ W_V.T  # (..., L, d, d)
    return AttentionStats(alpha, q, k, v, v_bar, x_bar, C, Sigma)


def attention_residual(
    X: object, W_Q: object, W_K: object, W_V: object | None = None, *, context: str = "strict"
) -> np.ndarray:
    """Residual map ``e_t(x) = x_t − μ_t(x)`` (Eq. 4) for any ``context``; ``(..., L, d)``."""
    X = as_float_array(X, "X", min_ndim=2).astype(np.float64, copy=False)
    return X - attention_stats(X, W_Q, W_K, W_V, context=context).v_bar


def causal_residual(
    X: object, W_Q: object, W_K: object, W_V: object | None = None, *, include_current: bool = False
) -> np.ndarray:
    """Causal residual ``e_t = x_t − Σ_{s<t} α_ts v_s`` (Eqs. 2, 4) for all ``t``; shape ``(..., L, d)``.

    ``X (..., L, d)`` rows ``x_t``; ``q_t = W_Q x_t``, ``k_s = W_K x_s``, ``v_s = W_V x_s`` (column
    maps; ``W_V`` defaults to ``I``). ``include_current=True`` uses Appendix A's ``s ≤ t`` (Eq. 45).

    >>> causal_residual(np.array([[1.0], [3.0]]), [[1.0]], [[1.0]])[:, 0].tolist()
    [1.0, 2.0]
    """
    include_current = check_flag(include_current, "include_current")
    return attention_residual(X, W_Q, W_K, W_V, context="inclusive" if include_current else "strict")


# --------------------------------------------------------------------------------------------
# exact Jacobians
# --------------------------------------------------------------------------------------------
def residual_jacobian(
    X: object, W_Q: object, W_K: object, W_V: object | None = None, *, context: str = "strict"
) -> np.ndarray:
    """Exact Jacobian ``J[..., t, i, u, j] = ∂e_t[i]/∂x_u[j]`` of the residual map; ``(..., L, d, L, d)``.

    From ``ℓ_ts = q_tᵀ k_s`` and the softmax Jacobian (Lemma B.1)::

        ∂μ_t/∂x_u = α_tu W_V + δ_tu W_V C_t A + α_tu (v_u − v̄_t) q_tᵀ W_K

    (value path, query path, key path; ``α_tu = 0`` when ``u`` is masked). For a causal context it
    is block lower triangular (Lemma B.3); reshape to ``(L d, L d)`` for a determinant.
    """
    X, W_Q, W_K, W_V = _check_inputs(X, W_Q, W_K, W_V)
    L, d = X.shape[-2:]
    st = attention_stats(X, W_Q, W_K, W_V, context=context)
    A = W_K.T @ W_Q  # (d, d), Eq. (15)
    value = np.einsum("...tu,ij->...tiuj", st.alpha, W_V)
    dv = st.v[..., None, :, :] - st.v_bar[..., :, None, :]  # (..., t, u, d): v_u - v̄_t
    qWk = st.q @ W_K  # (..., L, d): row t is q_tᵀ W_K
    key = np.einsum("...tu,...tui,...tj->...tiuj", st.alpha, dv, qWk)
    query = W_V @ st.C @ A  # (..., L, d, d)
    eye_L = np.eye(L)
    J = np.einsum("tu,ij->tiuj", eye_L, np.eye(d)) - value - key
    J = J - np.einsum("tu,...tij->...tiuj", eye_L, query)
    return J


def diagonal_blocks(
    X: object, W_Q: object, W_K: object, W_V: object | None = None, *, context: str = "strict"
) -> np.ndarray:
    """All exact diagonal blocks ``∂e_t/∂x_t``; shape ``(..., L, d, d)``.

    ``I − W_V C_t A − α_tt [W_V + (v_t − v̄_t) q_tᵀ W_K]`` (see the module docstring).
    """
    X, W_Q, W_K, W_V = _check_inputs(X, W_Q, W_K, W_V)
    d = X.shape[-1]
    st = attention_stats(X, W_Q, W_K, W_V, context=context)
    A = W_K.T @ W_Q
    a_tt = np.diagonal(st.alpha, axis1=-2, axis2=-1)[..., None, None]  # (..., L, 1, 1)
    dv = st.v - st.v_bar  # (..., L, d): v_t - v̄_t
    key = dv[..., :, None] * (st.q @ W_K)[..., None, :]  # (..., L, d, d) outer products
    return np.eye(d) - W_V @ st.C @ A - a_tt * (W_V + key)


def _check_t(t: int, L: int) -> int:
    if isinstance(t, bool) or not isinstance(t, (int, np.integer)):
        raise TypeError(f"t must be an integer position index, got {type(t).__name__}")
    if not -L <= t < L:
        raise ValueError(f"t must index a position of X, i.e. lie in [{-L}, {L}), got {t}")
    return int(t) % L


def jacobian_diagonal_block(
    X: object, t: int, *, W_Q: object, W_K: object, W_V: object | None = None, include_current: bool = False
) -> np.ndarray:
    """The exact ``d × d`` block ``∂e_t/∂x_t`` at 0-based position ``t``; shape ``(..., d, d)``.

    Correct for any ``W_V`` (checked against finite differences and torch autograd in
    ``tests/theory/barrier/test_barrier.py``). Agrees with the paper's (14) ``I − Σ_t A`` when ``W_V = I`` (strict),
    with (8) when ``d = 1`` and ``w_V = 1``; (53)/(54) hold only when additionally
    ``α_tt (v_t − v̄_t) q_tᵀ W_K = 0`` and ``W_V = I``.
    """
    include_current = check_flag(include_current, "include_current")
    X = as_float_array(X, "X", min_ndim=2)
    t = _check_t(t, X.shape[-2])
    context = "inclusive" if include_current else "strict"
    return diagonal_blocks(X, W_Q, W_K, W_V, context=context)[..., t, :, :]


def paper_diagonal_block(
    X: object, W_Q: object, W_K: object, W_V: object | None = None, *, include_current: bool = False
) -> np.ndarray:
    """The paper's closed forms, all positions: (14) ``I − Σ_t A`` or (53) ``I − α_tt W_V − Σ_t^(≤) A``.

    ``Σ_t`` is the attention-weighted covariance of the **values** (Eq. 13/47), as the paper's
    remark after Theorem 1 prescribes. Shape ``(..., L, d, d)``. For comparison only — use
    :func:`diagonal_blocks` for the exact block.
    """
    include_current = check_flag(include_current, "include_current")
    X, W_Q, W_K, W_V = _check_inputs(X, W_Q, W_K, W_V)
    d = X.shape[-1]
    context = "inclusive" if include_current else "strict"
    st = attention_stats(X, W_Q, W_K, W_V, context=context)
    A = W_K.T @ W_Q
    a_tt = np.diagonal(st.alpha, axis1=-2, axis2=-1)[..., None, None]
    return np.eye(d) - st.Sigma @ A - a_tt * W_V


# --------------------------------------------------------------------------------------------
# margins and support tokens
# --------------------------------------------------------------------------------------------
def _scalar_X(x: object) -> np.ndarray:
    x = as_float_array(x, "x", min_ndim=1).astype(np.float64, copy=False)
    return x[..., None]  # (..., L) -> (..., L, 1)


def scalar_attention_variance(x: object, *, a: float, w_v: float = 1.0, include_current: bool = False) -> np.ndarray:
    """``Var_t = Σ_s α_ts (v_s − v̄_t)²`` of the attended *values* ``v_s = w_V x_s`` (Eq. 7); ``(..., L)``.

    ``d = 1`` with logits ``ℓ_ts = a x_t x_s`` (``a = w_K w_Q``).
    """
    include_current = check_flag(include_current, "include_current")
    check_finite_scalar(w_v, "w_v")
    st = attention_stats(
        _scalar_X(x), [[float(a)]], [[1.0]], [[float(w_v)]], context="inclusive" if include_current else "strict"
    )
    return st.Sigma[..., 0, 0]


def scalar_margin(x: object, *, a: float, w_v: float = 1.0, include_current: bool = False) -> np.ndarray:
    """Exact scalar margin ``m_t = ∂e_t/∂x_t`` for every position; ``x (..., L) -> (..., L)``.

    ``d = 1``, logits ``a x_t x_s`` (``a = W_K W_Q``, Eq. 8), values ``w_V x_s``. With ``w_V = 1``
    and strict masking this is the paper's ``m_t = 1 − a Var_t`` (Eq. 9); in general it is
    ``1 − a w_V Var_t(x) = 1 − a Var_t(v)/w_V`` (see ``book/ERRATA.md``).

    >>> scalar_margin(np.array([0.0, 2.0, 1.0]), a=-1.0).round(3).tolist()
    [1.0, 1.0, 1.42]
    """
    include_current = check_flag(include_current, "include_current")
    check_finite_scalar(w_v, "w_v")
    blocks = diagonal_blocks(
        _scalar_X(x), [[float(a)]], [[1.0]], [[float(w_v)]], context="inclusive" if include_current else "strict"
    )
    return blocks[..., 0, 0]


@dataclass(frozen=True)
class MatrixMargins:
    """Per-position matrix margins (Eq. 25), each of shape ``(..., L)``.

    ``sign``/``logabsdet``: ``slogdet`` of ``∂e_t/∂x_t`` (the log-barrier term of Eq. 16 is
    ``logabsdet``; ``|det|`` is the first margin of (25)). ``spectral``: ``1 − ρ(∂μ_t/∂x_t)``, which
    is the second margin of (25), ``1 − ρ(Σ_t A)``, whenever (14) holds (``W_V = I``, strict).
    """

    sign: np.ndarray
    logabsdet: np.ndarray
    spectral: np.ndarray

    @property
    def det(self) -> np.ndarray:
        """``det(∂e_t/∂x_t)`` with its sign."""
        return self.sign * np.exp(self.logabsdet)


def matrix_margins(
    X: object, W_Q: object, W_K: object, W_V: object | None = None, *, include_current: bool = False
) -> MatrixMargins:
    """Log-determinant and spectral margins of every diagonal block (Eqs. 24–25, Lemma B.4)."""
    include_current = check_flag(include_current, "include_current")
    X = as_float_array(X, "X", min_ndim=2)
    context = "inclusive" if include_current else "strict"
    D = diagonal_blocks(X, W_Q, W_K, W_V, context=context)  # (..., L, d, d)
    sign, logabsdet = np.linalg.slogdet(D)
    M = np.eye(D.shape[-1]) - D  # ∂μ_t/∂x_t
    rho = np.max(np.abs(np.linalg.eigvals(M)), axis=-1)
    return MatrixMargins(sign=sign, logabsdet=logabsdet, spectral=1.0 - rho)


def sequence_margin(margins: object) -> np.ndarray:
    """``m(x) = min_t m_t(x)`` (Eq. 10) over the last axis; ``(..., L) -> (...)``."""
    m = as_float_array(margins, "margins", min_ndim=1)
    if m.shape[-1] == 0:
        raise ValueError("margins must have at least one position")
    return m.min(axis=-1)


def support_tokens(margins: object, *, atol: float = 1e-12) -> np.ndarray:
    """Support tokens (Def. 3.1): 0-based positions ``t`` with ``m_t ≤ min_s m_s + atol``.

    ``margins`` is one sequence's ``(L,)`` margins (scalar ``m_t`` or ``logabsdet``); ``atol``
    implements "attaining (or nearly attaining)" the minimum.

    >>> support_tokens(np.array([1.0, 0.4, 0.9, 0.4])).tolist()
    [1, 3]
    """
    check_finite_scalar(atol, "atol")
    m = as_float_array(margins, "margins", ndim=1)
    if m.size == 0:
        raise ValueError("margins must have at least one position")
    if not atol >= 0:
        raise ValueError(f"atol must be >= 0, got {atol}")
    return np.flatnonzero(m <= m.min() + atol)
