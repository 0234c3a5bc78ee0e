"""The folded-answer check (``nextword.booktools.checks.answers``): an answer's numbers are printed by the
page, and an answer gives its result."""

from __future__ import annotations

import json

from nextword.booktools.checks import answers
from nextword.booktools.pages import read_page

_PAGE = """# %% [markdown]
# # 9.1 A page
#
# ## Check your understanding
#
# 1. Scores 0, 0 and $\\ln 2$: what are the weights?
#
#    ```{{dropdown}} Answer
#    {answer}
#    ```
#
# 2. Why?
#
#    ```{{dropdown}} Answer
#    Because the weights add up to 1.
#    ```

# %% tags=["hide-cell"]
print(weights)
"""


def _problems(tmp_path, answer: str, printed: str) -> list[tuple[int, str]]:
    page = tmp_path / "part9_x" / "page.py"
    page.parent.mkdir(exist_ok=True)
    page.write_text(_PAGE.format(answer=answer), encoding="utf-8")
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": "..."},
        {
            "cell_type": "code",
            "metadata": {},
            "source": "print(weights)",
            "execution_count": 1,
            "outputs": [{"output_type": "stream", "name": "stdout", "text": printed}],
        },
    ]
    page.with_suffix(".ipynb").write_text(
        json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    )
    return [(p.line, p.message) for p in answers.check(read_page(page))]


def test_an_answers_numbers_must_be_printed_by_the_page(tmp_path):
    answer = "The weights are $0.25$, 0.25 and 0.5; their entropy is 1.0397 nats, over 12 steps."
    assert _problems(tmp_path, answer, "weights 0.250 0.250 0.500, entropy 1.03972, steps 12\n") == []
    assert _problems(tmp_path, answer, "weights 0.250 0.250 0.500\n") == [
        (8, "the answer to question 1 states 1.0397, 12, which no code cell of the page prints")
    ]


def test_small_counts_formula_integers_and_quoted_sources_need_no_print(tmp_path):
    answer = "Two of the $3$ weights are $1/4$; Table 1 of the paper reports 0.77 for it (Eq. (12))."
    assert _problems(tmp_path, answer, "nothing\n") == []


def test_an_answer_that_sends_the_reader_away_is_flagged(tmp_path):
    """3.3's question 1 (issue 45 #2): "Work them out" and no numbers."""
    answer = "$H = -(0.4\\ln 0.4 + 3\\cdot 0.2\\ln 0.2)$ nats. Work\n#    them out yourself."
    assert _problems(tmp_path, answer, "0.4 0.2\n") == [
        (8, "the answer to question 1 says 'Work them out': give the result")
    ]
    assert answers.NO_RESULT.search("left as an exercise") and not answers.NO_RESULT.search("it works out to 2")
