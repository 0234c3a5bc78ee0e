# %% [markdown]
# # 2.4 The attention block and the set transformer
#
# *Source: Baptista, Stuart, Tran, "Large Language Models: A Mathematical Formulation", §5.1–5.2
# (Eqs. 5.2–5.7, Examples 5.2–5.4) and Appendix B (Eqs. B.1–B.5, Example B.2).*
#
# §5 builds the next-token model $q_m(\cdot\mid h_{1:m-1})$ from a *set transformer*: attention
# blocks (5.3a–d) — attention with a residual (5.2), a normalisation, a residual feed-forward
# network, a normalisation — followed by a pooling map and a softmax (5.6)–(5.7). There are no
# positions and no mask, so the model sees its input as a *set*, and Appendix B goes one step
# further: as a *probability measure* on $\mathbb R^{d_e}$. We compute every piece with
# `nextword.theory.formulation.set_transformer`, check the symmetries the section claims, and mark which of them survive
# a causal mask or positional encodings (§5.3, notebook 2.5).
#
# Conventions: the paper's column vectors $Qh_k$ are rows of `h @ Q.T` with `h` of shape
# `(m, d_e)`; scores are the raw inner products of (5.2) (no $1/\sqrt c$).

# %%
import matplotlib.pyplot as plt
import numpy as np
import sympy as sp

from nextword.attention import softmax
from nextword.decoder import TransformerBlock, feed_forward, layer_norm, rms_norm
from nextword.booktools.plotting import use_book_style
from nextword.positions import sinusoidal_encoding
from nextword.theory.formulation import (
    AttentionParams, BlockParams, att, attention_block, empirical_measure, max_pool, mean_pool,
    next_token_distribution, set_transformer, soft_max_pool,
)

use_book_style()
rng = np.random.default_rng(0)

# %% [markdown]
# ## 1. The attention map (5.2) and its residual
#
# $\mathrm{ATT}(h)_k=h_k+\sum_l \alpha_{kl}Vh_l$ with
# $\alpha_{kl}=\exp\langle Qh_k,Kh_l\rangle/Z_k$. We check the library against (5.2) written out term
# by term, and the structural fact behind everything below: $\mathrm{ATT}(h)_k-h_k$ is a convex
# combination of the values $Vh_l$, i.e. an expectation under a probability vector over the tokens.

# %%
d_e, c, c_ff, m = 4, 3, 16, 6
block = BlockParams.random(d_e, c, c_ff, rng)
Q, K, V = block.att.Q, block.att.K, block.att.V
h = rng.standard_normal((m, d_e))

loop = np.empty_like(h)
for k in range(m):
    s = np.array([np.exp((Q @ h[k]) @ (K @ h[l])) for l in range(m)])  # exp<Qh_k, Kh_l>
    loop[k] = h[k] + sum(s[l] * (V @ h[l]) for l in range(m)) / s.sum()  # (5.2a)-(5.2b)
out = att(h, block.att)
assert np.allclose(out, loop, rtol=1e-12, atol=1e-12)
alpha = softmax((h @ Q.T) @ (h @ K.T).T)  # (m, m)
assert np.allclose(alpha.sum(1), 1) and (alpha > 0).all()
assert np.allclose(out - h, alpha @ (h @ V.T))
assert np.abs(out - loop).max() < 1e-12
print("max |ATT(h) - (5.2) term by term| < 1e-12 (round-off); rows of alpha sum to 1")

# %% [markdown]
# ## 2. The attention block (5.3a–d), and the normalisation of Example 5.2
#
# The block is ATT → N → $h+\mathrm{NN}(h)$ → N: the *post-norm* block of Chapter 6 with one head
# and no output projection. With $c=d_e$ it is exactly `nextword.decoder.layers.TransformerBlock(pre_norm=False)`
# once its $1/\sqrt{d}$ scale is folded into $W_q$ and $W_o=I$ — we check that.

# %%
sq = BlockParams.random(d_e, d_e, c_ff, rng)  # c = d_e
tb = TransformerBlock(d_e, 1, c_ff, rng=rng, norm="layer", pre_norm=False, causal=False, activation="relu", eps=sq.eps)
tb.attn.W_q, tb.attn.W_k, tb.attn.W_v = sq.att.Q.T * np.sqrt(d_e), sq.att.K.T, sq.att.V.T
tb.attn.W_o[...] = np.eye(d_e)
tb.W1[...], tb.b1[...], tb.W2[...], tb.b2[...] = sq.W1.T, sq.b1, sq.W2.T, sq.b2
diff = np.abs(attention_block(h, sq) - tb(h)).max()
assert diff < 1e-12
print("(5.3a-d) vs post-norm TransformerBlock: max |difference| < 1e-12 (round-off)")

# %% [markdown]
# Example 5.2 defines layer normalisation with $m(u)=\sum_i u_i$ and
# $\sigma^2(u)=\sum_i(u_i-m(u))^2$ — sums, where layer normalisation (Ba et al.; `layer_norm`) uses
# averages $\frac1{d_e}\sum_i$. Taken literally, the printed map does not centre its output and is not
# invariant to adding a constant to every coordinate, which is the point of the mean shift. Sympy on a
# generic $u\in\mathbb R^3$:

# %%
u = sp.Matrix(sp.symbols("u1:4", real=True))
t = sp.Symbol("t", real=True)


def ln_printed(v):
    mu = sum(v)  # m(u) as printed: a sum
    return (v - mu * sp.ones(3, 1)) / sp.sqrt(sum((x - mu) ** 2 for x in v))


def ln_mean(v):
    mu = sum(v) / 3
    return (v - mu * sp.ones(3, 1)) / sp.sqrt(sum((x - mu) ** 2 for x in v) / 3)


print("sum of outputs, printed (5.4):", sp.factor(sp.simplify(sum(ln_printed(u)))))
print("sum of outputs, with means:   ", sp.simplify(sum(ln_mean(u))))
shift = sp.simplify(ln_mean(u + t * sp.ones(3, 1)) - ln_mean(u))
assert shift == sp.zeros(3, 1)
num = {s_: v_ for s_, v_ in zip(u, (1, 2, 3))}
printed_val = np.array(ln_printed(u).subs(num), dtype=float).ravel()
shifted_val = np.array(ln_printed(u + 10 * sp.ones(3, 1)).subs(num), dtype=float).ravel()
print(f"printed (5.4) at u = (1,2,3): {np.round(printed_val, 4)}; at u + 10: {np.round(shifted_val, 4)}")
assert np.allclose(np.array(ln_mean(u).subs(num), dtype=float).ravel(), layer_norm(np.array([1.0, 2, 3]), eps=0.0))
assert not np.allclose(printed_val, shifted_val)

# %% [markdown]
# With averages, the output has zero mean, is shift invariant, and equals `layer_norm`. We use that
# reading (recorded in `book/ERRATA.md`). The same convention decides (5.5): with sums, setting
# $m=0$, $b=0$, $\varepsilon=0$, $D=I$ gives $u/|u|_2$ (the unit sphere, as printed); with averages it
# gives $u/\sqrt{\tfrac1{d_e}\sum u_i^2}=\sqrt{d_e}\,u/|u|_2$, which is what RMSNorm usually denotes
# (radius $\sqrt{d_e}$). `rms_norm` offers both:

# %%
x = rng.standard_normal(d_e)
assert np.allclose(rms_norm(x, eps=0.0, unit=True), x / np.linalg.norm(x))
assert np.allclose(rms_norm(x, eps=0.0), np.sqrt(d_e) * x / np.linalg.norm(x))
print(f"|rms_norm(x, unit=True)| = {np.linalg.norm(rms_norm(x, eps=0.0, unit=True)):.6f}, "
      f"|rms_norm(x)| = {np.linalg.norm(rms_norm(x, eps=0.0)):.6f} = sqrt(d_e)")

# %% [markdown]
# ## 3. Permutation equivariance of the block, invariance of the set transformer
#
# Permuting the tokens permutes the output of ATT (the softmax weights move with the keys, the
# residual with the query), and N and NN act token by token, so every block is *equivariant*:
# $\mathbf A(h_{\sigma})=\mathbf A(h)_{\sigma}$. Mean and max pooling forget the order, so
# $\mathbf T$ and $q_m$ in (5.6)–(5.7) are *invariant*. Checked for every one of the $6!=720$
# orders of a 6-token sequence through two blocks:

# %%
import itertools

blocks = [block, BlockParams.random(d_e, c, c_ff, rng)]
B = rng.standard_normal((10, d_e))  # the linear map B of (5.7), |V| = 10
A_h = attention_block(h, block)
T_mean, T_max = set_transformer(h, blocks, "mean"), set_transformer(h, blocks, "max")
worst = 0.0
for perm in itertools.permutations(range(m)):
    perm = list(perm)
    worst = max(worst, np.abs(attention_block(h[perm], block) - A_h[perm]).max(),
                np.abs(set_transformer(h[perm], blocks, "mean") - T_mean).max(),
                np.abs(set_transformer(h[perm], blocks, "max") - T_max).max())
assert worst < 1e-12
q_next = next_token_distribution(h, blocks, B)
assert abs(q_next.sum() - 1) < 1e-12
print("all 720 orders: max deviation < 1e-12 (round-off); q_m sums to 1 within 1e-12")

# %% [markdown]
# The price: a next-token model built this way cannot tell "dog bites man" from "man bites dog".
# With any embedding of three words, both orders get the same distribution for the next token:

# %%
vocab_words = ["dog", "bites", "man"]
phi = rng.standard_normal((len(vocab_words), d_e))  # rows = token embeddings
s1 = phi[[0, 1, 2]]  # dog bites man
s2 = phi[[2, 1, 0]]  # man bites dog
q1, q2 = next_token_distribution(s1, blocks, B), next_token_distribution(s2, blocks, B)
assert np.allclose(q1, q2, atol=1e-14)
print("q(. | dog bites man) == q(. | man bites dog):", bool(np.allclose(q1, q2, atol=1e-14)))

# %% [markdown]
# ## 4. Pooling (Example 5.4, Example B.2)
#
# Example 5.4 writes mean pooling of $h_{1:m-1}$ as $\frac1m\sum_{k=1}^m h_k$; the sequence has
# $m-1$ elements, so the sum must stop at $m-1$ and the factor is $\frac1{m-1}$ (an index slip; read
# literally, "$\frac1m$ times the sum of the $m-1$ tokens" is $(m-1)/m$ times the mean and depends on
# the length, which breaks the length independence the example asks for — checked below). The
# continuum form of max pooling in Example B.2 is a log-sum-exp,
# $\frac1\beta\log\int e^{\beta h_j}\,dp(h)$, which tends to the coordinate-wise maximum over the
# support as $\beta\to\infty$ (the gap is at most $\log(1/p_{\min})/\beta$), and to the mean as
# $\beta\to0$.

# %%
hh = np.concatenate([h, h])  # every token twice: the same empirical measure
literal = lambda seq: seq.sum(0) / (len(seq) + 1)  # noqa: E731  (1/m) * sum of the m-1 tokens
assert np.allclose(mean_pool(hh), mean_pool(h)) and np.allclose(max_pool(hh), max_pool(h))
print(f"literal (1/m) pooling: |P(h,h) - P(h)| = {np.abs(literal(hh) - literal(h)).max():.4f} (not length independent)")
betas = np.geomspace(0.01, 1000, 41)
gaps = np.array([np.max(max_pool(h) - soft_max_pool(h, b)) for b in betas])
assert np.all(gaps >= -1e-12) and np.all(gaps <= np.log(m) / betas + 1e-12)
assert np.allclose(soft_max_pool(h, 1e-6), mean_pool(h), atol=1e-5)
print(f"soft-max pooling gap to max: beta=1: {gaps[np.argmin(abs(betas - 1))]:.4f}, "
      f"beta=1000: {gaps[-1]:.2e} (bound log(m)/beta = {np.log(m) / 1000:.2e})")

# %% [markdown]
# ## 5. Attention as a map on empirical measures (Appendix B)
#
# (B.1) encodes a sequence as $p=\frac1\ell\sum_k\delta_{h_k}$ and (B.4a) defines the transport map
# $s\mapsto s+V\,\mathbb E_{u\sim\pi(\cdot;s)}[u]$ with $\pi(u;s)\propto e^{\langle Qs,Ku\rangle}p(u)$.
# Everything depends on the sequence only through $p$, so duplicating every token — same measure —
# must leave each token's output unchanged. Sympy first, in one dimension with two tokens:

# %%
h1, h2, qs, ks, vs = sp.symbols("h1 h2 Q K V", real=True)


def att_scalar(seq, k):
    w = [sp.exp(qs * seq[k] * ks * x) for x in seq]
    return seq[k] + sum(wi * vs * x for wi, x in zip(w, seq)) / sum(w)


print("ATT(h1,h2,h1,h2)_1 - ATT(h1,h2)_1 =", sp.simplify(att_scalar([h1, h2, h1, h2], 0) - att_scalar([h1, h2], 0)))
print("ATT(h1,h1,h2)_1  - ATT(h1,h2)_1 =", sp.factor(sp.simplify(att_scalar([h1, h1, h2], 0) - att_scalar([h1, h2], 0))))

# %% [markdown]
# Duplicating *every* token cancels; duplicating *one* token does not — it changes the measure
# (weights $\frac23,\frac13$ instead of $\frac12,\frac12$). Numerically, through the whole block, and
# with the weighted form: `empirical_measure` merges repeated rows into weights, and the block applied
# to the distinct points with those weights reproduces the block on the repeated sequence.

# %%
reps = np.concatenate([h, h, h])
assert np.allclose(attention_block(reps, block)[:m], A_h, atol=1e-12)
assert np.allclose(set_transformer(reps, blocks), T_mean, atol=1e-12)
uneven = np.concatenate([h, h[:2]])  # tokens 0 and 1 twice: a different measure
points, weights = empirical_measure(uneven)
assert np.allclose(points, h) and np.allclose(weights * len(uneven), [2, 2, 1, 1, 1, 1])
via_measure = attention_block(points, block, weights=weights)
assert np.allclose(via_measure, attention_block(uneven, block)[:m], atol=1e-12)
moved = np.abs(attention_block(uneven, block)[:m] - A_h).max()
assert moved > 1e-3
assert np.abs(attention_block(reps, block)[:m] - A_h).max() < 1e-12
print("every token x3: max change < 1e-12 (round-off); "
      f"two tokens doubled: max change {moved:.3f}, reproduced by the weighted measure")

# %% [markdown]
# Appendix B states that evaluating (B.4a–d) at each $h_k$ gives back the block (5.3). Steps (a), (b)
# and (d) do, but (B.4c) reads $\mathfrak A(s;p)\leftarrow s+\mathfrak{NN}(\mathfrak A(s;p))$: the
# residual adds the *input* $s$, whereas (5.3c) adds the current value,
# $h\leftarrow h+\mathrm{NN}(h)$. The two differ:

# %%
def appendix_b_literal(seq, p):
    """(B.4a-d) as printed: the residual of (B.4c) adds the block input s."""
    a = layer_norm(att(seq, p.att), eps=p.eps)  # (B.4a), (B.4b)
    a = seq + feed_forward(a, p.W1.T, p.b1, p.W2.T, p.b2, activation="relu")  # (B.4c) as printed
    return layer_norm(a, eps=p.eps)  # (B.4d)


gap_b4c = np.abs(appendix_b_literal(h, block) - A_h).max()
assert gap_b4c > 0.1
print(f"(B.4c) as printed vs (5.3): max difference {gap_b4c:.3f}")

# %% [markdown]
# Both versions are permutation equivariant and duplication invariant, so nothing in Appendix B's
# argument depends on the choice; we read (B.4c) as $\mathfrak A\leftarrow\mathfrak A+\mathfrak{NN}(\mathfrak A)$
# so that the appendix matches (5.3) (ledger row). The transport picture in two dimensions: each
# token moves to $\mathrm{ATT}(h)_k$; a copy of the cloud with every point doubled moves identically.

# %%
d2 = 2
att2 = AttentionParams(*(rng.standard_normal((2, 2)) * s for s in (1.2, 1.2, 0.6)))
cloud = rng.standard_normal((12, d2))
moved_cloud = att(cloud, att2)
assert np.allclose(att(np.concatenate([cloud, cloud]), att2)[:12], moved_cloud)
fine = np.linspace(-3, 3, 15)
grid = np.array([[a_, b_] for a_ in fine for b_ in fine])  # test points s, pushed by A(.; p)
Aq = grid @ att2.Q.T @ (cloud @ att2.K.T).T  # (G, n) scores <Qs, Ku>
field = softmax(Aq) @ (cloud @ att2.V.T)  # V E_{pi(.;s)}[u]

fig, axes = plt.subplots(1, 2, figsize=(12, 4.6), layout="constrained")
axes[0].quiver(grid[:, 0], grid[:, 1], field[:, 0], field[:, 1], color="0.75", angles="xy", scale_units="xy", scale=1.5)
axes[0].scatter(*cloud.T, color="C0", zorder=3, label="tokens $h_k$ (the measure $p$)")
axes[0].scatter(*moved_cloud.T, color="C3", marker="x", zorder=3, label=r"$\mathrm{ATT}(h)_k$")
for a_, b_ in zip(cloud, moved_cloud):
    axes[0].annotate("", b_, a_, arrowprops=dict(arrowstyle="->", color="C3", lw=0.8))
axes[0].set_xlim(-3, 3)
axes[0].set_ylim(-3, 3)
axes[0].set_title("(B.4a): s -> s + V E[u], u ~ pi(.; s)")
axes[0].legend(loc="lower left", fontsize=8)
axes[1].loglog(betas, gaps, "o-", ms=3, label="max pool - soft-max pool")
axes[1].loglog(betas, np.log(m) / betas, "k--", label=r"bound $\log m/\beta$")
axes[1].set_xlabel(r"$\beta$")
axes[1].set_ylabel("largest coordinate gap")
axes[1].legend()
plt.show()

# %% [markdown]
# **Figure 4.1.** Left: attention (5.2)/(B.4a) on a 2-D empirical measure of 12 tokens. Grey: the
# displacement $V\mathbb E_{\pi(\cdot;s)}[u]$ the measure induces at any point $s$ (a vector field that
# depends on $p$ only); red: where each token goes. Right: Example B.2 — the log-sum-exp pooling
# approaches max pooling at rate $\le\log m/\beta$.
#
# ## 6. What survives a causal mask or positions
#
# Everything above used (5.2) as printed: every token attends to every token and nothing encodes
# order. A decoder uses a causal mask (§5.3.3) and position encodings (§5.3.1). We test the three
# properties in all four settings (positions = sinusoidal encodings added to the embeddings, after
# the permutation — a position belongs to the slot, not to the token).

# %%
pe = sinusoidal_encoding(2 * m, d_e)
perm = np.array([3, 0, 5, 1, 4, 2])


def pipeline(seq, causal, positions):
    x = seq + pe[: len(seq)] if positions else seq
    return attention_block(x, block, causal=causal)


rows = []
for causal in (False, True):
    for positions in (False, True):
        base = pipeline(h, causal, positions)
        equiv = np.allclose(pipeline(h[perm], causal, positions), base[perm], atol=1e-10)
        inv = np.allclose(mean_pool(pipeline(h[perm], causal, positions)), mean_pool(base), atol=1e-10)
        dup = np.allclose(pipeline(np.concatenate([h, h]), causal, positions), np.concatenate([base, base]), atol=1e-10)
        rows.append((causal, positions, equiv, inv, dup))
        print(f"causal={causal!s:5s} positions={positions!s:5s}: equivariant {equiv!s:5s} "
              f"pooled-invariant {inv!s:5s} duplication-invariant {dup}")
assert rows[0][2:] == (True, True, True)
assert all(r[2:] == (False, False, False) for r in rows[1:])

# %% [markdown]
# Only the unmasked, position-free block has the set and measure symmetries (duplication is tested
# on the whole doubled sequence: both copies must reproduce the original outputs). With a causal
# mask, token $k$ averages over $h_{1:k}$ — a different measure for each $k$ — so order matters;
# the first copy of $(h,h)$ still reproduces $h$'s outputs (it cannot see the second), but the second
# copy attends to $h$ plus a prefix of $h$, a different measure. With positions, the "same" token in
# two slots carries two different vectors. So Appendix B's measure picture describes the encoder-style
# set transformer of §5.2, not the causal decoder used for generation.

# %%
doubled = attention_block(np.concatenate([h, h]), block, causal=True)
causal_base = attention_block(h, block, causal=True)
first_ok, second_ok = np.allclose(doubled[:m], causal_base), np.allclose(doubled[m:], causal_base)
assert first_ok and not second_ok
print(f"causal, no positions, (h, h): first copy reproduces h's outputs {first_ok}; second copy {second_ok}")
