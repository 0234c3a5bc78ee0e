"""Synthetic sources with a known entropy rate (re-exported by :mod:`nextword.data`).

A stationary source's entropy rate H = lim H(X_t | X_<t) is the smallest average cross-entropy
any next-token model can reach, so a training curve on these sources can be compared with its
floor. All entropies are in nats (natural log); ``*_bits`` helpers divide by ln 2.

* :class:`IIDSource` — H = −Σ_a p_a ln p_a.
* :class:`MarkovSource` of order k — H = Σ_c π(c) H(P(· | c)) over contexts c of the last k
  symbols, π the stationary law of the lifted chain on contexts. Sampling starts from π, so the
  sampled sequence is stationary from its first symbol.
* :func:`sticky_markov_chain` — the order-1 chain of the gradient-dynamics paper (Aggarwal,
  Dalal, Misra, §7.2) with a choice of rule for the non-stay moves (see :data:`STICKY_RULES`).

Example
-------
>>> src = sticky_markov_chain(4, 0.5)                   # stay 1/2, else 1/6 to each other state
>>> bool(abs(src.entropy_rate() + 0.5 * np.log(0.5) + 0.5 * np.log(1 / 6)) < 1e-12)
True
>>> src.sample(5, np.random.default_rng(0)).shape
(5,)
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from nextword._validate import (
    MAX_ELEMENTS,
    as_float_array,
    as_generator,
    check_choice,
    check_positive_int,
    check_real,
    check_size,
)

__all__ = ["IIDSource", "MarkovSource", "markov_source", "sticky_markov_chain", "STICKY_RULES", "entropy"]

_LN2 = float(np.log(2.0))


def entropy(p: ArrayLike, axis: int = -1) -> NDArray[np.float64]:
    """Shannon entropy in nats along ``axis`` (``0 ln 0 = 0``). Shape: ``p`` without ``axis``.

    ``p`` holds probability vectors along ``axis`` (finite, non-negative, non-empty, summing to 1
    within ``1e-6``, ``1e-4`` for float32); anything else (``[0.5, 0.6]``) is a ``ValueError``
    naming ``p``, since ``-sum p ln p`` of unnormalised weights is not an entropy.

    >>> round(float(entropy([0.5, 0.5])), 6)
    0.693147
    """
    p = as_float_array(p, "p", min_ndim=1)
    tol = 1e-6 if p.dtype == np.float64 else 1e-4  # a float32 softmax row sums to 1 within ~n * 6e-8
    p = p.astype(np.float64)
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)) or not -p.ndim <= axis < p.ndim:
        raise ValueError(f"axis must be an integer in [-{p.ndim}, {p.ndim}) for p of shape {p.shape}, got {axis!r}")
    if p.shape[axis] == 0:
        raise ValueError(f"p must have a non-empty axis {axis}, got shape {p.shape}")
    if (p < 0).any():
        raise ValueError("p must be non-negative (probabilities)")
    total = p.sum(axis=axis)
    if not np.allclose(total, 1.0, rtol=0.0, atol=tol):
        worst = float(np.max(np.abs(total - 1.0)))
        raise ValueError(f"p must sum to 1 along axis {axis} (probability vectors), off by up to {worst:.3g}")
    logp = np.log(np.where(p > 0, p, 1.0))
    return -(p * logp).sum(axis=axis)


def _check_length(length: int) -> int:
    length = check_positive_int(length, "length", minimum=0)
    check_size((length,), "sample(length)", limit=MAX_ELEMENTS // 8)
    return length


def _check_distributions(p: ArrayLike, name: str) -> NDArray[np.float64]:
    p = as_float_array(p, name, finite=False).astype(np.float64)
    if p.ndim < 1 or p.shape[-1] < 1:
        raise ValueError(f"{name} must have a non-empty last axis, got shape {p.shape}")
    if not np.isfinite(p).all() or (p < 0).any():
        raise ValueError(f"{name} must be finite and non-negative")
    if not np.allclose(p.sum(axis=-1), 1.0, atol=1e-9):
        raise ValueError(f"{name} must sum to 1 along its last axis")
    return p


@dataclass(frozen=True, eq=False)
class IIDSource:
    """Independent symbols with law ``probs`` (shape ``(m,)``)."""

    probs: np.ndarray

    def __post_init__(self) -> None:
        p = _check_distributions(self.probs, "probs")
        if p.ndim != 1:
            raise ValueError(f"probs must have shape (m,), got {p.shape}")
        object.__setattr__(self, "probs", p)

    @property
    def num_symbols(self) -> int:
        return int(self.probs.shape[0])

    def entropy_rate(self) -> float:
        """H = −Σ p ln p (nats)."""
        return float(entropy(self.probs))

    def entropy_rate_bits(self) -> float:
        return self.entropy_rate() / _LN2

    def sample(self, length: int, rng: np.random.Generator | int) -> NDArray[np.int64]:
        """``length`` i.i.d. symbols, shape ``(length,)`` int64 (``rng``: a Generator or an int seed)."""
        rng = as_generator(rng, required=True)
        return rng.choice(self.num_symbols, size=_check_length(length), p=self.probs).astype(np.int64)


@dataclass(frozen=True, eq=False)
class MarkovSource:
    """Markov source of order ``k``: ``transition[c_1, …, c_k, y] = P(X_t = y | X_{t-k:t} = c)``.

    ``transition`` has shape ``(m,) * (k + 1)`` (oldest context symbol first); order 0 is an
    i.i.d. source. ``description`` says how it was built.
    """

    transition: np.ndarray
    description: str = ""
    _pi: list = field(default_factory=list, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.description, str):
            raise TypeError(f"description must be a str, got {type(self.description).__name__}")
        t = _check_distributions(self.transition, "transition")
        m = t.shape[-1]
        if any(s != m for s in t.shape):
            raise ValueError(f"transition must have shape (m,) * (order + 1), got {t.shape}")
        object.__setattr__(self, "transition", t)

    @property
    def order(self) -> int:
        return self.transition.ndim - 1

    @property
    def num_symbols(self) -> int:
        return int(self.transition.shape[-1])

    def stationary_distribution(self) -> np.ndarray:
        """Stationary law π of the context (last ``k`` symbols), shape ``(m,) * k``.

        Solves π M = π, Σπ = 1 for the lifted chain M on the m^k contexts (least squares, so a
        unique answer needs an irreducible chain). For order 1 this is the usual π P = π.
        """
        if self._pi:
            return self._pi[0]
        m, k = self.num_symbols, self.order
        if k == 0:
            pi = np.ones(())
        else:
            n = m**k
            if n > 4096:
                raise ValueError(f"m**order = {n} contexts is too many for the dense solve (max 4096)")
            rows = self.transition.reshape(n, m)  # (contexts, next symbol)
            lifted = np.zeros((n, n))
            src = np.arange(n)
            for y in range(m):  # context c → (c without its oldest symbol, y)
                lifted[src, (src * m) % n + y] += rows[:, y]
            a = np.vstack([lifted.T - np.eye(n), np.ones((1, n))])  # (n + 1, n)
            b = np.zeros(n + 1)
            b[-1] = 1.0
            pi = np.linalg.lstsq(a, b, rcond=None)[0].clip(min=0.0)
            pi = (pi / pi.sum()).reshape((m,) * k)
        self._pi.append(pi)
        return pi

    def entropy_rate(self) -> float:
        """H = Σ_c π(c) H(P(· | c)) in nats."""
        return float((self.stationary_distribution() * entropy(self.transition)).sum())

    def entropy_rate_bits(self) -> float:
        return self.entropy_rate() / _LN2

    def sample(self, length: int, rng: np.random.Generator | int) -> NDArray[np.int64]:
        """A stationary sample path, shape ``(length,)`` int64 (first k symbols drawn from π;
        ``rng``: a Generator or an int seed)."""
        rng = as_generator(rng, required=True)
        length = _check_length(length)
        m, k = self.num_symbols, self.order
        out = np.empty(length, dtype=np.int64)
        if length == 0:
            return out
        if k == 0:
            return rng.choice(m, size=length, p=self.transition).astype(np.int64)
        n = m**k
        flat_pi = self.stationary_distribution().reshape(n)
        ctx = int(rng.choice(n, p=flat_pi))
        start = [int(d) for d in np.unravel_index(ctx, (m,) * k)]
        cum = np.cumsum(self.transition.reshape(n, m), axis=1)
        cum[:, -1] = 1.0
        cum_rows = cum.tolist()
        u = rng.random(length).tolist()
        seq = start[:length]
        for t in range(k, length):
            y = min(bisect_right(cum_rows[ctx], u[t]), m - 1)
            seq.append(y)
            ctx = (ctx * m) % n + y
        out[:] = seq
        return out


def markov_source(
    num_symbols: int, order: int, rng: np.random.Generator | int, *, concentration: float = 1.0
) -> MarkovSource:
    """A random Markov source: each conditional row ~ Dirichlet(concentration · 1).

    ``concentration`` finite and > 0 (very small values underflow: rows with NaN are refused).
    """
    rng = as_generator(rng, required=True)
    num_symbols = check_positive_int(num_symbols, "num_symbols")
    order = check_positive_int(order, "order", minimum=0)
    concentration = check_real(concentration, "concentration", lo=0.0, lo_open=True)
    if order * np.log(num_symbols) > np.log(MAX_ELEMENTS):
        raise ValueError(
            f"markov_source would allocate num_symbols^(order + 1) = {num_symbols}^{order + 1} "
            "transition entries; use a smaller num_symbols or order"
        )
    check_size((num_symbols,) * (order + 1), "markov_source(num_symbols, order)")
    t = rng.dirichlet(np.full(num_symbols, float(concentration)), size=num_symbols**order)
    return MarkovSource(
        t.reshape((num_symbols,) * (order + 1)), f"random order-{order} chain, Dirichlet({concentration})"
    )


#: Rules for where a sticky chain moves when it does not stay (``d`` = circular distance).
STICKY_RULES: dict[str, str] = {
    "uniform_others": "P(stay) = s; each other state (1 - s)/(n - 1)",
    "uniform_all": "with prob. s stay, else uniform over all n states: P(stay) = s + (1 - s)/n",
    "circular_distance": "P(stay) = s; other j ∝ d(i, j) = min(|i-j|, n-|i-j|) (far states likelier)",
    "inverse_circular_distance": "P(stay) = s; other j ∝ 1/d(i, j) (nearby states likelier)",
    "dirichlet": "P(stay) = s; the other states' shares ~ Dirichlet(1), drawn with rng",
}


def sticky_markov_chain(
    num_states: int,
    stay_prob: float,
    rng: np.random.Generator | int | None = None,
    *,
    rule: str = "uniform_others",
) -> MarkovSource:
    """The sticky Markov chain of the gradient-dynamics paper (§7.2, Table 1), order 1.

    The paper uses ``num_states = 8``, ``stay_prob = 0.3`` and describes the non-stay moves only
    loosely, so the rule is a parameter (see :data:`STICKY_RULES`). ``rng`` is used only by
    ``rule="dirichlet"``. Every rule but ``"dirichlet"`` gives a doubly stochastic, circulant
    matrix, so π is uniform and the entropy rate is the entropy of one row.

    Returns a :class:`MarkovSource` with ``.transition`` of shape ``(n, n)``.

    Example
    -------
    >>> src = sticky_markov_chain(3, 0.5, rule="uniform_all")
    >>> src.transition[0].round(4).tolist()
    [0.6667, 0.1667, 0.1667]
    """
    if rng is not None:
        as_generator(rng)  # a wrong type is named even where the rule does not use rng
    num_states = check_positive_int(num_states, "num_states", minimum=2)
    check_size((num_states, num_states), "sticky_markov_chain(num_states)")
    stay_prob = check_real(stay_prob, "stay_prob", lo=0.0, hi=1.0)
    check_choice(rule, "rule", sorted(STICKY_RULES))
    n, s = int(num_states), float(stay_prob)
    i, j = np.indices((n, n))
    d = np.minimum(np.abs(i - j), n - np.abs(i - j)).astype(np.float64)  # (n, n) circular distance
    off = i != j
    if rule == "uniform_all":
        t = np.full((n, n), (1 - s) / n) + s * np.eye(n)
        return MarkovSource(t, f"sticky chain n={n}, s={s}, rule={rule}")
    if rule == "uniform_others":
        w = off.astype(np.float64)
    elif rule == "circular_distance":
        w = d
    elif rule == "inverse_circular_distance":
        w = np.where(off, 1.0 / np.where(off, d, 1.0), 0.0)
    else:
        if rng is None:
            raise ValueError("rule='dirichlet' needs rng")
        rng = as_generator(rng)
        w = np.zeros((n, n))
        w[off] = rng.dirichlet(np.ones(n - 1), size=n).reshape(-1)
    t = (1 - s) * w / w.sum(axis=1, keepdims=True) + s * np.eye(n)
    return MarkovSource(t, f"sticky chain n={n}, s={s}, rule={rule}")
