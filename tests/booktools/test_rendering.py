"""The rendering hooks of book/conf.py (``nextword.booktools.rendering``) on small documents."""

from __future__ import annotations

from types import SimpleNamespace

from docutils.core import publish_doctree

from nextword.booktools import rendering

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
