"""Tests for nextword.theory.svflow, svflow_sphere and svflow_attention (Liao, SVFlow)."""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nextword.attention import scaled_dot_product_attention, softmax
from nextword.decoder import rms_norm
from nextword.numerics import central_difference
from nextword.theory.svflow import flow as sv
from nextword.theory.svflow import attention as sa
from nextword.theory.svflow import sphere as sp


def _unit(rng, *shape):
    x = rng.standard_normal(shape)
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def _random_flow(seed: int, Z: int = 4, d: int = 2) -> sv.GaussianSVFlow:
    rng = np.random.default_rng(seed)
    return sv.GaussianSVFlow(
        rng.normal(size=(Z, d)), 0.3 * rng.normal(size=(Z, d)), rng.normal(size=(Z, d)), 0.3 * rng.normal(size=(Z, d))
    )


def _slope(t, err):
    return np.polyfit(np.log(t), np.log(err), 1)[0]


# ------------------------------------------------------------------ geometry
def test_exp_map_is_unit_speed_geodesic():
    rng = np.random.default_rng(0)
    x = _unit(rng, 5, 4)
    v = sp.tangent_projection(x, rng.standard_normal((5, 4)))
    v = v / np.linalg.norm(v, axis=-1, keepdims=True) * 0.7
    y = sp.exp_map(x, v)
    np.testing.assert_allclose(np.linalg.norm(y, axis=-1), 1.0, atol=1e-12)
    np.testing.assert_allclose(np.arccos(np.sum(x * y, axis=-1)), 0.7, atol=1e-10)  # geodesic distance
    h = 1e-6
    np.testing.assert_allclose(central_difference(lambda t: sp.exp_map(x, t * v), 0.0, h=h), v, atol=1e-8)
    np.testing.assert_array_equal(sp.exp_map(x, np.zeros_like(x)), x)


def test_retraction_error_orders():
    rng = np.random.default_rng(1)
    x = _unit(rng, 6)
    u = sp.tangent_projection(x, rng.standard_normal(6))
    u /= np.linalg.norm(u)
    t = np.logspace(-3, -1, 8)
    err = [np.linalg.norm(sp.retraction(x, s * u) - sp.exp_map(x, s * u)) for s in t]
    # Taylor: R_x(v) - exp_x(v) = -|v|^2 v / 3 + O(|v|^4): order 3 (so O(|v|^2) holds, loosely)
    assert abs(_slope(t, err) - 3.0) < 0.05
    np.testing.assert_allclose(np.array(err) / t**3, 1 / 3, rtol=1e-2)
    w = rng.standard_normal(6)
    w /= np.linalg.norm(w)  # generic, non-tangent direction (Eq. 17)
    err17 = [
        np.linalg.norm(rms_norm(x + s * w, eps=0.0, unit=True) - sp.retraction(x, sp.tangent_projection(x, s * w)))
        for s in t
    ]
    assert abs(_slope(t, err17) - 2.0) < 0.05


def test_retraction_equals_unit_rmsnorm_of_residual():
    rng = np.random.default_rng(2)
    x, v = _unit(rng, 3, 8), rng.standard_normal((3, 8))
    np.testing.assert_allclose(sp.retraction(x, v), rms_norm(x + v, eps=0.0, unit=True), atol=1e-14)


def test_geometry_input_errors():
    with pytest.raises(ValueError, match="unit sphere"):
        sp.exp_map(np.array([2.0, 0.0]), np.array([0.0, 1.0]))
    with pytest.raises(ValueError, match="tangent"):
        sp.exp_map(np.array([1.0, 0.0]), np.array([1.0, 1.0]))
    with pytest.raises(ValueError, match="last dimension"):
        sp.retraction(np.array([1.0, 0.0]), np.zeros(3))
    with pytest.raises(ValueError, match="zero"):
        sp.retraction(np.array([1.0, 0.0]), np.array([-1.0, 0.0]))


# ------------------------------------------------------------------ Bessel / vMF
@settings(max_examples=25, deadline=None)
@given(nu=st.floats(0.0, 2000.0), logx=st.floats(-5.0, 4.0))
def test_log_bessel_iv_matches_mpmath(nu, logx):
    x = 10.0**logx
    mp.mp.dps = 30
    ref = float(mp.log(mp.besseli(nu, x)))
    got = float(sp.log_bessel_iv(nu, x))
    assert abs(got - ref) <= 1e-9 * max(1.0, abs(ref))


@pytest.mark.parametrize("nu", [0.5, 511.0, 2047.0])
def test_log_bessel_iv_recurrence_at_huge_argument(nu):
    # I_{nu-1}(x) - I_{nu+1}(x) = (2 nu / x) I_nu(x), checked in log space where iv itself overflows
    x = np.array([1e3, 1e5, 1e6])
    if nu < 1:  # nu = 1/2: closed form I_{1/2}(x) = sqrt(2/(pi x)) sinh x
        ref = 0.5 * np.log(2 / (np.pi * x)) + x + np.log1p(-np.exp(-2 * x)) - np.log(2)
        np.testing.assert_allclose(sp.log_bessel_iv(nu, x), ref, rtol=1e-13)
        return
    lo, mid, hi = (sp.log_bessel_iv(n, x) for n in (nu - 1, nu, nu + 1))
    np.testing.assert_allclose(lo + np.log1p(-np.exp(hi - lo)), np.log(2 * nu / x) + mid, rtol=1e-12)


@pytest.mark.parametrize("nu", [0.0, 0.5, 1.0, 10.0, 511.0])
def test_log_bessel_iv_up_to_the_float64_maximum(nu):
    """Where scipy's ive gives NaN (x beyond about 1e9) and the Debye expansion cannot be used (nu = 0, or
    (x / nu)^2 overflows), the large-argument expansion keeps log I_nu(x) finite and right: against mpmath."""
    x = np.array([1e10, 1e17, 1e100, 1e160, 1e250, np.finfo(np.float64).max])
    mp.mp.dps = 30
    ref = np.array([float(mp.log(mp.besseli(nu, mp.mpf(float(v))))) for v in x])
    got = sp.log_bessel_iv(nu, x)
    np.testing.assert_allclose(got, ref, rtol=1e-15)
    d = int(2 * nu + 2)  # the vMF functions of kappa that large: finite, the mean resultant length 1
    assert np.all(np.isfinite(sp.vmf_log_normalizer(x, d)))
    assert np.all(sp.vmf_mean_resultant_length(x[2:], d) == 1.0)


@pytest.mark.parametrize("d", [2, 3, 64, 1024])
def test_vmf_mean_resultant_length_at_huge_kappa(d):
    """From kappa = 2^30 the two log-Bessel values (about kappa) would cancel to a few ulps of kappa (at
    kappa = 1e16, d = 3 that gave 0.135); the ratio of the large-argument series is exact there: against mpmath."""
    kappa = np.array([2.0**30, 1e10, 1e12, 1e16, 1e100, np.finfo(np.float64).max])
    mp.mp.dps = 40
    ref = np.array(
        [float(mp.besseli(d / 2, mp.mpf(float(k))) / mp.besseli(d / 2 - 1, mp.mpf(float(k)))) for k in kappa]
    )
    got = sp.vmf_mean_resultant_length(kappa, d)
    np.testing.assert_allclose(got, ref, rtol=5e-16)
    assert np.all(got <= 1.0)


def test_naive_bessel_overflows_where_log_space_does_not():
    assert not np.isfinite(sp.log_bessel_iv_naive(0.5, 1e3))
    assert np.isfinite(sp.log_bessel_iv(0.5, 1e3))
    assert not np.isfinite(sp.vmf_log_normalizer_naive(1e3, 3))
    assert np.all(np.isfinite(sp.vmf_log_normalizer(np.array([1e-8, 1.0, 1e3, 1e5]), 1024)))


def test_naive_vmf_normalizer_fails_where_its_docstring_says():
    """The denominator (2 pi)^{d/2} I_nu overflows before I_nu alone; (2 pi)^{d/2} alone from d = 773."""
    from scipy import special

    grid = np.arange(500.0, 800.0)
    with np.errstate(over="ignore"):
        for d, first in ((64, 656.0), (128, 600.0)):
            fails = ~np.isfinite(sp.vmf_log_normalizer_naive(grid, d))
            assert grid[fails].min() == first and np.all(fails[grid >= first])
            assert np.all(np.isfinite(special.iv(0.5 * d - 1, grid[grid <= 712.0])))  # I alone still finite
        assert np.isfinite(np.float64(2 * np.pi) ** (772 / 2)) and not np.isfinite(np.float64(2 * np.pi) ** (773 / 2))
        assert not np.any(np.isfinite(sp.vmf_log_normalizer_naive(np.array([1.0, 100.0, 1e3]), 774)))
        assert sp.vmf_log_normalizer_naive(1.0, 512) == np.inf  # I_nu underflows to 0


@pytest.mark.parametrize("kappa", [0.1, 2.0, 30.0, 500.0])
def test_vmf_normaliser_closed_forms(kappa):
    # d = 3: C = kappa / (4 pi sinh kappa); d = 2: C = 1 / (2 pi I_0(kappa)) by quadrature on the circle
    log_c3 = np.log(kappa) - np.log(4 * np.pi) - (kappa + np.log1p(-np.exp(-2 * kappa)) - np.log(2))
    np.testing.assert_allclose(sp.vmf_log_normalizer(kappa, 3), log_c3, rtol=1e-12)
    theta = np.linspace(0, 2 * np.pi, 20001)
    integrand = np.exp(kappa * (np.cos(theta) - 1))
    log_int = kappa + np.log(np.trapezoid(integrand, theta))
    np.testing.assert_allclose(-sp.vmf_log_normalizer(kappa, 2), log_int, rtol=1e-8)


def test_vmf_normaliser_continuous_at_zero():
    for d in (2, 3, 10, 500):
        np.testing.assert_allclose(sp.vmf_log_normalizer(1e-9, d), sp.vmf_log_normalizer(0.0, d), atol=1e-8)
        np.testing.assert_allclose(sp.vmf_log_normalizer(0.0, d), -sp.sphere_log_area(d), atol=1e-12)


def test_vmf_score_is_gradient_of_extended_log_density():
    rng = np.random.default_rng(3)
    mu, x = _unit(rng, 5), rng.standard_normal(5)
    kappa = 4.0

    def f(y):  # the log density extended off the sphere: log C + kappa mu.y
        return sp.vmf_log_normalizer(kappa, 5) + kappa * y @ mu

    np.testing.assert_allclose(central_difference(f, x, batched=True), sp.vmf_score(mu, kappa), atol=1e-6)


def test_vmf_sampler_mean_resultant_length():
    rng = np.random.default_rng(4)
    mu = _unit(rng, 6)
    s = sp.vmf_sample(mu, 8.0, 40000, rng)
    np.testing.assert_allclose(np.linalg.norm(s, axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(s.mean(0), sp.vmf_mean_resultant_length(8.0, 6) * mu, atol=0.01)


# ------------------------------------------------------------------ SVFlow identities (§3)
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6))
def test_prop_3_2_and_theorem_3_3(seed):
    flow = _random_flow(seed)
    x = np.random.default_rng(seed + 1).normal(size=(6, 2))
    np.testing.assert_allclose(flow.log_marginal(x), flow.elbo(x) + flow.kl_gap(x), atol=1e-10)
    assert np.all(flow.kl_gap(x) >= -1e-12)
    np.testing.assert_allclose(
        central_difference(flow.elbo, x, batched=True), flow.field(x) + flow.epsilon(x), atol=1e-5
    )


def test_corollary_3_4_ideal_case():
    f = _random_flow(7)
    ideal = sv.GaussianSVFlow(f.p_means, f.p_log_vars, f.p_means, f.p_log_vars)
    x = np.random.default_rng(8).normal(size=(5, 2))
    np.testing.assert_allclose(ideal.epsilon(x), 0.0, atol=1e-12)
    np.testing.assert_allclose(ideal.kl_gap(x), 0.0, atol=1e-12)
    np.testing.assert_allclose(ideal.field(x), central_difference(ideal.log_marginal, x, batched=True), atol=1e-6)


def test_epsilon_zero_does_not_imply_q_equals_p():
    # q(z|x) independent of x (all q components identical): epsilon = 0 everywhere, yet q != p
    f = _random_flow(9)
    flat = sv.GaussianSVFlow(np.zeros((4, 2)), np.zeros((4, 2)), f.p_means, f.p_log_vars)
    x = np.random.default_rng(10).normal(size=(5, 2))
    np.testing.assert_allclose(flat.epsilon(x), 0.0, atol=1e-14)
    assert np.all(flat.kl_gap(x) > 1e-3)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(-5, 5), min_size=2, max_size=6), st.integers(0, 1000))
def test_categorical_kl_properties(logits, seed):
    lq = np.log(softmax(np.array(logits)))
    lp = np.log(softmax(np.random.default_rng(seed).normal(size=len(logits))))
    assert sv.categorical_kl(lq, lp) >= -1e-12
    assert abs(sv.categorical_kl(lq, lq)) < 1e-12
    np.testing.assert_allclose(
        sv.kl_to_uniform(lq), sv.categorical_kl(lq, np.full(len(logits), -np.log(len(logits)))), atol=1e-12
    )


def test_euler_flow_first_order():
    errs = []
    for n in (10, 20, 40):
        path = sv.euler_flow(np.array([1.0, 0.0]), lambda x, t: np.array([-x[1], x[0]]), n, 1.0 / n)
        errs.append(np.linalg.norm(path[-1] - np.array([np.cos(1.0), np.sin(1.0)])))
    assert abs(np.log2(errs[0] / errs[1]) - 1) < 0.15 and abs(np.log2(errs[1] / errs[2]) - 1) < 0.1
    sph = sv.spherical_euler_flow(np.array([1.0, 0.0]), lambda x, t: np.array([-x[1], x[0]]), 10, 0.1)
    np.testing.assert_allclose(np.linalg.norm(sph, axis=-1), 1.0, atol=1e-14)
    with pytest.raises(ValueError, match="shape"):
        sv.euler_flow(np.zeros(2), lambda x, t: np.zeros(3), 2, 0.1)


def test_rk4_flow_with_divergence_linear_field_and_fourth_order():
    # a linear field v(x) = A x: the flow map is expm(A t) and the divergence integral is t tr(A) exactly
    from scipy.linalg import expm

    A = np.array([[0.3, -1.0], [0.8, -0.5]])
    x0 = np.array([[1.0, 0.2], [-0.4, 0.7]])  # two independent points (batch axis first)
    x_end, log_volume = sv.rk4_flow_with_divergence(
        x0, lambda x: x @ A.T, lambda x: np.full(x.shape[:-1], np.trace(A)), t_end=1.5, n_steps=200
    )
    assert log_volume.shape == (2,)
    np.testing.assert_allclose(x_end, x0 @ expm(1.5 * A).T, atol=1e-10)
    np.testing.assert_allclose(log_volume, 1.5 * np.trace(A), atol=1e-12)
    # halving the step cuts the end-point error by about 2^4 on a nonlinear field (RK4 is fourth order)
    exact = np.array([np.cos(1.0), np.sin(1.0)])  # rotation field on the circle from (1, 0)
    errors = []
    for n in (5, 10):
        end, _ = sv.rk4_flow_with_divergence(
            np.array([1.0, 0.0]), lambda x: np.stack([-x[..., 1], x[..., 0]], -1), lambda x: 0.0 * x[..., 0], 1.0, n
        )
        errors.append(np.linalg.norm(end - exact))
    assert 3.5 < np.log2(errors[0] / errors[1]) < 4.5
    with pytest.raises(ValueError, match="t_end"):
        sv.rk4_flow_with_divergence(np.zeros(2), lambda x: x, lambda x: 0.0, -1.0, 3)
    with pytest.raises(ValueError, match="shape"):
        sv.rk4_flow_with_divergence(np.zeros(2), lambda x: np.zeros(3), lambda x: 0.0, 1.0, 3)
    with pytest.raises(TypeError, match="divergence"):
        sv.rk4_flow_with_divergence(np.zeros(2), lambda x: x, 0.0, 1.0, 3)
    with pytest.raises(ValueError, match=r"divergence returned shape \(3, 2\), expected \(3,\)"):
        sv.rk4_flow_with_divergence(np.zeros((3, 2)), lambda x: x, lambda x: x, 1.0, 3)  # (..., d), not (...)
    with pytest.raises(ValueError, match="x0 must have at least one coordinate"):
        sv.rk4_flow_with_divergence(np.zeros((3, 0)), lambda x: x, lambda x: 0.0, 1.0, 3)
    with pytest.raises(ValueError, match="the flow from x0 overflows"), np.errstate(over="ignore", invalid="ignore"):
        sv.rk4_flow_with_divergence(np.full(2, 1e308), lambda x: x, lambda x: 2.0, 1.0, 3)
    with pytest.raises(ValueError, match="x0 must lie on the unit sphere"):
        sv.spherical_euler_flow(np.array([2.0, 0.0]), lambda x, t: x, 2, 0.1)


def test_svflow_input_errors():
    with pytest.raises(ValueError, match="Z"):
        sv.svflow_field(np.ones(3) / 3, np.ones((2, 4)))
    with pytest.raises(ValueError, match=r"\(Z, d\)"):
        sv.GaussianSVFlow(np.zeros((2, 2)), np.zeros((2, 3)), np.zeros((2, 2)), np.zeros((2, 2)))
    with pytest.raises(ValueError, match="NaN"):
        sv.categorical_kl(np.array([np.nan, 0.0]), np.zeros(2))


# ------------------------------------------------------------------ attention / MoE (§4)
def test_attention_weights_are_vmf_posterior_and_head_output():
    rng = np.random.default_rng(11)
    d, dh, Z = 6, 3, 5
    Wq, Wk, Wv, Wo = (rng.normal(size=(d, dh)) for _ in range(4))
    x, keys = rng.normal(size=d), rng.normal(size=(Z, d))
    kappa, mu = sa.vmf_attention_params(Wq, Wk, keys)
    q = np.exp(sa.vmf_attention_log_posterior(x, kappa, mu))
    out_ref, w_ref = scaled_dot_product_attention(
        (x @ Wq)[None] * np.sqrt(dh), keys @ Wk, keys @ Wv, return_weights=True
    )
    np.testing.assert_allclose(q, w_ref[0], atol=1e-12)
    qh, out = sa.head_output(x, keys, keys, Wq, Wk, Wv, Wo)
    np.testing.assert_allclose(out, out_ref[0] @ Wo.T, atol=1e-12)
    # Eq. (21) with uniform q(h) is 1/H of the Eq. (4) sum of heads
    heads = [(Wq, Wk, Wv, Wo), tuple(rng.normal(size=(d, dh)) for _ in range(4))]
    total = sum(sa.head_output(x, keys, keys, *h)[1] for h in heads)
    np.testing.assert_allclose(sa.multihead_as_expectation(x, keys, keys, heads), total / 2, atol=1e-12)


def test_normalised_vmf_posterior_differs_unless_equal_kappa():
    rng = np.random.default_rng(12)
    x, mu = _unit(rng, 8), _unit(rng, 4, 8)
    kap = np.array([1.0, 5.0, 20.0, 50.0])
    a = sa.vmf_attention_log_posterior(x, kap, mu)
    b = sa.vmf_attention_log_posterior(x, kap, mu, normalised=True)
    assert np.max(np.abs(a - b)) > 1.0
    eq = np.full(4, 7.0)
    np.testing.assert_allclose(
        sa.vmf_attention_log_posterior(x, eq, mu),
        sa.vmf_attention_log_posterior(x, eq, mu, normalised=True),
        atol=1e-12,
    )


def test_head_output_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(13)
    d, dh, Z = 5, 2, 4
    Wq, Wk, Wv, Wo = (rng.normal(size=(d, dh)) for _ in range(4))
    x, keys = rng.normal(size=d), rng.normal(size=(Z, d))
    _, out = sa.head_output(x, keys, keys, Wq, Wk, Wv, Wo)
    T = torch.tensor
    ref = (
        torch.nn.functional.scaled_dot_product_attention(
            T(x @ Wq)[None, None], T(keys @ Wk)[None], T(keys @ Wv)[None], scale=1.0
        )[0, 0].numpy()
        @ Wo.T
    )
    np.testing.assert_allclose(out, ref, atol=1e-10)


def test_load_balancing_loss_brute_force_and_non_uniform_minimum():
    rng = np.random.default_rng(14)
    g = softmax(rng.normal(size=(50, 4)))
    J, f, P = sa.load_balancing_loss(g)
    f_ref = np.array([np.mean([np.argmax(r) == e for r in g]) for e in range(4)])
    np.testing.assert_allclose(f, f_ref)
    np.testing.assert_allclose(P, g.mean(0))
    np.testing.assert_allclose(J, sum(f_ref[e] * g[:, e].mean() for e in range(4)))
    assert abs(sa.load_balancing_loss(np.full((3, 4), 0.25))[0] - 0.25) < 1e-12
    # a router with non-uniform marginal and J_bal below the uniform value 1/E
    g2 = np.array([[0.5 + 1e-9, 0.5 - 1e-9]] * 3 + [[0.0, 1.0]])
    J2, _, P2 = sa.load_balancing_loss(g2)
    assert J2 < 0.5 and abs(P2[0] - 0.375) < 1e-8
    with pytest.raises(ValueError, match="probabilities"):
        sa.load_balancing_loss(np.ones((2, 2)))


def test_prefix_shuffle_keeps_suffix_and_multiset():
    rng = np.random.default_rng(15)
    t = np.arange(20)
    s = sa.prefix_shuffle(t, 0.4, rng)
    np.testing.assert_array_equal(s[8:], t[8:])
    np.testing.assert_array_equal(np.sort(s[:8]), t[:8])
    r, keep = sa.prefix_shuffle_rates(20, 0.4)
    np.testing.assert_allclose(r[keep], 8 / np.arange(9, 21))
    assert not keep[:8].any()
    np.testing.assert_array_equal(
        sa.shuffle_rate_bins(np.array([0.0, 0.25, 0.3, 0.75, 0.9, 1.0])), [-1, 0, 1, 2, 3, -1]
    )


def test_head_svflow_metrics_identities():
    rng = np.random.default_rng(16)
    d, Z = 16, 7
    x = _unit(rng, d)
    q = softmax(rng.normal(size=Z))
    o = 3.0 * rng.normal(size=(Z, d))
    m = sa.head_svflow_metrics(x, q, o)
    log_lik = sp.vmf_log_normalizer(np.linalg.norm(o, axis=1), d) + o @ x
    log_px = np.log(np.mean(np.exp(log_lik)))
    np.testing.assert_allclose(m["neg_log_p_per_dim"], -log_px / d, rtol=1e-12)
    np.testing.assert_allclose(m["elbo"], sv.elbo(np.log(q), log_lik), rtol=1e-10)
    np.testing.assert_allclose(m["kl_q_u"], np.sum(q * np.log(q * Z)), rtol=1e-12)
    flat = sa.head_svflow_metrics(x, q, np.zeros((Z, d)))  # p(x|z) uniform on the sphere
    np.testing.assert_allclose(flat["kl_p_u"], 0.0, atol=1e-12)
    np.testing.assert_allclose(flat["neg_log_p_per_dim"], sp.sphere_log_area(d) / d, rtol=1e-12)
    masked = sa.head_svflow_metrics(x, np.r_[q[:3] / q[:3].sum(), np.zeros(4)], o)
    sub = sa.head_svflow_metrics(x, q[:3] / q[:3].sum(), o[:3])
    for key in sub:
        np.testing.assert_allclose(masked[key], sub[key], rtol=1e-12)


# ------------------------------------------------------------------ hybrid training (torch, App. C.1)
def test_make_moons_shapes_and_geometry():
    pytest.importorskip("torch")
    from nextword.torch.svflow.hybrid import make_moons

    X, y = make_moons(101, 0.0, np.random.default_rng(0))
    assert X.shape == (101, 2) and np.bincount(y).tolist() == [50, 51]
    np.testing.assert_allclose(np.linalg.norm(X[y == 0], axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(X[y == 1] - np.array([1.0, 0.5]), axis=1), 1.0, atol=1e-12)
    with pytest.raises(ValueError, match="noise"):
        make_moons(10, -1.0, np.random.default_rng(0))


def test_hybrid_forward_matches_numpy_gaussian_svflow():
    torch = pytest.importorskip("torch")
    from nextword.torch.svflow.hybrid import HybridConfig, HybridSVFlow

    torch.manual_seed(0)
    cfg = HybridConfig(betas=(0.1, None), dt=0.05)
    model = HybridSVFlow(cfg)
    x0 = np.random.default_rng(1).normal(size=(7, 2))
    with torch.no_grad():
        paths, kls, _ = model(torch.as_tensor(x0, dtype=torch.float32))
    for run in range(2):
        x = x0.copy()
        for k in range(cfg.n_steps):
            sl = model.slice(run, k * cfg.dt)
            np.testing.assert_allclose(kls[run, k].numpy(), sl.kl_gap(x), rtol=2e-3, atol=2e-4)
            x = x + cfg.dt * sl.field(x)
            np.testing.assert_allclose(paths[run, k + 1].numpy(), x, rtol=1e-3, atol=1e-4)


def test_hybrid_runs_are_independent_and_losses_weighted():
    torch = pytest.importorskip("torch")
    from nextword.torch.svflow.hybrid import HybridConfig, HybridSVFlow

    torch.manual_seed(0)
    model = HybridSVFlow(HybridConfig(betas=(0.5, None), dt=0.1))
    x0 = torch.randn(16, 2)
    y = torch.randint(0, 2, (16,))
    j_h, j_a, j_v = model.losses(x0, y)
    torch.testing.assert_close(j_h, torch.stack([j_a[0] + 0.5 * j_v[0], j_v[1]]))
    j_h[0].backward()
    for p in model.parameters():
        assert torch.all(p.grad[1] == 0)  # run 1's parameters get no gradient from run 0's loss


# ------------------------------------------------------------------ prefix-shuffling probe (torch, App. C.2)
def _tiny_lm():
    torch = pytest.importorskip("torch")
    from nextword.torch.models.lm import LMConfig, TinyLM

    cfg = LMConfig(vocab_size=7, d_model=8, num_heads=2, num_layers=2, max_len=16, positional="rope", norm="rms")
    model = TinyLM(cfg, seed=0)
    with torch.no_grad():  # larger weights than the 0.02 init so that attention is not uniform
        for p in model.parameters():
            p.mul_(20.0) if p.dim() == 2 else None
    return torch, model


def test_probe_head_decomposition_and_logit_lens():
    torch, model = _tiny_lm()
    from nextword.torch.svflow.probe import probe_tinylm

    ids = np.random.default_rng(0).integers(0, 7, size=(3, 10))
    res = probe_tinylm(model, ids)
    with torch.no_grad():
        ref = torch.log_softmax(model(torch.as_tensor(ids)).double(), -1).numpy()
        np.testing.assert_allclose(res.log_probs, ref, atol=1e-5)
        blk = model.blocks[0]
        x = model._add_positions(model.tok_emb[torch.as_tensor(ids)])
        n = blk.norm1(x)
        out, w = blk.attention(n, model.rope_freqs, None)
        d, H = 8, 2
        v = (n @ blk.W_qkv[:, 2 * d :]).view(3, 10, H, d // H).transpose(1, 2)
        o = torch.einsum("bhzk,hkd->bhzd", v, blk.W_o.view(H, d // H, d))  # per-head kappa' mu' of token z
        recon = torch.einsum("bhtz,bhzd->btd", w, o)  # Eq. (20) summed over heads, Eq. (4)
        torch.testing.assert_close(recon, out, atol=1e-5, rtol=1e-5)
    for k in ("kl_q_p", "kl_q_u", "kl_p_u"):
        assert res.metrics[k].shape == (2, 3, 10) and np.all(res.metrics[k] >= -1e-9)
    np.testing.assert_allclose(res.metrics["kl_q_u"][:, :, 0], 0.0, atol=1e-12)  # first token: one key


def test_prefix_shuffling_experiment_bins_and_zero_delta_for_identity_shuffle():
    _, model = _tiny_lm()
    from nextword.torch.svflow.probe import prefix_shuffling_experiment

    seqs = np.random.default_rng(1).integers(0, 7, size=(4, 13))
    tab = prefix_shuffling_experiment(model, seqs, (0.2, 0.5, 0.95), np.random.default_rng(0))
    assert np.all(tab.count > 0) and tab.base["kl_q_p"].shape == (2, 4)
    const = np.full((4, 13), 3)  # shuffling a constant prefix changes nothing: every Delta is 0
    tab0 = prefix_shuffling_experiment(model, const, (0.2, 0.5, 0.95), np.random.default_rng(0))
    for k in tab0.base:
        np.testing.assert_allclose(tab0.delta(k), 0.0, atol=1e-12)
    np.testing.assert_allclose(tab0.logppl_pert, tab0.logppl_base, atol=1e-12)


def test_the_posterior_refuses_a_negative_concentration_normalised_or_not():
    x = np.array([1.0, 0.0])
    mu = np.array([[1.0, 0.0], [0.0, 1.0]])
    for normalised in (False, True):
        with pytest.raises(ValueError, match="kappa must be >= 0"):
            sa.vmf_attention_log_posterior(x, np.array([1.0, -1.0]), mu, normalised=normalised)
