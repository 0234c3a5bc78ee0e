"""Saved results with provenance: what produced a number, where, and with which code.

Every result the book draws a conclusion from lives under ``book/results/<experiment>/``:

- ``result.json`` — the numbers (``data``) and their provenance: the exact ``command``, the git
  ``commit`` of the code that produced them (and whether the tree was dirty), the ``config``,
  the ``seeds``, the ``wall_time_s``, the ``machine`` (CPU model, threads, numpy/torch versions)
  and the ``created`` time (UTC);
- optionally ``curves.npz`` — small arrays (learning curves, sweeps) saved beside it.

``NEXTWORD_RESULTS_DIR`` overrides the directory (tests use a temporary one).

>>> import tempfile, os
>>> with tempfile.TemporaryDirectory() as tmp:
...     path = save_result("demo", {"loss": 1.5}, command="python demo.py", config={"steps": 3},
...                        seeds=[0], wall_time_s=0.1, results_dir=tmp)
...     saved = load_result("demo", results_dir=tmp)
>>> saved["data"]["loss"], sorted(set(PROVENANCE_FIELDS) - set(saved))
(1.5, [])
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "PROVENANCE_FIELDS",
    "results_root",
    "machine_info",
    "git_commit",
    "save_result",
    "load_result",
    "load_curves",
    "is_current",
]

#: Fields every ``result.json`` carries besides ``data``.
PROVENANCE_FIELDS = ("command", "commit", "dirty", "config", "seeds", "wall_time_s", "machine", "created")

_REPO_ROOT = Path(__file__).resolve().parents[1]


def results_root(results_dir: str | os.PathLike | None = None) -> Path:
    """The folder holding saved results: ``results_dir``, else ``$NEXTWORD_RESULTS_DIR``, else ``book/results``."""
    if results_dir is not None:
        return Path(results_dir)
    env = os.environ.get("NEXTWORD_RESULTS_DIR")
    return Path(env) if env else _REPO_ROOT / "book" / "results"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_info() -> dict[str, Any]:
    """CPU model, core count, thread settings and library versions of this machine."""
    info: dict[str, Any] = {
        "cpu": _cpu_model(),
        "arch": platform.machine(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
    }
    try:  # torch is optional; record it when present
        import torch

        info["torch"] = torch.__version__
        info["torch_threads"] = torch.get_num_threads()
        info["cuda"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    except ImportError:
        info["torch"] = None
    return info


def git_commit(paths: Sequence[str | os.PathLike] = (), repo: str | os.PathLike | None = None) -> tuple[str, bool]:
    """``(commit, dirty)``: the last commit touching ``paths`` (all of HEAD if empty) and whether they have
    uncommitted changes; ``("unknown", True)`` outside a git checkout. ``$NEXTWORD_GIT_COMMIT`` (a 40-digit
    hash, with ``$NEXTWORD_GIT_DIRTY=0`` for a clean copy) overrides both: a tree copied to another machine
    (a lent GPU) may carry a ``.git`` that is not the one it was copied from."""
    repo = Path(repo) if repo is not None else _REPO_ROOT
    rel = [str(p) for p in paths]
    stated = os.environ.get("NEXTWORD_GIT_COMMIT", "")
    if len(stated) == 40 and all(c in "0123456789abcdef" for c in stated):  # a copied tree: the copier knows
        return stated, os.environ.get("NEXTWORD_GIT_DIRTY", "1") != "0"
    try:
        commit = subprocess.run(
            ["git", "log", "-1", "--format=%H", "--", *rel], cwd=repo, check=True, capture_output=True, text=True
        ).stdout.strip()
        status = subprocess.run(
            ["git", "status", "--porcelain", "--", *rel], cwd=repo, check=True, capture_output=True, text=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown", True
    return (commit or "unknown"), bool(status)


def _jsonable(value: Any) -> Any:
    """Plain JSON values; a non-finite float (an undefined ratio such as 0/0) becomes ``None`` (``null``).

    >>> _jsonable({"ratio": float("nan"), "x": np.float64(2.5), "xs": np.arange(2)})
    {'ratio': None, 'x': 2.5, 'xs': [0, 1]}
    """
    if isinstance(value, float | np.floating) and not np.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "__dataclass_fields__"):
        import dataclasses

        return _jsonable(dataclasses.asdict(value))
    return value


def save_result(
    name: str,
    data: Mapping[str, Any],
    *,
    command: str,
    config: Mapping[str, Any] | Any,
    seeds: Sequence[int],
    wall_time_s: float,
    curves: Mapping[str, np.ndarray] | None = None,
    code_paths: Sequence[str | os.PathLike] = ("nextword",),
    results_dir: str | os.PathLike | None = None,
) -> Path:
    """Write ``<results>/<name>/result.json`` (and ``curves.npz`` if ``curves``); return the JSON path.

    The file is strict JSON: a non-finite number (NaN, ±inf) is written as ``null``.
    ``config`` may be a mapping or a dataclass; ``code_paths`` (relative to the repository) name the code whose
    last commit is recorded as ``commit`` — :func:`is_current` compares against it to skip finished runs.
    """
    if not isinstance(name, str) or not name.strip("/") or ".." in Path(name).parts:
        raise ValueError(f"name must be a folder name under the results directory, got {name!r}")
    folder = results_root(results_dir) / name
    folder.mkdir(parents=True, exist_ok=True)
    commit, dirty = git_commit(code_paths)
    record = {
        "data": _jsonable(data),
        "command": command,
        "commit": commit,
        "dirty": dirty,
        "code_paths": [str(p) for p in code_paths],
        "config": _jsonable(config),
        "seeds": [int(s) for s in seeds],
        "wall_time_s": float(wall_time_s),
        "machine": machine_info(),
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
    path = folder / "result.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(record, indent=1, sort_keys=False, allow_nan=False) + "\n")  # strict JSON
    tmp.replace(path)  # atomic: an interrupted write never leaves half a file
    if curves:
        np.savez_compressed(folder / "curves.npz", **{k: np.asarray(v) for k, v in curves.items()})
    return path


def load_result(name: str, results_dir: str | os.PathLike | None = None) -> dict[str, Any]:
    """Read ``<results>/<name>/result.json``; a missing file names the command that makes it (``make results``)."""
    path = results_root(results_dir) / name / "result.json"
    if not path.is_file():
        raise FileNotFoundError(f"no saved result {name!r} at {path}; `make results` produces the saved runs")
    return json.loads(path.read_text())


def load_curves(name: str, results_dir: str | os.PathLike | None = None) -> dict[str, np.ndarray]:
    """The arrays of ``<results>/<name>/curves.npz`` (no pickles are loaded)."""
    path = results_root(results_dir) / name / "curves.npz"
    with np.load(path, allow_pickle=False) as f:
        return {k: f[k] for k in f.files}


def is_current(name: str, config: Mapping[str, Any] | Any, results_dir: str | os.PathLike | None = None) -> bool:
    """True when ``name`` is saved with the same ``config`` by the current, clean commit of its code."""
    try:
        saved = load_result(name, results_dir)
    except FileNotFoundError:
        return False
    commit, dirty = git_commit(saved.get("code_paths", ("nextword",)))
    return (
        not dirty
        and not saved.get("dirty", True)
        and saved.get("commit") == commit
        and saved.get("config") == _jsonable(config)
    )
