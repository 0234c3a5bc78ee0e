"""Checkers for the exercises of Part 2 (see exercises/README.md).

Expected values come from the library (:mod:`nextword.theory.formulation.objectives`,
:mod:`nextword.theory.formulation.diffusion`, :mod:`nextword.theory.formulation.ssm`), never from a copy of a solution.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._common import ExerciseCheckError, Report, as_array, call_student, check_close, check_shape, check_true, describe, fail, passed  # noqa: F401

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


def _terms(weight_next: Callable, first: Callable, second: Callable, V: int, L: int) -> np.ndarray:
    """Σ over prefixes of length l-1 of P_weight(prefix) KL(first(prefix) ‖ second(prefix)), l = 1..L: the
    per-position terms with a chosen weighting law and KL direction (to name the two ways of mixing p and q up)."""
    import itertools

    from nextword.theory.formulation.objectives import kl_divergence

    out = np.zeros(L)
    for l in range(L):
        for prefix in itertools.product(range(V), repeat=l):
            weight = float(np.prod([weight_next(prefix[:m])[prefix[m]] for m in range(l)]))
            out[l] += weight * kl_divergence(first(prefix), second(prefix))
    return out


def check_ex_p2_01(per_position_kl: Callable) -> bool:
    """Exercise 01: ``per_position_kl(p_next, q_next, V, T) -> (T,)``, the terms of (4.4b).

    Compared with :func:`nextword.theory.formulation.objectives.kl_decomposition`; the sum must equal the joint
    KL (4.2a) computed from :func:`~nextword.theory.formulation.objectives.sequence_distribution`.
    """
    from nextword.theory.formulation.objectives import kl_decomposition, kl_divergence, sequence_distribution

    r = Report("Exercise 2.01")
    rng = np.random.default_rng(201)
    cases = []
    for V, L, ctx_p, ctx_q in [(2, 3, None, None), (3, 3, 1, 2), (2, 5, 1, None)]:  # smallest V^L first
        cases.append((V, L, _random_model(rng, V, ctx_p), _random_model(rng, V, ctx_q)))
    got_all = {}
    with r.check("per_position_kl returns T non-negative terms"):
        for V, L, p_next, q_next in cases:
            got = check_shape(f"per_position_kl(p, q, V={V}, T={L})",
                              _call(per_position_kl, f"per_position_kl(p, q, V={V}, T={L})", p_next, q_next, V, L), (L,))
            check_true(np.all(got >= -1e-12), f"per_position_kl(p, q, V={V}, T={L}) = {describe(got)} has a negative "
                       "term, but every term is an expected KL divergence")
            got_all[V, L] = got
    with r.check("each term equals E_p[KL(p(·|prefix) ‖ q(·|prefix))] (Eq. 4.4b)"):
        for V, L, p_next, q_next in cases:
            if (V, L) not in got_all:
                fail(f"no usable result for V={V}, T={L}")
            expected = kl_decomposition(p_next, q_next, V, L).per_position
            check_close(f"per_position_kl(p, q, V={V}, T={L})", got_all[V, L], expected, rtol=1e-8, atol=1e-10,
                        mistakes={"KL(q ‖ p) instead of KL(p ‖ q): the prefixes are weighted by p and p comes first":
                                  kl_decomposition(q_next, p_next, V, L).per_position,
                                  "the prefixes are weighted by the model q: Eq. (4.4b) averages over prefixes drawn "
                                  "from the data law p": _terms(q_next, p_next, q_next, V, L),
                                  "KL(q ‖ p) at each prefix: the data law comes first, KL(p(·|prefix) ‖ q(·|prefix))":
                                  _terms(p_next, q_next, p_next, V, L),
                                  "running totals: return each position's own term, not the cumulative sum":
                                  np.cumsum(expected),
                                  "the prefixes are weighted uniformly (1/V^(t−1) each): Eq. (4.4b) weights each "
                                  "prefix by its probability under p, the product of p's next-token laws":
                                  _terms(lambda prefix: np.full(V, 1.0 / V), p_next, q_next, V, L),
                                  "the prefixes are not weighted (a plain sum over them): Eq. (4.4b) weights each "
                                  "prefix by its probability under p":
                                  _terms(lambda prefix: np.ones(V), p_next, q_next, V, L),
                                  "off by one position: term t was conditioned on prefixes of t tokens; position t "
                                  "sees the t − 1 tokens before it, so the first term has the empty prefix":
                                  kl_decomposition(p_next, q_next, V, L + 1).per_position[1:],
                                  "a mean over the V^(t−1) prefixes of p(prefix)·KL: the expectation is the sum "
                                  "Σ_prefix p(prefix) KL (the weights p(prefix) already sum to 1)":
                                  expected / float(V) ** np.arange(L)})
    with r.check("the terms add up to the joint KL (Eq. 4.2a)"):
        for V, L, p_next, q_next in cases:
            if (V, L) not in got_all:  # else a stub would pass this sub-check (graded alone by the export)
                fail(f"no usable result for V={V}, T={L}")
            if (V, L) in got_all:
                joint = kl_divergence(sequence_distribution(p_next, V, L)[0], sequence_distribution(q_next, V, L)[0])
                check_close(f"sum of per_position_kl(p, q, V={V}, T={L})", got_all[V, L].sum(), joint,
                            rtol=1e-8, atol=1e-10)
    with r.check("KL(p ‖ p) = 0 at every position"):
        same = _random_model(rng, 3, 1)
        check_close("per_position_kl(p, p, V=3, T=3)", _call(per_position_kl, "per_position_kl(p, p, 3, 3)",
                                                             same, same, 3, 3), np.zeros(3), atol=1e-12)
    return r.done("per-position KLs match (4.4b) and add up to the joint KL (4.2a) on 4 model pairs")


def check_ex_p2_02(uniform_generator: Callable, absorbing_generator: Callable, reverse_rates: Callable) -> bool:
    """Exercise 02: corrected generators of Examples 9.2/9.3 and the reverse rates (D.1)."""
    from nextword.theory.formulation import diffusion as dd

    r = Report("Exercise 2.02")
    with r.check("uniform_generator(V, beta) is the uniform-noise rate matrix"):
        for V, beta in ((2, 1.0), (4, 0.5), (6, 2.0)):
            label = f"uniform_generator({V}, {beta})"
            Q = check_shape(label, _call(uniform_generator, label, V, beta), (V, V))
            problems = dd.generator_violations(Q, atol=1e-10)
            expected = dd.uniform_generator(V, beta)
            check_true(not problems, f"{label} is not a rate matrix: " + "; ".join(problems)
                       + f"\n    got {describe(Q)}\n    expected {describe(expected)}")
            others = beta * (np.ones((V, V)) - V * np.eye(V)) / (V - 1)  # rate beta/(V-1) to each *other* state
            check_close(label, Q, expected, rtol=1e-10, atol=1e-12,
                        mistakes={"rate β/(V−1) to each other state: every state jumps to each of the V states "
                                  "(itself included, which does nothing) at rate β/V, so to each other state at β/V":
                                  others})
    with r.check("absorbing_generator(V, mask, beta) sends every state to the mask at rate beta"):
        for V, beta in ((2, 1.0), (4, 0.5), (6, 2.0)):
            for mask in (0, V - 1):
                label = f"absorbing_generator({V}, {mask}, {beta})"
                Qa = check_shape(label, _call(absorbing_generator, label, V, mask, beta), (V, V))
                problems = dd.generator_violations(Qa, atol=1e-10)
                expected = dd.absorbing_generator(V, mask, beta)
                only_mask_row = bool(np.allclose(np.delete(Qa, mask, 0), np.delete(expected, mask, 0)))
                check_true(not problems, f"{label} is not a rate matrix: " + "; ".join(problems)
                           + f"\n    got {describe(Qa)}\n    expected {describe(expected)}"
                           + (f"\n    likely mistake: the mask state {mask} gets rates too (the loop did not skip "
                              "i == mask): it absorbs, so its row is zero" if only_mask_row else ""))
                check_true(np.allclose(Qa[mask], 0.0), f"{label}: the mask state {mask} must never leave: "
                           f"its row should be zero, got {describe(Qa[mask])}")
                check_close(label, Qa, expected, rtol=1e-10, atol=1e-12)
    with r.check("reverse_rates(Q, p) satisfies (D.1) on random generators"):
        rng = np.random.default_rng(202)
        for S in (3, 5):
            Q = rng.exponential(size=(S, S))
            np.fill_diagonal(Q, 0.0)
            np.fill_diagonal(Q, -Q.sum(axis=1))
            p = rng.dirichlet(np.ones(S))
            label = f"reverse_rates(Q, p) for a random {S}-state generator"
            R = check_shape(label, _call(reverse_rates, label, Q.copy(), p.copy()), (S, S))
            expected = dd.reverse_generator(Q, p)
            raw = Q.T * p[None, :] / p[:, None]
            flipped = Q.T * p[:, None] / p[None, :]
            np.fill_diagonal(flipped, 0.0)
            np.fill_diagonal(flipped, -flipped.sum(axis=1))
            untransposed = Q * p[None, :] / p[:, None]  # Q_yz p_z / p_y: the forward rate y -> z, not z -> y
            np.fill_diagonal(untransposed, 0.0)
            np.fill_diagonal(untransposed, -untransposed.sum(axis=1))
            whole_transpose = Q * p[:, None] / p[None, :]  # Q_yz p_y / p_z: the answer with y and z swapped
            np.fill_diagonal(whole_transpose, 0.0)
            np.fill_diagonal(whole_transpose, -whole_transpose.sum(axis=1))
            check_close(label, R, expected, rtol=1e-8, atol=1e-10,
                        mistakes={"the diagonal was not reset: after Q̄_yz = Q_zy p_z / p_y, set Q̄_yy = -Σ_(z≠y) Q̄_yz":
                                  raw,
                                  "the probability ratio is upside down: Q̄_yz = Q_zy p_z / p_y": flipped,
                                  "Q itself, transposed: the reversal also reweights by p_z / p_y": Q.T,
                                  "Q_yz p_z / p_y, the forward rate of y → z: the reverse rate y → z uses the "
                                  "forward rate z → y, Q_zy": untransposed,
                                  "y and z swapped throughout (Q_yz p_y / p_z): that is Q̄_zy, so off the diagonal "
                                  "your matrix is the transpose of Q̄; row y holds the rates out of y, "
                                  "Q̄_yz = Q_zy p_z / p_y":
                                  whole_transpose})
    return r.done("both generators have zero row sums and the right rates; the reverse rates satisfy (D.1)")


def check_ex_p2_03(zoh: Callable, scan: Callable) -> bool:
    """Exercise 03: zero-order-hold discretisation (corrected C.4a) and the linear recurrence (5.9)."""
    from scipy.linalg import expm

    from nextword.theory.formulation import ssm

    r = Report("Exercise 2.03")
    rng = np.random.default_rng(203)
    cases = []
    for s, d, label in ((2, 1, "a singular A (A = 0)"), (3, 2, "a stable A"), (4, 4, "a square B")):
        A = np.zeros((s, s)) if "singular" in label else rng.normal(size=(s, s)) - 2 * np.eye(s)
        cases.append((label, A, rng.normal(size=(s, d))))
    dt = 0.3
    for which, idx in (("Abar = exp(dt A)", 0), ("Bbar = ∫_0^dt exp(t A) dt B", 1)):
        with r.check(f"zoh: {which} (singular A included)"):
            for label, A, B in cases:
                try:
                    out = _call(zoh, f"zoh(A, B, {dt}) for {label}", A.copy(), B.copy(), dt)
                except ExerciseCheckError as exc:
                    if "LinAlgError" in str(exc) and "singular" in label:
                        fail(str(exc).removeprefix("✗ ") + "\n    likely mistake: A⁻¹(Abar − I)B needs an invertible A "
                             "— use the block-matrix exponential instead")
                    raise
                if not isinstance(out, (tuple, list)) or len(out) != 2:  # a list [Abar, Bbar] is a pair too
                    fail(f"zoh should return a pair (Abar, Bbar), got {type(out).__name__}"
                         + (f" of length {len(out)}" if isinstance(out, (tuple, list)) else ""))
                expected = ssm.discretize_zoh(A, B, dt)[idx]
                s = A.shape[0]
                euler = (np.eye(s) + dt * A, dt * B)[idx]
                got = as_array("zoh", out[idx])
                if idx == 1 and not np.all(np.isfinite(got)):
                    fail(f"Bbar for {label} contains NaN or infinity: the formula A⁻¹(Abar − I)B needs an "
                         "invertible A — use the block-matrix exponential instead")
                no_dt = ssm.discretize_zoh(A, B, 1.0)[idx]  # the step dt left out (a step of 1)
                block_dt_on_a = "in the block matrix only A was multiplied by dt: exponentiate the whole " \
                                "matrix (A B; 0 0) times dt, B included (this gives Bbar / dt)"
                if idx == 0:
                    slips = {"dt is missing: Abar = exp(dt A), not exp(A)": no_dt,
                             "np.exp is elementwise: the matrix exponential is scipy.linalg.expm": np.exp(dt * A)}
                elif not A.any():  # A = 0: exp(dt A) B = B = the hold over a step of 1
                    slips = {"Bbar = B: for A = 0 the hold gives ∫_0^dt dt' B = dt B; either dt is missing (a step "
                             "of 1), or " + block_dt_on_a + ", or you used exp(dt A) B (= B here), which does not "
                             "integrate over the step": B,
                             "Bbar = 0: the pseudo-inverse of A = 0 is 0, so pinv(A)(Abar − I)B vanishes; the hold "
                             "gives dt B — use the block-matrix exponential, not an inverse": np.zeros_like(B)}
                else:
                    slips = {"dt is missing: the hold integrates exp(tA) over t in [0, dt], not [0, 1]": no_dt,
                             block_dt_on_a: expected / dt,
                             "Bbar = exp(dt A) B: the hold integrates exp(tA) over the step": expm(dt * A) @ B}
                check_close(f"{'Abar' if idx == 0 else 'Bbar'} for {label} (dt = {dt})", got, expected,
                            rtol=1e-8, atol=1e-10,
                            mistakes={"forward Euler (I + dt A, dt B): the zero-order hold is exact, with expm":
                                      euler, **slips})
    with r.check("scan: u_i = C v_i + D h_i with v_(i+1) = Abar v_i + Bbar h_i (Eq. 5.9)"):
        s, d, T = 3, 2, 7
        Ab, Bb = ssm.discretize_zoh(rng.normal(size=(s, s)) - np.eye(s), rng.normal(size=(s, d)), 0.2)
        C, D = rng.normal(size=(d, s)), rng.normal(size=(d, d))
        h, v0 = rng.normal(size=(T, d)), rng.normal(size=s)
        got = check_shape("scan(Abar, Bbar, C, D, h, v0) with T = 7", _call(scan, "scan", Ab, Bb, C, D, h.copy(),
                                                                           v0.copy()), (T, d))
        states, expected = ssm.ssm_scan(Ab, Bb, C, D, h, v0)
        updated_first = (states @ Ab.T + h @ Bb.T) @ C.T + h @ D.T  # u_i = C v_{i+1} + D h_i
        v, previous_input = v0.copy(), []  # the state fed the previous input: v_(i+1) = Abar v_i + Bbar h_(i-1)
        for i in range(T):
            previous_input.append(C @ v + D @ h[i])
            v = Ab @ v + Bb @ h[i - 1]
        check_close("scan(Abar, Bbar, C, D, h, v0) with T = 7", got, expected, rtol=1e-8, atol=1e-10,
                    mistakes={"outputs off by one step: u_i must use v_i before it is updated with h_i": updated_first,
                              "the feed-through D h_i is missing": states @ C.T,
                              "the initial state v0 is ignored (the scan started from 0): u_0 = C v0 + D h_0":
                              ssm.ssm_scan(Ab, Bb, C, D, h, np.zeros(s))[1],
                              "D is transposed: D has shape (d_out, d) and multiplies h_i as D h_i (rows: h @ D.T)":
                              states @ C.T + h @ D,
                              "the state is fed the previous input (h[i − 1], and h[−1] is the LAST input in "
                              "Python): v_(i+1) = Abar v_i + Bbar h_i": np.array(previous_input)})
    return r.done("zoh matches the exact hold discretisation (singular A included) and scan matches (5.9)")
