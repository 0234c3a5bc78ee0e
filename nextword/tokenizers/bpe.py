"""Tokenisers: byte-level BPE, symbol-level BPE for worked examples, and a character tokeniser.

The formulation paper (Baptista, Stuart, Tran, §2.2) starts every model here: text is a
sequence over a finite vocabulary V, and byte-pair encoding (BPE) builds V by repeatedly merging
the most frequent adjacent pair.

* :func:`learn_bpe` — symbol-level BPE on any sequence (Example 2.1: ``abcababc → dcddc → ede``).
* :class:`BPETokenizer` — byte-level BPE: 256 base tokens (the bytes of UTF-8), merges learned by
  :func:`nextword.tokenizers.trainer.train_merges` (exact minbpe / tiktoken-educational tie rule, or
  Hugging Face's with ``tie_break="hf"``), optional GPT-2/GPT-4 split patterns, special tokens,
  JSON save/load (and minbpe's ``.model`` text format, :mod:`nextword.tokenizers.formats`).
* :class:`CharTokenizer` — one id per character seen in training, id 0 reserved for unknown.

Example
-------
>>> tok = BPETokenizer.train("low lower lowest " * 20, 260)
>>> ids = tok.encode("lowest low")
>>> tok.decode(ids)
'lowest low'
>>> len(ids) < len("lowest low")
True
"""

from __future__ import annotations

import array
import re
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from itertools import chain
from operator import itemgetter
from pathlib import Path
from typing import Any

import numpy as np

from nextword._validate import check_iterable, check_path, check_positive_int, check_str_collection
from nextword.tokenizers.characters import CharTokenizer
from nextword.tokenizers.piece_table import PieceTable, WordTable
from nextword.tokenizers.split_ascii import WHITESPACE, split_starts
from nextword.tokenizers.formats import BPEFile, load_json, load_minbpe, save_json, save_minbpe
from nextword.tokenizers.trainer import BPEResult, learn_bpe, train_merges

__all__ = ["BPEResult", "learn_bpe", "BPETokenizer", "CharTokenizer", "SPLIT_PATTERNS", "train_merges"]

#: Split patterns of GPT-2 and GPT-4 (cl100k), as in minbpe / tiktoken; need the ``regex`` module.
SPLIT_PATTERNS: dict[str, str] = {
    "gpt2": r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""",
    "gpt4": r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+""",
}
_SHIFT = 21
_SURROGATE = re.compile("[\ud800-\udfff]")
_CACHE_LIMIT = 1 << 18
_TABLE_MIN = 8192  # characters from which ASCII text is split and looked up with numpy (GPT-4 pattern;
# below it the per-piece str cache is faster: 0.10 vs 0.23 ms at 2,048 characters, 0.82 vs 0.61 ms at 16,384)
_PAD = 16  # bytes per row of the padded decoding table (tokens up to this long take the fast path)


# The named patterns restricted to ASCII text, for Python's ``re`` (about twice as fast as the
# ``regex`` module on them): on ASCII characters \p{L} is [A-Za-z], \p{N} is [0-9] and the regex
# module's \s is WHITESPACE, [\t\n\x0b\x0c\r ] (``re``'s own \s would add \x1c-\x1f, so it is spelled out).
_S = "".join(f"\\x{c:02x}" for c in WHITESPACE)  # the same characters as escapes, for a character class
_ASCII_PATTERNS: dict[str, str] = {
    SPLIT_PATTERNS["gpt2"]: (
        rf"""'(?:[sdmt]|ll|ve|re)| ?[A-Za-z]+| ?[0-9]+| ?[^{_S}A-Za-z0-9]+|[{_S}]+(?![^{_S}])|[{_S}]+"""
    ),
    SPLIT_PATTERNS["gpt4"]: (
        rf"""'(?i:[sdmt]|ll|ve|re)|[^\r\nA-Za-z0-9]?+[A-Za-z]+|[0-9]{{1,3}}| ?[^{_S}A-Za-z0-9]++[\r\n]*"""
        rf"""|[{_S}]*[\r\n]|[{_S}]+(?![^{_S}])|[{_S}]+"""
    ),
}


class _Splitter:
    """``findall`` of a split pattern: the ``regex`` module's, or for ASCII text and a named pattern
    the same split by ``re`` (``str.isascii`` is a flag lookup, so the test costs nothing)."""

    __slots__ = ("_full", "_ascii")

    def __init__(self, full: Any, ascii_pattern: str | None) -> None:
        self._full = full
        self._ascii = re.compile(ascii_pattern) if ascii_pattern is not None else None

    def findall(self, text: str) -> list[str]:
        if self._ascii is not None and text.isascii():
            return self._ascii.findall(text)
        return self._full.findall(text)


def _compile(pattern: str | None) -> _Splitter | None:
    """Compile a split pattern (name or regex) with the ``regex`` module; ``None`` → no split."""
    if pattern is None:
        return None
    if not isinstance(pattern, str):
        raise TypeError(f"pattern must be None, 'gpt2', 'gpt4' or a regex string, got {type(pattern).__name__}")
    try:
        import regex
    except ImportError as exc:  # pragma: no cover - regex ships with the dev environment
        raise ImportError("split patterns need the 'regex' package (pip install regex)") from exc
    full = SPLIT_PATTERNS.get(pattern, pattern)
    try:
        return _Splitter(regex.compile(full), _ASCII_PATTERNS.get(full))
    except regex.error as exc:
        raise ValueError(f"pattern {pattern!r} is not a valid regex: {exc}") from None


def _utf8(text: str, errors: str) -> bytes:
    """UTF-8 bytes of ``text``; lone surrogates per ``errors`` (see :meth:`BPETokenizer.encode`)."""
    if errors == "replace":
        text = _SURROGATE.sub("\ufffd", text)
        errors = "strict"
    try:
        return text.encode("utf-8", errors)
    except UnicodeEncodeError as exc:
        raise ValueError(
            f"text contains a lone surrogate {text[exc.start]!r} at index {exc.start}, which UTF-8 "
            "cannot encode; pass errors='replace' (→ U+FFFD) or errors='surrogatepass'"
        ) from None


class BPETokenizer:
    """Byte-level BPE tokenizer (formulation paper §2.2; GPT-2 style byte fallback).

    Ids 0–255 are the bytes; merge ``k`` creates id ``256 + k`` (its bytes are the concatenation
    of its two parts); special tokens follow. Build one with :meth:`train` or :meth:`load`.

    Parameters
    ----------
    merges:
        ``[(left, right, new_id), ...]`` in rank order, as returned by ``train_merges``.
    pattern:
        ``None`` (encode the raw byte stream), ``"gpt2"``, ``"gpt4"`` or a regex: text is split
        into chunks first and merges never cross a chunk boundary.
    special_tokens:
        ``{string: id}``; ids must not collide with byte or merge ids.
    """

    def __init__(
        self,
        merges: Iterable[Sequence[int]] = (),
        *,
        pattern: str | None = None,
        special_tokens: Mapping[str, int] | None = None,
    ) -> None:
        if pattern is not None and not isinstance(pattern, str):
            raise TypeError(f"pattern must be None, 'gpt2', 'gpt4' or a regex string, got {type(pattern).__name__}")
        self.pattern: str | None = SPLIT_PATTERNS.get(pattern, pattern) if pattern else None
        self._split = _compile(self.pattern)
        vocab: dict[int, bytes] = {i: bytes([i]) for i in range(256)}
        self._merges: dict[tuple[int, int], int] = {}
        self._ranks: dict[int, tuple[int, int]] = {}  # pair code → (rank, new id)
        for rank, m in enumerate(check_iterable(merges, "merges", "a sequence of (left, right, new_id) triples")):
            if type(m) is tuple and len(m) == 3 and type(m[0]) is type(m[1]) is type(m[2]) is int and min(m) >= 0:
                a, b, x = m  # train_merges' and merge_list's triples: nothing to convert
            elif isinstance(m, (str, bytes)) or not isinstance(m, Sequence) or len(m) != 3:
                raise ValueError(f"merges[{rank}] must be (left, right, new_id), got {m!r}")
            else:
                a, b, x = (check_positive_int(v, f"merges[{rank}]", minimum=0) for v in m)  # 97.5 refused
            if a not in vocab or b not in vocab:
                raise ValueError(f"merge {rank} uses an unknown id: {(a, b)}")
            if (a, b) in self._merges:
                raise ValueError(f"merge {rank} repeats the pair {(a, b)}")
            if x >= (1 << _SHIFT) or x < 0:
                raise ValueError(f"merge {rank}: new id {x} out of range [0, {1 << _SHIFT})")
            if x in vocab and vocab[x] != vocab[a] + vocab[b]:
                raise ValueError(f"merge {rank}: id {x} already names different bytes")
            vocab[x] = vocab[a] + vocab[b]
            self._merges[(a, b)] = x
            self._ranks[(a << _SHIFT) | b] = (rank, x)
        if special_tokens is not None and not isinstance(special_tokens, Mapping):
            raise TypeError(f"special_tokens must be a mapping {{string: id}}, got {type(special_tokens).__name__}")
        self.special_tokens: dict[str, int] = {}
        for s, i in (special_tokens or {}).items():
            if not isinstance(s, str) or not s:
                raise ValueError(f"special_tokens: each special token must be a non-empty str, got {s!r}")
            i = check_positive_int(i, f"special_tokens: the id of special token {s!r}", minimum=0)  # "300" refused
            if not i < 1 << 24:
                raise ValueError(f"special token {s!r}: id {i} out of range [0, 2**24)")
            if i in vocab:
                raise ValueError(f"special token {s!r} has id {i}, already used by a byte or merge")
            vocab[i] = s.encode("utf-8")
            self.special_tokens[s] = i
        if len(set(self.special_tokens.values())) != len(self.special_tokens):
            raise ValueError("special token ids must be distinct")
        self._vocab = vocab
        self._inverse_special = {int(i): s for s, i in self.special_tokens.items()}
        self._rank_of = {code: r for code, (r, _) in self._ranks.items()}  # pair code → rank
        self._new_ids = [x for x in self._merges.values()]  # rank → new id
        self._special_re = (
            re.compile("|".join(re.escape(s) for s in sorted(self.special_tokens, key=len, reverse=True)))
            if self.special_tokens
            else None
        )
        # decoding tables, built in O(vocabulary) whatever the largest id (a special id may be
        # near 2**24): token bytes in id order, and for a dense id range a list indexed by id
        known = sorted(vocab)
        self._ids = np.array(known, dtype=np.int64)  # (V,) sorted ids
        self._lens = np.array([len(vocab[i]) for i in known], dtype=np.int64)  # (V,)
        self._offs = np.cumsum(self._lens) - self._lens  # (V,) start of each token in _buf
        self._buf = np.frombuffer(b"".join(vocab[i] for i in known), dtype=np.uint8)
        size = known[-1] + 1
        self._table: list[bytes | None] | None = None
        self._slot: np.ndarray | None = None
        if size <= 4 * len(known) + 1024:  # dense: a list indexed by id, padded with None so
            table: list[bytes | None] = [None] * (2 * size)  # that negative ids hit a None too
            for i in known:
                table[i] = vocab[i]
            self._table = table
            self._slot = np.full(size, -1, dtype=np.int64)  # (size,) id -> index into _ids
            self._slot[self._ids] = np.arange(len(known))
            # for arrays: every token's bytes in a row of _PAD bytes (zero-padded), and its length
            # (255 for an unknown id or a token longer than a row): decoding is two gathers and a
            # compress (see decode_bytes)
            col = np.arange(_PAD)  # (_PAD,)
            fits = self._lens <= _PAD  # (V,)
            rows = np.where(
                col < self._lens[:, None], self._buf[np.minimum(self._offs[:, None] + col, self._buf.size - 1)], 0
            )
            self._rows = np.zeros((size, _PAD), dtype=np.uint8)  # (size, _PAD)
            self._rows[self._ids[fits]] = rows[fits]
            self._rows_v = self._rows.view(f"V{_PAD}")[:, 0]  # (size,) one opaque item per row
            self._row_len = np.full(size, 255, dtype=np.uint8)  # (size,)
            self._row_len[self._ids[fits]] = self._lens[fits]
            self._row_mask_v = (col < self._row_len[:, None]).view(f"V{_PAD}")[:, 0]  # (size,) which bytes count
        self._cache: dict[str, bytes] = {}  # piece → its ids as int32 bytes (a join is a memcpy)
        self._merge_table: tuple[WordTable, np.ndarray, np.ndarray] | None = None
        self._pieces = PieceTable(self._merge_pieces, _CACHE_LIMIT)  # the same, for long ASCII text

    # ------------------------------------------------------------------ training
    @classmethod
    def train(
        cls,
        text: str,
        vocab_size: int,
        *,
        pattern: str | None = None,
        tie_break: str = "first",
        special_tokens: Sequence[str] = (),
        progress: bool = False,
    ) -> BPETokenizer:
        """Learn ``vocab_size - 256 - len(special_tokens)`` merges on ``text``.

        The merge rule is exact (see :mod:`nextword.tokenizers.trainer`): most frequent adjacent pair,
        ties to the leftmost first occurrence (``tie_break="first"``, = minbpe, tiktoken's
        educational trainer) or to the smallest pair in HF id order (``tie_break="hf"``, = HF
        ``tokenizers`` with the GPT-2 split). With a ``pattern``, each distinct chunk is counted
        once with its frequency. If the text runs out of pairs, fewer merges are learned. Special
        tokens get the ids right after the merges.
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be str, got {type(text).__name__}")
        specials = check_str_collection(special_tokens, "special_tokens")
        if isinstance(vocab_size, bool) or not isinstance(vocab_size, (int, np.integer)):
            raise TypeError(f"vocab_size must be an int, got {type(vocab_size).__name__}")
        if vocab_size < 256 + len(specials):
            raise ValueError(
                f"vocab_size must be >= 256 + len(special_tokens) = {256 + len(specials)}, got {vocab_size}"
            )
        if len(set(specials)) != len(specials):
            raise ValueError("special_tokens must be distinct")
        if vocab_size - len(specials) >= 1 << _SHIFT:
            raise ValueError(
                f"vocab_size must be < 2**{_SHIFT} + len(special_tokens) = "
                f"{(1 << _SHIFT) + len(specials)} (token ids are packed in {_SHIFT} bits), "
                f"got {vocab_size}"
            )
        split = _compile(pattern)
        data = _utf8(text, "strict")  # a lone surrogate is refused here, at its index in the text
        if split is None:
            chunks, weights = [data], None
        else:
            counts = Counter(split.findall(text))  # distinct chunks in order of first appearance
            chunks = list(map(str.encode, counts))
            weights = np.fromiter(counts.values(), np.int64, len(counts))  # (chunks,) nothing to check
        merges = train_merges(
            chunks, int(vocab_size) - 256 - len(specials), weights=weights, tie_break=tie_break, progress=progress
        )
        first = max([255] + [x for _, _, x in merges]) + 1
        return cls(merges, pattern=pattern, special_tokens={s: first + k for k, s in enumerate(specials)})

    # ------------------------------------------------------------------ views
    @property
    def merges(self) -> dict[tuple[int, int], int]:
        """Ordered mapping ``(left, right) → new id`` (insertion order = merge rank)."""
        return dict(self._merges)

    @property
    def vocab(self) -> dict[int, bytes]:
        """Mapping ``id → bytes`` for every token, special tokens included (their UTF-8)."""
        return dict(self._vocab)

    @property
    def vocab_size(self) -> int:
        """Number of distinct token ids (bytes + merges + special tokens)."""
        return len(self._vocab)

    def token_bytes(self, token_id: int) -> bytes:
        """The bytes of one token; ``ValueError`` for an unknown id."""
        if int(token_id) not in self._vocab:
            raise ValueError(f"unknown token id {token_id}")
        return self._vocab[int(token_id)]

    def __repr__(self) -> str:
        pat = next((k for k, v in SPLIT_PATTERNS.items() if v == self.pattern), self.pattern)
        return f"BPETokenizer(vocab_size={self.vocab_size}, pattern={pat!r}, special={len(self.special_tokens)})"

    # ------------------------------------------------------------------ encoding
    def _encode_bytes(self, data: bytes) -> list[int]:
        """Apply the merges to one chunk: lowest-rank pair first, all its occurrences, repeat.

        Short chunks: find the lowest-rank pair, replace its leftmost occurrence, rescan. Since a
        new token never forms the pair it came from, repeated leftmost replacement is the same as
        one left-to-right pass over all occurrences (minbpe's ``merge``).
        """
        ids = list(data)
        if len(ids) > 64:
            return self._encode_long(ids)
        rank_of, new_ids, none = self._rank_of.get, self._new_ids, len(self._new_ids)
        while len(ids) >= 2:
            best, k, prev = none, -1, ids[0]
            for i in range(1, len(ids)):
                cur = ids[i]
                r = rank_of((prev << _SHIFT) | cur, none)
                if r < best:
                    best, k = r, i
                prev = cur
            if k < 0:
                break
            ids[k - 1 : k + 1] = [new_ids[best]]
        return ids

    def _encode_long(self, ids: list[int]) -> list[int]:
        """Same result for long chunks: replay the merges in rank order on a linked list.

        Positions of every pair that is a merge are grouped with numpy; the pass for merge ``r``
        visits only its own occurrences (left to right) and files the new pairs it creates under
        their own, later, ranks — O(n log n + occurrences) instead of O(merges × n).
        """
        ranks = self._ranks
        arr = np.asarray(ids, dtype=np.int64)  # (n,)
        n = arr.shape[0]
        codes = (arr[:-1] << _SHIFT) | arr[1:]  # (n - 1,) pair code at each left position
        uniq, inv = np.unique(codes, return_inverse=True)
        rank_of = np.array([ranks.get(c, (-1, 0))[0] for c in uniq.tolist()], dtype=np.int64)
        pos = np.nonzero(rank_of[inv] >= 0)[0]  # positions holding a mergeable pair
        order = np.argsort(rank_of[inv][pos], kind="stable")  # by rank, then position
        pos_sorted = pos[order]
        r_sorted = rank_of[inv][pos_sorted]
        bounds = np.flatnonzero(np.diff(r_sorted)) + 1
        buckets: dict[int, list[int]] = {
            int(r_sorted[g[0]]): p.tolist()
            for g, p in zip(np.split(np.arange(len(pos_sorted)), bounds), np.split(pos_sorted, bounds))
            if len(g)
        }
        merge_list = list(self._merges.items())
        tok = arr.tolist()
        nxt = list(range(1, n + 1))
        nxt[-1] = -1
        prv = list(range(-1, n - 1))
        while buckets:
            r = min(buckets)
            lst = buckets.pop(r)
            (a, b), x = merge_list[r]
            xs = x << _SHIFT
            for i in lst:
                if tok[i] != a:
                    continue
                j = nxt[i]
                if j < 0 or tok[j] != b:
                    continue
                q, p = nxt[j], prv[i]
                tok[i], tok[j] = x, -1
                nxt[i] = q
                if q >= 0:
                    prv[q] = i
                    rr = ranks.get(xs | tok[q])
                    if rr is not None:
                        buckets.setdefault(rr[0], []).append(i)
                if p >= 0:
                    rr = ranks.get((tok[p] << _SHIFT) | x)
                    if rr is not None:
                        buckets.setdefault(rr[0], []).append(p)
        return [t for t in tok if t >= 0]

    def _merge_arrays(self) -> tuple[WordTable, np.ndarray, np.ndarray]:
        """The merges for vectorised lookup, built on first use: a :class:`WordTable` from pair code
        (first word; second 0) to rank, the new id of each rank (M,), and the rank of every byte
        pair (65536,) (``len(merges)`` where a pair is not a merge)."""
        if self._merge_table is None:
            codes = np.fromiter(self._rank_of, np.int64, len(self._rank_of))  # (M,) pair codes
            ranks = np.fromiter(self._rank_of.values(), np.int64, len(self._rank_of))  # (M,)
            pairs = WordTable()
            pairs.put(codes.astype(np.uint64), np.zeros(len(codes), dtype=np.uint64), ranks)
            left, right = codes >> _SHIFT, codes & ((1 << _SHIFT) - 1)
            byte_pairs = np.full(1 << 16, len(codes), dtype=np.int64)  # (65536,)
            both = (left < 256) & (right < 256)
            byte_pairs[(left[both] << 8) | right[both]] = ranks[both]
            self._merge_table = (pairs, np.asarray(self._new_ids, dtype=np.int64), byte_pairs)
        return self._merge_table

    def _merge_many(self, data: bytes, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`_encode_bytes` of many short pieces at once, vectorised over the pieces: ``data``
        holds the pieces' bytes back to back, ``n`` (P,) their lengths (each at least 1); returns the
        ids of all pieces concatenated (N,) and the number of ids of each piece (P,).

        Each piece is a row of a (P, L) id array (padded with −1) with the ranks of its adjacent
        pairs beside it (P, L−1). Every round merges, in every row that still has a mergeable pair,
        the lowest-rank pair at its leftmost position (``argmin`` returns the first minimum), deletes
        the right half, and looks up only the two pairs the new token forms — the same merges, in the
        same order, as the per-piece loop. The rows still merging are kept apart in compact int32
        arrays (``W``, ``Rw``): a row with nothing left to merge is written back and leaves them, and
        their width is cut to the longest row left (every round shortens each row by one).
        """
        pairs, new_ids, byte_pairs = self._merge_arrays()
        none = len(new_ids)  # larger than every rank

        def rank(left: np.ndarray, right: np.ndarray) -> np.ndarray:  # (m,), (m,) ids ≥ 0 → (m,) ranks
            code = (left.astype(np.uint64) << np.uint64(_SHIFT)) | right.astype(np.uint64)
            r = pairs.find(code, np.zeros(len(code), dtype=np.uint64))
            return np.where(r < 0, none, r)

        L = int(n.max())
        col = np.arange(L)
        ids = np.full((len(n), L), -1, dtype=np.int32)  # (P, L) the result, rows written back when done
        ids[col < n[:, None]] = np.frombuffer(data, dtype=np.uint8)
        R = byte_pairs[(ids[:, :-1] << 8) | ids[:, 1:]].astype(np.int32)  # (P, L−1) ranks of the byte pairs
        R[ids[:, 1:] < 0] = none  # pairs that reach into the padding
        active = np.flatnonzero(R.min(1, initial=none) < none)  # (A,) rows with a merge left
        W, Rw, left = ids[active], R[active], n[active]  # (A, w) ids, (A, w−1) ranks, (A,) ids per row
        w = L
        k = Rw.argmin(1) if active.size else active  # (A,) leftmost lowest-rank pair of each row
        while active.size:
            a = np.arange(active.size)
            x = new_ids[Rw[a, k]].astype(np.int32)  # (A,) the merged token
            W[a, k] = x
            after = col[: w - 2] >= k[:, None]  # (A, w−2) pairs from k on; ids from k + 1 on
            np.copyto(W[:, 1:-1], W[:, 2:], where=after)  # delete position k + 1
            np.copyto(Rw[:, :-1], Rw[:, 1:], where=after)  # delete pair k
            left -= 1
            W[a, left] = -1  # the last id moved left by one
            Rw[a, left - 1] = none
            has = np.flatnonzero(k > 0)  # the pair (left neighbour, x)
            Rw[has, k[has] - 1] = rank(W[has, k[has] - 1], x[has])
            has = np.flatnonzero(k < left - 1)  # the pair (x, right neighbour)
            Rw[has, k[has]] = rank(x[has], W[has, k[has] + 1])
            w = int(left.max())
            W, Rw = W[:, :w], Rw[:, : w - 1]
            if w > 1:
                k = Rw.argmin(1)  # the next round's pairs
                done = Rw[a, k] >= none  # (A,) nothing left to merge
            else:
                done = np.ones(active.size, dtype=bool)
            if done.any():
                ids[active[done]] = -1
                ids[active[done], :w] = W[done]
                keep = ~done
                active, W, Rw, left, k = active[keep], W[keep], Rw[keep], left[keep], k[keep]
        keep = ids >= 0  # (P, L)
        return ids[keep], keep.sum(1)

    def encode_ordinary(self, text: str, *, errors: str = "strict") -> list[int]:
        """Encode ``text`` ignoring special tokens (their text is encoded as ordinary bytes)."""
        if not isinstance(text, str):
            raise TypeError(f"text must be str, got {type(text).__name__}")
        if errors not in ("strict", "replace", "surrogatepass"):
            raise ValueError(f"errors must be 'strict', 'replace' or 'surrogatepass', got {errors!r}")
        if self._split is None:
            return self._encode_bytes(_utf8(text, errors))
        if len(text) >= _TABLE_MIN and self.pattern == SPLIT_PATTERNS["gpt4"] and text.isascii():
            data = text.encode("ascii")  # long ASCII text: split and look up with numpy
            return self._pieces.ids(data, split_starts(data))
        if errors == "replace":
            text = _SURROGATE.sub("\ufffd", text)
        return self._encode_pieces(text, errors)

    def _encode_pieces(self, text: str, errors: str = "strict") -> list[int]:
        """Split ``text`` with the pattern and encode each piece (per-piece cache of int32 bytes; the
        pieces not yet cached are merged all at once by :meth:`_learn_pieces`)."""
        pieces = self._split.findall(text)
        if errors == "surrogatepass":  # bytes no other call produces: an uncached, per-piece path
            encoded: dict[str, list[int]] = {}
            for ch in set(pieces):
                encoded[ch] = self._encode_bytes(_utf8(ch, errors))
            return list(chain.from_iterable(map(encoded.__getitem__, pieces)))
        cache = self._cache
        try:
            joined = b"".join(map(cache.__getitem__, pieces))
        except KeyError:  # some pieces not seen yet: merge each new one once
            if len(cache) > _CACHE_LIMIT:
                cache.clear()
            self._learn_pieces(list(set(pieces).difference(cache)))
            joined = b"".join(map(cache.__getitem__, pieces))
        return np.frombuffer(joined, dtype=np.int32).tolist()

    def _learn_pieces(self, new: list[str]) -> None:
        """Add the ids of pieces not yet cached to the piece cache: pieces up to 64 bytes long all at
        once (:meth:`_merge_many`), longer ones one by one (:meth:`_encode_bytes`)."""
        if not new:
            return
        joined = "".join(new)
        if joined.isascii():  # one byte per character: encode the concatenation once
            data, n = joined.encode("ascii"), np.fromiter(map(len, new), np.int64, len(new))
        else:
            raw = [_utf8(p, "strict") for p in new]
            data, n = b"".join(raw), np.fromiter(map(len, raw), np.int64, len(raw))
        flat, counts = self._merge_pieces(data, n)
        buf, stop = flat.astype(np.int32).tobytes(), (4 * np.cumsum(counts)).tolist()
        self._cache.update(zip(new, map(buf.__getitem__, map(slice, [0, *stop[:-1]], stop))))

    def _merge_pieces(self, data: bytes, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`_merge_many` for pieces of any length: ``data`` holds them back to back, ``n`` (P,)
        their lengths; pieces over 64 bytes (few) are merged one by one by :meth:`_encode_bytes`.
        Returns the ids of all pieces concatenated (N,) and the number of ids of each piece (P,)."""
        long = n > 64  # (P,)
        if not long.any():
            return self._merge_many(data, n)
        end = np.cumsum(n).tolist()
        pieces = [data[e - k : e] for e, k in zip(end, n.tolist())]
        short = [p for p, lg in zip(pieces, long.tolist()) if not lg]
        flat, counts = self._merge_many(b"".join(short), n[~long]) if short else (np.zeros(0, np.int32), n[:0])
        merged = iter(np.split(flat, np.cumsum(counts)[:-1]) if short else [])
        out = [
            np.asarray(self._encode_bytes(p), np.int32) if lg else next(merged) for p, lg in zip(pieces, long.tolist())
        ]
        return np.concatenate(out), np.fromiter(map(len, out), np.int64, len(out))

    def encode(
        self, text: str, *, allowed_special: str | Collection[str] = "none_raise", errors: str = "strict"
    ) -> list[int]:
        """Encode ``text`` into token ids.

        Parameters
        ----------
        allowed_special:
            ``"all"`` (every registered special token string becomes its id), ``"none"`` (treat
            them as ordinary text), ``"none_raise"`` (default: ``ValueError`` if one occurs), or
            a collection of special-token strings to allow.
        errors:
            Lone surrogates (``"\\ud800"``; valid ``str``, not encodable in UTF-8): ``"strict"``
            raises ``ValueError`` naming the index; ``"replace"`` substitutes U+FFFD (lossy);
            ``"surrogatepass"`` encodes them as the 3 bytes CESU would use, so
            ``decode(..., errors="surrogatepass")`` gives them back.
        """
        if allowed_special == "none":
            return self.encode_ordinary(text, errors=errors)
        if allowed_special == "none_raise":
            if self._special_re is not None and (m := self._special_re.search(text)):
                raise ValueError(
                    f"text contains the special token {m.group()!r} at index {m.start()}; "
                    "pass allowed_special='all' (or a set) to encode it as a special id"
                )
            return self.encode_ordinary(text, errors=errors)
        if allowed_special == "all":
            allowed = set(self.special_tokens)
        elif isinstance(allowed_special, str):
            raise ValueError(f"allowed_special must be 'all', 'none', 'none_raise' or a set, got {allowed_special!r}")
        elif isinstance(allowed_special, (bytes, bytearray)) or not isinstance(allowed_special, Collection):
            raise TypeError(
                f"allowed_special must be 'all', 'none', 'none_raise' or a set of str, got {allowed_special!r}"
            )
        else:
            allowed = set(allowed_special)
            unknown = allowed - set(self.special_tokens)
            if unknown:
                raise ValueError(f"allowed_special names unregistered special tokens: {sorted(unknown)}")
        if not allowed:
            return self.encode_ordinary(text, errors=errors)
        pat = re.compile("(" + "|".join(re.escape(s) for s in sorted(allowed, key=len, reverse=True)) + ")")
        out: list[int] = []
        for k, part in enumerate(pat.split(text)):
            if k % 2:
                out.append(self.special_tokens[part])
            elif part:
                out.extend(self.encode_ordinary(part, errors=errors))
        return out

    def encode_batch(self, texts: Iterable[str], **kwargs: Any) -> list[list[int]]:
        """``[encode(t, **kwargs) for t in texts]`` (the chunk cache is shared)."""
        return [self.encode(t, **kwargs) for t in texts]

    # ------------------------------------------------------------------ decoding
    def decode_bytes(self, ids: Iterable[int] | np.ndarray) -> bytes:
        """Concatenated token bytes; ``ValueError`` on an unknown id, a non-integer or a wrong rank.

        A list or tuple is decoded by a C-level gather from a table indexed by id (unknown ids,
        negative ids and non-integers fail the gather and are then reported by the array path),
        in blocks of 2,048 ids: ``bytes.join`` keeps a buffer record per item, and a block's
        records stay in the CPU cache. A bool (``True`` would index id 1) can only have produced
        the bytes 0x00 or 0x01, so the list is searched for one only if the output holds either.
        An integer array whose tokens are all at most 16 bytes long is decoded by gathering their
        zero-padded 16-byte rows and dropping the padding (one boolean compress); other arrays and
        iterables go through a numpy gather of the bytes themselves.
        """
        if isinstance(ids, (str, bytes)) or ids is None or not isinstance(ids, (Iterable, np.ndarray)):
            raise TypeError(f"ids must be a 1-D sequence of integer token ids, got {type(ids).__name__}")
        if isinstance(ids, np.ndarray) and ids.dtype == np.bool_:
            raise TypeError("ids must be integer token ids, got dtype bool")
        table = self._table
        if table is not None and isinstance(ids, (list, tuple)):
            out = None
            try:
                if len(ids) > 1:
                    step = 2048
                    out = b"".join(
                        [
                            b"".join(itemgetter(*block)(table)) if len(block) > 1 else table[block[0]]
                            for block in map(
                                ids.__getitem__,
                                map(slice, range(0, len(ids), step), range(step, len(ids) + step, step)),
                            )
                        ]
                    )
                elif len(ids) == 1:
                    out = table[ids[0]]  # type: ignore[index]
                else:
                    return b""
            except (TypeError, IndexError):
                pass  # an unknown id or a non-integer: the array path names it
            if out is not None and not ((b"\x00" in out or b"\x01" in out) and bool in set(map(type, ids))):
                return out
        if not isinstance(ids, np.ndarray):
            seq = ids if isinstance(ids, (list, tuple)) else list(ids)
            for t in seq:
                if isinstance(t, (bool, np.bool_)):  # True would decode as id 1
                    raise TypeError(f"ids must be integer token ids, got the bool {t!r}")
            try:  # C-speed int64 conversion that refuses floats and strings
                ids = np.frombuffer(array.array("q", seq), dtype=np.int64)
            except (TypeError, OverflowError):
                ids = np.asarray(seq)  # only to report the problem below
        if ids.size == 0:
            return b""
        if ids.ndim != 1 or not np.issubdtype(ids.dtype, np.integer):
            raise ValueError(f"ids must be a 1-D sequence of ints, got shape {ids.shape} dtype {ids.dtype}")
        if table is not None and ids.min() >= 0 and ids.max() < len(self._row_len):
            lens = self._row_len[ids]  # (T,) bytes per token; 255: unknown id or a long token
            if lens.max() <= _PAD:
                rows = np.take(self._rows_v, ids).view(np.uint8)  # (T·_PAD,) padded bytes
                return np.compress(np.take(self._row_mask_v, ids).view(np.bool_), rows).tobytes()
        if self._slot is not None:  # dense ids: direct lookup
            bad = (ids < 0) | (ids >= len(self._slot))
            slot = self._slot[np.where(bad, 0, ids)]  # (T,) index into _ids
            bad |= slot < 0
        else:  # sparse ids (a special id far above the rest): binary search
            slot = np.minimum(np.searchsorted(self._ids, ids), len(self._ids) - 1)  # (T,)
            bad = self._ids[slot] != ids
        if bad.any():
            raise ValueError(f"unknown token id {int(ids[bad][0])} (vocabulary has {self.vocab_size} ids)")
        lens = self._lens[slot]  # (T,) bytes per token
        ends = np.cumsum(lens)  # (T,)
        # byte k of the output comes from _buf[start of its token + k - start of its output slot]
        idx = np.repeat(self._offs[slot] - ends + lens, lens) + np.arange(int(ends[-1]))  # (bytes,)
        return self._buf[idx].tobytes()

    def decode(self, ids: Iterable[int] | np.ndarray, *, errors: str = "replace") -> str:
        """Text of ``ids``; invalid UTF-8 (e.g. a cut multi-byte character) handled per ``errors`` (a codec
        error handler: ``"replace"``, ``"strict"``, ``"ignore"``, ``"backslashreplace"``, …)."""
        import codecs

        try:
            if not isinstance(errors, str):
                raise LookupError
            codecs.lookup_error(errors)  # checked before decoding: Python looks it up only at a bad byte
        except LookupError:
            raise ValueError(
                f"errors must be a codec error handler such as 'replace' or 'strict', got {errors!r}"
            ) from None
        return self.decode_bytes(ids).decode("utf-8", errors=errors)

    # ------------------------------------------------------------------ files
    def save(self, path: str | Path) -> None:
        """Write the documented JSON format (see :mod:`nextword.tokenizers.formats`)."""
        save_json(self, check_path(path, "path"))

    @classmethod
    def load(cls, path: str | Path) -> BPETokenizer:
        """Read a file written by :meth:`save`; ``ValueError`` naming the file if it is invalid."""
        return cls._from_file(load_json(check_path(path, "path")), path)

    def save_minbpe(self, path: str | Path) -> None:
        """Write minbpe's ``.model`` text format (see :mod:`nextword.tokenizers.formats`)."""
        save_minbpe(self, check_path(path, "path"))

    @classmethod
    def load_minbpe(cls, path: str | Path) -> BPETokenizer:
        """Read a minbpe ``.model`` file (pattern honoured, UTF-8, spaces allowed in specials)."""
        return cls._from_file(load_minbpe(check_path(path, "path")), path)

    @classmethod
    def _from_file(cls, data: BPEFile, path: str | Path) -> BPETokenizer:
        try:
            return cls(data.merges, pattern=data.pattern, special_tokens=data.special_tokens)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{path}: {exc}") from None

    def merge_list(self) -> list[tuple[int, int, int]]:
        """``[(left, right, new_id), ...]`` in rank order (the constructor's input)."""
        return [(a, b, x) for (a, b), x in self._merges.items()]
