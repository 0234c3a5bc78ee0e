"""A book page as the page checks read it: its cells, their lines, its ``##`` sections, what is folded.

A page is a jupytext ``py:percent`` file (``book/<part>/<name>.py``) with its executed ``.ipynb`` beside it.
:func:`read_page` splits it into :class:`Cell` objects (markdown text without the ``# `` comment marks, the
1-based line of the ``.py`` where the cell's text starts, its tags) and the markdown into :class:`Block`
objects, one per ``##`` section a cell's text falls in (a cell may hold several ``##`` headings).

What the rendered book folds (``book/conf.py`` wraps these sections in ``<details>``): the sections
``## Checking the paper`` and ``## Reproducibility`` (:data:`FOLDED_SECTIONS`), which end a lesson, and the
whole of a part's companion audit page (:func:`page_kind` ``"companion"``). Everything else is the *lesson*:
the unfolded text a student reads, folded answers of ``Check your understanding`` included.

The kinds of page (:func:`page_kind`):

``lesson``     every page not named below: it has the teaching shape (:mod:`nextword.booktools.teaching`)
``overview``   a part's ``00_overview.py``: the part's opening page, with its own shape
``reference``  Appendix A (``partA_appendix/``): notation and environment, no question to answer
``companion``  a part's audit page, ``checking_the_paper.py`` (or ``NN_checking_the_paper.py``): where a part
               that has much paper-checking keeps it; the lessons link to it. Folded as a whole, so it is
               exempt from the lesson checks (jargon, symbols box, teaching shape) and keeps the others.

>>> page = parse_page("# %% [markdown]\\n# # 9.1 A page\\n#\\n# ## A tiny example by hand\\n# Two words.\\n"
...                   "# %%\\nx = 1\\n# %% [markdown]\\n# ## Reproducibility\\n# seed 0\\n")
>>> [(b.section, b.line, b.text.strip()) for b in page.blocks]
[('', 2, '# 9.1 A page'), ('A tiny example by hand', 4, '## A tiny example by hand\\nTwo words.'), ('Reproducibility', 9, '## Reproducibility\\nseed 0')]
>>> [b.section for b in page.lesson_blocks()]
['', 'A tiny example by hand']
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

__all__ = [
    "BOOK",
    "FOLDED_SECTIONS",
    "REPO_ROOT",
    "Block",
    "Cell",
    "Page",
    "Problem",
    "book_pages",
    "is_companion",
    "page_kind",
    "parse_page",
    "read_page",
]

REPO_ROOT = Path(__file__).resolve().parents[2]
BOOK = REPO_ROOT / "book"

#: The ``##`` sections that end a lesson and are folded in the rendered book (a heading *starting* so).
FOLDED_SECTIONS = ("Checking the paper", "Reproducibility")

_HEADER = re.compile(r"^# %%(.*)$")
_TAGS = re.compile(r"tags=(\[[^\]]*\])")
_SECTION = re.compile(r"^## +(.+?)[ \t]*$", re.M)
_COMPANION = re.compile(r"^(\d+_)?checking_the_paper$")


@dataclass(frozen=True)
class Cell:
    """One cell of a page: ``kind`` ``"markdown"`` or ``"code"``; ``text`` (markdown without its ``# ``
    marks); ``line``, the 1-based line of the ``.py`` where the text starts (the line after ``# %%``);
    ``index``, its position among all cells (the same in the ``.ipynb``); ``tags``; ``section``, the ``##``
    section the cell starts in (``""`` before the first heading)."""

    index: int
    kind: str
    text: str
    line: int
    tags: tuple[str, ...] = ()
    section: str = ""


@dataclass(frozen=True)
class Block:
    """The part of a markdown cell's text that falls in one ``##`` section (``""`` before the first)."""

    cell: int
    section: str
    text: str
    line: int

    def line_of(self, offset: int) -> int:
        """The ``.py`` line of the character at ``offset`` of :attr:`text`."""
        return self.line + self.text.count("\n", 0, offset)


@dataclass(frozen=True)
class Problem:
    """One thing a page check found: the check's name, the ``.py`` line (None: the page as a whole), what."""

    check: str
    line: int | None
    message: str


def is_companion(stem: str) -> bool:
    """Is a page with this file stem a part's companion audit page (``checking_the_paper``)?

    >>> is_companion("checking_the_paper"), is_companion("07_checking_the_paper"), is_companion("6_2_x")
    (True, True, False)
    """
    return bool(_COMPANION.match(stem))


def page_kind(path: Path) -> str:
    """``"lesson"``, ``"overview"``, ``"reference"`` or ``"companion"`` (module docstring)."""
    path = Path(path)
    if is_companion(path.stem):
        return "companion"
    if path.stem == "00_overview":
        return "overview"
    if path.parent.name == "partA_appendix":
        return "reference"
    return "lesson"


def _is_folded(section: str) -> bool:
    return section.startswith(FOLDED_SECTIONS)


@dataclass
class Page:
    """A parsed page (:func:`read_page`); ``path`` its ``.py`` (may not exist for a page made from text)."""

    path: Path
    cells: list[Cell]
    kind: str = "lesson"
    blocks: list[Block] = field(default_factory=list)

    @property
    def name(self) -> str:
        """``part/stem`` (the key of the exemption lists)."""
        return f"{self.path.parent.name}/{self.path.stem}"

    def where(self, line: int) -> str:
        """``book/part/page.py:line`` for messages (relative to the repository when it is inside it)."""
        try:
            shown = self.path.resolve().relative_to(REPO_ROOT)
        except ValueError:
            shown = self.path
        return f"{shown}:{line}"

    def sections(self) -> list[str]:
        """The ``##`` headings in order."""
        return [m[1] for c in self.cells if c.kind == "markdown" for m in _SECTION.finditer(c.text)]

    def code_cells(self, folded: bool | None = None) -> list[Cell]:
        """The code cells; only those in folded sections (``True``) or only the others (``False``)."""
        cells = [c for c in self.cells if c.kind == "code"]
        if folded is None:
            return cells
        return [c for c in cells if (self.kind == "companion" or _is_folded(c.section)) == folded]

    def lesson_blocks(self) -> list[Block]:
        """The markdown a student reads unfolded: none on a companion page; elsewhere every block before the
        folded sections (``Checking the paper``, ``Reproducibility``), folded answers included."""
        if self.kind == "companion":
            return []
        return [b for b in self.blocks if not _is_folded(b.section)]

    def folded_blocks(self) -> list[Block]:
        """The markdown of the folded sections (all of it on a companion page)."""
        lesson = {id(b) for b in self.lesson_blocks()}
        return [b for b in self.blocks if id(b) not in lesson]

    @cached_property
    def notebook(self) -> dict | None:
        """The executed ``.ipynb`` beside the page (its JSON), or None when there is none."""
        ipynb = self.path.with_suffix(".ipynb")
        if not ipynb.is_file():
            return None
        return json.loads(ipynb.read_text(encoding="utf-8"))

    def outputs(self, index: int) -> list[dict]:
        """The stored outputs of cell ``index`` (the ``.ipynb`` cell at the same position; ``[]`` if none)."""
        nb = self.notebook
        if nb is None or len(nb.get("cells", [])) != len(self.cells):
            return []
        return nb["cells"][index].get("outputs", [])

    def output_text(self) -> str:
        """Everything the page's code cells print (streams and text/plain, text/markdown, text/latex)."""
        chunks = []
        for cell in self.cells:
            for out in self.outputs(cell.index):
                if "text" in out:
                    chunks.append("".join(out["text"]))
                for key in ("text/plain", "text/markdown", "text/latex", "text/html"):
                    if key in out.get("data", {}):
                        value = out["data"][key]
                        chunks.append("".join(value) if isinstance(value, list) else str(value))
        return "\n".join(chunks)


def _markdown_line(line: str) -> str:
    if line.startswith("# "):
        return line[2:]
    return line[1:] if line.startswith("#") else line


def parse_page(text: str, path: Path | str = Path("book/part9_example/page.py"), kind: str | None = None) -> Page:
    """A :class:`Page` from a jupytext ``py:percent`` text (``path`` names it in messages and fixes its kind)."""
    path = Path(path)
    lines = text.split("\n")
    starts = [i for i, line in enumerate(lines) if _HEADER.match(line)]
    cells, section = [], ""
    for n, start in enumerate(starts):
        stop = starts[n + 1] if n + 1 < len(starts) else len(lines)
        header = _HEADER.match(lines[start])[1]
        body = lines[start + 1 : stop]
        while body and not body[-1].strip():
            body.pop()
        markdown = "[markdown]" in header or "[md]" in header
        tags_hit = _TAGS.search(header)
        tags = tuple(json.loads(tags_hit[1])) if tags_hit else ()
        body_text = "\n".join(_markdown_line(line) for line in body) if markdown else "\n".join(body)
        headings = _SECTION.findall(body_text) if markdown else []
        opening = section if not headings or body_text.split(f"## {headings[0]}")[0].strip() else headings[0]
        cells.append(Cell(n, "markdown" if markdown else "code", body_text, start + 2, tags, opening))
        section = headings[-1] if headings else section
    blocks, section = [], ""
    for cell in cells:
        if cell.kind != "markdown":
            continue
        pieces = _SECTION.split(cell.text)  # [before, heading, body, heading, body, ...]
        offset = 0
        if pieces[0].strip():
            blocks.append(Block(cell.index, section, pieces[0], cell.line))
        offset += pieces[0].count("\n")
        for heading, body in zip(pieces[1::2], pieces[2::2]):
            section = heading
            block_text = f"## {heading}{body}"
            blocks.append(Block(cell.index, section, block_text, cell.line + offset))
            offset += block_text.count("\n")
    return Page(path, cells, kind or page_kind(path), blocks)


def read_page(path: Path | str) -> Page:
    """:func:`parse_page` of a page file."""
    path = Path(path)
    return parse_page(path.read_text(encoding="utf-8"), path)


def book_pages(book: Path = BOOK) -> list[Path]:
    """Every page of the book: ``book/<part>/<name>.py``, sorted."""
    return sorted(Path(book).glob("*/*.py"))
