"""Every number on a page is produced: the scanner behind ``tests/booktools/test_prose_numbers.py``
(issue 16) and the folded-answer check (:mod:`nextword.booktools.checks.answers`).

A number in a notebook's markdown, or in the "what the code found" column of ``book/ERRATA.md``, must be

1. **printed** by a code cell of that notebook (its stored ``.ipynb`` outputs; for a ledger row, the
   outputs of its evidence notebooks), at the precision of the prose (``0.006`` matches a printed
   ``0.0061``), or set in a code cell of that notebook (a configuration value the reader sees in code;
   not a number in a comment, nor the bound of an ``assert``: :func:`set_in_code`);
2. for a ledger row only, **read from a saved result** its evidence notebook loads (``load_result("name")``:
   any value in that ``book/results/name/result.json``, at the prose's precision). A page's prose must
   have its produced numbers printed on the page: the reader cannot see a value of a file; or
3. **quoted from a source with its location**: the sentence names a place in a source (``Table 1``,
   ``Fig. 6.28``, ``Eq. (33)``, ``§7.2``, ``App. C.1``, ``Theorem 2``, "the paper reports" …). The book's
   own figures and tables, numbered by page ("Figure 4.7.2", "Table 3.3.1"), are not sources: a caption's
   numbers are the book's results and must be printed.

Allowed without evidence (the explicit allowlist): integers 0–10 (counts such as "2 layers" read the same
as "two layers"); years 1900–2099; numbers that name something (after Eq./Fig./Table/§/Section/Exercise/
Theorem/Part/Chapter/… or inside "(33)"-style equation references and "[63]" citations, and a page
number opening a link's text, "[6.3 Causal masking](…)"); run-time estimates
("about 20 s", "18 minutes"); integers inside LaTeX (formula constants and indices; decimals inside LaTeX
are checked); numbers inside inline code; digits that are part of a word or a file name (``ex07``,
``L_train``).

>>> prose_violations("The run gave a loss of 1.91 after 1200 steps.", (1.9112, 1200.0))
[]
>>> prose_violations("The run gave a loss of 1.9112 after 1200 steps.", ())
['1.9112', '1200']
"""

from __future__ import annotations

import ast
import io
import json
import math
import re
import tokenize
from functools import lru_cache
from pathlib import Path

from nextword.booktools.pages import REPO_ROOT

__all__ = [
    "book_page_numbers",
    "evidence",
    "ledger_rows",
    "ledger_violations",
    "numbers",
    "output_text",
    "percent_cells",
    "prose_violations",
    "set_in_code",
]

ROOT = REPO_ROOT
BOOK = ROOT / "book"
RESULTS = BOOK / "results"

# ---- parsing --------------------------------------------------------------------------------------
_CELL = re.compile(r"^# %%(.*)$", re.M)


def percent_cells(path: Path) -> list[tuple[str, str]]:
    """``(kind, text)`` per cell of a jupytext ``py:percent`` file; markdown text without the ``# ``."""
    src = path.read_text(encoding="utf-8")
    parts = _CELL.split(src)
    cells = []
    for header, body in zip(parts[1::2], parts[2::2]):
        if "[markdown]" in header:
            lines = [ln[2:] if ln.startswith("# ") else ln.lstrip("#") for ln in body.strip("\n").splitlines()]
            cells.append(("markdown", "\n".join(lines)))
        else:
            cells.append(("code", body))
    return cells


def output_text(nb_path: Path) -> str:
    if not nb_path.is_file():
        return ""
    nb = json.loads(nb_path.read_text(encoding="utf-8"))
    chunks = []
    for cell in nb.get("cells", []):
        for out in cell.get("outputs", []):
            if "text" in out:
                chunks.append("".join(out["text"]))
            for key in ("text/plain", "text/markdown", "text/latex"):
                if key in out.get("data", {}):
                    chunks.append("".join(out["data"][key]))
    return "\n".join(chunks)


_NUM = re.compile(
    r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d{1,3}(?:[ \u2009\u202f]\d{3})+(?![\d.,])|\d+)(\.\d+)?(?:[eE]([-+−]?\d+))?(?![\w])"
)


def numbers(text: str) -> list[tuple[str, float, int]]:
    """``(token, value, decimals)`` for every number in ``text`` (thousands commas allowed)."""
    out = []
    for m in _NUM.finditer(text):
        whole, frac, exp = m.group(1), m.group(2) or "", m.group(3)
        value = float(re.sub(r"[, \u2009\u202f]", "", whole) + frac)
        if exp is not None:
            value *= 10.0 ** int(exp.replace("−", "-"))
        out.append((m.group(0), value, len(frac) - 1 if frac else 0))
    return out


def _values(text: str) -> list[float]:
    return [v for _, v, _ in numbers(text)]


def _json_values(obj) -> list[float]:
    if isinstance(obj, bool):
        return []
    if isinstance(obj, (int, float)):
        return [float(obj)] if math.isfinite(obj) else []
    if isinstance(obj, dict):
        return [v for x in obj.values() for v in _json_values(x)]
    if isinstance(obj, list):
        return [v for x in obj for v in _json_values(x)]
    if isinstance(obj, str):
        return _values(obj)
    return []


_LOAD = re.compile(r"load_(?:result|curves)\(\s*[\"']([\w/-]+)[\"']")


def saved_results_read(py_text: str) -> list[str]:
    """Names of the saved results a notebook reads (``load_result("name")``, ``load_curves("name")``)."""
    return sorted(set(_LOAD.findall(py_text)))


@lru_cache(maxsize=None)
def evidence(py_rel: str, saved: bool = False) -> tuple[float, ...]:
    """Every number printed by or set in the code of notebook ``py_rel`` (a test file: every number of it);
    with ``saved``, also every value of the saved results it reads (the ledger's rule 2; a page's prose must
    see its produced numbers printed, so the page check leaves them out)."""
    py = ROOT / py_rel
    if py.suffix == ".ipynb":
        py = py.with_suffix(".py")
    if not py.is_file():
        return ()
    vals: list[float] = []
    if py.parent.name == "tests" or py_rel.startswith("tests/"):
        return tuple(_values(py.read_text(encoding="utf-8")))
    vals += _values(output_text(py.with_suffix(".ipynb")))
    vals += [v for kind, body in percent_cells(py) if kind == "code" for v in _values(set_in_code(body))]
    if saved:
        for name in saved_results_read(py.read_text(encoding="utf-8")):
            f = RESULTS / name / "result.json"
            if f.is_file():
                vals += _json_values(json.loads(f.read_text())["data"])
    return tuple(vals)


def set_in_code(body: str) -> str:
    r"""The values a code cell sets, as text: the cell without its comments and ``assert`` statements (a
    number in an assert bounds a produced number, it does not set one; a comment sets nothing), with the
    digit separators of ``40_000`` removed.

    >>> set_in_code("steps = 40_000  # about 2.61 bits\nassert abs(bpc - 2.61) < 0.05\nprint(bpc)")
    'steps = 40000\n\nprint ( bpc )'
    """
    lines = [re.sub(r"^\s*[%!].*", "", line) for line in body.split("\n")]  # IPython magics
    try:
        tree = ast.parse("\n".join(lines))
    except SyntaxError:
        tree = None
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.Assert):
            for i in range(node.lineno - 1, node.end_lineno or node.lineno):
                lines[i] = ""
    kept = "\n".join(lines)
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(kept).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        kept = re.sub(r"#.*$", "", kept, flags=re.M)
    else:
        rows: dict[int, list[str]] = {}
        for tok in tokens:
            if tok.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.ENDMARKER):
                rows.setdefault(tok.start[0], []).append(tok.string)
        kept = "\n".join(" ".join(rows.get(n, [])) for n in range(1, len(lines) + 1))
    return re.sub(r"(?<=\d)_(?=\d)", "", kept)


# ---- the allowlist --------------------------------------------------------------------------------
_NAMING_WORDS = (
    r"(?:Eqs?\.|Equations?|Figs?\.|Figures?|Tables?|§+|Sections?|Sec\.|Exercises?|Ex\.|Theorems?|Thm\.|"
    r"Propositions?|Prop\.|Corollar(?:y|ies)|Lemmas?|Examples?|Remarks?|Definitions?|Defs?\.|Assumptions?|Problems?|"
    r"Appendix|App\.|Part|Chapters?|Ch\.|Algorithm|Step|notebook|Notebook|Figs?|cell|line|page|p\.|pp\.|issues?)"
)
#: A number that names a place: right after a naming word ("Eq. (33)", "§7.2", "Theorem 2"), or continuing a
#: list of places that starts with one ("Figs. 6.5, 6.6 and 6.8", "Eqs. (3)-(5)"). A number after a comma,
#: "and", "to" or a dash that does not continue such a list is a number like any other.
_NAMING = re.compile(
    rf"{_NAMING_WORDS}\s*\(?[A-Z]?\.?$"
    rf"|{_NAMING_WORDS}\s*\(?[A-Z]?\.?\d[\w.]*\)?(?:\s*(?:,|and|or|to|–|-)\s*\(?[A-Z]?\.?\d[\w.]*\)?)*"
    r"\s*(?:,|and|or|to|–|-)\s*\(?[A-Z]?\.?$"
)
#: The book numbers its own figures and tables by page, "Figure 4.7.2", "Table 3.3.1": those are not sources
#: (a caption's numbers are the book's own results), so a place counts only without a third level.
_OWN = r"(?!\d*\.\d+\.\d)"
_SOURCE_PLACE = re.compile(
    rf"(Eqs?\.\s*\(?\d|Fig(?:ure|s?\.)\s*{_OWN}\d|Tables?\s*{_OWN}\d|§\s*\d|Section\s*\d|App(?:endix|\.)\s*[A-Z]|"
    r"Theorem\s*\d|Proposition\s*\d|Corollary\s*\d|Lemma\s*\d|Example\s*\d|Remark\s*\d|Exercise\s*\d|"
    r"the paper(?![-\w])|the paper's|the chapter(?![-\w])|the chapter's|the source|paper:|chapter:|"
    r"Vaswani|Press et al|et al\.)",
    re.I,
)
#: A quote exempts the numbers of its clause, not of its whole sentence: "the 613 exclusions of Fig. 3.3 are
#: confirmed: from 4·10⁶ sequences P = 0.1548" quotes 613, and 0.1548 is the book's own number.
_CLAUSE = re.compile(r";\s|:\s|\s[—–]\s|,?\s+i\.e\.,?\s|,\s+(?:whereas|but|while)\s")
_DURATION = re.compile(r"\s*(s|sec|seconds?|min|minutes?|h|hours?|CPU-hours?|CPU-minutes?)\b")
_LATEX = re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$", re.S)
_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"\]\([^)]*\)")
_LINK_PAGE = re.compile(r"(?<=\[)§?\d+(?:\.\d+)*(?=[^\]\n]*\]\()")  # "[6.3 Causal masking](...)": a page number
_ABBREV = "".join(
    f"(?<!\\b{re.escape(a)})"  # a whole word: "step." does not end in the abbreviation "p."
    for a in (
        "App.",
        "Eq.",
        "Eqs.",
        "Fig.",
        "Figs.",
        "Sec.",
        "Thm.",
        "Prop.",
        "al.",
        "e.g.",
        "i.e.",
        "vs.",
        "cf.",
        "Ch.",
        "Ex.",
        "p.",
        "pp.",
    )
)
_SENTENCE = re.compile(rf"(?<=[.!?]){_ABBREV}\s+(?=[A-Z*(|])|\n\s*\n|\n\s*[-*] ")
_HEADING = re.compile(r"^(#+\s*)([\d.]+)", re.M)  # "## 6.5 Positional encoding": a section number


def _masked(text: str, pattern: re.Pattern, keep_decimals: bool) -> str:
    """Blank out ``pattern`` spans; inside LaTeX keep decimals (they are checked), drop integers."""

    def repl(m: re.Match) -> str:
        span = m.group(0)
        if not keep_decimals:
            return " " * len(span)
        return re.sub(r"(?<![\d.])\d+(?![\d.])", lambda n: " " * len(n.group(0)), span)

    return pattern.sub(repl, text)


@lru_cache(maxsize=1)
def book_page_numbers() -> frozenset[str]:
    """The book's own page numbers ("6.2", "3.1", "5.6"), read from the link texts of ``book/README.md``'s
    contents: a prose "see 6.2" or "the previous page, 3.1," names a page, not a result."""
    readme = BOOK / "README.md"
    if not readme.is_file():
        return frozenset()
    return frozenset(re.findall(r"^- \[(\d\.\d)\b", readme.read_text(encoding="utf-8"), re.M))


def prose_violations(text: str, vals: tuple[float, ...]) -> list[str]:
    """Numbers of the markdown ``text`` that are neither produced (``vals``), quoted nor allowlisted."""
    text = re.sub(r"^\s*\|.*$", lambda m: m.group(0).replace("|", "\n\n"), text, flags=re.M)  # table cells
    text = _HEADING.sub(lambda m: m.group(1) + " " * len(m.group(2)), text)
    text = _masked(text, _CODE, False)
    text = _masked(text, _LINK_PAGE, False)
    text = _masked(text, _LINK, False)
    text = _masked(text, _LATEX, True)
    bad = []
    for sentence in (c for s in _SENTENCE.split(text) if s for c in _CLAUSE.split(s)):
        if not sentence or not sentence.strip():
            continue
        quoted = bool(_SOURCE_PLACE.search(sentence))
        for m in _NUM.finditer(sentence):
            token = m.group(0)
            before = sentence[: m.start()]
            if re.search(r"\d\.$|\d$", before) or quoted:
                continue
            after = sentence[m.end() :]
            if _NAMING.search(before.rstrip()[-80:]) or re.search(r"[(\[]\s*$", before) and after[:1] in ")]":
                continue  # names a place ("Eq. (33)", "§7.2"), an equation "(33)" or a citation "[63]"
            if _DURATION.match(after):
                continue  # a run-time estimate ("about 20 s", "18 minutes"): not a result of the book
            _, value, dec = numbers(token)[0]
            if dec == 0 and "e" not in token.lower() and (value <= 10 or 1900 <= value <= 2099):
                continue
            if re.match(r"\d+(\.\d+)+$", token) and token.count(".") > 1:  # section numbers like 6.5.1
                continue
            if token in book_page_numbers():  # a page of the book: "see 6.2"
                continue
            sci = bool(re.match(r"\s*(\\times|×|·)\s*10", sentence[m.end() :]))
            if any(_matches(value, dec, v, sci) for v in vals):
                continue
            bad.append(token)
    return bad


def _matches(value: float, dec: int, candidate: float, scientific: bool = False) -> bool:
    """Does the prose ``value`` (``dec`` decimals) state ``candidate`` at the prose's precision?"""
    c = abs(candidate)
    if abs(round(c, dec) - value) < 1e-9 * max(1.0, value):
        return True
    if not (value and c):
        return False
    sig = max(1, len(f"{value:g}".split("e")[0].replace(".", "").lstrip("0")))
    if float(f"{c:.{sig}g}") == float(f"{value:.{sig}g}"):  # significant figures: 7.8e+05 printed, 780,000 written
        return True
    if scientific:  # "7.8 × 10^5" in the prose: compare mantissas
        return float(f"{c / 10 ** math.floor(math.log10(c)):.{sig}g}") == value
    return False


def ledger_rows() -> list[tuple[str, str, list[str]]]:
    """``(id, found, evidence files)`` per row of ``book/ERRATA.md``."""
    rows = []
    for line in (BOOK / "ERRATA.md").read_text(encoding="utf-8").splitlines():
        cols = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        if len(cols) != 5 or set(cols[0]) <= set("-: ") or cols[0].lower() == "source":
            continue
        refs = re.findall(r"((?:book|solutions|tests)/[\w/.-]+?)(?:\.ipynb|\.py)?(?=[\s§:,;)]|$)", cols[4])
        files = [r + (".py" if not r.startswith("tests/") else ".py") for r in refs]
        rows.append((f"{cols[0][:20]} | {cols[1][:40]}", cols[3], files))
    return rows


def ledger_violations(found: str, files: list[str]) -> list[str]:
    """Numbers of a ledger row's ``found`` text that its evidence notebooks (``files``) do not print, set in
    code or read from a saved result."""
    vals = tuple(v for f in files for v in evidence(f, saved=True))
    return prose_violations(found, vals)
