# %% [markdown]
# # 2.4 The attention block and the set transformer
#
# **The question.** Which function turns the vectors of a prefix into a probability for the next
# token — written out completely, with nothing left to code — and what can that function *not*
# see?
#
# The paper's answer is short: a stack of attention blocks and an average over positions — the
# *set transformer* — then a linear map and a softmax. It is worth knowing for two reasons. Its block is
# Chapter 6's decoder block without the causal mask, in the notation of mathematics, so what you
# learned there carries over. And written this way it shows its blind spot plainly: with no
# positions and no mask, the function sees the prefix as an unordered collection of vectors — in
# fact only through the proportions in which the vectors occur, a probability distribution over
# vectors (repeating one token changes the proportions, and so the output: this is not quite a
# *set*, despite the name) — so "dog bites man" and "man bites dog" get the same next-token
# probabilities. That is why the next page ([2.5](05_temporal_structure.ipynb)) adds order back.
#
# ```{admonition} Learning goals
# :class: tip
# After this page you can
# - compute the attention map (5.2) by hand for two one-dimensional tokens, and check that
#   swapping or duplicating the tokens moves its outputs the way the symmetries predict;
# - trace a prefix through the attention block (5.3a–d), the pooling and the softmax (5.6)–(5.7),
#   and say which step mixes positions;
# - explain why a model without positions or a mask is {term}`permutation-equivariant` block by
#   block and permutation-invariant after pooling, and what a causal mask or positions break;
# - read attention as a map on {term}`empirical measures <empirical measure>` (Appendix B).
# ```
#
# **Builds on:** [6.2 The attention mechanism](../part1_chapter6/6_2_attention_mechanism.ipynb)
# ({term}`queries <query>`, {term}`keys <key>`, {term}`values <value>`, scores and softmax weights) ·
# [6.6 The decoder block](../part1_chapter6/6_6_context_representation.ipynb) (the
# {term}`decoder block`: residual connections, {term}`layer normalisation`, the
# {term}`feed-forward network`) · [2.2 The KL objective](02_objective_kl.ipynb) (the next-token
# distribution $\mathbf q_m$ that training fits). **Reading time:** about 40 minutes.
#
# ```{admonition} Symbols on this page
# :class: note
# | symbol | meaning | shape |
# |---|---|---|
# | $m$ | the position whose token is predicted; the prefix is $h_1,\dots,h_{m-1}$ | integer |
# | $n$ | the number of vectors in a sequence (for a prefix, $n=m-1$) | integer |
# | $i$, $j$ | positions in the sequence (of a query and of a key) | integers |
# | $h_i$, $h$ | the vector of token $i$ (column vectors, as in the paper); the whole sequence. $\mathrm{ATT}(h)_i$ is the output of the attention map (5.2) at token $i$; $\mathrm{N}$ and $\mathrm{NN}$ are the normalisation and the feed-forward network, applied to one vector at a time ($\mathrm N$ is the paper's $\mathbf N$ of (5.3b), an operator's name, kept; not the number of samples $N$ of the book's notation table, [Appendix A](../partA_appendix/A_notation_and_environment.ipynb)) | $(d_e,)$; $n$ vectors |
# | $d_e$, $c$, $c'$ | the embedding width; the width of queries and keys; the hidden width of the feed-forward network | integers |
# | $d_k$ | Chapter 6's width of one head's keys, whose $\sqrt{d_k}$ divides the scores there (not in (5.2)) | integer |
# | $Q$, $K$, $V$ | the query, key and value matrices of (5.2) | $(c,d_e)$, $(c,d_e)$, $(d_e,d_e)$ |
# | $\alpha_{ij}$ | the {term}`attention weight` of token $i$ on token $j$ | number in $[0,1]$ |
# | $\mathbf A$, $\mathbf A_1,\mathbf A_2$ | an attention block (5.3a–d); the blocks of the stack | sequence $\to$ sequence |
# | $n_b$ | the number of blocks in the stack | integer |
# | $\mathbf T$ | the set transformer (5.6): blocks, then pooling | sequence $\to\mathbb R^{d_e}$ |
# | $P$ | the pooling of (5.6) (the paper's bold $\mathbf P$; not a probability, the $P$ of the book's notation table): mean or coordinate-wise maximum over positions | sequence $\to\mathbb R^{d_e}$ |
# | $B$ | the linear map from a vector to one score per token (5.7) | $(\lvert\mathcal V\rvert,d_e)$ |
# | $\tau$ | the temperature of the softmax | number |
# | $\mathcal V$, $\lvert\mathcal V\rvert$ | the vocabulary and its size | set, integer |
# | $\mathbf q_m$ | the next-token distribution at position $m$ | $(\lvert\mathcal V\rvert,)$ |
# | $\nu$ | the index of a coordinate of a vector, $(h)_\nu$ or $u_\nu$ (Example 5.2, pooling) | integer |
# | $\rho$, $h_\rho$ | a reordering (permutation) of the positions; the sequence in that order | |
# | $p$ | the {term}`empirical measure` $\frac1n\sum_i\delta_{h_i}$ of a sequence | measure |
# | $\delta$ | $\delta_{h}$ is the unit mass at the vector $h$ | measure |
# | $s$, $u$ | a point of $\mathbb R^{d_e}$ that attention moves; a point the measure weighs (in Example 5.2, $u$ is the vector that $\mathrm N$ normalises) | $(d_e,)$ |
# | $\pi(\cdot;s)$ | the measure $p$ reweighted by the scores of the query $s$ (Appendix B) | measure |
# | $\mathfrak A(s;p)$, $\mathfrak P$, $\mathfrak f$, $\mathfrak{NN}$ | Appendix B's attention map, pooling, pooling integrand and network, written for measures | |
# | $\beta$, $p_{\min}$ | the sharpness of the soft maximum (Example B.2); the smallest weight of the measure | number |
# | $D$, $b$, $\varepsilon$ | the normalisation's learned scale and shift (a bias, added after the scale $D$: the bias $b$ of the book's notation table), and its small stabilising constant (Example 5.2) | $(d_e,d_e)$, $(d_e,)$, number |
# ```
#
# ```{admonition} In the paper's notation
# :class: note
# The paper writes the number of blocks as $K$, the same letter as the key matrix; the book writes
# $n_b$. In Example 5.2 the paper writes $m(u)$ and $\sigma^2(u)$ for the mean and the variance of
# the coordinates of a vector $u$ (this $m$ is not the position; the book's $\sigma$ is a standard
# deviation, as here). It writes the softmax as $\sigma$ (the book: softmax, in words).
# It writes the number of vectors in a sequence as $\ell$ (here $n$, a count, as on
# [2.5](05_temporal_structure.ipynb); the book keeps $\ell$ for the index of a layer) and the
# positions of a query and a key as $k$ and $l$ (here $i$ and $j$, as in Chapter 6), and the index
# of a coordinate of a vector as $i$ (Example 5.2) or $j$ (Examples 5.4 and B.2) (here $\nu$, as $i$ and $j$
# are positions).
# Chapter 6 ([6.2](../part1_chapter6/6_2_attention_mechanism.ipynb)) uses row vectors and writes
# the query of word $i$ as $q[i]=e[i]W^Q$ (not bold: the bold $\mathbf q_m$ of this page is the
# next-token distribution); the paper's $Qh_i$ is the same thing, as a column, with $Q=(W^Q)^\top$.
# The paper writes the vocabulary in bold, $\mathbf V$; the book writes $\mathcal V$. Appendix B's
# $\pi(\cdot;s)$ — kept here — is a reweighted measure, neither the number $\pi$ nor the model's
# distribution $\pi$ of [2.2](02_objective_kl.ipynb).
# ```
#
# *Source: Baptista, Stuart, Tran, "Large Language Models: A Mathematical Formulation", §5.1–5.2
# (Eqs. 5.2–5.7, Examples 5.2–5.4, Remarks 5.1, 5.6–5.7) and Appendix B (Eqs. B.1–B.5, Example B.2).*

# %%
import itertools

import matplotlib.pyplot as plt
import numpy as np
import sympy as sp
from IPython.display import Math, display

from nextword.attention import softmax
from nextword.booktools.plotting import use_book_style
from nextword.booktools.schematics.formulation import draw_set_transformer
from nextword.decoder import TransformerBlock, feed_forward, layer_norm, rms_norm
from nextword.positions import sinusoidal_encoding
from nextword.theory.formulation import (
    AttentionParams, BlockParams, att, attention_block, empirical_measure, max_pool, mean_pool,
    next_token_distribution, set_transformer, soft_max_pool,
)

use_book_style()
rng = np.random.default_rng(0)

# %% [markdown]
# ## A tiny example by hand
#
# The paper's attention map (5.2) sends a sequence of vectors $h_1,\dots,h_n$ (for a prefix,
# $n=m-1$) to a sequence of the same length:
#
# $$\mathrm{ATT}(h)_i=h_i+\sum_{j}\alpha_{ij}\,Vh_j,\qquad
# \alpha_{ij}=\frac{\exp\langle Qh_i,Kh_j\rangle}{\sum_{j'}\exp\langle Qh_i,Kh_{j'}\rangle}.$$
#
# It is Chapter 6's attention with two differences of bookkeeping: the input $h_i$ is added back (a
# residual connection), and the score is the plain inner product, with no division by the square
# root of the key width. Take two tokens in one dimension, $h=(1,2)$, and $Q=K=V=1$. The score of token $i$
# with token $j$ is $h_ih_j$:
#
# - token 1: scores $(1\cdot1, 1\cdot2)=(1,2)$, weights $(e^1,e^2)/(e^1+e^2)=(0.2689, 0.7311)$,
#   output $1+0.2689\cdot1+0.7311\cdot2=2.7311$;
# - token 2: scores $(2,4)$, weights $(0.1192, 0.8808)$, output $2+0.1192+0.8808\cdot2=3.8808$.

# %%
def attention_by_loop(tokens, Q=1.0, K=1.0, V=1.0):
    """(5.2) for one-dimensional tokens, term by term."""
    outputs = []
    for i, h_i in enumerate(tokens):
        scores = [(Q * h_i) * (K * h_j) for h_j in tokens]
        weights = np.exp(scores) / np.sum(np.exp(scores))
        outputs.append(h_i + sum(w * V * h_j for w, h_j in zip(weights, tokens)))
        print(f"  token {i + 1}: scores {scores}, weights {np.round(weights, 4)}, "
              f"output {outputs[-1]:.4f}")
    return np.array(outputs)


one_dim = AttentionParams(np.ones((1, 1)), np.ones((1, 1)), np.ones((1, 1)))
print("h = (1, 2):")
out_12 = attention_by_loop([1.0, 2.0])
assert np.allclose(out_12, att(np.array([[1.0], [2.0]]), one_dim).ravel(), atol=1e-12)

# %% [markdown]
# Now the two symmetries that drive this page. **Swap the tokens**, $h=(2,1)$: each token meets the
# same partners with the same scores, so the outputs swap too. **Duplicate every token**,
# $h=(1,2,1,2)$: token 1's scores are $(1,2,1,2)$, its weights $(e^1,e^2,e^1,e^2)$ normalised — the
# same shares for the values 1 and 2 as before — so its output is unchanged.

# %%
print("h = (2, 1):")
out_21 = attention_by_loop([2.0, 1.0])
print("h = (1, 2, 1, 2):")
out_1212 = attention_by_loop([1.0, 2.0, 1.0, 2.0])
assert np.allclose(out_21, out_12[::-1], atol=1e-12)  # swapped inputs, swapped outputs
assert np.allclose(out_1212, np.tile(out_12, 2), atol=1e-12)  # duplicated: the same outputs

# %% [markdown]
# Attention as (5.2) prints it — every token attends to every token, and no vector carries its
# position — only ever asks *which* vectors are present and in what proportions, never *where*. The
# rest of the page shows that this survives the whole model of §5.1–5.2, and (in its last section)
# that a causal mask or positional encodings (§5.3) end it.
#
# ## The set transformer, step by step (5.3)–(5.7)
#
# The paper builds its next-token model from this map in two stages. The **attention block**
# (5.3a–d) applies ATT, normalises each vector (N), adds a small {term}`feed-forward network`
# applied to each vector separately (NN, with its residual), and normalises again. The **set
# transformer** (5.6) stacks $n_b$ blocks with their own parameters, then **pools** the sequence
# into one vector — the mean (or the coordinate-wise maximum) over positions (Example 5.4). A linear
# map $B$ gives one score per token of the vocabulary, and a softmax with temperature $\tau$ turns
# the scores into the next-token distribution $\mathbf q_m$ (5.7); the model's next-token probability
# is this $\mathbf q_m$ applied to the embedded prefix (5.1b). (Remark 5.6: $B$ could be folded into
# $\mathbf T$; the paper keeps them apart because $\mathbf T$ alone serves other tasks. Remark 5.7:
# the parameters are those of all blocks and of $B$, while $\tau$ is chosen by hand.) Inside a
# block only ATT mixes positions; N and NN act on each position alone. After the blocks, pooling
# merges all positions into one vector, and $B$ and the softmax act on that single vector.

# %%
fig, ax = plt.subplots(figsize=(12, 3.8))
draw_set_transformer(2, pooling="mean", ax=ax)
plt.show()

# %% [markdown]
# **Figure 2.4.1.** The next-token model of §5.1–5.2: the set transformer $\mathbf T$ with $n_b=2$
# blocks and pooling, then $B$ and the softmax. The prefix's vectors enter
# block $\mathbf A_1$, drawn open: the attention map (the top box, the only green one: the
# only step that lets positions exchange information), then normalisation, the feed-forward network
# with its residual, and normalisation again (5.3a–d). Block $\mathbf A_2$ repeats the steps with its
# own parameters. Pooling turns the sequence into one vector, $B$ into $|\mathcal V|$ scores, the
# softmax into $\mathbf q_m$ (5.6)–(5.7). The line under the boxes is (5.6) for these two blocks
# ($P$ is the pooling).
#
# ## The attention map (5.2) and its residual
#
# We check the library's `att` against (5.2) written out term by term, in $d_e=4$ dimensions with
# $c=3$ (the width of queries and keys), and the structural fact behind everything below:
# $\mathrm{ATT}(h)_i-h_i$ is a {term}`convex combination` of the values $Vh_j$, an average under a
# probability vector over the tokens. The same $Q$, $K$, $V$ serve every length $m$ (Remark 5.1):
# `att` takes a sequence of any length with one set of parameters.

# %%
d_e, c, c_ff, n = 4, 3, 16, 6  # n = 6 vectors in the sequence
block = BlockParams.random(d_e, c, c_ff, rng)
Q, K, V = block.att.Q, block.att.K, block.att.V
h = rng.standard_normal((n, d_e))

loop = np.empty_like(h)
for i in range(n):
    s = np.array([np.exp((Q @ h[i]) @ (K @ h[j])) for j in range(n)])  # exp<Qh_i, Kh_j>
    loop[i] = h[i] + sum(s[j] * (V @ h[j]) for j in range(n)) / s.sum()  # (5.2a)-(5.2b)
out = att(h, block.att)
assert np.allclose(out, loop, rtol=1e-12, atol=1e-12)
alpha = softmax((h @ Q.T) @ (h @ K.T).T)  # (n, n)
assert np.allclose(alpha.sum(1), 1)
assert (alpha > 0).all()
assert np.allclose(out - h, alpha @ (h @ V.T))
assert np.abs(out - loop).max() < 1e-12
print("max |ATT(h) - (5.2) term by term| < 1e-12 (round-off); rows of alpha sum to 1")

# %% [markdown]
# ## The attention block (5.3a–d) is Chapter 6's post-norm block
#
# ATT (5.3a) → N (5.3b) → $h+\mathrm{NN}(h)$ (5.3c) → N (5.3d) is the {term}`post-norm` block of
# Chapter 6 with one head, no output projection and no causal mask, NN being the two-layer network
# of Example 5.3. With $c=d_e$ it is exactly `nextword.decoder.layers.TransformerBlock(pre_norm=False,
# causal=False)` once its output matrix is the identity and the $1/\sqrt{d_k}$ by which it scales
# the scores is cancelled by multiplying its query matrix by $\sqrt{d_k}$ ($d_k$ is Chapter 6's key
# width; with one head and $c=d_e$, $d_k=d_e$):

# %%
sq = BlockParams.random(d_e, d_e, c_ff, rng)  # c = d_e
tb = TransformerBlock(d_e, 1, c_ff, rng=rng, norm="layer", pre_norm=False, causal=False,
                      activation="relu", eps=sq.eps)
tb.attn.W_q, tb.attn.W_k, tb.attn.W_v = sq.att.Q.T * np.sqrt(d_e), sq.att.K.T, sq.att.V.T
tb.attn.W_o[...] = np.eye(d_e)
tb.W1[...], tb.b1[...], tb.W2[...], tb.b2[...] = sq.W1.T, sq.b1, sq.W2.T, sq.b2
diff = np.abs(attention_block(h, sq) - tb(h)).max()
assert diff < 1e-12
print("(5.3a-d) vs post-norm TransformerBlock: max |difference| < 1e-12 (round-off)")

# %% [markdown]
# The normalisation N is layer normalisation: subtract the mean of the vector's coordinates,
# divide by their standard deviation, then rescale and shift. (Example 5.2 prints it with sums
# where averages are meant; [checked below](#checking-the-paper).)
#
# ## The set transformer cannot see order
#
# Permuting the tokens permutes the output of ATT (the softmax weights move with the keys, the
# residual with the query), and N and NN act token by token, so every block is *equivariant*:
# $\mathbf A(h_{\rho})=\mathbf A(h)_{\rho}$ for every reordering $\rho$. Mean and max pooling
# forget the order, so $\mathbf T$ and $\mathbf q_m$ in (5.6)–(5.7) — the softmax of
# Definition 5.5 applied to $B\mathbf T/\tau$ — are *invariant*. Checked for
# every one of the $6!=720$ orders of a 6-token sequence through two blocks:

# %%
blocks = [block, BlockParams.random(d_e, c, c_ff, rng)]
B = rng.standard_normal((10, d_e))  # the linear map B of (5.7), |V| = 10
A_h = attention_block(h, block)
T_mean, T_max = set_transformer(h, blocks, "mean"), set_transformer(h, blocks, "max")
worst = 0.0
for perm in itertools.permutations(range(n)):
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
# With any embedding of the three words, both orders get the same distribution for the next token:

# %%
vocab_words = ["dog", "bites", "man"]
phi = rng.standard_normal((len(vocab_words), d_e))  # rows = token embeddings
dog_bites_man = phi[[0, 1, 2]]
man_bites_dog = phi[[2, 1, 0]]
q1 = next_token_distribution(dog_bites_man, blocks, B)
q2 = next_token_distribution(man_bites_dog, blocks, B)
assert np.allclose(q1, q2, atol=1e-14)
print("q(. | dog bites man) == q(. | man bites dog):", bool(np.allclose(q1, q2, atol=1e-14)))

# %% [markdown]
# ## Pooling (Example 5.4, Example B.2)
#
# Pooling turns the whole sequence into one vector. The mean over positions and the coordinate-wise
# maximum both ignore order and give the same answer when every token is repeated, so they depend
# on the sequence only through which vectors occur and in what proportions (the maximum, only
# through which occur); Appendix B's linear form (B.5),
# $\mathfrak P(p)=\int\mathfrak f\,dp$, gives mean pooling with $\mathfrak f(h)=h$. For max pooling
# Appendix B takes the limit $\beta\to\infty$ of a log-sum-exp,
# $\frac1\beta\log\int e^{\beta (h)_\nu}\,dp(h)$ for coordinate $\nu$. At a finite $\beta$ (the
# library's `soft_max_pool`) this is a soft maximum, which tends to the coordinate-wise maximum as
# $\beta\to\infty$ (the gap is at most $\log(1/p_{\min})/\beta$, here $\log 6/\beta$ for 6 tokens
# of weight $\frac16$) and to the mean as $\beta\to0$.

# %%
hh = np.concatenate([h, h])  # every token twice: the same empirical measure
assert np.allclose(mean_pool(hh), mean_pool(h))
assert np.allclose(max_pool(hh), max_pool(h))
betas = np.geomspace(0.01, 1000, 41)
gaps = np.array([np.max(max_pool(h) - soft_max_pool(h, b)) for b in betas])
assert np.all(gaps >= -1e-12)
assert np.all(gaps <= np.log(n) / betas + 1e-12)
assert np.allclose(soft_max_pool(h, 1e-6), mean_pool(h), atol=1e-5)
print(f"soft-max pooling gap to max: beta=1: {gaps[np.argmin(abs(betas - 1))]:.4f}, "
      f"beta=1000: {gaps[-1]:.2e} (bound log(n)/beta = {np.log(n) / 1000:.2e})")

# %% [markdown]
# ## Attention as a map on distributions (Appendix B)
#
# The tiny example showed that duplicating every token changes nothing. Appendix B makes that the
# definition: (B.1) encodes a sequence as its {term}`empirical measure` ((B.2) for a prefix; (B.3)
# writes the set transformer as pooling after blocks that act on measures)
# $p=\frac1n\sum_i\delta_{h_i}$ — "each of the $n$ vectors, with weight $1/n$" — and (B.4a)
# defines attention as the map $s\mapsto s+V\,\mathbb E_{u\sim\pi(\cdot;s)}[u]$ with
# $\pi(u;s)\propto e^{\langle Qs,Ku\rangle}p(u)$. Everything depends on the sequence only through
# $p$. Sympy, in one dimension with two tokens, compares duplicating every token with duplicating
# one:

# %%
h1, h2, qs, ks, vs = sp.symbols("h1 h2 Q K V", real=True)


def att_scalar(seq, k):
    """(5.2) for one-dimensional symbolic tokens, output k."""
    w = [sp.exp(qs * seq[k] * ks * x) for x in seq]
    return seq[k] + sum(wi * vs * x for wi, x in zip(w, seq)) / sum(w)


every_twice = sp.simplify(att_scalar([h1, h2, h1, h2], 0) - att_scalar([h1, h2], 0))
one_twice = sp.factor(sp.simplify(att_scalar([h1, h1, h2], 0) - att_scalar([h1, h2], 0)))
display(Math(r"\mathrm{ATT}(h_1,h_2,h_1,h_2)_1-\mathrm{ATT}(h_1,h_2)_1=" + sp.latex(every_twice)))
display(Math(r"\mathrm{ATT}(h_1,h_1,h_2)_1-\mathrm{ATT}(h_1,h_2)_1=" + sp.latex(one_twice)))
assert every_twice == 0
assert one_twice != 0

# %% [markdown]
# Duplicating *every* token cancels; duplicating *one* token does not — it changes the measure
# (weights $\frac23,\frac13$ instead of $\frac12,\frac12$). Numerically, through the whole block, and
# with the weighted form: `empirical_measure` merges repeated rows into weights, and the block applied
# to the distinct points with those weights reproduces the block on the repeated sequence.

# %%
reps = np.concatenate([h, h, h])
assert np.allclose(attention_block(reps, block)[:n], A_h, atol=1e-12)
assert np.allclose(set_transformer(reps, blocks), T_mean, atol=1e-12)
uneven = np.concatenate([h, h[:2]])  # tokens 0 and 1 twice: a different measure
points, weights = empirical_measure(uneven)
assert np.allclose(points, h)
assert np.allclose(weights * len(uneven), [2, 2, 1, 1, 1, 1])
via_measure = attention_block(points, block, weights=weights)
assert np.allclose(via_measure, attention_block(uneven, block)[:n], atol=1e-12)
moved = np.abs(attention_block(uneven, block)[:n] - A_h).max()
assert moved > 1e-3
assert np.abs(attention_block(reps, block)[:n] - A_h).max() < 1e-12
print("every token x3: max change < 1e-12 (round-off); "
      f"two tokens doubled: max change {moved:.3f}, reproduced by the weighted measure")

# %% [markdown]
# The transport picture in two dimensions: each token moves to $\mathrm{ATT}(h)_i$, pushed by a
# vector field that depends on the tokens only through the measure (and on $Q$, $K$, $V$); a copy of the cloud with every point doubled moves
# identically.

# %%
d2 = 2
att2 = AttentionParams(*(rng.standard_normal((2, 2)) * s for s in (1.2, 1.2, 0.6)))
cloud = rng.standard_normal((12, d2))
moved_cloud = att(cloud, att2)
assert np.allclose(att(np.concatenate([cloud, cloud]), att2)[:12], moved_cloud)
fine = np.linspace(-3, 3, 15)
grid = np.array([[x_, y_] for x_ in fine for y_ in fine])  # test points s, pushed by A(.; p)
grid_scores = grid @ att2.Q.T @ (cloud @ att2.K.T).T  # (G, n) scores <Qs, Ku>
field = softmax(grid_scores) @ (cloud @ att2.V.T)  # V E_{pi(.;s)}[u]
field_at_tokens = softmax(cloud @ att2.Q.T @ (cloud @ att2.K.T).T) @ (cloud @ att2.V.T)
assert np.allclose(moved_cloud - cloud, field_at_tokens, atol=1e-12)  # each token follows the field
far = np.linalg.norm(grid - cloud.mean(axis=0), axis=1) > 2.5  # grid points far from the cloud
step_tokens = np.linalg.norm(field_at_tokens, axis=1).mean()
step_far = np.linalg.norm(field[far], axis=1).mean()
print(f"mean length of the displacement: at the tokens {step_tokens:.3f}, "
      f"at grid points more than 2.5 from the cloud's centre {step_far:.3f}")
assert step_tokens < 0.25 * step_far  # Figure 2.4.2: the field is weak in the cloud, strong far from it
# why: each displacement is V times a weighted average of the tokens. At the tokens the weights
# spread over the whole cloud, so that average stays near the cloud's centre, which is near the
# origin; far away the weights pile onto a few outer tokens and the average moves out to them
weights_tokens = softmax(cloud @ att2.Q.T @ (cloud @ att2.K.T).T)  # (12, 12) attention weights
weights_far = softmax(grid_scores[far])
top_weight_tokens, top_weight_far = weights_tokens.max(axis=1), weights_far.max(axis=1)
centre = cloud.mean(axis=0)
spread = np.linalg.norm(cloud - centre, axis=1).mean()  # how far the tokens lie from the centre
avg_off_tokens = np.linalg.norm(weights_tokens @ cloud - centre, axis=1).mean()
avg_off_far = np.linalg.norm(weights_far @ cloud - centre, axis=1).mean()
v_of_mean = np.linalg.norm(att2.V @ centre)
print(f"largest attention weight: at the tokens at most {top_weight_tokens.max():.2f} (equal weights: "
      f"1/12 = {1 / 12:.2f}), far from the cloud {top_weight_far.mean():.2f} on average")
print(f"distance of the weighted average of the tokens from the cloud's centre: {avg_off_tokens:.2f} "
      f"at the tokens, {avg_off_far:.2f} far from the cloud (the tokens lie {spread:.2f} from it on "
      f"average); the centre itself is {np.linalg.norm(centre):.2f} from the origin, and V times it "
      f"has length {v_of_mean:.3f}")
assert top_weight_tokens.max() < 0.3 and top_weight_far.mean() > 0.5 and v_of_mean < 0.5 * step_tokens
assert avg_off_tokens < 0.5 * spread < spread < avg_off_far  # near the centre inside, out at the edge far away

# %%
MAGNIFY = 5  # the tokens' displacements are short: drawn five times their length to be seen
fig, axes = plt.subplots(1, 2, figsize=(12, 4.6), layout="constrained")
axes[0].quiver(grid[:, 0], grid[:, 1], field[:, 0], field[:, 1], color="0.6", angles="xy",
               scale_units="xy", scale=1.5, width=0.004)
axes[0].scatter(*cloud.T, color="C0", zorder=3, label="tokens $h_i$ (the measure $p$)")
for start, step in zip(cloud, moved_cloud - cloud):
    axes[0].annotate("", start + MAGNIFY * step, start, zorder=4, arrowprops=dict(
        arrowstyle="-|>", color="C1", lw=2, mutation_scale=14, shrinkA=0, shrinkB=0))
axes[0].plot([], [], color="C1", lw=2, label=rf"$\mathrm{{ATT}}(h)_i-h_i$, drawn {MAGNIFY}$\times$ longer")
axes[0].scatter(*moved_cloud.T, color="C3", marker="x", s=40, lw=1.5, zorder=5,
                label=r"$\mathrm{ATT}(h)_i$")
axes[0].set_xlim(-3, 3)
axes[0].set_ylim(-3, 3)
axes[0].set_xlabel("coordinate 1")
axes[0].set_ylabel("coordinate 2")
axes[0].set_title(r"(B.4a): $s \mapsto s + V\,\mathbb{E}_{u\sim\pi(\cdot;s)}[u]$")
axes[0].legend(loc="lower left", fontsize=8, frameon=True, framealpha=0.9)
axes[1].loglog(betas, gaps, "o-", ms=3, label="max pool - soft-max pool")
axes[1].loglog(betas, np.log(n) / betas, "k--", label=r"bound $\log 6/\beta$")
axes[1].set_xlabel(r"$\beta$")
axes[1].set_ylabel("largest coordinate gap")
axes[1].legend()
plt.show()

# %% [markdown]
# **Figure 2.4.2.** Left: attention (5.2)/(B.4a) on a 2-D empirical measure of 12 tokens (blue
# dots). The grey arrows are the displacement $V\mathbb E_{\pi(\cdot;s)}[u]$ the measure induces at
# points $s$ of a grid (a vector field that depends on the tokens only through $p$; drawn at two
# thirds of their length); the orange crosses show where each token goes, $\mathrm{ATT}(h)_i$, and
# the vermilion arrow from each dot is its displacement $\mathrm{ATT}(h)_i-h_i$ drawn five times
# longer than it is (it passes through the cross), so that it can be seen. The two kinds of arrow
# are drawn to different scales (two thirds against five times), so near a token the grey arrows
# look much shorter than its vermilion one; each token still follows the field at its own place.
# Look at the middle of the cloud (what follows holds for this draw of the tokens and of $Q$, $K$,
# $V$; another random draw can have a strong field inside the cloud too). Each displacement is $V$
# times a weighted average of the tokens. At the tokens the weights are spread over the whole
# cloud (the largest weight any token gives is 0.21, against 1/12 = 0.08 for equal weights;
# printed above), so that average stays near
# the cloud's centre (0.21 from it on average, while the tokens lie 0.90 from it), and this cloud
# is centred near the origin (0.06 from it): the displacements are short (0.057 on average,
# against 0.372 far from the cloud) and the crosses sit close to their dots. Far from the cloud
# the weights pile onto its outermost tokens (0.58 on average for the top one), the average moves
# out to them (1.19 from the centre) and the field is strong. Right: Example B.2 — the gap between max pooling and the log-sum-exp pooling (blue) stays
# under the bound $\log 6/\beta$ (dashed black) and follows it for large $\beta$.
#
# ## What survives a causal mask or positions
#
# Everything above used (5.2) as printed: every token attends to every token and nothing encodes
# order. A decoder uses a {term}`causal mask` (§5.3.3) and
# {term}`positional encodings <positional encoding>` (§5.3.1), the subject of the next page,
# [2.5](05_temporal_structure.ipynb). We test the three properties in all
# four settings (positions = sinusoidal encodings added to the embeddings after the permutation: a
# position belongs to the slot, not to the token).

# %%
pe = sinusoidal_encoding(2 * n, d_e)
perm = np.array([3, 0, 5, 1, 4, 2])


def pipeline(seq, causal, positions):
    """One attention block, optionally masked, optionally with positions added."""
    x = seq + pe[: len(seq)] if positions else seq
    return attention_block(x, block, causal=causal)


rows = []
for causal in (False, True):
    for positions in (False, True):
        base = pipeline(h, causal, positions)
        permuted = pipeline(h[perm], causal, positions)
        equiv = np.allclose(permuted, base[perm], atol=1e-10)
        inv = np.allclose(mean_pool(permuted), mean_pool(base), atol=1e-10)
        doubled_out = pipeline(np.concatenate([h, h]), causal, positions)
        dup = np.allclose(doubled_out, np.concatenate([base, base]), atol=1e-10)
        rows.append((causal, positions, equiv, inv, dup))
        print(f"causal={causal!s:5s} positions={positions!s:5s}: equivariant {equiv!s:5s} "
              f"pooled-invariant {inv!s:5s} duplication-invariant {dup}")
assert rows[0][2:] == (True, True, True)
assert all(r[2:] == (False, False, False) for r in rows[1:])

# %% [markdown]
# Only the unmasked, position-free block has the set and measure symmetries (duplication is tested
# on the whole doubled sequence: both copies must reproduce the original outputs). With a causal
# mask, token $i$ averages over $h_{1:i}$ — a different measure for each $i$ — so order matters;
# the first copy of $(h,h)$ still reproduces $h$'s outputs (it cannot see the second), but the second
# copy attends to $h$ plus a prefix of $h$, a different measure. With positions, the "same" token in
# two slots carries two different vectors. So Appendix B's measure picture describes the set
# transformer of §5.2, where every token attends to every token and none carries its position, not
# the masked decoder of Chapter 6 that generates text.

# %%
doubled = attention_block(np.concatenate([h, h]), block, causal=True)
causal_base = attention_block(h, block, causal=True)
first_ok, second_ok = np.allclose(doubled[:n], causal_base), np.allclose(doubled[n:], causal_base)
assert first_ok and not second_ok
print(f"causal, no positions, (h, h): first copy reproduces h's outputs {first_ok}; "
      f"second copy {second_ok}")

# %% [markdown]
# ## Key takeaways
#
# - The paper's attention map (5.2) is Chapter 6's attention plus a residual, with unscaled scores;
#   the attention block (5.3) is Chapter 6's post-norm block with one head, no output projection
#   and no mask.
# - The set transformer is blocks, then pooling (5.6); a linear map and a softmax turn its vector
#   into the next-token distribution (5.7). Only the attention step lets positions exchange
#   information.
# - Without positions or a mask every block is permutation-equivariant and the pooled model is
#   permutation-invariant: it cannot tell "dog bites man" from "man bites dog".
# - Even more, the model sees a sequence only as its empirical measure: repeating every token
#   changes nothing, repeating one token does. A causal mask or positional encodings break all
#   three symmetries, which is what a language model needs.

# %% [markdown]
# ## Check your understanding
#
# 1. In the tiny example with $h=(1,2)$ and $Q=K=V=1$, what is $\mathrm{ATT}(h)_1$ if $V=0$?
#    And if $Q=0$?
#
#    ```{dropdown} Answer
#    With $V=0$ the sum vanishes and only the residual is left: $\mathrm{ATT}(h)_1=h_1=1$. With
#    $Q=0$ all scores are 0, the weights are equal, $(\tfrac12,\tfrac12)$, and
#    $\mathrm{ATT}(h)_1=1+\tfrac12(1+2)=\tfrac52$.
#    ```
#
# 2. Which steps of the set transformer would you have to change so that the model can tell
#    "dog bites man" from "man bites dog"?
#
#    ```{dropdown} Answer
#    Something must depend on position: add positional encodings to the inputs (then the same word in
#    two slots is two different vectors), or use a causal mask in ATT (then each token sees a
#    different prefix), or replace the pooling by a map that is not symmetric in the positions (e.g.
#    read the last position). Any one of these breaks the invariance; the table of the last
#    section shows it for the first two. The last of them breaks it only partly: with no mask and
#    no positions the blocks are equivariant, so the last position's output depends only on the
#    last token and on the unordered prefix. It separates "dog bites man" from "man bites dog"
#    (their last words differ) but still gives "dog bites man" and "bites dog man" the same
#    distribution.
#    ```
#
# 3. Repeating every token of a prefix leaves the set transformer's output unchanged. Why is that a
#    problem for a language model, beyond word order?
#
#    ```{dropdown} Answer
#    "no" and "no no no" — or a sentence and the same sentence said twice — get the same next-token
#    distribution: the model cannot count. Only the proportions of the vectors matter (the
#    empirical measure), not how many there are.
#    ```

# %% tags=["hide-cell"]
# The numbers the answers state. Question 1: ATT(h)_1 for h = (1, 2) with V = 0, then with Q = 0.
ones = np.ones((1, 1))
tokens_12 = np.array([[1.0], [2.0]])
v_zero = att(tokens_12, AttentionParams(ones, ones, 0 * ones))[0, 0]
q_zero = att(tokens_12, AttentionParams(0 * ones, ones, ones))[0, 0]
print(f"Q1: V = 0 gives ATT(h)_1 = {v_zero:.4f}; Q = 0 gives {q_zero:.4f}")
assert v_zero == 1.0 and abs(q_zero - 2.5) < 1e-12

# %% [markdown]
# ## Checking the paper
#
# **Example 5.2: layer normalisation with sums.** Example 5.2 defines layer normalisation with
# $m(u)=\sum_\nu u_\nu$ and $\sigma^2(u)=\sum_\nu(u_\nu-m(u))^2$ — sums, where layer normalisation (Ba et
# al.; `layer_norm`) uses averages $\frac1{d_e}\sum_\nu$. Taken literally, the printed map does not
# centre its output and is not invariant to adding a constant to every coordinate, which is the
# point of the mean shift. Sympy on a generic $u\in\mathbb R^3$:

# %% tags=["hide-cell"]
u = sp.Matrix(sp.symbols("u1:4", real=True))
t = sp.Symbol("t", real=True)


def ln_printed(v):
    """(5.4) as printed, without D, b and epsilon: m(u) and sigma^2(u) are sums."""
    mu = sum(v)
    return (v - mu * sp.ones(3, 1)) / sp.sqrt(sum((x - mu) ** 2 for x in v))


def ln_mean(v):
    """(5.4) with averages: the layer normalisation of the library."""
    mu = sum(v) / 3
    return (v - mu * sp.ones(3, 1)) / sp.sqrt(sum((x - mu) ** 2 for x in v) / 3)


display(Math(r"\text{sum of outputs, (5.4) as printed: }"
             + sp.latex(sp.factor(sp.simplify(sum(ln_printed(u)))))))
display(Math(r"\text{sum of outputs, with averages: }" + sp.latex(sp.simplify(sum(ln_mean(u))))))
shift = sp.simplify(ln_mean(u + t * sp.ones(3, 1)) - ln_mean(u))
assert shift == sp.zeros(3, 1)

# %% tags=["hide-cell"]
num = {s_: v_ for s_, v_ in zip(u, (1, 2, 3))}
printed_val = np.array(ln_printed(u).subs(num), dtype=float).ravel()
shifted_val = np.array(ln_printed(u + 10 * sp.ones(3, 1)).subs(num), dtype=float).ravel()
print(f"printed (5.4) at u = (1,2,3): {np.round(printed_val, 4)}; "
      f"at u + 10: {np.round(shifted_val, 4)}")
assert np.allclose(np.array(ln_mean(u).subs(num), dtype=float).ravel(),
                   layer_norm(np.array([1.0, 2, 3]), eps=0.0))
assert not np.allclose(printed_val, shifted_val)

# %% [markdown]
# With averages, the output has zero mean, is shift invariant, and equals `layer_norm`. We use that
# reading (recorded in `book/ERRATA.md`). The same convention decides (5.5): with sums, setting
# $m=0$, $b=0$, $\varepsilon=0$, $D=I$ gives $u/\Vert u\Vert_2$ (the unit sphere, as printed); with
# averages it gives $u/\sqrt{\tfrac1{d_e}\sum u_\nu^2}=\sqrt{d_e}\,u/\Vert u\Vert_2$, which is what
# RMSNorm usually denotes (radius $\sqrt{d_e}$). `rms_norm` offers both:

# %% tags=["hide-cell"]
x = rng.standard_normal(d_e)
assert np.allclose(rms_norm(x, eps=0.0, unit=True), x / np.linalg.norm(x))
assert np.allclose(rms_norm(x, eps=0.0), np.sqrt(d_e) * x / np.linalg.norm(x))
print(f"|rms_norm(x, unit=True)| = {np.linalg.norm(rms_norm(x, eps=0.0, unit=True)):.6f}, "
      f"|rms_norm(x)| = {np.linalg.norm(rms_norm(x, eps=0.0)):.6f} = sqrt(d_e)")

# %% [markdown]
# **Example 5.4: the index of mean pooling.** Example 5.4 writes mean pooling of $h_{1:m-1}$ as
# $\frac1m\sum_{i=1}^m h_i$; the sequence has $m-1$ elements, so the sum must stop at $m-1$ and the
# factor is $\frac1{m-1}$ (an index slip; its max-pooling formula runs to $h_m$ too). Read
# literally, "$\frac1m$ times the sum of the $m-1$ tokens" is $(m-1)/m$ times the mean and depends
# on the length, which breaks the length independence the example asks for:

# %% tags=["hide-cell"]
def literal_pool(seq):
    """Example 5.4 read literally: (1/m) times the sum of the m - 1 tokens."""
    return seq.sum(0) / (len(seq) + 1)


literal_change = np.abs(literal_pool(hh) - literal_pool(h)).max()
print(f"literal (1/m) pooling: |P(h,h) - P(h)| = {literal_change:.4f} (not length independent)")
assert literal_change > 1e-3
assert np.allclose(mean_pool(hh), mean_pool(h))  # with 1/(m-1) the length does not matter

# %% [markdown]
# **Example B.2: max pooling is not of the form (B.5).** Example B.2 says max pooling is (B.5),
# $\mathfrak P(p)=\int\mathfrak f(h)\,dp(h)$, with the "elementwise operation"
# $\mathfrak f(h)_\nu=\max((h)_\nu)$. A maximum of the single number $(h)_\nu$ is $(h)_\nu$, so that choice
# gives the mean again; and no pointwise $\mathfrak f$ can work, because (B.5) is linear in $p$ while
# the maximum is not: for $p_1=\delta_0$, $p_2=\delta_1$ on $\mathbb R$, every (B.5) satisfies
# $\mathfrak P(\tfrac12p_1+\tfrac12p_2)=\tfrac12\mathfrak P(p_1)+\tfrac12\mathfrak P(p_2)$, but the
# maximum of the mixture is $1\ne\tfrac12(0+1)$. The example's second formula, the limit of
# $\frac1\beta\log\int e^{\beta (h)_\nu}dp(h)$ (a nonlinear functional), is the right one (Figure 2.4.2):

# %% tags=["hide-cell"]
two_points = np.array([[0.0], [1.0]])
p1_max, p2_max = max_pool(two_points[:1]), max_pool(two_points[1:])
mix_max = max_pool(two_points)  # the mixture 1/2 delta_0 + 1/2 delta_1
print(f"max of the mixture: {mix_max[0]:.1f}; average of the two maxima (what any (B.5) gives): "
      f"{(p1_max[0] + p2_max[0]) / 2:.1f}; f(h) = max((h)_nu) = (h)_nu gives the mean "
      f"{mean_pool(two_points)[0]:.1f}")
assert mix_max[0] != (p1_max[0] + p2_max[0]) / 2
assert np.isclose(soft_max_pool(two_points, 1e4)[0], mix_max[0], atol=1e-3)

# %% [markdown]
# **Appendix B, (B.4c).** Appendix B states that evaluating (B.4a–d) at each $h_i$ gives back the
# block (5.3). Steps (a), (b) and (d) do, but (B.4c) reads
# $\mathfrak A(s;p)\leftarrow s+\mathfrak{NN}(\mathfrak A(s;p))$: the residual adds the *input*
# $s$, whereas (5.3c) adds the current value, $h\leftarrow h+\mathrm{NN}(h)$. The two differ:

# %% tags=["hide-cell"]
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
# argument depends on the choice; we read (B.4c) as
# $\mathfrak A\leftarrow\mathfrak A+\mathfrak{NN}(\mathfrak A)$ so that the appendix matches (5.3)
# (ledger row in `book/ERRATA.md`).

# %% [markdown]
# ## Reproducibility
#
# Everything on this page is exact or a round-off bound: random parameters and inputs come from the
# seeded generator `rng` (seed 0), nothing is trained. Library: `nextword.theory.formulation`
# (`att`, `attention_block`, `set_transformer`, `next_token_distribution`, pooling,
# `empirical_measure`), `nextword.decoder` (`TransformerBlock`, `layer_norm`, `rms_norm`).

# %% tags=["hide-cell"]
print(f"d_e = {d_e}, c = {c}, c' = {c_ff}, n = {n}; blocks: {len(blocks)}; |V| = {B.shape[0]}")
