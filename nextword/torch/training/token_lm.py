"""Next-token training of a Chapter 6 :class:`~nextword.torch.models.lm.TinyLM` on the one loop (:func:`~nextword.torch.training.engine.fit`).

:func:`train_tokens` is what :func:`nextword.torch.models.lm.train_lm` (the name the pages call) runs:
AdamW at a constant learning rate on the mean next-token cross-entropy, random windows of a token
stream or random rows of a set of sequences (with an optional loss mask), gradient clipping, one torch
thread by default. Given ``out_dir`` it checkpoints every ``checkpoint_every`` steps (model, optimiser,
the sampler's random state and the losses so far; :mod:`~nextword.torch.training.checkpoint`'s atomic
writes and fallback) and ``resume=True`` continues from there: a resumed run returns exactly the losses
of an uninterrupted one.

>>> import numpy as np, tempfile
>>> from nextword.torch.models.lm import LMConfig, TinyLM
>>> ids = np.tile(np.arange(5), 40)
>>> cfg = LMConfig(vocab_size=5, d_model=8, num_heads=2, num_layers=1, max_len=16)
>>> whole = train_tokens(TinyLM(cfg, seed=0), ids, steps=6, batch_size=4, block_size=8, rng=np.random.default_rng(0))
>>> with tempfile.TemporaryDirectory() as tmp:
...     model = TinyLM(cfg, seed=0)
...     first = train_tokens(model, ids, steps=6, batch_size=4, block_size=8, rng=np.random.default_rng(0),
...                          out_dir=tmp, stop_after=4)
...     rest = train_tokens(TinyLM(cfg, seed=0), ids, steps=6, batch_size=4, block_size=8,
...                         rng=np.random.default_rng(0), out_dir=tmp, resume=True)
>>> len(first), rest == whole
(4, True)
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from nextword.perturbation import nudge_module_
from nextword.torch.models.lm import TinyLM, check_block_size, token_batch, token_ids, torch_threads
from nextword.torch.training.checkpoint import CKPT, PREV_CKPT, CheckpointError, read_checkpoint, save_checkpoint
from nextword.torch.training.engine import fit, optimiser_step

__all__ = ["train_tokens"]


def _loss(logits: torch.Tensor, targets: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    nll = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), reduction="none")
    if mask is None:
        return nll.mean()
    m = mask.reshape(-1).to(nll.dtype)
    return (nll * m).sum() / m.sum().clamp_min(1.0)


def train_tokens(
    model: TinyLM,
    data: object,
    *,
    steps: int,
    batch_size: int,
    rng: np.random.Generator,
    block_size: int | None = None,
    lr: float = 3e-3,
    loss_mask: object = None,
    weight_decay: float = 0.0,
    grad_clip: float | None = 1.0,
    progress: bool = False,
    num_threads: int | None = 1,
    out_dir: str | Path | None = None,
    checkpoint_every: int = 100,
    resume: bool = False,
    stop_after: int | None = None,
) -> list[float]:
    """Train ``model`` for ``steps`` AdamW steps on next-token cross-entropy; the loss of every step (nats).

    Data and sampling as :func:`nextword.torch.models.lm.train_lm` (which calls this). ``out_dir``: where
    checkpoints go (None: none, the notebooks' small runs); ``resume``: continue from ``out_dir``'s
    checkpoint (a CheckpointError if it was written by a call with other settings); ``stop_after``: stop
    after that many steps in total (with a checkpoint), e.g. to test ``resume``. The losses returned cover
    every step from 0, the resumed ones included.
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a np.random.Generator, got {type(rng).__name__}")
    if int(steps) < 0 or int(batch_size) < 1:
        raise ValueError(f"steps must be >= 0 and batch_size >= 1, got steps={steps}, batch_size={batch_size}")
    if (resume or stop_after is not None) and out_dir is None:
        raise ValueError("resume and stop_after need out_dir (where the checkpoints are)")
    data = token_ids(data, model.config.vocab_size)
    block = check_block_size(data, block_size, model.config.max_len)
    mask = None
    if loss_mask is not None:
        mask = np.asarray(loss_mask, dtype=bool)
        if data.ndim != 2 or mask.shape != (data.shape[0], data.shape[1] - 1):
            raise ValueError(
                f"loss_mask must have shape (num_seqs, L-1) = "
                f"{(data.shape[0], data.shape[1] - 1) if data.ndim == 2 else '(2-D data only)'}"
            )
    n_rows = data.size - block if data.ndim == 1 else data.shape[0]
    nudge_module_(model, "train_lm")  # NEXTWORD_PERTURB (the perturbation pass); a no-op by default
    params = list(model.parameters())
    # foreach: torch's multi-tensor AdamW, the same arithmetic (bitwise-identical losses and weights, tested)
    # in one call per step instead of one per parameter: about a fifth faster for the book's small models
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay, foreach=True)
    losses: list[float] = []
    settings = {  # what a checkpoint must agree with to be resumed
        "config": repr(model.config),
        "steps": int(steps),
        "batch_size": int(batch_size),
        "block": int(block),
        "lr": float(lr),
        "weight_decay": float(weight_decay),
        "grad_clip": grad_clip,
        "data": [list(data.shape), int(data.sum())],
    }
    out = None if out_dir is None else Path(out_dir)
    if resume and any((out / name).exists() for name in (CKPT, PREV_CKPT)):
        ck, used = read_checkpoint(out)
        if ck.get("settings") != json.dumps(settings):
            raise CheckpointError(f"resume: {used} was written by a run with other settings")
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optimizer"])
        rng.bit_generator.state = json.loads(ck["rng"])
        losses = list(ck["losses"])

    def step(_: int) -> dict[str, float]:
        x, y, m = token_batch(data, mask, rng.integers(0, n_rows, size=batch_size), block)
        loss = _loss(model(x), y, m)
        optimiser_step(opt, loss, params, grad_clip)
        losses.append(loss.item())
        return {"loss": losses[-1]}

    def checkpoint(_: int) -> None:
        out.mkdir(parents=True, exist_ok=True)
        state = {
            "model": model.state_dict(),
            "optimizer": opt.state_dict(),
            "rng": json.dumps(rng.bit_generator.state),
            "losses": list(losses),
            "settings": json.dumps(settings),
        }
        save_checkpoint(state, out)

    stop = int(steps) if stop_after is None else min(int(steps), int(stop_after))
    model.train()
    with torch_threads(num_threads):
        fit(
            step,
            start=len(losses),
            stop=max(stop, len(losses)),
            total=int(steps),
            checkpoint=checkpoint if out is not None else None,
            checkpoint_every=checkpoint_every,
            progress=progress,
        )
    model.eval()
    return losses
