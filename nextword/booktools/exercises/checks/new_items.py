"""Checkers for the exercises built on items added by issue #20 (see exercises/README.md).

* Part 3, Exercise 05 — the key gradient of Aggarwal et al. §6.2 and the regular simplex that its push, if symmetric, ends in.
* Part 5, Exercise 05 — the advantage form of the posterior gradient, Liao App. B (Eqs. 41, 45, 52–53).

Each checker recomputes the expected result with the library (or finite differences) on fresh random
problems — never a stored copy of the solution.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._common import Report, as_array, call_student, check_close, check_true

__all__ = ["check_ex_p3_05", "check_ex_p5_05"]


def check_ex_p3_05(key_gradient: Callable, simplex_cosine: Callable) -> bool:
    """Exercise 3.5: ``key_gradient(params, X, y)`` -> ``dL/dK (T, d_k)`` (the §6.2 formula, summed loss (9))
    and ``simplex_cosine(G)`` -> the pairwise cosine of ``G`` equal-angle unit vectors summing to zero.

    Two sub-checks (one per function), each listed ✓ or ✗ by the :class:`Report`.
    """
    from nextword.attention import scaled_dot_product_attention
    from nextword.theory.dynamics.gradients import HeadParams, cross_entropy, head_forward, upstream_gradient

    r = Report("Exercise 3.05")
    rng = np.random.default_rng(31)
    with r.check("key_gradient = (1/√d_k) Σ_i α_ij (b_ij − E_α_i[b]) q_i, against finite differences on 2 heads"):
        for T, d_x, d_k, d_v, C in ((4, 3, 2, 2, 3), (6, 5, 3, 4, 2)):
            params = HeadParams.init(d_x, d_k, d_v, C, rng=rng, scale=0.9)
            X, y = rng.normal(size=(T, d_x)), rng.integers(0, C, size=T)
            fw = head_forward(params, X)
            got = call_student(key_gradient, "key_gradient", params, X, y)

            def loss(K):
                G = scaled_dot_product_attention(fw.Q, K, fw.V)
                logits = G @ params.W_O + params.b
                return cross_entropy(logits - np.log(np.exp(logits).sum(axis=1, keepdims=True)), y)

            h, fd = 1e-6, np.zeros_like(fw.K)
            for idx in np.ndindex(fw.K.shape):
                E = np.zeros_like(fw.K)
                E[idx] = h
                fd[idx] = (loss(fw.K + E) - loss(fw.K - E)) / (2 * h)
            U = upstream_gradient(fw.probs, y, params.W_O)  # (T, d_v): the typical slips, for the diagnosis
            B = U @ fw.V.T
            dS = fw.alpha * (B - (fw.alpha * B).sum(axis=1, keepdims=True))
            cf = head_forward(params, X, causal=True)  # the slip of a causal mask the §2.1 head does not have
            Bc = upstream_gradient(cf.probs, y, params.W_O) @ cf.V.T
            causal = (cf.alpha * (Bc - (cf.alpha * Bc).sum(axis=1, keepdims=True))).T @ cf.Q / np.sqrt(d_k)

            def via(B_: np.ndarray, centre: np.ndarray) -> np.ndarray:  # dSᵀ Q / √d_k from a slipped B or mean
                return (fw.alpha * (B_ - centre)).T @ fw.Q / np.sqrt(d_k)

            B_logits = upstream_gradient(fw.logits, y, params.W_O) @ fw.V.T  # logits passed for probabilities
            slipped = {"the plain mean over j (np.mean): E_α_i[b] = Σ_j' α_ij' b_ij' is weighted by query i's "
                       "attention": via(B, B.mean(axis=1, keepdims=True)),
                       "B transposed: b_ij = u_i · v_j pairs query i's upstream gradient with key j's value, "
                       "B = U Vᵀ (not V Uᵀ)": via(B.T, (fw.alpha * B.T).sum(axis=1, keepdims=True)),
                       "α transposed: query i's weights are row i of alpha, α_ij = alpha[i, j] (dS = α ⊙ (B − "
                       "E_α_i[b]) row by row)": (fw.alpha.T * (B - (fw.alpha.T * B).sum(axis=1, keepdims=True))).T
                       @ fw.Q / np.sqrt(d_k),
                       "upstream_gradient takes the probabilities p_i (fw.probs), not the logits":
                       via(B_logits, (fw.alpha * B_logits).sum(axis=1, keepdims=True))}
            check_close(f"key_gradient on a T={T}, d_k={d_k} head (against finite differences)", got, fd,
                        rtol=1e-6, atol=1e-7, d=d_k,
                        mistakes={"dS Q instead of dSᵀ Q: key j collects α_ij(b_ij − E[b]) q_i over the queries i "
                                  "(a column of dS)": dS @ fw.Q / np.sqrt(d_k),
                                  "the sign of the advantage: dL/ds_ij = α_ij (b_ij − E_α_i[b]), compatibility minus "
                                  "its mean": -dS.T @ fw.Q / np.sqrt(d_k),
                                  "the compatibility is not centred (α ⊙ B): the softmax couples a row's scores, "
                                  "dL/ds_ij = α_ij (b_ij − E_α_i[b]) with E_α_i[b] = Σ_j' α_ij' b_ij'":
                                  (fw.alpha * B).T @ fw.Q / np.sqrt(d_k),
                                  "dSᵀ K: key j's gradient collects the QUERIES q_i that score it (s_ij = q_i · k_j / "
                                  "√d_k), so dL/dK = dSᵀ Q / √d_k": dS.T @ fw.K / np.sqrt(d_k),
                                  "a causal mask: the §2.1 head has none — every query attends to all T keys "
                                  "(head_forward's default, causal=False)": causal,
                                  f"the mean loss (divided by T = {T}): the exercise's loss (9) is the sum over "
                                  "positions, as upstream_gradient computes it": dS.T @ fw.Q / np.sqrt(d_k) / T,
                                  **slipped})
    with r.check("simplex_cosine(G) = −1/(G − 1) for G = 2, 3, 4, 7"):
        for G in (2, 3, 4, 7):
            c = as_array(f"simplex_cosine({G})", call_student(simplex_cosine, "simplex_cosine", G))
            check_true(c.shape in ((), (1,)), f"simplex_cosine({G}) should return one number")
            check_close(f"simplex_cosine({G})", c.reshape(()), -1.0 / (G - 1), rtol=1e-9, atol=1e-12,
                        mistakes={"−1/G: the G unit vectors sum to zero, so 0 = |Σ_g k_g|² = G + G(G − 1) c, "
                                  "c = −1/(G − 1)": -1.0 / G,
                                  "the cosine of the angle 2π/G between neighbours on a circle: the G vectors "
                                  "are equally spaced in G − 1 dimensions, all pairs at the same angle":
                                  np.cos(2 * np.pi / G),
                                  "-1 // (G - 1) is floor division (it rounds down to −1): write -1 / (G - 1)":
                                  float(-1 // (G - 1))})
    return r.done("the §6.2 key gradient is right, and so is the simplex cosine -1/(G-1)")


def _logit_gradient_variant(x0: np.ndarray, layer, W_cls: np.ndarray, y: int, beta: float, *,
                            classify_x0: bool = False, task_sign: float = 1.0,
                            log_var_term: bool = True) -> np.ndarray:
    """q(z) S(z) of Eqs. (52)–(53) for a one-layer flow, computed with a typical slip (diagnosis only): the
    classifier applied to x⁰ instead of x¹, δ₁ with the wrong sign, or Gaussian log-likelihoods without their
    −(d/2) log σ_z² term. With no slip it is the library's ``hybrid_gradients(...).grad_b_g[0]``. Shapes:
    ``x0 (d,)``, ``W_cls (d, C)`` -> ``(Z,)``."""
    from scipy.special import logsumexp

    g = layer.W_g @ x0 + layer.b_g
    log_q = g - logsumexp(g)
    q = np.exp(log_q)
    diff = x0 - layer.means  # (Z, d)
    log_lik = -0.5 * (diff ** 2).sum(axis=1) / np.exp(layer.log_vars)
    if log_var_term:
        log_lik = log_lik - 0.5 * x0.size * layer.log_vars
    s = -diff / np.exp(layer.log_vars)[:, None]  # scores (Z, d)
    x1 = x0 + q @ s
    logits = W_cls.T @ (x0 if classify_x0 else x1)
    delta = task_sign * W_cls @ (np.exp(logits - logsumexp(logits)) - np.eye(W_cls.shape[1])[y])
    A, R = s @ delta, log_q - (log_lik - logsumexp(log_lik))
    return q * ((A - q @ A) + beta * (R - q @ R))


def check_ex_p5_05(logit_gradient: Callable) -> bool:
    """Exercise 5.5: ``logit_gradient(x0, layer, W_cls, y, beta)`` -> ``dJ/db_g (Z,)`` for a one-layer
    SVFlow (the logit-bias gradient ``q(z) S(z)`` of Eqs. 52–53; the paper writes η for S).

    Three sub-checks, each listed ✓ or ✗ by the :class:`Report`: the task term alone (β = 0), with the
    self-variational term (β > 0), and the sum over z (zero: the advantages are centred).
    """
    from nextword.theory.svflow.gradients import hybrid_gradients, random_gaussian_layer

    r = Report("Exercise 5.05")
    rng = np.random.default_rng(55)
    cases = []
    for d, Z, C, beta in ((2, 3, 2, 0.0), (3, 5, 4, 0.7), (2, 6, 3, 5.0)):
        layer = random_gaussian_layer(d, Z, rng)
        x0, W_cls, y = rng.normal(size=d), rng.normal(size=(d, C)), int(rng.integers(0, C))
        cases.append((d, Z, beta, x0, layer, W_cls, y))

    def compare(d, Z, beta, x0, layer, W_cls, y) -> None:
        got = call_student(logit_gradient, "logit_gradient", x0, layer, W_cls, y, beta)
        full = hybrid_gradients(x0, [layer], W_cls, y, beta)
        expected, q = full.grad_b_g[0], full.forward.q[0]
        task_only = hybrid_gradients(x0, [layer], W_cls, y, 0.0).grad_b_g[0]
        self_term = (expected - task_only) / beta if beta else np.zeros(Z)  # q (R - E_q R), from the library
        mistakes = {"S without the factor q(z): dJ/db_g = q(z) S(z) (the softmax Jacobian)": expected / q,
                    "the classifier is applied to x⁰: the task loss reads the output of the step, "
                    "x¹ = x⁰ + Σ_z q(z|x⁰) s(x⁰, z)":
                    _logit_gradient_variant(x0, layer, W_cls, y, beta, classify_x0=True),
                    "δ₁ has the wrong sign: δ₁ = W_cls (softmax(W_clsᵀ x¹) − e_y), the gradient of the "
                    "cross-entropy, predicted minus true":
                    _logit_gradient_variant(x0, layer, W_cls, y, beta, task_sign=-1.0)}
        if beta:
            mistakes["the likelihoods lack their −(d/2) log σ_z² term: with a different σ_z per component it "
                     "does not cancel in p(z|x⁰)"] = _logit_gradient_variant(x0, layer, W_cls, y, beta,
                                                                              log_var_term=False)
        if beta:
            mistakes["R(z) with the wrong sign: R(z) = log q(z|x0) − log p(z|x0), posterior minus target"] = (
                task_only - beta * self_term)
        try:  # advantages not centred: got − expected = q(z) (E_q[A] + β E_q[R]), a multiple of q
            resid = np.asarray(got, dtype=float).reshape(Z) - expected
            c = float(resid @ q / (q @ q))
            if abs(c) > 1e-9:
                mistakes["the advantages are not centred: S(z) = (A(z) − E_q[A]) + β (R(z) − E_q[R]) (Eq. 53), "
                         "so the gradient sums to zero"] = expected + c * q
        except (TypeError, ValueError):
            pass  # check_close reports the shape or type
        check_close(f"logit_gradient (d={d}, Z={Z}, beta={beta})", got, expected, rtol=1e-7, atol=1e-10,
                    mistakes=mistakes)

    with r.check("β = 0: the task term alone, q(z) (A(z) − E_q[A]) (Eqs. 41, 52)"):
        for case in cases:
            if case[2] == 0.0:
                compare(*case)
    with r.check("β > 0: q(z) S(z) with the self-variational advantage R(z) (Eqs. 45, 53)"):
        for case in cases:
            if case[2] != 0.0:
                compare(*case)
    with r.check("the logit gradient sums to zero over z (a common shift of all logits changes nothing)"):
        for d, Z, beta, x0, layer, W_cls, y in cases:
            label = f"logit_gradient (d={d}, Z={Z}, beta={beta})"
            got = as_array(label, call_student(logit_gradient, "logit_gradient", x0, layer, W_cls, y, beta))
            total = float(np.sum(got))
            check_true(abs(total) < 1e-9, f"{label} sums to {total:.6g}, not 0 — did you centre the advantages "
                       "(subtract E_q[A] and E_q[R])?")
    return r.done("q(z) S(z) is right for the task and self-variational advantages")
