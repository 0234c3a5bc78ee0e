"""Tests for nextword.decoding.ngram: counting, smoothing, normalisation, sequence probabilities."""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nextword.decoding import NGramLM, random_table_model, table_model


def brute_force_probs(seqs, V, order, k, prefix):
    """Add-k estimate by literally counting (context, next) pairs with a Counter."""
    ctx_len = order - 1
    ctx = tuple(prefix[len(prefix) - ctx_len :]) if ctx_len else ()
    pairs = Counter()
    for s in seqs:
        for m in range(len(s)):
            c = tuple(s[max(0, m - ctx_len) : m]) if ctx_len else ()
            pairs[(c, s[m])] += 1
    counts = np.array([pairs[(ctx, v)] for v in range(V)], dtype=float)
    if counts.sum() == 0:
        return np.full(V, 1.0 / V)
    return (counts + k) / (counts.sum() + k * V)


@settings(max_examples=40, deadline=None)
@given(
    V=st.integers(1, 4),
    order=st.integers(1, 4),
    k=st.sampled_from([0.0, 0.5, 1.0]),
    data=st.data(),
)
def test_fit_matches_brute_force_counting(V, order, k, data):
    seqs = data.draw(st.lists(st.lists(st.integers(0, V - 1), min_size=0, max_size=12), min_size=1, max_size=4))
    lm = NGramLM(V, order, k=k).fit(seqs)
    prefixes = [[]] + [list(p) for L in range(1, order + 1) for p in itertools.product(range(V), repeat=L)][:30]
    for prefix in prefixes:
        expected = brute_force_probs(seqs, V, order, k, prefix)
        got = lm.next_probs(prefix)
        np.testing.assert_allclose(got, expected, atol=1e-12)


def test_fit_accumulates_and_accepts_arrays():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 5, size=(3, 40))
    b = rng.integers(0, 5, size=50)
    lm1 = NGramLM(5, 3).fit(a).fit(b)
    lm2 = NGramLM(5, 3).fit([*a, b])
    for prefix in ([], [1], [2, 3], [4, 4, 0]):
        np.testing.assert_array_equal(lm1.next_logits(prefix), lm2.next_logits(prefix))
        np.testing.assert_allclose(lm1.next_probs(prefix).sum(), 1.0)


def test_counts_view_and_unseen_context_uniform():
    lm = NGramLM(3, 2, k=0.0).fit([[0, 1, 0, 1, 2]])
    np.testing.assert_array_equal(lm.counts([0]), [0, 2, 0])
    np.testing.assert_array_equal(lm.counts([1]), [1, 0, 1])
    np.testing.assert_allclose(lm.next_probs([2]), np.full(3, 1 / 3))  # never seen as context
    assert lm.next_logits([0])[0] == -np.inf  # k = 0: MLE keeps zeros


def test_log_prob_is_chain_rule_and_distribution_sums_to_one():
    rng = np.random.default_rng(1)
    lm = random_table_model(3, 3, rng, temperature=0.7)
    # The model is a distribution over sequences: sum over all length-4 sequences is 1 (Eq. 3.3).
    total = sum(np.exp(lm.log_prob(s)) for s in itertools.product(range(3), repeat=4))
    np.testing.assert_allclose(total, 1.0, atol=1e-12)
    # conditional version sums to 1 as well
    total_c = sum(np.exp(lm.log_prob([2, 1, *s], start=2)) for s in itertools.product(range(3), repeat=3))
    np.testing.assert_allclose(total_c, 1.0, atol=1e-12)


def test_random_table_model_covers_every_context_and_temperature_sharpens():
    rng = np.random.default_rng(2)
    lm = random_table_model(4, 3, rng)
    assert len(lm.contexts) == 1 + 4 + 16
    sharp = random_table_model(4, 3, np.random.default_rng(2), temperature=0.1)
    for ctx in lm.contexts:
        p, q = lm.next_probs(list(ctx)), sharp.next_probs(list(ctx))
        assert np.argmax(p) == np.argmax(q)  # same draws, scaled
        assert q.max() >= p.max()
        ent = lambda x: -np.sum(x * np.log(x))  # noqa: E731
        assert ent(q) <= ent(p)


def test_sample_frequencies_match_model():
    rng = np.random.default_rng(3)
    lm = random_table_model(3, 2, rng)
    N = 4000
    draw_rng = np.random.default_rng(4)
    firsts = Counter(lm.sample(1, draw_rng)[0] for _ in range(N))
    p = lm.next_probs([])
    for v in range(3):
        # 5 binomial standard deviations
        assert abs(firsts[v] / N - p[v]) <= 5 * np.sqrt(p[v] * (1 - p[v]) / N)


def test_table_model_and_mapping():
    lm = table_model(3, 2, {(): np.log([0.5, 0.4, 0.1]), (1,): np.log([0.05, 0.9, 0.05])})
    np.testing.assert_allclose(lm.next_probs([]), [0.5, 0.4, 0.1])
    np.testing.assert_allclose(lm.next_probs([2, 1]), [0.05, 0.9, 0.05])
    np.testing.assert_allclose(lm.next_probs([0]), np.full(3, 1 / 3))


@pytest.mark.parametrize(
    "kwargs, exc",
    [
        (dict(vocab_size=0, order=2), ValueError),
        (dict(vocab_size=3, order=0), ValueError),
        (dict(vocab_size=3, order=2, k=-1.0), ValueError),
    ],
)
def test_constructor_validation(kwargs, exc):
    with pytest.raises(exc):
        NGramLM(**kwargs)


def test_input_validation():
    lm = NGramLM(3, 2)
    with pytest.raises(ValueError, match="outside"):
        lm.fit([[0, 3]])
    with pytest.raises(TypeError, match="integer"):
        lm.fit([np.array([0.5, 1.0])])
    with pytest.raises(ValueError, match="outside"):
        lm.next_logits([7])
    with pytest.raises(ValueError, match="shape"):
        lm.set_logits([0], np.zeros(4))
    with pytest.raises(ValueError, match="context has length"):
        lm.set_logits([0, 1], np.zeros(3))
    with pytest.raises(TypeError, match="Generator"):
        random_table_model(3, 2, rng="0")
    # an int seed is what np.random.default_rng accepts: the same model as the Generator
    a, b = random_table_model(3, 2, rng=0), random_table_model(3, 2, np.random.default_rng(0))
    assert np.array_equal(a.next_logits([1]), b.next_logits([1]))
    with pytest.raises(ValueError, match="temperature"):
        random_table_model(3, 2, np.random.default_rng(0), temperature=0.0)


def test_huge_vocabulary_uses_row_unique_path():
    # V^n >= 2^62: n-grams cannot be coded as one int64, the row-wise np.unique path is used
    V = 70_000
    seq = [5, 69_999, 5, 69_999, 5, 7]
    lm = NGramLM(V, 4, k=0.0).fit([seq])
    p = lm.next_probs([5, 69_999, 5])
    assert p[69_999] == pytest.approx(0.5) and p[7] == pytest.approx(0.5)
    np.testing.assert_allclose(lm.next_probs([5, 69_999, 5]), brute_force_probs([seq], V, 4, 0.0, [5, 69_999, 5]))
