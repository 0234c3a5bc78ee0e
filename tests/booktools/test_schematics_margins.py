"""The Part 4 margin schematics draw what the library computes, and refuse inconsistent input."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from nextword.booktools.schematics.margins import (  # noqa: E402
    draw_margin_regions,
    draw_residual_fold,
    residual_curve,
)
from nextword.theory.barrier import scalar_margin  # noqa: E402


def test_margin_boundary_is_where_coupling_times_variance_is_one():
    fig, ax = plt.subplots()
    boundary = draw_margin_regions(ax, variance_max=4.0, coupling_max=1.5, points=[(1.0, 0.5)], point_labels=["t"])
    plt.close(fig)
    assert np.allclose(boundary[:, 0] * boundary[:, 1], 1.0, atol=1e-12)
    assert boundary[:, 1].max() <= 1.5 and boundary[:, 0].max() == pytest.approx(4.0)
    assert (boundary[:, 1] > 0).all()  # the boundary exists only for a positive coupling


def test_margin_regions_refuse_bad_input():
    with pytest.raises(ValueError, match="variance_max"):
        draw_margin_regions(variance_max=0.0)
    with pytest.raises(ValueError, match="point_labels"):
        draw_margin_regions(points=[(1.0, 0.5)], point_labels=["a", "b"])
    plt.close("all")


def test_residual_curve_slope_is_the_library_margin():
    grid = np.linspace(-2.0, 3.0, 5001)
    residuals, margins = residual_curve([0.0, 2.0], 1.5, grid)
    slope = np.gradient(residuals, grid)
    assert np.allclose(slope[1:-1], margins[1:-1], atol=1e-5)
    assert np.allclose(margins, scalar_margin(np.column_stack([np.zeros_like(grid), 2 + 0 * grid, grid]), a=1.5)[:, -1])


def test_fold_gives_three_preimages_and_a_positive_margin_one():
    fig, ax = plt.subplots()
    preimages = draw_residual_fold(ax, past=(0.0, 2.0), couplings=(0.5, 1.5), noise=-1.0)
    plt.close(fig)
    assert preimages[0.5].size == 1 and preimages[1.5].size == 3
    for a, found in preimages.items():
        residuals, _ = residual_curve([0.0, 2.0], a, found)
        assert np.allclose(residuals, -1.0, atol=1e-5)


def test_residual_fold_refuses_bad_input():
    with pytest.raises(ValueError, match="x_range"):
        draw_residual_fold(x_range=(1.0, 0.0))
    with pytest.raises(ValueError, match="past"):
        residual_curve([], 0.5, np.zeros(3))
    plt.close("all")
