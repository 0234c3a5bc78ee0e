"""Prefix-shuffling probe of a trained causal LM through the SVFlow lens (Liao, §6, App. C.2) — torch.

The paper reads every attention head of a pre-trained LM as an SVFlow layer: the attention weights
are the variational posterior ``q(z|x)`` over earlier tokens (Eq. 19), and the head's value–output
vector of token ``z``, ``o_z = (W_o W_v^T) v_z``, is the natural parameter ``kappa'_z mu'_z`` of a vMF
likelihood ``p(x|z)`` (Eq. 20). For a query state ``x`` on the unit sphere this gives, per head,
``-log p_t(x)`` (nats/dim), ``KL(q||p)``, ``KL(q||U)`` and ``KL(p||U)`` (App. C.2.3), computed here by
:func:`nextword.theory.svflow.attention.svflow_metrics_from_loglik`.

:func:`probe_tinylm` runs a pre-norm :class:`nextword.torch.models.lm.TinyLM` block by block and returns,
per layer, these metrics averaged over heads, the mean concentration ``kappa'``, and a logit-lens
readout (the residual stream after the layer through the final norm and the unembedding).
:func:`prefix_shuffling_experiment` applies the protocol of App. C.2.2 (shuffle the first
``floor(pN)`` tokens, keep tokens with ``n > floor(pN)``, bin by ``r = floor(pN)/n``) and aggregates
baseline values and changes ``Delta`` per bin.

Choices the paper leaves open (stated in the notebook): the query state ``x`` is the attention
input ``norm1(h)`` rescaled to the unit sphere; values are computed from the same normalised input
(what the head actually uses); RoPE, if any, enters ``q`` through the weights only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from nextword.evaluation import expected_calibration_error
from nextword.theory.svflow.attention import (
    prefix_shuffle,
    prefix_shuffle_rates,
    shuffle_rate_bins,
    svflow_metrics_from_loglik,
)
from nextword.theory.svflow.sphere import vmf_log_normalizer

__all__ = ["METRICS", "ProbeResult", "probe_tinylm", "ShuffleTable", "prefix_shuffling_experiment"]

METRICS = ("neg_log_p_per_dim", "kl_q_p", "kl_q_u", "kl_p_u", "kappa_mean")


@dataclass(frozen=True)
class ProbeResult:
    """``metrics[name]`` has shape ``(L, B, T)`` (head-averaged); ``log_probs (B, T, V)`` final;
    ``lens_log_probs (L, B, T, V)`` logit-lens readouts after each layer."""

    metrics: dict[str, np.ndarray]
    log_probs: np.ndarray
    lens_log_probs: np.ndarray


@torch.no_grad()
def probe_tinylm(model, ids: np.ndarray) -> ProbeResult:
    """Per-layer SVFlow metrics of a pre-norm ``TinyLM`` on ``ids (B, T)`` (see the module doc)."""
    c = model.config
    if not c.pre_norm or not c.causal:
        raise ValueError("probe_tinylm needs a causal pre-norm TinyLM (the residual stream is the flow state)")
    ids_t = torch.as_tensor(np.asarray(ids, dtype=np.int64))
    if ids_t.ndim != 2:
        raise ValueError(f"ids must have shape (B, T), got {tuple(ids_t.shape)}")
    B, T = ids_t.shape
    d, H = c.d_model, c.num_heads
    dh = d // H
    x = model._add_positions(model.tok_emb[ids_t])  # (B, T, d)
    freqs = model.rope_freqs if c.positional == "rope" else None
    causal = np.tril(np.ones((T, T), dtype=bool))  # key z <= query t
    W_U = model.tok_emb.T if model.W_U is None else model.W_U
    metrics = {k: np.zeros((c.num_layers, B, T)) for k in METRICS}
    lens = []
    for layer, blk in enumerate(model.blocks):
        n = blk.norm1(x)  # attention input (B, T, d)
        _, w = blk.attention(n, freqs, None)  # (B, H, T, T) = q(z|x)
        v = (n @ blk.W_qkv[:, 2 * d :]).view(B, T, H, dh).transpose(1, 2)  # (B, H, T, dh)
        W_o = blk.W_o.view(H, dh, d)  # row block h of W_o
        o = torch.einsum("bhzk,hkd->bhzd", v, W_o).double().numpy()  # (B, H, T, d) = kappa' mu'
        xq = torch.nn.functional.normalize(n.double(), dim=-1).numpy()  # (B, T, d) on the unit sphere
        kappa = np.linalg.norm(o, axis=-1)  # (B, H, T)
        log_lik = vmf_log_normalizer(kappa, d)[:, :, None, :] + np.einsum("btd,bhzd->bhtz", xq, o)
        met = svflow_metrics_from_loglik(log_lik, w.double().numpy(), d, kappa=kappa[:, :, None, :], mask=causal)
        for k in METRICS:
            metrics[k][layer] = met[k].mean(axis=1)  # average over heads
        x, _ = blk(x, freqs, None)
        h = model.norm_f(x) if model.norm_f is not None else x
        lens.append(torch.log_softmax((h @ W_U).double(), dim=-1).numpy())
    lens_lp = np.stack(lens)  # (L, B, T, V)
    return ProbeResult(metrics, lens_lp[-1], lens_lp)


@dataclass(frozen=True)
class ShuffleTable:
    """Aggregates of :func:`prefix_shuffling_experiment`, bins ``(0,.25], (.25,.5], (.5,.75], (.75,1)``.

    ``base[name]``, ``pert[name]``: ``(L, 4)`` per-layer means over the binned tokens (baseline run at
    the same positions, perturbed run); ``count (4,)`` tokens per bin; ``logppl_base/pert``,
    ``ece_base/pert`` ``(4,)`` (ECE in %, 15 bins); ``lens_logppl_base/pert`` ``(L, 4)`` logit-lens
    log-perplexities; ``kappa_by_layer (L,)`` baseline mean ``kappa'`` over all analysed tokens;
    ``layer_curves_base/top[name]`` ``(L,)`` for the highest rate ``p`` that leaves tokens to analyse
    (baseline vs perturbed, same positions).
    """

    base: dict[str, np.ndarray]
    pert: dict[str, np.ndarray]
    count: np.ndarray
    logppl_base: np.ndarray
    logppl_pert: np.ndarray
    ece_base: np.ndarray
    ece_pert: np.ndarray
    lens_logppl_base: np.ndarray
    lens_logppl_pert: np.ndarray
    layer_curves_base: dict[str, np.ndarray]
    layer_curves_top: dict[str, np.ndarray]

    def delta(self, name: str) -> np.ndarray:
        return self.pert[name] - self.base[name]


def prefix_shuffling_experiment(
    model, seqs: np.ndarray, ps: tuple[float, ...], rng: np.random.Generator, *, batch: int = 16
) -> ShuffleTable:
    """App. C.2 on ``seqs (M, N)`` token ids with shuffle rates ``ps`` (0 is the baseline, always run).

    The last position of each sequence has no target and is dropped; the remaining positions
    ``n = 1..N-1`` (1-indexed) with ``n > floor(pN)`` are binned by ``r = floor(pN)/n``.
    """
    seqs = np.asarray(seqs, dtype=np.int64)
    M, N = seqs.shape
    ps = tuple(sorted(set(float(p) for p in ps) - {0.0}))
    if not ps:
        raise ValueError("ps must contain at least one rate p > 0")

    def run(data: np.ndarray) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
        mets, lp, lens = [], [], []
        for i in range(0, M, batch):
            res = probe_tinylm(model, data[i : i + batch, :-1])
            mets.append(res.metrics)
            tgt = data[i : i + batch, 1:]  # (b, N-1)
            lp.append(np.take_along_axis(res.log_probs, tgt[..., None], -1)[..., 0])
            lp_conf = res.log_probs
            lens.append(
                (
                    np.take_along_axis(
                        res.lens_log_probs,
                        np.broadcast_to(tgt[None, ..., None], res.lens_log_probs.shape[:-1] + (1,)),
                        -1,
                    )[..., 0],
                    lp_conf.max(-1),
                    lp_conf.argmax(-1) == tgt,
                )
            )
        metrics = {k: np.concatenate([m[k] for m in mets], axis=1) for k in METRICS}  # (L, M, N-1)
        tok_lp = np.concatenate(lp)  # (M, N-1)
        lens_lp = np.concatenate([t[0] for t in lens], axis=1)  # (L, M, N-1)
        conf = np.exp(np.concatenate([t[1] for t in lens]))
        correct = np.concatenate([t[2] for t in lens])
        return metrics, np.stack([tok_lp, conf, correct]), lens_lp

    base_m, base_task, base_lens = run(seqs)
    L = base_m[METRICS[0]].shape[0]
    sums_b = {k: np.zeros((L, 4)) for k in METRICS}
    sums_p = {k: np.zeros((L, 4)) for k in METRICS}
    count = np.zeros(4)
    task_b = [[] for _ in range(4)]
    task_p = [[] for _ in range(4)]
    lens_b, lens_p = np.zeros((L, 4)), np.zeros((L, 4))
    top_curves_b = top_curves_p = None
    for p in ps:
        shuffled = np.stack([prefix_shuffle(s, p, rng) for s in seqs])
        pm, ptask, plens = run(shuffled)
        r, keep = prefix_shuffle_rates(N, p)
        r, keep = r[:-1], keep[:-1]  # positions 1..N-1
        bins = np.where(keep, shuffle_rate_bins(r), -1)
        for b in range(4):
            sel = bins == b
            if not sel.any():
                continue
            count[b] += sel.sum() * M
            for k in METRICS:
                sums_b[k][:, b] += base_m[k][:, :, sel].sum(axis=(1, 2))
                sums_p[k][:, b] += pm[k][:, :, sel].sum(axis=(1, 2))
            lens_b[:, b] -= base_lens[:, :, sel].sum(axis=(1, 2))
            lens_p[:, b] -= plens[:, :, sel].sum(axis=(1, 2))
            task_b[b].append(base_task[:, :, sel].reshape(3, -1))
            task_p[b].append(ptask[:, :, sel].reshape(3, -1))
        if keep.any():  # ps ascend: the last rate with analysed tokens wins
            top_curves_b = {k: base_m[k][:, :, keep].mean(axis=(1, 2)) for k in METRICS}
            top_curves_p = {k: pm[k][:, :, keep].mean(axis=(1, 2)) for k in METRICS}
    if np.any(count == 0):
        raise ValueError(
            f"some shuffle-rate bins are empty (counts {count.tolist()}); use longer sequences or more rates"
        )

    def task(parts: list[list[np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
        logppl, ece = np.zeros(4), np.zeros(4)
        for b in range(4):
            arr = np.concatenate(parts[b], axis=1)  # (3, n_tokens)
            logppl[b] = -arr[0].mean()
            ece[b] = 100 * expected_calibration_error(arr[1], arr[2].astype(bool), n_bins=15)
        return logppl, ece

    lb, eb = task(task_b)
    lp_, ep = task(task_p)
    return ShuffleTable(
        {k: v / count for k, v in sums_b.items()},
        {k: v / count for k, v in sums_p.items()},
        count,
        lb,
        lp_,
        eb,
        ep,
        lens_b / count,
        lens_p / count,
        top_curves_b,
        top_curves_p,
    )
