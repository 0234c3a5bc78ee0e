r"""Symbols: every symbol of a page's maths is declared, in the page's box or in the book's notation table.

A lesson opens with a **symbols box** (the first markdown cell; COMMON format)::

    ```{admonition} Symbols on this page
    :class: note
    | symbol | meaning | shape |
    |---|---|---|
    | $q[i]$ | query of word $i$ (a row vector) | $(d_k,)$ |
    ```

Each row declares the symbol of each maths of its first column (``$W^Q$, $W^K$`` or ``$W^Q, W^K$``: both;
``$q[i]$``: ``q``, the bracket is an index). A side box ```` ```{admonition} In the paper's notation ````
declares every symbol in its maths (a paper's own names, given once). ``book/notation.yaml``
(:mod:`nextword.booktools.notation`) declares the book's symbols for every page.

The check reads the maths of every markdown cell of the page (``$…$``, ``$$…$$``, amsmath environments,
```` ```{math} ```` blocks; folded sections too; the box's meaning and shape columns too) and counts a symbol
as :mod:`nextword.booktools.texsymbols` defines it (a letter with its decorations, subscript and name
superscript). A declared symbol covers a use when it is the same decorated letter and its subscript and
superscript, where it has them, agree (a declared ``q`` covers ``q_i``; a declared ``W^Q`` covers only ``W^Q``).
It reports, once per undeclared letter, the first line that uses it; a row of the box that gives a symbol
already in the box another meaning; and a lesson without a box. Companion audit pages and the reference
appendix are not checked (the appendix *is* the table).
"""

from __future__ import annotations

import re
from functools import cache

from nextword.booktools.texsymbols import Symbol, math_spans, symbols
from nextword.booktools.pages import Block, Page, Problem

__all__ = ["BOX_TITLE", "PAPER_BOX_TITLE", "box_declarations", "check", "paper_declarations", "undeclared"]

BOX_TITLE = "Symbols on this page"
PAPER_BOX_TITLE = "In the paper's notation"
_BOX = re.compile(r"```\{admonition\} *" + re.escape(BOX_TITLE) + r"[^\n]*\n(.*?)```", re.S)
_PAPER_BOX = re.compile(r"```\{admonition\} *" + re.escape(PAPER_BOX_TITLE) + r"[^\n]*\n(.*?)```", re.S)


def _row_cells(line: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def _top_level_pieces(tex: str) -> list[str]:
    """``W^Q, W^{K}`` -> ``["W^Q", "W^{K}"]`` (commas outside braces and brackets split)."""
    pieces, depth, start = [], 0, 0
    for n, ch in enumerate(tex):
        depth += {"{": 1, "[": 1, "(": 1, "}": -1, "]": -1, ")": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            pieces.append(tex[start:n])
            start = n + 1
    return [*pieces, tex[start:]]


def box_declarations(text: str) -> tuple[list[tuple[Symbol, str]], list[str]]:
    r"""``([(symbol, meaning), ...], problems)`` of the symbols box(es) of a markdown ``text``; a problem for a
    symbol given two different meanings and for a row that declares no symbol.

    >>> box = "```{admonition} Symbols on this page\n:class: note\n| symbol | meaning | shape |\n|---|---|---|\n"
    >>> found, problems = box_declarations(box + "| $q[i]$ | query | $(d_k,)$ |\n| $q$ | a probability |  |\n```")
    >>> [(s.key, m) for s, m in found], problems
    ([('q', 'query'), ('q', 'a probability')], ["the symbols box gives $q$ two meanings: 'query' and 'a probability'"])
    """
    found: list[tuple[Symbol, str]] = []
    problems: list[str] = []
    meanings: dict[str, str] = {}
    for box in _BOX.findall(text):
        for line in box.splitlines():
            cells = _row_cells(line) if line.strip().startswith("|") else []
            if len(cells) < 2 or set(cells[0]) <= set("-: ") or cells[0].lower() == "symbol":
                continue
            declared = [
                symbols(piece)[0]
                for _, tex in math_spans(cells[0])
                for piece in _top_level_pieces(tex)
                if symbols(piece)
            ]
            if not declared:
                problems.append(f"a row of the symbols box declares no symbol: {line.strip()[:60]}")
            for symbol in declared:
                meaning = cells[1]
                if symbol.key in meanings and meanings[symbol.key] != meaning:
                    problems.append(
                        f"the symbols box gives ${symbol.key}$ two meanings: {meanings[symbol.key]!r} and {meaning!r}"
                    )
                meanings.setdefault(symbol.key, meaning)
                found.append((symbol, meaning))
    return found, problems


def paper_declarations(text: str) -> list[Symbol]:
    """Every symbol in the maths of the side boxes ``In the paper's notation`` of a markdown ``text``."""
    return [s for box in _PAPER_BOX.findall(text) for _, tex in math_spans(box) for s in symbols(tex)]


@cache
def _table() -> tuple[Symbol, ...]:
    from nextword.booktools.notation import declared_symbols

    return tuple(declared_symbols())


def _scanned(block: Block) -> list[tuple[int, str]]:
    """``(offset in block, tex)`` of the maths to check: the boxes' declaring parts are left out."""
    text = block.text
    masked = _PAPER_BOX.sub(lambda m: " " * len(m[0]), text)

    def first_column_blank(m: re.Match) -> str:
        lines = []
        for line in m[0].split("\n"):
            if line.strip().startswith("|"):
                cells = re.split(r"(?<!\\)\|", line)
                if len(cells) > 2:
                    cells[1] = " " * len(cells[1])
                line = "|".join(cells)
            lines.append(line)
        return "\n".join(lines)

    masked = _BOX.sub(first_column_blank, masked)
    return math_spans(masked)


def undeclared(page: Page, table: tuple[Symbol, ...] | None = None) -> dict[str, list[tuple[int, Symbol]]]:
    """``{base: [(line, symbol), ...]}`` of the page's symbols that no box and no table entry declares."""
    table = _table() if table is None else table
    text = "\n".join(b.text for b in page.blocks)
    declared = [s for s, _ in box_declarations(text)[0]] + paper_declarations(text) + list(table)
    missing: dict[str, list[tuple[int, Symbol]]] = {}
    for block in page.blocks:
        for offset, tex in _scanned(block):
            for symbol in symbols(tex):
                if not any(d.covers(symbol) for d in declared):
                    missing.setdefault(symbol.base, []).append((block.line_of(offset + symbol.offset), symbol))
    return missing


def check(page: Page) -> list[Problem]:
    """The problems of the module docstring, for lessons and overviews."""
    if page.kind in ("companion", "reference"):
        return []
    problems = []
    first = next((c for c in page.cells if c.kind == "markdown"), None)
    if page.kind == "lesson" and (first is None or not _BOX.search(first.text)):
        problems.append(Problem("symbols", first.line if first else None, f"no '{BOX_TITLE}' box in the first cell"))
    text = "\n".join(b.text for b in page.blocks)
    problems += [Problem("symbols", None, message) for message in box_declarations(text)[1]]
    for base, uses in undeclared(page).items():
        forms = sorted({s.key for _, s in uses})
        shown = ", ".join(f"${f}$" for f in forms[:4]) + (", …" if len(forms) > 4 else "")
        problems.append(
            Problem(
                "symbols",
                uses[0][0],
                f"${base}$ (as {shown}; {len(uses)} use(s)) is in neither the page's symbols box nor book/notation.yaml",
            )
        )
    return problems
