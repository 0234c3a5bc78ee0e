"""Checkpoints of a training run: atomic writes, weights-only reads, a fallback, and the one way to resume.

A run directory holds ``ckpt.pt`` (the newest checkpoint), ``ckpt.prev.pt`` (the one before it) and
``results.json``. Every write goes to a temporary file that is renamed with ``os.replace``, and the
previous good checkpoint is kept, so a checkpoint damaged on disk after the fact (truncated copy,
full disk, a killed ``rsync``) costs at most ``checkpoint_every`` steps: :func:`read_checkpoint`
falls back to ``ckpt.prev.pt`` and says so (a :class:`CheckpointFallbackWarning`). Reads use
``torch.load(..., weights_only=True)``: nothing is unpickled beyond tensors and plain containers.
:func:`resume_from` is how every trainer continues a run (the §7 loop, TinyLM's, the hybrid SVFlow's).

>>> import tempfile, pathlib, warnings
>>> with tempfile.TemporaryDirectory() as tmp:
...     out = pathlib.Path(tmp)
...     _ = save_checkpoint({"step": 1}, out)
...     _ = save_checkpoint({"step": 2}, out)
...     _ = (out / CKPT).write_bytes(b"PK truncated")          # damage the newest one
...     with warnings.catch_warnings(record=True) as caught:
...         warnings.simplefilter("always")
...         ck, used = read_checkpoint(out)
>>> ck["step"], used.name, caught[0].category.__name__
(1, 'ckpt.prev.pt', 'CheckpointFallbackWarning')
"""

from __future__ import annotations

import json
import os
import pickle
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch

__all__ = [
    "CKPT",
    "PREV_CKPT",
    "RESULTS",
    "CheckpointError",
    "CheckpointFallbackWarning",
    "save_checkpoint",
    "read_checkpoint",
    "save_json",
    "export_weights",
    "resume_from",
]

CKPT = "ckpt.pt"
PREV_CKPT = "ckpt.prev.pt"
RESULTS = "results.json"


class CheckpointError(ValueError):
    """No usable checkpoint: none readable, or one written with a different configuration."""


class CheckpointFallbackWarning(UserWarning):
    """The newest checkpoint was unreadable; the previous good one was used instead."""


def _tmp(path: Path) -> Path:
    return path.with_name(f".{path.name}.tmp{os.getpid()}")


def save_checkpoint(obj: dict[str, Any], out_dir: str | Path) -> Path:
    """Write ``obj`` as ``out_dir/ckpt.pt`` atomically, keeping the current one as ``ckpt.prev.pt``."""
    out = Path(out_dir)
    path, prev = out / CKPT, out / PREV_CKPT
    tmp = _tmp(path)
    torch.save(obj, tmp)
    if path.exists():
        os.replace(path, prev)
    os.replace(tmp, path)
    return path


def _load(path: Path, device: str | torch.device) -> dict[str, Any]:
    return torch.load(path, map_location=device, weights_only=True)


def read_checkpoint(where: str | Path, device: str | torch.device = "cpu") -> tuple[dict[str, Any], Path]:
    """``(checkpoint, path used)`` from a run directory (or a checkpoint file inside one).

    Falls back to ``ckpt.prev.pt`` when ``ckpt.pt`` is unreadable, with a
    :class:`CheckpointFallbackWarning` naming both; raises :class:`CheckpointError` (one line, no
    traceback needed) when neither can be read or none exists.
    """
    if not isinstance(where, (str, os.PathLike)):
        raise TypeError(f"where must be a run folder or a checkpoint file (str or os.PathLike), got {where!r}")
    where = Path(where)
    path = where if where.suffix == ".pt" else where / CKPT
    candidates = [path] + ([path.with_name(PREV_CKPT)] if path.name == CKPT else [])
    errors = []
    for i, p in enumerate(candidates):
        if not p.exists():
            errors.append(f"{p}: missing")
            continue
        try:
            ck = _load(p, device)
        except (RuntimeError, EOFError, OSError, ValueError, pickle.UnpicklingError) as e:  # truncated, garbage, I/O
            errors.append(f"{p}: unreadable ({str(e).splitlines()[0][:120]})")
            continue
        if i > 0:
            warnings.warn(
                f"checkpoint {candidates[0]} is unreadable; falling back to the previous good "
                f"checkpoint {p} (step {ck.get('state', {}).get('step', '?')})",
                CheckpointFallbackWarning,
                stacklevel=2,
            )
        return ck, p
    raise CheckpointError("no readable checkpoint: " + "; ".join(errors))


def save_json(obj: Any, path: str | Path) -> None:
    """Write JSON atomically (temporary file + ``os.replace``)."""
    path = Path(path)
    tmp = _tmp(path)
    tmp.write_text(json.dumps(obj, indent=1, sort_keys=False) + "\n")
    os.replace(tmp, path)


#: What a weights-only export of a run holds (what :func:`nextword.torch.barrier.train.load_checkpoint` reads).
WEIGHTS_KEYS = ("model", "prior", "config", "vocab_size")


def export_weights(run_dir: str | Path, path: str | Path | None = None) -> Path:
    """Write the trained GPT and prior of ``run_dir``'s checkpoint, without optimiser state, to ``path``.

    ``{"model", "prior", "config", "vocab_size"}`` (``path`` default: ``run_dir/model.pt``), the file a
    saved run keeps beside its ``result.json`` for the notebooks that analyse the trained model.
    """
    ck, _ = read_checkpoint(run_dir)
    path = Path(run_dir) / "model.pt" if path is None else Path(path)
    torch.save({k: ck[k] for k in WEIGHTS_KEYS}, path)
    return path


def resume_from(
    out_dir: str | Path,
    matches: Callable[[dict[str, Any]], bool],
    restore: Mapping[str, Any],
    *,
    device: str | torch.device = "cpu",
    differences: Callable[[dict[str, Any]], str] | None = None,
) -> dict[str, Any] | None:
    """Continue a run from ``out_dir``'s checkpoint; the checkpoint, or None when there is none to resume.

    ``matches(checkpoint)`` says whether it was written by a run with the same settings (a
    :class:`CheckpointError` naming the file, and the settings that differ when ``differences(checkpoint)``
    names them, otherwise); then every object of ``restore`` (checkpoint key -> a module or optimiser)
    loads its state, and the caller restores the rest (random state, counters).
    """
    out = Path(out_dir)
    if not any((out / name).exists() for name in (CKPT, PREV_CKPT)):
        return None
    ck, used = read_checkpoint(out, device)
    if not matches(ck):
        differ = differences(ck) if differences is not None else ""
        raise CheckpointError(
            f"resume: {used} was written by a run with other settings" + (f" ({differ})" if differ else "")
        )
    for key, obj in restore.items():
        obj.load_state_dict(ck[key])
    return ck
