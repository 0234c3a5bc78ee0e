"""The one training loop of the torch path: :func:`fit` runs the steps, :func:`optimiser_step` is each update.

Every torch model the book trains goes through :func:`fit`: the §7 barrier runs
(:func:`nextword.torch.barrier.train.train`) and the Chapter 6 TinyLM runs
(:func:`nextword.torch.training.token_lm.train_lm`).
:func:`fit` runs steps ``start … stop - 1``, shows one progress bar and calls a checkpoint every
``checkpoint_every`` steps and after the last, so any run stops and resumes; what a step and a
checkpoint hold is the caller's (model, optimiser, the sampler's random state, running sums).
This module knows no model and no objective, so every experiment can build on it.

>>> seen, saved = [], []
>>> fit(seen.append, start=2, stop=7, checkpoint=saved.append, checkpoint_every=2)
7
>>> seen, saved
([2, 3, 4, 5, 6], [4, 6, 7])
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import torch

__all__ = ["fit", "optimiser_step"]


def optimiser_step(
    opt: torch.optim.Optimizer, loss: torch.Tensor, params: list[torch.Tensor], grad_clip: float | None
) -> None:
    """``zero_grad``, ``loss.backward()``, clip the gradients' global norm to ``grad_clip`` (None/0: no clip), ``step``."""
    opt.zero_grad(set_to_none=True)
    loss.backward()
    if grad_clip:
        torch.nn.utils.clip_grad_norm_(params, grad_clip)
    opt.step()


def fit(
    step: Callable[[int], Mapping[str, float] | None],
    *,
    start: int,
    stop: int,
    total: int | None = None,
    checkpoint: Callable[[int], None] | None = None,
    checkpoint_every: int | None = None,
    progress: bool = False,
    desc: str = "train",
) -> int:
    """The loop: ``step(i)`` for ``i = start, …, stop - 1``; returns ``stop``.

    ``step(i)`` does optimiser step ``i`` (its own batch, loss and :func:`optimiser_step`) and may return
    numbers for the progress bar (shown every 10 steps). ``checkpoint(n)`` is called after ``n`` steps
    when ``n`` is a multiple of ``checkpoint_every`` and after the last step, so a run stopped at any
    point resumes from at most ``checkpoint_every`` steps back. ``total`` is the bar's full length
    (a resumed run starts it at ``start``).
    """
    if stop < start:
        raise ValueError(f"stop must be >= start, got start={start}, stop={stop}")
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=total if total is not None else stop, initial=start, desc=desc, leave=False)
    for i in range(start, stop):
        shown = step(i)
        if bar is not None:
            bar.update(1)
            if shown and (i + 1 - start) % 10 == 0:
                bar.set_postfix({k: f"{v:.3f}" for k, v in shown.items()})
        if checkpoint is not None and ((checkpoint_every and (i + 1) % checkpoint_every == 0) or i + 1 == stop):
            checkpoint(i + 1)
    if bar is not None:
        bar.close()
    return stop
