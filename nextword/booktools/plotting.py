"""One figure style for the whole book.

Every notebook calls :func:`use_book_style` once; figure helpers here are small wrappers that keep
captions, colour maps and sizes consistent across parts.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

__all__ = ["use_book_style", "heatmap", "BOOK_CMAP"]

BOOK_CMAP = "viridis"


def use_book_style() -> None:
    """Set the matplotlib defaults used by every figure of the book (size, fonts, grid)."""
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
        }
    )


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

    Example
    -------
    >>> ax = heatmap(np.eye(3), row_labels=list("abc"), col_labels=list("abc"))
    """
    matrix = np.asarray(matrix)
    if matrix.ndim != 2:
        raise ValueError(f"heatmap expects a 2-D array, got shape {matrix.shape}")
    if ax is None:
        _, ax = plt.subplots()
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
            ax.text(
                j,
                i,
                format(value, fmt),
                ha="center",
                va="center",
                fontsize=7,
                color="white" if value < mid else "black",
            )
    if title:
        ax.set_title(title)
    if colorbar:
        ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    return ax
