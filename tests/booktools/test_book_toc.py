"""book/README.md is the table of contents: it links every notebook, and every link resolves."""
from pathlib import Path

from nextword.booktools import notebooks

BOOK = Path(notebooks.REPO_ROOT) / "book"


def test_every_book_notebook_is_in_the_table_of_contents():
    linked = set(notebooks.toc_order())
    present = {f"{p.parent.name}/{p.stem}" for p in notebooks.notebook_sources(dirs=("book",))}
    assert not present - linked, f"add to book/README.md: {sorted(present - linked)}"


def test_every_table_of_contents_link_exists():
    missing = [key for key in notebooks.toc_order() if not (BOOK / f"{key}.py").exists()]
    assert not missing, f"book/README.md links notebooks that do not exist: {missing}"


def test_render_writes_an_index_linking_every_notebook(tmp_path):
    index = notebooks.render_book(tmp_path, dirs=("book",))
    text = index.read_text()
    for key in notebooks.toc_order():
        if (BOOK / f"{key}.ipynb").exists():
            assert f'href="book/{key}.html"' in text
            assert (tmp_path / "book" / f"{key}.html").exists()
    assert (tmp_path / "mathjax" / "MathJax.js").exists(), "MathJax must be bundled for offline reading"


def test_errata_ledger_rows_have_five_columns_and_evidence():
    import re

    rows = [line for line in (BOOK / "ERRATA.md").read_text().splitlines()
            if line.startswith("| ") and not line.startswith("| source")]
    assert rows, "the ledger has no rows"
    for row in rows:
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", row.strip())[1:-1]]
        assert len(cells) == 5, f"row has {len(cells)} columns (escape '|' as '\\|'): {row[:80]}"
        assert all(cells), f"empty column in: {row[:80]}"
        assert "book/" in cells[4] or "tests/" in cells[4], f"evidence must name a notebook or test: {row[:80]}"
        for path in re.findall(r"((?:book|tests|solutions)/[\w./-]+?)(?:\.ipynb|\.py)?(?=[\s;,:)§]|::|$)", cells[4]):
            root = BOOK.parent
            assert any((root / f"{path}{ext}").exists() for ext in ("", ".ipynb", ".py")), f"no such evidence: {path}"
