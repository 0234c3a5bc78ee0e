"""Checkers that teach: for every exercise a typical mistake is rejected with a message that names the
mistake, and a correct answer written differently from the solution (loops instead of vectorised code,
float32 where the task allows, another algorithm) is accepted.

The three exercises that need a trained model (Part 1 Ex 3, 9, 12) have theirs in
``test_exercises_part1_a.py`` / ``test_exercises_part1_b.py``, beside their model fixtures.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import sympy as sp

from nextword.booktools.exercises import checks as C
from nextword.booktools.exercises.checks import ExerciseCheckError


def rejects(check, *args, match: str) -> str:
    with pytest.raises(ExerciseCheckError, match=match) as info:
        check(*args)
    return str(info.value)


# ---- Part 1 -------------------------------------------------------------------------------------
def _steps_loops_f32(q, K):
    q, K = np.asarray(q, np.float32), np.asarray(K, np.float32)
    n, d = K.shape
    s = np.array([sum(K[j, i] * q[i] for i in range(d)) for j in range(n)], np.float32) / np.float32(math.sqrt(d))
    e = np.exp(s - s.max())
    return s, e, e / e.sum()


def test_p1_01_float32_loops_accepted_and_missing_sqrt_d_named():
    assert C.check_ex_p1_01(_steps_loops_f32)
    msg = rejects(
        C.check_ex_p1_01,
        lambda q, K: (K @ q, np.exp(K @ q), np.exp(K @ q) / np.exp(K @ q).sum()),
        match="forget to divide by √d",
    )
    assert "Exercise 1's q and K" in msg and "got [ 1. -1. -2.]" in msg and "expected [ 0.5 -0.5 -1. ]" in msg


def test_p1_02_loops_accepted_and_plain_mean_named():
    from scipy.optimize import linprog

    def attention_output(q, K, V):
        n, d = K.shape
        s = [sum(K[j, i] * q[i] for i in range(d)) / math.sqrt(d) for j in range(n)]
        m = max(s)
        e = [math.exp(x - m) for x in s]
        w = np.array([x / sum(e) for x in e])
        return w, sum(w[j] * V[j] for j in range(n))

    def in_hull(x, V):
        n = V.shape[0]
        res = linprog(
            np.ones(n),
            A_eq=np.vstack([V.T, np.ones(n)]),
            b_eq=np.append(x, 1.0),
            bounds=[(0, 1)] * n,
            method="highs-ds",
        )
        return bool(res.status == 0)

    assert C.check_ex_p1_02(attention_output, in_hull)
    rejects(
        C.check_ex_p1_02,
        lambda q, K, V: (attention_output(q, K, V)[0], V.mean(0)),
        in_hull,
        match="plain mean of the values",
    )


def test_p1_04_loop_over_heads_accepted_and_missing_output_projection_named():
    def count(d, h, L):
        per_layer = sum(3 * d * (d // h) for _ in range(h)) + d * d
        return per_layer * L

    assert C.check_ex_p1_04(count)
    rejects(C.check_ex_p1_04, lambda d, h, L: 3 * d * d * L, match="output projection")


def test_p1_05_loops_accepted_and_per_dimension_frequency_named():
    def pe(t, d, dims):
        out = []
        for i in dims:
            angle = t / 10000 ** ((i - i % 2) / d)
            out.append(math.sin(angle) if i % 2 == 0 else math.cos(angle))
        return out

    assert C.check_ex_p1_05(pe)
    rejects(
        C.check_ex_p1_05,
        lambda t, d, dims: [
            math.sin(t / 10000 ** (i / d)) if i % 2 == 0 else math.cos(t / 10000 ** (i / d)) for i in dims
        ],
        match="share one frequency",
    )


def test_p1_06_complex_numbers_accepted_and_unrotated_product_named():
    def rope_score(q, k, i, j):
        d = len(q)
        theta = 10000.0 ** (-np.arange(0, d, 2) / d)
        qc = (q[0::2] + 1j * q[1::2]) * np.exp(1j * i * theta)
        kc = (k[0::2] + 1j * k[1::2]) * np.exp(1j * j * theta)
        return float(np.real(np.sum(qc * np.conj(kc))))

    assert C.check_ex_p1_06(rope_score)
    rejects(C.check_ex_p1_06, lambda q, k, i, j: float(q @ k), match="plain q·k")


def test_p1_07_counter_accepted_and_bits_named():
    from collections import Counter

    def mi(ids, position, log=math.log):
        pairs = Counter(zip(ids[:, position - 1].tolist(), ids[:, -1].tolist()))
        n = sum(pairs.values())
        px, py = Counter(), Counter()
        for (x, y), c in pairs.items():
            px[x] += c
            py[y] += c
        return sum(c / n * log(c * n / (px[x] * py[y])) for (x, y), c in pairs.items())

    good = [("would", "run", "syntactic"), ("code", "crash", "semantic"), ("finally", "rise", "discourse")]
    assert C.check_ex_p1_07(mi, good)
    rejects(C.check_ex_p1_07, lambda ids, p: mi(ids, p, log=math.log2), good, match="bits")


def test_p1_08_closed_form_accepted_and_rnn_history_named():
    assert C.check_ex_p1_08(lambda T, d: d, lambda T, d: sum(d for _ in range(T)), lambda f, d: math.ceil(f))
    rejects(C.check_ex_p1_08, lambda T, d: T * d, lambda T, d: T * d, lambda f, d: f, match="only its current state")


def test_p1_10_written_differently_accepted_and_sigma_squared_named():
    sigma = sp.symbols("sigma", positive=True)

    def sim(d, s, n, rng):
        total = np.zeros(n)
        for i in range(d):  # one coordinate at a time
            total += (s * rng.standard_normal(n)) * (s * rng.standard_normal(n))
        return float(np.mean(total**2) - np.mean(total) ** 2)

    assert C.check_ex_p1_10(lambda d: sp.Integer(d) * (sigma**2) ** 2, sim)
    rejects(C.check_ex_p1_10, lambda d: d * sigma**2, sim, match="σ²·σ² = σ⁴")


def test_p1_11_product_by_product_count_accepted_and_multiply_adds_named():
    pytest.importorskip("torch")

    def mm(m, n, p):
        return 2 * m * n * p

    def flops(T, d):
        rnn = mm(T, d, d) + sum(mm(1, d, d) for _ in range(T - 1))
        att = 3 * mm(T, d, d) + mm(T, d, T) + mm(T, T, d) + mm(T, d, d)
        return {"rnn": (rnn, 2 * rnn, T), "attention": (att, 2 * att, 1)}

    assert C.check_ex_p1_11(flops)
    halved = lambda T, d: {k: (f // 2, b // 2, s) for k, (f, b, s) in flops(T, d).items()}  # noqa: E731
    rejects(C.check_ex_p1_11, halved, match="multiply-adds")


# ---- Part 2 -------------------------------------------------------------------------------------
def test_p2_01_chain_rule_differences_accepted_and_reversed_kl_named():
    from nextword.theory.formulation.objectives import kl_decomposition, kl_divergence, sequence_distribution

    def per_position(p, q, V, L):  # KL of the first l tokens minus KL of the first l-1 (the chain rule)
        joint = [0.0] + [
            float(kl_divergence(sequence_distribution(p, V, l)[0], sequence_distribution(q, V, l)[0]))
            for l in range(1, L + 1)
        ]
        return np.diff(joint)

    assert C.check_ex_p2_01(per_position)
    rejects(C.check_ex_p2_01, lambda p, q, V, L: kl_decomposition(q, p, V, L).per_position, match="KL\\(q ‖ p\\)")


def test_p2_02_loops_accepted_and_unreset_diagonal_named():
    def uniform(V, beta):
        return np.array([[beta / V - (beta if i == j else 0.0) for j in range(V)] for i in range(V)])

    def absorbing(V, mask, beta):
        Q = np.zeros((V, V))
        for i in range(V):
            if i != mask:
                Q[i, mask], Q[i, i] = beta, -beta
        return Q

    def reverse(Q, p):
        S = len(p)
        R = np.zeros((S, S))
        for i, j in itertools.product(range(S), repeat=2):
            if i != j:
                R[i, j] = Q[j, i] * p[j] / p[i]
        for i in range(S):
            R[i, i] = -sum(R[i, j] for j in range(S) if j != i)
        return R

    assert C.check_ex_p2_02(uniform, absorbing, reverse)
    rejects(
        C.check_ex_p2_02, uniform, absorbing, lambda Q, p: Q.T * p[None, :] / p[:, None], match="diagonal was not reset"
    )


def test_p2_03_series_accepted_and_forward_euler_named():
    from scipy.linalg import expm

    def zoh(A, B, dt):  # Bbar by its power series Σ A^k dt^(k+1) / (k+1)!, fine for singular A
        term, total = np.eye(len(A)) * dt, np.zeros_like(A)
        for k in range(1, 40):
            total += term
            term = term @ A * dt / (k + 1)
        return expm(A * dt), total @ B

    def scan(Ab, Bb, C_, D, h, v0):
        v, out = v0.copy(), []
        for hk in h:
            out.append(C_ @ v + D @ hk)
            v = Ab @ v + Bb @ hk
        return np.array(out)

    assert C.check_ex_p2_03(zoh, scan)
    rejects(C.check_ex_p2_03, lambda A, B, dt: (np.eye(len(A)) + dt * A, dt * B), scan, match="forward Euler")

    def via_inverse(A, B, dt):  # right for invertible A only
        Ab = expm(A * dt)
        return Ab, np.linalg.inv(A) @ (Ab - np.eye(len(A))) @ B

    msg = rejects(C.check_ex_p2_03, via_inverse, scan, match="needs an invertible A")
    assert "1 of 3 checks passed" in msg and "✓ scan" in msg


def test_p2_04_loop_accepted_and_missing_crossing_token_named():
    def top_p(z, p):
        probs = np.exp(z - z.max())
        probs /= probs.sum()
        order = sorted(range(len(z)), key=lambda i: -z[i])
        mass, kept = 0.0, []
        for i in order:
            kept.append(i)
            mass += probs[i]
            if p < 1 and mass >= p - 1e-12:  # p = 1 keeps every token (the mass can reach 1 early by round-off)
                break
        edge = min(z[i] for i in kept)
        return np.where(z >= edge, z, -np.inf)

    def nucleus(z, p):
        f = top_p(z, p)
        e = np.exp(f - f.max())
        return e / e.sum()

    assert C.check_ex_p2_04(top_p, nucleus)

    def strict(z, p):
        probs = np.exp(z - z.max())
        probs /= probs.sum()
        order = np.argsort(-z)
        n = max(1, int((np.cumsum(probs[order]) < p).sum()))
        return np.where(np.isin(np.arange(len(z)), order[:n]), z, -np.inf)

    rejects(C.check_ex_p2_04, strict, nucleus, match="crosses p")


# ---- Part 3 -------------------------------------------------------------------------------------
def _loops_score_gradient(alpha, U, V):
    T = len(alpha)
    G = np.zeros((T, T))
    for i in range(T):
        b = [float(U[i] @ V[j]) for j in range(T)]
        mean = sum(alpha[i, k] * b[k] for k in range(T))
        for j in range(T):
            G[i, j] = alpha[i, j] * (b[j] - mean)
    return G


def test_p3_01_loops_accepted_and_descent_direction_named():
    def advantage(alpha, U, V):
        B = U @ V.T
        return np.einsum("ik,ik->i", alpha, B)[:, None] - B

    assert C.check_ex_p3_01(_loops_score_gradient, advantage)
    rejects(C.check_ex_p3_01, lambda a, U, V: -_loops_score_gradient(a, U, V), advantage, match="wrong sign")


def test_p3_02_loops_accepted_and_unsquared_weight_named():
    def first_order(alpha, U, j, eta):
        ubar = sum(alpha[i, j] * U[i] for i in range(len(U)))
        return np.array([-eta * alpha[i, j] * float(U[i] @ ubar) for i in range(len(U))])

    def dominant(alpha, U, j, eta):
        return np.array([-eta * alpha[i, j] ** 2 * float(U[i] @ U[i]) for i in range(len(U))])

    bad = (np.array([[0.9, 0.1], [0.4, 0.6]]), np.array([[1.0, 0.0], [-1.0, 0.0]]), 0)
    assert C.check_ex_p3_02(first_order, dominant, *bad)
    rejects(
        C.check_ex_p3_02,
        first_order,
        lambda a, U, j, eta: -eta * a[:, j] * (U * U).sum(1),
        *bad,
        match="α_ij instead of α_ij²",
    )


def test_p3_03_power_iteration_accepted_and_unweighted_average_named():
    from nextword.data import sticky_markov_chain

    def entropy_rate(P):
        pi = np.full(len(P), 1 / len(P))
        for _ in range(5000):  # power iteration instead of an eigen-decomposition
            pi = pi @ P
        logs = np.log(np.where(P > 0, P, 1.0))
        return float(-(pi[:, None] * P * logs).sum())

    def transition(n, stay, rule):
        if rule == "line_distance":  # the statement's non-circulant contrast (not a rule of the library)
            w = np.abs(np.subtract.outer(np.arange(n), np.arange(n))).astype(float)
            return (1 - stay) * w / w.sum(1, keepdims=True) + stay * np.eye(n)
        return sticky_markov_chain(n, stay, rule=rule).transition

    assert C.check_ex_p3_03(transition, entropy_rate, "inverse_circular_distance")
    rows = lambda P: float(-(P * np.log(np.where(P > 0, P, 1.0))).sum(1).mean())  # noqa: E731
    rejects(C.check_ex_p3_03, transition, rows, "inverse_circular_distance", match="weight them by the stationary law")


def test_p3_04_pseudo_inverse_accepted_and_update_instead_of_weights_named():
    from nextword.attention import scaled_dot_product_attention, softmax

    def em_step(params, X, y, lr):
        Q, K, V = X @ params.W_Q, X @ params.W_K, X @ params.W_V
        G, alpha = scaled_dot_product_attention(Q, K, V, causal=True, return_weights=True)
        delta = softmax(G @ params.W_O + params.b)
        delta[np.arange(len(y)), y] -= 1.0
        dV = -lr * alpha.T @ (delta @ params.W_O.T)
        return params.W_V + np.linalg.pinv(X) @ dV

    assert C.check_ex_p3_04(em_step)
    rejects(C.check_ex_p3_04, lambda p, X, y, lr: em_step(p, X, y, lr) - p.W_V, match="returns the update")


# ---- Part 4 -------------------------------------------------------------------------------------
def _margins_loops(x, a):
    m = [1.0]
    for t in range(1, len(x)):
        logits = [a * x[t] * x[s] for s in range(t)]
        top = max(logits)
        w = [math.exp(v - top) for v in logits]
        w = [v / sum(w) for v in w]
        mean = sum(wi * x[s] for s, wi in enumerate(w))
        m.append(1 - a * sum(wi * (x[s] - mean) ** 2 for s, wi in enumerate(w)))
    return np.array(m)


def test_p4_01_loops_accepted_and_ties_at_the_minimum_named():
    def support(x, a):
        m = _margins_loops(x, a)
        return np.array([t for t in range(len(m)) if m[t] - min(m) <= 1e-12], dtype=int)

    assert C.check_ex_p4_01(_margins_loops, support)
    msg = rejects(
        C.check_ex_p4_01,
        _margins_loops,
        lambda x, a: np.array([int(np.argmin(_margins_loops(x, a)))]),
        match="ties at the minimum",
    )
    assert "x = [1, 1, 1, 1]" in msg and "got [0], expected [0, 1, 2, 3]" in msg


def test_p4_02_sum_of_outer_products_accepted_and_embedding_covariance_named():
    from nextword.attention import softmax
    from nextword.theory.barrier import jacobian_diagonal_block

    def block(X, t, W_Q, W_K, W_V):
        d = X.shape[1]
        if t == 0:
            return np.eye(d)
        a = softmax(np.array([(W_Q @ X[t]) @ (W_K @ X[s]) for s in range(t)]))
        x_bar = sum(a[s] * X[s] for s in range(t))
        v_bar = sum(a[s] * (W_V @ X[s]) for s in range(t))
        cross = sum(a[s] * np.outer(W_V @ X[s] - v_bar, X[s] - x_bar) for s in range(t))
        return np.eye(d) - cross @ (W_K.T @ W_Q)

    assert C.check_ex_p4_02(block)
    rejects(
        C.check_ex_p4_02,
        lambda X, t, W_Q, W_K, W_V: jacobian_diagonal_block(X, t, W_Q=W_Q, W_K=W_K, W_V=np.eye(X.shape[1])),
        match="covariance is that of the embeddings",
    )


def test_p4_03_another_counterexample_accepted_and_certified_block_named():
    X = np.array([[3.0, 0.0], [-3.0, 0.0], [0.0, 0.5], [0.2, 0.0]])
    assert C.check_ex_p4_03(X, np.eye(2), np.eye(2))
    rejects(C.check_ex_p4_03, 0.1 * X, np.eye(2), np.eye(2), match="Lemma B.4 already certifies")


def test_p4_04_closed_form_accepted_and_single_noise_term_named():
    cov = lambda w, s: 2 * w * s**2 / (1 - w**2) ** 2  # noqa: E731
    assert C.check_ex_p4_04(lambda w, s: s**2 * (1 + w**2) / (1 - w**2) ** 2, cov)
    rejects(C.check_ex_p4_04, lambda w, s: s**2 / (1 - w**2) ** 2, cov, match="two noise terms")


# ---- Part 5 -------------------------------------------------------------------------------------
def test_p5_01_written_differently_accepted_and_unnormalised_retraction_named():
    def exp_map(x, v):
        n = math.sqrt(float(v @ v))
        return x if n == 0 else math.cos(n) * x + math.sin(n) * (v / n)

    def retraction(x, v):
        y = x + v
        return y / math.sqrt(float(y @ y))

    assert C.check_ex_p5_01(exp_map, retraction, 3.0)
    rejects(C.check_ex_p5_01, exp_map, lambda x, v: x + v, 3.0, match="not normalised")


def _log_iv_debye(nu, k):
    """log I_nu(k) by the uniform asymptotic (Debye) expansion — another algorithm than the solution's series."""
    from scipy import special

    scaled = special.ive(nu, k)
    if scaled > 1e-300:
        return float(np.log(scaled) + k)
    z = k / nu
    s = math.sqrt(1 + z * z)
    t = 1 / s
    eta = s + math.log(z / (1 + s))
    u1 = (3 * t - 5 * t**3) / 24
    u2 = (81 * t**2 - 462 * t**4 + 385 * t**6) / 1152
    u3 = (30375 * t**3 - 369603 * t**5 + 765765 * t**7 - 425425 * t**9) / 414720
    return (
        -0.5 * math.log(2 * math.pi * nu) + nu * eta - 0.5 * math.log(s) + math.log1p(u1 / nu + u2 / nu**2 + u3 / nu**3)
    )


def test_p5_02_debye_expansion_accepted_and_naive_ive_rejected_at_the_corners():
    def log_c(kappa, d):
        nu = d / 2 - 1
        return nu * math.log(kappa) - d / 2 * math.log(2 * math.pi) - _log_iv_debye(nu, kappa)

    assert C.check_ex_p5_02(log_c)

    from scipy import special

    def naive(kappa, d):  # the formula the reference solution used before: log(ive) + kappa
        nu = d / 2 - 1
        with np.errstate(divide="ignore"):
            return float(nu * np.log(kappa) - d / 2 * np.log(2 * np.pi) - (np.log(special.ive(nu, kappa)) + kappa))

    msg = rejects(C.check_ex_p5_02, naive, match="small κ in high dimension")
    assert "log_vmf_normaliser(0.5, 512) is not finite" in msg and "underflows" in msg
    assert "✓ large κ" in msg  # the other sub-checks are still run and listed


def test_p5_02_reference_is_mpmath_at_the_corners():
    import mpmath

    from nextword.theory.svflow.sphere import vmf_log_normalizer

    mpmath.mp.dps = 30
    for kappa, d in ((1.0, 1024), (0.5, 512), (5.0, 2048), (1e5, 2048)):
        nu = d / 2 - 1
        exact = nu * mpmath.log(kappa) - d / 2 * mpmath.log(2 * mpmath.pi) - mpmath.log(mpmath.besseli(nu, kappa))
        assert abs(float(vmf_log_normalizer(kappa, d)) - float(exact)) < 1e-9 * abs(float(exact))


def test_p5_03_written_differently_accepted_and_sign_of_epsilon_named():
    def elbo(flow, x):
        log_q = flow.log_q(x)
        q = np.exp(log_q)
        return flow.log_marginal(x) - np.sum(q * (log_q - flow.log_post(x)), axis=1)

    def epsilon(flow, x):
        log_q, log_post, grads = flow.log_q(x), flow.log_post(x), flow.grad_log_q(x)
        out = np.zeros(x.shape)
        for z in range(log_q.shape[1]):
            out += (np.exp(log_q[:, z]) * (log_post[:, z] - log_q[:, z]))[:, None] * grads[:, z]
        return out

    assert C.check_ex_p5_03(elbo, epsilon)
    rejects(C.check_ex_p5_03, elbo, lambda f, x: -epsilon(f, x), match="ε has the wrong sign")


def test_p5_04_another_construction_accepted_and_uniform_marginal_named():
    gates = np.array([[0.5 + 1e-6, 0.5 - 1e-6]] * 7 + [[0.0, 1.0]] * 3)  # J = 0.245 + 0.3 * 0.65 = 0.44
    assert C.check_ex_p5_04(gates)
    rejects(C.check_ex_p5_04, np.array([[0.9, 0.1], [0.1, 0.9]]), match="nearly\\) uniform")
