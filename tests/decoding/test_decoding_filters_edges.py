"""Edges of the decoding filters (issue #19 item 5, issue #22): top-p at the boundary,
``min_tokens_to_keep``, dtype, and temperatures near the float limits — against an independent
numpy re-implementation of the Hugging Face ``transformers`` logits warpers (``transformers`` is
not a dependency; the reference below follows ``TopKLogitsWarper`` / ``TopPLogitsWarper`` line by
line: sort ascending, ``cumsum(softmax) <= 1 - top_p`` removed, the last ``min_tokens_to_keep``
never removed; top-k removes ``scores < topk(scores, max(top_k, min_tokens_to_keep))[-1]``).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nextword.decoding import greedy, sample
from nextword.decoding.filters import apply_temperature, filter_logits, log_softmax, top_k_filter, top_p_filter


def hf_top_p(scores: np.ndarray, top_p: float, min_tokens_to_keep: int = 1) -> np.ndarray:
    order = np.argsort(scores, axis=-1, kind="stable")  # ascending
    sorted_logits = np.take_along_axis(scores, order, axis=-1)
    e = np.exp(sorted_logits - sorted_logits.max(axis=-1, keepdims=True))
    cumulative = np.cumsum(e / e.sum(axis=-1, keepdims=True), axis=-1)
    remove_sorted = cumulative <= (1 - top_p)
    remove_sorted[..., -min_tokens_to_keep:] = False
    remove = np.zeros_like(remove_sorted)
    np.put_along_axis(remove, order, remove_sorted, axis=-1)
    return np.where(remove, -np.inf, scores)


def hf_top_k(scores: np.ndarray, top_k: int, min_tokens_to_keep: int = 1) -> np.ndarray:
    k = min(max(top_k, min_tokens_to_keep), scores.shape[-1])
    kth = np.sort(scores, axis=-1)[..., -k][..., None]
    return np.where(scores < kth, -np.inf, scores)


@st.composite
def distinct_logits(draw):
    rows, V = draw(st.integers(1, 3)), draw(st.integers(1, 12))
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    return rng.standard_normal((rows, V)) * draw(st.sampled_from([0.5, 2.0, 8.0]))  # ties have prob. 0


@settings(max_examples=80, deadline=None)
@given(z=distinct_logits(), p=st.floats(0.05, 0.99), keep=st.integers(1, 4), k=st.integers(1, 14))
def test_filters_match_the_transformers_warpers(z, p, keep, k):
    # skip draws where the cumulative mass sits within round-off of the boundary: there the
    # reference's "<= 1 - p" is decided by the last bit (see the boundary test below)
    probs = np.sort(np.exp(log_softmax(z)), axis=-1)[..., ::-1]
    cum = np.cumsum(probs, axis=-1)
    if np.min(np.abs(cum - p)) < 1e-9:
        return
    np.testing.assert_array_equal(top_p_filter(z, p, min_tokens_to_keep=keep), hf_top_p(z, p, keep))
    np.testing.assert_array_equal(filter_logits(z, top_k=k, min_tokens_to_keep=keep), hf_top_k(z, k, keep))
    both = filter_logits(z, temperature=0.7, top_k=k, top_p=p, min_tokens_to_keep=keep)
    ref = hf_top_p(hf_top_k(z / 0.7, k, keep), p, keep)
    np.testing.assert_array_equal(np.isfinite(both), np.isfinite(ref))
    np.testing.assert_allclose(both[np.isfinite(both)], ref[np.isfinite(ref)], rtol=1e-15)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_top_p_boundary_holds_up_to_round_off(dtype):
    """'Smallest set with mass >= p' when the kept mass equals p in decimal (issue #19, item 5)."""
    cases = [
        ([0.7, 0.2, 0.1], 0.7, 1),
        ([0.7, 0.2, 0.1], 0.9, 2),
        ([0.1, 0.2, 0.7], 0.9, 2),
        ([0.3, 0.3, 0.2, 0.1, 0.1], 0.8, 3),
        ([0.6, 0.3, 0.1], 0.9, 2),
        ([0.5, 0.25, 0.25], 0.5, 1),
    ]
    for probs, p, n in cases:
        out = top_p_filter(np.log(probs).astype(dtype), p)
        assert out.dtype == dtype
        assert np.isfinite(out).sum() == n, (probs, p)
    # just above the boundary (beyond round-off) one more token is needed
    assert np.isfinite(top_p_filter(np.log([0.7, 0.2, 0.1]), 0.7 + 1e-9)).sum() == 2
    # min_tokens_to_keep
    assert np.isfinite(top_p_filter(np.log([0.7, 0.2, 0.1]), 0.5, min_tokens_to_keep=2)).sum() == 2
    with pytest.raises(ValueError, match="min_tokens_to_keep"):
        top_p_filter(np.zeros(3), 0.5, min_tokens_to_keep=0)


def test_dtype_follows_the_input():
    z32 = np.array([[1.0, 2.0, 3.0]], np.float32)
    for f in (
        lambda z: apply_temperature(z, 0.5),
        lambda z: top_k_filter(z, 2),
        lambda z: top_p_filter(z, 0.5),
        lambda z: filter_logits(z, temperature=2.0, top_k=2, top_p=0.9),
        log_softmax,
    ):
        assert f(z32).dtype == np.float32
        assert f(z32.astype(np.float64)).dtype == np.float64
        assert f([[1, 2, 3]]).dtype == np.float64
    with pytest.raises(TypeError, match="logits must be a real numeric array"):
        top_k_filter(np.array(["a", "b"]), 1)


@pytest.mark.parametrize("t", [1e-308, 1e-310, 5e-324])
def test_tiny_temperatures_give_the_argmax_not_inf(t):
    out = apply_temperature([1.0, 2.0], t)
    assert not np.isnan(out).any() and not np.isposinf(out).any()
    assert out[1] == 0.0 and out[0] < 0
    out = apply_temperature(np.array([[-5.0, -7.0], [1.0, 1.0]]), t)
    assert np.array_equal(out[0] == 0.0, [True, False]) and out[1, 0] == out[1, 1] >= 0
    z32 = apply_temperature(np.array([1.0, 3e4], np.float32), 1e-35)  # float32 overflow
    assert z32.dtype == np.float32 and z32[1] == 0 and z32[0] == -np.inf
    # sampling at a tiny temperature is greedy (it used to return the last id)
    logits = np.array([0.1, 3.0, 0.2, -1.0])
    model = lambda prefix: logits  # noqa: E731
    drawn = sample(model, [0], 5, temperature=t, rng=np.random.default_rng(0))
    assert drawn == greedy(model, [0], 5)


def test_sample_passes_min_tokens_to_keep():
    logits = np.log([0.9, 0.06, 0.04])
    model = lambda prefix: logits  # noqa: E731
    draws = {sample(model, [], 1, top_p=0.5, rng=np.random.default_rng(s))[0] for s in range(40)}
    assert draws == {0}  # the nucleus is the top token alone
    draws = {sample(model, [], 1, top_p=0.5, min_tokens_to_keep=2, rng=np.random.default_rng(s))[0] for s in range(200)}
    assert draws == {0, 1}  # two tokens kept, never the third
    with pytest.raises(ValueError, match="min_tokens_to_keep"):
        sample(model, [], 1, min_tokens_to_keep=0, rng=np.random.default_rng(0))


def test_token_log_probs_refuses_rows_without_a_distribution():
    from nextword.evaluation import token_log_probs

    with pytest.raises(ValueError, match="every entry is -inf"):
        token_log_probs(np.array([[0.0, 1.0], [-np.inf, -np.inf]]), np.array([0, 1]))
    with pytest.raises(ValueError, match="V >= 1"):
        token_log_probs(np.zeros((0, 0)), np.zeros(0, np.int64))
    np.testing.assert_allclose(token_log_probs(np.array([[0.0, -np.inf]]), np.array([0])), [0.0])
