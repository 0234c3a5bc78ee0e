# %% [markdown]
# # 5.5 Prefix shuffling: SVFlow metrics of a trained causal LM
#
# **The question.** If each attention layer is a step of a flow whose beliefs $q$ are the attention
# weights and whose pulls are the value vectors, the flow's probability quantities can be *measured* in
# a trained language model. Do they react when the context is damaged — when the start of a text is
# shuffled — and do they track how much worse the model then predicts?
#
# The paper answers with an experiment on three pre-trained language models (§6): it shuffles a growing
# fraction of each text's start and reports, per layer, the flow's log-density and three divergences,
# next to the model's {term}`perplexity` and {term}`calibration`. We cannot load those models, so this
# page runs the same experiment on small character-level models of our own (the numbers are about our
# models; what transfers is the method), and re-reads the paper's own tables.
#
# ```{admonition} Learning goals
# :class: tip
# After this page you can
# - carry out prefix shuffling by hand on a short sequence: which tokens are shuffled, each kept
#   token's shuffle rate $r$, and its bin;
# - compute the four metrics of one attention head ($-\log p_s$, $\mathrm{KL}(q\|p)$, $\mathrm{KL}(q\|U)$,
#   $\mathrm{KL}(p\|U)$) from its weights and value vectors, and the identities that tie them to entropies;
# - explain why two distributions close to uniform can still be far apart in KL, and what a rank
#   correlation over a handful of points does and does not show.
# ```
#
# **Builds on:** [5.3 Attention as a vMF posterior](03_attention_as_vmf_posterior.ipynb) (attention
# weights as $q$, value–output vectors as vMF pulls) · [5.2 SVFlow](02_svflow_properties.ipynb) (the
# ELBO identity $\log p=\mathrm{ELBO}+\mathrm{KL}$) · [6.6 Context representation](../part1_chapter6/6_6_context_representation.ipynb)
# (a decoder-only language model and its training) · entropy, perplexity, rank correlation.
# **Reading time:** about 40 minutes.
#
# ```{admonition} Symbols on this page
# :class: note
# | symbol | meaning | shape |
# |---|---|---|
# | $T$ | length of a sequence (tokens) | scalar |
# | $f$ | shuffle fraction: the first $\lfloor fT\rfloor$ tokens are permuted | scalar in $[0,1]$ |
# | $i$ | position of a token (the query), counted from 1 | integer |
# | $r$ | prefix shuffle rate of the token at position $i$: $\lfloor fT\rfloor/i$ | scalar in $(0,1)$ |
# | $d$ | width of the model (the sphere is $\mathbb S^{d-1}$) | integer |
# | $x$ | query state of a head: its attention input, rescaled to the unit sphere | $(d,)$ |
# | $z$ | a context token the head can attend to (a latent component) | index |
# | $\mathcal Z$, $\lvert\mathcal Z\rvert$ | the tokens the head attends over, and their number | set, integer |
# | $q(z\mid x)$ | the head's attention weights: the variational posterior | $(\lvert\mathcal Z\rvert,)$ |
# | $o_z$ | value–output vector of token $z$, $o_z=\kappa'_z\mu'_z$ | $(d,)$ |
# | $\kappa'_z$ | its length: the concentration of the vMF component $p(x\mid z)$ | scalar |
# | $C_d$ | the vMF normaliser ([5.1](01_spherical_geometry.ipynb)) | scalar |
# | $p$ | $p(x\mid z)$: the vMF density on the sphere with natural parameter $o_z$; $p(z\mid x)$: the true posterior over tokens under these components | scalar; $(\lvert\mathcal Z\rvert,)$ |
# | $p_s(x)$ | the flow's marginal density $\frac1{\lvert\mathcal Z\rvert}\sum_zp(x\mid z)$ | scalar |
# | $s$ | the flow's time, here the layer: a subscript on $p_s$ and on $\mathrm{ELBO}_s$, the ELBO of $q$ (5.2), with $\log p_s=\mathrm{ELBO}_s+\mathrm{KL}(q\|p)$ | — |
# | $U$ | the uniform distribution over $\mathcal Z$ | $(\lvert\mathcal Z\rvert,)$ |
# | $\lvert\mathbb S^{k}\rvert$ | the area of the unit sphere $\mathbb S^{k}$ (in $\mathbb R^{k+1}$, [5.1](01_spherical_geometry.ipynb)); the uniform density on the states' sphere is $1/\lvert\mathbb S^{d-1}\rvert$ | scalar |
# | $H(q)$, $H(q,p)$ | entropy of $q$; cross-entropy of $p$ under $q$ | scalars |
# | $M$ | how much less likely one token is, as $e^{-M}$ (question 2) | scalar |
# | $\Delta$ | change under shuffling: shuffled minus unshuffled, at the same positions | — |
# | $\rho$ | Spearman rank correlation | scalar in $[-1,1]$ |
# | $L$, $L_{\text{deep}}$ | a model's number of layers; how many of them form its deepest third (checking the paper's Tables 1 and 2) | integers |
# ```
#
# ```{admonition} In the paper's notation
# :class: seealso
# The paper writes $N$ for the length of a sequence and $n$ for a position (here $T$ and $i$, as in the
# rest of the book); the subscript $t$ of its $p_t$, $q_t$, $\mathcal L_t$ is the flow's time, i.e. the
# layer (here $p_s$, $q$, $\mathrm{ELBO}_s$: Part 5 writes the flow's time $s$, and $\mathrm{ELBO}$ for the bound, since
# the book's $\mathcal L$ is a loss to be minimised). It writes $p$ for the shuffle fraction (here $f$) and calls $\mathrm{KL}(q\|U)$ and
# $\mathrm{KL}(p\|U)$ the *variational* and *true concentrations*. This page calls them the *sharpness*
# of $q$ and of $p$ (the divergence from each to uniform) and keeps *concentration* for the vMF parameter
# $\kappa'$, as in [5.1](01_spherical_geometry.ipynb). Its shuffle rate is $\min(1,pN/n)$ with $pN$ not
# rounded down; this page uses $\lfloor fT\rfloor/i$, the share of the prefix actually shuffled. The two
# differ only when $fT$ is not a whole number, and can then put a token at a bin edge into the
# neighbouring bin (with $f=0.2$ and 64 tokens, the token at position 48 has $12/48=0.25$ here and
# $12.8/48\approx0.27$ in the paper's form).
# ```
#
# *Source: Liao, Transformer as an Euler Discretization of Score-based Variational Flow, §6 (Tables 1–2,
# Figs. 2–4, §6.2 Spearman correlations), App. C.2 (protocol and metrics, Eqs. 71–73).*

# %%
import matplotlib.pyplot as plt
import numpy as np
import sympy as sp
import torch
from IPython.display import Math, display
from scipy.special import logsumexp, softmax

from nextword.booktools.display import produced
from nextword.booktools.plotting import use_book_style
from nextword.evaluation import spearman
from nextword.provenance import load_curves, load_result, results_root
from nextword.theory.svflow import (categorical_kl, entropy, kl_to_uniform, prefix_shuffle,
                                    prefix_shuffle_rates, shuffle_rate_bins, sphere_log_area, vmf_log_normalizer)
from nextword.torch.models.lm import LMConfig, TinyLM
from nextword.torch.training.token_lm import evaluate_loss, train_lm
from nextword.torch.svflow.lm import (
    SVFlowLMConfig, deep_and_full_tables, load_checkpoint, lm_config, shuffle_table_arrays,
)
from nextword.torch.svflow.probe import prefix_shuffling_experiment, probe_tinylm
from nextword.torch.training.data import load_char_data

use_book_style()

# %% tags=["parameters"]
D_MODEL, LAYERS, SEQ_LEN, N_SEQS = 48, 4, 64, 16
STEPS_PER_CHECKPOINT, BATCH, LR = 80, 32, 1e-2
FS = (0.2, 0.4, 0.6, 0.8, 0.95)  # shuffle fractions f (the paper's p)
DEEP = max(1, LAYERS // 3)  # "deepest third of layers" (8 of 24, 9 of 28, 5 of 16 in the paper)

# %% [markdown]
# ## A tiny example by hand
#
# **Shuffling.** Ten tokens `a b c d e f g h i j` and the shuffle fraction $f=0.4$. The first
# $\lfloor fT\rfloor=4$ tokens are permuted at random; the last six are kept and analysed. The token at
# position $i$ has a prefix of $i$ tokens, of which 4 were shuffled, so its *prefix shuffle rate* is
# $r=4/i$: $4/5=0.8$ for `e`, then $0.667, 0.571, 0.5, 0.444, 0.4$ for `f` … `j`. The rates are binned
# into $(0,.25], (.25,.5], (.5,.75], (.75,1)$: `e` falls in the last bin, `f` and `g` in the third, `h`,
# `i` and `j` in the second. A token in a high bin has most of its context scrambled; a token in a low
# bin keeps most of it.

# %%
tokens = np.arange(10)  # a, b, ..., j
letters = np.array(list("abcdefghij"))
shuffled = prefix_shuffle(tokens, 0.4, np.random.default_rng(0))
rates, kept = prefix_shuffle_rates(10, 0.4)
bins = shuffle_rate_bins(rates)
print("shuffled sequence:", " ".join(letters[shuffled]))
for n in np.flatnonzero(kept):
    print(f"token {letters[n]} (position {n + 1}): r = {rates[n]:.3f}, bin {bins[n] + 1} of 4")
assert np.array_equal(shuffled[4:], tokens[4:])  # the suffix is kept
assert list(bins[kept] + 1) == [4, 3, 3, 2, 2, 2]

# %% [markdown]
# **The metrics of one head.** A head at some token attends over three earlier tokens with weights
# $q=(0.7, 0.2, 0.1)$ — its beliefs about which token "produced" the query. Suppose the true posterior
# under the head's value vectors (made precise below) is $p=(0.1, 0.1, 0.8)$. Three numbers summarise the
# pair, each in nats:
#
# - the **sharpness** of $q$, $\mathrm{KL}(q\|U)=\sum_zq_z\log(3q_z)$:
#   $0.7\log2.1+0.2\log0.6+0.1\log0.3=0.297$ — the divergence from $q$ to uniform (0 when $q$ spreads evenly);
# - the sharpness of $p$, $\mathrm{KL}(p\|U)=0.460$;
# - the **divergence** $\mathrm{KL}(q\|p)=\sum_zq_z\log(q_z/p_z)=0.7\log7+0.2\log2+0.1\log0.125=1.293$ —
#   how wrong the beliefs are. Here it is large because $q$ puts its weight on the first token and $p$ on
#   the third.

# %%
q_hand, p_hand = np.array([0.7, 0.2, 0.1]), np.array([0.1, 0.1, 0.8])
sharp_q = sharp_p = divergence = 0.0
for q_z, p_z in zip(q_hand, p_hand):  # one term per token z
    sharp_q += q_z * np.log(3 * q_z)
    sharp_p += p_z * np.log(3 * p_z)
    divergence += q_z * np.log(q_z / p_z)
print(f"KL(q||U) = {sharp_q:.3f}, KL(p||U) = {sharp_p:.3f}, KL(q||p) = {divergence:.3f} nats")
assert abs(sharp_q - kl_to_uniform(np.log(q_hand))) < 1e-12  # the library's helpers agree
assert abs(divergence - categorical_kl(np.log(q_hand), np.log(p_hand))) < 1e-12

# %% [markdown]
# ## What the probe measures: the SVFlow metrics of one head (App. C.2.2–C.2.4)
#
# **The protocol.** For each sequence of length $T$ and each shuffle fraction $f\in\{0.2,0.4,0.6,0.8,0.95\}$,
# shuffle as in the tiny example and keep the tokens at positions $i>\lfloor fT\rfloor$, binned by their
# rate $r$. The unshuffled sequence is the baseline; $\Delta$ is the shuffled value minus the baseline
# value at the same positions.
#
# **The metrics.** For every attention layer and head, at the query state $x$ (the head's input rescaled
# to the unit sphere, [5.1](01_spherical_geometry.ipynb)):
#
# - $q(z\mid x)$ is the head's attention weights (Eq. 19, [5.3](03_attention_as_vmf_posterior.ipynb));
# - $p(x\mid z)=C_d(\kappa'_z)\exp(o_z^\top x)$ is the vMF component whose natural parameter is the head's
#   value–output vector $o_z$ of token $z$ (Eq. 20), with concentration $\kappa'_z=\lVert o_z\rVert$;
# - $p_s(x)=\frac1{|\mathcal Z|}\sum_zp(x\mid z)$ is the flow's marginal density (uniform prior over the
#   tokens), reported as $-\log p_s(x)/d$ in nats per dimension: low when the query sits where the
#   value vectors point;
# - $p(z\mid x)\propto p(x\mid z)$ is the true posterior, and the three divergences of the tiny example are
#   taken between $q$, $p$ and $U$.
#
# These are averaged over heads. Next to them the probe reads the task: the log-perplexity (logPPL,
# the mean negative log-probability of the next token) and the {term}`expected calibration error`
# (ECE, in %, with 15 confidence bins as in App. C.2.3) of the next-token prediction, per bin.
#
# Two identities tie the divergence to the sharpnesses (App. C.2.4, Eqs. 71–73): for distributions on a
# finite $\mathcal Z$, $\mathrm{KL}(q\|U)=\log|\mathcal Z|-H(q)$ and $\mathrm{KL}(q\|p)=H(q,p)-H(q)$, with
# $H(q)=-\sum_zq_z\log q_z$ the {term}`entropy` and $H(q,p)=-\sum_zq_z\log p_z$ the
# {term}`cross-entropy`. Sympy confirms both for $|\mathcal Z|=3$:

# %%
q1, q2, p1, p2 = sp.symbols("q1 q2 p1 p2", positive=True)
qv = [q1, q2, 1 - q1 - q2]
pv = [p1, p2, 1 - p1 - p2]


def H(a):
    """Entropy -sum a_i log a_i of a list of sympy probabilities."""
    return -sum(ai * sp.log(ai) for ai in a)


def KL(a, b):
    """KL(a || b) of two lists of sympy probabilities."""
    return sum(ai * sp.log(ai / bi) for ai, bi in zip(a, b))


cross_entropy = -sum(ai * sp.log(bi) for ai, bi in zip(qv, pv))  # H(q, p)
uniform = [sp.Rational(1, 3)] * 3
gap_uniform = sp.simplify(sp.expand_log(KL(qv, uniform) - (sp.log(3) - H(qv)), force=True))
gap_cross = sp.simplify(sp.expand_log(KL(qv, pv) - (cross_entropy - H(qv)), force=True))
display(Math(r"\mathrm{KL}(q\|U)-(\log3-H(q))=" + sp.latex(gap_uniform)
             + r",\qquad \mathrm{KL}(q\|p)-(H(q,p)-H(q))=" + sp.latex(gap_cross)))
assert gap_uniform == 0
assert gap_cross == 0
print(f"tiny example: H(q) = {entropy(np.log(q_hand)):.4f}, "
      f"log 3 - H(q) = {np.log(3) - entropy(np.log(q_hand)):.4f} = KL(q||U)")

# %% [markdown]
# ## A model we can probe
#
# A four-layer {term}`pre-norm` decoder of the kind trained in
# [6.6](../part1_chapter6/6_6_context_representation.ipynb), here with RMSNorm,
# {term}`rotary positions <rotary position embedding>` ([6.5](../part1_chapter6/6_5_positional_encoding.ipynb):
# each pair of coordinates of a query and of a key is turned by an angle proportional to the token's
# position, a different angle per pair; nothing is added to the embeddings) and 4
# heads, trained as a character model of tiny Shakespeare. `train_lm` is the training loop written out in
# [6.4](../part1_chapter6/6_4_multi_head.ipynb) (next-token cross-entropy, AdamW); there it draws whole
# training sentences, here random windows of the text. We call it three times in a row, 80 steps each (each call starts a fresh AdamW,
# so the optimiser's running averages restart, and draws its windows with its own seed), and keep a copy
# of the weights after each call, so that the experiment can be run on three *checkpoints* of one model. The analysed texts are held-out windows.

# %%
data = load_char_data("shakespeare")
V = data.vocab.vocab_size
val = data.val.numpy()
seqs = val[: N_SEQS * (SEQ_LEN + 1)].reshape(N_SEQS, SEQ_LEN + 1)  # held-out windows, (16, 65)
cfg = LMConfig(vocab_size=V, d_model=D_MODEL, num_heads=4, num_layers=LAYERS, max_len=SEQ_LEN,
               positional="rope", norm="rms", pre_norm=True)
print(f"vocabulary {V} characters; {N_SEQS} held-out windows of T = {SEQ_LEN + 1} characters; "
      f"model {cfg.num_layers} layers, d = {cfg.d_model}, {cfg.num_heads} heads")

# %%
model = TinyLM(cfg, seed=0)
checkpoints, losses = [], []
for c in range(3):
    losses += train_lm(model, data.train.numpy(), steps=STEPS_PER_CHECKPOINT, batch_size=BATCH,
                       block_size=SEQ_LEN, lr=LR, seed=c, progress=False)
    checkpoints.append({k: v.detach().clone() for k, v in model.state_dict().items()})
    print(f"checkpoint {c + 1}: step {len(losses)}, "
          f"mean training loss of the last 20 steps {produced(np.mean(losses[-20:]), '.3f')} nats")

# %% [markdown]
# ## The measurement, head by head, at one token
#
# Here are the metrics of the first layer's heads at one position, computed head by head from the
# model's own weights with the formulas above: the attention input $x$, the weights $q$, the value–output
# vectors $o_z$, then $\log p(x\mid z)$, $p_s$, $p(z\mid x)$ and the three divergences. The cell prints a
# few of head 0's numbers, then each metric's mean over the four heads, which is what the library's probe
# reports. (With rotary positions
# nothing is added to the token embeddings, so the first layer's input is the embedding itself.)

# %%
ids = torch.as_tensor(seqs[:1, :-1])  # one held-out window, (1, 64)
position, layer = 40, 0  # the query: the 41st character; the first block
d, d_head, n_heads = cfg.d_model, cfg.d_model // cfg.num_heads, cfg.num_heads
block = model.blocks[layer]
with torch.no_grad():
    _, attention = model(ids, return_attention=True)  # per layer: (1, heads, 64, 64)
    head_input = block.norm1(model.tok_emb[ids])[0]  # (64, d): the block's attention input
    values = head_input @ block.W_qkv[:, 2 * d:]  # (64, d): every head's values side by side
x = head_input[position].double().numpy()
x /= np.linalg.norm(x)  # the query state on the unit sphere
by_hand = {"neg_log_p_per_dim": [], "kl_q_p": [], "kl_q_u": [], "kl_p_u": []}
for head in range(n_heads):
    block_h = slice(head * d_head, (head + 1) * d_head)
    with torch.no_grad():
        o = (values[: position + 1, block_h] @ block.W_o[block_h]).double().numpy()  # (Z, d): o_z
    q = attention[layer][0, head, position, : position + 1].double().numpy()  # (Z,): q(z | x)
    log_lik = vmf_log_normalizer(np.linalg.norm(o, axis=1), d) + o @ x  # log p(x | z)
    log_p_s = logsumexp(log_lik) - np.log(position + 1)  # log of the mixture, uniform prior
    p = softmax(log_lik)  # p(z | x)
    by_hand["neg_log_p_per_dim"].append(-log_p_s / d)
    by_hand["kl_q_p"].append(q @ np.log(q / p))
    by_hand["kl_q_u"].append(q @ np.log(q * (position + 1)))
    by_hand["kl_p_u"].append(p @ np.log(p * (position + 1)))
    if head == 0:
        print(f"head 0: {position + 1} tokens, largest q = {produced(q.max(), '.3f')}, "
              f"concentrations kappa' from {produced(np.linalg.norm(o, axis=1).min(), '.2f')} "
              f"to {produced(np.linalg.norm(o, axis=1).max(), '.2f')}")
probe = probe_tinylm(model, seqs[:4, :-1])  # the library: every layer, position and window at once
for name, per_head in by_hand.items():
    from_probe = probe.metrics[name][layer, 0, position]  # averaged over heads
    print(f"{name:>17}: mean over heads {produced(np.mean(per_head), '8.4f')}; "
          f"probe_tinylm agrees to 1e-5: {abs(np.mean(per_head) - from_probe) < 1e-5}")
    assert abs(np.mean(per_head) - from_probe) < 1e-5

# %% [markdown]
# `probe_tinylm` does this for every layer (running the blocks one after another), head, position and
# window, and also reads the residual stream after each layer through the final norm and the
# unembedding (the {term}`logit lens`). Its last readout is the model's own prediction:

# %%
with torch.no_grad():
    model_log_probs = torch.log_softmax(model(torch.as_tensor(seqs[:4, :-1])).double(), -1).numpy()
gap = np.max(np.abs(probe.log_probs - model_log_probs))
print(f"logit lens after the last layer == the model's log-probabilities (max gap < 1e-4): {gap < 1e-4}")
print("metric arrays have shape (layers, windows, positions):", probe.metrics["kl_q_p"].shape)
assert gap < 1e-4
assert np.all(np.isfinite(probe.metrics["neg_log_p_per_dim"]))

# %% [markdown]
# ## Shuffling the prefix of our model's texts
#
# `prefix_shuffling_experiment` runs the protocol: for every shuffle fraction it shuffles each window,
# probes the shuffled and the unshuffled text, and averages every metric over the tokens of each bin and
# over the layers (the deepest layer(s), as the paper's Table 1, and all layers, as its Table 2). We run
# it on each of the three checkpoints.

# %%
BINS = ["0.00-0.25", "0.25-0.50", "0.50-0.75", "0.75-1.00"]
NAMES = [("neg_log_p_per_dim", "-log p_s"), ("kl_q_p", "KL(q||p)"), ("kl_q_u", "KL(q||U)"), ("kl_p_u", "KL(p||U)")]


def print_table(t: dict, which: str, title: str) -> None:
    """Print the deep-layer table (``which="table1"``) or the all-layer one (``"table2"``) of ``t``."""
    print(f"{title}; tokens per bin: {t['count']}")
    print(f"{'rate r':>9} | " + " | ".join(f"{lab:>19}" for _, lab in NAMES) + f" | {'ECE %':>13} | {'logPPL':>13}")
    print(f"{'':>9} | " + " | ".join(f"{'base':>9} {'Δ':>9}" for _ in NAMES) + f" | {'base':>6} {'Δ':>6} | {'base':>6} {'Δ':>6}")
    for b in range(4):
        cells = [f"{produced(t[which][k]['base'][b], '9.4f')} {produced(t[which][k]['delta'][b], '9.2e')}"
                 for k, _ in NAMES]
        print(f"{BINS[b]:>9} | " + " | ".join(cells) + f" | {produced(t['ece_base'][b], '6.2f')} "
              f"{produced(t['ece_delta'][b], '6.2f')} | {produced(t['logppl_base'][b], '6.3f')} "
              f"{produced(t['logppl_delta'][b], '6.3f')}")


tables = []
for c, state in enumerate(checkpoints):
    model.load_state_dict(state)
    arrays = shuffle_table_arrays(prefix_shuffling_experiment(model, seqs, FS, np.random.default_rng(0)))
    tables.append((arrays, deep_and_full_tables(arrays, DEEP)))
print_table(tables[-1][1], "table1", f"Table 5.5.1: final checkpoint, deepest {DEEP} layer(s)")
print()
print_table(tables[-1][1], "table2", f"Table 5.5.2: final checkpoint, all {LAYERS} layers")

# %% [markdown]
# **Tables 5.5.1 and 5.5.2** (cf. the paper's Tables 1 and 2). The final checkpoint's deepest layer
# and the mean over all layers: the unshuffled value ("base") and the change under shuffling ($\Delta$)
# per bin of the prefix shuffle rate $r$. Units: $-\log p_s$ in nats per dimension, the divergences and
# logPPL in nats, ECE in %.

# %%
RATE_BINS = ["(0, 0.25]", "(0.25, 0.5]", "(0.5, 0.75]", "(0.75, 1)"]
BLUE, VERMILION, GREEN = "#0072B2", "#D55E00", "#009E73"  # the first three colours of the book's palette


def plot_per_layer(a: dict, n_layers: int, title: str) -> None:
    """The paper's Figs. 2-4 for one experiment (arrays of ``shuffle_table_arrays``), and the logit lens."""
    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5), layout="constrained")
    layers = np.arange(1, n_layers + 1)
    delta = a["pert.neg_log_p_per_dim"] - a["base.neg_log_p_per_dim"]  # (L, 4)
    for b in range(4):
        axes[0, 0].plot(layers, delta[:, b], "o-", label=f"r in {RATE_BINS[b]}")
        axes[1, 1].plot(layers, a["lens_logppl_pert"][:, b] - a["lens_logppl_base"][:, b], "o-",
                        label=f"r in {RATE_BINS[b]}")
    axes[0, 0].axhline(0, color="grey", lw=0.8)
    axes[0, 0].set_title(r"(a) change of $-\log p_s$ (cf. Fig. 2)")
    axes[0, 0].set_ylabel(r"$\Delta(-\log p_s)$ (nats per dimension)")
    axes[0, 0].legend(fontsize=7)
    for k, lab, col, width in [("kl_q_p", "KL(q||p)", BLUE, 4.0), ("kl_q_u", "KL(q||U)", VERMILION, 1.5),
                               ("kl_p_u", "KL(p||U)", GREEN, 1.5)]:  # KL(q||p) wide: it can lie under KL(q||U)
        axes[0, 1].semilogy(layers, a[f"layer_curves_base.{k}"], "-o", color=col, lw=width, ms=2 + width,
                            label=f"{lab}, unshuffled")
        axes[0, 1].semilogy(layers, a[f"layer_curves_top.{k}"], "--s", color=col, lw=width / 2,
                            label=f"{lab}, f = {max(FS)}")
    axes[0, 1].set_title("(b) divergence and sharpnesses (cf. Fig. 3)")
    axes[0, 1].set_ylabel("nats (log scale)")
    axes[0, 1].legend(fontsize=6)
    axes[1, 0].semilogy(layers, a["layer_curves_base.kappa_mean"], "-o", label="unshuffled")
    axes[1, 0].semilogy(layers, a["layer_curves_top.kappa_mean"], "--s", label=f"f = {max(FS)}")
    axes[1, 0].set_title(r"(c) mean vMF concentration $\kappa'$ (cf. Fig. 4)")
    axes[1, 0].set_ylabel(r"$\kappa'$ (log scale)")
    axes[1, 0].legend(fontsize=7)
    axes[1, 1].axhline(0, color="grey", lw=0.8)
    axes[1, 1].set_title("(d) logit lens: change of logPPL after each layer")
    axes[1, 1].set_ylabel(r"$\Delta$ logPPL (nats)")
    axes[1, 1].legend(fontsize=7)
    for ax in axes.flat:
        ax.set_xlabel("layer")
        ax.set_xticks(layers)
    fig.suptitle(title)
    plt.show()


plot_per_layer(tables[-1][0], LAYERS, "our small model, final checkpoint")
small = tables[-1][0]
# Figure 5.5.1: kappa' stays below d, so p stays close to uniform and KL(p||U) below KL(q||U)
assert np.all(small["layer_curves_base.kappa_mean"] < D_MODEL)
assert np.all(small["layer_curves_base.kl_p_u"] < small["layer_curves_base.kl_q_u"])
# Figure 5.5.1 (a): at layer 1, -log p_s and KL(p||U) cannot change (same tokens, same embeddings, other order)
for key in ("neg_log_p_per_dim", "kl_p_u"):
    assert np.all(np.abs(small[f"pert.{key}"][0] - small[f"base.{key}"][0]) < 1e-6)

# %% [markdown]
# **Figure 5.5.1.** The final checkpoint, layer by layer. (a) The change of $-\log p_s$ under shuffling,
# one line per bin of $r$. Every line starts at 0 at layer 1, by construction rather than as a finding: the
# first layer's query state is the embedding of the kept token itself, and its value vectors are those of
# the same tokens in another order (rotary positions enter only the queries and keys), so $p_s$, a mean over
# the tokens, and $\mathrm{KL}(p\|U)$ cannot change there; $q$, which sees the positions, does. (b) The divergence $\mathrm{KL}(q\|p)$ (blue, wide) and the sharpnesses
# $\mathrm{KL}(q\|U)$ (vermilion) and $\mathrm{KL}(p\|U)$ (bluish green), unshuffled (solid) and at the
# largest shuffle fraction (dashed). (c) The mean
# concentration $\kappa'$ of the value–output vectors. (d) The change of the log-perplexity read after
# each layer (logit lens), which shows from which layer on the shuffled context matters for the
# prediction. Look at (c) against the width $d=48$: while $\kappa'$ stays below $d$, the vMF components are
# broad, so $p(z\mid x)$ is flatter than the attention weights $q$
# ([5.3](03_attention_as_vmf_posterior.ipynb)): $\mathrm{KL}(p\|U)$ stays below $\mathrm{KL}(q\|U)$ in (b).
#
# ## A larger model, trained longer
#
# Our default model trains for only 240 steps; its changes under shuffling are tiny. A saved run trains
# the same architecture wider ($d=64$) and longer, in three stages, and runs the whole protocol above on
# more held-out windows after each stage. We load its record and its final weights.

# %%
saved = load_result("svflow_lm")
run = saved["data"]["per_seed"][0]
scfg = SVFlowLMConfig(**{k: tuple(v) if k == "ps" else v for k, v in saved["config"].items()
                         if k in SVFlowLMConfig.__dataclass_fields__})
print(f"model: {scfg.num_layers} layers, d = {scfg.d_model}, {scfg.num_heads} heads, "
      f"context {scfg.seq_len}; {run['num_parameters']} parameters")
for step, v, b in zip(run["steps"], run["val_loss"], run["val_bits_per_char"]):
    print(f"  after {step:4d} steps: validation {v:.3f} nats/char = {b:.2f} bits/char")
lm = load_checkpoint(results_root() / "svflow_lm" / run["checkpoint"], lm_config(scfg, V))
final = run["tables"][-1]
print()
print_table(final, "table1", f"Table 5.5.3: final checkpoint, deepest {scfg.deep} layer(s) of {scfg.num_layers}")
print()
print_table(final, "table2", f"Table 5.5.4: final checkpoint, all {scfg.num_layers} layers")

# %%
curves_lm = load_curves("svflow_lm")  # arrays of every checkpoint, leading axis = the one seed
last = len(run["tables"]) - 1
plot_per_layer({k.split(".", 1)[1]: v[0] for k, v in curves_lm.items() if k.startswith(f"ckpt{last}.")},
               scfg.num_layers, "the larger model, final checkpoint")

# %% [markdown]
# **Figure 5.5.2.** The same four panels for the larger model (final checkpoint). In (a) the lines of
# the upper bins of $r$ climb in the last layers (from 0 at layer 1, by construction, as in Figure 5.5.1). In (b) the divergence (blue) lies almost on the
# sharpness of $q$ (vermilion): with $p$ nearly uniform, $\mathrm{KL}(q\|p)$ is little more than
# $\mathrm{KL}(q\|U)$. In (d) only the last bin's log-perplexity changes much, already after the first
# layer, and the change grows with depth.
#
# ### What the larger model shows
#
# Each statement below is checked on its tables by the next cell:
#
# * shuffling a far prefix barely changes the prediction; the change of the log-perplexity concentrates
#   in the last bin, where the shuffled characters sit right before the query (more than ten times the
#   change of any other bin);
# * in the deepest layer $\Delta(-\log p_s)$ grows with the prefix shuffle rate and is positive in the
#   last bins — the direction of the paper's Fig. 2 — but it is small: at most a few ten-thousandths of a nat per
#   dimension in Table 5.5.3, even in the last bin, where the shuffled characters sit right before the
#   query;
# * $\mathrm{KL}(p\|U)$ stays far below $\mathrm{KL}(q\|U)$ in every bin (less than a fifth of it, deep
#   layer and all layers alike): the value–output vectors are weakly concentrated ($\kappa'$ well below
#   the width), so $p$ is nearly uniform and the divergence $\mathrm{KL}(q\|p)$ comes mostly from the
#   sharpness of the attention weights $q$ — the regime the paper calls "low sensitivity" (Llama3.2 in
#   its Fig. 3).

# %%
t1 = final["table1"]
d_ppl = np.array(final["logppl_delta"])
d_nlp = np.array(t1["neg_log_p_per_dim"]["delta"])
lens_change = (curves_lm[f"ckpt{last}.lens_logppl_pert"] - curves_lm[f"ckpt{last}.lens_logppl_base"])[0]  # (L, 4)
checks = {
    "logPPL change concentrates in the last bin": bool(d_ppl[3] > 10 * np.abs(d_ppl[:3]).max()),
    "deep-layer Delta(-log p_s) grows with the shuffle rate, positive in the last bins":
        bool(np.all(np.diff(d_nlp) > 0) and d_nlp[-1] > 0 and d_nlp[-2] > 0),
    "KL(p||U) < KL(q||U) / 5 in every bin (deep and all layers)":
        all(np.all(np.array(final[tab]["kl_p_u"]["base"]) < np.array(final[tab]["kl_q_u"]["base"]) / 5)
            for tab in ("table1", "table2")),
    "mean concentration kappa' below a quarter of the width in every layer":
        bool(np.max(curves_lm[f"ckpt{last}.layer_curves_base.kappa_mean"]) < scfg.d_model / 4),
    "(Fig. 5.5.2 a) layer 1: Delta(-log p_s) and Delta KL(p||U) below 1e-6 in every bin (by construction)":
        all(bool(np.all(np.abs(curves_lm[f"ckpt{last}.pert.{k}"][0, 0] - curves_lm[f"ckpt{last}.base.{k}"][0, 0]) < 1e-6))
            for k in ("neg_log_p_per_dim", "kl_p_u")),
    "(Fig. 5.5.2 b) KL(q||p) within 10 % of KL(q||U) in every layer, unshuffled":
        bool(np.all(np.abs(curves_lm[f"ckpt{last}.layer_curves_base.kl_q_p"]
                           / curves_lm[f"ckpt{last}.layer_curves_base.kl_q_u"] - 1) < 0.1)),
    "(Fig. 5.5.2 d) logit-lens change: last bin above 0.15 nats after every layer and growing, "
    "the other bins below 0.05": bool(np.all(lens_change[:, 3] > 0.15) and np.all(np.diff(lens_change[:, 3]) > 0)
                                      and np.all(np.abs(lens_change[:, :3]) < 0.05)),
}
for k, v in checks.items():
    print(f"{k}: {v}")
# Figure 5.5.2: the deep layer's change grows with r, (b) KL(q||p) close to KL(q||U), (d) the last bin grows with depth
assert all(checks.values()), checks

# %% [markdown]
# ### Does $-\log p_s$ track the quality of the prediction?
#
# The paper's second test (§6.2) correlates, without shuffling, the deep layers' $-\log p_s$ with logPPL
# and with ECE over 12 points: 3 models × 4 bins. A {term}`Spearman correlation` $\rho$ compares the
# *ranks* of two lists (1 if the orders agree, −1 if they are reversed), and its p-value is the chance
# of a $|\rho|$ at least as large if the two lists were unrelated. We have one model, so our 12 points are
# its 3 checkpoints × 4 bins: that asks whether training lowers $-\log p_s$ together with logPPL.

# %%
def checkpoint_spearman(tabs: list[dict]) -> tuple:
    """Spearman of deep-layer baseline -log p_s against logPPL and ECE over (checkpoints x 4 bins)."""
    nlp = np.concatenate([t["table1"]["neg_log_p_per_dim"]["base"] for t in tabs])
    return (spearman(nlp, np.concatenate([t["logppl_base"] for t in tabs])),
            spearman(nlp, np.concatenate([t["ece_base"] for t in tabs])))


for c, t in enumerate(run["tables"]):
    print(f"checkpoint {c + 1} (step {run['steps'][c]}): unshuffled -log p_s (deep) per bin "
          f"{np.round(t['table1']['neg_log_p_per_dim']['base'], 4)}, logPPL {np.round(t['logppl_base'], 3)}, "
          f"ECE % {np.round(t['ece_base'], 2)}")
s_ppl, s_ece = checkpoint_spearman(run["tables"])
print(f"Spearman(-log p_s, logPPL) over 12 points: rho = {s_ppl.rho:.3f}, p-value = {s_ppl.p_value:.2g}")
print(f"Spearman(-log p_s, ECE)    over 12 points: rho = {s_ece.rho:.3f}, p-value = {s_ece.p_value:.2g}")
no_positive = not any(s.rho > 0 and s.p_value < 0.05 for s in (s_ppl, s_ece))
print(f"no significant positive correlation (rho > 0 with p-value < 0.05): {no_positive}")
assert no_positive
deep_nlp = np.array([t["table1"]["neg_log_p_per_dim"]["base"] for t in run["tables"]])  # (checkpoints, bins)
logppl = np.array([t["logppl_base"] for t in run["tables"]])
print(f"-log p_s (deep) moves by at most {np.ptp(deep_nlp, axis=0).max():.5f} between checkpoints; "
      f"logPPL falls in every bin from checkpoint to checkpoint: {bool(np.all(np.diff(logppl, axis=0) < 0))}")
assert np.ptp(deep_nlp, axis=0).max() < 1e-3 and np.all(np.diff(logppl, axis=0) < 0)
uniform_per_dim = sphere_log_area(scfg.d_model) / scfg.d_model  # -log of the uniform density 1/|S^(d-1)|, per dimension
print(f"uniform density on the unit sphere, d = {scfg.d_model}: -log(1/|S^{scfg.d_model - 1}|) / d = {uniform_per_dim:.4f}; "
      f"the deep layer's -log p_s is within {np.abs(deep_nlp - uniform_per_dim).max():.4f} of it (every checkpoint and bin)")
assert np.all(np.abs(deep_nlp - uniform_per_dim) < 0.01)  # p_s is close to the uniform density

# %% [markdown]
# Over our checkpoints neither correlation is a significant positive one: training lowers the
# log-perplexity in every bin from checkpoint to checkpoint while the deep layer's $-\log p_s$ barely
# moves (by less than 0.001 nats per dimension). On this model the flow's log-density does not track the
# quality of the prediction the way the paper reads it: with logPPL the correlation is not
# significant (p-value 0.17), and the one correlation with a small p-value, with ECE, has the opposite sign (a *lower*
# density going with *better* calibration), resting on differences of $-\log p_s$ below 0.001. The paper's own 12 points, recomputed from its Table 1, give its $\rho=0.87$, but they
# mostly rank its three *models* ([checked below](#checking-the-paper)).
#
# Why does $-\log p_s$ barely move, and why is it negative? Compare it with the uniform density on the
# sphere, one over the sphere's area, $1/\lvert\mathbb S^{d-1}\rvert$ ([5.1](01_spherical_geometry.ipynb)):
# for $d=64$ its $-\log$ per dimension is $-0.6370$ (printed above; negative because the unit sphere in 64
# dimensions has an area far below 1, so a density spread evenly over it is far above 1). The deep layer's
# $-\log p_s$ lies within 0.0021 of that value in every bin and at every checkpoint: with concentrations
# $\kappa'$ far below the width, the mixture $p_s$ is nearly the uniform density, which leaves it little room
# to move.
#
# ## Key takeaways
#
# - Prefix shuffling scrambles the first $\lfloor fT\rfloor$ tokens and analyses each later token by the
#   fraction $r$ of its prefix that was scrambled.
# - Per head, the probe measures the flow's negative log-density $-\log p_s$, the divergence $\mathrm{KL}(q\|p)$ and
#   the sharpnesses $\mathrm{KL}(q\|U)$, $\mathrm{KL}(p\|U)$; entropies tie them together
#   ($\mathrm{KL}(q\|U)=\log|\mathcal Z|-H(q)$, $\mathrm{KL}(q\|p)=H(q,p)-H(q)$).
# - Two distributions close to uniform can still be far apart: what bounds $\mathrm{KL}(q\|p)$ is the
#   smallest probability of $p$, not the KL divergence from $p$ to uniform.
# - On our larger character model shuffling changes the prediction mostly in the last bin, the deep
#   layer's $-\log p_s$ rises slightly with $r$, and across checkpoints $-\log p_s$ does not track
#   logPPL; the paper's 12-point correlation mostly ranks its three models.
#
# ## Check your understanding
#
# 1. With $T=20$ tokens and $f=0.6$, how many tokens are shuffled, which positions are analysed, and in
#    which bin does the token at position 13 fall?
#
#    ```{dropdown} Answer
#    $\lfloor0.6\cdot20\rfloor=12$ tokens are shuffled; positions 13–20 are analysed. Position 13 has
#    $r=12/13\approx0.923$: the last bin, $(0.75, 1)$.
#    ```
#
# 2. $q$ is uniform over $|\mathcal Z|=1000$ tokens, and $p$ is uniform except that one token is $e^{M}$
#    times less likely than each of the others. How far is each from uniform, and how large is
#    $\mathrm{KL}(q\|p)$ for a token a million times less likely ($M=\ln10^6\approx13.8$), and for $M=10^4$?
#
#    ```{dropdown} Answer
#    Both are close to uniform: $\mathrm{KL}(q\|U)=0$, and $\mathrm{KL}(p\|U)\approx\log(1000/999)=0.0010$
#    for both values of $M$ (it approaches $\log(1000/999)$ as $M$ grows, and is 0 at $M=0$). The divergence has 1000 terms. The rare token's term is
#    $\tfrac1{1000}\log(q/p)=\tfrac1{1000}\big(M+\log\tfrac{999+e^{-M}}{1000}\big)$; each of the 999 others
#    has $p$ slightly above $\tfrac1{1000}$ and gives a small negative term, $-0.0010$ together. In total
#    $\mathrm{KL}(q\|p)=M/1000+\log\frac{999+e^{-M}}{1000}$: $0.0128$ nats for a million times less
#    likely, but $9.999$ nats for $M=10^4$, and it grows without bound, linearly in $M$, while both
#    distributions stay within $0.0010$ nats of uniform.
#    ```
#
# 3. The paper's Spearman $\rho=0.87$ uses 12 points from 3 models. Why does this not show that,
#    within one model, a higher marginal likelihood goes with a lower perplexity?
#
#    ```{dropdown} Answer
#    The three models form three separate clusters on both axes, so the rank correlation is mostly the
#    ranking of the models. Inside the models, across each one's four bins, the direction is not the
#    same for all three: $\rho=-0.83$ and $-0.80$ for the two Qwen models (the reverse of the claim),
#    $+0.82$ for Llama3.2, and that one rests on a single third-decimal difference (recomputed in
#    [Checking the paper](#checking-the-paper), below).
#    ```

# %% tags=["hide-cell"]
# the numbers of the answers above
rates_20, kept_20 = prefix_shuffle_rates(20, 0.6)
analysed = np.flatnonzero(kept_20) + 1
print(f"1. T = 20, f = 0.6: {int(np.floor(0.6 * 20))} shuffled; positions {analysed[0]}-{analysed[-1]} "
      f"analysed; position 13: r = {rates_20[12]:.3f}, bin {shuffle_rate_bins(rates_20)[12] + 1} of 4")
assert int(np.floor(0.6 * 20)) == 12 and list(analysed) == list(range(13, 21))
assert shuffle_rate_bins(rates_20)[12] == 3
n_z = 1000
log_q = np.full(n_z, -np.log(n_z))  # q uniform
for M in (np.log(1e6), 1e4):
    log_p = np.zeros(n_z)
    log_p[0] = -M  # one token e^M times less likely than each of the others
    log_p -= logsumexp(log_p)
    kl_qp = categorical_kl(log_q, log_p)
    rare_term = np.exp(log_q[0]) * (log_q[0] - log_p[0])
    print(f"2. M = {M:8.2f}: KL(q||U) = {abs(kl_to_uniform(log_q)):.4f}, KL(p||U) = {kl_to_uniform(log_p):.4f}, "
          f"KL(q||p) = {kl_qp:.4f} (rare token's term {rare_term:.4f}, the other 999 {kl_qp - rare_term:.4f})")
    assert abs(kl_qp - (M / n_z + np.log((n_z - 1 + np.exp(-M)) / n_z))) < 1e-12  # the closed form
    assert abs(kl_to_uniform(log_p) - np.log(1000 / 999)) < 1e-6

# %% [markdown]
# ## Checking the paper
#
# The paper's own numbers, re-read: the bound App. C.2.4 puts on the divergence, the §6.2 correlations
# recomputed from Table 1, the statements of §6.2–6.3 about Table 1, the layers behind "the deepest third",
# and App. C.2.5's reading of Table 2 against Table 1. The book's [errata](../ERRATA.md) has a row for each
# statement that fails (source "SVFlow — Liao"). [Part 5's checking page](checking_the_paper.ipynb) takes the
# same tables further: §6.2's correlations tested by permuting the three models rather than the 12 points,
# Figs. 2 and 3 read against Tables 1 and 2, and §6.3's regimes against the concentrations.
#
# ### Small distances from uniform do not bound the divergence (App. C.2.4)
#
# App. C.2.4 concludes from Eqs. (71)–(73) that low "concentrations" (small $\mathrm{KL}(q\|U)$ and
# $\mathrm{KL}(p\|U)$) keep $\mathrm{KL}(q\|p)$ "bounded by a small constant"; §6.3 repeats it. They do not:
# a $p$ that is uniform except for one nearly impossible token is close to $U$ in KL, and a uniform $q$
# still pays for that token (question 2). What does bound the divergence is the smallest probability of $p$:
# $\mathrm{KL}(q\|p)\le\mathrm{KL}(q\|U)+\log\frac{1}{|\mathcal Z|\min_z p(z)}$, i.e. $p$ close to uniform
# *pointwise*, not in KL. The same construction as question 2, for larger $M$:

# %% tags=["hide-cell"]
for M in (1e2, 1e4, 1e6):
    log_p = np.zeros(n_z)
    log_p[0] = -M  # one token e^M times less likely than each of the others
    log_p -= logsumexp(log_p)
    kq, kp, kqp = kl_to_uniform(log_q), kl_to_uniform(log_p), categorical_kl(log_q, log_p)
    print(f"M = {M:9.0f}: KL(q||U) < 1e-12: {abs(kq) < 1e-12},  KL(p||U) = {kp:.4f},  "
          f"KL(q||p) = {kqp:.2f} nats")
    assert abs(kq) < 1e-12
    assert kp < 0.0011
    assert kqp > M / n_z - 1
    assert kqp <= kq - np.log(n_z) - log_p.min() + 1e-9  # the pointwise bound holds


# %% [markdown]
# ### The paper's §6.2 correlations, recomputed from its own Table 1
#
# §6.2 reports Spearman $\rho=0.87$ (p-value $2\times10^{-4}$) between the unshuffled $-\log p_s$ and
# logPPL, and $\rho=0.86$ (p-value $4\times10^{-4}$) with ECE, "over the 12 data points (3 models × 4
# bins)". Those 12 points are the base columns of Table 1; we transcribe them and recompute.

# %% tags=["hide-cell"]
table1_neg_log_p = [-1.892, -1.895, -1.896, -1.896, 3.488, 3.353, 3.318, 3.312,
                    -2.369, -2.368, -2.368, -2.368]
table1_ece = [0.70, 0.75, 0.81, 0.70, 9.24, 9.46, 9.50, 9.38, 0.49, 0.41, 0.39, 0.44]
table1_logppl = [2.70, 2.80, 2.81, 2.80, 3.23, 3.34, 3.37, 3.35, 2.43, 2.54, 2.56, 2.54]
paper_ppl = spearman(table1_neg_log_p, table1_logppl)
paper_ece = spearman(table1_neg_log_p, table1_ece)
print(f"-log p_s vs logPPL: rho = {paper_ppl.rho:.3f}, p-value = {paper_ppl.p_value:.1e}   (paper: 0.87, 2e-4)")
print(f"-log p_s vs ECE   : rho = {paper_ece.rho:.3f}, p-value = {paper_ece.p_value:.1e}   (paper: 0.86, 4e-4)")
within = [spearman(table1_neg_log_p[i:i + 4], table1_logppl[i:i + 4]).rho for i in (0, 4, 8)]
print("within Qwen2.5 / Qwen3 / Llama3.2 (4 bins each): rho =", [f"{w:.2f}" for w in within])
print("Llama3.2 -log p_s per bin:", table1_neg_log_p[8:], "(not constant: one value differs)")
assert within[0] < -0.7  # reversed within each Qwen model
assert within[1] < -0.7
assert len(set(table1_neg_log_p[8:])) == 2  # Llama3.2: not all tied, so rho is defined ...
assert within[2] > 0.8  # ... and positive
assert [round(w, 2) for w in within] == [-0.83, -0.80, 0.82]  # the values the answer to question 3 states
assert abs(paper_ppl.rho - 0.87) < 0.005
assert abs(paper_ece.rho - 0.86) < 0.005
assert abs(paper_ppl.p_value - 2e-4) < 0.5e-4
assert abs(paper_ece.p_value - 4e-4) < 0.5e-4

# %% [markdown]
# Both statistics reproduce from the table. Note what the 12 points are: the three models sit in three
# separated clusters (Llama3.2 lowest on both axes, Qwen3 highest), so the correlation mainly ranks the
# *models*; within a model, across bins, the relation is reversed for the two Qwen models ($\rho\approx-0.8$
# for Qwen2.5 and for Qwen3) but not for Llama3.2: its four $-\log p_s$ values are not all tied (one bin
# differs in the third decimal), so $\rho$ is defined, and it is $\approx+0.82$, the opposite sign, resting on
# that single third-decimal difference. No within-model direction is common to the three models. So "higher
# marginal likelihood implies better predictive performance" is a between-model statement in the data shown.
#
# ### §6.2–6.3's statements about the perturbation, against the same table
#
# Sections 6.2 ("Changes under perturbation") and 6.3 (the moderate, high-sensitivity and low-sensitivity
# regimes) describe how the three models respond to prefix shuffling. Each statement names columns of
# Table 1, so each can be read off the printed numbers. We transcribe the change columns of Table 1 (and,
# for §6.3, the base values of its last bin, $r\in(0.75,1.0)$) and check the statements one by one. The κ
# orders of magnitude that §6.3 reads off Fig. 4 need the models' weights, which we do not have.

# %% tags=["hide-cell"]
METRIC_COLUMNS = ["-log p_s", "KL(q|p)", "KL(q|U)", "KL(p|U)"]
table1_delta = {  # Table 1, the Δ columns: rows = bins of r, columns = METRIC_COLUMNS
    "Qwen2.5": np.array([[3.74e-3, 1.814, -0.082, -0.142], [6.33e-3, 3.005, -0.123, -0.174],
                         [11.74e-3, 5.449, -0.209, -0.220], [22.87e-3, 10.391, -0.475, -0.276]]),
    "Qwen3": np.array([[0.202, 108.11, -0.046, -0.025], [0.321, 169.16, -0.063, -0.028],
                       [0.540, 280.37, -0.088, -0.032], [1.281, 659.44, -0.220, -0.038]]),
    "Llama3.2": np.array([[-3.35e-4, -0.332, -0.333, -0.008], [-3.55e-4, -0.348, -0.360, -0.016],
                          [-4.01e-4, -0.390, -0.410, -0.034], [-6.39e-4, -0.620, -0.627, -0.065]]),
}
table1_delta_logppl = {  # Δ logPPL per bin, nats (Table 1)
    "Qwen2.5": [0.07, 0.19, 0.50, 1.78],
    "Qwen3": [0.03, 0.14, 0.40, 1.37],
    "Llama3.2": [0.09, 0.18, 0.42, 1.72],
}
# last bin, r in (0.75, 1.0): base of KL(q‖p), KL(q‖U), KL(p‖U), ECE (%) and Δ ECE — Table 1
last_base = {
    "Qwen2.5": {"KL(q|p)": 32.854, "KL(q|U)": 2.699, "KL(p|U)": 3.799, "ECE": 0.70},
    "Qwen3": {"KL(q|p)": 2526.77, "KL(q|U)": 3.003, "KL(p|U)": 4.606, "ECE": 9.38},
    "Llama3.2": {"KL(q|p)": 3.529, "KL(q|U)": 2.871, "KL(p|U)": 0.630, "ECE": 0.44},
}
last_delta = {m: dict(zip(METRIC_COLUMNS, table1_delta[m][-1])) for m in table1_delta}
for m, delta_ece in (("Qwen2.5", 6.91), ("Qwen3", -6.69), ("Llama3.2", 6.74)):
    last_delta[m]["ECE"] = delta_ece


def rising_and_positive(xs):
    return xs[0] > 0 and bool(np.all(np.diff(xs) > 0))


statements = {
    "§6.2: Δ(−log p_s) > 0 and rising with the shuffle rate, Qwen2.5 and Qwen3":
        all(rising_and_positive(table1_delta[m][:, 0]) for m in ("Qwen2.5", "Qwen3")),
    "§6.2: ΔlogPPL > 0 and rising with the shuffle rate, Qwen2.5 and Qwen3":
        all(rising_and_positive(table1_delta_logppl[m]) for m in ("Qwen2.5", "Qwen3")),
    "§6.2: Δ(−log p_s) near zero for Llama3.2 (|Δ| < 1e-3 in every bin)":
        np.max(np.abs(table1_delta["Llama3.2"][:, 0])) < 1e-3,
    "§6.2: ΔlogPPL rises for Llama3.2 (to more than 1 nat in the last bin)":
        rising_and_positive(table1_delta_logppl["Llama3.2"]) and table1_delta_logppl["Llama3.2"][-1] > 1,
    "§6.3 Qwen2.5: shuffling lowers KL(q‖U) and KL(p‖U), raises KL(q‖p), worsens ECE":
        last_delta["Qwen2.5"]["KL(q|U)"] < 0 and last_delta["Qwen2.5"]["KL(p|U)"] < 0
        and last_delta["Qwen2.5"]["KL(q|p)"] > 0 and last_delta["Qwen2.5"]["ECE"] > 0,
    "§6.3 Qwen3: KL(p‖U) > KL(q‖U), the largest KL(q‖p) and ECE of the three":
        last_base["Qwen3"]["KL(p|U)"] > last_base["Qwen3"]["KL(q|U)"]
        and all(last_base["Qwen3"][k] == max(last_base[m][k] for m in last_base) for k in ("KL(q|p)", "ECE")),
    "§6.3 Qwen3: shuffling lowers KL(q‖U), raises KL(q‖p), yet improves ECE":
        last_delta["Qwen3"]["KL(q|U)"] < 0 and last_delta["Qwen3"]["KL(q|p)"] > 0 and last_delta["Qwen3"]["ECE"] < 0,
    "§6.3 Llama3.2: KL(p‖U) below KL(q‖U); the lowest KL(p‖U), KL(q‖p) and ECE of the three":
        last_base["Llama3.2"]["KL(p|U)"] < last_base["Llama3.2"]["KL(q|U)"]
        and all(last_base["Llama3.2"][k] == min(last_base[m][k] for m in last_base) for k in ("KL(p|U)", "KL(q|p)", "ECE")),
    "§6.3 Llama3.2: shuffling raises ECE (by more than 5 points)": last_delta["Llama3.2"]["ECE"] > 5,
}
for text, holds_ in statements.items():
    print(f"{'holds' if holds_ else 'FAILS'}: {text}")
assert all(statements.values())
relative = {m: last_delta[m]["KL(q|p)"] / last_base[m]["KL(q|p)"] for m in last_base}
print("relative change of KL(q‖p) under shuffling:", {m: f"{r:+.1%}" for m, r in relative.items()})
print(f"Qwen3 KL(p‖U) / KL(q‖U) = {last_base['Qwen3']['KL(p|U)']} / {last_base['Qwen3']['KL(q|U)']} = "
      f"{last_base['Qwen3']['KL(p|U)'] / last_base['Qwen3']['KL(q|U)']:.2f}")
assert -0.2 < relative["Llama3.2"] < -0.15 and relative["Qwen2.5"] > 0.3 and relative["Qwen3"] > 0.25

# %% [markdown]
# Every sign and ordering §6.2–6.3 states is the table's. Two wordings are looser than the numbers:
# "perturbation leaves KL(q‖p) nearly unchanged" for Llama3.2 is true in nats (−0.620) but it is a
# 17.6 % drop, of the same size as the other two models' relative *rises* (+31.6 % and +26.1 %): what is
# distinctive is its sign, not its size. Qwen3's "much larger" KL(p‖U) than KL(q‖U) is 4.606 against
# 3.003 nats, a factor 1.53.
#
# Which layers are "deep"? Table 1 aggregates "the deepest third of layers", and App. C.2.3 names them:
# the last 8 of Qwen2.5's 24 layers, the last 9 of Qwen3's 28 and the last 5 of Llama3.2's 16 (layer
# counts from App. C.2.1). A third, rounded down:

# %% tags=["hide-cell"]
layer_counts = {"Qwen2.5": 24, "Qwen3": 28, "Llama3.2": 16}  # App. C.2.1
deepest_third = {m: n_layers // 3 for m, n_layers in layer_counts.items()}
print("the deepest third, rounded down:", deepest_third)
assert deepest_third == {"Qwen2.5": 8, "Qwen3": 9, "Llama3.2": 5}  # App. C.2.3's counts

# %% [markdown]
# ### App. C.2.5: does Table 2 show smaller changes because the shallow layers change little?
#
# App. C.2.5 introduces Table 2, the same metrics averaged over *all* layers, with one sentence:
# "Compared to the deep-layer aggregates, the full-layer values show smaller Δ because shallow layers
# contribute little change, confirming that the observed trends are driven by deep layers." Table 2's
# values need the pre-trained models, but the sentence compares two printed tables, so it can be checked.
# We transcribe Table 2's change columns and compare them with Table 1's, cell by cell.
#
# The "because" can be checked too. Both tables are means over layers (their base values are of the same
# size, e.g. $-\log p_s$ of Qwen2.5's first bin: −1.892 deep, −1.917 all layers; a sum over the deep
# layers would be several times larger). If the shallow layers changed nothing, the all-layer change would
# be the deep one times the share of deep layers, $8/24$, $9/28$ or $5/16$ — about a third. And the mean
# change of the shallow layers follows from the two tables:
# $\Delta_{\text{shallow}}=(L\,\Delta_{\text{all}}-L_{\text{deep}}\Delta_{\text{deep}})/(L-L_{\text{deep}})$,
# with $L$ the number of layers and $L_{\text{deep}}$ the deepest third.

# %% tags=["hide-cell"]
table2_delta = {  # Table 2 (all layers), the Δ columns: rows = bins of r, columns = METRIC_COLUMNS
    "Qwen2.5": np.array([[2.48e-3, 1.204, -0.062, -0.103], [4.17e-3, 1.987, -0.094, -0.129],
                         [7.72e-3, 3.590, -0.158, -0.167], [15.04e-3, 6.827, -0.347, -0.218]]),
    "Qwen3": np.array([[0.137, 73.37, -0.036, -0.025], [0.218, 114.78, -0.052, -0.031],
                       [0.367, 190.22, -0.075, -0.042], [0.869, 447.36, -0.180, -0.062]]),
    "Llama3.2": np.array([[-3.19e-4, -0.320, -0.321, -0.005], [-3.38e-4, -0.337, -0.344, -0.011],
                          [-3.76e-4, -0.373, -0.383, -0.025], [-5.47e-4, -0.540, -0.537, -0.048]]),
}
base_neg_log_p = {"Qwen2.5": (-1.892, -1.917), "Qwen3": (3.488, 1.718), "Llama3.2": (-2.369, -2.369)}
print("unshuffled -log p_s, first bin, deep / all layers:", base_neg_log_p)
smaller = larger = equal = 0
exceptions = []
for m, deep_delta in table1_delta.items():
    all_delta = table2_delta[m]
    smaller += int(np.sum(np.abs(all_delta) < np.abs(deep_delta)))
    larger += int(np.sum(np.abs(all_delta) > np.abs(deep_delta)))
    equal += int(np.sum(np.abs(all_delta) == np.abs(deep_delta)))
    for b, col in zip(*np.nonzero(np.abs(all_delta) >= np.abs(deep_delta))):
        exceptions.append((m, METRIC_COLUMNS[col], BINS[b], deep_delta[b, col], all_delta[b, col]))
print(f"|Δ| smaller in the all-layer table in {smaller} of {smaller + larger + equal} cells, "
      f"larger in {larger}, equal in {equal}:")
for m, col, rate_bin, deep_value, all_value in exceptions:
    print(f"  {m} Δ{col}, r in {rate_bin}: deep {deep_value:+.3f}, all layers {all_value:+.3f}")
assert (smaller, larger, equal) == (44, 3, 1)
assert {(m, col) for m, col, *_ in exceptions} == {("Qwen3", "KL(p|U)")}

print("\nall-layer Δ / deep Δ (if the shallow layers changed nothing: the deep share of the layers)")
print(f"{'':9} {'deep share':>10} | " + " | ".join(f"{c:>23}" for c in METRIC_COLUMNS))
shallow_ratio = {}
for m, n_layers in layer_counts.items():
    share = deepest_third[m] / n_layers
    ratio = table2_delta[m] / table1_delta[m]  # (bins, metrics)
    shallow_ratio[m] = (n_layers * ratio - deepest_third[m]) / (n_layers - deepest_third[m])
    print(f"{m:9} {share:10.2f} | " + " | ".join(
        f"{ratio[:, k].min():.2f}-{ratio[:, k].max():.2f} (last bin {ratio[-1, k]:.2f})" for k in range(4)))
print("\nimplied mean Δ of the shallow layers / mean Δ of the deep layers, per column (range over the bins)")
for m, sr in shallow_ratio.items():
    print(f"{m:9} " + " | ".join(f"{c} {sr[:, k].min():.2f}-{sr[:, k].max():.2f}"
                                 for k, c in enumerate(METRIC_COLUMNS)))
assert all(np.all(shallow_ratio[m][:, :2] > 0.45) for m in shallow_ratio)  # -log p_s, KL(q|p): not "little"
assert np.max(shallow_ratio["Qwen3"][:, 3]) > 1.9  # Qwen3's KL(p|U): the shallow layers change more

# %% [markdown]
# The first half of the sentence holds for 44 of the 48 change cells; Qwen3's $\Delta\mathrm{KL}(p\|U)$ is
# *larger* over all layers in three bins and equal in the first. The "because" does not hold: if the
# shallow layers contributed little, the all-layer change would be about a third of the deep one (0.31–0.33);
# the printed ratios are 0.66–0.68 for the Qwen models' $-\log p_s$ and $\mathrm{KL}(q\|p)$, 0.73–1.63 for
# their sharpnesses, and 0.62–0.97 for Llama3.2. Read back, the
# shallow two-thirds of the layers change on average about half as much as the deep third for
# $-\log p_s$ and $\mathrm{KL}(q\|p)$ in the Qwen models (0.49–0.53), 0.79–0.95 as much in Llama3.2's
# first three columns, and up to 1.93 times as much for Qwen3's $\mathrm{KL}(p\|U)$. Summed over their
# layers, the shallow layers carry about as much of the change as the deep ones (Qwen models, $-\log p_s$ and
# $\mathrm{KL}(q\|p)$) or more (their sharpnesses; Llama3.2's columns, except the first bin of its
# $\mathrm{KL}(p\|U)$, where the two sums are equal to the table's digits). So the tables support
# "the deep layers change most per layer", not "the trends are driven by deep layers". (Fig. 2's
# statement that shallow layers "remain near zero" is drawn from a figure whose values are not printed; in a
# model whose positions enter only through rotary queries and keys, as ours, the first layer's
# $\Delta(-\log p_s)$ is zero by construction, Figure 5.5.1, so a zero there says nothing about sensitivity.)
#
# ## Reproducibility
#
# The default run trains in the page (seed 0 for the model, seeds 0–2 for the three training stages,
# seed 0 for the shuffles); its numbers are printed as produced numbers, shown but not compared as text
# when the notebooks are re-run: with the same seeds, another CPU's floating-point kernels round
# differently and 240 steps of training grow the difference, so a rebuild on another machine prints other
# losses, weights and table entries (the asserted statements held in both builds of this page and in the
# perturbed check). The larger model is the saved run `svflow_lm`; the cells below say how it
# was produced, and check that the loaded checkpoint *is* the model its tables were computed from (its
# validation loss, recomputed here) and that the probe reproduces it.

# %% tags=["hide-cell"]
print(f"saved run: produced by `{saved['command']}` at commit {saved['commit'][:10]}"
      f"{' (uncommitted changes)' if saved['dirty'] else ''} on {saved['created'][:10]}")
print(f"checkpoint {run['checkpoint']} ({run['checkpoint_bytes'] / 1e6:.2f} MB); weights rounded to "
      f"float16 after each stage, as stored")
for step, tr in zip(run["steps"], run["train_loss_last100"]):
    print(f"  after {step:4d} steps: training loss, last 100 steps {tr:.3f} nats/char")
assert run["vocab"] == "<unk>" + data.vocab.chars  # same corpus split, same characters (id 0: unknown)
val_again = evaluate_loss(lm, val[: scfg.val_chars], scfg.seq_len)  # nats per character
print(f"validation loss of the loaded checkpoint, recomputed: matches the record (|diff| < 1e-4): "
      f"{abs(val_again - run['val_loss'][-1]) < 1e-4}")
assert abs(val_again - run["val_loss"][-1]) < 1e-4
seqs_saved = val[: scfg.n_eval_seqs * (scfg.seq_len + 1)].reshape(scfg.n_eval_seqs, scfg.seq_len + 1)
probe_saved = probe_tinylm(lm, seqs_saved[:4, :-1])
with torch.no_grad():
    ref_saved = torch.log_softmax(lm(torch.as_tensor(seqs_saved[:4, :-1])).double(), -1).numpy()
print(f"logit lens after the last layer == model log-probabilities (max gap < 1e-4): "
      f"{np.max(np.abs(probe_saved.log_probs - ref_saved)) < 1e-4}")
assert np.max(np.abs(probe_saved.log_probs - ref_saved)) < 1e-4
recomputed = checkpoint_spearman(run["tables"])
assert np.isclose(recomputed[0].rho, run["spearman_logppl"][0])  # the record's correlations, recomputed
assert np.isclose(recomputed[1].rho, run["spearman_ece"][0])
