r"""TeX that MathJax cannot typeset, caught before rendering (the commonest breakages).

The browser test (``tests/booktools/test_book_browser.py``, ``make test-browser``) typesets every page and
fails on any MathJax error; this static check finds the usual causes in seconds, in ``make test``:

- in a code cell, a TeX command in a Python string without ``r`` whose backslash starts an escape:
  ``"$\theta$"`` holds a tab and ``heta``, ``"\frac"`` a form feed, ``"\nabla"`` a newline, ``"\beta"`` a
  backspace (the command names come from :data:`ESCAPED_COMMANDS`);
- in the markdown's maths: unbalanced braces, ``\left`` without ``\right``, ``\begin{x}`` without
  ``\end{x}``, a command MathJax does not define (read from the MathJax bundle the book ships,
  ``jupyter_server_mathjax``: ``\bm`` or ``\mathscr`` render as red text), a bare ``|`` inside maths in a
  table row (it ends the cell: write ``\lvert``, ``\rvert``, ``\Vert``), and a paragraph with an unpaired ``$``.

>>> [m for _, m in string_problems('label = f"$\\theta = {t}$"  # no r')]
['"\\theta" in a string without r: the \\t becomes a control character (write r"..." or "\\\\theta")']
>>> [m for _, m in maths_problems(r"$\frac{1}{2$ and $\left( x$ and $\bm x$")]  # doctest: +NORMALIZE_WHITESPACE
['unbalanced braces in $\\frac{1}{2$', '\\left without \\right in $\\left( x$',
 'MathJax does not define \\bm (in $\\bm x$)']
"""

from __future__ import annotations

import io
import re
import tokenize
from functools import cache
from pathlib import Path

from nextword.booktools.pages import Page, Problem
from nextword.booktools.texsymbols import GREEK, math_spans

__all__ = [
    "BOOK_MACROS",
    "CONTROL_SYMBOLS",
    "ESCAPED_COMMANDS",
    "check",
    "mathjax_commands",
    "maths_problems",
    "string_problems",
]

#: TeX commands that start with a Python escape letter (``\a \b \f \n \r \t \v``).
ESCAPED_COMMANDS = frozenset(
    {g for g in GREEK if g[0] in "abfnrtv"}
    | set(
        "approx arg ast angle bar big Big bigl bigr Bigl Bigr bigg binom bmod boldsymbol bm bot bullet backslash "
        "frac forall flat frown nabla neq ne neg not nonumber notin ni nu rangle rceil rfloor right rightarrow "
        "rm rvert rVert tfrac text textbf textit textrm texttt textsf theta times tilde to top triangle "
        "vec vee vert varepsilon varphi vartheta varrho varsigma varpi vdots vdash".split()
    )
)
_COMMAND_IN_STRING = re.compile(r"(?<!\\)\\([abfnrtv][A-Za-z]+)")


def string_problems(code: str) -> list[tuple[int, str]]:
    """``(line in code, message)`` for each TeX command in a non-raw string literal whose backslash is an escape."""
    found = []
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return []
    for tok in tokens:
        if tok.type != tokenize.STRING:
            continue
        prefix = re.match(r"[A-Za-z]*", tok.string)[0].lower()
        if "r" in prefix:
            continue
        for m in _COMMAND_IN_STRING.finditer(tok.string):
            name = m[1]
            if name in ESCAPED_COMMANDS:
                line = tok.start[0] + tok.string.count("\n", 0, m.start())
                found.append(
                    (
                        line,
                        f'"\\{name}" in a string without r: the \\{name[0]} becomes a control character '
                        f'(write r"..." or "\\\\{name}")',
                    )
                )
    return found


@cache
def mathjax_commands() -> frozenset[str]:
    """The command names MathJax (the book's bundle: TeX input, AMSmath, AMSsymbols) defines; empty if the
    bundle is not installed (the unknown-command check is then skipped)."""
    try:
        import jupyter_server_mathjax
    except ImportError:
        return frozenset()
    static = Path(jupyter_server_mathjax.__file__).parent / "static"
    files = [static / "jax/input/TeX/jax.js", *(static / "extensions/TeX").glob("AMS*.js")]
    names: set[str] = set()
    for path in files:
        if path.is_file():
            text = path.read_text(encoding="utf-8", errors="replace")
            names |= set(re.findall(r'[{,]"?([A-Za-z]+)"?:', text))
            names |= set(re.findall(r'"\\\\([A-Za-z]+)"', text))
    return frozenset(names)


_COMMAND = re.compile(r"\\([A-Za-z]+|[^A-Za-z\s])")
#: The control symbols MathJax defines (a backslash and one character that is not a letter).
CONTROL_SYMBOLS = frozenset(",:;>! {}|#$%&_\\")
#: Macros the book's MathJax configuration adds (``mathjax2_config["TeX"]["Macros"]`` in ``book/conf.py``).
BOOK_MACROS = frozenset({"*"})


def _balance(tex: str) -> int:
    depth = 0
    for m in re.finditer(r"\\.|[{}]", tex):
        if m[0] == "{":
            depth += 1
        elif m[0] == "}":
            depth -= 1
            if depth < 0:
                return depth
    return depth


def maths_problems(markdown: str) -> list[tuple[int, str]]:
    """``(offset, message)`` for each breakage in a markdown text's maths (module docstring)."""
    known = mathjax_commands()
    found = []
    for offset, tex in math_spans(markdown):
        shown = f"${tex.strip()[:50]}$"
        if _balance(tex) != 0:
            found.append((offset, f"unbalanced braces in {shown}"))
        lefts = len(re.findall(r"\\left(?![A-Za-z])", tex))
        if lefts != len(re.findall(r"\\right(?![A-Za-z])", tex)):
            found.append(
                (offset, f"\\left without \\right in {shown}" if lefts else f"\\right without \\left in {shown}")
            )
        begins = re.findall(r"\\begin\{(\w+\*?)\}", tex)
        ends = re.findall(r"\\end\{(\w+\*?)\}", tex)
        if sorted(begins) != sorted(ends) and not markdown[max(0, offset - 20) : offset].rstrip().endswith("}"):
            found.append((offset, f"\\begin and \\end do not match in {shown}"))
        if known:
            defined = set(re.findall(r"\\(?:newcommand|renewcommand|def)\{?\\([A-Za-z]+)", tex))
            for m in _COMMAND.finditer(tex):
                name = m[1]
                ok = name in known if name[0].isalpha() else name in CONTROL_SYMBOLS
                if not (ok or name in BOOK_MACROS or name in defined):
                    found.append((offset + m.start(), f"MathJax does not define \\{name} (in {shown})"))
    for line_start, line in _lines(markdown):
        if line.lstrip().startswith("|"):
            for offset, tex in math_spans(line):
                if re.search(r"(?<!\\)\|", tex):
                    found.append(
                        (
                            line_start + offset,
                            f"a bare | inside maths in a table row ends the cell: ${tex}$ (use \\lvert, \\rvert, \\Vert)",
                        )
                    )
    code = re.compile(r"(`+).+?\1|```.*?```", re.S)
    masked = code.sub(lambda m: " " * len(m[0]), markdown)
    for para_start, paragraph in _paragraphs(masked):
        dollars = [m.start() for m in re.finditer(r"(?<!\\)\$", paragraph)]
        if len(dollars) % 2:
            found.append((para_start + dollars[-1], "an unpaired $ in this paragraph: its maths is not typeset"))
    return sorted(found)


def _lines(text: str) -> list[tuple[int, str]]:
    out, at = [], 0
    for line in text.split("\n"):
        out.append((at, line))
        at += len(line) + 1
    return out


def _paragraphs(text: str) -> list[tuple[int, str]]:
    return [(m.start(), m[0]) for m in re.finditer(r"(?:[^\n]+\n?)+", text)]


def check(page: Page) -> list[Problem]:
    """The problems of the module docstring, with the ``.py`` line of each."""
    problems = [
        Problem("tex", cell.line + line - 1, message)
        for cell in page.code_cells()
        for line, message in string_problems(cell.text)
    ]
    problems += [
        Problem("tex", block.line_of(offset), message)
        for block in page.blocks
        for offset, message in maths_problems(block.text)
    ]
    return problems
