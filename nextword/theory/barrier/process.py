"""The token-level process induced by the attention embedding prior (§5, Appendix C; Theorems 2–3).

Tokens ``y_t`` in a vocabulary of size ``K`` are emitted from scalar embeddings (``d = 1``) by a
causal categorical head ``P(y_t = k | x_{≤t}) = softmax_k(w_k x_t + b_k)`` (Eq. 28 / Assumption A1),
and the embeddings follow the latent-noise prior of §2, ``p_σ(x_{1:n}) = Π_t φ_σ(e_t(x)) ·
|det ∂e/∂x|`` (Eq. 16). The token law is ``P_n(y_{1:n}) = ∫ P(y|x) p_σ(x) dx`` (Eq. 31).

Two independent ways to compute it are provided, for the Kolmogorov check (Theorem 2, Eq. 32):

* :func:`token_law_quadrature` — tensor-grid quadrature in ``R^n`` of the change-of-variables
  density (full Jacobian determinant, so it works for non-causal contexts too, Proposition 2);
* :func:`sample_scalar_process` + :func:`token_law_monte_carlo` — ancestral sampling of
  ``x_t = μ_t(x) + ε_t`` (solving the implicit equation in ``x_t`` by bisection) and a Monte Carlo
  average with its standard error.

Conventions as in :mod:`nextword.theory.barrier` (column maps, logits ``a x_t x_s`` in ``d = 1``).

>>> P, mass = token_law_quadrature(1, a=-0.5, w_v=1.0, sigma=1.0, W_out=[0.0, 1.0],
...                                b_out=[0.0, 0.0], grid=np.linspace(-8, 8, 161))
>>> round(float(mass), 6), round(float(P.sum()), 6)
(1.0, 1.0)
"""

from __future__ import annotations

import itertools

import numpy as np

from nextword._validate import as_float_array, check_finite_scalar, check_positive_int
from nextword.attention.core import softmax
from nextword.theory.barrier.margins import attention_residual, residual_jacobian

__all__ = [
    "emission_probs",
    "token_law_quadrature",
    "sample_scalar_process",
    "token_law_monte_carlo",
]


def _head(W_out: object, b_out: object) -> tuple[np.ndarray, np.ndarray]:
    W = as_float_array(W_out, "W_out", ndim=1).astype(np.float64)
    b = as_float_array(b_out, "b_out", ndim=1).astype(np.float64)
    if W.shape != b.shape or W.size < 2:
        raise ValueError(f"W_out and b_out must both have shape (K,) with K >= 2, got {W.shape}, {b.shape}")
    return W, b


def emission_probs(x: object, W_out: object, b_out: object) -> np.ndarray:
    """``P(y_t = k | x_t) = softmax_k(W_out[k] x_t + b_out[k])``; ``x (..., L) -> (..., L, K)``."""
    x = as_float_array(x, "x", min_ndim=1).astype(np.float64)
    W, b = _head(W_out, b_out)
    return softmax(x[..., None] * W + b, axis=-1)


def _scalar_params(a: float, w_v: float) -> tuple[list[list[float]], list[list[float]], list[list[float]]]:
    return [[float(a)]], [[1.0]], [[float(w_v)]]


def token_law_quadrature(
    n: int,
    *,
    a: float,
    w_v: float,
    sigma: float,
    W_out: object,
    b_out: object,
    grid: object,
    context: str = "strict",
    chunk: int = 200_000,
) -> tuple[np.ndarray, float]:
    """``P_n(y_{1:n})`` for every ``y ∈ V^n`` by quadrature on ``grid^n``; returns ``(P, mass)``.

    ``P`` has shape ``(K,) * n``; ``mass = ∫ p_σ(x_{1:n}) dx`` (1 when the residual map is a
    bijection — otherwise the formula is not a probability density). The density uses the full
    Jacobian determinant of :func:`~nextword.theory.barrier.residual_jacobian`, so any ``context``
    works. ``grid`` must be uniform (rectangle rule = trapezoid for integrands vanishing at the ends).
    """
    check_finite_scalar(a, "a")
    check_finite_scalar(w_v, "w_v")
    check_finite_scalar(sigma, "sigma")
    chunk = check_positive_int(chunk, "chunk")
    n = check_positive_int(n, "n")
    g = as_float_array(grid, "grid", ndim=1).astype(np.float64)
    if g.size < 3 or not np.allclose(np.diff(g), g[1] - g[0]) or g[1] <= g[0]:
        raise ValueError("grid must be an increasing uniform 1-D grid with at least 3 points")
    if not sigma > 0:
        raise ValueError(f"sigma must be > 0, got {sigma}")
    W, b = _head(W_out, b_out)
    K = W.size
    h = g[1] - g[0]
    W_Q, W_K, W_V = _scalar_params(a, w_v)
    P = np.zeros((K,) * n)
    mass = 0.0
    total = g.size**n
    letters = "ijklmnopqr"[:n]
    spec = "g," + ",".join(f"g{c}" for c in letters) + "->" + letters
    for start in range(0, total, chunk):
        idx = np.arange(start, min(start + chunk, total))
        pts = g[np.stack(np.unravel_index(idx, (g.size,) * n), axis=-1)]  # (N, n) grid points
        X = pts[..., None]  # (N, n, 1): batch of length-n sequences, d = 1
        e = attention_residual(X, W_Q, W_K, W_V, context=context)[..., 0]  # (N, n)
        J = residual_jacobian(X, W_Q, W_K, W_V, context=context).reshape(-1, n, n)  # (N, n·1, n·1)
        _, logdet = np.linalg.slogdet(J)
        logp = -0.5 * np.sum(e**2, axis=-1) / sigma**2 - 0.5 * n * np.log(2 * np.pi * sigma**2) + logdet
        w = np.exp(logp) * h**n  # (N,) quadrature weights times density
        mass += float(w.sum())
        E = emission_probs(pts, W, b)  # (N, n, K)
        P += np.einsum(spec, w, *[E[:, t, :] for t in range(n)])
    return P, mass


def sample_scalar_process(
    n_samples: int, L: int, *, a: float, w_v: float, sigma: float, rng: np.random.Generator, iters: int = 60
) -> np.ndarray:
    """Ancestral samples ``x_{1:L}`` of the strict-causal prior ``x_t = μ_t(x) + ε_t`` (Eq. 3), ``d = 1``.

    ``x_t`` appears on both sides (the query), so each step solves ``e_t(x_t) = ε_t`` by bisection on
    ``[ε_t + min_s v_s, ε_t + max_s v_s]`` (``μ_t`` is a convex combination of the past values). The
    solution is unique when ``a·w_V ≤ 0`` (then ``m_t ≥ 1``); other couplings raise ``ValueError``.
    Returns ``(n_samples, L)``.
    """
    check_finite_scalar(a, "a")
    check_finite_scalar(w_v, "w_v")
    check_finite_scalar(sigma, "sigma")
    iters = check_positive_int(iters, "iters")
    n_samples = check_positive_int(n_samples, "n_samples")
    L = check_positive_int(L, "L")
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    if a * w_v > 0:
        raise ValueError(f"a*w_v must be <= 0 for a unique ancestral solution, got a={a}, w_v={w_v}")
    W_Q, W_K, W_V = _scalar_params(a, w_v)
    eps = rng.normal(0.0, sigma, size=(n_samples, L))
    x = np.zeros((n_samples, L))
    x[:, 0] = eps[:, 0]  # μ_1 = 0: nothing to attend to
    for t in range(1, L):
        v = w_v * x[:, :t]  # (N, t) past values
        lo, hi = eps[:, t] + v.min(axis=1), eps[:, t] + v.max(axis=1)
        for _ in range(iters):
            mid = 0.5 * (lo + hi)
            trial = np.concatenate([x[:, :t], mid[:, None]], axis=1)[..., None]  # (N, t+1, 1)
            e_t = attention_residual(trial, W_Q, W_K, W_V, context="strict")[:, t, 0]
            below = e_t < eps[:, t]
            lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
        x[:, t] = 0.5 * (lo + hi)
    return x


def token_law_monte_carlo(x: object, W_out: object, b_out: object) -> tuple[np.ndarray, np.ndarray]:
    """Monte Carlo ``P_n(y)`` and its standard error from samples ``x (N, n)``: ``(mean, se)``, ``(K,)*n`` each.

    Rao–Blackwellised: averages ``Π_t P(y_t | x_t)`` over the samples instead of sampling tokens.
    """
    x = as_float_array(x, "x", ndim=2).astype(np.float64)
    W, b = _head(W_out, b_out)
    N, n = x.shape
    if N < 2:
        raise ValueError("x must hold at least 2 samples for a standard error")
    E = emission_probs(x, W, b)  # (N, n, K)
    K = W.size
    mean = np.empty((K,) * n)
    se = np.empty((K,) * n)
    for y in itertools.product(range(K), repeat=n):
        f = np.prod(E[:, np.arange(n), list(y)], axis=1)  # (N,)
        mean[y] = f.mean()
        se[y] = f.std(ddof=1) / np.sqrt(N)
    return mean, se
