r"""Saved-run provenance in stored outputs is current: what a page printed about a saved run is what the run's
``result.json`` says now.

A page that reads a saved run (``load_result("NAME")``, :mod:`nextword.provenance`) prints its provenance in
a hidden cell, ``produced by `nextword results run NAME` at `ed379f3e63c2` on 2026-11-28 (wall time 30 min)``.
When the run is redone and the page is not rebuilt, the committed ``.ipynb`` keeps the old run's commit,
date and wall time (4.9 did). This check reads the stored outputs, no execution: each *record* starts at
a run's command in backticks (`` `nextword results run NAME` ``, or any ``command`` a ``result.json``
holds) and runs to the next such command, a blank line or the end of the output. In a record the first

- commit (7–40 hex digits after "at" or "commit", in backticks or not) must start the run's ``commit``;
- date (``YYYY-MM-DD``) must be the run's ``created`` date;
- wall time (``wall time 30 min``, ``… 26 s``, ``… 1.5 h``) must be its ``wall_time_s`` at the printed
  precision;
- ``seeds [0, 1, 2]`` must be its ``seeds``;
- ``(uncommitted changes)`` needs ``dirty`` true;

a command that names no saved run is a problem, and so is a commit printed "at commit …" outside every
record (provenance the check cannot tie to a run). :func:`stale_provenance` reads any notebook
(``tests/booktools/test_pagecheck_provenance.py`` runs it over ``solutions/`` and ``exercises/`` too).

>>> run = {"command": "nextword results run sweep", "commit": "ed379f3e63c2aa", "created": "2026-11-28T12:54:31",
...        "wall_time_s": 1783.0, "seeds": [0], "dirty": False}
>>> record_problems("produced by `nextword results run sweep` at `ed379f3e63c2` on 2026-11-28 (wall time 30 min)",
...                 "sweep", run)
[]
>>> record_problems("at `6233bea4484c` on 2026-11-26 (wall time 4 min)", "sweep", run)
['commit 6233bea4484c (result.json: ed379f3e63c2)', 'date 2026-11-26 (result.json: 2026-11-28)', 'wall time 4 min (result.json: 30 min)']
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

from nextword.booktools.pages import BOOK, Page, Problem

__all__ = ["check", "record_problems", "saved_runs", "stale_provenance"]

_RUN_COMMAND = re.compile(r"`(nextword results run ([\w.-]+))[^`]*`")
_COMMIT = re.compile(r"\b(?:at|commit)\s+`?([0-9a-f]{7,40})\b`?")
_DATE = re.compile(r"\b(20\d\d-\d\d-\d\d)\b")
_WALL = re.compile(r"\bwall(?:-clock)? time:?\s+(\d+(?:\.\d+)?)\s*(s|sec|seconds|min|minutes|h|hours)\b")
_SEEDS = re.compile(r"\bseeds:?\s+(\[[\d,\s]*\])")
_DIRTY = "(uncommitted changes)"
_UNIT = {"s": 1.0, "sec": 1.0, "seconds": 1.0, "min": 60.0, "minutes": 60.0, "h": 3600.0, "hours": 3600.0}


@lru_cache(maxsize=8)
def _runs(root: str) -> dict[str, dict]:
    runs = {}
    for path in sorted(Path(root).glob("*/result.json")):
        try:
            runs[path.parent.name] = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
    return runs


def saved_runs(results: Path | str = BOOK / "results") -> dict[str, dict]:
    """``{NAME: result.json}`` of every saved run under ``results`` (read once per process)."""
    return _runs(str(Path(results).resolve()))


def record_problems(record: str, name: str, run: dict) -> list[str]:
    """What a provenance ``record`` of run ``name`` prints that its ``run`` (``result.json``) does not say."""
    problems = []
    commit = _COMMIT.search(record)
    if commit and not str(run.get("commit", "")).startswith(commit[1]):
        problems.append(f"commit {commit[1]} (result.json: {str(run.get('commit', ''))[: len(commit[1])]})")
    date = _DATE.search(record)
    if date and date[1] != str(run.get("created", ""))[:10]:
        problems.append(f"date {date[1]} (result.json: {str(run.get('created', ''))[:10]})")
    wall = _WALL.search(record)
    if wall and isinstance(run.get("wall_time_s"), (int, float)):
        decimals = len(wall[1].split(".")[1]) if "." in wall[1] else 0
        now = f"{run['wall_time_s'] / _UNIT[wall[2]]:.{decimals}f}"
        if now != wall[1]:
            problems.append(f"wall time {wall[1]} {wall[2]} (result.json: {now} {wall[2]})")
    seeds = _SEEDS.search(record)
    if seeds and "seeds" in run and json.loads(seeds[1]) != list(run["seeds"]):
        problems.append(f"seeds {seeds[1]} (result.json: {run['seeds']})")
    if _DIRTY in record and not run.get("dirty"):
        problems.append(f"{_DIRTY} (result.json: dirty is false)")
    return problems


def _records(text: str, commands: dict[str, str]) -> tuple[list[tuple[str, str]], str]:
    """``([(NAME, record text)], the text outside every record)`` of one output's text."""
    starts = []
    for m in re.finditer(r"`([^`\n]+)`", text):
        hit = _RUN_COMMAND.fullmatch(m[0])
        name = commands.get(m[1]) or (hit[2] if hit else None)
        if name:
            starts.append((m.start(), name))
    records, outside, last = [], [], 0
    for n, (start, name) in enumerate(starts):
        stop = starts[n + 1][0] if n + 1 < len(starts) else len(text)
        blank = re.search(r"\n\s*\n", text[start:stop])
        end = start + blank.start() if blank else stop
        outside.append(text[last:start])
        records.append((name, text[start:end]))
        last = end
    outside.append(text[last:])
    return records, "".join(outside)


def _output_texts(outputs: list[dict]) -> list[str]:
    texts = []
    for out in outputs:
        if "text" in out:
            texts.append("".join(out["text"]))
        for key in ("text/plain", "text/markdown"):
            value = out.get("data", {}).get(key)
            if value is not None:
                texts.append("".join(value) if isinstance(value, list) else str(value))
    return texts


def stale_provenance(outputs: list[dict], results: Path | str = BOOK / "results") -> list[str]:
    """A message per stale or untied provenance record in one code cell's stored ``outputs``."""
    runs = saved_runs(results)
    commands = {str(run["command"]): name for name, run in runs.items() if run.get("command")}
    messages = []
    for text in _output_texts(outputs):
        records, outside = _records(text, commands)
        for name, record in records:
            if name not in runs:
                messages.append(f"the output names the saved run {name!r}, which has no {name}/result.json")
                continue
            wrong = record_problems(record, name, runs[name])
            if wrong:
                messages.append(
                    f"the stored output about saved run {name!r} is stale: it prints {'; '.join(wrong)}; "
                    "rebuild the page"
                )
        for m in re.finditer(r"\bat commit\s+`?[0-9a-f]{7,40}\b", outside):
            messages.append(
                f"the output prints {m[0]!r} without the command of the saved run it belongs to "
                "(print `result['command']` before it)"
            )
    return messages


def check(page: Page) -> list[Problem]:
    """A problem per stale provenance record in the page's stored outputs (``book/results`` beside the
    page's part folder holds the runs)."""
    results = page.path.resolve().parent.parent / "results"
    problems = []
    for cell in page.code_cells():
        for message in stale_provenance(page.outputs(cell.index), results):
            problems.append(Problem("provenance", cell.line, message))
    return problems
