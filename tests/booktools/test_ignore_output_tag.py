"""The ``nbval-ignore-output`` tag hides a cell's whole output from nbval: every tagged cell says why in its
first line, and the reason is one of :data:`nextword.booktools.display.IGNORE_OUTPUT_REASONS` (timings,
progress bars, package versions, the environment report). Trained or sampled numbers go through
``produced()`` instead (README, "Adding or editing a notebook")."""

import json

from nextword.booktools.display import IGNORE_OUTPUT_REASONS, unexplained_ignored_outputs
from nextword.booktools.notebooks import REPO_ROOT


def _notebooks():
    return sorted(p for d in ("book", "solutions", "exercises") for p in (REPO_ROOT / d).glob("*/*.ipynb"))


def test_every_tagged_cell_in_the_book_says_why_its_output_varies():
    assert len(_notebooks()) > 60
    problems = unexplained_ignored_outputs(_notebooks())
    assert not problems, (
        "cells tagged nbval-ignore-output without a reason in their first line (one of "
        f"{IGNORE_OUTPUT_REASONS}; a trained number goes through produced()):\n" + "\n".join(problems)
    )


def test_a_tagged_training_cell_is_caught(tmp_path):
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": "# nbval-ignore-output: timings"},
        {
            "cell_type": "code",
            "metadata": {"tags": ["nbval-ignore-output"]},
            "source": ["# nbval-ignore-output: timings\n", "t"],
        },
        {
            "cell_type": "code",
            "metadata": {"tags": ["nbval-ignore-output"]},
            "source": ["# nbval-ignore-output: losses\n", "l"],
        },
        {"cell_type": "code", "metadata": {"tags": ["hide-cell", "nbval-ignore-output"]}, "source": "print(loss)"},
        {"cell_type": "code", "metadata": {}, "source": "print(1)"},
    ]
    path = tmp_path / "page.ipynb"
    path.write_text(json.dumps({"cells": cells}))
    assert unexplained_ignored_outputs([path]) == [
        f"{path}, code cell 1: # nbval-ignore-output: losses",
        f"{path}, code cell 2: print(loss)",
    ]
