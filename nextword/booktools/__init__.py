"""The book's own tooling, apart from the mathematics (no module of the library imports it):

``notebooks``   the jupytext pipeline: ``python -m nextword.booktools.notebooks build|sync|check|render``
``plotting``    the book's figure style
``check_env``   the environment report: ``nextword check-env``
``display``     the display rule for produced numbers (``produced``)
``teaching``    the teaching shape of a page, checked: ``python -m nextword.booktools.teaching book/...py``
``pagecheck``   every static check of a page in one command: ``python -m nextword.booktools.pagecheck book/...py``;
                the checks are the modules of ``checks`` (jargon, symbols, surfaces, characters, tex, captions,
                answers, numbers, claims, markdown, provenance), reading a page through ``pages``
``notation``    the book's notation table (``book/notation.yaml``) and Appendix A's copy of it; ``texsymbols``
                says what a symbol of TeX maths is
``prose_numbers`` every number of the prose produced, printed or quoted (the rule of the prose and the ledger)
``rendering``   the HTML's folded audit sections and visibly marked produced numbers (hooks of ``book/conf.py``)
``print_layout`` the PDF edition's layout: tables, formulas, bookmarks and links in print (a hook of ``book/conf.py``)
``coverage``    the coverage map (``book/coverage.yaml``) and its checks
``warm_kernel`` notebook kernels forked from a parent that has imported torch & co. once (make test's passes)
``routemap``    the landing page's route map: which pages build on which, drawn from the declared graph
``schematics``  schematic figures drawn from code (``core``, ``attention``, ``positions``)
``exercises``   student notebooks generated from ``solutions/`` (``python -m nextword.booktools.exercises
                build|check``) and the checkers they call (``nextword.booktools.exercises.checks``)
"""
