"""Tests for nextword.theory.formulation.objectives (formulation paper §3–4)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nextword.decoding import NGramLM
from nextword.data import markov_source
from nextword.numerics import central_difference
from nextword.theory.formulation import objectives as ob


def random_model(rng, V):
    """An arbitrary full-context model: the next-token law is a hash of the prefix."""
    table = {}

    def next_probs(prefix):
        if prefix not in table:
            table[prefix] = rng.dirichlet(np.ones(V))
        return table[prefix]

    return next_probs


def test_kl_divergence_basic_cases():
    assert ob.kl_divergence([0.5, 0.5], [0.5, 0.5]) == 0.0
    assert ob.kl_divergence([1.0, 0.0], [0.5, 0.5]) == pytest.approx(np.log(2))
    assert ob.kl_divergence([0.5, 0.5], [1.0, 0.0]) == np.inf
    with pytest.raises(ValueError, match="same shape"):
        ob.kl_divergence([0.5, 0.5], [1.0])


def test_sequence_distribution_matches_explicit_product():
    rng = np.random.default_rng(0)
    V, L = 3, 3
    model = random_model(rng, V)
    joint, seqs = ob.sequence_distribution(model, V, L)
    assert joint.sum() == pytest.approx(1.0)
    for n, s in enumerate(itertools.product(range(V), repeat=L)):
        assert tuple(seqs[n]) == s
        expected = model(())[s[0]] * model((s[0],))[s[1]] * model((s[0], s[1]))[s[2]]
        assert joint[n] == pytest.approx(expected, rel=1e-12)


def test_markov_adapter_is_stationary():
    rng = np.random.default_rng(1)
    src = markov_source(3, 2, rng)
    joint, _ = ob.sequence_distribution(ob.markov_next_probs(src), 3, 4)
    J = joint.reshape(3, 3, 3, 3)
    np.testing.assert_allclose(J.sum(axis=(2, 3)), J.sum(axis=(0, 3)), atol=1e-12)  # law of (f1,f2) = (f2,f3)
    np.testing.assert_allclose(J.sum(axis=(2, 3)), src.stationary_distribution(), atol=1e-12)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_kl_decomposition_identities(seed):
    rng = np.random.default_rng(seed)
    V, L = 2, 4
    p, q = random_model(rng, V), random_model(rng, V)
    dec = ob.kl_decomposition(p, q, V, L)
    jp, _ = ob.sequence_distribution(p, V, L)
    jq, _ = ob.sequence_distribution(q, V, L)
    assert dec.joint == pytest.approx(float(np.sum(jp * np.log(jp / jq))), rel=1e-10)  # (4.2a)
    assert dec.per_position.sum() == pytest.approx(dec.joint, rel=1e-10)  # (4.4b)
    np.testing.assert_allclose(dec.per_position, dec.cross_entropy - dec.entropy, atol=1e-12)
    assert np.all(dec.per_position >= -1e-12) and np.all(dec.joint >= dec.per_position - 1e-12)  # Remark 4.6
    # entropy terms sum to the entropy of the joint law (the theta-free constant of 4.2d)
    assert dec.entropy.sum() == pytest.approx(float(-np.sum(jp * np.log(jp))), rel=1e-10)


def test_shared_prefix_estimate_is_unbiased():
    rng = np.random.default_rng(2)
    src = markov_source(3, 1, rng)
    lm = NGramLM(3, 1, k=1.0).fit([src.sample(30, rng)])  # a unigram model, deliberately wrong
    L = 4
    dec = ob.kl_decomposition(ob.markov_next_probs(src), lm.next_probs, 3, L)
    seqs = np.array([src.sample(L, rng) for _ in range(3000)])
    losses = ob.position_losses(seqs, lm.next_probs, 3).sum(axis=1)
    se = losses.std() / np.sqrt(losses.size)
    assert abs(ob.shared_prefix_estimate(seqs, lm.next_probs, 3) - dec.objective) < 4 * se


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), beta=st.floats(0.05, 5.0))
def test_kl_regularised_optimum_beats_perturbations(seed, beta):
    rng = np.random.default_rng(seed)
    pi_ref, r = rng.dirichlet(np.ones(6)), rng.normal(size=6)
    pi_star, value = ob.kl_regularised_optimum(pi_ref, r, beta)
    assert ob.rl_objective(pi_star, pi_ref, r, beta) == pytest.approx(value, abs=1e-10)
    for _ in range(5):
        other = rng.dirichlet(np.ones(6))
        assert ob.rl_objective(other, pi_ref, r, beta) >= value - 1e-12
        gibbs = ob.rl_objective(other, pi_ref, r, beta) - value
        assert gibbs == pytest.approx(beta * ob.kl_divergence(other, pi_star), rel=1e-8, abs=1e-10)


def test_rl_limits_and_empirical_estimator():
    rng = np.random.default_rng(3)
    pi_ref, r = rng.dirichlet(np.ones(5)), np.array([0.0, 1.0, 3.0, 2.0, -1.0])
    np.testing.assert_allclose(ob.kl_regularised_optimum(pi_ref, r, 1e4)[0], pi_ref, atol=1e-3)
    assert ob.kl_regularised_optimum(pi_ref, r, 1e-3)[0][2] > 0.999
    pi = rng.dirichlet(np.ones(5))
    idx = rng.choice(5, size=20000, p=pi)
    est = ob.rl_empirical_objective(np.log(pi[idx]), np.log(pi_ref[idx]), r[idx], 0.7)
    assert est == pytest.approx(ob.rl_objective(pi, pi_ref, r, 0.7), abs=0.05)


def test_table_gradient_matches_finite_differences_and_torch():
    rng = np.random.default_rng(4)
    W, N = rng.normal(size=(4, 4)), rng.integers(0, 5, size=(4, 4)).astype(float)
    loss, g = ob.table_loss_and_grad(W, N)
    fd = central_difference(lambda w: ob.table_loss_and_grad(w, N)[0], W)  # (4, 4)
    np.testing.assert_allclose(g, fd, atol=1e-8)
    torch = pytest.importorskip("torch")
    Wt = torch.tensor(W, requires_grad=True)
    Nt = torch.tensor(N)
    lt = -(Nt * torch.log_softmax(Wt, dim=1)).sum() / Nt.sum()
    lt.backward()
    assert loss == pytest.approx(lt.item(), rel=1e-12)
    np.testing.assert_allclose(g, Wt.grad.numpy(), atol=1e-12)


def test_lora_recovers_a_low_rank_shift_at_its_rank():
    rng = np.random.default_rng(5)
    V, true_rank = 8, 2
    W0 = rng.normal(size=(V, V))
    shift = rng.normal(size=(V, true_rank)) @ rng.normal(size=(true_rank, V))
    P_new = np.exp(W0 + shift)
    P_new /= P_new.sum(axis=1, keepdims=True)
    w = np.full(V, 1 / V)
    counts = w[:, None] * P_new  # population-level "counts" (expected frequencies)
    kls = {}
    for r in (1, 2):
        A, B, hist = ob.fit_lora(W0, counts, r, rng, steps=1500, lr=0.05)
        assert np.linalg.matrix_rank(A @ B, tol=1e-8) <= r
        kls[r] = ob.table_kl(P_new, W0 + A @ B, w)
        assert hist[-1] <= hist[0]
    assert kls[2] < 1e-4 < kls[1]
    W_full, _ = ob.fit_table(W0, counts, steps=1500)
    assert ob.table_kl(P_new, W_full, w) < 1e-4


def test_bad_inputs_raise():
    with pytest.raises(ValueError, match="beta"):
        ob.kl_regularised_optimum(np.array([0.5, 0.5]), np.zeros(2), 0.0)
    with pytest.raises(ValueError, match="probability vector"):
        ob.rl_objective(np.array([0.5, 0.6]), np.array([0.5, 0.5]), np.zeros(2), 1.0)
    with pytest.raises(ValueError, match="square"):
        ob.table_loss_and_grad(np.zeros((2, 3)), np.ones((2, 3)))
    with pytest.raises(ValueError, match="next_probs"):
        ob.sequence_distribution(lambda prefix: np.ones(3), 3, 2)
    with pytest.raises(TypeError, match="rng"):
        ob.fit_lora(np.zeros((2, 2)), np.ones((2, 2)), 1, rng=0)
