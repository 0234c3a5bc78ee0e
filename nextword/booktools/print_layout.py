"""The PDF edition's layout: what the LaTeX build does with a page's doctree (a hook that ``book/conf.py``
connects; the HTML is left as it is). :func:`layout_for_print` runs the steps below in order.

**Boxed tables in print.** LaTeX draws an admonition as a framed box and a short table as one unbreakable
``tabulary``; a box holding a table taller than a page (a long "Symbols on this page") never fits, and xelatex
emits empty pages until TeX's stack overflows (a 10,183-page PDF). In the PDF each admonition that holds a table
becomes its title as a rubric followed by its content, and the table a ``longtable`` with column widths, which
breaks across pages and wraps its cells (:func:`lift_boxed_tables`). The HTML keeps the boxes.

**Wide tables in print.** LaTeX gives each column of a table an equal share of the line and cannot break a long
path or dotted name (``tests/decoding/test_decoding.py::test_...``) inside a cell, so such words run off the page
edge and a five-column table (the errata ledger) is 70 pages of narrow columns. In the PDF a table of five or more
columns gets column widths from its text (the square root of each column's mean cell length) in a smaller type,
and a long word in any table cell may break after ``/ _ . :`` (:func:`fit_tables`). A formula a cell printed
(sympy's ``display(Math(...))``) that is wider than the line is shrunk to the line (:func:`fit_output_math`; the
macro ``\\nextwordfitmath`` is in ``book/conf.py``'s LaTeX preamble).

**Records, bookmarks and links in print.** A table of seven or more columns prints as one record per row
(:func:`tables_as_records`); a heading's formula gets a Unicode outline text (:func:`bookmark_maths`); links to
the landing page print as plain text (:func:`unlink_root`) and an exercise's "Book notebook" path links to its page
(:func:`link_book_notebooks`).
"""

from __future__ import annotations

import re

from docutils import nodes

__all__ = [
    "bookmark_maths",
    "bookmark_text",
    "fit_output_math",
    "fit_tables",
    "layout_for_print",
    "lift_boxed_tables",
    "link_book_notebooks",
    "tables_as_records",
    "unlink_root",
]


def _give_column_widths(table: nodes.table, width) -> None:
    """Make ``table`` a ``longtable`` (it breaks across pages) with given column widths: each column's width is
    ``width(lengths)`` of the lengths of its cells' texts (Sphinx then sets each column to its share of the line)."""
    for group in table.findall(nodes.tgroup):
        specs = list(group.findall(nodes.colspec))
        lengths: list[list[int]] = [[] for _ in specs]
        for row in group.findall(nodes.row):
            for i, entry in enumerate(row.children[: len(specs)]):
                lengths[i].append(_printed_length(entry))
        for spec, column in zip(specs, lengths):
            spec["colwidth"] = width(column)
    table["classes"] = [*table["classes"], "longtable", "colwidths-given"]


def _printed_length(node: nodes.Node) -> int:
    """About how many characters ``node`` prints: its text, with each formula counted as its Unicode form
    (:func:`bookmark_text`), not its TeX source (``\\varepsilon_t`` prints one letter and a subscript).

    >>> _printed_length(nodes.paragraph("", "", nodes.Text("noise "), nodes.math("", r"\\varepsilon_t, \\sigma")))
    11
    """
    if isinstance(node, nodes.math):
        return len(bookmark_text(node.astext()))
    if isinstance(node, nodes.Text):
        return len(node)
    return sum(_printed_length(child) for child in node.children)


def lift_boxed_tables(doctree: nodes.Node) -> int:
    """Replace each admonition that holds a table by a rubric with its title, then its content; make every such
    table a ``longtable`` with given column widths (each column's share: its longest cell, between 12 and 60
    characters). Returns how many admonitions were lifted.

    >>> from docutils.core import publish_doctree
    >>> rst = ".. admonition:: Symbols\\n\\n   ===  ========\\n   a    the first\\n   b    the second\\n   ===  ========\\n"
    >>> doc = publish_doctree(rst)
    >>> lift_boxed_tables(doc), [type(n).__name__ for n in doc]
    (1, ['rubric', 'table'])
    >>> doc[1]["classes"], [c["colwidth"] for c in doc[1].findall(nodes.colspec)]
    (['longtable', 'colwidths-given'], [12, 12])
    """
    lifted = 0
    for box in list(doctree.findall(nodes.Admonition)):
        tables = list(box.findall(nodes.table))
        if not tables or box.parent is None:
            continue
        for table in tables:
            _give_column_widths(table, lambda lengths: max(12, min(60, max(lengths, default=0))))
        title = [child for child in box.children if isinstance(child, nodes.title)]
        rubric = [nodes.rubric("", "", *title[0].children)] if title else []
        box.replace_self(rubric + [child for child in box.children if not isinstance(child, nodes.title)])
        lifted += 1
    return lifted


def _break_long_words(entry: nodes.Node, longest: int = 12) -> int:
    """Let every word longer than ``longest`` characters in ``entry``'s text break after ``/ _ . :`` (a raw LaTeX
    ``\\allowbreak{}`` after each such character; math, literal blocks and raw text are left alone)."""
    changed = 0
    for text in list(entry.findall(nodes.Text)):
        parent = text.parent
        if parent is None or any(
            isinstance(n, (nodes.math, nodes.math_block, nodes.FixedTextElement, nodes.raw)) for n in _ancestors(parent)
        ):
            continue
        pieces = []
        for word in re.split(r"(\s+)", str(text)):
            if len(word) > longest:
                parts = re.split(r"(?<=[/_.:])(?=[^/_.:])", word)
                for part in parts[:-1]:
                    pieces += [nodes.Text(part), nodes.raw("", r"\allowbreak{}", format="latex")]
                pieces.append(nodes.Text(parts[-1]))
            else:
                pieces.append(nodes.Text(word))
        if len(pieces) > len(re.split(r"(\s+)", str(text))):
            index = parent.index(text)
            parent[index : index + 1] = pieces
            changed += 1
    return changed


def _break_math_lists(entry: nodes.Node, longest: int = 6, whole: int = 10) -> int:
    """Let every formula longer than ``longest`` characters in ``entry`` break after a comma outside braces and
    brackets, so a shape ``(d, d_{ff})`` stays whole. (TeX breaks an inline formula only after a relation or an
    operator: a list of symbols in a narrow table column, ``W^Q, W^K, W^V, W^O``, ran over the next column.)
    An item of the list that prints at most ``whole`` characters is braced, so it breaks only at the commas:
    "p(y, z), p(z | y)" broke after its "|", leaving "y)" alone on the next line; so is a formula of at most
    ``whole`` characters without such a comma (the Part 2 overview's cell is two formulas, and broke the same
    way). Returns how many formulas were changed.

    >>> cell = nodes.entry("", nodes.paragraph("", "", nodes.math("", "W^Q, W^K, W^{V,O}"), nodes.math("", "(d, d)")))
    >>> _break_math_lists(cell), cell.astext().replace(chr(92), "/")
    (1, '{W^Q},/allowbreak {W^K},/allowbreak {W^{V,O}}(d, d)')
    >>> cell = nodes.entry("", nodes.math("", "p(y, z), p(z \\\\mid y), q_1 = a + b + c + d + e"))
    >>> _break_math_lists(cell), cell.astext().replace(chr(92), "/")
    (1, '{p(y, z)},/allowbreak {p(z /mid y)},/allowbreak q_1 = a + b + c + d + e')
    >>> cell = nodes.entry("", nodes.math("", "\\\\partial\\\\,\\\\text{out}[i]=0"))
    >>> _break_math_lists(cell), cell.astext().replace(chr(92), "/")
    (1, '{/partial/,/text{out}[i]=0}')
    >>> cell = nodes.entry("", nodes.math("", "\\\\left\\\\langle a, b\\\\right\\\\rangle"))
    >>> _break_math_lists(cell), cell.astext().replace(chr(92), "/")
    (1, '/left/langle a,/allowbreak b/right/rangle')
    >>> short, long = nodes.math("", "p(z\\\\mid y)"), nodes.math("", "q(z\\\\mid x) = p(z\\\\mid x)")
    >>> cell = nodes.entry("", nodes.paragraph("", "", short, long))
    >>> _break_math_lists(cell), cell.astext().replace(chr(92), "/")
    (1, '{p(z/mid y)}q(z/mid x) = p(z/mid x)')
    """
    changed = 0
    for math in list(entry.findall(nodes.math)):
        source = math.astext()
        if len(source) <= longest:
            continue
        items, depth = [""], 0
        for char in source:
            depth += {"{": 1, "}": -1, "(": 1, ")": -1, "[": 1, "]": -1}.get(char, 0)
            if char == "," and depth == 0 and not items[-1].endswith("\\"):  # \, is a thin space
                items.append("")
            else:
                items[-1] += char
        items = [item.strip() for item in items]
        if len(items) == 1 and (len(bookmark_text(source)) > whole or source.startswith("{") or "{{" in source):
            continue
        if not re.search(r"\\(left|right|middle|begin|end)\b|&", source) and all(
            item.count("{") == item.count("}") for item in items
        ):  # a braced group cannot hold half of a \left ... \right pair
            items = [f"{{{item}}}" if item and len(bookmark_text(item)) <= whole else item for item in items]
        del math.children[:]
        math += nodes.Text(r",\allowbreak ".join(items))
        changed += 1
    return changed


def _ancestors(node: nodes.Node):
    while node is not None:
        yield node
        node = node.parent


#: Sphinx sets a table of more rows than this as a ``longtable`` whose columns share the line equally.
_LONGTABLE_ROWS = 30


def fit_tables(doctree: nodes.Node, min_columns: int = 5) -> int:
    """Fit tables to the printed page: a long word in a cell may break after ``/ _ . :``, and a table of at least
    ``min_columns`` columns (whose widths are not given) gets widths from its text (each column's share: the
    square root of its mean cell length, at least 4) and a ``\\small`` type. Returns how many tables were
    widened. A list of symbols in a cell's formula may break after its commas (:func:`_break_math_lists`). A
    narrower table of more than 30 rows (a ``longtable``: Sphinx would give each column the same
    width, and Appendix A's concordance squeezed its meanings into a quarter of the line beside a "used in"
    column of a few words) gets widths from its mean cell lengths, between 10 and 60 characters.

    >>> from docutils.core import publish_doctree
    >>> row = ["source", "where", "claim", "x" * 100, "tests/decoding/test_decoding.py::test"]
    >>> rule = " ".join("=" * len(cell) for cell in row)
    >>> rst = "\\n".join([rule, " ".join(row), rule])
    >>> doc = publish_doctree(rst)
    >>> fit_tables(doc)
    1
    >>> [c["colwidth"] for c in doc.findall(nodes.colspec)]
    [4, 4, 4, 10, 6]
    >>> " ".join(n.astext() for n in doc.findall(nodes.raw)).replace(chr(92), "/")
    '/begingroup/small /allowbreak{} /allowbreak{} /allowbreak{} /allowbreak{} /allowbreak{} /endgroup'
    """
    widened = 0
    for table in list(doctree.findall(nodes.table)):
        groups = list(table.findall(nodes.tgroup))
        free = "colwidths-given" not in table["classes"] and bool(groups)
        wide = free and groups[0]["cols"] >= min_columns
        if wide:  # widths from the text as written, before the breaks below add to it
            _give_column_widths(table, lambda lengths: max(4, round((sum(lengths) / max(1, len(lengths))) ** 0.5)))
        elif free and len(list(table.findall(nodes.row))) > _LONGTABLE_ROWS:
            _give_column_widths(table, lambda lengths: max(10, min(60, round(sum(lengths) / max(1, len(lengths))))))
        for entry in table.findall(nodes.entry):
            _break_long_words(entry)
            _break_math_lists(entry)
        if not wide:
            continue
        if table.parent is not None:
            index = table.parent.index(table)
            table.parent.insert(index + 1, nodes.raw("", r"\endgroup", format="latex"))
            table.parent.insert(index, nodes.raw("", r"\begingroup\small", format="latex"))
        widened += 1
    return widened


def tables_as_records(
    doctree: nodes.Node, min_columns: int = 5, min_row_text: int = 500, any_columns: int = 7, short_cells: int = 80
) -> int:
    """Print each table of at least ``min_columns`` columns whose body rows hold on average more than
    ``min_row_text`` characters (the errata ledger), and each table of at least ``any_columns`` columns
    (Appendix A's "five sources side by side"), as a list of records: per row, its first cell as the term of
    a definition list, then each other cell as a paragraph led by its column's heading in italics.

    A ``longtable`` row cannot break across pages, so a row taller than what is left of a page moves whole to
    the next one: the ledger's five narrow columns left up to half a page blank before such a row (and a row
    taller than a page would run off it). Paragraphs break anywhere, and full-width lines hyphenate less.
    Seven columns leave each about 9 characters of an A4 line: Appendix A's side-by-side table broke its
    formulas and words over three or four lines per cell, and one formula that cannot break ran 17.7pt into
    the next column. When the cells after the first hold on average fewer than ``short_cells`` characters, a
    record's cells are lines of one paragraph (a ``\\newline`` between them), not paragraphs spaced apart.
    Returns how many tables were changed.

    >>> from docutils.core import publish_doctree
    >>> row = ["Formulation", "§6.2", "beam search " * 20, "a sliding look-ahead " * 20, "book/part2/06.ipynb"]
    >>> rst = ".. list-table::\\n   :header-rows: 1\\n\\n"
    >>> for cells in (["source", "location", "claim", "what the code found", "evidence"], row):
    ...     rst += "".join(f"   {'*' if i == 0 else ' '} - {c}\\n" for i, c in enumerate(cells))
    >>> doc = publish_doctree(rst)
    >>> tables_as_records(doc), [type(n).__name__ for n in doc]
    (1, ['definition_list'])
    >>> item = doc[0][0]
    >>> item[0].astext(), [p.astext()[:20] for p in item[1]]
    ('Formulation', ['location: §6.2', 'claim: beam search b', 'what the code found:', 'evidence: book/part2'])
    """
    changed = 0
    for table in list(doctree.findall(nodes.table)):
        groups = list(table.findall(nodes.tgroup))
        if table.parent is None or len(groups) != 1 or groups[0]["cols"] < min_columns:
            continue
        head = [row for thead in groups[0].findall(nodes.thead) for row in thead.findall(nodes.row)]
        body = [row for tbody in groups[0].findall(nodes.tbody) for row in tbody.findall(nodes.row)]
        if len(head) != 1 or not body:
            continue
        if groups[0]["cols"] < any_columns and sum(len(row.astext()) for row in body) / len(body) <= min_row_text:
            continue
        names = [entry.astext().strip() for entry in head[0].children]
        cells_text = [len(entry.astext()) for row in body for entry in row.children[1:]]
        compact = sum(cells_text) / max(1, len(cells_text)) < short_cells
        records = nodes.definition_list(classes=["nextword-records"])
        for row in body:
            cells = [_cell_inlines(entry) for entry in row.children]
            if len(cells) != len(names):
                break
            term = nodes.term("", "", *cells[0])
            definition = nodes.definition()
            for name, cell in zip(names[1:], cells[1:]):
                line = [nodes.emphasis("", f"{name}:"), nodes.Text(" "), *cell]
                if compact and definition.children:  # short cells: a line each, no paragraph space between them
                    definition[-1] += [nodes.raw("", r"\newline ", format="latex"), *line]
                else:
                    definition += nodes.paragraph("", "", *line)
            for paragraph in definition.children:
                _break_long_words(paragraph, longest=20)
            records += nodes.definition_list_item("", term, definition)
        else:
            table.replace_self(records)
            changed += 1
    return changed


def _cell_inlines(entry: nodes.Node) -> list[nodes.Node]:
    """A table cell's content as inline nodes (a cell of one paragraph: that paragraph's children)."""
    children = list(entry.children)
    if len(children) == 1 and isinstance(children[0], nodes.paragraph):
        children = list(children[0].children)
    if not all(isinstance(child, (nodes.Inline, nodes.Text)) for child in children):
        return [nodes.Text(entry.astext())]
    return [child.deepcopy() for child in children]


def fit_output_math(doctree: nodes.Node) -> int:
    """Typeset each unnumbered display formula of a cell's output as ``\\nextwordfitmath{$...$}`` (shrunk to the
    line when wider, as a long sympy expression is). Returns how many formulas were changed.

    >>> block = nodes.math_block("", r"\\displaystyle x^2 = 1")
    >>> doc = nodes.container("", block, classes=["cell_output"])
    >>> fit_output_math(doc), block.get("nowrap")
    (1, True)
    >>> block.astext().replace(chr(92), "/")
    '/begin{center}/nextwordfitmath{$/displaystyle/begin{aligned}/displaystyle x^2 = 1/end{aligned}$}/end{center}'
    """
    changed = 0
    for block in list(doctree.findall(nodes.math_block)):
        source = block.astext()
        if block.get("label") or block.get("nowrap") or block.get("no-wrap") or "\n\n" in source.strip():
            continue
        if not any("cell_output" in n.get("classes", []) for n in _ancestors(block) if isinstance(n, nodes.Element)):
            continue
        tex = rf"\begin{{center}}\nextwordfitmath{{$\displaystyle\begin{{aligned}}{source.strip()}\end{{aligned}}$}}\end{{center}}"
        del block.children[:]
        block += nodes.Text(tex)
        block["nowrap"] = True
        changed += 1
    return changed


# --- headings' maths in the PDF outline ---------------------------------------------------------------------
#: TeX commands of headings' maths and the characters the PDF outline (bookmarks) shows for them.
_BOOKMARK_SYMBOLS = {
    "neq": "≠",
    "ne": "≠",
    "pm": "±",
    "le": "≤",
    "leq": "≤",
    "ge": "≥",
    "geq": "≥",
    "approx": "≈",
    "to": "→",
    "infty": "∞",
    "nabla": "∇",
    "partial": "∂",
    "sum": "Σ",
    "cdot": "·",
    "times": "×",
    "mid": "|",
    "ell": "ℓ",
    "alpha": "α",
    "beta": "β",
    "gamma": "γ",
    "delta": "δ",
    "epsilon": "ε",
    "varepsilon": "ε",
    "eta": "η",
    "kappa": "κ",
    "lambda": "λ",
    "mu": "μ",
    "pi": "π",
    "rho": "ρ",
    "sigma": "σ",
    "tau": "τ",
    "theta": "θ",
    "phi": "φ",
    "varphi": "φ",
    "psi": "ψ",
    "omega": "ω",
    "Sigma": "Σ",
    "Delta": "Δ",
    "in": "∈",
    "top": "⊤",
    ",": " ",
    ";": " ",
    "!": "",
    " ": " ",
    "{": "{",
    "}": "}",
}
_BOOKMARK_FONTS = {"mathbb": {"R": "ℝ", "N": "ℕ", "E": "𝔼", "Z": "ℤ"}}
_SUBSCRIPTS = dict(zip("0123456789+-=()aehijklmnoprstuvx", "₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑₕᵢⱼₖₗₘₙₒₚᵣₛₜᵤᵥₓ"))
_SUPERSCRIPTS = dict(zip("0123456789+-=()indktT", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁱⁿᵈᵏᵗᵀ"))
#: What the outline's text must escape inside ``\texorpdfstring`` (hyperref turns these back into characters).
_PDF_STRING_ESCAPES = {
    "\\": r"\textbackslash{}",
    "{": r"\{",
    "}": r"\}",
    "_": r"\_",
    "^": r"\textasciicircum{}",
    "#": r"\#",
    "%": r"\%",
    "&": r"\&",
    "$": r"\$",
    "~": r"\textasciitilde{}",
}
_TEX_TOKEN = re.compile(r"\\([A-Za-z]+)\s*|\\(.)|([{}_^'])|(\s+)|([^\\{}_^'\s])")  # TeX skips spaces after \word


def _tex_tokens(tex: str) -> list[tuple[str, str]]:
    return [
        (kind, value) for m in _TEX_TOKEN.finditer(tex) for kind, value in zip("ccgsx", m.groups()) if value is not None
    ]


def _tex_group(tokens: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Pop one argument (a token, or a ``{...}`` group without its braces) from the front of ``tokens``."""
    while tokens and tokens[0][0] == "s":
        tokens.pop(0)
    if not tokens:
        return []
    first = tokens.pop(0)
    if first != ("g", "{"):
        return [first]
    depth, out = 1, []
    while tokens:
        token = tokens.pop(0)
        depth += {("g", "{"): 1, ("g", "}"): -1}.get(token, 0)
        if depth == 0:
            break
        out.append(token)
    return out


def _tex_text(tokens: list[tuple[str, str]]) -> str:
    out = []
    while tokens:
        kind, value = tokens.pop(0)
        if kind == "c" and value in _BOOKMARK_FONTS:
            arg = _tex_text(_tex_group(tokens))
            out.append(_BOOKMARK_FONTS[value].get(arg, arg))
        elif kind == "c" and value == "sqrt":
            arg = _tex_text(_tex_group(tokens))
            out.append("√" + (arg if len(arg) == 1 or all(c in _SUBSCRIPTS.values() for c in arg[1:]) else f"({arg})"))
        elif kind == "c" and value in ("log", "exp"):  # an operator name: spaced from a symbol before it
            out.append(("" if not out or out[-1][-1:] in " (-/" else " ") + value + " ")
        elif kind == "c" and value in _BOOKMARK_SYMBOLS:
            out.append(_BOOKMARK_SYMBOLS[value])
        elif kind == "c":  # \text, \mathrm, \operatorname, ...: the argument as it is
            out.append(_tex_text(_tex_group(tokens)) if tokens and tokens[0] == ("g", "{") else "")
        elif kind == "g" and value in "_^":
            arg = _tex_text(_tex_group(tokens))
            table = _SUBSCRIPTS if value == "_" else _SUPERSCRIPTS
            if arg and all(c in table for c in arg):
                out.append("".join(table[c] for c in arg))
            else:
                out.append(value + (arg if len(arg) == 1 or arg.isalnum() else "{" + arg + "}"))
        elif kind == "g" and value == "'":
            out.append("′")
        elif kind == "g":  # a brace: a group's content stays
            continue
        else:
            out.append(" " if kind == "s" else value)
    return "".join(out)


def bookmark_text(tex: str) -> str:
    """A heading's formula as the PDF outline shows it: plain Unicode (an outline entry holds no TeX).
    Subscripts and superscripts become Unicode ones where every character has one, and ``_`` / ``^`` with the
    text otherwise.

    >>> [bookmark_text(t) for t in [r"w_V\\neq1", r"\\sqrt{d_k}", r"a=\\pm0.2", r"s\\le t", r"\\nabla_x\\log q"]]
    ['w_V≠1', '√dₖ', 'a=±0.2', 's≤t', '∇ₓ log q']
    >>> [bookmark_text(t) for t in [r"\\sqrt{d_{\\text{model}}}", r"\\gamma_{\\ell',\\ell}", r"\\mathbb R^d", r"1/\\sqrt{d_k}"]]
    ['√(d_model)', 'γ_{ℓ′,ℓ}', 'ℝᵈ', '1/√dₖ']
    """
    return re.sub(r" +", " ", _tex_text(_tex_tokens(tex))).strip()


def bookmark_maths(doctree: nodes.Node) -> int:
    """In every section title, give each formula the PDF outline's text of it (:func:`bookmark_text`) beside
    its TeX: ``\\texorpdfstring{\\(w_V\\neq1\\)}{w_V≠1}``. (hyperref builds a bookmark from the title's TeX and
    drops what it cannot print: "Proposition 1 when wV≠1", "Why divide by √dk?".) Returns how many formulas.

    >>> from docutils.core import publish_doctree
    >>> doc = publish_doctree("Why :math:`w_V`?\\n================\\n\\ntext\\n", settings_overrides={"doctitle_xform": False})
    >>> bookmark_maths(doc), doc[0][0].astext().replace(chr(92), "/")
    (1, 'Why /texorpdfstring{/protect/(w_V/protect/)}{w/_V}?')
    """
    changed = 0
    for title in list(doctree.findall(nodes.title)):
        if not isinstance(title.parent, nodes.section):
            continue
        for math in list(title.findall(nodes.math)):
            tex, text = math.astext(), bookmark_text(math.astext())
            text = "".join(_PDF_STRING_ESCAPES.get(c, c) for c in text)
            raw = rf"\texorpdfstring{{\protect\({tex}\protect\)}}{{{text}}}"
            math.replace_self(nodes.raw("", raw, format="latex"))
            changed += 1
    return changed


def unlink_root(doctree: nodes.Node, root: str = "index") -> int:
    """Print each link to the ``root`` document as its plain text. The HTML's root is the landing page (the route
    map); the PDF's root is its title and contents, so in print such a link went to the first page and, with page
    references on, read "the landing page (page 1)". Returns how many links were unlinked.

    >>> link = nodes.reference("", "", nodes.Text("landing page"), internal=True, refuri="%index")
    >>> other = nodes.reference("", "", nodes.Text("6.2"), internal=True, refuri="%book/6_2#scores")
    >>> doc = nodes.paragraph("", "", nodes.Text("see the "), link, nodes.Text(" and "), other)
    >>> unlink_root(doc), [type(n).__name__ for n in doc.children]
    (1, ['Text', 'inline', 'Text', 'reference'])
    """
    changed = 0
    for ref in list(doctree.findall(nodes.reference)):
        uri = ref.get("refuri", "")
        if uri == f"%{root}" or uri.startswith(f"%{root}#"):
            ref.replace_self(nodes.inline("", "", *ref.children))
            changed += 1
    return changed


_BOOK_NOTEBOOK = re.compile(r"book/part\w+/\w+")


def link_book_notebooks(doctree: nodes.Node, docnames) -> int:
    """Link the path after an exercise's "**Book notebook:**" to that page when it is one of ``docnames`` (the
    HTML links it in ``book/conf.py``'s ``_exercise_links``; in print the link then carries the page number).
    Returns how many paths were linked.

    >>> from docutils.core import publish_doctree
    >>> doc = publish_doctree("**Part:** 1 · **Book notebook:** book/part1_chapter6/6_2_attention_mechanism\\n")
    >>> link_book_notebooks(doc, {"book/part1_chapter6/6_2_attention_mechanism"})
    1
    >>> [(n.astext(), n["refuri"]) for n in doc.findall(nodes.reference)]
    [('book/part1_chapter6/6_2_attention_mechanism', '%book/part1_chapter6/6_2_attention_mechanism')]
    >>> link_book_notebooks(publish_doctree("**Book notebook:** book/part9_x/gone\\n"), set())
    0
    """
    changed = 0
    for strong in list(doctree.findall(nodes.strong)):
        parent = strong.parent
        if strong.astext().strip() != "Book notebook:" or parent is None:
            continue
        index = parent.index(strong) + 1
        if index >= len(parent) or not isinstance(parent[index], nodes.Text):
            continue
        text = str(parent[index])
        match = _BOOK_NOTEBOOK.search(text)
        if not match or match[0] not in docnames:
            continue
        link = nodes.reference("", match[0], internal=True, refuri=f"%{match[0]}")
        pieces = [nodes.Text(text[: match.start()]), link, nodes.Text(text[match.end() :])]
        parent[index : index + 1] = [piece for piece in pieces if piece.astext() or piece is link]
        changed += 1
    return changed


def layout_for_print(app, doctree: nodes.document, docname: str) -> None:
    """Sphinx ``doctree-resolved`` hook, LaTeX builder only: :func:`lift_boxed_tables` (first: the lifted tables
    get their widths there, and :func:`fit_tables` then only lets their long words break), :func:`fit_tables`,
    :func:`fit_output_math`, :func:`bookmark_maths`, :func:`unlink_root`, :func:`link_book_notebooks`. The HTML is left
    as it is."""
    if app.builder.format == "latex":
        lift_boxed_tables(doctree)
        tables_as_records(doctree)
        fit_tables(doctree)
        fit_output_math(doctree)
        bookmark_maths(doctree)
        unlink_root(doctree, getattr(getattr(app, "config", None), "root_doc", "index"))
        link_book_notebooks(doctree, getattr(getattr(app, "env", None), "found_docs", set()))
