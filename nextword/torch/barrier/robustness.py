"""Evaluation of a trained SmallGPT: bits per character, BPC under embedding noise, prior diagnostics.

- :func:`evaluate_bpc` — mean cross-entropy / ln 2 over evaluation windows (§7.1's metric);
- :func:`noise_curve` — §7.3 / Fig. 7.5: BPC with ``N(0, σ² I)`` added to the token embeddings,
  averaged over ``draws`` noise draws per σ, and the degradation ratio BPC(σ) / BPC(0). The same
  standard-normal draws are reused for every σ (common random numbers), so the curve is smooth in σ;
- :func:`evaluate_diagnostics` — §7.4 / Table 1: prior entropy, SNR, tr(Σ_t)/RMS(x)², margin.

All functions take the windows as tensors ``(n, T)`` and run under ``torch.no_grad``; when a
process group is initialised and ``distributed=True`` the sums are all-reduced, so each rank may
pass its own shard of the windows.
"""

from __future__ import annotations

import math

import torch
import torch.distributed as dist

from nextword.torch.models.gpt import SmallGPT
from nextword.torch.training.device import autocast_context
from nextword.torch.barrier.prior import EmbeddingPrior, prior_diagnostics

__all__ = ["evaluate_bpc", "noise_curve", "noise_row", "embedding_rms", "evaluate_diagnostics", "LN2"]

LN2 = math.log(2.0)


def _progress(iterable, enabled: bool, desc: str, total: int | None = None):
    if not enabled:
        return iterable
    from tqdm import tqdm

    return tqdm(iterable, desc=desc, total=total, leave=False)


@torch.no_grad()
def evaluate_bpc(
    model: SmallGPT,
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    noise_std: float = 0.0,
    generator: torch.Generator | None = None,
    batch_size: int = 32,
    amp: bool = False,
    distributed: bool = False,
    progress: bool = False,
    desc: str = "eval",
) -> float:
    """Bits per character of ``model`` on windows ``x``, ``y`` ``(n, T)`` (optionally with noise)."""
    if x.shape != y.shape or x.ndim != 2:
        raise ValueError(f"x and y must be (n, T) of equal shape, got {tuple(x.shape)} and {tuple(y.shape)}")
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    total = torch.zeros(2, dtype=torch.float64, device=device)  # [sum of CE (nats), count]
    starts = range(0, x.shape[0], batch_size)
    for i in _progress(starts, progress, desc, total=len(starts)):
        xb, yb = x[i : i + batch_size].to(device), y[i : i + batch_size].to(device)
        with autocast_context(device, amp):
            _, loss = model(xb, yb, noise_std=noise_std, generator=generator)
        total[0] += float(loss) * yb.numel()
        total[1] += yb.numel()
    if distributed and dist.is_available() and dist.is_initialized():
        dist.all_reduce(total)
    model.train(was_training)
    return float(total[0] / total[1]) / LN2


def noise_curve(
    model: SmallGPT,
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    sigmas,
    draws: int = 5,
    seed: int = 0,
    batch_size: int = 32,
    amp: bool = False,
    distributed: bool = False,
    progress: bool = False,
) -> dict:
    """§7.3: BPC at each σ in ``sigmas`` (mean and std over ``draws``) and BPC(σ)/BPC(0).

    Returns ``{"sigmas", "bpc_mean", "bpc_std", "degradation", "draws"}`` with plain lists.
    """
    sigmas = [float(s) for s in sigmas]
    if any(s < 0 for s in sigmas):
        raise ValueError(f"sigmas must be >= 0, got {sigmas}")
    if draws < 1:
        raise ValueError(f"draws must be >= 1, got {draws}")
    device = next(model.parameters()).device
    clean = evaluate_bpc(model, x, y, batch_size=batch_size, amp=amp, distributed=distributed)
    means, stds = [], []
    for s in _progress(sigmas, progress, "noise σ"):
        if s == 0.0:
            means.append(clean)
            stds.append(0.0)
            continue
        vals = []
        for k in range(draws):
            g = torch.Generator(device=device).manual_seed(int(seed) * 1000 + k)
            vals.append(
                evaluate_bpc(
                    model, x, y, noise_std=s, generator=g, batch_size=batch_size, amp=amp, distributed=distributed
                )
            )
        t = torch.tensor(vals, dtype=torch.float64)
        means.append(float(t.mean()))
        stds.append(float(t.std(unbiased=True)) if draws > 1 else 0.0)
    return {
        "sigmas": sigmas,
        "bpc_mean": means,
        "bpc_std": stds,
        "degradation": [m / clean for m in means],
        "draws": draws,
        "clean_bpc": clean,
    }


def noise_row(lam: float, curve: dict, sigma: float) -> dict:
    """One row of the §7.4 table from a :func:`noise_curve`: clean BPC, BPC and degradation at ``sigma``.

    ``{"lambda", "bpc", "bpc_sigma", "bpc_sigma_std", "degradation", "sigma"}``; the σ entries are
    ``None`` when ``curve`` was not measured at ``sigma``.
    """
    i = curve["sigmas"].index(sigma) if sigma in curve["sigmas"] else None
    at = (lambda key: curve[key][i]) if i is not None else (lambda key: None)
    return {
        "lambda": float(lam),
        "bpc": curve["bpc_mean"][0],
        "bpc_sigma": at("bpc_mean"),
        "bpc_sigma_std": at("bpc_std"),
        "degradation": at("degradation"),
        "sigma": sigma,
    }


def embedding_rms(model: SmallGPT) -> float:
    """RMS of the token embedding matrix, sqrt(mean(E²)) (the scale the relative-noise probe divides by)."""
    return float(model.wte.weight.detach().pow(2).mean().sqrt())


@torch.no_grad()
def evaluate_diagnostics(
    model: SmallGPT, prior: EmbeddingPrior, x: torch.Tensor, *, batch_size: int = 16
) -> dict[str, float]:
    """§7.4 diagnostics of the prior on windows ``x`` ``(n, T)``, averaged over batches."""
    device = next(model.parameters()).device
    acc: dict[str, list[float]] = {}
    for i in range(0, x.shape[0], batch_size):
        d = prior_diagnostics(x[i : i + batch_size].to(device), model.wte.weight, prior.W)
        for k, v in d.items():
            acc.setdefault(k, []).append(v)
    out = {k: sum(v) / len(v) for k, v in acc.items()}
    if "min_logabsdet" in acc:
        out["min_logabsdet"] = min(acc["min_logabsdet"])
    return out
