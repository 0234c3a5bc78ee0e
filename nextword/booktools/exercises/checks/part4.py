"""Checkers for the exercises of Part 4 (see exercises/README.md).

Every expected value is computed with :mod:`nextword.theory.barrier` (never copied from a solution);
the counterexample checker verifies properties only.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._common import ExerciseCheckError, as_array, check_close, check_shape, check_true, fail, passed, call_student  # noqa: F401

__all__: list[str] = ["check_ex_p4_01", "check_ex_p4_02", "check_ex_p4_03", "check_ex_p4_04"]


_call = call_student  # shared: a stub, a non-function or a crash becomes a clear failure


def check_ex_p4_01(scalar_margins: Callable, support: Callable) -> bool:
    """Exercise 01: ``scalar_margins(x, a) -> (L,)`` = Eq. (9) and ``support(x, a)`` = Def. 3.1 (0-based)."""
    from nextword.theory.barrier import scalar_margin, support_tokens

    rng = np.random.default_rng(401)
    cases = [(np.array([0.0, 2.0, 1.0]), 1.0), (np.array([0.5]), 0.3)]
    cases += [(rng.normal(0, 2, size=L), a) for L, a in ((6, 0.4), (8, -0.7), (5, 1.3))]
    for x, a in cases:
        expected = scalar_margin(x, a=a)
        got = _call(scalar_margins, "scalar_margins", x.copy(), a)
        check_close(f"scalar_margins(x of length {len(x)}, a={a})", got, expected, rtol=1e-8, atol=1e-10)
        sup = np.asarray(_call(support, "support", x.copy(), a))
        if sup.dtype.kind not in "iu":
            fail("support should return integer positions (0-based indices)")
        check_true(sorted(sup.tolist()) == support_tokens(expected, atol=1e-12).tolist(),
                   f"support(x of length {len(x)}, a={a}) does not return the positions of the smallest margin")
    check_true(scalar_margins(np.array([0.0, 2.0, 1.0]), 1.0)[0] == 1.0,
               "position 1 has no context: its margin must be exactly 1")
    return passed("scalar margins match Eq. (9) and the support tokens match Definition 3.1 on 5 sequences")


def check_ex_p4_02(diagonal_block: Callable) -> bool:
    """Exercise 02: ``diagonal_block(X, t, W_Q, W_K, W_V) -> (d, d)`` exact ∂e_t/∂x_t (strict, any W_V)."""
    from nextword.theory.barrier import jacobian_diagonal_block

    rng = np.random.default_rng(402)
    L, d, dk = 5, 3, 2
    X = rng.normal(size=(L, d))
    W_Q, W_K = rng.normal(size=(dk, d)), rng.normal(size=(dk, d))
    for label, W_V in (("W_V = I", np.eye(d)), ("W_V = 0.5 I", 0.5 * np.eye(d)),
                       ("random W_V", rng.normal(size=(d, d)))):
        for t in range(L):
            expected = jacobian_diagonal_block(X, t, W_Q=W_Q, W_K=W_K, W_V=W_V)
            got = _call(diagonal_block, "diagonal_block", X.copy(), t, W_Q, W_K, W_V)
            check_shape(f"diagonal_block(..., t={t}) with {label}", got, (d, d))
            if label != "W_V = I" and t >= 2 and not np.allclose(got, expected, atol=1e-8):
                fail(f"diagonal_block is wrong for {label} at t={t} but you may be right for W_V = I: "
                     "is your covariance that of the values or that of the embeddings?")
            check_close(f"diagonal_block(..., t={t}) with {label}", got, expected, rtol=1e-7, atol=1e-9)
    return passed("exact diagonal blocks for W_V = I, 0.5 I and a random W_V at every position")


def check_ex_p4_03(X, W_Q, W_K) -> bool:
    """Exercise 03: a context whose last block has spectral margin ≤ 0 and |det| ≥ 0.1 (W_V = I)."""
    from nextword.theory.barrier import matrix_margins

    X = as_array("X", X)
    W_Q = as_array("W_Q", W_Q)
    W_K = as_array("W_K", W_K)
    if X.ndim != 2 or X.shape[1] < 2 or X.shape[0] < 2:
        fail(f"X should have shape (L, d) with L >= 2 and d >= 2, got {X.shape}")
    d = X.shape[1]
    if W_Q.ndim != 2 or W_Q.shape[1] != d or W_K.shape != W_Q.shape:
        fail(f"W_Q and W_K should both have shape (d_k, {d}), got {W_Q.shape} and {W_K.shape}")
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(W_Q)) and np.all(np.isfinite(W_K))):
        fail("X, W_Q and W_K must be finite")
    mm = matrix_margins(X, W_Q, W_K)
    check_true(mm.spectral[-1] <= 0,
               f"the spectral margin 1 - ρ(Σ_t A) at the last position is {mm.spectral[-1]:.3f} > 0: "
               "Lemma B.4 already certifies this block — push an eigenvalue of Σ_t A past 1")
    check_true(abs(mm.det[-1]) >= 0.1,
               f"|det(I - Σ_t A)| at the last position is {abs(mm.det[-1]):.3g} < 0.1: "
               "the block is (nearly) singular, so it is not a counterexample")
    return passed(f"ρ(Σ_t A) = {1 - mm.spectral[-1]:.3f} ≥ 1 yet |det(I - Σ_t A)| = {abs(mm.det[-1]):.3f}: "
                  "the spectral condition is not necessary")


def check_ex_p4_04(var_first_embedding: Callable) -> bool:
    """Exercise 04: ``var_first_embedding(w, sigma)`` = Var(x_1) under the length-2 non-causal model."""
    from nextword.theory.barrier import residual_jacobian

    for w, sigma in ((0.5, 1.0), (-0.3, 2.0), (0.8, 0.5), (0.0, 1.5)):
        # the map e = J x is linear: J from the library at any point, then Cov(x) = σ² (Jᵀ J)^(-1)
        J = residual_jacobian(np.zeros((2, 1)), [[1.0]], [[1.0]], [[w]], context="others").reshape(2, 2)
        expected = sigma**2 * np.linalg.inv(J.T @ J)[0, 0]
        got = _call(var_first_embedding, "var_first_embedding", w, sigma)
        check_close(f"var_first_embedding(w={w}, sigma={sigma})", np.asarray(got, dtype=float), expected,
                    rtol=1e-8, atol=1e-12)
    return passed("Var(x_1) of the length-2 non-causal model matches the change of variables for 4 (w, σ)")
