"""EmbeddingPrior: Theorem 1 against autograd, the three exact margin paths, the custom backward."""

from __future__ import annotations

import itertools
import math

import pytest

torch = pytest.importorskip("torch")
from hypothesis import given, settings, strategies as st  # noqa: E402

from nextword.torch.barrier import prior as P  # noqa: E402

F64 = torch.float64


def _setup(B=2, T=7, V=5, d=4, scale=0.4, seed=0):
    g = torch.Generator().manual_seed(seed)
    E = torch.randn(V, d, generator=g, dtype=F64)
    W = scale * torch.randn(d, d, generator=g, dtype=F64)
    tok = torch.randint(0, V, (B, T), generator=g)
    return tok, E, W


def test_theorem1_diagonal_jacobian_block_matches_autograd():
    """∂e_t/∂x_t = I − Σ_t A with A = Wᵀ (Eq. (14)–(15)) for the residual e_t = x_t − μ_t."""
    g = torch.Generator().manual_seed(1)
    T, d = 6, 3
    x = torch.randn(1, T, d, generator=g, dtype=F64)
    W = 0.7 * torch.randn(d, d, generator=g, dtype=F64)
    prior = P.EmbeddingPrior(d).double()
    with torch.no_grad():
        prior.W.copy_(W)
    assert torch.equal(prior.A, prior.W.T)
    sigma = P.covariances(x, W)[0]  # (T-1, d, d)
    for t in range(1, T):

        def e_t(xt, t=t):
            xx = x.clone()
            xx[0, t] = xt
            alpha = P.attention_rows(xx, W, torch.tensor([[t]]))[0, 0]  # (T,)
            return xt - alpha @ xx[0]

        J = torch.autograd.functional.jacobian(e_t, x[0, t])
        expected = torch.eye(d, dtype=F64) - sigma[t - 1] @ prior.A
        torch.testing.assert_close(J, expected, rtol=1e-10, atol=1e-12)


def test_attention_rows_strict_causal_and_normalised():
    tok, E, W = _setup(T=6)
    prior = P.EmbeddingPrior(4).double()
    with torch.no_grad():
        prior.W.copy_(W)
    A = prior.attention_weights(E[tok])  # (B, T, T)
    assert torch.all(A[:, 0] == 0)
    assert torch.all(torch.triu(A, diagonal=0) == 0)  # s >= t masked
    torch.testing.assert_close(A[:, 1:].sum(-1), torch.ones(2, 5, dtype=F64))


@settings(max_examples=12, deadline=None)
@given(
    B=st.integers(1, 3),
    T=st.integers(2, 8),
    V=st.integers(1, 9),
    d=st.integers(1, 6),
    seed=st.integers(0, 10_000),
    subsample=st.booleans(),
)
def test_three_paths_agree_in_float64(B, T, V, d, seed, subsample):
    """direct == second moment == Sylvester (compact) == Sylvester (|V|×|V|), values and gradients."""
    tok, E, W = _setup(B, T, V, d, seed=seed)
    pos = None
    if subsample:
        pos = P.sample_positions(B, T, max(1, (T - 1) // 2), torch.Generator().manual_seed(seed))
    vals, grads = [], []
    for m in P.METHODS:
        Er, Wr = E.clone().requires_grad_(), W.clone().requires_grad_()
        L = P.margin_loss_tokens(tok, Er, Wr, positions=pos, method=m)
        vals.append(L.detach())
        grads.append(torch.autograd.grad(L, (Er, Wr)))
    for v, gr in zip(vals[1:], grads[1:]):
        torch.testing.assert_close(v, vals[0], rtol=1e-9, atol=1e-11)
        torch.testing.assert_close(gr[0], grads[0][0], rtol=1e-7, atol=1e-9)
        torch.testing.assert_close(gr[1], grads[0][1], rtol=1e-7, atol=1e-9)


def test_margin_loss_general_embeddings_paths_agree():
    g = torch.Generator().manual_seed(3)
    x = torch.randn(2, 9, 5, generator=g, dtype=F64)
    W = 0.3 * torch.randn(5, 5, generator=g, dtype=F64)
    a = P.margin_loss(x, W, method="direct")
    b = P.margin_loss(x, W, method="second_moment")
    torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)
    # by hand: −mean_t log|det(I − Σ_t Wᵀ)| with explicit loops
    vals = []
    for bb in range(2):
        for t in range(1, 9):
            logits = x[bb, t] @ W @ x[bb, :t].T
            al = torch.softmax(logits, 0)
            xbar = al @ x[bb, :t]
            S = sum(al[s] * torch.outer(x[bb, s] - xbar, x[bb, s] - xbar) for s in range(t))
            vals.append(-torch.linalg.slogdet(torch.eye(5, dtype=F64) - S @ W.T)[1])
    torch.testing.assert_close(a, torch.stack(vals).mean(), rtol=1e-10, atol=1e-12)


def test_custom_backward_gradcheck():
    """The closed-form gradients of the Sylvester Function against finite differences.

    Rows have supports of 1, 2 and 3 items (a prefix; entries beyond it are 0) from two sequences,
    and chunks of 2 rows, so that rows of different support share a padded chunk.
    """
    g = torch.Generator().manual_seed(5)
    N, K, B = 5, 3, 2
    r = torch.tensor([3, 1, 2, 3, 2])
    seq = torch.tensor([0, 1, 1, 0, 0])
    support = torch.arange(K) < r[:, None]  # (N, K); entries beyond it are structural zeros
    free = (torch.rand(int(support.sum()), generator=g, dtype=F64) + 0.1).requires_grad_()
    G_local = (0.5 * torch.randn(B, K, K, generator=g, dtype=F64)).requires_grad_()

    def margin(f, G_):
        beta = torch.zeros(N, K, dtype=F64).masked_scatter(support, f)
        return P._SylvesterMargin.apply(beta, G_, seq, r, 2)

    assert torch.autograd.gradcheck(margin, (free, G_local))


def test_prefix_masses_equal_the_attention_rows_summed_by_token():
    """β from prefix counts (one softmax over items) = α from the (P × T) attention rows, summed by token,
    and items are numbered in order of first appearance (so the items before t are the first r_t)."""
    tok, E, W = _setup(B=3, T=12, V=5, d=4, seed=6)
    pos = P.sample_positions(3, 12, 5, torch.Generator().manual_seed(1))
    for positions in (None, pos):
        alpha = P.attention_rows(E[tok], W, positions)  # (B, P, T)
        beta, vids, G_local, r = P.prefix_masses(tok, E @ W.T @ E.T, positions)
        for b in range(3):
            seen = list(dict.fromkeys(tok[b].tolist()))  # ids in order of first appearance
            assert vids[b, : len(seen)].tolist() == seen
            for p in range(beta.shape[1]):
                t = int(positions[b, p]) if positions is not None else p + 1
                assert int(r[b, p]) == len(set(tok[b, :t].tolist()))
                want = torch.stack([alpha[b, p][tok[b] == v].sum() for v in seen])
                torch.testing.assert_close(beta[b, p, : len(seen)], want, rtol=1e-12, atol=1e-14)
                assert torch.all(beta[b, p, int(r[b, p]) :] == 0)
        torch.testing.assert_close(G_local, (E @ W.T @ E.T)[vids[:, :, None], vids[:, None, :]])


@settings(max_examples=10, deadline=None)
@given(
    B=st.integers(1, 3),
    T=st.integers(2, 40),
    V=st.integers(1, 12),
    d=st.integers(1, 6),
    scale=st.sampled_from([0.1, 0.5, 2.0]),
    seed=st.integers(0, 10_000),
    subsample=st.booleans(),
    chunk=st.sampled_from([1, 3, 1024]),
)
def test_token_path_matches_the_frozen_reference(B, T, V, d, scale, seed, subsample, chunk):
    """The prefix-count path against the implementation it replaced (tests/torch/margin_reference.py).

    float64: value and gradients to 1e-9 of the largest entry, plus 1e-13 absolute for values that are zero
    up to rounding. float32: compared with the float64 reference, to the textbook forward-error bound of
    an LU solve, 16 · ε₃₂ · κ · (largest entry), with κ the largest condition number of I − C_t G over the
    positions (never tighter than 2e-4 relative, plus 2e-5 absolute: float32 gradients of size 1e-4 are
    sums of larger terms that cancel, so their last digits are round-off; the float64 comparison above is
    the tight one). At scale 2 κ reaches 1e5 and both
    float32 paths lose most digits (the old one as well); a fixed relative tolerance would fail there
    for either path.
    """
    from tests.torch.margin_reference import margin_loss_tokens_reference

    pos = None
    if subsample:
        pos = P.sample_positions(B, T, max(1, (T - 1) // 3), torch.Generator().manual_seed(seed))
    tok, E, W = _setup(B, T, V, d, scale=scale, seed=seed)

    def run(f, dtype):
        Er, Wr = E.to(dtype).clone().requires_grad_(), W.to(dtype).clone().requires_grad_()
        L = f(tok, Er, Wr, positions=pos, chunk=chunk)
        return (L.detach(), *torch.autograd.grad(L, (Er, Wr)))

    truth = run(margin_loss_tokens_reference, F64)
    for new, old in zip(run(P.margin_loss_tokens, F64), truth):
        assert float((new - old).abs().max()) <= 1e-9 * float(old.abs().max()) + 1e-13, (new, old)

    alpha = P.attention_rows(E[tok], W, pos)  # (B, P, T), float64
    beta = torch.zeros(*alpha.shape[:2], V, dtype=F64).scatter_add(2, tok[:, None, :].expand_as(alpha), alpha)
    C = torch.diag_embed(beta) - beta[..., :, None] * beta[..., None, :]  # (B, P, V, V)
    kappa = float(torch.linalg.cond(torch.eye(V, dtype=F64) - C @ (E @ W.T @ E.T)).max())
    rel = max(2e-4, 16 * torch.finfo(torch.float32).eps * kappa)
    for new, want in zip(run(P.margin_loss_tokens, torch.float32), truth):
        err = float((new.double() - want).abs().max())
        assert err <= rel * float(want.abs().max()) + 2e-5, (err, kappa, want)


def test_sylvester_per_position_matches_dense_slogdet():
    tok, E, W = _setup(B=2, T=8, V=6, d=3, seed=2)
    alpha = P.attention_rows(E[tok], W)
    beta, vids = P.vocab_masses(tok, alpha)
    G = E @ W.T @ E.T
    got = P.sylvester_logabsdet(beta, vids[:, None, :].expand(-1, beta.shape[1], -1), G)
    sigma = P.covariances(E[tok], W)
    want = torch.linalg.slogdet(torch.eye(3, dtype=F64) - sigma @ W.T)[1]
    torch.testing.assert_close(got, want, rtol=1e-9, atol=1e-11)


def test_vocab_masses_sum_attention_by_token():
    tok = torch.tensor([[3, 1, 3, 3, 0]])
    alpha = torch.softmax(torch.randn(1, 5, 5, dtype=F64), -1)
    beta, vids = P.vocab_masses(tok, alpha)
    assert vids.tolist() == [[0, 1, 3]]
    torch.testing.assert_close(beta[0, :, 2], alpha[0, :, [0, 2, 3]].sum(-1))
    torch.testing.assert_close(beta.sum(-1), alpha.sum(-1))


def test_position_subsampling_is_unbiased_by_enumeration():
    """The mean over every k-subset of positions equals the full mean (exact enumeration)."""
    tok, E, W = _setup(B=1, T=6, V=4, d=3, seed=7)
    full = P.margin_loss_tokens(tok, E, W)
    k = 2
    subsets = list(itertools.combinations(range(1, 6), k))
    vals = [P.margin_loss_tokens(tok, E, W, positions=torch.tensor([s])) for s in subsets]
    torch.testing.assert_close(torch.stack(vals).mean(), full, rtol=1e-12, atol=1e-12)


def test_sample_positions_properties():
    pos = P.sample_positions(5, 10, 4, torch.Generator().manual_seed(0))
    assert pos.shape == (5, 4)
    assert int(pos.min()) >= 1 and int(pos.max()) <= 9
    assert all(len(set(r.tolist())) == 4 for r in pos)
    assert torch.all(pos[:, 1:] > pos[:, :-1])
    again = P.sample_positions(5, 10, 4, torch.Generator().manual_seed(0))
    assert torch.equal(pos, again)


def test_zero_W_gives_uniform_attention_and_log_t_entropy():
    tok, E, _ = _setup(B=2, T=9, V=6, d=4)
    d = P.prior_diagnostics(tok, E.float(), torch.zeros(4, 4))
    assert math.isclose(d["entropy"], sum(math.log(t) for t in range(1, 9)) / 8, rel_tol=1e-5)
    assert abs(d["margin"]) < 1e-6 and abs(d["trace_sigma_A"]) < 1e-6


def test_diagnostics_trace_and_normalised_var_match_covariances():
    tok, E, W = _setup(B=2, T=8, V=5, d=4, seed=4)
    d = P.prior_diagnostics(tok, E, W)
    x = E[tok].float()
    sigma = P.covariances(x, W.float())
    tr = sigma.diagonal(dim1=-2, dim2=-1).sum(-1)  # (B, T-1)
    assert math.isclose(
        d["trace_sigma_A"],
        float((sigma @ W.float()).diagonal(dim1=-2, dim2=-1).sum(-1).mean()),
        rel_tol=1e-4,
        abs_tol=1e-6,
    )
    assert math.isclose(d["normalised_var"], float(tr.mean() / x[:, 1:].pow(2).mean()), rel_tol=1e-4)
    assert math.isclose(d["margin"], float(P.margin_loss_tokens(tok, E, W)), rel_tol=1e-4, abs_tol=1e-6)


@pytest.mark.parametrize(
    "bad, err",
    [
        (dict(x=torch.zeros(2, 3)), TypeError),
        (dict(x=torch.zeros(1, 1, 4)), ValueError),
        (dict(W=torch.zeros(3, 3)), ValueError),
        (dict(positions=torch.tensor([[0]])), ValueError),
        (dict(positions=torch.tensor([[1.0]])), TypeError),
    ],
)
def test_bad_input_raises(bad, err):
    kw = dict(x=torch.zeros(1, 4, 4), W=torch.zeros(4, 4), positions=None)
    kw.update(bad)
    with pytest.raises(err):
        P.margin_loss(kw["x"], kw["W"], positions=kw["positions"])


def test_bad_method_and_tokens():
    tok, E, W = _setup()
    with pytest.raises(ValueError, match="method"):
        P.margin_loss_tokens(tok, E, W, method="hutchinson")
    with pytest.raises(TypeError, match="tokens"):
        P.margin_loss_tokens(tok.float(), E, W)
    with pytest.raises(ValueError, match="k must"):
        P.sample_positions(2, 5, 5)
