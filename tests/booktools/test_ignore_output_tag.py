"""The ``nbval-ignore-output`` tag hides a cell's whole output from nbval: every tagged cell says why in its
first line, and the reason is one of :data:`nextword.booktools.display.IGNORE_OUTPUT_REASONS` (timings,
progress bars, package versions, the environment report). Trained or sampled numbers go through
``produced()`` instead (README, "Adding or editing a notebook")."""

import nbformat

from nextword.booktools.display import IGNORE_OUTPUT_REASONS, unexplained_ignored_outputs
from nextword.booktools.notebooks import notebook_sources


def _notebooks():
    return [py.with_suffix(".ipynb") for py in notebook_sources()]


def test_every_tagged_cell_in_the_book_says_why_its_output_varies():
    assert len(_notebooks()) > 60
    problems = unexplained_ignored_outputs(_notebooks())
    assert not problems, (
        "cells tagged nbval-ignore-output without a reason in their first line (one of "
        f"{IGNORE_OUTPUT_REASONS}; a trained number goes through produced()):\n" + "\n".join(problems)
    )


def test_a_tagged_training_cell_is_caught(tmp_path):
    v4 = nbformat.v4
    tagged = {"tags": ["nbval-ignore-output"]}
    cells = [
        v4.new_markdown_cell("# nbval-ignore-output: timings"),
        v4.new_code_cell("# nbval-ignore-output: timings\nt", metadata=tagged),
        v4.new_code_cell("# nbval-ignore-output: losses\nl", metadata=tagged),
        v4.new_code_cell("print(loss)", metadata={"tags": ["hide-cell", "nbval-ignore-output"]}),
        v4.new_code_cell("print(1)"),
    ]
    path = tmp_path / "page.ipynb"
    nbformat.write(v4.new_notebook(cells=cells), path)
    assert unexplained_ignored_outputs([path]) == [
        f"{path}, code cell 1: # nbval-ignore-output: losses",
        f"{path}, code cell 2: print(loss)",
    ]
