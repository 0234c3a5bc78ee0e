r"""Markdown hygiene of the ``py:percent`` source: every markdown cell reaches the notebook as written.

jupytext reads a ``py:percent`` page cell by cell; three slips there lose or garble text silently:

1. **text on a cell's ``# %%`` line** (``# %% [markdown] # 6.2 Attention``): jupytext keeps it as the
   cell's *title* metadata, so it is not part of the cell and the reader never sees it. Only cell options
   (``tags=["hide-cell"]``, ``key="value"``) may follow ``# %%`` and ``[markdown]``;
2. **an empty markdown cell** (nothing but ``#`` lines or blank lines before the next ``# %%``): an empty
   box in the rendered page, usually a cell split by mistake;
3. **a markdown line without its ``# `` prefix** (``Some text`` or ``#text`` among ``# `` lines): jupytext
   no longer reads the cell as commented markdown, so it reaches the notebook with its ``#`` marks (a
   heading-less page, a ``# `` in front of every line); a blank line inside the cell is allowed, as is a
   bare ``#``.

:func:`percent_problems` reads any ``py:percent`` text (``tests/booktools/test_pagecheck_markdown.py`` also
runs it over ``solutions/`` and ``exercises/``); :func:`check` is the page check.

>>> percent_problems("# %% [markdown] # Title\n# text\n# %% [markdown]\n#\n# %%\nx = 1\n")
[(1, "text on the cell line itself ('# Title'): jupytext keeps it as the cell's title, not its text"), (3, 'an empty markdown cell')]
>>> percent_problems("# %% [markdown]\n# ## A section\nThe line lost its prefix.\n#no space\n")
[(3, "a markdown line without its '# ' prefix: 'The line lost its prefix.'"), (4, "a markdown line without its '# ' prefix: '#no space'")]
"""

from __future__ import annotations

import re

from nextword.booktools.pages import Page, Problem

__all__ = ["check", "percent_problems"]

_HEADER = re.compile(r"^# %%(.*)$")
_KIND = re.compile(r"^\s*\[(?:markdown|md|raw)\]")
_OPTION = re.compile(r"""\s*[\w.-]+=(?:\[[^\]]*\]|"[^"]*"|'[^']*'|\{[^}]*\}|[^\s"'\[{]+)""")


def _header_text(rest: str) -> str:
    """What follows ``# %%`` that is neither the cell kind nor a cell option (``""`` when nothing)."""
    rest = _KIND.sub("", rest)
    return _OPTION.sub("", rest).strip()


def percent_problems(text: str) -> list[tuple[int, str]]:
    """``(1-based line, message)`` for each slip of the module docstring in a ``py:percent`` text."""
    lines = text.split("\n")
    starts = [i for i, line in enumerate(lines) if _HEADER.match(line)]
    problems = []
    for n, start in enumerate(starts):
        rest = _HEADER.match(lines[start])[1]
        extra = _header_text(rest)
        if extra:
            problems.append(
                (
                    start + 1,
                    f"text on the cell line itself ({extra!r}): jupytext keeps it as the cell's title, not its text",
                )
            )
        if not re.match(r"^\s*\[(?:markdown|md)\]", rest):
            continue
        stop = starts[n + 1] if n + 1 < len(starts) else len(lines)
        body = lines[start + 1 : stop]
        if not any(line.lstrip("#").strip() for line in body):
            problems.append((start + 1, "an empty markdown cell"))
            continue
        for offset, line in enumerate(body):
            if not line.strip() or line == "#" or line.startswith("# "):
                continue
            problems.append((start + 2 + offset, f"a markdown line without its '# ' prefix: {line.strip()[:60]!r}"))
    return problems


def check(page: Page) -> list[Problem]:
    """A problem per slip in the page's ``.py`` (nothing for a page made from text without a file)."""
    if not page.path.is_file():
        return []
    return [Problem("markdown", line, message) for line, message in percent_problems(page.path.read_text("utf-8"))]
