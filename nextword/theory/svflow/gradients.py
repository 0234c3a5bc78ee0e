"""Gradients of SVFlow's hybrid objective in closed form — Liao, Appendix B.1–B.3 (Eqs. 35–65).

A discrete-time SVFlow with ``L`` layers moves a state ``x^0 -> x^L`` by Euler steps (Eq. 35),

    x^{l+1} = x^l + sum_z q_l(z|x^l) s_l(x^l, z),

and is trained with the hybrid objective (Eq. 36)

    J = -log softmax(W_cls^T x^L)_y  +  beta * sum_l KL(q_l(.|x^l) || p_l(.|x^l)).

Here each layer is a Gaussian mixture (the 2-D model of §3.3 with isotropic components):

* posterior ``q_l(z|x) = softmax(g_l(x))_z`` with linear logits ``g_l(x) = W_g x + b_g``
  (the parameters ``phi_l``);
* likelihood ``p_l(x|z) = N(x; mu_z, sigma_z^2 I)`` with a uniform prior ``p(z)``, score
  ``s_l(x, z) = -(x - mu_z) / sigma_z^2`` and posterior ``p_l(z|x)`` by Bayes (the parameters
  ``theta_l = (mu, log sigma^2)``).

:func:`hybrid_forward` evaluates the objective; :func:`hybrid_gradients` returns the paper's closed
forms — the advantages ``A_l(z)`` (Eq. 41), ``B_{k,l}(z)`` (Eq. 42), ``R_l(z)`` (Eq. 45), the total
advantage ``eta_l(z)`` (Eq. 53), the posterior gradient of Eq. (52) and the score gradient of
Eq. (65) — with the error signals ``delta_l = dJ_align/dx^l`` and ``gamma_{k,l} = dJ_var^k/dx^l``
back-propagated through the flow's Jacobians. The functions are independent of any autograd: the
book checks them against finite differences (:func:`flatten_params`) and torch.

Conventions: vectors are 1-D arrays (one sample, as in App. B), ``W_g`` is ``(Z, d)`` so that
``g = W_g @ x``; ``W_cls`` is ``(d, C)`` as in ``softmax(W^T x^L)``.

Worked example (the centring of Eq. 53: the posterior gradient ignores a common logit shift)::

    >>> rng = np.random.default_rng(0)
    >>> layers = [random_gaussian_layer(2, 3, rng) for _ in range(2)]
    >>> grads = hybrid_gradients(np.array([0.3, -0.2]), layers, rng.normal(size=(2, 2)), 1, beta=0.5)
    >>> abs(float(grads.grad_b_g[0].sum())) < 1e-12      # sum_z q(z) eta(z) = 0
    True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

__all__ = [
    "GaussianFlowLayer",
    "random_gaussian_layer",
    "HybridForward",
    "HybridGradients",
    "hybrid_forward",
    "hybrid_gradients",
    "flatten_params",
    "unflatten_params",
    "MoEStep",
    "moe_forward_backward",
    "AttentionRoleStep",
    "attention_role_gradients",
]


@dataclass(frozen=True)
class GaussianFlowLayer:
    """One Euler step of Eq. (35): posterior logits ``W_g x + b_g`` and isotropic Gaussian components.

    Shapes: ``W_g (Z, d)``, ``b_g (Z,)``, ``means (Z, d)``, ``log_vars (Z,)`` (``log sigma_z^2``).
    """

    W_g: np.ndarray
    b_g: np.ndarray
    means: np.ndarray
    log_vars: np.ndarray

    def __post_init__(self) -> None:
        W = np.asarray(self.W_g, dtype=np.float64)
        if W.ndim != 2:
            raise ValueError(f"W_g must have shape (Z, d), got {W.shape}")
        Z, d = W.shape
        for name, shape in (("b_g", (Z,)), ("means", (Z, d)), ("log_vars", (Z,))):
            arr = np.asarray(getattr(self, name), dtype=np.float64)
            if arr.shape != shape:
                raise ValueError(f"{name} must have shape {shape} (Z = {Z}, d = {d}), got {arr.shape}")
            if not np.all(np.isfinite(arr)):
                raise ValueError(f"{name} must be finite")
        for name in ("W_g", "b_g", "means", "log_vars"):
            object.__setattr__(self, name, np.asarray(getattr(self, name), dtype=np.float64))

    @property
    def n_components(self) -> int:
        return int(self.W_g.shape[0])

    @property
    def dim(self) -> int:
        return int(self.W_g.shape[1])


def random_gaussian_layer(d: int, Z: int, rng: np.random.Generator, *, scale: float = 1.0) -> GaussianFlowLayer:
    """A layer with standard-normal logits weights and means (times ``scale``) and variances in [0.5, 2].

    >>> random_gaussian_layer(2, 3, np.random.default_rng(0)).means.shape
    (3, 2)
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError("rng must be a numpy.random.Generator")
    if d < 1 or Z < 1:
        raise ValueError(f"d and Z must be >= 1, got d = {d}, Z = {Z}")
    return GaussianFlowLayer(
        scale * rng.normal(size=(Z, d)),
        0.5 * rng.normal(size=Z),
        scale * rng.normal(size=(Z, d)),
        np.log(rng.uniform(0.5, 2.0, size=Z)),
    )


@dataclass(frozen=True)
class HybridForward:
    """States ``xs (L+1, d)``, posteriors ``q (L, Z)``, true posteriors ``p (L, Z)``, scores
    ``s (L, Z, d)``, the task loss ``J_align``, the per-layer ``J_var (L,)`` and the total ``J``."""

    xs: np.ndarray
    q: np.ndarray
    p: np.ndarray
    s: np.ndarray
    J_align: float
    J_var: np.ndarray
    J: float


def _check(x0: object, layers: list[GaussianFlowLayer], W_cls: object, y: int, beta: float):
    x0 = np.asarray(x0, dtype=np.float64)
    if x0.ndim != 1:
        raise ValueError(f"x0 must be one state of shape (d,), got {x0.shape}")
    if not layers or not all(isinstance(layer, GaussianFlowLayer) for layer in layers):
        raise TypeError("layers must be a non-empty list of GaussianFlowLayer")
    if any(layer.dim != x0.shape[0] for layer in layers):
        raise ValueError(f"every layer must act on d = {x0.shape[0]} (the length of x0)")
    W_cls = np.asarray(W_cls, dtype=np.float64)
    if W_cls.ndim != 2 or W_cls.shape[0] != x0.shape[0]:
        raise ValueError(f"W_cls must have shape (d, C) with d = {x0.shape[0]}, got {W_cls.shape}")
    if not 0 <= int(y) < W_cls.shape[1]:
        raise ValueError(f"y must be a class index in [0, {W_cls.shape[1]}), got {y}")
    if beta < 0:
        raise ValueError(f"beta must be >= 0, got {beta}")
    return x0, W_cls, int(y), float(beta)


def _layer_quantities(x: np.ndarray, layer: GaussianFlowLayer):
    """q, p(z|x), scores s (Z, d), variances (Z,), log p(x|z) (Z,) at one state."""
    g = layer.W_g @ x + layer.b_g  # (Z,)
    log_q = g - logsumexp(g)
    var = np.exp(layer.log_vars)  # (Z,)
    diff = x[None, :] - layer.means  # (Z, d)
    d = x.shape[0]
    log_lik = -0.5 * (diff**2).sum(axis=1) / var - 0.5 * d * (np.log(2 * np.pi) + layer.log_vars)
    log_p = log_lik - logsumexp(log_lik)  # uniform prior cancels
    s = -diff / var[:, None]  # (Z, d), s(x, z) = grad log p(x|z)
    return np.exp(log_q), log_q, np.exp(log_p), log_p, s, var, diff


def hybrid_forward(x0: object, layers: list[GaussianFlowLayer], W_cls: object, y: int, beta: float) -> HybridForward:
    """Run Eq. (35) and evaluate the hybrid objective of Eq. (36) for one sample ``(x0, y)``.

    >>> rng = np.random.default_rng(1)
    >>> out = hybrid_forward(np.zeros(2), [random_gaussian_layer(2, 3, rng)], np.eye(2), 0, beta=1.0)
    >>> out.xs.shape, bool(out.J_var[0] >= 0)
    ((2, 2), True)
    """
    x0, W_cls, y, beta = _check(x0, layers, W_cls, y, beta)
    xs, qs, ps, ss, jv = [x0], [], [], [], []
    for layer in layers:
        x = xs[-1]
        q, log_q, p, log_p, s, _, _ = _layer_quantities(x, layer)
        jv.append(float(np.sum(q * (log_q - log_p))))  # KL(q || p), J_var^l
        xs.append(x + q @ s)  # Eq. (35)
        qs.append(q)
        ps.append(p)
        ss.append(s)
    logits = W_cls.T @ xs[-1]  # (C,)
    J_align = float(logsumexp(logits) - logits[y])
    J_var = np.array(jv)
    return HybridForward(
        np.array(xs), np.array(qs), np.array(ps), np.array(ss), J_align, J_var, J_align + beta * float(J_var.sum())
    )


@dataclass(frozen=True)
class HybridGradients:
    """Closed-form gradients (lists over layers) and the advantages of App. B.

    ``A[l] (Z,)`` Eq. (41); ``B[l] (L, Z)`` with row k = ``B_{k,l}`` (zero for k <= l), Eq. (42);
    ``R[l] (Z,)`` Eq. (45); ``eta[l] (Z,)`` Eq. (53); ``grad_W_g[l] (Z, d)``, ``grad_b_g[l] (Z,)``
    from Eq. (52); ``grad_means[l] (Z, d)``, ``grad_log_vars[l] (Z,)`` from Eq. (65);
    ``delta (L+1, d)`` = dJ_align/dx^l; ``gamma (L, L+1, d)`` with ``gamma[k, l]`` = dJ_var^k/dx^l.
    """

    A: list
    B: list
    R: list
    eta: list
    grad_W_g: list
    grad_b_g: list
    grad_means: list
    grad_log_vars: list
    delta: np.ndarray
    gamma: np.ndarray
    forward: HybridForward


def hybrid_gradients(
    x0: object, layers: list[GaussianFlowLayer], W_cls: object, y: int, beta: float
) -> HybridGradients:
    """The gradients of Eq. (36) by the paper's closed forms, Eqs. (41)–(53) and (56)–(65).

    Error signals: ``delta_L = W_cls (softmax(W_cls^T x^L) - e_y)`` and ``delta_l = F_l^T delta_{l+1}``
    with the step Jacobian ``F_l = dx^{l+1}/dx^l``; ``gamma_{k,k}`` is the local derivative of
    ``KL(q_k || p_k)`` in ``x^k`` and ``gamma_{k,l} = F_l^T gamma_{k,l+1}`` for ``l < k``.

    >>> rng = np.random.default_rng(0)
    >>> layers = [random_gaussian_layer(2, 3, rng)]
    >>> g = hybrid_gradients(np.array([0.1, 0.2]), layers, np.eye(2), 0, beta=0.0)
    >>> bool(np.all(g.B[0] == 0)), g.grad_means[0].shape
    (True, (3, 2))
    """
    x0, W_cls, y, beta = _check(x0, layers, W_cls, y, beta)
    fw = hybrid_forward(x0, layers, W_cls, y, beta)
    L = len(layers)
    d = x0.shape[0]
    # step Jacobians F_l and local KL derivatives
    F, local_kl_grad, cache = [], [], []
    for ell, layer in enumerate(layers):
        q, log_q, p, log_p, s, var, diff = _layer_quantities(fw.xs[ell], layer)
        Wc = layer.W_g - q @ layer.W_g  # (Z, d): grad_x g_z - E_q grad_x g
        # F = I + sum_z s_z (dq_z/dx)^T + sum_z q_z ds_z/dx, with dq_z/dx = q_z Wc_z, ds_z/dx = -I / var_z
        F.append(np.eye(d) * (1.0 - np.sum(q / var)) + (s * q[:, None]).T @ Wc)  # (d, d)
        R = log_q - log_p
        s_bar_p = p @ s  # E_{p(z|x)} s(x, z)
        # d/dx KL(q||p) = sum_z dq_z/dx R_z - sum_z q_z (s_z - s_bar_p)   (the sum_z dq_z/dx = 0 term dropped)
        local_kl_grad.append(((q * R) @ Wc) - q @ (s - s_bar_p[None, :]))
        cache.append((q, p, s, var, diff, R))
    probs = np.exp(W_cls.T @ fw.xs[-1] - logsumexp(W_cls.T @ fw.xs[-1]))
    delta = np.zeros((L + 1, d))
    delta[L] = W_cls @ (probs - np.eye(W_cls.shape[1])[y])
    for ell in range(L - 1, -1, -1):
        delta[ell] = F[ell].T @ delta[ell + 1]
    gamma = np.zeros((L, L + 1, d))
    for k in range(L):
        gamma[k, k] = local_kl_grad[k]
        for ell in range(k - 1, -1, -1):
            gamma[k, ell] = F[ell].T @ gamma[k, ell + 1]

    out: dict[str, list] = {
        n: [] for n in ("A", "B", "R", "eta", "grad_W_g", "grad_b_g", "grad_means", "grad_log_vars")
    }
    for ell in range(L):
        q, p, s, var, diff, R = cache[ell]
        x = fw.xs[ell]
        A = s @ delta[ell + 1]  # Eq. (41): A_l(z) = delta_{l+1}^T s(x^l, z)
        B = np.zeros((L, q.shape[0]))
        for k in range(ell + 1, L):
            B[k] = s @ gamma[k, ell + 1]  # Eq. (42)
        eta = (A - q @ A) + beta * (R - q @ R) + beta * (B - (B @ q)[:, None]).sum(axis=0)  # Eq. (53)
        grad_g = q * eta  # Eq. (52) before the chain to phi
        u = delta[ell + 1] + beta * gamma[ell + 1 :, ell + 1].sum(axis=0)  # delta_{l+1} + beta sum_k gamma_{k,l+1}
        # Eq. (65) with ds_z/dmu_z = I/var_z, ds_z/dlogvar_z = -s_z, dlog p(x|z)/dmu_z = diff_z/var_z,
        # dlog p(x|z)/dlogvar_z = |diff_z|^2/(2 var_z) - d/2
        grad_means = q[:, None] * u[None, :] / var[:, None] + beta * (p - q)[:, None] * diff / var[:, None]
        grad_log_vars = -q * (s @ u) + beta * (p - q) * ((diff**2).sum(axis=1) / (2 * var) - d / 2)
        for name, val in (
            ("A", A),
            ("B", B),
            ("R", R),
            ("eta", eta),
            ("grad_W_g", np.outer(grad_g, x)),
            ("grad_b_g", grad_g),
            ("grad_means", grad_means),
            ("grad_log_vars", grad_log_vars),
        ):
            out[name].append(val)
    return HybridGradients(**out, delta=delta, gamma=gamma, forward=fw)


_FIELDS = ("W_g", "b_g", "means", "log_vars")


def flatten_params(layers: list[GaussianFlowLayer]) -> np.ndarray:
    """All layer parameters as one vector (layer by layer, fields in the order W_g, b_g, means, log_vars).

    >>> layers = [random_gaussian_layer(2, 3, np.random.default_rng(0))]
    >>> bool(np.allclose(flatten_params(unflatten_params(flatten_params(layers), layers)), flatten_params(layers)))
    True
    """
    return np.concatenate([getattr(layer, f).ravel() for layer in layers for f in _FIELDS])


def unflatten_params(theta: object, like: list[GaussianFlowLayer]) -> list[GaussianFlowLayer]:
    """Inverse of :func:`flatten_params`, with the shapes of ``like``."""
    theta = np.asarray(theta, dtype=np.float64)
    n = sum(getattr(layer, f).size for layer in like for f in _FIELDS)
    if theta.shape != (n,):
        raise ValueError(f"theta must have shape ({n},), got {theta.shape}")
    out, i = [], 0
    for layer in like:
        parts = {}
        for f in _FIELDS:
            shape = getattr(layer, f).shape
            size = int(np.prod(shape))
            parts[f] = theta[i : i + size].reshape(shape)  # (size,) -> field shape
            i += size
        out.append(GaussianFlowLayer(**parts))
    return out


# --------------------------------------------------------------------------------------------
# App. B.4 / §4.4: MoE gating without a balancing loss
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class MoEStep:
    """Loss, gradients (``W_g (E, d)``, ``b_g (E,)``, ``experts (E, d_out, d)``) and the gates ``(N, E)``."""

    loss: float
    grad_W_g: np.ndarray
    grad_b_g: np.ndarray
    grad_experts: np.ndarray
    gates: np.ndarray


def moe_forward_backward(
    X: object, Y: object, W_g: object, b_g: object, experts: object, *, top1: bool = False
) -> MoEStep:
    """Soft MoE ``f(x) = sum_e g_e(x) A_e x`` with ``g = softmax(W_g x + b_g)`` (§4.3: the gate is the
    posterior, expert ``e`` the score) and the mean squared loss ``(1/2N) sum ||f(x) - y||^2``.

    ``X (N, d)``, ``Y (N, d_out)``, ``W_g (E, d)``, ``b_g (E,)``, ``experts (E, d_out, d)``. The gradient
    reaching expert ``e`` is ``(1/N) sum_n g_e(x_n) r_n x_n^T`` — proportional to its gate, which is why a
    rarely chosen expert stops learning (App. B.4). ``top1=True`` routes each input to its
    highest-gate expert only (Switch-style, ``f(x) = g_{e*}(x) A_{e*} x``): the other experts get exactly
    zero gradient from that input.

    >>> rng = np.random.default_rng(0)
    >>> st = moe_forward_backward(rng.normal(size=(5, 2)), rng.normal(size=(5, 1)), np.zeros((3, 2)),
    ...                           np.zeros(3), rng.normal(size=(3, 1, 2)))
    >>> st.gates.shape, bool(np.allclose(st.gates, 1 / 3))
    ((5, 3), True)
    """
    X = np.asarray(X, dtype=np.float64)
    Y = np.asarray(Y, dtype=np.float64)
    W_g = np.asarray(W_g, dtype=np.float64)
    b_g = np.asarray(b_g, dtype=np.float64)
    A = np.asarray(experts, dtype=np.float64)
    if X.ndim != 2 or Y.ndim != 2 or Y.shape[0] != X.shape[0]:
        raise ValueError(f"X must be (N, d) and Y (N, d_out), got {X.shape} and {Y.shape}")
    E, d = W_g.shape
    if A.shape != (E, Y.shape[1], d) or b_g.shape != (E,) or d != X.shape[1]:
        raise ValueError(
            f"need W_g (E, d), b_g (E,), experts (E, d_out, d) with d = {X.shape[1]}, "
            f"got {W_g.shape}, {b_g.shape}, {A.shape}"
        )
    N = X.shape[0]
    logits = X @ W_g.T + b_g  # (N, E)
    gates = np.exp(logits - logsumexp(logits, axis=1, keepdims=True))
    outs = np.einsum("eod,nd->neo", A, X)  # (N, E, d_out) expert outputs
    route = gates
    if top1:
        route = gates * (np.arange(E)[None, :] == np.argmax(gates, axis=1)[:, None])  # keep the chosen gate
    F = np.einsum("ne,neo->no", route, outs)  # (N, d_out)
    R = (F - Y) / N  # dL/dF
    loss = float(0.5 * N * (R**2).sum())
    grad_A = np.einsum("ne,no,nd->eod", route, R, X)
    dg = np.einsum("no,neo->ne", R, outs)  # dL/dg_e
    if top1:
        dg = dg * (route > 0)  # only the chosen gate enters f
    dlogits = gates * (dg - (gates * dg).sum(axis=1, keepdims=True))  # softmax backward (centred)
    return MoEStep(loss, dlogits.T @ X, dlogits.sum(axis=0), grad_A, gates)


# --------------------------------------------------------------------------------------------
# App. B.4 / §4.3: the attention side — one token representation, three roles
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AttentionRoleStep:
    """Loss, attention ``(N, T, T)``, the gradient of each role's embedding table ``(V, d)`` and of
    ``W_Q, W_K, W_V (d, d_h)`` and ``w_out (d_h,)``."""

    loss: float
    attention: np.ndarray
    grad_E_Q: np.ndarray
    grad_E_K: np.ndarray
    grad_E_V: np.ndarray
    grad_W_Q: np.ndarray
    grad_W_K: np.ndarray
    grad_W_V: np.ndarray
    grad_w_out: np.ndarray

    @property
    def grad_coupled(self) -> np.ndarray:
        """``dL/dE`` when one table plays all three roles (``E_Q = E_K = E_V = E``): the sum of the roles."""
        return self.grad_E_Q + self.grad_E_K + self.grad_E_V


def attention_role_gradients(
    ids: object,
    y: object,
    E_Q: object,
    E_K: object,
    E_V: object,
    W_Q: object,
    W_K: object,
    W_V: object,
    w_out: object,
) -> AttentionRoleStep:
    """One-head self-attention on token sequences with a logistic read-out at every position, and its
    gradients split by the role a token plays (App. B.4, "Why MHA Does Not Require Explicit Regularization").

    Token ``j`` of sequence ``n`` with id ``i = ids[n, j]`` enters as a query ``E_Q[i] W_Q``, a key
    ``E_K[i] W_K`` and a value ``E_V[i] W_V`` (row vectors, as in Chapter 6); every position attends to
    every position (no mask, no positions), ``A = softmax(Q K^T / sqrt(d_h))`` (the posterior ``q(z|x_q)``
    of Eq. 67), ``logit[n, t] = (A V)[n, t] @ w_out`` and the loss is the mean binary cross-entropy
    against ``y[n, t]`` in ``[0, 1]``.

    ``ids (N, T)`` integers in ``[0, V)``; ``y (N, T)``; ``E_Q, E_K, E_V (V, d)``; ``W_Q, W_K, W_V (d, d_h)``;
    ``w_out (d_h,)``. Passing the same table three times is the coupled model of the paper (keys, queries
    and values are projections of one representation): its gradient is :attr:`AttentionRoleStep.grad_coupled`,
    and ``grad_E_K``, ``grad_E_Q``, ``grad_E_V`` say how much of it arrives through each role. Passing three
    tables is the decoupled model, in which a token's key has parameters of its own, like an MoE gate row.

    >>> rng = np.random.default_rng(0)
    >>> E, W = rng.normal(size=(4, 3)), rng.normal(size=(3, 2))
    >>> st = attention_role_gradients(rng.integers(0, 4, (2, 5)), np.ones((2, 5)), E, E, E, W, W, W, np.ones(2))
    >>> st.attention.shape, st.grad_coupled.shape, bool(np.allclose(st.attention.sum(-1), 1))
    ((2, 5, 5), (4, 3), True)
    """
    ids = np.asarray(ids)
    if ids.ndim != 2 or not np.issubdtype(ids.dtype, np.integer):
        raise ValueError(f"ids must be an integer array of shape (N, T), got {ids.dtype} {ids.shape}")
    y = np.asarray(y, dtype=np.float64)
    if y.shape != ids.shape or np.any((y < 0) | (y > 1)):
        raise ValueError(f"y must have the shape of ids {ids.shape} with values in [0, 1], got {y.shape}")
    tables = [np.asarray(E, dtype=np.float64) for E in (E_Q, E_K, E_V)]
    if tables[0].ndim != 2 or any(E.shape != tables[0].shape for E in tables):
        raise ValueError(f"E_Q, E_K, E_V must share one shape (V, d), got {[E.shape for E in tables]}")
    n_vocab, d = tables[0].shape
    if ids.size and (ids.min() < 0 or ids.max() >= n_vocab):
        raise ValueError(f"ids must lie in [0, {n_vocab}) (the rows of E_Q, E_K, E_V)")
    projs = [np.asarray(W, dtype=np.float64) for W in (W_Q, W_K, W_V)]
    if projs[0].ndim != 2 or projs[0].shape[0] != d or any(W.shape != projs[0].shape for W in projs):
        raise ValueError(f"W_Q, W_K, W_V must share one shape (d, d_h) with d = {d}, got {[W.shape for W in projs]}")
    d_h = projs[0].shape[1]
    w_out = np.asarray(w_out, dtype=np.float64)
    if w_out.shape != (d_h,):
        raise ValueError(f"w_out must have shape (d_h,) = ({d_h},), got {w_out.shape}")
    N, T = ids.shape
    X = [E[ids] for E in tables]  # (N, T, d) the rows each role reads
    Q, K, Vv = (x @ W for x, W in zip(X, projs))  # (N, T, d_h)
    S = Q @ K.transpose(0, 2, 1) / np.sqrt(d_h)  # (N, T, T)
    A = np.exp(S - logsumexp(S, axis=-1, keepdims=True))
    O = A @ Vv  # (N, T, d_h)
    z = O @ w_out  # (N, T)
    loss = float(np.mean(np.logaddexp(0.0, z) - y * z))
    dz = (0.5 * (1.0 + np.tanh(0.5 * z)) - y) / (N * T)  # sigmoid(z) - y, averaged
    dO = dz[..., None] * w_out  # (N, T, d_h)
    dA = dO @ Vv.transpose(0, 2, 1)  # (N, T, T)
    dS = A * (dA - (A * dA).sum(axis=-1, keepdims=True)) / np.sqrt(d_h)  # softmax backward (centred)
    dQ, dK, dV = dS @ K, dS.transpose(0, 2, 1) @ Q, A.transpose(0, 2, 1) @ dO
    onehot = np.eye(n_vocab)[ids.ravel()]  # (N T, V): scatter-add of position gradients into table rows
    grads_W = [x.reshape(-1, d).T @ g.reshape(-1, d_h) for x, g in zip(X, (dQ, dK, dV))]
    grads_E = [onehot.T @ (g @ W.T).reshape(-1, d) for g, W in zip((dQ, dK, dV), projs)]
    return AttentionRoleStep(loss, A, *grads_E, *grads_W, np.einsum("nt,nth->h", dz, O))
