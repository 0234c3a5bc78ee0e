"""Every page of book/ passes every page check (``python -m nextword.booktools.pagecheck``), or is listed.

A page that does not pass a check yet is listed under the check's name in ``page_exemptions.toml`` (beside
this file, one line per page); these tests keep the lists honest both ways: an unlisted page that fails, and
a listed page that passes (its line must go), fail. The checks themselves are shown to catch their defects
in the test modules of each check (``test_pagecheck_*.py``). All of it reads files: seconds for the book.
"""

from __future__ import annotations

from functools import cache

import pytest

from nextword.booktools import pagecheck
from nextword.booktools.pages import BOOK, book_pages, read_page

PAGES = {read_page(p).name: p for p in book_pages()}
EXEMPT = pagecheck.exemptions()


@cache
def _problems(name: str, check: str) -> tuple[str, ...]:
    return tuple(
        f"{read_page(PAGES[name]).where(p.line or 1)}: {p.message}" for p in pagecheck.check_page(PAGES[name], [check])
    )


def test_the_exemption_file_names_known_checks_and_pages():
    unknown_checks = sorted(set(EXEMPT) - set(pagecheck.CHECKS))
    assert not unknown_checks, f"page_exemptions.toml lists checks that do not exist: {unknown_checks}"
    missing = sorted(f"[{c}] {p}" for c, pages in EXEMPT.items() for p in pages if p not in PAGES)
    assert not missing, f"page_exemptions.toml lists pages that do not exist (renamed?): {missing}"


@pytest.mark.parametrize("check", list(pagecheck.CHECKS))
def test_every_page_passes_the_check_or_is_listed(check):
    listed = EXEMPT.get(check, {})
    failing = {name: _problems(name, check) for name in PAGES if name not in listed}
    failing = {name: problems for name, problems in failing.items() if problems}
    report = "\n".join(f"  {line}" for problems in failing.values() for line in problems[:8])
    assert not failing, (
        f"pages that fail the {check!r} check (python -m nextword.booktools.pagecheck --only {check} <page>):\n{report}"
    )


@pytest.mark.parametrize("check", list(pagecheck.CHECKS))
def test_a_listed_page_still_fails_the_check(check):
    passing = sorted(name for name in EXEMPT.get(check, {}) if name in PAGES and not _problems(name, check))
    assert not passing, (
        f"these pages pass the {check!r} check now: remove their lines under [{check}] in "
        f"tests/booktools/page_exemptions.toml: {passing}"
    )


def test_the_command_prints_each_problem_with_its_line(tmp_path, capsys):
    page = tmp_path / "part9_example" / "page.py"
    page.parent.mkdir()
    page.write_text("# %% [markdown]\n# # 9.1 A page\n", encoding="utf-8")
    assert pagecheck.main([str(page), "--only", "teaching"]) == 1
    out = capsys.readouterr().out
    assert f"{page}:1: [teaching] first cell: no paragraph starting with **The question.**" in out
    good = BOOK / "part0_reading_guide" / "00_reading_guide.py"
    assert pagecheck.main([str(good), "--only", "teaching"]) == 0
    with pytest.raises(ValueError, match="unknown check"):
        pagecheck.check_page(good, ["no such check"])
