"""Root pytest configuration: notebook kernels started by nbval inherit the same environment as
``python -m nextword.notebooks build`` (single-threaded BLAS/torch, fixed hash seed, default run).

Portability pass: ``make test`` checks the notebooks a second time with other CPU kernels selected
(``OPENBLAS_CORETYPE``, ``ATEN_CPU_CAPABILITY``, ``NPY_DISABLE_CPU_FEATURES``) and two threads. For that
pass the thread count is given by ``NEXTWORD_THREADS`` (e.g. ``NEXTWORD_THREADS=2``), which then
replaces the one thread of :data:`nextword.notebooks.NOTEBOOK_ENV` for BLAS and OpenMP. The kernel
variables themselves are simply inherited by the kernels; nothing here changes them.
"""
import os

from nextword.notebooks import NOTEBOOK_ENV, apply_notebook_env

THREAD_VARIABLES = tuple(k for k in NOTEBOOK_ENV if k.endswith("_NUM_THREADS"))

apply_notebook_env(full=False)

_threads = os.environ.get("NEXTWORD_THREADS", "").strip()
if _threads:
    if not _threads.isdigit() or int(_threads) < 1:
        raise ValueError(f"NEXTWORD_THREADS must be a positive integer, got {_threads!r}")
    os.environ.update({k: _threads for k in THREAD_VARIABLES})
