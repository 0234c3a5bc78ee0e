"""Probing attention heads: what does a head look at, and does the model need it? (Chapter 6, §6.4).

Chapter 6 describes heads that specialise (Fig. 6.19: a local head on ``j = i, i-1``, a head with
a vertical line at the subject, a diffuse head near ``1/i``) and asks, in Exercise 9, for a
diagnostic that tells whether a head has specialised. This module gives the pieces, all on plain
numpy arrays of attention weights ``(..., T, T)`` (rows = queries ``i``, columns = keys ``j``,
causal rows sum to 1 over ``j <= i``):

* :func:`attention_to_offset` — mean weight on the key ``offset`` positions back (offset 1:
  previous-token head; 0: the diagonal).
* :func:`attention_to_keys` — mean weight that chosen queries put on a chosen key per sequence
  (e.g. marker → subject: the "vertical line" of Fig. 6.19's Head 2).
* :func:`normalized_entropy` — ``H(α[i, :]) / log(i + 1)``, averaged over queries: 1 for the
  uniform ``1/i`` row (Head 4), 0 for one-hot rows.
* :func:`head_ablation_effects` — the causal test: switch one head off and measure the loss change
  on groups of positions (a head is *used for* a phenomenon if removing it hurts there).
* :func:`permutation_sensitivity` — how much a model's output at one position moves when the
  tokens before it are shuffled (0 for a 1-layer model without positions: §6.5's permutation
  invariance).
* :class:`AgreementTask` — a synthetic language where three kinds of head are useful: an
  order-2 Markov filler (needs the previous token), a subject token early in the sentence and
  markers whose next token must "agree" with the subject (needs a long-range, content-based head).

Worked example (a head that always looks one step back)::

    >>> w = np.eye(4, k=-1); w[0, 0] = 1.0            # row i puts all weight on key i-1
    >>> float(attention_to_offset(w, 1)), float(attention_to_offset(w, 0))
    (1.0, 0.0)
    >>> round(float(normalized_entropy(np.tril(np.ones((4, 4))) / np.arange(1, 5)[:, None])), 6)
    1.0
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np

from nextword._validate import as_float_array, check_callable, check_flag, check_positive_int
from nextword.data import MarkovSource, markov_source

__all__ = [
    "attention_to_offset",
    "attention_to_keys",
    "normalized_entropy",
    "head_profile",
    "head_ablation_effects",
    "permutation_sensitivity",
    "AgreementTask",
    "ProbeBatch",
]


def _weights(weights: object, name: str = "weights") -> np.ndarray:
    w = as_float_array(weights, name, min_ndim=2)
    if w.shape[-1] != w.shape[-2]:
        raise ValueError(f"{name} must have shape (..., T, T) (queries x keys), got {w.shape}")
    return w


def attention_to_offset(weights: object, offset: int, query_mask: object = None) -> np.ndarray:
    """Mean of ``α[i, i - offset]`` over queries ``i >= max(offset, 1)``; ``(..., T, T)`` → ``(...)``.

    ``offset=1`` scores a previous-token head (1 = all weight one step back), ``offset=0`` the
    diagonal (Fig. 6.19, Head 1 concentrates on ``j = i`` and ``j = i - 1``). Query 0 is skipped:
    a causal row 0 has a single key, so its weight 1 says nothing about the head.
    With ``query_mask (N, T)`` (booleans; ``weights`` then ``(N, ..., T, T)``) only the selected
    queries count and the mean is also over the sequences: the result is ``(...)`` without ``N``
    (e.g. the previous-token score on filler positions only, one value per head).
    """
    w = _weights(weights)
    T = w.shape[-1]
    if isinstance(offset, bool) or not isinstance(offset, (int, np.integer)) or not 0 <= offset < T:
        raise ValueError(f"offset must be an int in [0, T) = [0, {T}), got {offset!r}")
    if T < 2:
        raise ValueError("attention_to_offset needs T >= 2")
    diag = np.diagonal(w, offset=-int(offset), axis1=-2, axis2=-1)  # (..., T - offset): α[i, i-offset]
    keep = np.arange(offset, T) >= 1  # (T - offset,) queries i = offset..T-1, skipping i = 0
    if query_mask is None:
        return diag[..., keep].mean(axis=-1)
    if w.ndim < 3:
        raise ValueError(f"with query_mask, weights must have shape (N, ..., T, T), got {w.shape}")
    N = w.shape[0]
    qm = np.asarray(query_mask)
    if qm.shape != (N, T) or qm.dtype != bool:
        raise ValueError(f"query_mask must be a boolean array of shape (N, T) = {(N, T)}, got {qm.shape} {qm.dtype}")
    sel = qm[:, offset:] & keep[None, :]  # (N, T - offset)
    if not sel.any():
        raise ValueError("query_mask selects no query i >= max(offset, 1)")
    selb = sel.reshape((N,) + (1,) * (w.ndim - 3) + sel.shape[1:])  # broadcast over the middle axes
    return (diag * selb).sum(axis=(0, -1)) / sel.sum()


def attention_to_keys(weights: object, key_positions: object, query_mask: object = None) -> np.ndarray:
    """Mean weight the selected queries put on one key per sequence.

    ``weights (N, ..., T, T)`` (sequence axis first, e.g. ``(N, heads, T, T)``),
    ``key_positions (N,)`` the key to score in each sequence (e.g. the subject), ``query_mask
    (N, T)`` booleans selecting the queries (default: every query ``i >= key``). Returns
    ``(...)``, e.g. one score per head: the height of Fig. 6.19's "vertical line".
    """
    w = _weights(weights)
    if w.ndim < 3:
        raise ValueError(f"weights must have shape (N, ..., T, T) with a leading sequence axis, got {w.shape}")
    N, T = w.shape[0], w.shape[-1]
    keys = np.asarray(key_positions)
    if keys.shape != (N,) or keys.dtype.kind not in "iu" or keys.min() < 0 or keys.max() >= T:
        raise ValueError(
            f"key_positions must be integer positions of shape (N,) = ({N},) in [0, {T}), got {keys.shape} {keys.dtype}"
        )
    if query_mask is None:
        qm = np.arange(T)[None, :] >= keys[:, None]  # (N, T)
    else:
        qm = np.asarray(query_mask)
        if qm.shape != (N, T) or qm.dtype != bool:
            raise ValueError(
                f"query_mask must be a boolean array of shape (N, T) = {(N, T)}, got {qm.shape} {qm.dtype}"
            )
    if not qm.any():
        raise ValueError("query_mask selects no query")
    col = np.take_along_axis(w, keys.reshape((N,) + (1,) * (w.ndim - 1)), axis=-1)[..., 0]  # (N, ..., T)
    qmb = qm.reshape((N,) + (1,) * (w.ndim - 3) + (T,))  # broadcast over the middle axes
    return (col * qmb).sum(axis=(0, -1)) / qm.sum()


def normalized_entropy(weights: object, *, causal: bool = True) -> np.ndarray:
    """Mean over queries ``i >= 1`` of ``H(α[i, :]) / log(n_i)``; ``(..., T, T)`` → ``(...)``.

    ``n_i = i + 1`` visible keys for a causal row (``T`` otherwise), so the uniform row ``1/(i+1)``
    scores 1 (Fig. 6.19's diffuse Head 4) and a one-hot row 0. Query 0 (one key) is skipped.
    """
    causal = check_flag(causal, "causal")
    w = _weights(weights)
    T = w.shape[-1]
    if T < 2:
        raise ValueError("normalized_entropy needs T >= 2")
    p = np.clip(w, 0.0, None)
    H = -(p * np.log(np.where(p > 0, p, 1.0))).sum(axis=-1)  # (..., T)
    n = np.arange(1, T + 1) if causal else np.full(T, T)
    return (H[..., 1:] / np.log(n[1:])).mean(axis=-1)


def head_profile(weights: object, key_positions: object = None, query_mask: object = None) -> dict[str, np.ndarray]:
    """All scores for attention maps ``(N, heads, T, T)`` of one layer: each value is ``(heads,)``.

    Keys: ``"diagonal"``, ``"previous"`` (offset 1), ``"entropy"`` (normalised) and, when
    ``key_positions`` is given, ``"target"`` (:func:`attention_to_keys`, with ``query_mask``; a
    ``query_mask`` without ``key_positions`` is a ``ValueError``).
    """
    w = _weights(weights)
    if w.ndim != 4:
        raise ValueError(f"weights must have shape (N, heads, T, T), got {w.shape}")
    if key_positions is None and query_mask is not None:
        raise ValueError("query_mask selects the queries of the 'target' score, which needs key_positions; got None")
    out = {
        "diagonal": attention_to_offset(w, 0).mean(0),
        "previous": attention_to_offset(w, 1).mean(0),
        "entropy": normalized_entropy(w).mean(0),
    }
    if key_positions is not None:
        out["target"] = attention_to_keys(w, key_positions, query_mask)
    return out


def head_ablation_effects(
    nll_fn: Callable[[np.ndarray | None], np.ndarray], num_layers: int, num_heads: int, groups: Mapping[str, object]
) -> dict[str, np.ndarray]:
    """Loss increase on each group of positions when one head at a time is switched off.

    ``nll_fn(head_mask)`` returns per-token losses ``(N, T)`` for a ``(num_layers, num_heads)``
    mask of 0/1 head multipliers (None = all heads on); ``groups`` maps a name to a boolean
    ``(N, T)`` selection (e.g. ``"agreement"``: the marker positions, ``"filler"``: the rest).
    Returns ``{name: (num_layers, num_heads)}`` of ``mean nll(head off) − mean nll(all on)`` over
    the group: a head is causally *used* for a phenomenon when its entry is clearly > 0.
    """
    L = check_positive_int(num_layers, "num_layers")
    H = check_positive_int(num_heads, "num_heads")
    if not callable(nll_fn):
        raise TypeError(f"nll_fn must be a callable head_mask -> per-example NLL, got {type(nll_fn).__name__}")
    if not isinstance(groups, Mapping):
        raise TypeError(f"groups must be a mapping name -> boolean example mask, got {type(groups).__name__}")
    base = np.asarray(nll_fn(None), dtype=np.float64)
    sel = {}
    for name, g in groups.items():
        g = np.asarray(g)
        if g.shape != base.shape or g.dtype != bool or not g.any():
            raise ValueError(
                f"group {name!r} must be a non-empty boolean array of shape {base.shape}, got {g.shape} {g.dtype}"
            )
        sel[name] = g
    out = {name: np.zeros((L, H)) for name in sel}
    for layer in range(L):
        for head in range(H):
            mask = np.ones((L, H))
            mask[layer, head] = 0.0
            nll = np.asarray(nll_fn(mask), dtype=np.float64)
            for name, g in sel.items():
                out[name][layer, head] = nll[g].mean() - base[g].mean()
    return out


def permutation_sensitivity(
    logits_fn: Callable[[np.ndarray], np.ndarray],
    ids: object,
    position: int,
    rng: np.random.Generator,
    *,
    num_perms: int = 8,
) -> float:
    """Largest change of ``logits_fn(ids)[..., position, :]`` when ``ids[..., :position]`` is shuffled.

    ``logits_fn`` maps integer ids ``(N, T)`` to logits ``(N, T, V)``. The tokens strictly before
    ``position`` are permuted (the same random permutation for every row, ``num_perms`` times);
    the token at ``position`` stays. A model whose output at ``position`` depends on its context
    only as a bag of tokens returns ~0 (a 1-layer causal model without positional encoding).
    """
    check_positive_int(position, "position", minimum=0)
    check_callable(logits_fn, "logits_fn")
    num_perms = check_positive_int(num_perms, "num_perms")
    x = np.asarray(ids)
    if x.ndim != 2 or x.dtype.kind not in "iu":
        raise ValueError(f"ids must be integer token ids of shape (N, T), got {x.shape} {x.dtype}")
    if not 2 <= int(position) < x.shape[1]:
        raise ValueError(f"position must be in [2, T) = [2, {x.shape[1]}) (two tokens to permute), got {position}")
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a np.random.Generator, got {type(rng).__name__}")
    ref = np.asarray(logits_fn(x))[:, position]  # (N, V)
    worst = 0.0
    for _ in range(int(num_perms)):
        perm = rng.permutation(position)
        y = x.copy()
        y[:, :position] = x[:, perm]
        worst = max(worst, float(np.max(np.abs(np.asarray(logits_fn(y))[:, position] - ref))))
    return worst


@dataclass(frozen=True)
class ProbeBatch:
    """Sequences of :class:`AgreementTask`: ``ids (N, T)``; ``subject_pos (N,)``; ``marker_mask
    (N, T)`` True at the markers (the queries whose next token must agree with the subject)."""

    ids: np.ndarray
    subject_pos: np.ndarray
    marker_mask: np.ndarray


@dataclass(frozen=True)
class AgreementTask:
    """A toy language with a local, a long-range and a diffuse dependency (head specialisation).

    Tokens ``0..m-1`` are fillers from an order-2 Markov chain ``filler`` (predicting them needs
    the *previous* token, not just the current one); ``m..m+S-1`` are subjects, one per sentence
    at a random position ``< subject_window``; ``m+S`` is a marker "V", placed ``num_markers``
    times at positions ``>= min_marker``; the token after a marker is the agreement form
    ``m+S+1+s`` of the sentence's subject ``s`` (deterministic: a model that finds the subject
    predicts it with probability 1). ``vocab_size = m + 2S + 1``.

    >>> task = AgreementTask.make(np.random.default_rng(0))
    >>> b = task.sample(3, np.random.default_rng(1))
    >>> b.ids.shape, task.vocab_size, int(b.marker_mask.sum())
    ((3, 24), 15, 6)
    """

    filler: MarkovSource
    num_subjects: int = 4
    length: int = 24
    subject_window: int = 4
    min_marker: int = 6
    num_markers: int = 2

    def __post_init__(self) -> None:
        if not isinstance(self.filler, MarkovSource):
            raise TypeError(f"filler must be a MarkovSource, got {type(self.filler).__name__}")
        for name in ("num_subjects", "length", "subject_window", "num_markers", "min_marker"):
            check_positive_int(getattr(self, name), name)
        if self.min_marker < self.subject_window or self.min_marker + 2 * self.num_markers > self.length:
            raise ValueError(
                f"need subject_window <= min_marker and min_marker + 2*num_markers <= length, "
                f"got {self.subject_window}, {self.min_marker}, {self.num_markers}, {self.length}"
            )

    @classmethod
    def make(
        cls, rng: np.random.Generator, *, num_fillers: int = 6, concentration: float = 0.3, **kwargs: int
    ) -> "AgreementTask":
        """A task with a random order-2 filler chain (rows ~ Dirichlet(concentration))."""
        return cls(markov_source(num_fillers, 2, rng, concentration=concentration), **kwargs)

    @property
    def marker(self) -> int:
        return self.filler.num_symbols + self.num_subjects

    @property
    def vocab_size(self) -> int:
        return self.filler.num_symbols + 2 * self.num_subjects + 1

    def token_names(self) -> list[str]:
        """Readable names: fillers ``a, b, …``, subjects ``S1…``, the marker ``V``, agreements ``A1…``."""
        m, S = self.filler.num_symbols, self.num_subjects
        return (
            [chr(ord("a") + i) for i in range(m)]
            + [f"S{s + 1}" for s in range(S)]
            + ["V"]
            + [f"A{s + 1}" for s in range(S)]
        )

    def sample(self, num: int, rng: np.random.Generator) -> ProbeBatch:
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a np.random.Generator, got {type(rng).__name__}")
        n, T, m = check_positive_int(num, "num"), self.length, self.filler.num_symbols
        ids = self.filler.sample(n * T, rng).reshape(n, T)  # (N, T) filler background
        rows = np.arange(n)
        subj_pos = rng.integers(0, self.subject_window, size=n)
        subj = rng.integers(0, self.num_subjects, size=n)
        ids[rows, subj_pos] = m + subj
        marker_mask = np.zeros((n, T), dtype=bool)
        slots = np.arange(self.min_marker, T - 1)  # a marker at q needs q + 1 < T
        for r in range(n):
            while True:  # non-overlapping (marker, agreement) pairs
                q = np.sort(rng.choice(slots, size=self.num_markers, replace=False))
                if np.all(np.diff(q) >= 2):
                    break
            ids[r, q] = self.marker
            ids[r, q + 1] = self.marker + 1 + subj[r]
            marker_mask[r, q] = True
        return ProbeBatch(ids=ids, subject_pos=subj_pos, marker_mask=marker_mask)
