"""The schematic figures of Part 5 (page 5.1) draw what the library computes."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from nextword.booktools.schematics.sphere import (  # noqa: E402
    draw_layers_as_flow,
    draw_retraction_vs_exp,
    draw_rmsnorm_projection,
    draw_tangent_plane,
    draw_vmf_on_circle,
)


def test_rmsnorm_projection_keeps_direction_and_sets_length_sqrt_d():
    states = np.array([[3.0, 4.0], [-0.5, 0.2], [0.1, -2.0]])
    fig, ax = plt.subplots()
    images = draw_rmsnorm_projection(ax, states)
    plt.close(fig)
    assert np.allclose(np.linalg.norm(images, axis=1), np.sqrt(2.0), atol=1e-12)
    cosines = np.sum(images * states, axis=1) / (np.linalg.norm(images, axis=1) * np.linalg.norm(states, axis=1))
    assert np.allclose(cosines, 1.0, atol=1e-12)


def test_tangent_plane_step_lands_where_the_maps_say():
    fig = plt.figure()
    ax = fig.add_subplot(projection="3d")
    points = draw_tangent_plane(ax, step_length=1.0)
    plt.close(fig)
    assert abs(points["x"] @ points["v"]) == 0.0  # the step is tangent
    assert np.allclose(np.linalg.norm(points["retraction"]), 1.0, atol=1e-12)
    assert np.allclose(points["retraction"], points["tip"] / np.linalg.norm(points["tip"]), atol=1e-12)
    assert np.allclose(points["exp_map"], [np.sin(1.0), 0.0, np.cos(1.0)], atol=1e-12)  # arc of length 1


def test_retraction_lands_at_arctan_and_exp_at_the_arc_length():
    fig, ax = plt.subplots()
    points = draw_retraction_vs_exp(ax, step_length=0.8)
    plt.close(fig)
    angle = lambda p: np.arctan2(p[0], p[1])  # noqa: E731  (angle from x = (0, 1) towards v)
    assert np.isclose(angle(points["retraction"]), np.arctan(0.8), atol=1e-12)
    assert np.isclose(angle(points["exp_map"]), 0.8, atol=1e-12)
    # the retraction falls short of the exponential map: arctan(s) < s
    assert angle(points["retraction"]) < angle(points["exp_map"])


def test_vmf_on_circle_integrates_to_one_and_peaks_at_the_mean():
    fig, ax = plt.subplots()
    densities = draw_vmf_on_circle(ax, concentrations=(0.0, 2.0, 10.0), mean_angle=np.radians(60))
    plt.close(fig)
    assert densities.shape == (3, 361)
    mass = np.sum(densities[:, :-1], axis=1) * np.radians(1.0)  # periodic rectangle rule: spectrally accurate
    assert np.allclose(mass, 1.0, atol=1e-10)
    assert np.allclose(densities[0], 1 / (2 * np.pi), atol=1e-12)  # kappa = 0: uniform on the circle
    assert list(np.argmax(densities[1:], axis=1)) == [60, 60]
    assert densities[2].max() > densities[1].max()  # more concentrated, taller


def test_layers_as_flow_is_euler_plus_retraction_and_approaches_the_mean():
    fig, ax = plt.subplots()
    path = draw_layers_as_flow(ax, start_angle=np.radians(200), pull_angle=np.radians(60), n_layers=6)
    plt.close(fig)
    assert path.shape == (7, 2)
    assert np.allclose(np.linalg.norm(path, axis=1), 1.0, atol=1e-12)  # every layer's state on the circle
    mean_direction = np.array([np.cos(np.radians(60)), np.sin(np.radians(60))])
    by_hand = path[0] + 0.25 * 2.0 * mean_direction
    assert np.allclose(path[1], by_hand / np.linalg.norm(by_hand), atol=1e-12)  # one Euler step, retracted
    assert np.all(np.diff(path @ mean_direction) > 0)  # each layer turns the state towards mu


def test_bad_inputs():
    fig, ax = plt.subplots()
    with pytest.raises(ValueError, match="states"):
        draw_rmsnorm_projection(ax, np.ones((2, 3)))
    with pytest.raises(ValueError, match="zero row"):
        draw_rmsnorm_projection(ax, np.zeros((1, 2)))
    with pytest.raises(ValueError, match="step_length"):
        draw_retraction_vs_exp(ax, step_length=0.0)
    with pytest.raises(ValueError, match="n_layers"):
        draw_layers_as_flow(ax, n_layers=0)
    with pytest.raises(ValueError, match="concentrations"):
        draw_vmf_on_circle(ax, concentrations=(-1.0,))
    plt.close(fig)
