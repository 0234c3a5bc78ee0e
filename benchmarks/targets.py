"""The speed goals the benchmarks check, and the table that ``make bench`` ends with.

Every goal is a ratio measured in one run against a reference on the same machine (never a number
recorded elsewhere): a time ratio (ours / reference, lower is better) or a throughput ratio
(reference time / ours, higher is better). A benchmark calls :func:`record` for each goal it
measures: the row is printed at once (``met`` or ``NOT MET``) and, with ``--targets FILE``, appended
to FILE as one JSON line; ``python benchmarks/targets.py FILE`` then prints all the rows of the run
as one table, in the order of :data:`GOALS`, with the 1-minute load average at each measurement (the
ratios are medians of interleaved runs, so load hits both sides alike, but a loaded machine still
widens them). A goal that no benchmark measured in the run is listed as not measured, with why.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

#: key -> (what is measured, the reference, the goal as text); the table's rows, in order
GOALS: dict[str, tuple[str, str, str]] = {
    "margin_cpu": ("exact margin step / CE step, CPU", "the CE-only step of the same model", "<= 1.3x its time"),
    "margin_cuda": ("exact margin step / CE step, CUDA GPU", "the CE-only step of the same model", "<= 2x its time"),
    "decode_list": ("BPE decode from a Python list", "tiktoken, same ids", ">= 1.2x its throughput"),
    "decode_array": ("BPE decode from an int64 array", "tiktoken (a list of the same ids)", ">= 1.5x its throughput"),
    "encode_cold": ("BPE encode, GPT-4 split, fresh tokenizer", "tiktoken, same merges", ">= 0.75x its throughput"),
    "mha": ("numpy causal MHA forward, 1 thread", "torch MultiheadAttention, fast path", "<= 1.0x its time"),
    "bpe_train": (
        "BPE training, GPT-4 split",
        "HF tokenizers (GPT-2 split), same vocabulary size",
        ">= 1.5x its speed",
    ),
    "kv_cache": ("KV-cached greedy generation", "the same generation without the cache", ">= 10x its speed"),
}


def _goal(text: str) -> tuple[str, float]:
    op, value = text.split()[:2]
    return op, float(value.rstrip("x"))


def record(path: str | None, key: str, ratio: float, *, what: str | None = None, detail: str = "") -> bool:
    """Print the row of goal ``key`` with this run's ``ratio`` (and append it to ``path``); met?

    ``what`` replaces the goal's description when the run measured something else (quick sizes).
    """
    label, reference, goal = GOALS[key]
    op, value = _goal(goal)
    met = ratio <= value if op == "<=" else ratio >= value
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    row = {"key": key, "what": what or label, "reference": reference, "goal": goal, "ratio": ratio, "met": met}
    row.update(detail=detail, load=load)
    print(
        f"goal: {row['what']} vs {reference}: {ratio:.2f}x ({goal}) -> {'met' if met else 'NOT MET'}"
        f"{'; ' + detail if detail else ''} [1-min load {load:.1f} on {os.cpu_count()} CPUs]"
    )
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")
    return met


def _why_missing(key: str) -> str:
    if key == "margin_cuda":
        try:
            import torch

            if not torch.cuda.is_available():
                return "not measured: no CUDA device on this machine"
        except ImportError:
            return "not measured: torch is not installed"
    return "not measured in this run"


def table(path: str) -> int:
    """Print the goals of one ``make bench`` run as a table; the number of goals not met."""
    rows = {}
    if Path(path).exists():
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                rows[row["key"]] = row  # a rerun of a goal replaces the earlier row
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    w = max(len(text) for text in [*(r["what"] for r in rows.values()), *(g[0] for g in GOALS.values())])
    print(f"\ngoals of this run (ratios measured here, against references run here; {os.cpu_count()} CPUs):")
    print(f"{'':2s} {'what':{w}s} {'this run':>9s}  {'goal':24s} {'load':>5s}  reference")
    missed = 0
    for key, (label, reference, goal) in GOALS.items():
        row = rows.get(key)
        if row is None:
            print(f"{'-':2s} {label:{w}s} {'-':>9s}  {goal:24s} {'':>5s}  {reference}  ({_why_missing(key)})")
            continue
        missed += not row["met"]
        mark = "ok" if row["met"] else "NO"
        print(f"{mark:2s} {row['what']:{w}s} {row['ratio']:8.2f}x  {goal:24s} {row['load']:5.1f}  {reference}")
        if row["detail"]:
            print(f"{'':2s}   {row['detail']}")
    print(
        f"{missed} goal(s) NOT MET (marked NO); load average now {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}"
        if missed
        else f"every measured goal met; load average now {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}"
    )
    return missed


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python benchmarks/targets.py FILE  (the --targets file of the benchmarks' run)")
    table(sys.argv[1])
