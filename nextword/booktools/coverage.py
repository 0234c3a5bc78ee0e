"""The coverage map: one row per numbered item of each source, with its verdict and the cell that checks it.

``book/coverage.yaml`` is the machine-readable map. Each row (an entry of ``items``) has

- ``source``: the source key (``"000"`` … ``"004"``, named in the file's ``sources`` table);
- ``location``: the item (``Eq. (23)``, ``Theorem 1``, ``Table 1, row …``) and the section it sits in;
- ``claim``: the claim in a few words;
- ``verdict``: ``checked`` (a page checks it and it holds), ``partly-checked`` (a page checks a part of it
  and that part holds; ``why`` says which part and what is not checked, and why), ``slip`` (it fails a check;
  ``why`` gives the right form and ``ledger`` names the row of ``book/ERRATA.md``), ``not-checkable`` or
  ``out-of-scope`` (``why`` says why), or ``open`` (not yet read against the book; the map says so instead of
  guessing);
- ``page`` and ``anchor``: the executed notebook and the markdown heading (a line of one of its markdown
  cells) of the section that checks it; required for ``checked`` and ``partly-checked``, optional otherwise;
- ``ledger``: the *location* column of the ledger row, verbatim, for a ``slip``;
- ``basis``: ``read`` (the row was written by reading the item against the page) or ``citation`` (the row
  was drafted from the page's citation of the item in a section that asserts something, not yet re-read).

:func:`problems` lists every broken promise of the map (the test asserts there are none) and
:func:`coverage_page` renders it as a page of the book.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

VERDICTS = ("checked", "partly-checked", "slip", "not-checkable", "out-of-scope", "open")
_LEDGER_SPLIT = re.compile(r"(?<!\\)\|")


def load_map(root: Path) -> dict:
    """``book/coverage.yaml`` as ``{"sources": {key: name}, "items": [row, …]}``."""
    import yaml

    # libyaml's safe loader where PyYAML has it (its wheels do): the same documents, 10x faster on this
    # 230 kB map (0.54 s -> 0.05 s), read each time the book is staged
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    data = yaml.load((Path(root) / "book" / "coverage.yaml").read_text(encoding="utf-8"), Loader=loader)
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("items"), list)
        or not isinstance(data.get("sources"), dict)
    ):
        raise ValueError("book/coverage.yaml must hold a 'sources' mapping and an 'items' list")
    return data


def ledger_locations(root: Path) -> list[tuple[str, str]]:
    """``(source, location)`` of every row of ``book/ERRATA.md``."""
    rows = []
    for line in (Path(root) / "book" / "ERRATA.md").read_text(encoding="utf-8").splitlines():
        cols = [c.strip() for c in _LEDGER_SPLIT.split(line.strip())[1:-1]]
        if len(cols) == 5 and cols[0] != "source" and not set(cols[0]) <= set("-: "):
            rows.append((cols[0], cols[1]))
    return rows


def markdown_headings(notebook: Path) -> set[str]:
    """Every heading line (``#``-prefixed) of the markdown cells of an ``.ipynb``."""
    nb = json.loads(Path(notebook).read_text(encoding="utf-8"))
    heads = set()
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "markdown":
            src = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
            heads |= {ln.strip() for ln in src.splitlines() if ln.startswith("#")}
    return heads


def problems(root: Path) -> list[str]:
    """Rows that break the map's rules: unknown verdict or source, a ``checked`` or ``partly-checked`` row whose
    page or heading does not exist, a ``slip`` without its ledger row or right form, a ``partly-checked``,
    ``not-checkable`` or ``out-of-scope`` row without a reason (for ``partly-checked``: what is not checked)."""
    root = Path(root)
    data = load_map(root)
    ledger = ledger_locations(root)
    headings: dict[str, set[str]] = {}
    bad = []
    for i, row in enumerate(data["items"]):
        tag = f"row {i} ({row.get('source')}, {row.get('location')})"
        if row.get("source") not in data["sources"]:
            bad.append(f"{tag}: unknown source")
        verdict = row.get("verdict")
        if verdict not in VERDICTS:
            bad.append(f"{tag}: verdict {verdict!r} not in {VERDICTS}")
        if not row.get("location") or not row.get("claim"):
            bad.append(f"{tag}: location and claim are required")
        page, anchor = row.get("page"), row.get("anchor")
        if verdict in ("checked", "partly-checked") and not (page and anchor):
            bad.append(f"{tag}: a {verdict} row names its page and anchor")
        if page:
            path = root / page
            if not path.exists() or path.suffix != ".ipynb":
                bad.append(f"{tag}: page {page} is not an executed notebook of the repository")
            else:
                heads = headings.setdefault(page, markdown_headings(path))
                if anchor and anchor.strip() not in heads:
                    bad.append(f"{tag}: {page} has no markdown heading {anchor!r}")
        if verdict == "slip":
            name = data["sources"].get(row.get("source"), "")
            if not any(src == name and loc == row.get("ledger") for src, loc in ledger):
                bad.append(f"{tag}: slip without a ledger row (source {name!r}, location {row.get('ledger')!r})")
            if not row.get("why"):
                bad.append(f"{tag}: a slip row gives the right form in 'why'")
        if verdict in ("partly-checked", "not-checkable", "out-of-scope", "open") and not row.get("why"):
            bad.append(f"{tag}: a {verdict} row says why")
    return bad


def counts(root: Path) -> dict[str, Counter]:
    """Verdict counts per source key (``"items"`` holds the total)."""
    data = load_map(root)
    out = {key: Counter() for key in data["sources"]}
    for row in data["items"]:
        c = out.setdefault(row["source"], Counter())
        c["items"] += 1
        c[row["verdict"]] += 1
    return out


def _cell(text) -> str:
    return str(text or "").replace("|", "\\|").replace("\n", " ")


def _claim(text) -> str:
    """A claim as an inline code span: source text extracted with LaTeX must not be parsed as math or emphasis."""
    return "`" + _cell(str(text or "").replace("`", "'")) + "`"


def coverage_page(root: Path) -> str:
    """The map as a markdown page: counts per source, then one table per source."""
    root = Path(root)
    data = load_map(root)
    table = counts(root)
    lines = [
        "# Coverage map",
        "",
        "Every numbered item of the five sources (definitions with a formula, theorems, propositions, lemmas,",
        "corollaries, equations that state a result, examples, exercises, tables, figures with data or a claim,",
        "numbers printed in experiment sections), with its verdict and the section of the book that checks it.",
        "*slip* rows point at the [errata ledger](errata.md); *partly-checked* rows say which part of the item a",
        "page checks and what is left unchecked, and why; *open* rows have not yet been read against the",
        "book. The basis column says whether a row was written by reading the item against the page (*read*)",
        "or drafted from the page's citation of it (a section that cites it and asserts something, or whose heading",
        "names it) and not yet re-read (*citation*): a *checked* row of basis *citation* says where the check is,",
        "not that a second reader confirmed it.",
        "The map is `book/coverage.yaml`; `tests/booktools/test_coverage.py` checks that every page and heading",
        "it names exists and that every slip has its ledger row.",
        "",
        "| source | items | " + " | ".join(VERDICTS) + " |",
        "|---|---|" + "---|" * len(VERDICTS),
    ]
    for key, name in data["sources"].items():
        c = table.get(key, Counter())
        lines.append(f"| {key} {name} | {c['items']} | " + " | ".join(str(c[v]) for v in VERDICTS) + " |")
    basis = Counter((r["source"], r.get("basis", "")) for r in data["items"])
    lines += ["", "| source | basis *read* | basis *citation* |", "|---|---|---|"]
    lines += [f"| {key} | {basis[(key, 'read')]} | {basis[(key, 'citation')]} |" for key in data["sources"]]
    for key, name in data["sources"].items():
        lines += [
            "",
            f"## {key} — {name}",
            "",
            "| location | claim | verdict | why | checked in | basis |",
            "|---|---|---|---|---|---|",
        ]
        for row in (r for r in data["items"] if r["source"] == key):
            where = ""
            if row.get("page"):
                where = f"[{row['page'].rsplit('/', 1)[-1]}]({row['page']})"
                if row.get("anchor"):
                    where += f", {_cell(row['anchor'].lstrip('# '))}"
            why = row.get("why") or ""
            if row.get("ledger"):
                why = f"{why} (ledger: {row['ledger']})".strip()
            lines.append(
                f"| {_cell(row['location'])} | {_claim(row['claim'])} | {row['verdict']} | {_cell(why)} | {where} | "
                f"{row.get('basis', '')} |"
            )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    REPO_ROOT = Path(__file__).resolve().parents[2]  # nextword/booktools/coverage.py
    for key, c in counts(REPO_ROOT).items():
        print(key, dict(c))
    for p in problems(REPO_ROOT):
        print(p)


# --- does the anchor land on the section that checks the item? ---------------------------------------------
_KINDS = {
    "Eq": r"Eqs?\.|Equations?",
    "Figure": r"Figs?\.|Figures?",
    "Fig": r"Figs?\.|Figures?",
    "Table": r"Tables?",
    "§": r"§+|Sections?|Sec\.",
    "App": r"App\.|Appendix|Appendices",
    "Remark": r"Remarks?",
    "Example": r"Examples?",
    "Exercise": r"Exercises?|Ex\.",
    "Theorem": r"Theorems?|Thm\.",
    "Lemma": r"Lemmas?",
    "Proposition": r"Propositions?|Prop\.",
    "Corollary": r"Corollar(?:y|ies)",
    "Definition": r"Definitions?|Defs?\.",
    "Assumption": r"Assumptions?",
    "Data Assumption": r"(?:Data )?Assumptions?",
}
_ITEM = re.compile(
    r"^(?P<kind>Data Assumption|Eq|Figure|Fig|Table|§|App|Remark|Example|Exercise|Theorem|Lemma|Proposition|"
    r"Corollary|Definition|Assumption)s?\.?\s*\(?(?P<label>[A-Z]?\d+(?:\.\d+)*[a-z]?|[A-Z]\d*(?:\.\d+)*)\)?"
)


def item_reference(location: str) -> tuple[str, str] | None:
    """``(kind, label)`` of the item a coverage row's ``location`` names first, or None (a free description).

    >>> item_reference("Eq. (23) (§3.4 ...)"), item_reference("Figure 1.1 (1 Introduction)"), item_reference("§7.1, size")
    (('Eq', '23'), ('Figure', '1.1'), ('§', '7.1'))
    >>> item_reference("Lemma B.3"), item_reference("Remark in §2.1")
    (('Lemma', 'B.3'), None)
    """
    hit = _ITEM.match(location.strip())
    return (hit["kind"], hit["label"]) if hit else None


def names_item(text: str, kind: str, label: str) -> bool:
    """Does ``text`` refer to item ``kind label``: by name ("Eq. (23)", "Fig. 1.1", "Lemma B.3"), in a list or
    range of such names ("Eqs. (21)–(24)", "Figs. 6.5, 6.6 and 6.8"), or, for an equation, by its number in
    parentheses alone ("(23)")?

    >>> names_item("the barrier (Eqs. 21–24) on a toy", "Eq", "22"), names_item("Fig. 1.10", "Figure", "1.1")
    (True, False)
    """
    alias = _KINDS.get(kind, re.escape(kind))
    label_re = re.escape(label)
    if re.search(rf"(?:{alias})\s*\(?{label_re}\)?(?![\w.]\d|\d|\w)", text):
        return True
    if kind == "Eq" and re.search(rf"\({label_re}[a-z]?(?:[–-][a-z])?\)", text):
        return True
    item = r"\(?[A-Z]?\.?\d[\w.]*\)?"
    for chain in re.finditer(rf"(?:{alias})\s*({item}(?:\s*(?:,|and|or|to|–|-|—)\s*{item})*)", text):
        parts = re.findall(r"[A-Z]?\d[\w.]*", chain[1])
        if label in parts or any(p.rstrip(".") == label for p in parts):
            return True
        for low, high in re.findall(r"\(?([A-Z]?\d+(?:\.\d+)*)\)?\s*[–-]\s*\(?([A-Z]?\d+(?:\.\d+)*)\)?", chain[1]):
            if _in_range(label, low, high):
                return True
    return False


def _in_range(label: str, low: str, high: str) -> bool:
    """``6.6`` in ``6.5–6.8``, ``22`` in ``21–24``, ``B.2`` in ``B.1–B.3`` (the same prefix, the last part between)."""
    parts = [re.split(r"\.", x) for x in (label, low, high)]
    if len({len(p) for p in parts}) != 1 or len({tuple(p[:-1]) for p in parts}) != 1:
        return False
    last = [p[-1] for p in parts]
    if not all(x.isdigit() for x in last):
        return False
    return int(last[1]) <= int(last[0]) <= int(last[2])


def _section_text(page_py: Path, anchor: str) -> str | None:
    """The text (markdown and code) of the section a heading opens, down to the next heading of its level or
    above; None when the page has no such heading."""
    from nextword.booktools.pages import read_page

    page = read_page(page_py)
    lines: list[str] = []
    for cell in page.cells:
        lines += [("#" if cell.kind == "markdown" else "") + "\0" + line for line in cell.text.split("\n")]
    level = len(anchor) - len(anchor.lstrip("#"))
    start = next((i for i, ln in enumerate(lines) if ln.startswith("#\0") and ln[2:].strip() == anchor.strip()), None)
    if start is None:
        return None
    out = [lines[start][2:]]
    for line in lines[start + 1 :]:
        text = line.split("\0", 1)[1]
        heading = re.match(r"(#+)\s", text) if line.startswith("#\0") else None
        if heading and len(heading[1]) <= level:
            break
        out.append(text)
    return "\n".join(out)


def anchor_problems(root: Path) -> list[tuple[str, str]]:
    """``(row key, problem)`` for every row with a ``page`` and an ``anchor`` whose section does not name the
    row's item (:func:`item_reference`; rows whose location names no item are not judged). The row key is
    ``"<source> | <location>"``."""
    root = Path(root)
    bad = []
    for row in load_map(root)["items"]:
        page, anchor = row.get("page"), row.get("anchor")
        ref = item_reference(str(row.get("location", "")))
        if not (page and anchor and ref):
            continue
        key = f"{row['source']} | {row['location']}"
        py = (root / page).with_suffix(".py")
        text = _section_text(py, anchor) if py.is_file() else None
        if text is None:
            bad.append((key, f"{page} has no heading {anchor!r}"))
        elif not names_item(text, *ref):
            bad.append((key, f"the section {anchor!r} of {page} does not name {ref[0]} {ref[1]}"))
    return bad
