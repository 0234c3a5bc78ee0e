"""The markdown-hygiene check (``nextword.booktools.checks.markdown``) catches each slip in a tiny page,
passes the forms jupytext reads as intended, and finds no slip in ``solutions/`` or ``exercises/``."""

from __future__ import annotations

from pathlib import Path

import jupytext

from nextword.booktools.checks import markdown
from nextword.booktools.pages import REPO_ROOT, read_page

_GOOD = """# %% [markdown]
# # 9.1 A page
#
# Text, a blank comment line above.

# %% tags=["hide-cell"]
x = 1  # a code comment

# %% [markdown] tags=["hide-cell"]
# ## Reproducibility
#
# seed 0
"""


def _problems(tmp_path: Path, text: str) -> list[tuple[int, str]]:
    page = tmp_path / "part9_x" / "page.py"
    page.parent.mkdir(exist_ok=True)
    page.write_text(text, encoding="utf-8")
    return [(p.line, p.message) for p in markdown.check(read_page(page))]


def test_a_clean_page_passes(tmp_path):
    assert _problems(tmp_path, _GOOD) == []


def test_text_on_the_cell_line_is_caught_and_jupytext_would_lose_it(tmp_path):
    text = _GOOD.replace("# %% [markdown]\n# # 9.1 A page", "# %% [markdown] # 9.1 A page")
    assert _problems(tmp_path, text) == [
        (1, "text on the cell line itself ('# 9.1 A page'): jupytext keeps it as the cell's title, not its text")
    ]
    first = jupytext.reads(text, fmt="py:percent").cells[0]
    assert "9.1 A page" not in first.source  # the defect: the title is not in the cell the reader sees
    code_title = _GOOD.replace('# %% tags=["hide-cell"]\nx', '# %% the setup tags=["hide-cell"]\nx')
    assert [line for line, _ in _problems(tmp_path, code_title)] == [6]


def test_an_empty_markdown_cell_is_caught(tmp_path):
    text = _GOOD.replace("# %% tags=", "# %% [markdown]\n#\n\n# %% tags=")
    assert _problems(tmp_path, text) == [(6, "an empty markdown cell")]


def test_a_line_without_its_prefix_is_caught(tmp_path):
    text = _GOOD.replace("# Text, a blank", "Text, a blank").replace("# seed 0", "#seed 0")
    assert _problems(tmp_path, text) == [
        (4, "a markdown line without its '# ' prefix: 'Text, a blank comment line above.'"),
        (12, "a markdown line without its '# ' prefix: '#seed 0'"),
    ]


def test_solutions_and_exercises_have_no_slip():
    sources = sorted((REPO_ROOT / "solutions").rglob("*.py")) + sorted((REPO_ROOT / "exercises").rglob("*.py"))
    found = [
        f"{path.relative_to(REPO_ROOT)}:{line}: {message}"
        for path in sources
        for line, message in markdown.percent_problems(path.read_text(encoding="utf-8"))
    ]
    assert not found, "\n".join(found)
