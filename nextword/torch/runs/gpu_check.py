"""The GPU path run on a GPU, in one command: ``nextword gpu-check --out DIR`` (``make gpu-check``).

Four stages, each saved with provenance (:func:`nextword.provenance.save_result`) as soon as it ends, so
a time-out loses only the stage in flight:

1. **parity** — the ``quick`` configuration (§7's miniature, 200 steps) trained on the CPU and on CUDA
   in float32 with TF32 off: the two validation-BPC curves and final training losses, their largest
   absolute difference and whether it is below :data:`PARITY_TOL_BPC`;
2. **amp** — the same run on CUDA under bf16 autocast: finite, and its final validation BPC beside
   float32's;
3. **speed** — optimiser steps per second at the paper's model size (B = 64, T = 256, d = 128, 4 heads,
   2 layers) of the CE step (λ = 0), the exact-margin step (λ = 0.05, all T − 1 positions) and the cpu
   tier's subsampled margin step (k = 16), on this process's device;
4. **train** — with the time left, one process per run on the one GPU: the §7 pair at the ``paper``
   preset on tiny Shakespeare (lr 1e-3, exact margin, 20 epochs = 1220 steps) and Table 1's seven λ at
   the ``cpu`` tier's preset (the schedule of the saved CPU pair, so its λ = 0 and λ = 0.05 rows can be
   set beside ``barrier_ce`` and ``barrier_margin``). Runs still going at the deadline are stopped
   (their checkpoints stay in ``DIR/runs``; ``--resume``-style reuse through ``train_or_load``).

Saved results: ``DIR/results/gpu_check`` (stages 1–3), ``gpu_barrier_ce``, ``gpu_barrier_margin`` (with
weights), ``gpu_barrier_robustness`` and ``gpu_barrier_sweep``; the layout of ``book/results/``.
The GPU's name, driver, torch and CUDA versions are in each ``data.gpu``. Without a CUDA device the
command says so in one line and exits 2; ``--dry-run`` rehearses every stage on the CPU at the ``tiny``
size in seconds (what the test suite runs).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

__all__ = ["main", "PARITY_TOL_BPC", "gpu_info", "steps_per_second"]

#: Largest |Δ validation BPC| between the CPU and CUDA float32 runs of the quick configuration that counts
#: as "the same loss curve" (float32 summation orders differ; 200 steps of AdamW amplify them a little).
PARITY_TOL_BPC = 1e-3
#: λ of Table 1 (the paper's seven).
TABLE1_LAMBDAS = (0.0, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2)
_COMMAND = "nextword gpu-check"
_CODE = ("nextword/torch", "nextword/data/__init__.py", "nextword/provenance.py")


def gpu_info() -> dict[str, Any]:
    """Name, driver, torch and CUDA versions of the visible GPU (``None`` fields without one)."""
    import torch

    info: dict[str, Any] = {"torch": torch.__version__, "cuda": torch.version.cuda, "name": None, "driver": None}
    if torch.cuda.is_available():
        info["name"] = torch.cuda.get_device_name(0)
        info["cudnn"] = torch.backends.cudnn.version()
        try:
            out = subprocess.run(
                ["nvidia-smi", "--query-gpu=driver_version,memory.total", "--format=csv,noheader"],
                capture_output=True,
                text=True,
                timeout=20,
            ).stdout.strip()
            info["driver"], info["memory"] = [s.strip() for s in out.split(",")][:2]
        except (OSError, ValueError, subprocess.SubprocessError):
            pass
    return info


def _float32_exact() -> None:
    """Plain float32 matrix products on CUDA (no TF32), so CPU and GPU runs compute the same thing."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


def _save(name: str, data: dict, cfg: Any, seeds, wall: float, out: Path, files: dict | None = None) -> None:
    from nextword.provenance import save_result

    path = save_result(
        name,
        data,
        command=f"{_COMMAND} {' '.join(sys.argv[1:])}".strip()
        if name.startswith("gpu_check")
        else f"{_COMMAND} (train stage: {name})",
        config=cfg,
        seeds=list(seeds),
        wall_time_s=max(wall, 1e-3),
        code_paths=_CODE,
        results_dir=out / "results",
        files=files,
    )
    print(f"saved {path}", flush=True)


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
        res = train(replace(cfg, amp=amp), out / "runs" / f"parity_{key}", device=dev, progress=False)
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
    """Optimiser steps per second of the training step :func:`~nextword.torch.barrier.train.train` runs for ``cfg``
    (median of ``steps`` timed steps after ``warmup``; CUDA synchronised around each)."""
    import torch

    from nextword.torch.training.data import load_char_data, steps_per_epoch
    from nextword.torch.training.distributed import setup, wrap
    from nextword.torch.barrier.train import BarrierLM, Run, build, fresh_state, train_step

    ctx = setup(device, False)
    data = load_char_data(cfg.data, max_chars=cfg.max_chars)
    spe = steps_per_epoch(data.train.numel(), cfg.block_size, cfg.batch_size)
    gpt, prior = build(cfg, data.vocab.vocab_size, ctx.device)
    lm = BarrierLM(gpt, prior, cfg.margin_method)
    params = [p for p in lm.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    run = Run(cfg, ctx, data, gpt, prior, opt, fresh_state())
    model = wrap(lm, ctx)
    times = []
    for i in range(warmup + steps):
        if ctx.device.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        train_step(run, model, params, spe, spe * cfg.epochs)  # returns floats: synchronised
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
        "margin_exact": replace(base, lambda_margin=0.05, margin_positions=0),
        "margin_k16": replace(base, lambda_margin=0.05, margin_positions=min(16, base.block_size - 1)),
    }
    out = {"config": size, "device": device, "shape": _shape(base)}
    for name, cfg in cases.items():
        out[name] = steps_per_second(cfg, device, steps=steps)
        print(f"speed {device} {name}: {out[name]:.2f} steps/s", flush=True)
    return out


def _shape(cfg) -> dict:
    m = cfg.model
    return {"B": cfg.batch_size, "T": m.max_len, "d": m.d_model, "heads": m.num_heads, "layers": m.num_layers}


# --------------------------------------------------------------------------------------- stage 4
def _train_runs(pair_size: str, sweep_size: str, dry: bool, seed: int = 0) -> dict[str, Any]:
    """Run name → TrainConfig of the training stage (the paper preset's margin is exact: all T − 1 positions)."""
    from nextword.torch.barrier.config import preset

    extra = {"steps": 6, "eval_every": 3} if dry else {}
    exact = {"margin_positions": 0} if pair_size == "paper" else {}
    runs = {
        "pair_ce": preset(pair_size, data="shakespeare", lambda_margin=0.0, seed=seed, **extra),
        "pair_margin": preset(pair_size, data="shakespeare", lambda_margin=0.05, seed=seed, **exact, **extra),
    }
    exact = {"margin_positions": 0} if sweep_size == "paper" else {}
    for lam in TABLE1_LAMBDAS if not dry else (0.0, 0.05):
        runs[f"sweep_{lam:g}"] = preset(sweep_size, data="shakespeare", lambda_margin=lam, seed=seed, **exact, **extra)
    return runs


def _child(args) -> int:
    """One training run of stage 4 (a separate process): train, then its noise numbers, in ``results.json``."""
    import torch

    from nextword.torch.training.data import eval_windows, load_char_data
    from nextword.torch.training.checkpoint import save_json
    from nextword.torch.barrier.config import TrainConfig
    from nextword.torch.barrier.train import train_or_load
    from nextword.torch.barrier.robustness import embedding_rms, noise_curve

    torch.set_num_threads(1)
    _float32_exact()
    cfg = TrainConfig.from_dict(json.loads(args.config))
    run_dir = Path(args.run_dir)
    t0 = time.time()
    res = train_or_load(cfg, run_dir, device=args.device, progress=False, resume=True)
    gpt = _load_gpt(run_dir, args.device)
    data = load_char_data(cfg.data, max_chars=cfg.max_chars)
    vx, vy = eval_windows(data.val, block_size=cfg.block_size, max_windows=cfg.eval_windows)
    res["noise_absolute"] = noise_curve(gpt, vx, vy, sigmas=cfg.noise_sigmas, draws=cfg.noise_draws, seed=cfg.seed)
    res["embedding_rms"] = embedding_rms(gpt)
    res["wall_s"] = time.time() - t0
    save_json(res, run_dir / "results.json")
    return 0


def _load_gpt(run_dir: Path, device: str):
    from nextword.torch.barrier.train import load_checkpoint

    return load_checkpoint(run_dir, device=device)[0].eval()


def _stage_train(runs: dict, device: str, out: Path, deadline: float) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    procs = {}
    for name, cfg in runs.items():
        cmd = [sys.executable, "-m", "nextword.torch.runs.gpu_check", "_child", "--device", device]
        cmd += ["--run-dir", str(out / "runs" / name), "--config", json.dumps(cfg.to_dict())]
        log = open(out / f"{name}.log", "w")  # noqa: SIM115 (closed when the process ends)
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
    return {"runs": {k: v.to_dict() for k, v in runs.items()}, "status": status}


def _finished(run_dir: Path) -> dict | None:
    path = run_dir / "results.json"
    if not path.exists():
        return None
    res = json.loads(path.read_text())
    return res if res.get("finished") and "noise_absolute" in res else None


def _arm_data(res: dict) -> dict:
    keep = ("final_val_bpc", "final_train_bpc", "final_train_loss", "steps", "total_steps", "steps_per_epoch")
    data = {k: res[k] for k in keep + ("data", "model_params", "diagnostics", "history") if k in res}
    data["steps_per_second"] = res["steps"] / res["wall_s"] if res.get("wall_s") else None
    data["embedding_rms"] = res["embedding_rms"]
    data["noise_absolute"] = res["noise_absolute"]
    data["device"] = res.get("device")
    return data


def _save_training(
    out: Path, gpu: dict, device: str, pair_suffix: str = "", sweep_name: str = "gpu_barrier_sweep"
) -> list[str]:
    """Save what stage 4 finished: the pair (with weights and the relative-noise probe) and the sweep."""
    from nextword.torch.training.checkpoint import export_weights
    from nextword.torch.barrier.robustness import noise_curve, noise_row

    saved = []
    runs_dir = out / "runs"
    pair = {arm: _finished(runs_dir / f"pair_{arm}") for arm in ("ce", "margin")}
    for arm, res in pair.items():
        if res is None:
            continue
        weights = export_weights(runs_dir / f"pair_{arm}")
        data = {**_arm_data(res), "gpu": gpu}
        name = f"gpu_barrier_{arm}{pair_suffix}"  # weights for seed 0 only (what the notebooks analyse)
        files = {} if pair_suffix else {"model.pt": weights}
        _save(name, data, res["config"], [res["config"]["seed"]], res["wall_s"], out, files)
        saved.append(name)
    if all(pair.values()) and not pair_suffix:  # Fig. 7.5 at equal noise relative to each arm's embedding scale
        from nextword.torch.training.data import eval_windows, load_char_data
        from nextword.torch.barrier.config import TrainConfig

        t0 = time.time()
        cfg = TrainConfig.from_dict(pair["margin"]["config"])
        data = load_char_data(cfg.data, max_chars=cfg.max_chars)
        vx, vy = eval_windows(data.val, block_size=cfg.block_size, max_windows=128)
        scale = pair["margin"]["embedding_rms"] / pair["ce"]["embedding_rms"]
        gpt = _load_gpt(runs_dir / "pair_margin", device)
        sig = [s * scale for s in cfg.noise_sigmas]
        rel = noise_curve(gpt, vx, vy, sigmas=sig, draws=cfg.noise_draws, seed=cfg.seed)
        rob = {
            "embedding_rms": {a: pair[a]["embedding_rms"] for a in pair},
            "absolute": {f"gpu_barrier_{a}": pair[a]["noise_absolute"] for a in pair},
            "relative": {"gpu_barrier_ce": pair["ce"]["noise_absolute"], "gpu_barrier_margin": rel},
            "gpu": gpu,
        }
        _save("gpu_barrier_robustness", rob, {"arms": [pair[a]["config"] for a in pair]}, [0], time.time() - t0, out)
        saved.append("gpu_barrier_robustness")
    rows, histories, configs, walls = [], {}, [], []
    for lam in TABLE1_LAMBDAS:
        res = _finished(runs_dir / f"sweep_{lam:g}")
        if res is None:
            continue
        rows.append(
            {
                **noise_row(lam, res["noise_absolute"], 0.3),
                "final_val_bpc": res["final_val_bpc"],
                "embedding_rms": res["embedding_rms"],
                **res.get("diagnostics", {}),
            }
        )
        histories[f"{lam:g}"] = res["history"]
        configs.append(res["config"])
        walls.append(res["wall_s"])
    if rows:
        sweep = {"sigma": 0.3, "rows": rows, "histories": histories, "gpu": gpu, "lambdas_asked": list(TABLE1_LAMBDAS)}
        _save(sweep_name, sweep, {"runs": configs}, [configs[0]["seed"]], max(walls), out)
        saved.append(sweep_name)
    return saved


# --------------------------------------------------------------------------------------------- main
def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog=_COMMAND, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--out", default="runs/gpu-check", help="output folder (results/ and runs/ inside)")
    ap.add_argument("--budget", type=float, default=480.0, help="seconds for the whole command (default 480)")
    ap.add_argument("--dry-run", action="store_true", help="every stage on the CPU at the tiny size (seconds)")
    ap.add_argument("--speed-only", action="store_true", help="stage 3 only, on --device (e.g. cpu)")
    ap.add_argument("--device", default=None, help="device of --speed-only (default: cuda)")
    ap.add_argument("--train-only", action="store_true", help="stage 4 only (no speed, parity or AMP stage)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the stage-4 runs (≠ 0: the pair's numbers only)")
    ap.add_argument("--sweep-config", default="cpu", choices=["cpu", "paper"], help="preset of the seven-λ sweep")
    return ap


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["_child"]:
        cp = argparse.ArgumentParser()
        cp.add_argument("cmd")
        cp.add_argument("--device", required=True)
        cp.add_argument("--run-dir", required=True)
        cp.add_argument("--config", required=True)
        return _child(cp.parse_args(argv))
    ap = build_parser()
    args = ap.parse_args(argv)
    import torch

    start = time.time()
    deadline = start + args.budget
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.speed_only:
        dev = args.device or "cuda"
        if dev == "cuda" and not torch.cuda.is_available():
            ap.exit(2, f"{ap.prog}: error: no CUDA GPU here\n")
        t0 = time.time()
        speed = _speed("tiny" if args.dry_run else "paper", dev, steps=5 if args.dry_run else 10)
        speed["load_average"] = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
        speed["torch_threads"] = torch.get_num_threads()
        _save(
            f"gpu_check_{torch.device(dev).type}_speed",
            {"speed": speed},
            {"size": speed["config"]},
            [0],
            time.time() - t0,
            out,
        )
        return 0
    if not args.dry_run and not torch.cuda.is_available():
        ap.exit(2, f"{ap.prog}: error: no CUDA GPU here (torch.cuda.is_available() is False); use --dry-run\n")
    device = "cpu" if args.dry_run else "cuda"
    size_quick, size_paper = ("tiny", "tiny") if args.dry_run else ("quick", "paper")
    _float32_exact()
    gpu = gpu_info()
    print(f"gpu-check on {gpu['name'] or 'the CPU (dry run)'}; torch {gpu['torch']}, CUDA {gpu['cuda']}", flush=True)
    record: dict[str, Any] = {"gpu": gpu, "dry_run": args.dry_run}
    t0 = time.time()
    if args.dry_run:
        size_cpu = "tiny"
    else:
        size_cpu = args.sweep_config
    suffix = f"_seed{args.seed}" if args.seed else ""
    sweep_name = "gpu_barrier_sweep" + ("_paper" if args.sweep_config == "paper" else "") + suffix
    if not args.train_only:
        record["speed"] = _speed(size_paper, device, steps=5 if args.dry_run else 30)
    # stage 4 starts now (in the background), the parity runs of stages 1–2 share the GPU with it
    train_deadline = deadline - (5 if args.dry_run else 45)
    runs = _train_runs(size_paper, size_cpu, args.dry_run, args.seed)
    record["train_runs"] = list(runs)
    import threading

    box: dict[str, Any] = {}
    th = threading.Thread(target=lambda: box.update(_stage_train(runs, device, out, train_deadline)))
    th.start()
    name = (
        "gpu_check"
        if not args.train_only
        else f"gpu_check_train{suffix}" + ("_paper" if args.sweep_config == "paper" else "")
    )
    config = {"quick": size_quick, "paper": size_paper, "sweep": size_cpu, "seed": args.seed}
    if not args.train_only:
        try:
            record["parity"] = _parity(size_quick, device, out)
        except Exception as e:  # noqa: BLE001 - recorded, and the training stage goes on
            record["parity"] = {"error": repr(e)}
        _save(name, record, config, [0], time.time() - t0, out)
    th.join()
    record["train"] = box.get("status", {})
    record["saved"] = _save_training(out, gpu, device, suffix, sweep_name)
    record["wall_s"] = time.time() - start
    _save(name, record, config, [args.seed], time.time() - t0, out)
    p = record.get("parity", {})
    print(
        f"parity: max |Δ val BPC| {p.get('max_abs_val_bpc_diff')} (tolerance {PARITY_TOL_BPC}); "
        f"saved {record['saved']}; {record['wall_s']:.0f} s",
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
