"""What a student sees under an exercise's check cell in Jupyter (issue 48).

A passing check prints its ✓ line and nothing else (the checker returns a true value, which a notebook
would echo as ``True`` under the ✓ line if it displayed); a failing check shows its report once, as the
cell's error, without the checker's frames. One kernel runs a two-cell notebook with both.
"""

from __future__ import annotations

import nbformat
import pytest

from nextword.booktools.exercises.checks._common import Passed, passed

PASSING = """\
from nextword.booktools.exercises.checks._common import Report
r = Report("Exercise 9.99")
with r.check("one plus one"):
    assert 1 + 1 == 2
r.done("one plus one is two")"""

FAILING = """\
r = Report("Exercise 9.99")
with r.check("the first check"):
    pass
with r.check("the second check"):
    from nextword.booktools.exercises.checks._common import fail
    fail("got 3, expected 2\\n        likely mistake: counting from 1")
r.done("never printed")"""


def test_a_passing_check_is_true_and_displays_nothing() -> None:
    from IPython.core.formatters import DisplayFormatter

    result = passed("fine")
    assert isinstance(result, Passed) and result and result == True  # noqa: E712 -- the old return value
    assert DisplayFormatter().format(result) == ({}, {})  # the notebook shows no Out[] for it


@pytest.mark.slow
def test_check_cells_in_a_kernel_show_the_tick_alone_and_the_report_once(tmp_path) -> None:
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(PASSING), nbformat.v4.new_code_cell(FAILING)])
    client = NotebookClient(nb, timeout=120, kernel_name="python3", extra_arguments=["--IPKernelApp.log_level=ERROR"])
    with pytest.raises(CellExecutionError):
        client.execute()
    ok, bad = nb.cells
    assert [o.output_type for o in ok.outputs] == ["stream"] and ok.outputs[0].text == "✓ one plus one is two\n"
    assert [o.output_type for o in bad.outputs] == ["error"]
    shown = "\n".join(bad.outputs[0].traceback)  # what Jupyter draws for an error: its traceback lines
    assert shown.count("Exercise 9.99: 1 of 2 checks passed") == 1, shown
    assert shown.count("likely mistake: counting from 1") == 1, shown
    assert "File " not in shown and "_common.py" not in shown  # no frames of the checker
