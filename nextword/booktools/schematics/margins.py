"""Schematic figures of Part 4 (Agarwal et al., support tokens and stability margins), drawn from code.

* :func:`draw_margin_regions` — the plane of (attention-weighted variance, coupling) coloured by the
  scalar margin ``m = 1 − a·Var`` (Eq. 9), with the degeneracy boundary ``a·Var = 1`` where the margin
  reaches zero (§3.1–3.4; pages 4.2 and 4.3). Points of a sequence can be placed on it.
* :func:`draw_residual_fold` — the residual map ``x_t ↦ e_t = x_t − μ_t(x)`` of one position in
  ``d = 1`` for fixed past tokens, one curve per coupling, computed with
  :func:`nextword.theory.barrier.causal_residual`: increasing (invertible) while the margin is positive,
  folded where it is negative, with the preimages of one noise value marked (page 4.2).

Both take a matplotlib ``Axes`` (or make one) and return what they computed, so a test can check the
picture against the library. The margin colours use a diverging map centred on zero.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.colors import TwoSlopeNorm

from nextword.theory.barrier import causal_residual, scalar_margin

__all__ = ["draw_margin_regions", "draw_residual_fold", "residual_curve"]


#: a light box behind text drawn over a coloured region, so that it stays readable
_LABEL_BOX = {"fc": "white", "alpha": 0.75, "lw": 0, "boxstyle": "round,pad=0.2"}


def _axes(ax: Axes | None, size: tuple[float, float]) -> Axes:
    if ax is None:
        _, ax = plt.subplots(figsize=size)
    return ax


def draw_margin_regions(
    ax: Axes | None = None,
    *,
    variance_max: float = 4.0,
    coupling_max: float = 1.5,
    points: Sequence[tuple[float, float]] = (),
    point_labels: Sequence[str] | None = None,
    xlabel: str = r"attention-weighted variance $\mathrm{Var}_t$",
    ylabel: str = r"coupling $a$",
    colour_limit: float = 2.0,
    resolution: int = 301,
) -> np.ndarray:
    """Colour the (variance, coupling) plane by the scalar margin ``m = 1 − a·Var`` and draw ``m = 0``.

    Horizontal axis: ``Var`` in ``[0, variance_max]``; vertical: ``a`` in ``[−coupling_max,
    coupling_max]``. Blue where ``m > 0`` (the residual map is increasing, hence invertible), red where
    ``m < 0`` (it folds), white at the boundary; the colour map is centred on zero and saturates at
    ``±colour_limit``. The boundary
    ``a = 1/Var`` exists only for ``a > 0``: for ``a ≤ 0`` the margin is ``1 + |a|·Var ≥ 1``.

    ``points``: ``(Var, a)`` pairs (e.g. the positions of a sequence) drawn as dots, labelled by
    ``point_labels`` when given (one per point). Returns the boundary curve as an array ``(n, 2)`` of
    ``(Var, a)`` with ``a·Var = 1``, clipped to the drawn window.
    """
    if not variance_max > 0:
        raise ValueError(f"variance_max must be > 0, got {variance_max}")
    if not coupling_max > 0:
        raise ValueError(f"coupling_max must be > 0, got {coupling_max}")
    if not colour_limit > 0:
        raise ValueError(f"colour_limit must be > 0, got {colour_limit}")
    if resolution < 2:
        raise ValueError(f"resolution must be >= 2, got {resolution}")
    points = [tuple(map(float, p)) for p in points]
    if any(len(p) != 2 for p in points):
        raise ValueError("points must be (variance, coupling) pairs")
    if point_labels is not None and len(point_labels) != len(points):
        raise ValueError(f"point_labels: {len(point_labels)} labels for {len(points)} points")
    ax = _axes(ax, (5.2, 3.6))
    variance = np.linspace(0.0, variance_max, resolution)
    coupling = np.linspace(-coupling_max, coupling_max, resolution)
    margin = 1.0 - coupling[:, None] * variance[None, :]
    norm = TwoSlopeNorm(0.0, -colour_limit, colour_limit)
    image = ax.pcolormesh(variance, coupling, margin, cmap="RdBu", norm=norm, shading="auto")
    plt.colorbar(image, ax=ax, extend="both", label=r"margin $m = 1 - a\,\mathrm{Var}$")
    on_curve = variance[variance > 1.0 / coupling_max]
    boundary = np.column_stack([on_curve, 1.0 / on_curve])
    ax.plot(boundary[:, 0], boundary[:, 1], color="k", lw=2)
    label_at = 0.8 * variance_max
    ax.text(label_at, 1.0 / label_at, "m = 0\n(a·Var = 1)", ha="center", va="bottom", fontsize=9, bbox=_LABEL_BOX)
    ax.axhline(0.0, color="0.4", lw=0.8)
    ax.text(
        0.97 * variance_max, 0.93 * coupling_max, "m < 0: folded", ha="right", va="top", fontsize=9, bbox=_LABEL_BOX
    )
    ax.text(0.03 * variance_max, 0.12 * coupling_max, "m > 0: invertible", ha="left", fontsize=9, bbox=_LABEL_BOX)
    ax.text(
        0.03 * variance_max, -0.5 * coupling_max, "a < 0: m ≥ 1, no boundary", ha="left", fontsize=9, bbox=_LABEL_BOX
    )
    for i, (var, a) in enumerate(points):
        ax.plot(var, a, "o", color="k", ms=5)
        if point_labels is not None:
            ax.annotate(
                point_labels[i],
                (var, a),
                textcoords="offset points",
                xytext=(7, 0),
                va="center",
                fontsize=8,
                bbox=_LABEL_BOX,
            )
    ax.set_xlim(0.0, variance_max)
    ax.set_ylim(-coupling_max, coupling_max)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    return boundary


def residual_curve(past: Sequence[float], coupling: float, current: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The residual ``e_t`` and the margin ``m_t = ∂e_t/∂x_t`` of the last position, as functions of it.

    ``d = 1``, strict causal attention with logits ``a·x_t·x_s`` and values ``v_s = x_s``: for each
    ``x_t`` in ``current (n,)`` the sequence is ``(*past, x_t)``, and ``e_t = x_t − Σ_s α_ts x_s``
    (Eq. 4). Returns ``(residuals (n,), margins (n,))``.
    """
    past = np.asarray(past, dtype=float)
    if past.ndim != 1 or past.size == 0:
        raise ValueError(f"past must be a non-empty 1-D list of tokens, got shape {past.shape}")
    current = np.asarray(current, dtype=float)
    if current.ndim != 1:
        raise ValueError(f"current must be 1-D, got shape {current.shape}")
    sequences = np.concatenate([np.broadcast_to(past, (current.size, past.size)), current[:, None]], axis=1)
    residuals = causal_residual(sequences[..., None], [[float(coupling)]], [[1.0]])[:, -1, 0]
    margins = scalar_margin(sequences, a=float(coupling))[:, -1]
    return residuals, margins


def draw_residual_fold(
    ax: Axes | None = None,
    *,
    past: Sequence[float] = (0.0, 2.0),
    couplings: Sequence[float] = (0.5, 1.5),
    x_range: tuple[float, float] = (-2.0, 3.0),
    noise: float | None = -1.0,
    resolution: int = 2001,
) -> dict[float, np.ndarray]:
    """Plot ``x_t ↦ e_t`` for fixed ``past`` tokens, one curve per coupling ``a`` (``d = 1``, ``w_V = 1``).

    Where the margin ``∂e_t/∂x_t`` is negative the curve runs over a thick reddish-purple band: there the
    map runs backwards and is not one-to-one. When ``noise`` is given, a horizontal line marks that noise value
    and dots mark every ``x_t`` with ``e_t(x_t) = noise`` (found as sign changes on the grid).

    Returns ``{a: preimages}``: the ``x_t`` values (sorted) that the map sends to ``noise`` for each
    coupling (empty arrays when ``noise`` is None). One preimage means the noise value determines the
    token; several mean it does not.
    """
    lo, hi = map(float, x_range)
    if not hi > lo:
        raise ValueError(f"x_range must be increasing, got {x_range}")
    if len(couplings) == 0:
        raise ValueError("couplings must name at least one coupling a")
    ax = _axes(ax, (5.2, 3.6))
    grid = np.linspace(lo, hi, resolution)
    preimages: dict[float, np.ndarray] = {}
    for i, a in enumerate(couplings):
        residuals, margins = residual_curve(past, a, grid)
        colour = f"C{i}"
        ax.plot(grid, residuals, color=colour, lw=1.5, label=f"a = {a:g}")
        folded = np.where(margins < 0, residuals, np.nan)
        ax.plot(grid, folded, color="#CC79A7", lw=5, zorder=1)  # reddish purple, under the curve
        found = np.array([])
        if noise is not None:
            gap = residuals - float(noise)
            crossing = np.flatnonzero(np.sign(gap[:-1]) * np.sign(gap[1:]) <= 0)
            crossing = crossing[gap[crossing] != gap[crossing + 1]]
            # linear interpolation inside each cell where the curve crosses the noise level
            found = grid[crossing] - gap[crossing] * (grid[1] - grid[0]) / (gap[crossing + 1] - gap[crossing])
            found = np.unique(np.round(found, 9))
            ax.plot(found, np.full(found.shape, float(noise)), "o", color=colour, ms=6, mec="k")
        preimages[float(a)] = found
    if noise is not None:
        ax.axhline(float(noise), color="0.3", lw=0.8, ls="--", label=f"noise value ε = {noise:g}")
    ax.plot([], [], color="#CC79A7", lw=5, label="margin < 0 (folded)")
    ax.set_xlabel(r"current token $x_t$")
    ax.set_ylabel(r"residual $\hat\varepsilon_t = x_t - \mu_t(x)$")
    ax.legend(fontsize=8, loc="upper left")
    return preimages
