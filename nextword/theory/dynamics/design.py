"""Design choices of Aggarwal, Dalal, Misra §6.2 and §8.2, made executable on a retrieval toy.

The paper's §6.2 argues from the key gradient (Eq. 27 in row form)

    dL/dk_j = (1/sqrt(d_k)) sum_i alpha_ij (b_ij - E_{alpha_i}[b]) q_i

that keys used by different groups of queries are pushed apart ("approximate orthogonality of
distinct hypothesis axes"); §8.2 proposes LayerNorm on the values ("stabilize norms while leaving
directional dynamics intact") and attention dropout ("disrupts the feedback loop, limiting
over-specialization and encouraging more evenly used values"). This module provides

* :func:`retrieval_task` — ``G`` groups ("hypotheses") of tokens; in every sequence each group has a
  random class that only its *carrier* tokens show; every position must predict its group's class,
  so the *asker* tokens must route to the carriers of their own group;
* :func:`design_forward_backward` — the single head of §2.1 (``reduction="mean"`` cross-entropy)
  with optional LayerNorm on the values (no affine parameters) and optional attention dropout
  (inverted, the keep-mask passed in), and its exact gradients by hand;
* :func:`train_design` — full-batch gradient descent with those options, recording loss, value
  norms, the group keys ``e_g W_K`` and attention summaries.

The head without options is the one of :mod:`nextword.theory.dynamics`; its gradients agree with
:func:`nextword.theory.dynamics.head_gradients` (tested). Shapes: a batch ``X (N, T, d_x)``,
targets ``y (N, T)``; row vectors (``Q = X W_Q``).

>>> task = retrieval_task(2, 3, n_seq=4, rng=np.random.default_rng(0))
>>> task.X.shape, task.y.shape, int(task.kinds.max()) + 1
((4, 8, 5), (4, 8), 2)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nextword.attention import log_softmax, softmax
from nextword.theory.dynamics.gradients import HeadParams

__all__ = [
    "RetrievalTask",
    "retrieval_task",
    "DesignConfig",
    "DesignStep",
    "design_forward_backward",
    "DesignRun",
    "train_design",
    "group_key_cosines",
]


@dataclass(frozen=True)
class RetrievalTask:
    """``X (N, T, d_x)`` with ``d_x = G + C`` (group one-hot, then the class one-hot on carriers only),
    ``y (N, T)`` the group's class at every position, ``kinds (T,)`` group of each position,
    ``carrier (T,)`` True where the token shows its class."""

    X: np.ndarray
    y: np.ndarray
    kinds: np.ndarray
    carrier: np.ndarray
    n_groups: int
    n_classes: int


def retrieval_task(
    n_groups: int,
    n_classes: int,
    *,
    n_seq: int,
    rng: np.random.Generator,
    askers: int = 2,
    carriers: int = 2,
    noise: float = 0.05,
    reliability: tuple[float, ...] | None = None,
) -> RetrievalTask:
    """A batch of retrieval sequences (see the module docstring); ``T = n_groups * (askers + carriers)``.

    With ``reliability`` (one probability per carrier slot) carrier ``c`` shows its group's class with
    that probability and a uniformly random class otherwise, and every carrier also shows a one-hot of
    its slot (``d_x = G + C + carriers``), so a head can learn which carrier to trust.
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError("rng must be a numpy.random.Generator")
    for name, v in (
        ("n_groups", n_groups),
        ("n_classes", n_classes),
        ("n_seq", n_seq),
        ("askers", askers),
        ("carriers", carriers),
    ):
        if int(v) != v or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v}")
    if n_groups < 2:
        raise ValueError(f"n_groups must be >= 2 (several hypotheses), got {n_groups}")
    if reliability is not None and (len(reliability) != carriers or not all(0 <= r <= 1 for r in reliability)):
        raise ValueError(f"reliability must hold {carriers} probabilities in [0, 1], got {reliability}")
    per = askers + carriers
    T = n_groups * per
    d_x = n_groups + n_classes + (carriers if reliability is not None else 0)
    kinds = np.repeat(np.arange(n_groups), per)  # (T,)
    carrier = np.tile(np.r_[np.zeros(askers), np.ones(carriers)], n_groups).astype(bool)
    labels = rng.integers(0, n_classes, size=(n_seq, n_groups))  # (N, G)
    X = np.zeros((n_seq, T, d_x))
    X[:, np.arange(T), kinds] = 1.0
    car_pos = np.flatnonzero(carrier)
    shown = labels[:, kinds[car_pos]]  # (N, n_carrier_positions)
    if reliability is not None:
        slot = np.tile(np.arange(carriers), n_groups)  # slot of each carrier position
        wrong = rng.random(shown.shape) >= np.asarray(reliability)[slot][None, :]
        shown = np.where(wrong, rng.integers(0, n_classes, size=shown.shape), shown)
        X[:, car_pos, n_groups + n_classes + slot] = 1.0
    X[np.arange(n_seq)[:, None], car_pos[None, :], n_groups + shown] = 1.0
    X += noise * rng.normal(size=X.shape)
    y = labels[:, kinds]  # (N, T)
    return RetrievalTask(X, y, kinds, carrier, n_groups, n_classes)


@dataclass(frozen=True)
class DesignConfig:
    """Options of the head: LayerNorm on the values (``value_norm``), attention dropout rate, step size."""

    value_norm: bool = False
    dropout: float = 0.0
    lr: float = 1.0
    steps: int = 300
    ln_eps: float = 1e-5

    def __post_init__(self) -> None:
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")
        if not (np.isfinite(self.lr) and self.lr > 0):
            raise ValueError(f"lr must be positive, got {self.lr}")
        if int(self.steps) != self.steps or self.steps < 0:
            raise ValueError(f"steps must be a non-negative integer, got {self.steps}")


@dataclass(frozen=True)
class DesignStep:
    """Loss, gradients (named like :class:`HeadParams`) and intermediates of one forward/backward pass:
    ``alpha (N, T, T)`` before dropout, ``V (N, T, d_v)`` after the optional LayerNorm."""

    loss: float
    grads: dict
    alpha: np.ndarray
    V: np.ndarray


def design_forward_backward(
    params: HeadParams,
    X: object,
    y: object,
    *,
    value_norm: bool = False,
    keep: np.ndarray | None = None,
    dropout: float = 0.0,
    ln_eps: float = 1e-5,
) -> DesignStep:
    """Mean cross-entropy of the §2.1 head with the §8.2 options, and its gradients by hand.

    ``keep (N, T, T)`` is the dropout keep-mask (1 = kept); the dropped attention is
    ``alpha * keep / (1 - dropout)`` (inverted dropout, unbiased). ``value_norm`` applies
    ``v <- (v - mean(v)) / sqrt(var(v) + eps)`` to every value row (LayerNorm without affine).

    >>> p = HeadParams.init(5, 3, 3, 3, rng=np.random.default_rng(0))
    >>> t = retrieval_task(2, 3, n_seq=2, rng=np.random.default_rng(1))
    >>> step = design_forward_backward(p, t.X, t.y, value_norm=True)
    >>> bool(np.allclose(step.V.mean(axis=-1), 0.0, atol=1e-12)), step.V.shape
    (True, (2, 8, 3))
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    d_x, d_k, d_v, C = params.dims
    if X.ndim != 3 or X.shape[-1] != d_x:
        raise ValueError(f"X must have shape (N, T, d_x) with d_x = {d_x}, got {X.shape}")
    if y.shape != X.shape[:2]:
        raise ValueError(f"y must have shape (N, T) = {X.shape[:2]}, got {y.shape}")
    if not 0.0 <= dropout < 1.0:
        raise ValueError(f"dropout must be in [0, 1), got {dropout}")
    N, T, _ = X.shape
    Q, K, V_raw = X @ params.W_Q, X @ params.W_K, X @ params.W_V  # (N, T, d_k) x2, (N, T, d_v)
    if value_norm:
        mu = V_raw.mean(axis=-1, keepdims=True)
        sd = np.sqrt(V_raw.var(axis=-1, keepdims=True) + ln_eps)
        V = (V_raw - mu) / sd
    else:
        V = V_raw
    S = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)  # (N, T, T)
    alpha = softmax(S)
    if keep is None:
        mask = np.ones_like(alpha)
    else:
        mask = np.asarray(keep, dtype=np.float64)
        if mask.shape != alpha.shape:
            raise ValueError(f"keep must have shape {alpha.shape}, got {mask.shape}")
    mask = mask / (1.0 - dropout)
    A = alpha * mask  # dropped attention
    G = A @ V  # (N, T, d_v)
    logits = G @ params.W_O + params.b  # (N, T, C)
    logp = log_softmax(logits)
    n = N * T
    loss = float(-np.take_along_axis(logp, y[..., None], axis=-1).sum() / n)
    dlogits = np.exp(logp)
    np.put_along_axis(dlogits, y[..., None], np.take_along_axis(dlogits, y[..., None], axis=-1) - 1.0, axis=-1)
    dlogits /= n
    dW_O = G.reshape(n, d_v).T @ dlogits.reshape(n, C)  # (N*T, d_v) -> (d_v, C)
    db = dlogits.reshape(n, C).sum(axis=0)
    dG = dlogits @ params.W_O.T  # U, (N, T, d_v)
    dA = dG @ np.swapaxes(V, -1, -2)  # (N, T, T)
    dV = np.swapaxes(A, -1, -2) @ dG  # (N, T, d_v)
    dalpha = dA * mask
    dS = alpha * (dalpha - (dalpha * alpha).sum(axis=-1, keepdims=True))  # softmax backward
    dQ = dS @ K / np.sqrt(d_k)
    dK = np.swapaxes(dS, -1, -2) @ Q / np.sqrt(d_k)
    if value_norm:
        xhat = V
        dV_raw = (dV - dV.mean(axis=-1, keepdims=True) - xhat * (dV * xhat).mean(axis=-1, keepdims=True)) / sd
    else:
        dV_raw = dV
    Xf = X.reshape(n, d_x)  # (N*T, d_x)
    grads = {
        "W_Q": Xf.T @ dQ.reshape(n, d_k),
        "W_K": Xf.T @ dK.reshape(n, d_k),
        "W_V": Xf.T @ dV_raw.reshape(n, d_v),
        "W_O": dW_O,
        "b": db,
    }
    return DesignStep(loss, grads, alpha, V)


@dataclass(frozen=True)
class DesignRun:
    """``losses (steps+1,)``; ``value_norm_max (steps+1,)`` the largest ``||v_j||`` over the batch;
    ``key_cos (steps+1,)`` mean pairwise cosine of the group keys ``e_g W_K``; the final
    ``alpha (N, T, T)`` (no dropout) and parameters."""

    losses: np.ndarray
    value_norm_max: np.ndarray
    key_cos: np.ndarray
    alpha: np.ndarray
    params: HeadParams


def group_key_cosines(W_K: object, n_groups: int) -> np.ndarray:
    """Pairwise cosines ``cos(e_g W_K, e_h W_K)`` for ``g < h`` (the first ``n_groups`` input
    coordinates are the group one-hot), shape ``(G(G-1)/2,)``.

    >>> group_key_cosines(np.array([[1.0, 0.0], [-1.0, 0.0]]), 2)
    array([-1.])
    """
    W_K = np.asarray(W_K, dtype=np.float64)
    keys = W_K[:n_groups]  # (G, d_k)
    keys = keys / np.linalg.norm(keys, axis=1, keepdims=True)
    return (keys @ keys.T)[np.triu_indices(n_groups, 1)]


def train_design(
    task: RetrievalTask, params: HeadParams, config: DesignConfig, *, rng: np.random.Generator
) -> DesignRun:
    """Full-batch gradient descent on the task with the options of ``config`` (dropout masks from ``rng``)."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError("rng must be a numpy.random.Generator")
    losses, vmax, kcos = [], [], []

    def record(p: HeadParams) -> DesignStep:
        ev = design_forward_backward(p, task.X, task.y, value_norm=config.value_norm, ln_eps=config.ln_eps)
        losses.append(ev.loss)
        vmax.append(float(np.linalg.norm(ev.V, axis=-1).max()))
        kcos.append(float(group_key_cosines(p.W_K, task.n_groups).mean()))
        return ev

    p = params.nudged()  # NEXTWORD_PERTURB (the perturbation pass); a no-op by default
    record(p)
    for _ in range(int(config.steps)):
        keep = None
        if config.dropout > 0:
            keep = (rng.random((task.X.shape[0], task.X.shape[1], task.X.shape[1])) >= config.dropout).astype(float)
        st = design_forward_backward(
            p, task.X, task.y, value_norm=config.value_norm, keep=keep, dropout=config.dropout, ln_eps=config.ln_eps
        )
        p = HeadParams(**{k: getattr(p, k) - config.lr * st.grads[k] for k in ("W_Q", "W_K", "W_V", "W_O", "b")})
        record(p)
    final = design_forward_backward(p, task.X, task.y, value_norm=config.value_norm, ln_eps=config.ln_eps)
    return DesignRun(np.array(losses), np.array(vmax), np.array(kcos), final.alpha, p)
