"""The book's table of contents: book/README.md links every notebook, and the Sphinx source tree that
``stage_book`` lays out reaches every notebook of book/, exercises/ and solutions/ from its toctrees,
in the README's order, with the glossary, errata ledger, notation and bibliography pages, and the landing
page (book/index.md) with its route map and reading times. (The rendered HTML is
checked in a browser by tests/test_book_browser.py.)"""

import re
from pathlib import Path

import pytest

from nextword.booktools import notebooks

ROOT = Path(notebooks.REPO_ROOT)
BOOK = ROOT / "book"
_TOCTREE = re.compile(r"```\{toctree\}\n(.*?)```", re.S)


def _toctree_entries(page: Path) -> list[str]:
    """Entries of every toctree in a staged markdown page, as docnames relative to the stage root."""
    entries = []
    for block in _TOCTREE.findall(page.read_text(encoding="utf-8")):
        for line in block.splitlines():
            if line.strip() and not line.startswith(":"):
                entries.append(line.strip())
    return entries


def _reachable(stage: Path) -> list[str]:
    """Docnames reachable from index.md through toctrees, depth first, in order."""
    seen, todo = [], ["index"]
    while todo:
        doc = todo.pop(0)
        if doc in seen:
            continue
        seen.append(doc)
        page = stage / f"{doc}.md"
        if page.exists():
            folder = str(Path(doc).parent).replace("\\", "/")
            todo[:0] = [e if folder == "." else f"{folder}/{e}" for e in _toctree_entries(page)]
    return seen


@pytest.fixture(scope="module")
def stage(tmp_path_factory) -> Path:
    stage = tmp_path_factory.mktemp("book_src")
    notebooks.stage_book(stage)
    return stage


def test_every_book_notebook_is_in_the_table_of_contents():
    linked = set(notebooks.toc_order())
    present = {f"{p.parent.name}/{p.stem}" for p in notebooks.notebook_sources(dirs=("book",))}
    assert not present - linked, f"add to book/README.md: {sorted(present - linked)}"


def test_every_table_of_contents_link_exists():
    missing = [key for key in notebooks.toc_order() if not (BOOK / f"{key}.py").exists()]
    assert not missing, f"book/README.md links notebooks that do not exist: {missing}"


def test_every_notebook_is_reachable_from_the_book_contents(stage):
    reachable = set(_reachable(stage))
    notebooks_present = {
        str(p.relative_to(ROOT).with_suffix("")).replace("\\", "/")
        for d in ("book", "exercises", "solutions")
        for p in (ROOT / d).glob("*/*.ipynb")
    }
    assert len(notebooks_present) > 50
    assert not notebooks_present - reachable, f"not in the book's contents: {sorted(notebooks_present - reachable)}"
    assert {"glossary", "errata", "notation", "bibliography", "exercises/index"} <= reachable
    staged = {
        str(p.relative_to(stage).with_suffix("")).replace("\\", "/")
        for p in stage.rglob("*")
        if p.suffix in (".md", ".ipynb")
    }
    assert staged == reachable, f"pages no toctree reaches (Sphinx would warn): {sorted(staged - reachable)}"


def test_book_parts_follow_the_readme_order(stage):
    reachable = _reachable(stage)
    in_book = [d.removeprefix("book/") for d in reachable if d.startswith("book/")]
    linked = [key for key in notebooks.toc_order() if key in in_book]
    assert [d for d in in_book if d in linked] == linked
    captions = [caption for caption, _ in notebooks.book_structure()]
    index = (stage / "index.md").read_text(encoding="utf-8")
    assert [index.index(f":caption: {c}") for c in captions] == sorted(index.index(f":caption: {c}") for c in captions)
    assert captions[0].startswith("Part 0") and all(f"Part {i}" in c for i, c in enumerate(captions[:6]))


def test_every_exercise_has_its_solution_page(stage):
    exercises = {p.relative_to(stage / "exercises") for p in (stage / "exercises").glob("*/*.ipynb")}
    solutions = {p.relative_to(stage / "solutions") for p in (stage / "solutions").glob("*/*.ipynb")}
    assert exercises and exercises == solutions
    for ipynb in (stage / "exercises").glob("*/*.ipynb"):
        assert ipynb.with_suffix(".py").exists(), f"{ipynb.name}: its .py source is not staged for the page link"


def test_errata_page_links_every_evidence_notebook(stage):
    errata = (stage / "errata.md").read_text(encoding="utf-8")
    mentioned = set(
        re.findall(
            r"(?<![\w/])(book/part\w+/\w+)(?:\.ipynb|\.py)?(?![\w/])", (BOOK / "ERRATA.md").read_text(encoding="utf-8")
        )
    )
    assert mentioned, "the ledger names no evidence notebook"
    for key in mentioned:
        assert f"]({key}.ipynb)" in errata, f"errata page does not link {key} to its rendered page"
    assert errata.count("\n| ") == (BOOK / "ERRATA.md").read_text(encoding="utf-8").count("\n| ")


def test_notation_page_is_the_appendix_section(stage):
    import nbformat

    nb = nbformat.read(stage / "notation.ipynb", as_version=4)
    assert nb.cells[0].source.startswith("# Notation concordance")
    assert any("| object |" in c.source for c in nb.cells if c.cell_type == "markdown")
    assert all(c.source.lstrip()[:3] != "## " for c in nb.cells[1:] if c.cell_type == "markdown")


def test_notation_page_links_resolve_from_the_book_root(stage):
    """The notation page sits at the root, Appendix A in book/partA_appendix/: the appendix's relative
    links (``../part1_chapter6/...``) are rewritten so that they still reach their pages."""
    import nbformat

    nb = nbformat.read(stage / "notation.ipynb", as_version=4)
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "](../" not in text
    for target in re.findall(r"\]\((book/part[^)#\s]*\.ipynb)", text):
        assert (stage / target).exists() or (ROOT / target).exists(), target


def test_landing_page_is_book_index_with_route_map_and_reading_times(stage):
    index = (stage / "index.md").read_text(encoding="utf-8")
    assert index.startswith((BOOK / "index.md").read_text(encoding="utf-8").split("\n", 1)[0])
    assert "table of contents (for contributors)" not in index, "the contributors' README is not the front door"
    assert "route_map.svg" in index and (stage / "route_map.svg").read_text(encoding="utf-8").startswith("<?xml")
    for _, docs in notebooks.book_structure():
        for doc in docs:
            assert f"]({doc}.ipynb) |" in index, f"{doc} has no row in the reading-times table"
    assert (stage / "glossary.md").read_bytes() == (BOOK / "glossary.md").read_bytes()


def test_staging_is_incremental_and_removes_stale_pages(stage):
    index = stage / "index.md"
    before = index.stat().st_mtime_ns
    (stage / "book" / "gone.md").write_text("# a page whose source was deleted\n")
    notebooks.stage_book(stage)
    assert not (stage / "book" / "gone.md").exists()
    assert index.stat().st_mtime_ns == before, "an unchanged page was rewritten (Sphinx would rebuild it)"


def test_book_structure_orders_by_readme_and_appends_unlisted(tmp_path):
    (tmp_path / "book" / "partA").mkdir(parents=True)
    (tmp_path / "book" / "partB").mkdir()
    for name in ("partA/two", "partA/one", "partA/extra", "partB/x"):
        (tmp_path / "book" / f"{name}.ipynb").write_text("{}")
    (tmp_path / "book" / "README.md").write_text(
        "## Part B — second\n- [x](partB/x.py)\n## Part A — first?\n- [2](partA/two.py)\n- [1](partA/one.py)\n"
    )
    assert notebooks.book_structure(tmp_path) == [
        ("Part B — second", ["book/partB/x"]),
        ("Part A — first?", ["book/partA/two", "book/partA/one", "book/partA/extra"]),
    ]


def test_render_rejects_a_bad_job_count():
    with pytest.raises(ValueError, match="jobs"):
        notebooks.render_book(jobs=0)


def test_errata_ledger_rows_have_five_columns_and_evidence():
    rows = [
        line
        for line in (BOOK / "ERRATA.md").read_text().splitlines()
        if line.startswith("| ") and not line.startswith("| source")
    ]
    assert rows, "the ledger has no rows"
    for row in rows:
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", row.strip())[1:-1]]
        assert len(cells) == 5, f"row has {len(cells)} columns (escape '|' as '\\|'): {row[:80]}"
        assert all(cells), f"empty column in: {row[:80]}"
        assert "book/" in cells[4] or "tests/" in cells[4], f"evidence must name a notebook or test: {row[:80]}"
        for path in re.findall(r"((?:book|tests|solutions)/[\w./-]+?)(?:\.ipynb|\.py)?(?=[\s;,:)§]|::|$)", cells[4]):
            root = BOOK.parent
            assert any((root / f"{path}{ext}").exists() for ext in ("", ".ipynb", ".py")), f"no such evidence: {path}"


def test_links_to_the_back_matter_land_on_its_pages(stage):
    """A page links the ledger as the repository has it (``../ERRATA.md``); in the rendered book the ledger is the
    page ``errata`` at the root, so the staged copies point there and every such link resolves to a staged file."""
    link = re.compile(r"\]\(((?:\.\./)+[\w/]*(?:ERRATA|BIBLIOGRAPHY|glossary|course_pack|errata|bibliography)\.md)")
    checked = 0
    for page in stage.rglob("*.ipynb"):
        for target in link.findall(page.read_text(encoding="utf-8")):
            assert (page.parent / target).resolve().is_file(), f"{page.relative_to(stage)} links {target}"
            checked += 1
    assert checked > 0
