"""The ids of every piece a tokenizer has merged, looked up for a whole text at once.

:meth:`BPETokenizer.encode <nextword.tokenizers.BPETokenizer.encode>` merges each distinct piece
once and remembers its ids. For long ASCII text split with the GPT-4 pattern it keeps them in a
:class:`PieceTable` instead of a dict keyed by ``str``, so that looking up all of a text's pieces
makes no Python object per piece. A piece of up to 15 bytes is named by two 64-bit words: its bytes,
little-endian, with its length in the top byte of the last word (pieces of up to 7 bytes have a
second word of 0). The words go into a hash table with open addressing (a position from the words'
hash; on a collision, the next position), which numpy probes for all pieces at once, and a slot
number that says where the piece's ids are kept. Longer pieces (15 of the 263,198 in tiny Shakespeare)
go through a dict keyed by their bytes. Pieces not yet known are merged all at once by the
tokenizer's ``learn`` function and added.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["PieceTable", "WordTable"]

_WORDS = 15  # the longest piece named by two words (the last byte of the second holds the length)
_TOP = np.uint64(56)
_LOW = [(1 << (8 * k)) - 1 for k in range(8)]  # the low k bytes of a word
# for a piece of L ≤ 15 bytes: word = (8 bytes read at its start & mask[L]) | length tag[L]
_MASK0 = np.array([_LOW[k] for k in range(8)] + [(1 << 64) - 1] * 8, dtype=np.uint64)  # (16,)
_TAG0 = np.array([k << 56 for k in range(8)] + [0] * 8, dtype=np.uint64)  # (16,)
_MASK1 = np.array([0] * 8 + [_LOW[k] for k in range(8)], dtype=np.uint64)  # (16,) the next 8 bytes
_TAG1 = np.array([0] * 8 + [k << 56 for k in range(8, 16)], dtype=np.uint64)  # (16,)
_MIX0, _MIX1 = np.uint64(0x9E3779B97F4A7C15), np.uint64(0xC2B2AE3D27D4EB4F)  # odd multipliers


class WordTable:
    """A hash table from pairs of 64-bit words to integers, probed by numpy for many keys at once.

    Open addressing: a key's position is the top bits of a multiplicative hash of its two words; on
    a collision, the next position. The table grows to stay at most a quarter full, so most keys
    are found at their first position and the probing loops end after a few rounds.
    """

    def __init__(self, bits: int = 12) -> None:
        self._bits = bits
        self._w0 = np.zeros(1 << bits, dtype=np.uint64)  # (H,) first word of each entry
        self._w1 = np.zeros(1 << bits, dtype=np.uint64)  # (H,) second word
        self._value = np.zeros(1 << bits, dtype=np.int64)  # (H,) the entry's value + 1; 0: empty

    def _hash(self, w0: np.ndarray, w1: np.ndarray) -> np.ndarray:
        return (w0 ^ (w1 * _MIX1)) * _MIX0  # (m,) uint64; its top bits are the position

    def find(self, w0: np.ndarray, w1: np.ndarray) -> np.ndarray:
        """(m,) values of the keys (m,), (m,); −1 where a key is not in the table."""
        mask = (1 << self._bits) - 1
        pos = (self._hash(w0, w1) >> np.uint64(64 - self._bits)).astype(np.int64)  # (m,)
        full = self._value[pos]
        hit = (full > 0) & (self._w0[pos] == w0) & (self._w1[pos] == w1)
        found = np.where(hit, full - 1, -1)  # (m,) most keys are found at their first position
        todo = np.flatnonzero(~hit & (full > 0))  # collided with another key: try the next position
        pos[todo] = (pos[todo] + 1) & mask
        while todo.size:
            p = pos[todo]
            full = self._value[p]
            hit = (self._w0[p] == w0[todo]) & (self._w1[p] == w1[todo]) & (full > 0)
            found[todo[hit]] = full[hit] - 1
            todo = todo[~hit & (full > 0)]
            pos[todo] = (pos[todo] + 1) & mask
        return found

    def _grow(self, more: int) -> None:
        """Make room for ``more`` keys, keeping the table at most a quarter full."""
        used = np.flatnonzero(self._value)
        if 4 * (used.size + more) <= 1 << self._bits:
            return
        old = self._w0[used], self._w1[used], self._value[used] - 1
        while 4 * (used.size + more) > 1 << self._bits:
            self._bits += 1
        self.__init__(self._bits)
        self.put(*old)

    def put(self, w0: np.ndarray, w1: np.ndarray, value: np.ndarray) -> None:
        """Enter distinct keys (m,), (m,) that are not in the table with their values (m,) ≥ 0."""
        self._grow(len(w0))
        self._enter(w0, w1, value)

    def put_new(self, w0: np.ndarray, w1: np.ndarray, first: int) -> tuple[np.ndarray, np.ndarray]:
        """Enter keys (m,), (m,) — none in the table yet, many repeated — numbering the distinct
        ones ``first, first + 1, …``. Returns each key's number (m,) and, for each number in order,
        the index of one key that has it (M,).

        The repeats are found by one sort: each key's hash, its low bits replaced by the key's index,
        sorted, puts equal keys side by side with the sorting permutation in the low bits (no
        ``argsort``, which is several times slower). Only the distinct keys then enter the table. If
        two different keys share the hash's high bits (checked word by word), they are entered one
        probe round at a time instead (:meth:`_enter`).
        """
        m = len(w0)
        if m == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        bits = np.uint64(max(1, (m - 1).bit_length()))  # low bits that hold an index
        low = (np.uint64(1) << bits) - np.uint64(1)
        key = (self._hash(w0, w1) & ~low) | np.arange(m, dtype=np.uint64)  # (m,)
        key.sort()
        order = (key & low).astype(np.int64)  # (m,) key indices, equal hashes side by side
        head = np.empty(m, dtype=bool)  # (m,) the first of a run of equal hashes
        head[0] = True
        np.not_equal(key[1:] >> bits, key[:-1] >> bits, out=head[1:])
        s0, s1 = np.take(w0, order), np.take(w1, order)  # (m,) the words in sorted order
        differ = (s0[1:] != s0[:-1]) | (s1[1:] != s1[:-1])  # (m−1,) a key unlike the one before it
        if (differ & ~head[1:]).any():  # different keys share a hash: enter them by probing
            self._grow(1 + int(np.count_nonzero(differ | head[1:])))  # at least the distinct keys
            return self._enter(w0, w1, None, first)
        number = np.empty(m, dtype=np.int64)
        number[order] = np.cumsum(head) + (first - 1)  # run number, from first
        rep = order[head]  # (M,) one key of each run (its smallest index)
        self.put(s0[head], s1[head], np.arange(first, first + len(rep)))
        return number, rep

    def _enter(
        self, w0: np.ndarray, w1: np.ndarray, value: np.ndarray | None, first: int = 0
    ) -> tuple[np.ndarray, np.ndarray]:
        """Each round, every key at a free position claims it (numpy keeps one claim when several
        keys write one position) and is entered with its value (or the next number); then every key
        whose position holds its own words is done; the others try the next position."""
        mask = (1 << self._bits) - 1
        p = (self._hash(w0, w1) >> np.uint64(64 - self._bits)).astype(np.int64)  # (m,) positions
        out, todo, reps, count = np.empty(len(w0), dtype=np.int64), np.arange(len(w0)), [], first
        claim = np.empty(1 << self._bits, dtype=np.int64)  # scratch: which key claimed a position
        while todo.size:  # p, w0, w1 (and value) hold the keys still to enter, todo their indices
            free = np.flatnonzero(self._value[p] == 0)
            if free.size:
                claim[p[free]] = free
                won = free[claim[p[free]] == free]  # one key per free position
                at = p[won]
                self._w0[at], self._w1[at] = w0[won], w1[won]
                if value is None:
                    self._value[at] = count + np.arange(1, won.size + 1)
                    count += won.size
                    reps.append(todo[won])
                else:
                    self._value[at] = value[won] + 1
            own = (self._w0[p] == w0) & (self._w1[p] == w1)
            out[todo[own]] = self._value[p[own]] - 1
            if own.all():
                break
            rest = ~own
            todo, p, w0, w1 = todo[rest], (p[rest] + 1) & mask, w0[rest], w1[rest]
            value = value[rest] if value is not None else None
        return out, np.concatenate(reps) if reps else np.zeros(0, dtype=np.int64)


class PieceTable:
    """Piece → ids, for pieces given as offsets into a bytes object.

    Parameters
    ----------
    learn:
        ``learn(data, n) -> (ids, counts)``: for pieces given back to back in ``data`` (bytes) with
        lengths ``n`` (M,), their merged ids back to back (N,) and how many each has (M,).
    limit:
        Forget every piece before a text once more than this many are known (memory stays bounded).
    """

    def __init__(self, learn: Callable[[bytes, np.ndarray], tuple[np.ndarray, np.ndarray]], limit: int) -> None:
        self._learn, self._limit = learn, limit
        self._clear()

    def _clear(self) -> None:
        self._table = WordTable()  # the two words of a piece of up to 15 bytes → its slot
        self._long: dict[bytes, int] = {}  # bytes of a piece over 15 bytes → its slot
        self._off = np.zeros(0, dtype=np.int64)  # (S,) where a slot's ids start in _ids
        self._count = np.zeros(0, dtype=np.int64)  # (S,) how many ids it has
        self._ids = np.zeros(0, dtype=np.int32)  # (N,) the ids of every slot, back to back

    def _add(self, data: bytes, n: np.ndarray) -> np.ndarray:
        """Merge the pieces ``data`` holds back to back (lengths ``n`` (M,); distinct, not known yet)
        and give each a slot; returns their slots (M,)."""
        ids, counts = self._learn(data, n)
        first = len(self._off)
        self._off = np.concatenate((self._off, len(self._ids) + np.cumsum(counts) - counts))
        self._count = np.concatenate((self._count, counts))
        self._ids = np.concatenate((self._ids, ids.astype(np.int32)))
        return np.arange(first, first + len(n))

    def ids(self, data: bytes, starts: np.ndarray) -> list[int]:
        """The ids of ``data`` cut at ``starts`` (P,) (increasing, ``starts[0] == 0``), piece by piece."""
        if len(self._off) > self._limit:
            self._clear()
        if not len(starts):
            return []
        n = len(data)
        length = np.diff(starts, append=n)  # (P,) bytes per piece
        slot = np.empty(len(starts), dtype=np.int64)  # (P,) the slot of every piece
        named = np.flatnonzero(length <= _WORDS)  # (P_w,) pieces named by two words
        padded = data + bytes(16)
        words = np.ndarray((n + 8,), dtype="<u8", buffer=padded, strides=(1,))  # (n+8,) 8 bytes at each offset
        s, k = starts[named], length[named]  # (P_w,)
        w0 = (words[s] & _MASK0[k]) | _TAG0[k]  # (P_w,)
        two = np.flatnonzero(k >= 8)  # (few,) pieces that need the second word
        w1 = np.zeros(len(s), dtype=np.uint64)  # (P_w,)
        w1[two] = (words[s[two] + 8] & _MASK1[k[two]]) | _TAG1[k[two]]
        found = self._table.find(w0, w1) if len(self._off) else np.full(len(s), -1, dtype=np.int64)  # (P_w,)
        miss = np.flatnonzero(found < 0)  # (m,)
        if miss.size:  # enter the new pieces, then merge each once
            m0, m1 = w0[miss], w1[miss]
            found[miss], rep = self._table.put_new(m0, m1, len(self._off))  # (m,) slots, (M,) one miss per new slot
            new0, new1 = m0[rep], m1[rep]
            size = np.where(new1 == 0, new0 >> _TOP, new1 >> _TOP).astype(np.int64)  # (M,) bytes
            raw = np.stack((new0, new1), axis=1).view(np.uint8)  # (M, 16) the bytes, then length bytes
            self._add(raw[np.arange(16) < size[:, None]].tobytes(), size)
        slot[named] = found
        if named.size < len(starts):  # pieces over 15 bytes: a dict keyed by their bytes
            rest = np.flatnonzero(length > _WORDS)
            pieces = [data[a:b] for a, b in zip(starts[rest].tolist(), (starts[rest] + length[rest]).tolist())]
            table = self._long
            missing = list(set(pieces).difference(table))
            if missing:
                slots = self._add(b"".join(missing), np.fromiter(map(len, missing), np.int64, len(missing)))
                table.update(zip(missing, slots.tolist()))
            slot[rest] = list(map(table.__getitem__, pieces))
        off, count = self._off[slot], self._count[slot]  # (P,)
        first = np.cumsum(count) - count  # (P,) where each piece's ids go in the output
        gather = np.repeat(off - first, count) + np.arange(int(count.sum()))  # (N,) index into _ids
        return self._ids[gather].tolist()
