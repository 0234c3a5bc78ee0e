"""Discrete (masked / uniform) diffusion on a finite vocabulary: CTMC forward and reverse processes.

Formulation paper (Baptista, Stuart, Tran), Section 9 and Appendix D.

Convention
----------
A *generator* (rate matrix) ``Q`` of shape ``(S, S)`` uses the **row convention**: ``Q[i, j] >= 0``
(``i != j``) is the rate of jumping from state ``i`` to state ``j`` and every row sums to zero,
``Q[i, i] = -sum_{j != i} Q[i, j]``. Probability vectors are **rows** ``p`` of shape ``(..., S)``
and evolve by the Kolmogorov forward equation

    dp/dt = p Q          (i.e. dp/dt = Q^T p for a column vector),

so ``p(t) = p(0) expm(t Q)``. This is the convention of the proof of Theorem D.1 (which sums
``Q[k, i] p(k)``); the paper's (9.1) writes ``dp/dt = Q p`` with zero *row* sums, which conserves
mass only with the transpose (see book/part2_formulation/08_discrete_diffusion and book/ERRATA.md).

For a sequence of ``L`` tokens each corrupted independently with the same single-token generator
``Q``, the generator on ``V^L`` is the Kronecker sum ``Q ⊕ ... ⊕ Q`` (:func:`sequence_generator`);
states are flattened in row-major (C) order, token 0 most significant.

Worked example::

    >>> Q = uniform_generator(3, rate=1.0)
    >>> p_t = forward_marginal(np.array([1.0, 0.0, 0.0]), Q, 40.0)
    >>> bool(np.allclose(p_t, 1 / 3))
    True
"""

from __future__ import annotations

import numbers

import numpy as np

from nextword._validate import as_float_array, as_generator, as_index_array, check_finite_scalar, check_positive_int

__all__ = [
    "generator_violations",
    "check_generator",
    "uniform_generator",
    "absorbing_generator",
    "sequence_generator",
    "transition_matrix",
    "forward_marginal",
    "gillespie",
    "tau_leaping",
    "euler_transition_matrix",
    "reverse_generator",
    "reverse_marginals",
    "sample_reverse",
    "probability_ratios",
    "score_entropy_loss",
    "denoising_score_entropy_loss",
]


def _check_nonneg_float(value: object, name: str, *, positive: bool = False) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    if not np.isfinite(value) or value < 0 or (positive and value == 0):
        raise ValueError(f"{name} must be {'> 0' if positive else '>= 0'} and finite, got {value}")
    return value


def generator_violations(Q: object, *, atol: float = 1e-12) -> list[str]:
    """The ways ``Q`` fails to be a CTMC generator (row convention); empty list when it is one.

    Checks: square 2-D, off-diagonal entries ``>= 0``, every row sums to 0 (``Q @ 1 = 0``).
    Used in the book to test the rate matrices printed in Examples 9.2 and 9.3.
    """
    check_finite_scalar(atol, "atol")
    Q = as_float_array(Q, "Q", ndim=2)
    if Q.shape[0] != Q.shape[1] or Q.shape[0] == 0:
        return [f"Q must be square with at least one state, got shape {Q.shape}"]
    problems = []
    off = Q - np.diag(np.diag(Q))
    if off.min() < -atol:
        i, j = np.unravel_index(np.argmin(off), off.shape)
        problems.append(f"negative off-diagonal rate Q[{i}, {j}] = {off[i, j]:.4g}")
    rows = Q.sum(axis=1)
    if np.max(np.abs(rows)) > atol:
        i = int(np.argmax(np.abs(rows)))
        problems.append(f"row {i} sums to {rows[i]:.4g}, not 0")
    return problems


def check_generator(Q: object, *, atol: float = 1e-12) -> np.ndarray:
    """Return ``Q`` as float64 if it is a generator, else raise ``ValueError`` listing the problems."""
    check_finite_scalar(atol, "atol")
    problems = generator_violations(Q, atol=atol)
    if problems:
        raise ValueError("Q is not a CTMC generator: " + "; ".join(problems))
    return np.asarray(Q, dtype=np.float64)


def uniform_generator(V: int, rate: float = 1.0) -> np.ndarray:
    """Uniform-noise generator ``Q = rate (1 1^T / V - I)``, shape ``(V, V)`` (Example 9.2, corrected).

    Off-diagonal rates ``rate / V``, diagonal ``-rate (V - 1) / V``; rows sum to 0 and the uniform
    distribution is stationary. (The matrix printed in Example 9.2 has ``1 - (V-1)β/V`` on the
    diagonal: that is the *transition matrix* ``I + Q`` of one step, whose rows sum to 1.)

    >>> uniform_generator(2, 2.0)
    array([[-1.,  1.],
           [ 1., -1.]])
    """
    V = check_positive_int(V, "V", minimum=2)
    rate = _check_nonneg_float(rate, "rate")
    return rate * (np.full((V, V), 1.0 / V) - np.eye(V))


def absorbing_generator(V: int, mask: int, rate: float = 1.0) -> np.ndarray:
    """Absorbing ("mask") generator, shape ``(V, V)`` (Example 9.3, corrected).

    Every state ``i != mask`` jumps to ``mask`` with rate ``rate``; ``mask`` never leaves:
    ``Q[i, mask] = rate``, ``Q[i, i] = -rate`` for ``i != mask``, row ``mask`` is zero. The
    stationary law is ``δ_mask``.

    >>> absorbing_generator(3, mask=2)
    array([[-1.,  0.,  1.],
           [ 0., -1.,  1.],
           [ 0.,  0.,  0.]])
    """
    V = check_positive_int(V, "V", minimum=2)
    if isinstance(mask, (bool, np.bool_)) or not isinstance(mask, numbers.Integral) or not 0 <= mask < V:
        raise ValueError(f"mask must be an integer state index in [0, {V}), got {mask!r}")
    rate = _check_nonneg_float(rate, "rate")
    Q = np.zeros((V, V))
    others = np.arange(V) != mask
    Q[others, mask] = rate
    Q[others, others] = -rate
    return Q


def sequence_generator(Q: object, L: int) -> np.ndarray:
    """Generator on ``V^L`` for ``L`` tokens corrupted independently: the Kronecker sum, ``(V^L, V^L)``.

    ``Q_seq = sum_d I ⊗ ... ⊗ Q (slot d) ⊗ ... ⊗ I``; only one token changes per jump, which is the
    sparse structure Remark 9.1 asks for. ``expm(t Q_seq) = expm(t Q) ⊗ ... ⊗ expm(t Q)``.
    """
    Q = check_generator(Q, atol=1e-9)
    L = check_positive_int(L, "L")
    V = Q.shape[0]
    if V**L > 4096:
        raise ValueError(f"V**L = {V**L} states is too many for a dense generator (limit 4096)")
    out = np.zeros((V**L, V**L))
    for d in range(L):
        out += np.kron(np.kron(np.eye(V**d), Q), np.eye(V ** (L - d - 1)))
    return out


def transition_matrix(Q: object, t: float) -> np.ndarray:
    """``P(t) = expm(t Q)``, shape ``(S, S)``; ``P[i, j] = Prob(x(t) = j | x(0) = i)``.

    With a schedule ``Q(t) = σ²(t) Q0`` (9.2) pass ``t = g(t) = ∫_0^t σ²(s) ds`` (9.3).
    """
    Q = check_generator(Q, atol=1e-9)
    t = _check_nonneg_float(t, "t")
    import scipy.linalg  # imported where used (about half a second)

    P = scipy.linalg.expm(t * Q)
    return np.clip(P, 0.0, None)


def forward_marginal(p0: object, Q: object, t: float) -> np.ndarray:
    """Marginal law ``p(t) = p0 expm(t Q)`` of the forward CTMC, shape ``(..., S)`` like ``p0``."""
    p0 = _check_prob(p0, "p0")
    P = transition_matrix(Q, t)
    if p0.shape[-1] != P.shape[0]:
        raise ValueError(f"p0 has {p0.shape[-1]} states but Q has {P.shape[0]}")
    return p0 @ P


def _check_prob(p: object, name: str) -> np.ndarray:
    p = as_float_array(p, name, min_ndim=1).astype(np.float64)
    if p.shape[-1] == 0:
        raise ValueError(f"{name} must be a probability vector with at least one state, got shape {p.shape}")
    if p.min() < -1e-12 or not np.allclose(p.sum(axis=-1), 1.0, atol=1e-8):
        raise ValueError(f"{name} must be a probability vector (entries >= 0, summing to 1 along the last axis)")
    return np.clip(p, 0.0, None)


def _check_states(x0: object, Q: np.ndarray) -> np.ndarray:
    """``x0`` as a 1-D int array of states in ``[0, S)`` (one per chain)."""
    x = as_index_array(x0, "x0", upper=Q.shape[0])
    if x.ndim != 1:
        raise ValueError(f"x0 must be a 1-D array of initial states (n,), one per chain, got shape {x.shape}")
    return x


def gillespie(Q: object, x0: object, t_end: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Exact (Gillespie) simulation of independent chains with generator ``Q`` up to ``t_end``.

    In state ``i`` the chain waits an ``Exponential(-Q[i, i])`` holding time (rate ``-Q[i, i] >= 0``)
    and then jumps to ``j != i`` with probability ``Q[i, j] / (-Q[i, i])``. Vectorised over chains.

    Parameters
    ----------
    Q: generator, shape ``(S, S)`` (for sequences, build it with :func:`sequence_generator`).
    x0: initial states, int array of shape ``(n,)``.
    Returns ``(x_end, n_jumps)``, both shape ``(n,)``.
    """
    Q = check_generator(Q, atol=1e-9)
    x = _check_states(x0, Q).copy()
    t_end = _check_nonneg_float(t_end, "t_end")
    if not isinstance(rng, np.random.Generator):
        raise TypeError("rng must be a numpy.random.Generator")
    out_rate = -np.diag(Q)
    jump = np.where(out_rate[:, None] > 0, np.clip(Q, 0, None) / np.where(out_rate > 0, out_rate, 1.0)[:, None], 0.0)
    np.fill_diagonal(jump, 0.0)
    cum = np.cumsum(jump, axis=1)  # (S, S) cumulative jump distribution per state
    t = np.zeros(x.shape)
    jumps = np.zeros(x.shape, dtype=np.int64)
    alive = out_rate[x] > 0
    while np.any(alive):
        idx = np.flatnonzero(alive)
        rate = out_rate[x[idx]]
        t[idx] += rng.exponential(1.0 / rate)
        fires = t[idx] <= t_end
        go = idx[fires]
        u = rng.random(go.size) * cum[x[go], -1]
        x[go] = np.minimum((cum[x[go]] < u[:, None]).sum(axis=1), Q.shape[0] - 1)
        jumps[go] += 1
        alive[idx[~fires]] = False
        alive[go] = out_rate[x[go]] > 0
    return x, jumps


def _check_leap(Q: np.ndarray, tau: float, what: str) -> None:
    """A ``ValueError`` naming ``what`` unless ``tau max_i(-Q[i, i]) <= 1`` (``I + τQ`` stays stochastic)."""
    if tau * np.max(-np.diag(Q)) > 1 + 1e-12:
        raise ValueError(f"{what} = {tau} too large: need tau * max(-Q_ii) <= 1 (more steps or a shorter time)")


def euler_transition_matrix(Q: object, tau: float) -> np.ndarray:
    """One τ-leap of a single categorical variable: ``I + τ Q``, shape ``(S, S)``.

    Rates are frozen at the start of the leap and at most one jump is made, so
    ``P_τ = I + τ Q = expm(τ Q) + O(τ²)``; requires ``τ max_i(-Q[i, i]) <= 1`` to stay stochastic.
    """
    Q = check_generator(Q, atol=1e-9)
    tau = _check_nonneg_float(tau, "tau", positive=True)
    _check_leap(Q, tau, "tau")
    return np.clip(np.eye(Q.shape[0]) + tau * Q, 0.0, None)


def tau_leaping(Q: object, x0: object, t_end: float, n_steps: int, rng: np.random.Generator) -> np.ndarray:
    """τ-leaping for sequences: every token of every sequence leaps at once, ``n_steps`` times.

    ``Q`` is the single-token generator ``(V, V)``; ``x0`` is ``(n, L)`` token ids. In each leap of
    length ``τ = t_end / n_steps`` each token ``x`` independently moves to ``j`` with probability
    ``τ Q[x, j]`` (:func:`euler_transition_matrix`): all positions change in parallel, unlike
    Gillespie, which makes one jump of one position at a time. The law after ``n`` leaps is exactly
    ``p0 (I + τQ)^n`` per token, which converges to ``p0 expm(t Q)`` with error ``O(τ)``.
    Returns the states at ``t_end``, shape ``(n, L)``.
    """
    rng = as_generator(rng, "rng", required=True)
    Q = check_generator(Q, atol=1e-9)
    x = as_index_array(x0, "x0", upper=Q.shape[0]).copy()
    n_steps = check_positive_int(n_steps, "n_steps")
    t_end = _check_nonneg_float(t_end, "t_end", positive=True)
    _check_leap(Q, t_end / n_steps, "the leap tau = t_end / n_steps")
    cum = np.cumsum(euler_transition_matrix(Q, t_end / n_steps), axis=1)  # (V, V)
    for _ in range(n_steps):
        u = rng.random(x.shape) * cum[x, -1]
        x = np.minimum((cum[x] < u[..., None]).sum(axis=-1), Q.shape[0] - 1)
    return x


def reverse_generator(Q: object, p: object, *, floor: float = 0.0) -> np.ndarray:
    """Reverse-time generator (9.4)/(D.1): ``Q̄[i, j] = Q[j, i] p[j] / p[i]`` for ``i != j``.

    The diagonal is set so rows sum to zero. States with ``p[i] <= floor`` get a zero row (they are
    never visited). Shape ``(S, S)``.
    """
    check_finite_scalar(floor, "floor")
    Q = check_generator(Q, atol=1e-9)
    p = _check_prob(p, "p")
    if p.shape != (Q.shape[0],):
        raise ValueError(f"p must have shape ({Q.shape[0]},), got {p.shape}")
    return _reverse_rates(Q, p, floor)


def _reverse_rates(Q: np.ndarray, p: np.ndarray, floor: float = 0.0) -> np.ndarray:
    """(D.1) without argument checks (inner loops); see :func:`reverse_generator`."""
    safe = np.where(p > floor, p, 1.0)
    R = Q.T * p[None, :] / safe[:, None]
    R[p <= floor] = 0.0
    np.fill_diagonal(R, 0.0)
    np.fill_diagonal(R, -R.sum(axis=1))
    return R


def _marginal_path(p0: np.ndarray, Q: np.ndarray):
    """``t -> p0 expm(t Q)`` for many ``t``: one eigendecomposition, ``expm`` fallback if defective."""
    lam, R = np.linalg.eig(Q)  # Q = R diag(lam) R^{-1}
    if np.linalg.cond(R) < 1e8:
        Rinv = np.linalg.inv(R)
        c = p0 @ R  # (S,) coefficients in the eigenbasis

        def path(t: float) -> np.ndarray:
            return np.clip(((c * np.exp(lam * t)) @ Rinv).real, 0.0, None)
    else:  # pragma: no cover - defective generators are rare in the book

        def path(t: float) -> np.ndarray:
            return p0 @ transition_matrix(Q, t)

    return path


def reverse_marginals(p0: object, Q: object, times: object) -> np.ndarray:
    """Integrate the reverse-time master equation from ``p(T)`` along a decreasing time grid (RK4).

    With ``s = T - t`` the reverse law solves ``dp̄/ds = p̄ Q̄(T - s)``, ``p̄(T) = p(T)``, with ``Q̄``
    from :func:`reverse_generator` evaluated on the exact forward marginal (9.4). Theorem D.1 says
    the solution is ``p̄(t) = p(t)``.

    Parameters
    ----------
    p0: data law ``p(·, 0)``, shape ``(S,)``.  Q: generator ``(S, S)``.
    times: strictly decreasing grid ``T = times[0] > times[1] > ... >= 0``, shape ``(n,)``.
        Where ``p0`` has zeros the reverse rates grow like ``1/t`` near ``t = 0``; use a geometric
        grid there (steps proportional to ``t``) and stop at a small ``t > 0``.
    Returns ``p̄`` at ``times``, shape ``(n, S)``.
    """
    Q = check_generator(Q, atol=1e-9)
    p0 = _check_prob(p0, "p0")
    times = as_float_array(times, "times", ndim=1).astype(np.float64)
    if times.size < 2 or np.any(np.diff(times) >= 0) or times[-1] < 0:
        raise ValueError("times must be a strictly decreasing 1-D grid T = times[0] > ... >= 0 with >= 2 points")

    marginal = _marginal_path(p0, Q)

    def rhs(pb: np.ndarray, t: float) -> np.ndarray:
        return pb @ _reverse_rates(Q, marginal(t))

    out = np.empty((times.size, Q.shape[0]))
    pb = marginal(times[0])
    out[0] = pb
    for n in range(times.size - 1):
        t, h = times[n], times[n] - times[n + 1]
        k1 = rhs(pb, t)
        k2 = rhs(pb + h / 2 * k1, t - h / 2)
        k3 = rhs(pb + h / 2 * k2, t - h / 2)
        k4 = rhs(pb + h * k3, times[n + 1])
        pb = pb + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        out[n + 1] = pb
    return out


def sample_reverse(
    p0: object, Q: object, T: float, n_steps: int, n_samples: int, rng: np.random.Generator
) -> np.ndarray:
    """Sample the reverse CTMC from ``x(T) ~ p(T)`` down to ``t = 0`` with exact ratios (τ-leaping).

    Uses ``Q̄(t)`` of (D.1) built from the exact forward marginal (the role a trained ratio network
    ``s(i, t)`` plays in (9.5)), frozen over each of ``n_steps`` leaps at the leap's midpoint
    (a one-step probability ``τ Q̄_ij`` above 1, as near ``t = 0`` for the mask, is clipped and
    the row renormalised).
    Returns samples at ``t = 0``, shape ``(n_samples,)``; their histogram should match ``p0``.
    """
    rng = as_generator(rng, "rng", required=True)
    Q = check_generator(Q, atol=1e-9)
    p0 = _check_prob(p0, "p0")
    n_samples = check_positive_int(n_samples, "n_samples")
    n_steps = check_positive_int(n_steps, "n_steps")
    T = _check_nonneg_float(T, "T", positive=True)
    S = Q.shape[0]
    marginal = _marginal_path(p0, Q)
    pT = marginal(T)
    x = rng.choice(S, size=n_samples, p=pT / pT.sum())
    h = T / n_steps
    for n in range(n_steps):
        t_mid = T - h * (n + 0.5)
        p_mid = marginal(t_mid)
        R = _reverse_rates(Q, p_mid / p_mid.sum())
        step = np.clip(np.eye(S) + h * R, 0.0, None)  # (S, S); clipping only bites when h |R_ii| > 1
        step /= step.sum(axis=1, keepdims=True)
        cum = np.cumsum(step, axis=1)
        u = rng.random(n_samples) * cum[x, -1]
        x = np.minimum((cum[x] < u[:, None]).sum(axis=1), S - 1)
    return x


def probability_ratios(p: object) -> np.ndarray:
    """Concrete score ``r[i, j] = p[j] / p[i]`` (the target of ``s(i, t)_j`` in §9), shape ``(S, S)``.

    Rows with ``p[i] = 0`` are set to 0 (the loss never evaluates them).
    """
    p = _check_prob(p, "p")
    if p.ndim != 1:
        raise ValueError(f"p must be 1-D, got shape {p.shape}")
    safe = np.where(p > 0, p, 1.0)
    return np.where(p[:, None] > 0, p[None, :] / safe[:, None], 0.0)


def _check_scores(s: object, S: int) -> np.ndarray:
    s = as_float_array(s, "s", ndim=2).astype(np.float64)
    if s.shape != (S, S):
        raise ValueError(f"s must have shape ({S}, {S}), got {s.shape}")
    off = ~np.eye(S, dtype=bool)
    if np.any(s[off] <= 0):
        raise ValueError("s must be strictly positive off the diagonal (it models probability ratios)")
    return s


def _weights(Q: object | None, S: int) -> np.ndarray:
    if Q is None:
        w = np.ones((S, S))
    else:
        Qc = check_generator(Q, atol=1e-9)
        if Qc.shape != (S, S):
            raise ValueError(f"Q must have shape ({S}, {S}), got {Qc.shape}")
        w = Qc.T.copy()  # w[i, j] = Q[j, i]: forward rate j -> i, the factor in (9.5)
    np.fill_diagonal(w, 0.0)
    return w


def score_entropy_loss(s: object, p: object, Q: object | None = None) -> float:
    """Score-entropy loss at one time (integrand of the first loss in §9), a scalar.

    ``E_{i~p} sum_{j != i} w[i, j] (s[i, j] - (p[j]/p[i]) log s[i, j])`` with ``w = 1`` as printed
    (``Q=None``) or ``w[i, j] = Q[j, i]`` (the forward rate into ``i`` that multiplies ``s`` in
    (9.5), as in the score-entropy paper [63]). ``s`` has shape ``(S, S)``, diagonal ignored.
    Minimised over ``s > 0`` at ``s = p[j] / p[i]`` wherever ``w p[i] > 0``.
    """
    p = _check_prob(p, "p")
    S = p.shape[-1]
    s = _check_scores(s, S)
    w = _weights(Q, S)
    ratio = probability_ratios(p)
    logs = np.log(np.where(np.eye(S, dtype=bool), 1.0, s))
    terms = w * (p[:, None] * s - p[:, None] * ratio * logs)
    return float(terms.sum())


def denoising_score_entropy_loss(s: object, p0: object, P_t: object, Q: object | None = None) -> float:
    """Conditional ("denoising") form of the loss, via the tower rule (second loss in §9), a scalar.

    ``E_{k~p0} E_{i~P_t[k]} sum_{j != i} w[i, j] (s[i, j] - (P_t[k, j]/P_t[k, i]) log s[i, j])``,
    with ``P_t = expm(t Q)`` (rows are the known conditionals ``p(·, t | k)``). Equal to
    :func:`score_entropy_loss` at ``p = p0 P_t`` when every conditional has full support; with the
    absorbing generator that holds only for the weighted form (``Q`` given).
    """
    p0 = _check_prob(p0, "p0")
    P_t = as_float_array(P_t, "P_t", ndim=2).astype(np.float64)
    S = P_t.shape[0]
    if P_t.shape != (S, S) or p0.shape != (S,):
        raise ValueError(f"P_t must be square (S, S) and p0 of shape (S,), got {P_t.shape} and {p0.shape}")
    s = _check_scores(s, S)
    w = _weights(Q, S)
    logs = np.log(np.where(np.eye(S, dtype=bool), 1.0, s))
    total = 0.0
    for k in range(S):
        if p0[k] == 0:
            continue
        cond = P_t[k]
        ratio = probability_ratios(cond / cond.sum())
        total += p0[k] * float((w * (cond[:, None] * s - cond[:, None] * ratio * logs)).sum())
    return total
