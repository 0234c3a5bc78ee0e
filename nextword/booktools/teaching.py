"""The teaching shape of a book page, checked: what every lesson of ``book/`` opens and ends with.

A lesson is a jupytext notebook (``book/<part>/<name>.py``) whose first markdown cell holds, in order,
an H1 title, a paragraph starting with ``**The question.**``, a ``Learning goals`` admonition with 2 to
4 bullets, ``**Builds on:**`` and ``**Reading time:** about NN minutes``. Its ``##`` sections include
``A tiny example...`` and end, in this order, with ``Key takeaways`` (3 to 5 bullets), ``Check your
understanding`` (2 to 4 numbered questions, each followed by a ``{dropdown}`` answer), optionally
``Checking the paper``, and ``Reproducibility`` (last). Nothing else follows ``Key takeaways``. The last two
are the audit, folded in the rendered book (``book/conf.py``); their code cells carry the ``hide-cell`` tag.

A part's companion audit page (``checking_the_paper.py``, :func:`nextword.booktools.pages.page_kind`) is
folded as a whole: it needs only an H1 title and a link to a page of its part in its first cell.

A part's overview page (``book/<part>/00_overview.py``) opens the same way, then has the sections
``What the paper claims``, ``What you need first``, ``The route through this part`` (a link to every
other page of the part) and ``What the book found``, in this order; it works no example and asks no
questions (:data:`OVERVIEW_SECTIONS`).

Every ``{term}`` role of a page must name an entry of ``book/glossary.md``. Check pages from the shell::

    python -m nextword.booktools.teaching book/part1_chapter6/6_1_parallel_attention.py

>>> shape_problems_of_text("# %% [markdown]\\n# # 1 A page\\n")[:2]
['first cell: no paragraph starting with **The question.**', 'first cell: no Learning goals admonition']
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from nextword.booktools.pages import parse_page, page_kind

__all__ = [
    "GLOSSARY",
    "OVERVIEW_SECTIONS",
    "glossary_terms",
    "estimated_minutes",
    "reading_minutes",
    "shape_problems",
    "shape_problems_of_text",
    "term_uses",
]

REPO_ROOT = Path(__file__).resolve().parents[2]
GLOSSARY = REPO_ROOT / "book" / "glossary.md"

_SECTION = re.compile(r"^## +(.+?)[ \t]*$", re.M)
_BULLET = re.compile(r"^[-*] +\S", re.M)
_QUESTION = re.compile(r"^\d+\. +\S", re.M)
_ADMONITION = re.compile(r"```\{admonition\} *Learning goals\n(.*?)```", re.S)
_READING_TIME = re.compile(r"\*\*Reading time:\*\* *about (\d+) minutes")
#: ``{term}`causal mask``` or ``{term}`masks <causal mask>``` -> "causal mask"
_TERM = re.compile(r"\{term\}`(?:[^`<]*<([^`>]+)>|([^`]+))`")


def _cells(text: str) -> list[tuple[str, str, list[str]]]:
    """``[(cell_type, source, tags), ...]`` of a jupytext py:percent text (markdown comment marks removed)."""
    return [(c.kind, c.text, list(c.tags)) for c in parse_page(text).cells]


def _sections(cells: list[tuple[str, str, list[str]]]) -> list[tuple[str, str, list[list[str]]]]:
    """``[(heading, markdown text under it, [tags of each code cell under it]), ...]`` for ``##`` headings."""
    sections: list[tuple[str, list[str], list[list[str]]]] = []
    for kind, source, tags in cells:
        if kind == "markdown":
            pieces = _SECTION.split(source)  # [before, heading, body, heading, body, ...]
            if sections:
                sections[-1][1].append(pieces[0])
            for heading, body in zip(pieces[1::2], pieces[2::2]):
                sections.append((heading, [body], []))
        elif kind == "code" and sections:
            sections[-1][2].append(tags)
    return [(h, "\n".join(body), tags) for h, body, tags in sections]


def _first_cell_problems(source: str) -> list[str]:
    problems = []
    lines = source.strip().splitlines()
    if not lines or not re.match(r"# +\S", lines[0]):
        problems.append("first cell: does not open with an H1 title ('# 6.3 ...')")
    order = []
    for label, pattern, missing in (
        ("question", r"^\*\*The question\.\*\* *\S", "no paragraph starting with **The question.**"),
        ("goals", r"^```\{admonition\} *Learning goals", "no Learning goals admonition"),
        ("builds on", r"\*\*Builds on:\*\*", "no **Builds on:**"),
        ("reading time", _READING_TIME.pattern, "no **Reading time:** about NN minutes"),
    ):
        hit = re.search(pattern, source, re.M)
        if hit is None:
            problems.append(f"first cell: {missing}")
        else:
            order.append((hit.start(), label))
    if [label for _, label in sorted(order)] != [label for _, label in order]:
        problems.append("first cell: question, goals, builds-on and reading time are not in this order")
    goals = _ADMONITION.search(source)
    if goals and not 2 <= len(_BULLET.findall(goals[1])) <= 4:
        problems.append(f"Learning goals: {len(_BULLET.findall(goals[1]))} bullets (2 to 4 wanted)")
    return problems


def shape_problems_of_text(text: str) -> list[str]:
    """Every way a page's jupytext text departs from the teaching shape (empty when it has the shape)."""
    cells = _cells(text)
    markdown = [source for kind, source, _ in cells if kind == "markdown"]
    if not markdown or cells[0][0] != "markdown":
        return ["the page does not open with a markdown cell"]
    problems = _first_cell_problems(cells[0][1])
    sections = _sections(cells)
    headings = [h for h, _, _ in sections]

    def find(prefix: str) -> int | None:
        return next((i for i, h in enumerate(headings) if h.startswith(prefix)), None)

    tiny, takeaways, check, audit, repro = (
        find(p)
        for p in (
            "A tiny example",
            "Key takeaways",
            "Check your understanding",
            "Checking the paper",
            "Reproducibility",
        )
    )
    for name, at in (
        ("## A tiny example...", tiny),
        ("## Key takeaways", takeaways),
        ("## Check your understanding", check),
        ("## Reproducibility", repro),
    ):
        if at is None:
            problems.append(f"no section {name}")
    if repro is not None and repro != len(headings) - 1:
        problems.append("## Reproducibility is not the last section")
    present = [at for at in (tiny, takeaways, check, audit, repro) if at is not None]
    if present != sorted(present):
        problems.append(
            "sections out of order: tiny example, ..., key takeaways, check your understanding, "
            "checking the paper (optional), reproducibility"
        )
    if takeaways is not None:
        ending = {at for at in (takeaways, check, audit, repro) if at is not None}
        strays = [h for i, h in enumerate(headings) if i > takeaways and i not in ending]
        if strays:
            problems.append(
                f"sections after ## Key takeaways other than Check your understanding, Checking the paper and "
                f"Reproducibility: {strays}"
            )
    if takeaways is not None:
        n = len(_BULLET.findall(sections[takeaways][1]))
        if not 3 <= n <= 5:
            problems.append(f"## Key takeaways: {n} bullets (3 to 5 wanted)")
    if check is not None:
        body = sections[check][1]
        questions = [m.start() for m in _QUESTION.finditer(body)]
        answers = [m.start() for m in re.finditer(r"```\{dropdown\} *Answer", body)]
        if not 2 <= len(questions) <= 4:
            problems.append(f"## Check your understanding: {len(questions)} numbered questions (2 to 4 wanted)")
        bounds = questions + [len(body)]
        unanswered = [i + 1 for i in range(len(questions)) if not any(bounds[i] < a < bounds[i + 1] for a in answers)]
        if unanswered:
            problems.append(f"## Check your understanding: question(s) {unanswered} have no {{dropdown}} Answer")
    for name, at in (("Checking the paper", audit), ("Reproducibility", repro)):
        if at is not None:
            bare = sum("hide-cell" not in tags for tags in sections[at][2])
            if bare:
                problems.append(f"## {name}: {bare} code cell(s) without the hide-cell tag")
    return problems


#: The ``##`` sections of a part's overview page (``00_overview.py``), in this order (headings start so).
OVERVIEW_SECTIONS = (
    "What the paper claims",
    "What you need first",
    "The route through this part",
    "What the book found",
)


def overview_problems_of_text(text: str, pages: list[str] = ()) -> list[str]:
    """Every way a part's overview page departs from its shape; ``pages`` are the stems of the part's other
    pages, each of which the route section must link (``(<stem>.ipynb)``).

    >>> overview_problems_of_text("# %% [markdown]\\n# # Part 9: overview\\n")[-1]
    'no section ## What the book found'
    """
    cells = _cells(text)
    if not cells or cells[0][0] != "markdown":
        return ["the page does not open with a markdown cell"]
    problems = _first_cell_problems(cells[0][1])
    sections = _sections(cells)
    headings = [h for h, _, _ in sections]
    found = []
    for name in OVERVIEW_SECTIONS:
        at = next((i for i, h in enumerate(headings) if h.startswith(name)), None)
        if at is None:
            problems.append(f"no section ## {name}")
        else:
            found.append(at)
    if found != sorted(found):
        problems.append("sections out of order: " + ", ".join(OVERVIEW_SECTIONS))
    route = next((body for h, body, _ in sections if h.startswith("The route through this part")), None)
    if route is not None:
        unlinked = [stem for stem in pages if f"({stem}.ipynb)" not in route]
        if unlinked:
            problems.append(f"## The route through this part: no link to {unlinked}")
    return problems


def companion_problems_of_text(text: str) -> list[str]:
    """Every way a part's companion audit page departs from its (small) shape: an H1 title and a link to a
    page of its part (``(<stem>.ipynb)``) in the first cell.

    >>> companion_problems_of_text("# %% [markdown]\\n# # Part 9: checking the paper\\n")
    ['first cell: no link to a page of the part ((name.ipynb))']
    """
    cells = _cells(text)
    if not cells or cells[0][0] != "markdown":
        return ["the page does not open with a markdown cell"]
    problems = []
    first = cells[0][1].strip()
    if not re.match(r"# +\S", first):
        problems.append("first cell: does not open with an H1 title")
    if not re.search(r"\]\([\w.-]+\.ipynb(#[\w-]*)?\)", first):
        problems.append("first cell: no link to a page of the part ((name.ipynb))")
    return problems


def shape_problems(py_path: Path) -> list[str]:
    """:func:`shape_problems_of_text` of a jupytext source file (for a part's ``00_overview.py``,
    :func:`overview_problems_of_text` with the part's other pages)."""
    py_path = Path(py_path)
    text = py_path.read_text(encoding="utf-8")
    if page_kind(py_path) == "companion":
        return companion_problems_of_text(text)
    if py_path.stem == "00_overview":
        # the route links the part's lessons; a companion audit page (a reference, folded) is reached from the
        # book's contents, the ledger and the coverage map instead
        others = sorted(
            p.stem for p in py_path.parent.glob("*.py") if p.stem != py_path.stem and page_kind(p) != "companion"
        )
        return overview_problems_of_text(text, others)
    return shape_problems_of_text(text)


def reading_minutes(py_path: Path) -> int | None:
    """The page's own estimate (``**Reading time:** about NN minutes``), or None when it gives none."""
    hit = _READING_TIME.search(Path(py_path).read_text(encoding="utf-8"))
    return int(hit[1]) if hit else None


def estimated_minutes(py_path: Path) -> int:
    """The page's own reading time when it states one, else an estimate from its length: 120 words of
    prose and 8 lines of code a minute (technical reading, running the code in one's head), rounded to
    5 minutes, at least 5.

    >>> estimated_minutes(REPO_ROOT / "book" / "part0_reading_guide" / "00_reading_guide.py") >= 5
    True
    """
    stated = reading_minutes(py_path)
    if stated is not None:
        return stated
    words = code_lines = 0
    for kind, source, _ in _cells(Path(py_path).read_text(encoding="utf-8")):
        if kind == "markdown":
            words += len(source.split())
        else:
            code_lines += sum(bool(line.strip()) for line in source.splitlines())
    return max(5, 5 * round((words / 120 + code_lines / 8) / 5))


def glossary_terms(glossary: Path = GLOSSARY) -> dict[str, str]:
    """``{term (lower case): its definition}`` of the ``{glossary}`` block of ``book/glossary.md``.

    Several terms on consecutive lines share the definition under them (``rotary position embedding`` and
    ``RoPE``). Raises ValueError when the file has no glossary block, an entry has no definition, or a term
    follows the previous definition without a blank line (docutils then warns "glossary term must be preceded by
    empty line").
    """
    text = Path(glossary).read_text(encoding="utf-8")
    block = re.search(r"```\{glossary\}\n(.*?)\n```", text, re.S)
    if block is None:
        raise ValueError(f"glossary: {glossary} has no ```{{glossary}} block")
    terms: dict[str, str] = {}
    group: list[str] = []  # the terms of the entry being read (several terms may share one definition)
    lines = block[1].splitlines()
    for before, line in zip([""] + lines, lines):
        if not line.strip() or line.startswith(":"):
            continue
        if line[0].isspace():
            if not group:
                raise ValueError(f"glossary: definition text before any term: {line.strip()!r}")
            for term in group:
                terms[term] = (terms[term] + " " + line.strip()).strip()
        else:
            after_term = before.strip() and not before[0].isspace() and not before.startswith(":")
            if before.strip() and not before.startswith(":") and not after_term:
                raise ValueError(f"glossary: no blank line before the term {line.strip()!r}")
            if not after_term:
                group = []
            group.append(line.strip().lower())
            terms[group[-1]] = ""
    empty = [t for t, definition in terms.items() if not definition]
    if empty:
        raise ValueError(f"glossary: terms without a definition: {empty}")
    return terms


def term_uses(text: str) -> list[str]:
    """The glossary terms a page's ``{term}`` roles name, lower case, in order of use."""
    return [(target or plain).strip().lower() for target, plain in _TERM.findall(text)]


def main(argv: list[str] | None = None) -> int:
    paths = [Path(p) for p in (sys.argv[1:] if argv is None else argv)]
    if not paths:
        print("usage: python -m nextword.booktools.teaching book/<part>/<page>.py ...", file=sys.stderr)
        return 2
    terms = glossary_terms()
    failed = 0
    for path in paths:
        problems = shape_problems(path)
        problems += [
            f"{{term}}`{t}` has no entry in book/glossary.md"
            for t in dict.fromkeys(term_uses(path.read_text(encoding="utf-8")))
            if t not in terms
        ]
        print(f"{path}: {'has the teaching shape' if not problems else ''}")
        for problem in problems:
            print(f"  - {problem}")
        failed += bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
