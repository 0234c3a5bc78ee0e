"""Root pytest configuration, shared by the library's doctests (``pytest --doctest-modules nextword``),
the tests and the notebooks.

* Notebook kernels started by nbval inherit the same environment as ``python -m nextword.booktools.notebooks
  build`` (single-threaded BLAS/torch, fixed hash seed, default run).
* Doctests see ``np`` (numpy) in their namespace, as the docstrings' examples assume.
* Modules that import torch at module level (``nextword/torch/``) are not collected when torch is
  missing, so the numpy library's doctests still run on a machine without it.
* ``__main__`` modules are command lines: importing them would run them.
"""
import importlib.util
import os

import numpy as np
import pytest

from nextword.booktools.notebooks import apply_notebook_env

apply_notebook_env(full=False)



def _torch_available() -> bool:
    try:
        return importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):  # ValueError: torch blocked by sys.modules["torch"] = None
        return False


collect_ignore_glob = ["nextword/**/__main__.py"]
if not _torch_available():
    collect_ignore_glob.append("nextword/torch/*")


@pytest.fixture(autouse=True)
def _doctest_namespace(doctest_namespace):
    doctest_namespace["np"] = np


@pytest.fixture(autouse=True)
def _restore_environment():
    """Examples may set environment variables (``data_dir``'s sets ``NEXTWORD_DATA_DIR``)."""
    saved = dict(os.environ)
    yield
    if os.environ != saved:
        os.environ.clear()
        os.environ.update(saved)
