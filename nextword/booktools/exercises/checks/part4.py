"""Checkers for the exercises of Part 4 (see exercises/README.md).

Every expected value is computed with :mod:`nextword.theory.barrier` (never copied from a solution);
the counterexample checker verifies properties only.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._common import ExerciseCheckError, Report, as_array, call_student, check_close, check_shape, check_true, describe, fail, passed  # noqa: F401

__all__: list[str] = ["check_ex_p4_01", "check_ex_p4_02", "check_ex_p4_03", "check_ex_p4_04"]


_call = call_student  # shared: a stub, a non-function or a crash becomes a clear failure


def _margins_variant(x: np.ndarray, a: float, *, include_self: bool = False, uniform: bool = False,
                     centred: bool = True, a_in_logits: bool = True, a_in_margin: bool = True,
                     plain_mean: bool = False) -> np.ndarray:
    """Margins computed with a typical mistake (the current token in its own context, equal weights, the
    second moment for the variance, the factor a dropped from the logits or from the margin, or the
    deviations taken around the plain mean of the past (``plain_mean``))."""
    from nextword.attention import softmax

    m = np.ones(len(x))
    for t in range(1, len(x)):
        ctx = x[:t + 1] if include_self else x[:t]
        w = np.full(len(ctx), 1 / len(ctx)) if uniform else softmax((a if a_in_logits else 1.0) * x[t] * ctx)
        centre = (ctx.mean() if plain_mean else w @ ctx) if centred else 0.0
        m[t] = 1.0 - (a if a_in_margin else 1.0) * np.sum(w * (ctx - centre) ** 2)
    return m


def _equal_weight_slips(x: np.ndarray, a: float) -> dict[str, np.ndarray]:
    """Equal weights everywhere, or only in the mean x̄_t: named apart where they differ, together where this
    ``x`` cannot tell them apart (e.g. x = [0, 2, 1]: both give Var_2 = 1)."""
    everywhere = _margins_variant(x, a, uniform=True)
    in_the_mean = _margins_variant(x, a, plain_mean=True)
    if np.allclose(everywhere, in_the_mean, rtol=1e-6, atol=1e-9):
        return {"equal weights over the past, in the mean x̄_t or everywhere: weight by α_ts = softmax_s(a x_t x_s), "
                "x̄_t = Σ_s α_ts x_s": everywhere}
    return {"equal weights over the past: weight by softmax_s(a x_t x_s)": everywhere,
            "the deviations are taken around the plain mean of the past: Var_t is centred at the weighted mean "
            "x̄_t = Σ_s α_ts x_s": in_the_mean}


def check_ex_p4_01(scalar_margins: Callable, support: Callable) -> bool:
    """Exercise 01: ``scalar_margins(x, a) -> (T,)`` = Eq. (9) and ``support(x, a)`` = Def. 3.1 (0-based)."""
    from nextword.theory.barrier import scalar_margin, support_tokens

    r = Report("Exercise 4.01")
    rng = np.random.default_rng(401)
    cases = [(np.array([0.5]), 0.3, "x = [0.5] (a single token)"), (np.array([0.0, 2.0, 1.0]), 1.0, "x = [0, 2, 1]"),
             (np.array([1.0, 1.0, 1.0, 1.0]), 0.8, "x = [1, 1, 1, 1] (every margin ties at 1)"),
             (np.array([2.0, -2.0, 2.0, -2.0, 2.0]), 0.5, "x = [2, -2, 2, -2, 2]")]
    cases += [(rng.normal(0, 2, size=L), a, f"a random x of length {L}") for L, a in ((5, 1.3), (6, 0.4), (8, -0.7))]
    with r.check("scalar_margins = 1 − a Var_t (Eq. 9), with m = 1 at the first position"):
        for x, a, label in cases:
            expected = scalar_margin(x, a=a)
            check_close(f"scalar_margins({label}, a={a})", _call(scalar_margins, f"scalar_margins({label}, a={a})",
                                                                x.copy(), a), expected, rtol=1e-8, atol=1e-10,
                        mistakes={"the current token is in its own context: attention is strictly causal (s < t)":
                                  _margins_variant(x, a, include_self=True),
                                  **_equal_weight_slips(x, a),
                                  "1 + a Var_t: the margin is 1 − a Var_t": 2 - expected,
                                  "Σ_s α_ts x_s² is the second moment: Var_t is taken around the weighted mean x̄_t":
                                  _margins_variant(x, a, centred=False),
                                  "softmax of x_t x_s: the logits are a x_t x_s (a scales the scores too)":
                                  _margins_variant(x, a, a_in_logits=False),
                                  "1 − Var_t: the margin is 1 − a Var_t (the factor a is missing)":
                                  _margins_variant(x, a, a_in_margin=False)})
    with r.check("support = every 0-based position attaining the minimum margin (ties included)"):
        for x, a, label in cases:
            m = scalar_margin(x, a=a)
            expected = support_tokens(m, atol=1e-12).tolist()
            sup = np.asarray(_call(support, f"support({label}, a={a})", x.copy(), a))
            if sup.dtype.kind not in "iu":
                fail(f"support({label}, a={a}) should return integer positions (0-based indices), got dtype {sup.dtype}")
            got = sorted(np.atleast_1d(sup).tolist())
            if got == expected:
                continue
            msg = f"support({label}, a={a}): got {got}, expected {expected} (margins {describe(m, precision=4)})"
            try:  # a right support() that calls the student's own (wrong) scalar_margins is not a support slip
                own = np.asarray(scalar_margins(x.copy(), a), dtype=float)
                own_support = support_tokens(own, atol=1e-12).tolist() if own.shape == m.shape else None
            except Exception:
                own_support = None
            if own_support == got and not np.allclose(own, m, rtol=1e-8, atol=1e-10):
                msg += ("\n    likely mistake: none in support itself — it picks the minimum of your scalar_margins, "
                        "which are wrong here (see the check above)")
            elif len(got) == 1 and got[0] in expected and len(expected) > 1:
                msg += ("\n    likely mistake: ties at the minimum — return every position whose margin equals the "
                        "minimum (up to 1e-12), not only argmin")
            elif got == [e + 1 for e in expected]:
                msg += "\n    likely mistake: 1-based positions; return 0-based indices"
            elif got == [int(np.argmax(m))] or got == np.flatnonzero(m >= m.max() - 1e-12).tolist():
                msg += "\n    likely mistake: the largest margin; support tokens attain the smallest"
            fail(msg)
    return r.done("scalar margins match Eq. (9) and the support tokens match Definition 3.1 on 7 sequences "
                  "(ties included)")


def _block_variant(X: np.ndarray, t: int, W_Q: np.ndarray, W_K: np.ndarray, W_V: np.ndarray, *,
                   transpose_A: bool = False, swap_cross: bool = False, logit_scale: float = 1.0,
                   scale_derivative: bool = False, include_self: bool = False, uncentred: bool = False,
                   unmasked: str | None = None, drop_last: bool = False, wv_rows: bool = False,
                   unweighted: bool = False, a_left: bool = False) -> np.ndarray:
    """I − Σ_s α_ts (v_s − v̄_t)(x_s − x̄_t)ᵀ A computed with a typical slip (diagnosis only): A = W_Kᵀ W_Q
    transposed, the outer product's factors swapped, logits scaled by ``logit_scale`` (1/√d_k) in the
    weights only or in the weights and the derivative, the sums over s ≤ t (``include_self``), or the second moment
    Σ_s α_ts v_s x_sᵀ without the means (``uncentred``), or no causal mask (``unmasked``: ``"all"`` positions, or
    all ``"others"`` s ≠ t), or the sums over s < t − 1 (``drop_last``), the values as rows x_s W_V (``wv_rows``),
    the covariance with equal weights 1/t (``unweighted``), or A multiplied on the left (``a_left``)."""
    from nextword.attention import softmax

    if unmasked is not None:
        past = X if unmasked == "all" else np.delete(X, t, axis=0)
    elif t == 0:
        return np.eye(X.shape[1])
    elif drop_last and t == 1:
        return np.eye(X.shape[1])
    else:
        past = X[:t + 1] if include_self else X[:t - 1] if drop_last else X[:t]
    alpha = softmax(logit_scale * (past @ W_K.T) @ (W_Q @ X[t]))
    if unweighted:
        alpha = np.full(len(past), 1.0 / len(past))
    v = past @ W_V if wv_rows else past @ W_V.T
    cross = (alpha[:, None] * (v - alpha @ v)).T @ (past - alpha @ past)
    if uncentred:
        cross = (alpha[:, None] * v).T @ past
    A = W_K.T @ W_Q
    if a_left:
        return np.eye(X.shape[1]) - A @ cross
    return np.eye(X.shape[1]) - (logit_scale if scale_derivative else 1.0) * (cross.T if swap_cross else cross) @ (
        A.T if transpose_A else A)


def check_ex_p4_02(diagonal_block: Callable) -> bool:
    """Exercise 02: ``diagonal_block(X, t, W_Q, W_K, W_V) -> (d, d)`` exact ∂ε̂_t/∂x_t (strict, any W_V)."""
    from nextword.theory.barrier import jacobian_diagonal_block, paper_diagonal_block

    r = Report("Exercise 4.02")
    rng = np.random.default_rng(402)
    L, d, dk = 5, 3, 2
    X = rng.normal(size=(L, d))
    W_Q, W_K = rng.normal(size=(dk, d)), rng.normal(size=(dk, d))
    for label, W_V in (("W_V = I", np.eye(d)), ("W_V = 0.5 I", 0.5 * np.eye(d)),
                       ("a random W_V", rng.normal(size=(d, d)))):
        with r.check(f"diagonal_block at every position t = 0..{L - 1} with {label}"):
            for t in range(L):
                expected = jacobian_diagonal_block(X, t, W_Q=W_Q, W_K=W_K, W_V=W_V)
                with_identity = jacobian_diagonal_block(X, t, W_Q=W_Q, W_K=W_K, W_V=np.eye(d))
                got = check_shape(f"diagonal_block(X, t={t}, ...) with {label}",
                                  _call(diagonal_block, f"diagonal_block(X, t={t}, ...)", X.copy(), t, W_Q, W_K, W_V),
                                  (d, d))
                mistakes = {"the block is I − ∂μ_t/∂x_t: you returned I + ∂μ_t/∂x_t": 2 * np.eye(d) - expected,
                            "you returned ∂μ_t/∂x_t without the identity of the residual": np.eye(d) - expected,
                            "A transposed: ∂ζ_ts/∂x_t = Aᵀ x_s with A = W_Kᵀ W_Q, so the chain rule puts "
                            "(x_s − x̄_t)ᵀ A, not Aᵀ, on the right":
                            _block_variant(X, t, W_Q, W_K, W_V, transpose_A=True),
                            "the outer product's factors are swapped: ∂μ_t/∂x_t = Σ_s v_s (∂α_ts/∂x_t)ᵀ puts the "
                            "values on the left, (v_s − v̄_t)(x_s − x̄_t)ᵀ A":
                            _block_variant(X, t, W_Q, W_K, W_V, swap_cross=True),
                            "the sums run over s ≤ t (the token itself included): the strict causal attention "
                            "of Eq. (2) averages over the past s < t only":
                            _block_variant(X, t, W_Q, W_K, W_V, include_self=True),
                            "the means are not subtracted: Σ_s α_ts v_s x_sᵀ is a second moment; the softmax's "
                            "derivative centres it, ∂α_ts/∂x_t = α_ts Aᵀ(x_s − x̄_t), so the block has the "
                            "covariance (v_s − v̄_t)(x_s − x̄_t)ᵀ":
                            _block_variant(X, t, W_Q, W_K, W_V, uncentred=True),
                            "no causal mask: the sums run over every position s (the future included); the strict "
                            "causal attention of Eq. (2) averages over the past s < t only (at t = 0 over nothing: "
                            "the block is I)": _block_variant(X, t, W_Q, W_K, W_V, unmasked="all"),
                            "no causal mask: the sums run over every other position s ≠ t (the future included); "
                            "the strict causal attention of Eq. (2) averages over the past s < t only (at t = 0 over "
                            "nothing: the block is I)": _block_variant(X, t, W_Q, W_K, W_V, unmasked="others"),
                            f"the sums stop one position early (s < t − 1 = {t - 1}): the strict causal attention "
                            f"of Eq. (2) averages over every s < t, X[:t] (rows 0..{t - 1})":
                            _block_variant(X, t, W_Q, W_K, W_V, drop_last=True),
                            "the covariance with equal weights 1/t: each term is weighted by the attention "
                            "weight α_ts, Σ_s α_ts (v_s − v̄_t)(x_s − x̄_t)ᵀ with v̄_t = Σ_s α_ts v_s":
                            _block_variant(X, t, W_Q, W_K, W_V, unweighted=True),
                            "A on the left: the chain rule puts the covariance first, "
                            "Σ_s α_ts (v_s − v̄_t)(x_s − x̄_t)ᵀ A":
                            _block_variant(X, t, W_Q, W_K, W_V, a_left=True)}
                if label == "a random W_V":
                    mistakes["the values as rows x_s W_V: v_s = W_V x_s is a column-vector map, so the rows of "
                             "the value matrix are X @ W_V.T"] = _block_variant(X, t, W_Q, W_K, W_V, wv_rows=True)
                for both, where in ((False, "in the weights"), (True, "in the weights and their derivative")):
                    mistakes[f"1/√d_k {where}: the logits here are q_tᵀ k_s with no 1/√d_k (Eqs. 2–4)"] = \
                        _block_variant(X, t, W_Q, W_K, W_V, logit_scale=1 / np.sqrt(dk), scale_derivative=both)
                if label != "W_V = I":
                    mistakes["the paper's Eq. (14) form I − Σ_t A with the covariance of the values: the exact "
                             "block has the cross-covariance (v_s − v̄_t)(x_s − x̄_t)ᵀ of values and embeddings"] = \
                        paper_diagonal_block(X, W_Q, W_K, W_V)[t]
                    mistakes["your covariance is that of the embeddings, not of the values (right only for "
                             "W_V = I): use (v_s − v̄_t)(x_s − x̄_t)ᵀ"] = with_identity
                check_close(f"diagonal_block(X, t={t}, W_Q, W_K, W_V) with {label}, X of shape {X.shape}", got,
                            expected, rtol=1e-7, atol=1e-9, mistakes=mistakes)
    return r.done("exact diagonal blocks for W_V = I, 0.5 I and a random W_V at every position")


def check_ex_p4_03(X, W_Q, W_K) -> bool:
    """Exercise 03: a context whose last block has spectral margin ≤ 0 and |det| ≥ 0.1 (W_V = I)."""
    from nextword.theory.barrier import matrix_margins

    r = Report("Exercise 4.03")
    with r.check("X (T, d), W_Q and W_K (d_k, d) are finite arrays of matching shapes"):
        X = as_array("X", X)
        W_Q = as_array("W_Q", W_Q)
        W_K = as_array("W_K", W_K)
        if X.ndim != 2 or X.shape[1] < 2 or X.shape[0] < 2:
            fail(f"X should have shape (T, d) with T >= 2 and d >= 2, got {X.shape}")
        d = X.shape[1]
        if W_Q.ndim != 2 or W_Q.shape[1] != d or W_K.shape != W_Q.shape:
            msg = f"W_Q and W_K should both have shape (d_k, {d}), got {W_Q.shape} and {W_K.shape}"
            x_t = W_Q.ndim == 2 and W_K.shape == W_Q.shape and W_Q.shape[1] == X.shape[0]
            w_t = W_Q.ndim == 2 and W_Q.shape[0] == d and W_K.ndim == 2 and W_K.shape[0] == d
            x_msg = (f"X is transposed — it has one row per position, shape (T, d); yours is {X.shape}, and X.T "
                     "would match W_Q")
            w_msg = (f"W_Q and W_K are transposed — each maps a position's x (d = {d}) to d_k numbers as W_Q x, so "
                     "it has d columns")
            if x_t and w_t:  # e.g. X (3, 2) with W_Q (2, 3): either reading fits the shapes
                msg += f"\n    likely mistake: either {x_msg}; or {w_msg} (the shapes fit both)"
            elif x_t:
                msg += f"\n    likely mistake: {x_msg}"
            elif w_t:
                msg += f"\n    likely mistake: {w_msg}"
            fail(msg)
        if not (np.all(np.isfinite(X)) and np.all(np.isfinite(W_Q)) and np.all(np.isfinite(W_K))):
            fail("X, W_Q and W_K must be finite")
    if r.failures:
        return r.done("")
    mm = matrix_margins(X, W_Q, W_K)
    earlier = [t for t in range(len(X) - 1) if mm.spectral[t] <= 0 and abs(mm.det[t]) >= 0.1]
    not_last = (f"\n    likely mistake: the counterexample is at an earlier row — at 0-based position {earlier[0]} "
                f"the spectral margin is {mm.spectral[earlier[0]]:.3f} and |det| = {abs(mm.det[earlier[0]]):.3g}, but the "
                f"exercise asks for the last position: end X at row {earlier[0]}" if earlier else "")
    incl = matrix_margins(X, W_Q, W_K, include_current=True)  # the slip of attending to x_t itself too
    inclusive = ("\n    likely mistake: your counterexample holds when the last position also attends to itself "
                 f"(1 - ρ = {incl.spectral[-1]:.3f}, |det| = {abs(incl.det[-1]):.3g}); here the context is strict, "
                 "s < t only (matrix_margins' default, include_current=False)"
                 if not earlier and incl.spectral[-1] <= 0 and abs(incl.det[-1]) >= 0.1 else "")
    not_last += inclusive
    context = X[:-1]  # strict causal: the rows the last position attends to
    no_spread = ("" if earlier or np.ptp(context, axis=0).max() > 0 else
                 f"\n    likely mistake: Σ_t = 0 — the last position attends only to the rows before it "
                 f"({len(context)} here{', one row' if len(context) == 1 else ', all equal'}), and values without "
                 "spread have zero covariance whatever W_Q and W_K are: give it at least two different earlier rows")
    with r.check("the spectral margin 1 − ρ(Σ_t A) at the last position is ≤ 0"):
        check_true(mm.spectral[-1] <= 0,
                   f"the spectral margin 1 - ρ(Σ_t A) at the last position is {mm.spectral[-1]:.3f} > 0: "
                   "Lemma B.4 already certifies this block — push an eigenvalue of Σ_t A past 1" + not_last
                   + no_spread)
    with r.check("yet the block is invertible: |det(I − Σ_t A)| ≥ 0.1"):
        check_true(abs(mm.det[-1]) >= 0.1,
                   f"|det(I - Σ_t A)| at the last position is {abs(mm.det[-1]):.3g} < 0.1: "
                   "the block is (nearly) singular, so it is not a counterexample — move the eigenvalue past 1, "
                   "not onto it" + not_last)
    if r.failures:
        return r.done("")
    return r.done(f"ρ(Σ_t A) = {1 - mm.spectral[-1]:.3f} ≥ 1 yet |det(I - Σ_t A)| = {abs(mm.det[-1]):.3f}: "
                  "the spectral condition is not necessary")


def check_ex_p4_04(var_first_embedding: Callable, cov_first_second: Callable) -> bool:
    """Exercise 04: ``var_first_embedding(w_V, sigma)`` = Var(x_1) and ``cov_first_second(w_V, sigma)`` = Cov(x_1, x_2)
    under the length-2 non-causal model. Var(x_1) is even in w_V, so a sign slip ((I + W)⁻¹ for (I − W)⁻¹) gives
    the right variance; the covariance, odd in w_V, shows it."""
    from nextword.theory.barrier import residual_jacobian

    def moments(w: float, sigma: float) -> tuple[np.ndarray, np.ndarray]:
        # the map ε = J x is linear: J from the library at any point, then Cov(x) = σ² (Jᵀ J)^(-1)
        J = residual_jacobian(np.zeros((2, 1)), [[1.0]], [[1.0]], [[w]], context="others").reshape(2, 2)
        return J, sigma**2 * np.linalg.inv(J.T @ J)

    r = Report("Exercise 4.04")
    cases = ((0.0, 1.5), (0.5, 1.0), (-0.3, 2.0), (0.8, 0.5))
    with r.check("Var(x_1) of the length-2 non-causal model (change of variables ε = J x)"):
        for w, sigma in cases:
            J, cov = moments(w, sigma)
            expected = cov[0, 0]
            M = np.linalg.inv(J)
            got = _call(var_first_embedding, f"var_first_embedding(w_V={w}, sigma={sigma})", w, sigma)
            check_close(f"var_first_embedding(w_V={w}, sigma={sigma})", np.asarray(got, dtype=float), expected,
                        rtol=1e-8, atol=1e-12,
                        mistakes={"σ instead of σ²: the variance scales with the square of the noise level":
                                  expected / sigma,
                                  "the length-1 answer σ²: in the non-causal model x_1 also depends on ε_2": sigma ** 2,
                                  "σ² M_00, as if Cov(x) were σ² M (M = (I − W)⁻¹): the covariance of x = M ε is σ² M Mᵀ, so "
                                  "Var(x_1) = σ² (M_00² + M_01²)": sigma ** 2 * M[0, 0],
                                  "only the (0, 0) entry of M squared: x_1 = M_00 ε_1 + M_01 ε_2 has two noise terms":
                                  sigma ** 2 * M[0, 0] ** 2,
                                  "J itself, not its inverse: ε = J x, so x = J⁻¹ ε and Cov(x) = σ² J⁻¹ J⁻ᵀ":
                                  sigma ** 2 * (J @ J.T)[0, 0]})
    with r.check("Cov(x_1, x_2) of the length-2 non-causal model: its size, and its sign that follows w_V's"):
        # the smallest case with a sign first (w = 0 gives 0 for every sign), then w = 0, then σ = 0.5 before σ = 2:
        # at σ = 2 the slip σ for σ² gives half the answer, as the one-noise-term slip always does
        for w, sigma in (cases[1], cases[0], cases[3], cases[2]):
            J, cov = moments(w, sigma)
            expected = cov[0, 1]
            M = np.linalg.inv(J)
            got = _call(cov_first_second, f"cov_first_second(w_V={w}, sigma={sigma})", w, sigma)
            check_close(f"cov_first_second(w_V={w}, sigma={sigma})", np.asarray(got, dtype=float), expected,
                        rtol=1e-8, atol=1e-12,
                        mistakes={"the sign of w_V flipped — x = (I + W)⁻¹ε instead of (I − W)⁻¹ε (the residual is "
                                  "ε̂ = x − W x): each position copies w_V times the other, so for w_V > 0 the two "
                                  "move together and Cov(x_1, x_2) > 0. Var(x_1) is even in w_V and cannot show "
                                  "this slip": -expected,
                                  "the length-1 answer 0: without the mask x_1 and x_2 share both noise terms":
                                  0.0 * expected,
                                  "one noise term only (M_00 M_10): Cov(x_1, x_2) = σ² (M_00 M_10 + M_01 M_11), "
                                  "ε_1 and ε_2 both reach both positions": sigma ** 2 * M[0, 0] * M[1, 0],
                                  "σ² M_01, as if Cov(x) were σ² M (M = (I − W)⁻¹): the covariance of x = M ε is σ² M Mᵀ, so "
                                  "Cov(x_1, x_2) = σ² (M_00 M_10 + M_01 M_11)": sigma ** 2 * M[0, 1],
                                  "the correlation, not the covariance: do not divide by the standard deviations":
                                  expected / cov[0, 0],
                                  "σ instead of σ²: the covariance scales with the square of the noise level":
                                  expected / sigma,
                                  "J itself, not its inverse: ε = J x, so x = J⁻¹ ε and Cov(x) = σ² J⁻¹ J⁻ᵀ":
                                  sigma ** 2 * (J @ J.T)[0, 1]})
    return r.done("Var(x_1) and Cov(x_1, x_2) of the length-2 non-causal model match the change of variables for "
                  "4 (w_V, σ); the covariance has the sign of w_V")
