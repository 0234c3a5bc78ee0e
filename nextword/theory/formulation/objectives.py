"""Training objectives of the formulation paper, computed exactly on small sequence spaces.

Baptista, Stuart, Tran, §3–4: the autoregressive factorisation (3.1)/(3.3), the KL objective and
its decomposition (4.2a–d), the per-position form (4.4b), the shared-prefix empirical objective
(4.5) versus independent draws (Remark 4.7), the KL-regularised RL objective (4.7)/(4.8) with
its closed-form optimum, and a softmax-table next-token model with a LoRA-style low-rank update
(Remark 4.9).

Conventions
-----------
* A *next-token model* is a callable ``next_probs(prefix) -> (V,)`` returning the distribution of
  the next token given a tuple of previous token ids (an empty prefix gives the first token's
  law). ``nextword.decoding.ngram.NGramLM.next_probs`` has this signature; :func:`markov_next_probs` adapts a
  ``nextword.data.synthetic.MarkovSource``.
* Sequences of length ``L`` over ``V`` tokens are enumerated in row-major order
  (:func:`enumerate_sequences`), so a joint law is a vector of length ``V**L``.
* All logs are natural (nats); float64 throughout.

Worked example::

    >>> uniform = lambda prefix: np.full(2, 0.5)
    >>> joint, seqs = sequence_distribution(uniform, V=2, L=3)
    >>> joint.tolist() == [0.125] * 8
    True
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from nextword._validate import (
    as_float_array,
    as_index_array,
    check_axis,
    check_callable,
    check_finite_scalar,
    check_positive_int,
    check_size,
)
from nextword.perturbation import nudge

__all__ = [
    "NextProbs",
    "kl_divergence",
    "enumerate_sequences",
    "sequence_distribution",
    "markov_next_probs",
    "KLDecomposition",
    "kl_decomposition",
    "position_losses",
    "shared_prefix_estimate",
    "rl_objective",
    "kl_regularised_optimum",
    "rl_empirical_objective",
    "bigram_counts",
    "table_loss_and_grad",
    "fit_table",
    "fit_lora",
    "table_kl",
]

NextProbs = Callable[[tuple[int, ...]], np.ndarray]


# ----------------------------------------------------------------------------- divergences
def kl_divergence(p: object, q: object, axis: int = -1) -> np.ndarray | float:
    """``D_KL(p || q) = sum p log(p / q)`` along ``axis`` (4.1), with ``0 log 0 = 0``.

    Returns ``inf`` where ``p > 0`` but ``q = 0`` (``p`` not absolutely continuous w.r.t. ``q``).
    Shapes must match; the result drops ``axis``.

    >>> float(kl_divergence([0.5, 0.5], [0.25, 0.75]))  # doctest: +ELLIPSIS
    0.1438...
    """
    check_axis(axis)
    p = as_float_array(p, "p", min_ndim=1).astype(np.float64)
    q = as_float_array(q, "q", min_ndim=1).astype(np.float64)
    if p.shape != q.shape:
        raise ValueError(f"p and q must have the same shape, got {p.shape} and {q.shape}")
    check_axis(axis, ndim=p.ndim)
    if p.shape[axis] == 0:
        raise ValueError(f"p and q must have a non-empty axis {axis} (probability vectors), got shape {p.shape}")
    if (p < 0).any() or (q < 0).any():
        raise ValueError("p and q must be non-negative")
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * (np.log(np.where(p > 0, p, 1.0)) - np.log(q)), 0.0)
    out = terms.sum(axis=axis)
    return float(out) if np.ndim(out) == 0 else out


# ----------------------------------------------------------------------------- sequence laws
def enumerate_sequences(V: int, L: int) -> np.ndarray:
    """All ``V**L`` sequences in row-major order, int64 array of shape ``(V**L, L)``."""
    V = check_positive_int(V, "V")
    L = check_positive_int(L, "L")
    if V**L > 1_000_000:
        raise ValueError(f"V**L = {V**L} sequences is too many to enumerate (limit 1e6)")
    return np.array(np.unravel_index(np.arange(V**L), (V,) * L)).T.astype(np.int64)


def _probs(next_probs: NextProbs, prefix: tuple[int, ...], V: int) -> np.ndarray:
    p = np.asarray(next_probs(prefix), dtype=np.float64)
    if p.shape != (V,) or p.min() < -1e-12 or abs(p.sum() - 1) > 1e-8:
        raise ValueError(f"next_probs({prefix}) must return a probability vector of shape ({V},), got {p}")
    return p


def sequence_distribution(next_probs: NextProbs, V: int, L: int) -> tuple[np.ndarray, np.ndarray]:
    """Joint law of ``f_{1:L}`` from the autoregressive factorisation (3.1)/(3.3).

    Returns ``(joint, seqs)``: ``joint`` of shape ``(V**L,)`` and the sequences ``(V**L, L)``.
    ``joint[n] = prod_l next_probs(seqs[n, :l])[seqs[n, l]]``; it sums to 1.
    """
    cond = _conditionals(next_probs, V, L, "next_probs")  # (V**L, L)
    seqs = enumerate_sequences(V, L)
    return np.prod(cond, axis=1), seqs


def _conditionals(next_probs: NextProbs, V: int, L: int, name: str = "next_probs") -> np.ndarray:
    """``c[n, l] = p_l(f_l | f_{1:l-1})`` for every enumerated sequence, shape ``(V**L, L)``."""
    if not callable(next_probs):
        raise TypeError(f"{name} must be a callable prefix -> (V,) probabilities, got {type(next_probs).__name__}")
    seqs = enumerate_sequences(V, L)
    out = np.empty(seqs.shape)
    for l in range(L):
        # the prefix f_{1:l} is constant on blocks of V**(L-l) consecutive rows (row-major order)
        block = V ** (L - l)
        for start in range(0, V**L, block):
            p = _probs(next_probs, tuple(int(x) for x in seqs[start, :l]), V)
            out[start : start + block, l] = p[seqs[start : start + block, l]]
    return out


def markov_next_probs(source) -> NextProbs:
    """Adapt a ``nextword.data.synthetic.MarkovSource`` of order ``k`` (started from its stationary law).

    For ``m <= k`` the first tokens follow the stationary law of the context; afterwards the
    transition table. Returns a ``next_probs(prefix)`` callable.
    """
    if not all(hasattr(source, a) for a in ("transition", "order", "stationary_distribution")):
        raise TypeError(
            f"source must be a nextword.data.synthetic.MarkovSource (with .transition and .order), "
            f"got {type(source).__name__}"
        )
    T = np.asarray(source.transition, dtype=np.float64)
    k = source.order
    pi = np.asarray(source.stationary_distribution(), dtype=np.float64) if k else np.ones(())

    def next_probs(prefix: tuple[int, ...]) -> np.ndarray:
        m = len(prefix)
        if m >= k:
            return T[tuple(prefix[m - k :])] if k else T
        marg = pi.sum(axis=tuple(range(m + 1, k))) if m + 1 < k else pi  # law of the first m+1 tokens
        row = marg[tuple(prefix)]
        return row / row.sum()

    return next_probs


# ----------------------------------------------------------------------------- KL decomposition
@dataclass(frozen=True)
class KLDecomposition:
    """The pieces of (4.2a–d)/(4.4b) for a data law ``p`` and a model ``π`` on ``V^L``.

    ``joint`` = ``D_KL(p_{1:L} || π_{1:L})`` (4.2a); ``per_position[l]`` =
    ``E_{f_{1:l-1}~p} D_KL(p_l(·|f_{1:l-1}) || π_l(·|f_{1:l-1}))`` (4.4b), shape ``(L,)``;
    ``cross_entropy[l]`` = ``-E_{f_{1:l}~p} log π_l(f_l | f_{1:l-1})`` (the terms of 4.3a);
    ``entropy[l]`` = ``-E log p_l(f_l | f_{1:l-1})`` (the θ-free constant of 4.2d).
    Identities: ``joint == per_position.sum()`` and ``per_position == cross_entropy - entropy``.
    """

    joint: float
    per_position: np.ndarray
    cross_entropy: np.ndarray
    entropy: np.ndarray

    @property
    def objective(self) -> float:
        """``L(θ)`` of (4.3a): the sum of the cross-entropy terms."""
        return float(self.cross_entropy.sum())


def kl_decomposition(p_next: NextProbs, q_next: NextProbs, V: int, L: int) -> KLDecomposition:
    """Compute every term of (4.2a–d) and (4.4b) by enumeration of ``V**L`` sequences."""
    cp, cq = _conditionals(p_next, V, L, "p_next"), _conditionals(q_next, V, L, "q_next")  # (V**L, L) each
    joint_p, joint_q = np.prod(cp, axis=1), np.prod(cq, axis=1)
    with np.errstate(divide="ignore"):
        log_cq = np.log(cq)
        log_cp = np.log(np.where(cp > 0, cp, 1.0))
    w = joint_p[:, None]
    safe = np.where(w > 0, -w * log_cq, 0.0)  # 0 * log 0 terms vanish
    cross = safe.sum(axis=0)
    ent = -(w * log_cp).sum(axis=0)
    return KLDecomposition(
        joint=float(kl_divergence(joint_p, joint_q)), per_position=cross - ent, cross_entropy=cross, entropy=ent
    )


# ----------------------------------------------------------------------------- estimators (Remark 4.7)
def position_losses(seqs: object, q_next: NextProbs, V: int) -> np.ndarray:
    """``-log π_l(f_l | f_{1:l-1})`` for each row of ``seqs (N, L)``, shape ``(N, L)``."""
    check_positive_int(V, "V")
    check_callable(q_next, "q_next")
    seqs = as_index_array(seqs, "seqs", upper=V)
    if seqs.ndim != 2:
        raise ValueError(f"seqs must have shape (N, L), got {seqs.shape}")
    cache: dict[tuple[int, ...], np.ndarray] = {}
    out = np.empty(seqs.shape)
    for n, row in enumerate(seqs.tolist()):
        for l, tok in enumerate(row):
            prefix = tuple(row[:l])
            if prefix not in cache:
                with np.errstate(divide="ignore"):
                    cache[prefix] = -np.log(_probs(q_next, prefix, V))
            out[n, l] = cache[prefix][tok]
    return out


def shared_prefix_estimate(seqs: object, q_next: NextProbs, V: int) -> float:
    """The empirical objective (4.5) divided by ``N``: every position of the same ``N`` sequences.

    ``(1/N) sum_n sum_l -log π_l(f_l^(n) | f_{1:l-1}^(n))``. Unbiased for ``L(θ)`` of (4.3a); its
    terms at different ``l`` are correlated because they share prefixes.
    """
    check_positive_int(V, "V")
    check_callable(q_next, "q_next")
    return float(position_losses(seqs, q_next, V).sum(axis=1).mean())


# ----------------------------------------------------------------------------- RL (4.7)-(4.8)
def _check_joint(p: object, name: str) -> np.ndarray:
    p = as_float_array(p, name, ndim=1).astype(np.float64)
    if p.min() < 0 or abs(p.sum() - 1) > 1e-8:
        raise ValueError(f"{name} must be a probability vector over the enumerated sequences")
    return p


def rl_objective(pi: object, pi_ref: object, reward: object, beta: float) -> float:
    """(4.7) on an enumerated space: ``-E_π r + β D_KL(π || π_ref)``. All arrays ``(S,)``."""
    pi, pi_ref = _check_joint(pi, "pi"), _check_joint(pi_ref, "pi_ref")
    reward = as_float_array(reward, "reward", ndim=1).astype(np.float64)
    beta = _check_beta(beta)
    if not (pi.shape == pi_ref.shape == reward.shape):
        raise ValueError(f"pi, pi_ref, reward must have equal shapes, got {pi.shape}, {pi_ref.shape}, {reward.shape}")
    return float(-(pi * reward).sum() + beta * kl_divergence(pi, pi_ref))


def _check_beta(beta: object) -> float:
    if isinstance(beta, (bool, np.bool_)) or not isinstance(beta, numbers.Real) or not beta > 0:
        raise ValueError(f"beta must be a real number > 0, got {beta!r}")
    return float(beta)


def kl_regularised_optimum(pi_ref: object, reward: object, beta: float) -> tuple[np.ndarray, float]:
    """Minimiser of (4.7) over all laws: ``π* ∝ π_ref exp(r / β)``, and the minimum ``-β log Z``.

    (Gibbs variational principle: ``(4.7)(π) = β D_KL(π || π*) - β log Z``.) Computed in log space.
    Returns ``(pi_star (S,), min_value)``.
    """
    pi_ref = _check_joint(pi_ref, "pi_ref")
    reward = as_float_array(reward, "reward", ndim=1).astype(np.float64)
    beta = _check_beta(beta)
    with np.errstate(divide="ignore"):
        logits = np.log(pi_ref) + reward / beta
    top = logits.max()
    w = np.exp(logits - top)
    log_Z = top + np.log(w.sum())
    return w / w.sum(), float(-beta * log_Z)


def rl_empirical_objective(log_pi: object, log_pi_ref: object, reward: object, beta: float) -> float:
    """(4.8): ``(1/N) sum_n [-r(f^n) + β (log π(f^n) - log π_ref(f^n))]`` for ``N`` samples ``f^n ~ π``.

    Arguments are the per-sample values, each of shape ``(N,)``. Unbiased for (4.7) — but as a
    function of θ with the samples held fixed its gradient is *not* the gradient of (4.7) (the
    samples depend on θ): use a score-function estimator for that.
    """
    a = [
        as_float_array(x, n, ndim=1).astype(np.float64)
        for x, n in ((log_pi, "log_pi"), (log_pi_ref, "log_pi_ref"), (reward, "reward"))
    ]
    if not (a[0].shape == a[1].shape == a[2].shape):
        raise ValueError("log_pi, log_pi_ref and reward must have the same shape (N,)")
    beta = _check_beta(beta)
    return float(np.mean(-a[2] + beta * (a[0] - a[1])))


# ----------------------------------------------------------------------------- softmax table + LoRA
def bigram_counts(seqs: Sequence[Sequence[int]] | np.ndarray, V: int) -> np.ndarray:
    """Counts ``N[a, b]`` of the transition ``a -> b`` in the sequences, shape ``(V, V)`` float64."""
    V = check_positive_int(V, "V")
    check_size((V, V), "bigram_counts(V)")
    if isinstance(seqs, (str, bytes)) or not isinstance(seqs, (Sequence, np.ndarray)):
        raise TypeError(f"seqs must be a sequence of token-id sequences, got {type(seqs).__name__}")
    counts = np.zeros((V, V))
    for row in seqs:
        row = as_index_array(row, "seqs", upper=V)
        np.add.at(counts, (row[:-1], row[1:]), 1.0)
    return counts


def _log_softmax_rows(W: np.ndarray) -> np.ndarray:
    top = W.max(axis=1, keepdims=True)
    return W - top - np.log(np.exp(W - top).sum(axis=1, keepdims=True))


def table_loss_and_grad(W: object, counts: object) -> tuple[float, np.ndarray]:
    """Mean next-token NLL of the softmax-table model ``π(b | a) = softmax(W[a])_b`` and its gradient.

    ``counts (V, V)`` are transition counts (or expected counts / frequencies). Loss
    ``-(1/n) sum_ab N_ab log softmax(W_a)_b`` with ``n = sum N``; gradient
    ``(1/n)(N_a· softmax(W_a) - N_ab)``, shape ``(V, V)``.
    """
    W = as_float_array(W, "W", ndim=2).astype(np.float64)
    counts = as_float_array(counts, "counts", ndim=2).astype(np.float64)
    if W.shape != counts.shape or W.shape[0] != W.shape[1]:
        raise ValueError(f"W and counts must both be square (V, V), got {W.shape} and {counts.shape}")
    n = counts.sum()
    if n <= 0 or counts.min() < 0:
        raise ValueError("counts must be non-negative with a positive total")
    logp = _log_softmax_rows(W)
    loss = -(counts * logp).sum() / n
    grad = (counts.sum(axis=1, keepdims=True) * np.exp(logp) - counts) / n
    return float(loss), grad


def _adam(params: list[np.ndarray], grad_fn, steps: int, lr: float) -> list[float]:
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    history = []
    for t in range(1, steps + 1):
        loss, grads = grad_fn()
        history.append(loss)
        for p, g, mi, vi in zip(params, grads, m, v):
            mi *= 0.9
            mi += 0.1 * g
            vi *= 0.999
            vi += 0.001 * g * g
            p -= lr * (mi / (1 - 0.9**t)) / (np.sqrt(vi / (1 - 0.999**t)) + 1e-12)
    return history


def fit_table(
    W0: object, counts: object, *, steps: int = 500, lr: float = 0.05, weight_decay: float = 0.0
) -> tuple[np.ndarray, list[float]]:
    """Full fine-tuning / training of all ``V²`` logits by Adam on (4.5)/(4.6) (+ optional L2).

    Returns ``(W, history)`` with the loss before each step.
    """
    check_finite_scalar(lr, "lr")
    check_finite_scalar(weight_decay, "weight_decay")
    W = as_float_array(W0, "W0", ndim=2).astype(np.float64).copy()
    W = nudge(W, "fit_table.W")  # NEXTWORD_PERTURB (the perturbation pass); a no-op by default
    steps = check_positive_int(steps, "steps")

    def grad_fn():
        loss, g = table_loss_and_grad(W, counts)
        return loss + 0.5 * weight_decay * float((W * W).sum()), [g + weight_decay * W]

    return W, _adam([W], grad_fn, steps, lr)


def fit_lora(
    W0: object,
    counts: object,
    rank: int,
    rng: np.random.Generator,
    *,
    steps: int = 500,
    lr: float = 0.05,
    init_scale: float = 0.01,
) -> tuple[np.ndarray, np.ndarray, list[float]]:
    """LoRA-style fine-tuning (Remark 4.9): ``W = W0 + A @ B`` with ``A (V, r)``, ``B (r, V)``; ``W0`` frozen.

    ``A`` starts small and random, ``B`` at zero, so the update starts at ``ΔW = 0``. Trainable
    parameters: ``2 V r`` instead of ``V²``. Gradients: ``∂/∂A = G B^T``, ``∂/∂B = A^T G`` with ``G``
    the table gradient. Returns ``(A, B, history)``.
    """
    check_finite_scalar(init_scale, "init_scale")
    check_finite_scalar(lr, "lr")
    W0 = as_float_array(W0, "W0", ndim=2).astype(np.float64)
    V = W0.shape[0]
    counts = as_float_array(counts, "counts", ndim=2)
    if W0.shape != (V, V) or V == 0 or counts.shape != W0.shape:
        raise ValueError(f"W0 and counts must both be square (V, V) with V >= 1, got {W0.shape} and {counts.shape}")
    rank = check_positive_int(rank, "rank")
    if not isinstance(rng, np.random.Generator):
        raise TypeError("rng must be a numpy.random.Generator")
    A = nudge(init_scale * rng.normal(size=(V, rank)), "fit_lora.A")  # NEXTWORD_PERTURB; a no-op by default
    B = np.zeros((rank, V))

    def grad_fn():
        loss, G = table_loss_and_grad(W0 + A @ B, counts)
        return loss, [G @ B.T, A.T @ G]

    history = _adam([A, B], grad_fn, check_positive_int(steps, "steps"), lr)
    return A, B, history


def table_kl(P_true: object, W: object, weights: object) -> float:
    """``sum_a w_a D_KL(P_true[a] || softmax(W[a]))``: population next-token KL of a table model."""
    P_true = as_float_array(P_true, "P_true", ndim=2).astype(np.float64)
    W = as_float_array(W, "W", ndim=2).astype(np.float64)
    weights = as_float_array(weights, "weights", ndim=1).astype(np.float64)
    if P_true.shape != W.shape or P_true.shape[1] == 0 or weights.shape != P_true.shape[:1]:
        raise ValueError(
            f"P_true and W must have one shape (V_ctx, V) with V >= 1 and weights (V_ctx,), "
            f"got P_true {P_true.shape}, W {W.shape}, weights {weights.shape}"
        )
    return float(weights @ kl_divergence(P_true, np.exp(_log_softmax_rows(W)), axis=1))
