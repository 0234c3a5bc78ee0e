# %% [markdown]
# # 6.7 Content plus position (Fig. 6.24) and what each layer carries (Fig. 6.30)
#
# **The question.** When a positional encoding is *added* to a word's vector, are the word and its
# position still both there — and as a stack of layers works on that sum, does each layer keep, drop or
# build different information?
# The chapter claims both: that $x[t]=e[t]+\mathrm{PE}(t)$ carries what the word is and where it is
# (Fig. 6.24), and that lower layers capture surface patterns while higher layers capture meaning
# (Fig. 6.30). If the sum lost one of its pieces, 6.5's encodings would be useless; if the layers did not
# differ, stacking them would buy nothing. We test both claims on trained models with a tool that is
# everywhere in the study of language models: the linear probe.
#
# ```{admonition} Learning goals
# :class: tip
# After this page you can
# - explain, with two-dimensional vectors, when adding a position vector to a word vector loses
#   information and when it does not;
# - use a linear probe to test whether a hidden vector carries a property, and compare its accuracy
#   with chance;
# - read a probe-by-layer plot and say which part of Fig. 6.30's claim it supports.
# ```
#
# **Builds on:** [6.5 Positional encoding](6_5_positional_encoding.ipynb) (the sinusoidal table) ·
# [6.6 The decoder block](6_6_context_representation.ipynb) (the block and its residual stream) ·
# least squares and a train/test split. **Reading time:** about 25 minutes.
#
# ```{admonition} Symbols on this page
# :class: note
# | symbol | meaning | shape |
# |---|---|---|
# | $t$ | position in a sequence, counted from 0 as in [6.5](6_5_positional_encoding.ipynb) (most pages count words from 1); $\mathrm{PE}(t)$ is the sinusoidal encoding of position $t$, $(d_{\text{model}},)$ | integer |
# | $e$, $e[t]$ | a word's vector; the token embedding at position $t$ | $(d_{\text{model}},)$; $(2,)$ in the tiny example |
# | $u(t)$ | position vector of position $t$ in the tiny example | $(2,)$ |
# | $x[t]$ | what enters the first block at position $t$: $e[t]+\mathrm{PE}(t)$ | $(d_{\text{model}},)$ |
# | $d_{\text{model}}$ | width of the vectors (24 here) | integer |
# | $T_{\text{ctx}}$ | length of the sequences probed (24 here) | integer |
# | $\ell$ | depth: 0 is the embedding $x[t]$, $\ell\ge1$ the residual stream after block $\ell$ (the input of block $\ell+1$, which [6.6](6_6_context_representation.ipynb) writes $r^{(\ell+1)}$: it numbers the stream by the block it enters) | integer |
# | $F$, $Y$, $W$ | a probe's inputs (one vector per row, $n$ rows), its one-hot labels ($C$ classes), its weights (the $+1$ is the column of ones) | $(n, d_{\text{model}}+1)$, $(n, C)$, $(d_{\text{model}}+1, C)$; $F$ is $(n, 3)$ in the tiny example |
# | $\lambda$ | the probe's small ridge penalty, $10^{-3}$ | scalar |
# ```
#
# *Source: Chapter 6, §6.5 (Fig. 6.24: adding positional encodings to token embeddings) and §6.6
# (Fig. 6.30: the layer stack, "lower layers … surface-level patterns … higher layers … more abstract
# patterns").*

# %%
import matplotlib.pyplot as plt
import numpy as np
import torch

from nextword.booktools.display import produced
from nextword.booktools.plotting import heatmap, use_book_style
from nextword.torch.probes.layer_probe import hidden_states, probe_accuracy, topic_markov_source
from nextword.torch.models.lm import LMConfig, TinyLM
from nextword.torch.training.token_lm import train_lm

use_book_style()
torch.set_num_threads(1)

# %% [markdown]
# ## A tiny example by hand: can a sum keep two things?
#
# Two words, a $=(1,0)$ and b $=(0,1)$, and two positions with vectors $u(0)=(0.5, 0.5)$ and
# $u(1)=(-0.5, 0.5)$ (positions counted from 0). The four possible inputs $e+u(t)$ are a@0 $=(1.5, 0.5)$,
# b@0 $=(0.5, 1.5)$, a@1 $=(0.5, 0.5)$ and b@1 $=(-0.5, 1.5)$: all different, so from the sum alone we
# can tell both the word and the position — the sum lost nothing. Now choose $u(0)=(0,0)$,
# $u(1)=(1,-1)$: b@1 $=(1,0)=$ a@0, and no reader of the sum can tell "a at position 0" from "b at
# position 1". A loop checks both choices:

# %%
words = {"a": np.array([1.0, 0.0]), "b": np.array([0.0, 1.0])}
choices = {
    "u(0) = (0.5, 0.5), u(1) = (-0.5, 0.5)": {0: np.array([0.5, 0.5]), 1: np.array([-0.5, 0.5])},
    "u(0) = (0, 0),     u(1) = (1, -1)": {0: np.array([0.0, 0.0]), 1: np.array([1.0, -1.0])},
}
distinct = {}
for name, positions in choices.items():
    sums = {f"{w}@{t}": e + u for w, e in words.items() for t, u in positions.items()}
    print(name + ":  " + ", ".join(f"{k} = {tuple(float(v) for v in x)}" for k, x in sums.items()))
    distinct[name] = len({tuple(x) for x in sums.values()}) == len(sums)
    print(f"    every (word, position) gives a different x: {distinct[name]}")
assert list(distinct.values()) == [True, False]

# %% [markdown]
# In two dimensions a collision is easy to build. In $d_{\text{model}}=24$ dimensions, with learned word
# vectors and a sinusoidal table, collisions are vanishingly unlikely — but a model needs more than
# "different": it reads its input with (nearly) linear maps, so the word and the position should be
# readable by a *linear* map. That is what a {term}`probe` tests: a small linear classifier trained to
# predict a property (the token, the position, …) from the vectors, scored on vectors it was not trained
# on. High held-out accuracy means the property is linearly readable there; chance accuracy means it is
# not (for a linear reader).
#
# Our probe is the simplest one: stack the vectors as rows of $F$ (with a column of ones), write each
# label as a one-hot row of $Y$ (one column per class), fit $W$ by least squares on half of the rows,
# $W=\arg\min_W \lVert FW-Y\rVert^2+\lambda\lVert W\rVert^2$, and on the other half predict the class
# whose column of $FW$ is largest. Written out, on the tiny example's first choice (each (word, position)
# seen 40 times with a little noise), reading the position:

# %%
def probe_by_hand(features: np.ndarray, labels: np.ndarray) -> float:
    """Held-out accuracy of a least-squares probe: fit on the first half of the rows, score the second."""
    classes = np.unique(labels)
    Y = (labels[:, None] == classes[None, :]).astype(float)  # (n, classes): one-hot labels
    F = np.c_[features, np.ones(len(features))]  # (n, d + 1): a column of ones for the offsets
    half = len(labels) // 2
    W = np.linalg.solve(F[:half].T @ F[:half] + 1e-3 * np.eye(F.shape[1]), F[:half].T @ Y[:half])
    predicted = classes[np.argmax(F[half:] @ W, axis=1)]  # the largest column wins
    return float(np.mean(predicted == labels[half:]))


noise = np.random.default_rng(0)
pairs = [(w, t) for w in words for t in (0, 1)] * 40  # 160 (word, position) pairs
noise.shuffle(pairs)
sums = np.array([words[w] + choices["u(0) = (0.5, 0.5), u(1) = (-0.5, 0.5)"][t] for w, t in pairs])
sums += 0.05 * noise.standard_normal(sums.shape)
positions_seen = np.array([t for _, t in pairs])
by_hand = probe_by_hand(sums, positions_seen)
print(f"reading the position from the sum: held-out accuracy {by_hand:.2f} (chance 0.5); "
      f"the library's probe_accuracy gives {probe_accuracy(sums, positions_seen):.2f}")
assert by_hand == probe_accuracy(sums, positions_seen) and by_hand > 0.95

# %% [markdown]
# (The library's `probe_accuracy`, used from here on, runs these lines.)
#
# ## The language and the models
#
# To know what "surface" and "meaning" are, we use a source where both are defined: each sequence draws
# a hidden *topic* (one of 3), then its tokens from that topic's Markov chain over a shared 12-token
# vocabulary (`topic_markov_source`): each next token depends only on the current one and the topic. The current and the previous token are surface features; the topic
# is a property of the whole context (no single token reveals it for certain). We train a 3-layer, 2-head
# `TinyLM` (width 24, sinusoidal positions, 250 AdamW steps with `train_lm`, the loop written out in
# [6.4](6_4_multi_head.ipynb)) for three seeds, each with its own random source; the first sequences of
# the first source, with their topics:

# %%
T_ctx, seeds, runs = 24, (0, 1, 2), {}
for seed in seeds:
    rng = np.random.default_rng(seed)
    source = topic_markov_source(3, 12, rng=rng, concentration=0.3)
    train_ids, _ = source.sample(1000, T_ctx + 1, rng=rng)
    config = LMConfig(vocab_size=12, d_model=24, num_heads=2, num_layers=3, max_len=T_ctx)
    model = TinyLM(config, seed=seed)
    losses = train_lm(model, train_ids, steps=250, batch_size=32, lr=6e-3, seed=seed,
                      progress=False)
    test_ids, test_topics = source.sample(400, T_ctx, rng=rng)
    runs[seed] = (model, losses, test_ids, test_topics, rng.permutation(400))
    if seed == 0:
        for row, topic in zip(test_ids[:3], test_topics[:3]):
            print(f"topic {topic}: " + " ".join(map(str, row)))
    first, last = np.mean(losses[:10]), np.mean(losses[-20:])
    print(f"seed {seed}: training loss {produced(first, '.1f')} -> {produced(last, '.1f')} nats")
    assert last < first  # the model learned something

# %% [markdown]
# ## Fig. 6.24 rebuilt: $e[t]$, $\mathrm{PE}(t)$ and their sum
#
# The model's first residual-stream tensor must be exactly the token embedding plus the sinusoidal
# table. We check that, then ask whether the sum still carries both pieces of information: a linear probe
# on $x[t]$ for the token (12 classes, chance $1/12\approx 0.08$) and for the position (24 classes, chance
# $1/24\approx 0.04$).

# %%
model, _, test_ids, test_topics, perm = runs[0]
x0 = hidden_states(model, test_ids)[0]  # (400, T, d_model): the input of block 1
token_embeddings = model.tok_emb.detach().double().numpy()[test_ids]  # (400, T, d_model)
position_table = model.pe_table[:T_ctx]  # (T, d_model)
gap = np.max(np.abs(x0 - (token_embeddings + position_table)))
print(f"x[t] = e[t] + PE(t) for every token of the test set: max |diff| < 1e-6: {gap < 1e-6}")
assert gap < 1e-6

# %%
flat = x0[perm].reshape(-1, x0.shape[-1])  # (400*T, d_model), sequences shuffled
token_accuracy = probe_accuracy(flat, test_ids[perm].reshape(-1))
position_accuracy = probe_accuracy(flat, np.tile(np.arange(T_ctx), 400))
print(f"linear probe on x[t]: token identity {produced(token_accuracy, '.1f')}, "
      f"position {produced(position_accuracy, '.1f')} (chance 0.08 and 0.04)")
assert token_accuracy > 0.95
assert position_accuracy > 0.6

# %%
panels = [("token embedding e[t]", token_embeddings[0]),
          ("positional encoding PE(t)", position_table),
          ("sum x[t] = e[t] + PE(t)", x0[0])]
fig, axes = plt.subplots(1, 3, figsize=(12, 3.6), sharey=True)
for ax, (title, matrix) in zip(axes, panels):
    limit = np.abs(matrix).max()  # a colour scale centred on zero
    heatmap(matrix, ax=ax, title=title, cmap="RdBu_r", vmin=-limit, vmax=limit, colorbar=False)
    ax.set_xlabel("dimension")
axes[0].set_ylabel("position t (0-based)")
plt.tight_layout()
plt.show()

# %% [markdown]
# **Figure 6.7.1** (Fig. 6.24 rebuilt from the trained model, seed 0). One test sequence: the learned
# token embeddings (see the rows repeat when a token repeats), the fixed sinusoidal table, and the sum
# that enters the first block (red positive, blue negative, white zero). By eye the sum cannot be split
# into its pieces (only the table's slow columns still show through, on the right), yet the
# probes printed above recover both the token and the position from it.
#
# ## Fig. 6.30's claim: surface low, meaning high
#
# For every depth $\ell=0$ (the embedding, $x[t]$) … 3 (the output of block 3) we probe the last
# position's state for the current token, the previous token (surface) and the topic (meaning), training
# on half of the held-out sequences and scoring on the other half. The vector we probe is the
# {term}`residual stream` after each block.

# %%
feature_names = ("current token", "previous token", "topic")
accuracy = np.zeros((len(seeds), 4, 3))  # (seed, layer, feature)
for s, seed in enumerate(seeds):
    model, _, test_ids, test_topics, perm = runs[seed]
    for layer, states in enumerate(hidden_states(model, test_ids)):
        last_states = states[perm, -1]  # (400, d_model): the last position
        labels = (test_ids[perm, -1], test_ids[perm, -2], test_topics[perm])
        accuracy[s, layer] = [probe_accuracy(last_states, label) for label in labels]
for layer in range(4):
    per_feature = [f"{name} {produced(np.array2string(accuracy[:, layer, k], precision=1))}"
                   for k, name in enumerate(feature_names)]
    print(f"layer {layer}: " + ";  ".join(per_feature) + "   (three seeds)")

# %%
topic_gain = accuracy[:, 3, 2] - accuracy[:, 0, 2]  # (seeds,): top layer minus embedding
topic_rises = bool(np.all(topic_gain > 0.2))
topic_top = bool(np.all(accuracy[:, 3, 2] > 0.7))
token_kept = bool(np.all(accuracy[:, :, 0] > 0.9))
previous_weak = bool(np.all(accuracy[:, :, 1] < 0.5))
previous_not_lower = bool(np.all(accuracy[:, 0, 1] < accuracy[:, 3, 1] + 0.1))  # not better low than high
step_by_step = int(np.sum(np.all(np.diff(accuracy[:, :, 2], axis=1) > 0, axis=1)))
print("topic: top layer above the embedding by more than 0.2 in every seed:", topic_rises)
print("topic: above 0.7 at the top layer in every seed:", topic_top)
print(f"topic: rising at every block, seeds: {produced(step_by_step, 'd')} of {len(seeds)}")
print("current token: decodable (> 0.9) at every layer in every seed:", token_kept)
print("previous token: below 0.5 at every layer in every seed (chance 1/12):", previous_weak)
print("previous token: no better (by 0.1) from the embedding than from block 3, in every seed:", previous_not_lower)
assert topic_rises and topic_top
assert token_kept and previous_weak and previous_not_lower
# the embedding x[t] holds no previous token, yet a probe reads it above chance (1/12): inferred from the current one
assert np.all(accuracy[:, 0, 1] > 1 / 12 + 0.05)

# %%
fig, ax = plt.subplots(figsize=(6.4, 3.6))
for k, name in enumerate(feature_names):
    for s in range(len(seeds)):
        ax.plot(range(4), accuracy[s, :, k], color=f"C{k}", marker="o", lw=1,
                label=name if s == 0 else None)
ax.axhline(1 / 3, color="C2", ls=":", lw=0.8, label="chance, topic (1/3)")
ax.axhline(1 / 12, color="C0", ls=":", lw=0.8, label="chance, token (1/12)")
ax.set_xticks(range(4), ["embedding", "block 1", "block 2", "block 3"])
ax.set_xlabel("depth: the residual stream after …")
ax.set_ylabel("held-out probe accuracy")
ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
plt.show()

# %% [markdown]
# **Figure 6.7.2** (Fig. 6.30 measured). Linear-probe accuracy of three features at each depth, one line
# per seed (dotted: chance for the topic, 1/3, and for a token, 1/12). See the bluish-green topic lines
# climb from the embedding to block 3 (not always at every step), while the blue current-token lines
# stay at the top all the way and the vermilion previous-token lines stay low.
#
# **What holds and what does not.** The *meaning* half of the claim holds on this language: the topic,
# which no single token reveals for certain, is far more decodable after the blocks than at the
# embedding, in every seed — though not necessarily rising at every block (the count above). The
# *surface* half holds only weakly. The current token is available low and stays decodable (above 0.9)
# through all three blocks (a residual stream allows that: each block adds to it, and nothing forces the
# upper layers to cancel the token — though this page does not test that the stream is the reason).
# The previous token is only weakly decodable (below 0.5) at any depth, and this language gives the model
# no reason to carry it for its own sake: the next token depends only on the current one and the topic, so the previous
# token helps the prediction only as a clue to the topic. At the embedding it is not in the vector at all: $x[t]$ holds only the current token and its position, so what
# a probe reads there (above the chance of 1/12, asserted) it infers from the current token: in each
# topic's chain some tokens come before the current one more often than others. So the stack adds abstraction on top of the surface information rather than
# replacing it; a probe cannot show "lower layers learn surface patterns, higher layers semantics" as a
# division of labour here.
#
# ## Key takeaways
#
# - Adding a position vector to a word vector loses information only if two (word, position) pairs give
#   the same sum; in many dimensions this is unlikely, and a trained model's input $e[t]+\mathrm{PE}(t)$
#   lets a linear probe read both the token and the position.
# - A linear probe tests whether a property is *linearly readable* from hidden vectors; its held-out
#   accuracy must be compared with chance.
# - On a language with a hidden topic, the topic is far more readable after the blocks than in the
#   embedding (though not always rising at every block): the blocks do build context-wide information.
# - The current token stays readable at every depth, which a residual stream allows (each block adds to
#   it, unless a block cancels the token): the blocks add the topic on top of the surface information
#   rather than replacing it. The page does not remove the residual connections, so it shows that the
#   token stays, not why.
#
# ## Check your understanding
#
# 1. With a $=(1,0)$, b $=(0,1)$ and $u(0)=(0,0)$, find a $u(1)$ other than $(1,-1)$ that makes two
#    (word, position) pairs collide.
#
#    ```{dropdown} Answer
#    A collision needs $e + u(1) = e' + u(0)$ for some words, i.e. $u(1)$ equal to a difference of two
#    word vectors: $u(1) = (-1, 1)$ (a@1 = b@0) works, and so does $u(1)=(0,0)$ (every word collides
#    with itself at the other position); the cell below checks both.
#    ```
#
# 2. With 3 topics, a probe reads the topic from block 3 right most of the time (above 0.7 in every
#    seed), and from the embedding of the last token about half of the time. What does each result tell
#    you, and what does it not tell you?
#
#    ```{dropdown} Answer
#    Chance is $1/3$. About 0.5 from the embedding (clearly above chance and clearly below block 3 in
#    every seed, the cell below) says that the last token alone already hints at the topic — the topics' chains use the tokens with
#    different frequencies — but no more than a hint. Above 0.7 from block 3 says that the blocks have
#    gathered the topic from the whole context into the last position's stream, where it is linearly
#    readable. Neither says the model *uses* that information for its prediction, nor that a non-linear
#    reader could not find it lower down.
#    ```
#
# 3. Why can the current token stay decodable at every depth even if no layer "needs" it up there?
#
#    ```{dropdown} Answer
#    Each block adds its outputs to the residual stream instead of replacing it, so the embedding's
#    information is carried upward unless a layer actively cancels it.
#    ```

# %% tags=["hide-cell"]
# Question 1: both other choices of u(1) make two (word, position) pairs collide
for u1 in (np.array([-1.0, 1.0]), np.array([0.0, 0.0])):
    sums_q1 = [tuple(e + u) for e in words.values() for u in (np.zeros(2), u1)]
    print(f"Q1: u(1) = {tuple(u1.tolist())}: {len(set(sums_q1))} different sums for 4 (word, position) pairs")
    assert len(set(sums_q1)) < 4
# Question 2: the topic from the embedding (a hint, above chance 1/3) and from block 3 (above 0.7)
topic_embedding, topic_block3 = accuracy[:, 0, 2], accuracy[:, 3, 2]
print(f"Q2: topic from the embedding {produced(np.array2string(topic_embedding, precision=1))}, "
      f"from block 3 {produced(np.array2string(topic_block3, precision=1))} (three seeds; chance 1/3)")
assert np.all((topic_embedding > 1 / 3 + 0.05) & (topic_embedding < 0.7)) and np.all(topic_block3 > 0.7)

# %% [markdown]
# ## Checking the paper
#
# **Fig. 6.24** ("the resulting vector contains both content and position information"): holds for a
# trained model's input $x[t]=e[t]+\mathrm{PE}(t)$ — a linear probe reads both the token and the
# position from it on held-out data (printed above). As the tiny example shows, this is a property of
# the particular vectors, not of addition: a sum can lose information when two (word, position) pairs
# collide.
#
# **Fig. 6.30 and §6.6** ("lower layers … surface-level patterns …, higher layers … more abstract
# patterns"; probing studies find "lower layers better for syntactic tasks"): half holds on a language
# where both kinds of information are defined. The topic, a property of the whole context, becomes far
# more readable after the blocks (asserted in every seed); but the surface features do not move out of
# the upper layers — the current token stays readable at every depth and the previous token is weakly
# readable at every depth, no better low than high (asserted) — a weak test of the surface half, since in
# this language the prediction never needs the previous token except as a clue to the topic. The stack adds abstraction on top of the surface
# information; a division of labour between low and high layers is not what a probe shows here. The
# chapter rests its claim on probing studies of trained language models that it does not name, so they
# cannot be rerun; this measurement shows what the mechanism alone produces.
#
# ## Reproducibility
#
# **Default run:** three 3-layer, 2-head `TinyLM`s (width 24, sinusoidal positions) trained for 250 AdamW
# steps (batch 32, learning rate 6e-3) on 1000 sequences of $T_{\text{ctx}}+1=25$ tokens each, seeds 0, 1,
# 2; probed on 400 held-out sequences of $T_{\text{ctx}}=24$ tokens. Library: `nextword.torch.models.lm` (the model), `nextword.torch.training.token_lm` (its training loop, `train_lm`),
# `nextword.torch.probes.layer_probe` (the topic source, the hidden states and the probe). The probe accuracies
# come from trained models and are shown to one decimal; the asserts use margins that hold across seeds
# and CPUs.
