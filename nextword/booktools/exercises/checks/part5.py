"""Checkers for the exercises of Part 5 (SVFlow; see exercises/README.md).

Each checker recomputes the expected result with :mod:`nextword.theory.svflow*` or checks a property
(finite differences, a bound) — never a stored copy of the solution.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._common import ExerciseCheckError, Report, check_cases, as_array, call_student, check_close, check_shape, check_true, describe, fail, passed  # noqa: F401

__all__ = ["check_ex_p5_01", "check_ex_p5_02", "check_ex_p5_03", "check_ex_p5_04"]


_call = call_student  # shared: a stub, a non-function or a crash becomes a clear failure


def check_ex_p5_01(exp_map: Callable, retraction: Callable, slope: float) -> bool:
    """Exercise 5.1: ``exp_map(x, w)`` (Eq. 2), ``retraction(x, w)`` (Eq. 3) on ``(d,)`` vectors and the
    fitted log–log slope of ``||R_x(w) - exp_x(w)||`` against ``||w||`` for small ``||w||``."""
    from nextword.theory.svflow import sphere as sp

    r = Report("Exercise 5.01")
    rng = np.random.default_rng(2024)
    cases = []
    for d in (2, 3, 9):
        x = rng.standard_normal(d)
        x /= np.linalg.norm(x)
        cases.append((d, x, sp.tangent_projection(x, rng.standard_normal(d)) * rng.uniform(0.1, 2.0)))
    with r.check("exp_map(x, w) = cos‖w‖ x + sin‖w‖ w/‖w‖ (Eq. 2), and exp_map(x, 0) = x"):
        for d, x, w in cases:
            n = np.linalg.norm(w)
            check_close(f"exp_map(x, w) in d={d} with ‖w‖ = {n:.3g}", _call(exp_map, f"exp_map(x, w) in d={d}", x, w),
                        sp.exp_map(x, w), rtol=1e-9, atol=1e-12,
                        mistakes={"sin‖w‖ w without dividing w by ‖w‖: the direction must be a unit vector":
                                  np.cos(n) * x + np.sin(n) * w,
                                  "the retraction (x + w)/‖x + w‖, not the exponential map": sp.retraction(x, w)})
        d, x, _ = cases[-1]
        check_close(f"exp_map(x, 0) in d={d} (divide by ‖w‖ only when it is non-zero)",
                    _call(exp_map, "exp_map(x, 0)", x, np.zeros(d)), x, rtol=0, atol=1e-14)
    with r.check("retraction(x, w) = (x + w)/‖x + w‖ (Eq. 3)"):
        for d, x, w in cases:
            check_close(f"retraction(x, w) in d={d}", _call(retraction, f"retraction(x, w) in d={d}", x, w),
                        sp.retraction(x, w), rtol=1e-9, atol=1e-12,
                        mistakes={"x + w is not normalised back onto the sphere": x + w})
    with r.check("slope: the order of the retraction error for small ‖w‖ is 3"):
        sl = float(as_array("slope", slope))
        check_true(np.isfinite(sl), "slope must be a finite number")
        check_true(abs(sl - 2.0) > 0.3, f"slope {sl:.3f}: a fit close to 2 usually means the step sizes were too large "
                   "(use ||w|| <= 0.05) or the error was measured against the wrong map")
        for factor, which in ((np.log(10), "log10 of ||w|| and ln of the error"),
                              (1 / np.log(10), "ln of ||w|| and log10 of the error")):
            check_true(abs(sl - 3.0 * factor) > 0.1 * factor,
                       f"slope {sl:.3f} = 3 × {factor:.4g}: the logarithms have different bases ({which}); take the "
                       "same logarithm on both axes")
        # the same fit with one axis left linear, on the statement's step lengths (the error depends on r only)
        x0, w0, rs = np.eye(5)[0], np.eye(5)[1], np.logspace(-3, -1.5, 10)
        errs = np.array([np.linalg.norm(sp.retraction(x0, r_ * w0) - sp.exp_map(x0, r_ * w0)) for r_ in rs])
        for wrong, which in ((np.polyfit(rs, np.log(errs), 1)[0], "a semi-log fit, log(error) against r"),
                             (np.polyfit(np.log(rs), errs, 1)[0], "error against log(r), without the log of the error")):
            check_true(abs(sl - wrong) > 0.05 * abs(wrong),
                       f"slope {sl:.4g} is not the order of the retraction error\n    likely mistake: {which} (that "
                       f"fit gives {wrong:.4g} on the statement's steps); fit log(error) against log(r)")
        check_true(abs(sl - 3.0) < 0.1, f"slope {sl:.3f} is not the order of the retraction error; fit log(error) "
                   "against log(||w||) for small ||w|| only")
    return r.done("exp map, retraction and the error order of the retraction are right")


def check_ex_p5_02(log_vmf_normaliser: Callable) -> bool:
    """Exercise 5.2: ``log_vmf_normaliser(kappa, d)`` = ``log C_d(kappa)`` (Eq. 18) in log space.

    The reference is :func:`nextword.theory.svflow.sphere.vmf_log_normalizer` (itself checked against
    mpmath in the tests). The corners of item 1 — small κ with large d, where ``log(ive(ν, κ)) + κ``
    underflows to ``-inf`` — are checked separately from the large-κ overflow.
    """
    from scipy import special

    from nextword.theory.svflow.sphere import vmf_log_normalizer

    r = Report("Exercise 5.02")
    groups = {
        "small d (3 and 16), moderate κ": [(0.5, 3), (5.0, 3), (50.0, 16)],
        "large κ (the overflow of I_ν(κ) ~ e^κ)": [(1e3, 3), (1e4, 128), (800.0, 896), (1e4, 1024), (1e5, 2048)],
        "small κ in high dimension (the underflow of ive(ν, κ))": [(0.5, 512), (1.0, 1024), (5.0, 2048)],
    }
    for title, cases in groups.items():
        with r.check(f"{title}: (κ, d) = {', '.join(f'({k:g}, {d})' for k, d in cases)}"):
            rows, mistakes = [], []
            for kappa, d in sorted(cases, key=lambda c: (c[1], c[0])):
                label = f"log_vmf_normaliser({kappa:g}, {d})"
                got = as_array(label, _call(log_vmf_normaliser, label, kappa, d))
                if got.shape not in ((), (1,)):
                    fail(f"{label} should return a scalar, got shape {got.shape}")
                expected = float(vmf_log_normalizer(kappa, d))
                if not np.isfinite(got).all():
                    nu = d / 2 - 1
                    with np.errstate(all="ignore"):
                        scaled = float(special.ive(nu, kappa))
                    why = (f"ive({nu:g}, {kappa:g}) = {scaled:.3g} underflows to 0, so log(ive(ν, κ)) + κ is -inf and "
                           "log C_d is +inf: for a large order and a small argument sum the power series of I_ν in "
                           "log space (or use the uniform asymptotic expansion)" if scaled == 0.0 else
                           "never form κ**ν, (2π)**(d/2) or I_ν(κ) itself; work with logarithms and the scaled "
                           "Bessel function ive")
                    fail(f"{label} is not finite: got {float(got.reshape(-1)[0])}, expected {expected:.10g}\n"
                         f"    likely: {why}")
                rows.append((f"(κ, d) = ({kappa:g}, {d})", got, expected))
                nu, m = d / 2 - 1, np.arange(400)
                log_i = nu * np.log(kappa) - d / 2 * np.log(2 * np.pi) - expected  # log I_ν(κ), from Eq. (18)
                # ν = d/2 in κ^ν and I_ν (the 2π power right) is log C_(d+2) + log 2π
                mistakes.append({"ν = d/2; the order of the Bessel function is ν = d/2 − 1":
                                 float(vmf_log_normalizer(kappa, d + 2)) + np.log(2 * np.pi),
                                 "the −(d/2) log 2π term is missing": expected + d / 2 * np.log(2 * np.pi),
                                 "the sign is flipped: you computed log(1/C_d)": -expected,
                                 "log ive(ν, κ) used as log I_ν(κ): ive is I_ν(κ) e^(−κ), so log I_ν(κ) = "
                                 "log ive(ν, κ) + κ": expected + kappa,
                                 "ν = (d − 1)/2; the order of the Bessel function is ν = d/2 − 1":
                                 float(vmf_log_normalizer(kappa, d + 1)) + 0.5 * np.log(2 * np.pi),
                                 "(d/2) log π: the normaliser has (2π)^(d/2), so −(d/2) log 2π":
                                 expected + d / 2 * np.log(2),
                                 "κ^(d/2): the power of κ is ν = d/2 − 1 (only the Bessel order and κ share it)":
                                 expected + np.log(kappa),
                                 "(2π)^(d/2 − 1): the power of 2π is d/2, not ν": expected + np.log(2 * np.pi),
                                 "log ive(ν, κ) − κ: ive is I_ν(κ) e^(−κ), so log I_ν(κ) = log ive(ν, κ) + κ":
                                 expected + 2 * kappa,
                                 "+ log I_ν(κ): the Bessel function is in the denominator of C_d, so − log I_ν(κ)":
                                 expected + 2 * log_i,
                                 **({"Γ(m + ν) in the power series: its m-th term is (κ/2)^(2m+ν) / (m! Γ(m + ν + "
                                     "1))": expected + log_i - float(special.logsumexp(
                                         (2 * m + nu) * np.log(kappa / 2) - special.gammaln(m + 1)
                                         - special.gammaln(m + nu)))} if kappa < 50 else {})})
            check_cases("log_vmf_normaliser", rows, rtol=1e-9, atol=1e-9, mistakes=mistakes)
    return r.done("log C_d(kappa) is right and finite from kappa = 0.5 to 1e5 and d = 3 to 2048, including "
                  "small kappa in high dimension (0.5, 512), (1, 1024), (5, 2048)")


def _kl_to_uniform_prior(flow, x: np.ndarray) -> np.ndarray:
    """KL(q(z|x) ‖ p(z)) for the uniform prior p(z) = 1/Z, shape (N,) (diagnosis only)."""
    log_q = flow.log_q(x)
    return (np.exp(log_q) * (log_q + np.log(log_q.shape[-1]))).sum(-1)


def check_ex_p5_03(elbo_fn: Callable, epsilon_fn: Callable) -> bool:
    """Exercise 5.3: ``elbo_fn(flow, x)`` (Eq. 11) and ``epsilon_fn(flow, x)`` (Eq. 12) for a
    :class:`~nextword.theory.svflow.flow.GaussianSVFlow` ``flow`` and points ``x (N, d)``."""
    from nextword.numerics import central_difference
    from nextword.theory.svflow.flow import GaussianSVFlow

    r = Report("Exercise 5.03")
    rng = np.random.default_rng(7)
    Z, d, N = 5, 2, 6
    flow = GaussianSVFlow(rng.normal(size=(Z, d)), 0.4 * rng.normal(size=(Z, d)),
                          rng.normal(size=(Z, d)), 0.4 * rng.normal(size=(Z, d)))
    x = rng.normal(size=(N, d))
    with r.check("elbo_fn: log p(x) − ELBO = KL(q ‖ p(z|x)) (Prop. 3.2)"):
        L = check_shape(f"elbo_fn(flow, x) for x of shape {x.shape}", _call(elbo_fn, "elbo_fn", flow, x), (N,))
        check_close(f"log p(x) − elbo_fn(flow, x) for {N} points in d={d} (should be KL(q || p(z|x)), Prop. 3.2)",
                    flow.log_marginal(x) - L, flow.kl_gap(x), rtol=1e-8, atol=1e-10,
                    mistakes={"your ELBO equals the evidence log p(x): the KL gap is missing (E_q[log p(x,z) − log q])":
                              np.zeros(N),
                              f"the prior term is missing: log p(z) = −log Z = {-np.log(Z):.6g} for the uniform prior "
                              f"over Z = {Z} components, inside the KL(q ‖ p(z))":
                              flow.kl_gap(x) - np.log(Z),
                              "the entropy term −E_q[log q(z|x)] is missing: the ELBO is E_q[log p(x, z) − log q(z|x)]":
                              flow.kl_gap(x) - (np.exp(flow.log_q(x)) * flow.log_q(x)).sum(-1),
                              f"the expectation over z is a mean over the Z = {Z} components: E_q[f] = Σ_z q(z|x) f(z), "
                              "a sum (the weights q already sum to 1)":
                              flow.log_marginal(x) - (flow.log_marginal(x) - flow.kl_gap(x)) / Z,
                              "the KL term is added: the ELBO is E_q[log p(x|z)] − KL(q(z|x) ‖ p(z)), minus the KL":
                              flow.kl_gap(x) - 2 * _kl_to_uniform_prior(flow, x),
                              f"the prior's sign is flipped: KL(q ‖ p(z)) = Σ_z q (log q − log p(z)) with "
                              f"log p(z) = −log Z, so it adds + log Z = {np.log(Z):.6g}, not − log Z":
                              flow.kl_gap(x) - 2 * np.log(Z),
                              "log base 2 instead of e: the ELBO is in nats (natural logs), as log p(x) is":
                              flow.log_marginal(x) - (flow.log_marginal(x) - flow.kl_gap(x)) / np.log(2)})
    with r.check("epsilon_fn: ∇_x ELBO = u + ε (Thm. 3.3), checked by finite differences of your ELBO"):
        eps = check_shape(f"epsilon_fn(flow, x) for x of shape {x.shape}", _call(epsilon_fn, "epsilon_fn", flow, x),
                          (N, d))
        h = 1e-5
        grad = central_difference(lambda z: elbo_fn(flow, z), x, h=h, batched=True)  # (N, d)
        log_q = flow.log_q(x)
        unweighted = np.einsum("nz,nzd->nd", flow.log_post(x) - log_q, flow.grad_log_q(x))  # ε without q(z)
        check_close("finite-difference gradient of your ELBO minus (u + epsilon)  (Thm. 3.3)",
                    grad - (flow.field(x) + eps), np.zeros((N, d)), rtol=0, atol=1e-5,
                    mistakes={"ε has the wrong sign": 2 * (grad - flow.field(x)),
                              "ε without the weight q(z|x): ε = Σ_z q(z|x) (log p(z|x) − log q(z|x)) ∇_x log q(z|x), "
                              "an expectation under q": grad - (flow.field(x) + unweighted),
                              f"ε is a mean over the Z = {Z} components: E_q[f] = Σ_z q(z|x) f(z), a sum (the weights "
                              "q already sum to 1)": (grad - flow.field(x)) * (1 - 1 / Z)})
    with r.check("epsilon_fn vanishes in the ideal case q = p(z|x) (Cor. 3.4)"):
        ideal = GaussianSVFlow(flow.p_means, flow.p_log_vars, flow.p_means, flow.p_log_vars)
        check_close("epsilon_fn(ideal flow, x) with q = p (Cor. 3.4)", _call(epsilon_fn, "epsilon_fn", ideal, x),
                    np.zeros((N, d)), rtol=0, atol=1e-10)
    return r.done("ELBO (Eq. 11) and variational error (Eq. 12) satisfy Prop. 3.2 and Thm. 3.3")


def check_ex_p5_04(gates: object) -> bool:
    """Exercise 5.4: a gate matrix ``(N, 2)`` whose load-balancing loss (Eq. 22) is below ``1/2`` although
    its marginal ``P`` is not uniform."""
    from nextword.theory.svflow.attention import load_balancing_loss

    r = Report("Exercise 5.04")
    with r.check("gates is an (N, 2) matrix of probabilities"):
        g = as_array("gates", gates)
        if g.ndim != 2 or g.shape[1] != 2 or g.shape[0] < 2:
            fail(f"gates must have shape (N, 2) with N >= 2, got {g.shape}"
                 + (" — transposed? One row per input, one column per expert" if g.ndim == 2 and g.shape[0] == 2
                    else ""))
        if np.any(g < 0) or not np.allclose(g.sum(axis=1), 1.0, atol=1e-9):
            columns = g.shape[0] == 2 and np.all(g >= 0) and np.allclose(g.sum(axis=0), 1.0, atol=1e-9)
            fail(f"gates must be probabilities: non-negative rows summing to 1 (row sums {describe(g.sum(axis=1))})"
                 + (" — your columns sum to 1: transposed? One row per input, one column per expert" if columns
                    else ""))
    if r.failures:
        return r.done("")
    J, f, P = load_balancing_loss(g)
    with r.check("the marginal P is not uniform"):
        check_true(abs(P[0] - 0.5) > 0.02, f"the marginal P = {np.round(P, 3)} is (nearly) uniform (|P_1 − 1/2| must exceed "
                   "0.02); the point is a non-uniform marginal")
    with r.check("J_bal < 1/2 − 0.01 (below the value at balanced routing)"):
        check_true(J < 0.5 - 0.01, f"J_bal = {J:.4f} is not below the uniform value 1/2 by at least 0.01 "
                   f"(dispatch fractions f = {np.round(f, 3)}, marginal P = {np.round(P, 3)})")
    if r.failures:
        return r.done("")
    ties = int(np.sum(g[:, 0] == g[:, 1]))
    note = (f"\n  note: {ties} of your rows are tied exactly; they count for expert 1 (column 0) only because arg-max "
            "breaks ties to the lower index (numpy's and load_balancing_loss's convention). A router that broke them "
            "the other way would count them for expert 2 (column 1): (1/2 + δ, 1/2 − δ) with a small δ > 0 makes the point without the "
            "convention" if ties else "")
    return r.done(f"J_bal = {J:.4f} < 1/2 with marginal P = {np.round(P, 3)}: Eq. (22) is not minimised by a uniform "
                  f"marginal{note}")
