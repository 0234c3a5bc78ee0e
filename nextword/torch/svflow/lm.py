"""Liao §6 / App. C.2 on a trained causal character LM: training, the prefix-shuffling tables, a checkpoint.

:func:`train_svflow_lm` trains a pre-norm :class:`~nextword.torch.models.lm.TinyLM` (RMSNorm, RoPE) on tiny
Shakespeare in ``n_checkpoints`` stages and keeps each stage's weights rounded to float16 — the form
in which the final checkpoint is saved, so every number computed from a checkpoint is a number of
the saved model. :func:`shuffle_table_arrays` flattens a
:class:`~nextword.torch.svflow.probe.ShuffleTable` into named arrays; :func:`deep_and_full_tables`
gives the deep-layer aggregate (Table 1 of the paper) and the all-layer average (its Table 2).
:func:`save_checkpoint` / :func:`load_checkpoint` write and read a ``weights_only`` state dict.

The saved run (``nextword results run svflow_lm``) uses :data:`CPU_SVFLOW_LM`;
notebook 5.5 reads it.

>>> import tempfile, torch
>>> from nextword.torch.models.lm import LMConfig, TinyLM
>>> m = TinyLM(LMConfig(vocab_size=5, d_model=8, num_heads=2, num_layers=1, max_len=4, positional="rope",
...                     norm="rms"), seed=0)
>>> with tempfile.TemporaryDirectory() as d:
...     path = save_checkpoint(m, f"{d}/ckpt.pth")
...     m2 = load_checkpoint(path, m.config)
>>> bool(torch.equal(m2.tok_emb, m.tok_emb.half().float()))
True
"""

from __future__ import annotations

import copy
import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from nextword._validate import check_positive_int
from nextword.torch.models.lm import LMConfig, TinyLM
from nextword.torch.training.token_lm import evaluate_loss, train_lm

__all__ = [
    "SVFlowLMConfig",
    "CPU_SVFLOW_LM",
    "lm_config",
    "rounded_copy",
    "train_svflow_lm",
    "save_checkpoint",
    "load_checkpoint",
    "shuffle_table_arrays",
    "deep_and_full_tables",
    "TABLE_METRICS",
]

#: The four SVFlow metrics of Tables 1–2 (head-averaged, per layer).
TABLE_METRICS = ("neg_log_p_per_dim", "kl_q_p", "kl_q_u", "kl_p_u")


@dataclass(frozen=True)
class SVFlowLMConfig:
    """Model, training and evaluation sizes of the §6 run.

    Model: ``num_layers`` pre-norm blocks of width ``d_model`` with ``num_heads`` heads, RoPE,
    RMSNorm, context ``seq_len``. Training: ``n_checkpoints`` stages of ``steps_per_checkpoint`` AdamW
    steps at ``lr`` on ``batch`` random windows. Evaluation: ``n_eval_seqs`` non-overlapping held-out
    windows of ``seq_len + 1`` characters, shuffle rates ``ps``; validation loss on the first
    ``val_chars`` held-out characters.
    """

    d_model: int = 64
    num_layers: int = 4
    num_heads: int = 4
    seq_len: int = 64
    batch: int = 32
    lr: float = 3e-3
    steps_per_checkpoint: int = 250
    n_checkpoints: int = 3
    n_eval_seqs: int = 48
    ps: tuple[float, ...] = (0.2, 0.4, 0.6, 0.8, 0.95)
    val_chars: int = 20_000

    def __post_init__(self) -> None:
        for name in (
            "d_model",
            "num_layers",
            "num_heads",
            "seq_len",
            "batch",
            "steps_per_checkpoint",
            "n_checkpoints",
            "n_eval_seqs",
            "val_chars",
        ):
            check_positive_int(getattr(self, name), f"{type(self).__name__}.{name}")
        if not all(0 < p < 1 for p in self.ps):
            raise ValueError(f"ps must lie in (0, 1), got {self.ps}")

    @property
    def deep(self) -> int:
        """The deepest third of the layers (at least one), as in App. C.2.3."""
        return max(1, self.num_layers // 3)


#: Sized for the project's busy, shared 2-core CPU: 750 steps of a 4-layer, width-64 model on 64-character
#: windows (about 0.3 CPU-seconds per step; a fraction of a core was available per engineer).
CPU_SVFLOW_LM = SVFlowLMConfig()


def lm_config(cfg: SVFlowLMConfig, vocab_size: int) -> LMConfig:
    """The :class:`LMConfig` of the §6 model."""
    return LMConfig(
        vocab_size=vocab_size,
        d_model=cfg.d_model,
        num_heads=cfg.num_heads,
        num_layers=cfg.num_layers,
        max_len=cfg.seq_len,
        positional="rope",
        norm="rms",
        pre_norm=True,
    )


def rounded_copy(model: TinyLM) -> TinyLM:
    """A copy of ``model`` whose parameters are rounded to float16 (and held as float32)."""
    out = copy.deepcopy(model)
    with torch.no_grad():
        for p in out.parameters():
            p.copy_(p.half().float())
    return out.eval()


def train_svflow_lm(
    cfg: SVFlowLMConfig, train_ids: np.ndarray, val_ids: np.ndarray, vocab_size: int, *, seed: int = 0
) -> tuple[list[TinyLM], list[float], list[float]]:
    """Train in ``cfg.n_checkpoints`` stages; return the float16-rounded checkpoints, every step's training
    loss (nats) and each checkpoint's validation loss (nats/char on ``cfg.val_chars`` held-out chars)."""
    train_ids, val_ids = np.asarray(train_ids), np.asarray(val_ids)
    if train_ids.ndim != 1 or val_ids.ndim != 1:
        raise ValueError(f"train_ids and val_ids must be 1-D token streams, got {train_ids.shape}, {val_ids.shape}")
    model = TinyLM(lm_config(cfg, vocab_size), seed=seed)
    rng = np.random.default_rng(seed)
    checkpoints, losses, val_losses = [], [], []
    for _ in range(cfg.n_checkpoints):
        losses += train_lm(
            model,
            train_ids,
            steps=cfg.steps_per_checkpoint,
            batch_size=cfg.batch,
            block_size=cfg.seq_len,
            lr=cfg.lr,
            rng=rng,
            progress=False,
        )
        ckpt = rounded_copy(model)
        checkpoints.append(ckpt)
        val_losses.append(evaluate_loss(ckpt, val_ids[: cfg.val_chars], cfg.seq_len))
    return checkpoints, losses, val_losses


def save_checkpoint(model: TinyLM, path: str | os.PathLike) -> Path:
    """Write ``model``'s parameters as a float16 ``weights_only`` state dict (atomic)."""
    path = Path(path)
    state = {k: v.detach().half().contiguous() for k, v in model.state_dict().items()}
    tmp = path.with_name(path.name + ".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)
    return path


def load_checkpoint(path: str | os.PathLike, config: LMConfig) -> TinyLM:
    """A float32 :class:`TinyLM` with the weights of ``path`` (loaded with ``weights_only=True``)."""
    if not isinstance(config, LMConfig):
        raise TypeError(f"config must be an LMConfig, got {type(config).__name__}")
    state = torch.load(path, map_location="cpu", weights_only=True)
    model = TinyLM(config, seed=0)
    model.load_state_dict({k: v.float() for k, v in state.items()})
    return model.eval()


def shuffle_table_arrays(tab: Any, prefix: str = "") -> dict[str, np.ndarray]:
    """Every array of a ``ShuffleTable`` under a flat name (``base.kl_q_p``, ``logppl_base``, …)."""
    out: dict[str, np.ndarray] = {}
    for f in dataclasses.fields(tab):
        value = getattr(tab, f.name)
        if isinstance(value, dict):
            out.update({f"{prefix}{f.name}.{k}": np.asarray(v, dtype=float) for k, v in value.items()})
        else:
            out[f"{prefix}{f.name}"] = np.asarray(value, dtype=float)
    return out


def deep_and_full_tables(arrays: dict[str, np.ndarray], deep: int, prefix: str = "") -> dict[str, Any]:
    """Table 1 (mean over the deepest ``deep`` layers) and Table 2 (mean over all layers) as nested lists.

    ``arrays`` as from :func:`shuffle_table_arrays`; returns ``{"table1": {metric: {"base": [4 bins],
    "delta": [...]}}, "table2": {...}, "ece_base", "ece_delta", "logppl_base", "logppl_delta", "count"}``.
    """
    out: dict[str, Any] = {"table1": {}, "table2": {}}
    for k in TABLE_METRICS:
        base, pert = arrays[f"{prefix}base.{k}"], arrays[f"{prefix}pert.{k}"]  # (L, 4)
        for name, sl in (("table1", slice(base.shape[0] - deep, None)), ("table2", slice(None))):
            out[name][k] = {"base": base[sl].mean(0).tolist(), "delta": (pert[sl] - base[sl]).mean(0).tolist()}
    for k in ("ece", "logppl"):
        b, p = arrays[f"{prefix}{k}_base"], arrays[f"{prefix}{k}_pert"]
        out[f"{k}_base"], out[f"{k}_delta"] = b.tolist(), (p - b).tolist()
    out["count"] = arrays[f"{prefix}count"].astype(int).tolist()
    return out
