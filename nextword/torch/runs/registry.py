"""One registry of the book's saved runs (``book/results/<name>/``) and its command, ``nextword results``.

    nextword results list                          # every saved run, its status, and what it is
    nextword results run                           # every run that is not current (resumable; hours)
    nextword results run barrier_ce hybrid_long    # some (each after what it depends on)
    nextword results run NAME --force              # again, afresh, even if its saved result is current
    nextword results verify [NAME ...]             # replay fingerprints of runs whose code changed

``make results`` runs ``nextword results run``. The experiments (:class:`~nextword.torch.runs.experiment.Experiment`)
come from :mod:`~nextword.torch.runs.barrier_runs` (§7 at the CPU and GPU tiers),
:mod:`~nextword.torch.runs.seeded_runs` (per-seed runs), :mod:`~nextword.torch.runs.gpu_check` (the GPU
sessions) and :mod:`~nextword.torch.runs.bench_runs` (benchmarks). A run's status (:func:`status`):

- **current** — saved with the registry's configuration (and every seed) by code that computes what the
  code here computes: the import closure of the run's entry functions (:func:`nextword.provenance.code_closure`),
  file by file and function by function, at the run's commit and here, moves (:data:`~nextword.torch.runs.moved.MOVED`),
  comments and docstrings aside, is the same;
- **verified** — the code changed since the run, and ``nextword results verify`` replayed the run's
  fingerprint (its first steps on one CPU thread, :mod:`~nextword.torch.runs.fingerprint`) with the code of
  the run's own commit and with this code, and got the same bits; the result records that verdict and
  the code it was reached with, and stays verified until that code changes;
- **verified to X** — (GPU-tier runs only, which cannot be rerun here) the replays differ in the last bits,
  by at most the relative amount X (at most :data:`GPU_REPLAY_TOLERANCE`);
- **to verify** — the code changed and the run has a fingerprint: ``nextword results verify`` decides;
- **to run** — not saved, another configuration, seeds missing, a saved run it reads (``depends``) saved
  again since, a fingerprint that differs, or changed code and no fingerprint (timings: a replay cannot
  vouch for them); the reason is printed beside it;
- **needs a GPU** — what would be "to run" (the reason is printed beside it) for a run of the GPU tier
  (``device="cuda"``) on a machine without a CUDA GPU: its saved numbers are what the code of its own
  commit measured on a GPU, and only a rerun on a CUDA GPU can replace them.

**What resumes** (:func:`_workdir`). A trained run works in ``runs/<name>/`` (:func:`runs_root`), where
``made_by.json`` (:data:`MADE_BY`) records what made it: the code digest of its entries (:func:`_code_digest`,
the import closure in the working tree), its configuration, and the ``id`` of each run of ``runs/`` it reads
(``depends``). ``run`` continues the run there only when all three are the same as now: an interrupted run
resumes, and a run finished with ``--train-only`` is saved as it is. A run made by other code, with another
configuration or from other input runs, and any run under ``--force``, is moved aside to
``runs/superseded/<name>-<UTC time>/`` (one printed line) and the run starts afresh, so a rerun after a code
change never saves the old checkpoint under the new code's provenance. A per-seed run's finished seed
(``partial/``) is likewise kept only when made by the same code and configuration.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from nextword import provenance
from nextword._cli import nonnegative_int, positive_int
from nextword.torch.runs import barrier_runs, bench_runs, gpu_check, seeded_runs
from nextword.torch.runs.experiment import REPO, Experiment, jsonable, ordered, runs_root, timed, wall_time
from nextword.torch.runs.moved import MOVED, MOVED_NAMES

__all__ = [
    "EXPERIMENTS",
    "NAMES",
    "STATES",
    "status",
    "describe",
    "run",
    "verify",
    "fingerprint",
    "add_arguments",
    "execute",
    "main",
]

#: every saved run, in the order ``run`` makes them (what a run reads comes before it)
EXPERIMENTS: dict[str, Experiment] = {
    e.name: e
    for e in (
        *barrier_runs.experiments(),
        *seeded_runs.experiments(),
        *gpu_check.experiments(),
        *bench_runs.experiments(),
    )
}
NAMES: tuple[str, ...] = tuple(ordered(list(EXPERIMENTS), {n: e.depends for n, e in EXPERIMENTS.items()}))
#: the statuses of :func:`status`, best first
STATES = ("current", "verified", "verified to", "to verify", "to run", "needs a GPU")
#: largest relative difference of a GPU-tier run's replays that still counts as "verified to" (not bitwise)
GPU_REPLAY_TOLERANCE = 1e-6


def _experiment(name: str) -> Experiment:
    if name not in EXPERIMENTS:
        raise ValueError(f"name must be a saved run, one of {sorted(EXPERIMENTS)}; got {name!r}")
    return EXPERIMENTS[name]


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


# ------------------------------------------------------------------------------------------ status
def _created(name: str, results_dir) -> str:
    try:
        return provenance.load_result(name, results_dir).get("created", "")
    except FileNotFoundError:
        return ""


def _complete(saved: dict[str, Any]) -> bool:
    return saved.get("data", {}).get("complete", True) is not False


def status(name: str, results_dir: str | os.PathLike | None = None) -> tuple[str, str]:
    """``(state, why)``: one of :data:`STATES` and the reason (empty when current).

    A run that would be "to run" but needs a CUDA GPU this machine lacks is "needs a GPU" instead.
    """
    exp = _experiment(name)
    state, why = _status(exp, results_dir)
    if state == "to run" and exp.device == "cuda" and not _cuda():
        return "needs a GPU", f"{why}; a rerun needs a CUDA GPU, which this machine lacks"
    return state, why


def _status(exp: Experiment, results_dir) -> tuple[str, str]:
    try:
        saved = provenance.load_result(exp.name, results_dir)
    except FileNotFoundError:
        return "to run", "not saved"
    if saved.get("config") != provenance._jsonable(exp.config()):
        return "to run", "another configuration"
    if not _complete(saved):
        return "to run", "seeds missing"
    newer = [d for d in exp.depends if _created(d, results_dir) > saved.get("created", "")]
    if newer:
        return "to run", f"it reads {', '.join(newer)}, saved again since"
    changed = provenance.changed_code(saved, exp.entry, MOVED)
    if changed == []:
        return "current", ""
    if changed is None:
        return "to run", "the code that produced it cannot be read (an uncommitted tree)"
    v = saved.get("verification")
    if v and v.get("code") == _code_digest(exp):
        if v["result"] == "bitwise":
            return "verified", f"code changed; {_replayed(v['steps'])} bit for bit ({v['date']})"
        if v["result"] == "deviation" and exp.device == "cuda":
            return f"verified to {v['deviation']:.0e}", (
                f"code changed; {_replayed(v['steps'])} on one CPU thread within {v['deviation']:.1e} "
                f"(relative), not bit for bit ({v['date']}); a bitwise rerun needs a GPU"
            )
        return "to run", (
            f"code changed; {_replayed(v['steps'])} differently on one CPU thread ({v['summary']}, {v['date']})"
        )
    files = sorted({c.split(":")[0] for c in changed})
    since = f"{len(files)} file{'s' if len(files) > 1 else ''} of its code changed since: {', '.join(files)}"
    if exp.fingerprint is not None:
        return "to verify", since
    if exp.timing:
        return "to run", f"a timing, which no replay can vouch for; {since}"
    return "to run", f"no fingerprint; {since}"


def _replayed(steps: int) -> str:
    return f"its first {steps} steps replay" if steps else "its measurements replay"


def _code_digest(exp: Experiment) -> str:
    """The code a verdict was reached with: a digest of the import closure of ``exp``'s entries, here."""
    return provenance.closure_digest(tuple(exp.entry))


def describe(name: str) -> str:
    """One line: what the run is and the page that reads it."""
    exp = _experiment(name)
    return f"{exp.description} ({exp.reader})"


# ------------------------------------------------------------------------------------------ run
def _save(exp: Experiment, data, *, curves, seeds, wall, results_dir, files=None) -> Path:
    extra = {}
    try:
        old = provenance.load_result(exp.name, results_dir)
        if "fingerprint" in old and old.get("commit") == provenance.git_commit()[0]:
            extra["fingerprint"] = old["fingerprint"]
    except FileNotFoundError:
        pass
    return provenance.save_result(
        exp.name,
        data,
        command=exp.command,
        config=exp.config(),
        seeds=seeds,
        wall_time_s=max(float(wall), 1e-3) if wall == wall else 1e-3,
        curves=curves,
        entries=exp.entry,
        results_dir=results_dir,
        files=files,
        extra=extra,
    )


def _settled(name: str, results_dir) -> bool:
    """Whether ``name`` needs no run: current or verified (a run "to verify" is replayed first, in seconds)."""
    state = status(name, results_dir)[0]
    if state == "to verify":
        state = verify([name], results_dir=results_dir)[name]
    return state == "current" or state.startswith("verified")


@contextlib.contextmanager
def _reading_saved_runs_from(results_dir):
    """An experiment that reads other saved runs (the noise probe reads the pair's ``model.pt``) finds them
    through :func:`nextword.provenance.results_root`; point it at ``results_dir`` while it trains."""
    if results_dir is None:
        yield
        return
    old = os.environ.get("NEXTWORD_RESULTS_DIR")
    os.environ["NEXTWORD_RESULTS_DIR"] = str(results_dir)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("NEXTWORD_RESULTS_DIR", None)
        else:
            os.environ["NEXTWORD_RESULTS_DIR"] = old


# ---- trained runs: the working directory runs/<name>/ and what made it
#: the file in ``runs/<name>/`` that records what made the run there (:func:`_workdir`)
MADE_BY = "made_by.json"
#: where a working directory that cannot be continued is moved, under :func:`runs_root`
SUPERSEDED = "superseded"


def _made_by(exp: Experiment) -> dict[str, Any]:
    """What a trained run in ``runs/<name>/`` is made by: the code digest of its entries (:func:`_code_digest`),
    its configuration, and the runs in ``runs/`` it reads (``depends``, by the ``id`` of their own record)."""
    return {
        "code": _code_digest(exp),
        "config": jsonable(exp.config()),
        "inputs": {d: _run_id(runs_root() / d) for d in exp.depends},
    }


def _run_id(workdir: Path) -> str | None:
    try:
        return json.loads((workdir / MADE_BY).read_text()).get("id")
    except (OSError, ValueError):
        return None


def _not_continuable(workdir: Path, made: dict[str, Any], force: bool) -> str:
    """Why the run in ``workdir`` must not be continued (empty: continue it)."""
    if not workdir.is_dir() or not any(workdir.iterdir()):
        return ""
    if force:
        return "is set aside by --force"
    try:
        record = json.loads((workdir / MADE_BY).read_text())
    except (OSError, ValueError):
        return "has no record of the code that made it"
    if record.get("code") != made["code"]:
        return "was made by other code"
    if record.get("config") != made["config"]:
        return "was made with another configuration"
    if record.get("inputs", {}) != made["inputs"]:
        return f"was made from other runs of {', '.join(sorted(made['inputs']))}"
    return ""


def _workdir(exp: Experiment, *, force: bool) -> Path:
    """``runs/<name>/``, ready for ``exp.train``: a run there is continued only when it was made by the same
    code, configuration and input runs (:data:`MADE_BY`), and never under ``force``; any other run there is
    moved aside to ``runs/superseded/<name>-<UTC time>/`` (said in one line) and the run starts afresh."""
    workdir = runs_root() / exp.name
    made = _made_by(exp)
    why = _not_continuable(workdir, made, force)
    if why:
        aside = runs_root() / SUPERSEDED / f"{exp.name}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}"
        aside.parent.mkdir(parents=True, exist_ok=True)
        while aside.exists():
            aside = aside.with_name(aside.name + "+")
        shutil.move(str(workdir), str(aside))
        print(f"[{exp.name}] {workdir} {why}: moved aside to {aside}; starting afresh", flush=True)
    if not (workdir / MADE_BY).is_file():
        workdir.mkdir(parents=True, exist_ok=True)
        record = {**made, "id": uuid.uuid4().hex, "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        (workdir / MADE_BY).write_text(json.dumps(record, indent=1) + "\n")
    return workdir


def _run_trained(exp: Experiment, *, force: bool, train_only: bool, results_dir) -> str:
    if not train_only and not force and _settled(exp.name, results_dir):
        return "current"
    workdir = _workdir(exp, force=force)
    with _reading_saved_runs_from(results_dir):
        timed(workdir, lambda: exp.train(workdir))  # the wall time of every session, in workdir/wall.json
    if train_only:
        return "trained"
    saved = exp.save(workdir)
    path = _save(
        exp,
        saved.data,
        curves=saved.curves,
        seeds=exp.seeds,
        wall=wall_time(workdir),
        results_dir=results_dir,
        files=saved.files,
    )
    return f"saved {path}"


# ---- per-seed runs: every finished seed kept at once in <results>/<name>/partial/
def _partial_dir(name: str, results_dir) -> Path:
    return provenance.results_root(results_dir) / name / "partial"


def _load_partial(exp: Experiment, seed: int, results_dir) -> tuple[dict, dict] | None:
    folder = _partial_dir(exp.name, results_dir)
    js, npz = folder / f"seed{seed}.json", folder / f"seed{seed}.npz"
    if not js.is_file():
        return None
    try:
        saved = json.loads(js.read_text())
        if saved.get("config") != jsonable(exp.config()) or saved.get("code") != _code_digest(exp):
            return None  # another configuration, or made by other code: run the seed again
        with np.load(npz, allow_pickle=False) as f:
            curves = {k: f[k] for k in f.files}
    except (OSError, ValueError, json.JSONDecodeError):
        return None  # unreadable partial file: run the seed again
    return saved["row"], curves


def _run_one(name: str, seed: int, results_dir: str | None, threads: int) -> int:
    """Run one seed of ``name`` and write its partial files (in a worker process too)."""
    import torch

    torch.set_num_threads(threads)
    exp = EXPERIMENTS[name]
    t0 = time.perf_counter()
    row, curves = exp.run_seed(seed)
    folder = _partial_dir(name, results_dir)
    folder.mkdir(parents=True, exist_ok=True)
    files = {}
    for fname, source in row.pop("files", {}).items():  # files kept beside the result (a checkpoint)
        kept = folder / f"seed{seed}.{fname}"
        shutil.copyfile(source, kept)
        files[fname] = kept.name
    row = dict(row, wall_time_s=time.perf_counter() - t0)
    np.savez_compressed(folder / f"seed{seed}.tmp.npz", **curves)
    os.replace(folder / f"seed{seed}.tmp.npz", folder / f"seed{seed}.npz")
    tmp = folder / f"seed{seed}.json.tmp"
    record = {"config": jsonable(exp.config()), "code": _code_digest(exp), "seed": seed, "row": jsonable(row)}
    record["files"] = files
    tmp.write_text(json.dumps(record) + "\n")
    os.replace(tmp, folder / f"seed{seed}.json")  # the json last: it marks the seed as done
    print(f"[{name}] seed {seed} done in {row['wall_time_s']:.0f} s", flush=True)
    return seed


def _run_seeded(
    exp: Experiment, *, seeds, jobs: int, threads: int, force: bool, partial_ok: bool, results_dir
) -> Path | None:
    """Run the missing seeds of ``exp`` (``jobs`` processes of ``threads`` torch threads each) and save.

    Returns the path of ``result.json`` once every seed is done (None while some are missing).
    ``partial_ok`` saves the seeds finished so far (at least one), marked ``data["complete"] = False``.
    """
    if not force and _settled(exp.name, results_dir):
        print(f"[{exp.name}] saved result is current; skipped (--force reruns it)")
        return provenance.results_root(results_dir) / exp.name / "result.json"
    wanted = exp.seeds if seeds is None else tuple(int(s) for s in seeds)
    unknown = set(wanted) - set(exp.seeds)
    if unknown:
        raise ValueError(f"seeds must be among {list(exp.seeds)}, got {sorted(unknown)}")
    todo = [s for s in wanted if force or _load_partial(exp, s, results_dir) is None]
    rd = None if results_dir is None else str(results_dir)
    if jobs > 1 and len(todo) > 1:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            list(pool.map(_run_one, [exp.name] * len(todo), todo, [rd] * len(todo), [threads] * len(todo)))
    else:
        for s in todo:
            _run_one(exp.name, s, rd, threads)
    done = {s: _load_partial(exp, s, results_dir) for s in exp.seeds}
    missing = [s for s, v in done.items() if v is None]
    finished = tuple(s for s in exp.seeds if done[s] is not None)
    if missing and not (partial_ok and finished):
        print(f"[{exp.name}] seeds {missing} still to run; partial results kept")
        return None
    rows = [dict(done[s][0], seed=s) for s in finished]
    curves = {k: np.stack([done[s][1][k] for s in finished]) for k in done[finished[0]][1]}  # (seeds, ...)
    data: dict[str, Any] = {"complete": not missing, "seeds_planned": list(exp.seeds), "per_seed": rows}
    if exp.summarise is not None:
        data["summary"] = exp.summarise(rows)
    folder = _partial_dir(exp.name, results_dir)
    files = {}
    for s in finished:
        kept = json.loads((folder / f"seed{s}.json").read_text()).get("files", {})
        for fname, stored in kept.items():
            files[fname if len(finished) == 1 else f"seed{s}_{fname}"] = folder / stored
    path = _save(
        exp,
        data,
        curves=curves,
        seeds=finished,
        wall=sum(r["wall_time_s"] for r in rows),
        results_dir=results_dir,
        files=files,
    )
    if not missing:
        shutil.rmtree(folder, ignore_errors=True)
    print(f"[{exp.name}] saved {path}" + (f" with {len(finished)} of {len(exp.seeds)} seeds" if missing else ""))
    return path


def run(
    names: Sequence[str] = (),
    *,
    force: bool = False,
    train_only: bool = False,
    seeds: Sequence[int] | None = None,
    jobs: int = 1,
    threads: int = 1,
    partial_ok: bool = False,
    results_dir: str | os.PathLike | None = None,
) -> None:
    """Run (resume) and save ``names`` (all that are not current when empty), each after what it depends on.

    ``threads`` torch threads run each trained run and each seed's process; ``train_only`` applies to
    trained runs, ``seeds``/``jobs``/``partial_ok`` to per-seed runs; asking for one on the other kind is a ValueError naming the option. With no names, runs that
    need a CUDA GPU are left out on a machine without one.
    """
    for n in names:
        _experiment(n)
    if jobs < 1 or threads < 1:
        raise ValueError(f"jobs and threads must be >= 1, got jobs={jobs}, threads={threads}")
    wanted = list(names) or [n for n in NAMES if EXPERIMENTS[n].device == "cpu" or _cuda()]
    todo = ordered(wanted, {n: e.depends for n, e in EXPERIMENTS.items()})
    trained = [n for n in todo if EXPERIMENTS[n].kind == "trained"]
    seeded = [n for n in todo if EXPERIMENTS[n].kind == "seeded"]
    per_seed = seeds is not None or jobs != 1 or partial_ok
    if names and trained and per_seed:
        raise ValueError(f"--seeds, --jobs and --partial-ok apply to per-seed runs, not to {trained}")
    if names and seeded and train_only:
        raise ValueError(f"--train-only applies to trained runs, not to {seeded}")
    for n in todo:
        exp = EXPERIMENTS[n]
        t0 = time.perf_counter()
        if exp.kind == "trained":
            import torch

            torch.set_num_threads(threads)
            what = _run_trained(exp, force=force, train_only=train_only, results_dir=results_dir)
            print(f"{n}: {what} ({time.perf_counter() - t0:.0f} s)", flush=True)
        elif not train_only:
            _run_seeded(
                exp,
                seeds=seeds,
                jobs=jobs,
                threads=threads,
                force=force,
                partial_ok=partial_ok,
                results_dir=results_dir,
            )


# ------------------------------------------------------------------------------------------ verify
_SCRIPT = Path(__file__).with_name("fingerprint.py")


def _machine() -> dict[str, Any]:
    info = provenance.machine_info()
    return {k: info.get(k) for k in ("cpu", "arch", "torch", "numpy", "python")}


def _params(exp: Experiment, results_dir) -> dict[str, Any]:
    """The fingerprint's parameters, with the saved models it reads as paths under ``results_dir``."""
    procedure, params = exp.fingerprint
    params = dict(params)
    if "models" in params:
        params["models"] = [str(provenance.results_root(results_dir) / m / "model.pt") for m in params["models"]]
    return params


def _spec(exp: Experiment, results_dir) -> dict[str, Any]:
    """What a fingerprint is a fingerprint of: its procedure and parameters, and the saved models it reads
    (their SHA-256: a model saved again is another input)."""
    import hashlib

    procedure, params = exp.fingerprint
    spec: dict[str, Any] = {"procedure": procedure, "params": jsonable(params)}
    for m in params.get("models", ()):
        path = provenance.results_root(results_dir) / m / "model.pt"
        spec.setdefault("inputs", {})[m] = hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None
    return spec


def fingerprint(exp: Experiment, tree: Path, results_dir=None) -> dict[str, Any]:
    """The fingerprint of ``exp`` computed by the copy of the package in ``tree`` (one thread, a subprocess)."""
    procedure, _ = exp.fingerprint
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEXTWORD_PERTURB")}
    env.update(
        PYTHONPATH=str(tree),
        OMP_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
        NEXTWORD_MOVED=json.dumps({"modules": MOVED, "names": MOVED_NAMES}),
    )
    with tempfile.TemporaryDirectory() as cwd:
        out = subprocess.run(
            [sys.executable, str(_SCRIPT), procedure, json.dumps(_params(exp, results_dir))],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
        )
    if out.returncode:
        raise RuntimeError(f"the fingerprint of {exp.name} failed in {tree}:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _at_commit(commit: str) -> tempfile.TemporaryDirectory:
    """A temporary copy of the package as it was at ``commit`` (``git archive``; the repository is untouched)."""
    tmp = tempfile.TemporaryDirectory(prefix=f"nextword-{commit[:10]}-")
    archive = subprocess.run(["git", "archive", commit, "nextword"], cwd=REPO, check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", tmp.name], input=archive.stdout, check=True)
    return tmp


def _write(name: str, results_dir, record: dict[str, Any]) -> None:
    path = provenance.results_root(results_dir) / name / "result.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(record, indent=1, sort_keys=False, allow_nan=False) + "\n")
    tmp.replace(path)


def verify(
    names: Sequence[str] = (), *, results_dir: str | os.PathLike | None = None, log: Callable[[str], None] = print
) -> dict[str, str]:
    """Replay the fingerprints of ``names`` (default: every run "to verify") and record the verdicts.

    For each run: its fingerprint at its own commit (kept in ``result.json`` as ``fingerprint``, computed
    once per machine and torch version from a ``git archive`` of that commit) and at the working tree;
    the verdict goes to ``verification`` with a digest of the code it was reached with (``code``,
    :func:`nextword.provenance.closure_digest`): ``bitwise``, ``deviation``
    (the largest relative difference) or ``differs``. Returns ``{name: state}`` afterwards.
    """
    wanted = list(names) or [n for n in NAMES if status(n, results_dir)[0] == "to verify"]
    out = {}
    for name in wanted:
        exp = _experiment(name)
        state, why = status(name, results_dir)
        if exp.fingerprint is None or state in ("current",) or why.startswith(("not saved", "another", "seeds")):
            log(f"{name}: {state}{f' ({why})' if why else ''}; nothing to replay")
            out[name] = state
            continue
        record = provenance.load_result(name, results_dir)
        t0 = time.perf_counter()
        machine = _machine()
        then = record.get("fingerprint")
        if not then or then.get("machine") != machine or then.get("spec") != jsonable(_params(exp, results_dir)):
            with _at_commit(record["commit"]) as old:
                values = fingerprint(exp, Path(old), results_dir)
            then = {
                "commit": record["commit"],
                "machine": machine,
                "spec": jsonable(_params(exp, results_dir)),
                "values": values,
            }
            record["fingerprint"] = then
        now = fingerprint(exp, REPO, results_dir)
        from nextword.torch.runs.fingerprint import compare

        same, deviation = compare(then["values"], now)
        steps = exp.fingerprint[1].get("steps", 0)
        if same:
            result, summary = "bitwise", "the same bits"
        elif deviation is not None and exp.device == "cuda" and deviation <= GPU_REPLAY_TOLERANCE:
            result, summary = "deviation", f"relative difference {deviation:.1e}"
        else:
            result = "differs"
            summary = "different layout" if deviation is None else f"relative difference up to {deviation:.1e}"
        commit, dirty = provenance.git_commit()
        record["verification"] = {
            "result": result,
            "summary": summary,
            "deviation": deviation,
            "steps": steps,
            "commit": commit,
            "dirty": dirty,
            "date": time.strftime("%Y-%m-%d"),
            "machine": machine,
            "code": _code_digest(exp),
            "command": f"nextword results verify {name}",
        }
        _write(name, results_dir, record)
        out[name] = status(name, results_dir)[0]
        log(f"{name}: {_replayed(steps)}: {summary} -> {out[name]} ({time.perf_counter() - t0:.0f} s)")
    return out


# ------------------------------------------------------------------------------------------ command line
def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``list``, ``run`` and ``verify`` subcommands (shared by ``nextword results`` and :func:`main`)."""
    sub = parser.add_subparsers(dest="results_cmd", required=True, metavar="{list,run,verify}")
    sub.add_parser("list", help="every saved run and its status (current, verified, to verify, to run)")
    r = sub.add_parser("run", help="run (resume) and save the runs named, or every one that is not current")
    r.add_argument("names", nargs="*", metavar="NAME", help=f"saved runs (default: all): {', '.join(NAMES)}")
    r.add_argument("--force", action="store_true", help="run afresh and save again, even if current")
    r.add_argument("--train-only", action="store_true", help="trained runs: only the resumable training, no save")
    r.add_argument(
        "--seeds",
        type=nonnegative_int,
        nargs="+",
        default=None,
        help="per-seed runs: a subset of the seeds (default all)",
    )
    r.add_argument(
        "--jobs", type=positive_int, default=1, help="per-seed runs: seeds run in parallel processes (default 1)"
    )
    r.add_argument(
        "--threads",
        type=positive_int,
        default=1,
        help="torch threads per run or per seed's process (default 1, as the saved runs were trained)",
    )
    r.add_argument("--partial-ok", action="store_true", help="per-seed runs: save the seeds finished so far")
    v = sub.add_parser("verify", help="replay the fingerprints of runs whose code changed (seconds to minutes each)")
    v.add_argument("names", nargs="*", metavar="NAME", help="saved runs (default: every one 'to verify')")


def execute(args: argparse.Namespace) -> int:
    """Carry out parsed ``list`` / ``run`` / ``verify`` arguments; ValueError for a bad name or option."""
    if args.results_cmd == "list":
        for n in NAMES:
            state, why = status(n)
            print(f"{n:30s} {state:17s} {describe(n)}" + (f" [{why}]" if why else ""))
        return 0
    if args.results_cmd == "verify":
        for n in args.names:
            _experiment(n)
        verify(args.names)
        return 0
    run(
        args.names,
        force=args.force,
        train_only=args.train_only,
        seeds=args.seeds,
        jobs=args.jobs,
        threads=args.threads,
        partial_ok=args.partial_ok,
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``nextword results …`` (the ``nextword`` command dispatches here); exit 2 on bad input."""
    parser = argparse.ArgumentParser(prog="nextword results", description=__doc__.split("\n")[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return execute(args)
    except ValueError as err:
        parser.error(str(err))
