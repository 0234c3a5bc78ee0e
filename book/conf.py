"""Sphinx configuration of the rendered book (``make book`` / ``python -m nextword.booktools.notebooks render``).

Sphinx reads the source tree that ``nextword.booktools.notebooks.stage_book`` lays out in ``_build/book_src`` (the
committed, executed notebooks and the generated contents pages) with this folder as its configuration
directory (``sphinx-build -c book``). Pages are rendered from the stored outputs, never re-executed, so
the HTML shows what ``pytest --nbval`` checked. Everything a page loads is in the built folder: MathJax
is copied from the ``jupyter-server-mathjax`` package, and the theme bundles its fonts and icons.
"""
from __future__ import annotations

import hashlib
import re
import shutil
from pathlib import Path

project = "nextword — Predicting the Next Word, Chapter 6 and its theory"
author = "the nextword authors"
copyright = "the nextword authors"  # noqa: A001 (Sphinx's name)

extensions = ["myst_nb", "sphinx.ext.mathjax", "sphinx_design"]   # sphinx_design: {dropdown} answers
exclude_patterns = ["**.ipynb_checkpoints", "_build"]
suppress_warnings = ["myst.header"]   # notebooks may jump from # to ### (a cell per idea)

# MyST-NB: render the stored outputs; math with $...$ / $$...$$ (numbered with a label), amsmath blocks.
nb_execution_mode = "off"
nb_merge_streams = True
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence"]
myst_dmath_double_inline = True
myst_heading_anchors = 3
numfig = True
math_numfig = True

# Offline MathJax 2 (the jupyter-server-mathjax bundle, STIX-Web fonts only), copied into _static/mathjax.
mathjax_path = "mathjax/MathJax.js?config=TeX-AMS-MML_HTMLorMML-full"
mathjax2_config = {
    # MyST-NB marks each notebook section tex2jax_ignore; Sphinx's math spans/divs carry class "math".
    # \* is a plain * (the notebooks write z^\*, as the PDF's preamble below reads it); nextword.booktools.checks.tex
    # knows the macros defined here (BOOK_MACROS)
    "TeX": {"Macros": {"*": "*"}},
    "tex2jax": {"inlineMath": [["\\(", "\\)"]], "displayMath": [["\\[", "\\]"]], "processEscapes": True,
                "ignoreClass": "tex2jax_ignore|mathjax_ignore", "processClass": "math"},
    "HTML-CSS": {"availableFonts": ["STIX-Web"], "preferredFont": "STIX-Web", "webFont": "STIX-Web",
                 "imageFont": None,
                 # MathJax's font-load probe is url('about:blank'), which Chromium reports as a CORS error;
                 # a local() source that never matches probes the same way without a request.
                 "styles": {"@font-face": {"font-family": "MathJax_Blank", "src": "local('MathJax Blank None')"}}},
    # The hidden assistive MathML asks for MathJax's TeX fonts (not in the bundle) for double-struck letters: a 404.
    "menuSettings": {"zoom": "None", "assistiveMML": False},
    "showMathMenu": False,
    "messageStyle": "none",
}

html_theme = "sphinx_book_theme"
html_title = "nextword: the book"
html_static_path = ["_static"]
html_css_files = ["nextword.css"]
html_js_files = ["nextword.js"]
html_favicon = "_static/favicon.svg"
html_context = {"default_mode": "light"}
# The hash of this file and of _static makes Sphinx re-read and rebuild every page when the hooks below
# change (Sphinx compares configuration values, not code); registered with rebuild="env" in setup().
_CONF_FILES = [Path(__file__), *sorted((Path(__file__).parent / "_static").glob("*"))]
nextword_conf_hash = hashlib.sha256(b"".join(f.read_bytes() for f in _CONF_FILES)).hexdigest()[:16]
# Result snippets would fetch each page: blocked (console errors) when index.html is opened from the
# file system, and they quote the theme's buttons; titles alone work everywhere.
html_show_search_summary = False
html_last_updated_fmt = None
html_theme_options = {
    "home_page_in_toc": True,
    "show_toc_level": 2,
    "use_download_button": True,
    "use_fullscreen_button": False,
    "use_repository_button": False,
    "use_source_button": False,
    "use_edit_page_button": False,
    "use_issues_button": False,
    "navigation_with_keys": False,
    "show_navbar_depth": 1,
    "collapse_navbar": False,
    "search_bar_text": "Search the book…",
}


def _copy_mathjax(app) -> None:
    """Put the ``jupyter-server-mathjax`` bundle into ``_static/mathjax`` (once; it does not change)."""
    import jupyter_server_mathjax

    if app.builder.format != "html":  # the PDF typesets its math with TeX
        return
    bundle = Path(jupyter_server_mathjax.__file__).parent / "static"
    target = Path(app.outdir) / "_static" / "mathjax"
    if not (bundle / "MathJax.js").exists():
        raise FileNotFoundError(f"no MathJax.js in {bundle}: reinstall jupyter-server-mathjax")
    if not (target / "MathJax.js").exists():
        shutil.copytree(bundle, target, dirs_exist_ok=True)


def _source_links(app, pagename: str, templatename: str, context: dict, doctree) -> None:
    """Add the page's jupytext ``.py`` source to the download menu (next to the ``.ipynb``)."""
    source = Path(app.srcdir) / f"{pagename}.py"
    if not source.exists():
        return
    target = Path(app.outdir) / "_sources" / f"{pagename}.py"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(source, target)
    for group in context.get("header_buttons", []):
        if group.get("label") == "download-buttons":
            group["buttons"].insert(1, {
                "type": "link", "url": f"{context['pathto']('_sources', 1)}/{pagename}.py", "text": ".py",
                "tooltip": "Download the jupytext source (the notebook's source of truth)",
                "icon": "fas fa-file-code", "label": "download-py-button"})


_PAIRED = {"exercises": ("solutions", "Solution", "The worked solution of this exercise is "),
           "solutions": ("exercises", "Exercise", "This is the worked solution of the student notebook ")}


def _exercise_links(app, pagename: str, templatename: str, context: dict, doctree) -> None:
    """Link each exercise page to its solution and back (a box under the title), and to its book notebook."""
    kind, _, rest = pagename.partition("/")
    if kind not in _PAIRED or rest.endswith("index") or "body" not in context:
        return
    other_kind, title, text = _PAIRED[kind]
    other = f"{other_kind}/{rest}"
    if other not in app.env.found_docs:
        return
    href = context["pathto"](other)
    label = app.env.titles[other].astext()
    box = (f'<div class="admonition tip nextword-pair"><p class="admonition-title">{title}</p>'
           f'<p>{text}<a class="reference internal nextword-pair-link" href="{href}">{label}</a>'
           f'{" (try it yourself first)." if kind == "exercises" else "."}</p></div>')
    body = re.sub(r"(Book notebook:</strong>\s*)(book/part\w+/\w+)",
                  lambda m: f'{m[1]}<a class="reference internal" href="{context["pathto"](m[2])}">{m[2]}</a>'
                  if m[2] in app.env.found_docs else m[0], context["body"])
    at = body.find("</h1>")
    context["body"] = body[:at + 5] + box + body[at + 5:] if at >= 0 else box + body


def _plain_title(app, pagename: str, templatename: str, context: dict, doctree) -> None:
    """The browser tab cannot typeset math: drop the \\( \\) delimiters from the page's <title>."""
    if context.get("title"):
        context["title"] = re.sub(r"\\[()]", "", context["title"])


def _solution_titles(app, doctree) -> None:
    """Title a solution page "Solution to Exercise NN — ..." so that it differs from its exercise
    in the sidebar, the search results and the browser tab (runs before Sphinx records titles)."""
    from docutils import nodes

    docname = app.env.docname
    if not docname.startswith("solutions/") or docname.endswith("index"):
        return
    title = next(iter(doctree.findall(nodes.title)), None)
    if title is not None and not title.astext().startswith("Solution"):
        title.insert(0, nodes.Text("Solution to "))


# --- accessibility (issue #31): figure alt text, named sidebar expanders, the search field's name ---------
# book/_templates overrides one theme component (search-button-field.html; the theme adds its components/
# folder to templates_path after ours).
templates_path = ["_templates"]
_CONF_FILES += sorted((Path(__file__).parent / "_templates").rglob("*.html"))
nextword_conf_hash = hashlib.sha256(b"".join(f.read_bytes() for f in _CONF_FILES)).hexdigest()[:16]


def _named_expanders(app, pagename: str, templatename: str, context: dict, doctree) -> None:
    """Name each sidebar expander (its ``<summary>`` holds only a chevron icon) after its section's page.

    The theme's ``generate_toctree_html`` (a BeautifulSoup tree) is wrapped so that every such ``<summary>``
    gets ``aria-label="Pages under <title>"`` (axe-core's ``summary-name``, WCAG 4.1.2)."""
    generate = context.get("generate_toctree_html")
    if generate is None or getattr(generate, "nextword_named", False):
        return

    def named(*args, **kwargs):
        out = generate(*args, **kwargs)
        for summary in getattr(out, "select", lambda _: [])("li > details > summary"):
            link = summary.parent.parent.find("a", recursive=False)
            if not summary.get_text(strip=True) and not summary.has_attr("aria-label") and link is not None:
                summary["aria-label"] = f"Pages under {link.get_text(' ', strip=True)}"
        return out

    named.nextword_named = True
    context["generate_toctree_html"] = named

# --- the PDF edition (issue #31; ``make pdf``: ``python -m nextword.booktools.notebooks pdf``) -------------
# xelatex reads the book's Unicode (Greek, arrows, box drawing in outputs) with the FreeFont family (Debian
# fonts-freefont-otf). The root document is the PDF's own index.md that ``stage_pdf`` writes: the parts as
# \part{...}, then \appendix with the exercises, the errata ledger and the sources.
latex_engine = "xelatex"
latex_documents = [("index", "nextword.tex", "nextword: the book", author, "manual")]
latex_show_urls = "no"
# a link to another page or section prints its page number after it, "6.3 Causal masking (page 53)": on paper a link
# cannot be followed, and the book's links ("Builds on", "checked below", the exercises' notebooks) are its map
latex_show_pagerefs = True
# The print edition's preamble (nextword.booktools.pdf):
# - glyphs the FreeFont faces lack (⊤ and ᵀ in the oblique mono of code comments, ⪰ in the serif) come from
#   DejaVu Sans, or xelatex drops them ("Missing character" in the log);
# - every page title carries the book's own number ("6.1 ...", "2.3 ...", "Appendix A"), so LaTeX's chapter and
#   section numbers beside it ("Chapter 2", "2.1" inside page 6.1) are switched off, and figures, tables and
#   equations are numbered through the book (not per LaTeX chapter, which no longer counts);
# - the running footer holds the page's (long) title: one wider than 85% of the line is shrunk to fit, or it
#   runs into the page number ("598" printed over "Chapter 41. 5.2 SVFlow: a flow that averages pulls, ...").
# - a page title keeps its letters' case: fncychap's Bjarne style set chapter titles in capitals, which
#   changes symbols and names ("the embedding φ" printed "THE EMBEDDING Φ", "vMF" as "VMF");
# - \nextwordfitmath shrinks a formula a cell printed to the line (nextword.booktools.print_layout.fit_output_math).
# - the PDF outline (bookmarks) cannot hold TeX: hyperref dropped the commands of a heading's maths, so that
#   "Proposition 1 when \(w_V\neq1\)" was bookmarked "Proposition 1 when wV=1" and "\(a=\pm0.2\)" as "a=0.2";
#   \pdfstringdefDisableCommands gives the commands the headings use their Unicode characters.
#   (nextword.booktools.print_layout.bookmark_maths gives each heading's formula its outline text, w_V≠1, √dₖ.)
# - a table column of short entries is not squeezed below its natural width up to 5em (tabulary's \tymin; Sphinx
#   sets 3 digits): the bibliography printed "Part" and "1" on two lines in its first column.
# - the contents leave room for three-digit page numbers in bold (\@pnumwidth; LaTeX's 1.55em is three digits
#   of the text font, not of the bold, larger part entries): a full-width title ran into its number,
#   "... (Baptista, Stuart, Tran)148", "... a model's printed answers270".
# - a long table continued on the next page is headed "(continued from previous page)", not Sphinx's "Table 44 –
#   continued from previous page": the book's tables have no captions, so the number named a table the reader
#   never saw numbered (longtable counts every table); a captioned table keeps its number.
# - a table cell's paragraphs are set ragged right (each cell is a varwidth box, whose start resets \rightskip, so
#   the setting rides on \sphinxAtStartPar): justified narrow cells spread their words ("hidden assignment  Z_i,
#   responsibili-ties" in 3.2's EM table) and hyphenated; Underfull \hbox 441 -> 293.
_PRINT_PREAMBLE = r"""
\usepackage{newunicodechar}
\newfontfamily\nextwordfallback{DejaVu Sans}[Scale=MatchLowercase]
\newunicodechar{⊤}{{\nextwordfallback\char"22A4}}
\newunicodechar{ᵀ}{{\nextwordfallback\char"1D40}}
\newunicodechar{⪰}{{\nextwordfallback\char"2AB0}}
\ChTitleAsIs
\setcounter{secnumdepth}{-1}
\counterwithout{figure}{chapter}\counterwithout{table}{chapter}
\counterwithout{equation}{chapter}
\setlength{\tymin}{5em}
\makeatletter
\newcommand{\nextwordfootmark}[1]{\sbox\z@{#1}%
  \ifdim\wd\z@>0.85\headwidth\resizebox{0.85\headwidth}{!}{\usebox\z@}\else\usebox\z@\fi}
\fancypagestyle{normal}{\fancyhf{}%
  \fancyfoot[RO]{{\py@HeaderFamily\thepage}}%
  \fancyfoot[LO]{{\py@HeaderFamily\nextwordfootmark{\nouppercase{\rightmark}}}}%
  \fancyhead[RO]{{\py@HeaderFamily \@title\sphinxheadercomma\py@release}}%
  \fancyfoot[LE]{{\py@HeaderFamily\thepage}}%
  \fancyfoot[RE]{{\py@HeaderFamily\nextwordfootmark{\nouppercase{\leftmark}}}}%
  \fancyhead[LE]{{\py@HeaderFamily \@title\sphinxheadercomma\py@release}}%
  \renewcommand{\headrulewidth}{0.4pt}\renewcommand{\footrulewidth}{0.4pt}}
\renewcommand{\@pnumwidth}{2.4em}\renewcommand{\@tocrmarg}{3.4em}
\newcommand{\nextwordfitmath}[1]{\sbox\z@{#1}%
  \ifdim\wd\z@>\linewidth\resizebox{\linewidth}{!}{\usebox\z@}\else\usebox\z@\fi}
\let\nextword@startpar\sphinxAtStartPar
\AddToHook{env/varwidth/begin}{\def\sphinxAtStartPar{\raggedright\nextword@startpar}}
\newif\ifnextwordcaptioned
\g@addto@macro\sphinxatlongtablestart{\global\nextwordcaptionedfalse}
\g@addto@macro\sphinxthelongtablecaptionisattop{\global\nextwordcaptionedtrue}
\let\nextword@tablecontinued\sphinxtablecontinued
\protected\def\sphinxtablecontinued#1{\ifnextwordcaptioned\nextword@tablecontinued{#1}\else
  \nextword@uncaptioned#1\textendash\nextword@end\fi}
\def\nextword@uncaptioned#1\textendash#2\nextword@end{\if\relax\detokenize{#2}\relax
  \nextword@tablecontinued{#1}\else\nextword@tablecontinued{(continued from previous page)}\fi}
\makeatother
\pdfstringdefDisableCommands{\def\neq{≠}\def\ne{≠}\def\pm{±}\def\le{≤}\def\leq{≤}\def\ge{≥}\def\geq{≥}%
  \def\approx{≈}\def\to{→}\def\infty{∞}\def\nabla{∇}\def\partial{∂}\def\sum{Σ}\def\cdot{·}%
  \def\times{×}\def\mid{|}\def\ell{ℓ}\def\alpha{α}\def\beta{β}\def\gamma{γ}\def\epsilon{ε}%
  \def\varepsilon{ε}\def\kappa{κ}\def\lambda{λ}\def\mu{μ}\def\sigma{σ}\def\theta{θ}\def\phi{φ}%
  \def\log{log }\def\exp{exp }\def\sqrt#1{√#1}\def\mathbb#1{#1}\def\mathrm#1{#1}\def\text#1{#1}%
  \def\mathbf#1{#1}\def\mathcal#1{#1}\def\hat#1{#1}\def\bar#1{#1}\def\tilde#1{#1}\def\,{ }\def\;{ }}
"""
latex_elements = {
    "papersize": "a4paper",
    # a chapter (a page of the book) starts on the next page, not the next right-hand one: no blank pages
    # (there were 35 of them, one after each part title and after each chapter that ended on a right page)
    "extraclassoptions": "openany",
    "pointsize": "10pt",
    "figure_align": "H",
    "sphinxsetup": "verbatimwrapslines=true, verbatimforcewraps=true",
    "printindex": "",
    # the notebooks write z^\* (the backslash keeps Markdown from reading * as emphasis; MathJax shows *)
    "preamble": r"\def\*{*}" + _PRINT_PREAMBLE,
}


def _drop_produced_marks(app, doctree, docname: str) -> None:
    """For LaTeX, replace the U+2063 markers that wrap produced numbers (nextword.booktools.display) by a visible
    dagger after the number (a missing glyph in the PDF's fonts otherwise); the HTML marks them with a dotted
    underline (nextword.booktools.rendering.mark_produced)."""
    from docutils import nodes

    from nextword.booktools.display import MARK
    from nextword.booktools.rendering import produced_for_print

    if app.builder.format != "latex":
        return
    for text in list(doctree.findall(nodes.Text)):
        if MARK in text:
            text.parent.replace(text, nodes.Text(produced_for_print(str(text))))


def _visit_hidden_cell(self, node) -> None:
    """MyST-NB's folded cell (``hide-cell``) without its ``aria-label``: the summary is then named by its visible
    text ("Show code cell content"), which axe-core's label-content-name-mismatch rule asks for."""
    from myst_nb.sphinx_ import visit_HideCellInput

    start = len(self.body)
    visit_HideCellInput(self, node)
    self.body[start:] = [s.replace('<summary aria-label="Toggle hidden content">', "<summary>") for s in self.body[start:]]


def setup(app):
    from myst_nb.sphinx_ import HideCodeCellNode, depart_HideCellInput

    app.add_node(HideCodeCellNode, override=True, html=(_visit_hidden_cell, depart_HideCellInput))
    app.add_config_value("nextword_conf_hash", "", "env")
    app.connect("doctree-read", _solution_titles, priority=400)   # before the title collector (500)
    app.connect("builder-inited", _copy_mathjax)
    app.connect("html-page-context", _source_links, priority=600)   # after the theme's buttons (501)
    app.connect("html-page-context", _exercise_links)
    app.connect("html-page-context", _plain_title)
    from nextword.booktools.alt_text import add_figure_alt_text

    app.connect("doctree-read", add_figure_alt_text)
    app.connect("html-page-context", _named_expanders, priority=600)   # after the theme's toctree functions
    app.connect("doctree-resolved", _drop_produced_marks)
    from nextword.booktools.rendering import fold_audit_sections

    app.connect("doctree-resolved", fold_audit_sections)   # Checking the paper, Reproducibility: <details>
    from nextword.booktools.print_layout import layout_for_print

    app.connect("doctree-resolved", layout_for_print)   # the PDF: boxed and wide tables, wide printed formulas
    from nextword.booktools.rendering import mark_produced_numbers

    app.connect("html-page-context", mark_produced_numbers, priority=700)   # produced numbers: underlined
    return {"parallel_read_safe": True, "parallel_write_safe": True}
