"""The recurrent baseline of Chapter 6, §6.1: sequential depth, path length and the state bottleneck.

Row-vector convention: an Elman RNN reads ``X (T, d_in)`` and computes
``h[t] = f(x[t] W_x + h[t-1] W_h + b)`` with ``W_x (d_in, d)``, ``W_h (d, d)``, ``f = tanh`` or the
identity. Its Jacobian ``∂h[t]/∂h[t-1] = diag(f'(a[t])) W_h^T`` (``J[i, j] = ∂h[t]_i/∂h[t-1]_j``), so
a signal from step ``s`` reaches step ``t`` through ``t - s`` matrix products: the origin of the
``λ^21`` gradient factor of §6.1 (for ``f = id`` and ``W_h = λ Q`` with ``Q`` orthogonal the norm
is exactly ``λ^(t-s)``).

* :func:`rnn_states`, :func:`rnn_state_jacobian` — forward pass and ``∂h[t]/∂h[s]``.
* :func:`rnn_graph`, :func:`attention_graph`, :func:`path_lengths`, :func:`sequential_depth` —
  dependency graphs over the nodes ``x[1..T], h[1..T]`` (Fig. 6.1) and their path lengths / depth.
* :func:`copy_task` — the copy/recall task ``x[1..L] SEP x[1..L]`` used to *measure* the
  information bottleneck of Fig. 6.2.
* :func:`linear_state_recall`, :func:`attention_recall` — how many of ``L`` symbols an optimal
  linear read-out recovers from one ``d``-dimensional state, vs. attention over the kept states.

>>> A = rnn_graph(4)                                  # nodes x1..x4, h1..h4
>>> int(path_lengths(A, 0)[-1]), int(path_lengths(attention_graph(4), 0)[-1])   # x1 -> h4
(4, 1)
"""

from __future__ import annotations

from collections import deque
from typing import Literal

import numpy as np

from nextword._validate import as_float_array, as_generator, check_finite_scalar, check_flag, check_positive_int

__all__ = [
    "rnn_states",
    "rnn_state_jacobian",
    "rnn_graph",
    "attention_graph",
    "path_lengths",
    "sequential_depth",
    "copy_task",
    "linear_state_recall",
    "attention_recall",
]


def _check_rnn(
    X: object, W_x: object, W_h: object, b: object, h0: object
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    X = as_float_array(X, "X", ndim=2)
    W_x = as_float_array(W_x, "W_x", ndim=2)
    W_h = as_float_array(W_h, "W_h", ndim=2)
    d = W_h.shape[0]
    if W_h.shape != (d, d) or W_x.shape != (X.shape[1], d):
        raise ValueError(
            f"need X (T, d_in), W_x (d_in, d), W_h (d, d); got X {X.shape}, W_x {W_x.shape}, W_h {W_h.shape}"
        )
    b = np.zeros(d) if b is None else as_float_array(b, "b", ndim=1)
    h0 = np.zeros(d) if h0 is None else as_float_array(h0, "h0", ndim=1)
    if b.shape != (d,) or h0.shape != (d,):
        raise ValueError(f"b and h0 must have shape (d,) = ({d},), got {b.shape} and {h0.shape}")
    return X, W_x, W_h, b, h0


def rnn_states(
    X: object,
    W_x: object,
    W_h: object,
    b: object = None,
    h0: object = None,
    *,
    nonlinearity: Literal["tanh", "linear"] = "tanh",
) -> np.ndarray:
    """Hidden states ``H (T, d)`` of ``h[t] = f(x[t] W_x + h[t-1] W_h + b)``, ``h[0] = h0`` (default 0).

    The loop is the point: step ``t`` needs step ``t - 1`` (sequential depth ``T``, §6.1).

    >>> rnn_states(np.ones((3, 1)), np.ones((1, 1)), 0.5 * np.ones((1, 1)), nonlinearity="linear").ravel()
    array([1.  , 1.5 , 1.75])
    """
    if not isinstance(nonlinearity, str) or nonlinearity not in ("tanh", "linear"):
        raise ValueError(f"nonlinearity must be 'tanh' or 'linear', got {nonlinearity!r}")
    X, W_x, W_h, b, h = _check_rnn(X, W_x, W_h, b, h0)
    f = np.tanh if nonlinearity == "tanh" else (lambda a: a)
    inputs = X @ W_x + b  # (T, d): the input part can be computed in parallel
    H = np.empty_like(inputs)
    for t in range(X.shape[0]):  # the recurrence cannot
        h = f(inputs[t] + h @ W_h)
        H[t] = h
    return H


def rnn_state_jacobian(
    X: object,
    W_x: object,
    W_h: object,
    b: object = None,
    h0: object = None,
    *,
    s: int,
    t: int,
    nonlinearity: Literal["tanh", "linear"] = "tanh",
) -> np.ndarray:
    """``∂h[t]/∂h[s]`` (``(d, d)``, ``J[i, j] = ∂h[t]_i / ∂h[s]_j``) for 0-based steps ``s <= t``.

    The product ``Π_{u=s+1..t} diag(f'(a[u])) W_h^T`` (later factors on the left).
    """
    check_positive_int(s, "s", minimum=0)
    check_positive_int(t, "t", minimum=0)
    X, W_x, W_h, b, h0 = _check_rnn(X, W_x, W_h, b, h0)
    T = X.shape[0]
    if not (0 <= s <= t < T):
        raise ValueError(f"need 0 <= s <= t < T, where T = {T} is the number of steps of X; got s={s}, t={t}")
    H = rnn_states(X, W_x, W_h, b, h0, nonlinearity=nonlinearity)  # (T, d)
    J = np.eye(W_h.shape[0])
    for u in range(s + 1, t + 1):
        deriv = 1.0 - H[u] ** 2 if nonlinearity == "tanh" else np.ones_like(H[u])  # f'(a[u]) (d,)
        J = (deriv[:, None] * W_h.T) @ J
    return J


def rnn_graph(T: int) -> np.ndarray:
    """Adjacency ``(2T, 2T)`` of an RNN's dependencies: nodes ``0..T-1`` are ``x[1..T]``, ``T..2T-1``
    are ``h[1..T]``; edges ``x[t] → h[t]`` and ``h[t-1] → h[t]`` (Fig. 6.1, left)."""
    T = check_positive_int(T, "T")
    A = np.zeros((2 * T, 2 * T), dtype=bool)
    idx = np.arange(T)
    A[idx, T + idx] = True  # x[t] -> h[t]
    A[T + idx[:-1], T + idx[1:]] = True  # h[t-1] -> h[t]
    return A


def attention_graph(T: int, *, causal: bool = True) -> np.ndarray:
    """Adjacency ``(2T, 2T)`` of one attention layer: ``x[s] → h[t]`` for every ``s <= t`` (all ``s``
    if not causal); no edges between outputs (Fig. 6.1, right)."""
    causal = check_flag(causal, "causal")
    T = check_positive_int(T, "T")
    A = np.zeros((2 * T, 2 * T), dtype=bool)
    allowed = np.tri(T, dtype=bool).T if causal else np.ones((T, T), dtype=bool)  # [s, t]: s <= t
    A[:T, T:] = allowed
    return A


def _adjacency(adjacency: object) -> np.ndarray:
    """A square ``(n, n)`` boolean matrix from a boolean or 0/1 numeric array; ``None``, strings and
    other shapes are named."""
    A = as_float_array(adjacency, "adjacency", ndim=2)
    if A.shape[0] != A.shape[1]:
        raise ValueError(f"adjacency must be a square (n, n) matrix, got {A.shape}")
    return A != 0


def path_lengths(adjacency: object, source: int) -> np.ndarray:
    """Shortest directed path length (number of edges) from ``source`` to every node; ``inf`` if
    unreachable. Breadth-first search on a boolean ``(n, n)`` adjacency (``A[u, v]``: edge u → v)."""
    A = _adjacency(adjacency)
    source = check_positive_int(source, "source", minimum=0)
    if not 0 <= source < A.shape[0]:
        raise ValueError(f"source must be a node index in [0, {A.shape[0]}), got {source}")
    dist = np.full(A.shape[0], np.inf)
    dist[source] = 0
    queue = deque([source])
    while queue:
        u = queue.popleft()
        for v in np.flatnonzero(A[u]):
            if dist[v] == np.inf:
                dist[v] = dist[u] + 1
                queue.append(v)
    return dist


def sequential_depth(adjacency: object) -> int:
    """Length of the longest directed path of a DAG: the number of steps that must run one after
    another however many processors there are."""
    A = _adjacency(adjacency)
    n = A.shape[0]
    indeg = A.sum(0).astype(int)
    depth = np.zeros(n, dtype=int)
    frontier = list(np.flatnonzero(indeg == 0))
    seen = 0
    while frontier:
        u = frontier.pop()
        seen += 1
        for v in np.flatnonzero(A[u]):
            depth[v] = max(depth[v], depth[u] + 1)
            indeg[v] -= 1
            if indeg[v] == 0:
                frontier.append(v)
    if seen != n:
        raise ValueError("adjacency has a cycle; sequential depth needs a DAG")
    return int(depth.max())


def copy_task(num_seqs: int, length: int, vocab: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Copy/recall sequences ``x[1..L] SEP x[1..L]`` with ``x`` uniform on ``0..vocab-1``, ``SEP = vocab``.

    Returns ``ids (num_seqs, 2L + 1)`` and ``loss_mask (num_seqs, 2L)``: True on the targets of the
    second half (the recalled symbols), which are fully determined by the first half, so a model
    that keeps the whole context reaches loss 0 there while a bounded memory cannot.
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a np.random.Generator, got {type(rng).__name__}")
    n, L, V = (
        check_positive_int(v, name) for v, name in ((num_seqs, "num_seqs"), (length, "length"), (vocab, "vocab"))
    )
    x = rng.integers(0, V, size=(n, L))
    ids = np.concatenate([x, np.full((n, 1), V), x], axis=1)  # (n, 2L+1)
    mask = np.zeros((n, 2 * L), dtype=bool)
    mask[:, L:] = True  # targets ids[:, L+1:], i.e. the copy
    return ids.astype(np.int64), mask


def _one_hot(ids: np.ndarray, V: int) -> np.ndarray:
    return np.eye(V)[ids]  # (..., V)


def linear_state_recall(
    length: int,
    state_dim: int,
    vocab: int,
    rng: np.random.Generator,
    *,
    num_train: int = 2000,
    num_test: int = 500,
    decay: float = 0.9,
) -> np.ndarray:
    """Accuracy of recovering each of ``L`` symbols from the final state of a ``state_dim`` linear RNN.

    The RNN is ``h[t] = h[t-1] W_h + onehot(x[t]) W_x`` with ``W_h = decay · Q`` (``Q`` random
    orthogonal) and Gaussian ``W_x``; for each position the best linear read-out of ``h[L]``
    (least squares to the one-hot symbol, fitted on ``num_train`` sequences) is scored by argmax
    accuracy on ``num_test`` fresh ones. Returns ``(L,)`` accuracies (position 1 first); chance is
    ``1/vocab``. A state of dimension ``d`` is a linear image of the ``L·vocab`` one-hot inputs, so
    once ``L·(vocab − 1) > d`` some positions must be lost: the bottleneck of Fig. 6.2, measured.
    """
    check_finite_scalar(decay, "decay")
    num_test = check_positive_int(num_test, "num_test")
    num_train = check_positive_int(num_train, "num_train")
    L, d, V = (check_positive_int(v, n) for v, n in ((length, "length"), (state_dim, "state_dim"), (vocab, "vocab")))
    rng = as_generator(rng, "rng", required=True)
    Q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    W_h, W_x = decay * Q, rng.standard_normal((V, d))
    x = rng.integers(0, V, size=(num_train + num_test, L))
    # h[L] = Σ_t onehot(x[t]) W_x W_h^(L-t): the loop written as a sum (same numbers, faster)
    powers = [np.linalg.matrix_power(W_h, L - 1 - t) for t in range(L)]  # (L,) of (d, d)
    H = sum(W_x[x[:, t]] @ powers[t] for t in range(L))  # (N, d)
    H = np.concatenate([H, np.ones((H.shape[0], 1))], axis=1)  # bias column
    acc = np.empty(L)
    for t in range(L):
        Y = _one_hot(x[:num_train, t], V)  # (n_train, V)
        R, *_ = np.linalg.lstsq(H[:num_train], Y, rcond=None)
        acc[t] = np.mean((H[num_train:] @ R).argmax(1) == x[num_train:, t])
    return acc


def attention_recall(
    length: int, vocab: int, rng: np.random.Generator, *, num_test: int = 500, d_pos: int = 32, sharpness: float = 50.0
) -> np.ndarray:
    """Accuracy of recalling each of ``L`` symbols by attention over the kept states.

    Keys are unit-norm sinusoidal position codes, values the one-hot symbols, and the query for
    position ``t`` is its own code times ``sharpness`` (a learned query would do the same);
    the read-out is the argmax of the attention output. Returns ``(L,)`` accuracies.
    """
    d_pos = check_positive_int(d_pos, "d_pos")
    num_test = check_positive_int(num_test, "num_test")
    check_finite_scalar(sharpness, "sharpness")
    from nextword.attention.core import scaled_dot_product_attention
    from nextword.positions import sinusoidal_encoding

    L, V = check_positive_int(length, "length"), check_positive_int(vocab, "vocab")
    rng = as_generator(rng, "rng", required=True)
    P = sinusoidal_encoding(L, d_pos)
    P = P / np.linalg.norm(P, axis=1, keepdims=True)  # (L, d_pos) unit keys
    x = rng.integers(0, V, size=(num_test, L))
    out = scaled_dot_product_attention(sharpness * P, P, _one_hot(x, V), scale=1.0)  # (N, L, V)
    return np.mean(out.argmax(-1) == x, axis=0)
