"""Tests for nextword.decoder.layers (norms, FFN, TransformerBlock) and nextword.decoder (DecoderLM, KV cache)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nextword.decoder import (
    DecoderConfig,
    DecoderLM,
    TransformerBlock,
    feed_forward,
    layer_norm,
    rms_norm,
)
from nextword.positions import sinusoidal_encoding

torch = pytest.importorskip("torch")
F = torch.nn.functional
TOL = dict(rtol=1e-10, atol=1e-10)


def _t(a):
    return torch.from_numpy(np.ascontiguousarray(a))


# --------------------------------------------------------------------------- norms and FFN
def test_layer_norm_matches_torch():
    rng = np.random.default_rng(0)
    x, w, b = rng.standard_normal((3, 4, 6)), rng.standard_normal(6), rng.standard_normal(6)
    ref = F.layer_norm(_t(x), (6,), _t(w), _t(b), eps=1e-5).numpy()
    np.testing.assert_allclose(layer_norm(x, w, b), ref, **TOL)
    y = layer_norm(x)
    np.testing.assert_allclose(y.mean(-1), 0.0, atol=1e-12)
    np.testing.assert_allclose(y.var(-1), 1.0, atol=1e-4)  # var / (var + eps)


def test_rms_norm_matches_torch_and_sphere_radii():
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((5, 8)) * 3, rng.standard_normal(8)
    mod = torch.nn.RMSNorm(8, eps=1e-6, dtype=torch.float64)
    with torch.no_grad():
        mod.weight.copy_(_t(w))
        ref = mod(_t(x)).numpy()
    np.testing.assert_allclose(rms_norm(x, w, eps=1e-6), ref, **TOL)
    # radius sqrt(d) in practice (Liao Eq. (7)), unit sphere for unit=True
    np.testing.assert_allclose(np.linalg.norm(rms_norm(x, eps=0.0), axis=-1), np.sqrt(8), **TOL)
    np.testing.assert_allclose(np.linalg.norm(rms_norm(x, eps=0.0, unit=True), axis=-1), 1.0, **TOL)
    np.testing.assert_allclose(rms_norm(x, unit=True), rms_norm(x) / np.sqrt(8), **TOL)


def test_norm_bad_inputs():
    with pytest.raises(ValueError, match=r"weight must have shape \(d,\) = \(6,\)"):
        layer_norm(np.ones((2, 6)), np.ones(5))
    with pytest.raises(ValueError, match="non-finite"):
        rms_norm(np.array([np.nan, 1.0]))
    with pytest.raises(ValueError, match="at least 1"):
        layer_norm(3.0)


@pytest.mark.parametrize(
    "activation,ref_act",
    [("gelu", lambda h: F.gelu(h)), ("gelu_tanh", lambda h: F.gelu(h, approximate="tanh")), ("relu", F.relu)],
)
def test_feed_forward_matches_torch(activation, ref_act):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3, 4))
    W1, b1, W2, b2 = (
        rng.standard_normal((4, 16)),
        rng.standard_normal(16),
        rng.standard_normal((16, 4)),
        rng.standard_normal(4),
    )
    ref = ref_act(_t(x) @ _t(W1) + _t(b1)) @ _t(W2) + _t(b2)
    np.testing.assert_allclose(feed_forward(x, W1, b1, W2, b2, activation=activation), ref.numpy(), **TOL)
    with pytest.raises(ValueError, match="activation"):
        feed_forward(x, W1, b1, W2, b2, activation="swish")
    with pytest.raises(ValueError, match="W1 \\(d, d_ff\\)"):
        feed_forward(x, W2, b1, W2, b2)


def test_feed_forward_none_bias_is_no_bias():
    """Documented: a bias given as None is left out, which equals a zero bias (and a layer without it)."""
    rng = np.random.default_rng(3)
    x, W1, W2 = rng.standard_normal((2, 3, 4)), rng.standard_normal((4, 8)), rng.standard_normal((8, 4))
    b1, b2 = rng.standard_normal(8), rng.standard_normal(4)
    for activation in ("gelu", "relu"):
        np.testing.assert_array_equal(
            feed_forward(x, W1, None, W2, None, activation=activation),
            feed_forward(x, W1, np.zeros(8), W2, np.zeros(4), activation=activation),
        )
        np.testing.assert_array_equal(
            feed_forward(x, W1, None, W2, b2, activation=activation),
            feed_forward(x, W1, np.zeros(8), W2, b2, activation=activation),
        )
        np.testing.assert_array_equal(
            feed_forward(x, W1, b1, W2, None, activation=activation),
            feed_forward(x, W1, b1, W2, np.zeros(4), activation=activation),
        )


# --------------------------------------------------------------------------- transformer block
def _torch_block(blk: TransformerBlock, X: np.ndarray) -> np.ndarray:
    """An independent torch forward of the same block (nn.MultiheadAttention + F.layer_norm/rms_norm)."""
    d = X.shape[-1]
    mha = torch.nn.MultiheadAttention(d, blk.attn.num_heads, bias=False, batch_first=True, dtype=torch.float64)
    mha.load_state_dict({k: torch.from_numpy(v) for k, v in blk.attn.torch_state_arrays().items()})
    T = X.shape[-2]
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), 1) if blk.causal else None

    def attn(z):
        return mha(z, z, z, attn_mask=mask, need_weights=False)[0]

    def norm(z, i):
        if blk.norm == "rms":
            return F.rms_norm(z, (d,), _t(getattr(blk, f"norm{i}_weight")), eps=blk.eps)
        return F.layer_norm(
            z, (d,), _t(getattr(blk, f"norm{i}_weight")), _t(getattr(blk, f"norm{i}_bias")), eps=blk.eps
        )

    def ffn(z):
        return F.gelu(z @ _t(blk.W1) + _t(blk.b1)) @ _t(blk.W2) + _t(blk.b2)

    h = _t(X)
    r = 1.0 if blk.residual else 0.0
    with torch.no_grad():
        if blk.pre_norm:
            u = r * h + attn(norm(h, 1))
            out = r * u + ffn(norm(u, 2))
        else:
            u = norm(r * h + attn(h), 1)
            out = norm(r * u + ffn(u), 2)
    return out.numpy()


@pytest.mark.parametrize(
    "pre_norm,norm,causal,residual",
    [
        (True, "layer", True, True),
        (False, "layer", True, True),
        (True, "rms", True, True),
        (False, "rms", False, True),
        (True, "layer", True, False),
        (False, "layer", False, False),
    ],
)
def test_block_matches_torch(pre_norm, norm, causal, residual):
    rng = np.random.default_rng(3)
    blk = TransformerBlock(8, 2, 32, rng=rng, pre_norm=pre_norm, norm=norm, causal=causal, residual=residual)
    for name, p in blk.parameters().items():  # non-trivial norm weights and biases
        if name.startswith("norm") or name.startswith("ffn.b"):
            p[...] = rng.standard_normal(p.shape)
    X = rng.standard_normal((2, 5, 8))
    np.testing.assert_allclose(blk(X), _torch_block(blk, X), **TOL)


def test_block_bad_config():
    with pytest.raises(ValueError, match="norm"):
        TransformerBlock(8, 2, 16, norm="batch")
    with pytest.raises(ValueError, match="divide"):
        TransformerBlock(8, 3, 16)


# --------------------------------------------------------------------------- DecoderLM
def _lm(seed: int = 0, **kw) -> DecoderLM:
    base = dict(vocab_size=13, d_model=8, num_heads=2, num_layers=2, max_len=40)
    base.update(kw)
    return DecoderLM(DecoderConfig(**base), rng=np.random.default_rng(seed))


def test_decoder_logits_equal_manual_forward():
    lm = _lm(positional="sinusoidal")
    toks = np.array([[1, 4, 2, 12, 0], [3, 3, 3, 3, 3]])
    h = lm.tok_emb[toks] + sinusoidal_encoding(5, 8)
    for blk in lm.blocks:
        h = blk(h)
    h = layer_norm(h, lm.norm_f_weight, lm.norm_f_bias)
    np.testing.assert_allclose(lm.logits(toks), h @ lm.W_U, **TOL)


settings_kv = settings(max_examples=15, deadline=None)


@settings_kv
@given(
    positional=st.sampled_from(["sinusoidal", "learned", "rope", "none"]),
    pre_norm=st.booleans(),
    norm=st.sampled_from(["layer", "rms"]),
    residual=st.booleans(),
    T=st.integers(1, 30),
    split=st.integers(1, 30),
    seed=st.integers(0, 100),
)
def test_kv_cache_equals_uncached(positional, pre_norm, norm, residual, T, split, seed):
    lm = _lm(positional=positional, pre_norm=pre_norm, norm=norm, residual=residual, seed=seed)
    toks = np.random.default_rng(seed).integers(0, 13, T)
    full = lm.logits(toks)
    cache = lm.new_cache()
    split = min(split, T)
    parts = [lm.logits_cached(toks[:split], cache)]
    parts += [lm.logits_cached(toks[t : t + 1], cache) for t in range(split, T)]
    np.testing.assert_allclose(np.concatenate(parts), full, rtol=1e-12, atol=1e-12)
    assert cache.length == T
    # next_logits (internal prefix cache) agrees at every prefix, including a branch back
    for t in range(T):
        np.testing.assert_allclose(lm.next_logits(toks[: t + 1].tolist()), full[t], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(lm.next_logits(toks[:1].tolist()), full[0], rtol=1e-12, atol=1e-12)


def test_kv_cache_generation_equals_uncached_generation():
    """Greedy generation with the cache picks the same tokens as recomputing everything."""
    lm = _lm(positional="rope", max_len=64)
    seq_a, seq_b = [1, 2], [1, 2]
    for _ in range(20):
        seq_a.append(int(np.argmax(lm.next_logits(seq_a))))
        seq_b.append(int(np.argmax(lm.logits(seq_b)[-1])))
    assert seq_a == seq_b


@settings(max_examples=15, deadline=None)
@given(
    T=st.integers(2, 20),
    t=st.integers(0, 18),
    seed=st.integers(0, 100),
    positional=st.sampled_from(["sinusoidal", "learned", "rope", "none"]),
)
def test_decoder_causality(T, t, seed, positional):
    t = min(t, T - 2)
    lm = _lm(positional=positional, seed=seed)
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 13, T)
    b = a.copy()
    b[t + 1 :] = (a[t + 1 :] + 1 + rng.integers(0, 12, T - t - 1)) % 13
    np.testing.assert_allclose(lm.logits(b)[: t + 1], lm.logits(a)[: t + 1], rtol=1e-12, atol=1e-12)


def test_ablation_no_mask_breaks_causality():
    lm = _lm(causal=False)
    a = np.array([1, 2, 3, 4])
    b = np.array([1, 2, 3, 5])
    assert np.abs(lm.logits(a)[0] - lm.logits(b)[0]).max() > 1e-6
    with pytest.raises(ValueError, match="causal=True"):
        lm.logits_cached(a, lm.new_cache())
    np.testing.assert_allclose(lm.next_logits([1, 2, 3]), lm.logits([1, 2, 3])[-1], **TOL)


def test_ablation_no_positions_is_permutation_invariant_at_the_last_position():
    """Without positions, one causal attention layer sees its context as a set (Chapter 6, §6.5).

    With two or more layers this no longer holds: the earlier positions' hidden states depend on
    their own (order-dependent) prefixes, so the causal mask itself leaks order information.
    """
    a = np.array([5, 1, 7, 2, 9])
    b = np.array([7, 2, 1, 5, 9])  # same context set, same last token
    lm1 = _lm(positional="none", num_layers=1)
    np.testing.assert_allclose(lm1.logits(a)[-1], lm1.logits(b)[-1], rtol=1e-12, atol=1e-12)
    for lm in (_lm(positional="sinusoidal", num_layers=1), _lm(positional="none", num_layers=2)):
        assert np.abs(lm.logits(a)[-1] - lm.logits(b)[-1]).max() > 1e-6


def test_head_mask_and_parameter_editing():
    lm = _lm()
    toks = [1, 2, 3, 4]
    ones = np.ones((2, 2))
    np.testing.assert_allclose(lm.logits(toks, head_mask=ones), lm.logits(toks), **TOL)
    off = ones.copy()
    off[0, 1] = 0.0
    masked = lm.logits(toks, head_mask=off)
    # the same ablation by zeroing the rows of W_o that read head 1 of layer 0
    lm.parameters()["blocks.0.attn.W_o"][4:8] = 0.0
    lm.reset_cache()
    np.testing.assert_allclose(lm.logits(toks), masked, **TOL)
    with pytest.raises(ValueError, match="head_mask must have"):
        lm.logits(toks, head_mask=np.ones(2))
    with pytest.raises(ValueError, match="head_mask must have shape"):
        lm.logits(toks, head_mask=np.ones((2, 3)))


def test_parameters_count_and_load():
    lm = _lm(positional="learned", tie_embeddings=False)
    p = lm.parameters()
    d, V, L, dff, Tm = 8, 13, 2, 32, 40
    per_block = 4 * d * d + 2 * (2 * d) + (d * dff + dff + dff * d + d)
    assert lm.num_parameters() == V * d + Tm * d + L * per_block + 2 * d + d * V
    assert {"tok_emb", "pos_emb", "blocks.1.attn.W_q", "blocks.0.ffn.W2", "norm_f.weight", "W_U"} <= set(p)
    other = _lm(positional="learned", seed=5)
    other.load_parameters(p)
    np.testing.assert_allclose(other.logits([1, 2]), lm.logits([1, 2]), **TOL)
    with pytest.raises(ValueError, match="missing"):
        other.load_parameters({"tok_emb": p["tok_emb"]})
    with pytest.raises(ValueError, match="must have shape"):
        other.load_parameters({"tok_emb": p["tok_emb"][:3]}, strict=False)


def test_return_weights_and_batch():
    lm = _lm(num_heads=4)
    logits, weights = lm.logits(np.array([[1, 2, 3], [4, 5, 6]]), return_weights=True)
    assert logits.shape == (2, 3, 13) and len(weights) == 2 and weights[0].shape == (2, 4, 3, 3)
    np.testing.assert_allclose(weights[1].sum(-1), 1.0, atol=1e-12)


def test_decoder_bad_inputs():
    lm = _lm(positional="learned")
    with pytest.raises(ValueError, match=r"tokens must lie in \[0, 13\)"):
        lm.logits([1, 13])
    with pytest.raises(TypeError, match="integer"):
        lm.logits([1.0, 2.0])
    with pytest.raises(ValueError, match="exceed max_len"):
        lm.logits(np.zeros(41, int))
    with pytest.raises(ValueError, match="non-empty"):
        lm.next_logits([])
    with pytest.raises(ValueError, match="must divide"):
        DecoderConfig(vocab_size=5, d_model=10, num_heads=3, num_layers=1, max_len=4)
    with pytest.raises(ValueError, match="positional"):
        DecoderConfig(vocab_size=5, d_model=8, num_heads=2, num_layers=1, max_len=4, positional="alibi")
    with pytest.raises(TypeError):
        DecoderConfig(vocab_size=5.0, d_model=8, num_heads=2, num_layers=1, max_len=4)
    with pytest.raises(TypeError, match="DecoderConfig"):
        DecoderLM({"vocab_size": 5})
    cfg = DecoderConfig(vocab_size=5, d_model=8, num_heads=2, num_layers=1, max_len=4)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.d_model = 16  # frozen


def test_float32_stays_float32():
    x = np.random.default_rng(0).standard_normal((3, 8)).astype(np.float32)
    assert layer_norm(x).dtype == np.float32
    assert rms_norm(x, unit=True).dtype == np.float32
    W1, W2 = np.ones((8, 16), np.float32), np.ones((16, 8), np.float32)
    for act in ("gelu", "gelu_tanh", "relu"):
        assert feed_forward(x, W1, None, W2, None, activation=act).dtype == np.float32
    lm32 = _lm(dtype="float32")
    lm64 = _lm(dtype="float64")
    out32 = lm32.logits([1, 2, 3])
    assert out32.dtype == np.float32
    np.testing.assert_allclose(out32, lm64.logits([1, 2, 3]), rtol=1e-4, atol=1e-4)
