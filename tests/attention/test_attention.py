"""Tests for nextword.attention (softmax, masks, SDPA), nextword.attention.multihead and nextword.attention.gradients."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from nextword.attention import (
    MultiHeadAttention,
    attention_backward,
    causal_mask,
    cross_entropy_upstream,
    log_softmax,
    scaled_dot_product_attention,
    softmax,
)
from nextword.attention import LayerKVCache

torch = pytest.importorskip("torch")
F = torch.nn.functional
TOL = dict(rtol=1e-10, atol=1e-10)
finite = st.floats(-1e4, 1e4, allow_nan=False, allow_infinity=False)


def _t(a: np.ndarray) -> "torch.Tensor":
    return torch.from_numpy(np.ascontiguousarray(a))


# --------------------------------------------------------------------------- softmax
@settings(max_examples=40, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(1, 4), st.integers(1, 6)), elements=finite))
def test_softmax_matches_torch_and_is_a_distribution(x):
    p = softmax(x)
    np.testing.assert_allclose(p, F.softmax(_t(x), dim=-1).numpy(), **TOL)
    np.testing.assert_allclose(p.sum(-1), 1.0, rtol=0, atol=1e-12)
    assert np.all(p >= 0)
    np.testing.assert_allclose(log_softmax(x), F.log_softmax(_t(x), dim=-1).numpy(), **TOL)


def test_softmax_extreme_logits_and_axis():
    x = np.array([[1e4, -1e4, 1e4], [-1e4, -1e4, -1e4]])
    np.testing.assert_allclose(softmax(x), [[0.5, 0, 0.5], [1 / 3, 1 / 3, 1 / 3]], atol=1e-15)
    np.testing.assert_allclose(softmax(x, axis=0), F.softmax(_t(x), dim=0).numpy(), **TOL)
    assert np.all(np.isfinite(log_softmax(x)))


def test_fully_masked_row_is_zero_not_nan():
    x = np.array([[-np.inf, -np.inf], [0.0, -np.inf]])
    np.testing.assert_array_equal(softmax(x), [[0.0, 0.0], [1.0, 0.0]])
    ls = log_softmax(x)
    assert not np.isnan(ls).any() and np.all(ls[0] == -np.inf)
    np.testing.assert_array_equal(np.exp(ls), softmax(x))


def test_softmax_float32_kept():
    assert softmax(np.zeros(3, np.float32)).dtype == np.float32


@pytest.mark.parametrize("bad", [np.array([0.0, np.nan]), np.array([np.inf, 0.0])])
def test_softmax_rejects_nan_and_posinf(bad):
    with pytest.raises(ValueError, match="NaN or \\+inf"):
        softmax(bad)


def test_softmax_rejects_scalar_and_strings():
    with pytest.raises(ValueError, match="at least 1"):
        softmax(1.0)
    with pytest.raises(TypeError):
        softmax(np.array(["a"]))


# --------------------------------------------------------------------------- masks
def test_causal_mask_shapes():
    T = 5
    np.testing.assert_array_equal(causal_mask(T), np.tril(np.ones((T, T), bool)))
    np.testing.assert_array_equal(causal_mask(T, strict=True), np.tril(np.ones((T, T), bool), -1))
    # queries are the last 2 of 5 positions
    np.testing.assert_array_equal(causal_mask(2, num_keys=5), causal_mask(5)[3:])
    assert causal_mask(0).shape == (0, 0)  # empty sequence, empty mask
    with pytest.raises(ValueError):
        causal_mask(-1)
    with pytest.raises(TypeError):
        causal_mask(2.5)


# --------------------------------------------------------------------------- SDPA
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", [(1, 4, 3), (2, 3, 7, 5), (300, 4)])
def test_sdpa_matches_torch(shape, causal):
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal(shape) for _ in range(3))
    ref = F.scaled_dot_product_attention(_t(q), _t(k), _t(v), is_causal=causal).numpy()
    out, w = scaled_dot_product_attention(q, k, v, causal=causal, return_weights=True)
    np.testing.assert_allclose(out, ref, **TOL)
    # the blocked causal fast path (no weights requested, T > 128) agrees as well
    np.testing.assert_allclose(scaled_dot_product_attention(q, k, v, causal=causal), ref, **TOL)
    np.testing.assert_allclose(w.sum(-1), 1.0, atol=1e-12)


@pytest.mark.parametrize("shapes", [((200, 4), (3, 200, 4), (3, 200, 2)), ((3, 200, 4), (200, 4), (200, 2))])
def test_sdpa_broadcasts_batch_axes_like_torch(shapes):
    rng = np.random.default_rng(10)
    q, k, v = (rng.standard_normal(s) for s in shapes)
    for causal in (False, True):
        ref = F.scaled_dot_product_attention(_t(q), _t(k), _t(v), is_causal=causal).numpy()
        np.testing.assert_allclose(scaled_dot_product_attention(q, k, v, causal=causal), ref, **TOL)


def test_sdpa_boolean_mask_and_scale_match_torch():
    rng = np.random.default_rng(1)
    q, k, v = rng.standard_normal((2, 4, 6)), rng.standard_normal((2, 5, 6)), rng.standard_normal((2, 5, 3))
    mask = rng.random((4, 5)) < 0.7
    mask[:, 0] = True  # no fully masked rows: torch returns NaN there, we return zeros
    ref = F.scaled_dot_product_attention(_t(q), _t(k), _t(v), attn_mask=_t(mask), scale=0.3).numpy()
    np.testing.assert_allclose(scaled_dot_product_attention(q, k, v, mask=mask, scale=0.3), ref, **TOL)


def test_sdpa_rectangular_causal_is_bottom_right_and_matches_full():
    rng = np.random.default_rng(2)
    q, k, v = (rng.standard_normal((9, 4)) for _ in range(3))
    full = scaled_dot_product_attention(q, k, v, causal=True)
    tail = scaled_dot_product_attention(q[6:], k, v, causal=True)
    np.testing.assert_allclose(tail, full[6:], **TOL)


def test_sdpa_fully_masked_rows_give_zero_output():
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((4, 2)) for _ in range(3))
    out, w = scaled_dot_product_attention(q, k, v, mask=causal_mask(4, strict=True), return_weights=True)
    np.testing.assert_array_equal(out[0], 0.0)
    np.testing.assert_array_equal(w[0], 0.0)
    np.testing.assert_allclose(w[1:].sum(-1), 1.0)


@settings(max_examples=30, deadline=None)
@given(T=st.integers(1, 8), d=st.integers(1, 5), seed=st.integers(0, 2**16), t=st.integers(0, 7))
def test_sdpa_causality_property(T, d, seed, t):
    """Outputs at positions <= t do not change when the inputs after t change."""
    t = min(t, T - 1)
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal((T, d)) for _ in range(3))
    out, w = scaled_dot_product_attention(q, k, v, causal=True, return_weights=True)
    np.testing.assert_allclose(w.sum(-1), 1.0, atol=1e-12)
    assert np.all(w[np.triu_indices(T, 1)] == 0)
    k2, v2 = k.copy(), v.copy()
    k2[t + 1 :] += rng.standard_normal(k2[t + 1 :].shape)
    v2[t + 1 :] += 10.0
    out2 = scaled_dot_product_attention(q, k2, v2, causal=True)
    np.testing.assert_allclose(out2[: t + 1], out[: t + 1], rtol=0, atol=1e-12)


def test_sdpa_bad_inputs():
    x = np.ones((3, 4))
    with pytest.raises(ValueError, match="last dimension d"):
        scaled_dot_product_attention(x, np.ones((3, 5)), np.ones((3, 5)))
    with pytest.raises(ValueError, match="number of positions"):
        scaled_dot_product_attention(x, x, np.ones((2, 4)))
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        scaled_dot_product_attention(np.ones(4), x, x)
    with pytest.raises(ValueError, match="not broadcastable"):
        scaled_dot_product_attention(np.ones((2, 3, 4)), np.ones((3, 3, 4)), np.ones((3, 3, 4)))
    with pytest.raises(ValueError, match="non-finite"):
        scaled_dot_product_attention(np.full((3, 4), np.nan), x, x)
    with pytest.raises(ValueError, match="mask must have shape"):
        scaled_dot_product_attention(x, x, x, mask=np.ones((4, 3), bool))
    with pytest.raises(TypeError, match="boolean"):
        scaled_dot_product_attention(x, x, x, mask=np.ones((3, 3), int))
    with pytest.raises(ValueError, match="NaN"):
        scaled_dot_product_attention(x, x, x, mask=np.full((3, 3), np.nan))


# --------------------------------------------------------------------------- multi-head attention
def _torch_mha(mha: MultiHeadAttention) -> "torch.nn.MultiheadAttention":
    ref = torch.nn.MultiheadAttention(mha.d_model, mha.num_heads, bias=mha.bias, batch_first=True, dtype=torch.float64)
    ref.load_state_dict({k: torch.from_numpy(v) for k, v in mha.torch_state_arrays().items()})
    return ref.eval()


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("causal", [False, True])
def test_mha_matches_torch(bias, causal):
    rng = np.random.default_rng(4)
    mha = MultiHeadAttention(12, 3, rng=rng, bias=bias)
    if bias:
        mha.b_qkv[...] = rng.standard_normal(36)
        mha.b_o[...] = rng.standard_normal(12)
    X = rng.standard_normal((2, 7, 12))
    ref = _torch_mha(mha)
    mask = _t(~causal_mask(7)) if causal else None  # torch: True = NOT allowed
    with torch.no_grad():
        y_ref, w_ref = ref(_t(X), _t(X), _t(X), attn_mask=mask, average_attn_weights=False)
    y, w = mha(X, causal=causal, return_weights=True)
    np.testing.assert_allclose(y, y_ref.numpy(), **TOL)
    np.testing.assert_allclose(w, w_ref.numpy(), **TOL)
    # and the round trip through a torch state dict
    back = MultiHeadAttention.from_torch_state_dict(ref.state_dict(), num_heads=3)
    np.testing.assert_allclose(back(X, causal=causal), y, **TOL)


def test_mha_parameters_views_and_counts():
    mha = MultiHeadAttention(8, 2, rng=np.random.default_rng(0))
    assert mha.num_parameters() == 4 * 8 * 8
    assert MultiHeadAttention(8, 2, bias=True).num_parameters() == 4 * 8 * 8 + 4 * 8
    A = np.arange(64.0).reshape(8, 8)
    mha.W_k = A
    np.testing.assert_array_equal(mha.parameters()["W_k"], A)
    np.testing.assert_array_equal(mha.W_qkv[:, 8:16], A)
    mha.W_q[...] = 0.0  # in-place edit of the view changes the module: uniform attention
    X = np.random.default_rng(1).standard_normal((5, 8))
    _, w = mha(X, causal=True, return_weights=True)
    np.testing.assert_allclose(w[:, -1], 1 / 5)


def test_mha_head_mask_and_single_head():
    rng = np.random.default_rng(5)
    mha = MultiHeadAttention(8, 2, rng=rng)
    X = rng.standard_normal((4, 8))
    both = mha(X)
    h0 = mha(X, head_mask=[1.0, 0.0])
    h1 = mha(X, head_mask=[0.0, 1.0])
    np.testing.assert_allclose(h0 + h1, both, **TOL)
    with pytest.raises(ValueError, match="head_mask"):
        mha(X, head_mask=[1.0])


def test_mha_cache_matches_full():
    rng = np.random.default_rng(6)
    for rope in (None, 10000.0):
        mha = MultiHeadAttention(8, 2, rng=rng, rope_base=rope)
        X = rng.standard_normal((10, 8))
        cache = LayerKVCache(capacity=2)  # forces the buffer to grow
        parts = [mha(X[:3], cache=cache)] + [mha(X[t : t + 1], cache=cache) for t in range(3, 10)]
        np.testing.assert_allclose(np.concatenate(parts), mha(X), **TOL)


def test_mha_float32_path():
    mha = MultiHeadAttention(16, 4, rng=np.random.default_rng(7))
    X = np.random.default_rng(8).standard_normal((200, 16))
    y32 = mha.astype(np.float32)(X.astype(np.float32))
    assert y32.dtype == np.float32
    np.testing.assert_allclose(y32, mha(X), rtol=1e-4, atol=1e-4)


def test_mha_bad_inputs():
    with pytest.raises(ValueError, match="must divide"):
        MultiHeadAttention(10, 3)
    with pytest.raises(TypeError):
        MultiHeadAttention(8.0, 2)
    with pytest.raises(TypeError, match="dtype"):
        MultiHeadAttention(8, 2, dtype=np.int32)
    mha = MultiHeadAttention(8, 2)
    with pytest.raises(ValueError, match="d_model=8"):
        mha(np.ones((3, 7)))
    with pytest.raises(ValueError, match="at least 2"):
        mha(np.ones(8))
    with pytest.raises(ValueError, match="non-finite"):
        mha(np.full((3, 8), np.inf))
    with pytest.raises(ValueError, match="W_q must have shape"):
        mha.W_q = np.ones((8, 4))
    with pytest.raises(ValueError, match="in_proj_weight"):
        MultiHeadAttention.from_torch_state_dict({"q_proj_weight": np.ones((8, 8))}, 2)


# --------------------------------------------------------------------------- closed-form backward
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("batch", [(), (2,)])
def test_attention_backward_matches_autograd(causal, batch):
    """Eqs. (13)-(32) of the dynamics paper against torch autograd through the whole head + CE loss."""
    rng = np.random.default_rng(9)
    T, d_x, d_k, d_v, C = 6, 5, 4, 3, 7
    X = rng.standard_normal(batch + (T, d_x))
    WQ, WK, WV = rng.standard_normal((d_x, d_k)), rng.standard_normal((d_x, d_k)), rng.standard_normal((d_x, d_v))
    WO, bO = rng.standard_normal((d_v, C)), rng.standard_normal(C)
    y = rng.integers(0, C, batch + (T,))

    G = scaled_dot_product_attention(X @ WQ, X @ WK, X @ WV, causal=causal)
    ce = cross_entropy_upstream(G, WO, bO, y)
    g = attention_backward(X, WQ, WK, WV, ce.upstream, causal=causal)

    tX = _t(X)
    tW = [_t(a).requires_grad_() for a in (WQ, WK, WV)]
    tQ, tK, tV = (tX @ w for w in tW)
    for t_ in (tQ, tK, tV):
        t_.retain_grad()
    s = tQ @ tK.transpose(-1, -2) / np.sqrt(d_k)
    s.retain_grad()
    if causal:
        s_m = s.masked_fill(_t(~causal_mask(T)), float("-inf"))
    else:
        s_m = s
    a = torch.softmax(s_m, dim=-1)
    a.retain_grad()
    tG = a @ tV
    tG.retain_grad()
    logits = tG @ _t(WO) + _t(bO)
    loss = F.cross_entropy(logits.reshape(-1, C), torch.from_numpy(y.reshape(-1)), reduction="sum")
    loss.backward()

    np.testing.assert_allclose(ce.loss, loss.item(), **TOL)
    np.testing.assert_allclose(ce.upstream, tG.grad.numpy(), **TOL)  # Eq. (14)
    np.testing.assert_allclose(g.output, G, **TOL)
    np.testing.assert_allclose(g.weights, a.grad.numpy(), **TOL)  # Eq. (17)
    np.testing.assert_allclose(g.scores, s.grad.numpy(), **TOL)  # Eq. (23)
    np.testing.assert_allclose(g.q, tQ.grad.numpy(), **TOL)  # Eq. (25)
    np.testing.assert_allclose(g.k, tK.grad.numpy(), **TOL)  # Eq. (27)
    np.testing.assert_allclose(g.v, tV.grad.numpy(), **TOL)  # Eq. (16)
    for mine, ref in zip((g.W_Q, g.W_K, g.W_V), tW):  # Eqs. (29), (30), (32)
        np.testing.assert_allclose(mine, ref.grad.numpy(), **TOL)
    # Eq. (32) literally, in the paper's column convention, for the unbatched case
    if not batch:
        U, A, Xp = ce.upstream.T, g.attention, X.T  # (d_v, T), (T, T), (d_x, T) as in the paper
        np.testing.assert_allclose((U @ A @ Xp.T).T, g.W_V, **TOL)
    # the advantage has zero attention-weighted mean per query (§3.4)
    np.testing.assert_allclose(np.sum(g.attention * g.advantage, axis=-1), 0.0, atol=1e-12)


def test_attention_backward_bad_inputs():
    X, W = np.ones((4, 3)), np.ones((3, 2))
    with pytest.raises(ValueError, match="W_K must have shape"):
        attention_backward(X, W, np.ones((4, 2)), W, np.ones((4, 2)))
    with pytest.raises(ValueError, match="upstream must have shape"):
        attention_backward(X, W, W, W, np.ones((4, 3)))
    with pytest.raises(ValueError, match="targets must lie"):
        cross_entropy_upstream(np.ones((4, 2)), np.ones((2, 3)), np.zeros(3), [0, 1, 2, 3])


@given(T=st.integers(1, 40), radius=st.integers(0, 45), causal=st.booleans())
def test_band_mask_counts_and_relation_to_causal_mask(T, radius, causal):
    from nextword.attention import band_mask, causal_mask

    mask = band_mask(T, radius, causal=causal)
    i, j = np.indices((T, T))
    expected = (np.abs(i - j) <= radius) & ((j <= i) if causal else True)
    assert np.array_equal(mask, expected)
    if causal:
        assert not (mask & ~causal_mask(T)).any()
        if radius >= T - 1:
            assert np.array_equal(mask, causal_mask(T))
    assert mask.sum(axis=1).max() <= (radius + 1 if causal else 2 * radius + 1)


def test_band_mask_rejects_bad_radius():
    from nextword.attention import band_mask

    with pytest.raises(ValueError, match="radius"):
        band_mask(4, -1)
