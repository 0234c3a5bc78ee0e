"""The notebook pipeline: pair, execute, check the book's jupytext notebooks, and render the book with Sphinx.

The ``py:percent`` file is the source of truth; the ``.ipynb`` beside it is generated from it and,
for ``book/`` and ``solutions/``, committed executed so that ``pytest --nbval`` can compare outputs.

Command line (run from the repository root)::

    python -m nextword.booktools.notebooks build book/part1_chapter6/6_2_attention_mechanism.py   # py -> ipynb, execute
    python -m nextword.booktools.notebooks build --all            # every notebook in book/ and solutions/
    python -m nextword.booktools.notebooks sync --all             # py -> ipynb without executing (keeps outputs)
    python -m nextword.booktools.notebooks check                  # fail if any pair drifted or lacks its .ipynb
    python -m nextword.booktools.notebooks render                 # the book in _build/html (Sphinx, book/conf.py)
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]  # nextword/booktools/notebooks.py
NOTEBOOK_DIRS = ("book", "exercises", "solutions")
EXECUTED_DIRS = ("book", "solutions")
# The environment every notebook kernel runs in, when built here and when checked by nbval (the root
# conftest.py applies it): one BLAS/torch thread and a fixed hash seed, so that stored outputs do not
# depend on the machine's core count or on set iteration order; the default (not FULL) run; matplotlib's
# inline backend (MPLBACKEND=Agg would drop the figures' text output that nbval compares).
NOTEBOOK_ENV = {
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "PYTHONHASHSEED": "0",
    "FULL": "0",
}


def apply_notebook_env(environ: dict | None = None, *, full: bool | None = None) -> None:
    """Put :data:`NOTEBOOK_ENV` into ``environ`` (default ``os.environ``) so kernels inherit it.

    ``FULL`` keeps a value already set to ``"1"`` (paper-sized runs on purpose) unless ``full`` is given.
    """
    environ = os.environ if environ is None else environ
    keep_full = environ.get("FULL") == "1" if full is None else full
    environ.update(NOTEBOOK_ENV)
    if keep_full:
        environ["FULL"] = "1"
    environ.pop("MPLBACKEND", None)


__all__ = [
    "PairingProblem",
    "notebook_sources",
    "py_to_notebook",
    "check_pairs",
    "sync",
    "execute",
    "toc_order",
    "book_structure",
    "stage_book",
    "staged_back_matter_links",
    "render_book",
]


@dataclass(frozen=True)
class PairingProblem:
    """One pairing failure: ``path`` is the ``.py`` source, ``reason`` says what is wrong."""

    path: Path
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


def notebook_sources(root: Path = REPO_ROOT, dirs: Sequence[str] = NOTEBOOK_DIRS) -> list[Path]:
    """All jupytext ``.py`` notebook sources: ``<root>/<dir>/<part>/*.py`` for each dir in ``dirs``."""
    found: list[Path] = []
    for d in dirs:
        found.extend(sorted((Path(root) / d).glob("*/*.py")))
    return found


def _cell_signature(cell) -> tuple[str, str, tuple[str, ...]]:
    tags = tuple(cell.get("metadata", {}).get("tags", []))
    return cell["cell_type"], cell["source"].rstrip("\n"), tags


def py_to_notebook(py_path: Path):
    """Read a py:percent file into an ``nbformat`` notebook (python3 kernel, no outputs)."""
    import jupytext

    nb = jupytext.read(py_path, fmt="py:percent")
    for i, cell in enumerate(nb.cells):  # deterministic ids: regenerating a notebook gives no spurious diff
        cell["id"] = f"cell-{i:03d}"
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nb.metadata["jupytext"] = {"formats": "ipynb,py:percent"}
    return nb


def check_pairs(paths: Iterable[Path] | None = None) -> list[PairingProblem]:
    """Compare every ``.py`` source with its ``.ipynb``: same cells, same sources, same tags.

    Returns the list of problems (empty when every pair is in sync). A ``.py`` without an
    ``.ipynb`` is a problem; so is an ``.ipynb`` whose inputs differ from the ``.py``.
    """
    import nbformat

    problems: list[PairingProblem] = []
    for py in paths if paths is not None else notebook_sources():
        py = Path(py)
        ipynb = py.with_suffix(".ipynb")
        if not ipynb.exists():
            problems.append(
                PairingProblem(py, "has no paired .ipynb (run: python -m nextword.booktools.notebooks build)")
            )
            continue
        expected = [_cell_signature(c) for c in py_to_notebook(py).cells]
        actual = [_cell_signature(c) for c in nbformat.read(ipynb, as_version=4).cells]
        if len(expected) != len(actual):
            problems.append(PairingProblem(py, f"{len(expected)} cells in .py but {len(actual)} in .ipynb"))
            continue
        for i, (e, a) in enumerate(zip(expected, actual)):
            if e != a:
                what = "type" if e[0] != a[0] else "tags" if e[2] != a[2] else "source"
                problems.append(PairingProblem(py, f"cell {i} differs in {what} between .py and .ipynb"))
                break
    return problems


def sync(py_path: Path, *, keep_outputs: bool = True) -> Path:
    """Write the ``.ipynb`` for ``py_path``; outputs of unchanged cells are kept when ``keep_outputs``."""
    import nbformat

    py_path = Path(py_path)
    ipynb = py_path.with_suffix(".ipynb")
    nb = py_to_notebook(py_path)
    if keep_outputs and ipynb.exists():
        previous = nbformat.read(ipynb, as_version=4)
        if "language_info" in previous.metadata:  # written by the kernel when it was executed
            nb.metadata["language_info"] = previous.metadata["language_info"]
        old = {(_cell_signature(c)): c for c in previous.cells if c["cell_type"] == "code"}
        for cell in nb.cells:
            prev = old.get(_cell_signature(cell))
            if cell["cell_type"] == "code" and prev is not None:
                cell["outputs"] = prev.get("outputs", [])
                cell["execution_count"] = prev.get("execution_count")
    nbformat.write(nb, ipynb)
    return ipynb


def execute(py_path: Path, *, timeout: int = 1200) -> float:
    """Regenerate the ``.ipynb`` of ``py_path`` and execute it in place (cwd = its folder).

    Returns the wall time in seconds. Raises ``nbclient`` errors when a cell fails (unless the cell
    is tagged ``raises-exception``).
    """
    import nbformat
    from nbclient import NotebookClient

    py_path = Path(py_path)
    nb = py_to_notebook(py_path)
    start = time.perf_counter()
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(py_path.parent.resolve())}},
        record_timing=False,
    )
    client.execute()
    nbformat.write(nb, py_path.with_suffix(".ipynb"))
    return time.perf_counter() - start


_TOC_LINK = re.compile(r"\((?:\./)?(part\w+/\w+)\.(?:ipynb|py)\)")


def toc_order(readme: Path = REPO_ROOT / "book" / "README.md") -> list[str]:
    """Notebooks as ``"<part>/<name>"`` in the order ``book/README.md`` links them (its table of contents)."""
    if not Path(readme).exists():
        return []
    seen: list[str] = []
    for match in _TOC_LINK.finditer(Path(readme).read_text(encoding="utf-8")):
        if match[1] not in seen:
            seen.append(match[1])
    return seen


# --- the rendered book (Sphinx + MyST-NB + sphinx-book-theme; configuration in book/conf.py) -----------------
# ``stage_book`` lays out a Sphinx source tree under _build/ from the repository (the executed notebooks as
# they are, plus generated table-of-contents pages); ``render_book`` runs Sphinx on it. Pages are rendered
# from the committed .ipynb (MyST-NB execution is off), so the HTML shows exactly what nbval checked.

BOOK_CONF_DIR = REPO_ROOT / "book"
#: The exercise indexes' sentence about solutions (the PDF, which leaves the solutions out, replaces it: pdf.py)
SOLUTIONS_LINKED = "Each exercise links to its worked solution in *Solutions*."
STAGE_DIR = REPO_ROOT / "_build" / "book_src"
HTML_DIR = REPO_ROOT / "_build" / "html"
_HEADING = re.compile(r"^##\s+(.+?)\s*$")
_EVIDENCE = re.compile(r"(?<![\w/])(book|solutions)/(part\w+)/(\w+)(?:\.ipynb|\.py)?(?![\w/])")


def _part_captions(readme: Path, link: re.Pattern) -> dict[str, str]:
    """``{part folder: the "## ..." heading under which README first links it}``."""
    captions: dict[str, str] = {}
    heading = ""
    for line in Path(readme).read_text(encoding="utf-8").splitlines():
        if m := _HEADING.match(line):
            heading = m[1]
        for hit in link.finditer(line):
            captions.setdefault(hit[1].split("/")[0], heading)
    return captions


def _write_if_changed(path: Path, text: str) -> None:
    """Write ``text`` unless ``path`` already holds it (keeps mtimes, so Sphinx rebuilds only what changed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


def _copy_if_changed(src: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    if (
        not dest.exists()
        or dest.stat().st_mtime_ns != src.stat().st_mtime_ns
        or dest.stat().st_size != src.stat().st_size
    ):
        shutil.copy2(src, dest)


def _toctree(entries: Sequence[str], caption: str | None = None, hidden: bool = True) -> str:
    opts = ([f":caption: {caption}"] if caption else []) + ([":hidden:"] if hidden else [])
    return "```{toctree}\n" + "\n".join(opts + [":maxdepth: 1", ""] + list(entries)) + "\n```\n"


def book_structure(root: Path = REPO_ROOT) -> list[tuple[str, list[str]]]:
    """The book's parts as ``[(caption, [docname, ...]), ...]`` in reading order.

    Book parts follow ``book/README.md`` (its ``## Part ...`` headings and the order of its links);
    a notebook it does not link comes last in its part, a part it does not mention after the others.
    Docnames are paths without suffix relative to the repository, e.g. ``"book/part1_chapter6/6_2_..."``.

    >>> [caption for caption, _ in book_structure()][:2]
    ['Part 0 — Reading guide', 'Part 1 — Chapter 6: Transformers, parallel attention for next-word prediction']
    """
    root = Path(root)
    readme = root / "book" / "README.md"
    order = {key: i for i, key in enumerate(toc_order(readme))}
    captions = _part_captions(readme, _TOC_LINK) if readme.exists() else {}
    parts: dict[str, list[str]] = {}
    for ipynb in (root / "book").glob("*/*.ipynb"):
        parts.setdefault(ipynb.parent.name, []).append(ipynb.stem)
    ranked = sorted(parts, key=lambda part: (min(order.get(f"{part}/{s}", len(order)) for s in parts[part]), part))
    return [
        (
            captions.get(part, part),
            [f"book/{part}/{s}" for s in sorted(parts[part], key=lambda s: (order.get(f"{part}/{s}", len(order)), s))],
        )
        for part in ranked
    ]


def _exercise_pages(root: Path, kind: str) -> dict[str, list[str]]:
    """``{part folder: [docname, ...]}`` for ``kind`` in ("exercises", "solutions"), sorted by file name."""
    pages: dict[str, list[str]] = {}
    for ipynb in sorted((root / kind).glob("*/*.ipynb")):
        pages.setdefault(ipynb.parent.name, []).append(f"{kind}/{ipynb.parent.name}/{ipynb.stem}")
    return pages


def _link_notebook_paths(text: str, root: Path, prefix: str = "") -> str:
    """Turn ``book/<part>/<name>`` (optionally in backticks, with .ipynb/.py) into links to the rendered page."""

    def link(m: re.Match) -> str:
        key = f"{m[1]}/{m[2]}/{m[3]}"
        if not (root / f"{key}.ipynb").exists():
            return m[0]
        return f"[{key}]({prefix}{key}.ipynb)"

    return _EVIDENCE.sub(link, re.sub(r"`((?:book|solutions)/part\w+/\w+(?:\.ipynb|\.py)?)`", r"\1", text))


def _errata_page(root: Path) -> str:
    """book/ERRATA.md with every evidence path turned into a link to the rendered notebook."""
    lines = []
    for line in (root / "book" / "ERRATA.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("| ") and not line.startswith("| source"):
            # the ledger writes formulas as plain text (Kh_l⟩_roformer): keep "_" from turning into emphasis
            line = "".join(
                part if i % 2 else part.replace("_", "\\_") for i, part in enumerate(re.split(r"(`[^`]*`)", line))
            )
            head, sep, evidence = line.rstrip().rstrip("|").rpartition(" | ")
            line = f"{head}{sep}{_link_notebook_paths(evidence.replace(chr(92) + '_', '_'), root)} |"
        lines.append(line)
    return "\n".join(lines) + "\n"


APPENDIX = Path("book") / "partA_appendix" / "A_notation_and_environment.ipynb"


def _notation_notebook(root: Path):
    """Appendix A's "Notation concordance" section (its cells and stored outputs) as its own notebook."""
    import nbformat

    guide = root / APPENDIX
    nb = nbformat.read(guide, as_version=4)
    start = next(
        (
            i
            for i, c in enumerate(nb.cells)
            if c.cell_type == "markdown" and c.source.lstrip().startswith("## Notation concordance")
        ),
        None,
    )
    if start is None:
        raise ValueError(f"{guide} has no '## Notation concordance' section for the notation page")
    stop = next(
        (
            i
            for i in range(start + 1, len(nb.cells))
            if nb.cells[i].cell_type == "markdown" and nb.cells[i].source.lstrip().startswith("## ")
        ),
        len(nb.cells),
    )
    cells = [c.copy() for c in nb.cells[start:stop]]
    cells[0]["source"] = cells[0]["source"].replace("## Notation concordance", "# Notation concordance", 1)
    for cell in cells:  # the page sits at the book's root: a link relative to book/partA_appendix/ moves
        if cell.cell_type == "markdown":
            cell["source"] = re.sub(r"\]\(\.\./(part[^)\s]*)\)", r"](book/\1)", cell["source"])
    note = nbformat.v4.new_markdown_cell(
        f"*This page repeats the notation section of [Appendix A]({APPENDIX.as_posix()}), with its check.*"
    )
    note["id"] = "notation-source"
    nb.cells = cells[:1] + [note] + cells[1:]
    return nb


def coverage_page(root: Path) -> str:
    """The coverage map page (``book/coverage.yaml`` rendered by :mod:`nextword.booktools.coverage`)."""
    from nextword.booktools import coverage

    return coverage.coverage_page(root)


_READING_TIMES_MARK = "<!-- reading times: generated by nextword.booktools.notebooks.stage_book -->"


def _page_title(py: Path) -> str:
    """The H1 of a jupytext page (``# # 6.1 From ...`` -> ``6.1 From ...``), or its file name."""
    for line in py.read_text(encoding="utf-8").splitlines():
        if line.startswith("# # "):
            return line[4:].strip()
    return py.stem


def _reading_times(root: Path, parts: list[tuple[str, list[str]]]) -> str:
    """The landing page's table: every page of every part with its reading time (stated, or ≈ estimated)."""
    from nextword.booktools.teaching import estimated_minutes, reading_minutes

    rows = ["| part | page | minutes |", "|---|---|---|"]
    for caption, docs in parts:
        for i, doc in enumerate(docs):
            py = root / f"{doc}.py"
            if not py.exists():
                continue
            minutes = reading_minutes(py)
            shown = str(minutes) if minutes is not None else f"≈ {estimated_minutes(py)}"
            title = _page_title(py).replace("|", "\\|")
            part = caption.split(" — ")[0]  # "Part 1 — Chapter 6: ..." -> "Part 1"
            rows.append(f"| {part if i == 0 else ''} | [{title}]({doc}.ipynb) | {shown} |")
    return "\n".join(rows) + "\n"


def _route_map(root: Path) -> str:
    """The landing page's route map (SVG text), with each stop's reading time."""
    from nextword.booktools import routemap
    from nextword.booktools.teaching import estimated_minutes

    minutes = {
        node.key: estimated_minutes(root / "book" / f"{node.key}.py")
        if "/" in node.key
        else routemap.part_minutes(root / "book", node.key)
        for node in routemap.NODES
    }
    return routemap.route_map_svg(minutes)


#: The back matter of book/ as the rendered book names it: ``book/ERRATA.md`` is the page ``errata``, etc.
_BACK_MATTER = {
    "ERRATA.md": "errata.md",
    "BIBLIOGRAPHY.md": "bibliography.md",
    "glossary.md": "glossary.md",
    "course_pack.md": "course_pack.md",
    "coverage.yaml": "coverage.md",  # the coverage map, rendered from its YAML
}
_BACK_MATTER_LINK = re.compile(r"\]\((?:\.\./)+(?:book/)?(" + "|".join(map(re.escape, _BACK_MATTER)) + r")(#[^)]*)?\)")


def staged_back_matter_links(text: str) -> str:
    """A page's links to the back matter of book/ (``[errata](../ERRATA.md)`` from a page of a part, as a reader of
    the repository follows them) pointed at the rendered book's pages, which sit at the root of the staged tree
    beside ``book/``, ``exercises/`` and ``solutions/`` (two folders up from every notebook page).

    >>> staged_back_matter_links("see the [errata](../ERRATA.md) and [terms](../../book/glossary.md#t)")
    'see the [errata](../../errata.md) and [terms](../../glossary.md#t)'
    """
    return _BACK_MATTER_LINK.sub(lambda m: f"](../../{_BACK_MATTER[m[1]]}{m[2] or ''})", text)


def stage_book(stage: Path = STAGE_DIR, root: Path = REPO_ROOT) -> list[str]:
    """Lay out the Sphinx source tree of the book in ``stage`` and return every docname it contains.

    Copies each executed ``.ipynb`` of ``book/``, ``exercises/`` and ``solutions/`` with its ``.py`` source
    (the page's source link), and writes the generated pages: ``index.md`` (the landing page
    ``book/index.md`` with its table of reading times and the sidebar's toctrees: the parts, Exercises,
    Solutions, back matter), ``route_map.svg`` (:mod:`nextword.booktools.routemap`), one page per exercise
    part and per solution part, ``glossary.md``, ``errata.md`` (evidence linked to the rendered notebooks),
    ``notation.ipynb`` (Appendix A's concordance) and ``bibliography.md``. ``book/README.md`` is the
    contributors' table of contents: it orders the parts and pages, and is not a page of the book. Files left from an earlier layout are removed. Only changed files are rewritten.
    """
    import nbformat

    stage, root = Path(stage), Path(root)
    wanted: dict[Path, Path | str] = {}  # staged path -> source file to copy, or generated text
    parts = book_structure(root)
    exercises, solutions = _exercise_pages(root, "exercises"), _exercise_pages(root, "solutions")
    for doc in [d for _, docs in parts for d in docs] + [
        d for pages in (exercises, solutions) for docs in pages.values() for d in docs
    ]:
        for suffix in (".ipynb", ".py"):
            if (root / f"{doc}{suffix}").exists():
                wanted[stage / f"{doc}{suffix}"] = root / f"{doc}{suffix}"

    ex_readme = root / "exercises" / "README.md"
    ex_text = ex_readme.read_text(encoding="utf-8") if ex_readme.exists() else "# Exercises\n"
    ex_intro, *ex_sections = re.split(r"(?m)^(?=## )", ex_text)
    ex_captions = {
        m[1]: s.splitlines()[0][3:].strip() for s in ex_sections for m in [re.search(r"\((part\w+)/", s)] if m
    }
    ex_parts = []
    for part, docs in exercises.items():
        caption = ex_captions.get(part, part)
        section = next((s for s in ex_sections if f"({part}/" in s), "")
        table = re.sub(rf"\({part}/(\w+)\.py\)", r"(\1.ipynb)", section.split("\n", 1)[-1])
        table = _link_notebook_paths(table, root, prefix="../../")
        wanted[stage / "exercises" / part / "index.md"] = (
            f"# Exercises for {caption}\n\n{SOLUTIONS_LINKED}\n"
            f"{table}\n" + _toctree([d.split("/")[-1] for d in docs], hidden=True)
        )
        ex_parts.append(f"exercises/{part}/index")
    wanted[stage / "exercises" / "index.md"] = (
        ex_intro.replace("# Exercises", "# How the exercises work", 1)
        + "\n"
        + "".join(
            f"- [Exercises for {ex_captions.get(d.split('/')[1], d.split('/')[1])}]({d.split('/', 1)[1]}.md)\n"
            for d in ex_parts
        )
    )  # plain links: the sidebar lists the part pages once, beside this one
    sol_parts = []
    for part, docs in solutions.items():
        caption = ex_captions.get(part, part)
        wanted[stage / "solutions" / part / "index.md"] = (
            f"# Solutions for {caption}\n\nWorked answers, executed. Try the exercise first: each solution "
            "links back to its student version.\n\n" + _toctree([d.split("/")[-1] for d in docs], hidden=False)
        )
        sol_parts.append(f"solutions/{part}/index")

    landing = (root / "book" / "index.md").read_text(encoding="utf-8")
    if _READING_TIMES_MARK not in landing:
        raise ValueError(f"book/index.md lost its marker {_READING_TIMES_MARK!r} (the reading-times table)")
    landing = landing.replace(_READING_TIMES_MARK, _reading_times(root, parts))
    trees = [_toctree(docs, caption) for caption, docs in parts]
    trees.append(_toctree(["exercises/index", *ex_parts], "Exercises"))
    trees.append(_toctree(sol_parts, "Solutions"))
    trees.append(_toctree(["course_pack"], "For instructors"))  # book/course_pack.md, staged below
    trees.append(
        _toctree(["glossary", "errata", "coverage", "notation", "bibliography"], "Glossary, errata, notation, sources")
    )
    wanted[stage / "index.md"] = landing + "\n" + "\n".join(trees)
    wanted[stage / "route_map.svg"] = _route_map(root)
    wanted[stage / "glossary.md"] = root / "book" / "glossary.md"
    wanted[stage / "errata.md"] = _errata_page(root)
    wanted[stage / "coverage.md"] = coverage_page(root)
    wanted[stage / "course_pack.md"] = _link_notebook_paths((root / "book" / "course_pack.md").read_text("utf-8"), root)
    wanted[stage / "notation.ipynb"] = nbformat.writes(_notation_notebook(root)) + "\n"
    wanted[stage / "bibliography.md"] = (root / "book" / "BIBLIOGRAPHY.md").read_text(encoding="utf-8")

    for path, what in wanted.items():
        if isinstance(what, Path) and what.suffix == ".ipynb":
            text = what.read_text(encoding="utf-8")
            staged = staged_back_matter_links(text)
            if staged == text:
                _copy_if_changed(what, path)
            else:
                _write_if_changed(path, staged)
        elif isinstance(what, Path):
            _copy_if_changed(what, path)
        else:
            _write_if_changed(path, what)
    for old in [p for p in stage.rglob("*") if p.is_file() and p not in wanted]:
        old.unlink()  # a notebook removed or renamed in the repository leaves no orphan page
    return sorted(
        str(p.relative_to(stage).with_suffix("")).replace(os.sep, "/") for p in wanted if p.suffix in (".ipynb", ".md")
    )


def render_book(out_dir: Path = HTML_DIR, *, stage: Path = STAGE_DIR, jobs: int = 1, quiet: bool = True) -> Path:
    """Stage the book (:func:`stage_book`) and build its HTML with Sphinx into ``out_dir``.

    Incremental: a second call rebuilds only pages whose notebook changed. Returns ``out_dir/index.html``.
    Raises ``RuntimeError`` with Sphinx's output when the build fails.
    """
    import subprocess

    if jobs < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs}")
    stage_book(Path(stage))
    cmd = [
        sys.executable,
        "-m",
        "sphinx",
        "-b",
        "html",
        "-c",
        str(BOOK_CONF_DIR),
        "-j",
        str(jobs),
        "--keep-going",
        *(["-q"] if quiet else []),
        str(stage),
        str(out_dir),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True)
    sys.stderr.write(done.stderr)
    if done.returncode != 0:
        raise RuntimeError(f"sphinx-build failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return Path(out_dir) / "index.html"


def _execute_reporting(py: Path) -> tuple[float, str | None]:
    """``execute(py)`` for a worker process: (seconds, None) or (nan, the error's last lines)."""
    try:
        return execute(py), None
    except Exception as exc:
        return float("nan"), f"{type(exc).__name__}: {str(exc)[-2000:]}"


def _expand(paths: Sequence[str], use_all: bool, dirs: Sequence[str]) -> list[Path]:
    if use_all:
        return notebook_sources(REPO_ROOT, dirs)
    out = []
    for p in paths:
        path = Path(p)
        if path.suffix == ".ipynb":
            path = path.with_suffix(".py")
        if path.suffix != ".py":
            raise ValueError(f"{p}: a notebook source is a .py (or its .ipynb) file")
        if not path.is_file():
            raise ValueError(f"no such notebook source: {path}")
        out.append(path)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="nextword book",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    from nextword._cli import output_dir, positive_int

    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="convert py -> ipynb and execute")
    b.add_argument("paths", nargs="*")
    b.add_argument("--all", action="store_true", help="every notebook in book/ and solutions/")
    b.add_argument(
        "-j", "--jobs", type=positive_int, default=1, help="notebooks executed in parallel, one kernel each (default 1)"
    )
    s = sub.add_parser("sync", help="convert py -> ipynb without executing")
    s.add_argument("paths", nargs="*")
    s.add_argument("--all", action="store_true")
    sub.add_parser("check", help="fail if any .py/.ipynb pair has drifted")
    r = sub.add_parser("render", help="render the executed book to _build/html (Sphinx, incremental)")
    r.add_argument("--out", type=output_dir, default=HTML_DIR, help="output folder (default %(default)s)")
    r.add_argument("-j", "--jobs", type=positive_int, default=1, help="Sphinx worker processes (default 1)")
    args = parser.parse_args(argv)
    apply_notebook_env()
    try:
        return _run(args)
    except ValueError as exc:  # a path that is not a notebook source
        parser.error(str(exc))


def _run(args: argparse.Namespace) -> int:
    if args.command == "build":
        paths = _expand(args.paths, args.all, EXECUTED_DIRS)
        failed = []
        with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            for py, (seconds, error) in zip(paths, pool.map(_execute_reporting, paths)):
                if error is None:
                    print(f"[ok]   {py}  ({seconds:.1f} s)", flush=True)
                else:  # report every failing notebook, then fail
                    failed.append(py)
                    print(f"[FAIL] {py}: {error}", flush=True)
        print(f"{len(paths) - len(failed)} of {len(paths)} notebooks executed")
        return 1 if failed else 0
    if args.command == "sync":
        for py in _expand(args.paths, args.all, NOTEBOOK_DIRS):
            print(f"synced {sync(py, keep_outputs=not str(py).startswith('exercises'))}")
        return 0
    if args.command == "check":
        problems = check_pairs()
        for p in problems:
            print(f"[drift] {p}")
        n = len(notebook_sources())
        print(f"{n - len({p.path for p in problems})} of {n} notebook pairs in sync")
        return 1 if problems else 0
    if args.command == "render":
        Path(args.out).mkdir(parents=True, exist_ok=True)  # an unwritable --out fails now, not after Sphinx
        index = render_book(Path(args.out), jobs=args.jobs)
        print(f"wrote {index}")
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
