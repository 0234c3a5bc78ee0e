"""Tests for nextword.decoding.filters: temperature, top-k, top-p (formulation paper §6.3).

Expected values are computed independently (sorting, brute force) and, when
``transformers`` is importable, compared with the Hugging Face logits warpers.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from nextword.decoding import (
    apply_temperature,
    filter_logits,
    log_softmax,
    top_k_filter,
    top_p_filter,
)

finite_logits = arrays(
    np.float64,
    st.integers(1, 12),
    elements=st.floats(-30, 30, allow_nan=False, allow_infinity=False),
)


# ------------------------------------------------------------------------------ filters
@settings(max_examples=60, deadline=None)
@given(z=finite_logits, t=st.floats(0.05, 20))
def test_temperature_is_scaling_and_keeps_argmax(z, t):
    out = apply_temperature(z, t)
    np.testing.assert_allclose(out * t, z, rtol=1e-12, atol=1e-12)
    assert np.argmax(out) == np.argmax(z)


@settings(max_examples=80, deadline=None)
@given(z=finite_logits, k=st.integers(1, 15))
def test_top_k_keeps_the_k_largest(z, k):
    out = top_k_filter(z, k)
    kept = np.isfinite(out)
    np.testing.assert_array_equal(out[kept], z[kept])
    kth = np.sort(z)[::-1][min(k, len(z)) - 1]
    # brute force: kept <=> at least as large as the k-th largest value (ties kept)
    np.testing.assert_array_equal(kept, z >= kth)
    if len(np.unique(z)) == len(z):
        assert kept.sum() == min(k, len(z))


@settings(max_examples=80, deadline=None)
@given(z=finite_logits, p=st.floats(0.01, 1.0))
def test_top_p_is_smallest_set_reaching_p(z, p):
    out = top_p_filter(z, p)
    kept = np.isfinite(out)
    np.testing.assert_array_equal(out[kept], z[kept])
    probs = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
    # every kept token is at least as likely as every removed token
    if (~kept).any():
        assert probs[kept].min() >= probs[~kept].max()
        # mass reaches p (up to rounding) ...
        assert probs[kept].sum() >= p - 1e-9
        # ... and no smaller prefix of the ranking does, up to ties at the boundary
        boundary = probs[kept].min()
        strictly_above = probs > boundary
        assert probs[strictly_above].sum() < p + 1e-9
    # nested: a smaller p keeps a subset of the tokens
    assert not (np.isfinite(top_p_filter(z, p / 2)) & ~kept).any()


def test_top_p_ties_kept_and_p_one_keeps_all():
    z = np.log([0.4, 0.2, 0.2, 0.2])
    out = top_p_filter(z, 0.5)  # 0.4 < 0.5: the three tied 0.2 tokens are all kept
    assert np.isfinite(out).all()
    out = top_p_filter(np.log([0.4, 0.3, 0.2, 0.1]), 0.5)
    np.testing.assert_array_equal(np.isfinite(out), [True, True, False, False])
    z = np.array([0.0, -50.0, -800.0])
    assert np.isfinite(top_p_filter(z, 1.0)).all()


def test_filters_are_batched_and_do_not_modify_input():
    rng = np.random.default_rng(0)
    z = rng.standard_normal((3, 4, 9))
    z0 = z.copy()
    for f in (lambda x: top_k_filter(x, 3), lambda x: top_p_filter(x, 0.6), lambda x: apply_temperature(x, 2.0)):
        out = f(z)
        assert out.shape == z.shape
        for idx in np.ndindex(3, 4):
            np.testing.assert_array_equal(out[idx], f(z[idx]))
    np.testing.assert_array_equal(z, z0)


def test_log_softmax_stable_with_inf():
    out = log_softmax(np.array([1000.0, 1000.0, -np.inf]))
    np.testing.assert_allclose(out[:2], np.log(0.5))
    assert out[2] == -np.inf


@pytest.mark.parametrize(
    "call, exc, match",
    [
        (lambda: apply_temperature(np.zeros(3), 0.0), ValueError, "temperature"),
        (lambda: apply_temperature(np.zeros(3), -1.0), ValueError, "temperature"),
        (lambda: apply_temperature(np.zeros(3), float("nan")), ValueError, "temperature"),
        (lambda: top_k_filter(np.zeros(3), 0), ValueError, "top_k"),
        (lambda: top_k_filter(np.zeros(3), 1.5), TypeError, "top_k"),
        (lambda: top_p_filter(np.zeros(3), 0.0), ValueError, "top_p"),
        (lambda: top_p_filter(np.zeros(3), 1.2), ValueError, "top_p"),
        (lambda: top_p_filter(np.array([np.nan, 0.0]), 0.5), ValueError, "NaN"),
        (lambda: top_k_filter(np.array([np.inf, 0.0]), 1), ValueError, r"\+inf"),
        (lambda: top_k_filter(np.array([-np.inf, -np.inf]), 1), ValueError, "every entry"),
        (lambda: top_k_filter(np.zeros(0), 1), ValueError, "V >= 1"),
    ],
)
def test_filter_validation(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


# ------------------------------------------------------- Hugging Face logits warpers
def test_same_semantics_as_hugging_face_warpers():
    torch = pytest.importorskip("torch")
    gen = pytest.importorskip("transformers.generation.logits_process")
    rng = np.random.default_rng(2024)
    ids = torch.zeros((1, 1), dtype=torch.long)
    for _ in range(200):
        V = int(rng.integers(2, 40))
        z = rng.standard_normal(V) * rng.uniform(0.1, 5)
        t = float(rng.uniform(0.1, 3))
        k = int(rng.integers(1, V + 3))
        p = float(rng.uniform(0.05, 0.99))
        zt = torch.from_numpy(z)[None, :]  # (1, V) float64
        hf_t = gen.TemperatureLogitsWarper(t)(ids, zt.clone())[0].numpy()
        np.testing.assert_allclose(apply_temperature(z, t), hf_t, rtol=1e-12)
        hf_k = gen.TopKLogitsWarper(k)(ids, zt.clone())[0].numpy()
        np.testing.assert_array_equal(top_k_filter(z, k), hf_k)
        hf_p = gen.TopPLogitsWarper(p)(ids, zt.clone())[0].numpy()
        np.testing.assert_array_equal(top_p_filter(z, p), hf_p)
        # the full chain, in generate()'s order
        chain = gen.TopPLogitsWarper(p)(
            ids, gen.TopKLogitsWarper(k)(ids, gen.TemperatureLogitsWarper(t)(ids, zt.clone()))
        )
        np.testing.assert_allclose(filter_logits(z, temperature=t, top_k=k, top_p=p), chain[0].numpy(), rtol=1e-12)
