"""No project words in the lesson: the unfolded text a student reads names the subject, not the project.

The lesson is every markdown block of a page before ``## Checking the paper`` / ``## Reproducibility``
(folded answers of ``Check your understanding`` included; :meth:`nextword.booktools.pages.Page.lesson_blocks`).
It must not contain the words that belong to how the book is made (:data:`PROJECT_WORDS`): "issue", "ledger",
"tier" (as in "cpu tier"), "lent", "session", a device name ("H100", "H200"), an environment variable of the
project (``NEXTWORD_…``) or the helper ``produced(…)`` (the word "produced" itself is fine). Words match whole (case-insensitive, plural included):
"tier" does not match "frontier", "lent" not "equivalent", "issue" not "tissue". What is not shown to the
reader is not read: link targets (``[text](target)``), a ``{role}`` target after ``<`` and HTML comments.
A part's companion audit page (``checking_the_paper.py``) is folded as a whole and exempt.

>>> [p.message for p in check(parse_page("# %% [markdown]\\n# # 9.1 A page\\n# The session lent us an H200 (issue 7).\\n"))]
["'session' (a project word in the lesson)", "'lent' (a project word in the lesson)", "'H200' (a project word in the lesson)", "'issue' (a project word in the lesson)"]
"""

from __future__ import annotations

import re

from nextword.booktools.pages import Page, Problem, parse_page  # noqa: F401 (the doctest)

__all__ = ["PROJECT_WORDS", "check", "project_words"]

#: The project's words (regular expressions, case-insensitive): whole words, plurals included; an environment
#: variable by its prefix, the helper by its call.
PROJECT_WORDS = (
    r"issues?",
    r"ledgers?",
    r"(?:cpu[- ])?tiers?",
    r"lent",
    r"sessions?",
    r"H[12]00",
)
_WORDS = re.compile(
    "|".join([rf"(?<![\w-])(?:{w})(?![\w-])" for w in PROJECT_WORDS] + [r"(?<!\w)NEXTWORD_\w*", r"\bproduced\("]),
    re.I,
)
_HIDDEN = re.compile(r"\]\([^)]*\)|<!--.*?-->|(?<=\})`[^`<]*<[^>`]*>`", re.S)


def project_words(text: str) -> list[tuple[int, str]]:
    """``(offset, word)`` of every project word in the reader-visible part of a markdown ``text``.

    >>> project_words("A frontier; equivalently; see [the errata](../ERRATA.md#ledger); the NEXTWORD_THREADS knob.")
    [(69, 'NEXTWORD_THREADS')]
    """
    visible = _HIDDEN.sub(lambda m: " " * len(m[0]), text)
    return [(m.start(), m[0]) for m in _WORDS.finditer(visible)]


def check(page: Page) -> list[Problem]:
    """A problem per project word in the page's lesson text (none on a companion page)."""
    return [
        Problem("jargon", block.line_of(offset), f"{word!r} (a project word in the lesson)")
        for block in page.lesson_blocks()
        for offset, word in project_words(block.text)
    ]
