"""A coarse sweep of bad inputs over every public callable of the numpy library -- the core
packages, ``nextword.chapter6`` and ``nextword.theory.*`` (issue #33) -- listed from each
package's ``__all__``.

Most of these callables have no hand-written baseline call here (their own tests, and
:mod:`tests.bad_inputs` for the core, hold those), so the sweep
is coarse: each callable is called with one bad value of a class in *every* required argument at
once -- ``None``, a string, a bool, a float where an int is expected, an int where an array is
expected, a width-0 array, an array near the float64 limit -- and the first argument it checks must
fail by name. Outcomes are classified as in :mod:`tests.bad_inputs` (``named``, ``raw``,
``silent``, ``documented``, ``hang``); a value that came back for ``None`` or a string is
``silent`` (unless ``None`` is the parameter's default or its annotation admits a string), one
that came back for the other classes is ``documented`` when finite (an int or an array can be a
valid input). Result records (``NamedTuple``\\s and dataclasses that only hold
what a function returned) and module constants are not callables of the API and are listed apart.

Run it as ``python -m tests.bad_inputs_theory`` (``--list`` prints every non-named case).

Counts (issue #33): 1701 bad inputs against the 243 public callables of the numpy library (every
callable in the ``__all__`` of its 15 packages, re-exports counted once; 37 names left out:
``mask_to_torch``, a converter into torch's conventions, and 36 constants, type aliases, exceptions and result
records). Before the fixes of issue #33 (commit 54991ff): named 1333, raw 219, silent 5,
documented 144, hang 0; after: named 1567, raw 0, silent 0, documented 134, hang 0. Of the 243,
64 also have a hand-written baseline and per-argument bad values in :mod:`tests.bad_inputs`
(methods such as ``DecoderLM.logits`` come on top there).
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from typing import Any, Callable

import numpy as np

from tests.bad_inputs import Outcome, classify, command_line, names_one_of, report

PACKAGES = (
    "nextword.attention",
    "nextword.decoder",
    "nextword.decoding",
    "nextword.data",
    "nextword.data.synthetic",
    "nextword.embedding",
    "nextword.positions",
    "nextword.tokenizers",
    "nextword.evaluation",
    "nextword.numerics",
    "nextword.chapter6",
    "nextword.theory.barrier",
    "nextword.theory.dynamics",
    "nextword.theory.formulation",
    "nextword.theory.svflow",
)

#: the classes of bad value; ``ok``: a value that came back is not by itself silent
CLASSES: dict[str, tuple[Any, bool]] = {
    "None": (None, False),
    "str": ("abc", False),
    "bool": (True, True),
    "float": (2.5, True),
    "int": (3, True),
    "width 0": (np.ones((3, 0)), True),
    "overflow": (np.full((3, 4), 1e308), True),
}


#: functions whose docstring promises a non-finite result where the float computation overflows
#: (the naive formulas, kept to show the overflow that the stable ones avoid)
OVERFLOW_BY_DESIGN = ("log_bessel_iv_naive", "vmf_log_normalizer_naive")
#: converters into torch's conventions, for comparisons with torch's own modules (the torch path has
#: its own tests); listed apart with the records
NEEDS_TORCH = ("attention.mask_to_torch",)
#: functions whose docstring reads ``None`` as a value (not the parameter's default)
NONE_DOCUMENTED = ("attention.causal_alignment",)


def _is_record(obj: object) -> bool:
    """A result record: a NamedTuple, or a dataclass with no validation of its own."""
    if not isinstance(obj, type):
        return False
    if issubclass(obj, tuple) and hasattr(obj, "_fields"):
        return True
    return dataclasses.is_dataclass(obj) and "__post_init__" not in vars(obj)


def public_callables() -> tuple[list[tuple[str, Callable[..., Any]]], list[str]]:
    """``(name, callable)`` of every public callable of :data:`PACKAGES`, and the names left out
    (constants and result records)."""
    out, left, seen = [], [], set()
    for pkg in PACKAGES:
        mod = importlib.import_module(pkg)
        for name in mod.__all__:
            obj = getattr(mod, name)
            full = f"{pkg.removeprefix('nextword.')}.{name}"
            try:
                inspect.signature(obj)
                has_sig = True
            except (TypeError, ValueError):  # a type alias such as Callable[[...], ...]
                has_sig = False
            if not callable(obj) or _is_record(obj) or not has_sig or full.endswith(NEEDS_TORCH):
                left.append(full)
            elif id(obj) not in seen:  # re-exports (nextword.data of nextword.data.synthetic) once
                seen.add(id(obj))
                out.append((full, obj))
    return out, left


def _required(fn: Callable[..., Any]) -> tuple[list[str], list[str], list[str]]:
    """Required positional, required keyword-only, and all parameter names of ``fn``."""
    sig = inspect.signature(fn)
    pos = [
        p.name
        for p in sig.parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
    ]
    kw = [p.name for p in sig.parameters.values() if p.kind == p.KEYWORD_ONLY and p.default is p.empty]
    return pos, kw, list(sig.parameters)


def run_case(name: str, fn: Callable[..., Any], cls: str) -> Outcome:
    value, ok = CLASSES[cls]
    pos, kw, params = _required(fn)
    sig = inspect.signature(fn)
    if not pos and not kw:  # nothing required: try the first parameter
        pos = params[:1]
    tried = [sig.parameters[n] for n in pos + kw]
    if value is None and (all(p.default is None for p in tried) or name.endswith(NONE_DOCUMENTED)):
        ok = True  # None is the documented default
    if isinstance(value, str) and all("str" in str(p.annotation) or "Iterable" in str(p.annotation) for p in tried):
        ok = True  # a string is a documented value (the characters of a text, a name)
    if not pos and not kw:
        return Outcome(name, "-", cls, "documented", "takes no argument")
    kind, detail = classify(lambda: fn(*[value] * len(pos), **dict.fromkeys(kw, value)), "", ok)
    if kind == "silent" and cls == "overflow" and name.endswith(OVERFLOW_BY_DESIGN):
        kind, detail = "documented", "non-finite by design (a naive formula)"
    if kind in ("named", "raw") and detail.startswith(("ValueError", "TypeError")):
        # every required parameter got the bad value: naming any one of them will do
        kind = "named" if names_one_of(detail.split(": ", 1)[-1], tuple(params)) else "raw"
    return Outcome(name, ",".join(pos + kw) or "-", cls, kind, detail)


def sweep() -> list[Outcome]:
    fns, _ = public_callables()
    return [run_case(name, fn, cls) for name, fn in fns for cls in CLASSES]


def main(argv: list[str] | None = None) -> int:
    import warnings

    list_all = command_line(argv, __doc__.splitlines()[0])
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        outs = sweep()
    fns, left = public_callables()
    report(
        outs,
        f"{len(outs)} bad inputs against {len(fns)} public callables ({len(left)} constants/records left out):",
        list_all,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
