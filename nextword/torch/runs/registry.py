"""One registry of the book's saved runs (``book/results/<name>/``) and its command, ``nextword results``.

    nextword results list                          # every saved run: current or to run, and what it is
    nextword results run                           # every run that is not current (resumable; hours)
    nextword results run barrier_ce hybrid_long    # some (each with what it depends on)
    nextword results run NAME --force              # again, even if its saved result is current

``make results`` runs ``nextword results run``. A saved result is *current* when it holds the
registry's configuration and was produced by code that still computes the same thing, compared file by
file (:func:`nextword.provenance.is_current`: comments, docstrings and moves do not count; a module that
moved is listed in :data:`~nextword.torch.runs.moved.MOVED`); ``run`` skips those, and ``list`` names
the files that changed for the others. Entries come in two kinds:

- **trained runs** (:mod:`~nextword.torch.runs.barrier_runs`, the §7 pair, its second seed, the
  noise curve and the λ path): the long training is checkpointed in ``runs/<name>/`` and resumes
  after an interruption; the save reads the finished run (``--train-only`` stops before it);
- **per-seed runs** (:mod:`~nextword.torch.runs.seeded_runs`, Part 3 Table 1, Fig. 6.28, the
  hybrid SVFlows, the SVFlow LM): every finished seed is written at once to ``partial/``, and the
  seeds are gathered when all are there (``--seeds``, ``--jobs``, ``--threads``, ``--partial-ok``).

>>> "barrier_ce" in NAMES and "dynamics_table1" in NAMES
True
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence

from nextword.torch.runs import barrier_runs, seeded_runs
from nextword.torch.runs.moved import MOVED

__all__ = ["NAMES", "kind", "is_current", "status", "describe", "run", "add_arguments", "execute", "main"]

#: every saved run, the trained ones first (in the order their dependencies need)
NAMES: tuple[str, ...] = (*barrier_runs.in_order(list(barrier_runs.EXPERIMENTS)), *sorted(seeded_runs.EXPERIMENTS))
if len(set(NAMES)) != len(NAMES):  # pragma: no cover - a registry bug, caught by the tests too
    raise RuntimeError("a saved run's name appears in both kinds of entry")


def kind(name: str) -> str:
    """``"trained"`` or ``"seeded"``; ValueError naming the registry for an unknown ``name``."""
    if name in barrier_runs.EXPERIMENTS:
        return "trained"
    if name in seeded_runs.EXPERIMENTS:
        return "seeded"
    raise ValueError(f"name must be a saved run, one of {sorted(NAMES)}; got {name!r}")


def is_current(name: str) -> bool:
    """Whether ``book/results/<name>/`` is saved with the registry's configuration by code that computes the same."""
    from nextword import provenance

    if kind(name) == "trained":
        exp = barrier_runs.EXPERIMENTS[name]
        return provenance.is_current(name, exp.config(), code_paths=exp.code_paths, renames=MOVED)
    return seeded_runs.is_saved_current(name)


def code_paths(name: str) -> tuple[str, ...]:
    """Where the code that determines ``name``'s numbers lives now."""
    if kind(name) == "trained":
        return tuple(barrier_runs.EXPERIMENTS[name].code_paths)
    return tuple(seeded_runs.EXPERIMENTS[name]().code_paths)


def status(name: str) -> tuple[str, str]:
    """``("current", "")`` or ``("to run", why)``: not saved, another configuration, or the files that changed."""
    from nextword import provenance

    try:
        saved = provenance.load_result(name)
    except FileNotFoundError:
        return "to run", "not saved"
    if is_current(name):
        return "current", ""
    changed = provenance.changed_code(saved, code_paths(name), MOVED)
    if changed is None:
        return "to run", "the commit of its code cannot be read"
    if changed:
        return "to run", f"code changed: {', '.join(changed)}"
    return "to run", "another configuration, or seeds missing"


def describe(name: str) -> str:
    """One line: what the run is (trained runs) or which notebook reads it and its seeds (per-seed runs)."""
    if kind(name) == "trained":
        return barrier_runs.EXPERIMENTS[name].description
    exp = seeded_runs.EXPERIMENTS[name]()
    return f"seeds {list(exp.seeds)} ({exp.notebook})"


def run(
    names: Sequence[str] = (),
    *,
    force: bool = False,
    train_only: bool = False,
    seeds: Sequence[int] | None = None,
    jobs: int = 1,
    threads: int = 1,
    partial_ok: bool = False,
) -> None:
    """Run (resume) and save ``names`` (all when empty), each trained run after what it depends on.

    ``train_only`` applies to trained runs, ``seeds``/``jobs``/``threads``/``partial_ok`` to per-seed
    runs; asking for one on the other kind is a ValueError naming the option.
    """
    for n in names:
        kind(n)
    if jobs < 1 or threads < 1:
        raise ValueError(f"jobs and threads must be >= 1, got jobs={jobs}, threads={threads}")
    wanted = list(names) or list(NAMES)
    trained = barrier_runs.in_order([n for n in wanted if kind(n) == "trained"])
    seeded = [n for n in wanted if kind(n) == "seeded"]
    per_seed = seeds is not None or jobs != 1 or threads != 1 or partial_ok
    if names and trained and per_seed:
        raise ValueError(f"--seeds, --jobs, --threads and --partial-ok apply to per-seed runs, not to {trained}")
    if names and seeded and train_only:
        raise ValueError(f"--train-only applies to trained runs, not to {seeded}")
    for n in trained:
        t0 = time.perf_counter()
        exp = barrier_runs.EXPERIMENTS[n]
        if train_only:
            exp.train(barrier_runs.runs_root() / n)
            status = "trained"
        else:
            status = barrier_runs.run_experiment(exp, force=force)
        print(f"{n}: {status} ({time.perf_counter() - t0:.0f} s)", flush=True)
    if train_only:
        return
    for n in seeded:
        seeded_runs.run_experiment(n, seeds=seeds, jobs=jobs, threads=threads, force=force, partial_ok=partial_ok)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``list`` and ``run`` subcommands (shared by ``nextword results`` and this module's ``main``)."""
    sub = parser.add_subparsers(dest="results_cmd", required=True, metavar="{list,run}")
    sub.add_parser("list", help="every saved run and whether it is current")
    r = sub.add_parser("run", help="run (resume) and save the runs named, or every one that is not current")
    r.add_argument("names", nargs="*", metavar="NAME", help=f"saved runs (default: all): {', '.join(NAMES)}")
    r.add_argument("--force", action="store_true", help="run and save again even if current")
    r.add_argument("--train-only", action="store_true", help="trained runs: only the resumable training, no save")
    r.add_argument("--seeds", type=int, nargs="+", default=None, help="per-seed runs: a subset of the seeds")
    r.add_argument("--jobs", type=int, default=1, help="per-seed runs: seeds run in parallel processes (default 1)")
    r.add_argument("--threads", type=int, default=1, help="per-seed runs: torch threads per process (default 1)")
    r.add_argument("--partial-ok", action="store_true", help="per-seed runs: save the seeds finished so far")


def execute(args: argparse.Namespace) -> int:
    """Carry out parsed ``list`` / ``run`` arguments; ValueError for a bad name or option."""
    if args.results_cmd == "list":
        for n in NAMES:
            state, why = status(n)
            print(f"{n:22s} {kind(n):8s} {state:8s} {describe(n)}" + (f" [{why}]" if why else ""))
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
    """``nextword results …`` on its own (the ``nextword`` command dispatches here); exit 2 on bad input."""
    parser = argparse.ArgumentParser(prog="nextword results", description=__doc__.split("\n")[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return execute(args)
    except ValueError as err:
        parser.error(str(err))


if __name__ == "__main__":
    raise SystemExit(main())
