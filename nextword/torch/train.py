"""Barrier (margin) training of §7: CE + λ_m · L_margin, with atomic checkpoints and exact resume.

``train(cfg, out_dir)`` trains a :class:`~nextword.torch.model.SmallGPT` together with an
:class:`~nextword.torch.prior.EmbeddingPrior` on the GPT's token embeddings, minimising

    L = CE + λ_m · mean_t[−log|det(I_d − Σ_t Wᵀ)|]          (§7.1; quadratic residual term dropped)

with AdamW, a cosine learning-rate schedule (a pure function of the step) and gradient clipping.
Both arms of a comparison share the GPT initialisation: the GPT is built right after
``torch.manual_seed(seed)`` and the prior from its own generator. With λ_m = 0 the prior's ``W`` is
frozen (it gets no gradient) but still reported by the diagnostics.

Files in ``out_dir``: ``ckpt.pt`` (written to a temporary file and renamed with ``os.replace``;
loadable with ``torch.load(..., weights_only=True)``) and ``results.json``. ``resume=True`` restarts
from ``ckpt.pt``: data order, position subsampling and the learning rate are functions of
``(seed, step)``, and the checkpoint holds model, prior, optimiser, RNG state and the running epoch
sums, so a resumed CPU run ends with exactly the same loss as an uninterrupted one.

Distributed: under ``torchrun`` (``WORLD_SIZE > 1``) the model is wrapped in
DistributedDataParallel (gloo on CPU, nccl on CUDA); each rank takes its slice of the same global
batch, so the update equals the single-process one up to floating-point summation order.
"""
from __future__ import annotations

import datetime as _dt
import json
import math
import os
import platform
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn as nn

from .data import CharData, epoch_batch, eval_windows, load_char_data, steps_per_epoch
from .model import SmallGPT, SmallGPTConfig, autocast_context, select_device
from .prior import EmbeddingPrior, margin_loss_tokens, sample_positions
from .robustness import LN2, evaluate_bpc, evaluate_diagnostics, noise_curve

__all__ = ["TrainConfig", "PRESETS", "preset", "train", "train_or_load", "load_checkpoint", "save_json",
           "lr_at", "BarrierLM", "dist_info", "build", "code_hash", "with_overrides"]

CKPT = "ckpt.pt"
RESULTS = "results.json"


@dataclass(frozen=True)
class TrainConfig:
    """Everything that defines a run (plain values, so it round-trips through JSON/checkpoints)."""

    data: str = "shakespeare"
    max_chars: int | None = None
    block_size: int = 256
    n_layer: int = 2
    n_head: int = 4
    d_model: int = 128
    mlp_ratio: int = 4
    dropout: float = 0.0
    lambda_margin: float = 0.05
    margin_method: str = "sylvester"
    margin_positions: int = 0            # k positions per sequence (0: all T−1 positions, exact)
    prior_init_std: float = 0.02
    batch_size: int = 64
    lr: float = 1e-3
    min_lr_ratio: float = 0.0
    weight_decay: float = 1e-4
    grad_clip: float = 1.0
    epochs: int = 20
    steps: int | None = None             # total optimiser steps (overrides epochs)
    eval_every: int | None = None        # steps between evaluations (default: one epoch)
    eval_windows: int | None = None      # validation windows per evaluation (None: all)
    checkpoint_every: int = 200
    seed: int = 0
    amp: bool = False
    noise_sigmas: tuple[float, ...] = field(default=tuple(round(0.05 * i, 2) for i in range(11)))
    noise_draws: int = 5

    def __post_init__(self) -> None:
        if self.lambda_margin < 0:
            raise ValueError(f"lambda_margin must be >= 0, got {self.lambda_margin}")
        if self.margin_method not in ("sylvester", "direct", "second_moment"):
            raise ValueError(f"margin_method must be sylvester|direct|second_moment, got {self.margin_method!r}")
        if not 0 <= self.margin_positions < self.block_size:
            raise ValueError(f"margin_positions must be in [0, block_size), got {self.margin_positions}")
        if self.steps is not None and self.steps < 1:
            raise ValueError(f"steps must be >= 1, got {self.steps}")

    def model_config(self, vocab_size: int) -> SmallGPTConfig:
        return SmallGPTConfig(vocab_size=vocab_size, block_size=self.block_size, n_layer=self.n_layer,
                              n_head=self.n_head, d_model=self.d_model, mlp_ratio=self.mlp_ratio,
                              dropout=self.dropout)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["noise_sigmas"] = list(self.noise_sigmas)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "TrainConfig":
        d = dict(d)
        d["noise_sigmas"] = tuple(d.get("noise_sigmas", cls.noise_sigmas))
        return cls(**d)


PRESETS: dict[str, dict] = {
    # §7.1 exactly (use with data="wikitext2" for the paper's corpus); a GPU job
    "paper": dict(block_size=256, n_layer=2, n_head=4, d_model=128, batch_size=64, epochs=20,
                  lr=1e-3, weight_decay=1e-4, grad_clip=1.0, lambda_margin=0.05),
    # a faithful miniature that trains in seconds on one CPU core (same objective and optimiser)
    # (the margin term on k=16 of the 63 positions per sequence: an unbiased subsample)
    "quick": dict(block_size=64, n_layer=2, n_head=4, d_model=64, batch_size=16, steps=200,
                  eval_every=40, eval_windows=48, max_chars=200_000, checkpoint_every=100,
                  lr=3e-3, noise_draws=3, margin_positions=16),
    # for tests: a few steps of a tiny model
    "tiny": dict(block_size=16, n_layer=1, n_head=2, d_model=16, batch_size=4, steps=6, eval_every=3,
                 eval_windows=8, max_chars=5_000, checkpoint_every=2, noise_draws=2,
                 noise_sigmas=(0.0, 0.25, 0.5)),
}


def preset(name: str, **overrides) -> TrainConfig:
    """``TrainConfig`` of a named preset (``paper`` | ``quick`` | ``tiny``) with ``overrides``."""
    if name not in PRESETS:
        raise ValueError(f"unknown config {name!r}; choose one of {sorted(PRESETS)}")
    return TrainConfig(**{**PRESETS[name], **overrides})


def lr_at(cfg: TrainConfig, step: int, total: int) -> float:
    """Cosine schedule from ``lr`` to ``min_lr_ratio · lr`` over ``total`` steps."""
    frac = min(step / max(total, 1), 1.0)
    return cfg.lr * (cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * frac)))


class BarrierLM(nn.Module):
    """GPT + EmbeddingPrior as one module (so DDP sees one forward): ``(x, y, positions) -> (ce, margin)``."""

    def __init__(self, gpt: SmallGPT, prior: EmbeddingPrior, method: str) -> None:
        super().__init__()
        self.gpt, self.prior, self.method = gpt, prior, method

    def forward(self, x, y, positions=None, *, with_margin: bool = True, amp: bool = False):
        tok = self.gpt.wte(x)                                        # (B, T, d)
        with autocast_context(x.device, amp):
            _, ce = self.gpt(x, y, tok_emb=tok)
        if not with_margin:
            return ce, ce.new_zeros(())
        margin = margin_loss_tokens(x, self.gpt.wte.weight.float(), self.prior.W.float(),
                                    positions=positions, method=self.method)
        return ce, margin


def dist_info() -> tuple[int, int, int]:
    """``(rank, world_size, local_rank)`` from the torchrun environment (``(0, 1, 0)`` otherwise)."""
    return (int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1)),
            int(os.environ.get("LOCAL_RANK", 0)))


def _atomic_torch_save(obj, path: Path) -> None:
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    torch.save(obj, tmp)
    os.replace(tmp, path)


def save_json(obj, path: Path) -> None:
    """Write JSON atomically (temporary file + ``os.replace``)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(json.dumps(obj, indent=1, sort_keys=False) + "\n")
    os.replace(tmp, path)


def build(cfg: TrainConfig, vocab_size: int, device: torch.device) -> tuple[SmallGPT, EmbeddingPrior]:
    """The GPT (seeded with ``cfg.seed``) and the prior (own generator), on ``device``."""
    torch.manual_seed(cfg.seed)
    gpt = SmallGPT(cfg.model_config(vocab_size))
    prior = EmbeddingPrior(cfg.d_model, init_std=cfg.prior_init_std,
                           generator=torch.Generator().manual_seed(cfg.seed + 7919))
    if cfg.lambda_margin == 0:
        prior.W.requires_grad_(False)
    return gpt.to(device), prior.to(device)


def load_checkpoint(path: str | Path, device: str | torch.device = "cpu"):
    """``(gpt, prior, cfg, ckpt)`` from a checkpoint written by :func:`train` (weights_only load)."""
    ckpt = torch.load(Path(path), map_location=device, weights_only=True)
    cfg = TrainConfig.from_dict(ckpt["config"])
    gpt, prior = build(cfg, ckpt["vocab_size"], torch.device(device))
    gpt.load_state_dict(ckpt["model"])
    prior.load_state_dict(ckpt["prior"])
    return gpt, prior, cfg, ckpt


def train(cfg: TrainConfig, out_dir: str | Path, *, device: str = "auto", resume: bool = False,
          max_steps_this_run: int | None = None, progress: bool = True, distributed: bool | None = None,
          data: CharData | None = None, robustness: bool = False) -> dict:
    """Train (or resume) one run; returns the results dictionary also written to ``results.json``.

    ``max_steps_this_run`` stops after that many steps (a checkpoint is written), e.g. to test
    ``resume``. ``robustness=True`` appends the §7.3 noise curve to the results.
    """
    rank, world, local_rank = dist_info()
    distributed = (world > 1) if distributed is None else distributed
    dev = select_device(device)
    if distributed:
        if dev.type == "cuda":
            dev = torch.device("cuda", local_rank)
            torch.cuda.set_device(dev)
        if not dist.is_initialized():
            dist.init_process_group(backend="nccl" if dev.type == "cuda" else "gloo")
    else:
        rank, world = 0, 1
    out = Path(out_dir)
    if rank == 0:
        out.mkdir(parents=True, exist_ok=True)
    data = data or load_char_data(cfg.data, max_chars=cfg.max_chars)
    spe = steps_per_epoch(data.train.numel(), cfg.block_size, cfg.batch_size)
    total = cfg.steps or cfg.epochs * spe
    eval_every = cfg.eval_every or spe
    gpt, prior = build(cfg, data.vocab.size, dev)
    lm = BarrierLM(gpt, prior, cfg.margin_method)
    params = [p for p in lm.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    state = {"step": 0, "ep_ce": 0.0, "ep_margin": 0.0, "ep_n": 0, "history": [], "last_loss": None}
    ckpt_path = out / CKPT
    if resume and ckpt_path.exists():
        ck = torch.load(ckpt_path, map_location=dev, weights_only=True)
        if TrainConfig.from_dict(ck["config"]) != cfg:
            raise ValueError("--resume: the checkpoint was written with a different configuration")
        gpt.load_state_dict(ck["model"])
        prior.load_state_dict(ck["prior"])
        opt.load_state_dict(ck["optimizer"])
        torch.set_rng_state(ck["rng"].cpu())
        state = {k: ck["state"][k] for k in state}
    model = lm
    if distributed:
        model = nn.parallel.DistributedDataParallel(lm, device_ids=[dev.index] if dev.type == "cuda" else None)
    vx, vy = eval_windows(data.val, block_size=cfg.block_size, max_windows=cfg.eval_windows,
                          rank=rank, world_size=world)

    def checkpoint() -> None:
        if rank == 0:
            _atomic_torch_save({"model": gpt.state_dict(), "prior": prior.state_dict(),
                                "optimizer": opt.state_dict(), "rng": torch.get_rng_state(),
                                "config": cfg.to_dict(), "vocab_size": data.vocab.size,
                                "state": dict(state)}, ckpt_path)
        if distributed:
            dist.barrier()

    use_margin = cfg.lambda_margin > 0
    stop = total if max_steps_this_run is None else min(total, state["step"] + max_steps_this_run)
    bar = None
    if progress and rank == 0:
        from tqdm import tqdm
        bar = tqdm(total=total, initial=state["step"], desc=f"train λ={cfg.lambda_margin:g}")
    model.train()
    while state["step"] < stop:
        step = state["step"]
        epoch, sie = divmod(step, spe)
        x, y = epoch_batch(data.train, block_size=cfg.block_size, batch_size=cfg.batch_size,
                           seed=cfg.seed, epoch=epoch, step_in_epoch=sie, rank=rank, world_size=world)
        x, y = x.to(dev), y.to(dev)
        positions = None
        if use_margin and cfg.margin_positions:
            g = torch.Generator().manual_seed(cfg.seed * 7_919 + step)
            positions = sample_positions(x.shape[0], cfg.block_size, cfg.margin_positions, g, device=dev)
        for group in opt.param_groups:
            group["lr"] = lr_at(cfg, step, total)
        ce, margin = model(x, y, positions, with_margin=use_margin, amp=cfg.amp)
        loss = ce + cfg.lambda_margin * margin
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if cfg.grad_clip:
            torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip)
        opt.step()
        stats = torch.tensor([float(ce.detach()), float(margin.detach()), float(loss.detach())],
                             dtype=torch.float64)
        if distributed:
            dist.all_reduce(stats)
            stats /= world
        state["ep_ce"] += float(stats[0])
        state["ep_margin"] += float(stats[1])
        state["ep_n"] += 1
        state["last_loss"] = float(stats[2])
        state["step"] = step + 1
        if bar is not None:
            bar.update(1)
            bar.set_postfix(ce=f"{float(stats[0]):.3f}", margin=f"{float(stats[1]):.3f}")
        if state["step"] % eval_every == 0 or state["step"] == total:
            val = evaluate_bpc(gpt, vx, vy, amp=cfg.amp, distributed=distributed)
            state["history"].append({
                "epoch": state["step"] / spe, "step": state["step"],
                "train_bpc": state["ep_ce"] / state["ep_n"] / LN2,
                "train_margin": state["ep_margin"] / state["ep_n"],
                "val_bpc": val, "lr": lr_at(cfg, step, total)})
            state["ep_ce"], state["ep_margin"], state["ep_n"] = 0.0, 0.0, 0
        if state["step"] % cfg.checkpoint_every == 0 or state["step"] == stop:
            checkpoint()
    if bar is not None:
        bar.close()
    results = {
        "config": cfg.to_dict(), "finished": state["step"] >= total, "steps": state["step"],
        "total_steps": total, "steps_per_epoch": spe, "world_size": world,
        "device": str(dev), "hardware": _hardware(dev), "torch": torch.__version__,
        "date": _dt.date.today().isoformat(), "data": {"name": data.name, "vocab_size": data.vocab.size,
        "train_chars": data.train.numel(), "val_chars": data.val.numel(), "val_unk_rate": data.unk_rate_val},
        "model_params": gpt.num_parameters(), "history": state["history"], "code": code_hash(),
        "final_train_loss": state["last_loss"],
    }
    if state["history"]:
        results["final_val_bpc"] = state["history"][-1]["val_bpc"]
        results["final_train_bpc"] = state["history"][-1]["train_bpc"]
    if results["finished"]:
        if rank == 0:
            results["diagnostics"] = evaluate_diagnostics(gpt, prior, vx[:64])
        if robustness:
            results["noise_curve"] = noise_curve(gpt, vx, vy, sigmas=cfg.noise_sigmas, draws=cfg.noise_draws,
                                                 seed=cfg.seed, amp=cfg.amp, distributed=distributed)
    if rank == 0:
        save_json(results, out / RESULTS)
    if distributed:
        dist.barrier()
    return results


def code_hash() -> str:
    """SHA-256 (first 16 hex digits) of the sources that determine a run's numbers.

    Stored in ``results.json``; :func:`train_or_load` reuses a cached run only if it matches, so a
    code change never serves stale results.
    """
    import hashlib
    here = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for f in (here / "model.py", here / "prior.py", here / "train.py", here / "data.py",
              here / "robustness.py", here.parent / "data" / "__init__.py"):
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


def _hardware(dev: torch.device) -> str:
    if dev.type == "cuda":
        return torch.cuda.get_device_name(dev)
    return f"{platform.processor() or platform.machine()} CPU, {torch.get_num_threads()} torch threads"


def with_overrides(cfg: TrainConfig, **kw) -> TrainConfig:
    """``dataclasses.replace`` that ignores ``None`` values (CLI convenience)."""
    return replace(cfg, **{k: v for k, v in kw.items() if v is not None})


def train_or_load(cfg: TrainConfig, out_dir: str | Path, **kwargs) -> dict:
    """Results of a finished run with this exact configuration in ``out_dir``, else :func:`train` it.

    Lets several notebooks (or a re-run) share one run: the cache key is the full configuration
    and the :func:`code_hash` stored in ``results.json``, plus the presence of the checkpoint. A
    cached run without the noise curve gets it added when ``robustness=True`` is asked for.
    """
    out = Path(out_dir)
    path = out / RESULTS
    if path.exists() and (out / CKPT).exists():
        res = json.loads(path.read_text())
        if (res.get("finished") and res.get("code") == code_hash()
                and TrainConfig.from_dict(res["config"]) == cfg):
            if kwargs.get("robustness") and "noise_curve" not in res:
                gpt, _, _, _ = load_checkpoint(out / CKPT)
                data = kwargs.get("data") or load_char_data(cfg.data, max_chars=cfg.max_chars)
                vx, vy = eval_windows(data.val, block_size=cfg.block_size, max_windows=cfg.eval_windows)
                res["noise_curve"] = noise_curve(gpt, vx, vy, sigmas=cfg.noise_sigmas,
                                                 draws=cfg.noise_draws, seed=cfg.seed)
                save_json(res, path)
            return res
    return train(cfg, out, **kwargs)
