"""Root pytest configuration: notebook kernels started by nbval inherit the same environment as
``python -m nextword.notebooks build`` (single-threaded BLAS/torch, fixed hash seed, default run)."""
from nextword.notebooks import apply_notebook_env

apply_notebook_env(full=False)
