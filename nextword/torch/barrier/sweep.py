"""The §7.4 regularisation path: one model per λ_m, then clean/noisy BPC and prior diagnostics.

``run_sweep(cfg, lambdas, out_dir)`` trains (or reuses) ``out_dir/lambda_<λ>/`` for every λ and writes
``out_dir/sweep.json`` with one row per λ: clean validation BPC, BPC under embedding noise σ
(``sigma``, 0.3 in Table 1), the degradation ratio, and the diagnostics of
:func:`~nextword.torch.barrier.prior.prior_diagnostics` (entropy, SNR, tr Σ_t / RMS(x)², margin,
embedding RMS). Under ``torchrun`` the λ values fan out one per process (round robin); rank 0
waits for all of them and writes the table.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import torch.distributed as dist

from nextword.torch.training.data import eval_windows, load_char_data
from nextword.torch.training.checkpoint import save_json
from nextword.torch.barrier.config import TABLE1_SIGMA, TrainConfig
from nextword.torch.training.distributed import dist_info
from nextword.torch.barrier.train import load_checkpoint, train_or_load
from nextword.torch.barrier.robustness import noise_curve, noise_row

__all__ = ["PAPER_LAMBDAS", "run_sweep", "lambda_dir"]

#: Table 1's seven λ_m (§7.4).
PAPER_LAMBDAS = (0.0, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2)


def lambda_dir(out_dir: str | Path, lam: float) -> Path:
    return Path(out_dir) / f"lambda_{lam:g}"


def run_sweep(
    cfg: TrainConfig,
    lambdas=PAPER_LAMBDAS,
    out_dir: str | Path = "runs/sweep",
    *,
    sigma: float = TABLE1_SIGMA,
    device: str = "auto",
    progress: bool = True,
) -> dict:
    """Train one model per λ (reusing finished runs with the same config) and tabulate §7.4."""
    rank, world, _ = dist_info()
    if world > 1 and not dist.is_initialized():
        dist.init_process_group(backend="gloo")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    data = load_char_data(cfg.data, max_chars=cfg.max_chars)
    vx, vy = eval_windows(data.val, block_size=cfg.block_size, max_windows=cfg.eval_windows)
    for i, lam in enumerate(lambdas):
        if i % world != rank:
            continue
        run_dir = lambda_dir(out, lam)
        res = train_or_load(
            replace(cfg, lambda_margin=float(lam)),
            run_dir,
            device=device,
            progress=progress,
            distributed=False,
            data=data,
        )
        key = {"config": res["config"], "perturbation": res.get("perturbation", 0), "sigma": sigma}
        row_file = run_dir / "sweep_row.json"  # beside results.json, which another run of this λ may rewrite
        cached = json.loads(row_file.read_text()) if row_file.exists() else {}
        if cached.get("key") != key:
            gpt, _, _, _ = load_checkpoint(run_dir, device="cpu" if device == "auto" else device)
            curve = noise_curve(gpt, vx, vy, sigmas=[0.0, sigma], draws=cfg.noise_draws, seed=cfg.seed)
            row = {**noise_row(lam, curve, sigma), **res.get("diagnostics", {})}
            save_json({"key": key, "row": row}, row_file)
    if world > 1:
        dist.barrier()
    rows = [json.loads((lambda_dir(out, lam) / "sweep_row.json").read_text())["row"] for lam in lambdas]
    table = {"config": cfg.to_dict(), "sigma": sigma, "rows": rows}
    if rank == 0:
        save_json(table, out / "sweep.json")
    return table
