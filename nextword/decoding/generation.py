"""Decoding: turning a next-token model into sequences (formulation paper, Section 6).

Everything here is model-agnostic. A *model* is any callable

    next_logits(prefix: list[int]) -> np.ndarray      # shape (V,)

returning next-token logits ``z`` (any additive constant) with ``pi_m(. | f_{1:m-1}) = softmax(z)``: the
learned conditional of Eq. (6.1b). An :class:`nextword.decoding.ngram.NGramLM`, the numpy
decoder LM (whose ``next_logits`` can reuse a KV cache when the prefix extends the
last one) or a wrapped torch model all fit; torch tensors are converted with
``np.asarray``. Log-probabilities are computed with a log-sum-exp softmax in
float64.

Textbook (Chapter 6): the chain rule ``P(w[1:T]) = prod_t P(w[t] | w[1:t-1])`` and
autoregressive generation of §6.3, the softmax temperature remark of §6.2, and the
closing look-ahead of §6.6 (sampling strategies, beam search, diversity vs quality).

Notation (formulation paper §6): the prompt is ``f^prompt_{1:l_prompt}``, Eq. (6.2);
generation fills positions ``m = l_prompt + 1, ...``. Every decoder returns the
**full token list, prompt included**, as a ``list[int]``.

* :func:`greedy` -- Eq. (6.4), ``f_m = argmax_v pi_m(v | f_{1:m-1})``.
* :func:`exhaustive_search` -- Eq. (6.3), the most likely continuation by
  enumerating all ``|V|^(L - l_prompt)`` of them (tiny models only).
* :func:`beam_search` -- standard beam search (keep the ``k`` best partial
  sequences), the usual reading of "beam search" in Example 6.1.
* :func:`lookahead_search` -- the windowed procedure Example 6.1 actually writes
  down (maximise over the next ``l`` tokens, commit one, slide).
* :func:`sample` -- §6.3, ``f_m ~ pi_m(. | f_{1:m-1})``, with the decoding
  temperature of Eq. (5.7)/Remark 6.2 and the top-k / top-p (nucleus) filters.
* :func:`mixed` -- §6.4, sample the first ``L'`` new tokens, then greedy.
* :func:`sequence_log_prob` -- ``log pi(f_{l+1:T} | f_{1:l})``, the product
  (6.1a) restricted to the generated part.

EOS and PAD (§6.1). When ``eos_id`` is given, generation stops as soon as EOS is
produced; the EOS token is kept in the output and nothing is appended after it,
so outputs have variable length. The paper instead fills the remaining positions
up to ``L`` with PAD, whose transition probability is a Dirac mass once an EOS has
appeared; padding therefore adds ``log 1 = 0`` to the sequence log-probability,
which is why stopping is equivalent. Use :func:`pad_to_length` to obtain the
paper's fixed-length form, and pass ``eos_id``/``pad_id`` to
:func:`sequence_log_prob` to score it.

Randomness: the sampling decoders take an explicit ``rng: np.random.Generator``
and never touch global random state; omitting it is a ``TypeError``.

Tiny example::

    >>> from nextword.decoding.ngram import table_model
    >>> lm = table_model(3, 2, {(): np.log([.5, .4, .1]), (0,): np.log([.4, .3, .3]),
    ...                         (1,): np.log([.05, .9, .05])})
    >>> greedy(lm.next_logits, [], 2)             # 0 then 0: probability .5 * .4 = .20
    [0, 0]
    >>> exhaustive_search(lm.next_logits, [], 2)  # 1 then 1: probability .4 * .9 = .36
    [1, 1]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from nextword._validate import as_token_list, check_positive_int, check_real, check_size
from nextword.decoding.filters import (  # the filters are part of this module's public API
    check_count,
    check_logits,
    check_min_tokens,
    check_temperature,
    check_top_p,
    filter_logits_unchecked,
    log_softmax_unchecked,
    apply_temperature,
    filter_logits,
    log_softmax,
    top_k_filter,
    top_p_filter,
)

__all__ = [
    "NextLogits",
    "log_softmax",
    "apply_temperature",
    "top_k_filter",
    "top_p_filter",
    "filter_logits",
    "greedy",
    "exhaustive_search",
    "beam_search",
    "lookahead_search",
    "sample",
    "mixed",
    "sequence_log_prob",
    "pad_to_length",
]

NextLogits = Callable[[list[int]], np.ndarray]

#: the largest number of continuations :func:`exhaustive_search` will enumerate
MAX_EXHAUSTIVE = 2_000_000


# --------------------------------------------------------------------------- validation
def _exceeds(base: int, exponent: int, limit: int) -> bool:
    """``base ** exponent > limit`` without forming a huge integer (``limit < 2**64``)."""
    return base > 1 and (exponent >= 64 or base**exponent > limit)


def _model_logits(next_logits: NextLogits, prefix: list[int], vocab_size: int | None) -> np.ndarray:
    """Call the model and check it returned a valid ``(V,)`` vector."""
    if not callable(next_logits):
        raise TypeError(f"next_logits must be a callable prefix -> logits (V,), got {type(next_logits).__name__}")
    z = check_logits(np.asarray(next_logits(list(prefix))), "next_logits(prefix)")
    if z.ndim != 1:
        raise ValueError(f"next_logits(prefix) must return shape (V,), got {z.shape}")
    if vocab_size is not None and z.shape[0] != vocab_size:
        raise ValueError(f"next_logits(prefix) returned {z.shape[0]} logits, expected vocab_size={vocab_size}")
    return z


def _check_prompt(prompt: Sequence[int], name: str = "prompt") -> list[int]:
    return as_token_list(prompt, name)


def _check_id(token: int | None, name: str) -> int | None:
    """An optional special token id (``eos_id``, ``pad_id``): ``None`` or an int ``>= 0``."""
    return None if token is None else check_positive_int(token, name, minimum=0)


def _check_rng(rng: object) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            "rng must be a numpy.random.Generator (e.g. np.random.default_rng(0)); "
            f"decoding never uses global random state, got {rng!r}"
        )
    return rng


# ----------------------------------------------------------------------------- decoders
def _autoregress(
    next_logits: NextLogits, seq: list[int], n: int, choose: Callable[[np.ndarray], int], eos_id: int | None
) -> list[int]:
    """The loop shared by greedy and sampling: append ``choose(logits)`` ``n`` times, stop after EOS."""
    check_size((n,), "max_new_tokens")
    V = None
    for _ in range(n):
        z = _model_logits(next_logits, seq, V)  # (V,)
        V = z.shape[0]
        seq.append(choose(z))
        if eos_id is not None and seq[-1] == eos_id:
            break
    return seq


def greedy(
    next_logits: NextLogits,
    prompt: Sequence[int],
    max_new_tokens: int,
    *,
    eos_id: int | None = None,
) -> list[int]:
    """Greedy decoding, Eq. (6.4): ``f_m = argmax_v pi_m(v | f_{1:m-1})``.

    ``max_new_tokens`` is ``L - l_prompt``. Ties go to the smallest token id.
    Stops after EOS (kept). Cost: ``max_new_tokens`` model calls. Not optimal for
    Eq. (6.3) in general (§6.2): see :func:`exhaustive_search`.
    """
    seq = _check_prompt(prompt)
    n = check_count(max_new_tokens, "max_new_tokens", 0)
    eos_id = _check_id(eos_id, "eos_id")
    return _autoregress(next_logits, seq, n, lambda z: int(np.argmax(z)), eos_id)


def exhaustive_search(
    next_logits: NextLogits,
    prompt: Sequence[int],
    length: int,
    vocab_size: int | None = None,
    *,
    eos_id: int | None = None,
) -> list[int]:
    """The most likely continuation, Eq. (6.3), by enumerating every continuation.

    ``length`` is the number of generated tokens ``L - l_prompt``; there are
    ``V^length`` continuations (the tree is walked depth-first, so each prefix is
    scored once: ``sum_{j < length} V^j`` model calls). With ``eos_id`` a branch
    ends at EOS: the PAD tail that follows has probability 1 (§6.1), so its score is
    final and it is returned without the padding. Ties go to the
    lexicographically smallest continuation. ``vocab_size`` defaults to the length
    of ``next_logits(prompt)``. Refuses more than ``MAX_EXHAUSTIVE`` leaves.
    """
    seq0 = _check_prompt(prompt)
    n = check_count(length, "length", 0)
    eos_id = _check_id(eos_id, "eos_id")
    vocab_size = None if vocab_size is None else check_count(vocab_size, "vocab_size", 1)
    z0 = _model_logits(next_logits, seq0, vocab_size)
    V = z0.shape[0]
    if _exceeds(V, n, MAX_EXHAUSTIVE):
        raise ValueError(
            f"exhaustive_search would enumerate V^length = {V}^{n} continuations "
            f"(> {MAX_EXHAUSTIVE}); use beam_search or a smaller problem"
        )
    best_score, best_seq = -np.inf, list(seq0)
    found = False

    def visit(seq: list[int], score: float, lp: np.ndarray | None, depth: int) -> None:
        nonlocal best_score, best_seq, found
        if depth == n:
            if not found or score > best_score:
                best_score, best_seq, found = score, list(seq), True
            return
        if lp is None:
            lp = log_softmax_unchecked(_model_logits(next_logits, seq, V))
        for v in range(V):
            s = score + lp[v]
            if s == -np.inf:
                continue  # zero-probability continuation
            seq.append(v)
            if eos_id is not None and v == eos_id:
                if not found or s > best_score:
                    best_score, best_seq, found = s, list(seq), True
            else:
                visit(seq, s, None, depth + 1)
            seq.pop()

    visit(seq0, 0.0, log_softmax_unchecked(z0), 0)
    return best_seq


def lookahead_search(
    next_logits: NextLogits,
    prompt: Sequence[int],
    max_new_tokens: int,
    window: int = 2,
    top_k: int | None = None,
    *,
    eos_id: int | None = None,
) -> list[int]:
    """Windowed look-ahead decoding, the procedure written out in Example 6.1.

    At each position ``m`` solve
    ``f_{m:m+l-1} in argmax pi_{m:m+l-1}(v_1, ..., v_l | f_{1:m-1})`` over windows
    of ``l = window`` tokens (shorter near the end), with the first token ``v_1``
    restricted to the ``top_k`` most likely under ``pi_m`` (``None``: all ``V``);
    commit ``f_m = v_1`` and move on by one position. ``window = 2`` with
    ``top_k = k`` is the paper's "basic version" with cost ``~ k |V|`` per step;
    ``window = 1`` is greedy (Eq. 6.4); ``window = max_new_tokens`` with
    ``top_k = None`` is exhaustive search (Eq. 6.3).

    This is *not* the beam search of :func:`beam_search` (which keeps the ``k``
    best partial sequences and never commits early); Example 6.1 calls this
    windowed procedure beam search, and the two return different sequences in
    general (see ``book/ERRATA.md``). Within a window an EOS ends the branch
    (PAD follows with probability 1, §6.1). Ties go to the smallest tokens.

    Each step scores up to ``min(top_k, V) * V^(window - 1)`` continuations; like
    :func:`exhaustive_search`, more than ``MAX_EXHAUSTIVE`` is refused (a ``ValueError``
    naming ``window``) before any search.
    """
    window = check_positive_int(window, "window")
    seq = _check_prompt(prompt)
    n = check_count(max_new_tokens, "max_new_tokens", 0)
    w = check_count(window, "window", 1)
    k = None if top_k is None else check_count(top_k, "top_k", 1)
    eos_id = _check_id(eos_id, "eos_id")
    check_size((n,), "max_new_tokens")
    n0 = len(seq)
    V = None
    while len(seq) - n0 < n:
        depth = min(w, n - (len(seq) - n0))
        z = _model_logits(next_logits, seq, V)
        if V is None and _exceeds(z.shape[0], depth - 1, MAX_EXHAUSTIVE // min(k or z.shape[0], z.shape[0])):
            raise ValueError(
                f"lookahead_search would score top_k * V^(window - 1) = {min(k or z.shape[0], z.shape[0])}"
                f" * {z.shape[0]}^{depth - 1} continuations per step (> {MAX_EXHAUSTIVE}); "
                "use a smaller window or top_k"
            )
        V = z.shape[0]
        lp0 = log_softmax_unchecked(z)
        firsts = np.argsort(-lp0, kind="stable")[: V if k is None else min(k, V)]  # (k,)
        best_first, best_score = None, -np.inf

        def best_tail(prefix: list[int], d: int) -> float:
            """max over continuations of length <= d of their log-prob given ``prefix``."""
            if d == 0 or (eos_id is not None and prefix[-1] == eos_id):
                return 0.0
            lp = log_softmax_unchecked(_model_logits(next_logits, prefix, V))
            return max(
                (float(lp[v]) + best_tail(prefix + [v], d - 1) for v in range(V) if lp[v] > -np.inf),
                default=-np.inf,
            )

        for v in sorted(int(f) for f in firsts):
            if lp0[v] == -np.inf:
                continue
            s = float(lp0[v]) + best_tail(seq + [v], depth - 1)
            if s > best_score:
                best_first, best_score = v, s
        seq.append(int(best_first))
        if eos_id is not None and seq[-1] == eos_id:
            break
    return seq


def beam_search(
    next_logits: NextLogits,
    prompt: Sequence[int],
    max_new_tokens: int,
    beam_width: int,
    *,
    eos_id: int | None = None,
    length_penalty: float = 0.0,
) -> list[int]:
    """Beam search: keep the ``beam_width`` most likely partial continuations (Example 6.1).

    At each step every alive beam is extended by every token, and the
    ``beam_width`` best of the ``beam_width x V`` candidates (by summed log-prob,
    ties to the earlier beam and then the smaller token id) stay alive. A
    candidate ending in EOS leaves the beam and joins the finished pool (which keeps
    the ``beam_width`` best). The answer is the best of finished and alive
    sequences by ``log pi(continuation) / n_new ** length_penalty`` where ``n_new``
    counts generated tokens (EOS included); ``length_penalty = 0`` is the plain
    Eq. (6.3) objective, larger values favour longer outputs.

    ``beam_width = 1`` is greedy (Eq. 6.4); ``beam_width >= V^(max_new_tokens - 1)``
    keeps every partial continuation and returns the exact maximiser of Eq. (6.3).
    With ``length_penalty = 0`` the search stops early once the best finished
    score is at least the best alive one (log-probs only decrease, so this is exact).
    """
    seq0 = _check_prompt(prompt)
    n = check_count(max_new_tokens, "max_new_tokens", 0)
    width = check_count(beam_width, "beam_width", 1)
    length_penalty = check_real(length_penalty, "length_penalty")
    eos_id = _check_id(eos_id, "eos_id")
    check_size((n, width), "max_new_tokens x beam_width")

    def final_score(score: float, n_new: int) -> float:
        return score / (max(n_new, 1) ** length_penalty)

    alive: list[tuple[float, list[int]]] = [(0.0, seq0)]
    finished: list[tuple[float, float, list[int]]] = []  # (final score, log-prob, seq)
    V = None
    for step in range(n):
        lps = []
        for _, seq in alive:
            z = _model_logits(next_logits, seq, V)
            V = z.shape[0]
            lps.append(log_softmax_unchecked(z))
        scores = np.array([s for s, _ in alive])[:, None] + np.stack(lps)  # (B, V)
        flat = scores.ravel()  # (B * V,), index = beam * V + token
        order = np.argsort(-flat, kind="stable")  # best first, ties by (beam, token)
        new_alive: list[tuple[float, list[int]]] = []
        for idx in order:
            s = float(flat[idx])
            if s == -np.inf or len(new_alive) >= width:
                break
            b, v = divmod(int(idx), V)
            cand = alive[b][1] + [v]
            if eos_id is not None and v == eos_id:
                finished.append((final_score(s, step + 1), s, cand))
            else:
                new_alive.append((s, cand))
        finished.sort(key=lambda t: -t[0])  # stable: earlier-found wins ties
        del finished[width:]
        alive = new_alive
        if not alive:
            break
        if length_penalty == 0.0 and finished and finished[0][1] >= alive[0][0]:
            alive = []
            break
    n_gen = lambda seq: len(seq) - len(seq0)  # noqa: E731
    pool = [(fs, seq) for fs, _, seq in finished] + [(final_score(s, n_gen(seq)), seq) for s, seq in alive]
    if not pool:  # max_new_tokens == 0
        return seq0
    best = max(range(len(pool)), key=lambda i: (pool[i][0], -i))
    return pool[best][1]


def _sample_from(z: np.ndarray, rng: np.random.Generator) -> int:
    """Draw one index from ``softmax(z)`` by inverting the CDF (zero-probability ids never drawn)."""
    p = np.exp(log_softmax_unchecked(z))  # (V,)
    cdf = np.cumsum(p)  # (V,)
    u = rng.random() * cdf[-1]
    return int(min(np.searchsorted(cdf, u, side="right"), len(p) - 1))


def sample(
    next_logits: NextLogits,
    prompt: Sequence[int],
    max_new_tokens: int,
    *,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    rng: np.random.Generator | None = None,
    eos_id: int | None = None,
    min_tokens_to_keep: int = 1,
) -> list[int]:
    """Ancestral sampling, §6.3: ``f_m ~ pi_m(. | f_{1:m-1})`` for each new position.

    With ``temperature=1`` and no filters this draws exactly from ``pi_{1:L}``
    conditioned on the prompt (the set (6.2)). The next-token logits are passed
    through :func:`apply_temperature`, :func:`top_k_filter`, :func:`top_p_filter` in
    that order and renormalised. ``temperature -> 0`` recovers :func:`greedy`
    (Remark 6.2); a temperature so small that ``z / tau`` overflows still gives the
    argmax (see :func:`apply_temperature`). ``min_tokens_to_keep`` is passed to the
    filters (see :func:`filter_logits`). ``rng`` is required (a ``numpy.random.Generator``).
    """
    eos_id = _check_id(eos_id, "eos_id")
    seq = _check_prompt(prompt)
    n = check_count(max_new_tokens, "max_new_tokens", 0)
    temperature = check_temperature(temperature)
    top_k = None if top_k is None else check_count(top_k, "top_k", 1)
    top_p = None if top_p is None else check_top_p(top_p)
    keep = check_min_tokens(min_tokens_to_keep)
    rng = _check_rng(rng)
    return _autoregress(
        next_logits,
        seq,
        n,
        lambda z: _sample_from(filter_logits_unchecked(z, temperature, top_k, top_p, keep), rng),
        eos_id,
    )


def mixed(
    next_logits: NextLogits,
    prompt: Sequence[int],
    num_sampled: int,
    max_new_tokens: int,
    *,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    rng: np.random.Generator | None = None,
    eos_id: int | None = None,
) -> list[int]:
    """Mixed decoding, §6.4: sample the first ``L' = num_sampled`` new tokens, then greedy.

    ``0 <= num_sampled <= max_new_tokens``; ``num_sampled = 1`` is the
    first-token-stochastic scheme of Remark 6.3. The sampling options apply to the
    sampled part only. ``rng`` is required when ``num_sampled > 0``.
    """
    eos_id = _check_id(eos_id, "eos_id")
    n = check_count(max_new_tokens, "max_new_tokens", 0)
    n_s = check_count(num_sampled, "num_sampled", 0)
    if n_s > n:
        raise ValueError(f"num_sampled must be <= max_new_tokens={n}, got {n_s}")
    seq0 = _check_prompt(prompt)
    if n_s > 0:
        head = sample(
            next_logits,
            seq0,
            n_s,
            temperature=temperature,
            top_k=top_k,
            top_p=top_p,
            rng=rng,
            eos_id=eos_id,
        )
    else:
        check_temperature(temperature)
        head = seq0
    if eos_id is not None and len(head) > len(seq0) and head[-1] == eos_id:
        return head
    return greedy(next_logits, head, n - (len(head) - len(seq0)), eos_id=eos_id)


def sequence_log_prob(
    next_logits: NextLogits,
    tokens: Sequence[int],
    start: int,
    *,
    eos_id: int | None = None,
    pad_id: int | None = None,
) -> float:
    """``log pi(f_{start+1:T} | f_{1:start})``: the log of the product (6.1a) over generated positions.

    ``tokens`` is the full sequence ``f_{1:T}`` (prompt + continuation) and
    ``start = l_prompt``; ``start = 0`` scores the whole sequence (``next_logits([])``
    must then be defined). With ``eos_id`` the PAD convention of §6.1 applies:
    after the first EOS at a position ``>= start`` every token must be ``pad_id``
    (each then has probability 1 and adds 0); a non-PAD token there has
    probability 0 and the result is ``-inf``. Tokens after an EOS with no
    ``pad_id`` given are an error.
    """
    seq = _check_prompt(tokens, "tokens")
    eos_id, pad_id = _check_id(eos_id, "eos_id"), _check_id(pad_id, "pad_id")
    if isinstance(start, (bool, np.bool_)) or not isinstance(start, (int, np.integer)):
        raise TypeError(f"start must be an integer, got {start!r}")
    if not 0 <= start <= len(seq):
        raise ValueError(f"start must be in [0, len(tokens)={len(seq)}], got {start}")
    total = 0.0
    V = None
    for m in range(start, len(seq)):
        z = _model_logits(next_logits, seq[:m], V)
        V = z.shape[0]
        if seq[m] >= V:
            raise ValueError(f"tokens[{m}]={seq[m]} is outside the vocabulary [0, {V})")
        total += float(log_softmax_unchecked(z)[seq[m]])
        if eos_id is not None and seq[m] == eos_id:
            tail = seq[m + 1 :]
            if tail and pad_id is None:
                raise ValueError(f"tokens continue after eos_id at position {m}; pass pad_id if they are padding")
            return total if all(t == pad_id for t in tail) else -np.inf
    return total


def pad_to_length(tokens: Sequence[int], length: int, pad_id: int) -> list[int]:
    """Right-pad ``tokens`` with ``pad_id`` to ``length`` (the fixed-length form of §6.1)."""
    seq = _check_prompt(tokens, "tokens")
    length = check_count(length, "length", 0)
    pad_id = check_positive_int(pad_id, "pad_id", minimum=0)
    check_size((length,), "pad_to_length(length)")
    if len(seq) > length:
        raise ValueError(f"tokens has length {len(seq)} > length={length}")
    return seq + [int(pad_id)] * (length - len(seq))
