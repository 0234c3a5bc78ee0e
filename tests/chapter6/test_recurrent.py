"""Tests for nextword.chapter6.recurrent (RNN baseline, dependency graphs, bottleneck measurements)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse.csgraph import shortest_path

from nextword.chapter6 import (
    attention_graph,
    attention_recall,
    copy_task,
    linear_state_recall,
    path_lengths,
    rnn_graph,
    rnn_state_jacobian,
    rnn_states,
    sequential_depth,
)


def _params(rng, d_in=3, d=4, scale=0.6):
    return (
        rng.standard_normal((5, d_in)),
        rng.standard_normal((d_in, d)),
        scale * rng.standard_normal((d, d)),
        rng.standard_normal(d),
        rng.standard_normal(d),
    )


def test_rnn_states_match_torch_rnn():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    X, W_x, W_h, b, h0 = _params(rng)
    rnn = torch.nn.RNN(3, 4, batch_first=True, bias=True).double()
    with torch.no_grad():  # torch: h = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)
        rnn.weight_ih_l0.copy_(torch.tensor(W_x.T))
        rnn.weight_hh_l0.copy_(torch.tensor(W_h.T))
        rnn.bias_ih_l0.copy_(torch.tensor(b))
        rnn.bias_hh_l0.zero_()
        ref, _ = rnn(torch.tensor(X)[None], torch.tensor(h0)[None, None])
    np.testing.assert_allclose(rnn_states(X, W_x, W_h, b, h0), ref[0].numpy(), atol=1e-12)


@pytest.mark.parametrize("nonlinearity", ["tanh", "linear"])
def test_state_jacobian_matches_autograd(nonlinearity):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    X, W_x, W_h, b, h0 = _params(rng)
    s, t = 1, 4
    H = rnn_states(X, W_x, W_h, b, h0, nonlinearity=nonlinearity)
    f = torch.tanh if nonlinearity == "tanh" else (lambda a: a)

    def roll(hs):  # h[s] -> h[t]
        h = hs
        for u in range(s + 1, t + 1):
            h = f(torch.tensor(X[u] @ W_x + b) + h @ torch.tensor(W_h))
        return h

    ref = torch.autograd.functional.jacobian(roll, torch.tensor(H[s])).numpy()
    got = rnn_state_jacobian(X, W_x, W_h, b, h0, s=s, t=t, nonlinearity=nonlinearity)
    np.testing.assert_allclose(got, ref, atol=1e-12)


def test_linear_orthogonal_rnn_gradient_factor_is_lambda_power():
    rng = np.random.default_rng(2)
    Q, _ = np.linalg.qr(rng.standard_normal((5, 5)))
    lam, T = 0.9, 22
    J = rnn_state_jacobian(np.zeros((T, 1)), np.zeros((1, 5)), lam * Q, s=0, t=T - 1, nonlinearity="linear")
    np.testing.assert_allclose(np.linalg.svd(J, compute_uv=False), lam ** (T - 1), rtol=1e-10)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 12))
def test_path_lengths_agree_with_scipy(T):
    for A in (rnn_graph(T), attention_graph(T), attention_graph(T, causal=False)):
        ref = shortest_path(A.astype(float), directed=True, unweighted=True, indices=0)
        np.testing.assert_array_equal(path_lengths(A, 0), ref)
    assert path_lengths(rnn_graph(T), 0)[-1] == T  # x1 -> h1 -> ... -> hT
    assert sequential_depth(rnn_graph(T)) == T and sequential_depth(attention_graph(T)) == 1


def test_causal_graph_has_no_path_from_the_future():
    d = path_lengths(attention_graph(5), 4)  # from x5
    assert np.isinf(d[5:9]).all() and d[9] == 1


def test_sequential_depth_rejects_cycles_and_bad_input():
    with pytest.raises(ValueError, match="cycle"):
        sequential_depth(np.array([[0, 1], [1, 0]], bool))
    with pytest.raises(ValueError, match="square"):
        path_lengths(np.zeros((2, 3), bool), 0)
    with pytest.raises(ValueError, match="W_x"):
        rnn_states(np.zeros((3, 2)), np.zeros((3, 4)), np.zeros((4, 4)))
    with pytest.raises(ValueError, match="nonlinearity"):
        rnn_states(np.zeros((3, 2)), np.zeros((2, 4)), np.zeros((4, 4)), nonlinearity="relu")


def test_copy_task_layout():
    ids, mask = copy_task(6, 4, 5, np.random.default_rng(0))
    assert ids.shape == (6, 9) and mask.shape == (6, 8)
    assert (ids[:, 4] == 5).all() and (ids[:, :4] == ids[:, 5:]).all()
    assert mask[:, 4:].all() and not mask[:, :4].any()
    with pytest.raises(TypeError, match="rng"):
        copy_task(2, 3, 4, 0)


def test_bottleneck_linear_state_vs_attention():
    rng = np.random.default_rng(3)
    # L (V - 1) <= d: the linear state can keep everything; far beyond it, it cannot
    assert linear_state_recall(3, 16, 4, rng, num_train=600, num_test=200).min() == 1.0
    lost = linear_state_recall(40, 16, 4, rng, num_train=600, num_test=200)
    assert lost.mean() < 0.6
    assert attention_recall(40, 4, rng, num_test=200).min() == 1.0
