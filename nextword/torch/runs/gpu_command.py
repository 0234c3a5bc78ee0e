"""``nextword gpu-check``: one GPU session of the registry (:mod:`~nextword.torch.runs.gpu_check`) into ``--out``.

    nextword gpu-check --out DIR [--budget S]                         # session gpu_check: stages 1-4
    nextword gpu-check --train-only --sweep-config paper [--seed 1]   # sessions gpu_check_train[_seed1]_paper
    nextword gpu-check --speed-only --device cpu                      # gpu_check_cpu_speed (on the CPU)
    nextword gpu-check --dry-run                                      # every stage on the CPU, tiny, seconds

The session and every GPU-tier run it trained are saved through the registry under ``DIR/results``
(checkpoints in ``DIR/runs``); copy them into ``book/results/``. Without a CUDA device the command says so
in one line and exits 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from nextword._cli import output_dir, positive_float
from nextword.torch.runs.barrier_runs import GPU_TIER_ENV
from nextword.torch.runs.experiment import runs_root
from nextword.torch.runs.gpu_check import BUDGET_ENV, DEFAULT_BUDGET

__all__ = ["main", "build_parser"]

_COMMAND = "nextword gpu-check"
#: ``--help``'s text (plain, unlike the module docstring, which Sphinx reads)
_DESCRIPTION = """Check the torch path on one CUDA GPU: CUDA against the CPU, bfloat16 autocast, steps per
second, and the §7 pair of runs, within --budget seconds. Results go to OUT/results (copy them into
book/results/), checkpoints to OUT/runs. Without a CUDA GPU it says so and exits 2.

  nextword gpu-check --out DIR [--budget S]                        the session gpu_check: stages 1-4
  nextword gpu-check --train-only --sweep-config paper [--seed 1]  only the training stage, paper sweep
  nextword gpu-check --speed-only --device cpu                     the speed stage on the CPU
  nextword gpu-check --dry-run                                     every stage on the CPU at the tiny size:
                                                                   a rehearsal of the code, not a measurement"""


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog=_COMMAND, description=_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--out",
        type=output_dir,
        default="runs/gpu-check",
        help="output folder, results/ and runs/ inside (default %(default)s)",
    )
    ap.add_argument(
        "--budget", type=positive_float, default=DEFAULT_BUDGET, help="seconds for the session (default %(default)g)"
    )
    ap.add_argument("--dry-run", action="store_true", help="every stage on the CPU at the tiny size (seconds)")
    ap.add_argument("--speed-only", action="store_true", help="stage 3 only, on --device cpu (gpu_check_cpu_speed)")
    ap.add_argument("--device", default="cpu", choices=["cpu"], help="device of --speed-only (default cpu)")
    ap.add_argument("--train-only", action="store_true", help="stage 4 only (no speed, parity or AMP stage)")
    ap.add_argument("--seed", type=int, default=0, choices=[0, 1], help="seed of the stage-4 runs (default 0)")
    ap.add_argument(
        "--sweep-config", default="cpu", choices=["cpu", "paper"], help="preset of the seven-λ sweep (default cpu)"
    )
    return ap


def _session(args: argparse.Namespace) -> str | None:
    if args.train_only and args.sweep_config == "paper" and args.seed in (0, 1):
        return f"gpu_check_train{'_seed1' if args.seed else ''}_paper"
    if not args.train_only and args.sweep_config == "cpu" and args.seed == 0:
        return "gpu_check"
    return None


def main(argv: list[str] | None = None) -> int:
    """Run one GPU session (or the CPU speed stage) through the registry into ``--out``; exit 2 on bad input."""
    ap = build_parser()
    args = ap.parse_args(sys.argv[1:] if argv is None else argv)
    import torch

    from nextword.torch.runs import registry

    out = Path(args.out).resolve()
    if args.dry_run:
        os.environ[GPU_TIER_ENV] = "tiny"
    if args.speed_only:
        names = ["gpu_check_cpu_speed"]
    else:
        if not args.dry_run and not torch.cuda.is_available():
            ap.exit(2, f"{ap.prog}: error: no CUDA GPU here (torch.cuda.is_available() is False); use --dry-run\n")
        session = _session(args)
        if session is None:
            ap.exit(2, f"{ap.prog}: error: no saved session for these options (see --help)\n")
        names = [session]
    os.environ[BUDGET_ENV] = str(args.budget)
    os.environ["NEXTWORD_RUNS_DIR"] = str(out / "runs")
    registry.run(names, results_dir=out / "results", force=True)
    if args.speed_only:
        return 0
    finished = json.loads((runs_root() / names[0] / "results.json").read_text())["finished"]
    saved = list(finished)
    if {"gpu_barrier_ce", "gpu_barrier_margin"} <= set(finished):
        saved.append("gpu_barrier_robustness")
    # not --force, which would start them afresh: each finished run in DIR/runs was made by this code and
    # configuration, so the registry continues it (nothing left to train) and saves it
    registry.run(saved, results_dir=out / "results")
    print(f"saved {', '.join([*names, *saved])} under {out / 'results'}", flush=True)
    return 0
