"""The GPU sessions of the registry: what ``nextword gpu-check --out DIR`` (``make gpu-check``,
:mod:`~nextword.torch.runs.gpu_command`) runs on a GPU.

A GPU session is a registry experiment (:func:`experiments`) whose training does, within ``--budget``
seconds:

1. **parity** — the ``quick`` configuration (§7's miniature, 200 steps) trained on the CPU and on CUDA
   in float32 with TF32 off: the two validation-BPC curves and final training losses, their largest
   absolute difference and whether it is below :data:`PARITY_TOL_BPC`;
2. **amp** — the same run on CUDA under bf16 autocast: finite, and its final validation BPC beside
   float32's;
3. **speed** — optimiser steps per second at the paper's model size (B = 64, T = 256, d = 128, 4 heads,
   2 layers) of the CE step (λ = 0), the exact-margin step (λ = 0.05, all T − 1 positions) and the cpu
   tier's subsampled margin step (k = 16), on this process's device, timing the step that
   :func:`~nextword.torch.barrier.train.train` runs, set up as it sets it up;
4. **train** — the GPU tier's §7 experiments of the registry (:mod:`~nextword.torch.runs.barrier_runs`),
   one process per run on the one GPU (``nextword results run --train-only NAME``): the pair at the
   ``paper`` preset on tiny Shakespeare and Table 1's seven λ at the ``cpu`` or the ``paper`` preset's
   schedule. Runs still going at the deadline are stopped (their checkpoints stay in ``DIR/runs``).

Then the session's record and every run that finished are saved through the registry, in the layout of
``book/results/``, under ``DIR/results`` (copy them into the book). ``--train-only`` skips stages 1–3
(sessions ``gpu_check_train_paper`` and ``gpu_check_train_seed1_paper``); ``--speed-only --device cpu`` is
stage 3 on the CPU (``gpu_check_cpu_speed``). Without a CUDA device the command says so in one line and
exits 2; ``--dry-run`` rehearses every stage on the CPU at the ``tiny`` size in seconds (what the test
suite runs).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from nextword.torch.runs.barrier_runs import GPU_TIER_ENV, PAPER_LAMBDA
from nextword.torch.runs.experiment import Experiment, Saved

__all__ = ["PARITY_TOL_BPC", "steps_per_second", "experiments", "session_runs", "BUDGET_ENV", "DEFAULT_BUDGET"]

#: Largest |Δ validation BPC| between the CPU and CUDA float32 runs of the quick configuration that counts
#: as "the same loss curve" (float32 summation orders differ; 200 steps of AdamW amplify them a little).
PARITY_TOL_BPC = 1e-3
#: Seconds a session may take (``--budget``), read by the session's training.
BUDGET_ENV = "NEXTWORD_GPU_BUDGET"
DEFAULT_BUDGET = 480.0


def _dry_run() -> bool:
    return os.environ.get(GPU_TIER_ENV) == "tiny"


def _float32_exact() -> None:
    """Plain float32 matrix products on CUDA (no TF32), so CPU and GPU runs compute the same thing."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


# ----------------------------------------------------------------------------------------- stages 1–3
def _parity(size: str, device: str, out: Path) -> dict:
    from nextword.torch.barrier.config import preset
    from nextword.torch.barrier.train import train

    cfg = preset(size, checkpoint_every=10_000)
    runs = {}
    for dev, amp in (("cpu", False), (device, False), (device, True)):
        if amp and device == "cpu":
            continue
        key = f"{dev}_{'bf16' if amp else 'fp32'}"
        t0 = time.time()
        res = train(replace(cfg, amp=amp), out / f"parity_{key}", device=dev, progress=False)
        runs[key] = {
            "val_bpc": [h["val_bpc"] for h in res["history"]],
            "final_train_loss": res["final_train_loss"],
            "seconds": time.time() - t0,
        }
    ref, fp32 = runs["cpu_fp32"], runs[f"{device}_fp32"]
    diff = max(abs(a - b) for a, b in zip(ref["val_bpc"], fp32["val_bpc"]))
    result = {
        "config": size,
        "runs": runs,
        "max_abs_val_bpc_diff": diff,
        "final_train_loss_diff": abs(ref["final_train_loss"] - fp32["final_train_loss"]),
        "tolerance_bpc": PARITY_TOL_BPC,
        "parity": diff <= PARITY_TOL_BPC,
    }
    if f"{device}_bf16" in runs:
        bf16 = runs[f"{device}_bf16"]
        result["amp_bf16"] = {
            "finite": all(math.isfinite(v) for v in bf16["val_bpc"]),
            "final_val_bpc": bf16["val_bpc"][-1],
            "fp32_final_val_bpc": fp32["val_bpc"][-1],
            "diff": bf16["val_bpc"][-1] - fp32["val_bpc"][-1],
        }
    return result


def steps_per_second(cfg, device: str, *, steps: int = 20, warmup: int = 5) -> float:
    """Optimiser steps per second of the training step :func:`~nextword.torch.barrier.train.train` runs for
    ``cfg``, set up by its own :func:`~nextword.torch.barrier.train.setup_run` (median of ``steps`` timed
    steps after ``warmup``; CUDA synchronised around each)."""
    import torch

    from nextword.torch.barrier.train import setup_run, train_step
    from nextword.torch.training.data import load_char_data
    from nextword.torch.training.distributed import setup, wrap

    ctx = setup(device, False)
    run, lm, params, spe, total = setup_run(cfg, ctx, load_char_data(cfg.data, max_chars=cfg.max_chars))
    model = wrap(lm, ctx)
    times = []
    for i in range(warmup + steps):
        if ctx.device.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        train_step(run, model, params, spe, total)  # returns floats: synchronised
        run.state["step"] += 1
        if i >= warmup:
            times.append(time.perf_counter() - t0)
    times.sort()
    return 1.0 / times[len(times) // 2]


def _speed(size: str, device: str, steps: int) -> dict:
    from nextword.torch.barrier.config import preset

    base = preset(size)
    cases = {
        "ce": replace(base, lambda_margin=0.0),
        "margin_exact": replace(base, lambda_margin=PAPER_LAMBDA, margin_positions=0),
        "margin_k16": replace(base, lambda_margin=PAPER_LAMBDA, margin_positions=min(16, base.block_size - 1)),
    }
    m = base.model
    out = {
        "config": size,
        "device": device,
        "shape": {"B": base.batch_size, "T": m.max_len, "d": m.d_model, "heads": m.num_heads, "layers": m.num_layers},
    }
    for name, cfg in cases.items():
        out[name] = steps_per_second(cfg, device, steps=steps)
        print(f"speed {device} {name}: {out[name]:.2f} steps/s", flush=True)
    return out


# --------------------------------------------------------------------------------------- stage 4
def session_runs(sweep: str, seed: int) -> list[str]:
    """The GPU tier's registry experiments a session trains: the pair and a λ path, then the pair's noise probe."""
    if (sweep, seed) == ("cpu", 0):
        return ["gpu_barrier_ce", "gpu_barrier_margin", "gpu_barrier_sweep", "gpu_barrier_robustness"]
    if (sweep, seed) == ("paper", 0):
        return ["gpu_barrier_ce_rerun", "gpu_barrier_margin_rerun", "gpu_barrier_sweep_paper"]
    if (sweep, seed) == ("paper", 1):
        return ["gpu_barrier_ce_seed1", "gpu_barrier_margin_seed1", "gpu_barrier_sweep_paper_seed1"]
    raise ValueError(f"no GPU session for the {sweep} preset's sweep and seed {seed}")


def _train_side_by_side(names: list[str], deadline: float, logs: Path) -> dict[str, Any]:
    """``nextword results run --train-only NAME`` for every name at once (one process each); stop at ``deadline``."""
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    logs.mkdir(parents=True, exist_ok=True)
    procs = {}
    for name in names:
        cmd = [sys.executable, "-m", "nextword", "results", "run", "--train-only", name]
        log = open(logs / f"{name}.log", "w")  # noqa: SIM115 (closed when the process ends)
        procs[name] = (subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT), log, time.time())
    status = {}
    while procs:
        for name, (p, log, t0) in list(procs.items()):
            if p.poll() is not None:
                status[name] = {"returncode": p.returncode, "seconds": time.time() - t0}
                log.close()
                del procs[name]
                print(f"train {name}: exit {p.returncode} after {time.time() - t0:.0f} s", flush=True)
        if procs and time.time() > deadline:
            for name, (p, log, t0) in procs.items():
                p.terminate()
                status[name] = {"returncode": None, "seconds": time.time() - t0, "stopped_at_deadline": True}
                log.close()
                print(f"train {name}: stopped at the deadline", flush=True)
            break
        time.sleep(1)
    return status


def _session(checks: bool, sweep: str, seed: int):
    """A session's training: stages 1–3 (``checks``) beside stage 4, the report in ``workdir/results.json``."""

    def train(workdir: Path) -> None:
        import threading

        import torch

        from nextword.torch.training.checkpoint import save_json
        from nextword.torch.training.device import gpu_info

        dry = _dry_run()
        if not dry and not torch.cuda.is_available():
            raise RuntimeError("a GPU session needs a CUDA GPU (torch.cuda.is_available() is False here)")
        start = time.time()
        deadline = start + float(os.environ.get(BUDGET_ENV, DEFAULT_BUDGET))
        device = "cpu" if dry else "cuda"
        _float32_exact()
        report: dict[str, Any] = {"gpu": gpu_info(), "dry_run": dry}
        print(f"gpu-check on {report['gpu']['name'] or 'the CPU (dry run)'}", flush=True)
        if checks:
            report["speed"] = _speed("tiny" if dry else "paper", device, steps=5 if dry else 30)
        names = session_runs(sweep, seed)
        trained = [n for n in names if not n.endswith("robustness")]  # the probe reads the trained pair
        report["train_runs"] = trained
        box: dict[str, Any] = {}
        stage4 = threading.Thread(
            target=lambda: box.update(_train_side_by_side(trained, deadline - (5 if dry else 45), workdir / "logs"))
        )
        stage4.start()  # the parity runs of stages 1–2 share the GPU with it
        if checks:
            try:
                report["parity"] = _parity("tiny" if dry else "quick", device, workdir)
            except Exception as e:  # noqa: BLE001 - recorded, and the training stage goes on
                report["parity"] = {"error": repr(e)}
            if dry:
                print(
                    "parity: a rehearsal of the code path (CPU float32 against itself), not a parity measurement",
                    flush=True,
                )
        stage4.join()
        report["train"] = box
        report["finished"] = [n for n in trained if box.get(n, {}).get("returncode") == 0]
        report["wall_s"] = time.time() - start
        save_json(report, workdir / "results.json")

    return train


def _save_session(workdir: Path) -> Saved:
    return Saved(json.loads((workdir / "results.json").read_text()))


def _train_cpu_speed(workdir: Path) -> None:
    import torch

    from nextword.torch.training.checkpoint import save_json

    speed = _speed("tiny" if _dry_run() else "paper", "cpu", steps=5 if _dry_run() else 10)
    speed["load_average"] = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    speed["torch_threads"] = torch.get_num_threads()
    save_json({"speed": speed}, workdir / "results.json")


def _sizes(sweep: str, seed: int, checks: bool) -> dict[str, Any]:
    quick, paper = ("tiny", "tiny") if _dry_run() else ("quick", "paper")
    if checks:
        return {"quick": quick, "paper": paper, "cpu": "tiny" if _dry_run() else sweep}
    return {"quick": quick, "paper": paper, "sweep": "tiny" if _dry_run() else sweep, "seed": seed}


_SESSION_ENTRY = "nextword.torch.runs.gpu_check:_session,_save_session,session_runs"


def experiments() -> list[Experiment]:
    """The GPU sessions and the CPU speed stage, as registry experiments (timings: no replay vouches for them)."""
    out = []
    for name, checks, sweep, seed, what in (
        ("gpu_check", True, "cpu", 0, "GPU session: CPU-CUDA parity, bf16, steps/s, and the §7 pair and λ path"),
        ("gpu_check_train_paper", False, "paper", 0, "GPU session: the pair again and the paper-schedule λ path"),
        ("gpu_check_train_seed1_paper", False, "paper", 1, "GPU session: the pair and the λ path, seed 1"),
    ):
        out.append(
            Experiment(
                name,
                what,
                "book/part4_margins/barrier_training.py",
                lambda sweep=sweep, seed=seed, checks=checks: _sizes(sweep, seed, checks),
                (_SESSION_ENTRY,),
                train=_session(checks, sweep, seed),
                save=_save_session,
                seeds=(seed,),
                device="cuda",
                timing=True,
            )
        )
    out.append(
        Experiment(
            "gpu_check_cpu_speed",
            "steps/s of the CE, exact-margin and k = 16 steps at the paper's size on this CPU",
            "book/part4_margins/barrier_training.py",
            lambda: {"size": "tiny" if _dry_run() else "paper"},
            ("nextword.torch.runs.gpu_check:_train_cpu_speed,_save_session",),
            train=_train_cpu_speed,
            save=_save_session,
            timing=True,
        )
    )
    return out
