"""Numbers in the prose are produced: every number of a page's markdown is printed by its code, set in its
code, read from a saved result it loads, or quoted from a source with its place (the rule of
:mod:`nextword.booktools.prose_numbers`, issue 16; small counts, years, references and run-time estimates
are allowed). A quote exempts the numbers of its clause only, and a number after a comma, "and", "to" or a
dash is checked unless it continues a list of places ("Figs. 6.5, 6.6 and 6.8").
"""

from __future__ import annotations

from nextword.booktools.pages import REPO_ROOT, Page, Problem
from nextword.booktools.prose_numbers import evidence, prose_violations

__all__ = ["check"]


def check(page: Page) -> list[Problem]:
    """A problem per markdown block, listing its numbers that nothing produces."""
    try:
        rel = page.path.resolve().relative_to(REPO_ROOT).as_posix()
    except ValueError:
        return []  # a page outside the repository (a test's copy) has no evidence to read
    vals = evidence(rel)
    problems = []
    for block in page.blocks:
        bad = prose_violations(block.text, vals)
        if bad:
            at = block.text.find(bad[0])
            problems.append(
                Problem(
                    "numbers",
                    block.line_of(max(at, 0)),
                    f"{', '.join(dict.fromkeys(bad))}: no code cell prints or sets it, no saved result holds it, "
                    "no source place quotes it",
                )
            )
    return problems
