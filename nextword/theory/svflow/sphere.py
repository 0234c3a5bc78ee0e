"""Spherical geometry and the von Mises–Fisher distribution for SVFlow (Liao, §2.2 and §4.1).

The paper puts every hidden state on the unit sphere ``S^{d-1}`` and reads the residual + RMSNorm
update as a *relaxed retraction*. This module gives the pieces, as pure numpy functions:

* :func:`tangent_projection` — ``(I - x x^T) v``, the projection onto ``T_x S^{d-1}``;
* :func:`exp_map` — the geodesic step, Eq. (2);
* :func:`retraction` — the projective retraction ``R_x(v) = (x+v)/||x+v||``, Eq. (3); applied to a
  non-tangent ``v`` it is the relaxed retraction of Eq. (17) (unit-sphere RMSNorm of ``x + v``);
* :func:`log_bessel_iv` — ``log I_nu(x)`` evaluated in log space (no overflow for ``x ~ 1e5``, no
  underflow for ``nu ~ 1e3``), the ingredient the paper's App. C.2.3 says overflowed for it;
* :func:`vmf_log_normalizer`, :func:`vmf_log_density`, :func:`vmf_score` — Eq. (18);
* :func:`vmf_mean_resultant_length` and :func:`vmf_sample` (Wood 1994) for Monte-Carlo checks.

Conventions: points and directions are row vectors ``(..., d)``; leading axes broadcast. float64.

Worked example (d = 3, where ``C_3(kappa) = kappa / (4 pi sinh kappa)`` in closed form)::

    >>> import numpy as np
    >>> round(float(np.exp(vmf_log_normalizer(2.0, 3)) * 4 * np.pi * np.sinh(2.0) / 2.0), 12)
    1.0
"""

from __future__ import annotations

import numpy as np
from scipy import special

from nextword._validate import (
    as_float_array,
    check_broadcast,
    check_finite_scalar,
    check_positive_int,
    check_unit_rows,
)

__all__ = [
    "tangent_projection",
    "exp_map",
    "retraction",
    "log_bessel_iv",
    "log_bessel_iv_naive",
    "sphere_log_area",
    "vmf_log_normalizer",
    "vmf_log_normalizer_naive",
    "vmf_log_density",
    "vmf_score",
    "vmf_mean_resultant_length",
    "vmf_sample",
]


# --------------------------------------------------------------------------------------------
# geometry: tangent space, exponential map, retraction (Eqs. 2, 3, 17)
# --------------------------------------------------------------------------------------------


def _pair(x: object, v: object) -> tuple[np.ndarray, np.ndarray]:
    x = as_float_array(x, "x", min_ndim=1).astype(np.float64)
    v = as_float_array(v, "v", min_ndim=1).astype(np.float64)
    if x.shape[-1] != v.shape[-1]:
        raise ValueError(f"x and v must have the same last dimension d, got x {x.shape} and v {v.shape}")
    check_broadcast(x=x, v=v)
    check_unit_rows(x, "x")
    return x, v


def tangent_projection(x: object, v: object) -> np.ndarray:
    """``(I - x x^T) v``: the component of ``v`` in the tangent space ``T_x S^{d-1}`` (§2.2).

    Shapes: ``x (..., d)`` unit rows, ``v (..., d)`` -> ``(..., d)``.

    >>> tangent_projection(np.array([1.0, 0.0]), np.array([3.0, 4.0]))
    array([0., 4.])
    """
    x, v = _pair(x, v)
    return v - np.sum(x * v, axis=-1, keepdims=True) * x


def exp_map(x: object, v: object, *, atol: float = 1e-8) -> np.ndarray:
    """Exponential map of the unit sphere, Eq. (2): ``cos(|v|) x + sin(|v|) v/|v|``.

    ``v`` must be tangent at ``x`` (``x . v = 0`` within ``atol`` times ``|v|``); ``exp_x(0) = x``.
    Shapes: ``x (..., d)``, ``v (..., d)`` -> ``(..., d)``.

    >>> np.round(exp_map(np.array([1.0, 0.0]), np.array([0.0, np.pi / 2])), 12)
    array([0., 1.])
    """
    check_finite_scalar(atol, "atol")
    x, v = _pair(x, v)
    dots = np.sum(x * v, axis=-1)
    n = np.linalg.norm(v, axis=-1)
    if np.any(np.abs(dots) > atol * np.maximum(1.0, n)):
        raise ValueError("v must be tangent at x (x . v = 0); project it first with tangent_projection")
    n_ = n[..., None]
    direction = np.divide(v, n_, out=np.zeros_like(v), where=n_ > 0)  # (..., d), 0 where v = 0
    return np.cos(n_) * x + np.sin(n_) * direction


def retraction(x: object, v: object) -> np.ndarray:
    """Projective retraction ``R_x(v) = (x + v) / ||x + v||``, Eq. (3).

    Any ``v`` is accepted: for a tangent ``v`` this is Eq. (3); for a general ``v`` it is the
    relaxed retraction of Eq. (17), i.e. the unit-sphere RMSNorm of the residual sum ``x + v``.
    Raises ``ValueError`` when ``x + v = 0`` (no direction to normalise).
    Shapes: ``x (..., d)``, ``v (..., d)`` -> ``(..., d)``.

    >>> retraction(np.array([1.0, 0.0]), np.array([0.0, 1.0])) * np.sqrt(2)
    array([1., 1.])
    """
    x, v = _pair(x, v)
    s = x + v
    n = np.linalg.norm(s, axis=-1, keepdims=True)
    if np.any(n == 0):
        raise ValueError("x + v is zero for some row; the retraction is undefined there")
    return s / n


# --------------------------------------------------------------------------------------------
# Bessel function in log space
# --------------------------------------------------------------------------------------------
def _debye_log_iv(nu: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Uniform asymptotic (Debye) expansion of ``log I_nu(nu z)``, ``z = x/nu`` (DLMF 10.41.3).

    Four correction terms; relative error ``O(nu^-5)``, used only where scipy's scaled ``ive``
    underflows, which happens only for large ``nu`` (hundreds and more).
    """
    z = x / nu
    s = np.sqrt(1.0 + z * z)
    p = 1.0 / s
    eta = s + np.log(z / (1.0 + s))
    u1 = (3 * p - 5 * p**3) / 24.0
    u2 = (81 * p**2 - 462 * p**4 + 385 * p**6) / 1152.0
    u3 = (30375 * p**3 - 369603 * p**5 + 765765 * p**7 - 425425 * p**9) / 414720.0
    u4 = (4465125 * p**4 - 94121676 * p**6 + 349922430 * p**8 - 446185740 * p**10 + 185910725 * p**12) / 39813120.0
    series = 1.0 + u1 / nu + u2 / nu**2 + u3 / nu**3 + u4 / nu**4
    return nu * eta - 0.5 * np.log(2 * np.pi * nu) - 0.25 * np.log1p(z * z) + np.log(series)


def _series_log_iv(nu: np.ndarray, x: np.ndarray, terms: int = 12) -> np.ndarray:
    """Power series ``log I_nu(x) = nu log(x/2) - lgamma(nu+1) + log sum_k (x^2/4)^k/(k! (nu+1)_k)``."""
    y = x * x / 4.0
    term = np.ones_like(x)
    total = np.ones_like(x)
    for k in range(1, terms):
        term = term * y / (k * (nu + k))
        total = total + term
    return nu * np.log(x / 2.0) - special.gammaln(nu + 1.0) + np.log(total)


def _hankel_log_iv(nu: np.ndarray, x: np.ndarray, terms: int = 4) -> np.ndarray:
    """Large-argument (Hankel) expansion ``log I_nu(x) = x - log(2 pi x)/2 + log sum_k a_k(nu) / (-x)^k``
    (DLMF 10.40.1, ``a_k = prod_{j<=k} (4 nu^2 - (2j-1)^2) / (k! 8^k)``), for ``x >> nu^2``: where scipy's
    ``ive`` gives up (``x`` beyond about ``1e9``) and the Debye expansion cannot be used (``nu = 0``, or
    ``(x / nu)^2`` overflows). ``log(2 pi x)`` is split so that ``x`` up to the float64 maximum stays finite.
    """
    return x - 0.5 * (np.log(2 * np.pi) + np.log(x)) + _hankel_log_sum(nu, x, terms)


def _hankel_log_sum(nu: np.ndarray, x: np.ndarray, terms: int = 4) -> np.ndarray:
    """``log sum_{k <= terms} a_k(nu) / (-x)^k`` of :func:`_hankel_log_iv` (the part that depends on ``nu``)."""
    mu = 4.0 * nu * nu
    term = np.ones_like(x)
    total = np.ones_like(x)
    with np.errstate(over="ignore"):  # k 8 x is inf near the float64 maximum: the term is 0 there
        for k in range(1, terms + 1):
            term = -term * (mu - (2 * k - 1) ** 2) / (k * 8.0 * x)
            total = total + term
    return np.log(total)


def _hankel_holds(nu: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Where the large-argument expansion is exact to float64 with 4 terms: ``x > 1e3 max(1, 4 nu^2)``."""
    with np.errstate(over="ignore"):
        return x > 1e3 * np.maximum(1.0, 4.0 * nu * nu)


def log_bessel_iv(nu: object, x: object) -> np.ndarray:
    """``log I_nu(x)`` for ``nu >= 0``, ``x >= 0``, without overflow or underflow.

    ``I_nu`` (modified Bessel function of the first kind) exceeds the largest float64 from ``x``
    near 714 for small orders (later for large ones: near 832 for ``nu = 447``; scipy's ``iv`` returns
    ``inf`` up to 4 units of ``x`` earlier, e.g. from 713 for ``nu = 63``), which is the overflow App. C.2.3
    of the paper reports for ``kappa > 1e3``. Here the scaled
    ``scipy.special.ive(nu, x) = I_nu(x) e^{-x}`` is used, ``log I = log ive + x``; where ``ive``
    itself underflows (large order, small argument) the power series (small ``x``) or the Debye
    uniform expansion (large ``nu``) takes over, and where ``ive`` gives up (``x`` beyond about
    ``1e9``) and the Debye expansion cannot be used (``nu = 0``, or ``x / nu`` beyond ``1e154``) the
    large-argument expansion does, so every finite ``x`` up to the float64 maximum has a finite value. ``log I_nu(0)`` is ``0`` for ``nu = 0`` and
    ``-inf`` otherwise. Broadcasts ``nu`` against ``x``.

    >>> float(log_bessel_iv(0.5, 1e5)) > 9.99e4    # iv(0.5, 1e5) is inf in float64
    True
    """
    nu_a = as_float_array(nu, "nu").astype(np.float64)
    x_a = as_float_array(x, "x").astype(np.float64)
    if np.any(nu_a < 0):
        raise ValueError("nu must be >= 0 (orders of the vMF normaliser are d/2 - 1 >= 0)")
    if np.any(x_a < 0):
        raise ValueError("x must be >= 0")
    check_broadcast(nu=nu_a, x=x_a)
    nu_b, x_b = np.broadcast_arrays(nu_a, x_a)
    with np.errstate(divide="ignore", over="ignore", under="ignore", invalid="ignore"):
        scaled = special.ive(nu_b, x_b)
        out = np.log(scaled) + x_b
    bad = ~np.isfinite(out) | (scaled <= 1e-280)  # underflow (or denormal loss of precision)
    zero = x_b == 0
    out = np.where(zero, np.where(nu_b == 0, 0.0, -np.inf), out)
    fix = bad & ~zero
    if np.any(fix):
        n, xx = nu_b[fix], x_b[fix]
        with np.errstate(over="ignore"):  # x * x is inf for x beyond 1e154: not small
            small = xx * xx / 4.0 < 0.01 * (n + 1.0)
        fixed = np.empty_like(xx)
        if np.any(small):
            fixed[small] = _series_log_iv(n[small], xx[small])
        if np.any(~small):
            with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
                fixed[~small] = _debye_log_iv(n[~small], xx[~small])
        far = ~np.isfinite(fixed) & _hankel_holds(n, xx)  # nu = 0, or (x / nu)^2 overflows
        if np.any(far):
            fixed[far] = _hankel_log_iv(n[far], xx[far])
        out = out.copy()
        out[fix] = fixed
    return out[()] if out.ndim == 0 else out


def log_bessel_iv_naive(nu: object, x: object) -> np.ndarray:
    """``log(scipy.special.iv(nu, x))`` — the direct evaluation that overflows (for comparison only):
    ``+inf`` where scipy's ``iv`` returns ``inf`` (from ``x`` near 713–715 for small orders, up to 4 units
    before the value itself exceeds the largest float64), NaN where scipy's ``iv`` gives up
    (``x`` near the float64 maximum). :func:`log_bessel_iv` is finite there."""
    nu_a = as_float_array(nu, "nu").astype(np.float64)
    x_a = as_float_array(x, "x").astype(np.float64)
    if (nu_a < 0).any() or (x_a < 0).any():
        raise ValueError("nu and x must be >= 0")
    check_broadcast(nu=nu_a, x=x_a)
    with np.errstate(divide="ignore", over="ignore"):
        return np.log(special.iv(nu_a, x_a))  # +inf where I overflows: the point of the comparison


# --------------------------------------------------------------------------------------------
# von Mises–Fisher distribution (Eq. 18)
# --------------------------------------------------------------------------------------------
def sphere_log_area(d: int) -> float:
    """``log |S^{d-1}| = log(2 pi^{d/2} / Gamma(d/2))``; the uniform density on the sphere is ``1/|S^{d-1}|``.

    >>> round(float(np.exp(sphere_log_area(3))), 10) == round(4 * np.pi, 10)
    True
    """
    d = check_positive_int(d, "d", minimum=2)
    return float(np.log(2.0) + 0.5 * d * np.log(np.pi) - special.gammaln(0.5 * d))


def _kappa(kappa: object) -> np.ndarray:
    k = as_float_array(kappa, "kappa").astype(np.float64)
    if np.any(k < 0):
        raise ValueError("kappa must be >= 0 (a concentration)")
    return k


def vmf_log_normalizer(kappa: object, d: int) -> np.ndarray:
    """``log C_d(kappa)`` with ``C_d(kappa) = kappa^{d/2-1} / ((2 pi)^{d/2} I_{d/2-1}(kappa))`` (Eq. 18).

    Evaluated in log space with :func:`log_bessel_iv`, so ``kappa = 1e5`` in ``d = 1024`` is fine.
    At ``kappa = 0`` it returns the limit ``-log |S^{d-1}|`` (the uniform density). Shapes: any
    ``kappa`` array -> same shape.

    >>> bool(abs(vmf_log_normalizer(0.0, 3) + np.log(4 * np.pi)) < 1e-12)
    True
    """
    d = check_positive_int(d, "d", minimum=2)
    k = _kappa(kappa)
    nu = 0.5 * d - 1.0
    safe = np.where(k > 0, k, 1.0)
    with np.errstate(divide="ignore"):
        val = nu * np.log(safe) - 0.5 * d * np.log(2 * np.pi) - log_bessel_iv(nu, safe)
    val = np.where(k > 0, val, -sphere_log_area(d))
    return val[()] if np.ndim(val) == 0 else val


def vmf_log_normalizer_naive(kappa: object, d: int) -> np.ndarray:
    """The same formula with ``scipy.special.iv`` in linear space, to show where it fails.

    Evaluated as written, ``kappa^nu / ((2 pi)^{d/2} I_nu(kappa))`` with ``nu = d/2 - 1``, it fails once a
    factor leaves the double-precision range, and the denominator goes first: their product
    ``(2 pi)^{d/2} I_nu(kappa)`` overflows (the result is ``-inf``) before ``I_nu`` alone does (from
    ``kappa`` near 714 for small ``d``, later for wide ones: 832 for ``d = 896``): from ``kappa = 656`` for ``d = 64``, ``kappa = 600`` for ``d = 128``.
    In high dimension ``(2 pi)^{d/2}`` overflows by itself (``d >= 773``) and the result is NaN or
    ``+-inf`` for every ``kappa``; for small ``kappa`` and large ``d``, ``I_nu`` underflows to 0 and the
    result is ``+inf`` (e.g. ``kappa = 1``, ``d = 512``); near the float64 maximum ``kappa^nu`` and
    ``I_nu`` are both ``inf`` (or NaN) and so is the result. :func:`vmf_log_normalizer` has none of these.
    """
    k = as_float_array(kappa, "kappa").astype(np.float64)
    if (k < 0).any():
        raise ValueError("kappa must be >= 0")
    d = check_positive_int(d, "d", minimum=2)
    nu = 0.5 * d - 1.0
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        return np.log(k**nu / (np.float64(2 * np.pi) ** (0.5 * d) * special.iv(nu, k)))


def vmf_log_density(x: object, mu: object, kappa: object) -> np.ndarray:
    """``log p_vMF(x; mu, kappa) = log C_d(kappa) + kappa mu^T x`` (Eq. 18), density w.r.t. surface measure.

    Shapes: ``x (..., d)`` unit rows, ``mu (..., d)`` unit rows, ``kappa (...)`` -> ``(...)``
    (all broadcast together; e.g. ``x (N, 1, d)``, ``mu (Z, d)``, ``kappa (Z,)`` -> ``(N, Z)``).
    """
    x = as_float_array(x, "x", min_ndim=1).astype(np.float64)
    mu = as_float_array(mu, "mu", min_ndim=1).astype(np.float64)
    if x.shape[-1] != mu.shape[-1]:
        raise ValueError(f"x and mu must share the last dimension d, got {x.shape} and {mu.shape}")
    check_unit_rows(x, "x")
    check_unit_rows(mu, "mu")
    k = _kappa(kappa)
    check_broadcast(kappa=k, **{"x . mu": np.empty(np.broadcast_shapes(x.shape, mu.shape)[:-1])})
    d = x.shape[-1]
    return vmf_log_normalizer(k, d) + k * np.sum(x * mu, axis=-1)


def vmf_score(mu: object, kappa: object) -> np.ndarray:
    """Euclidean score ``grad_x log p_vMF(x) = kappa mu`` (§4.1), constant in ``x``.

    The Riemannian score on the sphere is its tangent part ``(I - x x^T) kappa mu``.
    Shapes: ``mu (..., d)``, ``kappa (...)`` -> ``(..., d)``.
    """
    mu = as_float_array(mu, "mu", min_ndim=1).astype(np.float64)
    check_unit_rows(mu, "mu")
    k = _kappa(kappa)
    check_broadcast(kappa=k, **{"mu without its last axis": mu[..., 0]})
    return k[..., None] * mu


def vmf_mean_resultant_length(kappa: object, d: int) -> np.ndarray:
    """``A_d(kappa) = I_{d/2}(kappa) / I_{d/2-1}(kappa)``, so that ``E[x] = A_d(kappa) mu``.

    ``exp(log I_{d/2} - log I_{d/2-1})``; from ``kappa = 2^30`` on, where scipy's scaled Bessel function
    gives up and both logarithms (about ``kappa``) would cancel to a few ulps of ``kappa``, the ratio of the
    two large-argument series instead (``1 - (d - 1) / (2 kappa) + ...``, exact to float64 there).

    >>> round(float(vmf_mean_resultant_length(1e4, 3)), 6)   # 1/tanh(k) - 1/k
    0.9999
    """
    d = check_positive_int(d, "d", minimum=2)
    k = _kappa(kappa)
    nu = 0.5 * d - 1.0
    safe = np.where(k > 0, k, 1.0)
    val = np.exp(log_bessel_iv(nu + 1.0, safe) - log_bessel_iv(nu, safe))
    far = (safe >= 2.0**30) & _hankel_holds(np.float64(nu + 1.0), safe)
    if np.any(far):
        val = np.where(far, np.exp(_hankel_log_sum(nu + 1.0, safe) - _hankel_log_sum(nu, safe)), val)
    val = np.where(k > 0, val, 0.0)
    return val[()] if np.ndim(val) == 0 else val


def vmf_sample(mu: object, kappa: float, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` draws from ``vMF(mu, kappa)`` on ``S^{d-1}`` by Wood's (1994) rejection sampler.

    Shapes: ``mu (d,)`` -> ``(n, d)``. ``rng`` is the only source of randomness.
    """
    check_finite_scalar(kappa, "kappa")
    if not isinstance(rng, np.random.Generator):
        raise TypeError("rng must be a numpy.random.Generator (e.g. np.random.default_rng(0))")
    mu = as_float_array(mu, "mu", ndim=1).astype(np.float64)
    check_unit_rows(mu, "mu")
    n = check_positive_int(n, "n")
    k = float(_kappa(kappa))
    d = mu.shape[0]
    if d < 2:
        raise ValueError("mu must have d >= 2 entries")
    # 1) the cosine w = mu . x, by rejection (Wood 1994, numerically stable form of b)
    b = (d - 1) / (2 * k + np.sqrt(4 * k * k + (d - 1) ** 2)) if k > 0 else 1.0
    x0 = (1 - b) / (1 + b)
    c = k * x0 + (d - 1) * np.log(1 - x0 * x0)
    w = np.empty(n)
    filled = 0
    while filled < n:
        m = 2 * (n - filled) + 8
        zb = rng.beta((d - 1) / 2.0, (d - 1) / 2.0, size=m)
        u = rng.uniform(size=m)
        cand = (1 - (1 + b) * zb) / (1 - (1 - b) * zb)
        ok = k * cand + (d - 1) * np.log(1 - x0 * cand) - c >= np.log(u)
        take = cand[ok][: n - filled]
        w[filled : filled + take.size] = take
        filled += take.size
    # 2) a uniform direction orthogonal to mu
    g = rng.standard_normal((n, d))
    g -= (g @ mu)[:, None] * mu[None, :]
    g /= np.linalg.norm(g, axis=1, keepdims=True)
    return w[:, None] * mu[None, :] + np.sqrt(np.clip(1 - w * w, 0.0, None))[:, None] * g
