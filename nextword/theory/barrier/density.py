"""Log-density of the attention embedding prior (Corollary 3.1, Eqs. 16/18/56).

Split from :mod:`nextword.theory.barrier.margins` (same conventions: ``X (..., L, d)`` rows ``x_t``,
column-vector maps ``q_t = W_Q x_t``, ``k_s = W_K x_s``, ``v_s = W_V x_s``); everything here is also
importable from ``nextword.theory.barrier``. Its closed forms are checked against
:func:`nextword.numerics.central_difference`.

    log p_σ(x_{1:L}) = Σ_t log N(e_t(x); 0, σ² I_d)  +  Σ_t log|det ∂e_t/∂x_t|
                       └──── noise energy ────┘      └──── log-barrier ────┘

Worked example (``d = 1``, ``L = 1``: no context, so ``e_1 = x_1`` and the barrier is 0)::

    >>> round(float(embedding_log_density(np.array([[0.0]]), [[1.0]], [[1.0]], sigma=1.0)), 6)
    -0.918939
"""

from __future__ import annotations


import numpy as np

from nextword._validate import check_flag, check_real

from nextword.theory.barrier.margins import causal_residual, matrix_margins

__all__ = ["noise_log_density", "log_barrier", "embedding_log_density"]


# --------------------------------------------------------------------------------------------
# log-density (Corollary 3.1, Eqs. 16/18)
# --------------------------------------------------------------------------------------------
def _check_sigma(sigma: float) -> float:
    return check_real(sigma, "sigma", lo=0.0, lo_open=True)  # None, "abc", arrays named


def noise_log_density(
    X: object,
    W_Q: object,
    W_K: object,
    W_V: object | None = None,
    *,
    sigma: float,
    include_current: bool = False,
    per_position: bool = False,
) -> np.ndarray:
    """Noise energy ``log N(e_t(x); 0, σ² I)`` summed over ``t`` (the first terms of Eq. 16).

    Includes the constant ``−(d/2) log(2πσ²)`` per position, so that with :func:`log_barrier`
    it is a normalised density. ``(...)`` or, with ``per_position``, ``(..., L)``.
    """
    include_current = check_flag(include_current, "include_current")
    per_position = check_flag(per_position, "per_position")
    sigma = _check_sigma(sigma)
    e = causal_residual(X, W_Q, W_K, W_V, include_current=include_current)
    d = e.shape[-1]
    terms = -0.5 * np.sum(e**2, axis=-1) / sigma**2 - 0.5 * d * np.log(2 * np.pi * sigma**2)
    return terms if per_position else terms.sum(axis=-1)


def log_barrier(
    X: object,
    W_Q: object,
    W_K: object,
    W_V: object | None = None,
    *,
    include_current: bool = False,
    per_position: bool = False,
) -> np.ndarray:
    """Log-barrier ``Σ_t log|det ∂e_t/∂x_t|`` (Eq. 12 / second term of Eq. 16), exact for any ``W_V``."""
    include_current = check_flag(include_current, "include_current")
    per_position = check_flag(per_position, "per_position")
    mm = matrix_margins(X, W_Q, W_K, W_V, include_current=include_current)
    return mm.logabsdet if per_position else mm.logabsdet.sum(axis=-1)


def embedding_log_density(
    X: object,
    W_Q: object,
    W_K: object,
    W_V: object | None = None,
    *,
    sigma: float,
    include_current: bool = False,
    per_position: bool = False,
) -> np.ndarray:
    """``log p_σ(x_{1:L})`` = noise energy + log-barrier (Corollary 3.1, Eq. 16/18; Eq. 56 for ``s ≤ t``).

    With ``per_position`` the ``(..., L)`` terms are returned; under causal masking term ``t`` is
    the conditional ``log p(x_t | x_<t)`` (it depends only on ``x_{≤t}``). The formula is a
    normalised density only where the map ``x ↦ e`` is a bijection (e.g. all margins positive and
    ``e_t → ±∞``); see ``book/part4_margins/02_scalar_margin``.
    """
    include_current = check_flag(include_current, "include_current")
    per_position = check_flag(per_position, "per_position")
    return noise_log_density(
        X, W_Q, W_K, W_V, sigma=sigma, include_current=include_current, per_position=per_position
    ) + log_barrier(X, W_Q, W_K, W_V, include_current=include_current, per_position=per_position)
