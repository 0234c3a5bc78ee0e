"""Norms on the edges (issues #19 item 7 and #22): differential tests against torch over random
shapes, dtypes and eps (torch's own defaults included), inputs near the float limits, and bad eps."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nextword.decoder.layers import TransformerBlock, layer_norm, rms_norm

torch = pytest.importorskip("torch")
F = torch.nn.functional


@st.composite
def norm_case(draw):
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    dtype = draw(st.sampled_from([np.float64, np.float32]))
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    x = (rng.standard_normal(shape) * 10.0 ** draw(st.integers(-3, 3))).astype(dtype)
    w = rng.standard_normal(shape[-1]).astype(dtype) if draw(st.booleans()) else None
    b = rng.standard_normal(shape[-1]).astype(dtype) if draw(st.booleans()) else None
    eps = draw(st.sampled_from([1e-5, 1e-6, 1e-2, 0.0]))
    return x, w, b, eps


def _tol(dtype):
    return dict(rtol=1e-10, atol=1e-10) if dtype == np.float64 else dict(rtol=1e-4, atol=1e-4)


@settings(max_examples=60, deadline=None)
@given(norm_case())
def test_norms_match_torch(case):
    x, w, b, eps = case
    tw = None if w is None else torch.from_numpy(w)
    tb = None if b is None else torch.from_numpy(b)
    d = x.shape[-1]
    ref_ln = F.layer_norm(torch.from_numpy(x), (d,), tw, tb, eps=eps).numpy()
    ours = layer_norm(x, w, b, eps=eps)
    assert ours.dtype == x.dtype
    rows = np.isfinite(ref_ln).all(-1)  # torch: NaN for a constant row with eps = 0; ours: 0 (+ bias)
    np.testing.assert_allclose(ours[rows], ref_ln[rows], **_tol(x.dtype))
    assert np.all(np.isfinite(ours))
    ref_rms = F.rms_norm(torch.from_numpy(x), (d,), tw, eps=eps).numpy()
    np.testing.assert_allclose(rms_norm(x, w, eps=eps), ref_rms, **_tol(x.dtype))
    # eps=None is torch.nn.RMSNorm's default (finfo(dtype).eps)
    ref_default = torch.nn.RMSNorm(d, dtype=torch.float64 if x.dtype == np.float64 else torch.float32)
    with torch.no_grad():
        np.testing.assert_allclose(rms_norm(x, eps=None), ref_default(torch.from_numpy(x)).numpy(), **_tol(x.dtype))
    # defaults: layer_norm's 1e-5 is torch.nn.LayerNorm's
    assert torch.nn.LayerNorm(d).eps == 1e-5


@pytest.mark.parametrize("scale", [1e200, 1e-200, 1e300, 1e-300])
def test_norms_near_the_float_limits(scale):
    x = np.array([[1.0, -1.0], [3.0, 1.0], [1.0, 2.0]]) * scale
    y = layer_norm(x, eps=0.0)
    np.testing.assert_allclose(y, [[1, -1], [1, -1], [-1, 1]], rtol=1e-15)
    r = rms_norm(x, eps=0.0)
    np.testing.assert_allclose(r, rms_norm(x / scale, eps=0.0), rtol=1e-15)
    assert np.all(np.isfinite(layer_norm(x))) and np.all(np.isfinite(rms_norm(x)))
    x32 = np.array([1e30, -1e30], np.float32)
    np.testing.assert_allclose(layer_norm(x32, eps=0.0), [1, -1], rtol=1e-6)


def test_constant_rows_with_eps_zero_are_zero_not_nan():
    np.testing.assert_array_equal(layer_norm(np.full((2, 3), 7.0), eps=0.0), np.zeros((2, 3)))
    np.testing.assert_array_equal(rms_norm(np.zeros(3), eps=0.0), np.zeros(3))
    np.testing.assert_array_equal(layer_norm(np.full(3, 7.0), bias=[1.0, 2.0, 3.0], eps=0.0), [1, 2, 3])


@pytest.mark.parametrize("eps", [-1.0, np.nan, np.inf])
def test_bad_eps_is_named(eps):
    for f in (layer_norm, rms_norm):
        with pytest.raises(ValueError, match="eps must be"):
            f(np.ones((2, 3)), eps=eps)
    with pytest.raises(ValueError, match="eps must be"):
        TransformerBlock(4, 2, 8, eps=eps, rng=np.random.default_rng(0))
    with pytest.raises(TypeError, match="eps must be a real number"):
        layer_norm(np.ones(3), eps="1e-5")


def test_mixed_dtypes_are_refused_by_name():
    x32 = np.ones((2, 4), np.float32)
    with pytest.raises(TypeError, match="weight has dtype float64"):
        layer_norm(x32, np.ones(4))
    with pytest.raises(TypeError, match="weight has dtype float64"):
        rms_norm(x32, np.ones(4))
    assert layer_norm(x32, [1.0, 1.0, 1.0, 1.0]).dtype == np.float32  # a list takes x's dtype
    blk = TransformerBlock(4, 2, 8, rng=0)
    with pytest.raises(TypeError, match="X has dtype float32"):
        blk(x32)
    from nextword.decoder.layers import feed_forward

    with pytest.raises(TypeError, match="W1 has dtype float64"):
        feed_forward(x32, np.ones((4, 8)), None, np.ones((8, 4)), None)
