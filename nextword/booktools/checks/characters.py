r"""No control characters: a book source or notebook holds no character a reader cannot see or type.

What ``"\f"``, ``"\b"``, ``"\a"``, ``"\v"`` become in a Python string without ``r`` — form feed, backspace,
bell, vertical tab — and every other control character (Unicode category Cc, except tab, newline and
carriage return) or invisible format character (category Cf: zero-width spaces, joiners, direction marks, a
byte-order mark) is an error, with one exception: U+2063, the mark that wraps a produced number
(:data:`nextword.booktools.display.MARK`). The page check reads the page's ``.py`` and every cell of its
``.ipynb`` (sources and outputs); :func:`files_with_control_characters` reads the rest of the book's sources
(``book/**/*.md``, ``solutions/``, ``exercises/``) for ``tests/booktools/test_pagecheck_characters.py``.

>>> bad_characters("a\fb\u2063c\u200bd\te")
[(1, 'U+000C FORM FEED (FF)'), (5, 'U+200B ZERO WIDTH SPACE')]
"""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

from nextword.booktools.display import MARK
from nextword.booktools.pages import REPO_ROOT, Page, Problem

__all__ = ["ALLOWED", "bad_characters", "check", "files_with_control_characters", "notebook_characters"]

#: Characters of category Cc or Cf that a source may hold.
ALLOWED = frozenset("\t\n\r" + MARK)
_NAMES = {0x0C: "FORM FEED (FF)", 0x08: "BACKSPACE", 0x07: "BELL", 0x0B: "VERTICAL TAB", 0x1B: "ESCAPE"}


def _name(ch: str) -> str:
    return _NAMES.get(ord(ch)) or unicodedata.name(ch, "control character")


def bad_characters(text: str) -> list[tuple[int, str]]:
    """``(offset, "U+XXXX NAME")`` of every control or invisible format character of ``text`` not in
    :data:`ALLOWED`."""
    return [
        (n, f"U+{ord(ch):04X} {_name(ch)}")
        for n, ch in enumerate(text)
        if ch not in ALLOWED and unicodedata.category(ch) in ("Cc", "Cf")
    ]


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def notebook_characters(notebook: dict) -> list[tuple[int, str, str]]:
    """``(cell index, "source"/"output", character)`` for each bad character of a notebook's JSON."""
    found = []
    for index, cell in enumerate(notebook.get("cells", [])):
        source = "".join(cell.get("source", ""))
        found += [(index, "source", what) for _, what in bad_characters(source)]
        for output in cell.get("outputs", []):
            texts = [output.get("text", "")] + [
                value
                for key, value in output.get("data", {}).items()
                if key.startswith("text/") or key.endswith("json")
            ]
            texts += [output.get("traceback", "")]
            for text in texts:
                text = "".join(text) if isinstance(text, list) else text if isinstance(text, str) else json.dumps(text)
                found += [(index, "output", what) for _, what in bad_characters(text)]
    return found


def check(page: Page) -> list[Problem]:
    """A problem per bad character of the page's ``.py`` (with its line) and of its ``.ipynb`` (with its cell)."""
    problems = []
    if page.path.is_file():
        text = page.path.read_text(encoding="utf-8")
        problems += [
            Problem("characters", _line(text, offset), f"{what} in the source (a TeX command in a string without r?)")
            for offset, what in bad_characters(text)
        ]
    if page.notebook is not None:
        lines = {c.index: c.line for c in page.cells}
        for index, where, what in dict.fromkeys(notebook_characters(page.notebook)):
            problems.append(Problem("characters", lines.get(index), f"{what} in the notebook's cell {index} ({where})"))
    return problems


def files_with_control_characters(root: Path = REPO_ROOT) -> list[str]:
    """``"path:line: character"`` for every bad character in the book's other sources: ``book/**/*.md``,
    ``book/**/*.yaml``, and ``solutions/`` and ``exercises/`` (``.py``, ``.md``, ``.ipynb``)."""
    root = Path(root)
    paths = [*root.glob("book/**/*.md"), *root.glob("book/*.yaml")]
    for folder in ("solutions", "exercises"):
        paths += [p for ext in ("py", "md", "ipynb") for p in (root / folder).rglob(f"*.{ext}")]
    found = []
    for path in sorted(set(paths)):
        if ".ipynb_checkpoints" in path.parts:
            continue
        rel = path.relative_to(root).as_posix()
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".ipynb":
            found += [f"{rel}: cell {i} ({where}): {what}" for i, where, what in notebook_characters(json.loads(text))]
        else:
            found += [f"{rel}:{_line(text, offset)}: {what}" for offset, what in bad_characters(text)]
    return found
