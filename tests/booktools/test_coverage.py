"""The coverage map (``book/coverage.yaml``, issue 30): every ``checked`` row points at an executed page and a
heading that exists, every ``slip`` has its ledger row, and the map is rendered as a page of the book."""

from pathlib import Path

from nextword.booktools import coverage, notebooks

ROOT = Path(notebooks.REPO_ROOT)


def test_coverage_map_rows_keep_their_promises():
    bad = coverage.problems(ROOT)
    assert not bad, "\n".join(bad[:40])


def test_coverage_map_counts_per_source():
    table = coverage.counts(ROOT)
    for key, c in table.items():
        print(key, {v: c[v] for v in ("items", *coverage.VERDICTS)})
    assert set(table) == {"000", "001", "002", "003", "004"}
    assert all(c["items"] > 0 for c in table.values())
    assert sum(c["items"] for c in table.values()) == len(coverage.load_map(ROOT)["items"])


def test_problems_flags_a_missing_heading_and_a_slip_without_ledger(tmp_path):
    (tmp_path / "book" / "p").mkdir(parents=True)
    (tmp_path / "book" / "p" / "n.ipynb").write_text(
        '{"cells": [{"cell_type": "markdown", "source": "## Here\\ntext", "metadata": {}}]}'
    )
    (tmp_path / "book" / "ERRATA.md").write_text(
        "| source | location | claim | found | evidence |\n|---|---|---|---|---|\n| S | §1 | c | f | book/p/n.ipynb |\n"
    )
    (tmp_path / "book" / "coverage.yaml").write_text(
        "sources: {'000': S}\nitems:\n"
        "- {source: '000', location: a, claim: c, verdict: checked, page: book/p/n.ipynb, anchor: '## Here'}\n"
        "- {source: '000', location: b, claim: c, verdict: checked, page: book/p/n.ipynb, anchor: '## Gone'}\n"
        "- {source: '000', location: c, claim: c, verdict: slip, why: w, ledger: '§1'}\n"
        "- {source: '000', location: d, claim: c, verdict: slip, why: w, ledger: '§2'}\n"
        "- {source: '000', location: e, claim: c, verdict: out-of-scope}\n"
    )
    bad = coverage.problems(tmp_path)
    assert len(bad) == 3 and "'## Gone'" in bad[0] and "§2" in bad[1] and "says why" in bad[2]


def test_coverage_page_is_staged_next_to_the_errata(tmp_path):
    notebooks.stage_book(tmp_path)
    page = (tmp_path / "coverage.md").read_text(encoding="utf-8")
    assert page.startswith("# Coverage map")
    assert page.count("\n## ") == 5
    index = (tmp_path / "index.md").read_text(encoding="utf-8")
    assert "errata\ncoverage\n" in index
