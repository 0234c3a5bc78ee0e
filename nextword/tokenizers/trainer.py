"""Byte-pair-encoding training: the readable rule and the fast incremental trainer.

Two functions live here.

* :func:`learn_bpe` — symbol-level BPE on any sequence of hashable symbols, written to be read:
  count every adjacent pair, merge the most frequent one everywhere, repeat. It is the procedure of
  the formulation paper (Baptista, Stuart, Tran, §2.2, Example 2.1):

  >>> r = learn_bpe("abcababc", names="de")
  >>> ["".join(s) for s in r.trace]
  ['abcababc', 'dcddc', 'ede']
  >>> r.merges
  ((('a', 'b'), 'd'), (('d', 'c'), 'e'))

* :func:`train_merges` — the same rule on integer token ids, fast enough to learn 3,840 merges on a
  megabyte of text in seconds. It never recounts: only the pairs that touch a merged occurrence
  change, so each merge costs time proportional to the number of occurrences it replaces.

**The merge rule (exact, shared by both).** Pick the pair with the largest count; counts are of
*overlapping* adjacent pairs (``"aaa"`` holds ``(a, a)`` twice), weighted by chunk frequency. Ties
go to the pair whose first occurrence is leftmost in the current, partly merged sequence, chunks
taken in text order, never across a chunk boundary. Apply it left to right without overlap
(``"aaa"`` → ``"Xa"``). This is the rule of minbpe and of tiktoken's educational trainer (both pick
``max`` over a dict filled in scan order), so the merge lists agree byte for byte.
``tie_break="hf"`` instead breaks ties by the smallest pair of Hugging Face ids (see
:func:`hf_byte_rank`), the rule of HF ``tokenizers``' ``BpeTrainer``.

**Why the incremental trainer is exact.** A pair occurrence is identified by the original index
of its left node (a merged token keeps the index of its left part). A pair ``(p, q)`` can only
appear during the pass that creates the newer of ``p``, ``q`` (or initially, for two bytes), and
that pass walks left to right, so each pair's position list is sorted and an invalid entry never
becomes valid again. Hence (i) the leftmost occurrence is found by a pointer that only moves
right, and (ii) after its creation pass a pair's count only decreases and its first position only
increases; a lazy max-heap keyed ``(-count, first_position)`` whose stale entries are re-pushed on
pop therefore always yields the exact winner (each entry is that key and the pair code packed into
one int, in the same order: ints compare faster than tuples).

**One state, two kinds of pass.** The first merges replace most of the corpus (no split: the
first few hundred merges touch hundreds of thousands of occurrences each), most later ones a
handful. The linked list lives in ``array.array``s, which Python indexes as fast as lists, with
numpy views of the same memory: a merge with at least ``_VECTOR_MIN`` candidate positions is applied
by the vectorised pass (:func:`_merge_pass_np`: the same count changes, computed from the pair
instances that lose a node and those that gain the new token), a smaller one by the per-occurrence
loop (:func:`_merge_pass`), cheaper below a few hundred occurrences. The merges are identical either
way (the tests run the trainer with the numpy pass off, for every merge, and mixed).
"""

from __future__ import annotations

import array
import heapq
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from nextword._validate import check_flag, check_int_sequence, check_iterable, check_positive_int

__all__ = [
    "BPEResult",
    "learn_bpe",
    "reference_train",
    "reference_encode",
    "train_merges",
    "hf_byte_rank",
    "bytes_to_unicode",
]

_SHIFT = 21  # pair code = (left << _SHIFT) | right; ids below 2**21 (≈ 2 million)
_MASK = (1 << _SHIFT) - 1
#: train_merges vectorises a merge pass (numpy) when the merge has at least this many candidate
#: positions; ``None`` turns the numpy pass off (the tests run every way).
_VECTOR_MIN: int | None = 256


# --------------------------------------------------------------------------------------------
# Symbol-level BPE (readable reference; O(merges × n))
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BPEResult:
    """Outcome of :func:`learn_bpe`.

    Attributes
    ----------
    merges: ``((left, right), new_symbol)`` in the order they were learned.
    vocab: the initial symbols (in order of first appearance) followed by the new symbols, i.e. V.
    sequence: the final sequence f^(K).
    trace: ``trace[k]`` is the sequence f^(k) after ``k`` merges; ``trace[0]`` is the input.
    """

    merges: tuple[tuple[tuple[Any, Any], Any], ...]
    vocab: tuple[Any, ...]
    sequence: tuple[Any, ...]
    trace: tuple[tuple[Any, ...], ...]


def _pair_counts(seq: Sequence[Hashable]) -> dict[tuple[Any, Any], int]:
    """Overlapping adjacent-pair counts, in order of first occurrence (dicts keep insertion order)."""
    counts: dict[tuple[Any, Any], int] = {}
    for pair in zip(seq, seq[1:]):
        counts[pair] = counts.get(pair, 0) + 1
    return counts


def _merge(seq: Sequence[Hashable], pair: tuple[Any, Any], new: Any) -> list[Any]:
    """Replace every occurrence of ``pair`` by ``new``, left to right, without overlap."""
    out: list[Any] = []
    i = 0
    while i < len(seq):
        if i + 1 < len(seq) and (seq[i], seq[i + 1]) == pair:
            out.append(new)
            i += 2
        else:
            out.append(seq[i])
            i += 1
    return out


def learn_bpe(
    symbols: Iterable[Hashable],
    num_merges: int | None = None,
    *,
    names: Iterable[Hashable] | None = None,
) -> BPEResult:
    """Symbol-level byte-pair encoding (formulation paper §2.2, Example 2.1).

    Parameters
    ----------
    symbols:
        Any finite sequence of hashable symbols, e.g. a string (its characters) or a list of ints.
    num_merges:
        Stop after this many merges (``None``: run until no pair occurs twice).
    names:
        Labels for the new symbols, in order (e.g. ``"de"`` for the paper's d, e). By default a
        new symbol is the concatenation of its parts when both are strings, else the tuple
        ``(left, right)``.

    Stops when no adjacent pair occurs at least twice (merging it would not compress) or after
    ``num_merges``. Ties between equally frequent pairs go to the pair that occurs first.

    Example
    -------
    >>> r = learn_bpe("abcababc")
    >>> r.sequence, r.vocab
    (('abc', 'ab', 'abc'), ('a', 'b', 'c', 'ab', 'abc'))
    """
    seq = check_iterable(symbols, "symbols", "a sequence of hashable symbols (a string or a list)", allow_str=True)
    for i, x in enumerate(seq):
        try:
            hash(x)
        except TypeError:
            raise TypeError(f"symbols[{i}] must be hashable (a str, an int, a tuple), got {type(x).__name__}") from None
        if x != x:  # NaN is not equal to itself: its occurrences could never be counted as one pair
            raise ValueError(f"symbols[{i}] is NaN, which is not equal to itself and cannot be counted")
    if num_merges is not None and (
        isinstance(num_merges, (bool, np.bool_)) or not isinstance(num_merges, (int, np.integer)) or num_merges < 0
    ):
        raise ValueError(f"num_merges must be a non-negative int or None, got {num_merges!r}")
    try:
        label_iter = iter(names) if names is not None else None
    except TypeError:
        raise TypeError(f"names must be a sequence of labels (or None), got {type(names).__name__}") from None
    vocab: list[Any] = list(dict.fromkeys(seq))
    known = set(vocab)
    merges: list[tuple[tuple[Any, Any], Any]] = []
    trace = [tuple(seq)]
    while num_merges is None or len(merges) < num_merges:
        counts = _pair_counts(seq)
        if not counts:
            break
        pair = max(counts, key=counts.__getitem__)  # first maximum = leftmost first occurrence
        if counts[pair] < 2:
            break
        if label_iter is not None:
            try:
                new = next(label_iter)
            except StopIteration:
                raise ValueError(f"names ran out after {len(merges)} new symbols") from None
        elif isinstance(pair[0], str) and isinstance(pair[1], str):
            new = pair[0] + pair[1]
        else:
            new = pair
        if new in known:
            raise ValueError(f"new symbol {new!r} for pair {pair!r} already exists; pass names=")
        known.add(new)
        vocab.append(new)
        merges.append((pair, new))
        seq = _merge(seq, pair, new)
        trace.append(tuple(seq))
    return BPEResult(tuple(merges), tuple(vocab), tuple(seq), tuple(trace))


def reference_train(chunks: list[bytes], num_merges: int) -> list[tuple[int, int, int]]:
    """minbpe's byte-level trainer over ``chunks`` (pairs never cross a chunk boundary), as plainly as possible:
    recount every pair, take the most frequent (ties: the first seen in scan order), give it the next id 256,
    257, …, replace it left to right everywhere; ``[(left, right, new id), …]``. O(merges × n).

    Nothing in the library calls it: it is the yardstick that :func:`train_merges` must agree with
    (``tests/tokenizers``) and is timed against (``benchmarks/bench_bpe.py``).

    >>> reference_train([b"abab", b"ab"], 2)  # "ab" occurs 3 times, then "ab ab" once
    [(97, 98, 256), (256, 256, 257)]
    """
    seqs = [list(c) for c in chunks]
    merges: list[tuple[int, int, int]] = []
    for k in range(num_merges):
        stats: dict[tuple[Any, Any], int] = {}
        for s in seqs:  # one dict in scan order over all chunks: max() breaks ties as minbpe does
            for pair, n in _pair_counts(s).items():
                stats[pair] = stats.get(pair, 0) + n
        if not stats:
            break
        pair = max(stats, key=stats.__getitem__)
        merges.append((pair[0], pair[1], 256 + k))
        seqs = [_merge(s, pair, 256 + k) for s in seqs]
    return merges


def reference_encode(data: bytes, merges: list[tuple[int, int, int]]) -> list[int]:
    """minbpe's encoder for one chunk: merge the lowest-rank pair present, everywhere, until none is left
    (the yardstick of :class:`BPETokenizer`'s encode). O(n²).

    >>> reference_encode(b"ababab", [(97, 98, 256), (256, 256, 257)])
    [257, 256]
    """
    rank = {(a, b): r for r, (a, b, _) in enumerate(merges)}
    ids = list(data)
    while len(ids) >= 2:
        present = [rank[p] for p in zip(ids, ids[1:]) if p in rank]
        if not present:
            break
        a, b, new = merges[min(present)]
        ids = _merge(ids, (a, b), new)
    return ids


# --------------------------------------------------------------------------------------------
# Hugging Face id order of the 256 bytes
# --------------------------------------------------------------------------------------------
def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte → printable character map (used by HF's ByteLevel)."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
    keep += list(range(ord("®"), ord("ÿ") + 1))
    chars = keep[:]
    n = 0
    for b in range(256):
        if b not in keep:
            keep.append(b)
            chars.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(keep, chars)}


def hf_byte_rank() -> np.ndarray:
    """``rank[b]`` = the id HF ``tokenizers`` gives byte ``b``: its character's rank in code-point order.

    HF's trainer sorts the initial alphabet by character, so ``'!'`` (byte 33) gets id 0 and the
    bytes mapped above U+0100 (control bytes, space, …) come last. Shape ``(256,)``.
    """
    b2u = bytes_to_unicode()
    order = sorted(range(256), key=lambda b: ord(b2u[b]))
    rank = np.empty(256, dtype=np.int64)
    rank[order] = np.arange(256)
    return rank


# --------------------------------------------------------------------------------------------
# Fast incremental trainer
# --------------------------------------------------------------------------------------------
def train_merges(
    chunks: Sequence[bytes | Sequence[int]],
    num_merges: int,
    *,
    weights: Sequence[int] | None = None,
    tie_break: str = "first",
    first_id: int = 256,
    progress: bool = False,
) -> list[tuple[int, int, int]]:
    """Learn up to ``num_merges`` merges on ``chunks``; return ``[(left, right, new_id), ...]``.

    Parameters
    ----------
    chunks:
        Token-id sequences in text order (``bytes`` are byte ids 0–255). Pairs never straddle two
        chunks. Give each distinct chunk once, in order of first appearance, with its frequency in
        ``weights``: the counts and the leftmost-first tie-break are then exactly those of the full
        chunk stream.
    weights:
        Non-negative integer frequency of each chunk (default 1 each).
    tie_break:
        ``"first"`` (minbpe / tiktoken educational) or ``"hf"`` (smallest pair in HF id order; a
        merge whose bytes already exist reuses that id, as HF does, and ``num_merges`` then counts
        new ids — HF's vocabulary-size rule — so the list can be longer).
    first_id:
        Id of the first new token (256 for byte-level BPE).

    Stops early when no adjacent pair is left. Runs in O(n log n + Σ occurrences merged) time.

    Example
    -------
    >>> train_merges([b"abcababc"], 2)
    [(97, 98, 256), (256, 99, 257)]
    """
    progress = check_flag(progress, "progress")
    if not isinstance(tie_break, str) or tie_break not in ("first", "hf"):
        raise ValueError(f"tie_break must be 'first' or 'hf', got {tie_break!r}")
    num_merges = check_positive_int(num_merges, "num_merges", minimum=0)
    first_id = check_positive_int(first_id, "first_id", minimum=1)
    chunks = check_iterable(chunks, "chunks", "a sequence of token-id sequences (or bytes)")
    if all(type(c) is bytes for c in chunks):  # BPETokenizer.train's chunks: one join, nothing to check
        flat = np.frombuffer(b"".join(chunks), dtype=np.uint8).astype(np.int64)  # (n,)
        lengths = np.fromiter(map(len, chunks), np.int64, len(chunks))  # (num_chunks,) empty ones too
    else:
        arrays = [check_int_sequence(c, f"chunks[{i}]") for i, c in enumerate(chunks)]  # 97.5 refused
        flat = np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int64)  # (n,)
        lengths = np.fromiter(map(len, arrays), np.int64, len(arrays))  # (num_chunks,) empty ones too
    if weights is None:
        w_chunk = np.ones(len(chunks), dtype=np.int64)
    else:
        w_chunk = check_int_sequence(weights, "weights", minimum=0)  # -1 and 1.5 refused
        if w_chunk.shape[0] != len(chunks):
            raise ValueError(f"weights must have one entry per chunk ({len(chunks)}), got {w_chunk.shape[0]}")
    w_chunk, lengths = w_chunk[lengths > 0], lengths[lengths > 0]  # empty chunks hold no pair
    if num_merges == 0 or not len(lengths):
        return []
    n = flat.shape[0]
    if first_id + num_merges > _MASK:
        raise ValueError(
            f"first_id + num_merges must be <= {_MASK} (ids are packed in {_SHIFT} bits), got {first_id} + {num_merges}"
        )
    if flat.min() < 0 or flat.max() >= first_id:
        raise ValueError(
            f"chunk ids must lie in [0, first_id) = [0, {first_id}), got values in "
            f"[{int(flat.min())}, {int(flat.max())}]"
        )
    ends = np.cumsum(lengths)  # (num_chunks,) one past each chunk's last index
    starts = ends - lengths
    weight = np.repeat(w_chunk, lengths)  # (n,) weight of each position

    # Initial counts with numpy: positions i whose right neighbour i+1 is in the same chunk.
    inside = np.ones(max(n - 1, 0), dtype=bool)
    inside[ends[:-1] - 1] = False  # the last node of every chunk but the final one
    pos = np.nonzero(inside)[0]  # (m,)
    dense = flat[pos] * first_id + flat[pos + 1]  # (m,) pair index, in the order of the pair codes
    if first_id <= 256:
        dense = dense.astype(np.uint16)  # numpy's stable sort of 16-bit ints is a radix sort
    order = np.argsort(dense, kind="stable")  # positions grouped by pair, ascending within
    dense_sorted, pos_sorted = dense[order], pos[order]
    starts_of = np.ones(len(pos), dtype=bool)  # (m,) first entry of each pair's group
    np.not_equal(dense_sorted[1:], dense_sorted[:-1], out=starts_of[1:])
    first_idx = np.flatnonzero(starts_of)  # (pairs,)
    first_pair = dense_sorted[first_idx].astype(np.int64)
    uniq = ((first_pair // first_id) << _SHIFT) | (first_pair % first_id)  # (pairs,) ascending codes
    pair_w = np.add.reduceat(weight[pos_sorted], first_idx) if len(pos) else np.zeros(0, dtype=np.int64)
    positions: dict[int, list[int]] = dict(zip(uniq.tolist(), np.split(pos_sorted, first_idx[1:])))
    if tie_break == "hf":  # its loop appends to existing lists; "first" converts on first use
        positions = {c: p.tolist() for c, p in positions.items()}
    counts: dict[int, int] = dict(zip(uniq.tolist(), pair_w.tolist()))

    nxt = np.arange(1, n + 1, dtype=np.int64)  # (n,) linked list over the original positions
    nxt[ends - 1] = -1
    prv = np.arange(-1, n - 1, dtype=np.int64)  # (n,)
    prv[starts] = -1
    hf = tie_break == "hf"
    # One state, two kinds of pass ("first" rule): the linked list in ``array.array``s and numpy
    # views of the same memory (see the module docstring). "hf": Python lists only.
    vector = not hf and _VECTOR_MIN is not None
    tokens: Any
    if hf:
        tokens, nxt, prv, wt = flat.tolist(), nxt.tolist(), prv.tolist(), weight.tolist()
        views: tuple[np.ndarray, ...] = ()
    else:
        tokens, nxt, prv, wt = (array.array("q", v.astype(np.int64).tobytes()) for v in (flat, nxt, prv, weight))
        views = tuple(np.frombuffer(v, dtype=np.int64) for v in (tokens, nxt, prv, wt))  # (n,) each, shared

    rank = hf_byte_rank().tolist() + list(range(256, first_id)) if hf else []
    pointer: dict[int, int] = {}

    def first_position(code: int) -> int:
        """Leftmost live occurrence of pair ``code`` (the pointer only moves right); -1 if none."""
        lst = positions[code]
        if type(lst) is not list:  # still a numpy array from the initial count or a numpy pass
            lst = positions[code] = lst.tolist()
        p = pointer.get(code, 0)
        a, b = code >> _SHIFT, code & _MASK
        while p < len(lst):
            i = lst[p]
            if tokens[i] == a:
                j = nxt[i]
                if j >= 0 and tokens[j] == b:
                    pointer[code] = p
                    return i
            p += 1
        pointer[code] = p
        return -1

    def key(code: int) -> int:
        if hf:
            a, b = code >> _SHIFT, code & _MASK  # merged tokens keep their own id in HF too
            return ((rank[a] if a < first_id else a) << _SHIFT) | (rank[b] if b < first_id else b)
        return first_position(code)

    # A heap entry is the int (-count, key, code) packed in bit fields, -count highest: ints compare
    # faster than tuples, in the same order (the key is a position < n, or for "hf" a pair of ranks).
    code_bits = 2 * _SHIFT  # a pair code (left << _SHIFT) | right
    key_bits = 2 * _SHIFT if hf else max(n, 1).bit_length()
    count_shift = key_bits + code_bits
    code_mask, key_mask = (1 << code_bits) - 1, (1 << key_bits) - 1
    if hf:
        heap = [(-c << count_shift) | (key(code) << code_bits) | code for code, c in counts.items() if c > 0]
    else:  # every initial occurrence is live: the first position is the first in the list
        heap = [
            (-c << count_shift) | (i << code_bits) | code
            for code, c, i in zip(counts, counts.values(), pos_sorted[first_idx].tolist())
            if c > 0
        ]
    heapq.heapify(heap)
    merges: list[tuple[int, int, int]] = []
    by_bytes: dict[bytes, int] = {}
    token_bytes: list[bytes] = [bytes([i]) if i < 256 else b"" for i in range(first_id)] if hf else []
    if hf:
        by_bytes = {bytes([i]): i for i in range(256)}
    next_id = first_id
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=num_merges, desc="BPE merges")

    while next_id - first_id < num_merges and heap:  # = len(merges) unless 'hf' reused an id
        top = heap[0]
        code = top & code_mask
        c = counts.get(code, 0)
        if c <= 0:
            heapq.heappop(heap)
            continue
        if top >> count_shift != -c:
            heapq.heapreplace(heap, (-c << count_shift) | (key(code) << code_bits) | code)
            continue
        if not hf:
            k2 = first_position(code)
            if k2 != (top >> code_bits) & key_mask:
                heapq.heapreplace(heap, (-c << count_shift) | (k2 << code_bits) | code)
                continue
        heapq.heappop(heap)
        a, b = code >> _SHIFT, code & _MASK
        if hf:
            nb = token_bytes[a] + token_bytes[b]
            x = by_bytes.get(nb)
            if x is None:
                x = next_id
                next_id += 1
                by_bytes[nb] = x
                token_bytes.append(nb)
        else:
            x = next_id
            next_id += 1
        merges.append((a, b, x))
        lst = positions.pop(code)
        if vector and len(lst) >= _VECTOR_MIN:
            raised = _merge_pass_np(np.asarray(lst), a, b, x, *views, counts, positions)
        else:
            if type(lst) is not list:
                lst = lst.tolist()
            if a == b and hf:  # overlapping pairs must be merged left to right
                lst = sorted(set(lst))
            merge_pass = _merge_pass_reuse if hf else _merge_pass
            raised = merge_pass(lst, a, b, x, tokens, nxt, prv, wt, counts, positions)
        counts.pop(code, None)
        pointer.pop(code, None)
        for new in raised:
            c = counts[new]
            if c > 0:  # "first": a lower bound of the first position (the exact one is found on pop)
                k = key(new) if hf else int(positions[new][0])
                heapq.heappush(heap, (-c << count_shift) | (k << code_bits) | new)
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    return merges


def _merge_pass(
    lst: list[int],
    a: int,
    b: int,
    x: int,
    tokens: Any,
    nxt: Any,
    prv: Any,
    wt: Any,
    counts: dict[int, int],
    positions: dict[int, Any],
) -> list[int]:
    """Apply merge ``(a, b) -> x``, ``x`` a new id (rule "first"), at the live occurrences in ``lst``
    (left to right), updating the linked list, the pair counts and the position lists; return the
    codes whose count rose.

    A pair holding ``x`` cannot exist before this pass, so the codes that rose are exactly those
    whose position list is created here (``made``), and a created code's count starts at its first
    weight. ``tokens``, ``nxt``, ``prv``, ``wt`` (n,) are lists or ``array.array``s.
    """
    xs, bs = x << _SHIFT, b << _SHIFT
    made: dict[int, list[int]] = {}
    get = made.get
    for i in lst:
        if tokens[i] != a:
            continue
        j = nxt[i]
        if j < 0 or tokens[j] != b:
            continue
        w = wt[i]
        p = prv[i]
        q = nxt[j]
        if p >= 0:
            t = tokens[p] << _SHIFT
            counts[t | a] -= w
            new = t | x
            plist = get(new)
            if plist is None:
                made[new] = [p]
                counts[new] = w
            else:
                plist.append(p)
                counts[new] += w
        if q >= 0:
            t = tokens[q]
            counts[bs | t] -= w
            new = xs | t
            plist = get(new)
            if plist is None:
                made[new] = [i]
                counts[new] = w
            else:
                plist.append(i)
                counts[new] += w
            prv[q] = i
        tokens[i] = x  # (no counts[code] -= w: the caller drops the merged pair's count)
        tokens[j] = -1
        nxt[i] = q
    positions.update(made)
    return list(made)


def _merge_pass_reuse(
    lst: list[int],
    a: int,
    b: int,
    x: int,
    tokens: list[int],
    nxt: list[int],
    prv: list[int],
    wt: list[int],
    counts: dict[int, int],
    positions: dict[int, list[int]],
) -> list[int]:
    """:func:`_merge_pass` where ``x`` may be an id that already exists (rule "hf" reuses the id of
    a merge with the same bytes): pairs holding ``x`` may have counts and position lists already, so
    every code that rose is collected."""
    xs = x << _SHIFT
    raised: list[int] = []
    for i in lst:
        if tokens[i] != a:
            continue
        j = nxt[i]
        if j < 0 or tokens[j] != b:
            continue
        w = wt[i]
        p = prv[i]
        q = nxt[j]
        if p >= 0:
            t = tokens[p]
            counts[(t << _SHIFT) | a] -= w
            new = (t << _SHIFT) | x
            plist = positions.get(new)
            if plist is None:
                positions[new] = [p]
                counts[new] = counts.get(new, 0) + w
            else:
                plist.append(p)
                counts[new] += w
            raised.append(new)
        if q >= 0:
            t = tokens[q]
            counts[(b << _SHIFT) | t] -= w
            new = xs | t
            plist = positions.get(new)
            if plist is None:
                positions[new] = [i]
                counts[new] = counts.get(new, 0) + w
            else:
                plist.append(i)
                counts[new] += w
            raised.append(new)
            prv[q] = i
        tokens[i] = x
        tokens[j] = -1
        nxt[i] = q
    return list(dict.fromkeys(raised))


def _merge_pass_np(
    lst: np.ndarray,
    a: int,
    b: int,
    x: int,
    tokens: np.ndarray,
    nxt: np.ndarray,
    prv: np.ndarray,
    wt: np.ndarray,
    counts: dict[int, int],
    positions: dict[int, Any],
) -> list[int]:
    """:func:`_merge_pass` vectorised, for a new id ``x`` (rule "first"): same linked list, same
    counts; the position lists of the new pairs are numpy arrays holding only live occurrences.

    ``lst`` (m,) is ascending. Occurrences form chains only when ``a == b`` (``aaaa``: the left
    node of one is the right node of the previous); left to right, every other one of a chain is
    merged. Counts change by the pair instances that lose a node (old) and those that gain ``x``
    (new); each instance is named by its left node, so an instance shared by two neighbouring
    occurrences is counted once.
    """
    i = lst[tokens[lst] == a]  # (m',) candidate left nodes still holding a
    j = nxt[i]
    keep = j >= 0
    i, j = i[keep], j[keep]
    keep = tokens[j] == b
    i, j = i[keep], j[keep]  # (k,) live occurrences (i, j)
    if len(i) == 0:  # pragma: no cover - the caller only merges pairs with a positive count
        return []
    if a == b and len(i) > 1:
        idx = np.arange(len(i))
        chained = np.zeros(len(i), dtype=bool)
        chained[1:] = i[1:] == j[:-1]  # occurrence k starts where k - 1 ends
        start = np.maximum.accumulate(np.where(chained, 0, idx))  # (k,) first occurrence of its chain
        keep = (idx - start) % 2 == 0
        i, j = i[keep], j[keep]
    p = prv[i]  # (k,) left neighbours (-1: chunk start)
    q = nxt[j]  # (k,) right neighbours (-1: chunk end)
    old = _sorted_unique(np.concatenate([p[p >= 0], j[q >= 0]]))  # left nodes of instances losing a node
    old_codes = (tokens[old] << _SHIFT) | tokens[nxt[old]]
    tokens[i] = x
    tokens[j] = -1
    nxt[i] = q
    has_q = q >= 0
    prv[q[has_q]] = i[has_q]
    p = prv[i]  # new left neighbours: a merged neighbour replaces its deleted right node
    new = _sorted_unique(np.concatenate([p[p >= 0], i[has_q]]))  # (r,) left nodes of instances holding x
    new_codes = (tokens[new] << _SHIFT) | tokens[nxt[new]]  # (r,)
    codes = np.concatenate([old_codes, new_codes])
    if not len(codes):  # every occurrence was a whole chunk: no neighbours
        return []
    w = np.concatenate([-wt[old], wt[new]])
    order = np.argsort(codes, kind="stable")
    codes = codes[order]
    cuts = np.flatnonzero(np.diff(codes)) + 1
    starts = np.concatenate([[0], cuts])
    get = counts.get
    for c, d in zip(codes[starts].tolist(), np.add.reduceat(w[order], starts).tolist()):
        counts[c] = get(c, 0) + d
    order = np.argsort(new_codes, kind="stable")  # grouped by pair, ascending positions within
    grouped = new_codes[order]
    cuts = np.flatnonzero(np.diff(grouped)) + 1
    if not len(grouped):
        return []
    raised = grouped[np.concatenate([[0], cuts])].tolist()
    bounds = cuts.tolist()
    left = new[order]
    positions.update(zip(raised, map(left.__getitem__, map(slice, [0] + bounds, bounds + [len(left)]))))
    return raised


def _sorted_unique(v: np.ndarray) -> np.ndarray:
    """Distinct values of the 1-D int array ``v``, ascending (``np.unique`` without its overhead)."""
    v = np.sort(v)  # (m,)
    if len(v) < 2:
        return v
    keep = np.empty(len(v), dtype=bool)  # (m,)
    keep[0] = True
    np.not_equal(v[1:], v[:-1], out=keep[1:])
    return v[keep]
