"""A tiny n-gram (Markov-table) language model: the smallest thing with ``next_logits``.

The decoding module (:mod:`nextword.decoding`) is model-agnostic: it only needs a
callable ``next_logits(prefix: list[int]) -> np.ndarray`` of shape ``(V,)``. This
module supplies the simplest such model, so decoding can be tested and taught
against exact, enumerable probabilities.

An order-``n`` model conditions token ``f_m`` on the last ``n - 1`` tokens only,

    pi_m(f_m | f_{1:m-1}) = pi(f_m | f_{m-n+1:m-1}),

which is the autoregressive factorisation of the formulation paper, Eq. (3.3)
(and the textbook's chain rule ``P(w[1:T]) = prod_t P(w[t] | w[1:t-1])``, §6.3 of
Chapter 6) with a truncated context. At the start of a sequence the context is
simply shorter (``f_{1:m-1}`` with ``m - 1 < n - 1``), so the model defines a
proper distribution over whole sequences, first token included: no BOS padding is
needed, and ``next_logits([])`` is the distribution of the first token.

Fitting is counting with add-``k`` (Lidstone) smoothing:

    pi(v | c) = (count(c, v) + k) / (count(c) + k |V|),

with counts stored sparsely per seen context ``c``; an unseen context gets the
uniform distribution (the add-``k`` formula with zero counts).

Worked example::

    >>> lm = NGramLM(vocab_size=3, order=2, k=0.0).fit([[0, 1, 0, 1, 2]])
    >>> np.exp(lm.next_logits([2, 0]))   # only the last token (0) matters; 0 was always followed by 1
    array([0., 1., 0.])
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from nextword._validate import (
    MAX_ELEMENTS,
    as_float_array,
    as_generator,
    as_token_list,
    check_positive_int,
    check_real,
    check_size,
)

__all__ = ["NGramLM", "random_table_model", "table_model"]


def _as_token_array(seq: Sequence[int] | np.ndarray, vocab_size: int, name: str) -> NDArray[np.int64]:
    """Validate a 1-D integer token sequence with ids in ``[0, vocab_size)``."""
    if seq is None or isinstance(seq, (str, bytes)) or not isinstance(seq, (Iterable, np.ndarray)):
        raise TypeError(f"{name} must be a 1-D sequence of integer token ids, got {type(seq).__name__}")
    if not hasattr(seq, "__len__"):
        seq = list(seq)
    try:
        arr = np.asarray(seq)
    except (ValueError, OverflowError):
        raise ValueError(f"{name} must be a 1-D sequence of token ids, got a ragged nested list") from None
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D sequence of token ids, got shape {arr.shape}")
    if arr.size == 0:
        return arr.astype(np.int64)
    if not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"{name} must contain integer token ids, got dtype {arr.dtype}")
    if arr.min() < 0 or arr.max() >= vocab_size:
        raise ValueError(f"{name} contains token ids outside [0, {vocab_size}): min {arr.min()}, max {arr.max()}")
    return arr.astype(np.int64)


def _log_softmax(z: np.ndarray) -> np.ndarray:
    """Numerically stable log-softmax of a 1-D vector (log-sum-exp)."""
    m = np.max(z)
    return z - (m + np.log(np.sum(np.exp(z - m))))


class NGramLM:
    """Order-``n`` Markov-table language model with add-``k`` smoothing.

    Parameters
    ----------
    vocab_size : int
        ``|V|`` >= 1; token ids are ``0 .. vocab_size - 1``. Nothing of size ``V`` is allocated
        until a call needs it; a call that would return more than ``MAX_ELEMENTS`` floats
        (``next_logits`` of an unseen context with ``V = 10**9``) is refused by name.
    order : int
        ``n`` >= 1. ``order=1`` is a unigram model, ``order=2`` a bigram (Markov
        chain) model; the context is the last ``order - 1`` tokens.
    k : float
        Add-``k`` pseudo-count, ``k >= 0``. ``k = 0`` is the maximum-likelihood
        table; next tokens never seen after a context then get logit ``-inf``.

    State: sparse counts ``{context tuple: (next ids, counts)}`` from :meth:`fit`,
    and/or explicit logit vectors ``{context tuple: (V,) logits}`` set through
    :meth:`set_logits` (used by :func:`random_table_model`). Explicit logits take
    precedence over counts for the same context.
    """

    def __init__(self, vocab_size: int, order: int, *, k: float = 1.0) -> None:
        self.vocab_size = check_positive_int(vocab_size, "vocab_size")
        self.order = check_positive_int(order, "order")
        self.k = check_real(k, "k (add-k pseudo-count)", lo=0.0)
        self._counts: dict[tuple[int, ...], tuple[np.ndarray, np.ndarray, int]] = {}
        self._logits: dict[tuple[int, ...], np.ndarray] = {}

    # ------------------------------------------------------------------ fitting
    def fit(self, sequences: Iterable[Sequence[int]] | np.ndarray) -> "NGramLM":
        """Count n-grams in ``sequences`` (adds to any previous counts); returns ``self``.

        ``sequences``: an iterable of 1-D integer sequences, a 2-D integer array
        ``(N, T)`` (one sequence per row) or a single 1-D integer array ``(T,)``.
        Every position ``m`` of every sequence contributes one count of
        ``(f_{max(1, m-n+1):m-1}, f_m)``.
        """
        if sequences is None or isinstance(sequences, (str, bytes)) or not hasattr(sequences, "__iter__"):
            raise TypeError(
                f"sequences must be an iterable of token-id sequences or an integer array, "
                f"got {type(sequences).__name__}"
            )
        if isinstance(sequences, np.ndarray):
            if sequences.ndim == 1:
                sequences = [sequences]
            elif sequences.ndim != 2:
                raise ValueError(f"sequences as an array must be (T,) or (N, T), got shape {sequences.shape}")
        new: dict[tuple[int, ...], dict[int, int]] = {}

        def add(ctx: tuple[int, ...], nxt: np.ndarray, cnt: np.ndarray) -> None:
            d = new.setdefault(ctx, {})
            for v, c in zip(nxt.tolist(), cnt.tolist()):
                d[v] = d.get(v, 0) + c

        n = self.order
        for i, seq in enumerate(sequences):
            arr = _as_token_array(seq, self.vocab_size, f"sequences[{i}]")
            T = arr.size
            # short contexts at the start of the sequence: positions m = 0 .. n-2
            for m in range(min(n - 1, T)):
                add(tuple(arr[:m].tolist()), arr[m : m + 1], np.ones(1, dtype=np.int64))
            if T >= n:
                grams = np.lib.stride_tricks.sliding_window_view(arr, n)  # (T-n+1, n)
                if self.vocab_size**n < 2**62:
                    # integer code of each n-gram in base V; sorting codes sorts the rows
                    weights = self.vocab_size ** np.arange(n - 1, -1, -1, dtype=np.int64)  # (n,)
                    codes, cnt = np.unique(grams @ weights, return_counts=True)  # (U,), (U,)
                    uniq = (codes[:, None] // weights[None, :]) % self.vocab_size  # (U, n)
                else:
                    uniq, cnt = np.unique(grams, axis=0, return_counts=True)  # (U, n), (U,)
                ctxs = uniq[:, :-1]  # (U, n-1), rows sorted so equal contexts are adjacent
                change = np.any(ctxs[1:] != ctxs[:-1], axis=1)  # (U-1,) context boundaries
                starts = np.concatenate([[0], np.nonzero(change)[0] + 1, [len(uniq)]])
                for a, b in zip(starts[:-1], starts[1:]):
                    add(tuple(ctxs[a].tolist()), uniq[a:b, -1], cnt[a:b])
        for ctx, d in new.items():
            if ctx in self._counts:
                old_ids, old_cnt, _ = self._counts[ctx]
                for v, c in zip(old_ids.tolist(), old_cnt.tolist()):
                    d[v] = d.get(v, 0) + c
            ids = np.fromiter(d.keys(), dtype=np.int64, count=len(d))
            cs = np.fromiter(d.values(), dtype=np.int64, count=len(d))
            self._counts[ctx] = (ids, cs, int(cs.sum()))
        return self

    def set_logits(self, context: Sequence[int], logits: ArrayLike) -> None:
        """Set the next-token logits ``(V,)`` for one context (length <= ``order - 1``)."""
        ctx = tuple(_as_token_array(context, self.vocab_size, "context").tolist())
        if len(ctx) > self.order - 1:
            raise ValueError(
                f"context has length {len(ctx)} but an order-{self.order} model uses at most {self.order - 1} tokens"
            )
        z = as_float_array(logits, "logits", finite=False).astype(np.float64)
        if z.shape != (self.vocab_size,):
            raise ValueError(f"logits must have shape ({self.vocab_size},), got {z.shape}")
        if np.isnan(z).any() or np.isposinf(z).any() or np.isneginf(z).all():
            raise ValueError("logits must be free of NaN/+inf with at least one finite entry")
        self._logits[ctx] = z.copy()

    # ---------------------------------------------------------------- inference
    def context_of(self, prefix: Sequence[int]) -> tuple[int, ...]:
        """The part of ``prefix`` the model conditions on: its last ``order - 1`` tokens."""
        n1 = self.order - 1
        toks = list(prefix)
        return tuple(int(t) for t in (toks[len(toks) - n1 :] if n1 > 0 else []))

    def next_logits(self, prefix: Sequence[int]) -> NDArray[np.float64]:
        """Normalised next-token log-probabilities ``log pi(. | prefix)``, shape ``(V,)``.

        These are logits in the decoding sense (any additive constant is allowed);
        here they are already normalised, so ``exp`` sums to 1.
        """
        prefix = _as_token_array(prefix, self.vocab_size, "prefix")
        ctx = self.context_of(prefix.tolist())
        if ctx in self._logits:
            return _log_softmax(self._logits[ctx])
        V = self.vocab_size
        check_size((V,), "NGramLM.next_logits: a dense (vocab_size,) vector", limit=MAX_ELEMENTS)
        if ctx not in self._counts:
            return np.full(V, -np.log(V))
        ids, cs, total = self._counts[ctx]
        counts = np.zeros(V)
        counts[ids] = cs
        with np.errstate(divide="ignore"):
            return np.log(counts + self.k) - np.log(total + self.k * V)

    def next_probs(self, prefix: Sequence[int]) -> NDArray[np.float64]:
        """``pi(. | prefix)``, shape ``(V,)``, summing to 1."""
        return np.exp(self.next_logits(prefix))

    __call__ = next_logits

    def log_prob(self, tokens: Sequence[int], start: int = 0) -> float:
        """``log pi(f_{start+1:T} | f_{1:start})``: the sum of Eq. (3.3) factors from ``start``."""
        arr = _as_token_array(tokens, self.vocab_size, "tokens").tolist()
        start = check_positive_int(start, "start", minimum=0)
        if not 0 <= start <= len(arr):
            raise ValueError(f"start must be in [0, {len(arr)}], got {start}")
        return float(sum(self.next_logits(arr[:m])[arr[m]] for m in range(start, len(arr))))

    def sample(self, length: int, rng: np.random.Generator | int, prefix: Sequence[int] = ()) -> list[int]:
        """Draw ``length`` tokens after ``prefix`` by ancestral sampling (exact, §6.3).

        ``rng``: a ``numpy.random.Generator`` or an int seed (required: no global random state).
        """
        rng = as_generator(rng, required=True)
        length = check_positive_int(length, "length", minimum=0)
        check_size((length,), "NGramLM.sample(length)", limit=MAX_ELEMENTS)
        out = list(_as_token_array(prefix, self.vocab_size, "prefix").tolist())
        for _ in range(length):
            p = self.next_probs(out)
            out.append(int(rng.choice(self.vocab_size, p=p)))
        return out

    @property
    def contexts(self) -> list[tuple[int, ...]]:
        """All contexts with counts or explicit logits (sorted)."""
        return sorted(set(self._counts) | set(self._logits))

    def counts(self, context: Sequence[int]) -> NDArray[np.int64]:
        """Raw counts ``count(context, v)`` for every ``v``, shape ``(V,)`` (zeros if unseen)."""
        ctx = tuple(as_token_list(context, "context", upper=self.vocab_size))
        if len(ctx) > self.order - 1:
            raise ValueError(
                f"context has length {len(ctx)} but an order-{self.order} model uses at most {self.order - 1} tokens"
            )
        check_size((self.vocab_size,), "NGramLM.counts: a dense (vocab_size,) vector", limit=MAX_ELEMENTS)
        out = np.zeros(self.vocab_size, dtype=np.int64)
        if ctx in self._counts:
            ids, cs, _ = self._counts[ctx]
            out[ids] = cs
        return out

    def __repr__(self) -> str:
        return f"NGramLM(vocab_size={self.vocab_size}, order={self.order}, k={self.k}, contexts={len(self.contexts)})"


def random_table_model(
    vocab_size: int,
    order: int,
    rng: np.random.Generator | int,
    temperature: float = 1.0,
) -> NGramLM:
    """A random order-``n`` table model: i.i.d. ``N(0, 1) / temperature`` logits per context.

    Every context of length ``0 .. order - 1`` gets its own logit vector, so the
    model is a fully specified distribution over sequences (no unseen contexts);
    there are ``sum_{j < order} V^j`` of them, so keep ``V`` and ``order`` small.
    A small ``temperature`` gives peaked next-token distributions (cf. the decoding
    temperature of the formulation paper, Eq. (5.7) and Remark 6.2).

    Example: ``random_table_model(4, 2, np.random.default_rng(0))`` is a random
    4-state Markov chain with a random initial distribution.
    """
    rng = as_generator(rng, required=True)
    temperature = check_real(temperature, "temperature", lo=0.0, lo_open=True)
    lm = NGramLM(vocab_size, order, k=0.0)
    if lm.vocab_size > 1 and lm.order * np.log(lm.vocab_size) > np.log(5_000_000):  # V^order alone too many
        raise ValueError(
            f"random_table_model would store V^order = {lm.vocab_size}^{lm.order} logits or more; "
            "use a smaller vocab_size or order"
        )
    n_ctx = sum(lm.vocab_size**j for j in range(lm.order))
    if n_ctx * lm.vocab_size > 5_000_000:
        raise ValueError(
            f"random_table_model would store {n_ctx} contexts x {lm.vocab_size} logits; "
            "use a smaller vocab_size or order"
        )
    for j in range(lm.order):
        for ctx in np.ndindex(*([lm.vocab_size] * j)):
            lm.set_logits(ctx, rng.standard_normal(lm.vocab_size) / temperature)
    return lm


def table_model(vocab_size: int, order: int, table: Mapping[tuple[int, ...], ArrayLike]) -> NGramLM:
    """An :class:`NGramLM` from explicit ``{context tuple: (V,) logits}``; unlisted contexts are uniform.

    Example (greedy is not optimal, formulation paper §6.2)::

        table_model(3, 2, {(): np.log([.5, .4, .1]), (0,): np.log([.4, .3, .3]),
                           (1,): np.log([.05, .9, .05])})
    """
    if not isinstance(table, Mapping):
        raise TypeError(f"table must be a mapping {{context tuple: (V,) logits}}, got {type(table).__name__}")
    lm = NGramLM(vocab_size, order, k=0.0)
    for ctx, z in table.items():
        try:
            lm.set_logits(ctx, z)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"table[{ctx!r}]: {exc}") from None
    return lm
