# %% [markdown]
# # 3.3 The sticky Markov chain: does EM-like training beat SGD?
#
# **The question.** One attention head can be trained two ways: by plain stochastic gradient descent
# (SGD: one gradient step on every parameter for each fresh batch of data),
# or by an "EM-like" schedule that moves the values with a closed-form step of their own. Does the
# EM-like schedule reach a lower loss, or reach it faster — and how close can either get to the
# best prediction any model could make on the task?
#
# A training trick that "converges much faster" is exactly the kind of claim a practitioner would
# act on, so it is worth measuring with care: know the best possible loss, state every choice the
# set-up leaves open, and repeat the comparison over several seeds with error bars. This page does
# all three on the task of the gradient-dynamics paper (a noisy, *sticky* Markov chain), and finds
# that the two schedules end up close together, with no advantage for the EM-like one.
#
# ```{admonition} Learning goals
# :class: tip
# After this page you can
# - compute by hand the entropy rate of a small sticky Markov chain and explain why it is the lowest
#   expected loss a predictor that knows the previous symbol can reach;
# - explain why noisy inputs raise that floor, and what an exact Bayes filter computes;
# - write the training step of SGD and of the EM-like schedule and name the one thing in which
#   they differ;
# - judge a difference between two training methods against its paired sampling error and its
#   spread over seeds.
# ```
#
# **Builds on:** [3.1 Attention gradients](01_attention_gradients.ipynb) (the upstream gradient
# $u_i$ and the gradients of one head) · [3.2 Routing and specialisation](02_routing_and_specialisation.ipynb)
# (the value step $\Delta v_j = -\eta_v\sum_i\alpha_{ij}u_i$ and its reading as the M-step of the
# EM algorithm) · [6.3 Causal masking](../part1_chapter6/6_3_causal_masking.ipynb) (the head reads
# only its own and earlier positions) · the entropy of a distribution; a Markov chain (the next symbol depends
# only on the current one). **Reading time:** about 40 minutes.
#
# ```{admonition} Symbols on this page
# :class: note
# | symbol | meaning | shape |
# |---|---|---|
# | $y$, $y_t$ | a symbol; the symbol of the chain at step $t$: an id from 0 to $C-1$ | index |
# | $C$ | the number of symbols (3 in the tiny example, 8 in the paper's task) | scalar |
# | $c$, $z$ | a symbol; $z$ a possible value of the hidden previous symbol $y_{t-1}$ | index |
# | $M$, $M_{z,y}$ | the chain's transition matrix (`M` in the code); $M_{z,y}$ the probability that $y$ follows $z$ | $(C, C)$ |
# | $\rho(z,y)$ | the number of steps between states $z$ and $y$ around the circle of the $C$ states | scalar |
# | $\mu_c$ | the mean input vector of symbol $c$ | $(d_x,)$ |
# | $\varepsilon_t$ | the Gaussian noise added to input $t$, $\mathcal N(0,\sigma^2 I)$ | $(d_x,)$ |
# | $x_t$ | the input of position $t$, $\mu_{y_{t-1}}+\varepsilon_t$ (a row vector) | $(d_x,)$ |
# | $d_x$ | the width of an input | scalar |
# | $g_i$ | the head's output (context) at position $i$, $\sum_j\alpha_{ij}v_j$ | $(d_v,)$ |
# | $W^{\text{out}}$ | the read-out matrix, from a context to the $C$ logits (plus a bias $b$) | $(d_v, C)$ |
# | $p_i$ | the head's predicted distribution at position $i$ ($\operatorname{onehot}(y)$: the one-hot vector of symbol $y$) | $(C,)$ |
# | $u_i$ | the upstream gradient of position $i$'s own loss $-\log p_i(y_i)$ with respect to $g_i$: $(p_i-\operatorname{onehot}(y_i))(W^{\text{out}})^\top$ | $(d_v,)$ |
# | $U$ | the $u_i$ of the $N$ positions of a batch (all its sequences together), stacked as rows | $(N, d_v)$ |
# | $\Delta V$, $\Delta W^V$ | the change one training step makes to the values $V=XW^V$ and to $W^V$ | $(N, d_v)$, $(d_x, d_v)$ |
# | $\mathcal L^{\text{EM}}_t$, $\mathcal L^{\text{SGD}}_t$ | the loss of each trained head on held-out token $t$ | scalar |
# | $\eta$, $\eta_v$ | the rate of the gradient steps; the rate of the EM-like value step | scalar |
# ```
#
# *Source: Aggarwal, Dalal, Misra (gradient dynamics), §5.3 (the "manual EM" schedule) and §7.2
# (the sticky chain, Table 1, Figs. 6–9).*

# %%
import os
from dataclasses import replace

import matplotlib.pyplot as plt
import numpy as np
import sympy as sp

from nextword.booktools.display import produced
from nextword.booktools.plotting import use_book_style
from nextword.booktools.schematics.dynamics import draw_protocols
from nextword.data import STICKY_RULES, MarkovSource, sticky_markov_chain
from nextword.provenance import load_curves, load_result
from nextword.theory.dynamics import HeadParams, head_forward, head_gradients, pca_fit
from nextword.theory.dynamics.sticky import (
    ProtocolConfig,
    StickyExperimentConfig,
    bayes_filter_log_probs,
    make_sticky_task,
    markov_entropy_rate,
    mean_cross_entropy,
    run_sticky_experiment,
    same_symbol_attention,
    sticky_means,
    train_protocol,
)
from nextword.theory.dynamics.table1 import PAPER_TABLE1, smooth

use_book_style()

# %% tags=["parameters"]
# Default: a small run (8 fresh sequences of length 64 per step, 300 steps, three seeds).
# FULL=1: the paper's sizes (one sequence of 2000 tokens per step, 1000 steps, five seeds).
FULL = os.environ.get("FULL", "0") == "1"
if FULL:
    CONFIG, SEEDS = PAPER_TABLE1, range(5)
else:
    CONFIG = StickyExperimentConfig(batch=8, T=64, eval_T=2000,
                                    protocol=ProtocolConfig(steps=300, lr=1.0, value_lr=5.0))
    SEEDS = range(3)
print(f"{CONFIG.protocol.steps} steps, {CONFIG.batch} x T={CONFIG.T} tokens per step, "
      f"held-out sequence of {CONFIG.eval_T} tokens, seeds {list(SEEDS)}")

# %% [markdown]
# ## A tiny example by hand
#
# A {term}`Markov chain` over three symbols (ids 0, 1, 2, so $C = 3$) is *sticky* when it repeats the current symbol
# more often than chance: say it stays with probability $0.5$ and moves to each of the other two
# with probability $0.25$. A model that must predict the next symbol and *knows the current one*
# can do no better than to say exactly these probabilities. Its average cross-entropy loss is then
# the entropy of one row,
# $$H = -(0.5\ln 0.5 + 0.25\ln 0.25 + 0.25\ln 0.25) \approx 1.0397 \text{ nats},$$
# the chain's {term}`entropy rate`. Two other predictors, for comparison: one that ignores the past
# (uniform, loss $\ln 3$), and an overconfident one that gives "stay" $0.9$:

# %%
# the true next-symbol law after any symbol
row = {"stay": 0.5, "move to one other": 0.25, "move to the other": 0.25}
predictors = {"the true row": (0.5, 0.25, 0.25),
              "uniform (ignores the past)": (1 / 3, 1 / 3, 1 / 3),
              "overconfident stay": (0.9, 0.05, 0.05)}
expected_losses = {}
for name, predicted in predictors.items():
    expected_loss = 0.0
    for p_true, q in zip(row.values(), predicted):   # average of -log q over what happens
        expected_loss += p_true * -np.log(q)
    print(f"{name:28s} expected loss {expected_loss:.4f} nats")
    expected_losses[name] = expected_loss
ignoring_cost = expected_losses["uniform (ignores the past)"] - expected_losses["the true row"]
print(f"ignoring the past costs {ignoring_cost:.4f} nats per symbol")
entropy_rate_3 = -sum(p * np.log(p) for p in row.values())
assert abs(entropy_rate_3 - 1.0397) < 1e-4

# %% [markdown]
# The true row is best; ignoring the past costs $0.059$ nats per symbol; overconfidence costs far
# more. Two lessons carry over to the larger task. First, the entropy rate is a **floor**: no model's
# *expected* loss is below it (on a finite sample a model can be lucky by a little), so a loss must be
# compared with it. Second, the gap between the floor and
# the uniform guess is the *whole* room a model has to improve in — here less than a tenth of a
# nat, which makes differences between training methods small numbers that must be read against
# their sampling noise.
#
# ## The task and the best possible loss
#
# The paper's task (its §7.2) uses a sticky chain over $C=8$ symbols that stays with probability
# 0.3, and a head that does not see the previous symbol $y_{t-1}$ directly but a noisy vector
# standing for it: $x_t=\mu_{y_{t-1}}+\varepsilon_t$, with one mean vector $\mu_c\in\mathbb R^{20}$
# per symbol and Gaussian noise $\varepsilon_t\sim\mathcal N(0,I)$. A causal head ($d_x=20$,
# $d_k=10$, $d_v=15$) predicts $y_t$ from $x_1,\dots,x_t$. After a non-stay move the chain jumps
# from state $z$ to a state $y\ne z$ with probability proportional to $1/\rho(z,y)$, where
# $\rho(z,y)=\min(\lvert z-y\rvert, 8-\lvert z-y\rvert)$ is the number of steps between them around a
# circle of 8 states: nearer states are likelier. (The paper's sentence stating the rule is garbled; this is the reading
# that reproduces its printed floor, [checked below](#checking-the-paper).) The symbol means are drawn
# $\mathcal N(0,I_{20})$; the paper does not say how it chose them.
#
# As in the tiny example, the floor with the previous symbol known is the entropy of one row:
# every row holds $0.3$ for staying and, for the states $1, 2, 3, 4, 3, 2, 1$ steps away, $1-0.3$
# shared in proportion to $1, \tfrac12, \tfrac13, \tfrac14, \tfrac13, \tfrac12, 1$ (these add up to
# $\tfrac{47}{12}$). Every row holds the same numbers in a different order, so every row has the
# same entropy, and the entropy rate (the long-run average of the row entropies, weighted by how often
# each previous symbol occurs) is the entropy of one row. (Every column of $M$ also sums to 1, so in
# the long run every symbol is equally frequent, as the cell checks.)

# %%
C, stay = 8, 0.3
chain = sticky_markov_chain(C, stay, rule="inverse_circular_distance")
M = chain.transition  # (C, C): row z is the law of the symbol after z
stay_sym = sp.Rational(3, 10)
w = [sp.Integer(1), sp.Rational(1, 2), sp.Rational(1, 3), sp.Rational(1, 4), sp.Rational(1, 3),
     sp.Rational(1, 2), sp.Integer(1)]
row_M = [stay_sym] + [(1 - stay_sym) * wk / sum(w) for wk in w]
H_exact = sp.nsimplify(-sum(p * sp.log(p) for p in row_M))
print("row of M:", [str(p) for p in row_M])
print(f"H = -sum p log p = {sp.N(H_exact, 12)} nats")
assert abs(float(H_exact) - chain.entropy_rate()) < 1e-12
assert np.allclose(M.sum(axis=0), 1.0)   # doubly stochastic: the long-run law is uniform

# %% [markdown]
# A sample path agrees with it: the conditional entropy of $10^5$ steps of the chain, estimated by
# counting transitions, is within a few thousandths of the entropy rate.

# %%
path = chain.sample(100_000, np.random.default_rng(0))
counts = np.zeros((C, C))
np.add.at(counts, (path[:-1], path[1:]), 1)
M_hat = counts / counts.sum(axis=1, keepdims=True)
H_hat = -(counts * np.log(M_hat)).sum() / counts.sum()
print(f"empirical conditional entropy: {H_hat:.4f}  (entropy rate {chain.entropy_rate():.4f})")
assert abs(H_hat - chain.entropy_rate()) < 0.005   # within a few thousandths

# %% [markdown]
# **The honest floor: a Bayes filter for the noisy inputs.** The model never sees $y_{t-1}$, only
# $x_t$. The best possible predictor is therefore the exact {term}`Bayes filter`: it keeps a
# probability for every value $z$ the hidden previous symbol could have, updates it with each new
# input by Bayes' rule (Gaussian likelihoods around the means $\mu_z$), and predicts the mixture of
# the rows of $M$,
# $$p(y_t\mid x_{1:t})=\sum_z p(y_{t-1}=z\mid x_{1:t})\,M_{z,y_t};$$
# that prediction, a probability for every value of $y_t$, is its starting belief about the hidden
# symbol of the next input, which the next update then corrects.
# Its expected loss is at least the entropy rate (it knows less than $y_{t-1}$), with equality when
# the noise vanishes. With noise level $\sigma=0$ the filter is exactly $\log M_{y_{t-1},y_t}$,
# which we check; then we see how the floor rises with the noise.

# %%
rng = np.random.default_rng(1)
means = sticky_means(C, 20, rng=rng)       # (C, d_x): mu_c ~ N(0, I)
states = chain.sample(4001, rng)
for sigma in (0.0, 1.0, 2.0, 3.0):
    task = make_sticky_task(states, means, rng=np.random.default_rng(2), noise_std=sigma)
    lp = bayes_filter_log_probs(task, M)   # (T, C): log p(y_t | x_1..x_t)
    if sigma == 0.0:
        assert np.allclose(lp, np.log(M[states[:-1]]), atol=1e-12)
        floor0 = mean_cross_entropy(lp, task.targets)
    if sigma == 1.0:
        floor1 = mean_cross_entropy(lp, task.targets)
    print(f"noise sigma = {sigma:.0f}: Bayes filter cross-entropy on 4000 tokens = "
          f"{mean_cross_entropy(lp, task.targets):.4f} nats")
print(f"(same path with y_(t-1) known: {floor0:.4f}; entropy rate {chain.entropy_rate():.4f})")
assert 0 < floor1 - floor0 < 0.05
mean_distances = np.linalg.norm(means[:, None] - means[None], axis=-1)[np.triu_indices(C, 1)]
print(f"distances between the 8 means: median {np.median(mean_distances):.2f}, "
      f"smallest {mean_distances.min():.2f}")

# %% [markdown]
# For $\sigma=1$ and means about five noise standard deviations apart (distances printed above) the
# increase is small (1.8924 against 1.8748 on the same path with the previous symbol known): the
# inputs nearly identify the previous symbol.
# What sets the increase is the distance between the means compared with $\sigma$, not the input
# width (the paper's table credits the width: [checked below](#checking-the-paper)).
#
# ## The two training schedules
#
# Both start from the same initial weights (Gaussian, scale 0.3) and see the same stream of data:
# at every step a fresh batch of sequences, and one step on the mean cross-entropy $\mathcal L$
# of the batch. (The paper gives neither the initial scale nor whether a step sees fresh data; both
# are our choices, like the rates below.)
#
# * **SGD:** one gradient step with rate $\eta$ on $W^Q, W^K, W^V, W^{\text{out}}, b$.
# * **EM-like** (the paper's "manual EM", §5.3): the forward pass computes the attention weights
#   $\alpha_{ij}$ and the upstream gradients $u_i$ (the E-like step); the values of the batch then
#   take the closed-form step of page 3.2, $\Delta V=-\eta_v\,\alpha^\top U$ (the M-like step);
#   and routing and read-out take the same gradient step with rate $\eta$ as in SGD. (The paper
#   calls this last step a "small" gradient step and gives no rate; we keep SGD's rate, so that the
#   two schedules differ in the value step only. Two more choices are ours: that gradient step
#   reuses the forward pass of the value step, so its gradients are taken with the values as they
#   were *before* the value step, as in SGD (the paper's "alternating steps" does not say whether
#   they are recomputed after the M-like step); and our step also moves the bias $b$, which the
#   paper's list $W_Q, W_K, W_O$ leaves out.)
#
# The name comes from page 3.2's reading of the value step as the {term}`EM algorithm`'s M-step.
# Figure 3.3.1 puts the two side by side.
#
# ```{admonition} In the paper's notation
# :class: seealso
# The paper writes column vectors and $W_Q, W_K, W_V, W_O$, with $W_O$ the transpose of our
# $W^{\text{out}}$; its upstream gradient is $u_i=W_O^\top(p_i-e_{y_i})$, with $e_{y_i}$ our
# $\operatorname{onehot}(y_i)$: the same vector as ours. Its value step is $\Delta v_j=-\eta\sum_i\alpha_{ij}u_i$ with a plain $\eta$ (our $\eta_v$).
# Its "theoretical min entropy" is the entropy rate, and its "stay_prob" the probability 0.3 of
# repeating a symbol, which it writes $P(y_{t+1}=y_t\mid y_t)=0.3$; it gives the transition matrix no
# letter (this page writes $M$, because the book keeps $P$ for a single probability).
# ```

# %%
ax = draw_protocols(CONFIG.protocol.lr, CONFIG.protocol.value_lr)
plt.show()

# %% [markdown]
# **Figure 3.3.1.** One training step of each schedule, per group of parameters ("rate 1" is
# $\eta=1$; the $5$ in the highlighted cell is $\eta_v=5$; "(33)" is the paper's equation number of
# the value step). Look at the highlighted cell: it is the only place where the two differ — how
# the values move. Routing and
# read-out are updated by the same gradient-step rule in both.
#
# The values of a head are not free numbers: $V=XW^V$ is computed from the inputs. So the M-like
# step's $\Delta V$ is carried to $W^V$ by least squares, $\Delta W^V=(X^\top X)^{-1}X^\top\Delta V$,
# which keeps the trained head a function of its input that can be evaluated on new sequences.
# The paper does not say how its value step reaches the weights; this transfer is our reading. (Moving a free value per position instead would let the value of position $t$ memorise $y_t$,
# since under the causal mask query $t$ sees key $t$.) Here is the whole training loop of both
# schedules, written out:


# %%
def train(schedule, params, batches, lr, value_lr):
    """Train one head with "sgd" or "em"; returns the loss of each batch before its step."""
    losses = []
    for batch in batches:                             # a fresh batch of sequences every step
        grads = head_gradients(params, batch.X, batch.targets, causal=True, reduction="mean")
        losses.append(grads.loss)                     # forward pass: alpha, u, the loss
        if schedule == "sgd":
            params = params.sgd(grads, lr)            # every weight: W <- W - lr dL/dW
        else:
            X = batch.X.reshape(-1, batch.X.shape[-1])                          # (N, d_x)
            dV = -value_lr * batch.targets.size * grads.dV.reshape(len(X), -1)  # -eta_v alpha^T U
            params = params.sgd(grads, lr, only=("W_Q", "W_K", "W_O", "b"))     # routing, read-out
            params = replace(params, W_V=params.W_V + np.linalg.solve(X.T @ X, X.T @ dV))
    return losses, params


# %% [markdown]
# (In the code, `W_Q`, `W_K`, `W_V`, `W_O`, `b` are $W^Q, W^K, W^V, W^{\text{out}}, b$. `grads.dV` is
# $\partial\mathcal L/\partial V=\alpha^\top U/N$ for the mean loss over the $N$ positions of the
# batch; multiplying by $N$ gives the paper's $\alpha^\top U$ of the summed loss. The last line
# carries $\Delta V$ to $W^V$ by least squares.)
# The library's `train_protocol`, which the rest of the page calls, runs exactly these lines and
# also records accuracy and the predictive entropy (the entropy of the head's predicted distribution
# $p_i$, averaged over the positions) along the way. We check that on twenty steps, and
# measure how much larger the EM-like value step is than SGD's on the first batch, with our rates
# $\eta=1$ and $\eta_v=5$ (the paper gives neither rate; we chose $\eta_v$ so that the EM-like value
# step is the larger, which is the point of the schedule).

# %%
rng_c = np.random.default_rng(5)
batches = [make_sticky_task(np.stack([chain.sample(CONFIG.T + 1, rng_c) for _ in range(CONFIG.batch)]),
                            means, rng=rng_c) for _ in range(21)]
start = HeadParams.init(20, 10, 15, C, rng=rng_c, scale=CONFIG.init_scale)
short = ProtocolConfig(steps=20, lr=CONFIG.protocol.lr, value_lr=CONFIG.protocol.value_lr)
for schedule in ("sgd", "em"):
    library_run = train_protocol(schedule, start, batches.__getitem__, short, probe=batches[0])
    ours, _ = train(schedule, library_run.initial, batches, short.lr, short.value_lr)
    assert np.allclose(ours, library_run.losses, rtol=1e-10, atol=1e-12)
    print(f"{schedule:3s}: the loop above and train_protocol give the same 21 losses; "
          f"loss {produced(ours[0], '.3f')} -> {produced(ours[-1], '.3f')} nats")



def first_step_ratio(rng):
    """||Delta V|| of the EM-like schedule over SGD's, on one fresh batch from a fresh start."""
    batch = make_sticky_task(np.stack([chain.sample(CONFIG.T + 1, rng) for _ in range(CONFIG.batch)]),
                             means, rng=rng)
    params = HeadParams.init(20, 10, 15, C, rng=rng, scale=CONFIG.init_scale)
    grads = head_gradients(params, batch.X, batch.targets, causal=True, reduction="mean")
    X = batch.X.reshape(-1, 20)  # (N, d_x)
    dV_em = -CONFIG.protocol.value_lr * batch.targets.size * grads.dV.reshape(-1, 15)  # M-like step
    dV_em_realised = X @ np.linalg.solve(X.T @ X, X.T @ dV_em)  # what W^V can carry
    dV_sgd = X @ (-CONFIG.protocol.lr * grads.W_V)  # SGD's change of the same values
    return np.linalg.norm(dV_em_realised) / np.linalg.norm(dV_sgd)


ratios = np.array([first_step_ratio(np.random.default_rng(100 + k)) for k in range(10)])
ratio_vs = ratios.mean()
print(f"first step, ten fresh starts: ||Delta V (EM-like)|| / ||Delta V (SGD)|| = {ratio_vs:.2f} "
      f"on average (from {ratios.min():.2f} to {ratios.max():.2f})")
assert np.all(ratios > 1) and round(ratios.min(), 1) == 1.0 and round(ratios.max(), 1) == 1.8

# %% [markdown]
# So on the first step the EM-like schedule moves the values further than SGD does (about 1.4 times
# as far on average, from 1.0 to 1.8 times over ten fresh starts), and everything else identically.
#
# ## Training both, and the curves
#
# One run of each schedule (seed 0), 300 steps of 8 fresh sequences of 64 tokens. The per-step
# curves are measured on each step's fresh batch before its update (so they are held-out too, but
# noisy); we draw them with a 20-step moving average.

# %%
exp = run_sticky_experiment(CONFIG, rng=np.random.default_rng(0))
m = exp.metrics
print(f"held-out sequence: {exp.eval_task.T} tokens")

# %%
EM_COLOUR, SGD_COLOUR = "#0072B2", "#D55E00"   # blue, vermilion
fig, axes = plt.subplots(1, 3, figsize=(14, 3.6))
panels = (("losses", "cross-entropy (nats)"), ("accuracies", "accuracy"),
          ("entropies", "predictive entropy (nats)"))
for ax, (key, ylabel) in zip(axes, panels):
    for run, color in ((exp.em, EM_COLOUR), (exp.sgd, SGD_COLOUR)):
        curve = getattr(run, key)
        ax.plot(curve, color=color, alpha=0.2, lw=0.8)
        ax.plot(np.arange(19, len(curve)), smooth(curve), color=color,
                label="EM-like" if run.protocol == "em" else "SGD")
    if key != "accuracies":
        ax.axhline(m["entropy_rate"], color="black", ls="--", lw=1, label="entropy rate")
        ax.set_ylim(m["entropy_rate"] - 0.1, 2.3)
    else:
        ax.axhline(m["bayes_acc"], color="black", ls="--", lw=1, label="Bayes filter")
    ax.set_xlabel("training step")
    ax.set_ylabel(ylabel)
    ax.legend()
plt.tight_layout()
plt.show()

# %%
# Figure 3.3.2: the two smoothed curves lie almost on top of each other, above the dashed floor
for key in ("losses", "entropies"):
    gap = np.abs(smooth(getattr(exp.em, key)) - smooth(getattr(exp.sgd, key)))
    print(f"{key:9s}: mean |EM-like - SGD| of the smoothed curves {produced(gap.mean(), '.4f')} nats")
    assert gap.mean() < 0.02                                            # Figure 3.3.2: on top
for run in (exp.em, exp.sgd):
    loss_curve = smooth(run.losses)                                     # from step 19 on
    assert loss_curve.min() > m["entropy_rate"]                         # Figure 3.3.2: above it
    assert smooth(run.entropies).min() > m["entropy_rate"]              # the entropy too
    # Figure 3.3.2: the loss falls fast at the start (from step 0 to 100), then levels off (100 to 300)
    assert run.losses[0] - loss_curve[100 - 19] > 10 * abs(loss_curve[100 - 19] - loss_curve[-1])

# %% [markdown]
# **Figure 3.3.2.** Loss, accuracy and predictive entropy per step for the EM-like schedule (blue)
# and SGD (vermilion); faint: the raw per-batch values, solid: 20-step averages; dashed black: the
# entropy rate (left, right) and the Bayes filter's accuracy on the held-out sequence (middle).
# Look at how closely the two solid curves of each panel follow each other (their mean gaps in loss
# and in entropy are printed above). The loss falls fast over the first hundred steps and then levels off above the
# dashed floor; the smoothed predictive entropy stays above it too, although an entropy, unlike a
# loss, has no floor (a confidently wrong head has a small entropy and a large loss), so the faint
# per-batch values need not.
#
# ## Does EM-like beat SGD? The comparison over seeds
#
# One run cannot say whether one schedule beats the other: the difference between two final losses
# is a random number too. Two things tell us how large its noise is.
#
# * **The paired error on one held-out sequence.** Both heads are scored on the *same* 2000
#   held-out tokens, so we look at the per-token difference of their losses, $\mathcal L^{\text{EM}}_t -
#   \mathcal L^{\text{SGD}}_t$: its mean is the difference of the final losses, and its standard error
#   (standard deviation $/\sqrt{2000}$) says how much that mean would move on another held-out
#   sequence. Pairing removes the noise the two heads share (hard tokens are hard for both).
# * **The spread over seeds.** We repeat the whole experiment with new means, initial weights,
#   training data and held-out sequence.
#
# We also record how many steps each smoothed loss curve takes to come within 0.1 nats of the
# Bayes filter's loss — a simple measure of "faster".

# %%
results = [exp] + [run_sticky_experiment(CONFIG, rng=np.random.default_rng(seed))
                   for seed in SEEDS if seed != 0]

# %%
print("seed | loss EM  | loss SGD | EM - SGD (paired 2 s.e.) | Bayes filter | "
      "steps to Bayes + 0.1: EM, SGD")
deltas, two_se, reach = [], [], []
for seed, e in zip(SEEDS, results):
    y_e = e.eval_task.targets
    nll = {r.protocol: -r.log_probs(e.eval_task)[np.arange(len(y_e)), y_e] for r in (e.em, e.sgd)}
    paired = nll["em"] - nll["sgd"]                    # per-token difference, (eval_T,)
    se = paired.std(ddof=1) / np.sqrt(len(paired))     # its standard error
    delta = e.metrics["final_loss_em"] - e.metrics["final_loss_sgd"]
    assert np.isclose(delta, paired.mean())
    target = e.metrics["bayes_loss"] + 0.1
    steps_to = [int(np.argmax(smooth(r.losses) <= target)) + 19
                if np.any(smooth(r.losses) <= target) else -1 for r in (e.em, e.sgd)]
    deltas.append(delta)
    two_se.append(2 * se)
    reach.append(steps_to)
    print(f"  {seed}  | {produced(e.metrics['final_loss_em'], '.4f')}   | "
          f"{produced(e.metrics['final_loss_sgd'], '.4f')}   | "
          f"{produced(delta, '+.4f')} ({produced(2 * se, '.4f')})        | "
          f"{e.metrics['bayes_loss']:.4f}       | {produced(steps_to, 'd')}")
deltas, two_se, reach = np.array(deltas), np.array(two_se), np.array(reach)
print(f"EM-like lower in {produced(int((deltas < 0).sum()))} of {len(deltas)} seeds; mean "
      f"difference {produced(deltas.mean(), '+.4f')} nats, largest |difference| "
      f"{produced(np.abs(deltas).max(), '.4f')} nats")
if not FULL:  # the short runs (FULL=1: the paper's sizes, checked at the end of the page)
    assert np.all(np.abs(deltas) < 0.01)           # level to within a hundredth of a nat
    assert np.all(np.abs(deltas) < two_se)         # and within two paired standard errors
    assert np.all(reach > 0) and np.all(np.abs(reach[:, 0] - reach[:, 1]) <= 0.2 * reach.max(axis=1))
for e in results:                                  # nobody beats the floor beyond noise
    assert e.metrics["final_loss_em"] > e.metrics["bayes_loss"] - 0.05
    assert e.metrics["final_loss_sgd"] > e.metrics["bayes_loss"] - 0.05

# %% [markdown]
# In every seed the two final losses differ by less than a hundredth of a nat (the largest difference
# is printed above), inside their paired sampling error, and the two smoothed curves reach "Bayes
# filter + 0.1" at step counts within a fifth of each other (a few steps apart, printed above). The
# EM-like schedule is not measurably better on this task. (The paper reports a gap of 0.022 nats and
# a much faster convergence for the EM-like schedule; we do not reproduce either, also at the
# paper's own sizes — [checked below](#checking-the-paper).)
#
# Why can a larger value step change so little? The two schedules share everything but the value
# step: the same data, the same initial weights and the same gradient-step rule on routing ($W^Q$,
# $W^K$) and read-out (the same rule, not the same steps: the steps use the current values, which
# differ once the value steps differ). One thing the head can learn here is where to look: a query $t$
# that attends to the keys whose input carries the same previous symbol, $y_{j-1}=y_{t-1}$ (its own
# key $t$ is one of them), averages away part of the noise of its input. We measure the attention
# mass on those keys on the held-out sequence, at the start and at the end of training.


# %%
def right_mass(params, task):
    """Attention mass on keys that carry the query's previous symbol (1 = perfect routing)."""
    return same_symbol_attention(head_forward(params, task.X, causal=True).alpha, task)


print("right-key attention mass on the held-out sequence (1 = perfect routing):")
masses = []
for seed, e in zip(SEEDS, results):
    mass = [right_mass(p, e.eval_task) for p in (e.em.initial, e.em.params, e.sgd.params)]
    masses.append(mass)
    print(f"  seed {seed}: start {produced(mass[0], '.3f')} -> "
          f"EM-like {produced(mass[1], '.3f')}, SGD {produced(mass[2], '.3f')}")
masses = np.array(masses)   # (seeds, 3): start, EM-like, SGD
if not FULL:
    assert np.all(masses[:, 1:] > masses[:, :1])   # the short runs move attention to the right keys
    print(f"range at the end: {produced(masses[:, 1:].min(), '.2f')} to "
          f"{produced(masses[:, 1:].max(), '.2f')}")

# %% [markdown]
# Both schedules move attention towards the right keys, and after 300 steps both heads still put
# only about a third to a half of it there: both are far from perfect routing, and the larger value
# step does not give clearly better routing: the two schedules' right-key masses lie in the same
# range (printed above). (This is a description of the short runs, not a full explanation: at the paper's sizes
# the right-key mass *falls* during training in most seeds while the two schedules still end close
# together, with no EM-like advantage; [checked below](#checking-the-paper).)
#
# ## Key takeaways
#
# - The entropy rate of a chain (1.8833 nats for the paper's sticky chain) is the floor for a
#   predictor that knows the previous symbol; with noisy inputs the exact floor is the Bayes
#   filter's loss, a little higher.
# - The EM-like schedule differs from SGD only in how the values move; routing and read-out are
#   updated by the same gradient-step rule.
# - On this task both schedules approach the floor from above and end close together: in the short
#   runs their difference is less than a hundredth of a nat, inside two paired standard errors, in
#   every seed. At the paper's sizes it is inside three paired standard errors in most seeds, SGD is
#   ahead where it is not, and no seed's difference is as large as the 0.022 nats the paper reports
#   ([checked below](#checking-the-paper)).
# - A claim that one training method beats another needs the floor, every open choice stated, and
#   several seeds with paired error bars; a single run is not evidence.
#
# ## Check your understanding
#
# (Exercise 03, `exercises/part3_dynamics/ex03_sticky_entropy_rate.ipynb`, asks you to build the sticky
# chains of several rules and find the one behind the entropy rate 1.8833; Exercise 04,
# `exercises/part3_dynamics/ex04_em_value_step.ipynb`, to implement the EM-like value step and carry
# it to $W^V$ by least squares.)
#
# 1. A sticky chain over 4 symbols stays with probability $0.4$ and moves to each of the other
#    three with probability $0.2$. What is its entropy rate, and what loss does the uniform
#    predictor have?
#
#    ```{dropdown} Answer
#    $H = -(0.4\ln 0.4 + 3\cdot 0.2\ln 0.2) \approx 1.3322$ nats, the entropy of one row (every row
#    is the same up to order, so how often each symbol occurs does not matter). The uniform
#    predictor has $\ln 4 \approx 1.3863$ nats: it is worse by about $0.0541$ nats per symbol
#    (printed below).
#    ```
#
# 2. Why can a trained head's held-out loss come out slightly *below* the Bayes filter's, and what
#    does the page do about it?
#
#    ```{dropdown} Answer
#    The held-out sequence is finite, so both losses are averages with sampling noise; the head can
#    be lucky on this particular sequence. So the page asserts only that no schedule is below the
#    floor by more than sampling noise allows: by less than 0.05 nats in the comparison over seeds
#    (in these runs every final loss is in fact above the filter's; the smallest excess is printed
#    below), and by at most three standard errors of the per-token difference (printed there) in the
#    [check of the paper's table](#checking-the-paper).
#    ```
#
# 3. On the first step the EM-like schedule moves the values about 1.4 times as far as SGD, on
#    average (printed above). Why does that barely change the final loss here?
#
#    ```{dropdown} Answer
#    The two schedules share everything except the value step: the same data, the same initial
#    weights and the same gradient-step rule on routing ($W^Q$, $W^K$) and read-out. A larger step on
#    the values does not make the head route better: in the short runs both heads end with
#    only about a third to a half of their attention on the right keys, in the same range for both
#    schedules. Measured, the
#    final losses differ by less than 0.01 nats in every seed, inside the paired sampling error. The page does not
#    claim that routing is the whole reason: at the paper's sizes the right-key mass falls in most
#    seeds, and the schedules still end close together, with no EM-like advantage.
#    ```

# %% tags=["hide-cell"]
# the numbers of the answers above, computed
H_q1 = -(0.4 * np.log(0.4) + 3 * 0.2 * np.log(0.2))
print(f"Q1: stay {0.4}, move {0.2}: entropy rate {H_q1:.4f} nats; uniform {np.log(4):.4f} nats; "
      f"difference {np.log(4) - H_q1:.4f} nats")
assert abs(H_q1 - 1.3322) < 1e-4 and abs(np.log(4) - 1.3863) < 1e-4
assert abs(np.log(4) - H_q1 - 0.0541) < 1e-4
print(f"Q3: first-step value-step ratio {ratio_vs:.2f} on average (about {ratio_vs:.1f}); "
      f"largest |EM - SGD| {produced(np.abs(deltas).max(), '.4f')} nats, below {0.01} in every seed")
assert round(ratio_vs, 1) == 1.4
excess = min(e.metrics[f"final_loss_{k}"] - e.metrics["bayes_loss"] for e in results for k in ("em", "sgd"))
print(f"Q2: smallest final loss minus Bayes filter loss, over seeds and schedules: "
      f"{produced(excess, '+.4f')} nats (asserted above -0.05; in the short runs, above 0)")
assert excess > -0.05
if not FULL:
    assert excess > 0   # the answer's "every final loss is in fact above the filter's"
if not FULL:
    assert np.abs(deltas).max() < 0.01
    assert 0.25 < masses[:, 1:].min() and masses[:, 1:].max() < 0.6

# %% [markdown]
# ## Checking the paper
#
# This section checks §7.2 of the gradient-dynamics paper: its task statement, the caption and the
# numbers of its Table 1, its Figs. 6–9 and the sentences it attaches to them ("EM converges much
# faster", "longer, more coherent trajectories").
#
# ### Which sticky chain? Reading the rule off the number 1.8833
#
# The task statement is garbled ("transition to a different state with probability proportional
# to modulo distance of 7 with probability proportional to the distance from the previous state …
# the nearby symbol gets higher probability than the distant one"). The "theoretical min entropy"
# of Table 1, 1.8833, is the entropy rate of the chain, so it tells us which rule was meant: we
# compute the entropy rate of every candidate reading (the sticky rules of `nextword.data`, and two
# readings with the forward distance $(y-z) \bmod 8$ from state $z$ to state $y$, printed
# `(y-z mod 8)` in the table below, the code's names).

# %% tags=["hide-cell"]
forward_distance = (np.arange(C)[None, :] - np.arange(C)[:, None]) % C  # (C, C): entry [z, y] is (y - z) mod C


def rule_from_weights(weights):
    """Sticky transition matrix: stay with 0.3, else move from z to y != z with probability ∝ w[z, y]."""
    weights = np.where(forward_distance > 0, weights, 0.0)
    moves = (1 - stay) * weights / weights.sum(axis=1, keepdims=True)
    return MarkovSource(moves + stay * np.eye(C))


candidates = {rule: sticky_markov_chain(C, stay, rule=rule)
              for rule in STICKY_RULES if rule != "dirichlet"}
candidates["forward_distance (y-z mod 8)"] = rule_from_weights(forward_distance.astype(float))
candidates["inverse_forward_distance"] = rule_from_weights(1.0 / np.maximum(forward_distance, 1))
print(f"{'rule':32s} {'entropy rate (nats)':>20s}   matches 1.8833?")
rates = {}
for name, src in candidates.items():
    rates[name] = src.entropy_rate()
    assert np.isclose(rates[name], markov_entropy_rate(src.transition), atol=1e-12)
    print(f"{name:32s} {rates[name]:20.6f}   {'yes' if round(rates[name], 4) == 1.8833 else 'no'}")
matches = [k for k, v in rates.items() if round(v, 4) == 1.8833]
assert matches == ["inverse_circular_distance"]
assert abs(float(H_exact) - rates["inverse_circular_distance"]) < 1e-12

# %% [markdown]
# Of the six readings tried, only **"inverse circular distance"** gives 1.8833 (to the four printed
# digits), and it is also the only one in which "the nearby symbol gets higher probability"
# symmetrically. (Plain circular distance makes far states likelier; the forward-distance reading
# gives 1.8772.) Recorded in `book/ERRATA.md` (row "§7.2 task statement (transition rule)").
#
# ### The caption of Table 1: is the noise "averaged over $d_x$ dimensions"?
#
# The caption of Table 1 gives a reason for the small increase of the floor with noise: the noise
# is "averaged over $d_x$ dimensions" (a central-limit argument). That is not why. The filter
# depends on $x_t$ only through its projection on the span of the means, so coordinates outside it
# are ignored however many there are; what sets the increase is the distance between the means
# relative to $\sigma$. Means drawn $\mathcal N(0,I_{20})$ are typically about six noise standard
# deviations apart (the root-mean-square distance of two of them is $\sqrt{40}\approx 6.3$; ours, median
# 5.31, are a little closer), which is why $\sigma=1$ costs little. With the means held fixed and $d_x$ grown, the floor does not come down
# (the fixed means are $1.5\sqrt2\approx2.1$ apart, closer than the drawn ones, so that the noise
# matters; this is why their floors lie above the drawn means' 1.8924); with $d_x=20$ and the drawn
# means moved closer, it goes up:

# %% tags=["hide-cell"]
floor_dx = {}
for dx in (8, 20, 80):
    fixed = np.zeros((C, dx))
    fixed[:, :C] = 1.5 * np.eye(C)          # pairwise distance 1.5 * sqrt(2) in every d_x
    task = make_sticky_task(states, fixed, rng=np.random.default_rng(2), noise_std=1.0)
    floor_dx[dx] = mean_cross_entropy(bayes_filter_log_probs(task, M), task.targets)
print("means fixed, sigma = 1: Bayes floor for d_x = 8, 20, 80:",
      ", ".join(produced(floor_dx[dx], ".3f") for dx in floor_dx), "nats")
floor_scale = {}
for scale in (1.0, 0.5, 0.25):
    close = sticky_means(C, 20, rng=np.random.default_rng(1), scale=scale)
    task = make_sticky_task(states, close, rng=np.random.default_rng(2), noise_std=1.0)
    dist = np.linalg.norm(close[:, None] - close[None], axis=-1)
    floor_scale[scale] = mean_cross_entropy(bayes_filter_log_probs(task, M), task.targets)
    print(f"d_x = 20, means N(0, {scale}^2 I) (median distance "
          f"{produced(np.median(dist[dist > 0]), '.2f')}): "
          f"Bayes floor {produced(floor_scale[scale], '.4f')} nats")
# d_x does not average the noise away ...
assert max(floor_dx.values()) - min(floor_dx.values()) < 0.05
assert min(floor_dx.values()) > floor0 + 0.05                    # ... and the increase stays
assert floor_scale[1.0] < floor_scale[0.5] < floor_scale[0.25]   # the distance of the means sets it

# %% [markdown]
# Recorded in `book/ERRATA.md` (row "§7.2, Table 1 caption").
#
# ### Table 1, the paper's values beside the short run
#
# The paper's column is copied from its Table 1 (labelled as such); ours is computed on the
# held-out sequence after the last step of the seed-0 short run above (300 steps of 8 × 64
# tokens, not the paper's 1000 steps of 2000; the paper-sized run follows below). "Bayes filter"
# is the exact floor on the same sequence. The row KL(EM ‖ SGD) is the {term}`Kullback–Leibler divergence`
# of the SGD head's predicted distribution from the EM-like head's (ours is averaged over the positions):
# 0 when the two heads predict exactly alike.

# %% tags=["hide-cell"]
paper = {"final_loss_em": 1.8961, "final_loss_sgd": 1.9177, "final_acc_em": 0.2690,
         "final_acc_sgd": 0.2675, "final_entropy_em": 1.9076, "final_entropy_sgd": 1.9276,
         "entropy_rate": 1.8833, "kl_em_sgd": 0.1019}
labels = {"entropy_rate": "theoretical min entropy", "kl_em_sgd": "final KL(EM || SGD)"}
print(f"{'metric':26s} {'paper (Table 1)':>16s} {'this run':>10s}")
for key, value in paper.items():  # the entropy rate is exact; the rest a trained head produced
    ours = f"{m[key]:10.4f}" if key == "entropy_rate" else produced(m[key], "10.4f")
    print(f"{labels.get(key, key):26s} {value:16.4f} {ours}")
print(f"{'Bayes filter loss':26s} {'-':>16s} {m['bayes_loss']:10.4f}")
print(f"{'Bayes filter accuracy':26s} {'-':>16s} {m['bayes_acc']:10.4f}")
gap_paper = paper["final_loss_em"] - paper["final_loss_sgd"]
print(f"Table 1's gap EM - SGD: {gap_paper:+.4f} nats; the short runs' largest |EM - SGD|: "
      f"{produced(np.abs(deltas).max(), '.4f')} nats")
if not FULL:
    assert np.abs(deltas).max() < abs(gap_paper) / 4
assert abs(paper["entropy_rate"] - m["entropy_rate"]) < 5e-5
acc_gap = paper["final_acc_em"] - paper["final_acc_sgd"]
acc_se = np.sqrt(paper["final_acc_em"] * (1 - paper["final_acc_em"]) / 2000)  # binomial, 2000 tokens
print(f"Table 1's accuracy gap EM - SGD: {acc_gap:+.4f}; standard error of an accuracy of "
      f"{paper['final_acc_em']:.2f} measured on 2000 tokens: {acc_se:.4f} (the gap is "
      f"{acc_gap / acc_se:.2f} of it)")
assert acc_gap < acc_se / 5
gap_tokens = round(acc_gap * 2000)   # the gap as a count of tokens, if measured on 2000
print(f"paired: on 2000 tokens the gap is {gap_tokens} tokens; at least {gap_tokens} tokens must then be right "
      f"for one head only, so the gap is at most {gap_tokens}/sqrt({gap_tokens}) = "
      f"{gap_tokens / np.sqrt(gap_tokens):.2f} paired standard errors")
assert gap_tokens == 3 and gap_tokens / np.sqrt(gap_tokens) < 2

# %% [markdown]
# What can be asserted honestly, about this run and about Table 1 itself:
#
# * Neither schedule beats the floor. On a finite held-out sequence the loss of any predictor can
#   dip below the true floor only by sampling noise; we allow three standard errors of the
#   per-token difference to the Bayes filter, and three standard errors of the per-token loss itself
#   against the entropy rate (a fixed number, with no noise of its own).
# * The paper's 1.8833 is the entropy rate we computed, to four digits.
# * Table 1's own numbers cannot carry its caption's "higher accuracy": the accuracy gap is
#   0.0015, while an accuracy near 0.27 measured on 2000 tokens (the paper's sequence length; it
#   does not say on how many tokens it measures) has a standard error of about 0.0099, so the gap is
#   about a seventh of one standard error (printed above). Both heads are scored on the same tokens,
#   so the fair yardstick is the paired one, which can be much smaller; but even paired the gap is
#   too small: on 2000 tokens it is 3 tokens, the standard error of a paired count difference is the
#   square root of the number of tokens on which exactly one head is right, and a difference of 3 needs
#   at least 3 such tokens, so the gap is at most $3/\sqrt3\approx1.7$ paired standard errors, however
#   often the two heads agree (printed above).

# %% tags=["hide-cell"]
y_eval = exp.eval_task.targets
lp_bayes = bayes_filter_log_probs(exp.eval_task, exp.transition)
nll_bayes = -lp_bayes[np.arange(len(y_eval)), y_eval]
for run in (exp.em, exp.sgd):
    lp = run.log_probs(exp.eval_task)
    nll = -lp[np.arange(len(y_eval)), y_eval]
    diff = nll - nll_bayes
    se_diff = diff.std(ddof=1) / np.sqrt(len(diff))
    se_nll = nll.std(ddof=1) / np.sqrt(len(nll))
    assert diff.mean() >= -3 * se_diff, run.protocol
    assert nll.mean() >= m["entropy_rate"] - 3 * se_nll, run.protocol
    print(f"{run.protocol:3s}: excess over the Bayes filter = {produced(diff.mean(), '+.4f')} nats "
          f"(3 s.e. = {produced(3 * se_diff, '.4f')}); loss - entropy rate = "
          f"{produced(nll.mean() - m['entropy_rate'], '+.4f')} "
          f"(3 s.e. = {produced(3 * se_nll, '.4f')})")

# %% [markdown]
# ### Figs. 6–8: does the EM-like schedule converge "much faster"?
#
# The paper's Figs. 6–8 are the curves of Figure 3.3.2 (loss, accuracy, predictive entropy per
# step), and its Results paragraph reads them as "EM converges much faster … while SGD progresses
# more slowly". In the short runs the two smoothed loss curves reach "Bayes filter + 0.1" at step
# counts within a fifth of each other in every seed (table of the comparison over seeds, asserted
# there), and at the paper's sizes within 10 steps of each other (below). Not reproduced.
#
# ### Value trajectories (Fig. 9)
#
# Fig. 9 draws, for 200 sampled positions, the arrow from each value's initial to its final
# position in a PCA plane ({term}`principal component analysis`: the plane along which the points
# vary most), EM in blue and SGD in red, and the text reads it as "EM induces longer, more coherent
# trajectories". We sample 200 positions of the held-out sequence, fit one PCA to their initial
# values and both sets of final values, and measure the two things the paper describes in words, in
# every seed of the short run: the mean arrow length, and the coherence of the arrows (length of
# the mean of the unit displacement vectors, in the full 15-dimensional value space: 1 = all
# parallel).

# %% tags=["hide-cell"]
rng_pca = np.random.default_rng(3)
idx = np.sort(rng_pca.choice(exp.eval_task.T, size=200, replace=False))
V0, Vem, Vsgd = exp.em.values_initial[idx], exp.em.values_final[idx], exp.sgd.values_final[idx]
assert np.allclose(exp.sgd.values_initial, exp.em.values_initial)  # same start
pca = pca_fit(np.concatenate([V0, Vem, Vsgd]), n_components=2)
plane_length = {}
fig, ax = plt.subplots(figsize=(6, 5))
for V_final, color, name in ((Vem, EM_COLOUR, "EM-like"), (Vsgd, SGD_COLOUR, "SGD")):
    start_2d, end_2d = pca.project(V0), pca.project(V_final)
    plane_length[name] = np.linalg.norm(end_2d - start_2d, axis=1).mean()
    print(f"{name}: mean arrow length in the plane {produced(plane_length[name], '.2f')}")
    ax.quiver(start_2d[:, 0], start_2d[:, 1], end_2d[:, 0] - start_2d[:, 0], end_2d[:, 1] - start_2d[:, 1], color=color, angles="xy",
              scale_units="xy", scale=1, width=0.003, alpha=0.6, label=name)
ax.set_xlabel(f"PC1 ({pca.explained_variance_ratio[0]:.0%})")
ax.set_ylabel(f"PC2 ({pca.explained_variance_ratio[1]:.0%})")
ax.legend()
plt.show()
assert plane_length["EM-like"] > plane_length["SGD"]   # Figure 3.3.3: blue longer on average

# %% tags=["hide-cell"]
def arrow_stats(V_start, V_end):
    """Mean length of the displacements V_end - V_start (rows), and their coherence."""
    displacement = V_end - V_start
    lengths = np.linalg.norm(displacement, axis=1)
    coherence = np.linalg.norm((displacement / lengths[:, None]).mean(axis=0))
    return lengths.mean(), coherence


print("seed | mean displacement: EM-like, SGD | coherence: EM-like, SGD")
arrows = []
for seed, e in zip(SEEDS, results):
    em_len, em_coh = arrow_stats(e.em.values_initial[idx], e.em.values_final[idx])
    sgd_len, sgd_coh = arrow_stats(e.sgd.values_initial[idx], e.sgd.values_final[idx])
    arrows.append((em_len, sgd_len, em_coh, sgd_coh))
    print(f"  {seed}  | {produced(em_len, '.2f')}, {produced(sgd_len, '.2f')}"
          f"{'':18s}| {produced(em_coh, '.2f')}, {produced(sgd_coh, '.2f')}")
arrows = np.array(arrows)
assert np.all(arrows[:, 0] > arrows[:, 1])            # Figure 3.3.3: EM-like arrows longer
assert np.all(arrows[:, 2] < arrows[:, 3] + 0.1)      # Figure 3.3.3: not clearly more coherent

# %% [markdown]
# **Figure 3.3.3** (the paper's Fig. 9, seed 0 of the short run). Displacement of 200 sampled values
# $v_j=x_jW^V$ of the held-out sequence from the start to the end of training, EM-like in blue and
# SGD in vermilion, projected on the first two principal axes of all three point sets. Look at the
# lengths and the directions of the two sets of arrows: the blue ones are longer on average (as the
# larger value step makes them: in this plane by a little, in the full 15-dimensional value space
# in every seed; both printed above), but they are
# not more parallel than the vermilion ones (coherence printed above for every seed). The paper's "longer" holds; "more coherent" does not, on our runs.
#
# ### Table 1 at the paper's sizes (the saved run): $T=2000$, 1000 steps, five seeds
#
# At the paper's size — one fresh sequence of $T=2000$ per step, 1000 steps, a held-out sequence
# of 4000 tokens — the comparison is too long for a notebook on a CPU, so it is a *saved run*
# (how it was produced: [Reproducibility](#reproducibility)). The next cells only read the saved
# file.

# %% tags=["hide-cell"]
saved = load_result("dynamics_table1")
rows, planned = saved["data"]["per_seed"], saved["data"]["seeds_planned"]
cfg_saved = saved["config"]
assert (cfg_saved["T"], cfg_saved["batch"], cfg_saved["protocol"]["steps"]) == (2000, 1, 1000)
print("seed | loss EM | loss SGD | EM - SGD (paired 2 s.e.) | Bayes filter | KL(EM||SGD) | "
      "Bayes + 0.1 at step: EM, SGD | right-key mass: start -> EM, SGD")
for r in rows:
    print(f"  {r['seed']}  | {r['final_loss_em']:.4f}  | {r['final_loss_sgd']:.4f}   | "
          f"{r['delta_loss']:+.4f} ({2 * r['paired_se']:.4f})         | {r['bayes_loss']:.4f}"
          f"       | {r['kl_em_sgd']:.4f}      | "
          f"{r['steps_to_bayes01_em']}, {r['steps_to_bayes01_sgd']}"
          f"{'':18s} | {r['right_mass_start']:.2f} -> {r['right_mass_em']:.2f}, "
          f"{r['right_mass_sgd']:.2f}")
d_saved = np.array([r["delta_loss"] for r in rows])
kl_saved = np.array([r["kl_em_sgd"] for r in rows])
print(f"EM-like lower in {int((d_saved < 0).sum())} of {len(rows)} seeds; mean EM - SGD "
      f"{d_saved.mean():+.4f} nats (range {d_saved.min():+.4f} to {d_saved.max():+.4f}; "
      f"Table 1: {gap_paper:+.4f}); KL(EM||SGD) {kl_saved.min():.4f} to {kl_saved.max():.4f} "
      f"(Table 1: {paper['kl_em_sgd']:.4f})")

# %% [markdown]
# The claims this section makes about the paper-sized run. Checked on every saved seed (asserted):
# neither schedule beats the Bayes filter by more than sampling noise; the two schedules' final
# losses differ by less than Table 1's gap; the two heads predict far more alike than Table 1's KL
# says; the steps to "Bayes filter + 0.1" differ by at most 10; the absolute losses are
# within 0.05 nats of Table 1's. Counted, because they do not hold in every seed: the difference
# lies within three paired standard errors; both heads end with less attention on the same-symbol
# keys than at the start.

# %% tags=["hide-cell"]
for r in rows:
    for k in ("em", "sgd"):
        assert r[f"excess_over_bayes_{k}"] >= -3 * r[f"excess_over_bayes_se_{k}"], (r["seed"], k)
se_saved = np.array([r["paired_se"] for r in rows])
steps_saved = np.array([(r["steps_to_bayes01_em"], r["steps_to_bayes01_sgd"]) for r in rows])
losses_saved = np.array([(r["final_loss_em"], r["final_loss_sgd"]) for r in rows])
assert np.all(np.abs(d_saved) < abs(gap_paper))
assert np.all(kl_saved < paper["kl_em_sgd"] / 4)
assert np.all(steps_saved > 0) and np.all(np.abs(steps_saved[:, 0] - steps_saved[:, 1]) <= 10)
assert np.all(np.abs(losses_saved - [paper["final_loss_em"], paper["final_loss_sgd"]]) < 0.05)
print("checked on every saved seed: both schedules above the Bayes filter (3 s.e.); "
      "|EM - SGD| below Table 1's gap; KL(EM||SGD) below a quarter of Table 1's; steps to "
      "Bayes + 0.1 within 10 of each other; final losses within 0.05 nats of Table 1's")
within = np.abs(d_saved) < 3 * se_saved
less_mass = [max(r["right_mass_em"], r["right_mass_sgd"]) < r["right_mass_start"] for r in rows]
print(f"|EM - SGD| within 3 paired s.e.: {int(within.sum())} of {len(rows)} seeds", end="")
for r, ok, z in zip(rows, within, d_saved / se_saved):
    if not ok:
        print(f"; seed {r['seed']}: EM - SGD = {r['delta_loss']:+.4f} nats = {z:+.1f} paired s.e.",
              end="")
print()
print(f"both heads end with less same-symbol key mass than at the start: {sum(less_mass)} of "
      f"{len(rows)} seeds")
assert within.sum() > len(rows) / 2                    # "in most seeds within sampling error"
assert all(delta > 0 for delta, ok in zip(d_saved, within) if not ok)   # where not: SGD is ahead
assert sum(less_mass) > len(rows) / 2                  # "mostly end with less right-key mass"
within_two = np.abs(d_saved) < 2 * se_saved
only_outside_two = [r["seed"] for r, ok2, ok3 in zip(rows, within_two, within) if ok3 and not ok2]
print(f"|EM - SGD| within 2 paired s.e.: {int(within_two.sum())} of {len(rows)} seeds; outside 2 but inside 3: "
      f"seeds {only_outside_two}")
# the paragraph under Figure 3.3.4: with two s.e. the count changes by seed 1, where EM-like is ahead
assert only_outside_two == [1] and rows[1]["seed"] == 1 and d_saved[1] < 0

# %% tags=["hide-cell"]
curves_saved = load_curves("dynamics_table1")  # (seeds, steps + 1) per curve
fig, ax = plt.subplots(figsize=(7, 3.6))
for key, color, name in (("losses_em", EM_COLOUR, "EM-like"), ("losses_sgd", SGD_COLOUR, "SGD")):
    mean_curve = curves_saved[key].mean(axis=0)
    ax.plot(np.arange(19, len(mean_curve)), smooth(mean_curve), color=color,
            label=f"{name} (mean of {curves_saved[key].shape[0]} seeds)")
ax.axhline(np.mean([r["bayes_loss"] for r in rows]), color="black", ls="--", lw=1,
           label="Bayes filter (mean)")
ax.set_ylim(paper["entropy_rate"] - 0.05, 2.3)
ax.set_xlabel("training step")
ax.set_ylabel("loss on the step's fresh sequence (nats)")
ax.legend()
plt.show()
smoothed_saved = {key: smooth(curves_saved[key].mean(axis=0)) for key in ("losses_em", "losses_sgd")}
for curve in smoothed_saved.values():
    assert curve[-1] < curve[0] - 0.1                     # Figure 3.3.4: both curves fall
    assert curve.min() > np.mean([r["bayes_loss"] for r in rows])   # Figure 3.3.4: above the line
gap_saved = np.abs(smoothed_saved["losses_em"] - smoothed_saved["losses_sgd"])
assert gap_saved.mean() < 0.02                            # Figure 3.3.4: together
print(f"saved curves: mean |EM-like - SGD| {gap_saved.mean():.4f} nats")

# %% [markdown]
# **Figure 3.3.4.** Saved paper-sized run: per-step loss of the EM-like schedule (blue) and SGD
# (vermilion), averaged over the saved seeds, 20-step moving average; dashed black: the Bayes
# filter's loss (mean over seeds). Look at the two curves: they fall together and stay level,
# above the dashed line.
#
# **What the saved run shows.** At the paper's size the short run's picture stays: the EM-like
# schedule ends close to SGD — ahead in some seeds, behind in others (counts printed above) —
# always smaller in size than Table 1's gap (the range is printed above), and the two heads
# predict nearly the same distributions (KL(EM‖SGD) a small fraction of Table 1's). In most seeds the difference is within
# three paired standard errors; where it is not (printed above), it is SGD that is ahead, the opposite of Table 1.
# (With the two standard errors of the table the count changes: seed 1's EM-like lead, −0.0061 nats against a
# paired 2 s.e. of 0.0058, lies just outside two standard errors, though inside three.) The absolute
# losses are close to Table 1's, so the task is the same in size; what does not reproduce is the
# EM-like advantage, and its faster convergence. Recorded in `book/ERRATA.md` (row "§7.2 Table 1,
# Results, Takeaways").
#
# One difference from the short run: at this size the heads mostly end with *less* attention on
# the keys that carry the query's previous symbol than they started with (right-key mass column;
# the count of seeds where both heads do is printed above), whereas in the short run that mass
# grew. So the lesson's routing measurement (after the short runs both heads are still far from
# perfect routing) does not explain the close result at this size as it stands; where the trained
# heads attend instead we have not analysed.
#
# ## Reproducibility
#
# The short run trains online (8 fresh sequences of length 64 per step, 300 steps, $\eta = 1$,
# $\eta_v = 5$, seeds 0–2) and evaluates on a held-out sequence of 2000 tokens; it takes under half a
# minute per seed on 2 CPU cores. All trained numbers go through `produced()` (shown, not compared
# as text by nbval), and every claim about them is asserted with a tolerance that the reruns with
# other perturbations of the initial weights (`tests/test_notebook_seeds.py`) check. `FULL=1`
# switches to the paper's sizes and reruns the saved experiment inside this page (the assertions
# that describe the short run are then skipped).
#
# The paper-sized run is a saved run: `nextword results run dynamics_table1` calls
# `nextword.theory.dynamics.table1.table1_seed` (the `run_sticky_experiment` used above, with the
# configuration `PAPER_TABLE1`) for seeds 0–4 and stores every number with its provenance in
# `book/results/dynamics_table1/`. Its provenance, and how much of it ran (all five planned seeds,
# asserted):

# %% tags=["hide-cell"]
print(f"saved run: produced by `{saved['command']}` at commit {saved['commit'][:10]}"
      f"{' (uncommitted changes)' if saved['dirty'] else ''} on {saved['created'][:10]}; "
      f"{len(rows)} of {len(planned)} planned seeds; T = {cfg_saved['T']}, "
      f"{cfg_saved['protocol']['steps']} steps, held-out sequence of {cfg_saved['eval_T']} tokens; "
      f"wall-clock time per seed {[round(r['wall_time_s'] / 60) for r in rows]} min")
assert len(rows) == len(planned) == 5
