"""Character-level tokenizer for the character-level experiments (re-exported by :mod:`nextword.tokenizers`).

Vocabulary = the distinct characters of a training text (sorted by code point); id 0 is reserved
for characters never seen in training, so any ``str`` can be encoded (lone surrogates included).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from nextword._validate import check_iterable

__all__ = ["CharTokenizer"]


class CharTokenizer:
    """Character-level tokenizer: id 0 is reserved for unknown characters, then one id per character.

    Example
    -------
    >>> tok = CharTokenizer.train("hello")
    >>> tok.chars, tok.encode("help!")
    ('ehlo', [2, 1, 3, 0, 0])
    >>> tok.decode([2, 1, 3, 0])
    'hel\\ufffd'
    """

    UNK: int = 0

    def __init__(self, chars: Iterable[str], *, unk_token: str = "\ufffd") -> None:
        chars = check_iterable(chars, "chars", "a string or a sequence of single characters", allow_str=True)
        if any(not isinstance(c, str) or len(c) != 1 for c in chars):
            raise ValueError("chars must be single characters")
        if len(set(chars)) != len(chars):
            raise ValueError("chars must be distinct")
        if not isinstance(unk_token, str):
            raise TypeError(f"unk_token must be a string (what decode writes for the unknown id), got {unk_token!r}")
        self.chars = "".join(chars)
        self.unk_token = unk_token
        self._codes = np.array([ord(c) for c in chars], dtype=np.int64)
        self._order = np.argsort(self._codes)
        self._sorted = self._codes[self._order]
        self._itos = [unk_token] + chars

    @classmethod
    def train(cls, text: str, **kwargs: Any) -> CharTokenizer:
        """Vocabulary = the sorted distinct characters of ``text``."""
        if not isinstance(text, str):
            raise TypeError(f"text must be str, got {type(text).__name__}")
        return cls(sorted(set(text)), **kwargs)

    @property
    def vocab_size(self) -> int:
        """``len(chars) + 1`` (the unknown id)."""
        return len(self._itos)

    def encode_array(self, text: str) -> np.ndarray:
        """Ids as an int64 array of shape ``(len(text),)``; unknown characters → :attr:`UNK`."""
        if not isinstance(text, str):
            raise TypeError(f"text must be str, got {type(text).__name__}")
        cps = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4").astype(np.int64)
        if not len(self._sorted):
            return np.zeros(len(cps), dtype=np.int64)
        k = np.searchsorted(self._sorted, cps).clip(0, len(self._sorted) - 1)
        hit = self._sorted[k] == cps
        return np.where(hit, self._order[k] + 1, self.UNK).astype(np.int64)

    def encode(self, text: str) -> list[int]:
        """List of ids (see :meth:`encode_array`)."""
        return self.encode_array(text).tolist()

    def decode(self, ids: Iterable[int] | np.ndarray) -> str:
        """Characters of ``ids``; :attr:`UNK` becomes ``unk_token``; other bad ids → ``ValueError``."""
        arr = np.asarray(
            check_iterable(ids, "ids", "a 1-D sequence of integer token ids")
            if not isinstance(ids, np.ndarray)
            else ids
        )
        if arr.size == 0:
            return ""
        if arr.ndim != 1 or not np.issubdtype(arr.dtype, np.integer):
            raise ValueError(f"ids must be a 1-D sequence of ints, got shape {arr.shape} dtype {arr.dtype}")
        if arr.min() < 0 or arr.max() >= self.vocab_size:
            raise ValueError(f"ids must lie in [0, {self.vocab_size}), got range [{arr.min()}, {arr.max()}]")
        return "".join(map(self._itos.__getitem__, arr.tolist()))
