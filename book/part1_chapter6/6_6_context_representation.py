# %% [markdown]
# # 6.6 Context representation in transformers
#
# *Source: Chapter 6, §6.6 (the block formula, Figs. 6.29–6.32, Exercises 8, 11 and 12).
# Library: `nextword.decoder.layers`, `nextword.decoder`, `nextword.chapter6.recurrent`, `nextword.torch.probes.ablation`,
# `nextword.chapter6.probing`, `nextword.torch.models.lm`.*
#
# This notebook (1) checks the chapter's formula for one decoder block against its own Fig. 6.29 and
# builds the decoder-only stack from the library's pieces; (2) measures the memory an RNN and a
# transformer keep for a context of length $T$ (Exercise 8, Fig. 6.31) and their operation counts and
# run times (Exercise 11), and follows the running example through two trained layers (Fig. 6.32); (3) runs the ablations of Exercise 12 on a small trained model — removing the
# causal mask, the positional encoding, multi-head attention or the residual connections — with the
# chapter's predictions next to what we measure.
#
# **Default run**: one 2-layer, 4-head `TinyLM` (width 32) trained for 600 steps on `AgreementTask`,
# ablated at test time, plus two ablated models retrained the same way (no mask, no positions), and a
# 2-layer width-16 model on the running example — about 40 s on 2 CPU cores. `FULL=1` also retrains the single-head and no-residual models.

# %%
import os
import time

import matplotlib.pyplot as plt
import numpy as np
import sympy as sp
import torch

from nextword.torch.probes.ablation import ABLATIONS, ablated_config, prefix_nll, token_nll, with_config
from nextword.attention import MultiHeadAttention, softmax
from nextword.decoder import DecoderConfig, DecoderLM
from nextword.attention import KVCache
from nextword.decoder import TransformerBlock, feed_forward, layer_norm
from nextword.booktools.plotting import use_book_style
from nextword.positions import sinusoidal_encoding
from nextword.chapter6 import AgreementTask
from nextword.chapter6 import rnn_states
from nextword.chapter6 import RUNNING_EXAMPLE, RunningExampleSource
from nextword.torch.models.lm import LMConfig, TinyLM, train_lm

use_book_style()
torch.set_num_threads(1)  # tiny models: one thread is fastest on a shared 2-core machine
FULL = os.environ.get("FULL", "0") == "1"
# The seed of every training on this page. The page shows seed 0; tests/test_notebook_seeds.py re-runs it
# with NEXTWORD_SEED=1 and 2, so every assert about what training produces holds for three seeds.
SEED = int(os.environ.get("NEXTWORD_SEED", "0"))

# %% [markdown]
# ## The block formula (§6.6, Fig. 6.29)
#
# The chapter writes one layer as
#
# $$h^{(\ell+1)}=\mathrm{LayerNorm}\Big(h^{(\ell)}+\mathrm{FFN}\big(\mathrm{LayerNorm}(h^{(\ell)}+\mathrm{MHA}(h^{(\ell)}))\big)\Big),$$
#
# while Fig. 6.29 and its caption describe attention → residual → norm, then FFN → residual → norm,
# i.e. $u=\mathrm{LN}(h+\mathrm{MHA}(h))$, $h'=\mathrm{LN}(u+\mathrm{FFN}(u))$ (the post-norm block of
# Vaswani et al., `TransformerBlock(pre_norm=False)` in the library). The two differ in the second skip
# connection: the printed formula adds $h^{(\ell)}$, not $u$. We evaluate both with the same weights.

# %%
rng = np.random.default_rng(0)
d, d_ff, T = 16, 64, 7
blk = TransformerBlock(d, 2, d_ff, rng=rng, pre_norm=False)  # Fig. 6.29 / Vaswani post-norm
H = rng.standard_normal((T, d))


def mha(x):
    return blk.attn(x, causal=True)


def ffn(x):
    return feed_forward(x, blk.W1, blk.b1, blk.W2, blk.b2)


u = layer_norm(H + mha(H))
figure_form = layer_norm(u + ffn(u))  # the caption of Fig. 6.29
printed_form = layer_norm(H + ffn(layer_norm(H + mha(H))))  # the displayed formula of §6.6
gap_fig = np.max(np.abs(figure_form - blk(H)))
gap_printed = np.max(np.abs(printed_form - blk(H)))
print("Fig. 6.29 form vs the library block:", "< 1e-12" if gap_fig < 1e-12 else f"{gap_fig:.1e}")
print(f"printed formula vs the library block: {gap_printed:.3f}")
assert gap_fig < 1e-12 and gap_printed > 0.1

# with the FFN switched off (W2 = 0, b2 = 0) the printed formula forgets attention altogether
W2, b2 = blk.W2.copy(), blk.b2.copy()
blk.W2[...] = 0.0
blk.b2[...] = 0.0
printed_no_ffn = layer_norm(H + ffn(layer_norm(H + mha(H))))
H_other = H.copy()
H_other[:3] = rng.standard_normal((3, d))  # change the context of the last position
printed_no_ffn_other = layer_norm(H_other + ffn(layer_norm(H_other + mha(H_other))))
blk_gap = np.max(np.abs(blk(H)[-1] - blk(H_other)[-1]))
print("FFN = 0: printed formula equals LN(h):", np.allclose(printed_no_ffn, layer_norm(H)),
      f"; last position's output moves with its context: printed form "
      f"{np.max(np.abs(printed_no_ffn[-1] - printed_no_ffn_other[-1])):.1e}, Fig. 6.29 form {blk_gap:.2f}")
assert np.allclose(printed_no_ffn, layer_norm(H), atol=1e-12) and blk_gap > 0.1
blk.W2[...], blk.b2[...] = W2, b2

# %% [markdown]
# In the printed formula the attention output reaches the next layer only *through* the FFN; with a
# zero FFN a position's output no longer depends on its context at all. The figure's version (and every
# implementation we know) adds the attention output to the stream before the FFN and keeps it there.
# We use the figure's form and record the displayed formula in `book/ERRATA.md`.
#
# ## The decoder-only stack
#
# Input $e[t]+\mathrm{PE}(t)$, $n_{\text{layers}}$ blocks, a final linear map and softmax. We compose the
# library's pieces by hand and compare with `DecoderLM` (post-norm, as in the chapter), then count the
# parameters: $V d$ (embedding) $+\,n_{\text{layers}}(4d^2+2d\,d_{ff}+d_{ff}+d+4d)$ (attention, FFN with
# biases, two LayerNorms) $+\,dV$ (output layer).

# %%
cfg = DecoderConfig(vocab_size=11, d_model=16, num_heads=2, num_layers=3, max_len=32, pre_norm=False)
lm = DecoderLM(cfg, rng=np.random.default_rng(1))
ids = np.random.default_rng(2).integers(0, 11, size=9)
x = lm.tok_emb[ids] + sinusoidal_encoding(9, 16)  # (T, d): e[t] + PE(t)
for block in lm.blocks:
    x = block(x)  # h^(l+1) from h^(l)
probs = softmax(x @ lm.W_U)  # (T, V): P(w[t+1] | w[1..t])
err = np.max(np.abs(probs - softmax(lm.logits(ids))))
V_, d_, L_, f_ = sp.symbols("V d L d_ff", positive=True)
count = V_ * d_ + L_ * (4 * d_**2 + 2 * d_ * f_ + f_ + d_ + 4 * d_) + d_ * V_
expected = int(count.subs({V_: 11, d_: 16, L_: 3, f_: 64}))
print("hand-built stack vs DecoderLM:", "< 1e-12" if err < 1e-12 else f"{err:.1e}",
      f"; parameters {lm.num_parameters()} = {sp.expand(count)} = {expected}")
assert err < 1e-12 and np.allclose(probs.sum(-1), 1) and lm.num_parameters() == expected

# %% [markdown]
# ## Memory: one state vs a grid (Exercise 8, Fig. 6.31)
#
# An RNN keeps one $d_{\text{model}}$-vector whatever $T$; a transformer keeps a $d_{\text{model}}$-vector
# per position (per layer), $T\,d_{\text{model}}$ numbers — the chapter's count. The ratio is $T$, so the
# transformer needs **10 times** the RNN's memory at $T=10$, for any $d_{\text{model}}$. What a decoder
# actually keeps while generating is its KV cache: a key *and* a value per position and layer,
# $2\,T\,d_{\text{model}}$ numbers per layer, so the factor 10 comes already at $T=5$ (one layer). We
# measure both from the library's arrays.

# %%
def rnn_floats(T, d):
    rng = np.random.default_rng(0)
    states = rnn_states(rng.standard_normal((T, d)), rng.standard_normal((d, d)) / d, rng.standard_normal((d, d)) / d)
    return states[-1].size  # only the last state is carried forward


def transformer_floats(T, d):
    rep = TransformerBlock(d, 2, 4 * d, rng=np.random.default_rng(0))(np.ones((T, d)))
    return rep.size  # one vector per position


def kv_cache_floats(T, d):
    model = DecoderLM(DecoderConfig(vocab_size=5, d_model=d, num_heads=2, num_layers=1, max_len=T),
                      rng=np.random.default_rng(0))
    cache = KVCache(1, capacity=T)
    model.logits_cached(np.zeros(T, dtype=int), cache)
    return cache.nbytes // 8  # float64


for dm in (16, 64):
    ratio = {T: transformer_floats(T, dm) / rnn_floats(T, dm) for T in (1, 5, 10, 20)}
    kv_ratio = {T: kv_cache_floats(T, dm) / rnn_floats(T, dm) for T in (1, 5, 10, 20)}
    first10 = min(T for T in range(1, 50) if transformer_floats(T, dm) >= 10 * rnn_floats(T, dm))
    first10_kv = min(T for T in range(1, 50) if kv_cache_floats(T, dm) >= 10 * rnn_floats(T, dm))
    print(f"d_model={dm}: representation ratio {ratio}; KV-cache ratio {kv_ratio}; "
          f"10x reached at T = {first10} (representations), T = {first10_kv} (KV cache)")
    assert first10 == 10 and first10_kv == 5

# %%
rng = np.random.default_rng(3)
Tg, dg = 20, 24
rnn_traj = rnn_states(rng.standard_normal((Tg, dg)), rng.standard_normal((dg, dg)) / np.sqrt(dg),
                      0.9 * np.linalg.qr(rng.standard_normal((dg, dg)))[0])
grid = DecoderLM(DecoderConfig(vocab_size=30, d_model=dg, num_heads=2, num_layers=2, max_len=Tg, pre_norm=False),
                 rng=np.random.default_rng(4))
toks = rng.integers(0, 30, size=Tg)
xg = grid.tok_emb[toks] + sinusoidal_encoding(Tg, dg)
for block in grid.blocks:
    xg = block(xg)  # (T, d): the transformer's final-layer grid
tt, dd = np.meshgrid(np.arange(Tg), np.arange(dg), indexing="ij")
fig = plt.figure(figsize=(11, 4.2))
ax = fig.add_subplot(1, 2, 1, projection="3d")
ax.plot_surface(tt, dd, rnn_traj, cmap="Greys", alpha=0.35, linewidth=0)
ax.plot(np.full(dg, Tg - 1), np.arange(dg), rnn_traj[-1], color="C3", lw=2.5, label="kept: h[T]")
ax.set_title("RNN: states h[1..T], only h[T] is kept", fontsize=9)
ax.set_xlabel("position"); ax.set_ylabel("dimension"); ax.legend(fontsize=8)
ax = fig.add_subplot(1, 2, 2, projection="3d")
ax.plot_surface(tt, dd, xg, cmap="viridis", linewidth=0)
ax.set_title("transformer: all T x d representations are kept", fontsize=9)
ax.set_xlabel("position"); ax.set_ylabel("dimension")
plt.tight_layout()
plt.show()

# %% [markdown]
# *Figure 6.31 (rebuilt with random weights).* Left: the hidden states of a tanh RNN over 20 steps —
# the grey surface is computed along the way, but only the red line $h[T]$ is carried into the
# prediction. Right: the final-layer representations of a 2-layer decoder, one row per position, all
# of which stay addressable by attention.
#
# ## Operation counts and run time (Exercise 11)
#
# Per layer and sequence, a transformer's attention sub-layer costs about $8Td^2$ multiply-adds for the
# four projections and $4T^2d$ for scores and weighted sums, with sequential depth 1; a recurrent layer
# costs about $4Td^2$ (input and state matrices) but in $T$ sequential steps. Below, the measured time
# of the library's `MultiHeadAttention` against $T$ at $d=64$: linear while the projections dominate
# ($T<2d$), then quadratic.

# %%
Ts, d_c = [32, 64, 128, 256, 512, 1024], 64
attn_layer = MultiHeadAttention(d_c, 4, rng=np.random.default_rng(0))
times = []
for T_ in Ts:
    Xc = np.random.default_rng(1).standard_normal((T_, d_c))
    best = np.inf
    for _ in range(5):
        t0 = time.perf_counter()
        attn_layer(Xc)
        best = min(best, time.perf_counter() - t0)
    times.append(best)
flops = [8 * T_ * d_c**2 + 4 * T_**2 * d_c for T_ in Ts]

# %% tags=["nbval-ignore-output"]
slope = np.polyfit(np.log(Ts[-3:]), np.log(times[-3:]), 1)[0]
print(f"log-log slope of the time over T = 256..1024: {slope:.2f} (operation count: "
      f"{np.polyfit(np.log(Ts[-3:]), np.log(flops[-3:]), 1)[0]:.2f})")
fig, ax = plt.subplots(figsize=(6.0, 3.6))
ax.loglog(Ts, times, "o-", label="measured MHA forward (numpy)")
ax.loglog(Ts, np.array(flops) * times[0] / flops[0], "--", label=r"$8Td^2+4T^2d$ (scaled)")
ax.set_xlabel("sequence length T"); ax.set_ylabel("seconds"); ax.legend()
plt.show()

# %% [markdown]
# *Figure (Exercise 11, measured; timings vary between machines and are not checked).* The attention
# cost follows the operation count: the $T^2$ term takes over beyond $T\approx 2d$.

# %% [markdown]
# ## The running example through two layers (Fig. 6.32)
#
# Fig. 6.32 shows the final representation of the running example gathering information from the
# relevant words across layers. We measure it on `RunningExampleSource` (variants of the chapter's
# sentence in which the blank depends only on words 16, 19 and 21; see 6.2): a 2-layer, 2-head
# `TinyLM` of width 16 is trained for 300 steps, and for each layer we average over heads and test
# sentences the weights of the last context word (word 21, whose representation predicts the blank —
# word 22 here, see the errata on the word count) over words 1–21. Beside it, the exact mutual
# information $I(\text{word}_j;\text{blank})$ of the source.

# %%
src = RunningExampleSource()
re_train, re_test = src.sample(4000, np.random.default_rng(0)), src.sample(500, np.random.default_rng(1))
RE_SEEDS = (0, 1, 2)  # a small model: three seeds are cheap, and what it learns differs between them


def read_by_last_word(seed: int) -> tuple[float, list[np.ndarray]]:
    """Train the 2-layer model; its blank loss and, per layer, the last word's mean weights (21,)."""
    m = TinyLM(LMConfig(vocab_size=len(src.vocab), d_model=16, num_heads=2, num_layers=2, max_len=22,
                        positional="learned"), seed=seed)
    train_lm(m, re_train, steps=300, batch_size=32, lr=1e-2, seed=seed, progress=False)
    loss = token_nll(m, re_test)[:, -1].mean()  # the prediction of word 22 only
    with torch.no_grad():
        _, att = m(torch.from_numpy(re_test[:, :-1]), return_attention=True)
    return loss, [w[:, :, -1, :].mean(dim=(0, 1)).double().numpy() for w in att]  # (21,) per layer


runs = {seed: read_by_last_word(seed) for seed in RE_SEEDS}
per_layer = runs[0][1]  # drawn below
mi = np.array([src.mutual_information(j) for j in range(1, 22)])
checks = {
    f"test loss on the blank within 0.25 nats of the floor H(blank | context) = {src.blank_entropy():.2f}":
        [loss < src.blank_entropy() + 0.25 for loss, _ in runs.values()],
    f"layer 2: weight > 0.6 on words 16 '{RUNNING_EXAMPLE[15]}' and 19 '{RUNNING_EXAMPLE[18]}' together":
        [pl[1][[15, 18]].sum() > 0.6 for _, pl in runs.values()],
    f"word 3 '{RUNNING_EXAMPLE[2]}': weight < 0.1 in both layers (uniform would be 1/21)":
        [max(a[2] for a in pl) < 0.1 for _, pl in runs.values()],
    f"layer 1 already: weight > 0.3 on word 19 '{RUNNING_EXAMPLE[18]}'":
        [pl[0][18] > 0.3 for _, pl in runs.values()],
    "layer 1: weight < 0.1 on word 19":
        [pl[0][18] < 0.1 for _, pl in runs.values()],
}
for claim, ok in checks.items():
    print(f"{sum(ok)}/{len(RE_SEEDS)} seeds (seed 0: {'yes' if ok[0] else 'no'}): {claim}")
assert all(all(ok) for ok in list(checks.values())[:3])
assert sum(checks[f"layer 1 already: weight > 0.3 on word 19 '{RUNNING_EXAMPLE[18]}'"]) >= 1

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
# *Figure 6.32 (measured).* Attention of the last context word, averaged over heads and 500 test
# sentences, in layer 1 and layer 2 (seed 0), and the exact mutual information between each word and the
# blank. In every seed, layer 2 reads the adverb (word 16) and the object noun (word 19). Whether layer 1
# already looks at word 19 depends on the seed (the counts above): the division of work between the layers
# is not fixed by the task. "software" (word 2) shares information with the blank only through word 19,
# and the model does not need to read it; "engineer(s)" (word 3, subject number) carries none and gets
# little weight. Word 21 itself reaches the prediction through the residual stream.

# %% [markdown]
# ## Ablations (Exercise 12)
#
# We train the baseline on `AgreementTask` (from §6.4: fillers from an order-2 chain, a subject early in
# each sentence, markers whose next token must agree with the subject), then remove each component in
# two ways: **at test time** from the trained weights (`with_config`: the literal reading of the
# exercise) and, for the mask and the positions, by **retraining** without it. For every model we report
# two losses on the test set: *teacher-forced* (one pass over the whole sentence, as in training) and
# *honest* (each prediction made from the prefix only, as in generation; `prefix_nll`). They agree for
# a causal model and differ when a model can see the future.

# %%
task = AgreementTask.make(np.random.default_rng(0))
train = task.sample(4000, np.random.default_rng(1))
test = task.sample(256, np.random.default_rng(2))
agree = test.marker_mask[:, :-1]  # predicting the agreement form
filler = ~agree & (np.arange(task.length - 1) >= task.subject_window)  # predicting a filler
base_cfg = LMConfig(vocab_size=task.vocab_size, d_model=32, num_heads=4, num_layers=2, max_len=task.length,
                    positional="sinusoidal")
steps = 1500 if FULL else 600


def trained(cfg, n_steps=steps):
    model = TinyLM(cfg, seed=SEED)
    losses = train_lm(model, train.ids, steps=n_steps, batch_size=32, lr=1e-2, seed=SEED, progress=False)
    return model, float(np.mean(losses[-50:]))


def measure(model):
    tf, hon = token_nll(model, test.ids), prefix_nll(model, test.ids)
    return {"tf agree": tf[agree].mean(), "tf filler": tf[filler].mean(),
            "agree": hon[agree].mean(), "filler": hon[filler].mean()}


baseline, base_train = trained(base_cfg)
results = {"baseline": measure(baseline)}
for name, change in ABLATIONS.items():
    results[f"{name} (test time)"] = measure(with_config(baseline, **change))
retrain = list(ABLATIONS) if FULL else ["no mask", "no positions"]
train_loss = {"baseline": base_train}
for name in retrain:
    model, train_loss[f"{name} (retrained)"] = trained(ablated_config(base_cfg, name))
    results[f"{name} (retrained)"] = measure(model)
# one head, trained twice as long as the baseline (at the baseline's step count it may not have learned yet)
model, train_loss["single head (retrained, 2x steps)"] = trained(ablated_config(base_cfg, "single head"), 2 * steps)
results["single head (retrained, 2x steps)"] = measure(model)

# %%
predictions = {
    "no mask": "copies the future: low training loss, fails at generation (§6.3, Ex. 3)",
    "no positions": "cannot tell word order: a bag of words (§6.5)",
    "single head": "one pattern must serve all relations (§6.4)",
    "no residual": "gradients vanish in depth, training unstable (§6.6)",
}
b = results["baseline"]


def versus_baseline(x: float, ref: float) -> str:
    """An honest test loss against the baseline's, in the words (and thresholds) of the asserts below."""
    return "worse (> +0.1)" if x > ref + 0.1 else "as baseline (< +0.1)"


# Trained models differ in their digits from seed to seed and from CPU to CPU, and within the default
# training whether the baseline learns the agreement at all is such a difference: the table prints only
# what the asserts below check for every run (the filler column), the figure shows all values.
unstable = ("no mask (test time)", "single head (retrained, 2x steps)")  # reported in the figure only
print(f"{'model':34s}{'honest filler loss':>22s}{'teacher-forced':>16s}   chapter's prediction")
for name, r in results.items():
    pred = next((p for k, p in predictions.items() if name.startswith(k)), "")
    same = abs(r["tf agree"] - r["agree"]) < 1e-4 and abs(r["tf filler"] - r["filler"]) < 1e-4
    filler_vs = "(figure)" if name in unstable else versus_baseline(r["filler"], b["filler"])
    print(f"{name:34s}{filler_vs:>22s}{'= honest' if same else 'differs':>16s}   {pred}")
print("no mask, retrained: final training loss < 0.3 (baseline: > 1), honest filler loss above the uniform "
      "guess; no residual, test time: the same")
print(f"entropy rate of the filler chain: {task.filler.entropy_rate():.2f} nats (a lower bound: subjects and markers "
      f"interrupt the chain); "
      f"uniform guess: ln {task.vocab_size} = {np.log(task.vocab_size):.2f}")

# %%
nm, npos = results["no mask (retrained)"], results["no positions (retrained)"]
# tests/test_notebook_seeds.py reruns the page with seeds 1 and 2: what is asserted must hold there too.
# The rows "no mask (test time)" and "single head (retrained, 2x steps)" are reported for this run only.
# Within the default training the 2-layer baseline learns the agreement for some seeds and CPUs only; the
# claims about the agreement positions are checked when it has.
learned = b["agree"] < 0.05
# a causal model: teacher forcing = generation
assert abs(b["tf agree"] - b["agree"]) < 1e-4 and abs(b["tf filler"] - b["filler"]) < 1e-4
# (a) no mask, retrained: near-zero training loss that does not survive generation
assert train_loss["no mask (retrained)"] < 0.3 and nm["tf filler"] < 0.3 and train_loss["baseline"] > 1
assert nm["filler"] > np.log(task.vocab_size)
# (b) no positions, retrained: the order-2 fillers suffer
assert npos["filler"] > b["filler"] + 0.1
# test-time removals of positions, heads or residuals from the trained model hurt; without residuals it collapses
for name in ("no positions", "single head", "no residual"):
    assert results[f"{name} (test time)"]["filler"] > b["filler"] + 0.1, name
assert results["no residual (test time)"]["filler"] > np.log(task.vocab_size)  # worse than uniform guessing
if learned:  # the agreement: lost without the mask or at test time, kept without positions (a content lookup)
    assert nm["agree"] > b["agree"] + 0.1 and npos["agree"] < 0.1
    for name in ("no positions", "single head", "no residual"):
        assert results[f"{name} (test time)"]["agree"] > b["agree"] + 0.5, name

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
# *Figure (Exercise 12, measured).* Honest (generation-time) test loss per ablation, split into the
# long-range agreement predictions and the local filler predictions.
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
#   Retrained with one head, the model can relearn the agreement at this small scale, but more slowly:
#   in a run where the baseline learned the agreement it did so with twice the baseline's training steps
#   (figure); in another seed we tried it had not yet, so this is not asserted — the benefit of several
#   heads here is a matter of optimisation speed, not of what is expressible.
# - **(d) residual connections.** Removing them from the trained model is the most destructive change
#   (worse than guessing uniformly): the blocks were trained to *add* to the stream, not to replace it.
#   The chapter's prediction (vanishing gradients in deep networks) concerns training; retraining without
#   residuals (`FULL=1`) is the way to test it, which the default run does not do.
#
# ## Summary of the checks
# - the library's post-norm block is Fig. 6.29's; the displayed formula of §6.6 is a different map (its
#   second skip adds $h^{(\ell)}$) — recorded in the errata; the stack is rebuilt from its pieces and the
#   parameter count is exact;
# - memory: representations $T\,d$ vs $d$ (ratio 10 at $T=10$), KV cache $2Td$ per layer (10 at $T=5$),
#   measured from the library's arrays;
# - ablations measured and asserted: leak without the mask, fillers hurt without positions, collapse
#   without residuals (and, in runs whose baseline learned it, the agreement kept without positions);
#   whether the default training learns the agreement at all depends on the seed and the CPU.
