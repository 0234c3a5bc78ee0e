"""The rendering hooks of book/conf.py (``nextword.booktools.rendering`` and ``nextword.booktools.print_layout``) on
small documents."""

from __future__ import annotations

from types import SimpleNamespace

from docutils.core import publish_doctree

from nextword.booktools import print_layout, rendering

_RST = """Title
=====

Lesson
------

text

Checking the paper
------------------

Eq. 3 holds.

Sub-check
~~~~~~~~~

more

Reproducibility notes
---------------------

seed 0
"""


def _doc():
    return publish_doctree(_RST, settings_overrides={"doctitle_xform": False, "report_level": 5})


def _app(fmt: str):
    return SimpleNamespace(builder=SimpleNamespace(format=fmt))


def test_the_audit_sections_are_folded_in_html_and_only_they():
    doc = _doc()
    rendering.fold_audit_sections(_app("html"), doc, "page")
    raw = [n.astext() for n in doc.findall(lambda n: n.tagname == "raw")]
    assert raw == [rendering.FOLD_OPEN, rendering.FOLD_SUMMARY_END, rendering.FOLD_CLOSE] * 2
    lesson, audit, repro = doc[0][1:]
    assert "nextword-folded" not in lesson["classes"] and audit["classes"] == repro["classes"] == ["nextword-folded"]
    assert [n.tagname for n in audit[:3]] == ["raw", "title", "raw"] and audit[-1].tagname == "raw"


def test_the_pdf_stays_unfolded():
    doc = _doc()
    rendering.fold_audit_sections(_app("latex"), doc, "page")
    assert not list(doc.findall(lambda n: n.tagname == "raw"))


def test_produced_numbers_are_wrapped_in_a_styled_explained_span_and_only_in_text():
    from nextword.booktools.display import MARK, produced

    html = f'<pre>loss {produced(0.6613, ".2f")} and {produced(["a", "b"])}</pre><img alt="{MARK}x{MARK}">'
    out = rendering.mark_produced(html)
    assert out.count('<span class="nextword-produced"') == 2
    assert f'alt="{MARK}x{MARK}"' in out  # an attribute is left alone
    assert out.count('id="nextword-produced-note"') == 1 and rendering.PRODUCED_NOTE in out
    assert 'aria-describedby="nextword-produced-note">0.66</span>' in out
    assert rendering.mark_produced("<p>plain</p>") == "<p>plain</p>"


def test_the_pdf_shows_a_dagger_after_a_produced_number():
    from nextword.booktools.display import MARK, produced

    assert rendering.produced_for_print(f"loss {produced(0.6613, '.2f')} nats") == "loss 0.66\u2020 nats"
    assert MARK not in rendering.produced_for_print(f"stray {MARK}")


_WIDE = """
.. list-table::
   :header-rows: 1

   * - source
     - location
     - claim
     - what the code found
     - evidence
   * - Formulation
     - §6.2, Example 6.1
     - beam search optimizes a window
     - {found}
     - tests/decoding/test_decoding.py::test_example_6_1; :math:`a_{{long/path.x}}`
"""


def _wide_doc():
    rst = _WIDE.format(found="a sliding look-ahead that commits one token per step " * 6)
    return publish_doctree(rst, settings_overrides={"report_level": 5})


def test_a_wide_table_gets_widths_from_its_text_a_smaller_type_and_breakable_paths_in_print():
    doc = _wide_doc()
    print_layout.layout_for_print(_app("latex"), doc, "errata")
    (table,) = doc.findall(lambda n: n.tagname == "table")
    assert {"longtable", "colwidths-given"} <= set(table["classes"])
    widths = [spec["colwidth"] for spec in doc.findall(lambda n: n.tagname == "colspec")]
    assert widths.index(max(widths)) == 3 and min(widths) >= 4  # the longest column is the widest
    raw = [n.astext() for n in doc.findall(lambda n: n.tagname == "raw")]
    assert raw[0] == r"\begingroup\small" and raw[-1] == r"\endgroup"
    assert raw.count(r"\allowbreak{}") == 8  # tests/ decoding/ test_ decoding. py:: test_ example_ 6_ 1; not in math
    (math,) = doc.findall(lambda n: n.tagname == "math")
    assert math.astext() == "a_{long/path.x}"


def test_the_html_keeps_its_tables():
    doc = _wide_doc()
    before = doc.pformat()
    print_layout.layout_for_print(_app("html"), doc, "errata")
    assert doc.pformat() == before


def _laid_out_for_print(rst: str, page: str):
    """The doctree of ``rst`` after the print layout of ``page``: the HTML build leaves it as it was, the LaTeX
    build turns its one table into one record; returns the doctree and that record's term and definition."""
    doc = publish_doctree(rst, settings_overrides={"report_level": 5})
    before = doc.pformat()
    print_layout.layout_for_print(_app("html"), doc, page)
    assert doc.pformat() == before
    print_layout.layout_for_print(_app("latex"), doc, page)
    assert not list(doc.findall(lambda n: n.tagname == "table"))
    (item,) = doc.findall(lambda n: n.tagname == "definition_list_item")
    term, definition = item.children
    return doc, term, definition


def test_a_ledger_of_long_rows_prints_as_records_and_the_html_keeps_its_table():
    rst = _WIDE.format(found="a sliding look-ahead that commits one token per step " * 12)
    doc, term, definition = _laid_out_for_print(rst, "errata")
    assert term.astext() == "Formulation"
    labels = [p[0].astext() for p in definition.children]
    assert labels == ["location:", "claim:", "what the code found:", "evidence:"]
    texts = definition[-1].findall(lambda n: n.tagname == "#text" and n.parent.tagname != "raw")
    evidence = "".join(n.astext() for n in texts)
    assert evidence.endswith("test_decoding.py::test_example_6_1; a_{long/path.x}")  # the path may break
    (math,) = doc.findall(lambda n: n.tagname == "math")  # the cell's formula is kept as a formula
    assert math.astext() == "a_{long/path.x}"


def test_a_heading_formula_gets_its_outline_text_in_print_only():
    rst = "Proposition 1 when :math:`w_V\\neq1`\n====================================\n\ntext :math:`w_V`\n"
    doc = publish_doctree(rst, settings_overrides={"doctitle_xform": False, "report_level": 5})
    before = doc.pformat()
    print_layout.layout_for_print(_app("html"), doc, "page")
    assert doc.pformat() == before
    print_layout.layout_for_print(_app("latex"), doc, "page")
    (raw,) = doc.findall(lambda n: n.tagname == "raw")
    assert raw.astext() == r"\texorpdfstring{\protect\(w_V\neq1\protect\)}{w\_V≠1}"
    assert [m.astext() for m in doc.findall(lambda n: n.tagname == "math")] == ["w_V"]  # the body's maths stays


def test_a_long_narrow_table_gets_widths_from_its_text_in_print():
    rows = ["   * - symbol\n     - meaning\n     - used in\n"]
    rows += [f"   * - x{i}\n     - {'the meaning of a symbol ' * 3}\n     - Part 1\n" for i in range(31)]
    doc = publish_doctree(
        ".. list-table::\n   :header-rows: 1\n\n" + "".join(rows), settings_overrides={"report_level": 5}
    )
    print_layout.layout_for_print(_app("latex"), doc, "appendix")
    (table,) = doc.findall(lambda n: n.tagname == "table")
    assert [spec["colwidth"] for spec in doc.findall(lambda n: n.tagname == "colspec")] == [10, 60, 10]
    assert {"longtable", "colwidths-given"} <= set(table["classes"])
    assert not list(doc.findall(lambda n: n.tagname == "raw"))  # the type stays normal size


def _side_by_side(columns: int) -> str:
    names = ["object", *(f"source {i}" for i in range(1, columns))]
    rows = [names, ["query", r":math:`\mathbf q[i]^\top\mathbf k[j]`", *("—" for _ in range(columns - 2))]]
    return ".. list-table::\n   :header-rows: 1\n\n" + "".join(
        "".join(f"   {'*' if i == 0 else ' '} - {cell}\n" for i, cell in enumerate(row)) for row in rows
    )


def test_a_table_of_seven_columns_prints_as_records_and_the_html_keeps_its_table():
    doc, term, definition = _laid_out_for_print(_side_by_side(7), "appendix")
    assert term.astext() == "query"
    (paragraph,) = definition.children  # short cells: one line each in one paragraph
    labels = [n.astext() for n in paragraph.children if n.tagname == "emphasis"]
    assert labels == [f"source {i}:" for i in range(1, 7)]
    assert [n.astext() for n in paragraph.children if n.tagname == "raw"] == [r"\newline "] * 5
    (math,) = doc.findall(lambda n: n.tagname == "math")  # the formula stays a formula, at full width
    assert math.astext() == r"\mathbf q[i]^\top\mathbf k[j]"


def test_a_short_table_of_six_columns_stays_a_table_in_print():
    doc = publish_doctree(_side_by_side(6), settings_overrides={"report_level": 5})
    print_layout.layout_for_print(_app("latex"), doc, "appendix")
    assert len(list(doc.findall(lambda n: n.tagname == "table"))) == 1


def test_a_link_to_the_landing_page_prints_as_text_and_the_html_keeps_it():
    from docutils import nodes

    link = nodes.reference("", "", nodes.Text("landing page"), internal=True, refuri="%index")
    doc = publish_doctree("text\n", settings_overrides={"report_level": 5})
    doc[0] += [nodes.Text(" see the "), link]
    before = doc.pformat()
    print_layout.layout_for_print(_app("html"), doc, "page")
    assert doc.pformat() == before
    print_layout.layout_for_print(_app("latex"), doc, "page")
    assert not list(doc.findall(nodes.reference)) and doc.astext() == "text see the landing page"
