"""Checker for Part 2 Exercise 04 (nucleus filtering; helper P2b, re-exported by ``part2``).

The expected nucleus comes from :func:`nextword.decoding.top_p_filter`; the checker compares the
kept set and the renormalised probabilities, so any additive shift of the kept logits is accepted.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._common import ExerciseCheckError, Report, call_student, check_close, check_shape, describe, fail, passed  # noqa: F401

__all__ = ["check_ex_p2_04"]


_call = call_student  # shared: a stub, a non-function or a crash becomes a clear failure


def _cases(rng: np.random.Generator) -> list[tuple[np.ndarray, float, str]]:
    cases = [
        (np.log([0.5, 0.3, 0.15, 0.05]), 0.7, "p = 0.7 on (0.5, 0.3, 0.15, 0.05)"),
        (np.log([0.5, 0.3, 0.15, 0.05]), 0.85, "p = 0.85 on (0.5, 0.3, 0.15, 0.05)"),
        (np.log([0.1, 0.6, 0.3]), 0.05, "a p below the top probability (greedy)"),
        # masses that are exact in floating point: the prefix that reaches p exactly is the nucleus
        (np.log([0.5, 0.375, 0.125]), 0.5, "p = 0.5 reached exactly by the top token of (0.5, 0.375, 0.125)"),
        (np.log([0.125, 0.5, 0.375]), 0.875, "p = 0.875 reached exactly by two tokens of (0.125, 0.5, 0.375)"),
        (np.log([0.2, 0.5, 0.3]), 1.0, "p = 1 (keep everything)"),
        # the probabilities add up to just under 1 in floating point: a count of (cumsum < p) + 1 is V + 1
        (np.array([-0.9, -1.9, 1.9, -0.2, 1.4, 0.0]), 1.0,
         "p = 1 on logits whose probabilities add up to just under 1 in floating point (keep at most V tokens)"),
        # and the other way: the top token's probability is 1.0 in floating point, so the cumulative sum reaches 1
        # at the first token and a count of (cumsum < p) + 1 keeps one token, while p = 1 keeps every token
        # (40 tokens, more than any other case, so that it is reported after the other slips' cases)
        (np.concatenate([[0.0], np.linspace(-45.0, -60.0, 39)]), 1.0,
         "p = 1 on logits whose cumulative probability reaches 1 in floating point at the top token "
         "(p = 1 keeps every token)"),
        (np.array([2.0, 1.0, 2.0, 0.0, -1.0]), 0.3, "two tied top tokens"),
        (np.array([3.0, 1.0, 1.0, 1.0, -2.0]), 0.9, "a tie at the edge of the nucleus"),
        (np.array([1000.0, 999.0, 0.0]), 0.6, "large logits (use a stable softmax)"),
    ]
    for k in range(12):
        V = int(rng.integers(3, 40))
        cases.append((rng.normal(0, 2.0, V), float(rng.uniform(0.05, 0.99)), f"random case {k} (V = {V})"))
    return cases


def check_ex_p2_04(top_p_filter: Callable, nucleus_probs: Callable) -> bool:
    """Exercise 04: ``top_p_filter(logits, p) -> (V,)`` and ``nucleus_probs(logits, p) -> (V,)``."""
    from nextword.attention.core import softmax
    from nextword.decoding import top_p_filter as reference

    r = Report("Exercise 2.04")
    cases = _cases(np.random.default_rng(204))
    cases.sort(key=lambda c: len(c[0]))  # the smallest failing case is reported first
    with r.check("top_p_filter keeps exactly the nucleus (ties at its edge included)"):
        for z, p, label in cases:
            expected = reference(z, p)
            keep = np.isfinite(expected)
            got = check_shape(f"top_p_filter for {label}", _call(top_p_filter, f"top_p_filter for {label}", z.copy(), p),
                              z.shape)
            if np.isnan(got).any() or np.isposinf(got).any():
                fail(f"top_p_filter for {label} returned NaN or +inf: {describe(got)}")
            got_keep = np.isfinite(got)
            if not np.array_equal(got_keep, keep):
                n_got, n_exp = int(got_keep.sum()), int(keep.sum())
                msg = (f"top_p_filter for {label} (logits {describe(z, precision=3)}, p = {p:.3g}) keeps positions "
                       f"{np.flatnonzero(got_keep).tolist()}, expected {np.flatnonzero(keep).tolist()}")
                dropped, extra = keep & ~got_keep, got_keep & ~keep
                ascending = np.argsort(z, kind="stable")  # least likely first: the slip's two usual endings
                n_asc = min(int(np.sum(np.cumsum(softmax(z)[ascending]) < p)) + 1, z.size)
                least_likely = np.isin(np.arange(z.size), ascending[:n_asc])
                from_threshold = z >= z[ascending[n_asc - 1]]
                descending = ascending[::-1]  # the slip of summing the logits instead of the probabilities
                n_logits = min(int(np.sum(np.cumsum(z[descending]) < p)) + 1, z.size)
                logit_prefix = np.isin(np.arange(z.size), descending[:n_logits])
                logit_threshold = z >= z[descending[n_logits - 1]]
                reversed_order = np.array_equal(got_keep, least_likely) or np.array_equal(got_keep, from_threshold)
                n_plain = min(int(np.sum(np.cumsum(softmax(z)) < p)) + 1, z.size)  # the slip of not sorting at all
                unsorted = np.array_equal(got_keep, np.arange(z.size) < n_plain)
                unsorted_msg = ("the tokens are not sorted at all (the cumulative sum runs in vocabulary order): "
                                "sort descending, most likely first, np.argsort(-z)")
                logits_summed = np.array_equal(got_keep, logit_prefix) or np.array_equal(got_keep, logit_threshold)
                summed_msg = ("the cumulative sum runs over the logits: accumulate the probabilities "
                              "softmax(logits), sorted most likely first, until they reach p")
                shift = float(got[keep][0] - z[keep][0]) if keep.any() else 0.0  # a shift of the kept logits is fine
                finite_fill = (got_keep.all() and keep.any() and not keep.all() and np.allclose(got[keep] - z[keep], shift)
                               and not np.allclose(got[~keep] - z[~keep], shift))  # the others changed, yet finite
                if finite_fill:  # the right nucleus, but the others set to 0 or -1e9: every entry stays finite
                    msg += ("\n    likely mistake: the tokens outside the nucleus were set to a finite value "
                            f"({describe(got[~keep], precision=3)}), not to -inf: set them to -np.inf, so that "
                            "a softmax gives them probability exactly 0")
                elif p >= 1 and dropped.any() and not extra.any() and float(np.sum(softmax(z)[got_keep])) >= p:
                    # the kept tokens' mass is 1 in floating point: round-off, not a missing crossing token
                    msg += ("\n    likely mistake: at p = 1 every token is kept (plain sampling), but the cumulative "
                            "sum reached 1 in floating point before the last token, so the tokens after it were "
                            "dropped: keep all V tokens when p = 1")
                elif logits_summed and reversed_order:  # e.g. all logits < 0: both slips keep every token
                    msg += ("\n    likely mistake: the tokens are sorted least likely first (np.argsort(z)), or "
                            f"{summed_msg} (this case cannot tell the two apart)")
                elif logits_summed:
                    msg += f"\n    likely mistake: {summed_msg}"
                elif dropped.any() and not extra.any() and got_keep.any() and np.all(z[dropped] == z[got_keep].min()):
                    # what is missing is as likely as the least likely token kept: a tie, not the crossing token
                    msg += "\n    likely mistake: ties at the edge of the nucleus: keep every token as likely as the last kept one"
                elif dropped.any() and not extra.any() and float(softmax(z)[got_keep].sum()) < p:
                    msg += ("\n    likely mistake: the nucleus is the shortest prefix whose mass reaches p — include "
                            "the token that crosses p")
                elif n_got == n_exp + 1:
                    msg += "\n    likely mistake: one token too many — stop as soon as the cumulative mass is >= p"
                elif reversed_order and unsorted:
                    msg += ("\n    likely mistake: the tokens are sorted least likely first (np.argsort(z)), or "
                            f"{unsorted_msg} (this case cannot tell the two apart)")
                elif reversed_order:
                    msg += ("\n    likely mistake: the tokens are sorted least likely first (np.argsort(z)): the "
                            "nucleus gathers the MOST likely tokens: sort descending, np.argsort(-z)")
                elif unsorted:
                    msg += f"\n    likely mistake: {unsorted_msg}"
                elif n_got == n_exp:
                    msg += "\n    likely mistake: the right number of tokens but not the most likely ones (sort descending)"
                fail(msg)
            check_close(f"renormalised probabilities of top_p_filter for {label}", softmax(got), softmax(expected),
                        rtol=1e-9, atol=1e-12)
    with r.check("nucleus_probs renormalises the nucleus to sum 1"):
        for z, p, label in cases:
            expected = softmax(reference(z, p))
            probs = check_shape(f"nucleus_probs for {label}", _call(nucleus_probs, f"nucleus_probs for {label}",
                                                                    z.copy(), p), z.shape)
            if abs(float(np.sum(probs)) - 1.0) > 1e-9:
                msg = f"nucleus_probs for {label} sums to {float(np.sum(probs)):.6g}, not 1"
                if np.allclose(probs, np.where(expected > 0, softmax(z), 0.0), atol=1e-12):
                    msg += "\n    likely mistake: the kept probabilities were not renormalised"
                fail(msg)
            check_close(f"nucleus_probs for {label}", probs, expected, rtol=1e-9, atol=1e-12)
    return r.done("top_p_filter keeps exactly the nucleus (ties and p = 1 included) and nucleus_probs renormalises it")
