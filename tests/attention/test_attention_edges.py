"""Differential property tests of attention against torch on the edges (issue #19):
random batch axes, boolean / additive / per-example / per-head / key-padding masks, both causal
alignments, T_q != T_k, empty sequences, float32 and float64, and inputs near the float limits.

The torch side is built independently: causal masks from ``torch.ones(...).tril(diagonal)``,
torch-polarity masks (True = blocked) fed raw to ``nn.MultiheadAttention`` and converted for us
with :func:`nextword.attention.multihead.mask_from_torch`.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nextword.attention import attention_backward, causal_alignment, causal_mask, scaled_dot_product_attention
from nextword.attention.multihead import MultiHeadAttention, key_mask_from_torch, mask_from_torch, mask_to_torch

torch = pytest.importorskip("torch")
F = torch.nn.functional
SETTINGS = dict(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _tol(dtype: np.dtype) -> dict:
    return dict(rtol=1e-10, atol=1e-10) if dtype == np.float64 else dict(rtol=2e-4, atol=2e-5)


def _t(a: np.ndarray) -> "torch.Tensor":
    return torch.from_numpy(np.ascontiguousarray(a))


def _torch_causal(Tq: int, Tk: int, align: str) -> "torch.Tensor":
    """torch boolean mask, True = may attend; bottom-right = tril with diagonal Tk - Tq."""
    diag = Tk - Tq if align == "bottom_right" else 0
    return torch.ones(Tq, Tk, dtype=torch.bool).tril(diagonal=diag)


@st.composite
def sdpa_case(draw):
    batch = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    Tq, Tk = draw(st.integers(0, 5)), draw(st.integers(0, 5))
    d, dv = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    dtype = draw(st.sampled_from([np.float64, np.float32]))
    seed = draw(st.integers(0, 2**31))
    rng = np.random.default_rng(seed)
    q = rng.standard_normal(batch + (Tq, d)).astype(dtype)
    k = rng.standard_normal(batch + (Tk, d)).astype(dtype)
    v = rng.standard_normal(batch + (Tk, dv)).astype(dtype)
    kind = draw(st.sampled_from(["none", "bool", "bool_shared", "additive", "key", "bool+key"]))
    mask = key = None
    mbatch = batch if kind != "bool_shared" else ()
    if kind in ("bool", "bool_shared", "bool+key"):
        mask = rng.random(mbatch + (Tq, Tk)) < 0.7
    elif kind == "additive":  # an attention bias with some -inf (blocked) entries
        mask = rng.standard_normal(batch + (Tq, Tk)).astype(dtype)
        mask[rng.random(mask.shape) < 0.3] = -np.inf
    if kind in ("key", "bool+key"):
        key = rng.random(batch + (Tk,)) < 0.7
    causal = draw(st.sampled_from([False, "bottom_right", "top_left", True]))
    return q, k, v, mask, key, causal


@settings(**SETTINGS)
@given(sdpa_case())
def test_sdpa_differential_against_torch(case):
    q, k, v, mask, key, causal = case
    Tq, Tk = q.shape[-2], k.shape[-2]
    out, w = scaled_dot_product_attention(q, k, v, mask=mask, key_mask=key, causal=causal, return_weights=True)
    assert out.dtype == q.dtype and w.dtype == q.dtype
    assert out.shape == q.shape[:-1] + (v.shape[-1],) and w.shape == q.shape[:-1] + (Tk,)
    assert np.all(np.isfinite(out)) and np.all(np.isfinite(w))
    # torch reference: one additive float mask built from the pieces
    tdtype = torch.float64 if q.dtype == np.float64 else torch.float32
    bias = torch.zeros(q.shape[:-1] + (Tk,), dtype=tdtype)
    if mask is not None:
        tm = _t(mask)
        bias = bias + (
            tm.to(tdtype) if tm.dtype != torch.bool else torch.zeros_like(bias).masked_fill(~tm, float("-inf"))
        )
    if key is not None:
        bias = bias.masked_fill(~_t(key)[..., None, :], float("-inf"))
    align = causal_alignment(causal)
    use_flag = align == "top_left" and mask is None and key is None
    if align is not None and not use_flag:
        bias = bias.masked_fill(~_torch_causal(Tq, Tk, align), float("-inf"))
    with torch.no_grad():
        ref = F.scaled_dot_product_attention(
            _t(q), _t(k), _t(v), is_causal=use_flag, attn_mask=None if use_flag else bias
        )
    np.testing.assert_allclose(out, ref.numpy(), **_tol(q.dtype))
    # weights: each row sums to 1, or to 0 exactly when its row of the bias is all -inf
    if use_flag:
        bias = bias.masked_fill(~_torch_causal(Tq, Tk, align), float("-inf"))
    visible = np.isfinite(bias.numpy()).any(-1)
    np.testing.assert_allclose(w.sum(-1), visible.astype(float), atol=1e-5)


@st.composite
def mha_case(draw):
    B, T = draw(st.integers(1, 3)), draw(st.integers(1, 5))  # torch's module fails on T = 0 with masks
    h = draw(st.sampled_from([1, 2, 3]))
    d = h * draw(st.integers(1, 3))
    kind = draw(st.sampled_from(["none", "shared", "per_example", "per_head", "float", "key", "key+per_example"]))
    causal = draw(st.booleans())
    bias = draw(st.booleans())
    return B, T, h, d, kind, causal, bias, draw(st.integers(0, 2**31))


@settings(**SETTINGS)
@given(mha_case())
def test_mha_differential_against_torch_module(case):
    """nn.MultiheadAttention (its masks: True = blocked) against ours through the converters."""
    B, T, h, d, kind, causal, bias, seed = case
    rng = np.random.default_rng(seed)
    ref = torch.nn.MultiheadAttention(d, h, bias=bias, batch_first=True, dtype=torch.float64).eval()
    with torch.no_grad():
        for p in ref.parameters():
            p.copy_(_t(rng.standard_normal(tuple(p.shape))))
    mha = MultiHeadAttention.from_torch_state_dict(ref.state_dict(), num_heads=h)
    X = rng.standard_normal((B, T, d))
    blocked = None  # torch attn_mask: (T, T) or (B * h, T, T), True = blocked
    if kind == "shared":
        blocked = _t(rng.random((T, T)) < 0.3)
    elif kind in ("per_example", "key+per_example"):
        blocked = _t(rng.random((B, T, T)) < 0.3).repeat_interleave(h, dim=0)
    elif kind == "per_head":
        blocked = _t(rng.random((B * h, T, T)) < 0.3)
    elif kind == "float":
        blocked = _t(rng.standard_normal((T, T)))
    padding = _t(rng.random((B, T)) < 0.3) if kind.startswith("key") else None  # True = pad
    tmask = blocked
    if causal:
        causal_blocked = ~_torch_causal(T, T, "top_left")
        tmask = (
            causal_blocked
            if tmask is None
            else tmask.masked_fill(causal_blocked, float("-inf"))
            if tmask.dtype != torch.bool
            else tmask | causal_blocked
        )
    with torch.no_grad():
        y_ref, _ = ref(_t(X), _t(X), _t(X), attn_mask=tmask, key_padding_mask=padding, need_weights=False)
    # ours: per-example masks come as (B, T, T) (leading axis = X's batch axis), per-head as (B, h, T, T)
    mask = None
    if blocked is not None:
        mask = mask_from_torch(blocked, num_heads=h) if blocked.ndim == 3 else mask_from_torch(blocked)
        if kind in ("per_example", "key+per_example"):
            mask = mask[:, 0]  # (B, T, T): the same for every head
    key = None if padding is None else key_mask_from_torch(padding)
    y = mha(X, causal=causal, mask=mask, key_mask=key)
    assert y.shape == X.shape and np.all(np.isfinite(y))
    yr = y_ref.numpy()
    rows = np.isfinite(yr).all(-1)  # torch gives NaN for a query with no visible key; we give b_o
    np.testing.assert_allclose(y[rows], yr[rows], rtol=1e-10, atol=1e-10)
    b_o = mha.b_o if mha.bias else np.zeros(d)
    np.testing.assert_allclose(y[~rows], np.broadcast_to(b_o, y[~rows].shape), atol=1e-12)
    # the way back: our mask -> torch polarity
    if mask is not None and kind in ("shared", "per_head", "float"):
        np.testing.assert_array_equal(mask_to_torch(mask), blocked.numpy())


def test_per_example_mask_is_not_taken_for_a_head_mask():
    """A (B, T, T) mask with B == num_heads used to land on the head axis (issue #19, item 1)."""
    rng = np.random.default_rng(0)
    mha = MultiHeadAttention(4, 2, rng=rng)
    X = rng.standard_normal((2, 3, 4))
    mask = np.ones((2, 3, 3), bool)
    mask[0] = np.eye(3, dtype=bool)  # example 0 sees only itself, example 1 everything
    y = mha(X, causal=False, mask=mask)
    np.testing.assert_allclose(y[0], mha(X[0], causal=False, mask=mask[0]), atol=1e-12)
    np.testing.assert_allclose(y[1], mha(X[1], causal=False), atol=1e-12)
    with pytest.raises(ValueError, match="leading axes"):
        mha(X, mask=np.ones((3, 3, 3), bool))  # 3 examples? X has 2
    with pytest.raises(ValueError, match="key_mask"):
        mha(X, key_mask=np.ones((2, 4), bool))


def test_causal_alignments_and_rows_without_keys():
    q = np.ones((5, 2))
    k = v = np.arange(6.0).reshape(3, 2)
    # top-left (torch's is_causal): every row sees key 0
    with torch.no_grad():
        ref = F.scaled_dot_product_attention(_t(q), _t(k), _t(v), is_causal=True).numpy()
    np.testing.assert_allclose(scaled_dot_product_attention(q, k, v, causal="top_left"), ref, atol=1e-12)
    # bottom-right (default): the first Tq - Tk = 2 rows see no key -> zero weights and output
    out, w = scaled_dot_product_attention(q, k, v, causal=True, return_weights=True)
    assert np.array_equal(out[:2], np.zeros((2, 2))) and np.array_equal(w[:2], np.zeros((2, 3)))
    np.testing.assert_allclose(w[2:].sum(-1), 1.0)
    np.testing.assert_array_equal(causal_mask(5, num_keys=3, align="top_left"), np.tril(np.ones((5, 3), bool)))
    with pytest.raises(ValueError, match="causal must be"):
        scaled_dot_product_attention(q, k, v, causal="left")


@pytest.mark.parametrize("Tq,Tk", [(0, 3), (3, 0), (0, 0)])
def test_empty_sequences_match_torch(Tq, Tk):
    rng = np.random.default_rng(1)
    q, k, v = rng.standard_normal((2, Tq, 4)), rng.standard_normal((2, Tk, 4)), rng.standard_normal((2, Tk, 5))
    for causal in (False, True, "top_left"):
        out, w = scaled_dot_product_attention(q, k, v, causal=causal, return_weights=True)
        with torch.no_grad():
            ref = F.scaled_dot_product_attention(_t(q), _t(k), _t(v))
        assert out.shape == tuple(ref.shape) and w.shape == (2, Tq, Tk)
        np.testing.assert_array_equal(out, ref.numpy())
    mha = MultiHeadAttention(4, 2, rng=rng)
    assert mha(np.zeros((2, 0, 4))).shape == (2, 0, 4)


def test_mixed_dtypes_are_refused_by_name():
    x64, x32 = np.ones((3, 4)), np.ones((3, 4), np.float32)
    with pytest.raises(TypeError, match="q, k, v must share one float dtype"):
        scaled_dot_product_attention(x32, x64, x64)
    mha = MultiHeadAttention(4, 2, rng=np.random.default_rng(0))
    with pytest.raises(TypeError, match=r"astype\(np.float32\)"):
        mha(x32)
    assert mha.astype(np.float32)(x32).dtype == np.float32
    assert mha([[1, 2, 3, 4]]).dtype == np.float64  # lists / ints take the module's dtype
    with pytest.raises(TypeError, match="share one float dtype"):
        attention_backward(x32, np.eye(4), np.eye(4), np.eye(4), np.ones((3, 4)))


def test_scores_near_the_float_limit_are_not_nan():
    """Inputs near 1e200 overflow q·k; the result is the limit (hard attention), not NaN."""
    q = np.array([[1e200, 0.0]])
    k = np.array([[1e200, 0.0], [-1e200, 0.0], [5e199, 0.0]])
    v = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    out, w = scaled_dot_product_attention(q, k, v, return_weights=True)
    np.testing.assert_array_equal(w, [[1.0, 0.0, 0.0]])
    np.testing.assert_array_equal(out, [[1.0, 2.0]])
    # all scores -inf after overflow used to read as "fully masked"; it is a tie-free argmax
    out = scaled_dot_product_attention(-q, k, v, causal=False)
    np.testing.assert_array_equal(out, [[3.0, 4.0]])
    # large inputs with a small scale do not overflow: the scale is folded into q first
    np.testing.assert_allclose(
        scaled_dot_product_attention(q, k, v, scale=1e-300),
        scaled_dot_product_attention(q * 1e-200, k * 1e-200, v, scale=1e100),
        rtol=1e-12,
    )
    # and with an additive mask and the causal fast path (T > 128)
    big = np.full((200, 2), 1e200)
    assert np.all(np.isfinite(scaled_dot_product_attention(big, big, big, causal=True)))
    bias = np.zeros((3, 3))
    bias[:, 0] = -np.inf
    out = scaled_dot_product_attention(np.repeat(q, 3, 0), k, v, mask=bias)
    np.testing.assert_array_equal(out, [[5.0, 6.0]] * 3)


def test_backward_scale_is_checked_and_float_mask_accepted():
    X, W = np.random.default_rng(2).standard_normal((4, 3)), np.eye(3)
    for bad in (np.nan, np.inf):
        with pytest.raises(ValueError, match="scale must be finite"):
            attention_backward(X, W, W, W, np.ones((4, 3)), scale=bad)
    bias = np.where(causal_mask(4), 0.0, -np.inf)
    g1 = attention_backward(X, W, W, W, np.ones((4, 3)), mask=bias)
    g2 = attention_backward(X, W, W, W, np.ones((4, 3)), causal=True)
    np.testing.assert_allclose(g1.W_Q, g2.W_Q, atol=1e-12)


def test_state_dict_with_nan_is_refused():
    ref = torch.nn.MultiheadAttention(4, 2, batch_first=True, dtype=torch.float64)
    sd = ref.state_dict()
    sd["in_proj_weight"][0, 0] = float("nan")
    with pytest.raises(ValueError, match=r"state_dict\['in_proj_weight'\] contains 1 non-finite"):
        MultiHeadAttention.from_torch_state_dict(sd, num_heads=2)


def test_softmax_of_an_empty_axis_is_empty_like_torch():
    from nextword.attention import log_softmax, softmax

    for shape in [(0,), (2, 0), (0, 3)]:
        x = np.zeros(shape)
        with torch.no_grad():
            ref = torch.softmax(torch.from_numpy(x), dim=-1).numpy()
        assert softmax(x).shape == ref.shape == log_softmax(x).shape
    assert softmax([]).shape == (0,)


def test_seeds_and_state_dict_dtype():
    a = MultiHeadAttention(4, 2, rng=3)
    b = MultiHeadAttention(4, 2, rng=np.random.default_rng(3))
    np.testing.assert_array_equal(a.W_qkv, b.W_qkv)
    with pytest.raises(TypeError, match="rng must be"):
        MultiHeadAttention(4, 2, rng=1.5)
    ref32 = torch.nn.MultiheadAttention(4, 2, batch_first=True)  # float32
    mha32 = MultiHeadAttention.from_torch_state_dict(ref32.state_dict(), num_heads=2)
    X = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    with torch.no_grad():
        y_ref, _ = ref32(*(torch.from_numpy(X),) * 3, need_weights=False)
    assert mha32.dtype == np.float32
    np.testing.assert_allclose(mha32(X, causal=False), y_ref.numpy(), rtol=1e-5, atol=1e-5)


_NUMPY_INTERNALS = ("could not be broadcast", "core dimension", "zero-size array", "has no attribute")


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 4), min_size=0, max_size=5),
    st.sampled_from([bool, np.float64, np.int64, object]),
    st.sampled_from(["mask", "key_mask"]),
    st.booleans(),
)
def test_bad_masks_get_named_errors(shape, dtype, which, through_mha):
    """Any mask shape / dtype: a result, or a ValueError/TypeError naming the mask — never a
    numpy broadcasting message (issue #22)."""
    rng = np.random.default_rng(0)
    m = np.zeros(shape, dtype=dtype) if dtype is not object else np.full(shape, None)
    try:
        if through_mha:
            mha = MultiHeadAttention(4, 2, rng=rng)
            out = mha(rng.standard_normal((2, 3, 4)), **{which: m})
        else:
            x = rng.standard_normal((2, 3, 4))
            out = scaled_dot_product_attention(x, x, x, **{which: m})
    except (ValueError, TypeError) as exc:
        msg = str(exc)
        assert which in msg, msg
        assert not any(s in msg for s in _NUMPY_INTERNALS), msg
    else:
        assert np.all(np.isfinite(out))


def test_float32_scores_near_the_float32_limit():
    q = np.array([[1e30, 0.0]], np.float32)
    k = np.array([[1e30, 0.0], [-1e30, 0.0], [5e29, 0.0]], np.float32)
    v = np.arange(6, dtype=np.float32).reshape(3, 2)
    out = scaled_dot_product_attention(q, k, v)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, [[0.0, 1.0]])
    np.testing.assert_array_equal(scaled_dot_product_attention(-q, k, v), [[2.0, 3.0]])
    top = np.array([[3e38, 0.0]], np.float32)  # 2**128 is not a float32: the rescaling must not overflow
    np.testing.assert_array_equal(scaled_dot_product_attention(top, top, np.ones((1, 2), np.float32)), [[1.0, 1.0]])


def test_lists_take_the_module_dtype():
    mha32 = MultiHeadAttention(4, 2, rng=0).astype(np.float32)
    assert mha32([[0.5, 1.0, 2.0, 3.0]]).dtype == np.float32
