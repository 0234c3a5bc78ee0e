"""Score-based Variational Flow (SVFlow), Liao — *Transformer as an Euler Discretization of
Score-based Variational Flow*, §3 (definition, ELBO, gradient decomposition) and its Euler steps.

An SVFlow moves a state ``x`` with the vector field of Eq. (9),

    v_t(x) = E_{q_t(z|x)} [ grad_x log p_t(x|z) ],

a variational-posterior-weighted average of conditional scores over a discrete latent ``z``. The
functions here take everything in log space over the last axis ``Z`` (latent components):

* categorical helpers: :func:`categorical_kl`, :func:`kl_to_uniform`, :func:`entropy`;
* mixture identities: :func:`log_posterior`, :func:`log_marginal`, :func:`elbo` (Eq. 11),
  :func:`svflow_field` (Eq. 9), :func:`variational_error` (``epsilon_t`` of Eq. 12),
  :func:`softmax_grad_log` (``grad_x log q(z|x)`` for a softmax posterior);
* diagonal Gaussians, the paper's 2-D example (§3.3, App. C.1): :func:`gaussian_log_density`,
  :func:`gaussian_score`, and :class:`GaussianSVFlow` — one time slice with posterior family
  ``q(z|x) = softmax_z log q(x|z)`` and likelihood ``p(x|z)``, both diagonal Gaussians;
* Euler integration: :func:`euler_flow` (Euclidean) and :func:`spherical_euler_flow` (each step
  followed by the relaxed retraction, §4.4);
* :func:`rk4_flow_with_divergence` — a classical Runge–Kutta (RK4) integration of a flow together with
  the integral of its divergence, the log-volume change of §2.1's change of variables.

Geometry and the vMF family are in :mod:`nextword.theory.svflow.sphere`; attention / MoE readings
and the prefix-shuffling metrics in :mod:`nextword.theory.svflow.attention`; the torch hybrid
training of Fig. 1 in :mod:`nextword.torch.svflow.hybrid`.

Conventions: states are row vectors ``(..., d)``; per-component quantities have a trailing ``Z``
axis, ``(..., Z)`` or ``(..., Z, d)``. The prior ``p(z)`` is uniform unless ``log_prior`` is given.

Worked example (Prop. 3.2 for one point): ``log p(x) = ELBO + KL(q || p(z|x))``::

    >>> ll = np.log(np.array([0.2, 0.05]))           # log p(x|z) for z = 1, 2
    >>> lq = np.log(np.array([0.5, 0.5]))
    >>> lhs = float(log_marginal(ll))
    >>> rhs = float(elbo(lq, ll) + categorical_kl(lq, log_posterior(ll)))
    >>> abs(lhs - rhs) < 1e-12
    True
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from nextword._validate import (
    as_float_array,
    as_log_probs,
    check_broadcast,
    check_callable,
    check_unit_rows,
    check_finite_scalar,
    check_no_overflow,
    check_positive_int,
)
from nextword.attention.core import log_softmax

__all__ = [
    "categorical_kl",
    "kl_to_uniform",
    "entropy",
    "log_posterior",
    "log_marginal",
    "elbo",
    "svflow_field",
    "variational_error",
    "softmax_grad_log",
    "gaussian_log_density",
    "gaussian_score",
    "GaussianSVFlow",
    "euler_flow",
    "spherical_euler_flow",
    "rk4_flow_with_divergence",
]


# --------------------------------------------------------------------------------------------
# categorical helpers (log space, last axis = Z)
# --------------------------------------------------------------------------------------------


def categorical_kl(log_q: object, log_p: object) -> np.ndarray:
    """``KL(q || p) = sum_z q(z) (log q(z) - log p(z))`` over the last axis; ``0 log 0 = 0``.

    Shapes: ``(..., Z)`` and ``(..., Z)`` (broadcast) -> ``(...)``. Returns ``inf`` when ``q``
    puts mass where ``p`` has none.

    >>> float(categorical_kl(np.log([0.5, 0.5]), np.log([0.5, 0.5])))
    0.0
    """
    lq, lp = as_log_probs(log_q, "log_q"), as_log_probs(log_p, "log_p")
    if lq.shape[-1] != lp.shape[-1]:
        raise ValueError(f"log_q and log_p must share the last axis Z, got {lq.shape} and {lp.shape}")
    q = np.exp(lq)
    with np.errstate(invalid="ignore"):
        terms = np.where(q > 0, q * (lq - lp), 0.0)
    return np.sum(terms, axis=-1)


def entropy(log_q: object) -> np.ndarray:
    """Shannon entropy ``H(q) = -sum_z q log q`` (nats) over the last axis. ``(..., Z) -> (...)``."""
    lq = as_log_probs(log_q, "log_q")
    q = np.exp(lq)
    with np.errstate(invalid="ignore"):  # 0 * -inf where q = 0; masked by the where
        return -np.sum(np.where(q > 0, q * lq, 0.0), axis=-1)


def kl_to_uniform(log_q: object) -> np.ndarray:
    """Concentration ``KL(q || U) = log |Z| - H(q)`` (App. C.2.4, Eq. 71). ``(..., Z) -> (...)``."""
    lq = as_log_probs(log_q, "log_q")
    return np.log(lq.shape[-1]) - entropy(lq)


def _prior(log_prior: object | None, Z: int) -> np.ndarray:
    if log_prior is None:
        return np.full(Z, -np.log(Z))
    lp = as_log_probs(log_prior, "log_prior")
    if lp.shape[-1] != Z:
        raise ValueError(f"log_prior must have last axis Z={Z}, got shape {lp.shape}")
    return lp


def log_posterior(log_lik: object, log_prior: object | None = None) -> np.ndarray:
    """Bayes: ``log p(z|x) = log p(x|z) + log p(z) - log p(x)``. ``(..., Z) -> (..., Z)``."""
    ll = as_log_probs(log_lik, "log_lik", prob=False)
    return log_softmax(ll + _prior(log_prior, ll.shape[-1]), axis=-1)


def log_marginal(log_lik: object, log_prior: object | None = None) -> np.ndarray:
    """``log p(x) = logsumexp_z (log p(x|z) + log p(z))``. ``(..., Z) -> (...)``."""
    ll = as_log_probs(log_lik, "log_lik", prob=False)
    return logsumexp(ll + _prior(log_prior, ll.shape[-1]), axis=-1)


def elbo(log_q: object, log_lik: object, log_prior: object | None = None) -> np.ndarray:
    """Instantaneous ELBO, Eq. (11): ``E_q[log p(x|z)] - KL(q(z|x) || p(z))``. ``(..., Z) -> (...)``."""
    lq, ll = as_log_probs(log_q, "log_q"), as_log_probs(log_lik, "log_lik", prob=False)
    if lq.shape[-1] != ll.shape[-1]:
        raise ValueError(f"log_q and log_lik must share the last axis Z, got {lq.shape} and {ll.shape}")
    check_broadcast(log_q=lq, log_lik=ll)
    q = np.exp(lq)
    expected = np.sum(np.where(q > 0, q * ll, 0.0), axis=-1)
    return expected - categorical_kl(lq, _prior(log_prior, ll.shape[-1]))


def svflow_field(q: object, scores: object) -> np.ndarray:
    """SVFlow vector field, Eq. (9): ``v(x) = sum_z q(z|x) s(x, z)``.

    Shapes: ``q (..., Z)`` probabilities, ``scores (..., Z, d)`` -> ``(..., d)``.

    >>> svflow_field(np.array([0.25, 0.75]), np.array([[4.0, 0.0], [0.0, 4.0]]))
    array([1., 3.])
    """
    return _field(q, scores, "scores")


def _field(q: object, scores: object, name: str) -> np.ndarray:
    """:func:`svflow_field` with the scores' argument named ``name`` in errors."""
    q = as_float_array(q, "q", min_ndim=1).astype(np.float64)
    s = as_float_array(scores, name, min_ndim=2).astype(np.float64)
    if s.shape[-2] != q.shape[-1]:
        raise ValueError(f"{name} must have shape (..., Z, d) with Z={q.shape[-1]} (from q), got {s.shape}")
    return np.sum(q[..., :, None] * s, axis=-2)


def softmax_grad_log(q: object, grad_logits: object) -> np.ndarray:
    """``grad_x log q(z|x)`` for ``q = softmax_z g_z(x)``: ``grad g_z - sum_z' q(z') grad g_z'``.

    Shapes: ``q (..., Z)``, ``grad_logits (..., Z, d)`` (``grad_x g_z``) -> ``(..., Z, d)``.
    """
    q = as_float_array(q, "q", min_ndim=1).astype(np.float64)
    g = as_float_array(grad_logits, "grad_logits", min_ndim=2).astype(np.float64)
    return g - _field(q, g, "grad_logits")[..., None, :]


def variational_error(log_q: object, log_post: object, grad_log_q: object) -> np.ndarray:
    """``epsilon(x) = E_q[ log(p(z|x)/q(z|x)) grad_x log q(z|x) ]``, Theorem 3.3, Eq. (12).

    Shapes: ``log_q (..., Z)``, ``log_post (..., Z)``, ``grad_log_q (..., Z, d)`` -> ``(..., d)``.
    Components with ``q = 0`` contribute 0.
    """
    lq, lp = as_log_probs(log_q, "log_q"), as_log_probs(log_post, "log_post")
    check_broadcast(log_q=lq, log_post=lp)
    q = np.exp(lq)
    with np.errstate(invalid="ignore"):
        w = np.where(q > 0, q * (lp - lq), 0.0)  # (..., Z)
    return _field(w, grad_log_q, "grad_log_q")


# --------------------------------------------------------------------------------------------
# diagonal Gaussians (the 2-D example of §3.3 / App. C.1)
# --------------------------------------------------------------------------------------------
def _gauss_args(x: object, means: object, log_vars: object) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x = as_float_array(x, "x", min_ndim=1).astype(np.float64)
    m = as_float_array(means, "means", min_ndim=2).astype(np.float64)
    lv = as_float_array(log_vars, "log_vars", min_ndim=2).astype(np.float64)
    if m.shape[-1] != x.shape[-1] or lv.shape[-1] != x.shape[-1]:
        raise ValueError(
            f"means and log_vars must be (..., Z, d) with d={x.shape[-1]} (from x), got {m.shape} and {lv.shape}"
        )
    check_broadcast(means=m, log_vars=lv)
    check_broadcast(x=x[..., None, :], means=m)
    return x, m, lv


def gaussian_log_density(x: object, means: object, log_vars: object) -> np.ndarray:
    """``log N(x; m_z, diag exp(log_vars_z))`` for every component ``z``.

    Shapes: ``x (..., d)``, ``means (..., Z, d)``, ``log_vars (..., Z, d)`` -> ``(..., Z)``.
    """
    x, m, lv = _gauss_args(x, means, log_vars)
    diff = x[..., None, :] - m  # (..., Z, d)
    return -0.5 * np.sum(diff**2 * np.exp(-lv) + lv + np.log(2 * np.pi), axis=-1)


def gaussian_score(x: object, means: object, log_vars: object) -> np.ndarray:
    """``grad_x log N(x; m_z, diag sigma_z^2) = (m_z - x) / sigma_z^2``. ``-> (..., Z, d)``."""
    x, m, lv = _gauss_args(x, means, log_vars)
    return (m - x[..., None, :]) * np.exp(-lv)


@dataclass(frozen=True)
class GaussianSVFlow:
    """One time slice of a Gaussian SVFlow (§3.3, App. C.1): all four arrays have shape ``(Z, d)``.

    * variational posterior ``q(z|x) = softmax_z log q(x|z)``, ``q(x|z) = N(q_means_z, diag e^{q_log_vars_z})``;
    * conditional likelihood ``p(x|z) = N(p_means_z, diag e^{p_log_vars_z})``, uniform prior ``p(z) = 1/Z``.

    Every method takes ``x (..., d)``. The ideal case of Corollary 3.4 is ``q_* == p_*``.
    """

    q_means: np.ndarray
    q_log_vars: np.ndarray
    p_means: np.ndarray
    p_log_vars: np.ndarray

    def __post_init__(self) -> None:
        shapes = {n: np.shape(getattr(self, n)) for n in ("q_means", "q_log_vars", "p_means", "p_log_vars")}
        first = shapes["q_means"]
        if len(first) != 2 or any(s != first for s in shapes.values()):
            raise ValueError(f"all parameters must share one shape (Z, d), got {shapes}")
        for n in shapes:
            object.__setattr__(self, n, as_float_array(getattr(self, n), n).astype(np.float64))

    @property
    def Z(self) -> int:
        return self.q_means.shape[0]

    def log_q(self, x: object) -> np.ndarray:
        """``log q(z|x)``, ``(..., Z)``."""
        return log_softmax(gaussian_log_density(x, self.q_means, self.q_log_vars), axis=-1)

    def log_lik(self, x: object) -> np.ndarray:
        """``log p(x|z)``, ``(..., Z)``."""
        return gaussian_log_density(x, self.p_means, self.p_log_vars)

    def log_post(self, x: object) -> np.ndarray:
        """True posterior ``log p(z|x)``, ``(..., Z)``."""
        return log_posterior(self.log_lik(x))

    def log_marginal(self, x: object) -> np.ndarray:
        """``log p(x)`` of the mixture, ``(...)``."""
        return log_marginal(self.log_lik(x))

    def elbo(self, x: object) -> np.ndarray:
        """Eq. (11), ``(...)``."""
        return elbo(self.log_q(x), self.log_lik(x))

    def kl_gap(self, x: object) -> np.ndarray:
        """``KL(q(z|x) || p(z|x))`` — the ELBO gap of Prop. 3.2, ``(...)``."""
        return categorical_kl(self.log_q(x), self.log_post(x))

    def field(self, x: object) -> np.ndarray:
        """SVFlow field, Eq. (9), ``(..., d)``."""
        return svflow_field(np.exp(self.log_q(x)), gaussian_score(x, self.p_means, self.p_log_vars))

    def grad_log_q(self, x: object) -> np.ndarray:
        """``grad_x log q(z|x)``, ``(..., Z, d)``."""
        return softmax_grad_log(np.exp(self.log_q(x)), gaussian_score(x, self.q_means, self.q_log_vars))

    def epsilon(self, x: object) -> np.ndarray:
        """Variational error ``epsilon(x)`` of Eq. (12), ``(..., d)``."""
        return variational_error(self.log_q(x), self.log_post(x), self.grad_log_q(x))

    def marginal_score(self, x: object) -> np.ndarray:
        """``grad_x log p(x) = E_{p(z|x)}[grad_x log p(x|z)]`` (Fisher's identity), ``(..., d)``."""
        return svflow_field(np.exp(self.log_post(x)), gaussian_score(x, self.p_means, self.p_log_vars))


# --------------------------------------------------------------------------------------------
# Euler discretisation (§4.4)
# --------------------------------------------------------------------------------------------
Field = Callable[[np.ndarray, float], np.ndarray]


def euler_flow(x0: object, field: Field, n_steps: int, dt: float) -> np.ndarray:
    """Forward Euler ``x_{l+1} = x_l + dt v(x_l, t_l)``, ``t_l = l dt``; returns the whole path.

    Shapes: ``x0 (..., d)`` -> ``(n_steps + 1, ..., d)``; ``field(x, t)`` maps ``(..., d) -> (..., d)``.

    >>> path = euler_flow(np.array([1.0]), lambda x, t: -x, n_steps=2, dt=0.5)
    >>> path[:, 0]
    array([1.  , 0.5 , 0.25])
    """
    check_finite_scalar(dt, "dt")
    check_callable(field, "field")
    x = as_float_array(x0, "x0", min_ndim=1).astype(np.float64)
    n_steps = check_positive_int(n_steps, "n_steps")
    if not (np.isfinite(dt) and dt > 0):
        raise ValueError(f"dt must be a positive finite step, got {dt}")
    path = [x]
    for step in range(n_steps):
        v = np.asarray(field(x, step * dt), dtype=np.float64)
        if v.shape != x.shape:
            raise ValueError(f"field returned shape {v.shape}, expected {x.shape}")
        x = x + dt * v
        path.append(x)
    return np.stack(path)


def spherical_euler_flow(x0: object, field: Field, n_steps: int, dt: float) -> np.ndarray:
    """Euler on the sphere as a Transformer block does it (§4.4, Eq. 8 on the unit sphere):

    ``x_{l+1} = (x_l + dt v(x_l, t_l)) / ||x_l + dt v(x_l, t_l)||`` — the residual update followed
    by the relaxed retraction of Eq. (17). Shapes as :func:`euler_flow`; ``x0`` rows must be unit.
    """
    check_finite_scalar(dt, "dt")
    check_callable(field, "field")
    from nextword.theory.svflow.sphere import retraction

    x = as_float_array(x0, "x0", min_ndim=1).astype(np.float64)
    check_unit_rows(x, "x0")
    n_steps = check_positive_int(n_steps, "n_steps")
    path = [x]
    for step in range(n_steps):
        v = np.asarray(field(x, step * dt), dtype=np.float64)
        x = retraction(x, dt * v)
        path.append(x)
    return np.stack(path)


def rk4_flow_with_divergence(
    x0: object,
    field: Callable[[np.ndarray], np.ndarray],
    divergence: Callable[[np.ndarray], np.ndarray],
    t_end: float,
    n_steps: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Carry ``x`` along ``dx/dt = v(x)`` and accumulate ``l = integral of div v(x_s) ds`` (RK4).

    The flow map ``phi_t`` of an autonomous field changes volume by ``log|det D phi_t(x0)| =
    integral_0^t (div v)(x_s) ds`` (§2.1, the instantaneous change of variables), so
    ``log p_t(x_t) = log p_0(x0) - l``. Both are integrated together as the augmented state
    ``(x, l)`` with ``dl/dt = div v(x)`` by ``n_steps`` classical fourth-order Runge–Kutta steps of
    size ``dt = t_end / n_steps`` (global error ``O(dt^4)``)::

        k1 = v(x),  k2 = v(x + dt/2 k1),  k3 = v(x + dt/2 k2),  k4 = v(x + dt k3)
        x <- x + dt (k1 + 2 k2 + 2 k3 + k4) / 6
        l <- l + dt (div v(x) + 2 div v(x + dt/2 k1) + 2 div v(x + dt/2 k2) + div v(x + dt k3)) / 6

    Shapes: ``x0 (..., d)``; ``field`` maps ``(..., d) -> (..., d)`` and ``divergence`` maps
    ``(..., d) -> (...)``. Returns ``(x_end (..., d), divergence_integral (...))``.

    >>> x_end, log_volume = rk4_flow_with_divergence(np.array([1.0]), lambda x: -x, lambda x: -1.0 + 0 * x[..., 0],
    ...                                              t_end=1.0, n_steps=50)
    >>> round(float(x_end[0]), 8), round(float(np.exp(-1.0)), 8), round(float(log_volume), 12)
    (0.36787944, 0.36787944, -1.0)
    """
    check_finite_scalar(t_end, "t_end")
    x = as_float_array(x0, "x0", min_ndim=1).astype(np.float64)
    if not callable(field):
        raise TypeError(f"field must be a callable (..., d) -> (..., d), got {type(field).__name__}")
    if not callable(divergence):
        raise TypeError(f"divergence must be a callable (..., d) -> (...), got {type(divergence).__name__}")
    n_steps = check_positive_int(n_steps, "n_steps")
    if not (np.isfinite(t_end) and t_end > 0):
        raise ValueError(f"t_end must be a positive finite time, got {t_end}")
    if x.shape[-1] == 0:
        raise ValueError(f"x0 must have at least one coordinate (d >= 1), got shape {x.shape}")
    first = np.asarray(field(x), dtype=np.float64)
    if first.shape != x.shape:
        raise ValueError(f"field returned shape {first.shape}, expected {x.shape}")
    div_shape = np.shape(divergence(x))
    try:
        if np.broadcast_shapes(div_shape, x.shape[:-1]) != x.shape[:-1]:
            raise ValueError
    except ValueError:
        raise ValueError(
            f"divergence returned shape {div_shape}, expected {x.shape[:-1]} (one value per point)"
        ) from None
    dt = t_end / n_steps
    integral = np.zeros(x.shape[:-1])
    for _ in range(n_steps):
        k1 = np.asarray(field(x), dtype=np.float64)
        x2 = x + 0.5 * dt * k1
        k2 = np.asarray(field(x2), dtype=np.float64)
        x3 = x + 0.5 * dt * k2
        k3 = np.asarray(field(x3), dtype=np.float64)
        x4 = x + dt * k3
        k4 = np.asarray(field(x4), dtype=np.float64)
        integral = integral + dt * (divergence(x) + 2 * divergence(x2) + 2 * divergence(x3) + divergence(x4)) / 6
        x = x + dt * (k1 + 2 * k2 + 2 * k3 + k4) / 6
    check_no_overflow(x, "the flow from x0", masked=False)
    return x, check_no_overflow(integral, "the divergence integral along the flow from x0", masked=False)
