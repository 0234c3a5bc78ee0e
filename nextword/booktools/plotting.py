"""One figure style for the whole book.

Every notebook calls :func:`use_book_style` once; figure helpers here are small wrappers that keep
captions, colour maps and sizes consistent across parts.
"""

from __future__ import annotations

import warnings

from collections.abc import Sequence

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

__all__ = ["use_book_style", "heatmap", "BOOK_CMAP", "BOOK_COLORS", "DIVERGING_CMAPS", "is_diverging"]

BOOK_CMAP = "viridis"
#: The Okabe–Ito palette (Okabe & Ito 2008, "Color Universal Design"): told apart by readers with any of the
#: common colour-vision deficiencies; ordered so that the first lines are the most distinct (blue, vermillion,
#: bluish green, orange), with the low-contrast yellow last. The default line colours C0..C7 of every figure.
BOOK_COLORS = ("#0072B2", "#D55E00", "#009E73", "#E69F00", "#CC79A7", "#56B4E9", "#000000", "#F0E442")
#: matplotlib's diverging colour maps (a neutral centre between two hues): :func:`heatmap` centres them on 0.
DIVERGING_CMAPS = frozenset(
    "PiYG PRGn BrBG PuOr RdGy RdBu RdYlBu RdYlGn Spectral coolwarm bwr seismic berlin managua vanimo".split()
)


def is_diverging(cmap) -> bool:
    """Whether ``cmap`` (a name, ``"..._r"`` included, or a Colormap) is one of :data:`DIVERGING_CMAPS`.

    >>> is_diverging("RdBu_r"), is_diverging("viridis")
    (True, False)
    """
    name = cmap if isinstance(cmap, str) else getattr(cmap, "name", "")
    return name.removesuffix("_r") in DIVERGING_CMAPS


def use_book_style() -> None:
    """Set the matplotlib defaults used by every figure of the book (size, fonts, grid, colour-blind-safe colours).

    >>> use_book_style(); mpl.rcParams["axes.prop_cycle"].by_key()["color"][:2]
    ['#0072B2', '#D55E00']
    """
    mpl.rcParams.update(
        {
            "figure.figsize": (6.4, 4.0),
            "figure.dpi": 90,
            "axes.grid": True,
            "grid.alpha": 0.3,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "font.size": 10,
            "axes.titlesize": 11,
            "legend.frameon": False,
            "image.cmap": BOOK_CMAP,
            "axes.prop_cycle": mpl.cycler(color=list(BOOK_COLORS)),
        }
    )
    # matplotlib warns when placing a legend at loc="best" takes over a second of wall time, which on
    # a loaded machine depends on the load, not on the figure: an executed page's output must not
    warnings.filterwarnings("ignore", message='Creating legend with loc="best" can be slow', category=UserWarning)


def heatmap(
    matrix: np.ndarray,
    *,
    ax: plt.Axes | None = None,
    row_labels: Sequence[str] | None = None,
    col_labels: Sequence[str] | None = None,
    title: str | None = None,
    annotate: bool = False,
    fmt: str = ".2f",
    cmap: str = BOOK_CMAP,
    vmin: float | None = None,
    vmax: float | None = None,
    colorbar: bool = True,
) -> plt.Axes:
    """Draw a 2-D array (e.g. attention weights α[i, j], rows = queries) as a labelled heatmap.

    Parameters
    ----------
    matrix: array of shape ``(R, C)``.
    row_labels, col_labels: optional tick labels (length R and C).
    annotate: write each value in its cell with format ``fmt``.
    cmap: a diverging map (:func:`is_diverging`, e.g. ``"RdBu_r"``) is centred on zero: its neutral colour
        is 0 and its limits are ``±max(|vmin|, |vmax|)`` (``±max|matrix|`` when neither is given), so the
        sign of a cell can be read off its hue. Other maps use ``vmin``/``vmax`` as given.

    Example
    -------
    >>> ax = heatmap(np.eye(3), row_labels=list("abc"), col_labels=list("abc"))
    >>> heatmap(np.array([[-1.0, 3.0]]), cmap="coolwarm").images[0].get_clim()
    (-3.0, 3.0)
    """
    matrix = np.asarray(matrix)
    if matrix.ndim != 2:
        raise ValueError(f"heatmap expects a 2-D array, got shape {matrix.shape}")
    if ax is None:
        _, ax = plt.subplots()
    diverging = is_diverging(cmap)
    if diverging:
        limits = [abs(v) for v in (vmin, vmax) if v is not None] or [float(np.nanmax(np.abs(matrix)))]
        vmax = max(max(limits), np.finfo(float).tiny)
        vmin = -vmax
    image = ax.imshow(matrix, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
    ax.grid(False)
    if row_labels is not None:
        if len(row_labels) != matrix.shape[0]:
            raise ValueError(f"row_labels has {len(row_labels)} entries, matrix has {matrix.shape[0]} rows")
        ax.set_yticks(range(matrix.shape[0]), labels=list(row_labels))
    if col_labels is not None:
        if len(col_labels) != matrix.shape[1]:
            raise ValueError(f"col_labels has {len(col_labels)} entries, matrix has {matrix.shape[1]} columns")
        ax.set_xticks(range(matrix.shape[1]), labels=list(col_labels), rotation=60, ha="right")
    if annotate:
        mid = np.nanmean(matrix)
        for (i, j), value in np.ndenumerate(matrix):
            dark = abs(value) > 0.6 * vmax if diverging else value < mid  # text on the dark ends is white
            ax.text(
                j,
                i,
                format(value, fmt),
                ha="center",
                va="center",
                fontsize=7,
                color="white" if dark else "black",
            )
    if title:
        ax.set_title(title)
    if colorbar:
        ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    return ax
