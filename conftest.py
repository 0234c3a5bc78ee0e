"""Root pytest configuration, shared by the library's doctests (``pytest --doctest-modules nextword``),
the tests and the notebooks.

* Notebook kernels started by nbval inherit the same environment as ``python -m nextword.booktools.notebooks
  build`` (single-threaded BLAS/torch, fixed hash seed, default run).
* Portability pass: ``make test`` checks the notebooks a second time with other CPU kernels selected
  (``OPENBLAS_CORETYPE``, ``ATEN_CPU_CAPABILITY``, ``NPY_DISABLE_CPU_FEATURES``) and two threads. The thread
  count of that pass is ``NEXTWORD_THREADS`` (e.g. ``2``), which then replaces the one thread of
  ``NOTEBOOK_ENV`` for BLAS and OpenMP; the kernel variables are simply inherited by the kernels.
  The same pass sets ``NEXTWORD_PERTURB=1``, also inherited: every training entry point of the library
  then nudges its initial weights by a relative 1e-3 (a fixed pattern; :mod:`nextword.perturbation`), so a
  stored output that a trained or iterated number produced, and that is not printed through
  :func:`nextword.booktools.display.produced`, fails this pass on any machine, not only on a rare CPU.
* Warm kernels: with ``NEXTWORD_WARM_KERNELS=1`` (the Makefile's notebook passes) on Linux, nbval's kernels
  are forked from a parent that has imported torch & co. once (:mod:`nextword.booktools.warm_kernel`).
  A kernel whose start fails in a known, harmless way is started again (below).
* Doctests see ``np`` (numpy) in their namespace, as the docstrings' examples assume.
* Modules that import torch at module level (``nextword/torch/``) are not collected when torch is
  missing, so the numpy library's doctests still run on a machine without it.
* ``__main__`` modules are command lines: importing them would run them.
"""

import importlib.util
import os

import numpy as np
import pytest

from nextword.booktools.notebooks import NOTEBOOK_ENV, apply_notebook_env

THREAD_VARIABLES = tuple(k for k in NOTEBOOK_ENV if k.endswith("_NUM_THREADS"))

apply_notebook_env(full=False)

_threads = os.environ.get("NEXTWORD_THREADS", "").strip()
if _threads:
    if not _threads.isdigit() or int(_threads) < 1:
        raise ValueError(f"NEXTWORD_THREADS must be a positive integer, got {_threads!r}")
    os.environ.update({k: _threads for k in THREAD_VARIABLES})


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


# --- nbval: a kernel that dies while starting is started again ------------------------------------------
# jupyter_client gives a new kernel free TCP ports by binding port 0 and releasing it; when the two
# xdist workers start kernels at the same moment, both can be handed the same port, and one kernel dies
# before it answers ("Kernel died before replying to kernel_info"; jupyter/jupyter_client#154,
# treebeardtech/nbmake#129). It happened once in a clean-clone make test here (all nine cells of 6.7
# errored at setup, no cell ran). The notebook never started, so starting its kernel again (new ports)
# changes no result: up to three tries, each retry reported as a warning in pytest's summary.
KERNEL_START_TRIES = 3


def _retrying(start_new_kernel):
    import functools
    import warnings

    @functools.wraps(start_new_kernel)
    def start(*args, **kwargs):
        for attempt in range(1, KERNEL_START_TRIES + 1):
            try:
                return start_new_kernel(*args, **kwargs)
            except RuntimeError as exc:
                if attempt == KERNEL_START_TRIES or "died before replying" not in str(exc):
                    raise
                warnings.warn(f"nbval: kernel start {attempt} failed ({exc}); starting it again", stacklevel=2)

    start.retries_kernel_start = True
    return start


# --- nbval: warm kernels (NEXTWORD_WARM_KERNELS=1, set by the Makefile's notebook passes; Linux) -----------
# Each notebook still gets a new kernel process, forked from a parent that has imported torch, matplotlib,
# sympy and scipy once (nextword/booktools/warm_kernel.py says what the child does to be the kernel a new
# process would be, and tests/booktools/test_warm_kernel.py compares the two).
_WARM_PARENT = None


def _warm_or_cold(start_new_kernel):
    import functools

    from nextword.booktools import warm_kernel

    @functools.wraps(start_new_kernel)
    def start(startup_timeout=60, kernel_name="python", **kwargs):
        global _WARM_PARENT
        if kernel_name != _nbval_kernel.CURRENT_ENV_KERNEL_NAME or not warm_kernel.enabled():
            return start_new_kernel(startup_timeout=startup_timeout, kernel_name=kernel_name, **kwargs)
        if _WARM_PARENT is None:
            import atexit

            _WARM_PARENT = warm_kernel.WarmParent()
            atexit.register(_WARM_PARENT.stop)
        return warm_kernel.start_new_kernel(_WARM_PARENT, startup_timeout=startup_timeout, **kwargs)

    return start


try:
    import nbval.kernel as _nbval_kernel
except ImportError:  # nbval is only needed for the notebook passes
    _nbval_kernel = None
if _nbval_kernel is not None and not getattr(_nbval_kernel.start_new_kernel, "retries_kernel_start", False):
    _nbval_kernel.start_new_kernel = _retrying(_warm_or_cold(_nbval_kernel.start_new_kernel))
