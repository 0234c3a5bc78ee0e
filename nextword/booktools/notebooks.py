"""The notebook pipeline: pair, execute, check and render the book's jupytext notebooks.

The ``py:percent`` file is the source of truth; the ``.ipynb`` beside it is generated from it and,
for ``book/`` and ``solutions/``, committed executed so that ``pytest --nbval`` can compare outputs.

Command line (run from the repository root)::

    python -m nextword.booktools.notebooks build book/part1_chapter6/6_2_attention_mechanism.py   # py -> ipynb, execute
    python -m nextword.booktools.notebooks build --all            # every notebook in book/ and solutions/
    python -m nextword.booktools.notebooks sync --all             # py -> ipynb without executing (keeps outputs)
    python -m nextword.booktools.notebooks check                  # fail if any pair drifted or lacks its .ipynb
    python -m nextword.booktools.notebooks render                 # HTML book in _build/html with index.html
"""
from __future__ import annotations

import argparse
import html
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


_PART_TITLES = {
    "part0_reading_guide": "Reading guide",
    "part1_chapter6": "Part 1 — Chapter 6: Transformers",
    "part2_formulation": "Part 2 — LLMs: a mathematical formulation",
    "part3_dynamics": "Part 3 — Gradient dynamics of attention",
    "part4_margins": "Part 4 — Support tokens and stability margins",
    "part5_svflow": "Part 5 — Transformer as a score-based variational flow",
}

__all__ = [
    "PairingProblem",
    "notebook_sources",
    "py_to_notebook",
    "check_pairs",
    "sync",
    "execute",
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
            problems.append(PairingProblem(py, "has no paired .ipynb (run: python -m nextword.booktools.notebooks build)"))
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


def _title_of(ipynb: Path) -> str:
    import nbformat

    nb = nbformat.read(ipynb, as_version=4)
    for cell in nb.cells:
        if cell["cell_type"] == "markdown":
            for line in cell["source"].splitlines():
                if line.startswith("#"):
                    return line.lstrip("#").strip()
    return ipynb.stem


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


def _mathjax_dir() -> Path | None:
    try:
        import jupyter_server_mathjax
    except ImportError:
        return None
    candidate = Path(jupyter_server_mathjax.__file__).parent / "static"
    return candidate if (candidate / "MathJax.js").exists() else None


def render_book(out_dir: Path = REPO_ROOT / "_build" / "html", dirs: Sequence[str] = ("book",)) -> Path:
    """Render every executed notebook to offline HTML under ``out_dir`` and write ``index.html``.

    MathJax is copied from the ``jupyter-server-mathjax`` package so that pages work offline.
    Returns the path of ``index.html``.
    """
    import nbformat
    from nbconvert import HTMLExporter

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    mathjax = _mathjax_dir()
    if mathjax is not None and not (out_dir / "mathjax" / "MathJax.js").exists():
        shutil.copytree(mathjax, out_dir / "mathjax", dirs_exist_ok=True)
    toc: dict[str, list[tuple[str, str]]] = {}
    order = {key: i for i, key in enumerate(toc_order())}
    sources = sorted(notebook_sources(REPO_ROOT, dirs),
                     key=lambda p: (p.parent.name, order.get(f"{p.parent.name}/{p.stem}", len(order)), p.name))
    for py in sources:
        ipynb = py.with_suffix(".ipynb")
        if not ipynb.exists():
            raise FileNotFoundError(f"{ipynb} is missing: run `python -m nextword.booktools.notebooks build {py}`")
        part = py.parent.name
        rel = Path(py.parent.parent.name) / part / (py.stem + ".html")
        url = "../../mathjax/MathJax.js?config=TeX-AMS-MML_HTMLorMML-full,Safe" if mathjax else None
        exporter = HTMLExporter(**({"mathjax_url": url} if url else {}))
        body, _ = exporter.from_notebook_node(nbformat.read(ipynb, as_version=4))
        (out_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        (out_dir / rel).write_text(body, encoding="utf-8")
        toc.setdefault(part, []).append((rel.as_posix(), _title_of(ipynb)))
    items = []
    for part in sorted(toc):
        title = _PART_TITLES.get(part, part)
        links = "\n".join(f'    <li><a href="{href}">{html.escape(t)}</a></li>' for href, t in toc[part])
        items.append(f"  <li><strong>{html.escape(title)}</strong>\n   <ul>\n{links}\n   </ul></li>")
    index = out_dir / "index.html"
    index.write_text(
        "<!doctype html>\n<html><head><meta charset='utf-8'><title>nextword — the book</title>"
        "<style>body{font-family:sans-serif;max-width:50em;margin:2em auto;line-height:1.5}</style></head>\n"
        "<body><h1>nextword — Predicting the Next Word, Chapter 6 and its theory</h1>\n"
        "<p>Every page is an executed notebook; the code behind each figure is on the page and in "
        "<code>nextword/</code>.</p>\n<ul>\n" + "\n".join(items) + "\n</ul></body></html>\n",
        encoding="utf-8",
    )
    return index


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
        if not path.exists():
            raise SystemExit(f"no such notebook source: {path}")
        out.append(path)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m nextword.booktools.notebooks", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="convert py -> ipynb and execute")
    b.add_argument("paths", nargs="*")
    b.add_argument("--all", action="store_true", help="every notebook in book/ and solutions/")
    b.add_argument("-j", "--jobs", type=int, default=1, help="notebooks executed in parallel (one kernel each)")
    s = sub.add_parser("sync", help="convert py -> ipynb without executing")
    s.add_argument("paths", nargs="*")
    s.add_argument("--all", action="store_true")
    sub.add_parser("check", help="fail if any .py/.ipynb pair has drifted")
    r = sub.add_parser("render", help="render the executed book to _build/html")
    r.add_argument("--out", default=str(REPO_ROOT / "_build" / "html"))
    args = parser.parse_args(argv)
    apply_notebook_env()

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
        index = render_book(Path(args.out))
        print(f"wrote {index}")
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
