# %% [markdown]
# # 4.7 Barrier training: cross-entropy alone vs. cross-entropy + margin (§7.1–7.2, Fig. 7.4)
#
# *Source: Agarwal et al., "Support Tokens, Stability Margins, and a New Foundation for Robust
# LLMs", §7.1–7.2 (Fig. 7.4), with Theorem 1 (Eqs. 13–15), Eq. (24) and Eq. (25).*
#
# §7 turns the log-barrier of Corollary 3.1 into a training penalty. A small causal GPT is trained
# on characters, and a separate **EmbeddingPrior** — one strict-causal attention layer with a
# learnable $d\times d$ matrix $W$ acting on the GPT's token embeddings — contributes
#
# $$\mathcal L = \mathcal L_{\rm CE} + \lambda_m\,\mathcal L_{\rm margin},\qquad
#   \mathcal L_{\rm margin} = \operatorname*{mean}_{t\ge 1}\big[-\log\lvert\det(I_d-\Sigma_tW^\top)\rvert\big],$$
#
# the log-Jacobian term of Eq. (24) with the quadratic residual term dropped (§7.1). The comparison
# of Fig. 7.4 is "same architecture, same optimiser, same seed; with or without the penalty".
#
# **What runs here.** The library does the work: `nextword.torch.model.SmallGPT`,
# `nextword.torch.prior` (the penalty, three exact evaluation paths), `nextword.torch.train`
# (AdamW, cosine schedule, clipping, atomic checkpoints). The same experiment is available from the
# shell as `python -m nextword.torch.barrier train ...`.
#
# | | paper (§7.1) | this notebook, default | `FULL=1` |
# |---|---|---|---|
# | data | WikiText-2, characters, $\lvert V\rvert=1013$ | tiny Shakespeare, first 200K chars, $\lvert V\rvert=63$ (incl. `<unk>`) | WikiText-2 (`BARRIER_DATA`) |
# | model | $d=128$, 4 heads, 2 blocks, $T=256$ | $d=64$, 4 heads, 2 blocks, $T=64$ | as the paper |
# | training | 20 epochs, batch 64, lr $10^{-3}$ | 200 steps, batch 16, lr $3\cdot10^{-3}$ | as the paper |
# | margin term | all positions | $k=16$ of 63 positions per sequence (unbiased subsample) | all positions |
#
# The default run takes well under a minute per arm on one CPU core; `FULL=1` is a GPU job.

# %%
import os

import matplotlib.pyplot as plt
import numpy as np
import sympy as sp
import torch

from nextword.booktools.plotting import use_book_style
from nextword.theory.barrier import matrix_margins
from nextword.torch.book import (PAPER_FIG74, PAPER_SETUP, RESULTS_DIR, experiment_config,
                                 runs_dir, saved_results)
from nextword.torch.prior import METHODS, covariances, margin_loss, margin_loss_tokens
from nextword.torch.sweep import lambda_dir
from nextword.torch.train import save_json, train_or_load

FULL = os.environ.get("FULL", "0") == "1"
torch.set_num_threads(1)          # small tensors: one thread is fastest on a shared CPU
use_book_style()

# %% [markdown]
# ## 1. The penalty, derived
#
# **Parameterisation.** The prior's logits are $\ell_{ts}=x_tWx_s^\top$ (rows $x_t$, as in
# Chapter 6). In the paper's column notation $\ell_{ts}=q_t^\top k_s=x_t^\top W_Q^\top W_Kx_s$, so
# $W=W_Q^\top W_K$ and the matrix of Theorem 1 is $A=W_K^\top W_Q=W^\top$: the penalty
# $-\log\lvert\det(I-\Sigma_tW^\top)\rvert$ of §7.1 is exactly $-\log\lvert\det(I-\Sigma_tA)\rvert$.
#
# **Which way does the gradient push?** In the scalar case $d=1$ the per-position penalty is
# $-\log\lvert 1-a\,\mathrm{Var}_t\rvert$ (Eq. 21). Sympy differentiates it in $a$:

# %%
a, var = sp.symbols("a V_t", real=True)
penalty = -sp.log(1 - a * var)
dpen = sp.simplify(sp.diff(penalty, a))
print("d/da [-log(1 - a Var)] =", dpen)
print("at a = 0:", dpen.subs(a, 0))
assert sp.simplify(dpen.subs(a, 0) - var) == 0

# %% [markdown]
# At $a=0$ the slope is $\mathrm{Var}_t>0$, so a gradient step *decreases* $a$: the penalty, on its
# own, pushes the coupling towards $a<0$ — the regime of Fig. 3.3(c–d) in which
# $1+\lvert a\rvert\mathrm{Var}_t>1$ and there is no degeneracy boundary. The matrix version holds
# too: at $W=0$ the attention is uniform and the $W$-dependence of $\Sigma_t$ is multiplied by
# $\partial\mathcal L/\partial\Sigma_t=(I-\Sigma_tW^\top)^{-\top}W=0$, so
# $\partial\mathcal L_{\rm margin}/\partial W\,\big|_{W=0}=\operatorname{mean}_t\Sigma_t\succeq0$.
# (Section 4 below checks it with autograd and asks where training actually takes the prior.)
#
# **Sylvester's identity.** When the prior sees token embeddings $x_s=E[y_s]$ ($E$ is
# $\lvert V\rvert\times d$), $\Sigma_t=E^\top C_tE$ with $C_t=\operatorname{diag}\beta_t-\beta_t\beta_t^\top$
# and $\beta_t[v]$ the attention mass on vocabulary item $v$. Then
# $\det(I_d-E^\top C_tEW^\top)=\det(I_{\lvert V\rvert}-C_tEW^\top E^\top)$, and because the rows of
# $C_t$ vanish for items absent from the prefix, only an $r_t\times r_t$ block survives ($r_t$ = number of
# distinct tokens before $t$). A symbolic check of the identity on a $2\times3$ example:

# %%
P_ = sp.Matrix(2, 3, sp.symbols("p0:6"))
Q_ = sp.Matrix(3, 2, sp.symbols("q0:6"))
lhs = (sp.eye(2) - P_ * Q_).det()
rhs = (sp.eye(3) - Q_ * P_).det()
print("det(I_2 - PQ) - det(I_3 - QP) =", sp.expand(lhs - rhs))
assert sp.expand(lhs - rhs) == 0

# %% [markdown]
# ## 2. Checks: three exact paths, the numpy theory module, the gradient at $W=0$
#
# `margin_loss_tokens` evaluates the penalty by the direct $d\times d$ covariance, by the second-moment
# form (Lemma B.2), by the compact Sylvester form (the training path, with a hand-written backward
# through $(I-M)^{-\top}$) and by the literal $\lvert V\rvert\times\lvert V\rvert$ form. In float64
# they must agree to rounding, values and gradients alike; the numpy implementation of Theorem 1 in
# `nextword.theory.barrier` (with $W_Q=I$, $W_K=W$) gives a fourth, independent evaluation.

# %%
g = torch.Generator().manual_seed(0)
V, d, B, T = 9, 6, 3, 12
E = torch.randn(V, d, generator=g, dtype=torch.float64)
W = 0.3 * torch.randn(d, d, generator=g, dtype=torch.float64)
tokens = torch.randint(0, V, (B, T), generator=g)

values, grads = {}, {}
for m in METHODS:
    Er, Wr = E.clone().requires_grad_(), W.clone().requires_grad_()
    L = margin_loss_tokens(tokens, Er, Wr, method=m)
    values[m] = float(L.detach())
    grads[m] = torch.autograd.grad(L, (Er, Wr))
for m in METHODS:
    print(f"{m:16s} L_margin = {values[m]:.10f}")
for m in METHODS[1:]:
    assert abs(values[m] - values["direct"]) < 1e-11
    for ga, gb in zip(grads[m], grads["direct"]):
        assert torch.allclose(ga, gb, rtol=1e-8, atol=1e-10)

numpy_margin = np.mean([-matrix_margins(E[tokens[b]].numpy(), np.eye(d), W.numpy()).logabsdet[1:].mean()
                        for b in range(B)])
print(f"numpy theory module:  L_margin = {numpy_margin:.10f}")
assert abs(numpy_margin - values["direct"]) < 1e-10

# gradient at W = 0 equals the mean covariance (autograd)
W0 = torch.zeros(d, d, dtype=torch.float64, requires_grad=True)
x = E[tokens][:1]                                          # one sequence (1, T, d)
(gW0,) = torch.autograd.grad(margin_loss(x, W0), W0)
mean_sigma = covariances(x, W0.detach()).mean(dim=(0, 1))
err = float((gW0 - mean_sigma).abs().max())
print("dL/dW at W = 0 equals mean_t Sigma_t to 1e-12:", err < 1e-12)
assert torch.allclose(gW0, mean_sigma, atol=1e-12)
assert torch.linalg.eigvalsh(mean_sigma).min() > -1e-12   # positive semi-definite

# %% [markdown]
# ## 3. Training both arms
#
# Both runs use the same configuration and seed; only $\lambda_m$ differs ($0$ vs. $0.05$). The GPT
# is initialised identically in both (the prior has its own generator). Runs are cached in a
# temporary directory so that the next two notebooks reuse them.

# %%
cfg_ce = experiment_config(FULL, lambda_margin=0.0)
cfg_m = experiment_config(FULL, lambda_margin=0.05)
root = runs_dir(FULL)
res_ce = train_or_load(cfg_ce, lambda_dir(root, 0.0), progress=False)   # the CLI shows tqdm bars
res_m = train_or_load(cfg_m, lambda_dir(root, 0.05), progress=False)
if FULL:                                   # keep the paper-sized results with the book
    RESULTS_DIR.mkdir(exist_ok=True)
    for name, res in (("barrier_ce_full", res_ce), ("barrier_margin_full", res_m)):
        save_json(res, RESULTS_DIR / f"{name}.json")

# %%
counts = res_ce["model_params"]
print(f"data: {res_ce['data']['name']}, |V| = {res_ce['data']['vocab_size']}, "
      f"{res_ce['data']['train_chars']:,} train chars; steps: {res_ce['steps']}")
print(f"parameters: transformer {counts['transformer']:,}, token embedding {counts['embedding']:,}, "
      f"positions {counts['positions']:,}   (paper: {PAPER_SETUP['params']})")
print(f"{'arm':8s} {'train BPC':>10s} {'val BPC':>8s} {'paper train':>12s} {'paper val':>10s}")
for name, res in (("ce", res_ce), ("margin", res_m)):
    print(f"{name:8s} {res['final_train_bpc']:10.3f} {res['final_val_bpc']:8.3f} "
          f"{PAPER_FIG74[name]['train_bpc']:12.3f} {PAPER_FIG74[name]['val_bpc']:10.3f}")
gap = res_m["final_val_bpc"] - res_ce["final_val_bpc"]
print(f"validation gap (margin - CE): {gap:+.3f} BPC   (paper: "
      f"{PAPER_FIG74['margin']['val_bpc'] - PAPER_FIG74['ce']['val_bpc']:+.3f})")

# %% [markdown]
# What we assert is what this experiment shows, not what the paper reports: both runs finished;
# the arms start from the same loss (same seed, same first batch); the penalty *decreased* during
# training in the margin arm; and the final validation BPC of the two arms differs by less than
# 0.1 BPC (the penalty is a mild perturbation of the CE fit — here as in the paper).

# %%
h_ce, h_m = res_ce["history"], res_m["history"]
assert res_ce["finished"] and res_m["finished"]
assert abs(h_ce[0]["train_bpc"] - h_m[0]["train_bpc"]) < 0.02
assert h_m[-1]["train_margin"] < h_m[0]["train_margin"] < 0.05
assert abs(gap) < 0.1
assert all(h["train_margin"] == 0.0 for h in h_ce)

# %%
fig, axes = plt.subplots(1, 3, figsize=(12, 3.6))
for res, name, color in ((res_ce, "CE only", "C0"), (res_m, r"CE + margin ($\lambda_m=0.05$)", "C2")):
    ep = [h["epoch"] for h in res["history"]]
    axes[0].plot(ep, [h["train_bpc"] for h in res["history"]], "o-", color=color, label=name)
    axes[1].plot(ep, [h["val_bpc"] for h in res["history"]], "o-", color=color, label=name)
axes[2].plot([h["epoch"] for h in h_m], [h["train_margin"] for h in h_m], "o-", color="C2")
axes[0].set(title="(a) training BPC (mean over each period)", xlabel="epoch", ylabel="bits / char")
axes[1].set(title="(b) validation BPC", xlabel="epoch")
axes[2].set(title=r"(c) $\mathcal{L}_{\rm margin}$ in the margin arm", xlabel="epoch", ylabel="nats")
axes[0].legend()
plt.tight_layout()
plt.show()

# %% [markdown]
# **Figure (cf. Fig. 7.4).** (a, b) Training and validation bits per character of the two arms;
# (c) the margin penalty during training. The BPC curves lie on top of each other, as in the
# paper's Fig. 7.4. Panel (c) is the new information: the penalty starts near zero (small
# embeddings, small $W$) and goes **negative**, i.e. $\lvert\det(I-\Sigma_tA)\rvert>1$.

# %% [markdown]
# ## 4. Which side of the barrier did training go to?
#
# A negative penalty means the determinant moved *away from 1 upwards*, not away from 0. The prior's
# diagnostics (`prior_diagnostics`) make this precise: $\operatorname{tr}(\Sigma_tA)$, whose sign is the
# sign of the coupling in the $d=1$ picture of §3.4, and the share of positions with
# $\lvert\det\rvert>1$.

# %%
for name, res in (("ce", res_ce), ("margin", res_m)):
    dg = res["diagnostics"]
    print(f"{name:7s} mean tr(Sigma_t A) = {dg['trace_sigma_A']:+.4f}   share |det| > 1 = "
          f"{dg['frac_det_above_one']:.3f}   penalty = {dg['margin']:+.4f}   "
          f"min log|det| = {dg['min_logabsdet']:+.4f}")
dm = res_m["diagnostics"]
assert dm["trace_sigma_A"] < 0 and dm["frac_det_above_one"] > 0.9 and dm["min_logabsdet"] >= -1e-6

# %% [markdown]
# The trained prior sits in the **negative-coupling regime**: $\operatorname{tr}(\Sigma_tA)<0$ and
# $\lvert\det(I-\Sigma_tA)\rvert>1$ at essentially every position, so $\log\lvert\det\rvert$ never gets
# close to $-\infty$ and the barrier at $\det=0$ plays no role. This is what the derivation of §1
# predicts: with the quadratic residual term dropped, nothing in $\mathcal L$ favours $a>0$, and the
# penalty's own gradient points to $a<0$ from the very first step. §3.4 says the §7 experiments
# focus on the $a>0$ (barrier) regime; in our runs the penalty acts instead as the
# *dispersion-promoting* correction of Fig. 3.3(c–d). We record this in `book/ERRATA.md`.
#
# ## 5. Paper vs. here: which differences are expected
#
# * **Absolute BPC** (ours ≈ 3.7 vs. the paper's ≈ 2.1): expected — 200 steps of a $d=64$, $T=64$
#   model on 200K characters of Shakespeare against 20 epochs of a $d=128$, $T=256$ model on
#   10.9M characters of WikiText-2. Set `FULL=1` (GPU) for the paper's configuration.
# * **Gap between the arms** (ours ≈ 0.00 BPC, paper 0.036): both small; at our scale the
#   penalty weight $0.05\times\lvert\mathcal L_{\rm margin}\rvert$ is a few hundredths of a nat.
# * **Parameter count**: the stated architecture has $2\cdot(12d^2+13d)+2d$ non-embedding parameters
#   ($\approx397$K at $d=128$ with the usual 4× MLP), not "~150K"; the attention projections alone
#   hold $2\cdot4d^2\approx131$K. Not reproducible from the text (ERRATA).
# * **Sign of the coupling**: not a matter of scale — it follows from the gradient at $W=0$ (§1–2)
#   and is what the diagnostics show after training (§4).

# %% [markdown]
# ## 6. What the exact penalty costs
#
# `benchmarks/bench_margin.py` times one optimiser step at the paper's size (batch 64 × context 256,
# $d=128$, Shakespeare characters) with and without the penalty, all modes interleaved in one
# process. Its last saved measurement (this book's build machine, shared with other jobs, one
# intra-op thread):

# %%
bench = saved_results("bench_margin_cpu")
if bench:
    print(f"{bench['date']}, {bench['cpus']} CPUs, {bench['args']['threads']} thread(s), "
          f"median of {bench['args']['repeats']} steps")
    for mode, label in (("ce", "CE only"), ("exact", "exact penalty, all positions (Sylvester)"),
                        ("k16", "penalty on k=16 positions per sequence"),
                        ("direct16", "k=16, d x d covariance path (no Sylvester)")):
        print(f"  {label:44s} {bench['ratios'][mode]:5.2f} x CE step, "
              f"peak {bench['results'][mode]['peak_mib']:5.0f} MiB")

# %% [markdown]
# The compact Sylvester path keeps the exact penalty within about twice the cost of a CE step: per
# position it factorises an $r_t\times r_t$ matrix ($r_t$ = distinct characters before $t$, about 30
# here) instead of a $128\times128$ one, and its backward reuses $(I-M)^{-\top}$ without storing any
# per-position matrix. Subsampling 16 positions per sequence makes the penalty almost free and is
# unbiased (checked by enumeration in `tests/torch/test_prior.py`).

# %%
full_ce, full_m = saved_results("barrier_ce_full"), saved_results("barrier_margin_full")
if full_ce and full_m:
    print(f"saved full run: {full_ce['hardware']}, {full_ce['date']}, data {full_ce['data']['name']}")
    for name, res in (("ce", full_ce), ("margin", full_m)):
        print(f"  {name:7s} train {res['final_train_bpc']:.3f}  val {res['final_val_bpc']:.3f}")
else:
    print("no full (paper-sized) run saved under book/results/ yet: run this notebook with FULL=1 on a GPU")
