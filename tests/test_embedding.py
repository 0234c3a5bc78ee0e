"""Tests for nextword.embedding: lookup, one-hot view and the scatter-add gradient."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from nextword.embedding import TokenEmbedding, embed, embedding_grad, one_hot
from nextword.numerics import central_difference


@settings(max_examples=40, deadline=None)
@given(V=st.integers(1, 9), d=st.integers(1, 5), data=st.data())
def test_lookup_equals_one_hot_product_and_gradient_is_its_transpose(V, d, data):
    ids = data.draw(arrays(np.int64, st.tuples(st.integers(1, 3), st.integers(1, 6)), elements=st.integers(0, V - 1)))
    rng = np.random.default_rng(V * 10 + d)
    table = rng.standard_normal((V, d))
    oh = one_hot(ids, V)
    assert oh.shape == ids.shape + (V,) and np.all(oh.sum(-1) == 1)
    np.testing.assert_allclose(embed(table, ids), oh @ table, rtol=0, atol=1e-14)
    g = rng.standard_normal(ids.shape + (d,))
    # d/dtable of sum(g * one_hot(ids) @ table) = one_hot^T g
    expected = oh.reshape(-1, V).T @ g.reshape(-1, d)
    np.testing.assert_allclose(embedding_grad(ids, g, V), expected, rtol=1e-12, atol=1e-12)


def test_gradient_matches_torch_embedding():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    emb = TokenEmbedding(7, 4, rng=rng)
    ids = np.array([[0, 3, 3], [6, 3, 0]])
    g = rng.standard_normal((2, 3, 4))
    ref = torch.nn.Embedding(7, 4, dtype=torch.float64)
    with torch.no_grad():
        ref.weight.copy_(torch.from_numpy(emb.table))
    out = ref(torch.from_numpy(ids))
    np.testing.assert_allclose(emb(ids), out.detach().numpy(), rtol=0, atol=0)
    (out * torch.from_numpy(g)).sum().backward()
    np.testing.assert_allclose(emb.backward(ids, g), ref.weight.grad.numpy(), rtol=1e-12, atol=1e-12)
    assert emb.num_parameters() == 28
    np.testing.assert_array_equal(emb.phi[:, 3], emb.table[3])  # paper's phi: columns are tokens


def test_finite_difference_gradient():
    rng = np.random.default_rng(1)
    table, ids = rng.standard_normal((5, 3)), np.array([4, 1, 4])
    W = rng.standard_normal((3, 3))

    def loss(tab):
        return float(np.sum(np.tanh(embed(tab, ids)) * W))

    g_out = (1 - np.tanh(embed(table, ids)) ** 2) * W  # dL/d(embedding)
    grad = embedding_grad(ids, g_out, 5)
    fd = central_difference(loss, table)  # (5, 3)
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-8)


def test_bad_inputs():
    table = np.ones((4, 2))
    with pytest.raises(ValueError, match=r"ids must lie in \[0, 4\)"):
        embed(table, [0, 4])
    with pytest.raises(ValueError, match=r"\[0, 4\)"):
        embed(table, [-1])
    with pytest.raises(TypeError, match="integer"):
        embed(table, np.array([0.0, 1.0]))
    with pytest.raises(ValueError, match="2 dimensions"):
        embed(np.ones(4), [0])
    with pytest.raises(ValueError, match="non-finite"):
        embed(np.full((4, 2), np.nan), [0])
    with pytest.raises(ValueError, match="grad_output must have shape"):
        embedding_grad([0, 1], np.ones((3, 2)), 4)
    with pytest.raises(ValueError, match="vocab_size"):
        one_hot([0], 0)
