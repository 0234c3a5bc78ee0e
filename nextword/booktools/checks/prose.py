"""Numbers in the prose are produced: every number of a page's markdown is printed by its code or set in its
code (not in a comment or an assert), or quoted from a source with its place (the rule of
:mod:`nextword.booktools.prose_numbers`, issue 16; small counts, years, references and run-time estimates
are allowed). A number that training or sampling produced must be printed by the page: a value of a saved
result the page reads but does not print does not count, nor does the bound of an assert. A quote exempts
the numbers of its clause only — and the book's own figures and tables ("Figure 4.7.2", a caption) are not
sources — and a number after a comma, "and", "to" or a dash is checked unless it continues a list of places
("Figs. 6.5, 6.6 and 6.8").
"""

from __future__ import annotations

from nextword.booktools.pages import REPO_ROOT, Page, Problem
from nextword.booktools.prose_numbers import evidence, prose_violations

__all__ = ["check"]


def check(page: Page) -> list[Problem]:
    """A problem per markdown block, listing its numbers that nothing produces."""
    if not page.path.is_file():
        return []  # a page made from text has no code or outputs to read
    try:
        rel = page.path.resolve().relative_to(REPO_ROOT).as_posix()
    except ValueError:
        rel = str(page.path.resolve())  # a test's tiny page outside the repository
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
                    f"{', '.join(dict.fromkeys(bad))}: no code cell prints it or sets it, no source place quotes it",
                )
            )
    return problems
