# %% [markdown]
# # 6.7 Content plus position (Fig. 6.24) and what each layer carries (Fig. 6.30)
#
# *Source: Chapter 6, §6.5 (Fig. 6.24: adding positional encodings to token embeddings) and §6.6
# (Fig. 6.30: the layer stack, "lower layers … surface-level patterns … higher layers … more abstract
# patterns"). Library: `nextword.torch.models.lm`, `nextword.torch.probes.layer_probe`.*
#
# Fig. 6.24 is a drawing of $x[t]=e[t]+\mathrm{PE}(t)$; the text claims the sum carries both what the
# word is and where it is, and that a trained model can take the two apart. Fig. 6.30's text claims a
# hierarchy: surface patterns low in the stack, meaning high. We rebuild Fig. 6.24 from a trained
# model's own tensors and test both claims with linear probes.
#
# **The language.** To know what "surface" and "meaning" are, we use a source where both are defined:
# each sequence draws a hidden *topic* (one of 3), then its tokens from that topic's Markov chain over a
# shared 12-token vocabulary (`topic_markov_source`). The current and the previous token are surface
# features; the topic is a property of the whole context (no single token reveals it). We train a
# 3-layer, 2-head `TinyLM` (width 24, sinusoidal positions, 250 AdamW steps) for three seeds.

# %%
import matplotlib.pyplot as plt
import numpy as np
import torch

from nextword.booktools.plotting import heatmap, use_book_style
from nextword.torch.probes.layer_probe import hidden_states, probe_accuracy, topic_markov_source
from nextword.torch.models.lm import LMConfig, TinyLM, train_lm

use_book_style()
torch.set_num_threads(1)

# %%
T_ctx, seeds, runs = 24, (0, 1, 2), {}
for seed in seeds:
    rng = np.random.default_rng(seed)
    source = topic_markov_source(3, 12, rng=rng, concentration=0.3)
    train_ids, _ = source.sample(1000, T_ctx + 1, rng=rng)
    model = TinyLM(LMConfig(vocab_size=12, d_model=24, num_heads=2, num_layers=3, max_len=T_ctx), seed=seed)
    losses = train_lm(model, train_ids, steps=250, batch_size=32, lr=6e-3, seed=seed, progress=False)
    test_ids, test_topics = source.sample(400, T_ctx, rng=rng)
    runs[seed] = (model, losses, test_ids, test_topics, rng.permutation(400))
    print(f"seed {seed}: training loss {np.mean(losses[:10]):.1f} -> {np.mean(losses[-20:]):.1f} nats")

# %% [markdown]
# ## Fig. 6.24 rebuilt: $e[t]$, $\mathrm{PE}(t)$ and their sum
#
# The model's first residual-stream tensor must be exactly the token embedding plus the sinusoidal
# table. We check that, draw the three matrices for one test sequence, and ask whether the sum still
# carries both pieces of information: a linear probe on $x[t]$ recovers the token and the position.

# %%
model, _, test_ids, test_topics, perm = runs[0]
x0 = hidden_states(model, test_ids)[0]                                          # (400, T, d)
e = model.tok_emb.detach().double().numpy()[test_ids]                           # (400, T, d)
pe = model.pe_table[:T_ctx]                                                     # (T, d)
gap = np.max(np.abs(x0 - (e + pe)))
print(f"x[t] = e[t] + PE(t) for every token of the test set: max |diff| < 1e-6: {gap < 1e-6}")
assert gap < 1e-6
flat = x0[perm].reshape(-1, x0.shape[-1])                                       # (400*T, d), sequences shuffled
tok_acc = probe_accuracy(flat, test_ids[perm].reshape(-1))
pos_acc = probe_accuracy(flat, np.tile(np.arange(T_ctx), 400))
print(f"linear probe on x[t]: token identity {tok_acc:.1f}, position {pos_acc:.1f} (chance 0.08 and 0.04)")
assert tok_acc > 0.95 and pos_acc > 0.6

# %%
fig, axes = plt.subplots(1, 3, figsize=(12, 3.6), sharey=True)
for ax, (title, mat) in zip(axes, [("token embedding e[t]", e[0]), ("positional encoding PE(t)", pe),
                                   ("sum x[t] = e[t] + PE(t)", x0[0])]):
    heatmap(mat, ax=ax, title=title, cmap="RdBu_r", colorbar=False)
    ax.set_xlabel("dimension")
axes[0].set_ylabel("position t")
plt.tight_layout()
plt.show()

# %% [markdown]
# *Figure 6.24 (rebuilt from the trained model, seed 0) — one test sequence: the learned token
# embeddings (rows repeat when a token repeats), the fixed sinusoidal table, and the sum that enters
# the first block. The probes printed above recover both the token and the position from the sum.*
#
# ## Fig. 6.30's claim: surface low, meaning high
#
# For every layer $\ell=0$ (embedding) … 3 we probe the last position's state for the current token,
# the previous token (surface) and the topic (meaning), training on half of the held-out sequences and
# scoring on the other half. Accuracies are printed to one decimal (they come from trained models).

# %%
names = ("current token", "previous token", "topic")
acc = np.zeros((len(seeds), 4, 3))                                              # (seed, layer, feature)
for s, seed in enumerate(seeds):
    model, _, test_ids, test_topics, perm = runs[seed]
    for layer, h in enumerate(hidden_states(model, test_ids)):
        F = h[perm, -1]                                                         # (400, d): last position
        labels = (test_ids[perm, -1], test_ids[perm, -2], test_topics[perm])
        acc[s, layer] = [probe_accuracy(F, lab) for lab in labels]
for layer in range(4):
    print(f"layer {layer}: " + ";  ".join(f"{n} {np.array2string(acc[:, layer, k], precision=1)}"
                                          for k, n in enumerate(names)) + "   (three seeds)")
topic_gain = acc[:, 3, 2] - acc[:, 0, 2]
print("topic: top layer above the embedding by more than 0.2 in every seed:", bool(np.all(topic_gain > 0.2)))
print("current token: decodable (> 0.9) at every layer in every seed:", bool(np.all(acc[:, :, 0] > 0.9)))
assert np.all(topic_gain > 0.2) and np.all(acc[:, :, 0] > 0.9)

# %%
fig, ax = plt.subplots(figsize=(6.4, 3.6))
for k, n in enumerate(names):
    for s in range(len(seeds)):
        ax.plot(range(4), acc[s, :, k], color=f"C{k}", marker="o", lw=1, label=n if s == 0 else None)
ax.axhline(1 / 3, color="C2", ls=":", lw=0.8)
ax.axhline(1 / 12, color="C0", ls=":", lw=0.8)
ax.set_xticks(range(4), ["embedding", "block 1", "block 2", "block 3"])
ax.set_ylabel("held-out probe accuracy")
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# *Figure 6.30 (measured) — linear-probe accuracy of three features at each depth, three seeds
# (dotted: chance for the topic, 1/3, and for a token, 1/12).*
#
# **What holds and what does not.** The *meaning* half of the claim holds on this language: the topic,
# which no single token reveals, becomes more decodable block by block and is best at the top, in
# every seed. The *surface* half holds only in the weak sense that surface features are available
# low: the current token stays perfectly decodable through all three blocks (the residual stream
# keeps it — nothing forces the upper layers to drop it), and the previous token is only weakly
# decodable at any depth in a model this small. So the stack adds abstraction on top of the surface
# information rather than replacing it; a probe cannot show "lower layers learn surface patterns,
# higher layers semantics" as a division of labour here.
