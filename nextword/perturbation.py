"""The perturbation pass: every training entry point nudges its initial weights when asked to.

A number that training or an iterative optimisation produced depends on the machine's rounding:
another CPU, BLAS kernel or thread count changes the last bits of every step, and a printed digit
that sits near a rounding boundary (or a bin edge, or the order of two near-equal results) flips.
To find such fragile outputs on *one* machine, the second notebook pass of ``make test`` sets
``NEXTWORD_PERTURB=1``: every training entry point of the library then multiplies each initial
weight ``w`` by ``1 + ε u`` with ``ε =`` :data:`SCALE` and ``u`` uniform in ``[-1, 1]``, a
deterministic pattern fixed by the variable's value and the weight's name. That is far larger than
a rounding difference and far smaller than any claim's tolerance, so a stored output that changes
under it was never exact: it must go through :func:`nextword.booktools.display.produced` (or be
made exact), with its claim asserted with a tolerance that holds across seeds and CPUs.

``NEXTWORD_PERTURB`` unset, empty or ``0``: no perturbation (the default; every function here
returns its input unchanged). Any other non-negative integer ``k`` selects the pattern. Entry
points: :func:`nextword.torch.training.token_lm.train_lm`, :func:`nextword.torch.barrier.train.train`, the other torch
trainers (recurrent LM, the SVFlow hybrid) and the numpy iterative trainers of
:mod:`nextword.chapter6` and :mod:`nextword.theory`; each calls :func:`nudge` (numpy arrays) or
:func:`nudge_module_` (a torch module's parameters, in place) once on its initial weights.

>>> import os, numpy as np
>>> os.environ.pop(ENV, None) and None
>>> w = np.ones(3)
>>> nudge(w, "W") is w  # off: the very same array
True
>>> os.environ[ENV] = "1"
>>> v = nudge(w, "W")
>>> bool(np.all(np.abs(v - 1) <= SCALE)), bool(np.any(v != 1)), bool(np.array_equal(v, nudge(w, "W")))
(True, True, True)
>>> del os.environ[ENV]
"""

from __future__ import annotations

import os
import zlib

import numpy as np

__all__ = ["ENV", "SCALE", "perturbation", "nudge", "nudge_module_"]

#: the environment variable read by every training entry point
ENV = "NEXTWORD_PERTURB"
#: relative size of the nudge: each weight is multiplied by a factor in [1 - SCALE, 1 + SCALE]
SCALE = 1e-3


def perturbation() -> int:
    """The pattern number ``k`` of ``NEXTWORD_PERTURB`` (0: unset, empty or ``0``, no perturbation)."""
    raw = os.environ.get(ENV, "").strip()
    if raw in ("", "0"):
        return 0
    try:
        k = int(raw)
    except ValueError:
        k = -1
    if k < 0:
        raise ValueError(f"{ENV} must be empty or a non-negative integer, got {raw!r}")
    return k


def _factor(shape: tuple[int, ...], tag: str, k: int) -> np.ndarray:
    """``1 + SCALE u``, ``u ~ U[-1, 1]`` of ``shape``, fixed by ``(k, tag)`` (float64)."""
    rng = np.random.default_rng([k, zlib.crc32(tag.encode())])
    return 1.0 + SCALE * rng.uniform(-1.0, 1.0, size=shape)


def nudge(x: object, tag: str = "") -> object:
    """``x`` with every entry multiplied by ``1 + SCALE u`` when ``NEXTWORD_PERTURB`` is set; else ``x`` itself.

    ``x``: a float array (any shape; its dtype is kept) or a float; ``tag`` names the weight, so that
    two weights of one shape get different patterns. Returns a new array (``x`` is not modified).
    """
    k = perturbation()
    if k == 0:
        return x
    a = np.asarray(x)
    if not np.issubdtype(a.dtype, np.floating):
        raise TypeError(f"nudge(): x must be a float array, got dtype {a.dtype}")
    out = (a * _factor(a.shape, tag, k)).astype(a.dtype, copy=False)
    return out if isinstance(x, np.ndarray) else (out.item() if out.ndim == 0 else out)


def nudge_module_(module: object, tag: str = "") -> None:
    """Nudge every floating parameter of a torch ``module`` in place (no-op when the variable is unset).

    Duck-typed on ``module.named_parameters()`` so that this numpy module never imports torch.
    """
    k = perturbation()
    if k == 0:
        return
    for name, p in module.named_parameters():
        if p.is_floating_point():
            f = _factor(tuple(p.shape), f"{tag}.{name}", k)
            p.data.mul_(p.data.new_tensor(f))
