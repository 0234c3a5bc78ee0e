"""Schematic figures for positional encodings and the decoder block (pages 6.5–6.7), drawn from code.

Each function draws on a given matplotlib ``Axes`` and returns the numbers it drew, so a page can
assert that the picture says what the library computes (a rotation by ``t·θ``, a wavelength
``2π·base^{2i/d_model}``, the order of the sub-layers of a block).
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Arc, FancyBboxPatch

from nextword.positions import rope_rotation_matrix, sinusoidal_encoding

__all__ = ["draw_rope_rotation", "draw_sinusoid_wavelengths", "draw_decoder_block"]


def draw_rope_rotation(
    ax: plt.Axes, vector: Sequence[float] = (1.0, 0.3), positions: Sequence[int] = range(6), theta: float = 1.0
) -> np.ndarray:
    """Draw one 2-d coordinate pair ``vector`` rotated by the angle ``t·theta`` for each position ``t``.

    This is what rotary position embedding (RoPE) does to one pair of a query or key:
    ``R(tθ) v`` with ``R(a) = [[cos a, -sin a], [sin a, cos a]]``. Returns the rotated vectors,
    shape ``(len(positions), 2)``.
    """
    v = np.asarray(vector, dtype=float)
    if v.shape != (2,):
        raise ValueError(f"vector must have 2 coordinates, got shape {v.shape}")
    positions = list(positions)
    if not positions:
        raise ValueError("positions must not be empty")
    cmap = plt.get_cmap("viridis")
    rotated = np.array([rope_rotation_matrix(t * theta, 2) @ v for t in positions])  # (n, 2): R(tθ) v
    radius = float(np.linalg.norm(v))
    circle = np.linspace(0, 2 * np.pi, 200)
    ax.plot(radius * np.cos(circle), radius * np.sin(circle), color="0.8", lw=0.8)
    for n, (t, r) in enumerate(zip(positions, rotated)):
        colour = cmap(n / max(len(positions) - 1, 1))
        ax.annotate("", xy=r, xytext=(0, 0), arrowprops=dict(arrowstyle="-|>", color=colour, lw=1.6))
        ax.text(*(1.15 * r), f"t={t}", color=colour, fontsize=8, ha="center", va="center")
    if len(positions) > 1:  # the angle between the first two positions: theta times their distance
        a0 = np.degrees(np.arctan2(rotated[0, 1], rotated[0, 0]))
        a1 = np.degrees(np.arctan2(rotated[1, 1], rotated[1, 0]))
        ax.add_patch(Arc((0, 0), 0.8 * radius, 0.8 * radius, theta1=a0, theta2=a1, color="C3", lw=1.2))
        mid = np.radians((a0 + a1) / 2)
        ax.text(0.5 * radius * np.cos(mid), 0.5 * radius * np.sin(mid), "θ", color="C3", fontsize=10)
    lim = 1.35 * radius
    ax.set_xlim(-lim, lim)
    ax.set_ylim(-lim, lim)
    ax.set_aspect("equal")
    ax.axhline(0, color="0.6", lw=0.6)
    ax.axvline(0, color="0.6", lw=0.6)
    ax.set_xlabel("first coordinate of the pair")
    ax.set_ylabel("second coordinate of the pair")
    return rotated


def draw_sinusoid_wavelengths(
    ax: plt.Axes, d_model: int = 16, pairs: Sequence[int] = (0, 1, 2, 3), num_positions: int = 64
) -> np.ndarray:
    """Draw ``PE(t, 2m) = sin(t / 10000^{2m/d_model})`` against ``t`` for each pair index ``m`` in ``pairs``.

    Each curve is labelled with its wavelength ``2π·10000^{2m/d_model}`` (positions per full turn)
    and offset vertically so they do not overlap. Returns the wavelengths, shape ``(len(pairs),)``.
    """
    pairs = list(pairs)
    if any(not 0 <= i < d_model // 2 for i in pairs):
        raise ValueError(f"pairs must lie in 0..{d_model // 2 - 1} for d_model={d_model}, got {pairs}")
    table = sinusoidal_encoding(num_positions, d_model)  # (T, d_model)
    t = np.arange(num_positions)
    wavelengths = np.array([2 * np.pi * 10000 ** (2 * i / d_model) for i in pairs])
    for row, (i, wavelength) in enumerate(zip(pairs, wavelengths)):
        offset = -2.5 * row
        ax.plot(t, table[:, 2 * i] + offset, color=f"C{row}", lw=1.4, marker=".", ms=3)
        ax.axhline(offset, color="0.85", lw=0.6)
        ax.text(
            num_positions + 1,
            offset,
            f"dimension {2 * i}\nwavelength {wavelength:.1f}",
            fontsize=8,
            va="center",
            color=f"C{row}",
        )
    ax.set_yticks([-2.5 * row for row in range(len(pairs))], [f"sin, pair m={m}" for m in pairs])
    ax.set_xlim(0, num_positions * 1.28)
    ax.set_xlabel("position t (0-based in code)")
    ax.set_ylabel("PE(t, 2m), one curve per pair")
    return wavelengths


def _box(ax: plt.Axes, x: float, y: float, text: str, colour: str, width: float = 2.9) -> None:
    ax.add_patch(
        FancyBboxPatch(
            (x - width / 2, y - 0.3), width, 0.6, boxstyle="round,pad=0.05", facecolor=colour, edgecolor="0.3", lw=1
        )
    )
    ax.text(x, y, text, ha="center", va="center", fontsize=9)


def _arrow(ax: plt.Axes, start: tuple[float, float], end: tuple[float, float], **style) -> None:
    ax.annotate("", xy=end, xytext=start, arrowprops=dict(arrowstyle="-|>", color="0.25", lw=1.2, **style))


def draw_decoder_block(ax: plt.Axes, pre_norm: bool = True) -> list[str]:
    """Draw one decoder block as boxes on a vertical residual stream; return its stages in order.

    Pre-norm (``pre_norm=True``): ``u = r + MHA(LN(r))``, ``r' = u + FFN(LN(u))`` — each sub-layer reads a
    normalised copy of the stream and *adds* its output back. Post-norm (Chapter 6, Fig. 6.29):
    ``u = LN(r + MHA(r))``, ``r' = LN(u + FFN(u))`` — the normalisation sits on the stream itself. The
    stream is labelled ``r``, as on page 6.6 (the chapter writes ``h``; the book's ``h`` counts heads).
    """
    stream_x, branch_x = 0.0, 3.2
    ax.plot([stream_x, stream_x], [0.2, 9.3], color="C0", lw=4, alpha=0.35, solid_capstyle="butt")
    ax.text(stream_x - 1.1, 4.8, "residual stream  r", rotation=90, color="C0", ha="center", va="center")
    ax.text(stream_x, -0.1, "r (from the block below)", ha="center", va="top", fontsize=9)
    ax.text(stream_x, 9.6, "r' (to the block above)", ha="center", va="bottom", fontsize=9)
    stages = []
    y = 1.0
    for sub, colour in (("masked multi-head\nattention", "#f4c7a1"), ("feed-forward\nnetwork", "#b9d7a8")):
        if pre_norm:
            _arrow(ax, (stream_x, y), (branch_x - 1.2, y + 0.5), connectionstyle="arc3,rad=-0.2")
            _box(ax, branch_x, y + 0.5, "LayerNorm", "#dddddd")
            _box(ax, branch_x, y + 1.7, sub, colour)
            _arrow(ax, (branch_x, y + 0.8), (branch_x, y + 1.4))
            _arrow(ax, (branch_x - 1.2, y + 1.9), (stream_x + 0.25, y + 2.6), connectionstyle="arc3,rad=0.2")
            stages += ["LayerNorm", sub.replace("\n", " "), "add"]
        else:
            _arrow(ax, (stream_x, y), (branch_x - 1.2, y + 1.1), connectionstyle="arc3,rad=-0.2")
            _box(ax, branch_x, y + 1.1, sub, colour)
            _arrow(ax, (branch_x - 1.2, y + 1.3), (stream_x + 0.25, y + 2.1), connectionstyle="arc3,rad=0.2")
            _box(ax, stream_x, y + 3.0, "LayerNorm", "#dddddd", width=1.6)
            stages += [sub.replace("\n", " "), "add", "LayerNorm"]
        ax.add_patch(
            plt.Circle(
                (stream_x, y + 2.6 if pre_norm else y + 2.1), 0.25, facecolor="white", edgecolor="C0", lw=1.5, zorder=3
            )
        )
        ax.text(stream_x, y + 2.6 if pre_norm else y + 2.1, "+", ha="center", va="center", fontsize=12, zorder=4)
        y += 4.0
    ax.set_xlim(-1.6, 5.2)
    ax.set_ylim(-0.8, 10.2)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title("pre-norm decoder block" if pre_norm else "post-norm decoder block (Fig. 6.29)")
    return stages
