# %% [markdown]
# # 2.3 Fine-tuning, low-rank updates and KL-regularised reinforcement learning
#
# **The question.** A model pre-trained on broad text is then adapted — to a narrower kind of text,
# or towards answers people prefer. How do you change it enough to help, with little data, without
# wrecking what it already knows?
#
# The paper describes the two tools by which deployed models are adapted, one or both of them.
# **Fine-tuning** runs the same next-token training on a small, task-specific data set, starting
# from the pre-trained weights; the update is often restricted to a low-rank matrix
# ({term}`low-rank adaptation`), which is cheaper and, at a rank that suits the change, can
# over-fit less. **Reinforcement learning** instead maximises a reward (a number given to each whole answer)
# while a Kullback–Leibler penalty keeps the model near where it started, so it does not drift into
# strange text that happens to be rewarded. This page measures both on models small enough to
# compute every quantity exactly.
#
# ```{admonition} Learning goals
# :class: tip
# After this page you can
# - compute by hand the best policy of a KL-regularised reward problem on two answers, and explain
#   what the strength $\beta$ of the penalty does;
# - explain why fine-tuning from a pre-trained model can beat training from scratch on scarce
#   data, and why a low-rank update of the right rank can over-fit less;
# - derive the closed-form optimum $\pi^*\propto\pi_{\mathrm{ref}}e^{r/\beta}$ of (4.7) and recognise
#   when a restricted model cannot reach it;
# - explain why the sampled objective (4.8) is an unbiased estimate but its naive gradient is wrong.
# ```
#
# **Builds on:** [2.2 The KL objective](02_objective_kl.ipynb) (next-token training minimises a
# {term}`Kullback–Leibler divergence`; texts as products of next-token probabilities; an
# {term}`unbiased estimator`) · matrices and their rank; gradients and gradient descent;
# expectations. **Reading time:** about 40 minutes.
#
# ```{admonition} Symbols on this page
# :class: note
# | symbol | meaning | shape |
# |---|---|---|
# | $f$ | an answer or text (a sequence of tokens); $f^{(n)}$ is the $n$-th sample of a batch | tokens |
# | $T$ | the length of an answer | integer |
# | $a$, $a'$ | a token and the token after it | tokens |
# | $\pi$, $\pi_\theta$ | a model's distribution over answers (its *policy*), with parameters $\theta$; $\pi^*$ is the optimum of (4.7) | probabilities |
# | $\pi_{\mathrm{ref}}$ | the reference model: the pre-trained (or fine-tuned) model RL starts from | probabilities |
# | $r(f)$ | the reward of answer $f$ | number |
# | $\beta$ | the strength of the KL penalty; it divides the reward in the optimum $e^{r/\beta}$, so it acts as a temperature (the book's notation table, [Appendix A](../partA_appendix/A_notation_and_environment.ipynb), [6.2](../part1_chapter6/6_2_attention_mechanism.ipynb) and [3.2](../part3_dynamics/02_routing_and_specialisation.ipynb) write $\beta$ for an *inverse* temperature, a factor on the scores; the paper's letter is kept here) | number $>0$ |
# | $\mathcal L^{\mathrm{RL}}(\pi)$ | the KL-regularised RL objective (4.7) | number |
# | $D_{\mathrm{KL}}$ | the Kullback–Leibler divergence | number (nats) |
# | $Z$ | the normaliser of the optimum $\pi^*=\pi_{\mathrm{ref}}e^{r/\beta}/Z$: $Z=\sum_f\pi_{\mathrm{ref}}(f)e^{r(f)/\beta}$ | number |
# | $\mathcal V$, $\lvert\mathcal V\rvert$ | the vocabulary and its size | set, integer |
# | $\mathbf p$, $\mathbf p'$ | the pre-training source and the shifted fine-tuning source | Markov chains |
# | $P$, $P'$ | their transition matrices, $P_{aa'}$ = probability of token $a'$ after $a$ | $(\lvert\mathcal V\rvert,\lvert\mathcal V\rvert)$ |
# | $U_1$, $U_2$ | the factors of the rank-2 shift of the logits, $0.8\,U_1U_2$ | $(\lvert\mathcal V\rvert,2)$, $(2,\lvert\mathcal V\rvert)$ |
# | $W$, $W_{\mathrm{pre}}$ | a model's table of next-token logits, $\pi(a'\mid a)=\mathrm{softmax}(W_a)_{a'}$; the pre-trained table | $(\lvert\mathcal V\rvert,\lvert\mathcal V\rvert)$ |
# | $A$, $B$, $s$ | the LoRA factors, $W=W_{\mathrm{pre}}+AB$, and their rank | $(\lvert\mathcal V\rvert,s)$, $(s,\lvert\mathcal V\rvert)$, integer |
# | $G$ | the gradient of the loss with respect to the table $W$ | $(\lvert\mathcal V\rvert,\lvert\mathcal V\rvert)$ |
# | $n_{aa'}$, $n_{a\cdot}$, $n_a$, $n_{\mathrm{all}}$ | the count of transitions $a\to a'$ in the data; the row $(n_{aa'})_{a'}$ of these counts; the count of $a$ as a context; of all transitions | integers |
# | $N_{\mathrm{fine}}$, $N$ | the number of fine-tuning sequences; the number of samples in an RL batch | integers |
# | $z$ | the logits of a policy over all sequences, $\pi=\mathrm{softmax}(z)$ | one per sequence |
# | $g(f)$ | $-r(f)+\beta\log(\pi(f)/\pi_{\mathrm{ref}}(f))$, the per-answer term of (4.7) | number |
# | $o_f$ | the one-hot vector of sequence $f$ | one per sequence |
# | $\bar g$ | the mean of $g$ over a batch | number |
# ```
#
# ```{admonition} In the paper's notation
# :class: note
# The paper writes the vocabulary in bold, $\mathbf V$ (the book: $\mathcal V$), and the reward in
# bold, $\mathbf r$. Its $\pi$ — kept here — is a model's distribution, not the number $\pi$. It
# writes the length of an answer as $L$; here it is $T$, the book's length of a sequence, as in
# Chapter 6 (the book keeps $L$ for the number of layers). It writes the reference model as
# $\pi_{1:L}(\cdot;\theta^{\mathrm{ref}})$ (here $\pi_{\mathrm{ref}}$) and the number of samples in (4.8)
# as $N_{\mathrm{RL}}$ (here $N$). The rank of a LoRA update is written $s$
# here ($k$ is a key in the book, $r$ the reward on this page).
# ```
#
# *Source: Baptista, Stuart, Tran, "Large Language Models: A Mathematical Formulation", §4.3–4.5
# (Eqs. 4.6–4.8, Data Assumption 4.8, Remarks 4.9–4.10).*

# %%
import os

import matplotlib.pyplot as plt
import numpy as np
import scipy.optimize
import sympy as sp
from IPython.display import Math, display

from nextword.booktools.display import produced
from nextword.booktools.plotting import use_book_style
from nextword.data import MarkovSource, markov_source
from nextword.theory.formulation import (
    bigram_counts, fit_lora, fit_table, kl_divergence, kl_regularised_optimum, markov_next_probs,
    rl_empirical_objective, rl_objective, sequence_distribution, table_kl,
)

use_book_style()
rng = np.random.default_rng(0)

# %% [markdown]
# How many fine-tuning data sets and random sample batches the page averages over:

# %% tags=["parameters"]
FULL = os.environ.get("FULL", "0") == "1"  # more data seeds / Monte Carlo batches; same checks
SEEDS = 12 if FULL else 4
BATCHES = 2000 if FULL else 400

# %% [markdown]
# ## A tiny example by hand
#
# A model answers a question in one of two ways, "polite" or "rude", and its pre-trained
# (reference) version picks each with probability $\tfrac12$. A reward rates the answers:
# $r(\text{polite})=1$, $r(\text{rude})=0$. The reinforcement-learning objective (4.7) for a new
# policy $\pi$ (the model's distribution over answers) is
#
# $$\mathcal L^{\mathrm{RL}}(\pi)=-\mathbb E_\pi r+\beta\,D_{\mathrm{KL}}(\pi\,\Vert\,\pi_{\mathrm{ref}}):$$
#
# expected reward to gain, a penalty for moving away from the reference. (This KL runs from the model
# to the reference, averaged over the model's own answers: the other order from the training objective
# of [2.2](02_objective_kl.ipynb), the KL from the data to the model.) Without the penalty the
# answer is obvious: always polite. With it, the best $\pi$ tilts the reference towards high reward
# by the factor $e^{r/\beta}$ (derived [below](#kl-regularised-rl-47-the-closed-form-optimum)):
# $\pi^*(\text{polite})=\tfrac12e^{1/\beta}/(\tfrac12e^{1/\beta}+\tfrac12)$, which for $\beta=1$ is
# $e/(e+1)=0.7311$. We check it by trying every $\pi(\text{polite})$ on a fine grid:

# %%
answers = ["polite", "rude"]
ref_tiny = np.array([0.5, 0.5])
reward_tiny = np.array([1.0, 0.0])
grid = np.linspace(0.0005, 0.9995, 1999)  # candidate values of pi(polite)
for beta_tiny in (0.1, 1.0, 10.0):
    losses = [rl_objective(np.array([g, 1 - g]), ref_tiny, reward_tiny, beta_tiny) for g in grid]
    best_on_grid = grid[int(np.argmin(losses))]
    tilted = ref_tiny * np.exp(reward_tiny / beta_tiny)
    closed_form = tilted[0] / tilted.sum()
    print(f"beta = {beta_tiny:4}: best pi(polite) on the grid {best_on_grid:.4f}, "
          f"closed form {closed_form:.5f}")
    assert abs(best_on_grid - closed_form) < 1e-3
    assert np.isclose(kl_regularised_optimum(ref_tiny, reward_tiny, beta_tiny)[0][0], closed_form)

# %% [markdown]
# A small $\beta$ (a weak penalty) lets the policy chase the reward (polite with probability
# 0.99995 at $\beta=0.1$); a large $\beta$ keeps it near the reference (0.52498 at $\beta=10$). The
# minimum value is $-\beta\log Z$ with $Z=\sum\pi_{\mathrm{ref}}e^{r/\beta}$, here
# $-\log\tfrac{e+1}{2}$:

# %%
pi_star_tiny, min_tiny = kl_regularised_optimum(ref_tiny, reward_tiny, 1.0)
print(f"beta = 1: minimum of (4.7) = {min_tiny:.4f} = -log((e + 1) / 2) = "
      f"{-np.log((np.e + 1) / 2):.4f}")
assert np.isclose(min_tiny, -np.log((np.e + 1) / 2))
assert np.isclose(rl_objective(pi_star_tiny, ref_tiny, reward_tiny, 1.0), min_tiny)

# %% [markdown]
# ## Pre-training, then a shifted source
#
# The models are small enough to check exactly. A model is a table of next-token logits
# (log-probabilities before normalisation): with $|\mathcal V|=10$ tokens, $\pi(a'\mid a)=\mathrm{softmax}(W_a)_{a'}$ for a $10\times10$ matrix $W$ —
# a bigram model — trained by Adam (gradient descent whose step uses running averages of the
# gradient and of its square; the loop below writes it out) on the next-token cross-entropy
# (4.5)/(4.6). The sources are
# Markov chains, so the population KL from a source to a model is computable.
#
# Source $\mathbf p$ is a random first-order chain on 10 tokens. The fine-tuning source $\mathbf p'$
# (its samples are the fine-tuning data of Data Assumption 4.8) changes its next-token logits by a
# **rank-2** matrix, $\log P'=\log P+0.8\,U_1U_2$ (rows
# renormalised), so the right update really is low-rank. Pre-training uses 100 sequences of 100
# tokens from $\mathbf p$. The data enter only through the counts $n_{aa'}$ of each transition
# $a\to a'$, and the training loop is a dozen lines — Adam on the mean next-token loss, whose
# gradient for row $a$ is $(n_a\,\mathrm{softmax}(W_a)-n_{a\cdot})/n_{\mathrm{all}}$ ($n_{a\cdot}$ the
# row of counts $(n_{aa'})_{a'}$, $n_a$ its sum, the count of $a$ as a context, $n_{\mathrm{all}}$ the
# count of all transitions):

# %%
V = 10
src = markov_source(V, 1, rng, concentration=0.5)
P = src.transition
U1, U2 = rng.normal(size=(V, 2)), rng.normal(size=(2, V))
logits_new = np.log(P) + 0.8 * U1 @ U2
P_new = np.exp(logits_new - logits_new.max(axis=1, keepdims=True))
P_new /= P_new.sum(axis=1, keepdims=True)
src_new = MarkovSource(P_new, "rank-2 logit shift of the pre-training chain")
w_old, w_new = src.stationary_distribution(), src_new.stationary_distribution()

counts_pre = bigram_counts([src.sample(100, rng) for _ in range(100)], V)  # n_ab, (V, V)


def train_table(W, counts, steps, lr):
    """Adam on the mean next-token cross-entropy of the table model: what `fit_table` runs."""
    W, m, v = W.copy(), np.zeros_like(W), np.zeros_like(W)
    n_all = counts.sum()  # the count of all transitions
    for t in range(1, steps + 1):
        probs = np.exp(W - W.max(axis=1, keepdims=True))
        probs /= probs.sum(axis=1, keepdims=True)
        grad = (counts.sum(axis=1, keepdims=True) * probs - counts) / n_all  # (n_a softmax(W_a) - n_a.) / n_all
        m, v = 0.9 * m + 0.1 * grad, 0.999 * v + 0.001 * grad**2
        W -= lr * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-12)
    return W


W_loop = train_table(np.zeros((V, V)), counts_pre, steps=600, lr=0.1)
W_pre, hist_pre = fit_table(np.zeros((V, V)), counts_pre, steps=600, lr=0.1)  # the same, from the library
assert np.allclose(W_loop, W_pre, atol=1e-10)
kl_pre_old, kl_pre_new = table_kl(P, W_pre, w_old), table_kl(P_new, W_pre, w_new)
print(f"pre-trained model: KL(p || model) = {produced(kl_pre_old, '.4f')}, "
      f"KL(p' || model) = {produced(kl_pre_new, '.4f')} nats/token")
assert kl_pre_old < 0.01 and kl_pre_new > 0.3

# %% [markdown]
# ## Fine-tuning (4.6): full update versus LoRA (Remark 4.9)
#
# With $N_{\mathrm{fine}}=10$ short sequences from $\mathbf p'$ we compare: training from scratch on them;
# full fine-tuning of all $|\mathcal V|^2$ logits starting at $W_{\mathrm{pre}}$; and LoRA,
# $W=W_{\mathrm{pre}}+AB$ with $A\in\mathbb R^{|\mathcal V|\times s}$, $B\in\mathbb R^{s\times|\mathcal V|}$
# ($2|\mathcal V|s$ trainable numbers; $B=0$ at the start so the model starts at the pre-trained
# one, and the loop above runs on $A$ and $B$ with the chain rule $\partial/\partial A=GB^\top$,
# $\partial/\partial B=A^\top G$ for the table gradient $G$). Each method is measured by the
# population KL from $\mathbf p'$ to the model, $D_{\mathrm{KL}}(\mathbf p'\Vert\pi)$ (averaged over the stationary law; the
# cells print it as "KL(p' || model)"), computed exactly, averaged over
# several fine-tuning data sets. Every method runs the same number of Adam steps, with a step size
# (learning rate) of 0.1 from scratch and 0.05 for the updates that start at $W_{\mathrm{pre}}$.


# %%
def finetune_scores(n_seq, steps, seed):
    """Population KL(p' || model) of each fine-tuning method, on one data set of n_seq sequences."""
    data_rng = np.random.default_rng(seed)
    counts = bigram_counts([src_new.sample(30, data_rng) for _ in range(n_seq)], V)
    scratch = fit_table(np.zeros((V, V)), counts, steps=steps, lr=0.1)[0]
    full = fit_table(W_pre, counts, steps=steps, lr=0.05)[0]
    out = {"from scratch": table_kl(P_new, scratch, w_new),
           "full fine-tune": table_kl(P_new, full, w_new)}
    for s in (1, 2, 4):  # the rank s of the LoRA update
        lora_rng = np.random.default_rng(seed + 100)
        A, B, _ = fit_lora(W_pre, counts, s, lora_rng, steps=steps, lr=0.05)
        out[f"LoRA rank {s}"] = table_kl(P_new, W_pre + A @ B, w_new)
    return out


step_grid = [6, 12, 25, 50, 100, 200, 400]  # doubling, from before any curve bottoms out
curves = {}
for steps in step_grid:
    runs = [finetune_scores(10, steps, seed) for seed in range(SEEDS)]
    for name in runs[0]:
        curves.setdefault(name, []).append(np.mean([run[name] for run in runs]))
print("mean KL(p' || model) after fine-tuning on 10 sequences of 30 tokens (", SEEDS, "data sets )")
print(f"each fine-tuning set: 10 sequences of 30 tokens = {10 * 29} predicted tokens")
print("steps          :" + "".join(f"{n_steps:8d}" for n_steps in step_grid))
for name, c in curves.items():
    print(f"{name:15s}:" + "".join(produced(x, "8.3f") for x in c))  # Adam's output
best = {name: min(c) for name, c in curves.items()}
assert best["LoRA rank 2"] < min(best["from scratch"], best["LoRA rank 1"], best["LoRA rank 4"])
assert best["full fine-tune"] < best["from scratch"]  # starting from W_pre beats starting from zero
for name in ("from scratch", "full fine-tune", "LoRA rank 2", "LoRA rank 4"):  # each minimum is inside
    assert curves[name][0] > 1.2 * best[name]  # the grid: the first step count is well above it
for name in ("from scratch", "full fine-tune", "LoRA rank 4"):  # the flexible updates over-fit
    assert curves[name][-1] > 1.2 * best[name]  # Figure 2.3.1: their KL rises again
rise = {name: curves[name][-1] / best[name] for name in curves}  # KL at 400 steps / at the best step
print("KL after 400 steps / at the best number of steps:",
      "; ".join(f"{name} {produced(r, '.2f')}" for name, r in rise.items()))
assert rise["LoRA rank 2"] < min(rise["full fine-tune"], rise["LoRA rank 4"])  # rank 2 over-fits less
rank1 = curves["LoRA rank 1"]  # the one curve whose best can sit at the grid's last step count
print(f"LoRA rank 1: KL at 200 steps / at 400 = {produced(rank1[-2] / rank1[-1], '.2f')}; "
      f"LoRA rank 2's best / rank 1's KL at 400 = {produced(best['LoRA rank 2'] / rank1[-1], '.2f')}")
assert rank1[-2] / rank1[-1] < 1.1  # rank 1 has (nearly) levelled off by 400 steps
assert best["LoRA rank 2"] < 0.85 * rank1[-1]  # and rank 2's best is well below it

fig, ax = plt.subplots()
for name, c in curves.items():
    ax.plot(step_grid, c, "o-", label=name)
ax.axhline(kl_pre_new, color="k", lw=1, ls=":", label="pre-trained, no update")
ax.set_xscale("log")
ax.minorticks_off()
ax.set_xticks(step_grid, [str(x) for x in step_grid])
ax.set_xlabel("Adam steps on the fine-tuning data")
ax.set_ylabel(r"$D_{\mathrm{KL}}(\mathbf{p}'\,\Vert\,\mathrm{model})$, nats/token")
ax.legend(ncol=2, loc="upper right", bbox_to_anchor=(1, 0.94))  # below the dotted line, above the curves
plt.show()

# %% [markdown]
# **Figure 2.3.1.** Fine-tuning on 290 tokens from the shifted source: the KL from $\mathbf p'$ to
# each model, averaged over `SEEDS` data sets, against the number of Adam steps; the dotted black
# line is the pre-trained model before any update. Look at where each curve bottoms out and how far
# it climbs afterwards. The flexible updates (full, from scratch, LoRA rank 4) over-fit the small data
# set — their KL rises with more steps, to 1.82, 1.66 and 2.24 times their best (each best is the
# lowest of the seven step counts tried, 6 to 400; each of these curves starts well above its best,
# so the best lies inside the grid, not before its first step count) — while LoRA with
# the rank of the true shift (rank 2) rises less (1.27 times): restricting the update to rank $s$
# acts here as the implicit regularisation Remark 4.9 mentions. All of this is one pre-training
# source, one rank-2 shift and one pre-trained table; the data sets vary only the fine-tuning
# sample (and the LoRA factors' random start). Rank 1 cannot express the shift. Its curve has
# levelled off by 400 steps but may still fall a little (its KL at 200 steps is 1.03 times that at
# 400), so its best may lie beyond the grid; rank 2's best is well below it all the same, 0.76 times
# rank 1's KL at 400 steps. Rank 4 has more freedom to fit noise. At its best number of steps
# rank 2 beats training from scratch and the other two ranks; it is also below the full update here, but that comparison is not robust: over
# twelve data sets each of the two wins on some, and on average the full update, stopped early, is
# about as good (printed under Reproducibility).
#
# At the population level (expected counts instead of samples, so no noise) the rank statement is
# sharp: LoRA with $s=2$ comes within a small residual of the target (explained below), while
# $s=1$ stays far from it.

# %%
pop_counts = w_new[:, None] * P_new  # expected transition frequencies under p'
for s in (1, 2):
    A, B, _ = fit_lora(W_pre, pop_counts, s, np.random.default_rng(7), steps=3000, lr=0.05)
    kl_lora = table_kl(P_new, W_pre + A @ B, w_new)
    print(f"LoRA rank {s}, population data: KL(p' || model) = {produced(kl_lora, '.4f')}, "
          f"rank of the update = {np.linalg.matrix_rank(A @ B, tol=1e-8)}")
    if s == 1:
        kl_rank1 = table_kl(P_new, W_pre + A @ B, w_new)
    else:
        kl_rank2 = table_kl(P_new, W_pre + A @ B, w_new)
floor = table_kl(P_new, np.log(P) + 0.8 * U1 @ U2, w_new)  # the exact shift, applied to log P
inherited = table_kl(P_new, W_pre + 0.8 * U1 @ U2, w_new)  # the exact shift, applied to W_pre
print(f"the exact rank-2 shift applied to W_pre: KL(p' || model) = {produced(inherited, '.4f')}")
assert kl_rank2 < 0.01 < kl_rank1
assert kl_rank2 <= inherited + 1e-4  # the rank-2 fit is as good as the exact shift on W_pre
for big_V in (1000, 50_000):
    print(f"|V| = {big_V:6d}: full update {big_V**2:>13,d} numbers; LoRA rank 8: {2 * big_V * 8:>9,d}")

# %% [markdown]
# The residual KL of the rank-2 fit is no larger than that of the exact shift applied to
# $W_{\mathrm{pre}}$: what remains is the pre-training error of the frozen weights, which LoRA
# inherits. The fitted update is the rank-2 matrix that fits best, not necessarily the true shift,
# so it can also offset a part of $W_{\mathrm{pre}}$'s error (which is why the fit can come out a
# little below the exact shift) — but not all of it, with only two ranks to spend.
#
# ## KL-regularised RL (4.7): the closed-form optimum
#
# For sequences $f\in\mathcal V^T$, (4.7) is $\mathcal L^{\mathrm{RL}}(\pi)=-\mathbb E_\pi r+\beta D_{\mathrm{KL}}(\pi\|\pi_{\mathrm{ref}})$.
# Write the reward as a log, $-r(f)=\beta\log e^{-r(f)/\beta}$, and put it inside the KL's sum:
# $\mathcal L^{\mathrm{RL}}(\pi)=\beta\sum_f\pi(f)\log\frac{\pi(f)}{\pi_{\mathrm{ref}}(f)e^{r(f)/\beta}}$.
# The denominator is $Z\pi^*(f)$ with $\pi^*=\pi_{\mathrm{ref}}e^{r/\beta}/Z$, a probability
# distribution, so splitting off $\log Z$ (and $\sum_f\pi(f)=1$) gives the Gibbs variational identity
# $\mathcal L^{\mathrm{RL}}(\pi)=\beta D_{\mathrm{KL}}(\pi\|\pi^*)-\beta\log Z$. A KL divergence is
# never negative and is 0 only at $\pi=\pi^*$, so $\pi^*$ is the unique minimiser over all laws and the minimum is
# $-\beta\log Z$. Sympy checks the identity on a two-point space:

# %%
p, q0, r0, r1, bt = sp.symbols("p q0 r0 r1 beta", positive=True)
pi_, ref = [p, 1 - p], [q0, 1 - q0]
rew = [r0, r1]
Z = sum(ref[i] * sp.exp(rew[i] / bt) for i in range(2))
star = [ref[i] * sp.exp(rew[i] / bt) / Z for i in range(2)]
expected_reward = sum(pi_[i] * rew[i] for i in range(2))
objective = -expected_reward + bt * sum(pi_[i] * sp.log(pi_[i] / ref[i]) for i in range(2))
gibbs = bt * sum(pi_[i] * sp.log(pi_[i] / star[i]) for i in range(2)) - bt * sp.log(Z)
gibbs_gap = sp.simplify(sp.expand_log(objective - gibbs, force=True))
display(Math(r"\mathcal L^{\rm RL}(\pi)-\big(\beta D_{\rm KL}(\pi\Vert\pi^*)-\beta\log Z\big)="
             + sp.latex(gibbs_gap)))
assert gibbs_gap == 0

# %% [markdown]
# Now sequences: $T=4$ tokens over $\{0,1,2\}$, $\pi_{\mathrm{ref}}$ a random Markov chain (the "reference
# model"), and a sequence-level reward: $+1$ for each token 2, and $+2$ if the sequence ends with the
# token it starts with (a long-range preference: a Markov policy, whose next token sees only the
# one before, cannot express it). We minimise (4.7) numerically over *all* laws on the 81 sequences
# (a full autoregressive table can represent any of them) and compare with the closed form. The
# optimiser is L-BFGS (a standard quasi-Newton method from scipy) on softmax logits $z$,
# $\pi=\mathrm{softmax}(z)$, with the exact gradient
# $\nabla_z\mathcal L^{\mathrm{RL}}=\pi\odot(g-\pi\cdot g)$, $g=-r+\beta\log(\pi/\pi_{\mathrm{ref}})$.
# It follows by the chain rule: $\partial\mathcal L^{\mathrm{RL}}/\partial\pi(f)=g(f)+\beta$, and
# through the softmax $\partial\pi(f)/\partial z_{f'}=\pi(f)\big(\mathbb 1[f=f']-\pi(f')\big)$, so
# $\partial\mathcal L^{\mathrm{RL}}/\partial z_{f'}=\pi(f')\big(g(f')+\beta-\sum_f\pi(f)(g(f)+\beta)\big)$,
# in which the constant $\beta$ cancels because $\sum_f\pi(f)=1$.

# %%
Vr, Tr = 3, 4  # |V| and the length T of the sequences
ref_src = markov_source(Vr, 1, rng)
pi_ref, seqs = sequence_distribution(markov_next_probs(ref_src), Vr, Tr)
reward = (seqs == 2).sum(axis=1) + 2.0 * (seqs[:, 0] == seqs[:, -1])


def rl_gradient(z, beta):
    pi = np.exp(z - z.max())
    pi /= pi.sum()
    g = -reward + beta * (np.log(pi) - np.log(pi_ref))
    return pi, pi * (g - pi @ g)


beta = 0.5


def objective_and_grad(z):
    pi, grad = rl_gradient(z, beta)
    return rl_objective(pi, pi_ref, reward, beta), grad


# start at the reference model, as in practice; a generic quasi-Newton method with the exact gradient
res_all = scipy.optimize.minimize(objective_and_grad, np.log(pi_ref), jac=True, method="L-BFGS-B",
                                  options={"gtol": 1e-10, "maxiter": 5000})
pi_gd, _ = rl_gradient(res_all.x, beta)
pi_star, min_value = kl_regularised_optimum(pi_ref, reward, beta)
value_gd = rl_objective(pi_gd, pi_ref, reward, beta)
print(f"beta = {beta}: (4.7) at the numerical minimiser {produced(value_gd, '.4f')}, "
      f"closed form -beta log Z = {min_value:.4f}")
assert abs(rl_objective(pi_gd, pi_ref, reward, beta) - min_value) < 1e-5
assert 0.5 * np.abs(pi_gd - pi_star).sum() < 1e-3
print("TV(pi from the optimiser, closed-form pi*) < 1e-3:",
      0.5 * np.abs(pi_gd - pi_star).sum() < 1e-3)

# %% [markdown]
# **β's effect.** Small β lets the policy chase reward (π* concentrates on the best sequences);
# large β keeps it at the reference model, with $\mathbb E_{\pi^*}r=\mathbb E_{\mathrm{ref}}r+\mathrm{Var}_{\mathrm{ref}}(r)/\beta+\mathcal O(\beta^{-2})$.
# The curve below traces expected reward against the KL paid for it as β varies; both limits are
# checked.

# %%
betas = np.logspace(-2, 2, 25)
exp_reward, kl_paid = [], []
for b in betas:
    ps, _ = kl_regularised_optimum(pi_ref, reward, b)
    exp_reward.append(ps @ reward)
    kl_paid.append(kl_divergence(ps, pi_ref))
best_seqs = reward == reward.max()
print(f"max reward {reward.max():.0f} at {best_seqs.sum()} sequence(s); "
      f"reference expected reward {pi_ref @ reward:.3f}")
print(f"beta = 0.01: expected reward {exp_reward[0]:.3f};  beta = 100: {exp_reward[-1]:.3f}, "
      f"KL {kl_paid[-1]:.1e}")
var_ref = pi_ref @ reward**2 - (pi_ref @ reward) ** 2
expansion = pi_ref @ reward + var_ref / betas[-1]
print(f"large-beta expansion E_ref r + Var_ref(r)/beta at beta = 100: {expansion:.3f}")
assert exp_reward[0] > reward.max() - 1e-3  # small beta: the best reward
assert abs(exp_reward[-1] - expansion) < 1e-3  # large beta: the expansion
# Figure 2.3.2: expected reward and KL both monotone (falling) in beta
assert np.all(np.diff(exp_reward) <= 1e-12) and np.all(np.diff(kl_paid) <= 1e-12)

fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
axes[0].semilogx(betas, exp_reward, "o-", ms=3)
axes[0].axhline(pi_ref @ reward, color="k", ls=":", lw=1, label=r"$\pi_{\rm ref}$")
axes[0].set_xlabel(r"$\beta$")
axes[0].set_ylabel(r"$\mathbb{E}_{\pi^*}\, r$")
axes[0].legend()
axes[1].plot(kl_paid, exp_reward, "o-", ms=3)
axes[1].set_xlabel(r"$D_{\mathrm{KL}}(\pi^* \Vert \pi_{\rm ref})$")
axes[1].set_ylabel(r"$\mathbb{E}_{\pi^*}\, r$")
plt.show()

# %% [markdown]
# **Figure 2.3.2.** The KL-regularised optimum of (4.7) as $\beta$ varies. Left: its expected reward
# against $\beta$, falling from the best reward, 6, to the reference model's (dotted black line).
# Right: the same optima as reward against the KL paid for it — each point is one $\beta$, and more
# reward always costs more distance from the reference. Both curves are monotone in $\beta$.
#
# **The policy class matters.** $\pi^*$ is generally not a (time-homogeneous) Markov chain even when
# $\pi_{\mathrm{ref}}$ is: the "ends as it starts" reward couples the first and last tokens. Minimising
# (4.7) over Markov policies only (first-token logits + a $3\times3$ transition table) leaves a gap
# above $-\beta\log Z$.

# %%
def markov_policy(theta):
    """Joint law on the 81 sequences of a Markov policy, (3.3) vectorised."""
    first = np.exp(theta[:Vr] - theta[:Vr].max())
    first /= first.sum()
    P_policy = np.exp(theta[Vr:].reshape(Vr, Vr))  # the policy's transition table
    P_policy /= P_policy.sum(axis=1, keepdims=True)
    return first[seqs[:, 0]] * np.prod(P_policy[seqs[:, :-1], seqs[:, 1:]], axis=1)




def markov_objective(theta):
    """(4.7) for the Markov policy with parameters theta."""
    return rl_objective(markov_policy(theta), pi_ref, reward, beta)


res = scipy.optimize.minimize(markov_objective, np.zeros(Vr + Vr * Vr), method="L-BFGS-B")
gap = res.fun - min_value
print(f"best Markov policy: (4.7) = {produced(res.fun, '.4f')}; over all laws: {min_value:.4f}; "
      f"gap = beta KL(pi_Markov || pi*) = {produced(gap, '.4f')}")
assert gap > 1e-3
assert np.isclose(gap, beta * kl_divergence(markov_policy(res.x), pi_star), rtol=1e-6)

# %% [markdown]
# ## The sample objective (4.8) and its gradient
#
# (4.8) replaces the expectations by $N$ samples from $\pi_\theta$ itself. As a number it is an
# unbiased estimate of (4.7). But the samples depend on θ: differentiating (4.8) with the samples
# held fixed gives $\frac{\beta}{N}\sum_n\nabla\log\pi_\theta(f^{(n)})$, whose expectation is **zero**
# — the reward drops out entirely. The gradient of (4.7) needs the score-function (REINFORCE) form,
# each sample's {term}`score <score function>` $\nabla\log\pi_\theta(f^{(n)})$ (a gradient in the
# model's parameters) weighted by its term minus the batch mean,
# $\frac1{N-1}\sum_n\big(g(f^{(n)})-\bar g\big)\nabla\log\pi_\theta(f^{(n)})$, $g=-r+\beta\log(\pi_\theta/\pi_{\mathrm{ref}})$.
# With the joint logits $z$, $\nabla_z\log\pi(f)=o_f-\pi$. Averaging many batches at $\pi_\theta=\pi_{\mathrm{ref}}$:

# %%
def cos(a, c):
    """Cosine of the angle between two vectors."""
    return float(a @ c / np.linalg.norm(a) / np.linalg.norm(c))


# %%
pi_now = pi_ref
exact_grad = rl_gradient(np.log(pi_now), beta)[1]
N = 64
values, naive, reinforce = [], np.zeros_like(pi_now), np.zeros_like(pi_now)
for _ in range(BATCHES):
    idx = rng.choice(len(pi_now), size=N, p=pi_now)
    log_pi, log_ref = np.log(pi_now[idx]), np.log(pi_ref[idx])
    values.append(rl_empirical_objective(log_pi, log_ref, reward[idx], beta))
    score = np.eye(len(pi_now))[idx] - pi_now  # (N, S): grad_z log pi(f_n)
    g = -reward[idx] + beta * (np.log(pi_now[idx]) - np.log(pi_ref[idx]))
    naive += beta * score.mean(axis=0) / BATCHES
    reinforce += ((g - g.mean())[:, None] * score).sum(axis=0) / (N - 1) / BATCHES
values = np.array(values)
se = values.std(ddof=1) / np.sqrt(BATCHES)
exact_value = rl_objective(pi_now, pi_ref, reward, beta)
print(f"(4.8) averaged over batches: {produced(values.mean(), '.4f')} +- {produced(se, '.4f')}; "
      f"(4.7) exactly: {exact_value:.4f}")
naive_ratio = np.linalg.norm(naive) / np.linalg.norm(exact_grad)
reinforce_ratio = np.linalg.norm(reinforce) / np.linalg.norm(exact_grad)
print(f"|naive gradient| / |exact| = {produced(naive_ratio, '.3f')}")
print(f"cosine(REINFORCE mean, exact) = {produced(cos(reinforce, exact_grad), '.3f')}; "
      f"|REINFORCE| / |exact| = {produced(reinforce_ratio, '.3f')}")
assert abs(values.mean() - rl_objective(pi_now, pi_ref, reward, beta)) < 4 * se + 1e-12
assert np.linalg.norm(naive) < 0.1 * np.linalg.norm(exact_grad)  # the reward drops out
assert cos(reinforce, exact_grad) > 0.97  # the score-function estimator points the right way

# %% [markdown]
# (The batch mean $\bar g$ subtracted from each term is called a *baseline*. Dividing by $N-1$, not
# $N$, makes the estimator unbiased: $\bar g$ is
# estimated from the same batch.) The naive gradient's expectation is zero at *every* θ, not only
# at the reference model: the score $\nabla\log\pi_\theta(f)$ has mean zero under $\pi_\theta$
# (its mean is $\sum_f\nabla\pi_\theta(f)=\nabla 1=0$), so what the batches average to is sampling
# noise — a small fraction of the exact gradient's length, as printed. Here, at
# $\pi_\theta=\pi_{\mathrm{ref}}$, the exact gradient is all reward (the KL term and its gradient
# vanish at the reference), and the naive one misses it entirely. Remark 4.10's point — RL needs samples from the model during training —
# shows up here a second time: the gradient itself must account for where the samples came from.

# %% [markdown]
# ## Key takeaways
#
# - Fine-tuning is the same next-token training on a small task-specific data set (4.6), started
#   from the pre-trained weights; on this page's scarce data (one pre-training source and one shift of
#   it) that start reaches a lower KL than training from scratch (each compared at the best of the
#   step counts tried).
# - A low-rank update (LoRA) trains $2|\mathcal V|s$ numbers instead of $|\mathcal V|^2$; on this
#   page's one source and shift, where its rank matches the true change, it also over-fits less
#   (Remark 4.9).
# - KL-regularised RL (4.7) has a closed-form optimum: the reference model tilted by
#   $e^{r/\beta}$; $\beta$ trades reward against distance from the reference.
# - A model class that cannot represent the tilted distribution (here a Markov policy facing a
#   long-range reward) cannot reach the optimum: each of its policies $\pi$ stays
#   $\beta D_{\mathrm{KL}}(\pi\Vert\pi^*)$ above it, so even the best one keeps a positive gap.
# - The sampled objective (4.8) estimates (4.7) without bias, but its gradient must account for the
#   samples' dependence on the model (the score-function form), or the reward drops out.

# %% [markdown]
# ## Check your understanding
#
# 1. In the tiny example, what is $\pi^*(\text{polite})$ when $\beta\to\infty$, and when
#    $\beta\to0$? Why?
#
#    ```{dropdown} Answer
#    As $\beta\to\infty$ the penalty dominates and $\pi^*\to\pi_{\mathrm{ref}}$, so $\tfrac12$; as
#    $\beta\to0$ only the reward counts and $\pi^*(\text{polite})\to1$. The formula
#    $\tfrac12e^{1/\beta}/(\tfrac12e^{1/\beta}+\tfrac12)$ shows both limits.
#    ```
#
# 2. The full $10\times10$ update has $100$ trainable numbers, a rank-2 LoRA update $2\cdot10\cdot2=40$. Why does
#    the update with *fewer* parameters over-fit less (its KL rises less with more steps)?
#
#    ```{dropdown} Answer
#    With 290 tokens the full update fits the noise of the small sample as well as the true change,
#    so with more steps its KL climbs back up (to 1.82 times its best after 400 steps). The true change
#    here has rank 2, so the rank-2 update can still express it while having less freedom to fit
#    noise (1.27 times): here the restriction acts as a regulariser (measured for this one source and
#    shift; a shift of another rank, or another source, could come out otherwise). Stopping early is
#    another regulariser, which is why the full update at its best number of steps can do about as
#    well.
#    ```
#
# 3. Why does the best Markov policy stay above $-\beta\log Z$ here, however long it is trained?
#
#    ```{dropdown} Answer
#    The reward pays for ending with the token the sequence started with, so $\pi^*$ couples the
#    first and last tokens. A Markov policy's next token depends only on the previous one, so it
#    cannot represent $\pi^*$; by the Gibbs identity its objective is $\beta D_{\mathrm{KL}}(\pi\Vert\pi^*)$
#    above the minimum, and that KL is positive for every Markov $\pi$.
#    ```

# %% tags=["hide-cell"]
# The numbers the answers state. Question 1: the two limits of pi*(polite) = e^(1/beta) / (e^(1/beta) + 1).
limits = [kl_regularised_optimum(ref_tiny, reward_tiny, b)[0][0] for b in (1e-3, 1e3)]
print(f"Q1: pi*(polite) at beta = 0.001: {limits[0]:.6f}; at beta = 1000: {limits[1]:.6f}")
assert limits[0] > 1 - 1e-9 and abs(limits[1] - 0.5) < 1e-3
# Question 2: trainable numbers of the full update and of a rank-2 LoRA update, |V| = 10
print(f"Q2: full update {V * V} numbers; rank-2 LoRA {2 * V * 2} numbers")
assert V * V == 100 and 2 * V * 2 == 40

# %% [markdown]
# ## Checking the paper
#
# The paper states the objectives (4.6)–(4.8) and two remarks; the page checks each claim it can:
#
# - **Remark 4.9, low-rank updates are cheaper and regularise.** Cheaper: $2|\mathcal V|s$ trainable
#   numbers against $|\mathcal V|^2$ (the counts printed after Figure 2.3.1). Regularise: on 290
#   fine-tuning tokens, for the one pre-training source and rank-2 shift of this page, the rank-2
#   update's KL rises less with more steps than the full update's or rank 4's, and at its best it
#   beats training from scratch and ranks 1 and 4 (asserted with Figure 2.3.1). It does not reliably
#   beat the full update started from the pre-trained weights and stopped at its best step: over
#   twelve data sets each wins on some (Reproducibility).
# - **(4.7) is minimised starting from the reference model.** The L-BFGS run above starts at
#   $\pi_{\mathrm{ref}}$ and reaches the closed form $-\beta\log Z$ (which the paper does not state; the
#   page derives it).
# - **Remark 4.10, RL needs samples from the model.** True of the objective, and of its gradient: the
#   naive gradient of (4.8) with the samples held fixed has expectation zero at every θ (measured
#   here at $\pi_{\mathrm{ref}}$).
# - **(4.8) averages over its $N$ samples** (the $1/N$ that (4.5) and (4.6) lack), so
#   as a number it estimates (4.7) without bias: the batch average above is within four standard
#   errors of the exact value. (As printed, (4.8) has no brackets around its summand, so the
#   $\beta\log$ term reads as outside the sum; it carries the sample index $n$, so both terms belong
#   inside, which is how the page and `rl_empirical_objective` read it.)
#
# One more check of the rank argument: the exact rank-2 shift, applied to $\log P$ itself, reaches
# the target with no error, so the residual KL of the rank-2 fit is inherited from $W_{\mathrm{pre}}$:

# %% tags=["hide-cell"]
print("the exact rank-2 shift applied to log P gives KL < 1e-12:", floor < 1e-12)
assert floor < 1e-12

# %% [markdown]
# And the helper `markov_policy` used for the restricted policy class agrees with the library's
# autoregressive product (3.3), restated in §5 as (5.1a), on a test chain:

# %% tags=["hide-cell"]
def next_check(prefix):
    """A test chain: uniform first token, then a preference for the next token in the cycle."""
    if not prefix:
        return np.full(Vr, 1 / Vr)
    return np.eye(Vr)[(prefix[-1] + 1) % Vr] * 0.5 + 0.5 / Vr


transitions_check = np.eye(Vr)[(np.arange(Vr) + 1) % Vr] * 0.5 + 0.5 / Vr
theta_check = np.concatenate([np.zeros(Vr), np.log(transitions_check).ravel()])
assert np.allclose(markov_policy(theta_check), sequence_distribution(next_check, Vr, Tr)[0])
print("markov_policy equals the product (3.3) of the test chain's next-token probabilities")

# %% [markdown]
# ## Reproducibility
#
# The fine-tuning curves average `SEEDS` data sets (4 by default, 12 with `FULL=1`; the cell below
# compares rank 2 with the full update on each of twelve) and the
# gradient study `BATCHES` Monte Carlo batches (400, or 2000); every generator is seeded, and the
# numbers Adam or sampling produced are shown as produced numbers, with their claims asserted.
# Library: `nextword.theory.formulation` (`fit_table`, `fit_lora`, `table_kl`,
# `kl_regularised_optimum`, `rl_objective`, `rl_empirical_objective`).

# %% tags=["hide-cell"]
print(f"FULL = {FULL}: SEEDS = {SEEDS} fine-tuning data sets, BATCHES = {BATCHES} batches of "
      f"N = {N} samples")
# rank 2 against the full update, data set by data set, on 12 data sets (each at its best step count)
best_of = {"full fine-tune": [], "LoRA rank 2": []}
for seed in range(12):
    runs = [finetune_scores(10, n_steps, seed) for n_steps in step_grid]
    for name in best_of:
        best_of[name].append(min(run[name] for run in runs))
full_best, rank2_best = np.array(best_of["full fine-tune"]), np.array(best_of["LoRA rank 2"])
rank2_wins = int((rank2_best < full_best).sum())
print(f"12 data sets: LoRA rank 2 below the full update on {produced(rank2_wins, 'd')} of them; mean best KL "
      f"LoRA rank 2 {produced(rank2_best.mean(), '.3f')}, full fine-tune {produced(full_best.mean(), '.3f')}")
assert 2 <= rank2_wins <= 10  # neither update is better on (nearly) every data set
