"""Tests for nextword.theory.formulation.ssm (formulation paper §5.3.4, Appendix C)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.integrate
from hypothesis import given, settings
from hypothesis import strategies as st

from nextword.theory.formulation import ssm


def system(seed: int, s: int = 4, d: int = 2):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(s, s)) - 2.5 * np.eye(s)
    return A, rng.normal(size=(s, d)), rng.normal(size=(d, s)), rng.normal(size=(d, d)), rng


def test_zoh_is_exact_for_piecewise_constant_input():
    A, B, C, D, rng = system(0)
    dt, T = 0.25, 8
    hs = rng.normal(size=(T, 2))
    Ab, Bb = ssm.discretize_zoh(A, B, dt)
    v, _ = ssm.ssm_scan(Ab, Bb, C, D, hs, np.ones(4))
    sol = scipy.integrate.solve_ivp(
        lambda t, x: A @ x + B @ hs[min(int(t / dt), T - 1)],
        (0, dt * (T - 1)),
        np.ones(4),
        t_eval=dt * np.arange(T),
        rtol=1e-11,
        atol=1e-12,
        max_step=dt / 8,
        first_step=1e-4,
    )
    np.testing.assert_allclose(v, sol.y.T, atol=1e-7)


def test_zoh_with_singular_A_reduces_to_dt_B():
    B = np.array([[1.0, 2.0], [0.0, 1.0]])
    Ab, Bb = ssm.discretize_zoh(np.zeros((2, 2)), B, 0.3)
    np.testing.assert_allclose(Ab, np.eye(2), atol=1e-15)
    np.testing.assert_allclose(Bb, 0.3 * B, atol=1e-15)


def test_exact_state_matches_ode_solver():
    A, B, _, _, _ = system(1)
    h = lambda t: np.array([np.sin(2 * t), np.cos(3 * t)])  # noqa: E731
    times = np.linspace(0.0, 1.5, 7)
    exact = ssm.ssm_exact_state(A, B, np.ones(4), h, times)
    sol = scipy.integrate.solve_ivp(
        lambda t, x: A @ x + B @ h(t), (0, 1.5), np.ones(4), t_eval=times, rtol=1e-12, atol=1e-12
    )
    np.testing.assert_allclose(exact, sol.y.T, atol=1e-9)


def test_discretisations_converge_at_first_order_for_smooth_input():
    A, B, C, D, _ = system(2)
    h = lambda t: np.array([np.sin(2 * t), np.cos(3 * t)])  # noqa: E731
    T = 1.0
    exact = ssm.ssm_exact_state(A, B, np.ones(4), h, np.array([T]))[0]
    for disc in (ssm.discretize_zoh, ssm.discretize_euler):
        errs = []
        for n in (20, 40, 80):
            dt = T / n
            hs = np.array([h(k * dt) for k in range(n + 1)])
            v, _ = ssm.ssm_scan(*disc(A, B, dt), C, D, hs, np.ones(4))
            errs.append(np.abs(v[-1] - exact).max())
        assert 1.8 < errs[0] / errs[1] < 2.2 and 1.8 < errs[1] / errs[2] < 2.2


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), T=st.integers(1, 12))
def test_scan_equals_convolution(seed, T):
    A, B, C, D, rng = system(seed, s=3, d=2)
    Ab, Bb = ssm.discretize_zoh(A, B, 0.1)
    hs = rng.normal(size=(T, 2))
    v0 = rng.normal(size=3)
    _, u = ssm.ssm_scan(Ab, Bb, C, D, hs, v0)
    np.testing.assert_allclose(ssm.ssm_convolve(Ab, Bb, C, D, hs, v0), u, atol=1e-10)


def test_scan_is_causal():
    A, B, C, D, rng = system(3)
    Ab, Bb = ssm.discretize_zoh(A, B, 0.2)
    hs = rng.normal(size=(10, 2))
    _, u1 = ssm.ssm_scan(Ab, Bb, C, D, hs, np.zeros(4))
    hs2 = hs.copy()
    hs2[6] += 1.0
    _, u2 = ssm.ssm_scan(Ab, Bb, C, D, hs2, np.zeros(4))
    np.testing.assert_array_equal(u1[:6], u2[:6])
    assert np.abs(u1[6:] - u2[6:]).max() > 0


def test_bad_inputs_raise_clear_errors():
    A, B, C, D, _ = system(4)
    with pytest.raises(ValueError, match="dt"):
        ssm.discretize_zoh(A, B, 0.0)
    with pytest.raises(ValueError, match="B must have shape"):
        ssm.discretize_zoh(A, B.T, 0.1)
    Ab, Bb = ssm.discretize_zoh(A, B, 0.1)
    with pytest.raises(ValueError, match="h must have shape"):
        ssm.ssm_scan(Ab, Bb, C, D, np.zeros((5, 3)), np.zeros(4))
    with pytest.raises(ValueError, match="v0"):
        ssm.ssm_scan(Ab, Bb, C, D, np.zeros((5, 2)), np.zeros(3))
    with pytest.raises(ValueError, match="non-finite"):
        ssm.ssm_scan(Ab, Bb, C, D, np.full((5, 2), np.nan), np.zeros(4))
