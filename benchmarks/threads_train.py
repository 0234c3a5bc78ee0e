"""How many torch threads should ``nextword train`` use? (issue 48: the default of ``--threads``.)

Times §7 training steps (forward, backward, AdamW: :func:`nextword.torch.barrier.train.train_step`) of two
presets, ``quick`` (2 layers, d = 64, batch 16 × 64) and ``cpu`` (the paper's model: 2 layers, d = 128,
batch 64 × 256), with 1 and 2 intra-op threads, and with idle OpenMP threads sleeping
(``OMP_WAIT_POLICY=PASSIVE``, what ``nextword`` sets) or spinning (``ACTIVE``). Each setting runs in a fresh
process (OpenMP reads its policy once); the settings are interleaved round by round, so that a change in
the machine's load hits them alike. Prints, per setting, the median wall time of a step, its spread over
the rounds, and the 1-minute load average before and after the measurement: on a shared machine the
load decides the answer, so quote it with every figure.

    python benchmarks/threads_train.py                         # quick and cpu, 1 and 2 threads, both policies
    python benchmarks/threads_train.py --configs quick --rounds 5 --steps 20

Not a test and not part of ``make bench`` (minutes of CPU).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

_CHILD = r"""
import json, os, sys, time
import torch
threads, config, steps = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
torch.set_num_threads(threads)
from nextword.torch.barrier.config import preset
from nextword.torch.barrier.train import setup_run, train_step
from nextword.torch.training.data import load_char_data
from nextword.torch.training.distributed import setup
cfg = preset(config, max_chars=300_000)
run, lm, params, spe, total = setup_run(cfg, setup("cpu", False), load_char_data(cfg.data, max_chars=cfg.max_chars))
lm.train()
train_step(run, lm, params, spe, total)  # warm-up
times = []
for _ in range(steps):
    t0 = time.perf_counter()
    train_step(run, lm, params, spe, total)
    run.state["step"] += 1
    times.append(time.perf_counter() - t0)
print(json.dumps(times))
"""


def _one(threads: int, config: str, steps: int, policy: str) -> list[float]:
    env = dict(os.environ, OMP_WAIT_POLICY=policy)
    env.pop("OMP_NUM_THREADS", None)
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(threads), config, str(steps)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--configs", default="quick,cpu", help="comma-separated presets (default quick,cpu)")
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts (default 1,2)")
    ap.add_argument("--policies", default="PASSIVE,ACTIVE", help="OMP_WAIT_POLICY values (default PASSIVE,ACTIVE)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds; each runs every setting once (default 3)")
    ap.add_argument("--steps", type=int, default=10, help="timed steps per process (default 10)")
    args = ap.parse_args(argv)
    settings = [
        (c, t, p)
        for c in args.configs.split(",")
        for t in map(int, args.threads.split(","))
        for p in args.policies.split(",")
    ]
    times: dict[tuple, list[float]] = {s: [] for s in settings}
    loads: dict[tuple, list[float]] = {s: [] for s in settings}
    t_start = time.time()
    for r in range(args.rounds):
        for s in settings:
            before = os.getloadavg()[0]
            step_times = _one(s[1], s[0], args.steps, s[2])
            after = os.getloadavg()[0]
            times[s].append(statistics.median(step_times))
            loads[s] += [before, after]
            print(
                f"round {r}: {s[0]:5s} {s[1]} thread(s) {s[2]:7s} {1e3 * times[s][-1]:8.1f} ms/step "
                f"(load {before:.1f} -> {after:.1f})",
                flush=True,
            )
    print(f"\n{os.cpu_count()} CPUs, usable {len(os.sched_getaffinity(0))}; {time.time() - t_start:.0f} s in all")
    print("| config | threads | OMP_WAIT_POLICY | median ms/step | min–max over rounds | 1-min load (min–max) |")
    print("|---|---|---|---|---|---|")
    for s in settings:
        ms = [1e3 * t for t in times[s]]
        print(
            f"| {s[0]} | {s[1]} | {s[2]} | {statistics.median(ms):.1f} | {min(ms):.1f}–{max(ms):.1f} | "
            f"{min(loads[s]):.1f}–{max(loads[s]):.1f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
