"""The static page checks that :mod:`nextword.booktools.pagecheck` runs, one module each.

Each module has a ``check(page) -> list[Problem]`` (:class:`nextword.booktools.pages.Page`,
:class:`nextword.booktools.pages.Problem`) and states in its docstring what it checks, what it counts and
why. :data:`CHECKS` lists them in the order the command runs them (``teaching`` comes first, from
:mod:`nextword.booktools.pagecheck`).
"""

from __future__ import annotations

from collections.abc import Callable

from nextword.booktools.pages import Page, Problem

__all__ = ["CHECKS", "MODULES"]


#: ``(check name, module)`` in the order the command runs them.
MODULES = (
    ("jargon", "jargon"),
    ("symbols", "symbols"),
    ("surfaces", "surfaces"),
    ("characters", "characters"),
    ("tex", "tex"),
    ("captions", "captions"),
    ("answers", "answers"),
    ("numbers", "prose"),
    ("claims", "claims"),
    ("markdown", "markdown"),
    ("provenance", "provenance"),
)


def _load() -> dict[str, tuple[Callable[[Page], list[Problem]], str]]:
    import importlib

    table = {}
    for name, module in MODULES:
        mod = importlib.import_module(f"nextword.booktools.checks.{module}")
        table[name] = (mod.check, mod.__doc__.strip().split("\n")[0])
    return table


#: ``{name: (check, first line of its module's docstring)}``.
CHECKS = _load()
