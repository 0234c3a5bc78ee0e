"""The PDF edition of the book (``make pdf``): Sphinx's LaTeX builder, xelatex and latexmk.

``nextword book pdf`` lays out the same source tree as the HTML book (:func:`stage_pdf`, from
``notebooks.stage_book``) with the PDF's own root document: each part of ``book/README.md`` as a LaTeX
``\\part``, its pages as chapters, then the appendices (the exercises, the glossary, the errata ledger, the sources). The
solution notebooks and the notation page (a copy of the reading guide's section) are left out (the exercise
indexes then say where the solutions are instead of linking them). Pages are
rendered from the stored outputs, as in the HTML. The PDF is written to ``_build/nextword.pdf``.

TeX comes from Debian (``apt-get install latexmk texlive-xetex texlive-latex-extra texlive-fonts-recommended
fonts-freefont-otf fonts-dejavu-core tex-gyre``; ``.ci/run`` and ``make pdf`` install it when they run as root).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from nextword.booktools import notebooks

__all__ = ["PDF_STAGE", "PDF_PATH", "TEX_PACKAGES", "stage_pdf", "render_pdf"]

PDF_STAGE = notebooks.REPO_ROOT / "_build" / "pdf_src"
LATEX_DIR = notebooks.REPO_ROOT / "_build" / "latex"
PDF_PATH = notebooks.REPO_ROOT / "_build" / "nextword.pdf"
TEX_PACKAGES = (
    "latexmk texlive-xetex texlive-latex-recommended texlive-latex-extra texlive-fonts-recommended "
    "fonts-freefont-otf fonts-dejavu-core tex-gyre texlive-lang-greek lmodern poppler-utils"
).split()
_EXCLUDED = ["_build", "**.ipynb_checkpoints", "solutions/**", "notation.ipynb"]
#: The appendices after the exercises: the glossary (the pages' technical words link to it), the errata, the sources.
_BACK_MATTER = ["glossary", "errata", "bibliography"]


def _raw_latex(tex: str) -> str:
    return "```{raw} latex\n" + tex + "\n```\n"


#: The exercise indexes' sentence about solutions, true in the HTML (which links each exercise to its solution)
_SOLUTIONS_LINKED = notebooks.SOLUTIONS_LINKED


def _print_exercise_index(text: str, part: str) -> str:
    """An exercise index page as the PDF prints it: the solutions are not in the PDF, so the sentence that says
    each exercise links to one says where they are instead.

    >>> line = _print_exercise_index("# Exercises\\n\\n" + _SOLUTIONS_LINKED + "\\n", "part1_chapter6").splitlines()[2]
    >>> line.startswith("The worked solutions are not printed"), "`solutions/part1_chapter6/` folder" in line
    (True, True)
    """
    return text.replace(
        _SOLUTIONS_LINKED,
        "The worked solutions are not printed in this book: each is the notebook of the same name in the "
        f"repository's `solutions/{part}/` folder (linked from each exercise in the HTML edition).",
    )


#: The printed edition's first page: what differs from the screen (the reading guide says it too, at its place).
_EDITION_TITLE = "About this printed edition"
_EDITION_NOTE = """This edition holds the pages of the HTML book, in the same order and with the same stored outputs.
On paper four things differ:

- A number marked with a dagger, like 0.66†, was produced by training, random sampling or an iterative method:
  its last digits vary with the seed and the CPU, so the page asserts its claim with a tolerance instead of the
  digits (the reading guide, "Exact numbers and produced numbers"). A number without the mark is exact.
- The sections folded on screen (*Checking the paper*, *Reproducibility*, the answers to *Check your
  understanding*) are printed open; each answer follows its question under the heading *Answer*.
- The worked solutions of the exercises are not printed: each is the notebook of the same name in the repository's
  `solutions/` folder.
- The HTML edition's landing page, with its route map (which pages build on which) and what each part assumes, is
  not printed: each page's *Builds on* line names the pages it needs. A link is followed by the number of the
  page it leads to, in parentheses; the glossary is an appendix.
"""


def stage_pdf(stage: Path = PDF_STAGE, root: Path = notebooks.REPO_ROOT) -> list[str]:
    """Lay out the book's sources in ``stage`` (as :func:`notebooks.stage_book`) with the PDF's ``index.md``.

    Returns the docnames of the PDF in reading order: the book's pages, then the appendices.
    """
    stage, root = Path(stage), Path(root)
    notebooks.stage_book(stage, root)
    for index in sorted(stage.glob("exercises/part*/index.md")):
        text = index.read_text(encoding="utf-8")
        notebooks._write_if_changed(index, _print_exercise_index(text, index.parent.name))
    parts = notebooks.book_structure(root)
    exercise_parts = sorted(str(p.parent.relative_to(stage)) + "/index" for p in stage.glob("exercises/part*/index.md"))
    text = [
        "# nextword: the book\n",
        _raw_latex(r"\chapter*{%s}\markboth{%s}{%s}" % ((_EDITION_TITLE,) * 3)),
        _EDITION_NOTE,
    ]
    for caption, docs in parts:
        # unnumbered (the caption says "Part 0 — ..."), but in the contents and the PDF outline
        text += [
            _raw_latex(f"\\part*{{{caption}}}\\addcontentsline{{toc}}{{part}}{{{caption}}}"),
            notebooks._toctree(docs),
        ]
    text += [
        _raw_latex("\\appendix\n\\part*{Appendices}\\addcontentsline{toc}{part}{Appendices}"),
        notebooks._toctree([*exercise_parts, *_BACK_MATTER]),
    ]
    notebooks._write_if_changed(stage / "index.md", "\n".join(text))
    return [d for _, docs in parts for d in docs] + [*exercise_parts, *_BACK_MATTER]


def render_pdf(out: Path = PDF_PATH, *, stage: Path = PDF_STAGE, latex_dir: Path = LATEX_DIR) -> Path:
    """Build the PDF: ``sphinx-build -b latex`` on :func:`stage_pdf`'s tree, then latexmk (xelatex) on it.

    Raises ``RuntimeError`` when TeX is missing or the build fails (with the end of the log).
    """
    missing = [tool for tool in ("latexmk", "xelatex") if shutil.which(tool) is None]
    if missing:
        raise RuntimeError(
            f"no {' and no '.join(missing)}: install TeX (Debian: apt-get install {' '.join(TEX_PACKAGES)})"
        )
    stage_pdf(Path(stage))
    sphinx = [sys.executable, "-m", "sphinx", "-b", "latex", "-c", str(notebooks.BOOK_CONF_DIR), "-q"]
    sphinx += ["-D", f"exclude_patterns={','.join(_EXCLUDED)}", "--keep-going", str(stage), str(latex_dir)]
    done = subprocess.run(sphinx, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"sphinx-build -b latex failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    # -f: latexmk goes on past TeX's recoverable errors (a missing glyph); the PDF is checked by the tests
    latexmk = ["latexmk", "-pdfxe", "-f", "-interaction=nonstopmode", "nextword.tex"]
    done = subprocess.run(latexmk, cwd=latex_dir, capture_output=True, text=True)
    pdf = Path(latex_dir) / "nextword.pdf"
    if not pdf.exists():
        raise RuntimeError(f"latexmk wrote no PDF ({done.returncode}):\n{done.stdout[-4000:]}")
    log = (Path(latex_dir) / "nextword.log").read_text(errors="replace")
    if "TeX capacity exceeded" in log:
        # e.g. an unbreakable box taller than a page: TeX writes empty pages until its stack overflows
        end = log.index("TeX capacity exceeded")
        raise RuntimeError(
            f"xelatex ran away (TeX capacity exceeded); the log before it:\n{log[max(0, end - 1500) : end + 400]}"
        )
    if "! Emergency stop." in log:
        # e.g. a table cell with an unbalanced brace: the PDF stops there (71 pages of 725) and latexmk -f goes on
        end = log.index("! Emergency stop.")
        raise RuntimeError(
            f"xelatex stopped (Emergency stop); the log before it:\n{log[max(0, end - 1500) : end + 200]}"
        )
    shutil.copy2(pdf, out)
    return Path(out)


def main(argv: Sequence[str] | None = None) -> int:
    from nextword._cli import output_file

    parser = argparse.ArgumentParser(
        prog="nextword book pdf",
        description="The whole book as one PDF: Sphinx's LaTeX builder on the executed notebooks, then xelatex "
        "(needs TeX: make tex).",
    )
    parser.add_argument("--out", type=output_file, default=PDF_PATH, help="the PDF to write (default %(default)s)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    pdf = render_pdf(Path(args.out))
    print(f"wrote {pdf} ({pdf.stat().st_size / 1e6:.1f} MB) in {time.perf_counter() - start:.0f} s")
    return 0
