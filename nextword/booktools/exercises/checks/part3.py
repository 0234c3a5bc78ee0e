"""Checkers for the exercises of Part 3 — gradient dynamics of attention (see exercises/README.md).

Expected values come from :mod:`nextword.theory.dynamics`, :mod:`nextword.theory.dynamics.sticky`
and :mod:`nextword.data` (never copied from a solution); the counterexample checker checks
properties only.
"""
from __future__ import annotations

import contextlib
import os
from collections.abc import Callable

import numpy as np

from nextword.perturbation import ENV

from ._common import ExerciseCheckError, Report, as_array, call_student, check_close, check_shape, check_true, describe, fail, passed  # noqa: F401

__all__: list[str] = ["check_ex_p3_01", "check_ex_p3_02", "check_ex_p3_03", "check_ex_p3_04"]


_call = call_student  # shared: a stub, a non-function or a crash becomes a clear failure



@contextlib.contextmanager
def _unperturbed():
    """``NEXTWORD_PERTURB`` switched off inside: a checker's reference computation is exact, not a training run."""
    saved = os.environ.pop(ENV, None)
    try:
        yield
    finally:
        if saved is not None:
            os.environ[ENV] = saved

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

    r = Report("Exercise 3.01")
    rng = np.random.default_rng(301)
    cases = []
    for T, d_v, causal in ((1, 2, False), (4, 3, False), (5, 2, True), (7, 4, True)):
        alpha = _random_attention(rng, T, causal)
        U, V = rng.standard_normal((T, d_v)), rng.standard_normal((T, d_v))
        cases.append((f"T={T}, d_v={d_v}, {'causal' if causal else 'full'} attention", alpha, U, V))
    with r.check("score_gradient = dL/ds_ij = α_ij (B_ij − Σ_k α_ik B_ik) (Eq. 23)"):
        for label, alpha, U, V in cases:
            B = compatibility_matrix(U, V)
            expected = ref_score_gradient(alpha, B)
            got = check_shape(f"score_gradient ({label})", _call(score_gradient, f"score_gradient ({label})",
                                                                 alpha.copy(), U.copy(), V.copy()), alpha.shape)
            check_close(f"score_gradient ({label})", got, expected, rtol=1e-8, atol=1e-10,
                        mistakes={"wrong sign: it is dL/ds, not the descent direction": -expected,
                                  "the α_ij factor in front is missing": B - (alpha * B).sum(1, keepdims=True),
                                  "B = V Uᵀ instead of U Vᵀ (B_ij = u_i · v_j)": ref_score_gradient(alpha, B.T),
                                  "the mean is taken with equal weights: weight B_ik by α_ik (Eq. 12)":
                                  alpha * (B - np.where(alpha > 0, B, 0).sum(1, keepdims=True)
                                           / (alpha > 0).sum(1, keepdims=True)),
                                  "the mean is not subtracted: the softmax couples the scores of a row, "
                                  "dL/ds_ij = α_ij (B_ij − Σ_k α_ik B_ik)": alpha * B,
                                  "the mean runs down a column (over the queries): E_α_i[b] = Σ_k α_ik B_ik is "
                                  "a sum along row i": alpha * (B - (alpha * B).sum(0, keepdims=True)),
                                  "the row means lost their axis (sum(axis=1) without keepdims=True): a (T,) vector "
                                  "broadcasts along the rows, so B_ij − m_j subtracts row j's mean from column j; "
                                  "keep it a (T, 1) column": alpha * (B - (alpha * B).sum(1)[None, :])})
    with r.check("advantage A_ij = −(B_ij − Σ_k α_ik B_ik) on the visible keys (§3.4)"):
        for label, alpha, U, V in cases:
            B = compatibility_matrix(U, V)
            A = check_shape(f"advantage ({label})", _call(advantage, f"advantage ({label})", alpha.copy(), U.copy(),
                                                          V.copy()), alpha.shape)
            visible = alpha > 0
            expected = advantage_matrix(alpha, B)
            check_close(f"advantage on the visible keys ({label})", A[visible], expected[visible],
                        rtol=1e-8, atol=1e-10,
                        mistakes={"the advantage carries the α_ij factor of the gradient: drop it":
                                  (alpha * expected)[visible],
                                  "wrong sign: A_ij > 0 must mean that raising s_ij lowers the loss, "
                                  "A_ij = Σ_k α_ik B_ik − B_ij": -expected[visible],
                                  "the mean is taken with equal weights: weight B_ik by α_ik":
                                  (np.where(visible, B, 0).sum(1, keepdims=True) / visible.sum(1, keepdims=True) - B)[visible],
                                  "the row means lost their axis (sum(axis=1) without keepdims=True): a (T,) vector "
                                  "broadcasts along the rows, so row j's mean lands in column j; keep it (T, 1)":
                                  ((alpha * B).sum(1)[None, :] - B)[visible]})
    return r.done("Eq. (23) and the advantage A_ij match on full and causal attention (4 cases)")


def check_ex_p3_02(first_order: Callable, dominant: Callable, alpha_bad, U_bad, j_bad: int) -> bool:
    """Exercise 02: Eqs. (41) and (43), plus a configuration where (43) gets the sign wrong."""
    from nextword.theory.dynamics.gradients import dominant_query_loss_change, first_order_loss_change

    r = Report("Exercise 3.02")
    rng = np.random.default_rng(302)
    cases = []
    for T, d_v, j in ((4, 2, 0), (5, 5, 2), (6, 3, 4)):
        cases.append((T, d_v, j, _random_attention(rng, T, causal=False), rng.standard_normal((T, d_v))))
    eta = 0.05
    with r.check("first_order = Eq. (41): ΔL_i = −η α_ij u_i · ū_j"):
        for T, d_v, j, alpha, U in cases:
            expected = first_order_loss_change(alpha, U, j, eta)
            ubar_mean = U.mean(0)
            check_close(f"first_order(alpha, U, j={j}, eta={eta}) with T={T}, d_v={d_v}",
                        _call(first_order, "first_order", alpha.copy(), U.copy(), j, eta), expected, rtol=1e-8, atol=1e-12,
                        mistakes={"ū_j = Σ_i α_ij u_i weights the errors by column j; the plain mean of U is not it":
                                  -eta * alpha[:, j] * (U @ ubar_mean),
                                  "used row j of α (α_ji) where column j (α_ij) is due":
                                  -eta * alpha[j, :] * (U @ (alpha[j, :] @ U)),
                                  "used row j of α (α_ji) in the factor where column j (α_ij) is due":
                                  -eta * alpha[j, :] * (U @ (alpha[:, j] @ U)),
                                  "used row j of α (α_ji) in ū_j where column j (ū_j = Σ_i α_ij u_i) is due":
                                  -eta * alpha[:, j] * (U @ (alpha[j, :] @ U)),
                                  "ū_j is the error signal column j receives, Σ_i α_ij u_i (Eq. 37), "
                                  "not the error u_j of position j":
                                  -eta * alpha[:, j] * (U @ U[j]),
                                  "the factor α_ij in front is missing: query i feels the change of v_j through "
                                  "its own weight on it, ΔL_i = −η α_ij u_i · ū_j":
                                  -eta * (U @ (alpha[:, j] @ U)),
                                  "α_ij² in front: ū_j = Σ_r α_rj u_r already holds the second α; the factor in "
                                  "front is α_ij once": -eta * alpha[:, j] ** 2 * (U @ (alpha[:, j] @ U)),
                                  "the sum leaves out r = i: Eq. (41) sums over every query r, i included":
                                  -eta * alpha[:, j] * (U @ (alpha[:, j] @ U) - alpha[:, j] * np.sum(U * U, axis=1)),
                                  f"column {(j - 1) % T} (j − 1, wrapped) instead of column j = {j}: j is already the 0-based index "
                                  "of the value moved":
                                  first_order_loss_change(alpha, U, (j - 1) % T, eta)})
    with r.check("dominant = Eq. (43): −η α_ij² ‖u_i‖²"):
        for T, d_v, j, alpha, U in cases:
            expected = dominant_query_loss_change(alpha, U, j, eta)
            check_close(f"dominant(alpha, U, j={j}, eta={eta}) with T={T}, d_v={d_v}",
                        _call(dominant, "dominant", alpha.copy(), U.copy(), j, eta), expected, rtol=1e-8, atol=1e-12,
                        mistakes={"‖u_i‖ instead of ‖u_i‖²": -eta * alpha[:, j] ** 2 * np.linalg.norm(U, axis=1),
                                  "α_ij instead of α_ij²": -eta * alpha[:, j] * np.sum(U * U, axis=1),
                                  "used row j of α (α_ji²) where column j (α_ij², the weight query i puts on "
                                  "value j) is due": -eta * alpha[j, :] ** 2 * np.sum(U * U, axis=1),
                                  "α_jj² (the diagonal entry) for every query: the factor is α_ij², query i's own "
                                  "weight on value j": -eta * alpha[j, j] ** 2 * np.sum(U * U, axis=1),
                                  "‖U‖² summed over every query (the wrong axis): ‖u_i‖² is the squared norm of row "
                                  "i of U, np.sum(U * U, axis=1)": -eta * alpha[:, j] ** 2 * np.sum(U * U),
                                  f"column {(j - 1) % T} (j − 1, wrapped) instead of column j = {j}: j is already the 0-based index "
                                  "of the value moved":
                                  dominant_query_loss_change(alpha, U, (j - 1) % T, eta)})
    with r.check("your configuration: a query's loss rises to first order although Eq. (43) promises a decrease"):
        alpha_b = as_array("alpha_bad", alpha_bad)
        U_b = as_array("U_bad", U_bad)
        if alpha_b.ndim != 2 or alpha_b.shape[0] != alpha_b.shape[1]:
            fail(f"alpha_bad should be a square (T, T) matrix, got shape {alpha_b.shape}")
        T = alpha_b.shape[0]
        check_true(np.all(alpha_b >= 0) and np.allclose(alpha_b.sum(axis=1), 1.0),
                   f"alpha_bad must be row-stochastic (entries >= 0, rows summing to 1); row sums {describe(alpha_b.sum(1))}")
        if U_b.ndim != 2 or U_b.shape[0] != T:
            fail(f"U_bad should have shape (T, d_v) with T = {T}, got {U_b.shape}")
        check_true(isinstance(j_bad, (int, np.integer)) and 0 <= int(j_bad) < T, f"j_bad must be an integer in [0, {T})")
        fo = first_order_loss_change(alpha_b, U_b, int(j_bad), 1.0)
        check_true(np.any(fo > 1e-9), f"in your configuration no query's loss rises to first order (Eq. 41 gives "
                   f"{describe(fo, precision=4)}): you need a user of column j_bad whose error opposes the column's "
                   "average signal")
    return r.done("Eqs. (41) and (43) are right, and your configuration has a query whose loss rises "
                  "although Eq. (43) promises a decrease")


def check_ex_p3_03(transition: Callable, entropy_rate: Callable, best_rule: str) -> bool:
    """Exercise 03: sticky transition matrices, entropy rates, and the rule behind 1.8833."""
    from nextword.data import sticky_markov_chain
    from nextword.theory.dynamics.sticky import markov_entropy_rate, stationary_distribution

    r = Report("Exercise 3.03")
    rules = ("uniform_others", "circular_distance", "inverse_circular_distance")
    chains = ((5, 0.5), (6, 0.0), (8, 0.3))
    for rule in rules:
        with r.check(f"transition(n, stay, {rule!r}) for (n, stay) = {chains}"):
            for n, stay in chains:
                ref = sticky_markov_chain(n, stay, rule=rule).transition
                got = _call(transition, f"transition({n}, {stay}, {rule!r})", n, stay, rule)
                mistakes = {}
                if rule != "uniform_others":  # the distance on the ring, not along the line
                    i, k = np.indices((n, n))
                    w = np.abs(i - k).astype(float)
                    if rule == "inverse_circular_distance":
                        w = np.where(i != k, 1.0 / np.maximum(w, 1.0), 0.0)
                    mistakes["|z − y| is the distance along a line; the states sit on a circle: "
                             "min(|z − y|, n − |z − y|)"] = (1 - stay) * w / w.sum(1, keepdims=True) + stay * np.eye(n)
                check_close(f"transition({n}, {stay}, {rule!r})", got, ref, rtol=1e-10, atol=1e-12,
                            mistakes=mistakes)
    with r.check(f"transition(n, stay, 'line_distance') for (n, stay) = {chains}: row z is the law of the next "
                 "state given z (weights not circulant)"):
        for n, stay in chains:
            i, k = np.indices((n, n))
            w = np.abs(i - k).astype(float)  # the states on a line: symmetric, not circulant
            ring = np.minimum(w, n - w)
            ref = (1 - stay) * w / w.sum(1, keepdims=True) + stay * np.eye(n)
            got = _call(transition, f"transition({n}, {stay}, 'line_distance')", n, stay, "line_distance")
            check_close(f"transition({n}, {stay}, 'line_distance')", got, ref, rtol=1e-10, atol=1e-12,
                        mistakes={"the weights are normalised down the columns (P[z, y] = w_zy / Σ_u w_uy): row z "
                                  "is the law of the next state given z, P[z, y] = (1 − stay) w_zy / Σ_u w_zu, so "
                                  "every ROW sums to 1 (the ring rules' weights are circulant: there, column sums "
                                  "equal row sums and hide it)":
                                  (1 - stay) * w / w.sum(0, keepdims=True) + stay * np.eye(n),
                                  "the circular distance min(|z − y|, n − |z − y|): on a line, states 0 and n − 1 "
                                  "are n − 1 apart, w = |z − y|":
                                  (1 - stay) * ring / ring.sum(1, keepdims=True) + stay * np.eye(n)})
    with r.check("entropy_rate of the sticky chains and of a chain with a non-uniform stationary law"):
        for n, stay in chains:
            for rule in rules:
                ref = sticky_markov_chain(n, stay, rule=rule).transition
                check_close(f"entropy_rate of the ({n}, {stay}, {rule!r}) chain",
                            _call(entropy_rate, "entropy_rate", ref.copy()), markov_entropy_rate(ref),
                            rtol=1e-9, atol=1e-12)
        P = np.random.default_rng(303).dirichlet(np.ones(4), size=4)  # not doubly stochastic: pi is not uniform
        H_rows = -(P * np.log(P)).sum(1)
        check_close(f"entropy_rate of a random 4-state chain with a non-uniform stationary law, P = {describe(P, precision=3)}",
                    _call(entropy_rate, "entropy_rate", P.copy()), markov_entropy_rate(P), rtol=1e-8, atol=1e-10,
                    mistakes={"the row entropies are averaged with equal weights: weight them by the stationary law "
                              "ν (if you took an eigenvector of eig(P): that is the RIGHT eigenvector, the constant "
                              "vector; ν is the left one, ν P = ν, an eigenvector of P.T)":
                              H_rows.mean(),
                              "summed P log P down the columns: the entropy of row z (the law of the next state "
                              "given state z) is −Σ_y P_zy log P_zy, weighted by ν_z":
                              -(stationary_distribution(P) * (P * np.log(P)).sum(0)).sum()})
    with r.check("best_rule: the rule whose (8, 0.3) chain has entropy rate 1.8833"):
        check_true(best_rule in rules, f"best_rule should be one of {rules}, got {best_rule!r}")
        rate = markov_entropy_rate(sticky_markov_chain(8, 0.3, rule=best_rule).transition)
        check_true(round(rate, 4) == 1.8833, f"the {best_rule!r} chain has entropy rate {rate:.4f}, not 1.8833")
    return r.done("transition matrices match for 4 rules x 3 chains (the line included), entropy rates for the 3 "
                  "ring rules x 3 chains and a random chain; "
                  "the rule behind Table 1's 1.8833 is identified")


def _em_variant(params, X: np.ndarray, y: np.ndarray, value_lr: float, *, causal: bool = True,
                transpose: bool = True, one_hot: bool = True, least_squares: bool = True) -> np.ndarray:
    """The new W_V of one M-step computed with a typical slip (for the diagnosis only): non-causal weights,
    α U where αᵀ U is due (value j collects Σ_i α_ij u_i, a column of α), δ = p without − e_y, or ΔV mapped
    back to W_V by Xᵀ ΔV instead of least squares."""
    from nextword.attention import scaled_dot_product_attention, softmax

    G, alpha = scaled_dot_product_attention(X @ params.W_Q, X @ params.W_K, X @ params.W_V, causal=causal,
                                            return_weights=True)
    delta = softmax(G @ params.W_O + params.b)
    if one_hot:
        delta[np.arange(len(y)), y] -= 1.0
    U = delta @ params.W_O.T
    dV = -value_lr * ((alpha.T if transpose else alpha) @ U)
    return params.W_V + (np.linalg.lstsq(X, dV, rcond=None)[0] if least_squares else X.T @ dV)


def check_ex_p3_04(em_value_step: Callable) -> bool:
    """Exercise 04: ``em_value_step(params, X, y, value_lr) -> W_V`` = one EM-like M-step."""
    from nextword.data import sticky_markov_chain
    from nextword.theory.dynamics.gradients import HeadParams
    from nextword.theory.dynamics.sticky import ProtocolConfig, make_sticky_task, sticky_means, train_protocol

    r = Report("Exercise 3.04")
    rng = np.random.default_rng(304)
    chain = sticky_markov_chain(4, 0.5, rule="uniform_others")
    with r.check("em_value_step = one M-step (Eq. 33 on the values, least squares back to W_V)"):
        for T, value_lr in ((12, 0.5), (30, 2.0)):
            means = sticky_means(4, 6, rng=rng)
            task = make_sticky_task(chain.sample(T + 1, rng), means, rng=rng)
            params = HeadParams.init(6, 3, 5, 4, rng=rng, scale=0.5)
            with _unperturbed():  # one exact M-step: the reference must start from these params, as the answer does
                run = train_protocol("em", params, task, ProtocolConfig(steps=1, lr=1e-3, value_lr=value_lr))
            label = f"em_value_step(params, X, y, value_lr={value_lr}) on a sequence of length T={T}"
            got = check_shape(label, _call(em_value_step, label, params, task.X.copy(), task.targets.copy(), value_lr),
                              params.W_V.shape)
            check_close(label, got, run.params.W_V, rtol=1e-7, atol=1e-9,
                        mistakes={"W_V moves the wrong way: the M-step is Δv_j = −η Σ_i α_ij u_i":
                                  2 * params.W_V - run.params.W_V,
                                  "returns the update ΔW_V, not the new W_V": run.params.W_V - params.W_V,
                                  "attention without the causal mask: the §7.2 head is causal (causal=True)":
                                  _em_variant(params, task.X, task.targets, value_lr, causal=False),
                                  "α U instead of αᵀ U: value j collects Σ_i α_ij u_i, from the queries i that "
                                  "attend to it (column j of α)":
                                  _em_variant(params, task.X, task.targets, value_lr, transpose=False),
                                  "the error δ_i = p_i − e_(y_i) lacks its − e_(y_i) (Eq. 13): with p_i alone, "
                                  "every value is pushed away from every class":
                                  _em_variant(params, task.X, task.targets, value_lr, one_hot=False),
                                  "ΔV is mapped back by Xᵀ ΔV (a gradient step on W_V): the M-step moves the values "
                                  "to V + ΔV, so W_V gets the least-squares solution of X ΔW_V = ΔV":
                                  _em_variant(params, task.X, task.targets, value_lr, least_squares=False)})
    return r.done("one EM-like M-step (Eq. 33 on the values, least squares back to W_V) matches the "
                  "library's protocol on 2 sequences")
