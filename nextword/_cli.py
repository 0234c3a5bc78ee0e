"""What every ``nextword`` subcommand shares: argument types that reject a bad value in one line, and the
rule that a mistake in a command (a bad value, a missing or wrong kind of file, no network, no GPU) ends in
one ``nextword COMMAND: error: …`` line with exit status 2, never a traceback.

>>> positive_int("3"), nonnegative_float("0.5")
(3, 0.5)
>>> nonnegative_float("nan")
Traceback (most recent call last):
argparse.ArgumentTypeError: expected a finite number >= 0, got 'nan'
>>> one_line(ValueError("first line\\nsecond line"))
'first line; second line'
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

__all__ = [
    "number",
    "positive_int",
    "nonnegative_int",
    "positive_float",
    "nonnegative_float",
    "output_dir",
    "output_file",
    "existing_dir",
    "existing_path",
    "usable_cpus",
    "default_threads",
    "user_errors",
    "one_line",
    "fail",
]


def number(kind: type, low: float, *, strict: bool = False):
    """An argparse ``type``: a finite ``kind`` (int or float) ``>= low`` (``> low`` if ``strict``)."""
    what = f"{'an integer' if kind is int else 'a finite number'} {'>' if strict else '>='} {low:g}"

    def parse(text: str):
        try:
            value = kind(text)
        except (TypeError, ValueError):
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if not math.isfinite(value) or value < low or (strict and value == low):  # NaN fails isfinite
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
        return value

    parse.__name__ = what  # argparse names the type in its messages
    return parse


positive_int = number(int, 1)
nonnegative_int = number(int, 0)
positive_float = number(float, 0, strict=True)
nonnegative_float = number(float, 0)


def output_dir(text: str) -> Path:
    """An argparse ``type`` for a folder the command writes into: an existing folder, or one it can create.

    Rejects a path that is an existing file, a path below a file, and a folder whose nearest existing parent
    is not writable.
    """
    path = Path(text).expanduser()
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a file, not a folder")
    parent = path
    while not parent.exists():
        if parent.parent == parent:
            break
        parent = parent.parent
    if parent.exists() and not parent.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r}: {str(parent)!r} is a file, not a folder")
    if parent.exists() and not os.access(parent, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(f"{text!r}: cannot write in {str(parent)!r}")
    return path


def output_file(text: str) -> Path:
    """An argparse ``type`` for a file the command writes: not a folder, in a folder it can write in."""
    path = Path(text).expanduser()
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a folder, not a file")
    output_dir(str(path.parent))
    return path


def existing_dir(text: str) -> Path:
    """An argparse ``type`` for a folder that must exist."""
    path = Path(text).expanduser()
    if not path.exists():
        raise argparse.ArgumentTypeError(f"no folder {text!r}")
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a file, not a folder")
    return path


def existing_path(text: str) -> Path:
    """An argparse ``type`` for a file or folder that must exist."""
    path = Path(text).expanduser()
    if not path.exists():
        raise argparse.ArgumentTypeError(f"no file or folder {text!r}")
    return path


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # macOS, Windows
        return os.cpu_count() or 1


#: the most torch threads a run gets by default (more buys little at the book's sizes)
MAX_DEFAULT_THREADS = 4


def default_threads(cpus: int | None = None) -> int:
    """Torch threads of ``train``/``sweep``/``robustness``/``results run`` without ``--threads``: one per two
    usable cores, at least 1, at most :data:`MAX_DEFAULT_THREADS` (benchmarks/threads_train.py measured why).

    >>> [default_threads(n) for n in (1, 2, 4, 8, 64)]
    [1, 1, 2, 4, 4]
    """
    cpus = usable_cpus() if cpus is None else cpus
    return max(1, min(MAX_DEFAULT_THREADS, cpus // 2))


def user_errors() -> tuple[type[BaseException], ...]:
    """Exceptions that mean "the command, its files, the network or the device are wrong", not "the code is".

    ``OSError`` covers missing, unreadable and unwritable files, a file where a folder is needed, and no
    network (``URLError``); ``ValueError`` is what the library raises for a bad argument (it names it), a
    damaged checkpoint or a device that is not there. Set ``NEXTWORD_TRACEBACK=1`` to see the traceback.
    """
    return (OSError, ValueError)


def one_line(exc: BaseException) -> str:
    """The exception's message on one line (the lines joined with "; ")."""
    text = str(exc).strip() or type(exc).__name__
    if isinstance(exc, KeyError):
        text = f"missing key {text}"
    return "; ".join(line.strip() for line in text.splitlines() if line.strip())


def fail(prog: str, message: str) -> int:
    """Print ``PROG: error: MESSAGE`` (one line) to stderr and return 2, argparse's status for a usage error."""
    print(f"{prog}: error: {message}", file=sys.stderr, flush=True)
    return 2
