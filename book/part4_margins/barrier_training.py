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
# **What runs here.** The library does the work: `nextword.torch.models.gpt.SmallGPT`,
# `nextword.torch.barrier.prior` (the penalty, three exact evaluation paths), `nextword.torch.training.loop`
# (AdamW, cosine schedule, clipping, exact resume from checkpoints). The same experiment is
# available from the shell as `nextword train ...`.
#
# Three sizes of the experiment (their configurations are printed below, not typed here):
#
# * **default** (§3): a miniature that runs in well under a minute per arm and shows the mechanics;
# * **saved run, `cpu` tier** (§4): the paper's model ($d=128$, 4 heads, 2 blocks, $T=256$, batch 64,
#   AdamW) on tiny Shakespeare with a schedule that a shared 2-core CPU affords, trained once by
#   `make results` and read here from `book/results/barrier_ce` and `barrier_margin`, with the command
#   and commit that produced them — the conclusions about trained models are drawn from this run;
# * **`FULL=1`**: §7.1's own configuration on WikiText-2, a GPU job, not run for this book.

# %%
import os

import matplotlib.pyplot as plt
import numpy as np
import sympy as sp
import torch

from nextword.booktools.display import produced
from nextword.booktools.plotting import use_book_style
from nextword.provenance import load_curves, load_result
from nextword.theory.barrier import matrix_margins
from nextword.torch.runs.book import (
    PAPER_FIG74, PAPER_FIG75, PAPER_SETUP, PAPER_TABLE1, all_saved, experiment_config, runs_dir,
)
from nextword.torch.training.loop import train_or_load
from nextword.torch.barrier.prior import METHODS, covariances, margin_loss, margin_loss_tokens
from nextword.torch.runs.sweep import lambda_dir

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
# ## 3. Training both arms: the default run (mechanics)
#
# Both runs use the same configuration and seed; only $\lambda_m$ differs ($0$ vs. $0.05$). The GPT
# is initialised identically in both (the prior has its own generator). Runs are cached in a
# temporary directory so that the next two notebooks reuse them. This miniature shows how the
# experiment works; it is far too small to say anything about trained models (§4 does that).

# %%
cfg_ce = experiment_config(FULL, lambda_margin=0.0)
cfg_m = experiment_config(FULL, lambda_margin=0.05)
root = runs_dir(FULL)
res_ce = train_or_load(cfg_ce, lambda_dir(root, 0.0), progress=False)   # the CLI shows tqdm bars
res_m = train_or_load(cfg_m, lambda_dir(root, 0.05), progress=False)
c = cfg_ce.model
print(f"default run: d_model={c.d_model}, num_heads={c.num_heads}, num_layers={c.num_layers}, T={c.max_len}, "
      f"batch {cfg_ce.batch_size}, {cfg_ce.steps} steps, lr {cfg_ce.lr:g}, margin on k={cfg_ce.margin_positions} "
      f"positions per sequence, corpus {cfg_ce.data} ({cfg_ce.max_chars or 'all'} characters)")

# %%
counts = res_ce["model_params"]
print(f"data: {res_ce['data']['name']}, |V| = {res_ce['data']['vocab_size']}, "
      f"{res_ce['data']['train_chars']:,} train chars; steps: {res_ce['steps']}")
print(f"parameters: transformer {counts['transformer']:,}, token embedding {counts['embedding']:,}, "
      f"positions {counts['positions']:,}   (paper: {PAPER_SETUP['params']})")


def print_arms(runs: dict, trained_here: bool = False) -> None:
    """Final train / validation BPC of each arm beside the paper's (Fig. 7.4's table); the BPC of a run
    trained on this page go through produced() (saved runs are read from files: exact text)."""
    fmt = (lambda x, f: produced(x, f)) if trained_here else (lambda x, f: format(x, f))  # noqa: E731
    print(f"{'arm':8s} {'train BPC':>10s} {'val BPC':>8s} {'paper train':>12s} {'paper val':>10s}")
    for arm, r in runs.items():
        print(f"{arm:8s} {fmt(r['final_train_bpc'], '10.3f')} {fmt(r['final_val_bpc'], '8.3f')} "
              f"{PAPER_FIG74[arm]['train_bpc']:12.3f} {PAPER_FIG74[arm]['val_bpc']:10.3f}")


print_arms({"ce": res_ce, "margin": res_m}, trained_here=True)
gap = res_m["final_val_bpc"] - res_ce["final_val_bpc"]
print(f"validation gap (margin - CE): {produced(gap, '+.3f')} BPC   (paper: "
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
# **Figure (default run, mechanics).** (a, b) Training and validation bits per character of the two
# arms; (c) the margin penalty during training. In this miniature the BPC curves lie on top of each
# other, and the penalty starts near zero (small embeddings, small $W$) and goes **negative**, i.e.
# $\lvert\det(I-\Sigma_tA)\rvert>1$. Whether both survive real training is the question of §4.
#
# ## 4. The trained pair: saved run of the `cpu` tier (Fig. 7.4)
#
# `make results` trains both arms once (`nextword results run barrier_ce`, `... barrier_margin`)
# and saves their learning curves, final numbers, prior diagnostics and weights under `book/results/`.
# Once saved, the cells print where each came from; everything they show is read from those files, so
# it is the same on every machine.

# %%
SAVED = all_saved("barrier_ce", "barrier_margin")

# %%
if SAVED:
    saved = {arm: load_result(f"barrier_{arm}") for arm in ("ce", "margin")}
    curves = {arm: load_curves(f"barrier_{arm}") for arm in ("ce", "margin")}
    for arm, s_ in saved.items():
        m = s_["machine"]
        print(f"saved run ({arm}): produced by `{s_['command']}` at `{s_['commit'][:12]}` on {s_['created'][:10]} "
              f"({m['cpu']}, {m['cpus']} CPUs, torch {m['torch']}, {m['torch_threads']} thread)")
        print(f"    {s_['data']['steps']} steps, wall time {s_['wall_time_s'] / 60:.0f} min "
              f"({s_['data']['steps_per_second']:.2f} steps/s on a machine shared with other jobs)")
    conf, paper_like = saved["ce"]["config"], PAPER_SETUP
    cm = conf["model"]
    print(f"cpu tier: d_model={cm['d_model']}, num_heads={cm['num_heads']}, num_layers={cm['num_layers']}, "
          f"T={cm['max_len']}, batch {conf['batch_size']}, {conf['epochs']} epochs = {saved['ce']['data']['total_steps']} steps, lr {conf['lr']:g} (cosine), "
          f"weight decay {conf['weight_decay']:g}, clip {conf['grad_clip']:g}, margin on k={conf['margin_positions']} "
          f"positions per sequence, data {conf['data']}")
    print(f"paper (§7.1): d_model={paper_like['d_model']}, num_heads={paper_like['n_head']}, "
          f"num_layers={paper_like['n_layer']}, T={paper_like['block_size']}, batch {paper_like['batch_size']}, "
          f"{paper_like['epochs']} epochs, data {paper_like['data']}")
    d_ce, d_m = saved["ce"]["data"], saved["margin"]["data"]
    print(f"|V| = {d_ce['data']['vocab_size']}, {d_ce['data']['train_chars']:,} training characters, "
          f"{d_ce['steps'] / d_ce['steps_per_epoch']:.1f} epochs")
    print_arms({"ce": d_ce, "margin": d_m})
    saved_gap = d_m["final_val_bpc"] - d_ce["final_val_bpc"]
    print(f"validation gap (margin - CE): {saved_gap:+.3f} BPC   (paper: "
          f"{PAPER_FIG74['margin']['val_bpc'] - PAPER_FIG74['ce']['val_bpc']:+.3f})")
    print(f"margin arm at the end: penalty L_margin = {curves['margin']['train_margin'][-1]:+.2f} nats, so "
          f"λ_m·L_margin = {saved['margin']['config']['lambda_margin'] * curves['margin']['train_margin'][-1]:+.2f} "
          f"nats of its training loss {d_m['final_train_loss']:.2f}")
    TARGET_BPC = 2.4                        # what issue #16 asks of the cpu tier's CE arm
    idle_step = load_result("bench_margin_cpu")["data"]["results"]["k16"]["times"]
    print(f"target of the cpu tier: CE arm at <= {TARGET_BPC} validation BPC; reached {d_ce['final_val_bpc']:.2f} "
          f"-> {'met' if d_ce['final_val_bpc'] <= TARGET_BPC else 'NOT met'}")
    print(f"a margin-arm step took {1 / d_m['steps_per_second']:.2f} s here; the benchmark of §7 timed it at "
          f"{min(idle_step):.2f} s on one thread (on a busier machine)")

# %%
if SAVED:
    assert {k: v for k, v in saved["ce"]["config"].items() if k != "lambda_margin"} == \
        {k: v for k, v in saved["margin"]["config"].items() if k != "lambda_margin"}
    assert saved["ce"]["config"]["lambda_margin"] == 0 and saved["margin"]["config"]["lambda_margin"] > 0
    assert d_ce["steps"] == d_ce["total_steps"] and d_m["steps"] == d_m["total_steps"]
    assert all(v == 0.0 for v in curves["ce"]["train_margin"])
    assert curves["margin"]["train_margin"][-1] < curves["margin"]["train_margin"][0]
    paper_gap = PAPER_FIG74["margin"]["val_bpc"] - PAPER_FIG74["ce"]["val_bpc"]
    assert saved_gap > 3 * paper_gap        # the penalty costs several times the paper's gap here

# %%
if SAVED:
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6))
    for arm, label, color in (("ce", "CE only", "C0"), ("margin", r"CE + margin ($\lambda_m=0.05$)", "C2")):
        c_ = curves[arm]
        axes[0].plot(c_["epoch"], c_["train_bpc"], "o-", color=color, label=label)
        axes[1].plot(c_["epoch"], c_["val_bpc"], "o-", color=color, label=label)
    axes[2].plot(curves["margin"]["epoch"], curves["margin"]["train_margin"], "o-", color="C2")
    axes[0].set(title="(a) training BPC (mean over each period)", xlabel="epoch", ylabel="bits / char")
    axes[1].set(title="(b) validation BPC", xlabel="epoch")
    axes[2].set(title=r"(c) $\mathcal{L}_{\rm margin}$ in the margin arm", xlabel="epoch", ylabel="nats")
    axes[0].legend()
    fig.suptitle("saved run, cpu tier", y=1.02)
    plt.tight_layout()
    plt.show()

# %% [markdown]
# **Figure (cf. Fig. 7.4), saved run.** (a, b) Training and validation bits per character of the two
# trained arms; (c) the margin penalty during training.
#
# **What the saved run shows.** The cross-entropy arm meets the target set for this tier (printed
# above): 20 epochs of tiny Shakespeare with the paper's model bring it to a validation BPC of the same
# order as the paper's on WikiText-2 — a different corpus, so only the order is comparable — and the
# train/validation gap shows it has started to overfit a 1 MB corpus. The margin arm is a different
# story: it is worse by several times the paper's gap (both printed above; the size of the gap is
# asserted), and its penalty keeps falling for as long as the optimiser moves (panel c: it flattens only
# in the last epochs, where the cosine schedule takes the learning rate to zero), to the value printed
# above, large enough to be a visible share of the training loss. Nothing bounds
# $\mathcal L_{\rm margin}=-\operatorname{mean}_t\log\lvert\det(I-\Sigma_tA)\rvert$ from below once the coupling is
# negative: making $\lvert\det\rvert$ larger always lowers it, and §5 shows that this is the direction training
# takes. With $\lambda_m=0.05$ the optimiser buys penalty with predictive quality.
#
# ## 5. Which side of the barrier did training go to?
#
# A negative penalty means the determinant moved *away from 1 upwards*, not away from 0. The prior's
# diagnostics (`prior_diagnostics`, computed on 64 validation windows at the end of each run) make
# this precise: $\operatorname{tr}(\Sigma_tA)$, whose sign is the sign of the coupling in the $d=1$
# picture of §3.4, and the share of positions with $\lvert\det\rvert>1$.

# %%
diag = {"default ce": res_ce["diagnostics"], "default margin": res_m["diagnostics"]}
if SAVED:
    diag.update({"saved ce": d_ce["diagnostics"], "saved margin": d_m["diagnostics"]})
for label, dg in diag.items():  # the default runs are trained on this page; the saved ones read from files
    fmt = (lambda x, f: produced(x, f)) if label.startswith("default") else (lambda x, f: format(x, f))  # noqa: E731
    print(f"{label:15s} mean tr(Sigma_t A) = {fmt(dg['trace_sigma_A'], '+.4f')}   share |det| > 1 = "
          f"{fmt(dg['frac_det_above_one'], '.3f')}   penalty = {fmt(dg['margin'], '+.4f')}   "
          f"min log|det| = {fmt(dg['min_logabsdet'], '+.4f')}")
for label in ("default margin", "saved margin")[: 1 + SAVED]:
    dm = diag[label]
    assert dm["trace_sigma_A"] < 0 and dm["frac_det_above_one"] > 0.9 and dm["min_logabsdet"] >= -1e-6

# %% [markdown]
# The trained prior sits in the **negative-coupling regime** (asserted above for the miniature and,
# once saved, for the trained `cpu`-tier model): $\operatorname{tr}(\Sigma_tA)<0$ and
# $\lvert\det(I-\Sigma_tA)\rvert>1$ at essentially every position, so $\log\lvert\det\rvert$ never gets close to $-\infty$ and the
# barrier at $\det=0$ plays no role. This is what the derivation of §1 predicts: with the quadratic
# residual term dropped, nothing in $\mathcal L$ favours $a>0$, and the penalty's own gradient points
# to $a<0$ from the very first step. §3.4 says the §7 experiments focus on the $a>0$ (barrier) regime;
# in our runs the penalty acts instead as the *dispersion-promoting* correction of Fig. 3.3(c–d). We
# record this in `book/ERRATA.md`.
#
# ### The same findings with a second seed
#
# Everything in §4 and §5 about the trained pair comes from one pair of runs (seed 0: initialisation and
# batch order). `make results` trains the pair again with seed 1
# (`nextword results run barrier_ce_seed1`, `... barrier_margin_seed1`; the numbers only, no
# weights) and the cell below checks the same statements on it.

# %%
SAVED_SEED1 = SAVED and all_saved("barrier_ce_seed1", "barrier_margin_seed1")

# %%
if SAVED_SEED1:
    pair1 = {"ce": load_result("barrier_ce_seed1"), "margin": load_result("barrier_margin_seed1")}
    for arm, s_ in pair1.items():
        print(f"saved run ({arm}, seed {s_['config']['seed']}): produced by `{s_['command']}` at "
              f"`{s_['commit'][:12]}` on {s_['created'][:10]}, wall time {s_['wall_time_s'] / 60:.0f} min")
    d1 = {arm: s_["data"] for arm, s_ in pair1.items()}
    print_arms(d1)
    pen1 = load_curves("barrier_margin_seed1")["train_margin"]
    findings = {
        seed: {
            "CE arm at <= 2.4 validation BPC": dd["ce"]["final_val_bpc"] <= TARGET_BPC,
            "margin arm behind by > 3 x the paper's gap": dd["margin"]["final_val_bpc"] - dd["ce"]["final_val_bpc"]
            > 3 * paper_gap,
            "margin arm: tr(Sigma_t A) < 0 and |det| > 1 at > 90% of positions":
                dd["margin"]["diagnostics"]["trace_sigma_A"] < 0 and dd["margin"]["diagnostics"]["frac_det_above_one"] > 0.9,
            "penalty lower at the end than after the first epoch": pen[-1] < pen[0],
        }
        for seed, dd, pen in ((0, {"ce": d_ce, "margin": d_m}, curves["margin"]["train_margin"]), (1, d1, pen1))
    }
    print(f"seed 1: validation gap (margin - CE) {d1['margin']['final_val_bpc'] - d1['ce']['final_val_bpc']:+.3f} BPC; "
          f"final penalty {pen1[-1]:+.2f} nats; margin arm tr(Sigma_t A) = "
          f"{d1['margin']['diagnostics']['trace_sigma_A']:+.1f}, share |det| > 1 = "
          f"{d1['margin']['diagnostics']['frac_det_above_one']:.3f}")
    for claim in findings[0]:
        print(f"{claim}: seed 0 {findings[0][claim]}, seed 1 {findings[1][claim]}")
    assert all(all(f.values()) for f in findings.values()), findings

# %% [markdown]
# Every statement holds for both seeds (asserted). The size of the gap is not a fixed number — it differs
# between the seeds by a third (both printed) — but in both it is several times the paper's, and in both
# the penalty drives the coupling negative. The robustness comparison of
# [robustness_to_noise](robustness_to_noise.ipynb) uses the weights of seed 0 only.
#
# ## 6. Paper vs. here: which differences are expected
#
# * **Absolute BPC**: the tables of §3 (and §4, once saved) print ours beside the paper's; the corpora differ (tiny
#   Shakespeare instead of WikiText-2) and so does the length of training (the `cpu` tier's schedule
#   is printed in §4; the paper trains 20 epochs of WikiText-2).
# * **Gap between the arms**: printed in §4 for the saved run, in §3 for the miniature; the paper's
#   is the difference of its two validation numbers in the same table.
# * **Parameter count**: the stated architecture has $2\cdot(12d^2+13d)+2d$ non-embedding parameters
#   with the usual 4× MLP, not "~150K" (§7.1); the attention projections alone hold $2\cdot4d^2$. The
#   saved run's count, at the paper's $d$:

# %%
if SAVED:
    counts = d_ce["model_params"]
    dd = cm["d_model"]
    print(f"saved run: transformer {counts['transformer']:,} = 2(12d^2 + 13d) + 2d at d = {dd}: "
          f"{counts['transformer'] == 2 * (12 * dd**2 + 13 * dd) + 2 * dd};  token embedding {counts['embedding']:,}, "
          f"positions {counts['positions']:,}   (paper: {PAPER_SETUP['params']})")
    assert counts["transformer"] == 2 * (12 * dd**2 + 13 * dd) + 2 * dd

# %% [markdown]
# ### The paper's §7 numbers, recomputed from its own tables
#
# Every ratio and percentage that §7.2–7.4 print follows from the BPC values in the same place (checked
# below). One quantity does not agree *across* the tables: the cross-entropy-only model. Table 1's
# $\lambda_m=0$ row is that model (same architecture, optimiser and seed, §7.1; only the penalty weight
# differs) and its $\lambda_m=0.05$ row reproduces the margin-only model of Fig. 7.4 exactly, yet its
# clean validation BPC differs from the baseline of Fig. 7.4 and the §7.3 table:

# %%
ce74, m74 = PAPER_FIG74["ce"]["val_bpc"], PAPER_FIG74["margin"]["val_bpc"]
gap74 = m74 - ce74
print(f"Fig. 7.4: gap {gap74:.3f} BPC, {100 * gap74 / ce74:.2f}% of the CE arm   (printed: 0.036, 1.7%)")
assert round(gap74, 3) == 0.036 and round(100 * gap74 / ce74, 1) == 1.7
for arm, row in PAPER_FIG75.items():
    ratio = row["bpc_sigma_0.5"] / row["clean"]
    print(f"§7.3 {arm:6s}: {row['bpc_sigma_0.5']} / {row['clean']} = {ratio:.4f}   (printed {row['degradation']})")
    assert round(ratio, 2) == row["degradation"] and row["clean"] == PAPER_FIG74[arm]["val_bpc"]
for lam_p, bpc_p, bpcs_p, deg_p, *_ in PAPER_TABLE1:
    assert round(bpcs_p / bpc_p, 2) == deg_p, lam_p           # every Deg of Table 1 is BPC_sigma / BPC
table1 = {r[0]: r for r in PAPER_TABLE1}
base, best = table1[0.0], table1[0.02]
shares = {"noisy gain at 0.02": 1 - best[2] / base[2], "clean cost at 0.02": best[1] / base[1] - 1,
          "clean range": table1[0.2][1] / base[1] - 1, "Deg gain at 0.02": 1 - best[3] / base[3]}
print("Table 1 percentages:", {k: f"{100 * v:.1f}%" for k, v in shares.items()}, "  (printed: 8.9, 2.2, 3, 11)")
assert [round(100 * v) for v in shares.values()] == [9, 2, 3, 11]
print(f"CE-only clean validation BPC: Fig. 7.4 / §7.3 table {ce74}, Table 1 (lambda_m = 0) {base[1]}; "
      f"margin-only (lambda_m = 0.05): {m74} and {table1[0.05][1]}")
assert table1[0.05][1] == m74 and base[1] != ce74
print(f"against the Fig. 7.4 baseline the clean cost at lambda_m = 0.02 is {100 * (best[1] / ce74 - 1):.1f}% "
      f"(not {100 * shares['clean cost at 0.02']:.1f}%), and the whole path spans "
      f"{100 * (table1[0.2][1] / ce74 - 1):.1f}% (not {100 * shares['clean range']:.1f}%)")

# %% [markdown]
# So the baseline of §7.4 is not the baseline of §7.2–7.3 (2.109 against 2.122 BPC), although the
# margin arm is the same run in both. Either the $\lambda_m=0$ run of the sweep differs from the CE-only run
# in something §7.1 does not state, or one of the two numbers is misprinted; the percentages of §7.4 are
# computed against its own row, so they are internally consistent. The ledger records it.

# %% [markdown]
# * **Sign of the coupling**: not a matter of scale — it follows from the gradient at $W=0$ (§1–2)
#   and is what the diagnostics show after training (§5).

# %% [markdown]
# ## 7. What the exact penalty costs
#
# `benchmarks/bench_margin.py` times one optimiser step at the paper's size (batch 64 × context 256,
# $d=128$, Shakespeare characters) with and without the penalty, all modes interleaved in one
# process. Its last saved measurement (this book's build machine, shared with other jobs, one
# intra-op thread):

# %%
bench_run = load_result("bench_margin_cpu")
bench = bench_run["data"]
if bench:
    print(f"`{bench_run['command']}` at commit {bench_run['commit'][:10]} on {bench_run['machine']['cpu']}")
    print(f"{bench['date']}, {bench['cpus']} CPUs, {bench['args']['threads']} thread(s), "
          f"median of {bench['args']['repeats']} steps")
    for mode, label in (("ce", "CE only"), ("exact", "exact penalty, all positions (Sylvester)"),
                        ("k16", "penalty on k=16 positions per sequence"),
                        ("direct16", "k=16, d x d covariance path (no Sylvester)")):
        print(f"  {label:44s} {bench['ratios'][mode]:5.2f} x CE step, "
              f"peak {bench['results'][mode]['peak_mib']:5.0f} MiB")

# %% [markdown]
# The compact Sylvester path keeps the exact penalty within about twice the cost of a CE step: per
# position it factorises an $r_t\times r_t$ matrix ($r_t$ = distinct characters before $t$, at most
# $\lvert V\rvert$) instead of a $128\times128$ one, and its backward reuses $(I-M)^{-\top}$ without storing any
# per-position matrix. Subsampling 16 positions per sequence makes the penalty a fraction of a CE step
# (the third line; the measurement was taken on a heavily shared machine, so the ratios carry its noise)
# and is unbiased (checked by enumeration in `tests/test_torch_prior.py`). The result records the command
# and commit that produced it (`book/results/bench_margin_cpu/result.json`).

# %% [markdown]
# ## 8. The same experiment on a GPU, at the paper's preset
#
# Everything above was trained on a 2-core CPU. The `paper` preset — §7.1's model *and* optimiser
# (lr $10^{-3}$) with the **exact** penalty on all $T-1$ positions — was trained on a lent NVIDIA H200
# by `nextword gpu-check` (the command, GPU, driver, torch and CUDA versions are in each
# saved file; see Reproducibility). The corpus is still tiny Shakespeare (§7 uses WikiText-2), and the
# schedule is the paper's 20 epochs, which on this smaller corpus is 1220 steps. Two seeds, plus seed 0
# trained a second time on a second call. Which device produced which number is printed with it.

# %%
gpu_pair = {
    "seed 0": {arm: load_result(f"gpu_barrier_{arm}") for arm in ("ce", "margin")},
    "seed 0, again": {arm: load_result(f"gpu_barrier_{arm}_rerun") for arm in ("ce", "margin")},
    "seed 1": {arm: load_result(f"gpu_barrier_{arm}_seed1") for arm in ("ce", "margin")},
}
print(f"{'run':14s} {'device':12s} {'CE arm':>7s} {'margin':>7s} {'gap':>6s} {'tr(Sigma A), margin':>20s}")
for run, arms in gpu_pair.items():
    ce, mg = (arms[a]["data"] for a in ("ce", "margin"))
    gap = mg["final_val_bpc"] - ce["final_val_bpc"]
    print(f"{run:14s} {mg['gpu']['name']:12s} {ce['final_val_bpc']:7.3f} {mg['final_val_bpc']:7.3f} "
          f"{gap:6.3f} {mg['diagnostics']['trace_sigma_A']:20.1f}")
print(f"(validation bits per character after {ce['steps']} steps; the CPU pair of §4, lr 3e-3, k = 16: "
      f"{load_result('barrier_ce')['data']['final_val_bpc']:.3f} and "
      f"{load_result('barrier_margin')['data']['final_val_bpc']:.3f})")

# %% [markdown]
# The finding of §5 does not depend on the device, the learning rate or the subsampled penalty: with the
# exact penalty and the paper's optimiser the coupling $\operatorname{tr}(\Sigma_tA)$ of the margin arm ends
# far below zero in both seeds, so the penalty was lowered by dispersing attention, not by engaging the
# barrier. The margin arm again pays in clean bits per character, about three times the paper's gap of
# 0.036. At lr $10^{-3}$ neither arm leaves the bigram-like plateau as far as the CPU tier's lr $3\cdot10^{-3}$
# does in the same 1220 steps. Training on the GPU is not bitwise reproducible: seed 0 trained twice gives
# numbers that differ in the third decimal (the order of floating-point additions on the GPU varies between
# runs), which is why every claim below is asserted with a tolerance, on both seeds.

# %%
for run, arms in gpu_pair.items():
    ce, mg = (arms[a]["data"] for a in ("ce", "margin"))
    assert ce["steps"] == mg["steps"] == 1220 and mg["gpu"]["name"].startswith("NVIDIA")
    assert mg["final_val_bpc"] - ce["final_val_bpc"] > 2.5 * 0.036, run    # about three times the paper's gap
    assert ce["final_val_bpc"] > load_result("barrier_ce")["data"]["final_val_bpc"] + 0.2, run  # lr 1e-3: slower
    assert mg["diagnostics"]["trace_sigma_A"] < -10, run                   # coupling driven negative
    assert abs(ce["diagnostics"]["trace_sigma_A"]) < 0.1, run              # the CE arm's prior stays near W = 0
rerun_gap = max(abs(gpu_pair["seed 0"][a]["data"]["final_val_bpc"] - gpu_pair["seed 0, again"][a]["data"]["final_val_bpc"])
                for a in ("ce", "margin"))
assert 0 < rerun_gap < 0.02
print(f"seed 0 trained twice on the GPU: the final validation BPC differ by at most {rerun_gap:.4f}")

# %% [markdown]
# **What a GPU step costs.** Optimiser steps per second at the paper's size (batch 64, context 256,
# $d=128$, 4 heads, 2 layers) on the H200, for the CE step, the exact-penalty step and the $k=16$ step
# of the CPU tier, measured by the same command (each the median of 30 timed steps):

# %%
gpu_speed = load_result("gpu_check")["data"]["speed"]
cpu_speed = load_result("gpu_check_cpu_speed")["data"]["speed"]
print(f"{'step':14s} {'GPU (H200)':>11s} {'CPU, 2 cores':>13s} {'ratio':>6s}")
for step in ("ce", "margin_exact", "margin_k16"):
    print(f"{step:14s} {gpu_speed[step]:11.1f} {cpu_speed[step]:13.2f} {gpu_speed[step] / cpu_speed[step]:6.0f}")
assert gpu_speed["shape"] == {"B": 64, "T": 256, "d": 128, "heads": 4, "layers": 2}
assert gpu_speed["margin_exact"] < gpu_speed["margin_k16"] < gpu_speed["ce"]
parity = load_result("gpu_check")["data"]["parity"]
assert parity["parity"] and parity["amp_bf16"]["finite"]
print(f"CPU vs CUDA, float32, quick config: max |difference of validation BPC| = "
      f"{parity['max_abs_val_bpc_diff']:.1e} (tolerance {parity['tolerance_bpc']:g}); "
      f"bf16 autocast ends {parity['amp_bf16']['diff']:+.4f} BPC from float32")
