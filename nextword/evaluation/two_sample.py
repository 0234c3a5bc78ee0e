"""Permutation two-sample tests for the sample divergences of the formulation paper (§8.1, Example 8.2).

Example 8.2 proposes the energy distance or the MMD as the divergence ``D`` of Eq. (8.3) because
both can be estimated from samples alone (:mod:`nextword.evaluation`). An estimate is only useful
with a yardstick: is it larger than what two samples *of the same law* would give? The permutation
test answers exactly that. Under ``H0: P = Q`` the pooled sample is exchangeable, so re-splitting it
at random gives draws of the statistic's null distribution; the p-value is

    p = (1 + #{b : T(split_b) >= T(observed)}) / (1 + B),

which is a valid (conservative) p-value for any statistic and any sample size (Phipson & Smyth,
2010). With small samples :func:`permutation_test` can enumerate every split instead (exact test).

>>> from nextword.evaluation.metrics import energy_distance
>>> rng = np.random.default_rng(0)
>>> res = permutation_test(rng.normal(0, 1, 40), rng.normal(1, 1, 40), energy_distance, rng=rng)
>>> res.p_value < 0.01
True
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from nextword._validate import as_float_array, as_generator, check_positive_int, check_size

__all__ = ["PermutationResult", "permutation_test"]

Statistic = Callable[[np.ndarray, np.ndarray], float]


@dataclass(frozen=True)
class PermutationResult:
    """``statistic`` on the observed split, its ``p_value``, and the ``null`` draws ``(B,)``."""

    statistic: float
    p_value: float
    null: np.ndarray
    exact: bool


def _as_samples(x: ArrayLike, name: str) -> NDArray[np.float64]:
    a = as_float_array(x, name, finite=False).astype(np.float64, copy=False)
    if a.ndim not in (1, 2) or a.shape[0] < 1:
        raise ValueError(f"{name} must have shape (n,) or (n, d) with n >= 1, got {a.shape}")
    if not np.isfinite(a).all():
        raise ValueError(f"{name} must be finite (no NaN/inf)")
    return a


def _statistic(statistic: Statistic, a: np.ndarray, b: np.ndarray) -> float:
    """``statistic(a, b)`` as a float; a NaN (or a non-number) is a ``ValueError`` naming it."""
    try:
        t = float(statistic(a, b))
    except TypeError as exc:
        raise TypeError(f"statistic(x, y) must return a real number: {exc}") from None
    if np.isnan(t):
        raise ValueError("statistic(x, y) returned NaN; a permutation test needs a comparable number")
    return t


def permutation_test(
    x: ArrayLike,
    y: ArrayLike,
    statistic: Statistic,
    *,
    n_permutations: int = 999,
    rng: np.random.Generator | int | None = None,
    exact: bool | None = None,
) -> PermutationResult:
    """Permutation test of ``H0: x and y come from the same law`` with a "large = different" statistic.

    Parameters
    ----------
    x, y:
        Samples ``(n,)``/``(n, d)`` and ``(m,)``/``(m, d)`` (same ``d``).
    statistic:
        ``statistic(x, y) -> float``, larger when the laws differ (e.g.
        :func:`nextword.evaluation.energy_distance`, or ``lambda a, b: mmd_squared(a, b, h)``).
    n_permutations:
        ``B`` random re-splits (ignored when the test is exact).
    rng:
        ``numpy.random.Generator`` or an int seed; required unless the test is exact.
    exact:
        Enumerate all ``C(n+m, n)`` splits (the observed one included). Default: exact when there
        are at most 5,000 splits.

    Returns a :class:`PermutationResult`; for the exact test ``p = #{T >= T_obs} / C(n+m, n)``.
    """
    a, b = _as_samples(x, "x"), _as_samples(y, "y")
    if not callable(statistic):
        raise TypeError(f"statistic must be a callable (x, y) -> float, got {type(statistic).__name__}")
    if a.ndim != b.ndim or a.shape[1:] != b.shape[1:]:
        raise ValueError(f"x and y must have matching shapes (n, ...) and (m, ...), got {a.shape} and {b.shape}")
    n, m = len(a), len(b)
    pooled = np.concatenate([a, b])  # (n + m, ...)
    n_splits = math.comb(n + m, n)
    if exact is None:
        exact = n_splits <= 5000
    elif not isinstance(exact, (bool, np.bool_)):
        raise TypeError(f"exact must be True, False or None, got {exact!r}")
    t_obs = _statistic(statistic, a, b)
    if exact:
        if n_splits > 1_000_000:
            raise ValueError(f"exact test would enumerate C({n + m}, {n}) = {n_splits} splits; pass exact=False")
        null = []
        for idx in itertools.combinations(range(n + m), n):
            mask = np.zeros(n + m, dtype=bool)
            mask[list(idx)] = True
            null.append(_statistic(statistic, pooled[mask], pooled[~mask]))
        null_arr = np.array(null)
        p = float(np.mean(null_arr >= t_obs - 1e-12 * max(1.0, abs(t_obs))))
        return PermutationResult(t_obs, p, null_arr, True)
    rng = as_generator(rng, required=True)
    n_permutations = check_positive_int(n_permutations, "n_permutations")
    check_size((n_permutations,), "n_permutations", limit=10**8)
    null_arr = np.empty(n_permutations)
    for i in range(n_permutations):
        perm = rng.permutation(n + m)
        null_arr[i] = _statistic(statistic, pooled[perm[:n]], pooled[perm[n:]])
    ge = int(np.sum(null_arr >= t_obs - 1e-12 * max(1.0, abs(t_obs))))
    return PermutationResult(t_obs, (1 + ge) / (1 + len(null_arr)), null_arr, False)
