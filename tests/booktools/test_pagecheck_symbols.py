"""The symbols check (``nextword.booktools.checks.symbols``), what it counts as a symbol
(``texsymbols``), and the book's notation table (``nextword.booktools.notation``, ``book/notation.yaml``)."""

from __future__ import annotations

import pytest

from nextword.booktools import notation
from nextword.booktools.checks import symbols
from nextword.booktools.texsymbols import math_spans
from nextword.booktools.texsymbols import symbols as read

_PAGE = """# %% [markdown]
# # 9.1 A page
#
# ```{{admonition}} Symbols on this page
# :class: note
# | symbol | meaning | shape |
# |---|---|---|
# | $\\hat y$ | the prediction | $(\\lvert\\mathcal V\\rvert,)$ |
# | $u_i$, $\\beta$ | the upstream gradient; a scale | $(d_v,)$ |
# {extra_row}
# ```
#
# ## A tiny example by hand
# {maths}
"""


def _problems(maths: str, extra_row: str = "", path: str = "book/part9_x/page.py") -> list[str]:
    from nextword.booktools.pages import parse_page

    page = parse_page(_PAGE.format(maths=maths, extra_row=extra_row), path)
    return [p.message for p in symbols.check(page)]


def test_what_counts_as_a_symbol():
    keys = [s.key for s in read(r"\mathbf e[i] W^Q + \boldsymbol{q}_i^\top k_j = \hat{y}_t, \tilde x, \bar x")]
    assert keys == ["e", "i", "W^{Q}", "q_{i}", "k_{j}", "\\hat{y}_{t}", "\\tilde{x}", "\\bar{x}"]
    assert [s.key for s in read(r"d_{\text{model}} = h\, d_k,\ W^{\mathrm{out}}, A^{-1} x^2 W^T")] == [
        "d_{\\text{model}}",
        "h",
        "d_{k}",
        "W^{\\mathrm{out}}",
        "A",
        "x",
        "W",
    ]
    ignored = r"\log\exp(3.5) + \operatorname{Var}(\cdot) + \mathrm{softmax} + \text{loss} + \mathbb R^{n} + e^{2} + \nabla\infty"
    assert [s.key for s in read(ignored)] == ["n"]  # the exponent's n is maths
    assert [s.key for s in read(r"softmax(QK^\top) \mathcal Z \mathsf{P}")] == ["Q", "K", "\\mathcal{Z}", "\\mathsf{P}"]
    assert math_spans("cost `$x$` and $y$; $$z$$ and\n```{math}\nw\n```") == [(16, "y"), (22, "z"), (40, "w\n")]


def test_a_symbol_in_neither_box_nor_table_is_flagged_once_with_its_first_line():
    assert _problems(r"$q[i]\cdot k[j]/\sqrt{d_k}$, $\hat y = u_i\beta$ and $\alpha[i,j]$.") == []
    found = _problems(r"$\gamma_t = \gamma_{t-1} + \rho$" + "\n# and $\\gamma$ again")
    assert found == [
        "$\\gamma$ (as $\\gamma$, $\\gamma_{t-1}$, $\\gamma_{t}$; 3 use(s)) is in neither the page's symbols box nor "
        "book/notation.yaml",
        "$\\rho$ (as $\\rho$; 1 use(s)) is in neither the page's symbols box nor book/notation.yaml",
    ]


def test_decorations_make_another_symbol_but_bold_does_not():
    assert _problems(r"$\mathbf{\hat y}$ and $\boldsymbol\beta$") == []
    assert _problems(r"$\tilde y$") == [
        "$\\tilde{y}$ (as $\\tilde{y}$; 1 use(s)) is in neither the page's symbols box nor book/notation.yaml"
    ]
    assert _problems(r"$\hat z$")[0].startswith("$\\hat{z}$")


def test_a_declared_name_superscript_or_subscript_covers_only_itself():
    assert _problems("$W^Q$, $W^K$") == []  # in the table
    assert _problems("$W^{R}$")  # another matrix: the table's W^Q does not cover it
    assert _problems("$u$, $u_j$")[0].startswith("$u$ (as $u$, $u_{j}$")  # the box declares u_i only


def test_the_box_may_not_give_a_symbol_two_meanings():
    assert _problems("$\\beta$", extra_row="| $\\beta$ | an inverse temperature | scalar |") == [
        "the symbols box gives $\\beta$ two meanings: 'the upstream gradient; a scale' and 'an inverse temperature'"
    ]
    assert _problems("$x$", extra_row="| no maths here | a row | |") == [
        "a row of the symbols box declares no symbol: | no maths here | a row | |"
    ]


def test_the_paper_box_declares_the_papers_symbols():
    paper = "\n# ```{admonition} In the paper's notation\n# The paper writes $W_Q x_t$ for $q[t]$.\n# ```\n# $W_Q$"
    assert _problems("$W_Q$") != [] and _problems(paper) == []


def test_a_lesson_needs_a_box_and_companions_are_not_checked():
    from nextword.booktools.pages import parse_page

    bare = parse_page("# %% [markdown]\n# # 9.1 A page\n# $x$\n", "book/part9_x/page.py")
    assert [p.message for p in symbols.check(bare)] == ["no 'Symbols on this page' box in the first cell"]
    companion = parse_page("# %% [markdown]\n# # Checks\n# $\\gamma$\n", "book/part9_x/checking_the_paper.py")
    assert symbols.check(companion) == []


def test_the_notation_table_is_well_formed_and_appendix_a_shows_it():
    entries = notation.load_notation()
    keys = [s.key for s in notation.declared_symbols()]
    for wanted in (
        "e",
        "q",
        "k",
        "v",
        "W^{Q}",
        "W^{K}",
        "W^{V}",
        "d_{\\text{model}}",
        "d_{k}",
        "h",
        "T",
        "V",
        "\\alpha",
    ):
        assert wanted in keys, f"book/notation.yaml lacks {wanted}"
    assert len(entries) == len(keys)
    assert notation.appendix_problems() == []


def test_the_notation_table_refuses_a_symbol_listed_twice_or_a_missing_field(tmp_path):
    table = tmp_path / "notation.yaml"
    table.write_text(
        "symbols:\n  - {symbol: 'q[i]', meaning: query, shape: x, used: y}\n  - {symbol: q, meaning: other, shape: x, used: y}\n"
    )
    with pytest.raises(ValueError, match="listed twice"):
        notation.load_notation(table)
    table.write_text("symbols:\n  - {symbol: 'q[i]', meaning: query, used: y}\n")
    with pytest.raises(ValueError, match="has no \\['shape'\\]"):
        notation.load_notation(table)


def test_appendix_a_out_of_date_is_caught(tmp_path):
    appendix = tmp_path / "A.py"
    appendix.write_text(notation.APPENDIX.read_text(encoding="utf-8").replace("| $T$ |", "| $T_0$ |"), encoding="utf-8")
    assert notation.appendix_problems(appendix) != []
    assert notation.write_appendix(appendix) and notation.appendix_problems(appendix) == []
