"""Attention, heads and MoE read as an SVFlow (Liao, §4.2–4.4), and the per-head metrics of the
prefix-shuffling experiment (§6, App. C.2).

* :func:`vmf_attention_params` — ``kappa_z mu_z = W_q W_k^T k_z`` (§4.2);
* :func:`vmf_attention_log_posterior` — Eq. (19): softmax attention weights as the posterior of
  *unnormalised* vMF components (``normalised=True`` adds ``log C_d(kappa_z)``, the proper
  vMF-mixture posterior, to show what the identification leaves out);
* :func:`head_output` — Eqs. (4)/(20): a head's output = posterior-weighted conditional scores;
* :func:`multihead_as_expectation` — Eq. (21) with a head distribution ``q(h|x)``;
* :func:`load_balancing_loss` — Eq. (22) for a router's gate probabilities;
* :func:`prefix_shuffle`, :func:`prefix_shuffle_rates`, :func:`shuffle_rate_bins` — App. C.2.2;
* :func:`head_svflow_metrics` — App. C.2.3: ``-log p_t`` (nats/dim), ``KL(q||p)``, ``KL(q||U)``,
  ``KL(p||U)`` for one head, with ``p(x|z)`` the vMF whose natural parameter is the head's
  output vector of token ``z``.

Conventions: row vectors as in Chapter 6 — a query is ``x W_q`` with ``W_q (d, d')``, so the
paper's column-vector ``k^T (W_k W_q^T) x`` is ``(x W_q) . (k W_k)``. The paper's Eq. (5) has no
``1/sqrt(d')``; fold it into ``W_q`` when comparing with scaled dot-product attention.

Worked example (one head, two keys): the attention weights equal the vMF posterior::

    >>> import numpy as np
    >>> from nextword.attention.core import softmax
    >>> W = np.eye(2); keys = np.array([[1.0, 0.0], [0.0, 2.0]]); x = np.array([0.6, 0.8])
    >>> kappa, mu = vmf_attention_params(W, W, keys)
    >>> q = np.exp(vmf_attention_log_posterior(x, kappa, mu))
    >>> bool(np.allclose(q, softmax(keys @ x)))
    True
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from nextword._validate import (
    as_array,
    as_log_probs,
    as_float_array,
    as_index_array,
    check_broadcast,
    check_finite_scalar,
    check_flag,
    check_no_overflow,
    check_positive_int,
)
from nextword.attention.core import log_softmax
from nextword.theory.svflow.flow import categorical_kl, entropy
from nextword.theory.svflow.sphere import vmf_log_normalizer

__all__ = [
    "vmf_attention_params",
    "vmf_attention_log_posterior",
    "head_output",
    "multihead_as_expectation",
    "load_balancing_loss",
    "prefix_shuffle",
    "prefix_shuffle_rates",
    "shuffle_rate_bins",
    "RATE_BIN_EDGES",
    "head_svflow_metrics",
    "svflow_metrics_from_loglik",
]

RATE_BIN_EDGES = (0.0, 0.25, 0.5, 0.75, 1.0)


def _mat(w: object, name: str, d: int, of: str) -> np.ndarray:
    """A weight matrix ``(d, d')`` whose ``d`` is the width of the argument ``of``."""
    w = as_float_array(w, name, ndim=2).astype(np.float64)
    if w.shape[0] != d:
        raise ValueError(f"{name} must have shape (d, d') with d = {d} (the width of {of}), got {w.shape}")
    return w


def _mask(mask: object) -> np.ndarray:
    """``mask`` (True or 1 = key allowed) as a bool array; strings, objects and numbers other than 0/1 are refused."""
    m = as_array(mask, "mask")
    if m.dtype.kind not in "biuf":
        raise TypeError(f"mask must be a boolean array (True = key allowed), got dtype {m.dtype}")
    if m.dtype.kind != "b" and not np.isin(m, (0, 1)).all():
        raise ValueError("mask must hold True/False or 0/1 (True = key allowed), got other values")
    return m.astype(bool)


def vmf_attention_params(W_q: object, W_k: object, keys: object) -> tuple[np.ndarray, np.ndarray]:
    """Natural parameters ``a_z = kappa_z mu_z = W_q W_k^T k_z`` of the key components (§4.2).

    Shapes: ``W_q, W_k (d, d')``, ``keys (..., Z, d)`` -> ``kappa (..., Z)``, ``mu (..., Z, d)``
    (unit rows; a zero ``a_z`` gets ``kappa = 0`` and an arbitrary unit ``mu``).
    """
    keys = as_float_array(keys, "keys", min_ndim=2).astype(np.float64)
    d = keys.shape[-1]
    W_q, W_k = _mat(W_q, "W_q", d, "keys"), _mat(W_k, "W_k", d, "keys")
    if W_q.shape != W_k.shape:
        raise ValueError(f"W_q and W_k must have the same shape, got {W_q.shape} and {W_k.shape}")
    a = (keys @ W_k) @ W_q.T  # (..., Z, d') -> (..., Z, d): row form of W_q W_k^T k_z
    kappa = check_no_overflow(np.linalg.norm(a, axis=-1), "the concentrations ||W_q W_k^T k_z|| of keys", masked=False)
    e1 = np.zeros(d)
    e1[0] = 1.0
    mu = np.where(kappa[..., None] > 0, a / np.where(kappa > 0, kappa, 1.0)[..., None], e1)
    return kappa, mu


def vmf_attention_log_posterior(
    x_q: object, kappa: object, mu: object, *, normalised: bool = False, mask: object = None
) -> np.ndarray:
    """Eq. (19): ``log q(z|x_q) = log softmax_z (kappa_z mu_z . x_q [+ log C_d(kappa_z)])``.

    With ``normalised=False`` (the paper's unnormalised vMF ``q~``) this *is* softmax attention.
    With ``normalised=True`` each component is a proper vMF density; the extra ``log C_d(kappa_z)``
    shifts the weights unless all ``kappa_z`` are equal. ``mask (..., Z)`` bool, True = allowed.
    Shapes: ``x_q (..., d)``, ``kappa (..., Z)``, ``mu (..., Z, d)`` -> ``(..., Z)``.
    """
    normalised = check_flag(normalised, "normalised")
    x = as_float_array(x_q, "x_q", min_ndim=1).astype(np.float64)
    kappa = as_float_array(kappa, "kappa", min_ndim=1).astype(np.float64)
    if np.any(kappa < 0):  # a concentration, normalised or not (the vMF kernel needs kappa >= 0)
        raise ValueError("kappa must be >= 0 (a concentration)")
    mu = as_float_array(mu, "mu", min_ndim=2).astype(np.float64)
    if mu.shape[-1] != x.shape[-1] or mu.shape[-2] != kappa.shape[-1]:
        raise ValueError(f"mu must be (..., Z, d) with Z={kappa.shape[-1]}, d={x.shape[-1]}, got {mu.shape}")
    check_broadcast(**{"x_q[..., 0]": x[..., 0], "kappa[..., 0]": kappa[..., 0], "mu[..., 0, 0]": mu[..., 0, 0]})
    logits = kappa * np.einsum("...zd,...d->...z", mu, x)
    if normalised:
        logits = logits + vmf_log_normalizer(kappa, x.shape[-1])
    if mask is not None:
        m = _mask(mask)
        check_broadcast(mask=m, **{"the logits (..., Z) of x_q, kappa and mu": logits})
        logits = np.where(m, logits, -np.inf)
    return log_softmax(logits, axis=-1)


def head_output(
    x_q: object, keys: object, values: object, W_q: object, W_k: object, W_v: object, W_o: object
) -> tuple[np.ndarray, np.ndarray]:
    """One head, Eqs. (4)–(5) / (20): ``sum_z q(z|x_q) (W_o W_v^T) v_z``.

    Shapes: ``x_q (..., d)``, ``keys, values (..., Z, d)``, all ``W (d, d')`` ->
    ``(q (..., Z), out (..., d))``. Returns the weights and the output.
    """
    x = as_float_array(x_q, "x_q", min_ndim=1).astype(np.float64)
    values = as_float_array(values, "values", min_ndim=2).astype(np.float64)
    d = x.shape[-1]
    kappa, mu = vmf_attention_params(W_q, W_k, keys)  # (..., Z), (..., Z, d_keys)
    if mu.shape[-1] != d:
        raise ValueError(f"x_q (..., d) and keys (..., Z, d) must share d, got x_q {x.shape} and keys {mu.shape}")
    if values.shape[-2:] != mu.shape[-2:]:
        raise ValueError(f"values must have shape (..., Z, d) = (..., {mu.shape[-2]}, {d}) as keys, got {values.shape}")
    check_broadcast(
        **{"x_q[..., 0]": x[..., 0], "keys[..., 0, 0]": mu[..., 0, 0], "values[..., 0, 0]": values[..., 0, 0]}
    )
    q = np.exp(vmf_attention_log_posterior(x, kappa, mu))
    scores = (values @ _mat(W_v, "W_v", d, "x_q")) @ _mat(W_o, "W_o", d, "x_q").T  # (..., Z, d): kappa'_z mu'_z
    return q, np.einsum("...z,...zd->...d", q, scores)


def multihead_as_expectation(
    x_q: object, keys: object, values: object, heads: list[tuple], head_weights: object | None = None
) -> np.ndarray:
    """Eq. (21) as written: ``E_{q(h|x) q(z|x,h)}[kappa'_{z,h} mu'_{z,h}] = sum_h q(h|x) head_h(x)``.

    ``heads`` is a list of ``(W_q, W_k, W_v, W_o)``; ``head_weights (..., H)`` defaults to the uniform
    ``q(h|x) = 1/H``. Note: Eq. (4) *sums* the heads, so with uniform weights this expectation is
    ``f_Attn / H``; the conditional scores must carry a factor ``H`` for Eq. (21) to equal Eq. (4).
    Shapes: ``x_q (..., d)`` -> ``(..., d)``.
    """
    if isinstance(heads, (str, bytes, np.ndarray)) or not isinstance(heads, (list, tuple)):
        raise TypeError(f"heads must be a list of (W_q, W_k, W_v, W_o) tuples, got {type(heads).__name__}")
    for i, h in enumerate(heads):
        if not isinstance(h, (list, tuple)) or len(h) != 4:
            raise TypeError(f"heads[{i}] must be a (W_q, W_k, W_v, W_o) tuple, got {type(h).__name__}")
    H = len(heads)
    if H == 0:
        raise ValueError("heads must contain at least one (W_q, W_k, W_v, W_o) tuple")
    outs = np.stack([head_output(x_q, keys, values, *h)[1] for h in heads], axis=-2)  # (..., H, d)
    w = np.full(H, 1.0 / H) if head_weights is None else as_float_array(head_weights, "head_weights")
    if w.ndim == 0 or w.shape[-1] != H:
        raise ValueError(f"head_weights must have last axis H={H}, got {w.shape}")
    return np.einsum("...h,...hd->...d", w, outs)


def load_balancing_loss(gates: object) -> tuple[float, np.ndarray, np.ndarray]:
    """Eq. (22): ``J_bal = sum_z f_z P_z`` with ``f_z`` the fraction of inputs routed (argmax) to
    expert ``z`` and ``P_z`` the mean gate probability.

    Shapes: ``gates (N, E)`` rows summing to 1 -> ``(J_bal, f (E,), P (E,))``. Ties in the argmax go
    to the lowest index (numpy's convention).

    >>> J, f, P = load_balancing_loss(np.array([[0.9, 0.1], [0.2, 0.8]]))
    >>> round(J, 6)
    0.5
    """
    g = as_float_array(gates, "gates", ndim=2).astype(np.float64)
    if np.any(g < 0) or not np.allclose(g.sum(axis=1), 1.0, atol=1e-8):
        raise ValueError("gates must be probabilities: non-negative rows that sum to 1")
    E = g.shape[1]
    f = np.bincount(np.argmax(g, axis=1), minlength=E) / g.shape[0]
    P = g.mean(axis=0)
    return float(f @ P), f, P


# --------------------------------------------------------------------------------------------
# prefix shuffling (App. C.2.2)
# --------------------------------------------------------------------------------------------
def prefix_shuffle(tokens: object, p: float, rng: np.random.Generator) -> np.ndarray:
    """Randomly permute the first ``floor(p N)`` tokens of a sequence; the suffix is kept.

    Shapes: ``tokens (N,)`` ints -> ``(N,)``. ``p`` in ``[0, 1]``.
    """
    check_finite_scalar(p, "p")
    if not isinstance(rng, np.random.Generator):
        raise TypeError("rng must be a numpy.random.Generator")
    if not (0.0 <= p <= 1.0):
        raise ValueError(f"p must lie in [0, 1], got {p}")
    t = as_index_array(tokens, "tokens")
    if t.ndim != 1:
        raise ValueError(f"tokens must be 1-D (N,), got shape {t.shape}")
    k = int(np.floor(p * t.shape[0]))
    out = t.copy()
    out[:k] = t[:k][rng.permutation(k)]
    return out


def prefix_shuffle_rates(N: int, p: float) -> tuple[np.ndarray, np.ndarray]:
    """``r_n = min(1, floor(pN)/n)`` for positions ``n = 1..N`` and the mask ``n > floor(pN)`` of
    tokens kept for analysis (App. C.2.2). Returns ``(r (N,), keep (N,) bool)``.

    The text writes ``pN``; with ``floor(pN)`` shuffled tokens the fraction of a token's prefix
    that was shuffled is ``floor(pN)/n``, which is what is used here.
    """
    check_finite_scalar(p, "p")
    N = check_positive_int(N, "N")
    if not (0.0 <= p <= 1.0):
        raise ValueError(f"p must lie in [0, 1], got {p}")
    k = int(np.floor(p * N))
    n = np.arange(1, N + 1)
    return np.minimum(1.0, k / n), n > k


def shuffle_rate_bins(r: object) -> np.ndarray:
    """Bin index 0..3 for ``r`` in ``(0, .25], (.25, .5], (.5, .75], (.75, 1)``; -1 for ``r = 0`` (baseline)
    or ``r = 1`` (fully shuffled, excluded). Shapes: ``(...) -> (...)`` ints."""
    r = as_float_array(r, "r")
    idx = np.searchsorted(np.asarray(RATE_BIN_EDGES[1:-1]), r, side="left")  # (0,.25] -> 0, ...
    return np.where((r <= 0) | (r >= 1), -1, idx).astype(np.int64)


# --------------------------------------------------------------------------------------------
# per-head SVFlow metrics (App. C.2.3)
# --------------------------------------------------------------------------------------------
def head_svflow_metrics(x: object, attn: object, out_vectors: object, mask: object = None) -> dict[str, np.ndarray]:
    """SVFlow metrics of one head at one query state (App. C.2.3).

    ``x (..., d)`` is the query state on the unit sphere; ``attn (..., Z)`` the head's attention
    weights (the variational posterior ``q``); ``out_vectors (..., Z, d)`` the head's per-token
    output vectors ``(W_o W_v^T) v_z = kappa'_z mu'_z`` (natural parameters of ``p(x|z)``, §4.2).
    ``mask (..., Z)`` (True = key allowed, e.g. causal) defaults to ``attn > 0``.

    Returns a dict of arrays of shape ``(...)``: ``neg_log_p_per_dim`` (``-log p_t(x)/d`` with
    ``p_t(x) = mean_z p_vMF(x|z)``), ``elbo``, ``kl_q_p``, ``kl_q_u``, ``kl_p_u`` (nats), and
    ``kappa_mean`` (the mean ``kappa'_z`` over allowed keys). See :func:`svflow_metrics_from_loglik`
    for the batched form used on whole sequences.
    """
    x = as_float_array(x, "x", min_ndim=1).astype(np.float64)
    q = as_float_array(attn, "attn", min_ndim=1).astype(np.float64)
    o = as_float_array(out_vectors, "out_vectors", min_ndim=2).astype(np.float64)
    d = x.shape[-1]
    if o.shape[-1] != d or o.shape[-2] != q.shape[-1]:
        raise ValueError(f"out_vectors must be (..., Z, d) with Z={q.shape[-1]}, d={d}, got {o.shape}")
    kappa = np.linalg.norm(o, axis=-1)  # (..., Z)
    log_lik = vmf_log_normalizer(kappa, d) + np.einsum("...zd,...d->...z", o, x)
    return svflow_metrics_from_loglik(log_lik, q, d, kappa=kappa, mask=mask)


def svflow_metrics_from_loglik(
    log_lik: object, attn: object, d: int, *, kappa: object = None, mask: object = None
) -> dict[str, np.ndarray]:
    """The metrics of :func:`head_svflow_metrics` from ``log p(x|z)`` directly.

    ``log_lik (..., Z)`` = ``log C_d(kappa'_z) + kappa'_z mu'_z . x`` (compute it with one matmul for
    all queries of a sequence), ``attn (..., Z)`` = ``q(z|x)``, ``d`` = the sphere's dimension (for
    the per-dimension unit), optional ``kappa (..., Z)`` for ``kappa_mean``, ``mask (..., Z)``.
    """
    q = as_float_array(attn, "attn", min_ndim=1).astype(np.float64)
    if (q < 0).any():
        raise ValueError("attn must be attention weights q(z|x) >= 0, got a negative entry")
    log_lik = as_log_probs(log_lik, "log_lik", prob=False)  # finite or -inf
    d = check_positive_int(d, "d")
    try:
        shape = np.broadcast_shapes(q.shape, log_lik.shape)
    except ValueError:
        raise ValueError(
            f"log_lik (..., Z) and attn (..., Z) must broadcast, got {log_lik.shape} and {q.shape}"
        ) from None
    if mask is None:
        m = q > 0
    else:
        m = _mask(mask)
        check_broadcast(mask=m, **{"log_lik and attn": np.empty(shape)})
    m = np.broadcast_to(m, shape)
    log_lik = np.where(m, log_lik, -np.inf)
    n_allowed = m.sum(axis=-1)
    log_px = logsumexp(log_lik, axis=-1) - np.log(n_allowed)  # uniform prior over allowed keys
    log_p = log_softmax(log_lik, axis=-1)
    with np.errstate(divide="ignore"):
        log_q = np.where(m, np.log(q), -np.inf)
    kl_qp = categorical_kl(log_q, log_p)
    out = {
        "neg_log_p_per_dim": -log_px / d,
        "elbo": log_px - kl_qp,
        "kl_q_p": kl_qp,
        "kl_q_u": np.log(n_allowed) - entropy(log_q),
        "kl_p_u": np.log(n_allowed) - entropy(log_p),
    }
    if kappa is not None:
        k = as_float_array(kappa, "kappa").astype(np.float64)
        try:
            k = np.broadcast_to(k, m.shape)
        except ValueError:
            raise ValueError(
                f"kappa must broadcast to {m.shape}, the shape of log_lik, attn and mask, got {k.shape}"
            ) from None
        out["kappa_mean"] = np.sum(np.where(m, k, 0.0), axis=-1) / n_allowed
    return out
