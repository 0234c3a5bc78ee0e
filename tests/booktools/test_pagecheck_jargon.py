"""The project-words check (``nextword.booktools.checks.jargon``) catches what it targets and nothing else."""

from __future__ import annotations

from nextword.booktools.checks import jargon
from nextword.booktools.pages import parse_page

_PAGE = """# %% [markdown]
# # 9.1 A page
#
# The question. What is attention?
#
# ## A tiny example by hand
# {line}
#
# ## Check your understanding
# 1. Why?
#
#    ```{{dropdown}} Answer
#    {answer}
#    ```
#
# ## Checking the paper
# The ledger row of issue 45, on the CPU tier, in this session; NEXTWORD_FULL=1; produced(x).
#
# ## Reproducibility
# The GPU arm ran on a lent H200.
"""


def _words(line: str = "Plain words.", answer: str = "Because.", path: str = "book/part9_x/page.py") -> list[str]:
    page = parse_page(_PAGE.format(line=line, answer=answer), path)
    return [p.message.split("'")[1] for p in jargon.check(page)]


def test_the_folded_audit_may_use_project_words_and_the_lesson_may_not():
    assert _words() == []
    assert _words("Row 8 of the ledger; see issue 45.") == ["ledger", "issue"]
    assert _words(answer="On the CPU tier, with NEXTWORD_THREADS=2, printed by produced(loss).") == [
        "CPU tier",
        "NEXTWORD_THREADS",
        "produced(",
    ]
    assert _words("A lent H100 in one session; two Sessions; the tiers.") == [
        "lent",
        "H100",
        "session",
        "Sessions",
        "tiers",
    ]


def test_words_match_whole_and_hidden_text_is_not_read():
    assert _words("The frontier is equivalent; a tissue; the values were produced by training; excellent.") == []
    assert _words("See [the errata](../ERRATA.md#ledger-of-issues) <!-- issue 12 --> and {doc}`x </issue>`.") == []


def test_the_line_of_each_word_is_the_line_in_the_py_file():
    page = parse_page(_PAGE.format(line="first\n# second issue", answer="a"), "book/part9_x/page.py")
    assert [p.line for p in jargon.check(page)] == [8]


def test_a_companion_audit_page_is_exempt():
    assert _words("Row 8 of the ledger.", path="book/part9_x/checking_the_paper.py") == []
