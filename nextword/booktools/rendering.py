"""What the rendered book does with a page beyond Sphinx's defaults (hooks that ``book/conf.py`` connects).

**The folded audit.** A lesson ends with ``## Checking the paper`` and ``## Reproducibility``
(:data:`nextword.booktools.pages.FOLDED_SECTIONS`). In the HTML each such section's content is folded: the
section becomes ``<details class="nextword-fold"><summary><h2>…</h2></summary> … </details>`` inside its
``<section id=…>``, so the heading stays visible (and in the page's contents), the content opens on a click
or on Enter/Space (a native ``<details>``: keyboard-accessible, announced as collapsed/expanded), and a link
to the section or to anything inside it opens it (``_static/nextword.js``). The PDF keeps the sections
unfolded (the hook acts on HTML builders only).

>>> from docutils.core import publish_doctree
>>> rst = "Title\\n=====\\n\\nLesson\\n------\\n\\ntext\\n\\nReproducibility\\n---------------\\n\\nseed 0\\n"
>>> doc = publish_doctree(rst, settings_overrides={"doctitle_xform": False})
>>> [s["names"][0] for s in fold_sections(doc)]
['reproducibility']
>>> [type(n).__name__ for n in doc[0][-1]]  # the section: raw <details><summary>, title, raw </summary>, ...
['raw', 'title', 'raw', 'paragraph', 'raw']
"""

from __future__ import annotations

from docutils import nodes

from nextword.booktools.pages import FOLDED_SECTIONS

__all__ = ["FOLD_OPEN", "fold_audit_sections", "fold_sections"]

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
