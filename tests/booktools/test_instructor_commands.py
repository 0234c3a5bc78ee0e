"""The instructors' commands, run verbatim as the docs print them (issue 48).

``exercises/README.md`` ("For instructors") and ``book/course_pack.md`` ("Exporting and grading") show the
otter-grader and nbgrader round trip as ``bash`` blocks. Each block is run here line by line, as written, in a
fresh shell that starts in a folder standing for the clone's root (``.venv`` there is this environment) after
``source .venv/bin/activate``, which both documents ask for. The test adds only what a course adds between the
lines: a student's ``submission.ipynb`` before ``otter run`` and the submissions under
``submitted/<student>/<part>/`` before ``nbgrader autograde`` (the reference solutions, which must score full
marks). Installing the extra (``pip install …``) is not run: the test skips with the reason when otter-grader or
nbgrader is missing (in CI, where the extra is installed, it fails instead). ``make test-instructor`` runs it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from nextword.booktools.exercises.build import REPO_ROOT

INSTALL = "install the instructor extra: pip install otter-grader==7.0.* nbgrader==0.9.6 (or -e '.[instructor]')"
#: the documents and the heading of their instructors' section
DOCS = {"exercises/README.md": "## For instructors", "book/course_pack.md": "## Exporting and grading"}


def instructor_blocks(doc: str) -> list[list[str]]:
    """The command lines of each ``bash`` block of ``doc``'s instructors' section, split at blank lines
    (a blank line starts over in the clone's root), comments and install lines left out."""
    text = (REPO_ROOT / doc).read_text(encoding="utf-8")
    section = text.split(DOCS[doc], 1)[1]
    section = re.split(r"\n## ", section, maxsplit=1)[0]
    blocks = []
    for body in re.findall(r"```bash\n(.*?)```", section, flags=re.S):
        for chunk in re.split(r"\n\s*\n", body):
            lines = [re.sub(r"\s+#.*$", "", ln).strip() for ln in chunk.splitlines()]
            lines = [ln for ln in lines if ln and not ln.startswith("#")]
            lines = [ln for ln in lines if not re.match(r"(\S*/)?pip install|source \.venv/bin/activate$", ln)]
            if lines:
                blocks.append(lines)
    return blocks


#: the traceback ipykernel < the fix of ipython/ipykernel#1518 logs when its iopub socket closes under a last
#: "idle" message at kernel shutdown (a race inside the kernel process nbgrader starts, not in the commands)
_KERNEL_SHUTDOWN_RACE = re.compile(
    r"ERROR:tornado\.general:Uncaught exception in ZMQStream callback\nTraceback \(most recent call last\):\n"
    r"(?:  .*\n)*?zmq\.error\.ZMQError: Socket operation on non-socket\n"
)


def without_kernel_shutdown_race(stderr: str) -> str:
    """``stderr`` without ipykernel's shutdown-race tracebacks (only whole blocks whose frames are all indented
    lines ending in that ZMQError; any other traceback is kept)."""
    return _KERNEL_SHUTDOWN_RACE.sub("", stderr)


def test_only_the_kernel_shutdown_race_is_forgiven() -> None:
    race = (
        "[AutogradeApp | INFO] Converting notebook x.ipynb\n"
        "ERROR:tornado.general:Uncaught exception in ZMQStream callback\n"
        "Traceback (most recent call last):\n"
        '  File ".../ipykernel/kernelbase.py", line 408, in process_control\n'
        "    sys.stderr.flush()\n"
        '  File "zmq/backend/cython/_zmq.py", line 190, in zmq.backend.cython._zmq._check_rc\n'
        "zmq.error.ZMQError: Socket operation on non-socket\n"
        "[AutogradeApp | INFO] Writing 7325 bytes\n"
    )
    assert "Traceback" not in without_kernel_shutdown_race(race)
    ours = 'Traceback (most recent call last):\n  File ".../nextword/cli.py", line 1\nValueError: bad\n'
    assert without_kernel_shutdown_race(ours) == ours
    assert "Traceback" in without_kernel_shutdown_race(race + ours)


def test_the_instructors_sections_hold_both_round_trips() -> None:
    for doc in DOCS:
        lines = [ln for block in instructor_blocks(doc) for ln in block]
        assert any(ln.startswith(("otter run", "mkdir -p out && otter run")) for ln in lines), doc
        assert any(ln.startswith("nbgrader autograde") for ln in lines), doc
        assert any("exercises export --otter" in ln for ln in lines), doc
        assert any("exercises export --nbgrader" in ln for ln in lines), doc


def _require() -> None:
    for module, tool in (("otter", "otter-grader"), ("nbgrader", "nbgrader")):
        if importlib.util.find_spec(module) is None:
            if os.environ.get("CI"):
                pytest.fail(f"CI must run the instructors' commands: {tool} is not installed; {INSTALL}")
            pytest.skip(f"{tool} is not installed; {INSTALL}")


def _between(line: str) -> str:
    """What a course does before ``line`` (shell), in the folder the documented commands are in."""
    if re.search(r"\botter run\b", line):
        # a student's submission: the reference solutions, from the autograder's master notebook
        return "cp dist/autograder/part4_margins.ipynb submission.ipynb"
    if line.startswith("nbgrader autograde"):  # one student's submission: the reference solutions
        return (
            "mkdir -p submitted/alice/part4_margins && cp source/part4_margins/*.ipynb submitted/alice/part4_margins/"
        )
    return ""


@pytest.mark.instructor
@pytest.mark.parametrize("doc", sorted(DOCS))
def test_the_documented_instructor_commands_run_verbatim(doc: str, tmp_path: Path) -> None:
    _require()
    root = tmp_path / "clone"
    root.mkdir()
    (root / ".venv").symlink_to(Path(sys.prefix), target_is_directory=True)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    env.pop("VIRTUAL_ENV", None)
    blocks = instructor_blocks(doc)
    for block in blocks:
        script = ["set -e", "source .venv/bin/activate"]
        for line in block:
            extra = _between(line)
            if extra:
                script.append(extra)
            script.append(f"echo '$ '{shlex.quote(line)}")
            script.append(line)
        proc = subprocess.run(
            ["bash", "-c", "\n".join(script)], cwd=root, env=env, capture_output=True, text=True, timeout=1800
        )
        out = proc.stdout[-4000:] + proc.stderr[-4000:]
        assert proc.returncode == 0, f"{doc}: a documented command failed:\n{out}"
        assert "Traceback" not in without_kernel_shutdown_race(proc.stderr), out
        assert "is not absolute" not in proc.stderr, f"nbgrader warns about a relative course root:\n{out}"
    otter_out = root / "course" / "otter" / "part4_margins" / "out" / "results.json"
    results = json.loads(otter_out.read_text())
    scores = {t["name"]: (t["score"], t["max_score"]) for t in results["tests"] if "max_score" in t}
    assert scores == {"p4_01": (2, 2), "p4_02": (3, 3), "p4_03": (3, 3), "p4_04": (2, 2)}

    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'course' / 'nbgrader' / 'gradebook.db'}") as gb:
        (student,) = [s.id for s in gb.students]
        auto = [
            g
            for nb in gb.find_submission("part4_margins", student).notebooks
            for g in nb.grades
            if g.cell.cell_type == "code"
        ]
        # 2 + 3 + 3 + 2 points: p4_04 has two sub-checks
        assert (sum(g.auto_score or 0 for g in auto), sum(g.max_score for g in auto)) == (10, 10)
