"""Tests for nextword.theory.dynamics (+ dynamics_diagnostics, dynamics_toy, dynamics_sticky)."""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nextword.attention import attention_backward, softmax
from nextword.numerics import central_difference
from nextword.theory.dynamics import (
    PCA,
    HeadParams,
    advantage_matrix,
    attention_diagnostics,
    column_usage,
    compatibility_matrix,
    cross_entropy,
    dominant_query_loss_change,
    exact_value_update_loss_change,
    expected_compatibility,
    first_order_loss_change,
    head_forward,
    head_gradients,
    pca_fit,
    responsibility_signal,
    score_gradient,
    upstream_gradient,
    value_norms,
    value_update,
)
from nextword.theory.dynamics import (
    ProtocolConfig,
    StickyExperimentConfig,
    accuracy,
    bayes_filter_log_probs,
    make_sticky_task,
    markov_entropy_rate,
    mean_cross_entropy,
    mean_kl,
    predictive_entropy,
    run_sticky_experiment,
    same_symbol_attention,
    sticky_means,
    train_protocol,
)
from nextword.theory.dynamics import ToyConfig, attention_entropy, simulate_toy

PARAM_NAMES = ("W_Q", "W_K", "W_V", "W_O", "b")


def _setup(seed=0, T=6, d_x=4, d_k=3, d_v=3, C=4, scale=0.8):
    rng = np.random.default_rng(seed)
    params = HeadParams.init(d_x, d_k, d_v, C, rng=rng, scale=scale)
    X = rng.standard_normal((T, d_x))
    y = rng.integers(0, C, size=T)
    return params, X, y


# --------------------------------------------------------------------------------------------
# parameters, forward, gradients
# --------------------------------------------------------------------------------------------
def test_head_params_validates_shapes_and_rng():
    p, _, _ = _setup()
    with pytest.raises(ValueError, match="W_K"):
        replace(p, W_K=np.zeros((4, 2)))
    with pytest.raises(ValueError, match="W_O"):
        replace(p, W_O=np.zeros((5, 4)))
    with pytest.raises(ValueError, match="b must have shape"):
        replace(p, b=np.zeros(3))
    with pytest.raises(TypeError, match="rng"):
        HeadParams.init(2, 2, 2, 2, rng=0)
    with pytest.raises(ValueError, match="scale"):
        HeadParams.init(2, 2, 2, 2, rng=np.random.default_rng(0), scale=-1.0)


def test_forward_and_gradients_reject_bad_input():
    p, X, y = _setup()
    with pytest.raises(ValueError, match="d_x"):
        head_forward(p, X[:, :3])
    with pytest.raises(ValueError, match="y must have shape"):
        head_gradients(p, X, y[:-1])
    with pytest.raises(ValueError, match=r"y must lie in"):
        head_gradients(p, X, y + 10)
    with pytest.raises(ValueError, match="reduction"):
        head_gradients(p, X, y, reduction="max")
    with pytest.raises(TypeError, match="HeadParams"):
        head_forward({"W_Q": 1}, X)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("reduction", ["sum", "mean"])
def test_head_gradients_match_torch_autograd(causal, reduction):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    params = HeadParams.init(5, 4, 3, 4, rng=rng, scale=0.8)
    X = rng.standard_normal((2, 7, 5))  # a batch of two sequences
    y = rng.integers(0, 4, size=(2, 7))
    t = {k: torch.tensor(getattr(params, k), requires_grad=True) for k in PARAM_NAMES}
    Xt = torch.tensor(X)
    S = (Xt @ t["W_Q"]) @ (Xt @ t["W_K"]).transpose(-1, -2) / np.sqrt(4)
    if causal:
        S = S.masked_fill(~torch.tril(torch.ones(7, 7, dtype=torch.bool)), float("-inf"))
    logits = torch.softmax(S, -1) @ (Xt @ t["W_V"]) @ t["W_O"] + t["b"]
    L = torch.nn.functional.cross_entropy(logits.reshape(-1, 4), torch.tensor(y).reshape(-1), reduction=reduction)
    L.backward()
    g = head_gradients(params, X, y, causal=causal, reduction=reduction)
    assert g.loss == pytest.approx(L.item(), rel=1e-12)
    for k in PARAM_NAMES:
        np.testing.assert_allclose(getattr(g, k), t[k].grad.numpy(), atol=1e-12)


def test_head_gradients_match_finite_differences():
    params, X, y = _setup(seed=2, T=5, d_x=3, d_k=2, d_v=2, C=3)
    g = head_gradients(params, X, y, causal=True)
    for name in PARAM_NAMES:

        def loss(W, name=name):
            return cross_entropy(head_forward(replace(params, **{name: W}), X, causal=True).log_probs, y)

        fd = central_difference(loss, getattr(params, name))  # the parameter's shape
        np.testing.assert_allclose(getattr(g, name), fd, rtol=1e-5, atol=1e-8)


def test_upstream_gradient_is_eq14():
    params, X, y = _setup()
    f = head_forward(params, X)
    U = upstream_gradient(f.probs, y, params.W_O)
    np.testing.assert_allclose(U, head_gradients(params, X, y).U, atol=1e-14)
    with pytest.raises(ValueError, match="W_O"):
        upstream_gradient(f.probs, y, params.W_O[:, :2])


# --------------------------------------------------------------------------------------------
# advantage, responsibilities, first-order loss change
# --------------------------------------------------------------------------------------------
def test_advantage_and_score_gradient_agree_with_attention_backward():
    params, X, y = _setup(seed=3)
    f = head_forward(params, X, causal=True)
    U = upstream_gradient(f.probs, y, params.W_O)
    B = compatibility_matrix(U, f.V)
    ref = attention_backward(X, params.W_Q, params.W_K, params.W_V, U, causal=True)
    np.testing.assert_allclose(B, ref.weights, atol=1e-13)
    np.testing.assert_allclose(score_gradient(f.alpha, B), ref.scores, atol=1e-13)
    np.testing.assert_allclose(expected_compatibility(f.alpha, B), ref.mean_compatibility[:, 0], atol=1e-13)
    A = advantage_matrix(f.alpha, B)
    mask = f.alpha > 0
    np.testing.assert_allclose(A[mask], ref.advantage[mask], atol=1e-13)
    assert np.all(A[~mask] == 0)  # masked keys get no advantage
    np.testing.assert_allclose(responsibility_signal(f.alpha, U), ref.v, atol=1e-13)


@settings(max_examples=30, deadline=None)
@given(T=st.integers(1, 6), d_v=st.integers(1, 4), seed=st.integers(0, 10_000))
def test_advantage_has_zero_attention_mean_per_row(T, d_v, seed):
    rng = np.random.default_rng(seed)
    alpha = softmax(rng.standard_normal((T, T)) * 2)
    B = compatibility_matrix(rng.standard_normal((T, d_v)), rng.standard_normal((T, d_v)))
    A = advantage_matrix(alpha, B)
    np.testing.assert_allclose((alpha * A).sum(axis=1), 0.0, atol=1e-12)
    np.testing.assert_allclose(score_gradient(alpha, B), -alpha * A, atol=1e-12)
    np.testing.assert_allclose(column_usage(alpha).sum(), T)


def test_alpha_must_be_row_stochastic():
    with pytest.raises(ValueError, match="row-stochastic"):
        advantage_matrix(np.ones((3, 3)), np.zeros((3, 3)))
    with pytest.raises(ValueError, match="square"):
        column_usage(np.ones((2, 3)) / 3)
    with pytest.raises(ValueError, match="shape of alpha"):
        score_gradient(np.eye(3), np.zeros((2, 2)))


def test_first_order_loss_change_sums_to_minus_eta_norm_and_matches_exact():
    params, X, y = _setup(seed=4)
    f = head_forward(params, X)
    U = upstream_gradient(f.probs, y, params.W_O)
    ubar = responsibility_signal(f.alpha, U)
    for j in range(X.shape[0]):
        fo = first_order_loss_change(f.alpha, U, j, 1e-3)
        assert fo.sum() == pytest.approx(-1e-3 * ubar[j] @ ubar[j], rel=1e-12)
    errs = []
    for eta in (1e-3, 1e-4):
        exact = exact_value_update_loss_change(f.alpha, f.V, params.W_O, params.b, y, 2, eta)
        fo = first_order_loss_change(f.alpha, U, 2, eta)
        errs.append(np.abs(exact - fo).max() / np.abs(fo).max())
    assert errs[1] < 1e-3 and errs[1] < errs[0] / 5  # error shrinks linearly in eta
    with pytest.raises(ValueError, match="j must index"):
        first_order_loss_change(f.alpha, U, 99, 1e-3)
    with pytest.raises(ValueError, match="lr"):
        value_update(f.alpha, U, -1.0)


def test_dominant_query_formula_is_exact_when_one_query_uses_the_column():
    rng = np.random.default_rng(5)
    T, j, i = 5, 2, 3
    alpha = softmax(rng.standard_normal((T, T)))
    alpha[:, j] = 0.0
    alpha[i, j] = 0.6
    alpha /= alpha.sum(axis=1, keepdims=True)  # rows stay stochastic; only query i uses column j
    U = rng.standard_normal((T, 3))
    fo = first_order_loss_change(alpha, U, j, 0.1)
    dq = dominant_query_loss_change(alpha, U, j, 0.1)
    np.testing.assert_allclose(fo, dq, atol=1e-14)
    assert dq[i] < 0 and np.all(dq <= 0)
    np.testing.assert_allclose(value_update(alpha, U, 0.1)[j], -0.1 * alpha[i, j] * U[i])


# --------------------------------------------------------------------------------------------
# diagnostics and PCA
# --------------------------------------------------------------------------------------------
def test_attention_diagnostics_fields():
    params, X, y = _setup(seed=6)
    d = attention_diagnostics(params, X, y, causal=True)
    f = head_forward(params, X, causal=True)
    assert d.compatibility.shape == (6, 6) and d.advantage.shape == (6, 6)
    assert d.column_usage.sum() == pytest.approx(6)
    assert d.column_usage[0] >= d.column_usage[-1]  # causal: key 0 is seen by every query
    np.testing.assert_allclose(d.value_norms, np.linalg.norm(f.V, axis=1))
    assert value_norms(np.stack([f.V, 2 * f.V])).shape == (2, 6)


def test_pca_matches_covariance_eigendecomposition():
    rng = np.random.default_rng(7)
    pts = rng.standard_normal((50, 4)) @ np.diag([3.0, 2.0, 1.0, 0.1])
    pca = pca_fit(pts.reshape(5, 10, 4), n_components=2)  # leading axes are samples
    assert isinstance(pca, PCA)
    evals, evecs = np.linalg.eigh(np.cov(pts.T))
    top = evecs[:, ::-1][:, :2].T
    np.testing.assert_allclose(np.abs(pca.components @ top.T), np.eye(2), atol=1e-10)
    assert pca.explained_variance_ratio == pytest.approx(evals[::-1][:2] / evals.sum())
    np.testing.assert_allclose(pca.components @ pca.components.T, np.eye(2), atol=1e-12)
    assert pca.project(pts).shape == (50, 2)
    with pytest.raises(ValueError, match="n_components"):
        pca_fit(pts, n_components=5)
    with pytest.raises(ValueError, match="last dimension"):
        pca.project(np.zeros((3, 5)))


# --------------------------------------------------------------------------------------------
# §7.1 toy
# --------------------------------------------------------------------------------------------
def test_toy_simulation_shapes_determinism_and_progress():
    cfg = ToyConfig(steps=40)
    a = simulate_toy(cfg, rng=np.random.default_rng(2))
    b = simulate_toy(cfg, rng=np.random.default_rng(2))
    assert a.alphas.shape == (41, 5, 5) and a.values.shape == (41, 5, 2) and a.losses.shape == (41,)
    np.testing.assert_array_equal(a.losses, b.losses)
    assert a.losses[-1] < 0.75 * a.losses[0]
    np.testing.assert_allclose(a.values[-1], a.X @ a.final.W_V)
    assert attention_entropy(np.eye(3)).tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="lr"):
        ToyConfig(lr=0.0)
    with pytest.raises(TypeError, match="rng"):
        simulate_toy(cfg, rng=None)


# --------------------------------------------------------------------------------------------
# §7.2 sticky chain
# --------------------------------------------------------------------------------------------
def test_sticky_task_inputs_and_noise_free_bayes_filter():
    rng = np.random.default_rng(8)
    means = sticky_means(3, 4, rng=rng)
    states = np.array([0, 1, 1, 2, 0, 0])
    task = make_sticky_task(states, means, rng=rng, noise_std=0.0)
    np.testing.assert_array_equal(task.X, means[states[:-1]])
    np.testing.assert_array_equal(task.targets, states[1:])
    P = np.array([[0.5, 0.3, 0.2], [0.1, 0.8, 0.1], [0.3, 0.3, 0.4]])
    np.testing.assert_allclose(bayes_filter_log_probs(task, P), np.log(P[states[:-1]]), atol=1e-12)
    with pytest.raises(ValueError, match="row-stochastic"):
        bayes_filter_log_probs(task, P * 2)
    with pytest.raises(ValueError, match="states"):
        make_sticky_task(np.array([0]), means, rng=rng)
    batched = make_sticky_task(np.stack([states, states]), means, rng=rng)
    assert batched.X.shape == (2, 5, 4) and batched.T == 5
    with pytest.raises(ValueError, match="one sequence"):
        bayes_filter_log_probs(batched, P)


def test_bayes_filter_matches_brute_force_enumeration():
    """p(y_t | x_1..x_t) by summing the joint over every hidden path (C=2, T=4)."""
    rng = np.random.default_rng(9)
    C, T, sigma = 2, 4, 1.5
    P = np.array([[0.7, 0.3], [0.4, 0.6]])
    pi = np.array([4 / 7, 3 / 7])  # stationary law of P
    means = np.array([[1.0, -0.5], [-1.0, 0.5]])
    task = make_sticky_task(np.array([0, 1, 1, 0, 0]), means, rng=rng, noise_std=sigma)
    got = np.exp(bayes_filter_log_probs(task, P))
    for t in range(T):  # position t predicts y_{t+1} from x_1..x_{t+1} (which carry y_0..y_t)
        post = np.zeros(C)
        for path in itertools.product(range(C), repeat=t + 2):  # y_0..y_{t+1}
            w = pi[path[0]] * np.prod([P[path[k], path[k + 1]] for k in range(t + 1)])
            lik = np.prod([np.exp(-0.5 * np.sum((task.X[k] - means[path[k]]) ** 2) / sigma**2) for k in range(t + 1)])
            post[path[-1]] += w * lik
        np.testing.assert_allclose(got[t], post / post.sum(), atol=1e-12)


def test_entropy_rate_and_metrics():
    from nextword.data import sticky_markov_chain

    chain = sticky_markov_chain(8, 0.3, rule="inverse_circular_distance")
    assert markov_entropy_rate(chain.transition) == pytest.approx(chain.entropy_rate(), abs=1e-12)
    lp = np.log(np.full((4, 5), 0.2))
    assert predictive_entropy(lp) == pytest.approx(np.log(5))
    assert mean_kl(lp, lp) == pytest.approx(0.0)
    rng = np.random.default_rng(10)
    a, b = np.log(softmax(rng.standard_normal((6, 3)))), np.log(softmax(rng.standard_normal((6, 3))))
    assert mean_kl(a, b) > 0
    y = np.argmax(a, axis=1)
    assert accuracy(a, y) == 1.0
    assert mean_cross_entropy(a, y) == pytest.approx(-a.max(axis=1).mean())
    with pytest.raises(ValueError, match="same shape"):
        mean_kl(a, b[:3])


def _tiny_task(seed=11, T=24, batch=4):
    from nextword.data import sticky_markov_chain

    rng = np.random.default_rng(seed)
    chain = sticky_markov_chain(4, 0.6, rule="uniform_others")
    means = sticky_means(4, 6, rng=rng, scale=2.0)
    task = make_sticky_task(np.stack([chain.sample(T + 1, rng) for _ in range(batch)]), means, rng=rng)
    params = HeadParams.init(6, 3, 4, 4, rng=rng, scale=0.3)
    return task, params


def test_train_protocols_reduce_the_loss_and_em_moves_values_by_least_squares():
    task, params = _tiny_task()
    probe = replace(task, states=task.states[0], X=task.X[0])
    for protocol in ("sgd", "em"):
        run = train_protocol(protocol, params, task, ProtocolConfig(steps=30, lr=0.5, value_lr=2.0), probe=probe)
        assert run.losses.shape == (31,) and run.losses[-1] < run.losses[0]
        np.testing.assert_allclose(run.values_final, probe.X @ run.params.W_V)
        assert run.initial is params
    # one EM-like step: W_V moves by the least-squares image of Delta V = -eta_v * alpha^T U_sum
    one = train_protocol("em", params, task, ProtocolConfig(steps=1, lr=0.5, value_lr=2.0))
    g = head_gradients(params, task.X, task.targets, causal=True, reduction="sum")
    dV = (-2.0 * g.dV).reshape(-1, 4)
    Xf = task.X.reshape(-1, 6)
    np.testing.assert_allclose(one.params.W_V - params.W_V, np.linalg.lstsq(Xf, dV, rcond=None)[0], atol=1e-10)
    with pytest.raises(ValueError, match="protocol"):
        train_protocol("adam", params, task)
    with pytest.raises(ValueError, match="probe"):
        train_protocol("sgd", params, lambda step: task)


def test_run_sticky_experiment_small():
    cfg = StickyExperimentConfig(batch=2, T=16, eval_T=60, protocol=ProtocolConfig(steps=4))
    exp = run_sticky_experiment(cfg, rng=np.random.default_rng(12))
    assert exp.metrics["entropy_rate"] == pytest.approx(1.883254, abs=1e-6)
    assert set(exp.metrics) >= {"final_loss_em", "final_loss_sgd", "kl_em_sgd", "bayes_loss"}
    assert exp.em.losses.shape == (5,) and exp.em.values_initial.shape == (60, 15)
    f = head_forward(exp.em.params, exp.eval_task.X, causal=True)
    m = same_symbol_attention(f.alpha, exp.eval_task)
    assert 0.0 < m <= 1.0
    assert same_symbol_attention(np.eye(60), exp.eval_task) == pytest.approx(1.0)
