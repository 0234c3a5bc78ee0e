"""Measured properties are asserted: a figure caption or a claims-table row that states one names the assert
that checks it.

A *measured property* is a statement about the page's own numbers that a word of :data:`MEASURED` makes:
a shape ("flat", "grows", "decays", "saturates", "peaks"), a trend ("increases", "falls", "loses"), a
nearness ("near 10⁻⁸", "≈", "close to"), an optimum ("optimal"). The mechanism that ties it to a check:

- a caption ``**Figure X.Y.Z.** …`` that uses such a word is *asserted* when a code cell of the page has an
  ``assert`` whose line, or the comment line right above it, names the figure::

      assert np.ptp(attention_norms) < 0.05 * attention_norms.mean()  # Figure 6.1.3: attention flat

- a row of a *claims table* (a markdown table whose first header cell starts with "claim") that uses such a
  word is asserted when an ``assert`` line (or the comment above it) quotes a phrase of the row, at least 8
  characters, after the word ``claim``::

      # claim "GRU loses early symbols": recall falls with the symbol's age
      assert recall_gru[:4].mean() < recall_gru[-4:].mean() - 0.1

The check flags every such caption and row that no assert names. The assert itself is the writer's: it must
check the property with a tolerance that holds across seeds and CPUs (``make test-seeds`` reruns it).
"""

from __future__ import annotations

import re

from nextword.booktools.checks.captions import captions
from nextword.booktools.pages import Page, Problem

__all__ = ["MEASURED", "assert_comments", "check", "claims_rows", "measured_words"]

#: The words that state a measured property (whole words, any case).
MEASURED = re.compile(
    r"(?<![\w-])(flat|constant|grows?|growing|rises?|rising|falls?|falling|drops?|decays?|decaying|shrinks?|"
    r"increases?|increasing|decreases?|decreasing|saturates?|vanish(?:es)?|plateaus?|peaks?|loses?|converges?|"
    r"diverges?|monotone|monotonically|linearly|near|close to|approximately|optimal|sharpens?|sharper|doubles?|"
    r"halves|exceeds?|dominates?)(?![\w-])|≈",
    re.I,
)
_ASSERT = re.compile(r"^\s*assert\b|\bassert_\w+\(|\bassert\s")
_QUOTE = re.compile(r"\bclaims?\b[^\"“”]*[\"“]([^\"”]{8,})[\"”]", re.I)


def measured_words(text: str) -> list[str]:
    """The measured-property words of a text (maths and inline code not read).

    >>> measured_words("The GRU loses early symbols; attention is flat, near $10^{-8}$ (`grows`).")
    ['loses', 'flat', 'near']
    """
    text = re.sub(r"\$\$.*?\$\$|\$[^$]*\$|`[^`]*`|\]\([^)]*\)", " ", text, flags=re.S)
    return [m[0] for m in MEASURED.finditer(text)]


def assert_comments(page: Page) -> list[str]:
    """The comments attached to the page's asserts: the comment of an assert line, and the comment line right
    above an assert line."""
    found = []
    for cell in page.code_cells():
        lines = cell.text.split("\n")
        for n, line in enumerate(lines):
            if not _ASSERT.search(line.split("#", 1)[0] if not line.lstrip().startswith("#") else ""):
                continue
            if "#" in line:
                found.append(line.split("#", 1)[1])
            if n and lines[n - 1].lstrip().startswith("#"):
                found.append(lines[n - 1].lstrip()[1:])
    return found


def claims_rows(page: Page) -> list[tuple[int, str]]:
    """``(line, row text)`` of every row of every claims table of the page."""
    rows = []
    for block in page.blocks:
        lines = block.text.split("\n")
        in_table = False
        for n, line in enumerate(lines):
            stripped = line.strip()
            if not stripped.startswith("|"):
                in_table = False
                continue
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", stripped)[1:-1]]
            if not in_table:
                in_table = bool(cells) and cells[0].lower().startswith("claim")
                continue
            if cells and set(cells[0]) <= set("-: "):
                continue
            rows.append((block.line + block.text.count("\n", 0, sum(len(x) + 1 for x in lines[:n])), stripped))
    return rows


def _normal(text: str) -> str:
    return " ".join(text.lower().split())


def check(page: Page) -> list[Problem]:
    """A problem per caption and claims-table row that states a measured property no assert names."""
    comments = assert_comments(page)
    problems = []
    for _, line, caption in captions(page):
        words = measured_words(caption)
        label = re.match(r"\*\*Figure\s+([\w.]+?)\.?\*\*", caption)[1]
        if words and not any(re.search(rf"\bFig(?:ure|\.)\s*{re.escape(label)}(?![\w.]\d)", c) for c in comments):
            problems.append(
                Problem(
                    "claims",
                    line,
                    f"Figure {label} states a measured property ({', '.join(dict.fromkeys(words))}): assert it in a "
                    f"code cell, with the comment '# Figure {label}: ...' on the assert",
                )
            )
    quotes = [_normal(q) for c in comments for q in _QUOTE.findall(c)]
    for line, row in claims_rows(page):
        words = measured_words(row)
        if words and not any(q in _normal(row) for q in quotes):
            problems.append(
                Problem(
                    "claims",
                    line,
                    f"a claims-table row states a measured property ({', '.join(dict.fromkeys(words))}): assert it, "
                    f"with the comment '# claim \"<a phrase of the row>\": ...' on the assert",
                )
            )
    return problems
