"""What the rendered book does with a page beyond Sphinx's defaults (hooks that ``book/conf.py`` connects).

**The folded audit.** A lesson ends with ``## Checking the paper`` and ``## Reproducibility``
(:data:`nextword.booktools.pages.FOLDED_SECTIONS`). In the HTML each such section's content is folded: the
section becomes ``<details class="nextword-fold"><summary><h2>…</h2></summary> … </details>`` inside its
``<section id=…>``, so the heading stays visible (and in the page's contents), the content opens on a click
or on Enter/Space (a native ``<details>``: keyboard-accessible, announced as collapsed/expanded), and a link
to the section or to anything inside it opens it (``_static/nextword.js``). The PDF keeps the sections
unfolded (the hook acts on HTML builders only).

**Produced numbers shown.** A number that training or sampling produced is printed between two invisible
U+2063 marks (:func:`nextword.booktools.display.produced`). In the HTML each such text becomes
``<span class="nextword-produced" title="…" aria-describedby="nextword-produced-note">1.03</span>``: a
dotted underline (``_static/nextword.css``), a tooltip, and for screen readers a description, given once per
page, :data:`PRODUCED_NOTE` (:func:`mark_produced`). In the PDF the marks become a visible dagger after the
text, ``1.03†`` (:func:`produced_for_print`); the reading guide explains both.

**The PDF's layout** (tables, formulas, bookmarks, links) is :mod:`nextword.booktools.print_layout`.

>>> from docutils.core import publish_doctree
>>> rst = "Title\\n=====\\n\\nLesson\\n------\\n\\ntext\\n\\nReproducibility\\n---------------\\n\\nseed 0\\n"
>>> doc = publish_doctree(rst, settings_overrides={"doctitle_xform": False})
>>> [s["names"][0] for s in fold_sections(doc)]
['reproducibility']
>>> [type(n).__name__ for n in doc[0][-1]]  # the section: raw <details><summary>, title, raw </summary>, ...
['raw', 'title', 'raw', 'paragraph', 'raw']
"""

from __future__ import annotations

import re
from html import escape

from docutils import nodes

from nextword.booktools.display import MARK
from nextword.booktools.pages import FOLDED_SECTIONS

__all__ = [
    "FOLD_OPEN",
    "PRODUCED_NOTE",
    "fold_audit_sections",
    "fold_sections",
    "mark_produced",
    "mark_produced_numbers",
    "produced_for_print",
]

#: The HTML put before a folded section's heading, and after it (the heading is the ``<summary>``).
FOLD_OPEN = '<details class="nextword-fold"><summary>'
FOLD_SUMMARY_END = '<span class="nextword-fold-hint" aria-hidden="true">folded: select to open</span></summary>'
FOLD_CLOSE = "</details>"


def _second_level(section: nodes.section) -> bool:
    """A ``##`` section: one section above it, then the document (a page's H1 is its title section)."""
    parent = section.parent
    return isinstance(parent, nodes.section) and isinstance(parent.parent, nodes.document)


def fold_sections(doctree: nodes.document) -> list[nodes.section]:
    """Wrap the content of every ``##`` section whose title starts with one of :data:`FOLDED_SECTIONS` in
    raw HTML ``<details>`` / ``<summary>`` (the title stays the section's heading). Returns the sections."""
    folded = []
    for section in list(doctree.findall(nodes.section)):
        if not section.children or not isinstance(section[0], nodes.title) or not _second_level(section):
            continue
        if not section[0].astext().strip().startswith(FOLDED_SECTIONS):
            continue
        section.insert(0, nodes.raw("", FOLD_OPEN, format="html"))
        section.insert(2, nodes.raw("", FOLD_SUMMARY_END, format="html"))
        section.append(nodes.raw("", FOLD_CLOSE, format="html"))
        section["classes"].append("nextword-folded")
        folded.append(section)
    return folded


def fold_audit_sections(app, doctree: nodes.document, docname: str) -> None:
    """Sphinx ``doctree-resolved`` hook: :func:`fold_sections` for HTML builders (the PDF stays unfolded)."""
    if app.builder.format == "html":
        fold_sections(doctree)


# --- produced numbers, visible ------------------------------------------------------------------------------
#: What a marked number is, said once per page (the tooltip and the screen readers' description).
PRODUCED_NOTE = "Produced by training or sampling: it varies with the seed and the CPU; the page asserts its claim."
_PRODUCED = re.compile(f"{MARK}([^{MARK}<>]*){MARK}")
_TAG = re.compile(r"(<[^>]*>)")


def mark_produced(html: str) -> str:
    """Wrap every produced text of an HTML fragment in its ``<span class="nextword-produced">`` and add the
    page's description element once (only text between tags is touched, never an attribute).

    >>> out = mark_produced(f"<pre>loss {MARK}0.66{MARK} nats</pre>")
    >>> out.split("</pre>")[0]
    '<pre>loss <span class="nextword-produced" title="Produced by training or sampling: it varies with the seed and the CPU; the page asserts its claim." aria-describedby="nextword-produced-note">0.66</span> nats'
    >>> mark_produced("<p>no numbers</p>")
    '<p>no numbers</p>'
    """
    if MARK not in html:
        return html
    title = escape(PRODUCED_NOTE, quote=True)
    span = f'<span class="nextword-produced" title="{title}" aria-describedby="nextword-produced-note">'
    pieces = _TAG.split(html)
    changed = False
    for n in range(0, len(pieces), 2):  # text between tags
        new = _PRODUCED.sub(lambda m: f"{span}{m[1]}</span>", pieces[n])
        changed = changed or new != pieces[n]
        pieces[n] = new
    if not changed:
        return html
    note = f'<span id="nextword-produced-note" hidden>{escape(PRODUCED_NOTE)}</span>'
    return "".join(pieces) + note


def mark_produced_numbers(app, pagename: str, templatename: str, context: dict, doctree) -> None:
    """Sphinx ``html-page-context`` hook: :func:`mark_produced` on the page's body."""
    if "body" in context:
        context["body"] = mark_produced(context["body"])


def produced_for_print(text: str) -> str:
    """The PDF's form of a text with produced numbers: the marks dropped, a dagger after each produced text.

    >>> produced_for_print(f"loss {MARK}0.66{MARK} nats")
    'loss 0.66† nats'
    """
    return _PRODUCED.sub(lambda m: f"{m[1]}\u2020", text).replace(MARK, "")
