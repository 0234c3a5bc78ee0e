"""The margin penalty's token path as it was before the prefix-count rewrite (issue 49), frozen.

Kept only as the reference of ``test_prior.py::test_new_token_path_matches_frozen_reference``: the
attention rows ``α_ts`` for every query (a (B, P, T) softmax over the past), their mass per
vocabulary item (``vocab_masses``), each position's support gathered from ``G``, one LAPACK LU and
inverse per chunk, and the closed-form gradients of the custom Function. Not used by the library.
"""

from __future__ import annotations

import torch

from nextword.torch.barrier.prior import attention_rows, vocab_masses


def _chunks_by_support(beta, chunk):
    r = (beta > 0).sum(1)
    order = torch.argsort(r, stable=True)
    for start in range(0, order.numel(), chunk):
        rows = order[start : start + chunk]
        yield rows, int(r[rows[-1]])


def _compact(beta, vids, G, rows, rmax):
    b = beta[rows]
    key = (b <= 0).to(torch.int8)
    order = torch.argsort(key, dim=1, stable=True)[:, :rmax]
    bc = torch.gather(b, 1, order)
    ids = torch.gather(vids[rows], 1, order)
    Gc = G[ids[:, :, None], ids[:, None, :]]
    return bc, ids, Gc, order, bc > 0


def _chunk_logabsdet(bc, Gc, need_inverse):
    n, r = bc.shape
    u = torch.einsum("ni,nij->nj", bc, Gc)
    M = bc[:, :, None] * (Gc - u[:, None, :])
    A = torch.eye(r, dtype=bc.dtype, device=bc.device) - M
    LU, piv, _ = torch.linalg.lu_factor_ex(A)
    logabs = LU.diagonal(dim1=-2, dim2=-1).abs().log().sum(-1)
    Ainv = None
    if need_inverse:
        P, _, _ = torch.lu_unpack(LU, piv, unpack_data=False)
        X = torch.linalg.solve_triangular(LU, P.mT, upper=False, unitriangular=True)
        Ainv = torch.linalg.solve_triangular(LU, X, upper=True)
    return logabs, u, Ainv


class _SylvesterMargin(torch.autograd.Function):
    @staticmethod
    def forward(ctx, beta, vids, G, chunk):
        N, K = beta.shape
        V = G.shape[0]
        need = ctx.needs_input_grad[0] or ctx.needs_input_grad[2]
        total = beta.new_zeros(())
        g_beta = torch.zeros_like(beta) if need else None
        g_G = torch.zeros(V * V, dtype=G.dtype, device=G.device) if need else None
        for rows, rmax in _chunks_by_support(beta, chunk):
            if rmax == 0:
                continue
            bc, ids, Gc, order, mask = _compact(beta, vids, G, rows, rmax)
            logabs, u, Ainv = _chunk_logabsdet(bc, Gc, need)
            total = total - logabs.sum()
            if need:
                Z = Ainv.transpose(1, 2)
                w = Ainv @ bc[:, :, None]
                gb = (Z * Gc).sum(-1) - (Z @ u[:, :, None])[..., 0] - (Gc @ w)[..., 0]
                gb = gb * mask
                g_beta[rows] = torch.zeros_like(beta[rows]).scatter(1, order, gb)
                gG = bc[:, :, None] * (Z - w.transpose(1, 2))
                flat = ids[:, :, None] * V + ids[:, None, :]
                g_G.index_add_(0, flat.reshape(-1), gG.reshape(-1))
        if need:
            ctx.save_for_backward(g_beta / N, g_G.view(V, V) / N)
        return total / N

    @staticmethod
    def backward(ctx, grad_out):
        g_beta, g_G = ctx.saved_tensors
        return grad_out * g_beta, None, grad_out * g_G, None


def margin_loss_tokens_reference(tokens, embedding, W, *, positions=None, chunk=1024):
    """The pre-rewrite ``margin_loss_tokens(..., method="sylvester")``: same signature, same value."""
    x = embedding[tokens]
    alpha = attention_rows(x, W, positions)
    G = embedding @ W.T @ embedding.T
    beta, vids = vocab_masses(tokens, alpha)
    P = beta.shape[1]
    vids_n = vids[:, None, :].expand(-1, P, -1).reshape(-1, vids.shape[1])
    return _SylvesterMargin.apply(beta.reshape(-1, beta.shape[-1]), vids_n, G, chunk)
