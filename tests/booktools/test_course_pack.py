"""The instructors' course pack (book/course_pack.md) keeps up with the book: every page of book/ is in its
weekly plan exactly once, and the reading time it gives a page is the page's own (``**Reading time:**``,
or the length estimate of ``nextword.booktools.teaching.estimated_minutes`` for a page that states none)."""

from __future__ import annotations

import re
from pathlib import Path

from nextword.booktools import notebooks, teaching
from nextword.booktools.pages import page_kind

ROOT = Path(notebooks.REPO_ROOT)
PACK = ROOT / "book" / "course_pack.md"
_ENTRY = re.compile(r"`book/(part\w+/\w+)` \((\d+) min\)")


def _plan() -> list[tuple[str, int]]:
    return [(page, int(minutes)) for page, minutes in _ENTRY.findall(PACK.read_text(encoding="utf-8"))]


def test_every_lesson_is_planned_once():
    planned = [page for page, _ in _plan()]
    pages = {f"{p.parent.name}/{p.stem}" for p in notebooks.notebook_sources(dirs=("book",))}
    pages -= {"partA_appendix/A_notation_and_environment"}  # reference, not a reading assignment
    pages = {p for p in pages if page_kind(ROOT / "book" / f"{p}.py") != "companion"}  # parts' audit pages, likewise
    assert len(planned) == len(set(planned)), "a page is planned twice"
    assert set(planned) == pages, (
        f"missing from the plan: {sorted(pages - set(planned))}; not a page: {sorted(set(planned) - pages)}"
    )


def test_reading_times_are_the_pages_own():
    wrong = [
        f"{page}: plan {minutes} min, page {teaching.estimated_minutes(ROOT / 'book' / f'{page}.py')} min"
        for page, minutes in _plan()
        if minutes != teaching.estimated_minutes(ROOT / "book" / f"{page}.py")
    ]
    assert not wrong, "update book/course_pack.md:\n  " + "\n  ".join(wrong)
