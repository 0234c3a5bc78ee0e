"""Tests for nextword.theory.formulation.diffusion (formulation paper §9, Appendix D)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
import scipy.optimize
from hypothesis import given, settings
from hypothesis import strategies as st

from nextword.theory.formulation import diffusion as dd


def random_generator(rng: np.random.Generator, S: int) -> np.ndarray:
    Q = rng.exponential(size=(S, S))
    np.fill_diagonal(Q, 0.0)
    np.fill_diagonal(Q, -Q.sum(axis=1))
    return Q


def test_generators_are_valid_and_have_the_stated_limits():
    V = 5
    for Q in (dd.uniform_generator(V, 0.7), dd.absorbing_generator(V, mask=4, rate=1.3)):
        assert dd.generator_violations(Q) == []
        np.testing.assert_allclose(Q @ np.ones(V), 0.0, atol=1e-14)
    p0 = np.array([0.4, 0.3, 0.2, 0.1, 0.0])
    np.testing.assert_allclose(dd.forward_marginal(p0, dd.uniform_generator(V), 60.0), 1 / V, atol=1e-12)
    np.testing.assert_allclose(dd.forward_marginal(p0, dd.absorbing_generator(V, 4), 60.0), np.eye(V)[4], atol=1e-12)


def test_matrices_as_printed_in_examples_9_2_and_9_3_are_not_generators():
    V, beta = 4, 0.5
    printed_uniform = np.full((V, V), beta / V)
    np.fill_diagonal(printed_uniform, 1 - (V - 1) * beta / V)
    assert any("sums to" in msg for msg in dd.generator_violations(printed_uniform))
    # ... it is the one-step transition matrix I + Q of the corrected generator
    np.testing.assert_allclose(printed_uniform - np.eye(V), dd.uniform_generator(V, beta), atol=1e-15)
    m = V - 1
    printed_absorbing = np.zeros((V, V))
    printed_absorbing[m, m] = 1.0
    printed_absorbing[:m, m] = beta
    printed_absorbing[:m, :m] = 1 - beta
    assert dd.generator_violations(printed_absorbing)
    with pytest.raises(ValueError, match="not a CTMC generator"):
        dd.check_generator(printed_absorbing)


def test_sequence_generator_factorises_over_positions():
    Q = dd.absorbing_generator(3, mask=2, rate=0.8)
    Qs = dd.sequence_generator(Q, 2)
    assert dd.generator_violations(Qs) == []
    P = scipy.linalg.expm(0.6 * Q)
    np.testing.assert_allclose(dd.transition_matrix(Qs, 0.6), np.kron(P, P), atol=1e-12)
    # only one position changes per jump (sparse structure of Remark 9.1)
    states = np.array(np.unravel_index(np.arange(9), (3, 3))).T
    changed = (states[:, None, :] != states[None, :, :]).sum(-1)
    assert np.all(Qs[changed > 1] == 0)


def test_gillespie_matches_matrix_exponential():
    rng = np.random.default_rng(0)
    Q = random_generator(rng, 4)
    p0 = np.array([0.7, 0.1, 0.1, 0.1])
    n = 4000
    x, jumps = dd.gillespie(Q, rng.choice(4, size=n, p=p0), 0.8, rng)
    expected = dd.forward_marginal(p0, Q, 0.8)
    freq = np.bincount(x, minlength=4) / n
    assert np.all(np.abs(freq - expected) < 5 * np.sqrt(expected * (1 - expected) / n))
    assert jumps.mean() > 0


def test_gillespie_absorbed_chains_stop():
    rng = np.random.default_rng(1)
    Q = dd.absorbing_generator(3, mask=0, rate=5.0)
    x, jumps = dd.gillespie(Q, np.full(200, 2), 10.0, rng)
    assert np.all(x == 0) and np.all(jumps == 1)


def test_tau_leaping_law_and_first_order_convergence():
    rng = np.random.default_rng(2)
    Q = dd.uniform_generator(3, 2.0)
    p0 = np.array([1.0, 0.0, 0.0])
    exact = dd.forward_marginal(p0, Q, 1.0)
    errs = []
    for n in (10, 20, 40):
        law = p0 @ np.linalg.matrix_power(dd.euler_transition_matrix(Q, 1.0 / n), n)
        errs.append(np.abs(law - exact).sum())
    assert 1.7 < errs[0] / errs[1] < 2.3 and 1.7 < errs[1] / errs[2] < 2.3
    x = dd.tau_leaping(Q, np.zeros((3000, 2), dtype=int), 1.0, 10, rng)
    law = p0 @ np.linalg.matrix_power(dd.euler_transition_matrix(Q, 0.1), 10)
    freq = np.bincount(x.ravel(), minlength=3) / x.size
    assert np.abs(freq - law).max() < 0.03


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), S=st.integers(2, 6))
def test_reverse_generator_is_a_generator_and_reverses_the_flow(seed, S):
    rng = np.random.default_rng(seed)
    Q = random_generator(rng, S)
    p = rng.dirichlet(np.ones(S))
    R = dd.reverse_generator(Q, p)
    assert dd.generator_violations(R, atol=1e-9) == []
    # the identity behind Theorem D.1: p Q̄ = -p Q (the reverse flow undoes the forward flow)
    np.testing.assert_allclose(p @ R, -(p @ Q), atol=1e-10)


def closed_form_uniform(p0, t):  # rate 1: p(t) = 1/V + (p0 - 1/V) e^{-t}
    return 1 / p0.size + (p0 - 1 / p0.size) * np.exp(-t)


def closed_form_absorbing(p0, t):  # rate 1, mask = last state
    p = p0 * np.exp(-t)
    p[-1] = 1 - np.exp(-t) * (1 - p0[-1])
    return p


@pytest.mark.parametrize(
    "make_Q, closed_form",
    [
        (lambda: dd.uniform_generator(4, 1.0), closed_form_uniform),
        (lambda: dd.absorbing_generator(4, 3), closed_form_absorbing),
    ],
)
def test_reverse_marginals_retrace_the_forward_marginals(make_Q, closed_form):
    Q = make_Q()
    p0 = np.array([0.5, 0.3, 0.2, 0.0])
    times = np.concatenate([np.linspace(2.0, 0.1, 60), np.geomspace(0.1, 1e-3, 40)[1:]])
    pb = dd.reverse_marginals(p0, Q, times)
    expected = np.array([closed_form(p0, t) for t in times])
    np.testing.assert_allclose(pb, expected, atol=1e-6)
    np.testing.assert_allclose(dd.forward_marginal(p0, Q, 0.37), closed_form(p0, 0.37), atol=1e-12)


def test_sample_reverse_recovers_the_data_law():
    rng = np.random.default_rng(3)
    p0 = np.array([0.6, 0.3, 0.1, 0.0])
    x = dd.sample_reverse(p0, dd.absorbing_generator(4, 3), 4.0, 200, 4000, rng)
    freq = np.bincount(x, minlength=4) / x.size
    assert np.abs(freq - p0).max() < 0.03


def test_score_entropy_minimised_at_the_probability_ratio():
    rng = np.random.default_rng(4)
    S = 4
    p = rng.dirichlet(np.ones(S))
    off = ~np.eye(S, dtype=bool)

    def loss(z):
        s = np.ones((S, S))
        s[off] = np.exp(z)
        return dd.score_entropy_loss(s, p)

    res = scipy.optimize.minimize(loss, np.zeros(S * S - S), method="BFGS", options={"gtol": 1e-10})
    np.testing.assert_allclose(np.exp(res.x), dd.probability_ratios(p)[off], rtol=1e-5)


def test_tower_rule_form_equals_marginal_form_for_uniform_only_weighted_for_absorbing():
    rng = np.random.default_rng(5)
    S, t = 4, 0.7
    p0 = np.array([0.5, 0.3, 0.2, 0.0])
    s = np.exp(rng.normal(size=(S, S)))
    Qu = dd.uniform_generator(S)
    P = dd.transition_matrix(Qu, t)
    assert dd.denoising_score_entropy_loss(s, p0, P) == pytest.approx(dd.score_entropy_loss(s, p0 @ P), rel=1e-12)
    Qa = dd.absorbing_generator(S, 3)
    P = dd.transition_matrix(Qa, t)
    unweighted_gap = dd.denoising_score_entropy_loss(s, p0, P) - dd.score_entropy_loss(s, p0 @ P)
    assert abs(unweighted_gap) > 1e-3
    assert dd.denoising_score_entropy_loss(s, p0, P, Qa) == pytest.approx(
        dd.score_entropy_loss(s, p0 @ P, Qa), rel=1e-12
    )


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(ValueError, match="V must be"):
        dd.uniform_generator(1)
    with pytest.raises(ValueError, match="mask"):
        dd.absorbing_generator(3, mask=3)
    with pytest.raises(ValueError, match="probability vector"):
        dd.forward_marginal(np.array([0.5, 0.6]), dd.uniform_generator(2), 1.0)
    with pytest.raises(ValueError, match="tau"):
        dd.euler_transition_matrix(dd.uniform_generator(2, 10.0), 1.0)
    with pytest.raises(ValueError, match="positive"):
        dd.score_entropy_loss(np.zeros((2, 2)), np.array([0.5, 0.5]))
    with pytest.raises(ValueError, match="decreasing"):
        dd.reverse_marginals(np.array([0.5, 0.5]), dd.uniform_generator(2), np.array([0.0, 1.0]))
    with pytest.raises(TypeError, match="rng"):
        dd.gillespie(dd.uniform_generator(2), np.zeros(3, dtype=int), 1.0, rng=0)
