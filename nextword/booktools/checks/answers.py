"""Folded answers give results the page prints: every number a ``{dropdown} Answer`` of ``## Check your
understanding`` states is printed by a code cell of the page, and no answer only says "work it out".

The numbers follow the rule of the page's prose (:mod:`nextword.booktools.prose_numbers`): decimals and
integers above 10 count (small counts, years, equation and figure numbers, integers inside a formula and
numbers inside inline code do not; decimals inside a formula do), and a sentence that quotes a source by its
place ("Table 1 reports …") may quote its numbers. The evidence is narrower than the prose's: only what the
page's code cells print (the stored outputs of its ``.ipynb``, produced numbers included), not constants
set in code or values of saved results — an answer's number is printed where the reader can find it, and
asserted there (a ``hide-cell`` cell right after the questions is the usual place).

An answer that sends the reader away without a result ("work it out", "left as an exercise", "try it
yourself") is flagged too: the answer gives the result.
"""

from __future__ import annotations

import re

from nextword.booktools.pages import Page, Problem
from nextword.booktools.prose_numbers import numbers, prose_violations

__all__ = ["NO_RESULT", "answers", "check"]

#: Phrases of an answer that gives no result.
NO_RESULT = re.compile(
    r"\bwork\s+(?:it|them|this|these|that)\s+out\b|\bleft\s+(?:to\s+the\s+reader|as\s+an\s+exercise)\b|"
    r"\bexercise\s+for\s+the\s+reader\b|\b(?:try|compute|check|do)\s+(?:it|this|them|that)\s+yourself\b|"
    r"\b(?:figure|work)\s+(?:it|them|this)\s+out\s+yourself\b",
    re.I,
)
_ANSWER = re.compile(r"^([ \t]*)```\{dropdown\} *Answer[^\n]*\n(.*?)^\1```", re.M | re.S)
_QUESTION = re.compile(r"^(\d+)\. +\S", re.M)


def answers(page: Page) -> list[tuple[int, str, str]]:
    """``(line, question number, answer text)`` of every folded answer of ``## Check your understanding``."""
    found = []
    for block in page.blocks:
        if not block.section.startswith("Check your understanding"):
            continue
        for m in _ANSWER.finditer(block.text):
            before = _QUESTION.findall(block.text[: m.start()])
            found.append((block.line_of(m.start()), before[-1] if before else "?", m[2]))
    return found


def check(page: Page) -> list[Problem]:
    """A problem per unprinted number of a folded answer, and per answer that gives no result."""
    printed = tuple(v for _, v, _ in numbers(page.output_text()))
    problems = []
    for line, question, text in answers(page):
        if NO_RESULT.search(text):
            phrase = " ".join(NO_RESULT.search(text)[0].split())
            problems.append(
                Problem("answers", line, f"the answer to question {question} says {phrase!r}: give the result")
            )
        missing = prose_violations(text, printed)
        if missing:
            problems.append(
                Problem(
                    "answers",
                    line,
                    f"the answer to question {question} states {', '.join(dict.fromkeys(missing))}, "
                    "which no code cell of the page prints",
                )
            )
    return problems
