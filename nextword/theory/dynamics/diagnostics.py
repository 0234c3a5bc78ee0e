"""§8.1 diagnostics of an attention head and PCA of value trajectories (Figs. 5, 9).

Part of the Part 3 library (:mod:`nextword.theory.dynamics` re-exports every name here). Same
conventions: row vectors, ``alpha (T, T)`` with query ``i`` on row ``i``, ``V (T, d_v)``.

* compatibility ``B = (u_i·v_j)`` and advantage ``A = -(B - E_α[b])`` — which values help which
  queries, and where descent will move attention;
* column usage ``Σ_i α_ij`` — dead or overloaded values;
* value norms ``||v_j||`` — instability.

>>> alpha = np.array([[1.0, 0.0], [0.5, 0.5]])
>>> column_usage(alpha).tolist()
[1.5, 0.5]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nextword._validate import as_float_array, check_flag, check_no_overflow, check_positive_int
from nextword.theory.dynamics.gradients import (
    HeadParams,
    check_targets,
    check_alpha,
    advantage_matrix,
    compatibility_matrix,
    head_forward,
    upstream_gradient,
)

__all__ = ["AttentionDiagnostics", "attention_diagnostics", "column_usage", "value_norms", "PCA", "pca_fit"]


# --------------------------------------------------------------------------------------------
# §8.1 diagnostics
# --------------------------------------------------------------------------------------------
def column_usage(alpha: object) -> np.ndarray:
    """``Σ_i α_ij`` for each key ``j`` (§8.1), shape ``(T,)``; it sums to ``T``."""
    return check_alpha(alpha).sum(axis=0)


def value_norms(V: object) -> np.ndarray:
    """``||v_j||`` (§8.1): ``V (..., T, d_v)`` -> ``(..., T)`` (works on a trajectory too)."""
    V = as_float_array(V, "V", min_ndim=2)
    return np.linalg.norm(V, axis=-1)


@dataclass(frozen=True)
class AttentionDiagnostics:
    """The four §8.1 diagnostics at one point of training.

    ``compatibility (T, T)`` = B, ``advantage (T, T)`` = A (descent sign; §8.1 prints ``-A``),
    ``column_usage (T,)``, ``value_norms (T,)``.
    """

    compatibility: np.ndarray
    advantage: np.ndarray
    column_usage: np.ndarray
    value_norms: np.ndarray


def attention_diagnostics(params: HeadParams, X: object, y: object, *, causal: bool = False) -> AttentionDiagnostics:
    """Compute the §8.1 diagnostics of the head ``params`` on ``(X (T, d_x), y (T,))``."""
    causal = check_flag(causal, "causal")
    f = head_forward(params, X, causal=causal)
    y = check_targets(y, f.X.shape[:-1], params.dims[3], "X")
    U = upstream_gradient(f.probs, y, params.W_O)
    B = compatibility_matrix(U, f.V)
    return AttentionDiagnostics(
        compatibility=B,
        advantage=advantage_matrix(f.alpha, B),
        column_usage=column_usage(f.alpha),
        value_norms=value_norms(f.V),
    )


# --------------------------------------------------------------------------------------------
# PCA of value trajectories (Figs. 5, 9)
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PCA:
    """Principal axes of a point cloud: ``mean (d,)``, ``components (k, d)`` (orthonormal rows,
    sign fixed so the largest-magnitude loading of each is positive), ``explained_variance_ratio
    (k,)``."""

    mean: np.ndarray
    components: np.ndarray
    explained_variance_ratio: np.ndarray

    def project(self, points: object) -> np.ndarray:
        """``(points - mean) components^T``: ``(..., d)`` -> ``(..., k)``."""
        P = as_float_array(points, "points", min_ndim=1)
        if P.shape[-1] != self.mean.shape[0]:
            raise ValueError(f"points must have last dimension d = {self.mean.shape[0]}, got {P.shape}")
        return (P - self.mean) @ self.components.T


def pca_fit(points: object, n_components: int = 2) -> PCA:
    """PCA by SVD of the centred data: ``points (..., d)`` (all leading axes are samples).

    A value trajectory ``(steps, T, d_v)`` is fitted as ``steps * T`` points, so every ``v_j`` at
    every step lives in the same 2-D frame (Figs. 5, 9).

    >>> pca = pca_fit(np.array([[0., 0.], [2., 0.], [4., 0.]]), 1)
    >>> pca.components.tolist(), pca.explained_variance_ratio.tolist()
    ([[1.0, 0.0]], [1.0])
    """
    P = as_float_array(points, "points", min_ndim=2)
    d = P.shape[-1]
    if d == 0 or P.size == 0:
        raise ValueError(f"points must hold at least one point of width d >= 1, got shape {P.shape}")
    flat = P.reshape(-1, d)  # (n_points, d)
    k = check_positive_int(n_components, "n_components")
    if k > min(flat.shape):
        raise ValueError(f"n_components must be <= min(n_points, d) = {min(flat.shape)}, got {k}")
    mean = check_no_overflow(flat.mean(axis=0), "the mean of points", masked=False)  # (d,)
    _, s, Vt = np.linalg.svd(flat - mean, full_matrices=False)
    comps = Vt[:k]  # (k, d)
    signs = np.sign(comps[np.arange(k), np.argmax(np.abs(comps), axis=1)])
    comps = comps * np.where(signs == 0, 1.0, signs)[:, None]
    var = s**2
    total = check_no_overflow(var.sum(), "the total variance of points", masked=False)
    ratio = var[:k] / total if total > 0 else np.zeros(k)
    return PCA(mean=mean, components=comps, explained_variance_ratio=ratio)
