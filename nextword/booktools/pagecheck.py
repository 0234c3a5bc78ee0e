"""Every static check of a book page, in one command (for the writers of ``book/``)::

    python -m nextword.booktools.pagecheck book/part1_chapter6/6_2_attention_mechanism.py [...]
    python -m nextword.booktools.pagecheck --only jargon,symbols book/*/*.py
    python -m nextword.booktools.pagecheck --summary book/*/*.py     # problems per page and check

It prints each problem as ``path:line: [check] message`` and exits 1 when a page has one. The checks
(:data:`CHECKS`, each a module of :mod:`nextword.booktools.checks`) read the page's ``.py`` and, where they
need outputs (figures, printed numbers), the executed ``.ipynb`` beside it; none executes anything, so a
page takes well under a second. ``make test`` runs them over the whole book (``tests/booktools/
test_pagecheck.py``); a page that does not pass a check yet is listed, one line per page, under the
check's name in ``tests/booktools/page_exemptions.toml``, and this command marks such problems
``(exempt for now)`` — they are still to fix.
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from collections.abc import Callable, Sequence
from pathlib import Path

from nextword.booktools.pages import REPO_ROOT, Page, Problem, read_page

__all__ = ["CHECKS", "EXEMPTIONS", "check_page", "exemptions", "exemptions_toml", "main"]

EXEMPTIONS = REPO_ROOT / "tests" / "booktools" / "page_exemptions.toml"


def _teaching(page: Page) -> list[Problem]:
    """The teaching shape (:mod:`nextword.booktools.teaching`) and the page's ``{term}`` links."""
    from nextword.booktools import teaching

    if page.kind == "reference":
        return []
    problems = [Problem("teaching", None, p) for p in teaching.shape_problems(page.path)]
    terms = teaching.glossary_terms()
    uses = teaching.term_uses(page.path.read_text(encoding="utf-8"))
    problems += [
        Problem("teaching", None, f"{{term}}`{t}` has no entry in book/glossary.md")
        for t in dict.fromkeys(uses)
        if t not in terms
    ]
    return problems


def _registry() -> dict[str, tuple[Callable[[Page], list[Problem]], str]]:
    from nextword.booktools.checks import CHECKS as more

    return {"teaching": (_teaching, "the teaching shape and the glossary links (nextword.booktools.teaching)"), **more}


#: ``{name: (check, what it checks)}``, in the order the command runs them.
CHECKS = _registry()


def check_page(path: Path | str, only: Sequence[str] | None = None) -> list[Problem]:
    """Every problem the checks (``only`` these, by name) find on the page at ``path``."""
    page = read_page(path)
    names = list(CHECKS) if not only else list(only)
    unknown = [n for n in names if n not in CHECKS]
    if unknown:
        raise ValueError(f"unknown check(s) {unknown}; the checks are {list(CHECKS)}")
    return [problem for name in names for problem in CHECKS[name][0](page)]


def exemptions(path: Path = EXEMPTIONS) -> dict[str, dict[str, int]]:
    """``{check: {"part/stem": problems when listed}}`` of the exemption file (empty if there is none)."""
    if not Path(path).is_file():
        return {}
    with open(path, "rb") as f:
        return tomllib.load(f)


_HEAD = """\
# Pages that do not pass a page check yet (python -m nextword.booktools.pagecheck <page> says why), one line per
# page under the check's name, with the number of problems it had when listed. tests/booktools/test_pagecheck.py
# fails on a listed page that passes (remove its line) and on an unlisted page that fails (fix the page).
"""


def exemptions_toml(paths: Sequence[Path], only: Sequence[str] | None = None) -> str:
    """The exemption file's text for the pages at ``paths``: every failing page under each failing check."""
    failing: dict[str, dict[str, int]] = {name: {} for name in (only or CHECKS)}
    for path in paths:
        name = read_page(path).name
        for problem in check_page(path, only):
            failing[problem.check][name] = failing[problem.check].get(name, 0) + 1
    lines = [_HEAD]
    for check, pages in failing.items():
        lines.append(f"[{check}]")
        lines += [f'"{page}" = {n}' for page, n in sorted(pages.items())]
        lines.append("")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m nextword.booktools.pagecheck", description=__doc__.split("\n")[0])
    parser.add_argument("pages", nargs="+", help="book/<part>/<page>.py files")
    parser.add_argument("--only", default="", help=f"comma-separated checks (default all: {','.join(CHECKS)})")
    parser.add_argument("--summary", action="store_true", help="one line per page: problems per check")
    parser.add_argument(
        "--exemptions", action="store_true", help="print the exemption file that the pages' problems call for (TOML)"
    )
    args = parser.parse_args(argv)
    only = [n.strip() for n in args.only.split(",") if n.strip()] or None
    if args.exemptions:
        print(exemptions_toml([Path(p) for p in args.pages], only))
        return 0
    exempt = exemptions()
    failed = 0
    for raw in args.pages:
        page = read_page(raw)
        problems = check_page(raw, only)
        failed += bool(problems)
        if args.summary:
            counts: dict[str, int] = {}
            for p in problems:
                counts[p.check] = counts.get(p.check, 0) + 1
            print(f"{page.name}: " + (", ".join(f"{k} {v}" for k, v in counts.items()) or "passes"))
            continue
        if not problems:
            print(f"{raw}: passes every check")
        for p in problems:
            note = " (exempt for now)" if page.name in exempt.get(p.check, {}) else ""
            print(f"{page.where(p.line or 1)}: [{p.check}] {p.message}{note}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
