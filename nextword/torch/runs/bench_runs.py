"""The benchmarks the book prints, as registry experiments: ``benchmarks/bench_margin.py``'s step times.

``bench_margin_cpu`` times one optimiser step at the paper's size with and without the margin penalty
(one thread, 7 interleaved repeats, and the peak memory of each mode): §7's "what the exact penalty
costs". Its numbers are timings: a code change that leaves every number of a training run the same can
still change them, so no fingerprint vouches for them (``timing=True``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from nextword.torch.runs.experiment import REPO, Experiment, Saved

__all__ = ["experiments", "BENCH_MARGIN_CONFIG"]

#: The command line of the saved benchmark (the script's defaults with 7 repeats).
BENCH_MARGIN_CONFIG = {
    "threads": 1,
    "repeats": 7,
    "warmup": 1,
    "batch": 64,
    "block": 256,
    "d": 128,
    "device": "cpu",
    "all": False,
}


def _train_bench_margin(workdir: Path) -> None:
    """``python -m benchmarks.bench_margin --repeats 7 --json workdir/results.json`` (from the repository)."""
    workdir.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "benchmarks.bench_margin", "--repeats", str(BENCH_MARGIN_CONFIG["repeats"])]
    subprocess.run([*cmd, "--json", str(workdir / "results.json")], cwd=REPO, check=True, env=dict(os.environ))


def _save_bench_margin(workdir: Path) -> Saved:
    data = json.loads((workdir / "results.json").read_text())
    data["args"] = {**data["args"], "json": None, "save": "bench_margin_cpu"}  # where it went is not a number
    return Saved(data)


def experiments() -> list[Experiment]:
    """The benchmarks of the registry."""
    return [
        Experiment(
            "bench_margin_cpu",
            "§7.1: one optimiser step with and without the margin penalty at the paper's size, one CPU thread",
            "book/part4_margins/barrier_training.py",
            lambda: dict(BENCH_MARGIN_CONFIG),
            ("benchmarks.bench_margin",),
            train=_train_bench_margin,
            save=_save_bench_margin,
            timing=True,
        )
    ]
