"""Liao App. B: the closed-form hybrid-objective gradients against finite differences and torch autograd."""

import numpy as np
import pytest

from nextword.theory.svflow.gradients import (
    GaussianFlowLayer,
    flatten_params,
    hybrid_forward,
    hybrid_gradients,
    random_gaussian_layer,
    unflatten_params,
)


def _problem(seed=3, d=3, Z=4, L=3, C=2):
    rng = np.random.default_rng(seed)
    layers = [random_gaussian_layer(d, Z, rng, scale=0.7) for _ in range(L)]
    return rng.normal(size=d), layers, rng.normal(size=(d, C)), 1


def _closed_form_vector(g, L):
    return np.concatenate(
        [
            np.concatenate([g.grad_W_g[ell].ravel(), g.grad_b_g[ell], g.grad_means[ell].ravel(), g.grad_log_vars[ell]])
            for ell in range(L)
        ]
    )


@pytest.mark.parametrize("beta", [0.0, 0.3, 2.0])
def test_closed_form_matches_finite_differences(beta):
    x0, layers, W, y = _problem()
    g = hybrid_gradients(x0, layers, W, y, beta)
    theta = flatten_params(layers)
    h = 1e-6

    def J(t):
        return hybrid_forward(x0, unflatten_params(t, layers), W, y, beta).J

    fd = np.array([(J(theta + h * e) - J(theta - h * e)) / (2 * h) for e in np.eye(theta.size)])
    np.testing.assert_allclose(_closed_form_vector(g, len(layers)), fd, atol=1e-7)


def test_closed_form_matches_torch_autograd():
    torch = pytest.importorskip("torch")
    x0, layers, W, y = _problem(seed=5)
    beta = 0.4
    params = [
        {f: torch.tensor(getattr(layer, f), requires_grad=True) for f in ("W_g", "b_g", "means", "log_vars")}
        for layer in layers
    ]
    x = torch.tensor(x0)
    J_var = 0.0
    for P in params:
        log_q = torch.log_softmax(P["W_g"] @ x + P["b_g"], dim=0)
        diff = x[None, :] - P["means"]
        log_lik = -0.5 * (diff**2).sum(1) / P["log_vars"].exp() - 0.5 * x.numel() * P["log_vars"]
        log_p = torch.log_softmax(log_lik, dim=0)
        J_var = J_var + (log_q.exp() * (log_q - log_p)).sum()
        x = x + log_q.exp() @ (-diff / P["log_vars"].exp()[:, None])
    J = -torch.log_softmax(torch.tensor(W).T @ x, dim=0)[y] + beta * J_var
    J.backward()
    g = hybrid_gradients(x0, layers, W, y, beta)
    assert abs(float(J.detach()) - hybrid_forward(x0, layers, W, y, beta).J) < 1e-12
    for ell, P in enumerate(params):
        np.testing.assert_allclose(g.grad_W_g[ell], P["W_g"].grad.numpy(), atol=1e-12)
        np.testing.assert_allclose(g.grad_b_g[ell], P["b_g"].grad.numpy(), atol=1e-12)
        np.testing.assert_allclose(g.grad_means[ell], P["means"].grad.numpy(), atol=1e-12)
        np.testing.assert_allclose(g.grad_log_vars[ell], P["log_vars"].grad.numpy(), atol=1e-12)


def test_advantages_are_centred_and_B_is_upper_triangular():
    x0, layers, W, y = _problem(seed=7)
    g = hybrid_gradients(x0, layers, W, y, beta=1.3)
    for ell, q in enumerate(g.forward.q):
        assert abs(float(q @ g.eta[ell])) < 1e-12  # sum_z q eta = 0: common logit shifts get no gradient
        assert np.all(g.B[ell][: ell + 1] == 0)  # B_{k,l} only for downstream k > l


def test_bad_input_is_named():
    x0, layers, W, y = _problem()
    with pytest.raises(ValueError, match="x0"):
        hybrid_forward(np.zeros((2, 3)), layers, W, y, 0.1)
    with pytest.raises(ValueError, match="W_cls"):
        hybrid_forward(x0, layers, np.zeros((5, 2)), y, 0.1)
    with pytest.raises(ValueError, match="y"):
        hybrid_forward(x0, layers, W, 9, 0.1)
    with pytest.raises(ValueError, match="beta"):
        hybrid_forward(x0, layers, W, y, -1.0)
    with pytest.raises(ValueError, match="means"):
        GaussianFlowLayer(np.zeros((2, 3)), np.zeros(2), np.zeros((3, 3)), np.zeros(2))


@pytest.mark.parametrize("top1", [False, True])
def test_moe_gradients_match_finite_differences(top1):
    from nextword.theory.svflow.gradients import moe_forward_backward

    rng = np.random.default_rng(8)
    X, Y = rng.normal(size=(6, 3)), rng.normal(size=(6, 2))
    W, b, A = rng.normal(size=(4, 3)), rng.normal(size=4), rng.normal(size=(4, 2, 3))
    st = moe_forward_backward(X, Y, W, b, A, top1=top1)
    h = 1e-6
    for arr, grad, which in ((W, st.grad_W_g, 0), (b, st.grad_b_g, 1), (A, st.grad_experts, 2)):
        fd = np.zeros_like(arr)
        for idx in np.ndindex(arr.shape):
            E = np.zeros_like(arr)
            E[idx] = h
            args_p = [W, b, A]
            args_m = [W, b, A]
            args_p[which], args_m[which] = arr + E, arr - E
            fd[idx] = (
                moe_forward_backward(X, Y, *args_p, top1=top1).loss
                - moe_forward_backward(X, Y, *args_m, top1=top1).loss
            ) / (2 * h)
        np.testing.assert_allclose(grad, fd, atol=1e-8)
    if top1:  # an expert chosen by no input gets no gradient at all
        unused = np.setdiff1d(np.arange(4), np.argmax(st.gates, axis=1))
        assert np.all(st.grad_experts[unused] == 0)


def _attention_problem(seed=11, N=3, T=5, V=6, d=4, d_h=3):
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, V, size=(N, T))
    y = rng.integers(0, 2, size=(N, T)).astype(float)
    tables = [rng.normal(size=(V, d)) for _ in range(3)]
    projs = [rng.normal(size=(d, d_h)) for _ in range(3)]
    return ids, y, tables, projs, rng.normal(size=d_h)


def test_attention_role_gradients_match_torch_autograd():
    torch = pytest.importorskip("torch")
    from nextword.theory.svflow.gradients import attention_role_gradients

    ids, y, tables, projs, w = _attention_problem()
    st = attention_role_gradients(ids, y, *tables, *projs, w)
    leaves = [torch.tensor(a, requires_grad=True) for a in (*tables, *projs, w)]
    EQ, EK, EV, WQ, WK, WV, wo = leaves
    idx = torch.tensor(ids)
    Q, K, V = EQ[idx] @ WQ, EK[idx] @ WK, EV[idx] @ WV
    A = torch.softmax(Q @ K.transpose(1, 2) / np.sqrt(WQ.shape[1]), dim=-1)
    loss = torch.nn.functional.binary_cross_entropy_with_logits((A @ V) @ wo, torch.tensor(y))
    loss.backward()
    assert abs(st.loss - float(loss.detach())) < 1e-12
    np.testing.assert_allclose(st.attention, A.detach().numpy(), atol=1e-12)
    ours = (st.grad_E_Q, st.grad_E_K, st.grad_E_V, st.grad_W_Q, st.grad_W_K, st.grad_W_V, st.grad_w_out)
    for mine, leaf in zip(ours, leaves):
        np.testing.assert_allclose(mine, leaf.grad.numpy(), atol=1e-12)


def test_attention_coupled_gradient_is_the_sum_of_the_roles():
    from nextword.theory.svflow.gradients import attention_role_gradients

    ids, y, tables, projs, w = _attention_problem(seed=12)
    E = tables[0]
    st = attention_role_gradients(ids, y, E, E, E, *projs, w)
    h = 1e-6
    fd = np.zeros_like(E)
    for idx in np.ndindex(E.shape):
        D = np.zeros_like(E)
        D[idx] = h
        fd[idx] = (
            attention_role_gradients(ids, y, E + D, E + D, E + D, *projs, w).loss
            - attention_role_gradients(ids, y, E - D, E - D, E - D, *projs, w).loss
        ) / (2 * h)
    np.testing.assert_allclose(st.grad_coupled, fd, atol=1e-8)
    unused = np.setdiff1d(np.arange(E.shape[0]), ids)  # a token absent from every sequence gets nothing
    assert np.all(st.grad_coupled[unused] == 0)


def test_attention_role_gradients_bad_input_is_named():
    from nextword.theory.svflow.gradients import attention_role_gradients

    ids, y, tables, projs, w = _attention_problem()
    with pytest.raises(ValueError, match="ids"):
        attention_role_gradients(ids.astype(float), y, *tables, *projs, w)
    with pytest.raises(ValueError, match="ids must lie"):
        attention_role_gradients(ids + 10, y, *tables, *projs, w)
    with pytest.raises(ValueError, match="y must"):
        attention_role_gradients(ids, 2 * y + 1, *tables, *projs, w)
    with pytest.raises(ValueError, match="E_Q, E_K, E_V"):
        attention_role_gradients(ids, y, tables[0], tables[1][:, :2], tables[2], *projs, w)
    with pytest.raises(ValueError, match="W_Q, W_K, W_V"):
        attention_role_gradients(ids, y, *tables, projs[0][:2], projs[1], projs[2], w)
    with pytest.raises(ValueError, match="w_out"):
        attention_role_gradients(ids, y, *tables, *projs, np.ones(7))
