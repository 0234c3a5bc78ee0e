"""Tests for nextword.theory.barrier, barrier_process and barrier_depth (Agarwal et al., Part 4)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nextword.numerics import central_difference
from nextword.theory.barrier import (
    CONTEXTS,
    attention_residual,
    attention_stats,
    causal_residual,
    diagonal_blocks,
    embedding_log_density,
    jacobian_diagonal_block,
    log_barrier,
    matrix_margins,
    noise_log_density,
    paper_diagonal_block,
    residual_jacobian,
    scalar_attention_variance,
    scalar_margin,
    sequence_margin,
    support_tokens,
)
from nextword.theory.barrier import DepthLayer, deep_log_barrier, deep_residual, layer_diagonal_blocks
from nextword.theory.barrier import (
    sample_scalar_process,
    token_law_monte_carlo,
    token_law_quadrature,
)


def _params(seed: int, L: int = 5, d: int = 3, dk: int = 2, scale: float = 1.0):
    rng = np.random.default_rng(seed)
    return (
        rng.normal(size=(L, d)),
        scale * rng.normal(size=(dk, d)),
        scale * rng.normal(size=(dk, d)),
        rng.normal(size=(d, d)),
    )


# ---------------------------------------------------------------------------------------------
# exact Jacobians
# ---------------------------------------------------------------------------------------------
@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    L=st.integers(1, 5),
    d=st.integers(1, 3),
    dk=st.integers(1, 3),
    context=st.sampled_from(CONTEXTS),
)
def test_full_jacobian_matches_finite_differences(seed, L, d, dk, context):
    X, W_Q, W_K, W_V = _params(seed, L, d, dk)
    J = residual_jacobian(X, W_Q, W_K, W_V, context=context)
    J_fd = central_difference(lambda Z: attention_residual(Z, W_Q, W_K, W_V, context=context), X)
    np.testing.assert_allclose(J, J_fd, atol=1e-7)
    blocks = diagonal_blocks(X, W_Q, W_K, W_V, context=context)
    np.testing.assert_allclose(blocks, np.stack([J[t, :, t, :] for t in range(L)]), atol=1e-12)


@pytest.mark.parametrize("include_current", [False, True])
def test_diagonal_block_matches_torch_autograd(include_current):
    torch = pytest.importorskip("torch")
    X, W_Q, W_K, W_V = _params(3, L=6, d=4, dk=3)
    Wq, Wk, Wv = (torch.tensor(w) for w in (W_Q, W_K, W_V))
    L = X.shape[0]
    allowed = torch.tril(torch.ones(L, L, dtype=torch.bool), diagonal=0 if include_current else -1)

    def residual(Z):
        q, k, v = Z @ Wq.T, Z @ Wk.T, Z @ Wv.T
        s = (q @ k.T).masked_fill(~allowed, float("-inf"))
        a = torch.nan_to_num(torch.softmax(s, dim=-1))  # row 0 of the strict mask: no context
        return Z - a @ v

    J = torch.autograd.functional.jacobian(residual, torch.tensor(X)).numpy()
    for t in range(L):
        got = jacobian_diagonal_block(X, t, W_Q=W_Q, W_K=W_K, W_V=W_V, include_current=include_current)
        np.testing.assert_allclose(got, J[t, :, t, :], atol=1e-12)


def test_block_lower_triangular_and_determinant_factorises():  # Lemma B.3, Eq. (59)
    X, W_Q, W_K, W_V = _params(7, L=5, d=2)
    for context in ("strict", "inclusive"):
        J = residual_jacobian(X, W_Q, W_K, W_V, context=context)
        L, d = X.shape
        for t in range(L):
            for u in range(t + 1, L):
                assert np.all(J[t, :, u, :] == 0.0)
        full = np.linalg.slogdet(J.reshape(L * d, L * d))[1]
        np.testing.assert_allclose(full, log_barrier(X, W_Q, W_K, W_V, include_current=context == "inclusive"))
    J = residual_jacobian(X, W_Q, W_K, W_V, context="bidirectional")
    assert np.abs(J[0, :, 1, :]).max() > 1e-3  # non-causal: an upper block is nonzero


def test_paper_forms_hold_exactly_when_W_V_is_identity_strict():
    X, W_Q, W_K, _ = _params(11)
    np.testing.assert_allclose(paper_diagonal_block(X, W_Q, W_K, None), diagonal_blocks(X, W_Q, W_K, None), atol=1e-13)


def test_paper_forms_fail_for_general_W_V_and_for_inclusive_context():
    X, W_Q, W_K, W_V = _params(12)
    gap = np.abs(paper_diagonal_block(X, W_Q, W_K, W_V) - diagonal_blocks(X, W_Q, W_K, W_V)).max()
    assert gap > 1e-2  # (14) with Σ_t of the values is not ∂e_t/∂x_t for W_V ≠ I
    # the exact form is I − Cov(v, x) A: cross-covariance of values with the key inputs
    st_ = attention_stats(X, W_Q, W_K, W_V)
    A = W_K.T @ W_Q
    np.testing.assert_allclose(diagonal_blocks(X, W_Q, W_K, W_V), np.eye(3) - W_V @ st_.C @ A, atol=1e-13)
    gap53 = np.abs(
        paper_diagonal_block(X, W_Q, W_K, None, include_current=True)
        - diagonal_blocks(X, W_Q, W_K, None, context="inclusive")
    ).max()
    assert gap53 > 1e-2  # (53) misses the key-path term α_tt (v_t − v̄_t) q_tᵀ W_K


def test_scalar_margin_proposition_1_and_its_w_v_correction():
    x = np.array([0.3, -1.0, 2.0, 0.5, 1.5])
    a = 0.4
    var = scalar_attention_variance(x, a=a)
    np.testing.assert_allclose(scalar_margin(x, a=a), 1 - a * var, atol=1e-13)  # Eq. (8), w_V = 1
    w = 0.5
    var_v = scalar_attention_variance(x, a=a, w_v=w)
    m = scalar_margin(x, a=a, w_v=w)
    np.testing.assert_allclose(m, 1 - a * var_v / w, atol=1e-13)
    assert np.abs(m - (1 - a * var_v)).max() > 1e-2
    fd = np.diagonal(central_difference(lambda z: causal_residual(z[:, None], [[a]], [[1.0]], [[w]])[:, 0], x))
    np.testing.assert_allclose(m, fd, atol=1e-8)


def test_scalar_margin_inclusive_matches_finite_differences():
    x = np.array([0.3, -1.0, 2.0, 0.5])
    m = scalar_margin(x, a=0.7, include_current=True)
    fd = np.diagonal(
        central_difference(lambda z: causal_residual(z[:, None], [[0.7]], [[1.0]], include_current=True)[:, 0], x)
    )
    np.testing.assert_allclose(m, fd, atol=1e-8)


def test_margins_spectral_and_logdet_consistent():
    X, W_Q, W_K, W_V = _params(5)
    mm = matrix_margins(X, W_Q, W_K, W_V)
    D = diagonal_blocks(X, W_Q, W_K, W_V)
    np.testing.assert_allclose(mm.det, np.linalg.det(D), rtol=1e-10, atol=1e-12)
    rho = np.array([max(abs(np.linalg.eigvals(np.eye(3) - Dt))) for Dt in D])
    np.testing.assert_allclose(mm.spectral, 1 - rho, atol=1e-12)
    # Lemma B.4: spectral margin > 0 implies a nonzero determinant
    assert np.all(mm.logabsdet[mm.spectral > 0] > -np.inf)


def test_support_tokens_and_sequence_margin():
    m = np.array([1.0, 0.2, 0.7, 0.2 + 1e-15, 0.9])
    assert support_tokens(m).tolist() == [1, 3]
    assert support_tokens(m, atol=0.6).tolist() == [1, 2, 3]
    assert sequence_margin(np.stack([m, m + 1])).tolist() == [0.2, 1.2]
    with pytest.raises(ValueError, match="margins"):
        support_tokens(np.ones((2, 2)))


def test_log_density_is_noise_plus_barrier_and_matches_change_of_variables():
    X, W_Q, W_K, W_V = _params(9, L=4, d=2, scale=0.5)
    sigma = 0.7
    total = embedding_log_density(X, W_Q, W_K, W_V, sigma=sigma)
    parts = noise_log_density(X, W_Q, W_K, W_V, sigma=sigma) + log_barrier(X, W_Q, W_K, W_V)
    np.testing.assert_allclose(total, parts)
    e = causal_residual(X, W_Q, W_K, W_V)
    J = central_difference(lambda Z: causal_residual(Z, W_Q, W_K, W_V), X).reshape(8, 8)
    direct = (
        -0.5 * np.sum(e**2) / sigma**2 - 4 * np.log(2 * np.pi * sigma**2) + np.linalg.slogdet(J)[1]
    )  # Eq. (5) with a numerical Jacobian, L·d/2 = 4
    np.testing.assert_allclose(total, direct, atol=1e-7)
    per = embedding_log_density(X, W_Q, W_K, W_V, sigma=sigma, per_position=True)
    assert per.shape == (4,)
    np.testing.assert_allclose(per.sum(), total)


@pytest.mark.parametrize("a", [-0.5, 0.25, 0.55])
def test_scalar_conditional_density_integrates_to_one(a):
    grid = np.linspace(-12, 14, 4001)
    X = np.stack([np.zeros_like(grid), np.full_like(grid, 2.0), grid], axis=-1)[..., None]  # (G, 3, 1)
    logp = embedding_log_density(X, [[a]], [[1.0]], sigma=1.0, per_position=True)[:, 2]
    assert abs(np.exp(logp).sum() * (grid[1] - grid[0]) - 1.0) < 1e-9


def test_batched_inputs_match_loop():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(3, 4, 2))
    _, W_Q, W_K, W_V = _params(4, d=2)
    batched = embedding_log_density(X, W_Q, W_K, W_V, sigma=1.0)
    np.testing.assert_allclose(batched, [embedding_log_density(x, W_Q, W_K, W_V, sigma=1.0) for x in X])


def test_bad_inputs_raise_clear_errors():
    X, W_Q, W_K, W_V = _params(0)
    with pytest.raises(ValueError, match="W_Q"):
        causal_residual(X, W_Q[:, :2], W_K)
    with pytest.raises(ValueError, match="W_K"):
        causal_residual(X, W_Q, W_K.T)
    with pytest.raises(ValueError, match="W_V"):
        causal_residual(X, W_Q, W_K, np.eye(2))
    with pytest.raises(ValueError, match="X"):
        causal_residual(np.ones(3), W_Q, W_K)
    with pytest.raises(ValueError, match="non-finite"):
        causal_residual(np.full((2, 3), np.nan), W_Q, W_K)
    with pytest.raises(ValueError, match="context"):
        attention_residual(X, W_Q, W_K, context="future")
    with pytest.raises(ValueError, match="t must"):
        jacobian_diagonal_block(X, 5, W_Q=W_Q, W_K=W_K)
    with pytest.raises(TypeError, match="t must"):
        jacobian_diagonal_block(X, 1.0, W_Q=W_Q, W_K=W_K)
    with pytest.raises(ValueError, match="sigma"):
        embedding_log_density(X, W_Q, W_K, sigma=0.0)
    with pytest.raises(TypeError, match="X"):
        causal_residual(np.array([["a"]]), W_Q, W_K)


# ---------------------------------------------------------------------------------------------
# token-level process (Theorem 2, Proposition 2)
# ---------------------------------------------------------------------------------------------
HEAD = dict(W_out=[-1.0, 0.0, 1.5], b_out=[0.0, 0.3, -0.2])


def test_kolmogorov_consistency_strict_causal():
    kw = dict(a=-0.6, w_v=0.8, sigma=1.0, grid=np.linspace(-10, 10, 45), **HEAD)
    P2, m2 = token_law_quadrature(2, **kw)
    P3, m3 = token_law_quadrature(3, **kw)
    assert abs(m2 - 1) < 1e-6 and abs(m3 - 1) < 1e-6  # quadrature error ~1e-7 at this grid
    np.testing.assert_allclose(P3.sum(axis=-1), P2, atol=1e-6)
    np.testing.assert_allclose(P3.sum(), 1.0, atol=1e-6)


def test_non_causal_attention_breaks_consistency():
    kw = dict(a=-0.6, w_v=0.5, sigma=1.0, grid=np.linspace(-10, 10, 41), context="others", **HEAD)
    P2, _ = token_law_quadrature(2, **kw)
    P3, _ = token_law_quadrature(3, **kw)
    P3_fine, _ = token_law_quadrature(3, **{**kw, "grid": np.linspace(-10, 10, 49)})
    quad_err = np.abs(P3 - P3_fine).max()
    assert np.abs(P3.sum(axis=-1) - P2).max() > 100 * quad_err + 1e-3


def test_ancestral_sampler_matches_quadrature_density():
    x = sample_scalar_process(4000, 2, a=-0.6, w_v=0.8, sigma=1.0, rng=np.random.default_rng(0))
    e = causal_residual(x[..., None], [[-0.6]], [[1.0]], [[0.8]])[..., 0]
    assert np.abs(e.mean(axis=0)).max() < 0.1  # residuals are the N(0, 1) noise
    mc, se = token_law_monte_carlo(x, **HEAD)
    P2, _ = token_law_quadrature(2, a=-0.6, w_v=0.8, sigma=1.0, grid=np.linspace(-9, 9, 41), **HEAD)
    assert np.all(np.abs(mc - P2) < 5 * se)
    with pytest.raises(ValueError, match="a\\*w_v"):
        sample_scalar_process(10, 2, a=0.5, w_v=1.0, sigma=1.0, rng=np.random.default_rng(0))


# ---------------------------------------------------------------------------------------------
# depth (Proposition 3, Corollary 6.1)
# ---------------------------------------------------------------------------------------------
def test_depth_localisation_and_self_conditioned_layer():
    rng = np.random.default_rng(1)
    T, d = 3, 2
    prior = tuple(0.7 * rng.normal(size=(d, d)) for _ in range(3))
    layers = [
        DepthLayer(rng.normal(size=(d, d)), rng.normal(size=(d, d)), rng.normal(size=(d, d)), q)
        for q in ("previous", "current")
    ]
    xs = rng.normal(size=(3, T, d))
    J = central_difference(lambda z: deep_residual(z, prior, layers), xs).reshape(3, T, d, 3, T, d)
    for ell in range(3):
        for t in range(T):
            for ell2 in range(3):
                for u in range(T):
                    if (ell2, u) > (ell, t):
                        assert np.abs(J[ell, t, :, ell2, u, :]).max() < 1e-8  # Lemma D.1
    np.testing.assert_allclose(
        J[1, :, :, 1, :, :][np.arange(T), :, np.arange(T), :], np.tile(np.eye(d), (T, 1, 1)), atol=1e-8
    )  # Proposition 3
    blocks = layer_diagonal_blocks(xs[2], xs[1], layers[1])
    np.testing.assert_allclose(J[2, :, :, 2, :, :][np.arange(T), :, np.arange(T), :], blocks, atol=1e-7)
    total, per_stage = deep_log_barrier(xs, prior, layers)
    assert per_stage[1] == 0.0 and abs(per_stage[2]) > 1e-3
    np.testing.assert_allclose(total, np.linalg.slogdet(J.reshape(3 * T * d, -1))[1], atol=1e-6)
    with pytest.raises(ValueError, match="queries"):
        DepthLayer(np.eye(2), np.eye(2), np.eye(2), "next")
