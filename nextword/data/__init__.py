"""Corpora and where they live.

Data lookup (``data_dir``) follows the project's data policy: nothing is ever downloaded by a
notebook or a test, and the package needs nothing beside itself. The directory that holds
corpora is, in order,

1. the environment variable ``NEXTWORD_DATA_DIR`` (your own copies override the packaged ones);
2. the packaged data, ``nextword/data/`` itself, which ships tiny Shakespeare gzipped as
   ``tinyshakespeare/input.txt.gz`` (a non-editable install has it too);
3. the user cache directory ``~/.cache/nextword/data`` (or ``$XDG_CACHE_HOME/nextword/data``).

A file ``name`` counts as present in a directory as ``name`` or as ``name.gz``; files with a known
checksum (:data:`SHA256`, of the uncompressed bytes) are verified when a corpus is loaded by name.

Tiny Shakespeare (40,000 lines of Shakespeare's plays, public domain; the ``input.txt`` of Andrej
Karpathy's char-rnn collection) is found as ``tinyshakespeare/input.txt``; WikiText-2 (raw) at
``<data_dir>/wikitext-2-raw/wiki.{train,valid,test}.raw`` or in any directory you pass. On a
machine with internet, fetch WikiText-2 once by hand (no notebook or test does this)::

    curl -LO https://s3.amazonaws.com/research.metamind.io/wikitext/wikitext-2-raw-v1.zip
    unzip wikitext-2-raw-v1.zip -d "$NEXTWORD_DATA_DIR"    # → wikitext-2-raw/wiki.*.raw

(or save the ``Salesforce/wikitext``, ``wikitext-2-raw-v1`` splits of the HF hub as those files).

Besides real text, this module offers synthetic sources with a known entropy rate
(:mod:`nextword.data.synthetic`: i.i.d., Markov of order k, the sticky chain of Part 3), so a model's
loss can be compared with the true lower bound, and :func:`batches` for training.
"""

from __future__ import annotations

import gzip
import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike, NDArray

from nextword._validate import (
    check_path,
    MAX_ELEMENTS,
    as_generator,
    as_index_array,
    check_positive_int,
    check_real,
    check_size,
)
from nextword.data.synthetic import IIDSource, MarkovSource, markov_source, sticky_markov_chain, STICKY_RULES

__all__ = [
    "DataNotFoundError",
    "DataChecksumError",
    "data_dir",
    "candidate_data_dirs",
    "find_data_file",
    "read_data_text",
    "PACKAGE_DATA_DIR",
    "SHA256",
    "Corpus",
    "load_corpus",
    "read_wikitext2",
    "batches",
    "IIDSource",
    "MarkovSource",
    "markov_source",
    "sticky_markov_chain",
    "STICKY_RULES",
]

PACKAGE_DATA_DIR = Path(__file__).resolve().parent
"""The packaged data directory (``nextword/data/``), searched after ``NEXTWORD_DATA_DIR``."""

SHA256 = {
    "tinyshakespeare/input.txt": "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed",
}
"""sha256 of the *uncompressed* bytes of the corpora we know, keyed by their relative name."""


class DataNotFoundError(FileNotFoundError):
    """Raised when a corpus cannot be found; the message lists every place that was searched."""


class DataChecksumError(ValueError):
    """Raised when a corpus with a known checksum (:data:`SHA256`) has other bytes."""


def candidate_data_dirs() -> list[Path]:
    """The data directories searched by :func:`data_dir`, in order of preference."""
    candidates: list[Path] = []
    env = os.environ.get("NEXTWORD_DATA_DIR")
    if env:
        candidates.append(Path(env).expanduser())
    candidates.append(PACKAGE_DATA_DIR)
    cache_root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    candidates.append(Path(cache_root).expanduser() / "nextword" / "data")
    return candidates


def _present(directory: Path, relative: str) -> Path | None:
    """``directory/relative``, or its gzipped form ``directory/relative.gz``, if either exists."""
    for target in (directory / relative, directory / (relative + ".gz")):
        if target.exists():
            return target
    return None


def data_dir(required: str | None = None) -> Path:
    """Return the first existing data directory (containing ``required``, if given).

    Parameters
    ----------
    required:
        A relative path such as ``"tinyshakespeare/input.txt"``; when given, the first candidate
        directory that contains it (as itself or gzipped, ``+ ".gz"``) is returned.

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
    >>> data_dir("tinyshakespeare/input.txt") == PACKAGE_DATA_DIR  # the packaged copy
    True
    """
    if required is not None and not isinstance(required, str):
        raise TypeError(f"required must be a relative path string or None, got {type(required).__name__}")
    searched = candidate_data_dirs()
    for directory in searched:
        found = _present(directory, required) if required else (directory if directory.exists() else None)
        if found is not None:
            return directory
    what = f"'{required}'" if required else "a data directory"
    lines = "\n".join(f"  - {p / required if required else p}" for p in searched)
    raise DataNotFoundError(
        f"Could not find {what}. Searched, in order:\n{lines}\n"
        "Set NEXTWORD_DATA_DIR to the folder that holds the corpora "
        "(e.g. the folder containing tinyshakespeare/input.txt)."
    )


def find_data_file(relative: str) -> Path:
    """Path of ``relative`` inside the first data directory that has it (see :func:`data_dir`).

    The path returned ends in ``.gz`` when the directory holds the gzipped form; read it with
    :func:`read_data_text`.

    >>> find_data_file("tinyshakespeare/input.txt").name in ("input.txt", "input.txt.gz")
    True
    """
    if not isinstance(relative, str):
        raise TypeError(f"relative must be a relative path string, got {type(relative).__name__}")
    found = _present(data_dir(relative), relative)
    assert found is not None  # data_dir returned a directory that has it
    return found


def read_data_text(path: str | Path, *, sha256: str | None = None) -> str:
    """Read a UTF-8 text file, gunzipping it if its name ends in ``.gz``, and verify its checksum.

    Parameters
    ----------
    path:
        The file (plain or ``.gz``).
    sha256:
        Expected hex digest of the uncompressed bytes, or ``None`` to skip the check.

    Raises
    ------
    DataChecksumError
        If the bytes do not have the expected digest (the message names the file and both digests).

    >>> text = read_data_text(find_data_file("tinyshakespeare/input.txt"),
    ...                       sha256=SHA256["tinyshakespeare/input.txt"])
    >>> text[:14], len(text)
    ('First Citizen:', 1115394)
    """
    path = Path(check_path(path, "path"))
    raw = gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()
    if sha256 is not None and not isinstance(sha256, str):
        raise TypeError(f"sha256 must be a hex digest (str) or None, got {type(sha256).__name__}")
    if sha256 is not None:
        digest = hashlib.sha256(raw).hexdigest()
        if digest != sha256:
            raise DataChecksumError(
                f"{path} has sha256 {digest}, expected {sha256}: the file is damaged or is another "
                "text; replace it, or load your own text by path (load_corpus(path)) instead of by name"
            )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"{path} is not UTF-8 text (byte {exc.start}: {exc.reason}); re-encode it, e.g. with iconv -t UTF-8"
        ) from None


# --------------------------------------------------------------------------------------------
# Corpora
# --------------------------------------------------------------------------------------------
WIKITEXT2_FILES = {"train": "wiki.train.raw", "val": "wiki.valid.raw", "test": "wiki.test.raw"}


@dataclass(frozen=True)
class Corpus:
    """A text corpus split for language modelling.

    Attributes: ``name``; ``train``, ``val`` (and ``test`` or ``None``) as ``str``; ``source``,
    the file or directory it was read from.
    """

    name: str
    train: str
    val: str
    test: str | None
    source: Path

    def __repr__(self) -> str:
        sizes = ", ".join(
            f"{k}={len(v):,} chars"
            for k, v in (("train", self.train), ("val", self.val), ("test", self.test))
            if v is not None
        )
        return f"Corpus({self.name!r}, {sizes}, source={str(self.source)!r})"


def _read_utf8(path: Path) -> str:
    """The text of ``path``; a file that is not UTF-8 is a ``ValueError`` naming the file."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"{path} is not UTF-8 text (byte {exc.start}: {exc.reason}); re-encode it, e.g. with iconv -t UTF-8"
        ) from None


def _as_path(value: str | os.PathLike, name: str) -> Path:
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{name} must be a str or a path, got {type(value).__name__}")
    return Path(value).expanduser()


def _split_text(name: str, text: str, source: Path, val_fraction: float) -> Corpus:
    """First ``1 - val_fraction`` of the characters → train, the rest → val (nanoGPT's split)."""
    val_fraction = check_real(val_fraction, "val_fraction", lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    n = int(len(text) * (1.0 - val_fraction))
    return Corpus(name, text[:n], text[n:], None, source)


def read_wikitext2(directory: str | Path) -> Corpus:
    """Read raw WikiText-2 (character level) from ``directory`` (or its ``wikitext-2-raw/``).

    The directory holds ``wiki.train.raw``, ``wiki.valid.raw`` and ``wiki.test.raw`` (UTF-8, one
    paragraph or `` = Heading = `` per line), as unpacked from ``wikitext-2-raw-v1.zip``. The text
    is returned unchanged, so a :class:`~nextword.tokenizers.CharTokenizer` sees every character.

    Example
    -------
    >>> c = read_wikitext2(Path(__file__).parent.parent / "tests" / "fixtures")  # doctest: +SKIP
    """
    directory = _as_path(directory, "directory")
    if not (directory / WIKITEXT2_FILES["train"]).exists() and (directory / "wikitext-2-raw").is_dir():
        directory = directory / "wikitext-2-raw"
    missing = [f for f in WIKITEXT2_FILES.values() if not (directory / f).is_file()]
    if missing:
        raise DataNotFoundError(
            f"WikiText-2 directory {directory} lacks {', '.join(missing)}; expected wiki.train.raw, "
            "wiki.valid.raw and wiki.test.raw (see nextword.data's docstring for how to fetch them)"
        )
    parts = {k: _read_utf8(directory / f) for k, f in WIKITEXT2_FILES.items()}
    return Corpus("wikitext2", parts["train"], parts["val"], parts["test"], directory)


def load_corpus(name: str | Path, *, root: str | Path | None = None, val_fraction: float = 0.1) -> Corpus:
    """Load a corpus as train/val(/test) text.

    Parameters
    ----------
    name:
        ``"shakespeare"`` (tiny Shakespeare, found via :func:`data_dir` — by default the packaged
        copy — checksum-verified, split 90/10 by characters), ``"wikitext2"`` (train/valid/test files, see :func:`read_wikitext2`), or a
        path: a directory is read as WikiText-2, a text file is split like Shakespeare.
    root:
        Directory to read from instead of the data-dir lookup (for ``"shakespeare"``: the folder
        holding ``input.txt``, read as it is, without the checksum; for ``"wikitext2"``: the
        folder holding ``wiki.*.raw``).
    val_fraction:
        Fraction of characters held out for validation when the corpus has no fixed split.

    Files must be UTF-8 (anything else is a ``ValueError`` naming the file).

    >>> c = load_corpus("shakespeare")
    >>> c.train[:14], len(c.train), len(c.val)
    ('First Citizen:', 1003854, 111540)
    """
    name_path = _as_path(name, "name")
    root = None if root is None else _as_path(root, "root")
    check_real(val_fraction, "val_fraction", lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    if isinstance(name, str) and name in ("shakespeare", "tinyshakespeare"):
        if root is not None:
            path, sha256 = Path(root).expanduser() / "input.txt", None
        else:
            relative = "tinyshakespeare/input.txt"
            path, sha256 = find_data_file(relative), SHA256[relative]
        if not path.is_file():
            raise DataNotFoundError(f"tiny Shakespeare not found at {path}")
        return _split_text("shakespeare", read_data_text(path, sha256=sha256), path, val_fraction)
    if isinstance(name, str) and name in ("wikitext2", "wikitext-2"):
        if root is not None:
            return read_wikitext2(root)
        return read_wikitext2(data_dir("wikitext-2-raw/wiki.train.raw") / "wikitext-2-raw")
    path = name_path
    if root is not None:
        raise ValueError(f"root is only used with name='shakespeare' or 'wikitext2', got name={str(name)!r}")
    if path.is_dir():
        return read_wikitext2(path)
    if path.is_file():
        return _split_text(path.stem, _read_utf8(path), path, val_fraction)
    raise ValueError(f"unknown corpus name {str(name)!r}: expected 'shakespeare', 'wikitext2', or an existing path")


# --------------------------------------------------------------------------------------------
# Batching
# --------------------------------------------------------------------------------------------
def batches(
    ids: ArrayLike,
    batch_size: int,
    block_size: int,
    rng: np.random.Generator | int,
    *,
    num_batches: int | None = None,
) -> Iterator[tuple[NDArray[np.int64], NDArray[np.int64]]]:
    """Random training batches ``(x, y)`` of shape ``(batch_size, block_size)``, ``y`` = ``x`` shifted by one.

    Each row starts at an offset drawn uniformly from ``[0, len(ids) - block_size - 1]``, so
    ``y[b, t] = ids[o_b + t + 1]`` is the next token after ``x[b, t] = ids[o_b + t]`` — the
    autoregressive targets of the formulation paper's factorisation p(x) = Π_t p(x_t | x_<t).
    Yields ``num_batches`` batches (forever if ``None``; use ``itertools.islice``). ``rng`` is a
    ``numpy.random.Generator`` or an int seed. The arguments are checked on the call, before the
    first batch is asked for.

    Example
    -------
    >>> x, y = next(batches(np.arange(10), 2, 3, np.random.default_rng(0)))
    >>> x.shape, bool((y == x + 1).all())
    ((2, 3), True)
    """
    if ids is None or isinstance(ids, (str, bytes)):
        raise TypeError(f"ids must be a 1-D integer array (T,), got {type(ids).__name__}")
    arr = as_index_array(ids, "ids")
    if arr.ndim != 1:
        raise ValueError(f"ids must be a 1-D integer array (T,), got shape {arr.shape}")
    batch_size = check_positive_int(batch_size, "batch_size")
    block_size = check_positive_int(block_size, "block_size")
    check_size((batch_size, block_size + 1), "batches(batch_size, block_size)", limit=MAX_ELEMENTS // 8)
    if arr.shape[0] < block_size + 1:
        raise ValueError(f"ids has {arr.shape[0]} tokens; need at least block_size + 1 = {block_size + 1}")
    rng = as_generator(rng, required=True)
    if num_batches is not None:
        num_batches = check_positive_int(num_batches, "num_batches", minimum=0)
    return _batches(arr, batch_size, block_size, rng, num_batches)


def _batches(
    arr: NDArray[np.int64], batch_size: int, block_size: int, rng: np.random.Generator, num_batches: int | None
) -> Iterator[tuple[NDArray[np.int64], NDArray[np.int64]]]:
    window = np.arange(block_size + 1)  # (T + 1,)
    k = 0
    while num_batches is None or k < num_batches:
        offsets = rng.integers(0, arr.shape[0] - block_size, size=batch_size)  # (B,)
        rows = arr[offsets[:, None] + window]  # (B, T + 1)
        yield rows[:, :-1], rows[:, 1:]
        k += 1
