"""The barrier schematic draws the function it names, and refuses input it cannot draw."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from nextword.booktools.schematics.barrier import (  # noqa: E402
    draw_barrier_landscape,
    draw_noise_and_scale,
    draw_penalised_objective,
    log_barrier,
    path_minimiser,
)


def test_log_barrier_is_minus_log_of_the_absolute_margin():
    margins = np.array([0.5, 1.0, 2.0, -2.0])
    assert np.allclose(log_barrier(margins), [np.log(2), 0.0, -np.log(2), -np.log(2)], atol=1e-15)
    assert log_barrier(1e-12) > 27  # grows without bound towards the wall


@pytest.mark.parametrize("bad", [0.0, np.inf, np.nan])
def test_log_barrier_refuses_the_wall_and_non_finite_margins(bad):
    with pytest.raises(ValueError, match="margins"):
        log_barrier([1.0, bad])


def test_landscape_curves_are_the_penalty_and_the_marks_sit_on_it():
    ax_wall, ax_far = draw_barrier_landscape(reached={"margin arm": 22.7, "CE arm": 0.01})
    m, penalty = ax_wall.lines[0].get_data()
    assert np.allclose(penalty, -np.log(m), atol=1e-12)
    assert m.min() > 0 and penalty.max() > 3  # the curve rises towards the wall m -> 0
    log_m, far_penalty = ax_far.lines[0].get_data()
    assert np.allclose(far_penalty, -log_m, atol=1e-12)
    marks = {line.get_label().split(":")[0]: line.get_data() for line in ax_far.lines[2:]}
    assert np.allclose(marks["margin arm"], ([22.7], [-22.7]))
    assert ax_far.get_xlim()[1] > 22.7  # the mark is inside the panel
    plt.close("all")


def test_landscape_refuses_bad_arguments():
    with pytest.raises(ValueError, match="margin_max"):
        draw_barrier_landscape(margin_max=1.0)
    with pytest.raises(ValueError, match="reached"):
        draw_barrier_landscape(reached={"diverged": float("inf")})
    fig, ax = plt.subplots()
    with pytest.raises(ValueError, match="two axes"):
        draw_barrier_landscape([ax])
    plt.close("all")


def test_noise_and_scale_keeps_the_circles_and_scales_the_points():
    points = np.array([[0.1, 0.0], [-0.1, 0.0], [0.0, 0.1]])
    axes = draw_noise_and_scale(points, 0.05, scales=(1.0, 2.0))
    for ax, scale in zip(axes, (1.0, 2.0)):
        centres = np.array([patch.center for patch in ax.patches])
        assert np.allclose(centres, scale * points, atol=1e-15)
        assert all(patch.radius == 0.05 for patch in ax.patches)
    # the nearest gap in units of sigma doubles with the scale: sqrt(2) * 0.1 / 0.05 = 2.8, then 5.7
    assert axes[0].get_title().endswith("2.8 sigma") and axes[1].get_title().endswith("5.7 sigma")
    plt.close("all")


def test_noise_and_scale_refuses_bad_arguments():
    with pytest.raises(ValueError, match="points"):
        draw_noise_and_scale(np.zeros((3, 3)), 0.1)
    with pytest.raises(ValueError, match="sigma"):
        draw_noise_and_scale(np.eye(2), 0.0)
    with pytest.raises(ValueError, match="scales"):
        draw_noise_and_scale(np.eye(2), 0.1, scales=(1.0, -1.0))


def test_path_minimiser_solves_the_first_order_condition():
    for weight, variance, gamma in [(0.0, 1.0, 1.0), (0.75, 1.0, 1.0), (0.3, 2.0, 0.5)]:
        a = path_minimiser(weight, variance=variance, gamma=gamma)
        assert abs(weight * variance / (1 - a * variance) + a / gamma) < 1e-12
        assert 1 - a * variance > 0 and a <= 0  # admissible side, negative coupling
    assert path_minimiser(2.0) < path_minimiser(0.75) < path_minimiser(0.0)  # moves left with λ
    with pytest.raises(ValueError, match="weight"):
        path_minimiser(-1.0)
    with pytest.raises(ValueError, match="variance and gamma"):
        path_minimiser(1.0, gamma=0.0)


def test_penalised_objective_marks_each_minimiser_and_the_wall():
    ax = draw_penalised_objective((0.0, 2.0))
    marks = [line.get_data() for line in ax.lines if line.get_marker() == "o"]
    assert np.allclose([m[0][0] for m in marks], [0.0, -1.0], atol=1e-12)
    assert np.allclose(marks[1][1][0], -2 * np.log(2) + 0.5, atol=1e-12)  # f(a*) at λ = 2
    assert any(np.allclose(line.get_xdata(), 1.0) for line in ax.lines)  # the wall a = 1/Var_t
    plt.close("all")
    with pytest.raises(ValueError, match="weights"):
        draw_penalised_objective(())
