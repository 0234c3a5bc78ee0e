"""Every number on the page is produced (issue 16).

A number in a notebook's markdown, or in the "what the code found" column of ``book/ERRATA.md``, must be

1. **printed** by a code cell of that notebook (its stored ``.ipynb`` outputs; for a ledger row, the
   outputs of its evidence notebooks), at the precision of the prose (``0.006`` matches a printed
   ``0.0061``), or set in a code cell of that notebook (a configuration value the reader sees in code;
   not a number in a comment, nor the bound of an ``assert``: :func:`set_in_code`);
2. for a ledger row only, **read from a saved result** its evidence notebook loads (``load_result("name")``:
   any value in that ``book/results/name/result.json``, at the prose's precision). A page's prose must
   have its produced numbers printed on the page: the reader cannot see a value of a file; or
3. **quoted from a source with its location**: the sentence names a place in a source (``Table 1``,
   ``Fig. 6.28``, ``Eq. (33)``, ``§7.2``, ``App. C.1``, ``Theorem 2``, "the paper reports" …). The book's
   own figures and tables, numbered by page ("Figure 4.7.2", "Table 3.3.1"), are not sources: a caption's
   numbers are the book's results and must be printed.

Allowed without evidence (the explicit allowlist): integers 0–10 (counts such as "2 layers" read the same
as "two layers"); years 1900–2099; numbers that name something (after Eq./Fig./Table/§/Section/Exercise/
Theorem/Part/Chapter/… or inside "(33)"-style equation references and "[63]" citations, and a page
number opening a link's text, "[6.3 Causal masking](…)"); run-time estimates
("about 20 s", "18 minutes"); integers inside LaTeX (formula
constants and indices; decimals inside LaTeX are checked); numbers inside inline code; digits that are
part of a word or a file name (``ex07``, ``L_train``).

Notebooks owned by other engineers that still violate the rule are listed in ``KNOWN_VIOLATIONS`` and
marked ``xfail(strict=False)``; the list shrinks as they are fixed. ``python tests/test_prose_numbers.py``
prints every violation.
"""

from __future__ import annotations

import json
import sys

import pytest

from nextword.booktools.prose_numbers import (
    BOOK,
    ROOT,
    evidence,
    ledger_rows,
    ledger_violations,
    numbers,
    percent_cells,
    prose_violations,
    set_in_code,
)

# The pages' prose is checked by the ``numbers`` page check (``nextword.booktools.checks.numbers``, run on every
# page by test_pagecheck.py; pages still to fix are under [numbers] in page_exemptions.toml). This module checks
# the ledger and the scanner itself.

#: Ledger rows (by the start of their "location" column) whose evidence does not yet print every number of the
#: "found" column (owned by the page writers and the sources helper); a listed row that passes fails the test.
KNOWN_LEDGER_VIOLATIONS: set[str] = set()


def _known(ident: str) -> bool:
    return any(ident.split(" | ", 1)[1].startswith(k[:40]) for k in KNOWN_LEDGER_VIOLATIONS)


@pytest.mark.parametrize("row", [pytest.param(r, id=r[0]) for r in ledger_rows()])
def test_ledger_numbers_are_produced(row):
    ident, found, files = row
    assert files, f"ledger row {ident!r} names no evidence notebook"
    bad = ledger_violations(found, files)
    if _known(ident):
        assert bad, f"ledger row {ident!r} passes now: remove it from KNOWN_LEDGER_VIOLATIONS"
    else:
        assert not bad, f"ledger row {ident!r}: numbers that its evidence {files} does not produce: {bad}"


def test_known_ledger_violations_name_existing_rows():
    locations = [ident.split(" | ", 1)[1] for ident, _, _ in ledger_rows()]
    assert all(any(loc.startswith(k[:40]) for loc in locations) for k in KNOWN_LEDGER_VIOLATIONS)


def test_scanner_flags_typed_numbers_and_allows_produced_ones():
    assert prose_violations("The run gave a loss of 1.9112 after 1200 steps.", ()) == ["1.9112", "1200"]
    assert prose_violations("The run gave a loss of 1.91 after 1200 steps.", (1.9112, 1200.0)) == []
    assert prose_violations("Table 1 of the paper reports 2.1.", ()) == []
    assert prose_violations("See Eq. (33) and §7.2; we use two layers, 3 seeds, in 2022.", ()) == []
    assert prose_violations("the entropy $H=1.8833$ with $x_{t+1}$", ()) == ["1.8833"]
    assert prose_violations("| 0 | 1.9112 | 1.9102 |", ()) == ["1.9112", "1.9102"]


def test_the_gaps_that_let_issue_45s_numbers_through_are_closed():
    """Issue 45 #15: a number after a comma, "and", "to" or a minus sign was taken for the continuation of a
    list of places ("Eqs. 3, 4"), and a source place anywhere in a sentence exempted all its numbers."""
    # 3.1's answer: -0.1888 after "= -" (read as a range "3-5" before)
    assert prose_violations("and $\\mathbb E[b] = -0.1888$.", ()) == ["0.1888"]
    # the Fig. 3.2 ledger row: "Fig. 3.3" in the sentence quoted every number of it
    row = "the 613/4000 exclusions of Fig. 3.3 are confirmed: P = 0.1548 (95% CI [0.1545, 0.1552])"
    assert prose_violations(row, (95.0,)) == ["0.1548", "0.1545", "0.1552"]
    assert prose_violations(row, (95.0, 0.15483, 0.15451, 0.15517)) == []
    # lists of places still name places; lists of values do not
    assert prose_violations("Figs. 6.5, 6.6 and 6.8 and Eqs. (3)-(5) hold", ()) == []
    assert prose_violations("the losses 1.25, 1.5 and 2.75", ()) == ["1.25", "1.5", "2.75"]
    # a page of the book is not a result; thousands with spaces and code's 40_000 are numbers
    assert prose_violations("the previous page, 3.1, and 6.2 show it", ()) == []
    assert prose_violations("with 20 000 sequences", (20000.0,)) == []
    # "reported" or "quoted" without a place quotes nothing: the book's own run "reports" its numbers too
    assert prose_violations("our run reports a loss of 1.9112", ()) == ["1.9112"]
    assert prose_violations("the loss quoted above, 1.9112, is the last one", ()) == ["1.9112"]
    assert prose_violations("Table 2 reports a loss of 1.9112", ()) == []
    # a sentence ends at a word that merely ends like an abbreviation ("step." is not "p.", "causal." not
    # "al."): a quote in the sentence before does not reach the next one (4.7's "median of 30 timed steps")
    assert prose_violations("At the paper's size, the k16 step. The median of 30 steps.", ()) == ["30"]
    assert prose_violations("It is causal. It took 1200 steps.", ()) == ["1200"]
    assert prose_violations("As in Vaswani et al. 512 is their width.", ()) == []


def test_a_caption_or_the_books_own_figure_quotes_nothing():
    """A caption's numbers are the book's own results: "**Figure 4.7.2.**" or "as Figure 4.7.2 shows" used to
    count as a source place, and so did the word "caption", exempting every number of the clause."""
    assert prose_violations("**Figure 4.7.2.** The loss drops to 2.61 bits.", ()) == ["2.61"]
    assert prose_violations("The loss drops to 2.61 bits, as Figure 4.7.2 and Table 4.7.1 show.", ()) == ["2.61"]
    assert prose_violations("the caption's loss drops to 2.61 bits", ()) == ["2.61"]
    assert prose_violations("Fig. 6.28 of the chapter shows 2.61; Table 1 has 0.77", ()) == []
    assert prose_violations("the slip was noted until issue 30 was filed", ()) == []


_PAGE = """# %% [markdown]
# # 9.1 A page
#
# **Figure 9.1.1.** The loss drops to 2.61 bits.

# %%
{code}
"""


def _numbers_problems(tmp_path, name: str, code: str, printed: str) -> list[str]:
    from nextword.booktools.checks import prose
    from nextword.booktools.pages import read_page

    page = tmp_path / name / "page.py"  # one folder per case: evidence() is cached by path
    page.parent.mkdir()
    page.write_text(_PAGE.format(code=code), encoding="utf-8")
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": "..."},
        {
            "cell_type": "code",
            "metadata": {},
            "source": code,
            "execution_count": 1,
            "outputs": [{"output_type": "stream", "name": "stdout", "text": printed}],
        },
    ]
    nb = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    page.with_suffix(".ipynb").write_text(json.dumps(nb), encoding="utf-8")
    return [p.message.split(":")[0] for p in prose.check(read_page(page))]


def test_a_produced_number_must_be_printed_not_asserted_or_commented(tmp_path):
    """The caption states a produced 2.61: a comment or an assert's bound does not show it to the reader."""
    code = "bpc = train()\nassert abs(bpc - 2.61) < 0.05  # about 2.61 bits\nprint(f'bpc {bpc:.3f}')"
    assert _numbers_problems(tmp_path, "asserted", code, "bpc 2.702\n") == ["2.61"]
    assert _numbers_problems(tmp_path, "printed", code, "bpc \u20632.613\u2063\n") == []
    assert _numbers_problems(tmp_path, "set", "target = 2.61\nprint(target)", "") == []


def test_set_in_code_drops_comments_and_asserts_only():
    cell = 'STEPS = 40_000  # 2.61\nassert (x ==\n        0.75)\ntext = "# 3.5 in a string"\n%matplotlib inline'
    assert [value for _, value, _ in numbers(set_in_code(cell))] == [40000.0, 3.5]


def test_code_numbers_with_underscores_are_evidence():
    """2.8 sets ``N_CHAINS = 40_000 if FULL else 8_000`` and says "from 8,000 to 40,000"."""
    assert {8000.0, 40000.0} <= set(evidence("book/part2_formulation/08_discrete_diffusion.py"))


if __name__ == "__main__":
    for rel in sorted(p.relative_to(BOOK).as_posix() for p in BOOK.glob("*/*.py")):
        py = BOOK / rel
        vals = evidence(py.relative_to(ROOT).as_posix())
        bad = [n for kind, text in percent_cells(py) if kind == "markdown" for n in prose_violations(text, vals)]
        if bad:
            print(f"{rel}: {bad}")
    for ident, found, files in ledger_rows():
        bad = ledger_violations(found, files)
        if bad:
            print(f"ERRATA [{ident}] ({', '.join(files)}): {bad}")
    sys.exit(0)
