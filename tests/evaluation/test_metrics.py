"""Tests for nextword.evaluation (formulation paper §8).

Every metric is checked against an independent computation: brute-force loops,
closed forms for Gaussians, numerical integration of the defining integral,
or scipy.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, special, stats

from nextword.evaluation import (
    bits_per_token,
    calibration_bins,
    crps_gaussian,
    crps_sample,
    cross_entropy,
    energy_distance,
    expected_calibration_error,
    median_heuristic_bandwidth,
    mmd_squared,
    perplexity,
    precision_recall_f1,
    spearman,
    token_log_probs,
)


# ------------------------------------------------------------------ likelihood metrics
def test_token_log_probs_matches_scipy_log_softmax():
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((2, 5, 7)) * 30  # large logits: needs log-sum-exp
    targets = rng.integers(0, 7, size=(2, 5))
    expected = np.take_along_axis(special.log_softmax(logits, axis=-1), targets[..., None], -1)[..., 0]
    np.testing.assert_allclose(token_log_probs(logits, targets), expected, atol=1e-12)


def test_cross_entropy_perplexity_bits_by_direct_products():
    rng = np.random.default_rng(1)
    p = rng.uniform(0.01, 1.0, size=17)
    lp = np.log(p)
    # perplexity = inverse geometric mean of the probabilities, computed as a product
    np.testing.assert_allclose(perplexity(lp), np.prod(p) ** (-1 / p.size), rtol=1e-12)
    np.testing.assert_allclose(bits_per_token(lp), -np.mean(np.log2(p)), rtol=1e-12)
    np.testing.assert_allclose(cross_entropy(lp.reshape(1, 17)), -np.sum(lp) / 17, rtol=1e-12)


def test_uniform_model_has_perplexity_V_and_cross_entropy_of_true_model_is_entropy():
    V = 13
    lp = np.full(50, -np.log(V))
    np.testing.assert_allclose(perplexity(lp), V)
    np.testing.assert_allclose(bits_per_token(lp), np.log2(V))
    # Example 8.1: the expected NLL of the true model is the entropy; exact expectation
    # by weighting each token's log-prob with its probability.
    rng = np.random.default_rng(2)
    q = rng.dirichlet(np.ones(6))
    N = 10**6
    counts = np.round(q * N).astype(int)  # a deterministic "sample" with exact frequencies
    lp_tokens = np.repeat(np.log(q), counts)
    np.testing.assert_allclose(cross_entropy(lp_tokens), stats.entropy(q), rtol=1e-5)
    assert perplexity([-np.inf, -1.0]) == np.inf


@pytest.mark.parametrize("bad, exc", [([], ValueError), ([0.5], ValueError), ([np.nan], ValueError)])
def test_likelihood_validation(bad, exc):
    with pytest.raises(exc):
        cross_entropy(bad)


def test_token_log_probs_validation():
    with pytest.raises(ValueError, match="disagree"):
        token_log_probs(np.zeros((3, 4)), np.zeros(2, dtype=int))
    with pytest.raises(ValueError, match="lie in"):
        token_log_probs(np.zeros((3, 4)), np.array([0, 1, 4]))
    with pytest.raises(TypeError, match="integer"):
        token_log_probs(np.zeros((3, 4)), np.zeros(3))


# ----------------------------------------------------------------- energy distance
def brute_energy(x, y, unbiased):
    x, y = np.atleast_2d(x.T).T, np.atleast_2d(y.T).T
    n, m = len(x), len(y)
    norm = lambda u: float(np.sqrt(np.sum(u * u)))  # noqa: E731
    cross = sum(norm(a - b) for a in x for b in y) / (n * m)
    sx = sum(norm(x[i] - x[j]) for i in range(n) for j in range(n) if i != j)
    sy = sum(norm(y[i] - y[j]) for i in range(m) for j in range(m) if i != j)
    if unbiased:
        return 2 * cross - sx / (n * (n - 1)) - sy / (m * (m - 1))
    return 2 * cross - sx / n**2 - sy / m**2


@pytest.mark.parametrize("d", [1, 3])
@pytest.mark.parametrize("unbiased", [True, False])
def test_energy_distance_matches_brute_force(d, unbiased):
    rng = np.random.default_rng(d)
    x, y = rng.standard_normal((9, d)), rng.standard_normal((7, d)) + 0.5
    if d == 1:
        x, y = x[:, 0], y[:, 0]
    np.testing.assert_allclose(energy_distance(x, y, unbiased=unbiased), brute_energy(x, y, unbiased), rtol=1e-10)


def test_energy_distance_biased_equals_scipy_in_1d():
    rng = np.random.default_rng(4)
    x, y = rng.standard_normal(40), rng.gamma(2.0, size=55)
    # scipy returns sqrt(2) * ||F - G||_2 = the square root of the V-statistic energy distance
    np.testing.assert_allclose(energy_distance(x, y, unbiased=False), stats.energy_distance(x, y) ** 2, rtol=1e-10)
    assert energy_distance(x, x, unbiased=False) == pytest.approx(0.0, abs=1e-12)


def expected_abs_normal(mean, var):
    """E|D| for D ~ N(mean, var) (folded normal mean)."""
    s = np.sqrt(var)
    return s * np.sqrt(2 / np.pi) * np.exp(-(mean**2) / (2 * var)) + mean * (1 - 2 * stats.norm.cdf(-mean / s))


def test_unbiased_energy_distance_is_unbiased_for_gaussians():
    # closed form: 2 E|X - Y| - E|X - X'| - E|Y - Y'| for X ~ N(0, 1), Y ~ N(1, 2^2)
    mu, s = 1.0, 2.0
    exact = 2 * expected_abs_normal(mu, 1 + s**2) - 2 / np.sqrt(np.pi) - 2 * s / np.sqrt(np.pi)
    rng = np.random.default_rng(5)
    R, n = 400, 12
    est = np.array([energy_distance(rng.standard_normal(n), mu + s * rng.standard_normal(n)) for _ in range(R)])
    biased = np.array(
        [energy_distance(rng.standard_normal(n), mu + s * rng.standard_normal(n), unbiased=False) for _ in range(R)]
    )
    se = est.std(ddof=1) / np.sqrt(R)
    assert abs(est.mean() - exact) < 4.5 * se  # stated tolerance: 4.5 standard errors
    # the V-statistic is biased upward: its mean is exact + (E|X-X'| + E|Y-Y'|) / n
    bias = (2 / np.sqrt(np.pi) + 2 * s / np.sqrt(np.pi)) / n
    assert abs(biased.mean() - (exact + bias)) < 4.5 * biased.std(ddof=1) / np.sqrt(R)


# --------------------------------------------------------------------------------- MMD
def brute_mmd(x, y, h, unbiased):
    k = lambda a, b: np.exp(-np.sum((a - b) ** 2) / (2 * h * h))  # noqa: E731
    n, m = len(x), len(y)
    sxx = sum(k(x[i], x[j]) for i in range(n) for j in range(n) if unbiased is False or i != j)
    syy = sum(k(y[i], y[j]) for i in range(m) for j in range(m) if unbiased is False or i != j)
    sxy = sum(k(a, b) for a in x for b in y)
    dx, dy = (n * (n - 1), m * (m - 1)) if unbiased else (n * n, m * m)
    return sxx / dx + syy / dy - 2 * sxy / (n * m)


@pytest.mark.parametrize("unbiased", [True, False])
def test_mmd_matches_brute_force(unbiased):
    rng = np.random.default_rng(6)
    x, y = rng.standard_normal((8, 2)), rng.standard_normal((6, 2)) * 1.5
    for h in (0.3, 1.0, 4.0):
        np.testing.assert_allclose(
            mmd_squared(x, y, h, unbiased=unbiased), brute_mmd(x, y, h, unbiased), rtol=1e-10, atol=1e-14
        )


def test_mmd_estimators_match_gaussian_closed_form():
    # X ~ N(0, s^2 I_d), Y ~ N(delta, s^2 I_d), kernel bandwidth h:
    # E k(X, X') = (h^2 / (h^2 + 2 s^2))^(d/2),  E k(X, Y) = that * exp(-|delta|^2 / (2 (h^2 + 2 s^2)))
    d, s, h = 2, 1.0, 1.5
    delta = np.array([0.8, -0.4])
    c = (h**2 / (h**2 + 2 * s**2)) ** (d / 2)
    exact = 2 * c * (1 - np.exp(-delta @ delta / (2 * (h**2 + 2 * s**2))))
    rng = np.random.default_rng(7)
    R, n = 400, 10
    u, v = [], []
    for _ in range(R):
        x, y = s * rng.standard_normal((n, d)), delta + s * rng.standard_normal((n, d))
        u.append(mmd_squared(x, y, h))
        v.append(mmd_squared(x, y, h, unbiased=False))
    u, v = np.array(u), np.array(v)
    assert abs(u.mean() - exact) < 4.5 * u.std(ddof=1) / np.sqrt(R)
    # the V-statistic adds (1 - E k(X,X')) / n + (1 - E k(Y,Y')) / n in expectation
    assert abs(v.mean() - (exact + 2 * (1 - c) / n)) < 4.5 * v.std(ddof=1) / np.sqrt(R)
    assert (v >= -1e-12).all()


def test_median_heuristic_matches_brute_force():
    rng = np.random.default_rng(8)
    x, y = rng.standard_normal((5, 2)), rng.standard_normal((4, 2))
    pooled = np.vstack([x, y])
    d = [np.linalg.norm(pooled[i] - pooled[j]) for i, j in itertools.combinations(range(9), 2)]
    assert median_heuristic_bandwidth(x, y) == pytest.approx(np.median(d))


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: mmd_squared(np.zeros(3), np.zeros(3), 0.0), "bandwidth"),
        (lambda: mmd_squared(np.zeros((3, 2)), np.zeros((3, 3)), 1.0), "dimension"),
        (lambda: energy_distance(np.zeros(1), np.zeros(3)), "at least 2"),
        (lambda: energy_distance(np.zeros((2, 2, 2)), np.zeros(3)), "shape"),
        (lambda: energy_distance(np.array([np.nan, 1.0]), np.zeros(3)), "finite"),
        (lambda: median_heuristic_bandwidth(np.zeros(2), np.zeros(2)), "median"),
    ],
)
def test_sample_divergence_validation(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# -------------------------------------------------------------------------------- CRPS
def crps_by_integration_empirical(x, y):
    """Footnote 6 literally: integrate (F_n(z) - 1{z >= y})^2 exactly over the breakpoints."""
    pts = np.sort(np.concatenate([x, [y]]))
    total = 0.0
    for a, b in zip(pts[:-1], pts[1:]):
        z = 0.5 * (a + b)  # both CDFs are constant on (a, b)
        total += (np.mean(x <= z) - float(z >= y)) ** 2 * (b - a)
    return total


@settings(max_examples=50, deadline=None)
@given(
    x=st.lists(st.floats(-100, 100, allow_nan=False), min_size=1, max_size=15),
    y=st.floats(-120, 120, allow_nan=False),
)
def test_crps_sample_equals_integral_definition(x, y):
    x = np.array(x)
    np.testing.assert_allclose(crps_sample(x, y), crps_by_integration_empirical(x, y), rtol=1e-9, atol=1e-9)


def test_crps_fair_matches_pair_formula():
    rng = np.random.default_rng(9)
    x, y = rng.standard_normal(11), 0.3
    n = x.size
    brute = np.mean(np.abs(x - y)) - 0.5 * sum(abs(a - b) for a in x for b in x) / (n * (n - 1))
    np.testing.assert_allclose(crps_sample(x, y, fair=True), brute, rtol=1e-12)


@pytest.mark.parametrize("mu, sigma, y", [(0.0, 1.0, 0.0), (1.0, 0.5, 2.3), (-2.0, 3.0, 1.0)])
def test_crps_gaussian_equals_integral_definition(mu, sigma, y):
    F = lambda z: stats.norm.cdf(z, mu, sigma)  # noqa: E731
    left, _ = integrate.quad(lambda z: F(z) ** 2, -np.inf, y)
    right, _ = integrate.quad(lambda z: (1 - F(z)) ** 2, y, np.inf)
    np.testing.assert_allclose(crps_gaussian(mu, sigma, y), left + right, rtol=1e-7)


def test_crps_sample_converges_to_gaussian_closed_form_and_broadcasts():
    rng = np.random.default_rng(10)
    x = 1.0 + 2.0 * rng.standard_normal(20000)
    assert abs(crps_sample(x, 0.5, fair=True) - crps_gaussian(1.0, 2.0, 0.5)) < 0.02
    out = crps_gaussian(np.array([0.0, 1.0]), 1.0, np.array([[0.0], [2.0]]))
    assert out.shape == (2, 2)
    np.testing.assert_allclose(out[1, 1], crps_gaussian(1.0, 1.0, 2.0))
    assert crps_sample(np.full(4, 2.0), 2.0) == 0.0


def test_crps_validation():
    with pytest.raises(ValueError, match="sigma"):
        crps_gaussian(0.0, 0.0, 1.0)
    with pytest.raises(ValueError, match="1-D"):
        crps_sample(np.zeros((2, 2)), 0.0)
    with pytest.raises(ValueError, match="2 samples"):
        crps_sample(np.zeros(1), 0.0, fair=True)


# --------------------------------------------------------------------- precision/recall
@settings(max_examples=80, deadline=None)
@given(r=st.sets(st.integers(0, 12)), g=st.sets(st.integers(0, 12)))
def test_precision_recall_f1_against_indicator_vectors(r, g):
    universe = sorted(r | g)
    pred = np.array([u in r for u in universe], dtype=bool)
    true = np.array([u in g for u in universe], dtype=bool)
    tp, fp, fn = int(np.sum(pred & true)), int(np.sum(pred & ~true)), int(np.sum(~pred & true))
    s = precision_recall_f1(r, g)
    assert (s.true_positives, s.false_positives, s.false_negatives) == (tp, fp, fn)
    P = tp / (tp + fp) if tp + fp else 0.0
    R = tp / (tp + fn) if tp + fn else 0.0
    assert s.precision == pytest.approx(P) and s.recall == pytest.approx(R)
    # F1 as the harmonic mean, or equivalently 2TP / (2TP + FP + FN)
    assert s.f1 == pytest.approx(2 * tp / (2 * tp + fp + fn) if tp else 0.0)


def test_precision_recall_zero_division_and_duplicates():
    s = precision_recall_f1([], {"a"}, zero_division=1.0)
    assert s.precision == 1.0 and s.recall == 0.0
    s = precision_recall_f1(["a", "a", "b"], ["a"])
    assert s.precision == 0.5 and s.recall == 1.0
    with pytest.raises(ValueError, match="zero_division"):
        precision_recall_f1([], [], zero_division=2.0)


# --------------------------------------------------------------------------- calibration
def brute_ece(conf, correct, B):
    total = 0.0
    n = len(conf)
    for b in range(B):
        lo, hi = b / B, (b + 1) / B
        members = [i for i in range(n) if (lo < conf[i] <= hi) or (b == 0 and conf[i] == 0.0)]
        if members:
            acc = np.mean([correct[i] for i in members])
            c = np.mean([conf[i] for i in members])
            total += len(members) / n * abs(acc - c)
    return total


@pytest.mark.parametrize("B", [1, 5, 10, 15])
def test_ece_matches_brute_force_loops(B):
    rng = np.random.default_rng(B)
    conf = rng.uniform(0, 1, 300)
    conf[:4] = [0.0, 1.0, 0.2, 0.4]  # bin edges and extremes
    correct = rng.uniform(0, 1, 300) < conf**2
    np.testing.assert_allclose(expected_calibration_error(conf, correct, B), brute_ece(conf, correct, B), rtol=1e-12)
    bins = calibration_bins(conf, correct, B)
    assert bins.count.sum() == 300 and bins.edges.shape == (B + 1,)


def test_ece_small_when_calibrated_and_large_when_not():
    rng = np.random.default_rng(11)
    conf = rng.uniform(0, 1, 20000)
    calibrated = rng.uniform(0, 1, conf.size) < conf
    assert expected_calibration_error(conf, calibrated) < 0.02
    # overconfident: true accuracy conf^2 -> ECE near E[conf - conf^2] = 1/6 (binning shrinks it a little)
    over = rng.uniform(0, 1, conf.size) < conf**2
    assert abs(expected_calibration_error(conf, over, 20) - 1 / 6) < 0.02


def test_ece_validation():
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        expected_calibration_error([1.2], [True])
    with pytest.raises(ValueError, match="shape"):
        expected_calibration_error([0.2, 0.3], [True])
    with pytest.raises(ValueError, match="boolean"):
        expected_calibration_error([0.2], [2])
    with pytest.raises(ValueError, match="n_bins"):
        expected_calibration_error([0.2], [True], n_bins=0)


# ------------------------------------------------------------------------------ Spearman
def test_spearman_against_rank_pearson_and_t_formula():
    rng = np.random.default_rng(12)
    x = rng.standard_normal(25)
    y = x + rng.standard_normal(25)
    y[3] = y[4]  # a tie
    rho, p = spearman(x, y)
    rx, ry = stats.rankdata(x), stats.rankdata(y)
    r = np.corrcoef(rx, ry)[0, 1]
    np.testing.assert_allclose(rho, r, rtol=1e-12)
    t = r * np.sqrt((25 - 2) / (1 - r * r))
    np.testing.assert_allclose(p, 2 * stats.t.sf(abs(t), 23), rtol=1e-10)


def test_spearman_no_ties_closed_form_and_monotone_invariance():
    rng = np.random.default_rng(13)
    x, y = rng.permutation(10).astype(float), rng.permutation(10).astype(float)
    d = stats.rankdata(x) - stats.rankdata(y)
    np.testing.assert_allclose(spearman(x, y).rho, 1 - 6 * np.sum(d**2) / (10 * (10**2 - 1)), rtol=1e-12)
    assert spearman(x, np.exp(x)).rho == pytest.approx(1.0)
    assert spearman(x, -(x**3)).rho == pytest.approx(-1.0)


def test_spearman_validation():
    with pytest.raises(ValueError, match="constant"):
        spearman([1, 2, 3], [1, 1, 1])
    with pytest.raises(ValueError, match="equal length"):
        spearman([1, 2, 3], [1, 2, 3, 4])
    with pytest.raises(ValueError, match="at least 3"):
        spearman([1, 2], [2, 1])
