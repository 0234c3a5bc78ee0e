"""Every lesson of book/ has the teaching shape (book/README.md, ``nextword.booktools.teaching``): it
opens on the question it answers, with learning goals, what it builds on and a reading time; it works a
tiny example by hand; it ends with key takeaways, questions with folded answers, and a Reproducibility
section whose code is folded. Every ``{term}`` a page links has an entry in book/glossary.md.

Every page is checked by ``tests/booktools/test_pagecheck.py`` (the ``teaching`` check of
``python -m nextword.booktools.pagecheck``); pages that do not have the shape yet are listed under
``[teaching]`` in ``page_exemptions.toml``, and that test keeps the list honest. This module checks the
checker, the glossary and what the shape asks beyond the check (reading times, term links).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nextword.booktools import notebooks, pagecheck, teaching
from nextword.booktools.pages import page_kind

ROOT = Path(notebooks.REPO_ROOT)
BOOK = ROOT / "book"

#: Pages still without the teaching shape (``[teaching]`` of page_exemptions.toml).
EXEMPT: frozenset[str] = frozenset(pagecheck.exemptions().get("teaching", {}))
#: Reference pages, not lessons: they have no question to answer and no shape to keep.
REFERENCE = frozenset({"partA_appendix/A_notation_and_environment"})


def _pages() -> list[str]:
    return sorted(f"{p.parent.name}/{p.stem}" for p in notebooks.notebook_sources(dirs=("book",)))


#: A part's companion audit pages (``checking_the_paper.py``): reference pages too, with their own small shape.
COMPANIONS = frozenset(page for page in _pages() if page_kind(BOOK / f"{page}.py") == "companion")

LESSONS = [page for page in _pages() if page not in EXEMPT | REFERENCE | COMPANIONS]


def test_the_exempt_and_reference_lists_name_existing_pages():
    missing = sorted((EXEMPT | REFERENCE) - set(_pages()))
    assert not missing, f"listed pages that do not exist (renamed?): {missing}"
    assert not EXEMPT & REFERENCE
    assert {page for page in _pages() if page_kind(BOOK / f"{page}.py") == "reference"} == REFERENCE


def test_parts_0_and_1_are_lessons_or_waiting_for_their_shape():
    early = [p for p in _pages() if p.startswith(("part0", "part1"))]
    assert "part0_reading_guide/00_reading_guide" in LESSONS
    assert "part1_chapter6/6_1_parallel_attention" in LESSONS
    assert set(early) <= set(LESSONS) | EXEMPT | COMPANIONS


def test_reading_time_is_a_plausible_number_of_minutes():
    for page in LESSONS:
        minutes = teaching.reading_minutes(BOOK / f"{page}.py")
        assert minutes is not None and 5 <= minutes <= 90, f"{page}: reading time {minutes} minutes"


def _linking_files() -> list[Path]:
    return [BOOK / "index.md", *sorted(BOOK.glob("*/*.py")), *sorted((ROOT / "solutions").glob("*/*.py"))]


def test_every_linked_term_has_a_glossary_entry():
    terms = teaching.glossary_terms()
    undefined = {
        f"{path.relative_to(ROOT)}: {term}"
        for path in _linking_files()
        for term in teaching.term_uses(path.read_text(encoding="utf-8"))
        if term not in terms
    }
    assert not undefined, "add these terms to book/glossary.md:\n  " + "\n  ".join(sorted(undefined))


def test_lessons_link_their_terms_to_the_glossary():
    for page in LESSONS:
        assert teaching.term_uses((BOOK / f"{page}.py").read_text(encoding="utf-8")), f"{page} links no term"


def test_glossary_entries_are_unique_and_defined():
    text = teaching.GLOSSARY.read_text(encoding="utf-8")
    terms = teaching.glossary_terms()
    block = text.split("```{glossary}", 1)[1].split("\n```", 1)[0]
    heads = [line.strip().lower() for line in block.splitlines() if line and not line[0].isspace()]
    heads = [h for h in heads if not h.startswith(":")]
    assert len(heads) == len(set(heads)), f"a term is defined twice: {sorted({h for h in heads if heads.count(h) > 1})}"
    assert all(len(definition.split()) >= 5 for definition in terms.values())


def test_the_checker_finds_what_a_page_misses():
    page = (BOOK / "part0_reading_guide" / "00_reading_guide.py").read_text(encoding="utf-8")
    assert teaching.shape_problems_of_text(page) == []
    no_answer = page.replace("```{dropdown} Answer", "```{note}", 1)
    assert any("have no {dropdown} Answer" in p for p in teaching.shape_problems_of_text(no_answer))
    bare_repro = page.replace('# %% tags=["hide-cell"]', "# %%")
    assert any("without the hide-cell tag" in p for p in teaching.shape_problems_of_text(bare_repro))
    no_question = page.replace("**The question.**", "**A question.**")
    assert any("The question" in p for p in teaching.shape_problems_of_text(no_question))
    six_goals = page.replace("# After this page you can\n", "# After this page you can\n# - a\n# - b\n", 1)
    assert any("Learning goals: 6 bullets" in p for p in teaching.shape_problems_of_text(six_goals))
    repro_not_last = page + "\n# %% [markdown]\n# ## Afterword\n"
    assert any("not the last section" in p for p in teaching.shape_problems_of_text(repro_not_last))


_AUDIT = '# %% [markdown]\n# ## Checking the paper\n# Eq. (3) holds.\n\n# %% tags=["hide-cell"]\nassert True\n\n'


def test_the_audit_ends_the_page_after_the_questions():
    """Key takeaways, Check your understanding, then (optional) Checking the paper, then Reproducibility, last;
    the audit's code folded too."""
    page = (BOOK / "part0_reading_guide" / "00_reading_guide.py").read_text(encoding="utf-8")
    page = page.replace("# ## Key takeaways", "# %% [markdown]\n# ## Key takeaways")  # cells of their own
    page = page.replace("# ## Reproducibility", "# %% [markdown]\n# ## Reproducibility")
    repro = page.index("# %% [markdown]\n# ## Reproducibility")
    takeaways = page.index("# %% [markdown]\n# ## Key takeaways")
    in_place = page[:repro] + _AUDIT + page[repro:]
    assert teaching.shape_problems_of_text(in_place) == []
    too_early = page[:takeaways] + _AUDIT + page[takeaways:]
    assert any("sections out of order" in p for p in teaching.shape_problems_of_text(too_early))
    bare = page[:repro] + _AUDIT.replace(' tags=["hide-cell"]', "") + page[repro:]
    assert "## Checking the paper: 1 code cell(s) without the hide-cell tag" in teaching.shape_problems_of_text(bare)
    stray = page[:repro] + "# %% [markdown]\n# ## More about the mechanism\n\n" + page[repro:]
    assert any("other than Check your understanding" in p for p in teaching.shape_problems_of_text(stray))


def test_a_companion_audit_page_is_recognised_by_its_name_and_has_a_small_shape(tmp_path):
    companion = tmp_path / "part9_example" / "checking_the_paper.py"
    companion.parent.mkdir()
    companion.write_text("# %% [markdown]\n# # Part 9: checking the paper\n", encoding="utf-8")
    assert page_kind(companion) == "companion"
    assert teaching.shape_problems(companion) == ["first cell: no link to a page of the part ((name.ipynb))"]
    companion.write_text(
        "# %% [markdown]\n# # Part 9: checking the paper\n#\n# The checks of [9.1](01_first.ipynb).\n", encoding="utf-8"
    )
    assert teaching.shape_problems(companion) == []


def test_glossary_rejects_a_term_without_definition(tmp_path):
    bad = tmp_path / "glossary.md"
    bad.write_text("# Glossary\n\n```{glossary}\n:sorted:\n\nlonely term\n```\n", encoding="utf-8")
    with pytest.raises(ValueError, match="lonely term"):
        teaching.glossary_terms(bad)
    assert teaching.term_uses("see {term}`heads <Attention head>` and {term}`softmax`") == ["attention head", "softmax"]


_OVERVIEW = """# %% [markdown]
# # Part 9 — A paper: overview
#
# **The question.** What does the paper ask?
#
# ```{admonition} Learning goals
# :class: tip
# After this part you can
# - say what it claims
# - find the page that checks it
# ```
#
# **Builds on:** [6.3](../part1_chapter6/6_3_causal_masking.ipynb) (the mask). **Reading time:** about 6 minutes.
#
# ## What the paper claims, in plain words
# - one
#
# ## What you need first
# - calculus
#
# ## The route through this part
# - [9.1 First](01_first.ipynb): asks one thing.
#
# ## What the book found
# - a slip ([errata](../ERRATA.md))
"""


def test_an_overview_page_has_its_own_shape_and_links_every_page_of_its_part():
    assert teaching.overview_problems_of_text(_OVERVIEW, ["01_first"]) == []
    assert teaching.overview_problems_of_text(_OVERVIEW, ["01_first", "02_second"]) == [
        "## The route through this part: no link to ['02_second']"
    ]
    swapped = _OVERVIEW.replace("## What you need first", "## X").replace(
        "## What the paper claims", "## What you need first"
    )
    swapped = swapped.replace("## X", "## What the paper claims")
    assert "sections out of order" in " ".join(teaching.overview_problems_of_text(swapped, ["01_first"]))
    lesson_problems = teaching.shape_problems_of_text(_OVERVIEW)
    assert "no section ## A tiny example..." in lesson_problems  # a lesson would need what an overview does not


def test_an_overviews_route_need_not_link_the_parts_companion_audit_page(tmp_path):
    part = tmp_path / "part9_example"
    part.mkdir()
    (part / "00_overview.py").write_text(_OVERVIEW, encoding="utf-8")
    (part / "01_first.py").write_text("# %% [markdown]\n# # 9.1 First\n", encoding="utf-8")
    (part / "checking_the_paper.py").write_text("# %% [markdown]\n# # Checks\n", encoding="utf-8")
    assert teaching.shape_problems(part / "00_overview.py") == []
    (part / "02_second.py").write_text("# %% [markdown]\n# # 9.2 Second\n", encoding="utf-8")
    assert teaching.shape_problems(part / "00_overview.py") == [
        "## The route through this part: no link to ['02_second']"
    ]


def test_a_glossary_term_glued_to_the_previous_definition_is_an_error(tmp_path):
    """docutils reads such a term with a warning ("glossary term must be preceded by empty line"); five entries
    of book/glossary.md once built so. The one glossary parser refuses it, so the book's own file is checked
    wherever its terms are read."""
    glossary = tmp_path / "glossary.md"
    glossary.write_text("```{glossary}\n:sorted:\n\nalpha\n  The first.\nbeta\n  The second.\n```\n")
    with pytest.raises(ValueError, match="no blank line before the term 'beta'"):
        teaching.glossary_terms(glossary)
    glossary.write_text("```{glossary}\n:sorted:\n\nalpha\n  The first.\n\nbeta\n  The second.\n```\n")
    assert teaching.glossary_terms(glossary) == {"alpha": "The first.", "beta": "The second."}
    assert teaching.glossary_terms()  # book/glossary.md itself
