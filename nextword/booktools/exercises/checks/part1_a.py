"""Checkers for Chapter 6 Exercises 1, 2, 3, 7, 10, 11 (helper P1a; re-exported by ``part1``).

Each checker recomputes the expected result with the library (attention, the running-example source,
the numpy export of a torch model, torch's FLOP counter) or checks properties; none holds a copy of
the solution.
"""
from __future__ import annotations

import numpy as np

from nextword.booktools.display import produced
from ._common import ExerciseCheckError, Report, as_array, call_student, check_close, check_shape, check_true, describe, fail

__all__ = ["check_ex_p1_01", "check_ex_p1_02", "check_ex_p1_03", "check_ex_p1_07", "check_ex_p1_10",
           "check_ex_p1_11"]

_Q3 = np.array([1.0, 0.0, -1.0, 0.0])
_K3 = np.array([[1.0, 1, 0, 0], [0, 1, 1, 0], [-1, 0, 1, 1]])
_call = call_student


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max())
    return e / e.sum()


def _minus_s_message(scores, s: np.ndarray, head: str, what: str) -> str:
    """The diagnosis of ``what`` computed from −s_j: inherited from wrong-sign ``scores`` (the student's), or a sign
    slip in the exponent itself when the scores are right (diagnosis only)."""
    try:
        inherited = np.allclose(np.asarray(scores, dtype=float), -s, rtol=1e-5, atol=1e-8)
    except (TypeError, ValueError):
        inherited = False
    if inherited:
        return f"{head} of −s_j: the scores have the wrong sign (see the scaled-scores check), and {what} inherit it"
    return f"{head} of −s_j: exp(−s_j) for exp(s_j) — the scores are right, the sign in the exponent is not"


def _scores_over_sum(s: np.ndarray) -> np.ndarray:
    """The slip s / Σ s (the scores normalised in place of their exponentials); NaN where Σ s = 0."""
    total = s.sum()
    return s / total if abs(total) > 1e-12 else np.full_like(s, np.nan)


def _weight_slips(q: np.ndarray, K: np.ndarray, V: np.ndarray) -> dict[str, np.ndarray]:
    """Exercise 2's usual slips in the weights (n,), by message (diagnosis only)."""
    d, dv = K.shape[1], V.shape[1]
    s = K @ q / np.sqrt(d)
    slips = {"softmax of the unscaled scores: divide by √d_k": _softmax(K @ q),
             "softmax of the scores divided by d_k: the scale is 1/√d_k, d_k the length of q": _softmax(K @ q / d),
             "softmax of −s_j: the scores q·k[j]/√d_k have the wrong sign": _softmax(-s)}
    if dv != d:
        slips[f"divided by √d_v with d_v = {dv} the width of the values: the scale is √d_k, d_k = {d} the length "
              "of q"] = _softmax(K @ q / np.sqrt(dv))
    return slips


def check_ex_p1_01(attention_steps) -> bool:
    """Exercise 1: ``attention_steps(q, K) -> (scaled_scores, exponentials, weights)``, each ``(n,)``.

    Checked on the exercise's numbers and on random inputs against ``nextword.attention``; float32
    answers are accepted at float32 tolerance.
    """
    from nextword.attention.core import scaled_dot_product_attention

    r = Report("Exercise 1.01")
    rng = np.random.default_rng(11)
    cases = [("Exercise 1's q and K (n=3, d=4)", _Q3, _K3)]
    cases += [(f"a random q, K with n={n}, d={d}", rng.standard_normal(d), rng.standard_normal((n, d)))
              for d, n in ((4, 5), (16, 7))]
    outs = []
    with r.check("attention_steps returns a tuple (scaled_scores, exponentials, weights)"):
        for label, q, K in cases:
            out = _call(attention_steps, f"attention_steps for {label}", q.copy(), K.copy())
            if not isinstance(out, tuple) or len(out) != 3:
                fail(f"attention_steps for {label} returned {type(out).__name__}"
                     f"{f' of length {len(out)}' if isinstance(out, (tuple, list)) else ''}, "
                     "expected a tuple of three arrays (scaled_scores, exponentials, weights)")
            outs.append(out)
    if len(outs) < len(cases):
        return r.done("")
    with r.check("scaled scores s_j = k_j·q / √d"):
        for (label, q, K), (scores, _, _) in zip(cases, outs):
            d = K.shape[1]
            n = K.shape[0]
            check_close(f"scaled_scores for {label}", scores, K @ q / np.sqrt(d), rtol=1e-9, atol=1e-12, d=d,
                        allow_float32=True,
                        mistakes={f"divided by √n with n = {n} the number of keys: the scale is √d_k, d_k = {d} "
                                  "the length of q": K @ q / np.sqrt(n)} if n != d else None)
    with r.check("exponentials exp(s_j) (a common factor such as exp(-max s) allowed)"):
        for (label, q, K), (scores, exps, _) in zip(cases, outs):
            n, d = K.shape
            exps = check_shape(f"exponentials for {label}", exps, (n,))
            check_true(np.all(exps > 0), f"exponentials for {label} must be positive, got {describe(exps)}")
            s = K @ q / np.sqrt(d)
            check_close(f"exponentials for {label}, normalised to sum 1", exps / exps.sum(), _softmax(s),
                        rtol=1e-9, atol=1e-12, allow_float32=True,
                        mistakes={"exponentials of the unscaled scores k_j·q: divide by √d_k before exp": _softmax(K @ q),
                                  _minus_s_message(scores, s, "exponentials", "the exponentials"): _softmax(-s),
                                  "powers of 2 (2**s_j, base 2) instead of exp(s_j) = e**s_j: use np.exp":
                                  _softmax(s * np.log(2))})
    with r.check("weights = softmax of the scaled scores"):
        for (label, q, K), (scores, _, weights) in zip(cases, outs):
            n = K.shape[0]
            _, w_ref = scaled_dot_product_attention(q[None], K, np.eye(n), return_weights=True)
            w = check_shape(f"weights for {label}", weights, (n,))
            check_true(abs(w.sum() - 1) < 1e-5, f"weights for {label} sum to {w.sum():.6g}, not 1: "
                       "divide the exponentials by their sum")
            check_close(f"weights for {label}", w, w_ref[0], rtol=1e-9, atol=1e-12, allow_float32=True,
                        mistakes={"softmax of the unscaled scores k_j·q: divide by √d_k first": _softmax(K @ q),
                                  "softmax of the scores divided by d_k: the scale is 1/√d_k": _softmax(K @ q / K.shape[1]),
                                  _minus_s_message(scores, K @ q / np.sqrt(K.shape[1]), "softmax", "the weights"):
                                  _softmax(-K @ q / np.sqrt(K.shape[1])),
                                  "powers of 2 (2**s_j, base 2) normalised instead of exp(s_j) = e**s_j: use np.exp":
                                  _softmax(K @ q / np.sqrt(K.shape[1]) * np.log(2)),
                                  "the scores s_j normalised by their sum, not the exponentials: the weights are "
                                  "exp(s_j) / Σ_j' exp(s_j'), positive and summing to 1":
                                  _scores_over_sum(K @ q / np.sqrt(K.shape[1]))})
    return r.done("scaled scores, exponentials and weights match scaled dot-product attention "
                  "(Exercise 1's numbers and two random cases)")


def check_ex_p1_02(attention_output, in_convex_hull) -> bool:
    """Exercise 2: ``attention_output(q, K, V) -> (weights, output)`` and ``in_convex_hull(x, V) -> bool``."""
    from nextword.attention.core import scaled_dot_product_attention

    r = Report("Exercise 1.02")
    rng = np.random.default_rng(12)
    cases = []
    for n, d, dv in ((3, 4, 2), (6, 5, 3), (10, 8, 4)):
        q, K, V = rng.standard_normal(d) * 3, rng.standard_normal((n, d)), rng.standard_normal((n, dv))
        cases.append((f"n={n} keys, d={d}, d_v={dv}", q, K, V))
    results = []
    with r.check("attention_output returns (weights, output)"):
        for label, q, K, V in cases:
            res = _call(attention_output, f"attention_output for {label}", q, K, V)
            if not isinstance(res, tuple) or len(res) != 2:
                fail(f"attention_output for {label} returned {type(res).__name__}, expected a pair (weights, output)")
            results.append(res)
    if len(results) == len(cases):
        with r.check("weights form a distribution equal to softmax(K q / √d)"):
            for (label, q, K, V), (w, _) in zip(cases, results):
                _, ref_w = scaled_dot_product_attention(q[None], K, V, return_weights=True)
                w = check_close(f"weights for {label}", w, ref_w[0], rtol=1e-9, atol=1e-12, d=K.shape[1],
                                mistakes={**_weight_slips(q, K, V),
                                          "the exponentials are not normalised: divide them by their sum, so that "
                                          "the weights sum to 1": np.exp(K @ q / np.sqrt(K.shape[1])),
                                          "the shifted exponentials exp(s_j − max s) are not normalised: divide them "
                                          "by their sum, so that the weights sum to 1":
                                          np.exp(K @ q / np.sqrt(K.shape[1]) - (K @ q / np.sqrt(K.shape[1])).max())})
                check_true(np.all(w >= 0) and abs(w.sum() - 1) < 1e-12, "weights must be non-negative and sum to 1")
        with r.check("output = Σ_j α_j v_j"):
            for (label, q, K, V), (_, out) in zip(cases, results):
                ref_out, ref_w = scaled_dot_product_attention(q[None], K, V, return_weights=True)
                check_close(f"output for {label}", out, ref_out[0], rtol=1e-9, atol=1e-12,
                            mistakes={"the plain mean of the values: weight each v_j by α_j": V.mean(0),
                                      "divided by the number of keys n: the weights already sum to 1, so Σ_j α_j v_j "
                                      "needs no further normalising": ref_out[0] / len(K),
                                      "the unscaled weights softmax(K q): the output uses the same α_j as the weights, "
                                      "softmax(K q / √d_k)": scaled_dot_product_attention(
                                          q[None] * np.sqrt(q.shape[0]), K, V)[0],
                                      **{f"{m} (the weights' slip: the output inherits it)": w @ V
                                         for m, w in _weight_slips(q, K, V).items()
                                         if not m.startswith("softmax of the unscaled")}})
    with r.check("in_convex_hull accepts attention outputs and vertices"):
        for label, q, K, V in cases:
            out = scaled_dot_product_attention(q[None], K, V)[0]
            check_true(bool(_call(in_convex_hull, "in_convex_hull", np.asarray(out), V)),
                       f"in_convex_hull rejects the attention output for {label}, which is a convex combination "
                       "(λ = α solves Vᵀλ = x, Σλ = 1, λ ≥ 0)\n    likely: a constraint is wrong — one λ_j per value (a row "
                       "of V), the equality constraints Vᵀ λ = x and Σ λ = 1 (A_eq stacks V.T, shape (d_v, n), and "
                       "a row of ones; b_eq is x with a 1 appended), bounds λ_j ≥ 0")
            check_true(bool(_call(in_convex_hull, "in_convex_hull", V[0].copy(), V)),
                       f"in_convex_hull rejects the value vector V[0] itself (a vertex) for {label}, which is the "
                       "combination λ = (1, 0, …, 0)\n    likely mistake: coefficients required to be strictly "
                       "positive — the bounds are λ_j ≥ 0, and a point on the hull's boundary has some λ_j = 0")
    with r.check("in_convex_hull rejects points outside the hull"):
        for label, q, K, V in cases:
            outside = V.mean(0) + 10 * (V.max(0) - V.min(0) + 1)  # beyond every value in every coordinate
            check_true(not bool(_call(in_convex_hull, "in_convex_hull", outside, V)),
                       f"in_convex_hull accepts {describe(outside)}, which lies beyond every value vector "
                       f"in every coordinate ({label}): do you require the coefficients to be >= 0 and sum to 1?")
    with r.check("in_convex_hull rejects points inside the values' bounding box but outside their hull"):
        for label, x, V in (("the triangle (0,0), (1,0), (0,1)", np.array([0.6, 0.6]),
                             np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])),
                            ("the three unit vectors of R³", np.full(3, 0.5), np.eye(3))):
            if bool(_call(in_convex_hull, "in_convex_hull", x.copy(), V.copy())):
                fail(f"in_convex_hull accepts {describe(x)} for the values {label}: every coordinate lies between "
                     "the values' smallest and largest, but the coefficients would have to sum to more than 1, "
                     f"so it is outside the hull\n    likely mistake: {_hull_slip(in_convex_hull)}")
    return r.done("weights form a distribution, output = Σ α v matches the library, and the hull test "
                  "accepts outputs and vertices and rejects outside points")


def _hull_slip(in_convex_hull) -> str:
    """The likely mistake of a hull test that accepts a point outside the hull, told apart by two probes on
    the triangle (0,0), (1,0), (0,1): (2, 2) lies in the cone of the values (λ ≥ 0, any sum) and in their
    affine hull (Σλ = 1, any sign), outside their bounding box; (−0.5, 0.5) lies in the affine hull only."""
    V = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    try:
        cone = bool(in_convex_hull(np.array([2.0, 2.0]), V.copy()))
        affine = bool(in_convex_hull(np.array([-0.5, 0.5]), V.copy()))
    except Exception:  # noqa: BLE001 — the probes only choose the message
        cone = affine = False
    if affine:
        return ("the coefficients may be negative: your test also accepts (−0.5, 0.5) = 1·(0,0) − 0.5·(1,0) + "
                "0.5·(0,1) for the triangle (0,0), (1,0), (0,1), an affine combination; bound them below: λ ≥ 0")
    if cone:
        return ("the coefficients need not sum to 1: your test also accepts (2, 2) = 2·(1,0) + 2·(0,1) for the "
                "triangle (0,0), (1,0), (0,1), a point of the cone the values span; add Σ λ = 1 (a row of ones in "
                "the equality constraints)")
    return ("a coordinate-wise (bounding-box) test — necessary for a convex combination, not sufficient: look for "
            "λ ≥ 0 with Σ λ = 1 and Vᵀ λ = x")


def check_ex_p1_03(generation_style_loss, model, windows, entropy_rate: float) -> bool:
    """Exercise 3: the student's ``generation_style_loss(model, windows)`` and a model trained without the mask.

    Verifies the function against an independent computation (the numpy export of the model, one
    prefix at a time) and that the model shows the leakage: teacher-forced loss below the entropy
    rate, generation-style loss well above it.
    """
    from nextword.attention import log_softmax
    from nextword.torch.models.lm import TinyLM, to_numpy_decoder
    from nextword.torch.training.token_lm import evaluate_loss

    r = Report("Exercise 1.03")
    with r.check("the model is a TinyLM trained without the mask"):
        if not isinstance(model, TinyLM):
            fail(f"model must be a nextword.torch.models.lm.TinyLM, got {type(model).__name__}")
        check_true(not model.config.causal,
                   "the model for this experiment must be trained WITHOUT the mask (causal=False)")
    windows = np.asarray(windows)
    if windows.ndim != 2 or windows.shape[1] < 4:
        fail("windows must be a (num_windows, T) array of token ids with T >= 4")
    if not isinstance(model, TinyLM):
        return r.done("")
    teacher = evaluate_loss(model, windows)
    with r.check("generation_style_loss predicts each token from its prefix alone"):
        lm = to_numpy_decoder(model)
        for rows in (1, 8):
            sub = windows[:rows, :6] if rows == 1 else windows[:rows]
            got = float(as_array("generation_style_loss", _call(generation_style_loss,
                                                                 f"generation_style_loss on {rows} window(s)", model, sub)))
            L = sub.shape[1]
            logits = [[lm.logits(row[:t]) for t in range(1, L)] for row in sub]  # prefix w[:t] of each window
            nll = np.array([[-log_softmax(lg[-1])[row[t]] for t, lg in enumerate(lgs, start=1)]
                            for row, lgs in zip(sub, logits)])  # (rows, L - 1): w[t] from the last position
            first = np.array([[-log_softmax(lg[0])[row[t]] for t, lg in enumerate(lgs, start=1)]
                              for row, lgs in zip(sub, logits)])
            slips = {"the teacher-forced loss (one pass over the whole window): run the model on "
                     "each prefix separately": evaluate_loss(model, sub),
                     f"the last position is skipped: t runs over 1..T−1 = 1..{L - 1} (range(1, T)), "
                     f"so windows[:, {L - 1}] is predicted from windows[:, :{L - 1}] too": float(nll[:, :-1].mean()),
                     f"the first position is skipped: t runs over 1..T−1 = 1..{L - 1} (range(1, T)), "
                     "so windows[:, 1] is predicted from windows[:, :1] too": float(nll[:, 1:].mean()),
                     "the logits of the prefix's FIRST position ([:, 0]): the next token is predicted by the "
                     "last position of the prefix ([:, -1])": float(first.mean()),
                     "the losses are summed: the generation-style loss is their mean over all positions and "
                     "windows": float(nll.sum()),
                     "each window's losses are summed, then averaged over the windows: take the mean over "
                     "positions too": float(nll.sum(1).mean()),
                     "bits (log base 2): the loss is in nats (natural log, as cross_entropy computes it)":
                     float(nll.mean() / np.log(2)),
                     "the sign: a negative log-likelihood is −log p (positive)": -float(nll.mean()),
                     "the mean probability of the next token, exp(−NLL): the loss is the mean of −log p":
                     float(np.exp(-nll).mean()),
                     "the target is two steps ahead (windows[:, t + 1] from windows[:, :t]): the prefix "
                     "windows[:, :t] predicts the very next token, windows[:, t]": float(np.mean(
                         [[-log_softmax(lgs[t - 1][-1])[row[t + 1]] for t in range(1, L - 1)]
                          for row, lgs in zip(sub, logits)]))}
            # the slips are matched at the check's own tolerance (a float32 forward pass differs from the
            # numpy reference by more than diagnose's 1e-6)
            found = {m: got for m, v in slips.items()
                     if abs(got - float(np.mean(nll))) > 1e-4 + 1e-4 * abs(float(np.mean(nll)))
                     and abs(got - v) <= 1e-4 + 1e-4 * abs(v)}
            if not found:  # no slip explains it: a loss below what any prediction from the past reaches
                if got < entropy_rate - 0.5 and abs(got - float(np.mean(nll))) > 1e-3:
                    fail(f"generation_style_loss on windows[:{rows}, :{sub.shape[1]}]: got {got:.4f}, expected "
                         f"{float(np.mean(nll)):.4f}\n    likely mistake: your loss is below the entropy rate "
                         f"H = {entropy_rate:.3f}, which no prediction from the past can beat: the target is in the "
                         "prefix (predict windows[:, t] from windows[:, :t] only)")
            check_close(f"generation_style_loss on windows[:{rows}, :{sub.shape[1]}]", got, float(np.mean(nll)),
                        rtol=1e-4, atol=1e-4, mistakes=dict(list(found.items())[:1]))
    with r.check("the leak: teacher-forced loss < entropy rate < generation-style loss"):
        gen = float(as_array("generation_style_loss", _call(generation_style_loss, "generation_style_loss",
                                                             model, windows)))
        check_true(teacher < entropy_rate,
                   f"teacher-forced loss {teacher:.3f} is not below the entropy rate {entropy_rate:.3f}: "
                   "train longer, or check that the model has no mask")
        check_true(gen > entropy_rate + 0.5,
                   f"generation-style loss {gen:.3f} is not clearly above the entropy rate {entropy_rate:.3f}")
    if r.failures:
        return r.done("")
    return r.done(f"generation_style_loss is right; leakage shown: teacher-forced {produced(teacher, '.2f')} < H = "
                  f"{entropy_rate:.2f} < generation-style {produced(gen, '.2f')} nats")


_ROLES = {2: "semantic", 16: "discourse", 19: "semantic", 21: "syntactic"}


def _mi_slips(ids: np.ndarray, position: int) -> dict[str, float]:
    """Plug-in estimates of I(word at ``position``; blank) computed with a typical slip (diagnosis only), from
    the same sample ``ids (N, L)`` the student's estimator gets."""
    x, y = ids[:, position - 1], ids[:, -1]
    P = np.zeros((ids.max() + 1,) * 2)
    np.add.at(P, (x, y), 1.0)
    P /= P.sum()
    px, py = P.sum(1, keepdims=True), P.sum(0, keepdims=True)
    nz = P > 0
    terms = P[nz] * np.log(P[nz] / (px @ py)[nz])
    with np.errstate(divide="ignore", invalid="ignore"):
        swapped = float((P[nz] * np.log(P[nz] / (P.sum(0)[:, None] @ P.sum(1)[None, :])[nz])).sum())
    C = P * len(ids)  # the counts
    x2 = ids[:, -2]  # the last context word (word 21), not the blank
    Q = np.zeros_like(P)
    np.add.at(Q, (x, x2), 1.0)
    Q /= Q.sum()
    qz = Q > 0
    not_blank = float((Q[qz] * np.log(Q[qz] / (Q.sum(1, keepdims=True) @ Q.sum(0, keepdims=True))[qz])).sum())
    return {"a mean over the cells of the joint table: the mutual information is the SUM of "
            "p(x,y) log(p(x,y) / (p(x) p(y)))": float(terms.mean()),
            "the joint entropy −Σ p(x,y) log p(x,y): the mutual information divides p(x,y) by p(x) p(y)":
            float(-(P[nz] * np.log(P[nz])).sum()),
            "the two marginals are swapped (p(x) summed over the wrong axis): p(x) = Σ_y p(x,y) is a row sum of the "
            "joint table (axis=1), p(y) a column sum (axis=0)": swapped,
            "the joint table holds counts, not probabilities: divide the counts by the number of sentences "
            "before taking p(x,y), p(x) and p(y)": float((C[nz] * np.log(C[nz] / (C.sum(1, keepdims=True)
                                                                                   @ C.sum(0, keepdims=True))[nz])).sum()),
            "Σ p(x,y) log p(y|x) = −H(blank | word): divide p(x,y) by p(x) p(y), not by p(x) alone":
            float((P[nz] * np.log(P[nz] / np.broadcast_to(px, P.shape)[nz])).sum()),
            "the second-to-last column ids[:, -2] (word 21) as the blank: the blank is the LAST column, ids[:, -1]":
            not_blank}


def check_ex_p1_07(mutual_information, pairs) -> bool:
    """Exercise 7: a plug-in estimator ``mutual_information(ids, position) -> nats`` and three pairs
    ``(context_word, next_word, kind)`` for the controlled running example
    (:class:`nextword.chapter6.running_example.RunningExampleSource`)."""
    from nextword.chapter6 import RunningExampleSource

    r = Report("Exercise 1.07")
    src = RunningExampleSource()
    ids = src.sample(30000, np.random.default_rng(17))
    with r.check("mutual_information matches the exact I(word; blank) within 0.01 nats"):
        for pos in (2, 3, 10, 16, 19, 21):
            est = float(as_array(f"mutual_information(ids, {pos})",
                                 _call(mutual_information, f"mutual_information(ids, {pos})", ids, pos)))
            exact = src.mutual_information(pos)
            if abs(est - exact) <= 0.01:
                continue
            msg = (f"mutual_information(ids, {pos}) on 30000 sampled sentences: got {est:.4f}, "
                   f"expected {exact:.4f} nats (tolerance 0.01)")
            if exact > 0.05 and abs(est * np.log(2) - exact) <= 0.01:
                msg += "\n    likely mistake: a ratio 1/ln 2: you measured bits (log2); use natural logs (nats)"
            elif slip := next((m for m, v in _mi_slips(ids, pos).items()
                               if (np.isinf(est) and np.isinf(v))
                               or (np.isfinite(est) and np.isfinite(v) and abs(est - v) <= 1e-6 * max(1.0, abs(v)))),
                              None):
                msg += f"\n    likely mistake: {slip}"
            elif any(1 <= p <= 21 and abs(src.mutual_information(p) - exact) > 0.02
                     and abs(est - src.mutual_information(p)) <= 0.01 for p in (pos - 1, pos + 1)):
                msg += ("\n    likely mistake: an off-by-one column — position is 1-based, so the word is "
                        "column position - 1 of ids")
            elif est < 0:
                msg += "\n    a mutual information is never negative: check the ratio p(x,y) / (p(x) p(y))"
            fail(msg)
    with r.check("three pairs (context_word, next_word, kind), one of each kind, each justified"):
        pairs = list(pairs)
        check_true(len(pairs) == 3, f"give exactly three pairs, got {len(pairs)}")
        kinds = set()
        for item in pairs:
            if not (isinstance(item, tuple) and len(item) == 3):
                fail(f"each pair must be a tuple (context_word, next_word, kind), got {item!r}")
            ctx, nxt, kind = item
            check_true(kind in ("syntactic", "semantic", "discourse"),
                       f"kind must be 'syntactic', 'semantic' or 'discourse', got {kind!r}")
            slots = [p for p, alts in src.slots.items() if ctx in alts]
            check_true(bool(slots), f"{ctx!r} is not one of the words that vary in the controlled sentence "
                       f"(those are {sorted(w for alts in src.slots.values() for w in alts)})")
            pos = slots[0]
            check_true(src.mutual_information(pos) > 1e-9,
                       f"{ctx!r} (word {pos}) carries no information about the blank: attention to it is not justified")
            possible = {s[-1] for s, _ in src.joint() if s[pos - 1] == ctx}
            check_true(nxt in possible, f"{nxt!r} never follows a sentence with {ctx!r} at word {pos}")
            check_true(_ROLES[pos] == kind, f"the dependency between {ctx!r} and the blank is not {kind}")
            kinds.add(kind)
        check_true(len(kinds) == 3, "use one pair of each kind (syntactic, semantic, discourse)")
    return r.done("the plug-in mutual information matches the exact values, and each pair links an "
                  "informative word to a possible next word with the right kind of dependency")


def check_ex_p1_10(variance_expression, simulate_variance) -> bool:
    """Exercise 10: ``variance_expression(d)`` (a sympy expression in the positive symbol ``sigma``)
    and ``simulate_variance(d, sigma_value, n, rng)`` (a Monte Carlo estimate of Var(q·k))."""
    import sympy as sp

    r = Report("Exercise 1.10")
    sigma = sp.symbols("sigma", positive=True)
    with r.check("variance_expression(d) = Var(q·k) symbolically, d = 1, 2, 3"):
        for d in (1, 2, 3):  # sympy.stats needs ~6 s for d = 3 and ~30 s for d = 5
            expr = _call(variance_expression, f"variance_expression({d})", d)
            check_true(isinstance(expr, sp.Expr), f"variance_expression({d}) must return a sympy expression, "
                       f"got {type(expr).__name__}")
            bad = expr.free_symbols - {sigma}
            check_true(not bad, f"variance_expression({d}) may only contain the symbol sigma (positive=True), "
                       f"got {bad} — a symbol named sigma without positive=True is a different symbol")
            truth = d * sigma ** 4
            if sp.simplify(expr - truth) == 0:
                continue
            known = {d * sigma ** 2: "the variance of one product q_r k_r is E[q²] E[k²] = σ²·σ² = σ⁴, not σ²",
                     sigma ** 4: "that is one product's variance (or that of the scaled score q·k/√d): the d "
                                 "independent products add up",
                     sigma ** 4 / d: "that is the variance after dividing by √d... twice? Var(q·k) itself "
                                     "grows with d",
                     d * sigma ** 8: "d σ⁸: sympy.stats.Normal(name, mean, std) takes the standard deviation — "
                                     "Normal('q0', 0, sigma), not sigma**2",
                     d * sigma ** 6: "d σ⁶: one of q, k got sigma**2 as its standard deviation — "
                                     "sympy.stats.Normal(name, mean, std) takes σ for the query's entries and the "
                                     "key's alike (σ⁴·σ² = σ⁶ per product)",
                     2 * d * sigma ** 4: "2 d σ⁴: that is Var(q·q) — the key needs its own variables, independent "
                                         "of the query's (Var(q_r²) = 2σ⁴)",
                     # after 2 d σ⁴, which equals d² σ⁴ at d = 2: q·q already fails at d = 1, reused names only at d = 2
                     d ** 2 * sigma ** 4: "d² σ⁴: the products are independent, so their variances add "
                                          "(no cross terms) — in sympy.stats two variables with the same name are "
                                          "one variable: name each entry apart (q0, q1, …, k0, k1, …)"}
            likely = next((m for e, m in known.items() if sp.simplify(expr - e) == 0), None)
            fail(f"variance_expression({d}): got {expr}, expected {truth}" + (f"\n    likely mistake: {likely}" if likely else ""))
    with r.check("simulate_variance agrees with d σ⁴ (d = 4, 32, 256; σ = 1.5)"):
        # σ = 1.5 keeps the slips apart: at σ = 0.7, 2σ⁴ ≈ σ² (q·q looked like an unscaled k) and 4σ⁸ ≈ σ⁴
        rng, sig, n, ds = np.random.default_rng(10), 1.5, 20000, (4, 32, 256)
        ests = []
        for d in ds:
            label = f"simulate_variance({d}, {sig}, {n}, rng)"
            try:
                value = as_array(label, _call(simulate_variance, label, d, sig, n, rng))
            except ExerciseCheckError as exc:
                if "Cannot convert expression to float" not in str(exc):
                    raise
                fail(str(exc).removeprefix("✗ ") + "\n    likely mistake: the sympy symbol sigma reached numpy — "
                     "inside simulate_variance use its number argument sigma_value, not the symbol sigma")
            if value.size != 1:
                fail(f"{label} should return one number (a float), got an array of shape {value.shape}"
                     + {n: " — one value per pair: .var() missing, or taken over the wrong axis (axis=1)? Sum over "
                           "the d coordinates of each pair, then take the variance over the n pairs",
                        d: " — one value per coordinate: the variance of each product q_r k_r? Sum over the d "
                           "coordinates of each pair first, then take the variance over the n pairs"}.get(value.size, ""))
            ests.append(float(value.reshape(())))
        tol = 5 * 2 * np.sqrt(2.0 / n)  # relative: 5 generous standard errors of a sample variance

        def fits(model) -> bool:  # the three estimates all match this model's d -> value
            return all(abs(e - model(d)) < tol * abs(model(d)) for d, e in zip(ds, ests))

        slips = (
            (lambda d: sig ** 4, "the same value σ⁴ for every d: that is the variance of one product q_r k_r (sum "
                                 "over the d coordinates first, then take the variance) or of the scaled score "
                                 "q·k/√d"),
            (lambda d: np.sqrt(d) * sig ** 2, "the standard deviation (.std()), not the variance (.var()): "
                                              "its square is near d σ⁴"),
            (lambda d: d * sig ** 2, "d σ² instead of d σ⁴: both q and k need entries of standard deviation σ "
                                     "(only one of them was scaled by σ, or the entries got variance σ)"),
            (lambda d: d * sig ** 8, "d σ⁸: the entries got variance σ⁴ — rng.normal(0, scale) takes the standard "
                                     "deviation σ as scale, not the variance σ² (and a standard normal is scaled by "
                                     "σ, not σ²)"),
            (lambda d: d * sig ** 6, "d σ⁶: one of q, k got entries of variance σ⁴ (scaled by σ², or rng.normal(0, "
                                     "σ²)), the other of variance σ² — both need standard deviation σ"),
            (lambda d: (d - 1) / d * sig ** 4, "(d−1)/d · σ⁴: the variance across the d coordinates of each pair "
                                               "(.var(axis=1)), averaged over the pairs — sum over the d coordinates "
                                               "of each pair first, then take the variance over the n pairs"),
            (lambda d: 2 * d * sig ** 4, "2 d σ⁴: that is Var(q·q) — draw k independently of q (one draw used "
                                         "twice gives Var(Σ_r q_r²) = 2 d σ⁴)"),
        )
        # the sum over the n pairs (axis 0 of an (n, d) array) and the variance over the d coordinates: about
        # n σ⁴ whatever d; judged on d = 256, where 256 sums give a variance within a few percent
        over_pairs = abs(np.log(ests[-1] / (n * sig ** 4))) < np.log(1.5)
        for d, est in zip(ds, ests):
            exact = d * sig ** 4
            if abs(est - exact) >= tol * exact:
                msg = (f"simulate_variance({d}, {sig}, {n}, rng): got {est:.4g}, expected {exact:.4g} "
                       f"± {tol * exact:.2g} (5 standard errors)")
                likely = next((m for model, m in slips if fits(model)), None)
                if likely is None and over_pairs:
                    likely = (f"about n σ⁴ = {n * sig ** 4:.4g} whatever d: the sum ran over the n pairs (axis=0 of "
                              "an (n, d) array) and the variance over the d coordinates — the axes are swapped: sum "
                              "over the d coordinates of each pair (axis=1), then take the variance over the n pairs")
                fail(msg + (f"\n    likely mistake: {likely}" if likely else ""))
        slope = np.polyfit(np.log(ds), np.log(ests), 1)[0]
        check_true(abs(slope - 1) < 0.05,
                   f"the simulated variance should grow linearly in d (log-log slope {slope:.3f}, expected 1)")
    return r.done("Var(q·k) = d σ⁴ symbolically for d = 1, 2, 3, and the simulation agrees and grows linearly in d")


def _measured_flops(kind: str, T: int, d: int) -> tuple[int, int]:
    """Forward and backward matmul FLOPs of one Elman RNN layer or one single-head attention layer."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    g = torch.Generator().manual_seed(0)
    X = torch.randn(T, d, generator=g, dtype=torch.float64, requires_grad=True)
    Ws = [torch.randn(d, d, generator=g, dtype=torch.float64, requires_grad=True) for _ in range(4 if kind == "attention" else 2)]
    with FlopCounterMode(display=False) as fwd:
        if kind == "rnn":
            W_x, W_z = Ws
            U = X @ W_x  # (T, d) input part, all steps at once
            z = torch.tanh(U[0])  # the state z[1] (the statement's z[t])
            outs = [z]
            for t in range(1, T):  # the sequential part
                z = torch.tanh(U[t] + z @ W_z)
                outs.append(z)
            out = torch.stack(outs)
        else:
            W_Q, W_K, W_V, W_O = Ws  # the statement's W^Q, W^K, W^V, W^O
            Q, K, V = X @ W_Q, X @ W_K, X @ W_V
            A = torch.softmax((Q @ K.T / d ** 0.5).masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf")), -1)
            out = (A @ V) @ W_O
    with FlopCounterMode(display=False) as bwd:
        out.sum().backward()
    return fwd.get_total_flops(), bwd.get_total_flops()


def check_ex_p1_11(flop_formulas) -> bool:
    """Exercise 11: ``flop_formulas(T, d) -> {"rnn": (fwd, bwd, steps), "attention": (fwd, bwd, steps)}``.

    ``fwd``/``bwd``: matmul FLOPs (2·n1·n2·n3 per (n1×n2)(n2×n3) product) of one layer's forward and backward pass
    (the RNN's first step starts from z = 0, so it has no z W_z product); ``steps``: the number of
    operations that must run one after another. Compared with torch's FLOP counter and with the
    longest path in the dependency graph (``nextword.chapter6.recurrent``).
    """
    from nextword.chapter6 import attention_graph, rnn_graph, sequential_depth

    r = Report("Exercise 1.11")
    cases = ((5, 4), (12, 8), (7, 16))  # smallest T·d first
    got_all = {}
    with r.check('flop_formulas returns {"rnn": (fwd, bwd, steps), "attention": (fwd, bwd, steps)}'):
        for T, d in cases:
            got = _call(flop_formulas, f"flop_formulas({T}, {d})", T, d)
            if not isinstance(got, dict) or set(got) != {"rnn", "attention"}:
                fail(f'flop_formulas({T}, {d}) must return a dict with keys "rnn" and "attention", got {got!r}')
            for kind in ("rnn", "attention"):
                if not isinstance(got[kind], (tuple, list)) or len(got[kind]) != 3:
                    fail(f'flop_formulas({T}, {d})["{kind}"] must be a triple (fwd, bwd, steps), got {got[kind]!r}')
            got_all[T, d] = got
    if len(got_all) < len(cases):
        return r.done("")
    measured = {(kind, T, d): _measured_flops(kind, T, d) for T, d in cases for kind in ("rnn", "attention")}
    for kind, graph_fn in (("rnn", rnn_graph), ("attention", attention_graph)):
        with r.check(f"{kind}: forward FLOPs equal torch's FLOP counter"):
            for T, d in cases:
                f, fwd = got_all[T, d][kind][0], measured[kind, T, d][0]
                if int(f) != fwd:
                    msg = f"{kind} forward FLOPs for T={T}, d={d}: got {f}, measured {fwd}"
                    if int(f) * 2 == fwd:
                        msg += "\n    likely mistake: you counted multiply-adds; a product (n1×n2)(n2×n3) is 2·n1·n2·n3 FLOPs"
                    elif kind == "attention" and fwd - int(f) == 4 * T * T * d:
                        msg += "\n    likely mistake: the two T×T products (Q Kᵀ and A V) are missing"
                    elif kind == "attention" and fwd - int(f) == 2 * T * T * d:
                        msg += ("\n    likely mistake: one of the two T×T products is missing: the scores Q Kᵀ "
                                "and the weighted sum A V cost 2T²d each")
                    elif kind == "attention" and fwd - int(f) == 2 * T * d * d:
                        msg += "\n    likely mistake: the output projection (T×d)(d×d), 2Td² FLOPs, is missing"
                    elif kind == "rnn" and int(f) - fwd == 2 * d * d:
                        msg += "\n    likely mistake: the first step starts from z = 0, so it has no z W_z product"
                    fail(msg)
        with r.check(f"{kind}: backward FLOPs within 5% of torch's FLOP counter"):
            for T, d in cases:
                b, bwd = got_all[T, d][kind][1], measured[kind, T, d][1]
                if abs(b - bwd) > 0.05 * bwd:
                    msg = f"{kind} backward FLOPs for T={T}, d={d}: got {b}, measured {bwd}"
                    f, fwd = got_all[T, d][kind][0], measured[kind, T, d][0]
                    if abs(b - bwd / 2) <= 0.05 * bwd and int(f) * 2 == fwd:
                        # twice a forward count in multiply-adds: the doubling is right, the unit is not
                        msg += ("\n    likely mistake: you counted multiply-adds, as in the forward count (doubling "
                                "the forward count is right, but in FLOPs: a multiply-add is two FLOPs)")
                    elif abs(b - bwd / 2) <= 0.05 * bwd:
                        msg += ("\n    likely mistake: the backward pass of a product needs two products "
                                "(one gradient per factor), so about twice the forward count")
                    fail(msg)
        with r.check(f"{kind}: sequential steps = the longest dependency chain"):
            for T, d in cases:
                steps, depth = got_all[T, d][kind][2], sequential_depth(graph_fn(T))
                if int(steps) != depth:
                    msg = f"{kind}: sequential steps for T={T}: got {steps}, expected {depth}"
                    if kind == "attention" and int(steps) == T:
                        msg += ("\n    likely mistake: with teacher forcing every position is computed at once "
                                "— the positions do not wait for each other")
                    elif kind == "rnn" and int(steps) == 1:
                        msg += "\n    likely mistake: h_t needs h_(t-1): the RNN's steps form a chain of length T"
                    fail(msg)
    return r.done("forward FLOPs exact, backward within 5% of torch's FLOP counter, sequential steps = "
                  "longest dependency chain, for three (T, d)")
