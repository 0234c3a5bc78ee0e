"""The display rule for *produced* numbers: shown to the reader, not compared as text by nbval.

A number that training, sampling or an iterative method produced (a trained model's loss, a
row norm after gradient descent, a Monte Carlo estimate), and any ordering, ranking or bin of such
numbers, depends on the machine's rounding: another CPU, another BLAS kernel or another summation
order can move it across a printed digit or a bin edge. The reader still wants to see it, so it is
printed through :func:`produced`, which wraps the text in two invisible separators (U+2063). The
rule ``[produced numbers]`` of ``book/nbval_sanitize.cfg`` replaces everything between a pair by
``<produced>`` before nbval compares a stored output with a fresh one, so the cell's *other* text
(exact results, labels, asserted bounds) is still compared character by character. The claim made
about the number is asserted in the same cell with a tolerance that holds across seeds and CPUs.

Exact results (closed forms, enumerations, sympy, round-off printed as an asserted bound) are never
wrapped: comparing them as text is what makes nbval worth running.

>>> s = produced(1.0251, ".2f")
>>> s == MARK + "1.03" + MARK, str(s).strip(MARK)
(True, '1.03')
>>> produced(["no positions", "no residual"])  # an ordering of produced values
'\\u2063no positions, no residual\\u2063'
>>> produced(0.5, "{:.1%}") == MARK + "50.0%" + MARK
True
"""

from __future__ import annotations

__all__ = [
    "MARK",
    "IGNORE_OUTPUT_REASONS",
    "produced",
    "loop_vs_library",
    "strip_marks",
    "unexplained_ignored_outputs",
]

#: U+2063 INVISIBLE SEPARATOR: zero-width in the rendered book, and found nowhere else in the outputs.
MARK = "\u2063"


def produced(value, fmt: str = "", sep: str = ", ") -> str:
    """``value`` formatted for display, between two :data:`MARK` characters (excluded from nbval's comparison).

    ``fmt`` is a format spec (``".2f"``) or a ``str.format`` template (``"{:.1%}"``); a string is used as it
    is; a list or tuple of values (an ordering) is formatted item by item and joined with ``sep``.
    """
    if isinstance(value, str):
        text = value
    elif isinstance(value, (list, tuple)):
        text = sep.join(produced(v, fmt).strip(MARK) for v in value)
    elif "{" in fmt:
        text = fmt.format(value)
    else:
        text = format(value, fmt)
    if MARK in text:
        raise ValueError("produced(): the value's text already contains the marker U+2063")
    return f"{MARK}{text}{MARK}"


def loop_vs_library(loop, library, fmt: str) -> str:
    """The line a page prints after training one model with its own loop and one with the library's
    ``train_lm`` from the same seed: the first and the last loss of each, as :func:`produced` numbers.

    >>> strip_marks(loop_vs_library([2.0, 1.5], [2.0, 1.25], ".2f"))
    'loss after 1 and 2 steps: loop above 2.00, 1.50; train_lm 2.00, 1.25'
    """
    first_last = [f"{produced(losses[0], fmt)}, {produced(losses[-1], fmt)}" for losses in (loop, library)]
    return f"loss after 1 and {len(loop)} steps: loop above {first_last[0]}; train_lm {first_last[1]}"


def strip_marks(text: str) -> str:
    """``text`` without the markers (for contexts that cannot show U+2063, such as LaTeX).

    >>> strip_marks(produced(2.0, ".1f"))
    '2.0'
    """
    return text.replace(MARK, "")


#: The only reasons a cell may carry nbval's ``nbval-ignore-output`` tag, which hides its *whole* output from
#: the comparison: what it prints varies by machine for one of these reasons. Its first line says which
#: (``# nbval-ignore-output: timings``). A trained or sampled number is not among them: it goes through
#: :func:`produced`, so the rest of its line is still compared.
IGNORE_OUTPUT_REASONS = (
    "timings",
    "progress bars",
    "package versions",
    "the environment report (what this machine has installed)",
)


def unexplained_ignored_outputs(notebooks) -> list[str]:
    r"""``"path, code cell n: first line"`` for each code cell of the ``.ipynb`` files ``notebooks`` tagged
    ``nbval-ignore-output`` whose first line is not ``# nbval-ignore-output: <reason>`` with a reason of
    :data:`IGNORE_OUTPUT_REASONS`.

    >>> import nbformat, pathlib, tempfile
    >>> cell = nbformat.v4.new_code_cell("print(loss)", metadata={"tags": ["nbval-ignore-output"]})
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "page.ipynb"
    >>> nbformat.write(nbformat.v4.new_notebook(cells=[cell]), path)
    >>> [p.split("/")[-1] for p in unexplained_ignored_outputs([path])]
    ['page.ipynb, code cell 0: print(loss)']
    >>> cell.source = "# nbval-ignore-output: timings\nprint(seconds)"
    >>> nbformat.write(nbformat.v4.new_notebook(cells=[cell]), path)
    >>> unexplained_ignored_outputs([path])
    []
    """
    import nbformat

    allowed = {f"# nbval-ignore-output: {r}" for r in IGNORE_OUTPUT_REASONS}
    problems = []
    for path in notebooks:
        code = [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
        for n, cell in enumerate(code):
            first = (cell.source.splitlines() or [""])[0].strip()
            if "nbval-ignore-output" in cell.metadata.get("tags", []) and first not in allowed:
                problems.append(f"{path}, code cell {n}: {first[:60]}")
    return problems
