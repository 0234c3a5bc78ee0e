# %% [markdown]
# # 4.6 Support tokens in a trained model: which positions are closest to the boundary?
#
# **The question.** After a model is trained with the margin penalty, which positions of a real
# passage have the smallest margin — the support tokens of Definition 3.1 — and are they the
# bottlenecks near the degenerate boundary that the paper's analogy with support vectors suggests?
#
# In a support vector machine the support vectors are the training points closest to the decision
# boundary; they alone fix the margin. The paper carries the picture over to attention: the
# {term}`support tokens <support token>` of a sequence are its positions with the smallest margin
# $\lvert\det(I-\Sigma_t A)\rvert$, the ones closest to the degenerate boundary $\det=0$, and they
# dominate the log-barrier. This page computes them on a passage of real text for a trained prior:
# the {term}`embedding prior` of [4.7 Barrier training](barrier_training.ipynb), a separate one-layer
# causal attention model with one matrix $A$ that reads a small language model's character embeddings
# $x_t$, trained together with it under the {term}`margin penalty` — the mean over positions of
# $-\log\lvert\det(I-\Sigma_t A)\rvert$, weighted (by 0.05 here) and added to the cross-entropy (4.7 writes out
# the training step).
# The finding, on this passage: no position is anywhere near the boundary — every margin is at least 1 — and
# the "support tokens" are positions where the prior's attention falls on a single earlier token, so
# that the attended context has no spread, not bottlenecks.
#
# ```{admonition} Learning goals
# :class: tip
# After this page you can
# - find the support tokens of a short sequence from its margins, by hand;
# - explain why, with a negative coupling in one dimension, the smallest margin belongs to the
#   position with the least dispersed context;
# - compute per-position log-margins of a trained prior with the numpy library and check them
#   against the torch prior.
# ```
#
# **Builds on:** [4.2 The scalar margin](02_scalar_margin.ipynb) (the margin $m_t=1-a\,\mathrm{Var}_t$
# and Definition 3.1) · [4.3 The matrix margin](03_matrix_margin.ipynb) ($\det(I-\Sigma_t A)$ and
# Theorem 1 with $W_V=I$) · the trained prior of [4.7 Barrier training](barrier_training.ipynb),
# read here before that page explains its training: a small GPT trained with the margin penalty,
# whose prior ends with a negative coupling. **Reading time:** about 20 minutes.
#
# ```{admonition} Symbols on this page
# :class: note
# | symbol | meaning | shape |
# |---|---|---|
# | $x_t$ | embedding of the character at position $t$, a column vector of width $d$ as everywhere in Part 4 (positions counted from 1) | $(d,)$, a number in the tiny example |
# | $a$ | coupling in one dimension: the score of $x_s$ seen from $x_t$ is $a\,x_t x_s$ | number |
# | $m$, $m_t$ | the margin of position $t$, $1-a\,\mathrm{Var}_t$, with $\mathrm{Var}_t$ the attention-weighted variance of the tokens before $t$; in $d$ dimensions $\lvert\det(I-\Sigma_t A)\rvert$, whose logarithm is the log-margin | number |
# | $A$ | the prior's matrix: the score of $x_s$ seen from $x_t$ is $x_s^\top Ax_t$ | $(d,d)$ |
# | $\Sigma_t$ | attention-weighted covariance of the embeddings before $t$ | $(d,d)$ |
# | $\hat\varepsilon_t$ | the residual $x_t-\mu_t(x)$ of [4.1](01_latent_noise_view.ipynb), with $\mu_t(x)$ the attention-weighted mean of the embeddings before $t$; $\partial\hat\varepsilon_t/\partial x_t=I-\Sigma_t A$ | $(d,)$ |
# | $E$, $y_t$ | the language model's embedding table, one row for each of its $\lvert\mathcal V\rvert$ characters; the character at position $t$, so $x_t$ is row $y_t$ of $E$, $E[y_t]$, read as a column | $(\lvert\mathcal V\rvert,d)$; an id |
# | $W_Q,W_K,W_V$ | query, key and value matrices of the numpy library's layer ($A=W_K^\top W_Q$) | $(d,d)$ |
# | $\rho$ | spectral radius (largest absolute eigenvalue) | number |
# | $\nu$ | an eigenvalue of $\Sigma_t A$; each contributes a factor $1-\nu$ to $\det(I-\Sigma_t A)$ (the miniature's printout picks the one that sets $\rho$, where the spectral margin $1-\rho$ is smallest) | number |
# ```
#
# ```{admonition} In the paper's notation
# :class: seealso
# §7.1 names the prior's matrix $W$, with $W=A^\top$; the code follows it (`prior.W` holds $A^\top$,
# `prior.A` returns $A$). This page writes $A$. The paper writes $e_t(x)$ for the residual; here it is
# $\hat\varepsilon_t(x)$, because the book's notation table keeps $e[i]$ for the embedding of word $i$.
# ```
#
# *Source: Agarwal et al., "Support Tokens, Stability Margins, and a New Foundation for Robust
# LLMs", Definition 3.1 (support tokens), Eqs. (24)–(25) (matrix margin), §7.1 (the
# embedding-level attention prior trained with the margin penalty).*

# %%
import os
import tempfile

import matplotlib.pyplot as plt
import numpy as np
import torch

from nextword.booktools.display import produced
from nextword.booktools.plotting import use_book_style
from nextword.provenance import load_result
from nextword.theory.barrier import diagonal_blocks, matrix_margins, scalar_margin, support_tokens
from nextword.torch.barrier.prior import covariances
from nextword.torch.runs.book import all_saved, load_saved_model
from nextword.torch.barrier.config import preset
from nextword.torch.training.data import load_char_data
from nextword.torch.barrier.train import load_checkpoint, train

use_book_style()
torch.set_num_threads(1)
FULL = os.environ.get("FULL", "0") == "1"

# %% [markdown]
# ## A tiny example by hand
#
# Three scalar tokens $x_1=0$, $x_2=2$, $x_3=1$ with strict masking (position $t$ attends to the
# positions before it), as on [4.2 The scalar margin](02_scalar_margin.ipynb). The margin of
# position $t$ is
# $m_t=1-a\,\mathrm{Var}_t$:
#
# * position 1 has no context and position 2 has one token: their variance is 0, so
#   $m_1=m_2=1$ whatever the coupling $a$;
# * position 3 attends to 0 and 2; with $a=\pm0.5$ its weights are $(0.269, 0.731)$ or
#   $(0.731, 0.269)$, its variance $0.786$, so $m_3=1\mp0.393$: $0.607$ for $a=+0.5$ and $1.393$ for
#   $a=-0.5$.
#
# The support tokens are the positions with the smallest margin. With $a=+0.5$ that is position 3,
# the one closest to the degenerate boundary $m=0$. With $a=-0.5$ every margin is at least 1, and the smallest
# belong to positions 1 and 2 — the positions whose context has no spread.

# %%
tokens_1d = np.array([0.0, 2.0, 1.0])
for coupling in (0.5, -0.5):
    logits = coupling * tokens_1d[2] * tokens_1d[:2]          # position 3 looks at 1 and 2
    weights = np.exp(logits) / np.exp(logits).sum()
    variance = weights @ tokens_1d[:2] ** 2 - (weights @ tokens_1d[:2]) ** 2
    margins = scalar_margin(tokens_1d, a=coupling)
    support = support_tokens(np.log(margins), atol=1e-12)      # 0-based positions
    print(f"a = {coupling:+.1f}: position 3 weights {np.round(weights, 3)}, "
          f"Var_3 = {variance:.3f}, a Var_3 = {coupling * variance:+.3f}")
    print(f"         margins {np.round(margins, 3)}, "
          f"support tokens at positions {[int(t) + 1 for t in support]}")
    assert abs(margins[2] - (1 - coupling * variance)) < 1e-12
assert support_tokens(np.log(scalar_margin(tokens_1d, a=0.5))).tolist() == [2]
assert support_tokens(np.log(scalar_margin(tokens_1d, a=-0.5)), atol=1e-12).tolist() == [0, 1]

# %% [markdown]
# So the sign of the coupling decides what "support token" means. With $a>0$ it is the
# bottleneck of the paper's picture. With $a<0$ — the sign the margin penalty drives training to,
# as [4.7 Barrier training](barrier_training.ipynb) shows — it is the least dispersed context,
# and the trivial positions 1 and 2 always qualify. That is why the page also reports the minimum
# over positions $t\ge3$, whose context has at least two tokens.
#
# ## From the torch prior to the numpy theory
#
# The torch prior scores an earlier embedding $x_s$ seen from $x_t$ by $x_s^\top Ax_t$, with values
# $v_s=x_s$. In the column convention of the numpy library `nextword.theory.barrier` this is the
# layer with $W_Q=A$, $W_K=I$, $W_V=I$, so that $W_K^\top W_Q=A$. With $W_V=I$ Theorem 1's form (14) is
# exact ([4.3 The matrix margin](03_matrix_margin.ipynb)), so the two libraries must give the same
# blocks $I-\Sigma_t A$.
#
# First a miniature, trained here in seconds to show the mechanics ($d=32$, 150 steps on the start
# of tiny Shakespeare, with the margin penalty; its configuration is printed in Reproducibility).
# What it shows holds for this one run and is not a law of every trained prior: which regime a prior
# ends in is a property of the run (the last paragraph below Figure 4.6.1).

# %%
if FULL:
    config = preset("quick", lambda_margin=0.05)
else:
    config = preset("quick", steps=150, eval_every=150, eval_windows=8, max_chars=60_000,
                    d_model=32, max_len=32, margin_positions=8, lambda_margin=0.05)

# %%
workdir = tempfile.TemporaryDirectory()
results = train(config, workdir.name, device="cpu", progress=False)
gpt, prior, _, _ = load_checkpoint(workdir.name)
print(f"validation bits per character after {results['steps']} steps: "
      f"{produced(results['final_val_bpc'], '.3f')}")
# the four diagnostics of the prior this page reads (4.7 explains them; the others are explained and
# printed on 4.7, the SNR on 4.9); the key "margin" holds the penalty, mean_t -log|det(I - Σ_t A)|,
# not a margin
diagnostic_names = {"trace_sigma_A": "mean tr(Σ_t A)", "frac_det_above_one": "share |det| > 1",
                    "margin": "penalty mean -log|det|", "min_logabsdet": "min log|det|"}
print("prior diagnostics:", ", ".join(f"{label} {produced(results['diagnostics'][key], '.4f')}"
                                      for key, label in diagnostic_names.items()))

# %% [markdown]
# ## Margins on a passage of real text (the miniature)
#
# The prior sees the token embeddings $x_t=E[y_t]$ of a validation passage. We compute every
# $\partial \hat\varepsilon_t/\partial x_t$ with the numpy library and check it against the torch prior's own
# covariances $\Sigma_t$ (`nextword.torch.barrier.prior.covariances`).

# %%
data = load_char_data(config.data, max_chars=config.max_chars)
newline = data.vocab.encode("\n")[0]
start = int((data.val == newline).nonzero()[0, 0]) + 1  # begin the window at a line start
ids = data.val[start: start + config.block_size]  # one validation window (T,)
text = data.vocab.decode(ids.numpy())
A = prior.A.detach().double().numpy()  # (d, d); the torch prior stores Aᵀ as prior.W
E = gpt.wte.weight.detach().double().numpy()  # (|V|, d)
X = E[ids.numpy()]  # (T, d): rows x_t
W_Q, W_K = A, np.eye(A.shape[0])  # column convention: ζ_ts = (W_Q x_t)ᵀ (W_K x_s) = x_sᵀ A x_t

# %%
margins_mini = matrix_margins(X, W_Q, W_K)  # log-margins, T positions
sigma_torch = covariances(torch.tensor(X)[None], torch.tensor(A.T))[0].numpy()  # (T-1, d, d)
blocks_torch = np.eye(A.shape[0]) - sigma_torch @ A  # I − Σ_t A
blocks_numpy = diagonal_blocks(X, W_Q, W_K)[1:]
print("numpy blocks = torch prior's I - Σ_t A:",
      bool(np.allclose(blocks_numpy, blocks_torch, atol=1e-10)))
assert np.allclose(blocks_numpy, blocks_torch, atol=1e-10)
assert margins_mini.logabsdet[0] == 0.0                 # position 1: no context
assert abs(margins_mini.logabsdet[1]) < 1e-12          # position 2: a one-point context

# %%
logm = margins_mini.logabsdet
support_all = support_tokens(logm, atol=1e-9)
support_late = 2 + support_tokens(logm[2:])  # among positions whose context has at least 2 tokens
print(f"sign of every det(I - Σ_t A): {produced(str(sorted(set(margins_mini.sign.astype(int).tolist()))))}")
print(f"log-margins: min {produced(logm.min(), '+.4f')}, max {produced(logm.max(), '+.4f')}; "
      f"spectral margin min {produced(margins_mini.spectral.min(), '+.4f')}")
print(f"support tokens (Def. 3.1, all positions): {produced(str((support_all + 1).tolist()))}")
print(f"support token among positions t >= 3: position {produced(support_late[0] + 1, 'd')}, "
      f"character {produced(repr(text[support_late[0]]))}")
t_spectral = int(np.argmin(margins_mini.spectral))  # where 1 - ρ(Σ_t A) is smallest (0-based)
eigenvalues_spectral = np.linalg.eigvals(np.eye(A.shape[0]) - diagonal_blocks(X, W_Q, W_K)[t_spectral])
nu_rho = eigenvalues_spectral[np.argmax(np.abs(eigenvalues_spectral))]  # the eigenvalue of Σ_t A that sets ρ
print(f"smallest spectral margin at position {produced(t_spectral + 1, 'd')}: the eigenvalue of Σ_t A that "
      f"sets ρ there is {produced(nu_rho.real, '+.4f')} (imaginary part {produced(abs(nu_rho.imag), '.1e')}), "
      f"so its factor 1 - ν in det(I - Σ_t A) is {produced((1 - nu_rho).real, '.4f')}")


# %%
def show_margins(text, logm, support, ax):
    """Each character coloured by its log-margin; support tokens boxed in orange."""
    cmap = plt.get_cmap("viridis")
    lo, hi = np.min(logm), np.max(logm)
    per_row = 32
    for t, ch in enumerate(text):
        r, c = divmod(t, per_row)
        level = (logm[t] - lo) / (hi - lo + 1e-12)
        shown = "␣" if ch == " " else ("⏎" if ch == "\n" else ch)
        ax.text(c, -r, shown, ha="center", va="center", fontsize=12, family="monospace",
                color="w" if level < 0.4 else "k",
                bbox=dict(boxstyle="square,pad=0.25", fc=cmap(level),
                          ec="C3" if t in support else "none", lw=2))
    ax.set_xlim(-1, per_row)
    ax.set_ylim(-(len(text) // per_row) - 0.8, 0.8)
    ax.axis("off")


fig, axes = plt.subplots(2, 1, figsize=(11, 3.6), gridspec_kw={"height_ratios": [1, 1.4]})
show_margins(text, logm, set(support_late.tolist()), axes[0])
axes[0].set_title("log|det(I − Σ_t A)| per character (dark = small margin); "
                  "orange box: support token (t ≥ 3)")
axes[1].bar(np.arange(1, len(logm) + 1), logm,
            color=["C3" if t in support_late else "C0" for t in range(len(logm))])
axes[1].set_xlabel("position t")
axes[1].set_ylabel("log-margin")
plt.tight_layout()
plt.show()

# %% [markdown]
# **Figure 4.6.1** (the miniature). Margins per position on a validation passage for the trained
# prior (Eq. 25, log-det form; Definition 3.1): each character shaded by its log-margin (dark: small),
# the support token among positions $t\ge3$ boxed in orange; below, the same log-margins as bars
# (orange: the support token). Under strict masking positions 1 and 2 have a zero-variance context
# ($\Sigma_t=0$): their margin is exactly 1, so their log-margin is exactly 0.
#
# In our runs the learned coupling is negative in the sense of §3.4 ($\operatorname{tr}(\Sigma_t A)<0$
# and nearly every $\lvert\det(I-\Sigma_t A)\rvert>1$): minimising the penalty $-\log\lvert\det\rvert$ drives the
# prior into the *dispersion-promoting* regime, where no position is near the degeneracy boundary.
# Read the two signs with their size: the priors that no loss term moves, those of the CE arms of
# [4.7](barrier_training.ipynb), also have a slightly negative trace and most $\lvert\det\rvert$ above 1, from
# their random start (4.7 prints both, with penalties within a few thousandths of 0, and notes that which
# side of 1 most determinants fall on is set by the random draw), while this trained prior's mean trace
# and penalty, printed above, are of order one.
# The two conditions are checked separately because the first does not imply the second: a negative
# trace says only that the eigenvalues $\nu$ of $\Sigma_t A$ add up to less than 0, while
# $\lvert\det(I-\Sigma_t A)\rvert$ is the product of the $\lvert1-\nu\rvert$, and every one of them is
# at least 1 whenever every $\nu$ has real part $\le0$ (for a real $\nu\le0$ the factor $1-\nu$
# itself is at least 1), while a real $\nu$ between 0 and 2 gives a factor below 1. Eigenvalues $-1$ and $0.6$ have a negative sum, yet
# $\det(I-\Sigma_t A)=2\cdot0.4=0.8<1$ (printed below).
# The printout's smallest spectral margin $1-\rho(\Sigma_t A)$ is nonetheless close to 0, which by the
# reading of [4.3](03_matrix_margin.ipynb) would put that position at the boundary. It does not: $\rho$ is
# the size of the largest eigenvalue, not its sign, and the eigenvalue $\nu$ of $\Sigma_t A$ that sets
# $\rho$ there is negative (printed above), so its factor $1-\nu$ in $\det(I-\Sigma_t A)$ is close to 2,
# far from 0. The spectral margin is a distance to the boundary only when the eigenvalues are real and
# non-negative, as in Figure 4.3.4; with a negative coupling it says nothing about the boundary.
# Definition 3.1 then selects the positions with the least dispersed context — the first two,
# trivially — as in the tiny example.
#
# The barrier reading of the paper (support tokens as bottlenecks close to $\det=0$) applies to the
# $a>0$ regime. Whether a trained prior is in it is a property of the run, printed above, not
# something the penalty enforces.

# %%
assert np.all(np.isfinite(logm))
# "in our runs the learned coupling is negative": tr(Sigma_t A) < 0 and nearly every |det| > 1
assert results["diagnostics"]["trace_sigma_A"] < 0 and results["diagnostics"]["frac_det_above_one"] > 0.9
# the trivial positions 1 and 2 are minimal unless some det < 1
assert set(support_all.tolist()) >= {0, 1} or logm.min() < 0
assert logm[support_late[0]] == logm[2:].min()
# the smallest spectral margin is close to 0, yet it comes from a negative eigenvalue whose factor 1 - ν
# is close to 2 (the prose)
assert abs(margins_mini.spectral.min()) < 0.05
assert nu_rho.real < 0 and 1.9 < (1 - nu_rho).real < 2.1
# a negative trace alone does not give |det| >= 1 (the prose): Σ_t A with eigenvalues -1 and 0.6
sigma_a_example = np.diag([-1.0, 0.6])
det_example = np.linalg.det(np.eye(2) - sigma_a_example)
print(f"eigenvalues -1 and 0.6: tr(Σ_t A) = {np.trace(sigma_a_example):+.1f}, "
      f"det(I - Σ_t A) = {det_example:.1f}")
assert np.trace(sigma_a_example) < 0 and abs(det_example - 0.8) < 1e-12
workdir.cleanup()

# %% [markdown]
# ## The finding: the support tokens of the trained prior
#
# The same analysis on the margin arm of [4.7 Barrier training](barrier_training.ipynb), the trained
# model with the penalty ($d=128$, 2 blocks, 20 epochs on tiny Shakespeare). Its weights are read from
# disk; the passage is 96 characters of the validation text, starting after its first line break (it spans several lines).

# %%
SAVED = all_saved("barrier_margin")
if SAVED:
    saved_margin = load_result("barrier_margin")
    gpt_saved, prior_saved, config_saved = load_saved_model("barrier_margin")
    data_saved = load_char_data(config_saved.data, max_chars=config_saved.max_chars)
    newline_saved = data_saved.vocab.encode("\n")[0]
    start_saved = int((data_saved.val == newline_saved).nonzero()[0, 0]) + 1
    ids_saved = data_saved.val[start_saved: start_saved + 96]
    text_saved = data_saved.vocab.decode(ids_saved.numpy())
    A_saved = prior_saved.A.detach().double().numpy()                          # (d, d)
    X_saved = gpt_saved.wte.weight.detach().double().numpy()[ids_saved.numpy()]  # (96, d)

# %%
if SAVED:
    identity = np.eye(A_saved.shape[0])
    margins_saved = matrix_margins(X_saved, A_saved, identity)
    logm_saved = margins_saved.logabsdet
    sigma_saved = covariances(torch.tensor(X_saved)[None], torch.tensor(A_saved.T))[0].numpy()
    # sigma_saved: (95, d, d), the context covariances of positions 2..96
    assert np.allclose(diagonal_blocks(X_saved, A_saved, identity)[1:],
                       identity - sigma_saved @ A_saved, atol=1e-10)
    # §3.2, the sentence before Def. 3.1: indices "attaining (or nearly attaining)" the minimum; ties up to 1e-6
    support_saved = 2 + support_tokens(logm_saved[2:], atol=1e-6)
    # everything below is computed from the trained prior: shown, not compared as text
    print(f"d_model = {A_saved.shape[0]}; sign of every det(I - Σ_t A): "
          f"{produced(str(sorted(set(margins_saved.sign.astype(int).tolist()))))}")
    # |det| > 1 beyond round-off: the tied positions with |det| = 1 have log-margins of up to a few 1e-9
    print(f"log-margins: min over t >= 3 {produced(logm_saved[2:].min(), '+.3f')}, "
          f"max {produced(logm_saved.max(), '+.3f')}; share of positions t >= 2 with |det| > 1 "
          f"(log-margin > 1e-6): {produced(np.mean(logm_saved[1:] > 1e-6), '.2f')}")
    print(f"support tokens among positions t >= 3 (tied to within 1e-6): positions "
          f"{produced(str((support_saved + 1).tolist()))}, "
          f"characters {produced(str([text_saved[t] for t in support_saved]))}")

# %%
if SAVED:
    fig, axes = plt.subplots(2, 1, figsize=(11, 4.2), gridspec_kw={"height_ratios": [1.3, 1]})
    show_margins(text_saved, logm_saved, set(support_saved.tolist()), axes[0])
    axes[0].set_title("trained margin model: log|det(I − Σ_t A)| per character; "
                      "orange boxes: support tokens (t ≥ 3)")
    axes[1].bar(np.arange(1, len(logm_saved) + 1), logm_saved,
                color=["C3" if t in support_saved else "C0" for t in range(len(logm_saved))])
    axes[1].set_xlabel("position t")
    axes[1].set_ylabel("log-margin")
    plt.tight_layout()
    plt.show()

# %% [markdown]
# **Figure 4.6.2** (the trained prior). The same picture for the prior of the trained margin model
# (orange boxes: the support tokens among positions $t\ge3$, several positions tied at log-margin 0 up
# to round-off, printed above). Look at the bars: every one is at or above 0, i.e. every
# $\lvert\det\rvert\ge1$; the tied positions have bars of height 0.
#
# The cell below asserts, on the saved trained prior, what the diagnostics of
# [4.7 Barrier training](barrier_training.ipynb) find on a sample of validation windows (that page
# says how many): every $\lvert\det(I-\Sigma_t A)\rvert$ on the passage is at least 1 (log-margin
# $\ge 0$ up to round-off). It also asserts that every $\det(I-\Sigma_t A)$ here is positive, which
# those diagnostics do not report: they read only $\log\lvert\det\rvert$.
#
# It equals 1 where the prior's attention puts all its weight on one context token, so that
# $\Sigma_t$ vanishes (its largest entry and the attention weight left off that token are printed
# below; this happens at several of the first positions of the passage, besides positions 1 and 2,
# which have no context or a one-token context), and exceeds 1 everywhere else. So the support tokens of Definition 3.1 are the
# positions with the *least* dispersion-promoting context — here a context whose covariance has
# collapsed — not bottlenecks close to a degeneracy boundary.

# %%
if SAVED:
    assert np.all(np.isfinite(logm_saved)) and np.all(margins_saved.sign > 0)
    flat = np.abs(sigma_saved).max(axis=(1, 2)) < 1e-6         # (95,) contexts with Σ_t ≈ 0
    late_logm = logm_saved[2:]
    print(f"positions t >= 3 with Σ_t ≈ 0 (largest entry < 1e-6): {produced(int(flat[1:].sum()))}, at "
          f"{produced(str((2 + np.flatnonzero(flat[1:]) + 1).tolist()))}; "
          f"their largest |log-margin| {produced(np.abs(late_logm[flat[1:]]).max(), '.1e')}; "
          f"smallest log-margin elsewhere {produced(late_logm[~flat[1:]].min(), '+.3f')}")
    assert late_logm.min() > -1e-6                              # |det| >= 1 up to round-off
    assert np.abs(late_logm[flat[1:]]).max() < 1e-6
    assert late_logm[~flat[1:]].min() > 0
    assert np.array_equal(support_saved, 2 + np.flatnonzero(flat[1:]))  # the ties are the Σ_t ≈ 0 positions
    # "all its weight on one context token": the attention weight left off the top token there
    weight_off_top = []
    for t in 2 + np.flatnonzero(flat[1:]):                      # 0-based positions, t >= 3 in the text
        scores = X_saved[:t] @ A_saved @ X_saved[t]             # ζ_ts = x_sᵀ A x_t for s < t
        weights = np.exp(scores - scores.max())
        weight_off_top.append(1 - weights.max() / weights.sum())
    print(f"attention weight off the top context token at those positions: at most "
          f"{produced(max(weight_off_top), '.0e')}")
    assert max(weight_off_top) < 1e-6

# %% [markdown]
# ## Key takeaways
#
# - The support tokens of Definition 3.1 are the positions with the smallest margin
#   $\lvert\det(I-\Sigma_t A)\rvert$; what they mean depends on the sign of the coupling.
# - With a positive coupling the smallest margin is the position nearest the degenerate boundary —
#   the bottleneck of the paper's analogy with support vectors.
# - With a negative coupling in one dimension ($a<0$), and in $d$ dimensions whenever every
#   eigenvalue of $\Sigma_t A$ has real part $\le0$, every margin is at least 1, and the smallest
#   belongs to the least dispersed context (in one dimension exactly so, since
#   $m_t=1+\lvert a\rvert\mathrm{Var}_t$); positions 1 and 2, with no spread at all, always qualify.
#   A negative coupling in $d$ dimensions, $\operatorname{tr}(\Sigma_t A)<0$, does not guarantee it.
# - The prior trained with the margin penalty has a negative coupling
#   ($\operatorname{tr}(\Sigma_t A)<0$, [4.7](barrier_training.ipynb)), and on the real passage above
#   every margin is $\ge1$: its support tokens are positions whose context covariance collapsed.
#
# ## Check your understanding
#
# 1. In the tiny example, which position is the support token for *any* positive coupling
#    $a>0$, and why can positions 1 and 2 never be it then?
#
#    ```{dropdown} Answer
#    Position 3. Positions 1 and 2 have $m=1$ for every $a$, while position 3's context (0 and 2)
#    has a positive variance for any finite $a$, so $m_3=1-a\,\mathrm{Var}_3<1$ whenever $a>0$.
#    ```
#
# 2. Why do positions 1 and 2 always have margin exactly 1 under strict masking?
#
#    ```{dropdown} Answer
#    Position 1 attends to nothing and position 2 to a single token, so the attention-weighted
#    covariance $\Sigma_t$ of their context is zero, and $\det(I-\Sigma_t A)=\det I=1$ for any $A$.
#    ```
#
# 3. A trained prior's support tokens all have $\Sigma_t \approx0$. What does that tell you about
#    its coupling, and about the barrier?
#
#    ```{dropdown} Answer
#    A context with $\Sigma_t\approx0$ has margin exactly 1, so if such positions are the smallest, every
#    other position has $\lvert\det\rvert\ge1$. No position is near $\det=0$, so the barrier plays no
#    role; the smallest margins are just the contexts with no spread. That is what you get when every
#    eigenvalue $\nu$ of $\Sigma_t A$ has real part $\le0$ (every factor $\lvert1-\nu\rvert$ is then at
#    least 1): in one dimension, a negative coupling $a<0$. A negative trace alone does not guarantee
#    it (the counterexample beside Figure 4.6.1), and $\lvert\det\rvert\ge1$ does not prove a negative
#    coupling either: a positive coupling so strong that real eigenvalues $\nu$ have gone past 2 gives
#    factors $\lvert1-\nu\rvert>1$, so $\lvert\det\rvert>1$ is possible there too, and the determinant is
#    positive if they passed 1 in pairs (the caption of Figure 4.3.2 of [4.3](03_matrix_margin.ipynb): had the
#    second eigenvalue also passed 1, the determinant would have turned positive again; an eigenvalue
#    between 1 and 2 still gives a factor below 1 in size). That is why the miniature's diagnostics also report the sign of
#    $\operatorname{tr}(\Sigma_t A)$.
#    ```
#
# ## Reproducibility
#
# The miniature is trained on this page (a few seconds; `FULL=1` selects the `quick` preset). The
# numbers such a run learns depend on the platform's floating point, so its training log is excluded
# from output comparison, and the assertions check properties of the run with room to spare (signs,
# shares, bounds), not its exact numbers. The saved prior is the margin arm of the trained pair of [4.7](barrier_training.ipynb)
# (the `cpu` preset), trained
# once by `make results` (`nextword results run barrier_margin`); its weights are
# `book/results/barrier_margin/model.pt`.

# %% tags=["hide-cell"]
print(f"default run: T = {config.block_size}, d_model = {config.model.d_model}, "
      f"num_layers {config.model.num_layers}, steps {config.steps}, first {config.max_chars} "
      f"characters, lambda_margin = {config.lambda_margin}")

# %% tags=["hide-cell"]
if SAVED:
    print(f"saved run: produced by `{saved_margin['command']}` at `{saved_margin['commit'][:12]}` "
          f"on {saved_margin['created'][:10]}; "
          f"final validation BPC {saved_margin['data']['final_val_bpc']:.3f}")
    print(f"its model: d_model = {config_saved.model.d_model}, {config_saved.model.num_layers} blocks, "
          f"{config_saved.epochs} epochs on {config_saved.data}")
