"""The §7 barrier experiments of the registry, at two tiers: the CPU tier here, the GPU tier on a CUDA GPU.

    nextword results run barrier_ce           # one experiment (and what it depends on)
    nextword results run --train-only NAME    # only the resumable training part

Each experiment trains (resumably, in ``runs/<name>/``, checkpointed, so an interruption costs at most
one checkpoint interval) and then saves ``book/results/<name>/``: the numbers, ``curves.npz`` and, where a
notebook analyses the trained model, a weights-only ``model.pt`` of at most 2 MB. The tier is a parameter
of the same experiments (:func:`arm_config`):

- **cpu** — §7.1's model and AdamW on tiny Shakespeare with a schedule a shared 2-core CPU affords
  (the ``cpu`` preset: lr 3e-3, the margin on k = 16 sampled positions): ``barrier_ce``,
  ``barrier_margin``, their seed-1 twins, the noise curve ``barrier_robustness`` and the λ path
  ``barrier_sweep`` (a smaller, shorter schedule);
- **gpu** — §7.1 itself (the ``paper`` preset: lr 1e-3, the exact margin on all T − 1 positions) on tiny
  Shakespeare, trained on a CUDA GPU (``nextword gpu-check`` runs them side by side on one GPU):
  ``gpu_barrier_ce``, ``gpu_barrier_margin``, seed 0 trained a second time (``*_rerun``: GPU training
  is not bitwise reproducible), seed 1, their noise curves, and Table 1's seven λ at the ``cpu`` preset's
  and at the ``paper`` preset's schedule.

Wall time is the sum over the training sessions the registry records in ``runs/<name>/wall.json``: on a
shared machine it measures the machine's load as much as the work, so the saved result also holds the
steps per second of the run. To add an experiment, add it to :func:`experiments`; the registry lists it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nextword import provenance
from nextword.torch.barrier.config import PAPER_LAMBDA
from nextword.torch.barrier.config import TABLE1_SIGMA as ROBUSTNESS_SIGMA
from nextword.torch.barrier.sweep import PAPER_LAMBDAS as TABLE1_LAMBDAS
from nextword.torch.runs.experiment import Experiment, Saved, wall_time

__all__ = [
    "experiments",
    "arm_config",
    "sweep_config",
    "SWEEP_LAMBDAS",
    "TABLE1_LAMBDAS",
    "PAPER_LAMBDA",
    "ROBUSTNESS_SIGMA",
    "FINGERPRINT_STEPS",
    "GPU_TIER_ENV",
]

#: λ values of the §7.4 path at the CPU tier (Table 1 of the paper, the GPU tier's path: :data:`TABLE1_LAMBDAS`).
SWEEP_LAMBDAS = (0.0, 0.01, 0.05, 0.1, 0.2)
#: Validation windows of the §7.3 noise probe of a trained pair.
ROBUSTNESS_WINDOWS = 128
#: Optimiser steps a fingerprint replays (:mod:`nextword.torch.runs.fingerprint`).
FINGERPRINT_STEPS = 3
#: ``tiny`` in this variable shrinks the GPU tier to the ``tiny`` preset on the CPU: ``gpu-check --dry-run``.
GPU_TIER_ENV = "NEXTWORD_GPU_TIER"


def _dry_run() -> bool:
    return os.environ.get(GPU_TIER_ENV) == "tiny"


# --------------------------------------------------------------------------- configurations
def arm_config(tier: str, lam: float, seed: int = 0):
    """The :class:`~nextword.torch.barrier.config.TrainConfig` of one arm: ``tier`` ``"cpu"`` or ``"gpu"``."""
    from nextword.torch.barrier.config import preset

    if tier == "cpu":
        return preset("cpu", lambda_margin=lam, seed=seed)
    if tier != "gpu":
        raise ValueError(f"tier must be 'cpu' or 'gpu', got {tier!r}")
    if _dry_run():
        return preset("tiny", data="shakespeare", lambda_margin=lam, seed=seed)
    return preset("paper", data="shakespeare", lambda_margin=lam, seed=seed, margin_positions=0)


def sweep_config(tier: str, schedule: str = "cpu", lam: float = PAPER_LAMBDA, seed: int = 0):
    """One λ of a §7.4 path. CPU tier: a smaller, shorter schedule than the two arms (five times the arms'
    cost does not fit the shared machine): d_model=64, T=128, batch 32, 250 steps, one evaluation at the
    end. GPU tier: the ``cpu`` preset's schedule (beside the CPU pair) or the ``paper`` preset's (exact)."""
    from nextword.torch.barrier.config import preset
    from nextword.torch.models.gpt import SmallGPTConfig

    if tier == "cpu":  # the arms' lr and k = 16 margin positions, a smaller model and a shorter schedule
        small = SmallGPTConfig(max_len=128, num_layers=2, num_heads=4, d_model=64)
        schedule = {"batch_size": 32, "steps": 250, "eval_every": 250, "checkpoint_every": 50}
        return preset("cpu", model=small, **schedule, lambda_margin=lam, seed=seed)
    if _dry_run():
        return preset("tiny", data="shakespeare", lambda_margin=lam, seed=seed)
    exact = {"margin_positions": 0} if schedule == "paper" else {}
    return preset(schedule, data="shakespeare", lambda_margin=lam, seed=seed, **exact)


def _lambdas(tier: str) -> tuple[float, ...]:
    if tier == "cpu":
        return SWEEP_LAMBDAS
    return (0.0, PAPER_LAMBDA) if _dry_run() else TABLE1_LAMBDAS


# --------------------------------------------------------------------------- the two arms
def _device(tier: str) -> str:
    """The device of a tier's training; the GPU tier refuses to run without CUDA (except in a dry run)."""
    if tier == "cpu" or _dry_run():
        return "cpu"
    import torch

    if not torch.cuda.is_available():
        raise RuntimeError("the GPU tier needs a CUDA GPU (torch.cuda.is_available() is False here)")
    return "cuda"


def _train_one(cfg, workdir: Path, tier: str) -> dict[str, Any]:
    """Train (or resume, or reuse) one run; the GPU tier adds its noise curve and embedding RMS."""
    from nextword.torch.barrier.train import train_or_load

    device = _device(tier)
    res = train_or_load(cfg, workdir, device=device, resume=True, progress=False)
    if tier == "gpu" and "noise_absolute" not in res:
        from nextword.torch.barrier.robustness import embedding_rms, noise_curve
        from nextword.torch.barrier.train import load_checkpoint
        from nextword.torch.training.checkpoint import RESULTS, save_json
        from nextword.torch.training.data import eval_windows, load_char_data

        gpt = load_checkpoint(workdir, device=device)[0].eval()
        data = load_char_data(cfg.data, max_chars=cfg.max_chars)
        vx, vy = eval_windows(data.val, block_size=cfg.block_size, max_windows=cfg.eval_windows)
        res["noise_absolute"] = noise_curve(gpt, vx, vy, sigmas=cfg.noise_sigmas, draws=cfg.noise_draws, seed=cfg.seed)
        res["embedding_rms"] = embedding_rms(gpt)
        save_json(res, workdir / RESULTS)
    return res


def _train_arm(tier: str, lam: float, seed: int = 0) -> Callable[[Path], None]:
    def run(workdir: Path) -> None:
        _train_one(arm_config(tier, lam, seed), workdir, tier)

    return run


def _finished(workdir: Path) -> dict[str, Any]:
    res = json.loads((workdir / "results.json").read_text())
    if not res.get("finished"):
        raise RuntimeError(f"{workdir} is not finished ({res.get('steps')}/{res.get('total_steps')} steps)")
    return res


def _arm_numbers(res: dict[str, Any], workdir: Path) -> dict[str, Any]:
    """The numbers of a finished arm (both tiers; the GPU tier adds its noise curve and the GPU's name)."""
    keys = ("final_val_bpc", "final_train_bpc", "final_train_loss", "steps", "total_steps", "steps_per_epoch")
    data = {k: res[k] for k in (*keys, "data", "model_params", "diagnostics", "history") if k in res}
    wall = wall_time(workdir)
    data["steps_per_second"] = res["steps"] / wall if wall == wall and wall > 0 else None
    if "noise_absolute" in res:
        from nextword.torch.training.device import gpu_info

        data.update(embedding_rms=res["embedding_rms"], noise_absolute=res["noise_absolute"], device=res["device"])
        data["gpu"] = gpu_info()
    return data


def _save_arm(workdir: Path) -> Saved:
    from nextword.torch.training.checkpoint import export_weights

    res = _finished(workdir)
    curves = {k: [h[k] for h in res["history"]] for k in ("step", "epoch", "train_bpc", "val_bpc", "train_margin")}
    return Saved(_arm_numbers(res, workdir), curves, {"model.pt": export_weights(workdir)})


def _save_arm_numbers(workdir: Path) -> Saved:
    """:func:`_save_arm` without the weights (a second seed's numbers; the notebooks analyse seed 0's model)."""
    saved = _save_arm(workdir)
    return Saved(saved.data, saved.curves)


# --------------------------------------------------------------------------- §7.3: the noise probe
def _robustness_config(tier: str) -> dict[str, Any]:
    ce, margin = arm_config(tier, 0.0), arm_config(tier, PAPER_LAMBDA)
    if tier == "gpu":
        return {"arms": [ce.to_dict(), margin.to_dict()]}
    return {
        "arms": {"barrier_ce": ce.to_dict(), "barrier_margin": margin.to_dict()},
        "sigmas": list(margin.noise_sigmas),
        "draws": margin.noise_draws,
        "seed": margin.seed,
        "eval_windows": ROBUSTNESS_WINDOWS,
    }


def _train_robustness(workdir: Path) -> None:
    """Fig. 7.5's probe on the trained CPU pair, at absolute σ and at σ rescaled to each arm's embedding RMS.

    ``relative`` uses σ · RMS(E_arm) / RMS(E_ce): equal noise relative to the embedding scale, equal to
    the absolute grid for the CE arm (a penalty that grows the embeddings otherwise looks robust).
    """

    def run() -> None:
        from nextword.torch.barrier.robustness import embedding_rms, noise_curve
        from nextword.torch.barrier.train import load_checkpoint
        from nextword.torch.training.checkpoint import save_json
        from nextword.torch.training.data import eval_windows, load_char_data

        cfg = _robustness_config("cpu")
        # the arms' saved weights (book/results/<arm>/model.pt, what the fingerprint hashes), not their
        # training folders: a fresh clone has the former only
        saved = provenance.results_root()
        models = {arm: load_checkpoint(saved / arm / "model.pt") for arm in ("barrier_ce", "barrier_margin")}
        rms = {arm: embedding_rms(m[0]) for arm, m in models.items()}
        out: dict[str, Any] = {"finished": True, "embedding_rms": rms, "absolute": {}, "relative": {}}
        for arm, (gpt, _, tc, _) in models.items():
            data = load_char_data(tc.data, max_chars=tc.max_chars)
            vx, vy = eval_windows(data.val, block_size=tc.block_size, max_windows=cfg["eval_windows"])
            out["absolute"][arm] = noise_curve(gpt, vx, vy, sigmas=cfg["sigmas"], draws=cfg["draws"], seed=cfg["seed"])
            scale = rms[arm] / rms["barrier_ce"]
            out["relative"][arm] = (
                out["absolute"][arm]
                if arm == "barrier_ce"  # the same σ for the CE arm
                else noise_curve(
                    gpt, vx, vy, sigmas=[s * scale for s in cfg["sigmas"]], draws=cfg["draws"], seed=cfg["seed"]
                )
            )
        save_json(out, workdir / "results.json")

    if not (workdir / "results.json").exists():
        run()


def _train_gpu_robustness(workdir: Path) -> None:
    """The GPU pair's probe: each arm's absolute curve (all validation windows, from its training run) and
    the margin arm at σ rescaled to its embedding RMS on 128 windows (what ``nextword gpu-check`` saved)."""

    def run() -> None:
        from nextword.torch.barrier.robustness import noise_curve
        from nextword.torch.barrier.train import load_checkpoint
        from nextword.torch.training.checkpoint import save_json
        from nextword.torch.training.data import eval_windows, load_char_data

        pair = {arm: _finished(workdir.parent / f"gpu_barrier_{arm}") for arm in ("ce", "margin")}
        gpt, _, cfg, _ = load_checkpoint(workdir.parent / "gpu_barrier_margin", device=_device("gpu"))
        data = load_char_data(cfg.data, max_chars=cfg.max_chars)
        vx, vy = eval_windows(data.val, block_size=cfg.block_size, max_windows=ROBUSTNESS_WINDOWS)
        scale = pair["margin"]["embedding_rms"] / pair["ce"]["embedding_rms"]
        sigmas = [s * scale for s in cfg.noise_sigmas]
        rel = noise_curve(gpt.eval(), vx, vy, sigmas=sigmas, draws=cfg.noise_draws, seed=cfg.seed)
        out = {
            "finished": True,
            "embedding_rms": {a: pair[a]["embedding_rms"] for a in pair},
            "absolute": {f"gpu_barrier_{a}": pair[a]["noise_absolute"] for a in pair},
            "relative": {"gpu_barrier_ce": pair["ce"]["noise_absolute"], "gpu_barrier_margin": rel},
        }
        save_json(out, workdir / "results.json")

    if not (workdir / "results.json").exists():
        run()


def _save_robustness(workdir: Path) -> Saved:
    res = json.loads((workdir / "results.json").read_text())
    data = {k: res[k] for k in ("embedding_rms", "absolute", "relative")}
    curves = {"sigmas": next(iter(res["absolute"].values()))["sigmas"]}
    for kind in ("absolute", "relative"):
        for arm, c in res[kind].items():
            curves[f"{kind}_{arm}_bpc_mean"] = c["bpc_mean"]
            curves[f"{kind}_{arm}_degradation"] = c["degradation"]
    return Saved(data, curves)


def _save_gpu_robustness(workdir: Path) -> Saved:
    from nextword.torch.training.device import gpu_info

    res = json.loads((workdir / "results.json").read_text())
    return Saved({**{k: res[k] for k in ("embedding_rms", "absolute", "relative")}, "gpu": gpu_info()})


# --------------------------------------------------------------------------- §7.4: the λ path
def _sweep_configs(tier: str, schedule: str, seed: int) -> list:
    return [sweep_config(tier, schedule, lam, seed) for lam in _lambdas(tier)]


def _lambda_dir(workdir: Path, lam: float) -> Path:
    return workdir / f"lambda_{lam:g}"


def _train_sweep(tier: str, schedule: str = "cpu", seed: int = 0) -> Callable[[Path], None]:
    def run(workdir: Path) -> None:
        if tier == "cpu":
            from nextword.torch.barrier.sweep import run_sweep

            cfg = sweep_config("cpu")
            run_sweep(cfg, SWEEP_LAMBDAS, workdir, sigma=ROBUSTNESS_SIGMA, device="cpu", progress=False)
            return
        for cfg in _sweep_configs(tier, schedule, seed):
            _train_one(cfg, _lambda_dir(workdir, cfg.lambda_margin), tier)

    return run


def _save_sweep(workdir: Path) -> Saved:
    """The CPU tier's sweep table, plus each λ's degradation at σ = 0.3 rescaled to its embedding RMS."""
    from nextword.torch.barrier.robustness import noise_curve
    from nextword.torch.barrier.sweep import lambda_dir
    from nextword.torch.barrier.train import load_checkpoint
    from nextword.torch.training.data import eval_windows, load_char_data

    table = json.loads((workdir / "sweep.json").read_text())
    rows, sigma = table["rows"], table["sigma"]
    cfg = sweep_config("cpu")
    data = load_char_data(cfg.data, max_chars=cfg.max_chars)
    vx, vy = eval_windows(data.val, block_size=cfg.block_size, max_windows=cfg.eval_windows)
    rms0 = rows[0]["embedding_rms"]
    for r in rows:
        gpt = load_checkpoint(lambda_dir(workdir, r["lambda"]))[0]
        r["relative_sigma"] = sigma * r["embedding_rms"] / rms0
        r["relative_degradation"] = noise_curve(
            gpt, vx, vy, sigmas=[0.0, r["relative_sigma"]], draws=cfg.noise_draws, seed=cfg.seed
        )["degradation"][1]
    histories = {
        f"{r['lambda']:g}": json.loads((lambda_dir(workdir, r["lambda"]) / "results.json").read_text())["history"]
        for r in rows
    }
    keys = (
        "lambda",
        "bpc",
        "bpc_sigma",
        "degradation",
        "relative_degradation",
        "entropy",
        "snr",
        "normalised_var",
        "trace_sigma_A",
        "margin",
        "embedding_rms",
    )
    curves = {k: [r.get(k, float("nan")) for r in rows] for k in keys}
    return Saved({"sigma": sigma, "rows": rows, "histories": histories}, curves)


def _save_gpu_sweep(workdir: Path) -> Saved:
    """The GPU tier's path: one row per λ (clean BPC, BPC and degradation at σ = 0.3, diagnostics)."""
    from nextword.torch.barrier.robustness import noise_row
    from nextword.torch.training.device import gpu_info

    rows, histories = [], {}
    for sub in sorted(workdir.glob("lambda_*"), key=lambda p: float(p.name.split("_")[1])):
        res = _finished(sub)
        lam = res["config"]["lambda_margin"]
        rows.append(
            {
                **noise_row(lam, res["noise_absolute"], ROBUSTNESS_SIGMA),
                "final_val_bpc": res["final_val_bpc"],
                "embedding_rms": res["embedding_rms"],
                **res.get("diagnostics", {}),
            }
        )
        histories[f"{lam:g}"] = res["history"]
    data = {
        "sigma": ROBUSTNESS_SIGMA,
        "rows": rows,
        "histories": histories,
        "gpu": gpu_info(),
        "lambdas_asked": [r["lambda"] for r in rows],
    }
    return Saved(data)


# --------------------------------------------------------------------------- the table
_ARM_ENTRY = "nextword.torch.runs.barrier_runs:arm_config,_train_arm,_save_arm,_save_arm_numbers"
_ROBUSTNESS_ENTRY = "nextword.torch.runs.barrier_runs:_robustness_config,_train_robustness,_save_robustness"
_GPU_ROBUSTNESS_ENTRY = "nextword.torch.runs.barrier_runs:_robustness_config,_train_gpu_robustness,_save_gpu_robustness"
_SWEEP_ENTRY = "nextword.torch.runs.barrier_runs:sweep_config,_train_sweep,_save_sweep,_save_gpu_sweep"


def _arm(tier: str, name: str, what: str, lam: float, seed: int, save, reader: str) -> Experiment:
    return Experiment(
        name,
        what,
        reader,
        lambda: arm_config(tier, lam, seed).to_dict(),
        (_ARM_ENTRY,),
        train=_train_arm(tier, lam, seed),
        save=save,
        seeds=(seed,),
        device="cpu" if tier == "cpu" else "cuda",
        fingerprint=("barrier_train", {"config": arm_config(tier, lam, seed).to_dict(), "steps": FINGERPRINT_STEPS}),
    )


def experiments() -> list[Experiment]:
    """Every §7 experiment of the registry, CPU tier first (each after what it depends on)."""
    p4 = "book/part4_margins/"
    out = []
    for name, lam, seed, save, what in (
        ("barrier_ce", 0.0, 0, _save_arm, "§7.2 / Fig. 7.4: the cross-entropy arm (λ_m = 0), CPU tier"),
        ("barrier_margin", PAPER_LAMBDA, 0, _save_arm, "§7.2 / Fig. 7.4: the margin arm (λ_m = 0.05), CPU tier"),
        ("barrier_ce_seed1", 0.0, 1, _save_arm_numbers, "§7.2: the cross-entropy arm again, seed 1, CPU tier"),
        ("barrier_margin_seed1", PAPER_LAMBDA, 1, _save_arm_numbers, "§7.2: the margin arm again, seed 1, CPU tier"),
    ):
        out.append(_arm("cpu", name, what, lam, seed, save, p4 + "barrier_training.py"))
    robustness_fp = {
        "models": ["barrier_ce", "barrier_margin"],
        "sigmas": [0.0, ROBUSTNESS_SIGMA],
        "windows": 4,
    }
    out.append(
        Experiment(
            "barrier_robustness",
            "§7.3 / Fig. 7.5: BPC under embedding noise of the trained pair, CPU tier",
            p4 + "robustness_to_noise.py",
            lambda: _robustness_config("cpu"),
            (_ROBUSTNESS_ENTRY,),
            train=_train_robustness,
            save=_save_robustness,
            depends=("barrier_ce", "barrier_margin"),
            fingerprint=("barrier_noise", robustness_fp),
        )
    )
    out.append(
        Experiment(
            "barrier_sweep",
            "§7.4 / Table 1 / Fig. 7.6: the λ path (smaller, shorter schedule), CPU tier",
            p4 + "regularisation_path.py",
            lambda: {**sweep_config("cpu").to_dict(), "lambdas": list(SWEEP_LAMBDAS), "sigma": ROBUSTNESS_SIGMA},
            (_SWEEP_ENTRY,),
            train=_train_sweep("cpu"),
            save=_save_sweep,
            fingerprint=(
                "barrier_sweep",
                {
                    "configs": [sweep_config("cpu", lam=lam).to_dict() for lam in SWEEP_LAMBDAS],
                    "steps": FINGERPRINT_STEPS,
                    "sigma": ROBUSTNESS_SIGMA,
                },
            ),
        )
    )
    gpu = "§7.1 on a GPU (paper preset: lr 1e-3, exact margin)"
    for name, lam, seed, save, what in (
        ("gpu_barrier_ce", 0.0, 0, _save_arm, f"§7.2: the cross-entropy arm, {gpu}"),
        ("gpu_barrier_margin", PAPER_LAMBDA, 0, _save_arm, f"§7.2: the margin arm, {gpu}"),
        ("gpu_barrier_ce_rerun", 0.0, 0, _save_arm_numbers, "gpu_barrier_ce trained a second time (not bitwise)"),
        ("gpu_barrier_margin_rerun", PAPER_LAMBDA, 0, _save_arm_numbers, "gpu_barrier_margin trained again"),
        ("gpu_barrier_ce_seed1", 0.0, 1, _save_arm_numbers, f"§7.2: the cross-entropy arm, seed 1, {gpu}"),
        ("gpu_barrier_margin_seed1", PAPER_LAMBDA, 1, _save_arm_numbers, f"§7.2: the margin arm, seed 1, {gpu}"),
    ):
        out.append(_arm("gpu", name, what, lam, seed, save, p4 + "barrier_training.py"))
    out.append(
        Experiment(
            "gpu_barrier_robustness",
            f"§7.3 / Fig. 7.5: BPC under embedding noise of the pair, {gpu}",
            p4 + "robustness_to_noise.py",
            lambda: _robustness_config("gpu"),
            (_GPU_ROBUSTNESS_ENTRY,),
            train=_train_gpu_robustness,
            save=_save_gpu_robustness,
            depends=("gpu_barrier_ce", "gpu_barrier_margin"),
            device="cuda",
            fingerprint=("barrier_noise", {**robustness_fp, "models": ["gpu_barrier_ce", "gpu_barrier_margin"]}),
        )
    )
    for name, schedule, seed in (
        ("gpu_barrier_sweep", "cpu", 0),
        ("gpu_barrier_sweep_paper", "paper", 0),
        ("gpu_barrier_sweep_paper_seed1", "paper", 1),
    ):
        configs = [c.to_dict() for c in _sweep_configs("gpu", schedule, seed)]
        out.append(
            Experiment(
                name,
                f"§7.4 / Table 1: the seven λ on a GPU, the {schedule} preset's schedule, seed {seed}",
                p4 + "regularisation_path.py",
                lambda configs=configs: {"runs": configs},
                (_SWEEP_ENTRY,),
                train=_train_sweep("gpu", schedule, seed),
                save=_save_gpu_sweep,
                seeds=(seed,),
                device="cuda",
                fingerprint=(
                    "barrier_sweep",
                    {"configs": configs, "steps": FINGERPRINT_STEPS, "sigma": ROBUSTNESS_SIGMA},
                ),
            )
        )
    return out
