"""``nextword.numerics.rk4``: the classical Runge–Kutta stepper the pages integrate small ODEs with."""

from __future__ import annotations

import numpy as np
import pytest

from nextword.numerics import rk4


def test_rk4_solves_a_linear_system_to_fourth_order():
    generator = np.array([[-1.0, 1.0], [0.5, -0.5]])  # rows sum to 0: p' = p Q keeps the mass
    p0 = np.array([0.9, 0.1])
    exact = p0 @ np.array(
        [
            [1 / 3 + 2 / 3 * np.exp(-1.5), 2 / 3 - 2 / 3 * np.exp(-1.5)],
            [1 / 3 - 1 / 3 * np.exp(-1.5), 2 / 3 + 1 / 3 * np.exp(-1.5)],
        ]
    )  # expm(Q t) at t = 1
    errors = [np.abs(rk4(lambda p, t: p @ generator, p0, 1.0, n=n) - exact).max() for n in (10, 20)]
    assert errors[0] < 1e-5
    assert 2**3.5 < errors[0] / errors[1] < 2**4.5  # halving h divides the error by about 16
    assert abs(rk4(lambda p, t: p @ generator, p0, 1.0, n=50).sum() - 1) < 1e-12


def test_rk4_passes_time_and_rejects_bad_steps():
    assert abs(float(rk4(lambda y, t: 2 * t * np.ones_like(y), np.array(0.0), 1.3, n=7)) - 1.3**2) < 1e-12
    for n in (0, -1):
        with pytest.raises(ValueError, match="n must be >= 1"):
            rk4(lambda y, t: y, np.array(1.0), 1.0, n=n)
    with pytest.raises(TypeError, match="n must be an integer"):
        rk4(lambda y, t: y, np.array(1.0), 1.0, n=2.5)
    with pytest.raises(ValueError, match="t_end"):
        rk4(lambda y, t: y, np.array(1.0), float("inf"))
