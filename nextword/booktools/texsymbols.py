r"""The symbols of a page's maths: what counts as a symbol, read from TeX.

A **symbol** is one letter — Latin (``x``, ``W``) or Greek (``\alpha``, ``\Sigma``, also ``\ell``) — with

- its *decorations*, which make it another symbol: ``\hat``, ``\tilde``, ``\bar``, ``\dot``, ``\check``,
  ``\widehat``, ``\widetilde``, ``\overline``, and the alphabets ``\mathcal``, ``\mathsf``, ``\mathfrak``,
  ``\mathscr`` (``\hat y`` and ``\mathcal Z`` are symbols of their own);
- its *subscript* (``d_k``, ``d_{\text{model}}``, ``x_t``, ``W_{Q}``), kept as part of its name;
- a *name superscript*: ``Q``, ``K``, ``V``, ``O`` or text (``W^Q``, ``W^{\text{out}}``); any other
  superscript is an exponent or a transpose (``x^2``, ``W^\top``, ``W^T``, ``A^{-1}``) and is read as
  maths, not as part of the symbol (a transpose ``^T``, ``^\top``, a star or a prime is nothing).

Bold and vector fonts do not make another symbol (``\mathbf e`` and ``\boldsymbol e``, ``\vec e`` are
``e``); an index in brackets after a symbol (``q[i]``, ``\alpha[i,j]``) is read as maths. Not symbols:
operators and functions (``\log``, ``\exp``, ``\max``, ``\operatorname{…}``, ``\mathrm{…}``, ``\text{…}``),
``\mathbb{…}`` (number sets and ``\mathbb E``), numbers, ``\nabla``, ``\partial``, ``\infty``, the ``e`` of an
exponential (an ``e`` followed by ``^``), and a run of three or more letters (a word set in italics, such as
``softmax``). Two letters side by side are two symbols (``QK`` is ``Q`` times ``K``).

>>> [s.key for s in symbols(r"\mathbf e[i] W^Q = q_{i},\ \hat y = \mathrm{softmax}(x^2 / \sqrt{d_{\text{model}}})")]
['e', 'i', 'W^{Q}', 'q_{i}', '\\hat{y}', 'x', 'd_{\\text{model}}']
>>> [s.key for s in symbols(r"e^{s_i} + \alpha[i,j]\,\mathcal L(\theta) - QK^\top")]
['s_{i}', '\\alpha', 'i', 'j', '\\mathcal{L}', '\\theta', 'Q', 'K']
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["GREEK", "Symbol", "math_spans", "symbols"]

GREEK = frozenset(
    "alpha beta gamma delta epsilon varepsilon zeta eta theta vartheta iota kappa lambda mu nu xi omicron pi varpi "
    "rho varrho sigma varsigma tau upsilon phi varphi chi psi omega Gamma Delta Theta Lambda Xi Pi Sigma Upsilon "
    "Phi Psi Omega ell".split()
)
_DECORATIONS = frozenset(
    "hat tilde bar dot ddot check breve widehat widetilde overline mathcal mathsf mathfrak mathscr".split()
)
_FONTS = frozenset("mathbf boldsymbol bm vec mathit mathbfit pmb".split())  # the same symbol, set in bold
_SKIP_ARG = frozenset(
    "text textrm textbf textit texttt textsf mathrm operatorname mbox hbox mathbb label tag ref eqref href "
    "color textcolor hspace vspace begin end mathop".split()
)
_NAME_SUPERSCRIPTS = frozenset("Q K V O".split())
_TRANSPOSES = frozenset(["T", "\\top", "\\intercal", "\\prime", "*", "\\ast", "\\star", "\\dagger"])
_TOKEN = re.compile(r"\\[A-Za-z]+\*?|\\.|[A-Za-z]+|\d+(?:\.\d+)?|\S", re.S)


@dataclass(frozen=True)
class Symbol:
    """A symbol as :mod:`texsymbols` counts it: ``letter`` (``x``, ``\\alpha``), ``decorations`` (sorted),
    ``sub`` and ``sup`` (TeX text, ``""`` when absent); ``offset`` in the math text it was read from."""

    letter: str
    decorations: tuple[str, ...] = ()
    sub: str = ""
    sup: str = ""
    offset: int = 0

    @property
    def base(self) -> str:
        """The decorated letter, without subscript or superscript: ``\\hat{y}``, ``W``."""
        out = self.letter
        for d in reversed(self.decorations):
            out = f"\\{d}{{{out}}}"
        return out

    @property
    def key(self) -> str:
        """The symbol's name: ``W^{Q}``, ``d_{\\text{model}}``, ``\\hat{y}``."""
        return self.base + (f"_{{{self.sub}}}" if self.sub else "") + (f"^{{{self.sup}}}" if self.sup else "")

    def covers(self, other: Symbol) -> bool:
        """Does this (declared) symbol declare ``other``? The same decorated letter, and the same subscript and
        superscript where this one has them: a declared ``W`` covers ``W^Q`` and ``W_1``, ``q`` covers ``q_i``;
        a declared ``W^Q`` covers only ``W^Q``."""
        return (
            self.letter == other.letter
            and self.decorations == other.decorations
            and (not self.sub or self.sub == other.sub)
            and (not self.sup or self.sup == other.sup)
        )


def _tokens(tex: str) -> list[tuple[int, str]]:
    return [(m.start(), m[0]) for m in _TOKEN.finditer(tex)]


def _group(tokens: list[tuple[int, str]], i: int) -> tuple[list[tuple[int, str]], int]:
    """The argument at ``tokens[i]``: a braced group's inner tokens, or the single token; and the index after."""
    if i >= len(tokens):
        return [], i
    if tokens[i][1] != "{":
        return [tokens[i]], i + 1
    depth, j = 0, i
    while j < len(tokens):
        depth += {"{": 1, "}": -1}.get(tokens[j][1], 0)
        if depth == 0:
            return tokens[i + 1 : j], j + 1
        j += 1
    return tokens[i + 1 :], len(tokens)


def _text(tokens: list[tuple[int, str]]) -> str:
    """The TeX of tokens, a space only where a command meets a letter (``\\text model`` stays two tokens)."""
    out = ""
    previous = ""
    for _, tok in tokens:
        if re.fullmatch(r"\\[A-Za-z]+", previous) and tok[0].isalpha():
            out += " "
        out += tok
        previous = tok
    return out


def _single_letter(tokens: list[tuple[int, str]]) -> tuple[list[str], str] | None:
    """``(decorations, letter)`` when a group is one (decorated) letter, else None."""
    decorations: list[str] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i][1]
        if tok.startswith("\\") and tok[1:] in _DECORATIONS | _FONTS:
            if tok[1:] in _DECORATIONS:
                decorations.append(tok[1:])
            inner, i = _group(tokens, i + 1)
            found = _single_letter(inner)
            if found is None or i != len(tokens):
                return None
            return decorations + found[0], found[1]
        if len(tokens) == 1 and (re.fullmatch(r"[A-Za-z]", tok) or (tok.startswith("\\") and tok[1:] in GREEK)):
            return decorations, tok
        return None
    return None


def _scripts(tokens: list[tuple[int, str]], i: int) -> tuple[str, str, list[list[tuple[int, str]]], int]:
    """Subscript and name superscript after a symbol at ``tokens[i]``: ``(sub, sup, exponents, index after)``;
    an exponent's tokens are returned to be read as maths."""
    sub = sup = ""
    exponents = []
    while i < len(tokens) and tokens[i][1] in ("_", "^", "'"):
        mark = tokens[i][1]
        if mark == "'":
            i += 1
            continue
        arg, i = _group(tokens, i + 1)
        text = _text(arg)
        if mark == "_" and not sub:
            sub = text
        elif mark == "^" and not sup and (text in _NAME_SUPERSCRIPTS or re.match(r"\\(text|mathrm)\b", text)):
            sup = text
        elif mark == "^" and text in _TRANSPOSES:
            continue
        else:
            exponents.append(arg)
    return sub, sup, exponents, i


def symbols(tex: str) -> list[Symbol]:
    """Every symbol of a TeX math text, in order (module docstring)."""
    return _read(_tokens(tex))


def _read(tokens: list[tuple[int, str]]) -> list[Symbol]:
    out: list[Symbol] = []
    i = 0
    while i < len(tokens):
        offset, tok = tokens[i]
        name = tok[1:].rstrip("*") if tok.startswith("\\") else ""
        if name in _SKIP_ARG:
            _, i = _group(tokens, i + 1)
            if name in ("begin", "end") and i < len(tokens) and tokens[i][1] == "{":  # \begin{array}{cc}
                _, i = _group(tokens, i)
            continue
        if name in _DECORATIONS | _FONTS:
            arg, after = _group(tokens, i + 1)
            found = _single_letter(arg)
            if found is not None:
                decorations = ([name] if name in _DECORATIONS else []) + found[0]
                sub, sup, exponents, i = _scripts(tokens, after)
                out.append(Symbol(found[1], tuple(sorted(decorations)), sub, sup, offset))
                for exponent in exponents:
                    out += _read(exponent)
            else:
                out += _read(arg)
                i = after
            continue
        letters = tok if re.fullmatch(r"[A-Za-z]+", tok) else ""
        if letters and len(letters) >= 3:
            i += 1
            _, _, exponents, i = _scripts(tokens, i)
            for exponent in exponents:
                out += _read(exponent)
            continue
        if letters or name in GREEK:
            singles = list(letters) if letters else [tok]
            following = tokens[i + 1][1] if i + 1 < len(tokens) else ""
            if singles[-1] == "e" and following == "^" and len(singles) == 1:  # the e of an exponential
                i += 1
                _, _, exponents, i = _scripts(tokens, i)
                for exponent in exponents:
                    out += _read(exponent)
                continue
            for n, letter in enumerate(singles[:-1]):
                out.append(Symbol(letter, (), "", "", offset + n))
            sub, sup, exponents, i = _scripts(tokens, i + 1)
            out.append(Symbol(singles[-1], (), sub, sup, offset + len(singles) - 1))
            for exponent in exponents:
                out += _read(exponent)
            continue
        i += 1
    return out


_MATH = re.compile(
    r"\$\$(?P<display>.+?)\$\$"
    r"|(?<![\\$])\$(?P<inline>(?:[^$\n]|\n(?![ \t]*\n))+?)(?<!\\)\$"
    r"|(?P<env>\\begin\{(?P<name>equation|align|gather|multline|eqnarray)\*?\}.*?\\end\{(?P=name)\*?\})"
    r"|```\{math\}[^\n]*\n(?P<fenced>.*?)```",
    re.S,
)


def math_spans(markdown: str) -> list[tuple[int, str]]:
    """``(offset, tex)`` of every maths of a markdown text: ``$…$``, ``$$…$$``, amsmath environments and
    ```` ```{math} ```` blocks; inline code (```…```) is not maths.

    >>> math_spans("a $x$ and `$y$` and $$z$$")
    [(3, 'x'), (22, 'z')]
    """
    code = re.compile(r"(`+)(?!\{math\}).+?\1", re.S)
    masked = code.sub(lambda m: " " * len(m[0]) if not m[0].startswith("```{math}") else m[0], markdown)
    spans = []
    for m in _MATH.finditer(masked):
        group = next(g for g in ("display", "inline", "env", "fenced") if m[g] is not None)
        spans.append((m.start(group), m[group]))
    return spans
