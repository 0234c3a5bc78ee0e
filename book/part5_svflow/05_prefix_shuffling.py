# %% [markdown]
# # 5.5 Prefix shuffling: SVFlow metrics of a trained causal LM
#
# **Source:** Liao, §6 (Tables 1–2, Figs. 2–4, §6.2 Spearman correlations), App. C.2 (protocol and
# metrics, Eqs. 71–73).
#
# **Plainly: this is not the paper's experiment.** The paper probes Qwen2.5-0.5B, Qwen3-0.6B and
# Llama3.2-1B on WikiText-2 (word-piece tokens, 16–28 layers, widths 896–2048). We cannot load those
# models, so we run the same *protocol* on our own small character-level model (`nextword.torch.lm.TinyLM`,
# pre-norm with RMSNorm and RoPE, trained here on tiny Shakespeare) and on held-out Shakespeare text.
# The numbers are therefore about our model; what transfers is the method and the checks of the
# paper's formulas. The "three models" of §6.2 are replaced by three checkpoints of one training run.
#
# **Protocol (App. C.2.2–C.2.3).** For each sequence of length $N$ and rate $p\in\{0.2,0.4,0.6,0.8,0.95\}$,
# permute the first $\lfloor pN\rfloor$ tokens; keep tokens at positions $n>\lfloor pN\rfloor$, with prefix
# shuffle rate $r=\lfloor pN\rfloor/n$, binned into $(0,.25],(.25,.5],(.5,.75],(.75,1)$. For every
# attention layer and head, at the query state $x$ (the attention input rescaled to the unit sphere):
# $q(z\mid x)$ = the attention weights (Eq. 19), $p(x\mid z)$ = the vMF whose natural parameter is the head's
# value–output vector of token $z$ (Eq. 20), and
# $-\log p_t(x)$ (nats/dim, $p_t=\frac1{|\mathcal Z|}\sum_zp(x\mid z)$), $\mathrm{KL}(q\|p)$, $\mathrm{KL}(q\|U)$,
# $\mathrm{KL}(p\|U)$, averaged over heads. Task metrics per bin: log-perplexity and ECE (15 bins) of the
# next-token prediction. $\Delta$ = perturbed minus baseline at the same positions.
#
# **Default run:** a 4-layer, width-48 model trained for 3 × 80 steps (seconds on a CPU; it is barely
# past a bigram model), 16 held-out sequences of 65 characters. `FULL=1`: 6 layers, width 128, 3 × 1000
# steps, 200 sequences of 129 characters. Every number below that depends on the trained weights is in
# a cell whose output is not compared by `pytest --nbval`; the identities are asserted.

# %%
import os

import numpy as np
import sympy as sp
import matplotlib.pyplot as plt
import torch

from nextword.evaluation import spearman
from nextword.booktools.plotting import use_book_style
from nextword.theory.svflow import categorical_kl, entropy, kl_to_uniform
from nextword.torch.svflow_probe import prefix_shuffling_experiment, probe_tinylm
from nextword.torch.data import load_char_data
from nextword.torch.lm import LMConfig, TinyLM, train_lm

use_book_style()
sp.init_printing(use_latex="mathjax")

# %% tags=["parameters"]
FULL = os.environ.get("FULL", "0") == "1"
D_MODEL, LAYERS, SEQ_LEN, N_SEQS = (128, 6, 128, 200) if FULL else (48, 4, 64, 16)
STEPS_PER_CHECKPOINT, BATCH, LR = (1000, 64, 3e-3) if FULL else (80, 32, 1e-2)
PS = (0.2, 0.4, 0.6, 0.8, 0.95)
DEEP = max(1, LAYERS // 3)          # "deepest third of layers" (8 of 24, 9 of 28, 5 of 16 in the paper)

# %% [markdown]
# ## 1. The concentration–divergence identities (App. C.2.4, Eqs. 71–73)
#
# For distributions on a finite $\mathcal Z$: $\mathrm{KL}(q\|U)=\log|\mathcal Z|-H(q)$ and
# $\mathrm{KL}(q\|p)=H(q,p)-H(q)$. Sympy confirms them for $|\mathcal Z|=3$, and the library's helpers agree:

# %%
q1, q2, p1, p2 = sp.symbols("q1 q2 p1 p2", positive=True)
qv = [q1, q2, 1 - q1 - q2]
pv = [p1, p2, 1 - p1 - p2]
H = lambda a: -sum(ai * sp.log(ai) for ai in a)                         # noqa: E731
KL = lambda a, b: sum(ai * sp.log(ai / bi) for ai, bi in zip(a, b))    # noqa: E731
Hx = -sum(ai * sp.log(bi) for ai, bi in zip(qv, pv))
print("KL(q||U) - (log 3 - H(q))  =", sp.simplify(sp.expand_log(KL(qv, [sp.Rational(1, 3)] * 3) - (sp.log(3) - H(qv)), force=True)))
print("KL(q||p) - (H(q,p) - H(q)) =", sp.simplify(sp.expand_log(KL(qv, pv) - (Hx - H(qv)), force=True)))
qn, pn = np.array([0.7, 0.2, 0.1]), np.array([0.1, 0.1, 0.8])
assert abs(kl_to_uniform(np.log(qn)) - (np.log(3) - entropy(np.log(qn)))) < 1e-15
assert abs(categorical_kl(np.log(qn), np.log(pn)) - (-(qn @ np.log(pn)) - entropy(np.log(qn)))) < 1e-15

# %% [markdown]
# ## 2. The paper's §6.2 correlations, recomputed from its own Table 1
#
# §6.2 reports Spearman $\rho=0.87$ ($p=2\times10^{-4}$) between baseline $-\log p_t$ and logPPL, and
# $\rho=0.86$ ($p=4\times10^{-4}$) with ECE, "over the 12 data points (3 models × 4 bins)". Those 12 points are
# the baseline columns of Table 1; we transcribe them and recompute with `nextword.evaluation.spearman`.

# %%
table1_neg_log_p = [-1.892, -1.895, -1.896, -1.896, 3.488, 3.353, 3.318, 3.312, -2.369, -2.368, -2.368, -2.368]
table1_ece = [0.70, 0.75, 0.81, 0.70, 9.24, 9.46, 9.50, 9.38, 0.49, 0.41, 0.39, 0.44]
table1_logppl = [2.70, 2.80, 2.81, 2.80, 3.23, 3.34, 3.37, 3.35, 2.43, 2.54, 2.56, 2.54]
s_ppl = spearman(table1_neg_log_p, table1_logppl)
s_ece = spearman(table1_neg_log_p, table1_ece)
print(f"-log p_t vs logPPL: rho = {s_ppl.rho:.3f}, p = {s_ppl.p_value:.1e}   (paper: 0.87, 2e-4)")
print(f"-log p_t vs ECE   : rho = {s_ece.rho:.3f}, p = {s_ece.p_value:.1e}   (paper: 0.86, 4e-4)")
within = [spearman(table1_neg_log_p[i:i + 4], table1_logppl[i:i + 4]).rho for i in (0, 4)]
print("within Qwen2.5 / Qwen3 (4 bins each): rho =", [f"{w:.2f}" for w in within])
assert abs(s_ppl.rho - 0.87) < 0.005 and abs(s_ece.rho - 0.86) < 0.005
assert abs(s_ppl.p_value - 2e-4) < 0.5e-4 and abs(s_ece.p_value - 4e-4) < 0.5e-4

# %% [markdown]
# Both statistics reproduce from the table. Note what the 12 points are: the three models sit in three
# separated clusters (Llama3.2 lowest on both axes, Qwen3 highest), so the correlation mainly ranks the
# *models*; within a model, across bins, the relation is reversed ($\rho\approx-0.8$ for Qwen2.5 and for
# Qwen3) or undefined (Llama3.2's $-\log p_t$ is constant to three decimals). So "higher marginal likelihood
# implies better predictive performance" is a between-model statement in the data shown.
#
# ## 3. Data and model

# %%
data = load_char_data("shakespeare")
V = len(data.vocab.chars)
val = data.val.numpy()
seqs = val[: N_SEQS * (SEQ_LEN + 1)].reshape(N_SEQS, SEQ_LEN + 1)   # (M, N) non-overlapping held-out windows
cfg = LMConfig(vocab_size=V, d_model=D_MODEL, num_heads=4, num_layers=LAYERS, max_len=SEQ_LEN,
               positional="rope", norm="rms", pre_norm=True)
print(f"vocabulary {V} characters; {N_SEQS} evaluation sequences of N = {SEQ_LEN + 1}; model {cfg.num_layers} layers, "
      f"d = {cfg.d_model}, {cfg.num_heads} heads")

# %% tags=["nbval-ignore-output"]
model = TinyLM(cfg, seed=0)
checkpoints, losses = [], []
for c in range(3):
    losses += train_lm(model, data.train.numpy(), steps=STEPS_PER_CHECKPOINT, batch_size=BATCH, block_size=SEQ_LEN,
                       lr=LR, seed=c, progress=False)
    checkpoints.append({k: v.detach().clone() for k, v in model.state_dict().items()})
    print(f"checkpoint {c + 1}: step {len(losses)}, mean training loss of the last 20 steps {np.mean(losses[-20:]):.3f} nats")

# %% [markdown]
# ## 4. The probe reproduces the model (identities)
#
# `probe_tinylm` runs the blocks one by one; the logit-lens readout after the last layer must be the
# model's own next-token distribution, and $-\log p_t=-(\mathcal L_t+\mathrm{KL}(q_t\|p_t))$ per head (App. C.2.3)
# holds by construction of `svflow_metrics_from_loglik` (tested in `tests/theory/svflow/test_svflow.py`).

# %%
probe = probe_tinylm(model, seqs[:4, :-1])
with torch.no_grad():
    ref = torch.log_softmax(model(torch.as_tensor(seqs[:4, :-1])).double(), -1).numpy()
gap = np.max(np.abs(probe.log_probs - ref))
print(f"logit lens after the last layer == model log-probabilities (max gap < 1e-4): {gap < 1e-4}")
print("metric arrays have shape (layers, batch, positions):", probe.metrics["kl_q_p"].shape)
assert gap < 1e-4 and np.all(np.isfinite(probe.metrics["neg_log_p_per_dim"]))

# %% [markdown]
# ## 5. The experiment, per checkpoint

# %% tags=["nbval-ignore-output"]
tables = []
for c, state in enumerate(checkpoints):
    model.load_state_dict(state)
    tables.append(prefix_shuffling_experiment(model, seqs, PS, np.random.default_rng(0)))
tab = tables[-1]
deep = slice(LAYERS - DEEP, LAYERS)
names = [("neg_log_p_per_dim", "-log p_t"), ("kl_q_p", "KL(q||p)"), ("kl_q_u", "KL(q||U)"), ("kl_p_u", "KL(p||U)")]
bins = ["0.00-0.25", "0.25-0.50", "0.50-0.75", "0.75-1.00"]
print(f"Table 1 analogue (final checkpoint, deepest {DEEP} layer(s)); tokens per bin: {tab.count.astype(int).tolist()}")
print(f"{'rate':>9} | " + " | ".join(f"{lab:>19}" for _, lab in names) + f" | {'ECE %':>13} | {'logPPL':>13}")
print(f"{'':>9} | " + " | ".join(f"{'base':>9} {'Δ':>9}" for _ in names) + f" | {'base':>6} {'Δ':>6} | {'base':>6} {'Δ':>6}")
for b in range(4):
    cells = [f"{tab.base[k][deep, b].mean():9.4f} {tab.delta(k)[deep, b].mean():9.2e}" for k, _ in names]
    print(f"{bins[b]:>9} | " + " | ".join(cells) + f" | {tab.ece_base[b]:6.2f} {tab.ece_pert[b] - tab.ece_base[b]:6.2f}"
          f" | {tab.logppl_base[b]:6.3f} {tab.logppl_pert[b] - tab.logppl_base[b]:6.3f}")

# %% [markdown]
# **Table 5.1** (cf. Table 1). Deep-layer aggregates of our model: baseline value and change under
# shuffling per bin of the prefix shuffle rate. Units as in the paper ($-\log p_t$ in nats/dim, KL and
# logPPL in nats, ECE in %).

# %%
fig, axes = plt.subplots(1, 3, figsize=(14, 3.8))
layers = np.arange(1, LAYERS + 1)
for b in range(4):
    axes[0].plot(layers, tab.delta("neg_log_p_per_dim")[:, b], "o-", label=f"r in {bins[b]}")
axes[0].axhline(0, color="grey", lw=0.8)
axes[0].set_title(r"(cf. Fig. 2) $\Delta(-\log p_t)$ per layer")
axes[0].legend(fontsize=7)
for k, lab, col in [("kl_q_p", "KL(q||p)", "C0"), ("kl_q_u", "KL(q||U)", "C1"), ("kl_p_u", "KL(p||U)", "C2")]:
    axes[1].semilogy(layers, tab.layer_curves_base[k], "-o", color=col, label=f"{lab} base")
    axes[1].semilogy(layers, tab.layer_curves_top[k], "--s", color=col, label=f"{lab} p = {max(PS)}")
axes[1].set_title("(cf. Fig. 3) divergence and concentrations")
axes[1].legend(fontsize=6)
axes[2].semilogy(layers, tab.layer_curves_base["kappa_mean"], "-o", label="baseline")
axes[2].semilogy(layers, tab.layer_curves_top["kappa_mean"], "--s", label=f"p = {max(PS)}")
axes[2].set_title(r"(cf. Fig. 4) mean vMF concentration $\kappa'$")
axes[2].legend(fontsize=7)
for a in axes:
    a.set_xlabel("layer")
    a.set_xticks(layers)
plt.show()

# %% [markdown]
# **Figure 5.1.** Our model's analogues of Figs. 2–4: the per-layer change of $-\log p_t$ by shuffle-rate
# bin; divergence $\mathrm{KL}(q\|p)$ and concentrations $\mathrm{KL}(q\|U)$, $\mathrm{KL}(p\|U)$ per layer at baseline
# (solid) and at the highest shuffle rate (dashed); and the mean concentration $\kappa'=\lVert W_oW_v^\top v_z\rVert$.
# Compare $\kappa'$ with the width $d$: while $\kappa'\lesssim d$, $C_d(\kappa)$ varies slowly and $p(z\mid x)$ stays
# close to uniform (notebook 3), which keeps $\mathrm{KL}(p\|U)$ below $\mathrm{KL}(q\|U)$ — the pattern of the
# paper's "low-sensitivity" regime (Llama3.2, $\kappa\sim10^2$) rather than Qwen3's ($\kappa\sim10^5$).
#
# ## 6. Per-layer readout: the logit lens
#
# Reading each layer's residual stream through the final norm and unembedding shows where in depth the
# shuffled context starts to matter for prediction.

# %%
fig, ax = plt.subplots()
for b in range(4):
    ax.plot(layers, tab.lens_logppl_pert[:, b] - tab.lens_logppl_base[:, b], "o-", label=f"r in {bins[b]}")
ax.axhline(0, color="grey", lw=0.8)
ax.set_xlabel("layer (readout after it)")
ax.set_ylabel(r"$\Delta$ logPPL of the logit-lens readout (nats)")
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# **Figure 5.2.** Change of the logit-lens log-perplexity under prefix shuffling, per layer and bin.
#
# ## 7. §6.2 on our checkpoints: Spearman over 3 checkpoints × 4 bins

# %% tags=["nbval-ignore-output"]
nlp = np.concatenate([t.base["neg_log_p_per_dim"][deep].mean(0) for t in tables])
ppl = np.concatenate([t.logppl_base for t in tables])
ece = np.concatenate([t.ece_base for t in tables])
r_ppl, r_ece = spearman(nlp, ppl), spearman(nlp, ece)
for c, t in enumerate(tables):
    print(f"checkpoint {c + 1}: baseline -log p_t (deep) per bin {np.round(t.base['neg_log_p_per_dim'][deep].mean(0), 4)}, "
          f"logPPL {np.round(t.logppl_base, 3)}, ECE % {np.round(t.ece_base, 2)}")
print(f"Spearman(-log p_t, logPPL) over 12 points: rho = {r_ppl.rho:.3f}, p = {r_ppl.p_value:.2g}   (paper: 0.87, 2e-4)")
print(f"Spearman(-log p_t, ECE)    over 12 points: rho = {r_ece.rho:.3f}, p = {r_ece.p_value:.2g}   (paper: 0.86, 4e-4)")

# %%
assert np.isfinite(r_ppl.rho) and 0.0 <= r_ppl.p_value <= 1.0 and 0.0 <= r_ece.p_value <= 1.0
assert all(np.all(t.count > 0) for t in tables)
print("12 finite points; both Spearman statistics defined")

# %% [markdown]
# **Reading the results.** Our model is a few hundred steps into training on characters, so its attention is
# mostly local: shuffling a far prefix (small $r$) barely changes anything, and the effects concentrate in
# the last bin, where the shuffled characters sit right before the query. The correlations of §6.2 are
# recomputed exactly from the paper's table (section 2), where they hold as stated but are driven by the
# differences *between* models. On our checkpoints the analogue is printed above; with checkpoints of one
# run rather than three architectures it tests a different question (does training lower $-\log p_t$
# together with logPPL?), and we make no claim from it. `FULL=1` trains a larger model for longer.
