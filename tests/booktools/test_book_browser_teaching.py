"""The teaching shape as a reader sees it in the rendered book: answers folded until opened, the audit
sections (Checking the paper, Reproducibility) folded whole, heading visible, until opened by a click, the
keyboard or a link into them; glossary links that land on their definition, and the landing page with its
route map. Reuses the built book, the server and the browser of ``test_book_browser``.
"""

from __future__ import annotations

import re
from pathlib import Path

from nextword.booktools import teaching
from nextword.booktools.pages import FOLDED_SECTIONS
from tests.booktools import test_book_browser as base
from tests.booktools.test_teaching_shape import BOOK, LESSONS

# html_dir, server and browser come from tests/booktools/conftest.py (once per session); visit by name.
visit = base.visit
_parse, _screenshot = base._parse, base._screenshot


def _questions(page: str) -> int:
    text = (BOOK / f"{page}.py").read_text(encoding="utf-8")
    check = text.split("## Check your understanding", 1)[1].split("## Reproducibility", 1)[0]
    return len(re.findall(r"^# \d+\. ", check, re.M))


# --- read from the HTML files (no browser needed) --------------------------------------------------


def test_lesson_pages_carry_folded_answers_and_folded_reproducibility_code(html_dir: Path):
    for page in (p for p in LESSONS if not p.endswith("/00_overview")):  # an overview asks no questions
        html = (html_dir / "book" / f"{page}.html").read_text(encoding="utf-8")
        check = html.split('id="check-your-understanding"', 1)[1].split('id="reproducibility"', 1)[0]
        dropdowns = re.findall(r"<details[^>]*class=\"[^\"]*sd-dropdown[^\"]*\"[^>]*>", check)
        assert len(dropdowns) == _questions(page), f"{page}: {len(dropdowns)} folded answers"
        assert not any(" open" in d for d in dropdowns), f"{page}: an answer is unfolded"
        repro = html.split('id="reproducibility"', 1)[1]
        cells = re.findall(r'<div class="cell(?: [^"]*)?"', repro)  # the cell containers, not cell_input/output
        assert all("tag_hide-cell" in c for c in cells), f"{page}: Reproducibility code not folded: {cells}"


_FOLDED = re.compile(
    r'<section class="nextword-folded" id="([\w-]+)">\s*<details class="nextword-fold"><summary><h2>(.*?)</h2>'
    r".*?</summary>",
    re.S,
)


def test_the_audit_sections_are_folded_whole_with_their_heading_as_the_summary(html_dir: Path):
    """Every ``## Checking the paper`` and ``## Reproducibility`` of a lesson: the section holds one closed
    ``<details>`` whose ``<summary>`` is the section's ``<h2>``; nothing else of the page is folded so."""
    folded_any = False
    for page in LESSONS:
        html = (html_dir / "book" / f"{page}.html").read_text(encoding="utf-8")
        sections = teaching._sections(teaching._cells((BOOK / f"{page}.py").read_text(encoding="utf-8")))
        wanted = [h for h, _, _ in sections if h.startswith(FOLDED_SECTIONS)]
        found = [(sid, re.sub(r"<[^>]+>", "", title).rstrip("#").strip()) for sid, title in _FOLDED.findall(html)]
        assert len(found) == len(wanted) and all(t.startswith(FOLDED_SECTIONS) for _, t in found), (
            f"{page}: folded {found}, the page's audit sections are {wanted}"
        )
        assert html.count('class="nextword-fold"') == len(wanted), f"{page}: another section is folded"
        assert not re.search(r'<details class="nextword-fold"[^>]*\bopen\b', html), f"{page}: an audit opens unfolded"
        for sid, _ in found:  # the <details> closes just before its section does
            body = html.split(f'id="{sid}">', 1)[1]
            assert re.search(r"</details>\s*</section>", body), f"{page}: #{sid} does not end with its </details>"
        folded_any = folded_any or bool(found)
    assert folded_any


def test_every_term_link_lands_on_a_glossary_entry(html_dir: Path):
    glossary = _parse(html_dir / "glossary.html")
    entries = {i for i in glossary.ids if i.startswith("term-")}
    assert len(entries) == len(teaching.glossary_terms()), "the glossary page lost an entry"
    for page in LESSONS:
        links = _parse(html_dir / "book" / f"{page}.html")
        targets = [v.split("#", 1)[1] for tag, _, v in links.urls if tag == "a" and "glossary.html#" in v]
        assert targets, f"{page} links no glossary term"
        assert not set(targets) - entries, f"{page}: links to missing glossary entries {set(targets) - entries}"


def test_glossary_is_in_the_contents_and_the_landing_page_is_for_students(html_dir: Path):
    index = (html_dir / "index.html").read_text(encoding="utf-8")
    assert 'href="glossary.html"' in index
    assert "route_map.svg" in index and (html_dir / "_images" / "route_map.svg").exists()
    assert "Before you start" in index and "Pages and reading times" in index
    assert "table of contents (for contributors)" not in index


# --- in the browser ---------------------------------------------------------------------------------


def test_answers_open_on_click(visit, tmp_path):
    page = "book/part1_chapter6/6_1_parallel_attention.html"
    visit.open(page)
    answers = visit.page.locator("section#check-your-understanding details.sd-dropdown")
    assert answers.count() == _questions("part1_chapter6/6_1_parallel_attention")
    first = answers.first
    body = first.locator(".sd-summary-content")
    assert not body.is_visible(), "an answer is visible before the reader opens it"
    first.locator("summary").click()
    body.wait_for(state="visible", timeout=5_000)
    assert body.inner_text().strip(), "the opened answer is empty"
    assert not answers.nth(1).locator(".sd-summary-content").is_visible(), "opening one opened another"
    visit.typeset()
    _screenshot(visit, tmp_path / "answer_opened.png")
    assert not visit.errors, visit.errors


def test_an_audit_section_opens_on_click_on_the_keyboard_and_by_a_link(visit):
    page = "book/part3_dynamics/01_attention_gradients.html"  # Checking the paper (with subsections), Reproducibility
    visit.open(page)
    section = visit.page.locator("section#checking-the-paper")
    heading = section.locator("summary h2")
    assert heading.is_visible(), "the folded section's heading is not shown"
    body = section.locator("details.nextword-fold > p").first
    assert not body.is_visible(), "Checking the paper is shown unfolded"
    section.locator("summary").first.click()
    body.wait_for(state="visible", timeout=5_000)
    repro = visit.page.locator("section#reproducibility")
    summary = repro.locator("summary").first
    summary.focus()
    visit.page.keyboard.press("Enter")
    visit.page.wait_for_function("document.querySelector('section#reproducibility details').open", timeout=5_000)
    visit.open(page)
    inner = visit.page.locator("section#checking-the-paper section[id]").first
    target = inner.get_attribute("id")
    assert not inner.is_visible()
    visit.page.evaluate("id => { window.location.hash = id; }", target)
    inner.wait_for(state="visible", timeout=5_000)
    assert not visit.errors, visit.errors


def test_reproducibility_code_is_hidden_until_asked_for(visit):
    visit.open("book/part1_chapter6/6_1_parallel_attention.html")
    section = visit.page.locator("section#reproducibility")
    assert section.is_visible()
    section.locator("details.nextword-fold > summary").click()  # the folded section, then its cell
    hidden = section.locator("div.cell.tag_hide-cell")
    assert hidden.count() >= 1
    code = hidden.first.locator(".cell_input")
    assert not code.is_visible(), "the Reproducibility code is shown unfolded"
    hidden.first.locator("summary").first.click()
    code.wait_for(state="visible", timeout=5_000)


def test_a_term_link_goes_to_its_definition(visit):
    visit.open("book/part1_chapter6/6_1_parallel_attention.html")
    link = visit.page.locator("article a[href*='glossary.html#term-']").first
    target = link.get_attribute("href").split("#", 1)[1]
    link.click()
    visit.page.wait_for_url(re.compile(r"glossary\.html#term-"), timeout=10_000)
    entry = visit.page.locator(f"dt[id='{target}']")
    assert entry.is_visible(), f"the glossary entry {target} is not shown"
    assert entry.locator("xpath=following-sibling::dd[1]").inner_text().strip()


def test_landing_page_shows_the_route_map(visit, tmp_path):
    visit.open("index.html")
    image = visit.page.locator("article img[src$='route_map.svg']")
    assert image.is_visible()
    assert visit.page.evaluate("img => img.naturalWidth", image.element_handle()) > 100
    assert image.get_attribute("alt").startswith("Route map")
    assert visit.page.locator("article h1").first.inner_text().startswith("Predicting the Next Word")
    _screenshot(visit, tmp_path / "landing.png")
    assert not visit.errors, visit.errors
