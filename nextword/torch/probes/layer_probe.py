"""Layer-wise probing of a trained :class:`~nextword.torch.models.lm.TinyLM` (Chapter 6, Figs. 6.24 and 6.30).

* :func:`topic_markov_source` — a language with a *surface* and a *meaning* level: every sequence
  draws a hidden topic, then its tokens from that topic's Markov chain over a shared vocabulary, so
  the previous token is a local (surface) feature and the topic a global one that only the context
  as a whole reveals;
* :func:`hidden_states` — the residual stream after the token + position embedding (Fig. 6.24) and
  after every block (Fig. 6.30), as numpy arrays;
* :func:`probe_accuracy` — a linear probe (least squares onto one-hot labels, argmax) fitted on one
  part of the data and scored on the rest.

>>> src = topic_markov_source(3, 6, rng=np.random.default_rng(0))
>>> ids, topics = src.sample(4, 10, rng=np.random.default_rng(1))
>>> ids.shape, topics.shape
((4, 10), (4,))
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from nextword.torch.models.lm import TinyLM

__all__ = ["TopicMarkovSource", "topic_markov_source", "hidden_states", "probe_accuracy"]


@dataclass(frozen=True)
class TopicMarkovSource:
    """``n_topics`` Markov chains ``transitions (K, V, V)`` (rows sum to 1) over one vocabulary of ``V``
    tokens, with a uniform topic prior and uniform first tokens."""

    transitions: np.ndarray

    @property
    def n_topics(self) -> int:
        return int(self.transitions.shape[0])

    @property
    def vocab_size(self) -> int:
        return int(self.transitions.shape[1])

    def sample(self, n: int, length: int, *, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """``n`` sequences ``(n, length)`` of token ids and their topics ``(n,)``."""
        if not isinstance(rng, np.random.Generator):
            raise TypeError("rng must be a numpy.random.Generator")
        if n < 1 or length < 1:
            raise ValueError(f"n and length must be >= 1, got {n}, {length}")
        topics = rng.integers(0, self.n_topics, size=n)
        ids = np.empty((n, length), dtype=np.int64)
        ids[:, 0] = rng.integers(0, self.vocab_size, size=n)
        cum = np.cumsum(self.transitions, axis=-1)  # (K, V, V)
        for t in range(1, length):
            u = rng.random(n)[:, None]
            ids[:, t] = (u > cum[topics, ids[:, t - 1]]).sum(axis=1)  # inverse-CDF sampling
        ids = np.minimum(ids, self.vocab_size - 1)
        return ids, topics


def topic_markov_source(
    n_topics: int, vocab_size: int, *, rng: np.random.Generator, concentration: float = 0.3
) -> TopicMarkovSource:
    """Random topic chains: every row ``Dirichlet(concentration)`` (small = peaked, distinct topics)."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError("rng must be a numpy.random.Generator")
    if n_topics < 2 or vocab_size < 2:
        raise ValueError(f"need n_topics >= 2 and vocab_size >= 2, got {n_topics}, {vocab_size}")
    if not concentration > 0:
        raise ValueError(f"concentration must be > 0, got {concentration}")
    P = rng.dirichlet(np.full(vocab_size, concentration), size=(n_topics, vocab_size))
    return TopicMarkovSource(P)


def hidden_states(model: TinyLM, ids: object) -> list[np.ndarray]:
    """Residual stream of ``model`` on ``ids (B, T)``: ``[x^(0), x^(1), ..., x^(L)]``, each ``(B, T, d)``.

    ``x^(0)`` is the token embedding plus the positional encoding (Fig. 6.24), ``x^(l)`` the output of
    block ``l`` (before the final norm).
    """
    if not isinstance(model, TinyLM):
        raise TypeError(f"model must be a TinyLM, got {type(model).__name__}")
    ids_t = torch.as_tensor(np.asarray(ids, dtype=np.int64))
    if ids_t.ndim != 2:
        raise ValueError(f"ids must have shape (B, T), got {tuple(ids_t.shape)}")
    freqs = model.rope_freqs if model.config.positional == "rope" else None
    out = []
    with torch.no_grad():
        x = model._add_positions(model.tok_emb[ids_t])  # (B, T, d)
        out.append(x.double().numpy().copy())
        for blk in model.blocks:
            x, _ = blk(x, freqs, None)
            out.append(x.double().numpy().copy())
    return out


def probe_accuracy(features: object, labels: object, *, train_fraction: float = 0.5, ridge: float = 1e-3) -> float:
    """Held-out accuracy of a linear least-squares probe ``features (n, d) -> labels (n,)``.

    The first ``train_fraction`` of the rows fit ``W = argmin ||[F, 1] W - Y||² + ridge ||W||²`` (``Y``
    one-hot); the rest are scored by ``argmax``. Pass rows in a random order.

    >>> F = np.r_[np.zeros((5, 2)), np.ones((5, 2))][[0, 5, 1, 6, 2, 7, 3, 8, 4, 9]]
    >>> probe_accuracy(F, (F[:, 0] > 0.5).astype(int))
    1.0
    """
    F = np.asarray(features, dtype=np.float64)
    y = np.asarray(labels)
    if F.ndim != 2 or y.shape != (F.shape[0],):
        raise ValueError(f"features must be (n, d) and labels (n,), got {F.shape} and {y.shape}")
    if not 0 < train_fraction < 1:
        raise ValueError(f"train_fraction must be in (0, 1), got {train_fraction}")
    n_train = int(round(train_fraction * len(y)))
    classes = np.unique(y)
    Y = (y[:, None] == classes[None, :]).astype(float)  # (n, n_classes)
    Fb = np.c_[F, np.ones(len(F))]  # (n, d + 1)
    A = Fb[:n_train]
    W = np.linalg.solve(A.T @ A + ridge * np.eye(A.shape[1]), A.T @ Y[:n_train])
    pred = classes[np.argmax(Fb[n_train:] @ W, axis=1)]
    return float(np.mean(pred == y[n_train:]))
