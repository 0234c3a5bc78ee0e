"""Checkers for the exercises of Part 3 — gradient dynamics of attention (see exercises/README.md).

Expected values come from :mod:`nextword.theory.dynamics`, :mod:`nextword.theory.dynamics.sticky`
and :mod:`nextword.data` (never copied from a solution); the counterexample checker checks
properties only.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._common import ExerciseCheckError, as_array, check_close, check_shape, check_true, fail, passed, call_student  # noqa: F401

__all__: list[str] = ["check_ex_p3_01", "check_ex_p3_02", "check_ex_p3_03", "check_ex_p3_04"]


_call = call_student  # shared: a stub, a non-function or a crash becomes a clear failure


def _random_attention(rng: np.random.Generator, T: int, causal: bool) -> np.ndarray:
    from nextword.attention.core import softmax

    S = 2.0 * rng.standard_normal((T, T))
    if causal:
        S = np.where(np.tri(T, dtype=bool), S, -np.inf)
    return softmax(S)


def check_ex_p3_01(score_gradient: Callable, advantage: Callable) -> bool:
    """Exercise 01: ``score_gradient(alpha, U, V)`` = Eq. (23), ``advantage(alpha, U, V)`` = §3.4."""
    from nextword.theory.dynamics.gradients import advantage_matrix, compatibility_matrix
    from nextword.theory.dynamics.gradients import score_gradient as ref_score_gradient

    rng = np.random.default_rng(301)
    for T, d_v, causal in ((1, 2, False), (4, 3, False), (5, 2, True), (7, 4, True)):
        alpha = _random_attention(rng, T, causal)
        U, V = rng.standard_normal((T, d_v)), rng.standard_normal((T, d_v))
        B = compatibility_matrix(U, V)
        label = f"T={T}, d_v={d_v}, {'causal' if causal else 'full'} attention"
        got = _call(score_gradient, "score_gradient", alpha.copy(), U.copy(), V.copy())
        check_shape(f"score_gradient ({label})", got, (T, T))
        expected = ref_score_gradient(alpha, B)
        if np.allclose(got, -expected, atol=1e-10) and np.abs(expected).max() > 1e-8:
            fail(f"score_gradient ({label}) has the wrong sign: it is dL/ds, not the descent direction")
        check_close(f"score_gradient ({label})", got, expected, rtol=1e-8, atol=1e-10)
        A = as_array("advantage", _call(advantage, "advantage", alpha.copy(), U.copy(), V.copy()))
        check_shape(f"advantage ({label})", A, (T, T))
        visible = alpha > 0
        check_close(f"advantage on the visible keys ({label})", A[visible],
                    advantage_matrix(alpha, B)[visible], rtol=1e-8, atol=1e-10)
    return passed("Eq. (23) and the advantage A_ij match on full and causal attention (4 cases)")


def check_ex_p3_02(first_order: Callable, dominant: Callable, alpha_bad, U_bad, j_bad: int) -> bool:
    """Exercise 02: Eqs. (41) and (43), plus a configuration where (43) gets the sign wrong."""
    from nextword.theory.dynamics.gradients import dominant_query_loss_change, first_order_loss_change

    rng = np.random.default_rng(302)
    for T, d_v, j in ((4, 2, 0), (6, 3, 4), (5, 5, 2)):
        alpha = _random_attention(rng, T, causal=False)
        U = rng.standard_normal((T, d_v))
        eta = 0.05
        check_close(f"first_order(T={T}, j={j})", _call(first_order, "first_order", alpha.copy(), U.copy(), j, eta),
                    first_order_loss_change(alpha, U, j, eta), rtol=1e-8, atol=1e-12)
        check_close(f"dominant(T={T}, j={j})", _call(dominant, "dominant", alpha.copy(), U.copy(), j, eta),
                    dominant_query_loss_change(alpha, U, j, eta), rtol=1e-8, atol=1e-12)
    alpha_bad = as_array("alpha_bad", alpha_bad)
    U_bad = as_array("U_bad", U_bad)
    if alpha_bad.ndim != 2 or alpha_bad.shape[0] != alpha_bad.shape[1]:
        fail(f"alpha_bad should be a square (T, T) matrix, got shape {alpha_bad.shape}")
    T = alpha_bad.shape[0]
    check_true(np.all(alpha_bad >= 0) and np.allclose(alpha_bad.sum(axis=1), 1.0),
               "alpha_bad must be row-stochastic (entries >= 0, rows summing to 1)")
    if U_bad.ndim != 2 or U_bad.shape[0] != T:
        fail(f"U_bad should have shape (T, d_v) with T = {T}, got {U_bad.shape}")
    check_true(isinstance(j_bad, (int, np.integer)) and 0 <= int(j_bad) < T, f"j_bad must be an integer in [0, {T})")
    fo = first_order_loss_change(alpha_bad, U_bad, int(j_bad), 1.0)
    check_true(np.any(fo > 1e-9), "in your configuration no query's loss rises to first order (Eq. 41): "
               "you need a user of column j_bad whose error opposes the column's average signal")
    return passed("Eqs. (41) and (43) are right, and your configuration has a query whose loss rises "
                  "although Eq. (43) promises a decrease")


def check_ex_p3_03(transition: Callable, entropy_rate: Callable, best_rule: str) -> bool:
    """Exercise 03: sticky transition matrices, entropy rates, and the rule behind 1.8833."""
    from nextword.data import sticky_markov_chain
    from nextword.theory.dynamics.sticky import markov_entropy_rate

    rules = ("uniform_others", "circular_distance", "inverse_circular_distance")
    for n, stay in ((8, 0.3), (5, 0.5), (6, 0.0)):
        for rule in rules:
            ref = sticky_markov_chain(n, stay, rule=rule).transition
            got = _call(transition, "transition", n, stay, rule)
            check_close(f"transition({n}, {stay}, {rule!r})", got, ref, rtol=1e-10, atol=1e-12)
            check_close(f"entropy_rate of the ({n}, {stay}, {rule!r}) chain",
                        _call(entropy_rate, "entropy_rate", ref.copy()), markov_entropy_rate(ref),
                        rtol=1e-9, atol=1e-12)
    rng = np.random.default_rng(303)
    P = rng.dirichlet(np.ones(4), size=4)  # not doubly stochastic: pi is not uniform
    check_close("entropy_rate of a random 4-state chain (non-uniform stationary law)",
                _call(entropy_rate, "entropy_rate", P.copy()), markov_entropy_rate(P), rtol=1e-8, atol=1e-10)
    check_true(best_rule in rules, f"best_rule should be one of {rules}, got {best_rule!r}")
    rate = markov_entropy_rate(sticky_markov_chain(8, 0.3, rule=best_rule).transition)
    check_true(round(rate, 4) == 1.8833, f"the {best_rule!r} chain has entropy rate {rate:.4f}, not 1.8833")
    return passed("transition matrices and entropy rates match for 3 rules x 3 chains and a random chain; "
                  "the rule behind Table 1's 1.8833 is identified")


def check_ex_p3_04(em_value_step: Callable) -> bool:
    """Exercise 04: ``em_value_step(params, X, y, value_lr) -> W_V`` = one EM-like M-step."""
    from nextword.data import sticky_markov_chain
    from nextword.theory.dynamics.gradients import HeadParams
    from nextword.theory.dynamics.sticky import ProtocolConfig, make_sticky_task, sticky_means, train_protocol

    rng = np.random.default_rng(304)
    chain = sticky_markov_chain(4, 0.5, rule="uniform_others")
    for T, value_lr in ((12, 0.5), (30, 2.0)):
        means = sticky_means(4, 6, rng=rng)
        task = make_sticky_task(chain.sample(T + 1, rng), means, rng=rng)
        params = HeadParams.init(6, 3, 5, 4, rng=rng, scale=0.5)
        run = train_protocol("em", params, task, ProtocolConfig(steps=1, lr=1e-3, value_lr=value_lr))
        got = _call(em_value_step, "em_value_step", params, task.X.copy(), task.targets.copy(), value_lr)
        got = check_shape(f"em_value_step(T={T}) result", got, params.W_V.shape)
        if np.allclose(got - params.W_V, -(run.params.W_V - params.W_V), atol=1e-9):
            fail(f"em_value_step(T={T}) moves W_V the wrong way: the M-step is Δv_j = -η Σ_i α_ij u_i")
        check_close(f"em_value_step(T={T}, value_lr={value_lr})", got, run.params.W_V, rtol=1e-7, atol=1e-9)
    return passed("one EM-like M-step (Eq. 33 on the values, least squares back to W_V) matches the "
                  "library's protocol on 2 sequences")
