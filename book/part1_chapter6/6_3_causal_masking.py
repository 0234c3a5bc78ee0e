# %% [markdown]
# # 6.3 Causal masking: why a model must not see the future
#
# **The question.** A language model is trained on whole sentences at once, every position
# predicting the word after it; attention ([6.2](6_2_attention_mechanism.ipynb)) lets every position
# look at every other. What stops position $t$ from simply reading word $t+1$ — the answer — and
# what goes wrong if nothing does?
#
# Nothing stops it, unless we forbid it. A model that may look ahead learns to copy the next word:
# its training loss falls below what any honest predictor could reach, even on text it never saw,
# and the moment it has to generate text, where the next word does not exist yet, it is worse than
# guessing. This page
# measures that failure first, then builds the fix — the {term}`causal mask` — and checks that with
# it, training and generation compute exactly the same thing.
#
# ```{admonition} Learning goals
# :class: tip
# After this page you can
# - explain, from a measured example, why a next-word model trained without a mask fails at
#   generation;
# - build the causal mask for $n$ words and compute masked attention weights by hand;
# - show that a masked position receives exactly zero weight and zero gradient;
# - explain why, with the mask, one training pass gives the same predictions as generating word by
#   word, and what a KV cache stores.
# ```
#
# **Builds on:** [6.2 The attention mechanism](6_2_attention_mechanism.ipynb) (queries, keys, scores
# and softmax weights; the conditional entropy as the lowest loss) · the cross-entropy loss of a
# next-word model and the idea of an entropy from probability. **Reading time:** about 35 minutes.
#
# ```{admonition} Symbols on this page
# :class: note
# | symbol | meaning | shape |
# |---|---|---|
# | $n$ | the number of words (or positions) | integer |
# | $i$ | the word that is looking: the query's position, counted from 1 | integer |
# | $j$, $m$ | a word looked at (a key's position); $m$ runs over the positions word $i$ may see | integers |
# | $q[i]$, $k[j]$, $v[j]$ | the query of word $i$; the key and the value of word $j$ (row vectors) | $(d_k,)$ |
# | $d_k$ | the width of a query and of a key | integer |
# | $\alpha[i,j]$ | the attention weight word $i$ gives word $j$ | number in $[0, 1]$ |
# | $t$ | a position in a sequence of symbols, counted from 1 | integer |
# | $w[t]$, $w[1..t]$ | the symbol at position $t$; the symbols at positions $1,\dots,t$ | symbols |
# | $H$ | the entropy rate of the source, in nats | number |
# | $y$, $z$ | two consecutive symbols (a pair) | symbols |
# | $P$ | the source's probabilities: of the next symbol given the past, $P(w[t+1]\mid w[1..t])$, and of a pair, $P(y,z)$ | numbers |
# | $\hat P$ | the frequency of a pair in a text, $\hat P(y,z)$ | numbers |
# | $x[j]$ | the input vector of a transformer block at position $j$ | vector |
# ```
#
# Words and positions count from 1, as in the chapter. Python counts from 0, so in the code position
# $t$ of a window is `window[t - 1]`, and `window[:t]` holds positions $1,\dots,t$.
#
# *Source: Chapter 6, §6.3 (the masked attention formula, Figs. 6.13–6.17, Exercise 3).*

# %%
import os

import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn.functional as F

from nextword.attention import (attention_backward, causal_mask, scaled_dot_product_attention,
                                softmax)
from nextword.booktools.display import produced
from nextword.booktools.plotting import heatmap, use_book_style
from nextword.booktools.schematics.attention import draw_causal_mask
from nextword.chapter6 import RUNNING_EXAMPLE
from nextword.data import markov_source
from nextword.decoding import sample
from nextword.torch.models.lm import Block, LMConfig, TinyLM, next_logits_fn, to_numpy_decoder
from nextword.torch.training.token_lm import evaluate_loss, train_lm

use_book_style()
torch.set_num_threads(1)  # tiny models: one thread is fastest on a shared 2-core machine
# The seed of the trainings on this page. The page shows seed 0; tests/test_notebook_seeds.py
# re-runs it with NEXTWORD_SEED=1 and 2, so every assert about what training produces holds for
# three seeds.
SEED = int(os.environ.get("NEXTWORD_SEED", "0"))

# %% [markdown]
# ## A tiny example by hand
#
# The three words of 6.2's tiny example, "engineer submitted code", with the same queries, keys and
# values. This time every word may look at every word, the future included. One loop, word by word:

# %%
words = {1: "engineer", 2: "submitted", 3: "code"}
q = {1: np.array([1.0, 0.0]), 2: np.array([1.0, 1.0]), 3: np.array([2.0, 1.0])}  # q[i], i = 1..3
k = {1: np.array([1.0, 1.0]), 2: np.array([0.0, 1.0]), 3: np.array([1.0, 2.0])}  # k[j]
v = {1: np.array([1.0, 0.0]), 2: np.array([0.0, 2.0]), 3: np.array([1.0, 2.0])}  # v[j]
d_k = 2


def attend_by_loop(q, k, v, may_see):
    """Each word's output: softmax over the keys j with may_see(i, j), then the weighted values."""
    outputs = {}
    for i in q:  # words 1, 2, 3
        visible = [j for j in k if may_see(i, j)]
        scores = np.array([q[i] @ k[j] / np.sqrt(d_k) for j in visible])
        weights = np.exp(scores) / np.exp(scores).sum()  # alpha[i, j] for the visible j
        outputs[i] = sum(a * v[j] for a, j in zip(weights, visible))
        print(f"  word {i} ({words[i]:9s}) sees words {visible}: weights {np.round(weights, 3)}")
    return outputs


print("no mask:")
unmasked_out = attend_by_loop(q, k, v, lambda i, j: True)

# %% [markdown]
# Word 1 ("engineer") puts as much weight on "code", a word that comes *after* it, as on itself, and
# some on "submitted", the very word it will be asked to predict. The test: change the future word
# "code" (its key and value) and see whether the earlier words' outputs move.

# %%
changed_k = {**k, 3: np.array([-1.0, 0.0])}  # a different word 3: new key...
changed_v = {**v, 3: np.array([5.0, -5.0])}  # ...and new value
print("no mask, word 3 changed:")
changed_out = attend_by_loop(q, changed_k, changed_v, lambda i, j: True)
leak = max(np.abs(changed_out[i] - unmasked_out[i]).max() for i in (1, 2))
print(f"largest change of the outputs of words 1 and 2: {leak:.3f}")
assert leak > 1  # the past's outputs depend on the future

# %% [markdown]
# The fix is a rule: word $i$ may see word $j$ only if $j\le i$. This is the {term}`causal mask` —
# "causal" because information may only flow forward in time, from causes to effects.

# %%
print("with the mask:")
masked_out = attend_by_loop(q, k, v, lambda i, j: j <= i)
print("with the mask, word 3 changed:")
masked_changed = attend_by_loop(q, changed_k, changed_v, lambda i, j: j <= i)
assert all(np.array_equal(masked_out[i], masked_changed[i]) for i in (1, 2))  # blind to word 3 now
queries, keys, values = (np.stack([d[i] for i in (1, 2, 3)]) for d in (q, k, v))  # (3, 2): row i - 1
library_out = scaled_dot_product_attention(queries, keys, values, causal=True)
np.testing.assert_allclose(np.stack([masked_out[i] for i in (1, 2, 3)]), library_out, atol=1e-12)

# %% [markdown]
# In matrix form the rule is an extra matrix added to the scores before the softmax: 0 where
# $j\le i$, $-\infty$ where $j>i$. Since $\exp(-\infty)=0$, a blocked word gets weight exactly 0, and
# the other weights of the row still add up to 1:
#
# $$\alpha[i,j]=\begin{cases}\dfrac{\exp(q[i]\cdot k[j]/\sqrt{d_k})}{\sum_{m\le i}\exp(q[i]\cdot
# k[m]/\sqrt{d_k})} & j\le i,\\[2mm] 0 & j>i,\end{cases}$$
#
# with $i$ the query's position, $j$ the key's, $m$ running over the positions word $i$ may see, and
# $d_k$ the width of a query and a key. (The chapter divides by $\sqrt{d_{\text{model}}}$; see
# [6.2](6_2_attention_mechanism.ipynb) for why $\sqrt{d_k}$ is the width that belongs there.) Row $i$
# of the matrices below is word $i$, column $j$ is word $j$:

# %%
mask_matrix = np.where(causal_mask(3), 0.0, -np.inf)  # (3, 3): 0 allowed, -inf blocked
weights = softmax(queries @ keys.T / np.sqrt(d_k) + mask_matrix)
print("mask added to the scores:\n", mask_matrix)
print("weights:\n", np.round(weights, 3))
np.testing.assert_allclose(weights @ values, np.stack([masked_out[i] for i in (1, 2, 3)]), atol=1e-12)

# %% [markdown]
# ## Why the mask is needed: training without it (Exercise 3)
#
# The tiny example shows that without a mask the past *can* read the future. Does training actually
# exploit it? We measure. ([Exercise 3](../../exercises/part1_chapter6/ex03_causal_mask_leakage.ipynb)
# asks you to run a version of this experiment yourself; try it first.)
#
# The data come from a random order-2 Markov source over 8 symbols: each symbol is drawn from a
# distribution that depends on the two symbols before it. Because we built the source, we know its
# {term}`entropy rate` $H$ exactly: the lowest average loss, in {term}`nats`, that any predictor
# that sees only the past can reach on new text from the source. It is the average, over the long-run
# frequency $P(y,z)$ of each pair of consecutive symbols, of the entropy of the next symbol's
# distribution $P(\cdot\mid y,z)$; the first cell below computes it that way and checks the library's
# value. No honest model can score below $H$
# there, except by a little, by chance, on a short text. (On its own training text a large enough
# model could also go below $H$ by memorising that text; so the page scores the models on held-out
# test text.)
#
# We train two identical small transformers (`TinyLM`, one layer, width 32, with a fixed code for
# each position added to each symbol's vector so that attention can tell the positions apart;
# [6.5](6_5_positional_encoding.ipynb) builds these codes), one with the mask and
# one without, with {term}`teacher forcing`: one forward pass over a window of 32 true symbols,
# every position predicting the next true symbol. Then we score each model two ways:
#
# * the **training-style loss**: exactly as in training, one pass over the whole window;
# * the **generation-style loss**: each symbol $w[t+1]$ predicted from the symbols before it alone
#   (a forward pass over $w[1..t]$, prediction at its last position) — the only thing a text
#   generator can do, because the next symbol does not exist yet.
#
# Both models are trained with the loop of [6.2](6_2_attention_mechanism.ipynb) (the library's
# `train_lm`), on random windows of 33 symbols: 32 inputs and, shifted by one, 32 targets.

# %%
source = markov_source(8, 2, np.random.default_rng(0), concentration=0.3)
H = source.entropy_rate()
pair_law = source.stationary_distribution()  # (8, 8): long-run P(y, z) of two consecutive symbols
next_law = source.transition  # (8, 8, 8): P(next | y, z)
H_by_hand = -(pair_law * (next_law * np.log(np.where(next_law > 0, next_law, 1))).sum(-1)).sum()
assert abs(H_by_hand - H) < 1e-12  # H = sum over (y, z) of P(y, z) * entropy of P(. | y, z)
train_stream = source.sample(40_000, np.random.default_rng(1))
test_stream = source.sample(3_200, np.random.default_rng(2))
block_size = 32
models, curves = {}, {}
for causal in (True, False):
    config = LMConfig(vocab_size=8, d_model=32, num_heads=2, num_layers=1, max_len=block_size,
                      causal=causal)
    models[causal] = TinyLM(config, seed=SEED)
    curves[causal] = train_lm(models[causal], train_stream, steps=250, batch_size=32,
                              block_size=block_size, lr=3e-3, seed=SEED, progress=False)
print("the first 40 training symbols:", "".join(map(str, train_stream[:40])))
print(f"training stream: {len(train_stream):,} symbols; each step: 32 random windows of {block_size + 1} "
      f"symbols ({block_size} inputs, the same shifted by one as targets); 250 steps")


# %%
@torch.no_grad()
def generation_style_loss(model, windows):
    """Mean NLL of w[t+1] from a forward pass over w[1..t] only (its last position), t = 1..31."""
    nll = []
    for t in range(1, windows.shape[1]):
        prefix_logits = model(torch.from_numpy(windows[:, :t]))[:, -1]  # (n_windows, 8): after w[t]
        nll.append(F.cross_entropy(prefix_logits, torch.from_numpy(windows[:, t])))  # column t: w[t+1]
    return float(torch.stack(nll).mean())


windows = test_stream.reshape(-1, block_size)  # (100, 32)
results = {}
for causal, model in models.items():
    training_style = evaluate_loss(model, test_stream[:-1], block_size - 1)
    results[causal] = (training_style, generation_style_loss(model, windows))
print(f"entropy rate H = {H:.3f} nats; uniform guess = log 8 = {np.log(8):.3f}")
for causal, (tf, gen) in results.items():
    name = "with mask   " if causal else "without mask"
    print(f"{name}: training-style loss {produced(tf, '.3f')}, "
          f"generation-style loss {produced(gen, '.3f')}")
tf_c, gen_c = results[True]
tf_n, gen_n = results[False]
# a perfect copier still pays about H at the last position of each scored window (nothing after it to copy)
copier_floor = H / (block_size - 1)
print(f"a perfect copier, training-style: about H / {block_size - 1} = {copier_floor:.3f} nats "
      f"(each window's last prediction has nothing to copy)")
assert tf_n > copier_floor
# Figure 6.3.1: without the mask the training loss falls far below the entropy rate (impossible without the answer)
assert tf_n < 0.25 * H
assert gen_n > np.log(8)  # worse than guessing uniformly when the future is not there
assert abs(tf_c - gen_c) < 0.02  # the masked model: the same loss both ways...
assert tf_c > H - 0.01  # ...and never below the floor

# %%
fig, axes = plt.subplots(1, 2, figsize=(11, 3.6))
for causal, curve in curves.items():
    axes[0].plot(np.convolve(curve, np.ones(10) / 10, mode="valid"),
                 label="with mask" if causal else "without mask")
axes[0].axhline(H, color="k", ls="--", label="entropy rate H (floor)")
axes[0].set(xlabel="training step", ylabel="training loss (nats)", title="training curves")
axes[0].legend()
x = np.arange(2)
axes[1].bar(x - 0.2, [tf_c, tf_n], width=0.4, label="training-style (teacher forcing)")
axes[1].bar(x + 0.2, [gen_c, gen_n], width=0.4, label="generation-style (prefix only)")
axes[1].axhline(H, color="k", ls="--", label="entropy rate H (floor)")
axes[1].axhline(np.log(8), color="gray", ls=":", label="uniform guess")
axes[1].set_xticks(x, labels=["with mask", "without mask"])
axes[1].set(ylabel="test loss (nats)", title="what survives generation")
axes[1].legend(fontsize=8)
plt.tight_layout()
plt.show()

# %% [markdown]
# **Figure 6.3.1** (Exercise 3, answered by experiment). Left: without the mask the training loss
# falls far below the entropy rate — a floor no honest predictor can beat on new text — because every position
# can read the symbol it is asked to predict. Right, on held-out test text: the training-style bar
# shows the same fall there, so it is not memorised training text; the same model scored the way
# generation uses it is worse than a uniform guess. The masked model's loss is nearly the same both ways and sits
# above $H$ (250 steps do not reach the floor). The two printed numbers differ a little only because
# they score different stretches of the test text: both read windows of the same length, but the
# training-style windows overlap by one symbol and the generation-style ones do not, so the windows
# start at different places; on one and the same window the two passes give the same predictions, as
# the last section of the lesson,
# [on training and generation](#training-and-generation-compute-the-same-thing-figs-616617), measures.
#
# The unmasked model has learned "look one position ahead and copy". Its prediction at position $t$
# is a function of $w[t+1]$, not a model of $P(w[t+1]\mid w[1..t])$. At generation time position $t$
# is the last one, the key it learned to read does not exist, and the attention falls on whatever is
# there — the prediction is confidently wrong. Its attention weights show the copying directly:

# %%
with torch.no_grad():
    _, attention_unmasked = models[False](torch.from_numpy(windows[:1, :12]), return_attention=True)
    _, attention_masked = models[True](torch.from_numpy(windows[:1, :12]), return_attention=True)
weights_unmasked = attention_unmasked[0][0].numpy()  # (heads, 12, 12), first window
weights_masked = attention_masked[0][0].numpy()
# alpha[i, i+1], the weight the query of position i gives position i + 1, for i = 1..11:
# row i - 1 and column i of a 0-based array
ahead = max(np.mean([weights_unmasked[head, i - 1, i] for i in range(1, 12)]) for head in range(2))
print(f"unmasked model: mean weight on the next position (best head) = {produced(ahead, '.2f')}")
assert ahead > 0.5

fig, axes = plt.subplots(1, 2, figsize=(10, 4))
positions_12 = [str(t) for t in range(1, 13)]
heatmap(weights_unmasked.max(0), ax=axes[0], row_labels=positions_12, col_labels=positions_12,
        vmin=0, vmax=1, title="without mask (larger of the two heads)")
heatmap(weights_masked.max(0), ax=axes[1], row_labels=positions_12, col_labels=positions_12,
        vmin=0, vmax=1, title="with mask (larger of the two heads)")
for ax in axes:
    ax.set(xlabel="key position j", ylabel="query position i")
plt.tight_layout()
plt.show()

# %% [markdown]
# **Figure 6.3.2** (the leak, seen in the weights). Without the mask a head puts most of its weight
# just above the diagonal — on $j=i+1$, the answer. With the mask that region is unreachable and the
# model has to use the past.
#
# ### Generated text
#
# The final test is to let each model write: 3000 symbols from each (temperature 1, restarting from a
# 2-symbol prompt every 30 symbols, so that it never runs past the 32 positions it was trained on).
# How do we compare a text with the source? A next-symbol model is a rule for which symbol follows
# which, so we compare how often each symbol follows each other symbol: the frequencies
# $\hat P(y,z)$ of the 64 pairs of consecutive symbols $(y,z)$ in the text, against the source's exact
# pair law $P(y,z)$. The {term}`total variation distance`
# $\mathrm{TV}=\tfrac12\sum_{y,z}\lvert\hat P(y,z)-P(y,z)\rvert$ is 0 for identical laws and 1 for
# laws with no pair in common; it is the largest difference in probability the two give to any set of
# pairs. (Scoring each generated symbol's surprise under the source would be a poor test here: the
# source has many near-zero transitions, so any smoothing by a model is heavily punished.)
#
# Why pairs, and not single symbols? Two texts that are certainly not the model's show it: 3000
# symbols of real text from the source, and the same symbols shuffled into a random order. (The table
# also has triples of consecutive symbols, which see even more of the order.)

# %%
pair_law = source.stationary_distribution()  # (8, 8): exact law of two consecutive symbols (as above)
laws = {1: pair_law.sum(1),  # single symbols
        2: pair_law,  # pairs (y, z)
        3: pair_law[:, :, None] * source.transition}  # triples: P(y, z) P(next | y, z)


def tv_distance(seq, n):
    """Total variation distance between the frequencies of n consecutive symbols in seq and the law."""
    counts = np.zeros((8,) * n)
    np.add.at(counts, tuple(seq[i:len(seq) - n + 1 + i] for i in range(n)), 1)
    return 0.5 * np.abs(counts / counts.sum() - laws[n]).sum()


real_text = test_stream[:3000]
shuffled_text = np.random.default_rng(4).permutation(real_text)
print(f"cells of each law: {laws[1].size} single symbols, {laws[2].size} pairs, {laws[3].size} triples")
print("TV from the source's law of:  single symbols   pairs   triples")
for name, seq in (("real text", real_text), ("the same symbols shuffled", shuffled_text)):
    print(f"{name:26s}       {tv_distance(seq, 1):.3f}      {tv_distance(seq, 2):.3f}     "
          f"{tv_distance(seq, 3):.3f}")
assert tv_distance(shuffled_text, 1) == tv_distance(real_text, 1)  # same symbols, same counts
assert tv_distance(shuffled_text, 2) > 3 * tv_distance(real_text, 2)  # pairs see the order

# %% [markdown]
# Single symbols cannot tell the two apart — same symbols, same counts — while pairs can: they are
# the shortest statistic that sees order. The distance of real text (not zero: 3000 symbols are a
# sample) is the noise level to compare with. Now the two models' texts:

# %%
def generate(model, n, seed):
    """n symbols sampled from model, restarting the window every block_size symbols."""
    next_logits = next_logits_fn(model)
    out = list(test_stream[:2])
    rng_generate = np.random.default_rng(seed)
    while len(out) < n:
        chunk = sample(next_logits, out[-2:], block_size - 2, rng=rng_generate)
        out.extend(chunk[2:])
    return np.array(out[:n])


generated = {causal: generate(model, 3000, 0) for causal, model in models.items()}
print(f"each window: a 2-symbol prompt and {block_size - 2} sampled symbols")
tv = {causal: tv_distance(seq, 2) for causal, seq in generated.items()}
tv_triples = {causal: tv_distance(seq, 3) for causal, seq in generated.items()}
tv_real = tv_distance(real_text, 2)
for causal, seq in generated.items():
    name = "with mask   " if causal else "without mask"
    print(f"{name}: {produced(''.join(map(str, seq[:40])))}...  TV pairs {produced(tv[causal], '.3f')}, "
          f"triples {produced(tv_triples[causal], '.3f')}")
print(f"real text from the source:                          TV pairs {tv_real:.3f}, "
      f"triples {tv_distance(real_text, 3):.3f} (sampling noise)")
repeats = np.mean(generated[False][1:] == generated[False][:-1])
print(f"without mask: the next symbol repeats the last one {produced(repeats, '.1%')} of the time; "
      f"in the source {np.trace(pair_law):.0%}")
assert tv[True] < 3 * tv_real  # close to the source, up to sampling noise
assert tv[False] > 0.5  # far from it...
assert tv_triples[False] > 0.5 and tv_triples[True] < tv_triples[False] / 2  # ...triples agree
assert repeats > 2 * np.trace(pair_law)  # degenerate: the same symbol again and again

# %% [markdown]
# The masked model's text has the source's pair statistics up to a few times the sampling noise of
# real text; the unmasked model's text is dominated by runs of one repeated symbol. Triples tell the
# same story. Read each triple distance against real text's, not against the pairs: every text is
# further from the triple law than from the pair law, real text included: the pairs are a summary of
# the triples, and summing cells can only bring two laws closer (and the same 3000 symbols are spread
# over 512 cells instead of 64). (The masked model has not learned the source fully
# yet: its loss is still above the entropy rate after 250 steps.)
#
# ## The mask and its count (Figs. 6.13–6.14)
#
# Now the fix in general. For $n$ words the mask is the $n\times n$ matrix of the tiny example:
# zeros on and below the diagonal, $-\infty$ above it. Row $i$ lets the query at word $i$ see words
# $1,\dots,i$, so the matrix has $1+2+\dots+n=n(n+1)/2$ allowed entries. It depends only on the
# positions, never on the words.

# %%
draw_causal_mask(list(RUNNING_EXAMPLE[:6]))
plt.show()

# %% [markdown]
# **Figure 6.3.3.** The causal mask for the first six words of the chapter's sentence, as the matrix
# added to the scores. Read a row: the query at "who" (row 4) may look at "The", "software",
# "engineer" and itself; the grey $-\infty$ cells, everything to the right of the diagonal, become
# weight 0 after the softmax.
#
# The same on random queries and keys for $n=8$ words, compared with torch's own implementation, and
# the count $n(n+1)/2$ checked for every $n$ up to 64:

# %%
rng = np.random.default_rng(0)
n = 8  # number of positions
allowed = causal_mask(n)  # (n, n), True = may attend: entry [i - 1, j - 1] for query i, key j
Q_rand, K_rand, V_rand = rng.standard_normal((3, n, 4))  # random queries, keys, values: row i - 1 is word i
out, W = scaled_dot_product_attention(Q_rand, K_rand, V_rand, causal=True, return_weights=True)
torch_out = F.scaled_dot_product_attention(*(torch.tensor(a) for a in (Q_rand, K_rand, V_rand)),
                                           is_causal=True)
np.testing.assert_allclose(out, torch_out.numpy(), atol=1e-12)
assert np.all(W[~allowed] == 0)  # the future gets nothing
assert np.all(W[allowed] > 0)  # the past and present all get something
assert np.allclose(W.sum(1), 1)  # each row is still a distribution
for size in range(1, 65):
    assert causal_mask(size).sum() == size * (size + 1) // 2
print(f"n = {n}: {int(allowed.sum())} allowed entries = n(n+1)/2 = {n * (n + 1) // 2}; "
      "checked for every n from 1 to 64")

# %%
fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
ticks = [str(t) for t in range(1, n + 1)]
heatmap(allowed.astype(float), ax=axes[0], row_labels=ticks, col_labels=ticks, cmap="gray",
        colorbar=False, title="causal mask (white: allowed)")
unmasked_weights = scaled_dot_product_attention(Q_rand, K_rand, V_rand, return_weights=True)[1]
heatmap(unmasked_weights, ax=axes[1], row_labels=ticks, col_labels=ticks, vmin=0, vmax=1,
        title="no mask")
heatmap(W, ax=axes[2], row_labels=ticks, col_labels=ticks, vmin=0, vmax=1, title="with the mask")
for ax in axes:
    ax.set(xlabel="key position j", ylabel="query position i")
plt.tight_layout()
plt.show()

# %% [markdown]
# **Figure 6.3.4** (the chapter's Figs. 6.13 and 6.14, computed). Left: the mask for $n=8$
# positions. Middle and right: the attention weights of the same random queries and keys without and
# with it. With the mask the upper triangle is exactly zero and every row is a distribution over
# positions $1..i$ — row 1 puts all its weight on itself.
#
# ## The running example under the mask (Fig. 6.15)

# %%
words_and_blank = list(RUNNING_EXAMPLE) + ["(blank)"]
n_words = len(words_and_blank)  # 22: 21 context words + the blank
i = 21  # the query of word 21 ("would") predicts word 22
row = causal_mask(n_words)[i - 1]  # (22,): which words query 21 may see
fig, ax = plt.subplots(figsize=(11, 1.8))
for j, (word, visible) in enumerate(zip(words_and_blank, row), start=1):
    ax.text(j, 0, word, rotation=60, ha="center", va="bottom", fontsize=9,
            color="C0" if visible else "0.7")
ax.set_xlim(0, n_words + 1)
ax.set_ylim(-0.2, 1.2)
ax.axis("off")
ax.set_title("visible (blue) to the query that predicts the blank; masked (grey)")
plt.show()
assert row.sum() == 21
assert not row[-1]  # the blank itself is hidden

# %% [markdown]
# **Figure 6.3.5** (the chapter's Fig. 6.15, computed). Row 21 of the $22\times22$ mask: the query
# at "would" sees the 21 context words (itself included) and not the blank it must predict. (Fig. 6.15
# counts 22 context words and puts the blank at position 23; [checked below](#checking-the-paper).)
#
# ## Masked entries get exactly zero gradient
#
# Zero weight is not the whole story: during training the gradient — the signal that adjusts the
# queries and keys — must not flow from the future either. Two checks. First, differentiate a loss
# through a masked softmax (torch's automatic differentiation, and the library's closed-form
# gradient `attention_backward`): the gradient with respect to every masked *score* is exactly 0.

# %%
scores = torch.tensor(rng.standard_normal((n, n)), requires_grad=True)
value_rows = torch.tensor(rng.standard_normal((n, 3)))
upstream = torch.tensor(rng.standard_normal((n, 3)))  # an arbitrary loss: sum(upstream * output)
masked_weights = torch.softmax(scores.masked_fill(~torch.tensor(allowed), float("-inf")), dim=-1)
((masked_weights @ value_rows) * upstream).sum().backward()
score_grad = scores.grad.numpy()
print(f"max |dL/dscore| over masked entries: {np.abs(score_grad[~allowed]).max():.1f}; "
      f"over allowed entries: {np.abs(score_grad[allowed]).max():.3f}")
assert np.all(score_grad[~allowed] == 0.0)
assert np.abs(score_grad[allowed]).max() > 0

X = rng.standard_normal((n, 4))
Wq, Wk, Wv = rng.standard_normal((3, 4, 4))
grads = attention_backward(X, Wq, Wk, Wv, rng.standard_normal((n, 4)), causal=True)
assert np.all(grads.scores[~allowed] == 0.0)

# %% [markdown]
# Second, a whole transformer block (attention plus the parts
# [6.6](6_6_context_representation.ipynb) adds around it): the derivative of its output at position
# $i$ with respect to its input at a later position $j>i$ is exactly zero — no signal flows from the
# future.

# %%
cfg_blk = LMConfig(vocab_size=5, d_model=8, num_heads=2, num_layers=1, max_len=n, init_std=0.5)
block = Block(cfg_blk, torch.Generator().manual_seed(0)).double()
Xt = torch.tensor(rng.standard_normal((1, n, 8)))
Jb = torch.autograd.functional.jacobian(lambda x: block(x)[0], Xt)[0, :, :, 0].numpy()
# Jb: (n, 8, n, 8), d out[i, a] / d x[j, b] at [i - 1, a, j - 1, b]
future = np.abs(Jb).max(axis=(1, 3))  # (n, n): largest entry of each block d out[i] / d x[j]
print(f"largest |d out[i] / d x[j]| for j > i: {future[~allowed].max():.1f}; "
      f"for j <= i: {future[allowed].min():.2e} (smallest block)")
assert np.all(future[~allowed] == 0.0)
assert np.all(future[allowed] > 0)

# %% [markdown]
# ## Training and generation compute the same thing (Figs. 6.16–6.17)
#
# The payoff of the mask: with it, the output at position $t$ of one forward pass over the whole
# window equals the output of a forward pass over the prefix $w[1..t]$. So the model that teacher
# forcing trains, all positions at once, is exactly the model that generates, one word at a time. It
# also makes generation cheap: the keys and values of the words already written never change (in a
# first layer they would not change anyway; from the second layer on the mask is what keeps them
# fixed, see Question 4), so a generator can store them — a {term}`KV cache` — and compute only the
# new word's query, key and value at each step. We compare all three on the trained models (the KV
# cache on the numpy export of the masked model; torch computes in float32, the numpy export in
# float64, and the `dtype` field of the configuration printed at the end describes the export).
# Without the mask, the full pass and the prefix pass disagree at every position but the last.

# %%
seq = windows[0]  # one window: seq[t - 1] is w[t], t = 1..32
diffs = {}
for causal, model in models.items():
    with torch.no_grad():
        full = model(torch.from_numpy(seq[None]))[0].numpy()  # (32, 8): one pass, all positions
        prefix = np.stack([model(torch.from_numpy(seq[None, :t]))[0, -1].numpy()
                           for t in range(1, block_size + 1)])  # (32, 8): the pass over w[1..t], its end
    diffs[causal] = np.abs(full - prefix).max(1)
lm = to_numpy_decoder(models[True])
cache = lm.new_cache()
cached = np.concatenate([lm.logits_cached(seq[t - 1:t], cache)  # feed w[t] alone; the cache has w[1..t-1]
                         for t in range(1, block_size + 1)])
assert diffs[True].max() < 1e-5  # float32 round-off
assert np.abs(cached - lm.logits(seq)).max() < 1e-10  # float64 round-off
assert diffs[False][:-1].min() > 1e-2
assert diffs[False][-1] < 1e-5
print("with mask: max |full - prefix| < 1e-5 (float32 round-off); "
      "max |full - KV cache| < 1e-10 (float64 round-off)")
print(f"without mask: max |full - prefix| = {produced(diffs[False].max(), '.0f')} "
      "(> 1e-2 at every position but the last, where it is round-off, < 1e-5)")

# %%
fig, axes = plt.subplots(1, 2, figsize=(12, 4.2), gridspec_kw={"width_ratios": [1.3, 1]})
positions = np.arange(1, block_size + 1)
axes[0].semilogy(positions, np.maximum(diffs[True], 1e-12), "o-", ms=3, label="with mask")
axes[0].semilogy(positions, np.maximum(diffs[False], 1e-12), "s-", ms=3, label="without mask")
axes[0].set(xlabel="position t", ylabel="max |logits(full) − logits(prefix)|",
            title="train vs generate (Fig. 6.17)")
axes[0].legend()
with torch.no_grad():
    _, att = models[True](torch.from_numpy(seq[None, :16]), return_attention=True)
head_weights = att[0][0, 0].numpy()  # (16, 16): head 1 of the masked model, the first 16 positions
ticks_16 = [str(t) for t in range(1, 17)]
heatmap(head_weights, ax=axes[1], row_labels=ticks_16, col_labels=ticks_16, vmin=0, vmax=1,
        title="masked attention α[i, j], head 1 (Fig. 6.16)")
axes[1].set(xlabel="key position j", ylabel="query position i")
plt.tight_layout()
plt.show()
assert np.all(np.triu(head_weights, 1) == 0)

# %% [markdown]
# **Figure 6.3.6** (the chapter's Figs. 6.17 and 6.16, measured). Left: the largest difference
# between the logits (the scores before the final softmax over the vocabulary) computed for position
# $t$ in one training-style pass and in a generation-style pass over $w[1..t]$. With the mask it is
# float rounding ($<10^{-5}$) at every position, or exactly 0 (drawn at $10^{-12}$, the bottom of
# the axis) — what the model learned in training is exactly what it does when generating. Without the mask the two agree only at the last position, where there
# happens to be no future. Right: one head of the masked model; see the zero triangle above the
# diagonal — the mask — and the staircase edge of the allowed region, where row $i$ has $i$ entries
# (Fig. 6.16's "stepped pyramid", drawn there as a surface).
#
# ## Key takeaways
#
# - Teacher forcing trains every position at once on a sentence it can see whole; without a rule,
#   attention lets position $t$ read the answer $w[t+1]$.
# - A model trained that way, scored the way it was trained, goes far below the entropy rate even on
#   held-out text, and it is worse than a uniform guess when it has to generate: it learned to copy,
#   not to predict.
# - The causal mask adds $-\infty$ to the scores of every later position, so their weights and their
#   gradients are exactly 0; each row still sums to 1 over positions $1..i$.
# - With the mask, one training pass gives exactly the predictions that word-by-word generation
#   gives, and the keys and values of the past can be cached.
#
# ## Check your understanding
#
# 1. For $n=5$ words, how many entries of the attention matrix can be nonzero with the mask, and
#    what is the weight row 1 puts on position 1?
#
#    ```{dropdown} Answer
#    $5\cdot6/2=15$ entries (the diagonal and below). Row 1 may see only itself, so its weight on
#    position 1 is exactly 1, whatever the scores.
#    ```
#
# 2. Why is a training-style loss far *below* the entropy rate, measured on held-out text, a sign of a
#    bug rather than a good model?
#
#    ```{dropdown} Answer
#    The entropy rate is the lowest average loss any predictor that sees only the past can reach on
#    new text from the source. A loss far below it on held-out text (here less than a quarter of $H$,
#    asserted above) means the model saw something it should not have — here, the next symbol itself.
#    Held-out text matters: on its own training text a large enough model can also go below $H$, by
#    memorising that text, and on a short text any predictor can land a little below $H$ by chance.
#    ```
#
# 3. Instead of $-\infty$, someone adds $-5$ to the blocked scores. What goes wrong?
#
#    ```{dropdown} Answer
#    $\exp(-5)\approx0.007$ is small but not zero: later positions still get some weight and some
#    gradient. In the tiny example, changing word 3 then moves the outputs of words 1 and 2 by 0.02
#    (printed below) instead of exactly 0; the training pass and the generation pass no longer agree,
#    and a trained model can make the score of the next position large enough to overcome the $-5$.
#    ```
#
# 4. During generation with a KV cache, which vectors are computed for the new word at step $t$, and
#    which are reused?
#
#    ```{dropdown} Answer
#    The new word's query, key and value are computed; the keys and values of words $1..t-1$ are
#    reused from the cache. In the first layer that is safe with or without the mask, because a key
#    and a value are made from their own word alone. From the second layer on they are made from the
#    layer below's outputs, and only the mask keeps those from changing when a word is added: earlier
#    positions never look at later ones. (The library's numpy model refuses a KV cache for a model
#    without the mask.)
#    ```

# %% tags=["hide-cell"]
print(f"Q1: n = 5: {int(causal_mask(5).sum())} allowed entries = 5*6/2 = {5 * 6 // 2}; "
      f"row 1's weight on position 1: {scaled_dot_product_attention(Q_rand[:5], K_rand[:5], V_rand[:5], causal=True, return_weights=True)[1][0, 0]:.1f}")
soft_mask = {(i, j): 0.0 if j <= i else -5.0 for i in (1, 2, 3) for j in (1, 2, 3)}


def attend_soft(k, v):
    """Outputs of words 1..3 when blocked scores get -5 instead of -infinity."""
    out = {}
    for i in (1, 2, 3):
        scores = np.array([q[i] @ k[j] / np.sqrt(d_k) + soft_mask[(i, j)] for j in (1, 2, 3)])
        out[i] = softmax(scores) @ np.stack([v[j] for j in (1, 2, 3)])
    return out


q, k, v = ({i: m[i - 1] for i in (1, 2, 3)} for m in (queries, keys, values))  # the tiny example again
soft_leak = max(np.abs(attend_soft(changed_k, changed_v)[i] - attend_soft(k, v)[i]).max() for i in (1, 2))
print(f"Q3: e^-5 = {np.exp(-5):.4f}; with -5 instead of -inf, changing word 3 moves the outputs of "
      f"words 1 and 2 by up to {soft_leak:.2f}")
assert causal_mask(5).sum() == 15
assert 0.01 < soft_leak < 0.05

# %% [markdown]
# ## Checking the paper
#
# ### The running example under the mask: 21 context words (Fig. 6.15)
#
# Fig. 6.15 and the text around it speak of 22 context words and a prediction at position 23. The
# sentence as printed has 21 words ([6.1](6_1_parallel_attention.ipynb) counts them): the query that
# predicts the blank is word 21, it sees 21 words, and the mask is $22\times22$ once the blank is
# included. The figure's point — the blank's query sees every earlier word and not the blank — holds
# (asserted above); only the count is off by one. Recorded in the errata, with the count of
# [6.1](6_1_parallel_attention.ipynb).

# %% tags=["hide-cell"]
print(f"context words: {len(RUNNING_EXAMPLE)}; the blank is word {len(RUNNING_EXAMPLE) + 1}; "
      f"the query of word 21 sees {int(causal_mask(n_words)[21 - 1].sum())} words")
assert len(RUNNING_EXAMPLE) == 21

# %% [markdown]
# ### Exercise 3 and the other claims of §6.3
#
# Exercise 3 asks what goes wrong without the mask; the chapter does not answer it there, but §6.3's
# text on Fig. 6.15 does: the model could attend to the word it predicts, "trivially achieving zero
# loss" by copying. Measured above: the unmasked model's training-style loss falls far below the
# entropy rate (the floor for any honest predictor). It is small but not zero (printed with the test
# losses), and no amount of training would make it zero: in each scored window of 31 predictions the
# last one has no later symbol to copy, so even a perfect copier pays about $H$ there, $H/31$ on
# average (printed with the losses). Its attention looks one position ahead, and it is worse than a
# uniform guess when it has to generate.
# The chapter writes the masked formula with $\sqrt{d_{\text{model}}}$, like §6.2; with several heads
# the width that keeps the scores' variance fixed is $d_k$ ([6.2](6_2_attention_mechanism.ipynb),
# Checking the paper).
#
# The text of Fig. 6.16 counts the rows two ways. It says that row $i$ has "exactly $i$ possible
# nonzero entries", which is what its own masked formula ($j\le i$) and its count $T(T+1)/2$ give; but
# it also lists them as "position 2 can attend only to position 1, position 3 to positions 1 and 2,
# and so forth until position $T$ can attend to all $T-1$ preceding positions", which leaves out the
# position itself (and would give $T(T-1)/2$ entries). Those are the words available for
# *predicting* the word at position $i$, the way the chapter's text of Fig. 6.15 counts (a word is
# predicted from the words before it); but the sentence is about attention rows ("its attention
# row", "row $i$"), and row $i$ is the query at position $i$, which the mask lets see itself: row 1
# puts all its weight on position 1, and $n=8$ positions have $36=n(n+1)/2$ allowed entries (both
# printed above). The list mixes the two countings; recorded in the errata.
#
# | claim (§6.3) | measured here |
# |---|---|
# | lower-triangular weights, $n(n+1)/2$ nonzeros, rows sum to 1 (Figs. 6.13–6.14) | the count exact for every $n\le64$; the weights for $n=8$ random queries and keys: zero above the diagonal, rows sum to 1, numpy = torch SDPA |
# | masked entries get exactly zero gradient | autograd and closed form: exactly 0.0; block Jacobian $\partial\,\text{out}[i]/\partial x[j]=0$ for $j>i$ |
# | without the mask the training loss goes to ~0 by copying (text of Fig. 6.15; the question of Exercise 3) | training loss far below the entropy rate, not zero (the last position of each window has nothing to copy: a floor of about $H/31$), attention on $j=i+1$ |
# | …and this does not survive generation | prefix-only loss worse than uniform; generated text degenerate (pair and triple statistics far from the source) |
# | the running example under the mask (Fig. 6.15) | the blank's query sees every earlier word and not the blank; 21 context words, not 22 (erratum) |
# | training and generation are consistent with the mask (Figs. 6.16–6.17) | full pass = prefix pass to $10^{-5}$, = KV cache to $10^{-10}$; the weights are zero above the diagonal |
# | row $i$ has $i$ entries, yet "position 2 can attend only to position 1", …, position $T$ to its $T-1$ predecessors (text of Fig. 6.16) | the first holds: row $i$ sees positions $1..i$, itself included; the list counts the words before position $i$ (those that predict it), not row $i$'s entries (erratum) |
#
# ## Reproducibility
#
# Two 1-layer `TinyLM`s (width 32, 2 heads, sinusoidal positions), with and without the mask,
# trained for 250 steps on 40 000 symbols of a random order-2 Markov source over 8 symbols (about 20
# s on 2 CPU cores). The seed of both trainings is `NEXTWORD_SEED` (default 0);
# `tests/test_notebook_seeds.py` reruns this page with seeds 1 and 2. Library: `nextword.attention`,
# `nextword.attention.gradients`, `nextword.torch.models.lm`, `nextword.data.synthetic`,
# `nextword.decoding`.

# %% tags=["hide-cell"]
print(f"training seed: {SEED}; torch threads: {torch.get_num_threads()}")
for causal, model in models.items():
    print(f"{'with mask   ' if causal else 'without mask'}: {model.config}")
