"""The control-character check and the static TeX check (``nextword.booktools.checks.characters`` and
``.tex``) catch what they target; the book's other sources hold no control character either."""

from __future__ import annotations

import json
import re
import shutil

from nextword.booktools.checks import characters, tex
from nextword.booktools.display import MARK
from nextword.booktools.pages import BOOK, read_page


def test_a_form_feed_in_a_copy_of_page_5_5_is_caught_with_its_line(tmp_path):
    """The defect of issue 45 #1: ``\\frac`` in a string without r became a form feed and ``rac``."""
    source = BOOK / "part5_svflow" / "05_prefix_shuffling.py"
    copy = tmp_path / "part5_svflow" / source.name
    copy.parent.mkdir()
    text = source.read_text(encoding="utf-8")
    if "\f" not in text:  # the page has been fixed: put the defect back into the copy
        text = text.replace("\\frac", "\frac", 1)
    copy.write_text(text, encoding="utf-8")
    problems = characters.check(read_page(copy))
    line = text[: text.index("\f")].count("\n") + 1
    assert (problems[0].line, problems[0].message.split(" in ")[0]) == (line, "U+000C FORM FEED (FF)")


def test_every_escape_character_is_caught_and_the_produced_mark_is_allowed():
    for escape, name in (("\f", "FORM FEED"), ("\b", "BACKSPACE"), ("\a", "BELL"), ("\v", "VERTICAL TAB")):
        assert [what for _, what in characters.bad_characters(f"x{escape}y")] == [
            f"U+{ord(escape):04X} {name}" + (" (FF)" if escape == "\f" else "")
        ]
    assert characters.bad_characters(f"a\tb\nc\r\n{MARK}1.03{MARK}") == []
    assert characters.bad_characters("zero\u200bwidth\ufeff")[0][1] == "U+200B ZERO WIDTH SPACE"


def test_a_notebook_cell_source_or_output_with_one_is_caught(tmp_path):
    page = tmp_path / "part9_x" / "page.py"
    page.parent.mkdir()
    shutil.copy(BOOK / "part0_reading_guide" / "00_reading_guide.py", page)
    nb = json.loads((BOOK / "part0_reading_guide" / "00_reading_guide.ipynb").read_text(encoding="utf-8"))
    code = next(i for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code" and c.get("outputs"))
    nb["cells"][code]["outputs"].append({"output_type": "stream", "name": "stdout", "text": ["\x1b[31mred\x1b[0m\n"]})
    page.with_suffix(".ipynb").write_text(json.dumps(nb), encoding="utf-8")
    problems = characters.check(read_page(page))
    assert [p.message for p in problems] == [f"U+001B ESCAPE in the notebook's cell {code} (output)"]


def test_the_books_other_sources_hold_no_control_character(tmp_path):
    assert characters.files_with_control_characters() == []
    (tmp_path / "solutions" / "part9").mkdir(parents=True)
    (tmp_path / "solutions" / "part9" / "ex01.py").write_text('label = "$\\beta$"\nx = "\b"\n', encoding="utf-8")
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "ERRATA.md").write_text("a\vb\n", encoding="utf-8")
    assert characters.files_with_control_characters(tmp_path) == [
        "book/ERRATA.md:1: U+000B VERTICAL TAB",
        "solutions/part9/ex01.py:2: U+0008 BACKSPACE",
    ]


def test_tex_commands_in_strings_without_r_are_caught_before_they_become_control_characters():
    code = 'a = "$\\theta$"\nb = r"$\\theta$"\nc = "\\\\frac12"\nd = f"{x}\\nabla"\ne = "\\nNext line"\n'
    assert [(line, m.split(" in ")[0]) for line, m in tex.string_problems(code)] == [
        (1, '"\\theta"'),
        (4, '"\\nabla"'),
    ]


def test_maths_that_mathjax_cannot_typeset_is_caught():
    found = [
        m for _, m in tex.maths_problems("fine $\\frac{a}{b}$ and $\\lVert x\\rVert$ and $\\operatorname{Var}(x)$")
    ]
    assert found == []
    assert [m for _, m in tex.maths_problems("$\\begin{cases} a \\end{array}$")] == [
        "\\begin and \\end do not match in $\\begin{cases} a \\end{array}$"
    ]
    assert [m for _, m in tex.maths_problems("| $|x|$ | a cell |")] == [
        "a bare | inside maths in a table row ends the cell: $|x|$ (use \\lvert, \\rvert, \\Vert)"
    ]
    assert [m for _, m in tex.maths_problems("the price is $5 and `$x` in code")] == [
        "an unpaired $ in this paragraph: its maths is not typeset"
    ]
    assert [m for _, m in tex.maths_problems("$\\mathcal{L} = \\cancel{x}$")] == [
        "MathJax does not define \\cancel (in $\\mathcal{L} = \\cancel{x}$)"
    ]
    assert "int" in tex.mathjax_commands() and "bm" not in tex.mathjax_commands()


def test_control_symbols_mathjax_lacks_are_caught_and_the_books_macros_are_known():
    """4.3 wrote ``z^\\*`` (for the Markdown of another renderer): MathJax 2 has no ``\\*``, so the browser test
    found three red ``\\*`` on the page; book/conf.py now defines it, as the PDF's preamble does."""
    assert [m for _, m in tex.maths_problems("$z^\\- + a\\,b\\;c\\{d\\}$")] == [
        "MathJax does not define \\- (in $z^\\- + a\\,b\\;c\\{d\\}$)"
    ]
    assert tex.maths_problems("$z^\\*$") == []
    conf = (BOOK / "conf.py").read_text(encoding="utf-8")
    macros = re.search(r'"TeX": \{"Macros": (\{[^}]*\})\}', conf)[1]
    assert set(json.loads(macros)) == tex.BOOK_MACROS
