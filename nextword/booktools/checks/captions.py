"""Caption colours: a caption that names a colour names one its figure draws.

A caption is a paragraph starting ``**Figure X.Y.Z.**`` (or ``**Figure X.Y.Z**``); its figure is the last
image (``image/png``) of the nearest code cell above it, read back from the executed ``.ipynb``. Reading
the picture rather than recording artists' colours at run time needs nothing from the page or the
library, checks exactly what the reader sees, and covers colour maps too.

Each pixel is put into one of the palette's classes (:func:`pixel_classes`): chromatic pixels (chroma, the
spread between the largest and smallest of R, G, B, at least 0.1; so pale fills and tints count for their
colour) by hue — *red* (below 18° or from 340°: ``tab:red``, the red
end of a diverging map), *vermilion* (18–34°: Okabe–Ito #D55E00), *orange* (34–50°: #E69F00), *yellow*
(50–70°: #F0E442), *green* (70–185°: bluish green #009E73, green), *blue* (185–255°: #0072B2 and sky blue
#56B4E9, which share a hue and blend into each other when anti-aliased), *purple* (255–340°: reddish purple
#CC79A7); neutral ones as *black* (brightest channel below 0.4: text and lines in black, also over a
shaded area), *grey* or white (brightest channel 0.92 or more). Hue survives blending with white or black, so
anti-aliased edges count for their colour. A class is drawn when at least :data:`MIN_PIXELS` pixels hold it, and at least :data:`MIN_SHARE` of
the pixels of the most drawn colour class (blends where two colours meet are thin).

A colour word of the caption (:data:`COLOUR_WORDS`) must name a drawn class: "red" needs red, "vermilion"
or "red-orange" vermilion, "orange" or "amber" orange, "green"/"bluish green"/"teal" green, "blue"/"sky
blue" blue, "purple"/"pink"/"magenta"/"reddish purple" purple, "yellow", "black", "grey". So the old colour
words of captions written before the Okabe–Ito cycle fail: "red" where vermilion or amber is drawn,
"orange" where vermilion is. A colour map names its colours too: a diverging map's red and blue ends are
red and blue; viridis holds purple, blue, green and yellow.
"""

from __future__ import annotations

import base64
import io
import re
from functools import cache

import numpy as np

from nextword.booktools.pages import Page, Problem

__all__ = [
    "COLOUR_WORDS",
    "MIN_PIXELS",
    "MIN_SHARE",
    "caption_colours",
    "captions",
    "check",
    "drawn_classes",
    "drawn_colours",
    "pixel_classes",
]

#: Pixels a class needs to count as drawn (a 5x5 marker has 25) ...
MIN_PIXELS = 30
#: ... and its share of the most drawn colour: where two colours meet, anti-aliasing blends them into a thin
#: line of in-between hues (vermilion next to purple gives a few red pixels), never into this many.
MIN_SHARE = 0.005
#: ``{colour word (lower case): the class it names}``; longer words first (they are matched first).
COLOUR_WORDS = {
    "reddish purple": "purple",
    "reddish-purple": "purple",
    "bluish green": "green",
    "bluish-green": "green",
    "red-orange": "vermilion",
    "sky blue": "blue",
    "sky-blue": "blue",
    "light blue": "blue",
    "dark blue": "blue",
    "vermilion": "vermilion",
    "vermillion": "vermilion",
    "orange": "orange",
    "amber": "orange",
    "yellow": "yellow",
    "green": "green",
    "teal": "green",
    "blue": "blue",
    "purple": "purple",
    "pink": "purple",
    "magenta": "purple",
    "violet": "purple",
    "red": "red",
    "black": "black",
    "grey": "grey",
    "gray": "grey",
}
_WORD = re.compile(r"(?<![\w-])(" + "|".join(re.escape(w) for w in COLOUR_WORDS) + r")(?![\w-])", re.I)
_CAPTION = re.compile(r"\*\*Figure\s+[\w.]+?\.?\*\*")
_HUES = ((18, "red"), (34, "vermilion"), (50, "orange"), (70, "yellow"), (185, "green"), (255, "blue"), (340, "purple"))


def pixel_classes(rgb: np.ndarray) -> np.ndarray:
    """The class name of every pixel of an ``(H, W, 3)`` array of floats in [0, 1] (``"white"`` for the
    background), as an ``(H, W)`` array of strings.

    >>> pixel_classes(np.array([[[0.835, 0.369, 0.0], [0.902, 0.624, 0.0], [0.0, 0.447, 0.698], [1, 1, 1]]])).tolist()
    [['vermilion', 'orange', 'blue', 'white']]
    """
    rgb = np.asarray(rgb, dtype=float)[..., :3]
    top, bottom = rgb.max(-1), rgb.min(-1)
    chroma = top - bottom
    saturation = np.where(top > 0, chroma / np.where(top > 0, top, 1), 0)
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    safe = np.where(chroma > 0, chroma, 1)
    hue = np.where(top == r, ((g - b) / safe) % 6, np.where(top == g, (b - r) / safe + 2, (r - g) / safe + 4)) * 60
    out = np.full(rgb.shape[:2], "white", dtype=object)
    out[top < 0.92] = "grey"
    out[top < 0.4] = "black"
    colour = (chroma >= 0.1) & ((saturation >= 0.3) | (top >= 0.4))
    names = np.full(rgb.shape[:2], "red", dtype=object)
    for upper, name in reversed(_HUES):
        names[hue < upper] = name
    names[hue >= 340] = "red"
    out[colour] = names[colour]
    return out


@cache
def _bin_classes() -> np.ndarray:
    """The class of the centre of each of the 32**3 colour bins (5 bits a channel)."""
    levels = (np.arange(32) + 0.5) / 32
    grid = np.stack(np.meshgrid(levels, levels, levels, indexing="ij"), -1).reshape(1, -1, 3)
    return pixel_classes(grid)[0]


def drawn_classes(png: bytes) -> dict[str, int]:
    """``{class: pixels}`` of a PNG image (white left out); pixels are binned to 5 bits a channel first."""
    from PIL import Image

    image = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.int64) >> 3
    counts = np.bincount((image[..., 0] * 1024 + image[..., 1] * 32 + image[..., 2]).ravel(), minlength=32**3)
    classes = _bin_classes()
    return {
        str(name): int(counts[classes == name].sum())
        for name in np.unique(classes)
        if name != "white" and counts[classes == name].sum()
    }


def drawn_colours(png: bytes) -> set[str]:
    """The classes a PNG draws (:data:`MIN_PIXELS`, :data:`MIN_SHARE`); black and grey by the first rule only."""
    counts = drawn_classes(png)
    most = max((c for name, c in counts.items() if name not in ("black", "grey")), default=0)
    return {
        name
        for name, count in counts.items()
        if count >= MIN_PIXELS and (name in ("black", "grey") or count >= MIN_SHARE * most)
    }


def caption_colours(caption: str) -> list[tuple[str, str]]:
    """``(word, class)`` for every colour word of a caption, in order (LaTeX and inline code not read).

    >>> caption_colours("The red line (vermilion dots, $\\\\color{blue}x$) and the bluish green band; `grey`.")
    [('red', 'red'), ('vermilion', 'vermilion'), ('bluish green', 'green')]
    """
    text = re.sub(r"\$\$.*?\$\$|\$[^$]*\$|`[^`]*`|\]\([^)]*\)", " ", caption, flags=re.S)
    return [(m[1], COLOUR_WORDS[m[1].lower()]) for m in _WORD.finditer(text)]


def captions(page: Page) -> list[tuple[int, int, str]]:
    """``(cell index, line, caption paragraph)`` of every figure caption of the page."""
    found = []
    for block in page.blocks:
        for m in _CAPTION.finditer(block.text):
            end = re.search(r"\n[ \t]*\n|$", block.text[m.start() :])
            found.append((block.cell, block.line_of(m.start()), block.text[m.start() : m.start() + end.start()]))
    return found


def _figure_above(page: Page, cell: int) -> bytes | None:
    for index in range(cell - 1, -1, -1):
        if page.cells[index].kind != "code":
            continue
        images = [o["data"]["image/png"] for o in page.outputs(index) if "image/png" in o.get("data", {})]
        if images:
            data = images[-1]
            return base64.b64decode("".join(data) if isinstance(data, list) else data)
    return None


def check(page: Page) -> list[Problem]:
    """A problem per colour word of a caption that its figure does not draw (and per caption whose figure
    cannot be found when it names a colour)."""
    problems = []
    for cell, line, caption in captions(page):
        words = caption_colours(caption)
        if not words:
            continue
        png = _figure_above(page, cell)
        label = _CAPTION.match(caption)[0].strip("*").rstrip(".")
        if png is None:
            problems.append(Problem("captions", line, f"{label}: names colours but no figure is stored above it"))
            continue
        drawn = drawn_colours(png)
        for word, name in dict.fromkeys(words):
            if name not in drawn:
                shown = ", ".join(sorted(drawn - {"black", "grey"})) or "no colour"
                problems.append(Problem("captions", line, f"{label} says {word!r}, but its figure draws {shown}"))
    return problems
