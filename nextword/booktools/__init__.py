"""The book's own tooling, apart from the mathematics (no module of the library imports it):

``notebooks``   the jupytext pipeline: ``python -m nextword.booktools.notebooks build|sync|check|render``
``plotting``    the book's figure style
``check_env``   the environment report: ``nextword check-env``
``exercises``   student notebooks generated from ``solutions/`` (``python -m nextword.booktools.exercises
                build|check``) and the checkers they call (``nextword.booktools.exercises.checks``)
"""
