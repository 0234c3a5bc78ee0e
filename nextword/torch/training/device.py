"""Where a torch run computes: device selection and bfloat16 autocast (CUDA only).

>>> select_device("cpu").type
'cpu'
>>> with autocast_context(torch.device("cpu"), amp=True):
...     torch.ones(2, 2).matmul(torch.ones(2, 2)).dtype      # autocast is off on the CPU
torch.float32
"""

from __future__ import annotations

import torch

__all__ = ["select_device", "autocast_context"]


def select_device(preference: str = "auto") -> torch.device:
    """``"auto"`` → cuda if available, else mps, else cpu; otherwise the named device (validated)."""
    if preference == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        mps = getattr(torch.backends, "mps", None)
        if mps is not None and mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    dev = torch.device(preference)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device={preference!r} requested but CUDA is not available")
    return dev


def autocast_context(device: torch.device, amp: bool):
    """bfloat16 autocast on CUDA when ``amp`` is set; a no-op context elsewhere."""
    if amp and device.type == "cuda":
        return torch.autocast(device_type="cuda", dtype=torch.bfloat16)
    return torch.autocast(device_type=device.type, enabled=False)
