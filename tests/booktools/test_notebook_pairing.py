"""Every .py notebook source has an .ipynb with the same cells; a drifted pair is caught."""

from pathlib import Path

import nbformat
import pytest

from nextword.booktools import notebooks

SOURCE = """# %% [markdown]
# # A tiny notebook

# %%
x = 1 + 1
print(x)

# %% tags=["nbval-ignore-output"]
import time
print(time.time())
"""


def _write_pair(tmp_path: Path) -> Path:
    py = tmp_path / "book" / "part9_demo" / "demo.py"
    py.parent.mkdir(parents=True)
    py.write_text(SOURCE)
    notebooks.sync(py)
    return py


def test_every_notebook_in_the_repository_is_paired_and_in_sync():
    problems = notebooks.check_pairs()
    assert not problems, "\n".join(map(str, problems)) + "\nrun: python -m nextword.booktools.notebooks build <file.py>"


def test_fresh_pair_is_in_sync(tmp_path):
    py = _write_pair(tmp_path)
    assert notebooks.check_pairs([py]) == []
    assert notebooks.notebook_sources(tmp_path) == [py]


def test_edited_py_is_caught(tmp_path):
    py = _write_pair(tmp_path)
    py.write_text(SOURCE.replace("1 + 1", "1 + 2"))
    problems = notebooks.check_pairs([py])
    assert len(problems) == 1 and "cell 1 differs in source" in problems[0].reason


def test_edited_ipynb_tags_are_caught(tmp_path):
    py = _write_pair(tmp_path)
    nb = nbformat.read(py.with_suffix(".ipynb"), as_version=4)
    nb.cells[2].metadata["tags"] = []
    nbformat.write(nb, py.with_suffix(".ipynb"))
    problems = notebooks.check_pairs([py])
    assert len(problems) == 1 and "tags" in problems[0].reason


def test_added_cell_is_caught(tmp_path):
    py = _write_pair(tmp_path)
    py.write_text(SOURCE + "\n# %%\ny = 2\n")
    assert "cells in .py" in notebooks.check_pairs([py])[0].reason


def test_missing_ipynb_is_caught(tmp_path):
    py = _write_pair(tmp_path)
    py.with_suffix(".ipynb").unlink()
    assert "no paired .ipynb" in notebooks.check_pairs([py])[0].reason


def test_sync_keeps_outputs_of_unchanged_cells(tmp_path):
    py = _write_pair(tmp_path)
    ipynb = py.with_suffix(".ipynb")
    nb = nbformat.read(ipynb, as_version=4)
    nb.cells[1].outputs = [nbformat.v4.new_output("stream", name="stdout", text="2\n")]
    nb.cells[1].execution_count = 1
    nbformat.write(nb, ipynb)
    notebooks.sync(py)
    again = nbformat.read(ipynb, as_version=4)
    assert again.cells[1].outputs[0]["text"] == "2\n" and again.cells[1].execution_count == 1


@pytest.mark.parametrize("path", notebooks.notebook_sources(dirs=notebooks.EXECUTED_DIRS), ids=str)
def test_committed_book_and_solution_notebooks_are_executed(path):
    """nbval compares nothing in a cell without an execution_count: a committed book or solution
    notebook must be executed, and must not store an error output unless a cell expects one."""
    nb = nbformat.read(path.with_suffix(".ipynb"), as_version=4)
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        assert cell.execution_count is not None, f"{path}: cell {i} was not executed"
        if "raises-exception" not in cell.metadata.get("tags", []):
            assert not any(o.get("output_type") == "error" for o in cell.outputs), f"{path}: cell {i} errored"


def test_notebook_environment_is_single_threaded_seeded_and_default_run():
    env = {"MPLBACKEND": "Agg", "FULL": "1", "OMP_NUM_THREADS": "8"}
    notebooks.apply_notebook_env(env, full=False)
    assert env["OMP_NUM_THREADS"] == "1" and env["PYTHONHASHSEED"] == "0" and env["FULL"] == "0"
    assert "MPLBACKEND" not in env, "Agg would drop the figure text output that nbval compares"
    kept = {"FULL": "1"}
    notebooks.apply_notebook_env(kept)
    assert kept["FULL"] == "1", "an explicit FULL=1 build keeps the paper-sized run"
