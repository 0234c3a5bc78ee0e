# %% [markdown]
# # 6.6 Context representation: the decoder block and what it keeps
#
# **The question.** How is one layer of a transformer built, what does the stack of layers keep of the
# context — and what does each part of a layer contribute?
# An RNN squeezes the whole past into one vector; a transformer keeps a vector for every position and
# lets every layer read all of them. That choice decides how much memory a model needs, how its cost
# grows with the length of the text, and what breaks when a part is missing. Without this page the
# pieces of the earlier pages (attention, the mask, positions) float free: here they are assembled into
# the {term}`decoder block` that language models stack, and each part is removed in turn to see what it
# was doing.
#
# ```{admonition} Learning goals
# :class: tip
# After this page you can
# - compute a layer normalisation and a residual addition by hand, and draw a pre-norm and a post-norm
#   decoder block;
# - count the parameters, the memory and the FLOPs of one layer, and say when attention's $T^2$ term
#   dominates;
# - recognise, from a model's training and generation losses, what goes wrong without the causal mask,
#   the positions, several heads or the residual connections.
# ```
#
# **Builds on:** [§6.2](6_2_attention_mechanism.ipynb) (attention), [§6.3](6_3_causal_masking.ipynb)
# (the causal mask), [§6.4](6_4_multi_head.ipynb) (multi-head attention and `AgreementTask`),
# [§6.5](6_5_positional_encoding.ipynb) (positional encodings) · the RNN of the previous chapter,
# mean and variance, matrix products. **Reading time:** about 35 minutes.
#
# *Source: Chapter 6, §6.6 (the block formula, Figs. 6.29–6.32, Exercises 8, 11 and 12).*

# %%
import os
import time

import matplotlib.pyplot as plt
import numpy as np
import sympy as sp
import torch
from IPython.display import Math, display
from torch.utils.flop_counter import FlopCounterMode

from nextword.attention import KVCache, MultiHeadAttention, softmax
from nextword.booktools.display import produced
from nextword.booktools.plotting import use_book_style
from nextword.booktools.schematics.positions import draw_decoder_block
from nextword.chapter6 import RUNNING_EXAMPLE, AgreementTask, RunningExampleSource, rnn_states
from nextword.decoder import DecoderConfig, DecoderLM, TransformerBlock, feed_forward, layer_norm
from nextword.positions import sinusoidal_encoding
from nextword.torch.probes.ablation import ABLATIONS, ablated_config, prefix_nll, token_nll, with_config
from nextword.torch.models.lm import LMConfig, TinyLM
from nextword.torch.training.token_lm import train_lm

use_book_style()
torch.set_num_threads(1)  # tiny models: one thread is fastest on a shared 2-core machine
FULL = os.environ.get("FULL", "0") == "1"
# The seed of every training on this page. The page shows seed 0; tests/test_notebook_seeds.py
# re-runs it with NEXTWORD_SEED=1 and 2, so every assert about what training produces holds for
# three seeds.
SEED = int(os.environ.get("NEXTWORD_SEED", "0"))

# %% [markdown]
# ## A tiny example by hand: one position through a block
#
# A decoder block works on a **stream** of vectors, one per position, of width $d_{\text{model}}$ (here
# 4). Two operations hold it together.
#
# **{term}`Layer normalisation`** rescales one position's vector to mean 0 and variance 1 over its
# coordinates. For $h=(1,3,5,7)$: the mean is 4, the variance $\big((-3)^2+(-1)^2+1^2+3^2\big)/4=5$, so
# $\mathrm{LN}(h)=(-3,-1,1,3)/\sqrt5$. (The library adds a tiny $\epsilon=10^{-5}$ to the variance, as
# torch does, and then multiplies by a learned gain and adds a learned bias, 1 and 0 at the start.)

# %%
h = [1.0, 3.0, 5.0, 7.0]
mean = sum(h) / len(h)
variance = sum((x - mean) ** 2 for x in h) / len(h)
by_hand = [(x - mean) / variance**0.5 for x in h]
print(f"mean {mean}, variance {variance}, LN(h) = {np.round(by_hand, 4)}")
display(Math(r"\mathrm{LN}(h) = " + sp.latex(sp.Matrix([[-3, -1, 1, 3]]) / sp.sqrt(5))))
assert np.allclose(layer_norm(np.array(h)), by_hand, atol=1e-5)  # the library (with its ε)

# %% [markdown]
# **The residual connection** adds a sub-layer's output to the stream instead of replacing it. If the
# attention sub-layer returns $a=(0.5, 0, 0, -0.5)$ for this position, the stream becomes
# $h+a=(1.5, 3, 5, 6.5)$:

# %%
attention_output = [0.5, 0.0, 0.0, -0.5]
stream_after = [x + a for x, a in zip(h, attention_output)]
print("h + a =", stream_after)
assert stream_after == [1.5, 3.0, 5.0, 6.5]

# %% [markdown]
# what $h$ carried is still there, nudged by what attention found. This running
# vector is the {term}`residual stream`; every sub-layer reads it and writes a correction into it. The
# second sub-layer, the {term}`feed-forward network` (FFN), is a small two-layer network applied to each
# position on its own, $\mathrm{FFN}(x)=\max(0, xW_1+b_1)\,W_2+b_2$: attention mixes positions, the
# FFN mixes the coordinates of one position.
#
# Where the normalisation sits is a design choice. In a **{term}`pre-norm`** block each sub-layer reads a
# normalised *copy* of the stream, $u=h+\mathrm{MHA}(\mathrm{LN}(h))$, $h'=u+\mathrm{FFN}(\mathrm{LN}(u))$;
# in a **{term}`post-norm`** block — the chapter's Fig. 6.29 and the original transformer — the stream
# itself is normalised after each addition, $u=\mathrm{LN}(h+\mathrm{MHA}(h))$, $h'=\mathrm{LN}(u+\mathrm{FFN}(u))$.

# %%
fig, axes = plt.subplots(1, 2, figsize=(9.5, 6.0))
pre_stages = draw_decoder_block(axes[0], pre_norm=True)
post_stages = draw_decoder_block(axes[1], pre_norm=False)
plt.show()
print("pre-norm: ", " -> ".join(pre_stages))
print("post-norm:", " -> ".join(post_stages))
assert pre_stages[:3] == ["LayerNorm", "masked multi-head attention", "add"]
assert post_stages[:3] == ["masked multi-head attention", "add", "LayerNorm"]

# %% [markdown]
# **Figure 6.6.1.** One decoder block, pre-norm (left) and post-norm (right). Follow the thick blue line:
# it is the residual stream, and in the pre-norm block nothing on it is ever replaced — the attention
# and FFN branches only add to it. In the post-norm block the LayerNorm boxes sit on the stream itself.
# The library's `TransformerBlock` computes exactly these two formulas; the next cell checks the pre-norm
# one on random weights (the post-norm one is checked in the next section).

# %%
rng = np.random.default_rng(0)
pre_block = TransformerBlock(16, 2, 64, rng=rng, pre_norm=True)
stream = rng.standard_normal((5, 16))  # (T, d_model)
u_pre = stream + pre_block.attn(layer_norm(stream), causal=True)
ffn_pre = feed_forward(layer_norm(u_pre), pre_block.W1, pre_block.b1, pre_block.W2, pre_block.b2)
by_formula = u_pre + ffn_pre
pre_gap = np.max(np.abs(by_formula - pre_block(stream)))
print("pre-norm formula vs the library block:", "< 1e-12" if pre_gap < 1e-12 else f"{pre_gap:.1e}")
assert pre_gap < 1e-12

# %% [markdown]
# ## The block formula (§6.6, Fig. 6.29)
#
# Now a finding. The chapter writes one layer as
#
# $$h^{(\ell+1)}=\mathrm{LayerNorm}\Big(h^{(\ell)}+\mathrm{FFN}\big(\mathrm{LayerNorm}(h^{(\ell)}+\mathrm{MHA}(h^{(\ell)}))\big)\Big),$$
#
# while Fig. 6.29 and its caption describe attention → residual → norm, then FFN → residual → norm,
# i.e. $u=\mathrm{LN}(h+\mathrm{MHA}(h))$, $h'=\mathrm{LN}(u+\mathrm{FFN}(u))$ (the post-norm block of
# Vaswani et al., `TransformerBlock(pre_norm=False)` in the library, the right half of Figure 6.6.1). The
# two differ in the second skip connection: the printed formula adds $h^{(\ell)}$, not $u$. We evaluate
# both with the same random weights (7 positions, $d_{\text{model}}=16$, $d_{ff}=64$).

# %%
rng = np.random.default_rng(0)
d_model, d_ff, T = 16, 64, 7
block = TransformerBlock(d_model, 2, d_ff, rng=rng, pre_norm=False)  # Fig. 6.29 / Vaswani post-norm
H = rng.standard_normal((T, d_model))  # (T, d_model): the stream h^(l)


def mha(x):
    """The block's masked multi-head attention sub-layer."""
    return block.attn(x, causal=True)


def ffn(x):
    """The block's feed-forward sub-layer."""
    return feed_forward(x, block.W1, block.b1, block.W2, block.b2)


u = layer_norm(H + mha(H))
figure_form = layer_norm(u + ffn(u))  # the caption of Fig. 6.29
printed_form = layer_norm(H + ffn(layer_norm(H + mha(H))))  # the displayed formula of §6.6
gap_figure = np.max(np.abs(figure_form - block(H)))
gap_printed = np.max(np.abs(printed_form - block(H)))
print("Fig. 6.29 form vs the library block:",
      "< 1e-12" if gap_figure < 1e-12 else f"{gap_figure:.1e}")
print(f"printed formula vs the library block: {gap_printed:.3f}")
assert gap_figure < 1e-12  # the library's post-norm block is Fig. 6.29's
assert gap_printed > 0.1  # the printed formula is another map

# %% [markdown]
# A sharper test: switch the FFN off ($W_2=0$, $b_2=0$). Then the printed formula returns
# $\mathrm{LN}(h^{(\ell)})$ whatever the context, while Fig. 6.29's block still moves when the earlier
# positions change.

# %%
saved_W2, saved_b2 = block.W2.copy(), block.b2.copy()
block.W2[...] = 0.0
block.b2[...] = 0.0
printed_no_ffn = layer_norm(H + ffn(layer_norm(H + mha(H))))
H_other = H.copy()
H_other[:3] = rng.standard_normal((3, d_model))  # change the context of the last position
printed_no_ffn_other = layer_norm(H_other + ffn(layer_norm(H_other + mha(H_other))))
figure_moves = np.max(np.abs(block(H)[-1] - block(H_other)[-1]))
printed_moves = np.max(np.abs(printed_no_ffn[-1] - printed_no_ffn_other[-1]))
print("FFN = 0: printed formula equals LN(h):", np.allclose(printed_no_ffn, layer_norm(H)),
      f"; last position's output moves with its context: printed form {printed_moves:.1e}, "
      f"Fig. 6.29 form {figure_moves:.2f}")
assert np.allclose(printed_no_ffn, layer_norm(H), atol=1e-12)
assert figure_moves > 0.1
block.W2[...], block.b2[...] = saved_W2, saved_b2

# %% [markdown]
# In the printed formula the attention output reaches the next layer only *through* the FFN; with a
# zero FFN a position's output no longer depends on its context at all. The figure's version (and every
# implementation we know) adds the attention output to the stream before the FFN and keeps it there.
# We use the figure's form and record the displayed formula in `book/ERRATA.md`.
#
# ## The decoder-only stack
#
# A decoder-only language model is: the token embedding $e[t]$ plus the positional encoding
# $\mathrm{PE}(t)$, then $L$ decoder blocks, then a final linear map to the vocabulary and a softmax. We
# compose the library's pieces by hand and compare with `DecoderLM` (post-norm, as in the chapter), then
# count the parameters, writing $d$ for $d_{\text{model}}$ and $V$ for the vocabulary size: $Vd$
# (embedding) $+\,L(4d^2+2d\,d_{ff}+d_{ff}+d+4d)$ (attention, FFN with biases, two LayerNorms)
# $+\,dV$ (output layer).

# %%
cfg = DecoderConfig(vocab_size=11, d_model=16, num_heads=2, num_layers=3, max_len=32,
                    pre_norm=False)
lm = DecoderLM(cfg, rng=np.random.default_rng(1))
ids = np.random.default_rng(2).integers(0, 11, size=9)
x = lm.tok_emb[ids] + sinusoidal_encoding(9, 16)  # (T, d_model): e[t] + PE(t)
for block in lm.blocks:
    x = block(x)  # h^(l+1) from h^(l)
probs = softmax(x @ lm.W_U)  # (T, V): P(w[t+1] | w[1..t])
stack_gap = np.max(np.abs(probs - softmax(lm.logits(ids))))
V, d, L, d_ff_sym = sp.symbols("V d L d_ff", positive=True)
count = V * d + L * (4 * d**2 + 2 * d * d_ff_sym + d_ff_sym + d + 4 * d) + d * V
expected = int(count.subs({V: 11, d: 16, L: 3, d_ff_sym: 64}))
print("hand-built stack vs DecoderLM:", "< 1e-12" if stack_gap < 1e-12 else f"{stack_gap:.1e}")
display(Math(r"\text{parameters} = " + sp.latex(sp.expand(count)) + f" = {expected}"
             + r"\quad (V=11,\ d=16,\ L=3,\ d_{ff}=64)"))
print(f"DecoderLM.num_parameters() = {lm.num_parameters()}")
assert stack_gap < 1e-12
assert np.allclose(probs.sum(-1), 1)
assert lm.num_parameters() == expected

# %% [markdown]
# ## Memory: one state vs a grid (Exercise 8, Fig. 6.31)
#
# What does each model keep of a context of $T$ tokens? An RNN keeps one $d_{\text{model}}$-vector
# whatever $T$; a transformer keeps a $d_{\text{model}}$-vector per position (per layer),
# $T\,d_{\text{model}}$ numbers — the chapter's count, so the ratio grows like $T$ for any
# $d_{\text{model}}$. ([Exercise 8](../../exercises/part1_chapter6/ex08_memory.ipynb) asks for the
# factor at one length; try it before reading the printed line.) What a decoder actually keeps while
# generating is its {term}`KV cache`: the keys and values of the earlier positions do not change when a
# token is appended, so they are stored rather than recomputed — a key *and* a value per position and
# layer, $2\,T\,d_{\text{model}}$ numbers per layer. We measure both from the library's arrays.

# %%
def rnn_floats(T, d):
    """Numbers an RNN of width d carries forward after T steps."""
    rng = np.random.default_rng(0)
    inputs = rng.standard_normal((T, d))
    W_x, W_h = rng.standard_normal((d, d)) / d, rng.standard_normal((d, d)) / d
    states = rnn_states(inputs, W_x, W_h)  # (T, d)
    return states[-1].size  # only the last state is carried forward


def transformer_floats(T, d):
    """Numbers one transformer block keeps for T positions of width d."""
    representations = TransformerBlock(d, 2, 4 * d, rng=np.random.default_rng(0))(np.ones((T, d)))
    return representations.size  # one vector per position


def kv_cache_floats(T, d):
    """Numbers a one-layer decoder stores in its KV cache after T tokens."""
    model = DecoderLM(DecoderConfig(vocab_size=5, d_model=d, num_heads=2, num_layers=1, max_len=T),
                      rng=np.random.default_rng(0))
    cache = KVCache(1, capacity=T)
    model.logits_cached(np.zeros(T, dtype=int), cache)
    return cache.nbytes // 8  # float64


# %%
for width in (16, 64):
    ratio = {T: transformer_floats(T, width) / rnn_floats(T, width) for T in (1, 5, 10, 20)}
    kv_ratio = {T: kv_cache_floats(T, width) / rnn_floats(T, width) for T in (1, 5, 10, 20)}
    rnn = {T: rnn_floats(T, width) for T in range(1, 50)}
    first10 = min(T for T in rnn if transformer_floats(T, width) >= 10 * rnn[T])
    first10_kv = min(T for T in rnn if kv_cache_floats(T, width) >= 10 * rnn[T])
    print(f"d_model={width}: representation ratio {ratio}; KV-cache ratio {kv_ratio}; "
          f"10x reached at T = {first10} (representations), T = {first10_kv} (KV cache)")
    assert first10 == 10
    assert first10_kv == 5

# %%
rng = np.random.default_rng(3)
T_grid, d_grid = 20, 24
rnn_trajectory = rnn_states(rng.standard_normal((T_grid, d_grid)),
                            rng.standard_normal((d_grid, d_grid)) / np.sqrt(d_grid),
                            0.9 * np.linalg.qr(rng.standard_normal((d_grid, d_grid)))[0])  # (T, d)
grid_config = DecoderConfig(vocab_size=30, d_model=d_grid, num_heads=2, num_layers=2,
                            max_len=T_grid, pre_norm=False)
grid_model = DecoderLM(grid_config, rng=np.random.default_rng(4))
tokens = rng.integers(0, 30, size=T_grid)
representations = grid_model.tok_emb[tokens] + sinusoidal_encoding(T_grid, d_grid)
for layer_block in grid_model.blocks:
    representations = layer_block(representations)  # (T, d): the transformer's final-layer grid
position_mesh, dimension_mesh = np.meshgrid(np.arange(T_grid), np.arange(d_grid), indexing="ij")

# %%
fig = plt.figure(figsize=(11, 4.2))
ax = fig.add_subplot(1, 2, 1, projection="3d")
ax.plot_surface(position_mesh, dimension_mesh, rnn_trajectory, cmap="Greys", alpha=0.35,
                linewidth=0)
ax.plot(np.full(d_grid, T_grid - 1), np.arange(d_grid), rnn_trajectory[-1], color="C3", lw=2.5,
        label="kept: h[T]")
ax.set_title("RNN: states h[1..T], only h[T] is kept", fontsize=9)
ax.set_xlabel("position")
ax.set_ylabel("dimension")
ax.legend(fontsize=8)
ax = fig.add_subplot(1, 2, 2, projection="3d")
ax.plot_surface(position_mesh, dimension_mesh, representations, cmap="viridis", linewidth=0)
ax.set_title("transformer: all T x d representations are kept", fontsize=9)
ax.set_xlabel("position")
ax.set_ylabel("dimension")
plt.tight_layout()
plt.show()

# %% [markdown]
# **Figure 6.6.2** (Fig. 6.31 rebuilt with random weights). Left: the hidden states of a tanh RNN over 20 steps —
# the grey surface is computed along the way, but only the red line $h[T]$ is carried into the
# prediction. Right: the final-layer representations of a 2-layer decoder, one row per position, all
# of which stay addressable by attention: see how much more the right panel keeps.
#
# ## Operation counts (Exercise 11)
#
# How does the cost of one layer grow with the length $T$? We count {term}`FLOPs <FLOP>` — floating-point
# operations, one per addition and one per multiplication — for the matrix products, which dominate. A
# product of an $(m\times n)$ and an $(n\times p)$ matrix takes $mnp$ {term}`multiply-adds <multiply-add>`,
# i.e. $2mnp$ FLOPs. One attention sub-layer on $T$ positions of width $d=d_{\text{model}}$:
#
# - the four projections $XW_q, XW_k, XW_v$ and the output $W_o$: $4\cdot 2Td^2 = 8Td^2$ FLOPs;
# - the scores $QK^\top$ and the weighted sum of values: $2\cdot 2T^2d = 4T^2d$ FLOPs (over all heads
#   together; the mask does not save work when the full $T\times T$ matrix is computed).
#
# So attention costs $8Td^2+4T^2d$ FLOPs ($4Td^2+2T^2d$ multiply-adds) with sequential depth 1, and the
# $T^2$ term takes over beyond $T=2d$. A recurrent layer ($h[t]=\tanh(x[t]W_x+h[t-1]W_h)$) costs about
# $4Td^2$ FLOPs, two $d\times d$ products per step, but in $T$ steps one after another.
# [Exercise 11](../../exercises/part1_chapter6/ex11_complexity.ipynb) asks for the exact counts, forward
# and backward. Here torch's FLOP counter counts the operations of the library's torch attention
# sub-layer and must agree with the formula:

# %%
def attention_flops(T: int, d: int) -> int:
    """FLOPs of one attention sub-layer of a TinyLM block (2 heads) on T positions, by torch."""
    model = TinyLM(LMConfig(vocab_size=5, d_model=d, num_heads=2, num_layers=1, max_len=T), seed=0)
    x = torch.randn(1, T, d, generator=torch.Generator().manual_seed(0))  # (batch, T, d_model)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model.blocks[0].attention(x, None, None)
    return counter.get_total_flops()


for T_count, d_count in ((8, 16), (64, 16), (32, 64)):
    counted = attention_flops(T_count, d_count)
    formula = 8 * T_count * d_count**2 + 4 * T_count**2 * d_count
    print(f"T = {T_count:3d}, d = {d_count}: counted {counted:8d} FLOPs; "
          f"8Td^2 + 4T^2d = {formula:8d}; multiply-adds = {counted // 2}")
    # FLOPs (two per multiply-add), the unit of Exercise 11's solution and checker
    assert counted == formula

# %%
lengths = np.array([16, 32, 64, 128, 256, 512, 1024, 2048])
d_plot = 64
projection_flops = 8 * lengths * d_plot**2
score_flops = 4 * lengths**2 * d_plot
rnn_flops = 4 * lengths * d_plot**2
fig, ax = plt.subplots(figsize=(6.4, 3.8))
ax.loglog(lengths, projection_flops + score_flops, "o-", label="attention: $8Td^2 + 4T^2d$")
ax.loglog(lengths, projection_flops, "--", label="projections only: $8Td^2$")
ax.loglog(lengths, score_flops, ":", label="scores and weighted sum: $4T^2d$")
ax.loglog(lengths, rnn_flops, "-", color="gray", label="RNN, about $4Td^2$ (in T sequential steps)")
ax.axvline(2 * d_plot, color="k", lw=0.8)
ax.text(2 * d_plot * 1.08, projection_flops[0], "T = 2d", fontsize=8)
ax.set_xlabel("sequence length T")
ax.set_ylabel("FLOPs per layer (forward)")
ax.legend(fontsize=8)
plt.show()
crossover = lengths[np.argmax(score_flops > projection_flops)]
print(f"d = {d_plot}: the T^2 term exceeds the projections from T = {crossover} on "
      f"(2d = {2 * d_plot}, where they are equal)")
assert crossover == 4 * d_plot  # the first length of the grid beyond T = 2d

# %% [markdown]
# **Figure 6.6.3.** FLOPs of one layer against the length $T$ at $d=64$, on log-log axes (a straight line
# of slope 1 is linear growth, slope 2 quadratic). See the attention curve bend from slope 1 to slope 2
# at $T=2d$, where the score term overtakes the projections; the RNN stays linear but must run its $T$
# steps one after another. The measured run time of the library's attention follows the same bend
# (Reproducibility, Figure 6.6.6).

# %% [markdown]
# ## The running example through two layers (Fig. 6.32)
#
# Fig. 6.32 shows the final representation of the running example gathering information from the
# relevant words across layers. We measure it on `RunningExampleSource` (variants of the chapter's
# sentence in which the blank depends only on words 16, 19 and 21; see 6.2): a 2-layer, 2-head
# `TinyLM` of width 16 is trained for 300 steps, and for each layer we average over heads and test
# sentences the weights of the last context word (word 21, whose representation predicts the blank —
# word 22 here, see the errata on the word count) over words 1–21. Beside it, the exact
# {term}`mutual information` $I(\text{word}_j;\text{blank})$ of the source: how many nats knowing word
# $j$ removes from the uncertainty about the blank (0 when they are independent).

# %%
src = RunningExampleSource()
re_train = src.sample(4000, np.random.default_rng(0))  # (4000, 22) token ids
re_test = src.sample(500, np.random.default_rng(1))
RE_SEEDS = (0, 1, 2)  # a small model: three seeds are cheap, and what it learns differs by seed


def read_by_last_word(seed: int) -> tuple[float, list[np.ndarray]]:
    """Train the 2-layer model; return its blank loss and, per layer, the last word's weights."""
    config = LMConfig(vocab_size=len(src.vocab), d_model=16, num_heads=2, num_layers=2, max_len=22,
                      positional="learned")
    model = TinyLM(config, seed=seed)
    train_lm(model, re_train, steps=300, batch_size=32, lr=1e-2, seed=seed, progress=False)
    loss = token_nll(model, re_test)[:, -1].mean()  # the prediction of word 22 only
    with torch.no_grad():
        _, weights = model(torch.from_numpy(re_test[:, :-1]), return_attention=True)
    # per layer: the last word's weights (batch, heads, T, T) -> mean over sentences, heads: (21,)
    return loss, [w[:, :, -1, :].mean(dim=(0, 1)).double().numpy() for w in weights]


runs = {seed: read_by_last_word(seed) for seed in RE_SEEDS}
per_layer = runs[0][1]  # drawn below
mi = np.array([src.mutual_information(j) for j in range(1, 22)])
floor = src.blank_entropy()
word16, word19 = RUNNING_EXAMPLE[15], RUNNING_EXAMPLE[18]  # 0-based indices of words 16 and 19
checks = {
    f"test loss on the blank within 0.25 nats of the floor H(blank | context) = {floor:.2f}":
        [loss < floor + 0.25 for loss, _ in runs.values()],
    f"layer 2: weight > 0.6 on words 16 '{word16}' and 19 '{word19}' together":
        [pl[1][[15, 18]].sum() > 0.6 for _, pl in runs.values()],
    f"word 3 '{RUNNING_EXAMPLE[2]}': weight < 0.1 in both layers (uniform would be 1/21)":
        [max(a[2] for a in pl) < 0.1 for _, pl in runs.values()],
    f"layer 1 already: weight > 0.3 on word 19 '{RUNNING_EXAMPLE[18]}'":
        [pl[0][18] > 0.3 for _, pl in runs.values()],
    "layer 1: weight < 0.1 on word 19":
        [pl[0][18] < 0.1 for _, pl in runs.values()],
}
# which seeds satisfy a claim depends on training (and on the CPU): the counts are produced numbers
for claim, ok in checks.items():
    seed0 = produced("yes" if ok[0] else "no")
    print(f"{produced(sum(ok))}/{len(RE_SEEDS)} seeds (seed 0: {seed0}): {claim}")
asserted_claims = list(checks.values())[:3]
assert all(all(ok) for ok in asserted_claims)  # the first three claims hold in every seed
assert sum(checks[f"layer 1 already: weight > 0.3 on word 19 '{RUNNING_EXAMPLE[18]}'"]) >= 1

# %%
fig, axes = plt.subplots(3, 1, figsize=(9.5, 5.6), sharex=True)
words = np.arange(1, 22)
for layer, a in enumerate(per_layer):
    axes[layer].bar(words, a, color=f"C{layer}")
    axes[layer].set_ylabel(f"layer {layer + 1}\nweight", fontsize=8)
axes[2].bar(words, mi, color="gray")
axes[2].set_ylabel("I(word; blank)\n(nats)", fontsize=8)
axes[2].set_xticks(words, labels=list(RUNNING_EXAMPLE), rotation=60, ha="right", fontsize=8)
axes[0].set_title("what the last context word reads, layer by layer")
plt.tight_layout()
plt.show()

# %% [markdown]
# **Figure 6.6.4** (Fig. 6.32 measured). Attention of the last context word, averaged over heads and 500 test
# sentences, in layer 1 and layer 2 (seed 0), and the exact mutual information between each word and the
# blank. In every seed, layer 2 reads the adverb (word 16) and the object noun (word 19). Whether layer 1
# already looks at word 19 depends on the seed (the counts above): the division of work between the layers
# is not fixed by the task. "software" (word 2) shares information with the blank only through word 19,
# and the model does not need to read it; "engineer(s)" (word 3, subject number) carries none and gets
# little weight. Word 21 itself reaches the prediction through the residual stream.

# %% [markdown]
# ## Ablations: what each part of the block is for (Exercise 12)
#
# An {term}`ablation` removes one component and measures what the model loses.
# [Exercise 12](../../exercises/part1_chapter6/ex12_ablations.ipynb) asks you to predict the effect of
# removing the causal mask, the positional encoding, multi-head attention or the residual connections;
# write your predictions down before reading the table. We train the baseline on `AgreementTask` (from
# 6.4: fillers from an order-2 chain, a subject early in each sentence, markers whose next token must
# agree with the subject), then remove each component in two ways: **at test time** from the trained
# weights (`with_config`: the literal reading of the exercise) and, for the mask and the positions, by
# **retraining** without it. For every model we report two losses on the test set:
# *teacher-forced* — {term}`teacher forcing` is one pass over the whole true sentence, as in training —
# and *honest* (each prediction made from the prefix only, as in generation; `prefix_nll`). They agree
# for a causal model and differ when a model can see the future.

# %%
task = AgreementTask.make(np.random.default_rng(0))
train = task.sample(4000, np.random.default_rng(1))
test = task.sample(256, np.random.default_rng(2))
agree = test.marker_mask[:, :-1]  # (256, T-1): predicting the agreement form
filler = ~agree & (np.arange(task.length - 1) >= task.subject_window)  # predicting a filler
base_cfg = LMConfig(vocab_size=task.vocab_size, d_model=32, num_heads=4, num_layers=2,
                    max_len=task.length, positional="sinusoidal")
steps = 1500 if FULL else 600


def trained(cfg, n_steps=steps):
    """A TinyLM with config `cfg` trained from SEED; returns it and its final training loss."""
    model = TinyLM(cfg, seed=SEED)
    losses = train_lm(model, train.ids, steps=n_steps, batch_size=32, lr=1e-2, seed=SEED,
                      progress=False)
    return model, float(np.mean(losses[-50:]))


def measure(model):
    """Mean test losses: teacher-forced ("tf …") and honest, at agreement and filler positions."""
    forced, honest = token_nll(model, test.ids), prefix_nll(model, test.ids)
    return {"tf agree": forced[agree].mean(), "tf filler": forced[filler].mean(),
            "agree": honest[agree].mean(), "filler": honest[filler].mean()}


# %%
baseline, base_train = trained(base_cfg)
results = {"baseline": measure(baseline)}
for name, change in ABLATIONS.items():
    results[f"{name} (test time)"] = measure(with_config(baseline, **change))
retrain = list(ABLATIONS) if FULL else ["no mask", "no positions"]
train_loss = {"baseline": base_train}
for name in retrain:
    model, train_loss[f"{name} (retrained)"] = trained(ablated_config(base_cfg, name))
    results[f"{name} (retrained)"] = measure(model)
# FULL=1: one head, trained twice as long as the baseline (at the baseline's step count it may not have
# learned yet)
single_head = "single head (retrained, 2x steps)"
if FULL:
    model, train_loss[single_head] = trained(ablated_config(base_cfg, "single head"), 2 * steps)
    results[single_head] = measure(model)

# %%
predictions = {
    "no mask": "copies the future: low training loss, fails at generation (§6.3, Ex. 3)",
    "no positions": "cannot tell word order: a bag of words (§6.5)",
    "single head": "one pattern must serve all relations (§6.4)",
    "no residual": "gradients vanish in depth, training unstable (§6.6)",
}
base = results["baseline"]


def versus_baseline(x: float, ref: float) -> str:
    """An honest test loss against the baseline's, in the words (and thresholds) of the asserts."""
    return "worse (> +0.1)" if x > ref + 0.1 else "as baseline (< +0.1)"


# Trained models differ in their digits from seed to seed and from CPU to CPU, and within the
# default training whether the baseline learns the agreement at all is such a difference: the table
# prints verdicts (bins of produced losses, shown but not compared as text); the asserts below check
# those that hold for every run (the filler column), the figure shows all values.
unstable = ("no mask (test time)", single_head)  # reported in the figure only
print(f"{'model':34s}{'honest filler loss':>22s}{'teacher-forced':>16s}   chapter's prediction")
for name, r in results.items():
    prediction = next((p for k, p in predictions.items() if name.startswith(k)), "")
    same = abs(r["tf agree"] - r["agree"]) < 1e-4 and abs(r["tf filler"] - r["filler"]) < 1e-4
    filler_vs = "(figure)" if name in unstable else versus_baseline(r["filler"], base["filler"])
    consistency = "= honest" if same else "differs"
    verdicts = produced(f"{filler_vs:>22s}") + produced(f"{consistency:>16s}")
    print(f"{name:34s}{verdicts}   {prediction}")
print("no mask, retrained: final training loss < 0.3 (baseline: > 1), honest filler loss above the "
      "uniform guess; no residual, test time: the same")
print(f"entropy rate of the filler chain: {task.filler.entropy_rate():.2f} nats (a lower bound: "
      f"subjects and markers interrupt the chain); "
      f"uniform guess: ln {task.vocab_size} = {np.log(task.vocab_size):.2f}")

# %%
no_mask, no_positions = results["no mask (retrained)"], results["no positions (retrained)"]
uniform_loss = np.log(task.vocab_size)
# tests/test_notebook_seeds.py reruns the page with seeds 1 and 2: what is asserted must hold there
# too. The rows "no mask (test time)" and "single head (retrained, 2x steps)" are reported for this
# run only. Within the default training the 2-layer baseline learns the agreement for some seeds and
# CPUs only; the claims about the agreement positions are checked when it has.
learned = base["agree"] < 0.05
# a causal model: teacher forcing = generation
assert abs(base["tf agree"] - base["agree"]) < 1e-4
assert abs(base["tf filler"] - base["filler"]) < 1e-4
# (a) no mask, retrained: near-zero training loss that does not survive generation
assert train_loss["no mask (retrained)"] < 0.3
assert no_mask["tf filler"] < 0.3
assert train_loss["baseline"] > 1
assert no_mask["filler"] > uniform_loss
# (b) no positions, retrained: the order-2 fillers suffer
assert no_positions["filler"] > base["filler"] + 0.1
# test-time removals of positions, heads or residuals hurt; without residuals the model collapses
for name in ("no positions", "single head", "no residual"):
    assert results[f"{name} (test time)"]["filler"] > base["filler"] + 0.1, name
assert results["no residual (test time)"]["filler"] > uniform_loss  # worse than uniform guessing
if learned:  # the agreement: lost without the mask or at test time, kept without positions
    assert no_mask["agree"] > base["agree"] + 0.1
    assert no_positions["agree"] < 0.1  # finding the subject is a lookup by content
    for name in ("no positions", "single head", "no residual"):
        assert results[f"{name} (test time)"]["agree"] > base["agree"] + 0.5, name

# %%
names = list(results)
fig, ax = plt.subplots(figsize=(9.5, 3.8))
xs = np.arange(len(names))
ax.bar(xs - 0.2, [results[n]["agree"] for n in names], 0.4, label="agreement positions")
ax.bar(xs + 0.2, [results[n]["filler"] for n in names], 0.4, label="filler positions")
ax.axhline(np.log(task.vocab_size), color="k", ls="--", lw=1, label="uniform guess")
ax.set_xticks(xs, labels=names, rotation=25, ha="right", fontsize=8)
ax.set_ylabel("honest test loss (nats)")
ax.set_title("ablations of a trained 2-layer transformer")
ax.legend(fontsize=8)
plt.tight_layout()
plt.show()

# %% [markdown]
# **Figure 6.6.5** (Exercise 12, measured). Honest (generation-time) test loss per ablation, split into
# the long-range agreement predictions and the local filler predictions. See which bars rise above the
# dashed uniform-guess line: those models predict worse than a model that knows nothing.
#
# What the measurements say, next to the chapter's predictions. A finding about our own experiment first:
# whether the 2-layer baseline learns the agreement within the default training is itself a matter of
# seed and CPU (with other seeds, or other CPU kernels, we saw runs where it had not), so the statements
# about the agreement below are those of a run in which it was learned (the figure shows this run), and are
# asserted only when it was; the filler statements hold in every run we tried. `FULL=1` trains longer.
# - **(a) causal mask.** Retrained without it, the model reaches a near-zero training loss by reading
#   the next token; generating (the prefix only) it is catastrophically wrong — exactly the failure the
#   chapter predicts (§6.3). Removing the mask from the *trained* model at test time changes its
#   predictions even when it generates: in a 2-layer model, earlier positions of a prefix now see later
#   tokens of that prefix, which changes what layer 2 reads. Whether that costs much depends on the run
#   (figure); in other seeds we tried the honest losses stayed as the baseline's, so nothing about it is
#   asserted.
# - **(b) positional encoding.** Removing it from the trained model is severe (the weights expect the
#   encoding). Retrained without it, the model still learns the agreement — finding the subject is a
#   lookup by content, order-free — and the fillers reach a worse but far-from-chance loss: with two
#   layers the causal mask leaks order (see §6.5), so "a bag of words" is too pessimistic for a stack.
# - **(c) single head.** Reading the same projections as one full-width head (the sum of the four
#   heads' scores) destroys the heads' separate patterns; both the agreement and the fillers suffer.
#   Retrained with one head (`FULL=1` adds this model: one head, twice the baseline's training steps),
#   the model can relearn the agreement at this small scale, but more slowly: in a default-size run where
#   the baseline learned the agreement, the single-head model did so with twice the baseline's 600 steps;
#   in another seed we tried it had not yet, so this is not asserted — the benefit of several heads here
#   is a matter of optimisation speed, not of what is expressible.
# - **(d) residual connections.** Removing them from the trained model is the most destructive change
#   (worse than guessing uniformly): the blocks were trained to *add* to the stream, not to replace it.
#   The chapter's prediction (vanishing gradients in deep networks) concerns training; retraining without
#   residuals (`FULL=1`) is the way to test it, which the default run does not do.
#
# ## Key takeaways
#
# - A decoder block is masked multi-head attention followed by a position-wise feed-forward network,
#   each adding its output to the residual stream; layer normalisation sits either before each sub-layer
#   (pre-norm) or on the stream after each addition (post-norm, the chapter's Fig. 6.29).
# - The block formula displayed in §6.6 is not the block of Fig. 6.29: its second skip adds $h^{(\ell)}$,
#   so attention reaches the next layer only through the FFN (ledger row).
# - A transformer keeps a vector per position and layer — $T\,d_{\text{model}}$ numbers, or
#   $2T\,d_{\text{model}}$ in its KV cache — where an RNN keeps one.
# - One attention layer costs $8Td^2+4T^2d$ FLOPs (half as many multiply-adds) in one parallel step; the
#   $T^2$ term dominates beyond $T=2d$, while an RNN's about $4Td^2$ FLOPs run in $T$ sequential steps.
# - Ablations show what each part does: without the mask a model copies the future and fails at
#   generation; without positions local order suffers; without the residual connections a trained model
#   collapses below a uniform guess.
#
# ## Check your understanding
#
# 1. Compute $\mathrm{LN}(h)$ for $h=(2, 2, 2, 6)$ (ignore $\epsilon$, gain 1, bias 0).
#
#    ```{dropdown} Answer
#    The mean is 3, the deviations are $(-1,-1,-1,3)$, the variance $(1+1+1+9)/4=3$, so
#    $\mathrm{LN}(h)=(-1,-1,-1,3)/\sqrt3$.
#    ```
#
# 2. In a pre-norm block, what reaches the next block if both sub-layers output zero? And in the block
#    formula printed in §6.6, with a zero FFN?
#
#    ```{dropdown} Answer
#    Pre-norm: $h'=h+0+0=h$, the stream passes unchanged (that is why deep pre-norm stacks train well).
#    The printed formula gives $\mathrm{LN}(h^{(\ell)})$ whatever the other positions are: the attention
#    output is lost, which is how the page shows the formula is not Fig. 6.29's block.
#    ```
#
# 3. For $d_{\text{model}}=512$, from which length on do the score and weighted-sum products of one
#    attention layer cost more than its four projections? Is the count in FLOPs or multiply-adds, and
#    does the answer depend on which?
#
#    ```{dropdown} Answer
#    From $T=2d=1024$ on ($4T^2d > 8Td^2$ exactly when $T>2d$). The formulas are FLOP counts; in
#    multiply-adds both terms halve, so the crossover is the same — but the absolute numbers differ by a
#    factor 2, which is why a count must say its unit.
#    ```
#
# 4. A model trained without the causal mask reaches a training loss near zero. Why is that bad news?
#
#    ```{dropdown} Answer
#    With teacher forcing, each position can read the next token, which is the answer it is asked to
#    predict; the low loss measures copying. At generation the next token does not exist yet, and the
#    honest loss is worse than a uniform guess (the ablation above).
#    ```
#
# ## Reproducibility
#
# **Default run:** one 2-layer, 4-head `TinyLM` (width 32) trained for 600 steps on `AgreementTask`,
# ablated at test time, plus two ablated models retrained the same way (no mask, no positions), and
# three 2-layer width-16 models on the running example — about 40 s on 2 CPU cores. `FULL=1` trains the
# ablation models for 1500 steps and also retrains the single-head model (once as long as the baseline and
# once twice as long) and the no-residual model. `NEXTWORD_SEED` sets the seed of the ablation models
# (`tests/test_notebook_seeds.py` runs the page with seeds 1 and 2). Library: `nextword.decoder`,
# `nextword.attention`, `nextword.chapter6`, `nextword.torch.probes.ablation`, `nextword.torch.models.lm`.
#
# **Run time of attention on this machine.** The FLOP count of Figure 6.6.3 against the measured time of
# the library's numpy `MultiHeadAttention` at $d=64$ (best of 5; timings vary between machines and are
# not checked).

# %% tags=["hide-cell", "nbval-ignore-output"]
# nbval-ignore-output: timings
lengths_timed, d_timed = [32, 64, 128, 256, 512, 1024], 64
attention_layer = MultiHeadAttention(d_timed, 4, rng=np.random.default_rng(0))
times = []
for T_timed in lengths_timed:
    X_timed = np.random.default_rng(1).standard_normal((T_timed, d_timed))
    best = np.inf
    for _ in range(5):
        t0 = time.perf_counter()
        attention_layer(X_timed)
        best = min(best, time.perf_counter() - t0)
    times.append(best)
flops_timed = [8 * T * d_timed**2 + 4 * T**2 * d_timed for T in lengths_timed]
slope = np.polyfit(np.log(lengths_timed[-3:]), np.log(times[-3:]), 1)[0]
flop_slope = np.polyfit(np.log(lengths_timed[-3:]), np.log(flops_timed[-3:]), 1)[0]
print(f"log-log slope of the time over T = 256..1024: {slope:.2f} (FLOP count: {flop_slope:.2f})")
fig, ax = plt.subplots(figsize=(6.0, 3.6))
ax.loglog(lengths_timed, times, "o-", label="measured MHA forward (numpy)")
ax.loglog(lengths_timed, np.array(flops_timed) * times[0] / flops_timed[0], "--",
          label=r"$8Td^2+4T^2d$ FLOPs (scaled)")
ax.set_xlabel("sequence length T")
ax.set_ylabel("seconds")
ax.legend()
plt.show()

# %% [markdown]
# **Figure 6.6.6.** Measured forward time of one attention layer against the FLOP count, scaled to meet at
# the shortest length; the $T^2$ term takes over beyond $T\approx 2d$ in both.
#
# **Summary of the checks:** the library's post-norm block is Fig. 6.29's and its pre-norm block is the
# pre-norm formula; the displayed formula of §6.6 is a different map (recorded in the errata); the stack
# is rebuilt from its pieces and the parameter count is exact; memory is measured from the library's
# arrays (representations and KV cache); the FLOP count of one attention layer equals torch's FLOP
# counter (an earlier version of this page called these FLOP counts multiply-adds: a ledger row records
# it); the ablations are measured and asserted (leak without the mask, fillers hurt without positions,
# collapse without residuals, and, in runs whose baseline learned it, the agreement kept without
# positions); whether the default training learns the agreement at all depends on the seed and the CPU.
