"""Corpora and where they live.

Data lookup (``data_dir``) follows the project's data policy: nothing is ever downloaded by a
notebook or a test. The directory that holds corpora is, in order,

1. the environment variable ``NEXTWORD_DATA_DIR``;
2. ``../shared/data`` beside the checkout (i.e. ``<repo>/../shared/data``);
3. the user cache directory ``~/.cache/nextword/data`` (or ``$XDG_CACHE_HOME/nextword/data``).

Tiny Shakespeare is expected at ``<data_dir>/tinyshakespeare/input.txt``.
"""
from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DataNotFoundError", "data_dir", "candidate_data_dirs", "find_data_file"]

_REPO_ROOT = Path(__file__).resolve().parent.parent


class DataNotFoundError(FileNotFoundError):
    """Raised when a corpus cannot be found; the message lists every place that was searched."""


def candidate_data_dirs() -> list[Path]:
    """The data directories searched by :func:`data_dir`, in order of preference."""
    candidates: list[Path] = []
    env = os.environ.get("NEXTWORD_DATA_DIR")
    if env:
        candidates.append(Path(env).expanduser())
    candidates.append(_REPO_ROOT.parent / "shared" / "data")
    cache_root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    candidates.append(Path(cache_root).expanduser() / "nextword" / "data")
    return candidates


def data_dir(required: str | None = None) -> Path:
    """Return the first existing data directory (containing ``required``, if given).

    Parameters
    ----------
    required:
        A relative path such as ``"tinyshakespeare/input.txt"``; when given, the first candidate
        directory that contains it is returned.

    Raises
    ------
    DataNotFoundError
        If no candidate directory exists (or none contains ``required``). The message names every
        directory that was searched and how to point ``NEXTWORD_DATA_DIR`` at the data.

    Example
    -------
    >>> import os, tempfile
    >>> d = tempfile.mkdtemp(); os.environ["NEXTWORD_DATA_DIR"] = d
    >>> str(data_dir()) == d
    True
    >>> del os.environ["NEXTWORD_DATA_DIR"]
    """
    searched = candidate_data_dirs()
    for directory in searched:
        target = directory / required if required else directory
        if target.exists():
            return directory
    what = f"'{required}'" if required else "a data directory"
    lines = "\n".join(f"  - {p / required if required else p}" for p in searched)
    raise DataNotFoundError(
        f"Could not find {what}. Searched, in order:\n{lines}\n"
        "Set NEXTWORD_DATA_DIR to the folder that holds the corpora "
        "(e.g. the folder containing tinyshakespeare/input.txt)."
    )


def find_data_file(relative: str) -> Path:
    """Path of ``relative`` inside the first data directory that has it (see :func:`data_dir`)."""
    return data_dir(relative) / relative
