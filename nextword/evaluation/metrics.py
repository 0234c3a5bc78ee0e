"""Evaluation of language models (formulation paper, Section 8).

§8.1 measures a model by a divergence ``D`` between the true conditional law of
responses and the model's, Eq. (8.3), averaged over prompts, Eq. (8.4). This
module implements the concrete choices the section names, plus two common
summaries it does not define:

* KL route, Example 8.1: the empirical **cross-entropy** (negative log-likelihood
  per token), **bits per token** and **perplexity**, from the model's
  log-probabilities of observed tokens.
* Sample-based divergences, Example 8.2: the **energy distance** and the
  **maximum mean discrepancy** (Gaussian kernel), each with the unbiased
  (U-statistic) and biased (V-statistic) estimator.
* Scoring rules (§8.1 and its footnote 6): the **CRPS** of a 1-D predictive
  distribution against an observation, from a sample or in closed form for a
  Gaussian.
* Retrieval (end of §8.1): **precision, recall, F1** from true/false positives
  and false negatives against a ground-truth set.
* Not in §8 (standard definitions, cited where used): **expected calibration
  error** with equal-width bins (Guo et al., 2017) and **Spearman rank
  correlation** with its p-value (via ``scipy.stats.spearmanr``).

Conventions: natural logarithms (nats) unless a name says bits; sample sets are
arrays ``(n,)`` (1-D) or ``(n, d)``; all computations in float64.

Worked example::

    >>> round(perplexity(np.log([0.5, 0.25])), 10)      # geometric-mean probability 1/sqrt(8)
    2.8284271247
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from nextword._validate import as_float_array, check_flag, check_positive_int, check_real, check_size

__all__ = [
    "token_log_probs",
    "cross_entropy",
    "bits_per_token",
    "perplexity",
    "energy_distance",
    "mmd_squared",
    "median_heuristic_bandwidth",
    "crps_sample",
    "crps_gaussian",
    "RetrievalScores",
    "precision_recall_f1",
    "CalibrationBins",
    "calibration_bins",
    "expected_calibration_error",
    "SpearmanResult",
    "spearman",
]


# ----------------------------------------------------------------------- validation
def _finite_array(x: ArrayLike, name: str, *, min_size: int = 1) -> NDArray[np.float64]:
    a = as_float_array(x, name, finite=False).astype(np.float64, copy=False)
    if a.size < min_size:
        raise ValueError(f"{name} must contain at least {min_size} value(s), got shape {a.shape}")
    if not np.isfinite(a).all():
        raise ValueError(f"{name} must be finite (no NaN/inf)")
    return a


def _samples(x: ArrayLike, name: str, min_n: int) -> NDArray[np.float64]:
    """``(n,)`` or ``(n, d)`` -> ``(n, d)`` float64, finite, ``n >= min_n``."""
    a = as_float_array(x, name, finite=False).astype(np.float64, copy=False)
    if a.ndim == 1:
        a = a[:, None]  # (n,) -> (n, 1)
    if a.ndim != 2:
        raise ValueError(f"{name} must have shape (n,) or (n, d), got {a.shape}")
    if a.shape[0] < min_n:
        raise ValueError(f"{name} needs at least {min_n} samples, got {a.shape[0]}")
    if not np.isfinite(a).all():
        raise ValueError(f"{name} must be finite (no NaN/inf)")
    return a


def _pair(x: ArrayLike, y: ArrayLike, min_n: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    a, b = _samples(x, "x", min_n), _samples(y, "y", min_n)
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"x and y must have the same dimension d, got {a.shape[1]} and {b.shape[1]}")
    return a, b


_EXACT_DIFF_LIMIT = 2**24  # n * m * d entries below which differences are formed explicitly


def _sq_dists(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Squared Euclidean distances ``(n, d), (m, d) -> (n, m)``.

    Exact differences when the ``(n, m, d)`` array is small; otherwise the
    ``|a|^2 + |b|^2 - 2 a.b`` expansion (faster, ~1e-10 relative error), clipped at 0.
    """
    if a.shape[0] * b.shape[0] * a.shape[1] <= _EXACT_DIFF_LIMIT:
        diff = a[:, None, :] - b[None, :, :]  # (n, m, d)
        return np.einsum("nmd,nmd->nm", diff, diff)
    d2 = np.sum(a**2, 1)[:, None] + np.sum(b**2, 1)[None, :] - 2.0 * a @ b.T  # (n, m)
    return np.maximum(d2, 0.0)


_RESCALE_ABOVE = 1e100  # beyond this magnitude squares and sums of samples can overflow float64


def _rescale(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """``a / s, b / s, s`` with ``s`` a power of two near the largest magnitude when that is above
    ``1e100`` (exact division; squares and pair sums of samples near ``1e308`` then stay finite),
    else ``s = 1`` and the arrays unchanged."""
    big = max(float(np.max(np.abs(a), initial=0.0)), float(np.max(np.abs(b), initial=0.0)))
    if big <= _RESCALE_ABOVE:
        return a, b, 1.0
    s = float(2.0 ** np.floor(np.log2(big)))
    return a / s, b / s, s


def _unscale(value: float, scale: float, what: str) -> float:
    """``value * scale``; a ``ValueError`` naming ``what`` if that overflows float64."""
    out = value * scale
    if not np.isfinite(out):
        raise ValueError(f"{what} overflows float64 (samples of magnitude ~{scale:.3g}); rescale the samples")
    return out


def _dists(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Euclidean distances ``(n, m)``; exact differences in 1-D (no cancellation)."""
    if a.shape[1] == 1:
        return np.abs(a[:, 0][:, None] - b[:, 0][None, :])  # (n, m)
    return np.sqrt(_sq_dists(a, b))


# ------------------------------------------------------------- Example 8.1: likelihood
def token_log_probs(logits: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """``log q(f_l | f_{1:l-1})`` of the observed tokens: ``(..., T, V), (..., T) -> (..., T)``.

    A stable log-softmax over the last axis of ``logits`` gathered at ``targets``;
    ``-log`` of the result summed over ``l`` is the per-sequence loss of Eq. (4.5).
    """
    z = as_float_array(logits, "logits", finite=False).astype(np.float64, copy=False)
    t = np.asarray(targets)
    if t.dtype.kind in "USObc":  # strings, objects, bools: not token ids
        raise TypeError(f"targets must be integer token ids, got dtype {t.dtype}")
    if z.ndim < 1 or z.shape[:-1] != t.shape:
        raise ValueError(f"logits (..., T, V) and targets (..., T) disagree: {z.shape} vs {t.shape}")
    if t.size and not np.issubdtype(t.dtype, np.integer):
        raise TypeError(f"targets must be integer token ids, got dtype {t.dtype}")
    V = z.shape[-1]
    if t.size and (t.min() < 0 or t.max() >= V):
        raise ValueError(f"targets must lie in [0, {V}), got min {t.min()}, max {t.max()}")
    if np.isnan(z).any() or np.isposinf(z).any():
        raise ValueError("logits must be free of NaN and +inf")
    if V == 0 or np.isneginf(z).all(axis=-1).any():
        raise ValueError(
            "logits (..., T, V) must have V >= 1 and no row where every entry is -inf "
            "(no distribution over the next token)"
        )
    m = np.max(z, axis=-1, keepdims=True)  # (..., T, 1)
    lse = m[..., 0] + np.log(np.sum(np.exp(z - m), axis=-1))  # (..., T)
    return np.take_along_axis(z, t[..., None], axis=-1)[..., 0] - lse  # (..., T)


def _log_probs(log_probs: ArrayLike) -> NDArray[np.float64]:
    a = as_float_array(log_probs, "log_probs", finite=False).astype(np.float64, copy=False)
    if a.size == 0:
        raise ValueError("log_probs must contain at least one token log-probability")
    if np.isnan(a).any():
        raise ValueError("log_probs contains NaN")
    if (a > 1e-12).any():
        raise ValueError(f"log_probs must be <= 0 (they are log-probabilities), max is {a.max()}")
    return np.minimum(a, 0.0)


def cross_entropy(log_probs: ArrayLike) -> float:
    """Empirical cross-entropy in nats per token: ``-mean(log q(f_l | f_{1:l-1}))`` (Example 8.1).

    ``log_probs``: the model's log-probability of each observed token, any shape
    (all entries are averaged). This is ``(4.5) / (number of tokens)``; it differs
    from the expected KL term of Example 8.1 only by the constant entropy of the
    data. A ``-inf`` entry (a token the model deems impossible) gives ``inf``.
    """
    return float(-np.mean(_log_probs(log_probs)))


def bits_per_token(log_probs: ArrayLike) -> float:
    """Cross-entropy in bits per token: ``cross_entropy / ln 2``."""
    return cross_entropy(log_probs) / np.log(2.0)


def perplexity(log_probs: ArrayLike) -> float:
    """``exp(cross_entropy)``: per-token perplexity, the inverse geometric-mean probability.

    Example 8.1 calls the exponentiated negative log-likelihood of a sequence its
    perplexity; we normalise per token (the standard usage), so a uniform model
    over ``V`` tokens has perplexity exactly ``V`` whatever the length. A token of
    probability 0 (log-prob ``-inf``), or a cross-entropy beyond ``log(float max)`` ≈ 709.8,
    gives ``inf``.
    """
    with np.errstate(over="ignore"):
        return float(np.exp(cross_entropy(log_probs)))


# ------------------------------------------------------ Example 8.2: sample divergences
def energy_distance(x: ArrayLike, y: ArrayLike, *, unbiased: bool = True) -> float:
    """Energy distance ``2 E|X - Y| - E|X - X'| - E|Y - Y'|`` from samples (Example 8.2).

    ``x``: ``(n,)`` or ``(n, d)`` samples of one law, ``y``: ``(m,)`` or ``(m, d)`` of
    the other; Euclidean norm. ``unbiased=True`` averages the within-sample terms
    over the ``n(n-1)`` pairs ``i != j`` (U-statistic; may be slightly negative);
    ``unbiased=False`` over all ``n^2`` pairs (V-statistic, always >= 0). In 1-D
    the V-statistic equals ``2 int (F_n - G_m)^2``, i.e. ``scipy.stats.energy_distance``
    squared. This is the squared distance; it is 0 iff the laws agree.
    """
    unbiased = check_flag(unbiased, "unbiased")
    a, b = _pair(x, y, 2 if unbiased else 1)
    a, b, scale = _rescale(a, b)  # the distance is 1-homogeneous: |s x - s y| = s |x - y|
    n, m = len(a), len(b)
    cross = _dists(a, b).mean()
    if unbiased:
        within_x = _dists(a, a).sum() / (n * (n - 1))
        within_y = _dists(b, b).sum() / (m * (m - 1))
    else:
        within_x, within_y = _dists(a, a).mean(), _dists(b, b).mean()
    return _unscale(float(2.0 * cross - within_x - within_y), scale, "energy_distance(x, y)")


def _check_bandwidth(bandwidth: float) -> float:
    return check_real(bandwidth, "bandwidth", lo=0.0, lo_open=True)


def mmd_squared(x: ArrayLike, y: ArrayLike, bandwidth: float, *, unbiased: bool = True) -> float:
    """Squared MMD with the Gaussian kernel ``k(u, v) = exp(-|u - v|^2 / (2 h^2))`` (Example 8.2).

    ``MMD^2 = E k(X, X') + E k(Y, Y') - 2 E k(X, Y)``. ``unbiased=True`` is the
    U-statistic (within-sample sums over ``i != j``; Gretton et al., JMLR 2012);
    ``unbiased=False`` is the V-statistic (all pairs, biased upward, >= 0).
    ``x``: ``(n,)``/``(n, d)``, ``y``: ``(m,)``/``(m, d)``; ``bandwidth`` is ``h > 0``
    (see :func:`median_heuristic_bandwidth`).
    """
    unbiased = check_flag(unbiased, "unbiased")
    h = _check_bandwidth(bandwidth)
    a, b = _pair(x, y, 2 if unbiased else 1)
    n, m = len(a), len(b)
    kxx = np.exp(-_sq_dists(a, a) / (2 * h * h))  # (n, n)
    kyy = np.exp(-_sq_dists(b, b) / (2 * h * h))  # (m, m)
    kxy = np.exp(-_sq_dists(a, b) / (2 * h * h))  # (n, m)
    if unbiased:
        # the diagonal of a Gaussian kernel matrix is exactly 1
        txx = (kxx.sum() - n) / (n * (n - 1))
        tyy = (kyy.sum() - m) / (m * (m - 1))
    else:
        txx, tyy = kxx.mean(), kyy.mean()
    return float(txx + tyy - 2.0 * kxy.mean())


def median_heuristic_bandwidth(x: ArrayLike, y: ArrayLike) -> float:
    """Median of the pairwise distances in the pooled sample (a common choice of ``h``)."""
    a, b = _pair(x, y, 1)
    pooled = np.concatenate([a, b])  # (n + m, d)
    d = _dists(pooled, pooled)[np.triu_indices(len(pooled), k=1)]
    med = float(np.median(d)) if d.size else 0.0
    if med <= 0:
        raise ValueError("median pairwise distance is 0; choose the bandwidth by hand")
    return med


# ------------------------------------------------------------------ scoring rule: CRPS
def crps_sample(samples: ArrayLike, observation: float, *, fair: bool = False) -> float:
    """CRPS of the empirical law of ``samples`` ``(n,)`` at ``observation`` y (§8.1, footnote 6).

    ``CRPS(F, y) = int (F(z) - 1{z >= y})^2 dz = E|X - y| - 1/2 E|X - X'|``
    (footnote 6: the squared L2 distance between ``F`` and the CDF of a Dirac at
    ``y``). With ``fair=False`` ``F`` is the empirical CDF and the formula is exact
    for it (pairs over ``n^2``); ``fair=True`` uses ``n(n-1)`` pairs, the unbiased
    estimator of the CRPS of the law the samples come from. Lower is better; 0 iff
    every sample equals ``y``. Cost ``O(n log n)`` via the sorted-sample identity
    ``sum_{i,j} |x_i - x_j| = 2 sum_i (2i - n - 1) x_(i)``.
    """
    fair = check_flag(fair, "fair")
    x = _finite_array(samples, "samples")
    if x.ndim != 1:
        raise ValueError(f"samples must be 1-D (n,), got shape {x.shape}")
    y_a = _finite_array(observation, "observation")
    if y_a.size != 1:
        raise ValueError(f"observation must be a single number (one observed value), got shape {y_a.shape}")
    y = float(y_a.reshape(()))
    n = x.size
    if fair and n < 2:
        raise ValueError("fair=True needs at least 2 samples")
    x, y_arr, scale = _rescale(x, np.array([y]))  # the CRPS is 1-homogeneous in (samples, observation)
    y = float(y_arr[0])
    xs = np.sort(x)  # (n,)
    i = np.arange(1, n + 1)
    pair_sum = 2.0 * np.sum((2 * i - n - 1) * xs)  # sum over all ordered pairs |x_i - x_j|
    denom = n * (n - 1) if fair else n * n
    return _unscale(float(np.mean(np.abs(x - y)) - 0.5 * pair_sum / denom), scale, "crps_sample(samples, observation)")


def crps_gaussian(mu: ArrayLike, sigma: ArrayLike, observation: ArrayLike) -> NDArray[np.float64] | float:
    """Closed-form CRPS of ``N(mu, sigma^2)`` at ``y`` (Gneiting et al., Mon. Weather Rev. 2005).

    ``sigma * [z (2 Phi(z) - 1) + 2 phi(z) - 1/sqrt(pi)]`` with ``z = (y - mu) / sigma``.
    Arguments broadcast; ``sigma > 0``. Returns a float for scalar input.
    """
    mu_a = _finite_array(mu, "mu")
    s = _finite_array(sigma, "sigma")
    y = _finite_array(observation, "observation")
    if (s <= 0).any():
        raise ValueError("sigma must be > 0")
    try:
        mu_a, s, y = np.broadcast_arrays(mu_a, s, y)
    except ValueError as e:
        raise ValueError(f"mu, sigma, observation do not broadcast: {e}") from None
    z = (y - mu_a) / s
    out = s * (z * (2 * special.ndtr(z) - 1) + 2 * np.exp(-0.5 * z * z) / np.sqrt(2 * np.pi) - 1 / np.sqrt(np.pi))
    return float(out) if out.ndim == 0 else out


# --------------------------------------------------------------- retrieval: P / R / F1
@dataclass(frozen=True)
class RetrievalScores:
    """Counts and scores of a retrieved set against a ground-truth set (§8.1)."""

    precision: float
    recall: float
    f1: float
    true_positives: int
    false_positives: int
    false_negatives: int


def precision_recall_f1(retrieved: Iterable, relevant: Iterable, *, zero_division: float = 0.0) -> RetrievalScores:
    """Precision ``TP/(TP+FP)``, recall ``TP/(TP+FN)`` and ``F1 = 2PR/(P+R)`` (end of §8.1).

    Both arguments are treated as sets of hashable items (duplicates ignored).
    When a ratio has denominator 0 (nothing retrieved, nothing relevant, or
    ``P = R = 0``) it is set to ``zero_division`` (default 0, as in scikit-learn).

    >>> precision_recall_f1({"a", "b", "c"}, {"b", "c", "d", "e"}).f1   # P=2/3, R=1/2
    0.5714285714285715
    """
    for name, items in (("retrieved", retrieved), ("relevant", relevant)):
        if items is None or isinstance(items, (str, bytes)) or not isinstance(items, Iterable):
            raise TypeError(f"{name} must be a collection of hashable items, got {type(items).__name__}")
    try:
        r, g = set(retrieved), set(relevant)
    except TypeError as exc:
        raise TypeError(f"retrieved and relevant must hold hashable items: {exc}") from None
    for name, items in (("retrieved", r), ("relevant", g)):
        if any(x != x for x in items):  # NaN is not equal to itself: it would never count as a hit
            raise ValueError(f"{name} holds NaN, which is not equal to itself and can never match an item")
    zero_division = check_real(zero_division, "zero_division", lo=0.0, hi=1.0)
    tp, fp, fn = len(r & g), len(r - g), len(g - r)
    prec = tp / (tp + fp) if tp + fp else float(zero_division)
    rec = tp / (tp + fn) if tp + fn else float(zero_division)
    f1 = 2 * prec * rec / (prec + rec) if prec + rec else float(zero_division)
    return RetrievalScores(prec, rec, f1, tp, fp, fn)


# ------------------------------------------------------------------------- calibration
@dataclass(frozen=True)
class CalibrationBins:
    """Per-bin statistics of a reliability diagram: ``edges (B+1,)``, the rest ``(B,)``.

    ``confidence``/``accuracy`` are NaN in empty bins (``count == 0``); those bins
    carry weight 0 in the ECE.
    """

    edges: np.ndarray
    count: np.ndarray
    confidence: np.ndarray
    accuracy: np.ndarray


def _calibration_inputs(
    confidences: ArrayLike, correct: ArrayLike, n_bins: int
) -> tuple[NDArray[np.float64], NDArray[np.bool_], int]:
    c = _finite_array(confidences, "confidences")
    if c.ndim != 1:
        raise ValueError(f"confidences must be 1-D (n,), got shape {c.shape}")
    if (c < 0).any() or (c > 1).any():
        raise ValueError("confidences must lie in [0, 1]")
    if correct is None:
        raise TypeError("correct must be a boolean (or 0/1) array of the shape of confidences, got None")
    k = np.asarray(correct)
    if k.shape != c.shape:
        raise ValueError(f"correct must have the shape of confidences {c.shape}, got {k.shape}")
    if k.dtype != bool:
        if not np.isin(k, (0, 1)).all():
            raise ValueError("correct must be boolean (or 0/1)")
        k = k.astype(bool)
    n_bins = check_positive_int(n_bins, "n_bins")
    check_size((n_bins + 1,), "n_bins")
    return c, k, n_bins


def calibration_bins(confidences: ArrayLike, correct: ArrayLike, n_bins: int = 10) -> CalibrationBins:
    """Equal-width bins ``B_b = ((b-1)/B, b/B]`` on ``[0, 1]`` (the first bin also holds 0).

    ``confidences``: ``(n,)`` the probability the model gave its answer;
    ``correct``: ``(n,)`` booleans, whether that answer was right.
    """
    c, k, B = _calibration_inputs(confidences, correct, n_bins)
    edges = np.linspace(0.0, 1.0, B + 1)  # (B + 1,)
    idx = np.clip(np.ceil(c * B).astype(int) - 1, 0, B - 1)  # (n,) right-closed bins
    count = np.bincount(idx, minlength=B)  # (B,)
    with np.errstate(invalid="ignore", divide="ignore"):
        conf = np.bincount(idx, weights=c, minlength=B) / count
        acc = np.bincount(idx, weights=k.astype(float), minlength=B) / count
    return CalibrationBins(edges, count, conf, acc)


def expected_calibration_error(confidences: ArrayLike, correct: ArrayLike, n_bins: int = 10) -> float:
    """ECE ``= sum_b (|B_b| / n) |acc(B_b) - conf(B_b)|`` with equal-width bins (Guo et al. 2017).

    Not defined in the formulation paper; it summarises how far the model's
    stated confidence is from its accuracy. See :func:`calibration_bins`.

    >>> round(expected_calibration_error([0.9, 0.9], [True, True]), 12)   # under-confident by 0.1
    0.1
    """
    bins = calibration_bins(confidences, correct, n_bins)
    n = bins.count.sum()
    nz = bins.count > 0
    return float(np.sum(bins.count[nz] / n * np.abs(bins.accuracy[nz] - bins.confidence[nz])))


# ---------------------------------------------------------------- rank correlation
class SpearmanResult(NamedTuple):
    """Spearman's ``rho`` and the two-sided p-value for ``rho = 0``."""

    rho: float
    p_value: float


def spearman(x: ArrayLike, y: ArrayLike) -> SpearmanResult:
    """Spearman rank correlation of paired samples ``(n,)``, ``(n,)`` with a two-sided p-value.

    ``rho`` is the Pearson correlation of the (average-tie) ranks; the p-value uses
    the t-approximation ``t = rho sqrt((n - 2) / (1 - rho^2))`` with ``n - 2``
    degrees of freedom, as computed by ``scipy.stats.spearmanr``. Needs ``n >= 3``
    and neither input constant (``rho`` is undefined then).
    """
    a = _finite_array(x, "x", min_size=3)
    b = _finite_array(y, "y", min_size=3)
    if a.ndim != 1 or b.shape != a.shape:
        raise ValueError(f"x and y must be 1-D of equal length, got shapes {a.shape} and {b.shape}")
    if np.all(a == a[0]) or np.all(b == b[0]):
        raise ValueError("spearman is undefined when x or y is constant")
    from scipy import stats  # here, not at the top: importing scipy.stats takes about a second

    res = stats.spearmanr(a, b)
    return SpearmanResult(float(res.statistic), float(res.pvalue))
