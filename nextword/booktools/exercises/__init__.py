"""Exercises: the solution notebooks are the single source; student notebooks are generated.

``python -m nextword.booktools.exercises build`` turns every ``solutions/<part>/exNN_<topic>.py`` into
``exercises/<part>/exNN_<topic>.py`` (+ an output-free ``.ipynb``), replacing each marked solution
region by a stub. ``python -m nextword.booktools.exercises check`` fails when the committed exercises differ
from what ``build`` would write. ``nextword grade [part]`` runs the student's
filled-in notebooks and prints a ✓ / ✗ / not-started table (:mod:`.grade`). Checkers are in
:mod:`nextword.booktools.exercises.checks`; tiered hints and model answers: ``hint("p4_01", 1)``,
``reveal("p4_01")`` (:mod:`.hints`).
"""
from .hints import hint, reveal

__all__ = ["hint", "reveal"]
