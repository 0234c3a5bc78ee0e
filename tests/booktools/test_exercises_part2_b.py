"""Checker of Part 2 Exercise 04 (nucleus filtering): the right answer passes, wrong ones raise."""

from __future__ import annotations

import re

import numpy as np
import pytest

from nextword.attention import softmax
from nextword.decoding import top_p_filter
from nextword.booktools.exercises.checks import ExerciseCheckError, check_ex_p2_04


def _probs(f):
    return lambda z, p: softmax(f(z, p))


def _off_by_one(z, p):  # stops *before* the mass reaches p (forgets the token that crosses it)
    probs = softmax(z)
    order = np.argsort(-z, kind="stable")
    n = max(int(np.sum(np.cumsum(probs[order]) < p)), 1)
    return np.where(z >= z[order[n - 1]], z, -np.inf)


def _no_ties(z, p):  # cuts exactly n tokens by position, dropping tokens tied with the last kept one
    probs = softmax(z)
    order = np.argsort(-z, kind="stable")
    n = min(int(np.sum(np.cumsum(probs[order]) < p)) + 1, z.size)
    out = np.full_like(z, -np.inf)
    out[order[:n]] = z[order[:n]]
    return out


def _one_past_exact_p(z, p):  # cum <= p: a prefix that reaches p exactly gets one more token (readex2: passed)
    probs = softmax(z)
    order = np.argsort(-z, kind="stable")
    n = min(int(np.sum(np.cumsum(probs[order]) <= p)) + 1, z.size)
    return np.where(z >= z[order[n - 1]], z, -np.inf)


def _least_likely(z, p):  # ranks in the wrong direction
    return np.where(np.isfinite(top_p_filter(-z, p)), z, -np.inf)


def test_right_answer_passes():
    assert check_ex_p2_04(top_p_filter, _probs(top_p_filter))
    shifted = lambda z, p: top_p_filter(z, p) + 3.0  # noqa: E731  (a shift of the kept logits is fine)
    assert check_ex_p2_04(shifted, _probs(top_p_filter))


@pytest.mark.parametrize("wrong", [_off_by_one, _no_ties, _least_likely, _one_past_exact_p])
def test_wrong_filters_fail(wrong):
    with pytest.raises(ExerciseCheckError):
        check_ex_p2_04(wrong, _probs(top_p_filter))


@pytest.mark.parametrize(
    "wrong, named",
    [
        (_off_by_one, "include the token that crosses p"),
        (_no_ties, "ties at the edge of the nucleus"),
        (_least_likely, "sort descending|one token too many|crosses p|ties"),
        (_one_past_exact_p, "one token too many"),
    ],
)
def test_wrong_filters_get_their_own_diagnosis(wrong, named):
    """Each mistake is named as itself: dropping a tied token is not reported as dropping the crossing token."""
    with pytest.raises(ExerciseCheckError) as err:
        check_ex_p2_04(wrong, _probs(top_p_filter))
    first = str(err.value).split("✗ nucleus_probs")[0]
    assert re.search(f"likely mistake: .*({named})", first), first
    if wrong is _no_ties:
        assert "crosses p" not in first


def test_wrong_probabilities_fail():
    with pytest.raises(ExerciseCheckError, match="sums to"):  # forgets to renormalise
        check_ex_p2_04(top_p_filter, lambda z, p: np.where(np.isfinite(top_p_filter(z, p)), softmax(z), 0.0))
    with pytest.raises(ExerciseCheckError):  # no filtering at all
        check_ex_p2_04(top_p_filter, lambda z, p: softmax(z))


def test_stub_and_bad_returns():
    def stub(z, p):
        raise NotImplementedError("stub")

    with pytest.raises(ExerciseCheckError, match="NotImplementedError"):
        check_ex_p2_04(stub, _probs(top_p_filter))
    with pytest.raises(ExerciseCheckError, match="shape"):
        check_ex_p2_04(lambda z, p: top_p_filter(z, p)[:-1], _probs(top_p_filter))
    with pytest.raises(ExerciseCheckError, match="NaN"):
        check_ex_p2_04(lambda z, p: np.full_like(z, np.nan), _probs(top_p_filter))


def test_sorted_least_likely_first_is_named():
    """leftex: np.argsort(z) for np.argsort(-z) (least likely first) failed with no diagnosis, whether the filter
    then keeps the first tokens of that order or every logit above the last of them."""

    def ascending(z, p, *, by_threshold):
        probs = softmax(z)
        order = np.argsort(z, kind="stable")
        n = min(int(np.sum(np.cumsum(probs[order]) < p)) + 1, z.size)
        if by_threshold:
            return np.where(z >= z[order[n - 1]], z, -np.inf)
        out = np.full_like(z, -np.inf)
        out[order[:n]] = z[order[:n]]
        return out

    for by_threshold in (False, True):
        with pytest.raises(ExerciseCheckError, match="sorted least likely first"):
            check_ex_p2_04(lambda z, p: ascending(z, p, by_threshold=by_threshold), _probs(top_p_filter))


def test_cumulative_sum_of_logits_is_named():
    """leftex left: a cumulative sum of the sorted logits (not of the probabilities) failed with no diagnosis."""

    def logits_cumsum(z, p):
        order = np.argsort(-z, kind="stable")
        n = min(int(np.sum(np.cumsum(z[order]) < p)) + 1, z.size)
        out = np.full_like(z, -np.inf)
        out[order[:n]] = z[order[:n]]
        return out

    with pytest.raises(ExerciseCheckError, match="the cumulative sum runs over the logits"):
        check_ex_p2_04(logits_cumsum, _probs(logits_cumsum))


def test_no_sort_at_all_is_named():
    """revex: the cumulative sum in vocabulary order (no sort) was named 'sorted least likely first' alone; on the
    first failing case (index 0 is the least likely) both slips keep the same tokens, so both are named."""

    def unsorted(z, p):
        n = min(int(np.sum(np.cumsum(np.exp(z - z.max()) / np.exp(z - z.max()).sum()) < p)) + 1, z.size)
        out = np.full_like(z, -np.inf)
        out[:n] = z[:n]
        return out

    with pytest.raises(ExerciseCheckError, match=r"not sorted at all"):
        check_ex_p2_04(unsorted, _probs(unsorted))


@pytest.mark.parametrize("fill", [0.0, -1e9])
def test_finite_fill_is_named(fill):
    """r12c: the right nucleus with the other logits set to 0 (or -1e9) instead of -inf was diagnosed as sorting
    least likely first or summing logits; it is named as what it is."""

    def finite(z, p):
        kept = top_p_filter(z, p)
        return np.where(np.isfinite(kept), kept, fill)

    with pytest.raises(ExerciseCheckError) as err:
        check_ex_p2_04(finite, _probs(top_p_filter))
    first = str(err.value).split("✗ nucleus_probs")[0]
    assert "set to a finite value" in first and "sorted least likely first" not in first, first


def test_p_equal_1_with_round_off_is_checked():
    """r12c: a filter that counts (cumsum < p) + 1 without capping it at V crashes at p = 1 whenever round-off leaves
    the cumulative sum just under 1; the checker's p = 1 case had an exact sum and passed it."""

    def uncapped(z, p):
        probs = softmax(z)
        order = np.argsort(-z, kind="stable")
        n = int(np.sum(np.cumsum(probs[order]) < p)) + 1
        return np.where(z >= z[order[n - 1]], z, -np.inf)

    with pytest.raises(ExerciseCheckError, match="keep at most V tokens"):
        check_ex_p2_04(uncapped, _probs(top_p_filter))


def test_p_equal_1_keeps_every_token_despite_round_off():
    """v12c: the other direction of round-off at p = 1: when the top token's probability is 1.0 in floating point,
    a count of (cumsum < p) + 1 capped at V keeps one token, not every token (plain sampling); the checker had no
    such case and passed it."""

    def capped_only(z, p):
        probs = softmax(z)
        order = np.argsort(-z, kind="stable")
        n = min(int(np.sum(np.cumsum(probs[order]) < p)) + 1, z.size)
        return np.where(z >= z[order[n - 1]], z, -np.inf)

    with pytest.raises(ExerciseCheckError, match="p = 1 keeps every token") as err:
        check_ex_p2_04(capped_only, _probs(top_p_filter))
    assert "reached 1 in floating point before the last token" in str(err.value), str(err.value)
