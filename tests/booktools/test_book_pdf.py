"""The PDF edition (``make pdf``, ``_build/nextword.pdf``): every page of the book is in it, in order.

TeX takes minutes, so ``make test`` does not build the PDF: these tests skip when it is absent, and
``.ci/run`` builds it once (``make pdf``) and runs them with ``NEXTWORD_PDF_REQUIRED=1`` (``make test-pdf``).
"""

from __future__ import annotations

import os

import pytest

from nextword.booktools import notebooks
from nextword.booktools.display import MARK
from nextword.booktools.pdf import PDF_PATH

ROOT = notebooks.REPO_ROOT


@pytest.fixture(scope="module")
def pdf():
    if not PDF_PATH.exists():
        if os.environ.get("NEXTWORD_PDF_REQUIRED"):
            pytest.fail(f"no {PDF_PATH}: `make pdf` did not build it")
        pytest.skip(f"no {PDF_PATH} (run `make pdf`)")
    pypdf = pytest.importorskip("pypdf")
    return pypdf.PdfReader(PDF_PATH)


def _outline(reader, items=None, depth=0) -> list[tuple[int, str, int]]:
    """The PDF's bookmarks as (depth, title, page index), in order."""
    out = []
    for item in reader.outline if items is None else items:
        if isinstance(item, list):
            out += _outline(reader, item, depth + 1)
        else:
            out.append((depth, item.title, reader.get_destination_page_number(item)))
    return out


def _markdown_title(ipynb) -> str:
    import nbformat

    for cell in nbformat.read(ipynb, as_version=4).cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    raise AssertionError(f"{ipynb}: no '# ' title")


def test_outline_has_each_part_and_one_entry_per_page_in_order(pdf):
    outline = _outline(pdf)
    parts = [(title, page) for depth, title, page in outline if depth == 0]
    structure = notebooks.book_structure()
    assert [t for t, _ in parts][: len(structure)] == [caption for caption, _ in structure]
    assert parts[-1][0] == "Appendices"
    for i, (caption, docs) in enumerate(structure):
        start, stop = parts[i][1], parts[i + 1][1]
        chapters = [(t, p) for d, t, p in outline if d == 1 and start <= p < stop]
        assert len(chapters) == len(docs), f"{caption}: {len(chapters)} outline entries for {len(docs)} pages"
        for (title, _), doc in zip(chapters, docs):
            first_words = _markdown_title(ROOT / f"{doc}.ipynb").split()[:2]
            assert title.split()[:2] == [w.strip("*$") for w in first_words] or title.startswith(
                first_words[0].strip("*$")
            ), f"{doc}: outline entry {title!r}"
    appendix = [t for d, t, p in outline if d == 1 and p >= parts[-1][1]]
    assert "Errata ledger" in appendix, appendix
    assert sum(t.startswith("Exercises for") for t in appendix) == len(list((ROOT / "exercises").glob("part*")))


def test_page_count_is_plausible_and_figures_are_embedded(pdf):
    pages = len(pdf.pages)
    n_docs = sum(len(docs) for _, docs in notebooks.book_structure())
    assert 4 * n_docs <= pages <= 40 * n_docs, f"{pages} pages for {n_docs} book pages"
    images = sum(  # image XObjects on each page (read from the page's resources, not decoded)
        1
        for page in pdf.pages
        for xobject in (page.get("/Resources", {}).get("/XObject") or {}).values()
        if xobject.get_object().get("/Subtype") == "/Image"
    )
    assert images >= 50, f"only {images} images embedded: figures are missing"
    text = "".join(pdf.pages[i].extract_text() for i in range(0, pages, pages // 8))
    assert MARK not in text, "the produced-number markers (U+2063) reached the PDF"


def test_the_tex_log_has_no_missing_glyph_and_nothing_runs_far_off_the_page(pdf):
    """xelatex drops a character its font lacks ("Missing character" in the log: ⊤, ᵀ and ⪰ did before the
    preamble took them from DejaVu Sans), and an "Overfull \\hbox" far over the line is text or a table
    running off the page edge (the errata ledger had 238 before its columns were fitted)."""
    import re

    from nextword.booktools.pdf import LATEX_DIR

    if not (LATEX_DIR / "nextword.log").exists():
        pytest.skip(f"no {LATEX_DIR / 'nextword.log'}")
    log = (LATEX_DIR / "nextword.log").read_text(errors="replace")
    missing = sorted(set(re.findall(r"Missing character: There is no (\S+ \(U\+[0-9A-F]+\))", log)))
    assert not missing, f"glyphs missing from the PDF's fonts: {missing}"
    far = [float(pt) for pt in re.findall(r"Overfull \\hbox \(([\d.]+)pt too wide\)", log) if float(pt) > 40]
    assert not far, f"{len(far)} lines run more than 40pt off the page edge (largest {max(far):.0f}pt)"


def test_the_outline_keeps_the_maths_of_headings(pdf):
    """hyperref drops from a bookmark what it cannot print (a "Token not allowed in a PDF string" warning in the
    log): a heading's subscripts did, so that "Proposition 1 when \\(w_V\\neq1\\)" was bookmarked "... wV≠1"
    (``nextword.booktools.print_layout.bookmark_maths`` gives each heading's formula its Unicode text)."""
    from nextword.booktools.pdf import LATEX_DIR

    if (LATEX_DIR / "nextword.log").exists():
        log = (LATEX_DIR / "nextword.log").read_text(errors="replace")
        assert "Token not allowed in a PDF string" not in log
    titles = [title for _, title, _ in _outline(pdf)]
    assert any(title.endswith("Proposition 1 when w_V≠1") for title in titles), [t for t in titles if "Propos" in t]


def test_the_edition_note_explains_the_dagger_before_part_0(pdf):
    """A reader who opens the PDF at any part meets daggers (produced numbers) and open 'folded' sections: the
    page before Part 0 says what they are (``nextword.booktools.pdf._EDITION_NOTE``)."""
    part0 = next(page for depth, title, page in _outline(pdf) if depth == 0)
    text = "".join(pdf.pages[i].extract_text() for i in range(part0)).replace("\n", "").replace(" ", "")
    assert "Aboutthisprintededition" in text and "dagger" in text, text[-600:]  # pypdf drops some spaces


def test_appendix_a_prints_the_side_by_side_table_as_records(pdf):
    """Seven columns leave each about 9 characters of the line: Appendix A's "five sources side by side" broke its
    formulas over several lines per cell, one running into the next column
    (``nextword.booktools.print_layout.tables_as_records`` prints it as one record per object)."""
    first = next(page for depth, title, page in _outline(pdf) if depth == 1 and title.startswith("Appendix A"))
    pages = [pdf.pages[i].extract_text().replace("\n", "").replace(" ", "") for i in range(first, first + 10)]
    start = next(i for i, text in enumerate(pages) if "Thefivesourcessidebyside" in text)
    text = "".join(pages[start : start + 3])
    records = text[text.index("Thefivesourcessidebyside") :]
    assert "Ch.6(Part1):" in records and "nextwordargument:" in records, records[:600]


def test_a_continued_table_does_not_name_a_table_number_the_reader_never_saw(pdf):
    """Sphinx heads a long table's continuation "Table 44 – continued from previous page", but the book's tables
    have no captions, so no "Table 44" is printed anywhere (the preamble of ``book/conf.py`` drops the number of
    an uncaptioned table). Appendix A's notation concordance runs over several pages."""
    import re

    first = next(page for depth, title, page in _outline(pdf) if depth == 1 and title.startswith("Appendix A"))
    text = "".join(pdf.pages[i].extract_text() for i in range(first, first + 5)).replace("\n", "").replace(" ", "")
    assert "(continuedfrompreviouspage)" in text
    assert not re.search(r"Table\d+.continued", text), re.findall(r".{40}continued", text)


def test_links_print_their_page_and_the_glossary_is_an_appendix(pdf):
    """On paper a link cannot be followed: it prints its page, "6.2 (page 27)" (``latex_show_pagerefs``), except
    the links to the HTML's landing page, which the PDF does not print (``print_layout.unlink_root``); the pages'
    technical words link to the glossary, printed among the appendices (``pdf._BACK_MATTER``); an exercise's
    "Book notebook:" path links to its page (``print_layout.link_book_notebooks``)."""
    import re

    outline = _outline(pdf)
    appendices = next(page for depth, title, page in outline if depth == 0 and title == "Appendices")
    assert "Glossary" in [t for d, t, p in outline if d == 1 and p >= appendices]
    guide = next(page for depth, title, page in outline if depth == 1 and title.startswith("0 Reading guide"))
    text = "".join(pdf.pages[i].extract_text() for i in range(guide, guide + 4)).replace("\n", "").replace(" ", "")
    assert "(page" in text and "landingpage(page" not in text, text[:600]
    exercises = next(page for depth, title, page in outline if depth == 1 and title.startswith("Exercises for Part 1"))
    text = "".join(pdf.pages[i].extract_text() for i in range(exercises, exercises + 3)).replace("\n", "")
    assert re.search(r"Book\s*notebook:\s*book/part1_chapter6/\w+\s*\(page\s*\d+\)", text), text[:600]
