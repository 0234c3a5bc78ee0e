"""The EmbeddingPrior of §7.1: one strict-causal attention layer on token embeddings and its margin term.

Parameterisation (Theorem 1, Eqs. (14)–(15), row-vector convention of Chapter 6)
--------------------------------------------------------------------------------
Embeddings are rows ``x_t`` of a ``(B, T, d)`` tensor. The prior has one learnable ``d × d`` matrix
``W`` and bilinear logits

    ℓ_ts = x_t W x_sᵀ,   α_ts = softmax_{s<t}(ℓ_ts),   μ_t = Σ_{s<t} α_ts x_s   (values v_s = x_s).

In the paper's column notation ``ℓ_ts = q_tᵀ k_s`` with ``q_t = W_Q x_t``, ``k_s = W_K x_s``, so
``W = W_Qᵀ W_K`` (a query/key factorisation of W is never needed: only the product enters) and the
matrix of Theorem 1 is ``A = W_Kᵀ W_Q = Wᵀ``. The diagonal Jacobian block of the residual map
``e_t = x_t − μ_t`` is ``∂e_t/∂x_t = I_d − Σ_t A = I_d − Σ_t Wᵀ`` (checked against autograd in the
tests), where ``Σ_t = Σ_{s<t} α_ts (x_s − x̄_t)(x_s − x̄_t)ᵀ`` is the attention-weighted covariance
(Eq. (13)). The margin penalty (Eq. (24) without the quadratic term, §7.1) is

    L_margin = mean_{b, t ≥ 1} [ −log |det(I_d − Σ_t Wᵀ)| ].

Three exact evaluation paths
----------------------------
``"direct"``        Σ_t from centred outer products, a d×d determinant per position;
``"second_moment"`` Σ_t = Σ_s α_ts x_s x_sᵀ − x̄_t x̄_tᵀ (Lemma B.2), a d×d determinant per position;
``"sylvester"``     when the prior sees token embeddings ``x_s = E[y_s]`` (E: (|V|, d)),
                    Σ_t = Eᵀ C_t E with C_t = diag β_t − β_t β_tᵀ and β_t[v] = Σ_{s<t, y_s=v} α_ts, so by
                    Sylvester's identity  det(I_d − Eᵀ C_t E Wᵀ) = det(I_|V| − C_t G),  G = E Wᵀ Eᵀ.
                    Rows of C_t G vanish for vocabulary items absent from the prefix, so the |V|×|V|
                    determinant equals the r_t×r_t determinant on the r_t items that *are* present
                    (block-triangular structure); we evaluate that one, batched and bucketed by r_t,
                    with a custom backward that uses (I − M)^{-T} and keeps no per-position matrices.
                    β_t itself comes from prefix counts (:func:`prefix_masses`): the logit x_t W x_sᵀ
                    = G[y_s, y_t] depends on s only through its token, so β_t is one softmax over
                    the items seen so far, never a (T × T) attention matrix.
``"sylvester_dense"`` the literal |V|×|V| form with autograd (a reference for tests).

Position subsampling: ``positions`` (B, k) restricts the mean to k positions per sequence; drawn
uniformly without replacement from {1, …, T−1} (:func:`sample_positions`) it is an unbiased
estimate of the full mean. No stochastic (Hutchinson-type) log-det estimator is offered.

Tiny worked example (d = 1, W = 0.5): for x = (−1, 1, 0) the query x_2 = 0 attends uniformly, so
Σ_2 = Var{−1, 1} = 1 and det(1 − Σ_2 W) = 0.5; Σ_1 = 0 (one past token). The penalty is the mean
of −log 1 and −log 0.5 over t = 1, 2, i.e. log(2)/2 ≈ 0.3466::

    >>> import torch
    >>> W = torch.tensor([[0.5]])
    >>> x = torch.tensor([[[-1.0], [1.0], [0.0]]])
    >>> float(covariances(x, W)[0, 1, 0, 0])
    1.0
    >>> round(float(margin_loss(x, W)), 4)
    0.3466
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

__all__ = [
    "EmbeddingPrior",
    "attention_rows",
    "covariances",
    "margin_loss",
    "margin_loss_tokens",
    "sample_positions",
    "vocab_masses",
    "sylvester_logabsdet",
    "prefix_masses",
    "prior_diagnostics",
    "METHODS",
]

METHODS = ("direct", "second_moment", "sylvester", "sylvester_dense")
_CHUNK = 1024  # positions per batched LU in the Sylvester path on a CPU (memory ≈ CHUNK · r² floats)
_CHUNK_ELEMENTS = 1 << 26  # elsewhere (a GPU): as many positions as fit 2**26 entries of an r×r batch


# --------------------------------------------------------------------------------------- checks
def _check_float_tensor(value: object, name: str, shape: str, ndim: int) -> torch.Tensor:
    """``value`` must be a floating tensor with ``ndim`` axes and finite entries (``shape`` names them)."""
    if not isinstance(value, torch.Tensor) or not value.is_floating_point() or value.ndim != ndim:
        raise TypeError(
            f"{name} must be a floating tensor of shape {shape}, got "
            f"{getattr(value, 'dtype', type(value).__name__)} {tuple(getattr(value, 'shape', ()))}"
        )
    if not bool(torch.isfinite(value.detach()).all()):
        raise ValueError(f"{name} must be finite (it holds NaN or inf)")
    return value


def _check_x(x: torch.Tensor, W: torch.Tensor, x_name: str = "x") -> None:
    _check_float_tensor(x, x_name, "(B, T, d)", 3)
    _check_float_tensor(W, "W", "(d, d)", 2)
    if W.shape != (x.shape[-1], x.shape[-1]):
        raise ValueError(f"W must have shape (d, d) = {(x.shape[-1],) * 2}, got {tuple(W.shape)}")
    if W.dtype != x.dtype:
        raise TypeError(f"W must have the dtype of {x_name} ({x.dtype}), got {W.dtype}")
    if x.shape[0] < 1:
        raise ValueError(f"{x_name} needs B >= 1 sequences, got an empty batch")
    if x.shape[1] < 2:
        raise ValueError(f"{x_name} needs T >= 2 positions (t = 0 has no past), got T={x.shape[1]}")


def _finite_result(value: torch.Tensor, what: str) -> torch.Tensor:
    """``value``, or a ValueError when it is not finite (inputs so large that the logits overflow)."""
    if not bool(torch.isfinite(value.detach()).all()):
        raise ValueError(f"{what} is not finite: x (or embedding) and W are too large (x_t W x_s overflows)")
    return value


def _check_count(value: object, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
    return value


def _check_positions(positions: torch.Tensor | None, B: int, T: int, device) -> torch.Tensor:
    """``None`` → all t in 1..T−1 for every sequence; otherwise validate a (B, k) int64 tensor."""
    if positions is None:
        return torch.arange(1, T, device=device).expand(B, T - 1)
    if not isinstance(positions, torch.Tensor) or positions.dtype != torch.long or positions.ndim != 2:
        raise TypeError("positions must be an int64 tensor of shape (B, k)")
    if positions.shape[0] != B:
        raise ValueError(f"positions must have B={B} rows, got shape {tuple(positions.shape)}")
    if positions.numel() and (int(positions.min()) < 1 or int(positions.max()) > T - 1):
        raise ValueError(f"positions must lie in [1, T-1] = [1, {T - 1}]")
    return positions


def sample_positions(
    B: int, T: int, k: int, generator: torch.Generator | None = None, device: torch.device | str = "cpu"
) -> torch.Tensor:
    """``(B, k)`` positions drawn uniformly without replacement from {1, …, T−1}, sorted per row.

    The mean of any per-position quantity over these positions is an unbiased estimate of its mean
    over all T−1 positions (each position is included with probability k / (T−1)).
    """
    _check_count(B, "B", 1)
    _check_count(T, "T", 2)
    _check_count(k, "k", 1)
    if not 1 <= k <= T - 1:
        raise ValueError(f"k must be in [1, T-1] = [1, {T - 1}], got {k}")
    scores = torch.rand(B, T - 1, generator=generator)  # (B, T-1) on CPU: reproducible
    pos = scores.argsort(dim=1)[:, :k] + 1  # (B, k)
    return pos.sort(dim=1).values.to(device)


# ------------------------------------------------------------------------------ attention rows
def attention_rows(x: torch.Tensor, W: torch.Tensor, positions: torch.Tensor | None = None) -> torch.Tensor:
    """Strict-causal attention weights ``α_ts`` for the query positions ``t`` in ``positions``.

    ``x`` (B, T, d), ``W`` (d, d), ``positions`` (B, P) → ``(B, P, T)``; entries with ``s ≥ t`` are 0
    and each row sums to 1 (every position in 1..T−1 has a non-empty past). Logits ``x_t W x_sᵀ``.
    """
    _check_x(x, W)
    B, T, d = x.shape
    pos = _check_positions(positions, B, T, x.device)  # (B, P)
    q = torch.gather(x, 1, pos[..., None].expand(-1, -1, d))  # (B, P, d) query rows x_t
    logits = _finite_result((q @ W) @ x.transpose(1, 2), "attention_rows' logits")  # (B, P, T)
    past = torch.arange(T, device=x.device)[None, None, :] < pos[..., None]  # (B, P, T): s < t
    logits = logits.masked_fill(~past, float("-inf"))
    return _finite_result(torch.softmax(logits, dim=-1), "attention_rows")


# --------------------------------------------------------------------------- d×d (direct) paths
def covariances(
    x: torch.Tensor, W: torch.Tensor, positions: torch.Tensor | None = None, *, method: str = "direct"
) -> torch.Tensor:
    """Attention-weighted covariances Σ_t (Eq. (13)), ``(B, P, d, d)``.

    ``method="direct"`` centres first (Eq. (13)); ``"second_moment"`` uses Lemma B.2,
    Σ_t = Σ_s α_ts x_s x_sᵀ − x̄_t x̄_tᵀ. Memory: B·P·T·d for "direct", B·P·d² for both outputs.
    """
    alpha = attention_rows(x, W, positions)  # (B, P, T)
    xbar = alpha @ x  # (B, P, d)
    if method == "direct":
        dev = x[:, None, :, :] - xbar[:, :, None, :]  # (B, P, T, d)
        return torch.einsum("bpt,bpti,bptj->bpij", alpha, dev, dev)
    if method == "second_moment":
        second = torch.einsum("bpt,bti,btj->bpij", alpha, x, x)  # (B, P, d, d)
        return second - xbar[..., :, None] * xbar[..., None, :]
    raise ValueError(f"method must be 'direct' or 'second_moment' for covariances, got {method!r}")


def margin_loss(
    x: torch.Tensor, W: torch.Tensor, *, positions: torch.Tensor | None = None, method: str = "direct"
) -> torch.Tensor:
    """Mean over sequences and positions of ``−log|det(I_d − Σ_t Wᵀ)|`` for arbitrary embeddings.

    ``x`` (B, T, d) → scalar. Differentiable by autograd (d×d determinants per position).
    """
    if method not in ("direct", "second_moment"):
        raise ValueError(f"method must be 'direct' or 'second_moment' for margin_loss, got {method!r}")
    sigma = covariances(x, W, positions, method=method)  # (B, P, d, d)
    eye = torch.eye(x.shape[-1], dtype=x.dtype, device=x.device)
    _, logabs = torch.linalg.slogdet(eye - sigma @ W.T)  # (B, P)
    return _finite_result(-logabs.mean(), "margin_loss")


# --------------------------------------------------------------------------- Sylvester path
def vocab_masses(tokens: torch.Tensor, alpha: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention mass per vocabulary item, in a per-sequence local vocabulary.

    ``tokens`` (B, T) int64 and ``alpha`` (B, P, T) → ``(beta, vocab_ids)`` with ``beta`` (B, P, K)
    and ``vocab_ids`` (B, K): ``beta[b, p, k] = Σ_{s: y_s = vocab_ids[b, k]} alpha[b, p, s]``, where K
    is the largest number of distinct tokens in a sequence (shorter lists are padded with a repeat of
    their first id, which then carries zero mass). Differentiable in ``alpha``.
    """
    B, T = tokens.shape
    ys, perm = tokens.sort(dim=1)  # (B, T)
    new = torch.ones_like(ys, dtype=torch.long)
    new[:, 1:] = (ys[:, 1:] != ys[:, :-1]).long()
    new[:, 0] = 0
    rank_sorted = new.cumsum(1)  # (B, T) local id, sorted order
    local = torch.empty_like(tokens).scatter_(1, perm, rank_sorted)  # (B, T) local id per position
    K = int(rank_sorted[:, -1].max()) + 1
    vocab_ids = ys[:, :1].expand(B, K).clone()  # pad with a valid id
    vocab_ids.scatter_(1, rank_sorted, ys)  # (B, K)
    beta = alpha.new_zeros(alpha.shape[0], alpha.shape[1], K)
    beta = beta.scatter_add(2, local[:, None, :].expand(-1, alpha.shape[1], -1), alpha)  # (B, P, K)
    return beta, vocab_ids


def _chunks_by_support(beta: torch.Tensor, chunk: int):
    """Yield (rows, r_max) chunks of positions sorted by support size r = #{k: β_k > 0}."""
    r = (beta > 0).sum(1)  # (N,)
    order = torch.argsort(r, stable=True)
    for start in range(0, order.numel(), chunk):
        rows = order[start : start + chunk]
        yield rows, int(r[rows[-1]])


def _compact(beta: torch.Tensor, vids: torch.Tensor, G: torch.Tensor, rows: torch.Tensor, rmax: int):
    """Gather the support of each position: β_c (n, r), ids (n, r), G_c (n, r, r), mask (n, r)."""
    b = beta[rows]  # (n, K)
    key = (b <= 0).to(torch.int8)  # active first after stable sort
    order = torch.argsort(key, dim=1, stable=True)[:, :rmax]  # (n, r)
    bc = torch.gather(b, 1, order)  # (n, r)
    ids = torch.gather(vids[rows], 1, order)  # (n, r) vocabulary ids
    Gc = G[ids[:, :, None], ids[:, None, :]]  # (n, r, r)
    return bc, ids, Gc, order, bc > 0


def _chunk_logabsdet(bc: torch.Tensor, Gc: torch.Tensor, need_inverse: bool):
    """log|det(I − C G)| on the compact support, C = diag β − ββᵀ; bc (n, r), Gc (n, r, r).

    Returns ``logabs`` (n,), ``Hneg`` (n, r, r) = 1uᵀ − G with uᵀ = βᵀG (so that I − C G =
    I + diag(β) Hneg) and, when ``need_inverse``, ``Z = (I − C G)^{-T}`` (n, r, r). The LU factors
    Aᵀ, which for a row-major A is already the column-major layout LAPACK works in (no copy), and
    Z = (Aᵀ)^{-1} comes from the same factors.
    """
    n, r = bc.shape
    u = (bc[:, None, :] @ Gc)[:, 0]  # (n, r): uᵀ = βᵀ G
    Hneg = u[:, None, :] - Gc  # (n, r, r)
    eye = torch.eye(r, dtype=bc.dtype, device=bc.device)
    A = torch.addcmul(eye, bc[:, :, None], Hneg)  # (n, r, r): I − (diag β − ββᵀ) G
    LU, piv, _ = torch.linalg.lu_factor_ex(A.mT)
    logabs = LU.diagonal(dim1=-2, dim2=-1).abs().log().sum(-1)  # (n,)
    Z = torch.linalg.lu_solve(LU, piv, eye.expand(n, r, r)) if need_inverse else None
    return logabs, Hneg, Z


def prefix_masses(
    tokens: torch.Tensor, G: torch.Tensor, positions: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Attention mass per vocabulary item from prefix counts, without the (P × T) attention rows.

    For token embeddings the logit ``x_t W x_sᵀ = G[y_s, y_t]`` (``G = E Wᵀ Eᵀ``) depends on the key
    ``s`` only through its token, so with ``n_t[k]`` the number of copies of item ``k`` before ``t``

        β_t[k] = Σ_{s<t, y_s=k} α_ts = n_t[k] e^{G[k, y_t]} / Σ_j n_t[j] e^{G[j, y_t]}
               = softmax_k(G[k, y_t] + log n_t[k]),

    O(P·K) per sequence instead of O(P·T·d). Items are numbered per sequence in order of first
    appearance, so the items present before ``t`` are exactly the first ``r_t`` (the support is a
    prefix). ``tokens`` (B, T) int64, ``G`` (|V|, |V|) → ``beta`` (B, P, K) (equal to
    :func:`vocab_masses` up to that renumbering), ``vocab_ids`` (B, K) (padded with the sequence's
    first id), ``G_local`` (B, K, K) ``= G[vocab_ids][:, :, vocab_ids]`` and ``r`` (B, P), the
    number of distinct items before each position. Differentiable in ``G``.
    """
    B, T = tokens.shape
    pos = _check_positions(positions, B, T, tokens.device)  # (B, P)
    ar = torch.arange(T, device=tokens.device)
    ys, perm = tokens.sort(dim=1, stable=True)  # (B, T); equal ids keep position order
    start = torch.ones_like(ys, dtype=torch.bool)
    start[:, 1:] = ys[:, 1:] != ys[:, :-1]
    head = torch.where(start, ar, 0).cummax(1).values  # (B, T) sorted index of each run's start
    first = torch.empty_like(tokens).scatter_(1, perm, perm.gather(1, head))  # (B, T) first position of y_s
    distinct = (first == ar).cumsum(1)  # (B, T) distinct items in y_0..y_s
    local = distinct.gather(1, first) - 1  # (B, T) item number in order of first appearance
    K = int(distinct[:, -1].max())
    vids = tokens[:, :1].expand(B, K).clone()
    vids.scatter_(1, local, tokens)  # (B, K)
    # G_local = G[vids[:, :, None], vids[:, None, :]], by F.embedding on G's entries: indexing's backward adds
    # with atomics across threads (different bits from run to run on two threads), F.embedding's does not
    V = G.shape[-1]
    G_local = torch.nn.functional.embedding(vids[:, :, None] * V + vids[:, None, :], G.reshape(-1, 1))[..., 0]
    onehot = torch.nn.functional.one_hot(local, K).to(G.dtype)  # (B, T, K)
    counts = onehot.cumsum(1) - onehot  # (B, T, K) n_t: copies strictly before t
    n = counts.gather(1, pos[..., None].expand(-1, -1, K))  # (B, P, K)
    query = local.gather(1, pos)  # (B, P) item of y_t
    logits = G_local.transpose(1, 2).gather(1, query[..., None].expand(-1, -1, K))  # (B, P, K): G[k, y_t]
    beta = torch.softmax(logits + n.log(), dim=-1)  # log 0 = −inf: absent items get β = 0
    r = distinct.gather(1, pos - 1)  # (B, P)
    return beta, vids, G_local, r


class _SylvesterMargin(torch.autograd.Function):
    """mean_n −log|det(I − C_n G_n)| with C_n = diag β_n − β_n β_nᵀ on the support {0, …, r_n − 1}.

    Inputs: ``beta`` (N, K) with the support of row n a prefix of length ``r[n]`` (entries beyond it
    are 0), ``G_local`` (B, K, K), ``seq`` (N,) the sequence of each row: G_n = G_local[seq[n]][:r, :r].
    Forward computes the value and, when gradients are needed, the gradients with respect to β
    (N, K) and G_local (B, K, K) in closed form from Z = (I − M)^{-T}:

        ∂/∂M (−log|det(I − M)|) = Z,
        ∂/∂β_i = Σ_j Z_ij G_ij − (Z u)_i − (G Zᵀβ)_i,   u = Gᵀβ,
        ∂/∂G   = (diag β − ββᵀ) Z,

    so backward only rescales two small saved tensors. Entries with β = 0 get zero gradient: they
    are structurally zero (the token is absent from the prefix, or its softmax weight underflowed,
    in which case the softmax backward multiplies by β = 0 anyway). Positions are processed in
    chunks of similar support size, each padded to its largest r (padding rows of I − M are rows of
    the identity, which change neither the determinant nor the gradients).
    """

    @staticmethod
    def forward(ctx, beta, G_local, seq, r, chunk):  # noqa: D401 - autograd signature
        N = beta.shape[0]
        need = ctx.needs_input_grad[0] or ctx.needs_input_grad[1]
        total = beta.new_zeros(())
        g_beta = torch.zeros_like(beta) if need else None
        g_G = torch.zeros_like(G_local) if need else None
        order = torch.argsort(r, stable=True)
        r_sorted = r[order].tolist()
        for start in range(0, N, chunk):
            rows = order[start : start + chunk]  # (n,)
            rmax = r_sorted[min(start + chunk, N) - 1]
            if rmax == 0:
                continue
            s = seq[rows]
            bc = beta[rows, :rmax]  # (n, r)
            Gc = G_local[:, :rmax, :rmax].index_select(0, s)  # (n, r, r)
            logabs, Hneg, Z = _chunk_logabsdet(bc, Gc, need)
            total = total - logabs.sum()
            if need:
                Z = Z.contiguous()  # LAPACK returns it column-major; the products below run along rows
                w = (bc[:, None, :] @ Z)[:, 0]  # (n, r): wᵀ = βᵀZ, i.e. w = A^{-1}β
                # ∂/∂β_i = Σ_j Z_ij (G_ij − u_j) − (G w)_i
                gb = -(Z * Hneg).sum(-1) - (Gc @ w[:, :, None])[..., 0]  # (n, r)
                g_beta[rows, :rmax] = gb * (bc > 0)
                gG = bc[:, :, None] * (Z - w[:, None, :])  # (n, r, r): (diag β − ββᵀ) Z
                per_seq = torch.zeros(g_G.shape[0], rmax, rmax, dtype=gG.dtype, device=gG.device)
                g_G[:, :rmax, :rmax] += per_seq.index_add_(0, s, gG)  # sum over each sequence's rows
        if need:
            ctx.save_for_backward(g_beta / N, g_G / N)
        return total / N

    @staticmethod
    def backward(ctx, grad_out):
        g_beta, g_G = ctx.saved_tensors
        return grad_out * g_beta, grad_out * g_G, None, None, None


def sylvester_logabsdet(
    beta: torch.Tensor, vocab_ids: torch.Tensor, G: torch.Tensor, *, chunk: int = _CHUNK
) -> torch.Tensor:
    """Per-position ``log|det(I − C G)|`` (no gradient): beta (..., K), vocab_ids (..., K) → (...)."""
    shape = beta.shape[:-1]
    b = beta.detach().reshape(-1, beta.shape[-1])
    vids = vocab_ids.reshape(-1, vocab_ids.shape[-1])
    out = torch.zeros(b.shape[0], dtype=b.dtype, device=b.device)
    with torch.no_grad():
        for rows, rmax in _chunks_by_support(b, chunk):
            if rmax:
                bc, _, Gc, _, _ = _compact(b, vids, G.detach(), rows, rmax)
                out[rows] = _chunk_logabsdet(bc, Gc, False)[0]
    return out.reshape(shape)


def margin_loss_tokens(
    tokens: torch.Tensor,
    embedding: torch.Tensor,
    W: torch.Tensor,
    *,
    positions: torch.Tensor | None = None,
    method: str = "sylvester",
    chunk: int | None = None,
) -> torch.Tensor:
    """Margin loss when the prior sees token embeddings ``x_s = E[y_s]``; scalar.

    ``tokens`` (B, T) int64, ``embedding`` E (|V|, d), ``W`` (d, d). ``method`` is one of
    :data:`METHODS`; ``"sylvester"`` is the fast exact path (cost per position ∝ r_t³ with r_t the
    number of distinct tokens before t), the others are exact references. ``chunk``: positions per
    batched factorisation (``None``: 1024 on a CPU, where small batches keep LAPACK's work in cache;
    on other devices as many as fit 2**26 matrix entries, so that a step launches few kernels).
    """
    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if not isinstance(tokens, torch.Tensor) or tokens.dtype != torch.long or tokens.ndim != 2:
        raise TypeError("tokens must be an int64 tensor of shape (B, T)")
    _check_float_tensor(embedding, "embedding", "(|V|, d)", 2)
    if embedding.shape[0] < 1:
        raise ValueError("embedding must have at least one row (|V| >= 1)")
    if tokens.numel() and (int(tokens.min()) < 0 or int(tokens.max()) >= embedding.shape[0]):
        raise ValueError(f"tokens must lie in [0, |V|) = [0, {embedding.shape[0]}) (the rows of embedding)")
    _check_x(embedding[:1][tokens[:, :2] * 0], W, "embedding")
    # F.embedding, not embedding[tokens], wherever x = E[tokens] is built: its backward sums each row's
    # gradient in one thread, in token order (bitwise the same at any thread count); indexing's backward
    # adds with atomics across threads
    if method in ("direct", "second_moment"):
        return margin_loss(F.embedding(tokens, embedding), W, positions=positions, method=method)
    _check_x(embedding[:1][tokens[:, :2] * 0], W)  # shapes of x = E[tokens] without building it
    G = embedding @ W.T @ embedding.T  # (|V|, |V|) = E Wᵀ Eᵀ
    if method == "sylvester_dense":
        alpha = attention_rows(F.embedding(tokens, embedding), W, positions)  # (B, P, T)
        V = embedding.shape[0]
        beta = torch.zeros(*alpha.shape[:2], V, dtype=alpha.dtype, device=alpha.device)
        beta = beta.scatter_add(2, tokens[:, None, :].expand(-1, alpha.shape[1], -1), alpha)
        C = torch.diag_embed(beta) - beta[..., :, None] * beta[..., None, :]  # (B, P, V, V)
        _, logabs = torch.linalg.slogdet(torch.eye(V, dtype=G.dtype, device=G.device) - C @ G)
        return _finite_result(-logabs.mean(), "margin_loss_tokens")
    beta, _, G_local, r = prefix_masses(tokens, G, positions)  # (B, P, K), (B, K, K), (B, P)
    B, P, K = beta.shape
    seq = torch.arange(B, device=tokens.device).repeat_interleave(P)  # (B·P,)
    if chunk is None:
        chunk = _CHUNK if tokens.device.type == "cpu" else max(1, _CHUNK_ELEMENTS // (K * K))
    loss = _SylvesterMargin.apply(beta.reshape(B * P, K), G_local, seq, r.reshape(-1), chunk)
    return _finite_result(loss, "margin_loss_tokens")


# ------------------------------------------------------------------------------- the module
class EmbeddingPrior(nn.Module):
    """A single strict-causal attention layer on embeddings with logits ``x_t W x_sᵀ`` (A = Wᵀ).

    ``W`` is initialised ``N(0, init_std²)`` (``init_std=0`` gives W = 0, i.e. uniform attention).
    """

    def __init__(self, d: int, *, init_std: float = 0.02, generator: torch.Generator | None = None) -> None:
        super().__init__()
        if isinstance(d, bool) or not isinstance(d, int) or d < 1:
            raise ValueError(f"d must be a positive int, got {d!r}")
        if isinstance(init_std, bool) or not isinstance(init_std, (int, float)) or not 0 <= init_std < float("inf"):
            raise ValueError(f"init_std must be a finite number >= 0, got {init_std!r}")
        self.W = nn.Parameter(torch.randn(d, d, generator=generator) * init_std)

    @property
    def A(self) -> torch.Tensor:
        """The matrix of Theorem 1, Eq. (15): ``A = W_Kᵀ W_Q = Wᵀ``."""
        return self.W.T

    def attention_weights(self, x: torch.Tensor) -> torch.Tensor:
        """Full strict-causal attention matrix ``(B, T, T)``; row 0 (no past) is all zeros."""
        _check_x(x, self.W)
        alpha = attention_rows(x, self.W)  # (B, T-1, T)
        return torch.cat([torch.zeros_like(alpha[:, :1]), alpha], dim=1)

    def margin_loss(
        self, x: torch.Tensor, *, positions: torch.Tensor | None = None, method: str = "direct"
    ) -> torch.Tensor:
        """``mean −log|det(I_d − Σ_t Wᵀ)|`` over the batch and positions t ≥ 1 (or ``positions``)."""
        return margin_loss(x, self.W, positions=positions, method=method)

    def margin_loss_tokens(
        self,
        tokens: torch.Tensor,
        embedding: torch.Tensor,
        *,
        positions: torch.Tensor | None = None,
        method: str = "sylvester",
    ) -> torch.Tensor:
        """Same penalty when ``x = embedding[tokens]``; see :func:`margin_loss_tokens`."""
        return margin_loss_tokens(tokens, embedding, self.W, positions=positions, method=method)

    @torch.no_grad()
    def diagnostics(self, tokens: torch.Tensor, embedding: torch.Tensor) -> dict[str, float]:
        """§7.4 diagnostics on one batch; see :func:`prior_diagnostics`."""
        return prior_diagnostics(tokens, embedding, self.W)


@torch.no_grad()
def prior_diagnostics(tokens: torch.Tensor, embedding: torch.Tensor, W: torch.Tensor) -> dict[str, float]:
    """The §7.4 diagnostics of the prior on ``x = embedding[tokens]`` (positions t ≥ 1).

    - ``entropy``: mean over positions of H_t = −Σ_{s<t} α_ts log α_ts (nats);
    - ``snr``: RMS(x) / RMS(e) with e_t = x_t − μ_t the prior's residual;
    - ``normalised_var``: mean_t tr(Σ_t) / RMS(x)², RMS(x)² the mean squared entry of x;
    - ``margin``: mean of −log|det(I − Σ_t Wᵀ)| (the penalty); ``min_logabsdet``: the smallest
      log-margin in the batch (its position is the batch's support token, Definition 3.1);
    - ``trace_sigma_A``: mean tr(Σ_t A) (its sign is the sign of the coupling in the d = 1 picture of
      §3.4: > 0 is the barrier regime a > 0, < 0 the dispersion-promoting regime a < 0);
      ``frac_det_above_one``: share of positions t ≥ 2 with |det(I − Σ_t A)| > 1 (penalty < 0);
    - ``embedding_rms``: RMS of the whole embedding table (the scale against which the §7.3 noise
      σ should be read).
    """
    x = embedding[tokens].float()  # (B, T, d)
    W = W.float()
    alpha = attention_rows(x, W)  # (B, T-1, T)
    xq = x[:, 1:]  # (B, T-1, d) the positions t ≥ 1
    mu = alpha @ x  # (B, T-1, d)
    ent = -(alpha * torch.log(alpha.clamp_min(1e-30))).sum(-1)  # (B, T-1)
    rms_x2 = xq.pow(2).mean()
    rms_e2 = (xq - mu).pow(2).mean()
    tr_sigma = (alpha * x.pow(2).sum(-1)[:, None, :]).sum(-1) - mu.pow(2).sum(-1)  # (B, T-1)
    beta, vids = vocab_masses(tokens, alpha)
    G = embedding.float() @ W.T @ embedding.float().T
    logabs = sylvester_logabsdet(beta, vids[:, None, :].expand(-1, beta.shape[1], -1), G)
    Gl = G[vids[:, :, None], vids[:, None, :]]  # (B, K, K) local G
    tr_sa = (beta * Gl.diagonal(dim1=-2, dim2=-1)[:, None, :]).sum(-1) - torch.einsum(
        "bpi,bij,bpj->bp", beta, Gl, beta
    )  # (B, T-1): tr(Σ_t A) = tr(C_t G)
    return {
        "entropy": float(ent.mean()),
        "trace_sigma_A": float(tr_sa.mean()),
        "frac_det_above_one": float((logabs[:, 1:] > 0).float().mean()),
        "snr": float(torch.sqrt(rms_x2 / rms_e2)),
        "normalised_var": float(tr_sigma.mean() / rms_x2),
        "margin": float(-logabs.mean()),
        "min_logabsdet": float(logabs.min()),
        "embedding_rms": float(embedding.float().pow(2).mean().sqrt()),
    }
