"""The schematic figures of pages 6.5–6.7 draw what the library computes."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from nextword.booktools.schematics.positions import (  # noqa: E402
    draw_decoder_block,
    draw_rope_rotation,
    draw_sinusoid_wavelengths,
)
from nextword.positions import apply_rope  # noqa: E402


def test_rope_rotation_turns_by_theta_per_position_and_keeps_length():
    fig, ax = plt.subplots()
    turned = draw_rope_rotation(ax, vector=(1.0, 0.3), positions=range(5), theta=0.4)
    plt.close(fig)
    angles = np.unwrap(np.arctan2(turned[:, 1], turned[:, 0]))
    assert np.allclose(np.diff(angles), 0.4, atol=1e-12)
    assert np.allclose(np.linalg.norm(turned, axis=1), np.hypot(1.0, 0.3), atol=1e-12)
    # with theta = 1 the drawing is the library's RoPE of a 2-d vector (frequency 1 for pair 0)
    fig, ax = plt.subplots()
    turned = draw_rope_rotation(ax, vector=(1.0, 0.3), positions=range(4), theta=1.0)
    plt.close(fig)
    assert np.allclose(turned, apply_rope(np.tile([1.0, 0.3], (4, 1))), atol=1e-12)


def test_sinusoid_wavelengths_are_two_pi_times_base_power():
    fig, ax = plt.subplots()
    wavelengths = draw_sinusoid_wavelengths(ax, d_model=16, pairs=(0, 2), num_positions=32)
    plt.close(fig)
    assert np.allclose(wavelengths, [2 * np.pi, 2 * np.pi * 10000 ** (4 / 16)], rtol=1e-12)


def test_decoder_block_stage_order():
    fig, axes = plt.subplots(1, 2)
    pre, post = draw_decoder_block(axes[0], pre_norm=True), draw_decoder_block(axes[1], pre_norm=False)
    plt.close(fig)
    assert pre == ["LayerNorm", "masked multi-head attention", "add", "LayerNorm", "feed-forward network", "add"]
    assert post == ["masked multi-head attention", "add", "LayerNorm", "feed-forward network", "add", "LayerNorm"]


def test_bad_inputs():
    fig, ax = plt.subplots()
    with pytest.raises(ValueError, match="vector"):
        draw_rope_rotation(ax, vector=(1.0, 0.0, 0.0))
    with pytest.raises(ValueError, match="positions"):
        draw_rope_rotation(ax, positions=[])
    with pytest.raises(ValueError, match="pairs"):
        draw_sinusoid_wavelengths(ax, d_model=8, pairs=(4,))
    plt.close(fig)
