"""Where a torch run computes: device selection, bfloat16 autocast (CUDA only), and the GPU's description.

>>> select_device("cpu").type
'cpu'
>>> with autocast_context(torch.device("cpu"), amp=True):
...     torch.ones(2, 2).matmul(torch.ones(2, 2)).dtype      # autocast is off on the CPU
torch.float32
"""

from __future__ import annotations

import subprocess
from typing import Any

import torch

__all__ = ["select_device", "autocast_context", "gpu_info"]


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


def gpu_info() -> dict[str, Any]:
    """Name, driver, torch and CUDA versions of the visible GPU (``None`` fields without one)."""
    info: dict[str, Any] = {"torch": torch.__version__, "cuda": torch.version.cuda, "name": None, "driver": None}
    if torch.cuda.is_available():
        info["name"] = torch.cuda.get_device_name(0)
        info["cudnn"] = torch.backends.cudnn.version()
        try:
            out = subprocess.run(
                ["nvidia-smi", "--query-gpu=driver_version,memory.total", "--format=csv,noheader"],
                capture_output=True,
                text=True,
                timeout=20,
            ).stdout.strip()
            info["driver"], info["memory"] = [s.strip() for s in out.split(",")][:2]
        except (OSError, ValueError, subprocess.SubprocessError):
            pass
    return info
