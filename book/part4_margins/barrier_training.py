# %% [markdown]
# # 4.7 Barrier training: does a margin penalty make a model more stable, and what does it cost?
#
# **The question.** Does adding the paper's margin penalty to ordinary cross-entropy training keep
# a language model away from unstable configurations — and what does it cost in prediction quality?
#
# Pages [4.2 The scalar margin](02_scalar_margin.ipynb) and
# [4.3 The matrix margin](03_matrix_margin.ipynb) found a hidden term in the probability that a
# causal attention layer gives its embeddings: $-\log\lvert\det(I-\Sigma_tA)\rvert$. It grows without
# bound as the layer approaches a degenerate configuration, one where the layer's map stops being
# invertible and small perturbations can have disproportionate effects. The paper's §7 adds this
# term to training as a {term}`margin penalty`, expecting a model that keeps a safety margin from
# that boundary at a small price in accuracy.
#
# This page trains the two models — with and without the penalty — and looks at where training
# actually took them. The finding: the penalty's own gradient pushes the prior's coupling
# **negative**, to the side where there is no degenerate boundary at all. The margin grows without
# limit, the barrier never engages, and the model pays several times the paper's price in bits per
# character. Whether it is more robust to noise anyway is the question of the next page,
# [4.8 Robustness to embedding noise](robustness_to_noise.ipynb).
#
# ```{admonition} Learning goals
# :class: tip
# After this page you can
# - compute the log-barrier penalty $-\log\lvert m\rvert$ of a margin $m$ by hand, and say what it
#   does as $m\to0$ and as $m$ grows past 1;
# - explain, from the penalty's slope at $W=0$, why gradient descent pushes the coupling negative;
# - read a trained prior's diagnostics (the sign of $\operatorname{tr}(\Sigma_tA)$, the share of
#   positions with $\lvert\det\rvert>1$) and decide whether the barrier engaged;
# - say what the penalty cost here and in the paper, and which differences between the two are
#   expected.
# ```
#
# **Builds on:** [4.2 The scalar margin](02_scalar_margin.ipynb) (the margin $m_t=1-a\,\mathrm{Var}_t$
# and the two signs of the coupling $a$) · [4.3 The matrix margin](03_matrix_margin.ipynb)
# ($\det(I-\Sigma_tA)$, Theorem 1 and the log-barrier of Corollary 3.1) · cross-entropy training
# of a next-character model and gradient descent. **Reading time:** about 35 minutes.
#
# *Source: Agarwal et al., "Support Tokens, Stability Margins, and a New Foundation for Robust
# LLMs", §7.1–7.2 (Fig. 7.4 and its table), with §3.3–3.4 (Eqs. 9, 12, Fig. 3.3), Theorem 1
# (Eqs. 13–15), Eqs. (21), (24) and (25); the paper checks also read §7.3's table and Table 1.*

# %%
import os

import matplotlib.pyplot as plt
import numpy as np
import sympy as sp
import torch
from IPython.display import Math, display

from nextword.booktools.display import produced
from nextword.booktools.plotting import use_book_style
from nextword.booktools.schematics.barrier import draw_barrier_landscape, log_barrier
from nextword.provenance import load_curves, load_result
from nextword.theory.barrier import matrix_margins, scalar_margin
from nextword.torch.barrier.prior import METHODS, covariances, margin_loss, margin_loss_tokens
from nextword.torch.runs.book import (
    PAPER_FIG74, PAPER_FIG75, PAPER_SETUP, PAPER_TABLE1, all_saved, experiment_config, runs_dir,
)
from nextword.torch.barrier.sweep import lambda_dir
from nextword.torch.barrier.train import train_or_load

FULL = os.environ.get("FULL", "0") == "1"
torch.set_num_threads(1)          # small tensors: one thread is fastest on a shared CPU
use_book_style()

# %% [markdown]
# ## A tiny example by hand
#
# One dimension and three tokens, as on [4.2 The scalar margin](02_scalar_margin.ipynb): scalar embeddings
# $x_1=0$, $x_2=2$, $x_3=1$. Position 3 attends to the two earlier tokens with logits
# $a\,x_3x_s=(0,\,2a)$, where $a$ is the **coupling** (the product of the query and key weights).
# Recall from that page: the margin of position 3 is $m=1-a\,\mathrm{Var}_3$, with $\mathrm{Var}_3$ the
# attention-weighted variance of $x_1,x_2$. The penalty is $-\log\lvert m\rvert$.
#
# Three couplings, with pencil and paper (for two points 0 and 2 with weights $1-p$ and $p$, the
# variance is $4p(1-p)$):
#
# | coupling $a$ | weights on $(x_1,x_2)$ | $\mathrm{Var}_3$ | margin $m=1-a\,\mathrm{Var}_3$ | penalty $-\log m$ |
# |---|---|---|---|---|
# | $0$ | $(0.5,\ 0.5)$ | $1$ | $1$ | $0$ |
# | $+0.5$ | $(1,e)/(1+e)=(0.269,\ 0.731)$ | $0.786$ | $0.607$ | $+0.50$ |
# | $-0.5$ | $(e,1)/(1+e)=(0.731,\ 0.269)$ | $0.786$ | $1.393$ | $-0.33$ |
#
# The same numbers from a loop, checked against the library's exact margin (`scalar_margin`):

# %%
embeddings = np.array([0.0, 2.0, 1.0])          # x_1, x_2, x_3
for coupling in (0.0, 0.5, -0.5):
    logits = coupling * embeddings[2] * embeddings[:2]           # position 3 looks at 1 and 2
    weights = np.exp(logits) / np.exp(logits).sum()
    mean = weights @ embeddings[:2]
    variance = weights @ (embeddings[:2] - mean) ** 2
    margin = 1 - coupling * variance
    penalty = float(log_barrier(margin)) + 0.0          # + 0.0 turns -log 1 = -0.0 into 0.0
    print(f"a = {coupling:+.1f}: weights {np.round(weights, 3)}, Var_3 = {variance:.3f}, "
          f"margin = {margin:.3f}, penalty = {penalty:+.2f}")
    assert abs(margin - scalar_margin(embeddings, a=coupling)[2]) < 1e-12
    assert (penalty > 0) == (coupling > 0)   # m < 1 on the a > 0 side, m > 1 on the a < 0 side

# %% [markdown]
# The penalty is lower on the negative side. Its slope at $a=0$ says which way training goes: the
# weights change with $a$ too, but in $m=1-a\,\mathrm{Var}_3$ that change is multiplied by $a=0$, so
# at $a=0$ only $\mathrm{Var}_3$ counts,
#
# $$\frac{d}{da}\big[-\log(1-a\,\mathrm{Var}_3)\big]\Big|_{a=0}=\mathrm{Var}_3=1>0 .$$
#
# A gradient-descent step $a\leftarrow a-\eta\cdot\text{slope}$ therefore makes $a$ negative: with
# step size $\eta=0.5$ it lands exactly on the third row, where the margin is $1.393$, above 1 and
# *away* from the wall at $m=0$. A finite-difference check of the slope:

# %%
def penalty_at(coupling):
    """-log|m_3| of the tiny example, with the exact margin (weights moving with a)."""
    return float(log_barrier(scalar_margin(embeddings, a=coupling)[2]))


step = 1e-6
slope = (penalty_at(step) - penalty_at(-step)) / (2 * step)
print(f"slope of the penalty at a = 0: {slope:.4f} (= Var_3 = 1)")
assert abs(slope - 1.0) < 1e-6
after_one_step = 0.0 - 0.5 * slope
print(f"one step with eta = 0.5: a = {after_one_step:+.3f}, "
      f"penalty {penalty_at(after_one_step):+.2f}")
assert penalty_at(after_one_step) < penalty_at(0.0) == 0.0

# %% [markdown]
# Nothing in the penalty pulls $a$ back up: a positive coupling — the only one that can bring the
# margin towards 0 — costs *more* penalty, not less. The barrier was meant to keep training away
# from $m=0$; here training never goes near it in the first place.
#
# ## The landscape of the barrier
#
# Put the penalty of one position, $-\log\lvert m\rvert$, against the margin $m$ (in $d$ dimensions
# $m$ is $\lvert\det(I-\Sigma_tA)\rvert$). Two facts are enough to predict what training will do:
#
# * as $m\to0$ the penalty goes to $+\infty$ — this is the **barrier**, a wall that a descent
#   method cannot cross;
# * its slope, $-1/m$, is negative for every $m>0$: lowering the penalty *always* means making $m$
#   larger, and past $m=1$ it keeps falling, with no floor, as $m$ grows.
#
# A positive coupling puts the margin below 1, near the wall; a negative one puts it above 1, where
# the "barrier" is only a downhill slope. Figure 4.7.1 draws it, with the three couplings of the
# tiny example marked. First the penalty at margins a factor of 10 apart:

# %%
for margin in (0.01, 0.1, 1.0, 10.0, 100.0):
    print(f"m = {margin:6.2f}: penalty -log m = {float(log_barrier(margin)) + 0.0:+.2f} nats, "
          f"slope -1/m = {-1 / margin:+.2f}")
assert abs(log_barrier(0.1) + log_barrier(10.0)) < 1e-12   # as far above 0 as below it
assert log_barrier(0.1) > 0

# %%
tiny_marks = {f"a = {c:+.1f}": float(np.log(scalar_margin(embeddings, a=c)[2]))
              for c in (0.5, -0.5)}
draw_barrier_landscape(reached=tiny_marks, marks_title="the tiny example's two couplings")
plt.tight_layout()
plt.show()

# %% [markdown]
# **Figure 4.7.1** (schematic, drawn from $-\log m$). (a) The penalty against the margin $m$. It
# rises without bound as $m\to0$ (the wall, left) and is 0 at $m=1$, the value of an untrained
# prior. The orange band is where a positive coupling puts the margin, the green band where a
# negative one puts it. The arrow is the direction gradient descent moves $m$: to the right, on both sides.
# (b) The same penalty against $\log\lvert m\rvert$, where it is a straight line of slope $-1$. The
# wall is at $\log\lvert m\rvert\to-\infty$, off the left edge. The tiny example's two couplings
# sit on either side of 0: $a=+0.5$ on the wall's side, $a=-0.5$ on the downhill side.

# %% [markdown]
# ## The penalty of §7, for a real model
#
# §7.1 trains a small causal GPT on characters with the usual cross-entropy loss
# $\mathcal L_{\rm CE}$. Beside it sits a separate {term}`embedding prior`: one strict-causal
# attention layer, with a learnable $d\times d$ matrix $W$, that reads the GPT's token embeddings.
# The prior contributes the penalty, weighted by $\lambda_m$:
#
# $$\mathcal L = \mathcal L_{\rm CE} + \lambda_m\,\mathcal L_{\rm margin},\qquad
#   \mathcal L_{\rm margin} = \operatorname*{mean}_{t\ge 1}\big[-\log\lvert\det(I_d-\Sigma_tW^\top)\rvert\big].$$
#
# This is the log-Jacobian term of Eq. (24) with the quadratic residual term dropped (§7.1). Quality
# is measured in {term}`bits per character` (BPC), the cross-entropy divided by $\ln 2$. The
# comparison of Fig. 7.4 is "same architecture, same optimiser, same seed; with or without the
# penalty", with $\lambda_m=0.05$.
#
# **Which matrix is $A$?** The prior's logits are $\ell_{ts}=x_tWx_s^\top$ (rows $x_t$, as in
# Chapter 6). In the paper's column notation $\ell_{ts}=q_t^\top k_s=x_t^\top W_Q^\top W_Kx_s$, so
# $W=W_Q^\top W_K$, and the matrix of Theorem 1 is $A=W_K^\top W_Q=W^\top$. The penalty
# $-\log\lvert\det(I-\Sigma_tW^\top)\rvert$ of §7.1 is exactly the $-\log\lvert\det(I-\Sigma_tA)\rvert$
# of Corollary 3.1.
#
# **Which way does its gradient push?** The tiny example's slope, in symbols: sympy differentiates
# the scalar penalty $-\log(1-a\,V_t)$ (Eq. 21) with respect to $a$, holding the variance fixed.

# %%
a, var = sp.symbols("a V_t", real=True)
penalty = -sp.log(1 - a * var)
penalty_slope = sp.simplify(sp.diff(penalty, a))
display(Math(r"\frac{\partial}{\partial a}\big[-\log(1-aV_t)\big] = " + sp.latex(penalty_slope)
             + r",\qquad \text{at } a=0:\ " + sp.latex(penalty_slope.subs(a, 0))))
assert sp.simplify(penalty_slope.subs(a, 0) - var) == 0

# %% [markdown]
# At $a=0$ the slope is $\mathrm{Var}_t>0$, so a gradient step *decreases* $a$: the penalty, on its
# own, pushes the coupling towards $a<0$. That is the regime of Fig. 3.3(c–d), in which the margin
# is $1+\lvert a\rvert\mathrm{Var}_t>1$ and there is no degeneracy boundary.
#
# The matrix version holds too. At $W=0$ the attention is uniform, and the change of $\Sigma_t$ with
# $W$ is multiplied by $\partial\mathcal L/\partial\Sigma_t=(I-\Sigma_tW^\top)^{-\top}W=0$. So
#
# $$\frac{\partial\mathcal L_{\rm margin}}{\partial W}\Big|_{W=0}=\operatorname{mean}_t\Sigma_t\succeq0,$$
#
# a positive semi-definite matrix: the first step lowers $\operatorname{tr}(\Sigma_tA)$, the
# matrix counterpart of $a\,\mathrm{Var}_t$. Autograd agrees, on random embeddings ($\lvert V\rvert=9$
# characters, $d=6$, one sequence of 12):

# %%
generator = torch.Generator().manual_seed(0)
vocab_size, d, batch, length = 9, 6, 3, 12
embedding_table = torch.randn(vocab_size, d, generator=generator, dtype=torch.float64)
W_random = 0.3 * torch.randn(d, d, generator=generator, dtype=torch.float64)
tokens = torch.randint(0, vocab_size, (batch, length), generator=generator)

W_zero = torch.zeros(d, d, dtype=torch.float64, requires_grad=True)
one_sequence = embedding_table[tokens][:1]                    # (1, T, d)
(grad_at_zero,) = torch.autograd.grad(margin_loss(one_sequence, W_zero), W_zero)
mean_sigma = covariances(one_sequence, W_zero.detach()).mean(dim=(0, 1))
gap_to_sigma = float((grad_at_zero - mean_sigma).abs().max())
print("dL/dW at W = 0 equals mean_t Sigma_t to 1e-12:", gap_to_sigma < 1e-12)
assert torch.allclose(grad_at_zero, mean_sigma, atol=1e-12)
assert torch.linalg.eigvalsh(mean_sigma).min() > -1e-12   # positive semi-definite

# %% [markdown]
# ## Computing the penalty exactly
#
# A $d\times d$ determinant at every position of every sequence is expensive. The library uses an
# identity to make it small. When the prior sees token embeddings $x_s=E[y_s]$ ($E$ is the
# $\lvert V\rvert\times d$ embedding table), $\Sigma_t=E^\top C_tE$ with
# $C_t=\operatorname{diag}\beta_t-\beta_t\beta_t^\top$, where $\beta_t[v]$ is the attention mass on
# vocabulary item $v$.
#
# Sylvester's identity, $\det(I-PQ)=\det(I-QP)$, then gives
# $\det(I_d-E^\top C_tEW^\top)=\det(I_{\lvert V\rvert}-C_tEW^\top E^\top)$. The rows of $C_t$ vanish for
# items absent from the prefix, so only an $r_t\times r_t$ block survives, with $r_t$ the number of
# distinct tokens before $t$. A symbolic check of the identity on a $2\times3$ example:

# %%
P = sp.Matrix(2, 3, sp.symbols("p0:6"))
Q = sp.Matrix(3, 2, sp.symbols("q0:6"))
identity_gap = sp.expand((sp.eye(2) - P * Q).det() - (sp.eye(3) - Q * P).det())
display(Math(r"\det(I_2-PQ)-\det(I_3-QP) = " + sp.latex(identity_gap)))
assert identity_gap == 0

# %% [markdown]
# `margin_loss_tokens` evaluates the penalty four ways: the direct $d\times d$ covariance, the
# second-moment form (Lemma B.2), the compact Sylvester form (the training path, with a hand-written
# backward pass through $(I-M)^{-\top}$) and the literal $\lvert V\rvert\times\lvert V\rvert$ form. In
# float64 they must agree to rounding, values and gradients alike. The numpy implementation of
# Theorem 1 (`nextword.theory.barrier`, with $W_Q=I$, $W_K=W$) gives an independent fifth value.

# %%
values, grads = {}, {}
for method in METHODS:
    E_req, W_req = embedding_table.clone().requires_grad_(), W_random.clone().requires_grad_()
    loss = margin_loss_tokens(tokens, E_req, W_req, method=method)
    values[method] = float(loss.detach())
    grads[method] = torch.autograd.grad(loss, (E_req, W_req))
for method in METHODS:
    print(f"{method:16s} L_margin = {values[method]:.10f}")
for method in METHODS[1:]:
    assert abs(values[method] - values["direct"]) < 1e-11
    for grad, grad_direct in zip(grads[method], grads["direct"]):
        assert torch.allclose(grad, grad_direct, rtol=1e-8, atol=1e-10)

numpy_margin = np.mean([
    -matrix_margins(embedding_table[tokens[b]].numpy(), np.eye(d), W_random.numpy())
    .logabsdet[1:].mean()
    for b in range(batch)
])
print(f"numpy theory module:  L_margin = {numpy_margin:.10f}")
assert abs(numpy_margin - values["direct"]) < 1e-10

# %% [markdown]
# ## The experiment: two models that differ only in the penalty
#
# Both models use the same configuration and seed; only $\lambda_m$ differs ($0$ for the
# cross-entropy-only "CE arm", $0.05$ for the "margin arm"). The GPT is initialised identically in
# both; the prior has its own random generator.
#
# First a miniature that trains here in well under a minute per arm ($d=64$, 200 steps on 200 000
# characters of Shakespeare; the configuration is printed in Reproducibility). It shows the
# mechanics; it is far too small to say anything about trained models. The runs are cached in a
# temporary directory that the next two pages reuse.

# %%
config_ce = experiment_config(FULL, lambda_margin=0.0)
config_margin = experiment_config(FULL, lambda_margin=0.05)
root = runs_dir(FULL)
run_ce = train_or_load(config_ce, lambda_dir(root, 0.0), progress=False)  # the CLI shows bars
run_margin = train_or_load(config_margin, lambda_dir(root, 0.05), progress=False)


def print_arms(runs: dict, trained_here: bool = False, paper: bool = False) -> None:
    """Final train / validation BPC of each arm (and the paper's, Fig. 7.4's table, if ``paper``).

    The BPC of runs trained on this page go through produced(); saved runs are exact text."""
    def show(x, fmt):
        return produced(x, fmt) if trained_here else format(x, fmt)
    header = f"{'arm':8s} {'train BPC':>10s} {'val BPC':>8s}"
    print(header + (f" {'paper train':>12s} {'paper val':>10s}" if paper else ""))
    for arm, r in runs.items():
        row = f"{arm:8s} {show(r['final_train_bpc'], '10.3f')} {show(r['final_val_bpc'], '8.3f')}"
        if paper:
            row += f" {PAPER_FIG74[arm]['train_bpc']:12.3f} {PAPER_FIG74[arm]['val_bpc']:10.3f}"
        print(row)


print_arms({"ce": run_ce, "margin": run_margin}, trained_here=True)
gap = run_margin["final_val_bpc"] - run_ce["final_val_bpc"]
print(f"validation gap (margin - CE): {produced(gap, '+.3f')} BPC")

# %% [markdown]
# What we assert is what this experiment shows, not what the paper reports: both runs finished; the
# arms start from the same weights and see the same batches, so over the first epoch (the first
# evaluation interval, while the penalty is still small) their training BPC agree to within 0.1 BPC;
# the penalty *decreased* during training in the margin arm; and the final validation BPC of the two
# arms differ by less than 0.1 BPC.

# %%
history_ce, history_margin = run_ce["history"], run_margin["history"]
assert run_ce["finished"] and run_margin["finished"]
assert abs(history_ce[0]["train_bpc"] - history_margin[0]["train_bpc"]) < 0.1  # a mean over the first epoch
assert history_margin[-1]["train_margin"] < history_margin[0]["train_margin"] < 0.05
assert abs(gap) < 0.1
assert all(h["train_margin"] == 0.0 for h in history_ce)


# %%
def plot_arms(curves_by_arm: dict, title: str | None = None) -> None:
    """Train BPC, validation BPC and the margin arm's penalty against the epoch, one panel each."""
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6))
    labels = {"ce": ("CE only", "C0"), "margin": (r"CE + margin ($\lambda_m=0.05$)", "C2")}
    for arm, curve in curves_by_arm.items():
        label, color = labels[arm]
        axes[0].plot(curve["epoch"], curve["train_bpc"], "o-", color=color, label=label)
        axes[1].plot(curve["epoch"], curve["val_bpc"], "o-", color=color, label=label)
    margin_curve = curves_by_arm["margin"]
    axes[2].plot(margin_curve["epoch"], margin_curve["train_margin"], "o-", color="C2")
    axes[0].set(title="(a) training BPC (mean over each period)", xlabel="epoch",
                ylabel="bits / char")
    axes[1].set(title="(b) validation BPC", xlabel="epoch")
    axes[2].set(title=r"(c) $\mathcal{L}_{\rm margin}$ in the margin arm", xlabel="epoch",
                ylabel="nats")
    axes[0].legend()
    if title:
        fig.suptitle(title, y=1.02)
    plt.tight_layout()
    plt.show()


def curves_of(history: list) -> dict:
    """The learning curves of a run trained here, in the layout of a saved run's curves."""
    keys = ("epoch", "train_bpc", "val_bpc", "train_margin")
    return {key: [h[key] for h in history] for key in keys}


plot_arms({"ce": curves_of(history_ce), "margin": curves_of(history_margin)})

# %% [markdown]
# **Figure 4.7.2** (the miniature, mechanics). (a, b) Training and validation bits per character of
# the two arms; (c) the margin penalty during training. In this miniature the BPC curves lie on top
# of each other. The penalty starts near zero (small embeddings, small $W$) and goes **negative**:
# $\lvert\det(I-\Sigma_tA)\rvert>1$, the right-hand side of Figure 4.7.1.
#
# The prior's diagnostics (`prior_diagnostics`, computed on 64 validation windows at the end of each
# run) make this precise. Two numbers decide which side of the wall the prior is on:
# $\operatorname{tr}(\Sigma_tA)$, averaged over positions — its sign is the sign of the coupling in
# the $d=1$ picture — and the share of positions with $\lvert\det\rvert>1$ (where the penalty is
# negative).

# %%
def print_diagnostics(label: str, diagnostics: dict, trained_here: bool = False) -> None:
    """The prior's coupling sign, share of |det| > 1, penalty and smallest log|det|, on one line."""
    def show(x, fmt):
        return produced(x, fmt) if trained_here else format(x, fmt)
    print(f"{label:15s} mean tr(Sigma_t A) = {show(diagnostics['trace_sigma_A'], '+.4f')}   "
          f"share |det| > 1 = {show(diagnostics['frac_det_above_one'], '.3f')}   "
          f"penalty = {show(diagnostics['margin'], '+.4f')}   "
          f"min log|det| = {show(diagnostics['min_logabsdet'], '+.4f')}")


print_diagnostics("default ce", run_ce["diagnostics"], trained_here=True)
print_diagnostics("default margin", run_margin["diagnostics"], trained_here=True)
mini = run_margin["diagnostics"]
assert mini["trace_sigma_A"] < 0 and mini["frac_det_above_one"] > 0.9
assert mini["min_logabsdet"] >= -1e-6

# %% [markdown]
# ## The finding: training drives the coupling negative
#
# Now the trained pair. Both arms were trained once at the paper's model size ($d=128$, 4 heads, 2
# blocks, context 256, batch 64, AdamW, 20 epochs) on tiny Shakespeare, with a schedule that a
# shared 2-core CPU affords — the `cpu` tier. The page reads them from `book/results/`; how they were
# made is in Reproducibility, how the setup differs from the paper's in Checking the paper.

# %%
SAVED = all_saved("barrier_ce", "barrier_margin")
if SAVED:
    saved = {arm: load_result(f"barrier_{arm}") for arm in ("ce", "margin")}
    curves = {arm: load_curves(f"barrier_{arm}") for arm in ("ce", "margin")}
    trained_ce, trained_margin = saved["ce"]["data"], saved["margin"]["data"]
    print_diagnostics("saved ce", trained_ce["diagnostics"])
    print_diagnostics("saved margin", trained_margin["diagnostics"])
    trained = trained_margin["diagnostics"]
    assert trained["trace_sigma_A"] < 0 and trained["frac_det_above_one"] > 0.9
    assert trained["min_logabsdet"] >= -1e-6

# %% [markdown]
# The trained prior sits in the **negative-coupling regime**: $\operatorname{tr}(\Sigma_tA)$ is far
# below zero, and $\lvert\det(I-\Sigma_tA)\rvert>1$ at essentially every position (asserted, for the
# miniature and for the trained model).
#
# The smallest $\log\lvert\det\rvert$ over all positions is 0 to rounding: the closest any position
# came to the wall is $\lvert\det\rvert=1$, the value of an *untrained* prior (the first positions, which
# have too little context to disperse). On average, the penalty drove $\log\lvert\det\rvert$ to
# about $+23$ nats — a determinant of about $e^{23}\approx10^{10}$:

# %%
if SAVED:
    reached = {"CE arm": -trained_ce["diagnostics"]["margin"],
               "margin arm": -trained_margin["diagnostics"]["margin"]}
    draw_barrier_landscape(reached=reached)
    plt.tight_layout()
    plt.show()
    assert reached["margin arm"] > 20 and abs(reached["CE arm"]) < 0.1

# %% [markdown]
# **Figure 4.7.3** (where training took the margin; the landscape of Figure 4.7.1 with the trained
# pair). (b) The mean $\log\lvert\det(I-\Sigma_tA)\rvert$ of the two trained priors, minus their final
# penalty. The CE arm's prior, which no loss term moves, stays at $W\approx0$, $\lvert\det\rvert\approx1$.
# The margin arm's prior went to the right, 23 nats down the slope: the side without a wall.
#
# This is what the derivation predicts. With the quadratic residual term dropped, nothing in
# $\mathcal L$ favours $a>0$, and the penalty's own gradient points to $a<0$ from the very first
# step. §3.4 says the §7 experiments focus on the $a>0$ (barrier) regime. In these runs the penalty
# acts instead as the *dispersion-promoting* correction of Fig. 3.3(c–d): it rewards attention
# that spreads its weight, so that $\Sigma_t$ and $\lvert\det\rvert$ grow. `book/ERRATA.md` records it.

# %% [markdown]
# ## What it cost
#
# The learning curves of the trained pair, and the penalty of the margin arm while it trained:

# %%
if SAVED:
    plot_arms(curves, title="saved run, cpu tier")
    print_arms({"ce": trained_ce, "margin": trained_margin})
    saved_gap = trained_margin["final_val_bpc"] - trained_ce["final_val_bpc"]
    final_penalty = curves["margin"]["train_margin"][-1]
    weighted_penalty = saved["margin"]["config"]["lambda_margin"] * final_penalty
    print(f"validation gap (margin - CE): {saved_gap:+.3f} BPC")
    print(f"margin arm at the end: L_margin = {final_penalty:+.2f} nats, so lambda_m * L_margin = "
          f"{weighted_penalty:+.2f} nats of its training loss "
          f"{trained_margin['final_train_loss']:.2f}")
    assert all(v == 0.0 for v in curves["ce"]["train_margin"])
    assert curves["margin"]["train_margin"][-1] < curves["margin"]["train_margin"][0]

# %% [markdown]
# **Figure 4.7.4** (cf. the paper's Fig. 7.4; the trained pair). (a, b) Training and validation
# bits per character of the two arms; (c) the margin penalty during training.
#
# The margin arm ends about 0.3 BPC behind the CE arm (printed above). Its penalty keeps falling
# for as long as the optimiser moves. Panel (c) flattens only in the last epochs, where the cosine
# schedule takes the learning rate to zero.
#
# At the end the weighted penalty is a large share of the training loss: the optimiser found it
# cheaper to earn penalty than to fit characters. Nothing bounds
# $\mathcal L_{\rm margin}=-\operatorname{mean}_t\log\lvert\det(I-\Sigma_tA)\rvert$ from below once the
# coupling is negative — making $\lvert\det\rvert$ larger always lowers it (Figure 4.7.1). With
# $\lambda_m=0.05$, the optimiser buys penalty with predictive quality.
#
# Computing the penalty also costs time: with the Sylvester form, about twice a cross-entropy step
# for the exact penalty, and a fraction of a step for the 16 sampled positions per sequence that the
# `cpu` tier uses (the benchmark is in Reproducibility).
#
# ### The same finding with a second seed
#
# Everything above about the trained pair comes from one pair of runs (seed 0: initialisation and
# batch order). The pair was trained again with seed 1 (the numbers only, no weights), and the cell
# below checks the same statements on it.

# %%
TARGET_BPC = 2.4          # what the cpu tier's CE arm was required to reach (issue #16)
paper_gap = PAPER_FIG74["margin"]["val_bpc"] - PAPER_FIG74["ce"]["val_bpc"]
SAVED_SEED1 = SAVED and all_saved("barrier_ce_seed1", "barrier_margin_seed1")
if SAVED_SEED1:
    pair_seed1 = {arm: load_result(f"barrier_{arm}_seed1") for arm in ("ce", "margin")}
    data_seed1 = {arm: result["data"] for arm, result in pair_seed1.items()}
    print_arms(data_seed1)
    penalty_seed1 = load_curves("barrier_margin_seed1")["train_margin"]
    gap_seed1 = data_seed1["margin"]["final_val_bpc"] - data_seed1["ce"]["final_val_bpc"]
    diag_seed1 = data_seed1["margin"]["diagnostics"]
    print(f"seed 1: validation gap (margin - CE) {gap_seed1:+.3f} BPC; final penalty "
          f"{penalty_seed1[-1]:+.2f} nats; margin arm tr(Sigma_t A) = "
          f"{diag_seed1['trace_sigma_A']:+.1f}, "
          f"share |det| > 1 = {diag_seed1['frac_det_above_one']:.3f}")


# %%
def findings_of(pair: dict, penalty_curve: list) -> dict:
    """The statements this page makes about a trained pair, each True or False."""
    gap_of_pair = pair["margin"]["final_val_bpc"] - pair["ce"]["final_val_bpc"]
    prior = pair["margin"]["diagnostics"]
    return {
        "CE arm at <= 2.4 validation BPC": pair["ce"]["final_val_bpc"] <= TARGET_BPC,
        "margin arm behind by > 3 x the paper's gap": gap_of_pair > 3 * paper_gap,
        "margin arm: tr(Sigma_t A) < 0 and |det| > 1 at > 90% of positions":
            prior["trace_sigma_A"] < 0 and prior["frac_det_above_one"] > 0.9,
        "penalty lower at the end than after the first epoch": penalty_curve[-1] < penalty_curve[0],
    }


if SAVED_SEED1:
    findings = {0: findings_of({"ce": trained_ce, "margin": trained_margin},
                               curves["margin"]["train_margin"]),
                1: findings_of(data_seed1, penalty_seed1)}
    for claim in findings[0]:
        print(f"{claim}: seed 0 {findings[0][claim]}, seed 1 {findings[1][claim]}")
    assert all(all(f.values()) for f in findings.values()), findings

# %% [markdown]
# Every statement holds for both seeds (asserted). The size of the gap is not a fixed number — it
# differs between the seeds by a third (both printed) — but in both it is several times the
# paper's, and in both the penalty drives the coupling negative. The robustness comparison of
# [4.8 Robustness to embedding noise](robustness_to_noise.ipynb) uses the weights of seed 0 only.
#
# ### The same finding on a GPU, with the paper's optimiser
#
# The `cpu` tier differs from §7.1 in its learning rate ($3\cdot10^{-3}$) and in penalising 16
# sampled positions per sequence. The `paper` preset removes both differences: §7.1's model *and*
# optimiser (learning rate $10^{-3}$), with the **exact** penalty on all $T-1$ positions. It was
# trained on a lent NVIDIA H200 GPU, still on tiny Shakespeare, for the paper's 20 epochs (1220
# steps on this smaller corpus): two seeds, plus seed 0 trained a second time. Which device
# produced which number is printed with it.

# %%
gpu_pair = {
    "seed 0": {arm: load_result(f"gpu_barrier_{arm}") for arm in ("ce", "margin")},
    "seed 0, again": {arm: load_result(f"gpu_barrier_{arm}_rerun") for arm in ("ce", "margin")},
    "seed 1": {arm: load_result(f"gpu_barrier_{arm}_seed1") for arm in ("ce", "margin")},
}
print(f"{'run':14s} {'device':12s} {'CE arm':>7s} {'margin':>7s} {'gap':>6s} "
      f"{'tr(Sigma A), margin':>20s}")
for run, arms in gpu_pair.items():
    ce, mg = (arms[arm]["data"] for arm in ("ce", "margin"))
    gpu_gap = mg["final_val_bpc"] - ce["final_val_bpc"]
    print(f"{run:14s} {mg['gpu']['name']:12s} {ce['final_val_bpc']:7.3f} "
          f"{mg['final_val_bpc']:7.3f} "
          f"{gpu_gap:6.3f} {mg['diagnostics']['trace_sigma_A']:20.1f}")
cpu_ce_bpc = load_result("barrier_ce")["data"]["final_val_bpc"]
print(f"(validation bits per character after {ce['steps']} steps; the CPU pair, lr 3e-3, k = 16: "
      f"{cpu_ce_bpc:.3f} and {load_result('barrier_margin')['data']['final_val_bpc']:.3f})")

# %% [markdown]
# The finding does not depend on the device, the learning rate or the sampled penalty. With the
# exact penalty and the paper's optimiser, the coupling $\operatorname{tr}(\Sigma_tA)$ of the margin
# arm ends far below zero in both seeds: the penalty was lowered by dispersing attention, not by
# engaging the barrier. The margin arm again pays in clean bits per character, about three times
# the paper's gap of 0.036.
#
# At learning rate $10^{-3}$ neither arm gets as far in 1220 steps as the CPU tier's $3\cdot10^{-3}$
# does. Training on the GPU is not bitwise reproducible: seed 0 trained twice gives numbers that
# differ in the third decimal (the order of floating-point additions on the GPU varies between
# runs), which is why every claim is asserted with a tolerance, on both seeds.

# %%
for run, arms in gpu_pair.items():
    ce, mg = (arms[arm]["data"] for arm in ("ce", "margin"))
    assert ce["steps"] == mg["steps"] == 1220 and mg["gpu"]["name"].startswith("NVIDIA")
    assert mg["final_val_bpc"] - ce["final_val_bpc"] > 2.5 * 0.036, run  # ~3 x the paper's gap
    assert ce["final_val_bpc"] > cpu_ce_bpc + 0.2, run                    # lr 1e-3: slower
    assert mg["diagnostics"]["trace_sigma_A"] < -10, run                  # coupling driven negative
    assert abs(ce["diagnostics"]["trace_sigma_A"]) < 0.1, run             # CE arm's prior: W ~ 0
rerun_gap = max(abs(gpu_pair["seed 0"][arm]["data"]["final_val_bpc"]
                    - gpu_pair["seed 0, again"][arm]["data"]["final_val_bpc"])
                for arm in ("ce", "margin"))
assert 0 < rerun_gap < 0.02
print(f"seed 0 trained twice on the GPU: the final validation BPC differ by at most "
      f"{rerun_gap:.4f}")

# %% [markdown]
# ## Checking the paper
#
# **The two arms beside Fig. 7.4's table.** The miniature (trained on this page) and the trained
# `cpu`-tier pair, each with the paper's numbers:

# %%
print("miniature:")
print_arms({"ce": run_ce, "margin": run_margin}, trained_here=True, paper=True)
print(f"validation gap (margin - CE): {produced(gap, '+.3f')} BPC   (paper: {paper_gap:+.3f})")
if SAVED:
    print("\ncpu tier (saved run):")
    print_arms({"ce": trained_ce, "margin": trained_margin}, paper=True)
    print(f"validation gap (margin - CE): {saved_gap:+.3f} BPC   (paper: {paper_gap:+.3f})")
    assert saved_gap > 3 * paper_gap        # the penalty costs several times the paper's gap here

# %% [markdown]
# **Which differences are expected.**
#
# * *Absolute BPC*: the corpora differ (tiny Shakespeare instead of WikiText-2), and so does the
#   length of training (the `cpu` tier's schedule is printed below; the paper trains 20 epochs of
#   WikiText-2, a corpus ten times larger).
# * *Gap between the arms*: the paper's is the difference of its two validation numbers in the same
#   table; ours is several times larger at both tiers and both seeds.
# * *Sign of the coupling*: not a matter of scale. It follows from the gradient at $W=0$ (the tiny
#   example and the derivation above) and is what the diagnostics show after training.
# * *Parameter count*: the stated architecture has $2\cdot(12d^2+13d)+2d$ non-embedding parameters
#   with the usual 4× MLP, not "~150K" (§7.1); the attention projections alone hold $2\cdot4d^2$.

# %%
if SAVED:
    setup, paper_setup = saved["ce"]["config"], PAPER_SETUP
    model_setup = setup["model"]
    print(f"cpu tier: d_model={model_setup['d_model']}, num_heads={model_setup['num_heads']}, "
          f"num_layers={model_setup['num_layers']}, T={model_setup['max_len']}, "
          f"batch {setup['batch_size']}, {setup['epochs']} epochs = "
          f"{trained_ce['total_steps']} steps, "
          f"lr {setup['lr']:g} (cosine), weight decay {setup['weight_decay']:g}, "
          f"clip {setup['grad_clip']:g}, margin on k={setup['margin_positions']} positions per "
          f"sequence, data {setup['data']}")
    print(f"paper (§7.1): d_model={paper_setup['d_model']}, num_heads={paper_setup['n_head']}, "
          f"num_layers={paper_setup['n_layer']}, T={paper_setup['block_size']}, "
          f"batch {paper_setup['batch_size']}, {paper_setup['epochs']} epochs, "
          f"data {paper_setup['data']}")
    corpus = trained_ce["data"]
    print(f"|V| = {corpus['vocab_size']}, {corpus['train_chars']:,} training "
          f"characters, {trained_ce['steps'] / trained_ce['steps_per_epoch']:.1f} epochs")

# %%
if SAVED:
    counts = trained_ce["model_params"]
    width = model_setup["d_model"]
    print(f"saved run: transformer {counts['transformer']:,} = 2(12d^2 + 13d) + 2d at d = {width}: "
          f"{counts['transformer'] == 2 * (12 * width**2 + 13 * width) + 2 * width};  "
          f"token embedding {counts['embedding']:,}, positions {counts['positions']:,}   "
          f"(paper: {PAPER_SETUP['params']})")
    assert counts["transformer"] == 2 * (12 * width**2 + 13 * width) + 2 * width

# %% [markdown]
# ### The paper's §7 numbers, recomputed from its own tables
#
# Every ratio and percentage that §7.2–7.4 print follows from the BPC values in the same place
# (checked below). One quantity does not agree *across* the tables: the cross-entropy-only model.
#
# Table 1's $\lambda_m=0$ row is that model (same architecture, optimiser and seed, §7.1; only the
# penalty weight differs), and its $\lambda_m=0.05$ row reproduces the margin-only model of
# Fig. 7.4 exactly. Yet its clean validation BPC differs from the baseline of Fig. 7.4 and the §7.3
# table:

# %%
ce74, m74 = PAPER_FIG74["ce"]["val_bpc"], PAPER_FIG74["margin"]["val_bpc"]
gap74 = m74 - ce74
print(f"Fig. 7.4: gap {gap74:.3f} BPC, {100 * gap74 / ce74:.2f}% of the CE arm   "
      "(printed: 0.036, 1.7%)")
assert round(gap74, 3) == 0.036 and round(100 * gap74 / ce74, 1) == 1.7
for arm, row in PAPER_FIG75.items():
    ratio = row["bpc_sigma_0.5"] / row["clean"]
    print(f"§7.3 {arm:6s}: {row['bpc_sigma_0.5']} / {row['clean']} = {ratio:.4f}   "
          f"(printed {row['degradation']})")
    assert round(ratio, 2) == row["degradation"] and row["clean"] == PAPER_FIG74[arm]["val_bpc"]
for lam_p, bpc_p, bpcs_p, deg_p, *_ in PAPER_TABLE1:
    assert round(bpcs_p / bpc_p, 2) == deg_p, lam_p   # every Deg of Table 1 is BPC_sigma / BPC

# %%
table1 = {row[0]: row for row in PAPER_TABLE1}
base, best = table1[0.0], table1[0.02]
shares = {"noisy gain at 0.02": 1 - best[2] / base[2], "clean cost at 0.02": best[1] / base[1] - 1,
          "clean range": table1[0.2][1] / base[1] - 1, "Deg gain at 0.02": 1 - best[3] / base[3]}
print("Table 1 percentages:", {k: f"{100 * v:.1f}%" for k, v in shares.items()},
      "  (printed: 8.9, 2.2, 3, 11)")
assert [round(100 * v) for v in shares.values()] == [9, 2, 3, 11]
print(f"CE-only clean validation BPC: Fig. 7.4 / §7.3 table {ce74}, "
      f"Table 1 (lambda_m = 0) {base[1]}; "
      f"margin-only (lambda_m = 0.05): {m74} and {table1[0.05][1]}")
assert table1[0.05][1] == m74 and base[1] != ce74
print(f"against the Fig. 7.4 baseline the clean cost at lambda_m = 0.02 is "
      f"{100 * (best[1] / ce74 - 1):.1f}% (not {100 * shares['clean cost at 0.02']:.1f}%), and the "
      f"whole path spans {100 * (table1[0.2][1] / ce74 - 1):.1f}% "
      f"(not {100 * shares['clean range']:.1f}%)")

# %% [markdown]
# So the baseline of §7.4 is not the baseline of §7.2–7.3 (2.109 against 2.122 BPC), although the
# margin arm is the same run in both. Either the $\lambda_m=0$ run of the sweep differs from the
# CE-only run in something §7.1 does not state, or one of the two numbers is misprinted. The
# percentages of §7.4 are computed against its own row, so they are internally consistent. The
# ledger (`book/ERRATA.md`) records it.
#
# ## Key takeaways
#
# - The margin penalty $-\log\lvert m\rvert$ is a wall only near $m=0$; past $m=1$ it is a slope
#   that keeps falling as the margin grows, with no floor.
# - At an untrained prior ($W=0$) the penalty's gradient is $\operatorname{mean}_t\Sigma_t\succeq0$,
#   so its first step makes the coupling negative — the side with no degenerate boundary.
# - Trained with $\lambda_m=0.05$, the prior ends with $\lvert\det(I-\Sigma_tA)\rvert>1$ at
#   essentially every position and $\log\lvert\det\rvert\approx23$ nats on average: the barrier never
#   engaged (two seeds on the CPU, two on a GPU with the paper's optimiser).
# - The price is several times the paper's: about 0.3 BPC on the CPU tier and 0.1 BPC at the paper's
#   optimiser, against the paper's 0.036, because the optimiser buys unbounded penalty with fit.
# - The paper's own §7 numbers are consistent within each table, but its CE-only baseline differs
#   between Fig. 7.4 (2.122) and Table 1 (2.109).
#
# ## Check your understanding
#
# 1. A position has margin $m=0.1$, another $m=10$. What penalty does each pay, and in which
#    direction does gradient descent on the penalty move each margin?
#
#    ```{dropdown} Answer
#    $-\log 0.1=+2.30$ nats and $-\log 10=-2.30$ nats. The slope $-1/m$ is negative for both, so
#    descent increases both margins: the first away from the wall (what a barrier should do), the
#    second further up a slope that never ends.
#    ```
#
# 2. Why does the very first gradient step of the penalty, taken from $W=0$, make the coupling
#    negative, whatever the data?
#
#    ```{dropdown} Answer
#    At $W=0$ the gradient of $\mathcal L_{\rm margin}$ with respect to $W$ is
#    $\operatorname{mean}_t\Sigma_t$, an average of covariance matrices, which is positive
#    semi-definite for any data. A descent step subtracts it, so $\operatorname{tr}(\Sigma_tA)$ —
#    the matrix counterpart of $a\,\mathrm{Var}_t$ — becomes negative.
#    ```
#
# 3. A trained prior has $\operatorname{tr}(\Sigma_tA)>0$ and $\lvert\det\rvert<1$ at most positions.
#    What would that tell you, and how does it differ from what this page found?
#
#    ```{dropdown} Answer
#    That the prior is in the positive-coupling regime, on the wall's side of Figure 4.7.1, where the
#    log-barrier can engage and keep margins from reaching 0 — the regime §3.4 says §7 studies. The
#    runs here show the opposite: negative trace and $\lvert\det\rvert>1$ almost everywhere.
#    ```
#
# 4. The margin arm's final penalty is about $-23$ nats. Why can the optimiser keep lowering it, and
#    what does the model give up to do so?
#
#    ```{dropdown} Answer
#    With a negative coupling the penalty has no lower bound: making attention more dispersed (and the
#    embeddings larger) keeps increasing $\lvert\det\rvert$. Weighted by $\lambda_m=0.05$ it is worth
#    more than a nat of training loss, so the optimiser trades predictive fit for it: the margin arm
#    ends about 0.3 BPC behind the CE arm.
#    ```
#
# ## Reproducibility
#
# The miniature is trained on this page (cached in a temporary directory for the next two pages).
# The `cpu`-tier pair was trained once by `make results` (`nextword results run barrier_ce`,
# `... barrier_margin`, and the `_seed1` pair), the GPU runs by `nextword gpu-check`. The cells
# below print the configuration, the command, commit and machine of each saved run, and the timings.
# The same experiment runs from the shell as `nextword train ...`. `FULL=1` selects §7.1's own
# configuration on WikiText-2, a GPU job, not run for this book.

# %% tags=["hide-cell"]
model = config_ce.model
print(f"default run: d_model={model.d_model}, num_heads={model.num_heads}, "
      f"num_layers={model.num_layers}, T={model.max_len}, batch {config_ce.batch_size}, "
      f"{config_ce.steps} steps, lr {config_ce.lr:g}, margin on k={config_ce.margin_positions} "
      f"positions per sequence, corpus {config_ce.data} "
      f"({config_ce.max_chars or 'all'} characters)")
counts_default = run_ce["model_params"]
print(f"data: {run_ce['data']['name']}, |V| = {run_ce['data']['vocab_size']}, "
      f"{run_ce['data']['train_chars']:,} train chars; steps: {run_ce['steps']}")
print(f"parameters: transformer {counts_default['transformer']:,}, "
      f"token embedding {counts_default['embedding']:,}, "
      f"positions {counts_default['positions']:,}   "
      f"(paper: {PAPER_SETUP['params']})")

# %% tags=["hide-cell"]
if SAVED:
    for arm, result in saved.items():
        machine = result["machine"]
        print(f"saved run ({arm}): produced by `{result['command']}` "
              f"at `{result['commit'][:12]}` on "
              f"{result['created'][:10]} ({machine['cpu']}, {machine['cpus']} CPUs, "
              f"torch {machine['torch']}, {machine['torch_threads']} thread)")
        run_data = result["data"]
        print(f"    {run_data['steps']} steps, wall time {result['wall_time_s'] / 60:.0f} min "
              f"({run_data['steps_per_second']:.2f} steps/s on a machine shared with other jobs)")
    idle_step = load_result("bench_margin_cpu")["data"]["results"]["k16"]["times"]
    print(f"target of the cpu tier: CE arm at <= {TARGET_BPC} validation BPC; reached "
          f"{trained_ce['final_val_bpc']:.2f} -> "
          f"{'met' if trained_ce['final_val_bpc'] <= TARGET_BPC else 'NOT met'}")
    step_seconds = 1 / trained_margin["steps_per_second"]
    print(f"a margin-arm step took {step_seconds:.2f} s here; the benchmark "
          f"timed it at {min(idle_step):.2f} s on one thread (on a busier machine)")

# %% tags=["hide-cell"]
if SAVED:
    def without_lambda(config):
        return {k: v for k, v in config.items() if k != "lambda_margin"}
    assert without_lambda(saved["ce"]["config"]) == without_lambda(saved["margin"]["config"])
    assert saved["ce"]["config"]["lambda_margin"] == 0
    assert saved["margin"]["config"]["lambda_margin"] > 0
    assert trained_ce["steps"] == trained_ce["total_steps"]
    assert trained_margin["steps"] == trained_margin["total_steps"]

# %% tags=["hide-cell"]
if SAVED_SEED1:
    for arm, result in pair_seed1.items():
        print(f"saved run ({arm}, seed {result['config']['seed']}): "
              f"produced by `{result['command']}` "
              f"at `{result['commit'][:12]}` on {result['created'][:10]}, "
              f"wall time {result['wall_time_s'] / 60:.0f} min")

# %% [markdown]
# **What the exact penalty costs.** `benchmarks/bench_margin.py` times one optimiser step at the
# paper's size (batch 64 × context 256, $d=128$, Shakespeare characters) with and without the
# penalty, all modes interleaved in one process, on the book's build machine (shared with other
# jobs, one thread). The compact Sylvester path factorises an $r_t\times r_t$ matrix per position
# ($r_t\le\lvert V\rvert$) instead of a $128\times128$ one, and its backward pass reuses
# $(I-M)^{-\top}$ without storing any per-position matrix. Sampling 16 positions per sequence is
# unbiased (checked by enumeration in `tests/test_torch_prior.py`).

# %% tags=["hide-cell"]
bench_run = load_result("bench_margin_cpu")
bench = bench_run["data"]
if bench:
    print(f"`{bench_run['command']}` at commit {bench_run['commit'][:10]} "
          f"on {bench_run['machine']['cpu']}")
    print(f"{bench['date']}, {bench['cpus']} CPUs, {bench['args']['threads']} thread(s), "
          f"median of {bench['args']['repeats']} steps")
    for mode, label in (("ce", "CE only"), ("exact", "exact penalty, all positions (Sylvester)"),
                        ("k16", "penalty on k=16 positions per sequence"),
                        ("direct16", "k=16, d x d covariance path (no Sylvester)")):
        print(f"  {label:44s} {bench['ratios'][mode]:5.2f} x CE step, "
              f"peak {bench['results'][mode]['peak_mib']:5.0f} MiB")

# %% [markdown]
# **What a GPU step costs.** Optimiser steps per second at the paper's size on the H200 and on the
# 2-core CPU, for the CE step, the exact-penalty step and the $k=16$ step, measured by
# `nextword gpu-check` (each the median of 30 timed steps), and the CPU–GPU parity check of the
# same command. The command, GPU, driver, torch and CUDA versions are in each saved file.

# %% tags=["hide-cell"]
gpu_speed = load_result("gpu_check")["data"]["speed"]
cpu_speed = load_result("gpu_check_cpu_speed")["data"]["speed"]
print(f"{'step':14s} {'GPU (H200)':>11s} {'CPU, 2 cores':>13s} {'ratio':>6s}")
for step_kind in ("ce", "margin_exact", "margin_k16"):
    print(f"{step_kind:14s} {gpu_speed[step_kind]:11.1f} {cpu_speed[step_kind]:13.2f} "
          f"{gpu_speed[step_kind] / cpu_speed[step_kind]:6.0f}")
assert gpu_speed["shape"] == {"B": 64, "T": 256, "d": 128, "heads": 4, "layers": 2}
assert gpu_speed["margin_exact"] < gpu_speed["margin_k16"] < gpu_speed["ce"]
parity = load_result("gpu_check")["data"]["parity"]
assert parity["parity"] and parity["amp_bf16"]["finite"]
print(f"CPU vs CUDA, float32, quick config: max |difference of validation BPC| = "
      f"{parity['max_abs_val_bpc_diff']:.1e} (tolerance {parity['tolerance_bpc']:g}); "
      f"bf16 autocast ends {parity['amp_bf16']['diff']:+.4f} BPC from float32")
