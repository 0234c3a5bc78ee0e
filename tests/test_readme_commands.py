"""Every command the READMEs show works on a fresh clone: each one is run here in a cheap form (issue #26).

A README that tells a new user to type a command makes a promise; a command that nobody runs rots
unseen (``make bench`` once stopped at its second benchmark, reading a gzip as text). So:

* :data:`CHEAP_FORMS` is **the table**: every command written in a README (a line of a ``bash`` block,
  or an inline code span that starts like a command), as the README writes it, maps to the cheap
  commands that exercise it — the same program with tiny sizes, a dry run of a ``make`` target
  (``make -n``: the target and its prerequisites exist), or its ``--help`` where the real thing
  needs a GPU or the internet. ``{py}`` is this Python, ``{tmp}`` the session's folder of cheap forms.
* A row is a list of steps (shell lines). A step that several rows share (the tiny notebook's build,
  the tiny runs that ``robustness`` and ``report`` read) is written once and **runs once per test
  session**, across xdist workers (:func:`_run_step`: a lock and a record of its result per step); a
  row that needs it fails if it failed. A step that would change a shared output works on its own copy.
* :func:`test_every_readme_command_has_a_cheap_form` fails when a README shows a command that the
  table does not list (add a row when you add a command to a README), or the table lists one that
  no README shows any more.
* ``make bench`` runs every ``benchmarks/bench_*.py``: :data:`BENCH_QUICK` gives each its quick
  arguments, and a benchmark without a row fails the test.

The commands run in the repository root, with ``PYTHONPATH`` set to it (what ``make`` gives a fresh clone).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
READMES = ("README.md", "exercises/README.md", "book/README.md")

#: quick arguments of every benchmark (``make bench`` runs them all without arguments)
BENCH_QUICK = {
    "bench_attention.py": "--repeats 1 --T 32 --d 32 --heads 2",
    "bench_bpe.py": "--quick --corpus-kb 20 --vocab 300 --repeats 1",
    "bench_kv_cache.py": "--repeats 1 --prompt 16 --new 8 --d 16 --heads 2 --layers 1",
    "bench_margin.py": "--repeats 1 --warmup 0 --batch 2 --block 32 -d 8 --no-memory",  # k16 needs block > 16,
}

_TINY_TRAIN = "--config tiny --steps 2 --max-chars 20000 --eval-windows 2 --no-progress"
_CLI = "{py} -m nextword"
_TINY_NOTEBOOK = (
    "mkdir -p {tmp}/tiny && printf '# %%%%\\nx = sum(range(4))\\nprint(x)\\nassert x == 6\\n' > {tmp}/tiny/tiny.py && "
    "{py} -m nextword book build {tmp}/tiny/tiny.py && test -s {tmp}/tiny/tiny.ipynb"
)
#: the tiny runs that several rows read (each trained once per session)
_TRAIN_CE = f"{_CLI} train {_TINY_TRAIN} --lambda-margin 0 --out {{tmp}}/ce && test -s {{tmp}}/ce/results.json"
_TRAIN_MARGIN = (
    f"{_CLI} train {_TINY_TRAIN} --lambda-margin 0.05 --out {{tmp}}/margin && test -s {{tmp}}/margin/results.json"
)
_COPY = "{py} -m nextword exercises copy {tmp}/my-exercises --part 4 && test -s {tmp}/my-exercises/part4_margins/ex01_scalar_margin.ipynb"
_SWEEP = f"{_CLI} sweep {_TINY_TRAIN} --lambdas 0,0.05 --out {{tmp}}/sweep"

#: THE TABLE: README command (as written, see :func:`_normalise`) -> cheap commands that exercise it
CHEAP_FORMS: dict[str, list[str]] = {
    # --- the two commands and the make targets: a dry run (make test runs the real thing) --------------
    "make book": ["make -n book", _TINY_NOTEBOOK],
    "make test": ["make -n test"],
    "make test-notebooks-kernels": ["make -n test-notebooks-kernels"],
    "make test-lib": ["make -n test-lib"],
    "make test-notebooks": ["make -n test-notebooks"],
    "make lint": ["make -n lint"],
    "make book-html": ["make -n book-html"],
    "make lab": ["make -n lab", 'test -x "$(dirname {py})/jupyter-lab"'],  # the program `jupyter lab` runs
    "make sync": [
        "make -n sync",
        _TINY_NOTEBOOK,
        "mkdir -p {tmp}/sync && cp {tmp}/tiny/tiny.py {tmp}/tiny/tiny.ipynb {tmp}/sync/ && "
        "{py} -m nextword book sync {tmp}/sync/tiny.py",
    ],
    "make exercises": ["make -n exercises", "{py} -m nextword exercises check"],
    "make bench": ["make -n bench"]
    + [f"{{py}} benchmarks/{b} {a} --targets {{tmp}}/bench-goals.jsonl" for b, a in BENCH_QUICK.items()]
    + ["{py} benchmarks/targets.py {tmp}/bench-goals.jsonl"],
    "python benchmarks/bench_margin.py --profile 3": [
        "{py} benchmarks/bench_margin.py --profile 1 --warmup 0 --batch 2 --block 32 -d 8"
    ],
    "make results": [
        "make -n results",
        "{py} -m nextword results list",
    ],
    "conda env create -f environment.yml && conda activate nextword": [  # environment.yml matches pyproject:
        "{py} -c \"import sys; sys.path.insert(0, 'tests'); import test_environment as t; "  # its checks, called
        "[f() for n, f in vars(t).items() if n.startswith('test_')]\""  # without a second pytest (seconds)
    ],
    "pytest --doctest-modules nextword": [
        "{py} -m pytest -q -p no:cacheprovider -p no:hypothesispytest --doctest-modules nextword/perturbation.py"
    ],
    "pytest --nbval": [
        _TINY_NOTEBOOK,
        "{py} -m pytest -q -p no:cacheprovider -p no:hypothesispytest --nbval --nbval-current-env "
        "--nbval-sanitize-with book/nbval_sanitize.cfg {tmp}/tiny/tiny.ipynb",
    ],
    # --- notebooks ---------------------------------------------------------------------------------
    "FULL=1 nextword book build book/part4_margins/barrier_training.py": [
        "{py} -m nextword book build --help",
        _TINY_NOTEBOOK,
    ],
    "nextword book build book/<part>/<name>.py": [_TINY_NOTEBOOK],
    "nextword book build …": [_TINY_NOTEBOOK],
    # --- the light install (README, first section) -------------------------------------------------------
    "python -m venv .venv": ["{py} -m venv --without-pip {tmp}/venv && test -x {tmp}/venv/bin/python"],
    # the README's torch pin is pyproject's (the CPU wheel index itself needs the internet)
    "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu": [
        "grep -q 'torch = \\[\"torch==2.13.0\"\\]' pyproject.toml"
    ],
    "pip install -e '.[student]'": [  # the extra exists and its packages are what this environment has
        "grep -q '^student = \\[' pyproject.toml && {py} -c 'import torch, jupyterlab, jupytext, ipykernel, nbclient'"
    ],
    "nextword exercises copy ~/my-exercises": [_COPY],
    "nextword exercises copy DIR": [_COPY],
    "jupyter lab ~/my-exercises": ['test -x "$(dirname {py})/jupyter-lab"'],
    "jupyter lab book": ['test -x "$(dirname {py})/jupyter-lab"'],
    "nextword grade --dir ~/my-exercises": [_COPY, "{py} -m nextword grade 4 --dir {tmp}/my-exercises"],
    "nextword --help": ["{py} -m nextword --help"],
    # --- the barrier CLI: the tiny preset, two steps ------------------------------------------------
    "nextword train --config quick --lambda-margin 0.05 --out runs/margin": [_TRAIN_MARGIN],
    "nextword train --config quick --lambda-margin 0 --out runs/ce": [_TRAIN_CE],
    "nextword robustness --out runs/margin": [  # on a copy: report reads the run too
        _TRAIN_MARGIN,
        f"rm -rf {{tmp}}/robust && cp -r {{tmp}}/margin {{tmp}}/robust && "
        f"{_CLI} robustness --out {{tmp}}/robust --sigmas 0,0.1 --draws 1",
    ],
    "nextword sweep --config quick --out runs/sweep": [_SWEEP],
    "nextword report runs/ce runs/margin runs/sweep": [
        _TRAIN_CE,
        _TRAIN_MARGIN,
        _SWEEP,
        f"{_CLI} report {{tmp}}/ce {{tmp}}/margin {{tmp}}/sweep",
    ],
    # a GPU job and a download: the arguments parse (the GPU path is checked on a device, issue #16)
    "nextword train --config paper --data wikitext2 --device cuda --amp --out runs/paper": [
        f"{_CLI} train --help | grep -q -- --amp"
    ],
    "nextword fetch": [f"{_CLI} fetch --help"],
    # torchrun itself, two processes of `-m nextword train`, is tests/torch/training/test_distributed.py: here the program exists
    "torchrun --nproc_per_node=N -m nextword train ...": [
        '{py} -m torch.distributed.run --help | grep -q -- --nproc-per-node && test -x "$(dirname {py})/torchrun"'
    ],
    # --- saved runs: what exists (running them is make results: hours) --------------------------------
    "nextword results list": ["{py} -m nextword results list"],
    "nextword results run": ["{py} -m nextword results run --help"],
    "nextword results run NAME": ["{py} -m nextword results run --help"],
    "nextword results verify": ["{py} -m nextword results verify --help"],
    "nextword results run dynamics_table1 --jobs 2": ["{py} -m nextword results run --help"],
    "nextword results run barrier_ce --train-only": ["{py} -m nextword results run --help | grep -q -- --train-only"],
    # what --force does (moves runs/NAME aside, starts afresh) is tests/torch/runs/test_registry.py::test_force_starts_afresh
    "nextword results run barrier_ce --force": ["{py} -m nextword results run --help | grep -q -- '--force .*afresh'"],
    # --- the GPU check: its dry run is tests/torch/runs/test_gpu_check.py; here the command and target exist -------
    "make gpu-check": ["make -n gpu-check"],
    "nextword gpu-check": ["{py} -m nextword gpu-check --help"],
    "nextword gpu-check --dry-run": ["{py} -m nextword gpu-check --help | grep -q -- --dry-run"],
    # --- the rendered book's checks and print edition (CI builds the PDF and runs axe) ----------------
    "make pdf": ["make -n pdf"],
    "make test-instructor": ["make -n test-instructor"],
    "make test-seeds": ["make -n test-seeds"],
    "make test-exercises": ["make -n test-exercises"],
    "make test-browser": ["make -n test-browser"],
    "make axe": ["make -n axe"],
    "python -m nextword.booktools.pagecheck book/<part>/<name>.py": [
        "{py} -m nextword.booktools.pagecheck --only teaching,jargon book/part0_reading_guide/00_reading_guide.py"
    ],
    "python -m nextword.booktools.notation --write": ["{py} -m nextword.booktools.notation"],  # the check, no write
    "python -m nextword.booktools.teaching book/<part>/<page>.py": [
        "{py} -m nextword.booktools.teaching book/part0_reading_guide/00_reading_guide.py"
    ],
    # --- instructors: the export runs end to end in tests/booktools/test_exercise_export.py ---------------
    "pip install -e '.[instructor]'": ["grep -q '^instructor = \\[' pyproject.toml"],
    "nextword exercises export --otter course/otter --part 4": [
        "{py} -m nextword exercises export --help | grep -q -- --otter"
    ],
    "nextword exercises export --nbgrader course/nbgrader --part 4": [
        "{py} -m nextword exercises export --help | grep -q -- --nbgrader"
    ],
    "cd course/otter/part4_margins && otter assign part4_margins.ipynb dist": [
        "command -v otter >/dev/null || exit 0; otter assign --help >/dev/null"  # the instructor extra
    ],
    "mkdir -p out && otter run -a dist/autograder/part4_margins-autograder_*.zip -o out submission.ipynb": [
        "command -v otter >/dev/null || exit 0; otter run --help >/dev/null"
    ],
    "cd course/nbgrader && nbgrader generate_assignment part4_margins": [
        "command -v nbgrader >/dev/null || exit 0; nbgrader generate_assignment --help >/dev/null"
    ],
    "nbgrader autograde part4_margins": [
        "command -v nbgrader >/dev/null || exit 0; nbgrader autograde --help >/dev/null"
    ],
    # --- environment report and grader ---------------------------------------------------------------
    "nextword check-env": ["{py} -m nextword check-env"],
    "nextword grade 4 --dir ~/my-exercises --timeout 300": [
        _COPY,
        "{py} -m nextword grade 4 --dir {tmp}/my-exercises --timeout 300",
    ],
}

_COMMAND_START = re.compile(r"^(?:[A-Z_]+=\S+ )*(?:make|python3?|\.venv/bin/\S+|pytest|conda|torchrun|nextword) ")


def _normalise(command: str) -> str:
    """One command as the table writes it: comments, ``.venv/bin/`` and ``python3`` dropped, spaces collapsed."""
    command = re.sub(r"\s+#.*$", "", command.strip())
    command = re.sub(r"(?<![\w/])\.venv/bin/", "", command)
    command = re.sub(r"\bpython3\b", "python", command)
    return " ".join(command.split())


def readme_commands() -> dict[str, str]:
    """Every command the READMEs show -> ``"file:line"`` where it is first shown."""
    found: dict[str, str] = {}
    for name in READMES:
        in_bash = in_other = False
        for lineno, line in enumerate((ROOT / name).read_text(encoding="utf-8").splitlines(), 1):
            fence = line.strip().startswith("```")
            if fence and not (in_bash or in_other):
                in_bash = line.strip() in ("```bash", "```sh", "```console", "```shell")
                in_other = not in_bash
                continue
            if fence:
                in_bash = in_other = False
                continue
            if in_other:
                continue
            if in_bash:
                cmds = [] if line.strip().startswith("#") or not line.strip() else [line]
            else:
                cmds = [s for s in re.findall(r"`([^`]+)`", line) if _COMMAND_START.match(s)]
            for cmd in cmds:
                found.setdefault(_normalise(cmd), f"{name}:{lineno}")
    return found


def test_every_readme_command_has_a_cheap_form():
    shown = readme_commands()
    missing = {c: where for c, where in shown.items() if c not in CHEAP_FORMS}
    assert not missing, f"README commands without a cheap form in tests/test_readme_commands.py CHEAP_FORMS: {missing}"
    stale = sorted(set(CHEAP_FORMS) - set(shown))
    assert not stale, f"CHEAP_FORMS lists commands that no README shows any more: {stale}"


def test_every_benchmark_has_a_quick_form():
    benches = sorted(p.name for p in (ROOT / "benchmarks").glob("bench_*.py"))
    assert benches == sorted(BENCH_QUICK), f"benchmarks {benches} vs quick forms {sorted(BENCH_QUICK)}"


def test_the_parser_finds_blocks_and_inline_commands():
    shown = readme_commands()
    assert "make test" in shown and "nextword check-env" in shown
    assert "nextword grade 4 --dir ~/my-exercises --timeout 300" in shown  # a bash block of exercises/README.md
    assert all(not c.startswith(".venv") and "#" not in c for c in shown)


@pytest.fixture(scope="session")
def steps_dir(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Path:
    """The session's folder of cheap forms (``{tmp}``), the same for every xdist worker of the session."""
    base = tmp_path_factory.getbasetemp()
    folder = (base.parent if hasattr(request.config, "workerinput") else base) / "readme-commands"
    folder.mkdir(exist_ok=True)
    return folder


def _run_step(line: str, folder: Path) -> tuple[int, str]:
    """Run one step (a shell line) once per session: the first caller runs it, holding its lock, and
    records ``(returncode, output)``; later callers (other rows, other workers) read that record."""
    key = hashlib.sha256(line.encode()).hexdigest()[:16]
    record = folder / f"step-{key}.json"
    with open(folder / f"step-{key}.lock", "w") as lock:
        try:
            import fcntl

            fcntl.flock(lock, fcntl.LOCK_EX)
        except ImportError:  # Windows: no lock; run the tests without xdist there
            pass
        if record.exists():
            return tuple(json.loads(record.read_text(encoding="utf-8")))
        env = dict(os.environ, PYTHONPATH=str(ROOT), FULL="0")
        env.pop("NEXTWORD_PERTURB", None)
        r = subprocess.run(
            ["bash", "-c", f"set -o pipefail; {line}"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        result = (r.returncode, f"{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
        record.write_text(json.dumps(result), encoding="utf-8")
    return result


@pytest.mark.parametrize("command", sorted(CHEAP_FORMS))
def test_readme_command_runs_in_a_cheap_form(command: str, steps_dir: Path):
    for cheap in CHEAP_FORMS[command]:
        line = cheap.format(py=shlex.quote(sys.executable), tmp=shlex.quote(str(steps_dir)))
        returncode, output = _run_step(line, steps_dir)
        assert returncode == 0, f"{command!r}: cheap form {line!r} failed ({returncode}):\n{output}"
