"""Distributed setup for barrier training: torchrun environment, process group, DDP wrapping.

Under ``torchrun`` (``WORLD_SIZE > 1``) the model is wrapped in DistributedDataParallel (gloo on CPU,
nccl on CUDA); each rank takes its slice of the same global batch, so the update equals the
single-process one up to floating-point summation order. Outside torchrun every helper is a no-op.

>>> ctx = setup("cpu", distributed=False)
>>> (ctx.rank, ctx.world_size, ctx.distributed, str(ctx.device))
(0, 1, False, 'cpu')
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.nn as nn

from nextword.torch.training.device import select_device

__all__ = ["DistContext", "dist_info", "setup", "wrap", "mean_over_ranks", "barrier"]


def dist_info() -> tuple[int, int, int]:
    """``(rank, world_size, local_rank)`` from the torchrun environment (``(0, 1, 0)`` otherwise)."""
    return (int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1)), int(os.environ.get("LOCAL_RANK", 0)))


@dataclass(frozen=True)
class DistContext:
    """Where this process trains: its ``device``, ``rank`` of ``world_size``, and whether DDP is on."""

    device: torch.device
    rank: int
    world_size: int
    distributed: bool

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def setup(device: str = "auto", distributed: bool | None = None) -> DistContext:
    """Pick the device and, under torchrun, initialise the process group (once).

    ``distributed=None`` means "if ``WORLD_SIZE > 1``"; ``False`` forces a single-process run even
    under torchrun (the λ sweep trains one λ per process that way).
    """
    rank, world, local_rank = dist_info()
    distributed = (world > 1) if distributed is None else distributed
    dev = select_device(device)
    if not distributed:
        return DistContext(dev, 0, 1, False)
    if dev.type == "cuda":
        dev = torch.device("cuda", local_rank)
        torch.cuda.set_device(dev)
    if not dist.is_initialized():
        dist.init_process_group(backend="nccl" if dev.type == "cuda" else "gloo")
    return DistContext(dev, rank, world, True)


def wrap(module: nn.Module, ctx: DistContext) -> nn.Module:
    """``module`` inside DistributedDataParallel when ``ctx.distributed``, else unchanged."""
    if not ctx.distributed:
        return module
    return nn.parallel.DistributedDataParallel(
        module, device_ids=[ctx.device.index] if ctx.device.type == "cuda" else None
    )


def mean_over_ranks(values: torch.Tensor, ctx: DistContext) -> torch.Tensor:
    """The mean of ``values`` over all ranks (``values`` itself in a single process)."""
    if ctx.distributed:
        dist.all_reduce(values)
        values = values / ctx.world_size
    return values


def barrier(ctx: DistContext) -> None:
    """Wait for every rank (no-op in a single process)."""
    if ctx.distributed:
        dist.barrier()
