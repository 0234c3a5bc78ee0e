"""Checkers for the exercises of Part 2 (see exercises/README.md).

Expected values come from the library (:mod:`nextword.theory.formulation.objectives`,
:mod:`nextword.theory.formulation.diffusion`, :mod:`nextword.theory.formulation.ssm`), never from a copy of a solution.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._common import ExerciseCheckError, as_array, check_close, check_shape, check_true, fail, passed, call_student  # noqa: F401

__all__: list[str] = ["check_ex_p2_01", "check_ex_p2_02", "check_ex_p2_03"]
from .part2_b import __all__ as _p2b_all, check_ex_p2_04  # noqa: E402,F401  (helper P2b: Exercise 04)
__all__ += _p2b_all


_call = call_student  # shared: a stub, a non-function or a crash becomes a clear failure


def _random_model(rng: np.random.Generator, V: int, context: int | None):
    """A next-token model whose law depends on the last ``context`` tokens (all of them if None)."""
    table: dict[tuple[int, ...], np.ndarray] = {}

    def next_probs(prefix: tuple[int, ...]) -> np.ndarray:
        key = tuple(prefix) if context is None else tuple(prefix)[max(0, len(prefix) - context):]
        if key not in table:
            table[key] = rng.dirichlet(np.full(V, 0.8))
        return table[key]

    return next_probs


def check_ex_p2_01(per_position_kl: Callable) -> bool:
    """Exercise 01: ``per_position_kl(p_next, q_next, V, L) -> (L,)``, the terms of (4.4b).

    Compared with :func:`nextword.theory.formulation.objectives.kl_decomposition`; the sum must equal the joint
    KL (4.2a) computed from :func:`~nextword.theory.formulation.objectives.sequence_distribution`.
    """
    from nextword.theory.formulation.objectives import kl_decomposition, kl_divergence, sequence_distribution

    rng = np.random.default_rng(201)
    cases = [(2, 3, None, None), (3, 3, 1, 2), (2, 5, 1, None)]
    for V, L, ctx_p, ctx_q in cases:
        p_next, q_next = _random_model(rng, V, ctx_p), _random_model(rng, V, ctx_q)
        expected = kl_decomposition(p_next, q_next, V, L)
        got = _call(per_position_kl, "per_position_kl", p_next, q_next, V, L)
        got = check_shape(f"per_position_kl(V={V}, L={L})", got, (L,))
        check_true(np.all(got >= -1e-12), "every term is an expected KL divergence, so it cannot be negative")
        check_close(f"per_position_kl(V={V}, L={L})", got, expected.per_position, rtol=1e-8, atol=1e-10)
        joint = kl_divergence(sequence_distribution(p_next, V, L)[0], sequence_distribution(q_next, V, L)[0])
        check_close("the sum of the per-position terms", got.sum(), joint, rtol=1e-8, atol=1e-10)
    same = _random_model(rng, 3, 1)
    check_close("per_position_kl(p, p, ...)", _call(per_position_kl, "per_position_kl", same, same, 3, 3),
                np.zeros(3), atol=1e-12)
    return passed("per-position KLs match (4.4b) and add up to the joint KL (4.2a) on 4 model pairs")


def check_ex_p2_02(uniform_generator: Callable, absorbing_generator: Callable, reverse_rates: Callable) -> bool:
    """Exercise 02: corrected generators of Examples 9.2/9.3 and the reverse rates (D.1)."""
    from nextword.theory.formulation import diffusion as dd

    for V, beta in ((2, 1.0), (4, 0.5), (6, 2.0)):
        Q = check_shape(f"uniform_generator({V}, {beta})", _call(uniform_generator, "uniform_generator", V, beta), (V, V))
        problems = dd.generator_violations(Q, atol=1e-10)
        check_true(not problems, f"uniform_generator({V}, {beta}) is not a rate matrix: " + "; ".join(problems))
        check_close(f"uniform_generator({V}, {beta})", Q, dd.uniform_generator(V, beta), rtol=1e-10, atol=1e-12)
        for mask in (0, V - 1):
            Qa = check_shape(f"absorbing_generator({V}, {mask}, {beta})",
                             _call(absorbing_generator, "absorbing_generator", V, mask, beta), (V, V))
            problems = dd.generator_violations(Qa, atol=1e-10)
            check_true(not problems, f"absorbing_generator({V}, {mask}, {beta}) is not a rate matrix: " + "; ".join(problems))
            check_true(np.allclose(Qa[mask], 0.0), "the mask state must never leave: its row should be zero")
            check_close(f"absorbing_generator({V}, {mask}, {beta})", Qa, dd.absorbing_generator(V, mask, beta),
                        rtol=1e-10, atol=1e-12)
    rng = np.random.default_rng(202)
    for S in (3, 5):
        Q = rng.exponential(size=(S, S))
        np.fill_diagonal(Q, 0.0)
        np.fill_diagonal(Q, -Q.sum(axis=1))
        p = rng.dirichlet(np.ones(S))
        R = check_shape("reverse_rates(Q, p)", _call(reverse_rates, "reverse_rates", Q.copy(), p.copy()), (S, S))
        problems = dd.generator_violations(R, atol=1e-9)
        check_true(not problems, "reverse_rates(Q, p) is not a rate matrix: " + "; ".join(problems))
        check_close("p @ reverse_rates(Q, p) (it should undo the forward flow, i.e. equal -p @ Q)", p @ R, -(p @ Q),
                    rtol=1e-8, atol=1e-10)
        check_close("reverse_rates(Q, p)", R, dd.reverse_generator(Q, p), rtol=1e-8, atol=1e-10)
    return passed("both generators have zero row sums and the right rates; the reverse rates satisfy (D.1)")


def check_ex_p2_03(zoh: Callable, scan: Callable) -> bool:
    """Exercise 03: zero-order-hold discretisation (corrected C.4a) and the linear recurrence (5.9)."""
    from nextword.theory.formulation import ssm

    rng = np.random.default_rng(203)
    for s, d, label in ((3, 2, "a stable A"), (4, 4, "a square B"), (2, 1, "a singular A (A = 0)")):
        A = np.zeros((s, s)) if "singular" in label else rng.normal(size=(s, s)) - 2 * np.eye(s)
        B = rng.normal(size=(s, d))
        dt = 0.3
        out = _call(zoh, "zoh", A.copy(), B.copy(), dt)
        if not isinstance(out, tuple) or len(out) != 2:
            fail("zoh should return a pair (Abar, Bbar)")
        Ab_exp, Bb_exp = ssm.discretize_zoh(A, B, dt)
        check_close(f"Abar for {label}", out[0], Ab_exp, rtol=1e-8, atol=1e-10)
        check_close(f"Bbar for {label}", out[1], Bb_exp, rtol=1e-8, atol=1e-10)
    s, d, T = 3, 2, 7
    Ab, Bb = ssm.discretize_zoh(rng.normal(size=(s, s)) - np.eye(s), rng.normal(size=(s, d)), 0.2)
    C, D = rng.normal(size=(d, s)), rng.normal(size=(d, d))
    h, v0 = rng.normal(size=(T, d)), rng.normal(size=s)
    got = check_shape("scan(...)", _call(scan, "scan", Ab, Bb, C, D, h.copy(), v0.copy()), (T, d))
    states, expected = ssm.ssm_scan(Ab, Bb, C, D, h, v0)
    if np.allclose(got, expected, rtol=1e-8, atol=1e-10):
        return passed("zoh matches the exact hold discretisation (singular A included) and scan matches (5.9)")
    updated_first = (states @ Ab.T + h @ Bb.T) @ C.T + h @ D.T  # u_k = C v_{k+1} + D h_k
    shifted = np.allclose(got, updated_first, atol=1e-8)
    fail("scan outputs are off by one step: u_k must use v_k before it is updated with h_k" if shifted
         else "scan outputs do not match u_k = C v_k + D h_k with v_{k+1} = Abar v_k + Bbar h_k")
