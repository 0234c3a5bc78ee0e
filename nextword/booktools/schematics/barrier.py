"""Schematic figures of the log-barrier margin penalty (Agarwal et al., §3.3–3.4 and §7; book pages 4.7–4.9).

The penalty of one position is ``−log|m|``, where the margin ``m`` is the determinant of the residual
map's Jacobian, ``det(I_d − Σ_t A)`` (in one dimension ``m = 1 − a Var_t``, Eq. 9). The curves here are
that function evaluated, not drawn by hand.

* :func:`log_barrier` — the penalty ``−log|m|`` of an array of margins (``m ≠ 0``);
* :func:`draw_barrier_landscape` — two panels: (a) the penalty against the margin near the wall
  ``m = 0``, with the side a positive and a negative coupling put the margin on; (b) the same penalty
  against ``log|m|``, with the places trained models reached marked, so that their distance from the
  wall (``log|m| → −∞``) can be read off.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes

__all__ = ["log_barrier", "draw_barrier_landscape"]


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
) -> Sequence[Axes]:
    """Draw the landscape of the log-barrier penalty in two panels and return the two axes.

    (a) ``−log m`` for ``m ∈ (0, margin_max]``: the wall as ``m → 0``, zero at ``m = 1`` (an untrained
    prior, ``W = 0``), the region ``m < 1`` that a positive coupling ``a > 0`` produces
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
        "untrained prior\n($W=0$, $m=1$)",
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
        title="(b) where training took the margin",
    )
    ax_far.legend(fontsize=7, loc="upper right")
    return axes
