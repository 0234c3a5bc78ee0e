"""Schematic figures of the log-barrier margin penalty (Agarwal et al., §3.3–3.4 and §7; book pages 4.7–4.9).

The penalty of one position is ``−log|m|``, where the margin ``m`` is the determinant of the residual
map's Jacobian, ``det(I_d − Σ_t A)`` (in one dimension ``m = 1 − a Var_t``, Eq. 9). The curves here are
that function evaluated, not drawn by hand.

* :func:`log_barrier` — the penalty ``−log|m|`` of an array of margins (``m ≠ 0``);
* :func:`draw_barrier_landscape` — two panels: (a) the penalty against the margin near the wall
  ``m = 0``, with the side a positive and a negative coupling put the margin on; (b) the same penalty
  against ``log|m|``, with the places trained models reached marked, so that their distance from the
  wall (``log|m| → −∞``) can be read off;
* :func:`draw_noise_and_scale` — the same noise ball around a few embeddings at two scales of the
  embeddings (page 4.8): a fixed absolute noise σ is a smaller perturbation of larger embeddings;
* :func:`path_minimiser` and :func:`draw_penalised_objective` — the one-dimensional regularisation
  path (page 4.9): ``−λ log(1 − a Var_t) + a²/(2γ)`` and its minimiser, which moves away from the
  barrier ``a = 1/Var_t`` as λ grows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.patches import Circle

__all__ = [
    "log_barrier",
    "draw_barrier_landscape",
    "draw_noise_and_scale",
    "path_minimiser",
    "draw_penalised_objective",
]


def log_barrier(margins: object) -> np.ndarray:
    """The log-barrier penalty ``−log|m|`` of margins ``m`` (any shape; Eq. 21's second term per position).

    It is ``+∞`` in the limit ``m → 0`` (the degeneracy boundary), 0 at ``m = 1`` and negative for
    ``|m| > 1``, without a lower bound. Raises ValueError for a zero or non-finite margin.

    >>> log_barrier([1.0, np.e]).tolist()
    [-0.0, -1.0]
    """
    m = np.asarray(margins, dtype=float)
    if not np.all(np.isfinite(m)):
        raise ValueError("margins must be finite")
    if np.any(m == 0):
        raise ValueError("margins must be nonzero: the penalty is infinite on the boundary m = 0")
    return -np.log(np.abs(m))


def _finite_marks(reached: Mapping[str, float] | None) -> dict[str, float]:
    marks = dict(reached or {})
    for label, value in marks.items():
        if not np.isfinite(value):
            raise ValueError(f"reached[{label!r}] must be a finite log|m|, got {value}")
    return marks


def draw_barrier_landscape(
    axes: Sequence[Axes] | None = None,
    *,
    reached: Mapping[str, float] | None = None,
    margin_max: float = 3.0,
    marks_title: str = "where training took the margin",
) -> Sequence[Axes]:
    """Draw the landscape of the log-barrier penalty in two panels and return the two axes.

    (a) ``−log m`` for ``m ∈ (0, margin_max]``: the wall as ``m → 0``, zero at ``m = 1`` (an untrained
    prior, ``A = 0``), the region ``m < 1`` that a positive coupling ``a > 0`` produces
    (``m = 1 − a Var_t``) and the region ``m > 1`` of a negative coupling (``m = 1 + |a| Var_t``); an
    arrow shows that gradient descent on the penalty increases ``m`` everywhere (its slope ``−1/m`` is
    negative), so it never turns back towards the wall.
    (b) the penalty against ``log|m|`` (a straight line of slope −1): the wall is at ``log|m| → −∞``,
    off the left edge; ``reached`` maps a label to a mean ``log|m|`` a trained model reached (for the
    margin penalty, minus the final penalty), drawn as a marked point with the label.
    ``axes``: two matplotlib axes, or None for a new figure. Raises ValueError for ``margin_max <= 1``
    or a non-finite ``reached`` value.
    """
    if not margin_max > 1:
        raise ValueError(f"margin_max must be > 1 (the curve must cross m = 1), got {margin_max}")
    marks = _finite_marks(reached)
    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(12, 4))
    if len(axes) != 2:
        raise ValueError(f"axes must be two axes, got {len(axes)}")
    ax_wall, ax_far = axes

    margins = np.linspace(0.02, margin_max, 400)
    ax_wall.plot(margins, log_barrier(margins), color="k", lw=2, label=r"penalty $-\log m$")
    ax_wall.axvspan(0, 1, color="C3", alpha=0.12, label=r"$a>0$: $m=1-a\,\mathrm{Var}_t<1$")
    ax_wall.axvspan(1, margin_max, color="C2", alpha=0.12, label=r"$a<0$: $m=1+|a|\,\mathrm{Var}_t>1$")
    ax_wall.axvline(0, color="C3", lw=3)
    ax_wall.axhline(0, color="0.5", lw=0.8)
    ax_wall.plot([1], [0], "o", color="k")
    ax_wall.annotate(
        "untrained prior\n($A=0$, $m=1$)",
        (1, 0),
        (1.25, 1.6),
        fontsize=8,
        arrowprops={"arrowstyle": "->", "color": "0.3"},
    )
    ax_wall.annotate(
        "the wall: $m\\to0$,\npenalty $\\to+\\infty$",
        (0.03, 3.5),
        (0.35, 3.2),
        fontsize=8,
        color="C3",
        arrowprops={"arrowstyle": "->", "color": "C3"},
    )
    ax_wall.annotate(
        "",
        (margin_max * 0.95, -0.25 - np.log(margin_max * 0.95)),
        (1.4, -0.25 - np.log(1.4)),
        arrowprops={"arrowstyle": "-|>", "color": "C2", "lw": 1.5},
    )
    ax_wall.text(1.9, 0.35, "gradient descent\nmoves $m$ this way", fontsize=8, color="C2")
    ax_wall.set(
        xlim=(0, margin_max),
        ylim=(-1.5, 4.0),
        xlabel="margin $m$ (in $d$ dimensions: $|\\det|$)",
        ylabel="penalty (nats)",
        title="(a) the barrier near the wall",
    )
    ax_wall.legend(fontsize=7, loc="upper right")

    right = max([5.0, *(v * 1.15 for v in marks.values())])
    log_m = np.linspace(-4.0, right, 200)
    ax_far.plot(log_m, -log_m, color="k", lw=2, label=r"penalty $=-\log|m|$")
    ax_far.axvspan(-4.0, 0, color="C3", alpha=0.12)
    ax_far.axvspan(0, right, color="C2", alpha=0.12)
    ax_far.axhline(0, color="0.5", lw=0.8)
    ax_far.text(
        -3.8,
        -0.45 * right,
        "$\\leftarrow$ the wall is at\n$\\log|m|\\to-\\infty$,\noff this axis",
        fontsize=8,
        color="C3",
        va="center",
    )
    for n, (label, value) in enumerate(marks.items()):
        ax_far.plot([value], [-value], "o", ms=8, color=f"C{n}", label=f"{label}: $\\log|m|={value:+.1f}$")
    ax_far.set(
        xlim=(-4.0, right),
        xlabel=r"$\log|m|$ (nats)",
        ylabel="penalty (nats)",
        title=f"(b) {marks_title}",
    )
    ax_far.legend(fontsize=7, loc="upper right")
    return axes


def draw_noise_and_scale(
    points: object,
    sigma: float,
    *,
    scales: Sequence[float] = (1.0, 2.0),
    axes: Sequence[Axes] | None = None,
) -> Sequence[Axes]:
    """Embeddings ``points (n, 2)`` multiplied by each of ``scales``, one panel per scale, each point
    with a circle of radius ``sigma`` (one standard deviation of the noise added to every coordinate)
    and, at the same limits in every panel, the distance to its nearest neighbour in units of
    ``sigma`` as the panel's subtitle (the smallest over the points).

    A fixed absolute ``sigma`` is a smaller perturbation of larger embeddings: the circles stay the
    same size while the points move apart. Returns the axes. Raises ValueError for ``points`` that
    are not ``(n, 2)`` with ``n >= 2``, a ``sigma`` that is not positive, or a scale that is not
    positive.
    """
    pts = np.asarray(points, dtype=float)
    if pts.ndim != 2 or pts.shape[1] != 2 or pts.shape[0] < 2:
        raise ValueError(f"points must have shape (n, 2) with n >= 2, got {pts.shape}")
    if not sigma > 0:
        raise ValueError(f"sigma must be positive, got {sigma}")
    if any(not scale > 0 for scale in scales):
        raise ValueError(f"scales must be positive, got {list(scales)}")
    if axes is None:
        _, axes = plt.subplots(1, len(scales), figsize=(4.2 * len(scales), 4))
    if len(axes) != len(scales):
        raise ValueError(f"axes must be one per scale ({len(scales)}), got {len(axes)}")
    limit = max(scales) * float(np.abs(pts).max()) + 2 * sigma
    for ax, scale in zip(axes, scales):
        scaled = scale * pts
        gaps = np.linalg.norm(scaled[:, None] - scaled[None], axis=-1)
        np.fill_diagonal(gaps, np.inf)
        for n, (x, y) in enumerate(scaled):
            ax.add_patch(Circle((x, y), sigma, color=f"C{n % 8}", alpha=0.25))
            ax.plot([x], [y], "o", color=f"C{n % 8}")
        ax.set(
            xlim=(-limit, limit),
            ylim=(-limit, limit),
            aspect="equal",
            xlabel="embedding coordinate 1",
            ylabel="embedding coordinate 2",
            title=f"embeddings x {scale:g}: nearest gap = {gaps.min() / sigma:.1f} sigma",
        )
    return axes


def path_minimiser(weight: float, *, variance: float = 1.0, gamma: float = 1.0) -> float:
    """The admissible minimiser ``a* = (1 − sqrt(1 + 4 Var_t² λ γ)) / (2 Var_t)`` of
    ``f(a) = −λ log(1 − a Var_t) + a²/(2γ)`` on ``1 − a Var_t > 0`` (the one-dimensional
    regularisation path; ``variance`` is Var_t).

    Raises ValueError for a negative ``weight`` or a non-positive ``variance`` or ``gamma``.

    >>> path_minimiser(0.75), path_minimiser(2.0)
    (-0.5, -1.0)
    """
    if weight < 0:
        raise ValueError(f"weight must be >= 0, got {weight}")
    if not (variance > 0 and gamma > 0):
        raise ValueError(f"variance and gamma must be positive, got {variance}, {gamma}")
    return float((1 - np.sqrt(1 + 4 * variance**2 * weight * gamma)) / (2 * variance))


def draw_penalised_objective(
    weights: Sequence[float] = (0.0, 0.75, 2.0),
    *,
    variance: float = 1.0,
    gamma: float = 1.0,
    ax: Axes | None = None,
) -> Axes:
    """``f(a) = −λ log(1 − a Var_t) + a²/(2γ)`` against the coupling ``a`` for each weight λ in
    ``weights`` (``variance`` is Var_t), with its minimiser :func:`path_minimiser` marked and the
    barrier ``a = 1/Var_t`` drawn as a wall.

    The minimisers move left (more negative coupling) as λ grows: away from the wall, not along a
    margin to it. Returns the axes; raises ValueError as :func:`path_minimiser` does, or for no weights.
    """
    if len(weights) == 0:
        raise ValueError("weights must name at least one penalty weight")
    minimisers = [path_minimiser(w, variance=variance, gamma=gamma) for w in weights]
    if ax is None:
        _, ax = plt.subplots(figsize=(6.5, 4))
    wall = 1 / variance
    left = min(minimisers) - 1.5 / variance
    couplings = np.linspace(left, wall - 0.02 / variance, 400)
    lowest = min(w * float(log_barrier(1 - m * variance)) + m**2 / (2 * gamma) for w, m in zip(weights, minimisers))
    bottom = min(-0.5, lowest - 0.6)
    for n, (weight, minimiser) in enumerate(zip(weights, minimisers)):
        objective = weight * log_barrier(1 - couplings * variance) + couplings**2 / (2 * gamma)
        at_minimiser = weight * float(log_barrier(1 - minimiser * variance)) + minimiser**2 / (2 * gamma)
        ax.plot(couplings, objective, color=f"C{n}", lw=2, label=f"$\\lambda={weight:g}$")
        ax.plot([minimiser], [at_minimiser], "o", color=f"C{n}", ms=8)
        ax.annotate(
            f"$a^*={minimiser:+.2f}$",
            (minimiser, at_minimiser),
            (minimiser - 0.2, at_minimiser + 0.9),
            fontsize=8,
            color=f"C{n}",
            arrowprops={"arrowstyle": "->", "color": f"C{n}"},
        )
    ax.axvline(wall, color="C3", lw=3)
    ax.text(
        wall - 0.05, bottom + 0.2, "barrier\n$a=1/\\mathrm{Var}_t$", ha="right", va="bottom", fontsize=8, color="C3"
    )
    ax.axvline(0, color="0.5", lw=0.8)
    ax.set(
        xlim=(left, wall + 0.1 / variance),
        ylim=(bottom, 4.0),
        xlabel="coupling $a$",
        ylabel="$f(a)$",
        title=(
            r"$f(a)=-\lambda\log(1-a\,\mathrm{Var}_t)+a^2/(2\gamma)$"
            + rf" at $\mathrm{{Var}}_t={variance:g}$, $\gamma={gamma:g}$"
        ),
    )
    ax.legend(fontsize=8, loc="upper center")
    return ax
