"""Gradient dynamics of a single attention head (Aggarwal, Dalal, Misra — Part 3 of the book).

What lives here is what is specific to the paper; softmax and the generic closed-form backward of
an attention head come from :mod:`nextword.attention`.

* the head of §2.1 with its cross-entropy readout (Eqs. (1)–(9)) — :func:`head_forward`;
* the upstream signal ``u_i`` (Eqs. (10), (14)), compatibility ``b_ij`` (11), its attention mean
  (12), the advantage form of the score gradient (23) and the advantage matrix of §4.1;
* the responsibility-weighted value signal ``ū_j`` (37) and update ``Δv_j = -η ū_j`` (33), (38);
* the first-order loss change of a value update (39)–(41) and its dominant-query approximation
  (42)–(43), beside the exact change (:func:`exact_value_update_loss_change`);

The §8.1 diagnostics (column usage, value norms) and PCA of value trajectories (Figs. 5 and 9) live
in :mod:`nextword.theory.dynamics.diagnostics`, the §7.1 toy simulation in
:mod:`nextword.theory.dynamics.toy` and the §7.2 sticky-chain EM-like vs SGD protocols in
:mod:`nextword.theory.dynamics.sticky`; the package :mod:`nextword.theory.dynamics` exports them all.

Conventions
-----------
**Row vectors**, as in Chapter 6 (the paper writes column vectors ``q_i = W_Q x_i``). A sequence is
``X (T, d_x)``; ``Q = X W_Q`` with ``W_Q (d_x, d_k)`` — the transpose of the paper's ``W_Q`` —, and
likewise ``K = X W_K``, ``V = X W_V (T, d_v)``, logits ``ℓ = G W_O + b`` with ``W_O (d_v, C)``.
Attention is ``α = softmax(Q K^T / sqrt(d_k))`` row by row (query ``i`` = row ``i``), optionally
causal (query ``i`` sees keys ``j <= i``). The loss is the **sum** over positions, Eq. (9), unless
``reduction="mean"`` is asked for. With the sum, ``u_i = ∂L/∂g_i`` exactly as in Eq. (10).

Worked example (two positions, the first value helps query 0, the second hurts it)::

    >>> alpha = np.array([[0.5, 0.5], [0.5, 0.5]])
    >>> U = np.array([[1.0, 0.0], [0.0, 0.0]])
    >>> V = np.array([[-1.0, 0.0], [1.0, 0.0]])
    >>> B = compatibility_matrix(U, V)            # b_ij = u_i . v_j
    >>> B[0].tolist()
    [-1.0, 1.0]
    >>> advantage_matrix(alpha, B)[0].tolist()    # A_ij = -(b_ij - E_alpha_i[b]): route to v_0
    [1.0, -1.0]
    >>> score_gradient(alpha, B)[0].tolist()      # Eq. (23): descent raises s_00, lowers s_01
    [-0.5, 0.5]
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from nextword._validate import (
    as_float_array,
    as_index_array,
    check_finite_scalar,
    check_flag,
    check_positive_int,
    check_real,
)
from nextword.attention.core import log_softmax, scaled_dot_product_attention
from nextword.perturbation import nudge

__all__ = [
    "HeadParams",
    "HeadForward",
    "HeadGradients",
    "head_forward",
    "cross_entropy",
    "per_position_loss",
    "upstream_gradient",
    "head_gradients",
    "compatibility_matrix",
    "expected_compatibility",
    "advantage_matrix",
    "score_gradient",
    "responsibility_signal",
    "value_update",
    "first_order_loss_change",
    "dominant_query_loss_change",
    "exact_value_update_loss_change",
]

_REDUCTIONS = ("sum", "mean")


# --------------------------------------------------------------------------------------------
# parameters and forward pass (§2.1)
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class HeadParams:
    """Parameters of the single head of §2.1 in row-vector form.

    ``W_Q, W_K (d_x, d_k)``, ``W_V (d_x, d_v)``, ``W_O (d_v, C)``, ``b (C,)``.
    """

    W_Q: np.ndarray
    W_K: np.ndarray
    W_V: np.ndarray
    W_O: np.ndarray
    b: np.ndarray

    def __post_init__(self) -> None:
        for name in ("W_Q", "W_K", "W_V", "W_O"):
            object.__setattr__(self, name, as_float_array(getattr(self, name), name, ndim=2))
        object.__setattr__(self, "b", as_float_array(self.b, "b", ndim=1))
        d_x, d_k = self.W_Q.shape
        if self.W_K.shape != (d_x, d_k):
            raise ValueError(f"W_K must have shape (d_x, d_k) = {(d_x, d_k)}, got {self.W_K.shape}")
        if self.W_V.shape[0] != d_x:
            raise ValueError(f"W_V must have shape (d_x, d_v) with d_x = {d_x}, got {self.W_V.shape}")
        d_v = self.W_V.shape[1]
        if self.W_O.shape[0] != d_v:
            raise ValueError(f"W_O must have shape (d_v, C) with d_v = {d_v}, got {self.W_O.shape}")
        if self.b.shape != (self.W_O.shape[1],):
            raise ValueError(f"b must have shape (C,) = ({self.W_O.shape[1]},), got {self.b.shape}")

    @classmethod
    def init(
        cls, d_x: int, d_k: int, d_v: int, num_classes: int, *, rng: np.random.Generator, scale: float = 0.1
    ) -> HeadParams:
        """Small Gaussian initialisation ``N(0, scale^2)`` for every matrix, ``b = 0`` (§7.1)."""
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a numpy Generator, got {type(rng).__name__}")
        d_x, d_k, d_v, C = (
            check_positive_int(n, name)
            for n, name in ((d_x, "d_x"), (d_k, "d_k"), (d_v, "d_v"), (num_classes, "num_classes"))
        )
        if not (np.isfinite(scale) and scale > 0):
            raise ValueError(f"scale must be a positive finite number, got {scale}")
        return cls(
            W_Q=scale * rng.standard_normal((d_x, d_k)),
            W_K=scale * rng.standard_normal((d_x, d_k)),
            W_V=scale * rng.standard_normal((d_x, d_v)),
            W_O=scale * rng.standard_normal((d_v, C)),
            b=np.zeros(C),
        )

    @property
    def dims(self) -> tuple[int, int, int, int]:
        """``(d_x, d_k, d_v, C)``."""
        return self.W_Q.shape[0], self.W_Q.shape[1], self.W_V.shape[1], self.W_O.shape[1]

    def nudged(self) -> HeadParams:
        """These parameters as a trainer starts from them: nudged when ``NEXTWORD_PERTURB`` is set
        (:func:`nextword.perturbation.nudge`, the perturbation pass), else ``self``."""
        names = ("W_Q", "W_K", "W_V", "W_O", "b")
        nudged = {n: nudge(getattr(self, n), f"HeadParams.{n}") for n in names}
        return self if all(nudged[n] is getattr(self, n) for n in names) else replace(self, **nudged)

    def sgd(self, grads: HeadGradients, lr: float, *, only: tuple[str, ...] | None = None) -> HeadParams:
        """One gradient-descent step ``θ ← θ - lr ∇θ`` on the named fields (all by default)."""
        names = ("W_Q", "W_K", "W_V", "W_O", "b") if only is None else only
        return replace(self, **{n: getattr(self, n) - lr * getattr(grads, n) for n in names})


@dataclass(frozen=True)
class HeadForward:
    """Every intermediate of the forward pass, Eqs. (1)–(8) (row vectors).

    ``X (T, d_x)``, ``Q, K (T, d_k)``, ``V (T, d_v)``, ``alpha (T, T)`` (rows sum to 1; zero above
    the diagonal when causal), ``G (T, d_v)``, ``logits, log_probs, probs (T, C)``.
    """

    X: np.ndarray
    Q: np.ndarray
    K: np.ndarray
    V: np.ndarray
    alpha: np.ndarray
    G: np.ndarray
    logits: np.ndarray
    log_probs: np.ndarray
    causal: bool

    @property
    def probs(self) -> np.ndarray:
        """``p_i = softmax(ℓ_i)``, Eq. (8), shape ``(T, C)``."""
        return np.exp(self.log_probs)


def _check_X(X: object, d_x: int, *, batched: bool = False) -> np.ndarray:
    X = as_float_array(X, "X", **({"min_ndim": 2} if batched else {"ndim": 2}))
    if X.shape[-1] != d_x:
        shape = "(..., T, d_x)" if batched else "(T, d_x)"
        raise ValueError(f"X must have shape {shape} with d_x = {d_x}, got {X.shape}")
    return X


def check_targets(y: object, T: int | tuple[int, ...], C: int, of: str) -> np.ndarray:
    """``y`` as class indices in ``[0, C)``, one per position of ``T`` (the positions of the argument ``of``)."""
    if C == 0:
        raise ValueError(f"{of} must have at least one class column, got C = 0")
    y = as_index_array(y, "y", upper=C)
    shape = (T,) if isinstance(T, int) else tuple(T)
    if y.shape != shape:
        raise ValueError(f"y must have shape {shape} (one class per position of {of}), got {y.shape}")
    return y


def head_forward(params: HeadParams, X: object, *, causal: bool = False) -> HeadForward:
    """Forward pass of the §2.1 head: Eqs. (1)–(8), scores scaled by ``1/sqrt(d_k)`` (Eq. (4)).

    ``X (..., T, d_x)`` -> :class:`HeadForward` (leading axes = a batch of sequences). Attention
    comes from :func:`nextword.attention.core.scaled_dot_product_attention`.

    >>> p = HeadParams.init(3, 2, 2, 3, rng=np.random.default_rng(0))
    >>> f = head_forward(p, np.eye(3), causal=True)
    >>> f.alpha.shape, float(f.alpha[0, 0])
    ((3, 3), 1.0)
    """
    causal = check_flag(causal, "causal")
    if not isinstance(params, HeadParams):
        raise TypeError(f"params must be HeadParams, got {type(params).__name__}")
    X = _check_X(X, params.dims[0], batched=True)
    Q, K, V = X @ params.W_Q, X @ params.W_K, X @ params.W_V  # (..., T, d_k) x2, (..., T, d_v)
    G, alpha = scaled_dot_product_attention(Q, K, V, causal=causal, return_weights=True)
    logits = G @ params.W_O + params.b  # (..., T, C), Eq. (7)
    return HeadForward(
        X=X, Q=Q, K=K, V=V, alpha=alpha, G=G, logits=logits, log_probs=log_softmax(logits), causal=bool(causal)
    )


def per_position_loss(log_probs: object, y: object) -> np.ndarray:
    """``L_i = -log p_{i, y_i}``, shape ``(T,)`` (the terms of Eq. (9))."""
    lp = as_float_array(log_probs, "log_probs", ndim=2, finite=False)
    y = check_targets(y, lp.shape[0], lp.shape[1], "log_probs")
    losses = -lp[np.arange(lp.shape[0]), y]  # (T,)
    total = float(losses.sum())  # one scalar check: NaN, or -inf (a log-prob of +inf), reaches the sum
    if total != total or total == -np.inf:
        raise ValueError("log_probs must be log-probabilities (finite or -inf), got NaN or +inf at a target")
    return losses


def cross_entropy(log_probs: object, y: object, *, reduction: str = "sum") -> float:
    """Eq. (9): ``L = -Σ_i log p_{i, y_i}`` (``reduction="mean"`` divides by ``T``)."""
    if not isinstance(reduction, str) or reduction not in _REDUCTIONS:
        raise ValueError(f"reduction must be one of {_REDUCTIONS}, got {reduction!r}")
    losses = per_position_loss(log_probs, y)
    return float(losses.sum() if reduction == "sum" else losses.mean())


def upstream_gradient(probs: object, y: object, W_O: object) -> np.ndarray:
    """``u_i = ∂L/∂g_i = W_O^T (p_i - e_{y_i})``, Eqs. (10), (13)–(14), for the summed loss (9).

    Row form: ``U = (P - Y) W_O^T`` with ``P (T, C)``, one-hot ``Y (T, C)``, ``W_O (d_v, C)``
    -> ``U (T, d_v)``.
    """
    P = as_float_array(probs, "probs", ndim=2)
    W_O = as_float_array(W_O, "W_O", ndim=2)
    if W_O.shape[1] != P.shape[1]:
        raise ValueError(f"W_O must have shape (d_v, C) with C = {P.shape[1]}, got {W_O.shape}")
    y = check_targets(y, P.shape[0], P.shape[1], "probs")
    delta = P.copy()
    delta[np.arange(P.shape[0]), y] -= 1.0  # (T, C): p_i - e_{y_i}, Eq. (13)
    return delta @ W_O.T


# --------------------------------------------------------------------------------------------
# gradients (§3) via nextword.attention.core.attention_backward
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class HeadGradients:
    """Gradients of Eq. (9) (summed, or divided by ``T`` for ``reduction="mean"``).

    Parameter gradients share :class:`HeadParams`' field names and shapes; ``U (T, d_v)``,
    ``dS (T, T)`` (Eq. (23)), ``dV (T, d_v)`` (Eq. (16)) are the per-position intermediates,
    ``probs (T, C)`` the predictive distributions and ``loss`` the loss at the point where the
    gradients were taken.
    """

    W_Q: np.ndarray
    W_K: np.ndarray
    W_V: np.ndarray
    W_O: np.ndarray
    b: np.ndarray
    U: np.ndarray
    dS: np.ndarray
    dV: np.ndarray
    probs: np.ndarray
    loss: float


def head_gradients(
    params: HeadParams, X: object, y: object, *, causal: bool = False, reduction: str = "sum"
) -> HeadGradients:
    """All first-order gradients of §3 — Eqs. (13)–(16), (23), (25)–(32).

    ``X (T, d_x)``, ``y (T,)`` — or a batch ``X (..., T, d_x)``, ``y (..., T)`` whose weight
    gradients are summed over the sequences (per-position fields keep the batch axes).

    The readout (13)–(14) is :func:`nextword.attention.core.cross_entropy_upstream` and the attention
    part (``∂L/∂s``, ``∂L/∂Q``, ``∂L/∂K``, ``∂L/∂V`` and the weight gradients (29)–(32) in row
    form) is :func:`nextword.attention.core.attention_backward`; this function only assembles them and
    adds ``∇W_O = G^T (P - Y)``, ``∇b = Σ_i (p_i - e_{y_i})``. ``reduction="mean"`` divides every
    gradient (and the loss) by the number of positions.
    """
    causal = check_flag(causal, "causal")
    from nextword.attention import attention_backward, cross_entropy_upstream

    if not isinstance(reduction, str) or reduction not in _REDUCTIONS:
        raise ValueError(f"reduction must be one of {_REDUCTIONS}, got {reduction!r}")
    if not isinstance(params, HeadParams):
        raise TypeError(f"params must be HeadParams, got {type(params).__name__}")
    X = _check_X(X, params.dims[0], batched=True)
    y = check_targets(y, X.shape[:-1], params.dims[3], "X")
    w = 1.0 if reduction == "sum" else 1.0 / y.size
    G = scaled_dot_product_attention(X @ params.W_Q, X @ params.W_K, X @ params.W_V, causal=causal)
    ce = cross_entropy_upstream(G, params.W_O, params.b, y)  # Eqs. (7)-(9), (13)-(14)
    U = w * ce.upstream  # (..., T, d_v)
    g = attention_backward(X, params.W_Q, params.W_K, params.W_V, U, causal=causal)
    d_v, C = params.dims[2], params.dims[3]
    dlogits = w * ce.dlogits.reshape(-1, C)  # (N, C), N = all positions of all sequences
    return HeadGradients(
        W_Q=g.W_Q,
        W_K=g.W_K,
        W_V=g.W_V,
        W_O=G.reshape(-1, d_v).T @ dlogits,
        b=dlogits.sum(axis=0),
        U=U,
        dS=g.scores,
        dV=g.v,
        probs=ce.probs,
        loss=w * ce.loss,
    )


# --------------------------------------------------------------------------------------------
# compatibility, advantage, routing (§2.2, §3.4, §4.1)
# --------------------------------------------------------------------------------------------
def check_alpha(alpha: object) -> np.ndarray:
    a = as_float_array(alpha, "alpha", ndim=2)
    if a.shape[0] != a.shape[1]:
        raise ValueError(f"alpha must be a square (T, T) attention matrix, got {a.shape}")
    if np.any(a < 0) or not np.allclose(a.sum(axis=1), 1.0, atol=1e-6):
        raise ValueError("alpha must be row-stochastic: entries >= 0 and every row summing to 1")
    return a


def compatibility_matrix(U: object, V: object) -> np.ndarray:
    """``B = (b_ij) = (u_i · v_j)``, Eq. (11) (§8.1's compatibility matrix): ``U (T, d_v)``,
    ``V (T, d_v)`` -> ``(T, T)``."""
    U = as_float_array(U, "U", ndim=2)
    V = as_float_array(V, "V", ndim=2)
    if U.shape[1] != V.shape[1]:
        raise ValueError(f"U (T, d_v) and V (T, d_v) must share d_v, got {U.shape} and {V.shape}")
    return U @ V.T


def _check_pair(alpha: object, B: object) -> tuple[np.ndarray, np.ndarray]:
    a = check_alpha(alpha)
    B = as_float_array(B, "B", ndim=2)
    if B.shape != a.shape:
        raise ValueError(f"B must have the shape of alpha {a.shape}, got {B.shape}")
    return a, B


def expected_compatibility(alpha: object, B: object) -> np.ndarray:
    """``E_{α_i}[b] = Σ_j α_ij b_ij``, Eq. (12), shape ``(T,)``."""
    a, B = _check_pair(alpha, B)
    return np.sum(a * B, axis=1)


def score_gradient(alpha: object, B: object) -> np.ndarray:
    """``∂L/∂s_ij = α_ij (b_ij - E_{α_i}[b])``, Eq. (23) (the advantage form), shape ``(T, T)``.

    Masked entries (``α_ij = 0``) get 0.
    """
    a, B = _check_pair(alpha, B)
    return a * (B - np.sum(a * B, axis=1, keepdims=True))


def advantage_matrix(alpha: object, B: object) -> np.ndarray:
    """``A_ij = -(b_ij - E_{α_i}[b])`` (§3.4, §4.1), shape ``(T, T)``.

    ``A_ij > 0``: raising ``s_ij`` lowers the loss, so descent routes query ``i`` towards ``j``.
    Entries with ``α_ij = 0`` (masked keys) are set to 0. (§8.1's "advantage matrix" is ``-A``.)
    """
    a, B = _check_pair(alpha, B)
    A = -(B - np.sum(a * B, axis=1, keepdims=True))
    return np.where(a > 0, A, 0.0)


# --------------------------------------------------------------------------------------------
# responsibility-weighted values and the first-order loss change (§4.2–4.3)
# --------------------------------------------------------------------------------------------
def _check_alpha_U(alpha: object, U: object) -> tuple[np.ndarray, np.ndarray]:
    a = check_alpha(alpha)
    U = as_float_array(U, "U", ndim=2)
    if U.shape[0] != a.shape[0]:
        raise ValueError(f"U must have shape (T, d_v) with T = {a.shape[0]}, got {U.shape}")
    return a, U


def responsibility_signal(alpha: object, U: object) -> np.ndarray:
    """``ū_j = Σ_i α_ij u_i``, Eq. (37) (= ``∂L/∂v_j``, Eq. (16)): ``α^T U``, shape ``(T, d_v)``."""
    a, U = _check_alpha_U(alpha, U)
    return a.T @ U


def value_update(alpha: object, U: object, lr: float) -> np.ndarray:
    """``Δv_j = -η Σ_i α_ij u_i``, Eqs. (33), (38), for every column ``j``: shape ``(T, d_v)``."""
    lr = check_real(lr, "lr", lo=0.0, lo_open=True)
    return -lr * responsibility_signal(alpha, U)


def _check_column(j: int, T: int) -> int:
    j = check_positive_int(j, "j", minimum=0)
    if j >= T:
        raise ValueError(f"j must index a key position in [0, {T}), got {j}")
    return j


def first_order_loss_change(alpha: object, U: object, j: int, lr: float) -> np.ndarray:
    """Eq. (41): ``ΔL_i ≈ -η α_ij Σ_r α_rj u_i·u_r`` when only ``v_j`` takes the step (33).

    Returns the per-query changes, shape ``(T,)``; their sum is ``-η ||ū_j||^2 <= 0``.
    """
    check_finite_scalar(lr, "lr")
    a, U = _check_alpha_U(alpha, U)
    j = _check_column(j, a.shape[0])
    ubar_j = a[:, j] @ U  # (d_v,), Eq. (37)
    return -lr * a[:, j] * (U @ ubar_j)


def dominant_query_loss_change(alpha: object, U: object, j: int, lr: float) -> np.ndarray:
    """Eq. (43): ``ΔL_i ≈ -η α_ij^2 ||u_i||^2``, shape ``(T,)`` — exact to first order only for
    the query that dominates column ``j`` (``α_ij ≫ α_rj``, ``r ≠ i``)."""
    check_finite_scalar(lr, "lr")
    a, U = _check_alpha_U(alpha, U)
    j = _check_column(j, a.shape[0])
    return -lr * a[:, j] ** 2 * np.sum(U * U, axis=1)


def exact_value_update_loss_change(
    alpha: object, V: object, W_O: object, b: object, y: object, j: int, lr: float
) -> np.ndarray:
    """The exact per-query change of ``L_i`` when only ``v_j`` moves by Eq. (33), α held fixed.

    This is what (41) and (43) approximate; it needs the readout ``W_O (d_v, C)``, ``b (C,)`` and
    the targets ``y (T,)``. Returns ``L_i(after) - L_i(before)``, shape ``(T,)``.
    """
    a = check_alpha(alpha)
    V = as_float_array(V, "V", ndim=2)
    W_O = as_float_array(W_O, "W_O", ndim=2)
    b = as_float_array(b, "b", ndim=1)
    if V.shape[0] != a.shape[0] or V.shape[1] != W_O.shape[0] or b.shape != (W_O.shape[1],):
        raise ValueError(
            f"shapes must be V (T, d_v), W_O (d_v, C), b (C,) with T = {a.shape[0]}; "
            f"got V {V.shape}, W_O {W_O.shape}, b {b.shape}"
        )
    j = _check_column(j, a.shape[0])
    y = check_targets(y, a.shape[0], W_O.shape[1], "alpha")

    def losses(values: np.ndarray) -> np.ndarray:
        return per_position_loss(log_softmax(a @ values @ W_O + b), y)

    before = losses(V)
    U = upstream_gradient(np.exp(log_softmax(a @ V @ W_O + b)), y, W_O)
    V_new = V.copy()
    V_new[j] += value_update(a, U, lr)[j]
    return losses(V_new) - before
