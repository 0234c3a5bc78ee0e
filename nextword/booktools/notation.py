"""The book's notation table (``book/notation.yaml``): one meaning per symbol, shown in Appendix A.

Appendix A (``book/partA_appendix/A_notation_and_environment.py``) shows the table between two marker
comments; this module writes it there from the YAML file, and a test fails when the two differ::

    python -m nextword.booktools.notation --write     # regenerate Appendix A's table from book/notation.yaml
    python -m nextword.booktools.notation             # check only (exit 1 when it differs)

>>> entries = load_notation()
>>> [e["symbol"] for e in entries[:3]]
['\\\\mathcal V', 'w[t]', 'T']
>>> sorted(s.key for s in declared_symbols())[:4]
['E', 'H', 'I', 'K']
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

from nextword.booktools.texsymbols import Symbol, symbols
from nextword.booktools.pages import BOOK

__all__ = [
    "APPENDIX",
    "NOTATION",
    "appendix_problems",
    "declared_symbols",
    "load_notation",
    "notation_markdown",
    "write_appendix",
]

NOTATION = BOOK / "notation.yaml"
APPENDIX = BOOK / "partA_appendix" / "A_notation_and_environment.py"
_BEGIN = (
    "<!-- the book's notation table: generated from book/notation.yaml by python -m nextword.booktools.notation -->"
)
_END = "<!-- end of the notation table -->"
_FIELDS = ("symbol", "meaning", "shape", "used")


def load_notation(path: Path = NOTATION) -> list[dict[str, str]]:
    """The entries of the notation table, in order; raises ValueError on a missing field or a symbol that
    is not one symbol (:mod:`nextword.booktools.texsymbols`) or is listed twice."""
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    entries = data.get("symbols") if isinstance(data, dict) else None
    if not isinstance(entries, list) or not entries:
        raise ValueError(f"{path}: no 'symbols' list")
    seen: dict[str, str] = {}
    for n, entry in enumerate(entries):
        missing = [f for f in _FIELDS if not str(entry.get(f, "")).strip()]
        if missing:
            raise ValueError(f"{path}: entry {n} ({entry.get('symbol')!r}) has no {missing}")
        found = symbols(entry["symbol"])
        if not found:
            raise ValueError(f"{path}: {entry['symbol']!r} holds no symbol")
        key = found[0].key
        if key in seen:
            raise ValueError(f"{path}: {key!r} is listed twice ({seen[key]!r} and {entry['meaning']!r})")
        seen[key] = entry["meaning"]
    return entries


def declared_symbols(path: Path = NOTATION) -> list[Symbol]:
    """The symbol each entry declares (the first symbol of its ``symbol`` field: ``q`` of ``q[i]``)."""
    return [symbols(entry["symbol"])[0] for entry in load_notation(path)]


def _cell(text: str) -> str:
    return str(text).replace("|", r"\|").replace("\n", " ").strip()


def _maths(text: str) -> str:
    return text if "$" in text or text in ("scalar", "index", "—") or " " in text else f"${text}$"


def notation_markdown(path: Path = NOTATION) -> str:
    """The table as Markdown (symbol | meaning | shape | used in), between the two marker comments."""
    rows = [_BEGIN, "", "| symbol | meaning | shape | used in |", "|---|---|---|---|"]
    for entry in load_notation(path):
        rows.append(
            f"| ${_cell(entry['symbol'])}$ | {_cell(entry['meaning'])} | {_cell(_maths(entry['shape']))} | "
            f"{_cell(entry['used'])} |"
        )
    rows += ["", _END]
    return "\n".join(rows)


def _commented(markdown: str) -> str:
    return "\n".join(f"# {line}" if line else "#" for line in markdown.split("\n"))


def _current(appendix: Path) -> tuple[str, int, int]:
    text = Path(appendix).read_text(encoding="utf-8")
    start = text.find(f"# {_BEGIN}")
    end = text.find(f"# {_END}")
    if start < 0 or end < start:
        raise ValueError(f"{appendix}: no notation table markers ({_BEGIN!r} ... {_END!r})")
    return text, start, end + len(f"# {_END}")


def appendix_problems(appendix: Path = APPENDIX, path: Path = NOTATION) -> list[str]:
    """Empty when Appendix A's table is the one ``book/notation.yaml`` gives, else what to run."""
    text, start, end = _current(appendix)
    if text[start:end] != _commented(notation_markdown(path)):
        return [
            f"{appendix}: its notation table differs from {path}: run python -m nextword.booktools.notation --write"
        ]
    return []


def write_appendix(appendix: Path = APPENDIX, path: Path = NOTATION) -> bool:
    """Put the table into Appendix A's ``.py`` between the markers; True when the file changed."""
    text, start, end = _current(appendix)
    new = text[:start] + _commented(notation_markdown(path)) + text[end:]
    if new == text:
        return False
    Path(appendix).write_text(new, encoding="utf-8")
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m nextword.booktools.notation", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--write", action="store_true", help="regenerate Appendix A's table (then rebuild its notebook)"
    )
    args = parser.parse_args(argv)
    if args.write:
        changed = write_appendix()
        print(f"{APPENDIX}: {'table written' if changed else 'already current'}")
        if changed:
            print(f"now rebuild it: python -m nextword.booktools.notebooks build {APPENDIX.relative_to(BOOK.parent)}")
        return 0
    problems = appendix_problems()
    print("\n".join(problems) or "Appendix A's notation table is current")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
