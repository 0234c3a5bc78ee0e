"""Next-token training and evaluation of a Chapter 6 :class:`~nextword.torch.models.lm.TinyLM` on the one loop.

:func:`train_lm` runs AdamW at a constant learning rate on the mean next-token cross-entropy over
:func:`~nextword.torch.training.engine.fit`: random windows of a token stream or random rows of a set of
sequences (with an optional loss mask), gradient clipping, one torch thread by default
(:func:`torch_threads`). Given ``out_dir`` it checkpoints every ``checkpoint_every`` steps (model,
optimiser, the sampler's random state and the losses so far; :mod:`~nextword.torch.training.checkpoint`'s
atomic writes and fallback) and ``resume=True`` continues from there: a resumed run returns exactly the
losses of an uninterrupted one. :func:`evaluate_loss` scores a model on held-out tokens.

Tiny worked example::

    >>> from nextword.torch.models.lm import LMConfig, TinyLM
    >>> cfg = LMConfig(vocab_size=5, d_model=8, num_heads=2, num_layers=1, max_len=16)
    >>> model = TinyLM(cfg, seed=0)
    >>> ids = np.tile(np.arange(5), 40)                   # 0 1 2 3 4 0 1 ... (deterministic)
    >>> losses = train_lm(model, ids, steps=60, batch_size=8, block_size=8, lr=1e-2, seed=0,
    ...                   progress=False)
    >>> losses[-1] < 0.1 < losses[0]                      # it learns the cycle
    True
    >>> evaluate_loss(model, ids, 8) < 0.1
    True

A run stopped after 4 of 6 steps and resumed returns the losses of an uninterrupted one:

    >>> import tempfile
    >>> whole = train_lm(TinyLM(cfg, seed=0), ids, steps=6, batch_size=4, block_size=8, seed=0, progress=False)
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     first = train_lm(TinyLM(cfg, seed=0), ids, steps=6, batch_size=4, block_size=8, seed=0,
    ...                      progress=False, out_dir=tmp, stop_after=4)
    ...     rest = train_lm(TinyLM(cfg, seed=0), ids, steps=6, batch_size=4, block_size=8, seed=0,
    ...                     progress=False, out_dir=tmp, resume=True)
    >>> len(first), rest == whole
    (4, True)
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from nextword.perturbation import nudge_module_
from nextword.torch.models.lm import TinyLM
from nextword.torch.training.checkpoint import resume_from, save_checkpoint
from nextword.torch.training.engine import fit, optimiser_step

__all__ = ["train_lm", "evaluate_loss", "torch_threads", "token_ids", "token_batch", "check_block_size"]


@contextlib.contextmanager
def torch_threads(n: int | None) -> Iterator[None]:
    """Temporarily run torch on ``n`` intra-op threads (None: leave as is), restoring the old value.

    Tiny models gain nothing from threads, and on a busy 2-core machine a multi-threaded matmul
    of a few hundred numbers can be ~30x slower than a single-threaded one (measured here), so
    :func:`train_lm` and :func:`evaluate_loss` default to one thread.
    """
    old = torch.get_num_threads()
    if n is not None:
        torch.set_num_threads(int(n))
    try:
        yield
    finally:
        torch.set_num_threads(old)


def token_ids(data: object, vocab_size: int) -> np.ndarray:
    """``data`` as int64 token ids, a stream ``(N,)`` or sequences ``(num_seqs, L)``, each in ``[0, vocab_size)``."""
    arr = np.asarray(data)
    if arr.dtype.kind not in "iu" or arr.ndim not in (1, 2):
        raise ValueError(
            f"data must be integer token ids of shape (N,) (a stream) or (num_seqs, L) "
            f"(separate sequences), got {arr.shape} {arr.dtype}"
        )
    if arr.size and (arr.min() < 0 or arr.max() >= vocab_size):
        raise ValueError(f"token ids must lie in [0, vocab_size={vocab_size})")
    return arr.astype(np.int64)


def token_batch(
    data: np.ndarray, mask: np.ndarray | None, rows: np.ndarray, block_size: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """Inputs/targets ``(B, block_size)`` from a stream (``rows`` = window starts) or a 2-D set."""
    if data.ndim == 1:
        win = data[rows[:, None] + np.arange(block_size + 1)]  # (B, block_size+1)
        m = None
    else:
        win = data[rows]  # (B, L)
        m = None if mask is None else torch.from_numpy(mask[rows])  # (B, L-1)
    return torch.from_numpy(win[:, :-1]), torch.from_numpy(win[:, 1:]), m


def check_block_size(data: np.ndarray, block_size: int | None, max_len: int) -> int:
    """The window length of ``data``: ``block_size`` for a stream (validated), ``L - 1`` for sequences ``(n, L)``."""
    if data.ndim == 2:
        L = data.shape[1] - 1
        if block_size not in (None, L):
            raise ValueError(f"for 2-D data of shape {data.shape}, block_size must be None or L-1 = {L}")
        return L
    if block_size is None or block_size < 1 or block_size >= data.size:
        raise ValueError(f"block_size must be an int in [1, len(data)) = [1, {data.size}), got {block_size}")
    return block_size


def _loss(logits: torch.Tensor, targets: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    nll = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), reduction="none")
    if mask is None:
        return nll.mean()
    m = mask.reshape(-1).to(nll.dtype)
    return (nll * m).sum() / m.sum().clamp_min(1.0)


def train_lm(
    model: TinyLM,
    data: object,
    *,
    steps: int,
    batch_size: int,
    block_size: int | None = None,
    lr: float = 3e-3,
    seed: int | None = None,
    rng: np.random.Generator | None = None,
    loss_mask: object = None,
    weight_decay: float = 0.0,
    grad_clip: float | None = 1.0,
    progress: bool = True,
    num_threads: int | None = 1,
    out_dir: str | Path | None = None,
    checkpoint_every: int = 100,
    resume: bool = False,
    stop_after: int | None = None,
) -> list[float]:
    """Train ``model`` for ``steps`` AdamW steps on next-token cross-entropy; the loss of every step (nats).

    ``data``: a token stream ``(N,)`` — each batch takes ``batch_size`` random windows of
    ``block_size + 1`` tokens — or separate sequences ``(num_seqs, L)`` — each batch takes random
    rows, inputs ``row[:-1]``, targets ``row[1:]`` (then ``block_size`` is ``L - 1`` or None).
    ``loss_mask (num_seqs, L-1)`` (2-D data only) selects the target positions that count, e.g. the
    answer half of a copy task. Randomness comes from ``rng`` or ``seed`` (exactly one of them).
    ``progress`` shows a tqdm bar; ``num_threads`` see :func:`torch_threads`. ``out_dir``: where
    checkpoints go (None: none, the notebooks' small runs); ``resume``: continue from ``out_dir``'s
    checkpoint (a CheckpointError if it was written by a call with other settings); ``stop_after``: stop
    after that many steps in total (with a checkpoint), e.g. to test ``resume``. The losses returned cover
    every step from 0, the resumed ones included.
    """
    if (rng is None) == (seed is None):
        raise TypeError("pass exactly one of seed= (an int) or rng= (a np.random.Generator)")
    rng = np.random.default_rng(seed) if rng is None else rng
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
    ck = None
    if resume:
        ck = resume_from(out, lambda c: c.get("settings") == json.dumps(settings), {"model": model, "optimizer": opt})
    if ck is not None:
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


@torch.no_grad()
def evaluate_loss(
    model: TinyLM,
    data: object,
    block_size: int | None = None,
    *,
    loss_mask: object = None,
    batch_size: int = 64,
    num_threads: int | None = 1,
) -> float:
    """Mean next-token cross-entropy (nats per predicted token) of ``model`` on ``data``.

    A stream ``(N,)`` is cut into consecutive non-overlapping windows of ``block_size + 1`` tokens
    (every target predicted once, with a fresh context at each window start); 2-D data
    ``(num_seqs, L)`` is scored row by row, with an optional ``loss_mask (num_seqs, L-1)``.
    """
    data = token_ids(data, model.config.vocab_size)
    block = check_block_size(data, block_size, model.config.max_len)
    was_training = model.training
    model.eval()
    if data.ndim == 1:
        n = (data.size - 1) // block
        starts = np.arange(n) * block
        mask = None
    else:
        starts = np.arange(data.shape[0])
        mask = None if loss_mask is None else np.asarray(loss_mask, dtype=bool)
    total, count = 0.0, 0.0
    with torch_threads(num_threads):
        for i in range(0, starts.size, batch_size):
            x, y, m = token_batch(data, mask, starts[i : i + batch_size], block)
            nll = F.cross_entropy(model(x).reshape(-1, model.config.vocab_size), y.reshape(-1), reduction="none")
            w = torch.ones_like(nll) if m is None else m.reshape(-1).to(nll.dtype)
            total += float((nll * w).sum())
            count += float(w.sum())
    model.train(was_training)
    if count == 0:
        raise ValueError("no target positions to score (empty data or an all-False loss_mask)")
    return total / count
