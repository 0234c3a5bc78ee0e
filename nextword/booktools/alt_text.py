"""Text alternatives for the book's figures, taken from their captions (a Sphinx hook of ``book/conf.py``).

Every figure of the book is the image output of a code cell, and its caption is a paragraph of the markdown
cell after it that starts with ``Figure ...`` (``*Figure 3.1.2 — ...*``, ``**Figure 7.1.** ...``). MyST-NB
renders the stored image with no ``alt``, and the HTML writer then falls back to the file's path (a hash).
:func:`add_figure_alt_text` gives each image the caption's label and first sentence instead, with the
caption's TeX read as plain text (:func:`tex_to_text`), so a screen reader says what the figure shows. A
figure without a ``Figure`` caption gets the first sentence of the text that follows it.

>>> caption_summary("Figure 3.1.2 — For a random head: the compatibility matrix. The descent direction is ...")
'Figure 3.1.2: For a random head: the compatibility matrix.'
>>> caption_summary(r"Figure 7.1. Example 8.1 on a source. The dashed line is the entropy rate \\(H\\).")
'Figure 7.1: Example 8.1 on a source.'
>>> caption_summary("Figure (cf. Fig. 7.5). Clean and noisy BPC against sigma. Both runs ...")
'Figure (cf. Fig. 7.5): Clean and noisy BPC against sigma.'
"""

from __future__ import annotations

import re

__all__ = ["tex_to_text", "caption_summary", "add_figure_alt_text"]

MAX_CHARS = 220
_SYMBOLS = {
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε", "varepsilon": "ε", "eta": "η",
    "theta": "θ", "kappa": "κ", "lambda": "λ", "mu": "μ", "nu": "ν", "pi": "π", "rho": "ρ", "sigma": "σ",
    "tau": "τ", "phi": "φ", "varphi": "φ", "chi": "χ", "psi": "ψ", "omega": "ω", "xi": "ξ", "zeta": "ζ",
    "Gamma": "Γ", "Delta": "Δ", "Theta": "Θ", "Lambda": "Λ", "Sigma": "Σ", "Phi": "Φ", "Psi": "Ψ", "Omega": "Ω",
    "partial": "∂", "nabla": "∇", "infty": "∞", "cdot": "·", "times": "×", "leq": "≤", "le": "≤", "geq": "≥",
    "ge": "≥", "neq": "≠", "approx": "≈", "to": "→", "rightarrow": "→", "in": "∈", "sum": "Σ", "top": "ᵀ",
    "ell": "ℓ", "pm": "±", "sim": "~", "mid": "|", "langle": "⟨", "rangle": "⟩", "log": "log", "exp": "exp",
}  # fmt: skip
_LABEL = re.compile(
    r"^\s*(Fig(?:ure|\.)\s*(?:(?:[A-Z]\.?)?\d+(?:[.\-]\d+)*[a-z]?(?:\s*\([^)]*\))?|\([^)]*\)))\.?\s*(?:[:—–-]\s*)?"
)
_SENTENCE_END = re.compile(r"(?<!\bcf\.)(?<!\bFig\.)(?<!\bEq\.)(?<!\bEqs\.)(?<!\bvs\.)(?<=[.!?])\s+(?=[A-Z])")


def tex_to_text(text: str) -> str:
    r"""``text`` with its TeX read as plain text: ``\alpha_{ij}`` -> ``α_ij``, delimiters and braces dropped.

    >>> tex_to_text(r"the weights \(\alpha_{ij}\) and $\operatorname{tr}(\Sigma A)$")
    'the weights α_ij and tr(Σ A)'
    """
    text = re.sub(r"\\[()\[\]]|\$", "", text)
    text = re.sub(r"\\(?:mathrm|mathbf|mathbb|mathcal|operatorname|text|textrm|textbf|boldsymbol)\s*", "", text)
    text = re.sub(r"\\(?:left|right|big|Big|bigl|bigr)\b\s*", "", text)
    text = re.sub(r"\\([A-Za-z]+)", lambda m: _SYMBOLS.get(m[1], m[1]), text)
    text = re.sub(r"\\[,;:! ]", " ", text).replace("\\", "")
    text = text.replace("{", "").replace("}", "").replace("*", "")
    return re.sub(r"\s+", " ", text).strip()


def caption_summary(caption: str, max_chars: int = MAX_CHARS) -> str:
    """A short text alternative from a caption: ``"Figure N: "`` and the caption's first sentence.

    Captions that do not start with a figure label give their first sentence alone. The result is cut at a
    word boundary (with ``…``) when longer than ``max_chars``.
    """
    text = tex_to_text(caption)
    label, rest = "", text
    if m := _LABEL.match(text):
        label, rest = m[1].rstrip("."), text[m.end() :]
    first = _SENTENCE_END.split(rest, maxsplit=1)[0].strip()
    summary = f"{label}: {first}" if label else first
    if len(summary) > max_chars:
        summary = summary[: max_chars - 1].rsplit(" ", 1)[0].rstrip(",;:") + "…"
    return summary


def _caption_after(cell) -> str | None:
    """The caption of the figure(s) in ``cell``: the first ``Figure`` paragraph of the text after the cell
    (before the next code cell), else that text's first paragraph; None when no text follows."""
    from docutils import nodes

    parent = cell.parent
    paragraphs = []
    for sibling in parent.children[parent.index(cell) + 1 :]:
        if isinstance(sibling, nodes.container) and sibling.get("nb_element") == "cell_code":
            break
        if isinstance(sibling, nodes.section):  # the next markdown cell opens a section: its first paragraphs
            sibling = next(iter(sibling.findall(nodes.paragraph)), None)
            if sibling is not None:
                paragraphs.append(sibling.astext())
            break
        paragraphs += [p.astext() for p in sibling.findall(nodes.paragraph)]
    for text in paragraphs:
        if _LABEL.match(tex_to_text(text)):
            return text
    return paragraphs[0] if paragraphs else None


def add_figure_alt_text(app, doctree) -> None:
    """Sphinx ``doctree-read`` hook: give every image output of a code cell an ``alt`` from its caption.

    Several images of one cell share the caption, numbered ``(image k of n)``. An image that already has an
    ``alt`` (set through the cell's ``mystnb`` metadata) keeps it; one with no text after it gets the page's
    title and its position, never its file name.
    """
    from docutils import nodes

    title = next(iter(doctree.findall(nodes.title)), None)
    page = title.astext() if title is not None else app.env.docname
    for cell in doctree.findall(lambda n: isinstance(n, nodes.container) and n.get("nb_element") == "cell_code"):
        images = [im for im in cell.findall(nodes.image) if not im.get("alt")]
        if not images:
            continue
        caption = _caption_after(cell)
        summary = caption_summary(caption) if caption else f"A figure of the page “{tex_to_text(page)}”"
        for k, image in enumerate(images, 1):
            image["alt"] = summary if len(images) == 1 else f"{summary} (image {k} of {len(images)})"
