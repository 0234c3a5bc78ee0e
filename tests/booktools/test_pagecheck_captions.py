"""The caption-colour check (``nextword.booktools.checks.captions``): a caption names only colours its figure
draws, read back from the figure's PNG in the palette's names."""

from __future__ import annotations

import base64
import io
import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from nextword.booktools.checks import captions  # noqa: E402
from nextword.booktools.pages import read_page  # noqa: E402
from nextword.booktools.plotting import BOOK_COLORS, use_book_style  # noqa: E402


def _png(draw) -> bytes:
    use_book_style()
    fig, ax = plt.subplots(figsize=(4, 3), dpi=80)
    draw(ax)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    return buffer.getvalue()


def _line(colour):
    return lambda ax: ax.plot(np.arange(10), np.arange(10) ** 0.5, color=colour, lw=2, label="x")


def test_every_colour_of_the_book_cycle_reads_back_as_its_name():
    names = ["blue", "vermilion", "green", "orange", "purple", "blue", "black", "yellow"]
    for colour, name in zip(BOOK_COLORS, names):
        assert name in captions.drawn_colours(_png(_line(colour))), (colour, name)
    assert captions.drawn_colours(_png(_line("#D55E00"))) - {"black", "grey"} == {"vermilion"}
    assert "red" in captions.drawn_colours(_png(_line("tab:red")))


def test_colour_maps_name_their_colours():
    grid = np.linspace(-1, 1, 64).reshape(8, 8)
    diverging = captions.drawn_colours(_png(lambda ax: ax.imshow(grid, cmap="RdBu_r")))
    assert {"red", "blue"} <= diverging
    viridis = captions.drawn_colours(_png(lambda ax: ax.imshow(grid, cmap="viridis")))
    assert {"purple", "blue", "green", "yellow"} <= viridis and "red" not in viridis


def _page(tmp_path, caption: str, png: bytes):
    page = tmp_path / "part9_x" / "page.py"
    page.parent.mkdir(exist_ok=True)
    page.write_text(f"# %% [markdown]\n# # 9.1 A page\n\n# %%\nplt.show()\n\n# %% [markdown]\n# {caption}\n")
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": "# 9.1 A page"},
        {
            "cell_type": "code",
            "metadata": {},
            "source": "plt.show()",
            "execution_count": 1,
            "outputs": [
                {"output_type": "display_data", "metadata": {}, "data": {"image/png": base64.b64encode(png).decode()}}
            ],
        },
        {"cell_type": "markdown", "metadata": {}, "source": caption},
    ]
    page.with_suffix(".ipynb").write_text(
        json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    )
    return read_page(page)


def test_the_old_colour_words_fail_and_the_palettes_names_pass(tmp_path):
    """6.6.2 said "red line" over an orange one; 4.2.5 "red" over orange points; 4.2.1 "orange" over vermilion."""
    orange = _png(_line("#E69F00"))
    problems = captions.check(_page(tmp_path, "**Figure 9.1.1.** The red line $h[T]$ rises.", orange))
    assert [(p.line, p.message) for p in problems] == [(8, "Figure 9.1.1 says 'red', but its figure draws orange")]
    assert captions.check(_page(tmp_path, "**Figure 9.1.1.** The orange (amber) line rises.", orange)) == []
    vermilion = _png(_line("#D55E00"))
    assert captions.check(_page(tmp_path, "**Figure 9.1.1** The orange line.", vermilion))[0].message.endswith(
        "draws vermilion"
    )
    assert captions.check(_page(tmp_path, "**Figure 9.1.1** The vermilion (red-orange) line.", vermilion)) == []


def test_a_caption_without_colour_words_or_with_maths_is_not_read_for_colours(tmp_path):
    assert captions.caption_colours("Loss against steps; $\\color{red}x$ and `blue`.") == []
    assert captions.check(_page(tmp_path, "**Figure 9.1.1.** Loss against steps.", _png(_line("k")))) == []
