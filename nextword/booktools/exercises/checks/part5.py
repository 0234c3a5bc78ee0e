"""Checkers for the exercises of Part 5 (SVFlow; see exercises/README.md).

Each checker recomputes the expected result with :mod:`nextword.theory.svflow*` or checks a property
(finite differences, a bound) — never a stored copy of the solution.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._common import ExerciseCheckError, as_array, check_close, check_shape, check_true, fail, passed, call_student  # noqa: F401

__all__ = ["check_ex_p5_01", "check_ex_p5_02", "check_ex_p5_03", "check_ex_p5_04"]


_call = call_student  # shared: a stub, a non-function or a crash becomes a clear failure


def check_ex_p5_01(exp_map: Callable, retraction: Callable, slope: float) -> bool:
    """Exercise 5.1: ``exp_map(x, v)`` (Eq. 2), ``retraction(x, v)`` (Eq. 3) on ``(d,)`` vectors and the
    fitted log–log slope of ``||R_x(v) - exp_x(v)||`` against ``||v||`` for small ``||v||``."""
    from nextword.theory.svflow import sphere as sp

    rng = np.random.default_rng(2024)
    for d in (2, 3, 9):
        x = rng.standard_normal(d)
        x /= np.linalg.norm(x)
        v = sp.tangent_projection(x, rng.standard_normal(d)) * rng.uniform(0.1, 2.0)
        check_close(f"exp_map(x, v) in d={d}", _call(exp_map, "exp_map", x, v), sp.exp_map(x, v),
                    rtol=1e-9, atol=1e-12)
        check_close(f"retraction(x, v) in d={d}", _call(retraction, "retraction", x, v), sp.retraction(x, v),
                    rtol=1e-9, atol=1e-12)
    check_close("exp_map(x, 0)", _call(exp_map, "exp_map", x, np.zeros(d)), x, rtol=0, atol=1e-14)
    s = float(as_array("slope", slope))
    check_true(np.isfinite(s), "slope must be a finite number")
    check_true(abs(s - 2.0) > 0.3, "slope: a fit close to 2 usually means the step sizes were too large "
               "(use ||v|| <= 0.05) or the error was measured against the wrong map")
    check_true(abs(s - 3.0) < 0.1, f"slope {s:.3f} is not the order of the retraction error; fit log(error) "
               "against log(||v||) for small ||v|| only")
    return passed("exp map, retraction and the error order of the retraction are right")


def check_ex_p5_02(log_vmf_normaliser: Callable) -> bool:
    """Exercise 5.2: ``log_vmf_normaliser(kappa, d)`` = ``log C_d(kappa)`` (Eq. 18) in log space."""
    from nextword.theory.svflow.sphere import vmf_log_normalizer

    cases = [(0.5, 3), (5.0, 3), (50.0, 16), (1e3, 3), (1e4, 128), (1e4, 1024), (1e5, 2048), (800.0, 896)]
    for kappa, d in cases:
        got = _call(log_vmf_normaliser, "log_vmf_normaliser", kappa, d)
        got = as_array(f"log_vmf_normaliser({kappa:g}, {d})", got)
        if got.shape not in ((), (1,)):
            fail(f"log_vmf_normaliser({kappa:g}, {d}) should return a scalar, got shape {got.shape}")
        if not np.isfinite(got).all():
            fail(f"log_vmf_normaliser({kappa:g}, {d}) is not finite — evaluate log I_nu with the scaled "
                 "Bessel function and never form kappa**nu or (2 pi)**(d/2) directly")
        check_close(f"log_vmf_normaliser({kappa:g}, {d})", got.reshape(()), vmf_log_normalizer(kappa, d),
                    rtol=1e-9, atol=1e-9)
    return passed("log C_d(kappa) is right and finite from kappa = 0.5 to 1e5 and d = 3 to 2048")


def check_ex_p5_03(elbo_fn: Callable, epsilon_fn: Callable) -> bool:
    """Exercise 5.3: ``elbo_fn(flow, x)`` (Eq. 11) and ``epsilon_fn(flow, x)`` (Eq. 12) for a
    :class:`~nextword.theory.svflow.flow.GaussianSVFlow` ``flow`` and points ``x (N, d)``."""
    from nextword.numerics import central_difference
    from nextword.theory.svflow.flow import GaussianSVFlow

    rng = np.random.default_rng(7)
    Z, d, N = 5, 2, 6
    flow = GaussianSVFlow(rng.normal(size=(Z, d)), 0.4 * rng.normal(size=(Z, d)),
                          rng.normal(size=(Z, d)), 0.4 * rng.normal(size=(Z, d)))
    x = rng.normal(size=(N, d))
    L = check_shape("elbo_fn(flow, x)", _call(elbo_fn, "elbo_fn", flow, x), (N,))
    check_close("log p(x) - elbo_fn(flow, x)  (should be KL(q || p(z|x)), Prop. 3.2)",
                flow.log_marginal(x) - L, flow.kl_gap(x), rtol=1e-8, atol=1e-10)
    eps = check_shape("epsilon_fn(flow, x)", _call(epsilon_fn, "epsilon_fn", flow, x), (N, d))
    h = 1e-5
    grad = central_difference(lambda z: elbo_fn(flow, z), x, h=h, batched=True)  # (N, d)
    check_close("finite-difference gradient of your ELBO minus (v + epsilon)  (Thm. 3.3)",
                grad - (flow.field(x) + eps), np.zeros((N, d)), rtol=0, atol=1e-5)
    ideal = GaussianSVFlow(flow.p_means, flow.p_log_vars, flow.p_means, flow.p_log_vars)
    check_close("epsilon_fn in the ideal case q = p (Cor. 3.4)", _call(epsilon_fn, "epsilon_fn", ideal, x),
                np.zeros((N, d)), rtol=0, atol=1e-10)
    return passed("ELBO (Eq. 11) and variational error (Eq. 12) satisfy Prop. 3.2 and Thm. 3.3")


def check_ex_p5_04(gates: object) -> bool:
    """Exercise 5.4: a gate matrix ``(N, 2)`` whose load-balancing loss (Eq. 22) is below ``1/2`` although
    its marginal ``P`` is not uniform."""
    from nextword.theory.svflow.attention import load_balancing_loss

    g = as_array("gates", gates)
    if g.ndim != 2 or g.shape[1] != 2 or g.shape[0] < 2:
        fail(f"gates must have shape (N, 2) with N >= 2, got {g.shape}")
    if np.any(g < 0) or not np.allclose(g.sum(axis=1), 1.0, atol=1e-9):
        fail("gates must be probabilities: non-negative rows summing to 1")
    J, f, P = load_balancing_loss(g)
    check_true(abs(P[0] - 0.5) > 0.02, f"the marginal P = {np.round(P, 3)} is (nearly) uniform; the point is a "
               "non-uniform marginal")
    check_true(J < 0.5 - 0.01, f"J_bal = {J:.4f} is not below the uniform value 1/2 by at least 0.01")
    return passed(f"J_bal = {J:.4f} < 1/2 with marginal P = {np.round(P, 3)}: Eq. (22) is not minimised by a uniform marginal")
