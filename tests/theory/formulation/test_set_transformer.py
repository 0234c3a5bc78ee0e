"""Tests for nextword.theory.formulation.set_transformer (formulation paper §5.1–5.2, Appendix B)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nextword.decoder import TransformerBlock
from nextword.theory.formulation import (
    AttentionParams,
    BlockParams,
    att,
    attention_block,
    empirical_measure,
    max_pool,
    mean_pool,
    next_token_distribution,
    set_transformer,
    soft_max_pool,
)


def _setup(seed: int = 0, d: int = 4, c: int = 3, c_ff: int = 8, m: int = 6, norm: str = "layer"):
    rng = np.random.default_rng(seed)
    return BlockParams.random(d, c, c_ff, rng, norm=norm), rng.standard_normal((m, d)), rng


def _att_loop(h: np.ndarray, Q: np.ndarray, K: np.ndarray, V: np.ndarray) -> np.ndarray:
    """Eq. (5.2) written out term by term (column vectors)."""
    out = np.empty_like(h)
    for k in range(len(h)):
        s = np.array([np.exp((Q @ h[k]) @ (K @ h[l])) for l in range(len(h))])
        out[k] = h[k] + sum(s[l] * (V @ h[l]) for l in range(len(h))) / s.sum()
    return out


def test_att_matches_equation_5_2():
    p, h, _ = _setup()
    np.testing.assert_allclose(att(h, p.att), _att_loop(h, p.att.Q, p.att.K, p.att.V), rtol=1e-12, atol=1e-12)


def test_att_matches_torch_sdpa():
    torch = pytest.importorskip("torch")
    p, h, _ = _setup(1, m=7)
    t = lambda a: torch.from_numpy(np.ascontiguousarray(a))  # noqa: E731
    ref = torch.nn.functional.scaled_dot_product_attention(
        t(h @ p.att.Q.T), t(h @ p.att.K.T), t(h @ p.att.V.T), scale=1.0, is_causal=True
    ).numpy()
    np.testing.assert_allclose(att(h, p.att, causal=True), h + ref, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_block_equals_post_norm_transformer_block(activation):
    """(5.3a-d) with c = d_e is Chapter 6's post-norm block with one head and W_o = I."""
    d = 4
    rng = np.random.default_rng(2)
    p = BlockParams.random(d, d, 8, rng)
    p = BlockParams(p.att, p.W1, p.b1, p.W2, p.b2, activation=activation)
    h = rng.standard_normal((5, d))
    blk = TransformerBlock(
        d, 1, 8, rng=rng, norm="layer", pre_norm=False, causal=False, activation=activation, eps=p.eps
    )
    blk.attn.W_q = p.att.Q.T * np.sqrt(d)  # undo the 1/sqrt(d_head) scale
    blk.attn.W_k = p.att.K.T
    blk.attn.W_v = p.att.V.T
    blk.attn.W_o[...] = np.eye(d)
    blk.W1[...], blk.b1[...], blk.W2[...], blk.b2[...] = p.W1.T, p.b1, p.W2.T, p.b2
    np.testing.assert_allclose(attention_block(h, p), blk(h), rtol=1e-10, atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.integers(1, 7))
def test_permutation_equivariance_and_invariance(seed, m):
    p, h, rng = _setup(seed, m=m)
    perm = rng.permutation(m)
    np.testing.assert_allclose(attention_block(h[perm], p), attention_block(h, p)[perm], atol=1e-12)
    for pool in ("mean", "max"):
        np.testing.assert_allclose(set_transformer(h[perm], [p, p], pool), set_transformer(h, [p, p], pool), atol=1e-12)


def test_causal_mask_breaks_equivariance():
    p, h, _ = _setup(3)
    perm = np.arange(len(h))[::-1]
    assert not np.allclose(attention_block(h[perm], p, causal=True), attention_block(h, p, causal=True)[perm])


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), reps=st.integers(2, 4))
def test_duplicating_every_token_changes_nothing(seed, reps):
    p, h, _ = _setup(seed)
    hh = np.concatenate([h] * reps)
    np.testing.assert_allclose(attention_block(hh, p)[: len(h)], attention_block(h, p), atol=1e-12)
    for pool in ("mean", "max"):
        np.testing.assert_allclose(set_transformer(hh, [p], pool), set_transformer(h, [p], pool), atol=1e-12)


def test_weights_are_multiplicities():
    p, h, _ = _setup(4)
    seq = np.concatenate([h[:2], h[:2], h[2:], h[:1]])  # h_0 three times, h_1 twice
    points, w = empirical_measure(seq)
    np.testing.assert_array_equal(points, h)
    np.testing.assert_allclose(w * len(seq), [3, 2] + [1] * (len(h) - 2))
    out = attention_block(seq, p)
    np.testing.assert_allclose(attention_block(points, p, weights=w)[0], out[0], atol=1e-12)
    np.testing.assert_allclose(set_transformer(points, [p], weights=w), set_transformer(seq, [p]), atol=1e-12)
    np.testing.assert_allclose(mean_pool(points, w * 7), seq.mean(0), atol=1e-12)  # weights: any scale
    assert not np.allclose(attention_block(points, p)[0], out[0])  # unweighted: a different measure


def test_soft_max_pool_tends_to_max():
    _, h, _ = _setup(5, m=9)
    gaps = [np.max(max_pool(h) - soft_max_pool(h, b)) for b in (1.0, 10.0, 100.0, 1000.0)]
    assert all(0 <= g <= np.log(9) / b + 1e-12 for g, b in zip(gaps, (1.0, 10.0, 100.0, 1000.0)))
    assert gaps[-1] < 3e-3
    np.testing.assert_allclose(soft_max_pool(h, 1e-9), mean_pool(h), atol=1e-6)  # beta -> 0: mean


def test_next_token_distribution():
    p, h, rng = _setup(6)
    B = rng.standard_normal((11, 4))
    q = next_token_distribution(h, [p], B)
    assert q.shape == (11,) and abs(q.sum() - 1) < 1e-12
    cold = next_token_distribution(h, [p], B, tau=1e-3)
    assert cold.argmax() == q.argmax() and cold.max() > 0.99


def test_batch_axes_and_unit_norm():
    p, h, _ = _setup(7, norm="unit")
    batch = np.stack([h, h[::-1]])  # (2, m, d)
    out = attention_block(batch, p)
    np.testing.assert_allclose(out[0], attention_block(h, p), atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(out, axis=-1), 1.0, atol=1e-12)


def test_bad_input():
    p, h, _ = _setup()
    with pytest.raises(ValueError, match="d_e"):
        att(h[:, :3], p.att)
    with pytest.raises(ValueError, match="weights"):
        att(h, p.att, weights=np.ones(3))
    with pytest.raises(ValueError, match="> 0"):
        att(h, p.att, weights=np.zeros(len(h)))
    with pytest.raises(ValueError, match="V must"):
        AttentionParams(np.ones((2, 3)), np.ones((2, 3)), np.ones((2, 2)))
    with pytest.raises(ValueError, match="K must"):
        AttentionParams(np.ones((2, 3)), np.ones((3, 3)), np.ones((3, 3)))
    with pytest.raises(ValueError, match="norm"):
        BlockParams(p.att, p.W1, p.b1, p.W2, p.b2, norm="batch")
    with pytest.raises(ValueError, match="pool"):
        set_transformer(h, [p], "sum")
    with pytest.raises(ValueError, match="beta"):
        soft_max_pool(h, 0.0)
    with pytest.raises(ValueError, match="at least one"):
        att(np.zeros((0, 4)), p.att)
