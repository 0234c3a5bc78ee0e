"""File formats of :class:`nextword.tokenizers.BPETokenizer` (plain text, never pickle).

The readers return a :class:`BPEFile` (the tokenizer's constructor arguments); the tokenizer's
``load``/``load_minbpe`` build it, so this module never imports the tokenizer.

**JSON format, version 1** (``BPETokenizer.save`` / ``BPETokenizer.load``), UTF-8::

    {
      "format": "nextword-bpe",
      "version": 1,
      "pattern": null,                      // or the split regex (the GPT-4 one, say)
      "merges": [[101, 32, 256], ...],      // [left, right, new_id] in rank order
      "special_tokens": {"<|endoftext|>": 1024}
    }

Ids 0–255 are the bytes; a merge's new id names the concatenation of its parts' bytes.

**minbpe ``.model`` format** (``save_minbpe`` / ``load_minbpe``), one item per line::

    minbpe v1
    <split pattern, empty line for none>
    <number of special tokens>
    <special token> <id>        (one line each)
    <left> <right>              (one merge per line; merge k creates id 256 + k)

Read and written here without minbpe's slips: the pattern line is honoured on load (minbpe's
``RegexTokenizer.load`` keeps its old compiled pattern), a special token may contain spaces (the
id is the text after the *last* space), and files are UTF-8 whatever the locale.

Example
-------
>>> import tempfile, os
>>> from nextword.tokenizers.bpe import BPETokenizer
>>> tok = BPETokenizer.train("aaabdaaabac", 259)
>>> path = os.path.join(tempfile.mkdtemp(), "tok.json")
>>> tok.save(path); BPETokenizer.load(path).merges == tok.merges
True
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import NamedTuple, Protocol

from nextword._validate import check_path

__all__ = ["FORMAT", "VERSION", "BPEFile", "save_json", "load_json", "save_minbpe", "load_minbpe"]


class BPEFile(NamedTuple):
    """What a tokenizer file holds: the constructor arguments of :class:`~nextword.tokenizers.BPETokenizer`."""

    merges: list
    pattern: str | None
    special_tokens: dict[str, int]


class _Tokenizer(Protocol):  # what the writers read (BPETokenizer has it); no import cycle
    pattern: str | None
    special_tokens: dict[str, int]

    def merge_list(self) -> list[tuple[int, int, int]]: ...


def _check_tok(tok: object) -> None:
    if not all(hasattr(tok, a) for a in ("merge_list", "pattern", "special_tokens")):
        raise TypeError(f"tok must be a BPETokenizer, got {type(tok).__name__}")


FORMAT = "nextword-bpe"
VERSION = 1


def save_json(tok: _Tokenizer, path: str | Path) -> None:
    """Write ``tok`` in the JSON format above."""
    _check_tok(tok)
    path = check_path(path, "path")
    doc = {
        "format": FORMAT,
        "version": VERSION,
        "pattern": tok.pattern,
        "merges": [list(m) for m in tok.merge_list()],
        "special_tokens": dict(tok.special_tokens),
    }
    Path(path).write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


def load_json(path: str | Path) -> BPEFile:
    """Read the JSON format; any problem is a ``ValueError`` naming ``path``."""
    path = Path(check_path(path, "path"))
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not a valid nextword BPE JSON file ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ValueError(f'{path}: not a nextword BPE file (expected "format": "{FORMAT}")')
    if doc.get("version") != VERSION:
        raise ValueError(f"{path}: unsupported version {doc.get('version')!r} (this code reads {VERSION})")
    merges, special, pattern = doc.get("merges"), doc.get("special_tokens", {}), doc.get("pattern")
    if not isinstance(merges, list) or not all(
        isinstance(m, list) and len(m) == 3 and all(type(v) is int for v in m) for m in merges
    ):
        raise ValueError(f'{path}: "merges" must be a list of [left, right, new_id] integer triples')
    if not isinstance(special, dict) or not all(type(v) is int for v in special.values()):
        raise ValueError(f'{path}: "special_tokens" must map strings to integer ids')
    if pattern is not None and not isinstance(pattern, str):
        raise ValueError(f'{path}: "pattern" must be null or a string')
    return BPEFile(merges, pattern, special)


def save_minbpe(tok: _Tokenizer, path: str | Path) -> None:
    """Write minbpe's ``.model`` format; ``ValueError`` if ``tok`` cannot be expressed in it."""
    _check_tok(tok)
    path = check_path(path, "path")
    merges = tok.merge_list()
    if any(x != 256 + k for k, (_, _, x) in enumerate(merges)):
        raise ValueError("minbpe format needs merge k to create id 256 + k")
    if tok.pattern is not None and ("\n" in tok.pattern or "\r" in tok.pattern):
        raise ValueError("minbpe format cannot store a pattern containing a line break")
    lines = ["minbpe v1", tok.pattern or "", str(len(tok.special_tokens))]
    for s, i in tok.special_tokens.items():
        if "\n" in s or "\r" in s:
            raise ValueError(f"minbpe format cannot store special token {s!r} (line break)")
        lines.append(f"{s} {i}")
    lines += [f"{a} {b}" for a, b, _ in merges]
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8", newline="\n")


def load_minbpe(path: str | Path) -> BPEFile:
    """Read minbpe's ``.model`` format; any problem is a ``ValueError`` naming ``path``."""
    path = Path(check_path(path, "path"))
    try:
        lines = path.read_bytes().decode("utf-8").split("\n")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 ({exc})") from None
    lines = [ln[:-1] if ln.endswith("\r") else ln for ln in lines]
    try:
        if lines[0] != "minbpe v1":
            raise ValueError(f"first line must be 'minbpe v1', got {lines[0][:40]!r}")
        pattern = lines[1] or None
        n_special = int(lines[2])
        if n_special < 0:
            raise ValueError("negative number of special tokens")
        if len(lines) < 3 + n_special:
            raise ValueError("file ends inside the special-token lines")
        special: dict[str, int] = {}
        for ln in lines[3 : 3 + n_special]:
            s, _, i = ln.rpartition(" ")
            if not s:
                raise ValueError(f"bad special-token line {ln!r}")
            special[s] = int(i)
        merges = []
        for ln in lines[3 + n_special :]:
            if not ln.strip():
                continue
            a, b = ln.split()
            merges.append((int(a), int(b), 256 + len(merges)))
    except (ValueError, TypeError, IndexError) as exc:
        raise ValueError(f"{path}: not a valid minbpe model file ({exc})") from None
    return BPEFile(merges, pattern, special)
