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
        "- {source: '000', location: f, claim: c, verdict: partly-checked, page: book/p/n.ipynb, anchor: '## Here'}\n"
        "- {source: '000', location: g, claim: c, verdict: partly-checked, why: the printed part only}\n"
        "- {source: '000', location: h, claim: c, verdict: partly-checked, why: w, page: book/p/n.ipynb,"
        " anchor: '## Here'}\n"
    )
    bad = coverage.problems(tmp_path)
    assert len(bad) == 5 and "'## Gone'" in bad[0] and "§2" in bad[1] and "says why" in bad[2], bad
    assert "row 5" in bad[3] and "says why" in bad[3]  # a partly-checked row says what is not checked
    assert "row 6" in bad[4] and "names its page and anchor" in bad[4]


def test_coverage_page_is_staged_next_to_the_errata(tmp_path):
    notebooks.stage_book(tmp_path)
    page = (tmp_path / "coverage.md").read_text(encoding="utf-8")
    assert page.startswith("# Coverage map")
    assert page.count("\n## ") == 5
    index = (tmp_path / "index.md").read_text(encoding="utf-8")
    assert "errata\ncoverage\n" in index


# --- every row's link lands on the section that checks its item (issue 45 #14) ---------------------------
EXEMPTIONS = Path(__file__).with_name("coverage_exemptions.txt")


def _listed() -> set[str]:
    lines = EXEMPTIONS.read_text(encoding="utf-8").splitlines()
    return {line.strip() for line in lines if line.strip() and not line.startswith("#")}


def test_every_rows_anchor_lands_on_a_section_that_names_its_item():
    """The rule (``coverage.anchor_problems``): the row's location names an item ("Eq. (23)", "Figure 6.7",
    "Lemma B.3", "§7.2", "Table 1"); the anchor's section — its heading down to the next heading of that level
    or above, markdown and code — names it too, by name, in a list or range of names ("Eqs. (21)–(24)"), or,
    for an equation, by its number in parentheses. Rows whose location names no item are not judged."""
    listed = _listed()
    failing = dict(coverage.anchor_problems(ROOT))
    new = {key: why for key, why in failing.items() if key not in listed}
    assert not new, "coverage rows whose anchor misses their item:\n" + "\n".join(f"{k}: {v}" for k, v in new.items())
    fixed = sorted(listed - set(failing))
    assert not fixed, f"these rows pass now: delete their lines from {EXEMPTIONS.name}:\n" + "\n".join(fixed)


def test_the_anchor_rule_catches_a_row_pointing_at_the_wrong_section(tmp_path):
    (tmp_path / "book" / "p").mkdir(parents=True)
    page = "# %% [markdown]\n# # 9.1 A page\n# ## Figs. 6.5–6.8, step by step\n# text\n# ## Fig. 6.10\n# more\n"
    (tmp_path / "book" / "p" / "n.py").write_text(page)
    (tmp_path / "book" / "p" / "n.ipynb").write_text("{}")
    (tmp_path / "book" / "ERRATA.md").write_text(
        "| source | location | claim | found | evidence |\n|---|---|---|---|---|\n"
    )
    (tmp_path / "book" / "coverage.yaml").write_text(
        "sources: {'002': S}\nitems:\n"
        "- {source: '002', location: Figure 6.6 (6.2), claim: c, verdict: checked, page: book/p/n.ipynb,"
        " anchor: '## Figs. 6.5–6.8, step by step'}\n"
        "- {source: '002', location: Figure 6.7 (6.2), claim: c, verdict: checked, page: book/p/n.ipynb,"
        " anchor: '## Fig. 6.10'}\n"
        "- {source: '002', location: 'Remark in §2.1', claim: c, verdict: checked, page: book/p/n.ipynb,"
        " anchor: '## Fig. 6.10'}\n"
    )
    assert coverage.anchor_problems(tmp_path) == [
        ("002 | Figure 6.7 (6.2)", "the section '## Fig. 6.10' of book/p/n.ipynb does not name Figure 6.7")
    ]
    assert coverage.names_item("Eqs. (21)–(24) and (5.3a–d)", "Eq", "23")
    assert coverage.names_item("the block (5.3a–d)", "Eq", "5.3a") and not coverage.names_item("Eq. (23)", "Eq", "2")
