"""Every command the book prints exists: the commands in the committed notebooks (outputs and text) and the
``command`` every saved result records run with ``--help``, and a registry command names a saved run (issue 47 §4)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "book").glob("*/*.ipynb")) + sorted((ROOT / "solutions").glob("*/*.ipynb"))
RESULTS = sorted((ROOT / "book" / "results").glob("*/result.json"))
# a command in backquotes: `nextword ...` or `python -m module ...`
_COMMAND = re.compile(r"`((?:nextword|python -m [\w.]+)(?: [^`\n]*)?)`")


def printed_commands() -> dict[str, set[str]]:
    """command -> where it is printed (a notebook, or a saved result's ``command``)."""
    found: dict[str, set[str]] = {}
    for nb in NOTEBOOKS:
        cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
        texts = ["".join(c["source"]) for c in cells if c["cell_type"] == "markdown"]
        for c in cells:
            for o in c.get("outputs", []):
                texts.append("".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/plain", "")))
        for text in texts:
            for cmd in _COMMAND.findall(text):
                found.setdefault(cmd, set()).add(nb.relative_to(ROOT).as_posix())
    for path in RESULTS:
        found.setdefault(json.loads(path.read_text())["command"], set()).add(path.relative_to(ROOT).as_posix())
    return found


def _program(cmd: str) -> tuple[str, ...]:
    """The part of ``cmd`` that ``--help`` is asked of: ``nextword SUB [ACTION]`` or ``python -m module``."""
    words = cmd.split()
    if words[0] == "python":
        return (sys.executable, "-m", words[2])
    sub = words[1:3] if words[1:2] in (["results"], ["exercises"], ["book"]) and len(words) > 2 else words[1:2]
    return (sys.executable, "-m", "nextword", *[w for w in sub if not w.startswith("-")])


@cache
def _help(program: tuple[str, ...]) -> subprocess.CompletedProcess:
    return subprocess.run([*program, "--help"], cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_commands_are_printed():
    found = printed_commands()
    assert any(c.startswith("nextword results run ") for c in found)
    assert not [c for c in found if c.startswith("python -m nextword.torch.")], "modules that do not exist"


@pytest.mark.parametrize("program", sorted({_program(c) for c in printed_commands()}), ids=lambda p: " ".join(p[1:]))
def test_every_printed_command_runs(program):
    where = {w for c, ws in printed_commands().items() if _program(c) == program for w in ws}
    done = _help(program)
    assert done.returncode == 0, (
        f"`{' '.join(program[1:])} --help` fails (printed in {sorted(where)}):\n{done.stderr[-2000:]}"
    )


def test_every_registry_command_printed_names_a_saved_run():
    from nextword.torch.runs.registry import NAMES

    for cmd, where in printed_commands().items():
        words = cmd.split()
        if words[:3] == ["nextword", "results", "run"]:
            assert set(w for w in words[3:] if not w.startswith("-") and w != "...") <= set(NAMES), (cmd, where)
