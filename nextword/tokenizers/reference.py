"""The slow, obvious byte-level BPE: minbpe's training and encoding rules, written as plainly as possible.

Nothing in the library calls these. They are the yardstick: the fast trainer (:func:`train_merges`) and
encoder (:class:`BPETokenizer`) must give exactly what these give (``tests/tokenizers``), and
``benchmarks/bench_bpe.py`` times the fast ones against them. Costs: training is O(merges × n) (every merge
recounts every pair), encoding O(n²) for one chunk of n bytes.

The rules (minbpe's ``RegexTokenizer``):

- training: count every adjacent pair in every chunk; the most frequent pair wins, ties going to the pair
  seen first in scan order (``max`` over a dict); give it the next id 256, 257, …; replace it left to right
  in every chunk; repeat ``num_merges`` times or until no pair is left;
- encoding one chunk: while some adjacent pair has a merge, apply the merge of lowest rank everywhere, left
  to right.

>>> merges = reference_train([b"abab", b"ab"], 2)  # "ab" occurs 3 times, then "ab ab" once
>>> merges
[(97, 98, 256), (256, 256, 257)]
>>> reference_encode(b"ababab", merges)
[257, 256]
"""

from __future__ import annotations

__all__ = ["reference_train", "reference_encode"]


def _replace(ids: list[int], a: int, b: int, new: int) -> list[int]:
    """``ids`` with every (a, b), read left to right without overlaps, replaced by ``new``."""
    out, i = [], 0
    while i < len(ids):
        if i + 1 < len(ids) and ids[i] == a and ids[i + 1] == b:
            out.append(new)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out


def reference_train(chunks: list[bytes], num_merges: int) -> list[tuple[int, int, int]]:
    """minbpe's trainer over ``chunks`` (pairs never cross a chunk boundary): ``[(left, right, new id), …]``."""
    seqs = [list(c) for c in chunks]
    merges: list[tuple[int, int, int]] = []
    for k in range(num_merges):
        stats: dict[tuple[int, int], int] = {}
        for s in seqs:
            for pair in zip(s, s[1:]):
                stats[pair] = stats.get(pair, 0) + 1
        if not stats:
            break
        a, b = max(stats, key=stats.get)  # the first most frequent pair in scan order
        merges.append((a, b, 256 + k))
        seqs = [_replace(s, a, b, 256 + k) for s in seqs]
    return merges


def reference_encode(data: bytes, merges: list[tuple[int, int, int]]) -> list[int]:
    """minbpe's encoder for one chunk: merge the lowest-rank pair present, everywhere, until none is left."""
    rank = {(a, b): r for r, (a, b, _) in enumerate(merges)}
    ids = list(data)
    while len(ids) >= 2:
        present = [rank[p] for p in zip(ids, ids[1:]) if p in rank]
        if not present:
            break
        a, b, new = merges[min(present)]
        ids = _replace(ids, a, b, new)
    return ids
