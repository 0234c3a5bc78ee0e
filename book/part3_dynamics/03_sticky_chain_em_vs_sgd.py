# %% [markdown]
# # 3.3 The sticky Markov chain: does EM-like training beat SGD?
#
# **The question.** The paper's main experiment trains one attention head two ways — plain gradient
# descent, and an "EM-like" schedule that moves the values with a closed-form step — and reports in
# its Table 1 that the EM-like schedule reaches a lower loss, faster. Does it, and how close can
# either get to the best prediction any model could make on this task?
#
# A training trick that "converges much faster" is exactly the kind of claim a practitioner would
# act on, so it is worth checking with the care a referee would take: know the best possible loss,
# say every choice the paper leaves open, and repeat the comparison over several seeds. This page
# does all three, and finds a smaller effect than the paper.
#
# ```{admonition} Learning goals
# :class: tip
# After this page you can
# - compute by hand the entropy rate of a small sticky Markov chain and explain why it is the lowest
#   average loss a predictor that knows the previous symbol can reach;
# - explain why noisy inputs raise that floor, and what an exact Bayes filter computes;
# - describe the SGD and EM-like training schedules and the one thing in which they differ;
# - judge a reported difference between two training methods against seed-to-seed noise.
# ```
#
# **Builds on:** [3.2 Routing and specialisation](02_routing_and_specialisation.ipynb) (the value
# step $\Delta v_j = -\eta\sum_i\alpha_{ij}u_i$ and its reading as EM's M-step) ·
# [6.3 Causal masking](../part1_chapter6/6_3_causal_masking.ipynb) (the head reads only earlier
# positions) · the entropy of a distribution; a Markov chain (the next symbol depends only on the
# current one). **Reading time:** about 40 minutes.
#
# *Source: Aggarwal, Dalal, Misra (gradient dynamics), §5.3 (the "manual EM" schedule) and §7.2
# (the sticky chain, Table 1, Figs. 6–9).*

# %%
import os

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
)
from nextword.theory.dynamics.table1 import PAPER_TABLE1, smooth

use_book_style()

# %% tags=["parameters"]
# Default: a faithful small run (about 10-30 s on 2 CPU cores). FULL=1: the paper's sizes.
FULL = os.environ.get("FULL", "0") == "1"
if FULL:  # the paper's sizes: T = 2000, 1000 steps, five seeds (the saved run)
    CONFIG, SEEDS = PAPER_TABLE1, range(5)
else:  # 8 fresh sequences of length 64 per step, 300 steps
    CONFIG = StickyExperimentConfig(batch=8, T=64, eval_T=2000,
                                    protocol=ProtocolConfig(steps=300, lr=1.0, value_lr=5.0))
    SEEDS = range(3)
print(f"FULL={FULL}: {CONFIG.protocol.steps} steps, {CONFIG.batch} x T={CONFIG.T} tokens per step, "
      f"held-out sequence of {CONFIG.eval_T} tokens, seeds {list(SEEDS)}")

# %% [markdown]
# ## A tiny example by hand
#
# A {term}`Markov chain` over three symbols A, B, C is *sticky* when it repeats the current symbol
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
# more. Two lessons carry over to the paper's task. First, the entropy rate is a **floor**: no model
# can average below it, so a reported loss must be compared with it. Second, the gap between the
# floor and the uniform guess is the *whole* room a model has to improve in — here less than a tenth
# of a nat, which makes differences between training methods small numbers that must be read
# against their sampling noise.
#
# ## The task and the best possible loss
#
# §7.2 uses an 8-state sticky chain (stay probability 0.3) and a head that does not see the previous
# symbol $y_{t-1}$ directly but a noisy vector standing for it:
# $x_t=\mu_{y_{t-1}}+\varepsilon_t$ with one mean vector $\mu_c\in\mathbb R^{20}$ per symbol and
# Gaussian noise $\varepsilon_t\sim\mathcal N(0,I)$. A causal head ($d_x=20$, $d_k=10$, $d_v=15$)
# predicts $y_t$ from $x_1,\dots,x_t$. How a non-stay move chooses its target is garbled in the
# paper's text; only one reading reproduces the paper's printed floor 1.8833 (the search is in
# [Checking the paper](#checking-the-paper)): after a non-stay move, jump to state $j$ with
# probability proportional to $1/d(i,j)$, $d(i,j)=\min(\lvert i-j\rvert, 8-\lvert i-j\rvert)$
# (nearer states likelier). Our implementation: `nextword.theory.dynamics.sticky`; the symbol means
# are drawn $\mathcal N(0,I_{20})$ (the paper does not say how they are chosen).
#
# As in the tiny example, the floor with the previous symbol known is the entropy of one row:
# every row holds $0.3$ and $(1-0.3)\,w_k/\sum w$ with weights
# $w=(1,\tfrac12,\tfrac13,\tfrac14,\tfrac13,\tfrac12,1)$, and the chain is doubly stochastic, so
# the stationary law is uniform and the entropy rate is the entropy of one row:

# %%
n, stay = 8, 0.3
chain = sticky_markov_chain(n, stay, rule="inverse_circular_distance")
P = chain.transition
stay_sym = sp.Rational(3, 10)
w = [sp.Integer(1), sp.Rational(1, 2), sp.Rational(1, 3), sp.Rational(1, 4), sp.Rational(1, 3),
     sp.Rational(1, 2), sp.Integer(1)]
row_P = [stay_sym] + [(1 - stay_sym) * wk / sum(w) for wk in w]
H_exact = sp.nsimplify(-sum(p * sp.log(p) for p in row_P))
print("row of P:", [str(p) for p in row_P])
print(f"H = -sum p log p = {sp.N(H_exact, 12)} nats")
assert abs(float(H_exact) - chain.entropy_rate()) < 1e-12

# %% [markdown]
# And a sample path agrees with it: the empirical conditional entropy of $10^5$ steps, estimated by
# counting transitions, is within a few thousandths (its sampling standard error is about 0.002).

# %%
path = chain.sample(100_000, np.random.default_rng(0))
counts = np.zeros((n, n))
np.add.at(counts, (path[:-1], path[1:]), 1)
P_hat = counts / counts.sum(axis=1, keepdims=True)
H_hat = -(counts * np.log(P_hat)).sum() / counts.sum()
print(f"empirical conditional entropy: {H_hat:.4f}  (entropy rate {chain.entropy_rate():.4f})")
assert abs(H_hat - chain.entropy_rate()) < 0.01

# %% [markdown]
# **The honest floor: a Bayes filter for the noisy inputs.** The model never sees $y_{t-1}$, only
# $x_t$. The best possible predictor is therefore the exact {term}`Bayes filter` of the hidden
# Markov model with hidden state $y_{t-1}$ and Gaussian emissions,
# $p(y_t\mid x_{1:t})=\sum_z p(y_{t-1}=z\mid x_{1:t})P_{z,y_t}$ (`bayes_filter_log_probs`): it
# keeps a probability for every possible previous symbol, updates it with each new input, and
# predicts the mixture of the rows. Its expected loss is at least the entropy rate, with equality
# when the noise vanishes. With $\sigma=0$ the filter is exactly $\log P_{y_{t-1},y_t}$, which we
# check; then we see how the floor rises with the noise.

# %%
rng = np.random.default_rng(1)
means = sticky_means(n, 20, rng=rng)
states = chain.sample(4001, rng)
for sigma in (0.0, 1.0, 2.0, 3.0):
    task = make_sticky_task(states, means, rng=np.random.default_rng(2), noise_std=sigma)
    lp = bayes_filter_log_probs(task, P)
    if sigma == 0.0:
        assert np.allclose(lp, np.log(P[states[:-1]]), atol=1e-12)
        floor0 = mean_cross_entropy(lp, task.targets)
    print(f"noise sigma = {sigma:.0f}: Bayes filter cross-entropy on 4000 tokens = "
          f"{mean_cross_entropy(lp, task.targets):.4f} nats")
print(f"(same path with y_(t-1) known: {floor0:.4f}; entropy rate {chain.entropy_rate():.4f})")

# %% [markdown]
# For $\sigma=1$ and means about $\sqrt{40}$ apart the increase is small (1.8924 against 1.8748 on
# the same path with the previous symbol known): the inputs nearly identify the previous symbol. (What sets the increase — the distance between the means, not the
# input dimension the paper's caption points to — is checked in
# [Checking the paper](#checking-the-paper).)
#
# ## The two protocols
#
# Both start from the same initialisation (Gaussian, scale 0.3) and see the same stream of data.
#
# * **SGD:** gradient descent with one rate `lr` on $W_Q, W_K, W_V, W_O, b$ (mean cross-entropy).
# * **EM-like** (§5.3, §7.2): E-step = forward pass ($\alpha$, $u$); M-step = the closed-form value
#   step (33) on the values of the current batch, $\Delta V=-\eta_v\,\alpha^\top U$ with the
#   paper's $u_i=W_O^\top(p_i-e_{y_i})$; then a gradient step with `lr` on $W_Q, W_K, W_O, b$ only.
#
# The name comes from page 3.2's reading of the value step as the {term}`EM algorithm`'s M-step.
# Figure 3.3.1 puts the two side by side.

# %%
ax = draw_protocols(CONFIG.protocol.lr, CONFIG.protocol.value_lr)
plt.show()

# %% [markdown]
# **Figure 3.3.1.** One training step of each protocol, per group of parameters. They differ in one
# cell only (highlighted): how the values move. Routing ($W_Q$, $W_K$) and read-out get the same
# gradient steps in both.
#
# Two choices are ours and are stated in the library's docstrings. (i) The values of a head are
# $V=XW_V$; the M-step's $\Delta V$ is carried to $W_V$ by least squares,
# $\Delta W_V=(X^\top X)^{-1}X^\top\Delta V$, so the trained head is still a function of its input
# and can be evaluated on new sequences. (Updating a free per-position table $v_t$ instead lets
# $v_t$ memorise $y_t$ — under the causal mask query $t$ sees key $t$ — and makes the training loss
# meaningless.) (ii) Training is online: every step draws fresh sequences, and all Table 1 metrics
# are measured on one held-out sequence. The paper does not say whether its 1000 steps reuse one
# sequence of length 2000; a single reused sequence of that length lets a head of a few hundred
# parameters overfit. Neither rate is given in the paper; we use `lr = 1` and `value_lr = 5`,
# chosen so that the EM-like value step is *larger* than SGD's (the point of the schedule), as the
# next cell measures at the initialisation.

# %%
rng_c = np.random.default_rng(5)
batch = make_sticky_task(np.stack([chain.sample(CONFIG.T + 1, rng_c) for _ in range(CONFIG.batch)]),
                         means, rng=rng_c)
start = HeadParams.init(20, 10, 15, n, rng=rng_c, scale=CONFIG.init_scale)
grads = head_gradients(start, batch.X, batch.targets, causal=True, reduction="mean")
X_flat = batch.X.reshape(-1, 20)  # (N, d_x)
dV_em = -CONFIG.protocol.value_lr * batch.targets.size * grads.dV.reshape(-1, 15)  # Eq. (33)
dV_em_realised = X_flat @ np.linalg.solve(X_flat.T @ X_flat, X_flat.T @ dV_em)  # via W_V
dV_sgd = X_flat @ (-CONFIG.protocol.lr * grads.W_V)  # SGD's change of the same values
ratio_vs = np.linalg.norm(dV_em_realised) / np.linalg.norm(dV_sgd)
print(f"first step: ||Delta V (EM-like)|| / ||Delta V (SGD)|| = {ratio_vs:.2f}")
assert ratio_vs > 1

# %% [markdown]
# ## Training both, and the curves (Figs. 6–8)
#
# One run of each protocol (seed 0). The per-step curves are measured on each step's fresh batch
# before its update (so they are held-out too, but noisy); we draw a 20-step moving average over
# the raw curve.

# %%
exp = run_sticky_experiment(CONFIG, rng=np.random.default_rng(0))
m = exp.metrics
print(f"held-out sequence: {exp.eval_task.T} tokens")

# %%
fig, axes = plt.subplots(1, 3, figsize=(14, 3.6))
titles = ("cross-entropy (Fig. 6)", "accuracy (Fig. 7)", "predictive entropy (Fig. 8)")
for ax, key, title in zip(axes, ("losses", "accuracies", "entropies"), titles):
    for run, color in ((exp.em, "tab:blue"), (exp.sgd, "tab:red")):
        curve = getattr(run, key)
        ax.plot(curve, color=color, alpha=0.2, lw=0.8)
        ax.plot(np.arange(19, len(curve)), smooth(curve), color=color, label=run.protocol.upper())
    if key != "accuracies":
        ax.axhline(m["entropy_rate"], color="black", ls="--", lw=1, label="entropy rate")
        ax.set_ylim(m["entropy_rate"] - 0.1, 2.3)
    else:
        ax.axhline(m["bayes_acc"], color="black", ls="--", lw=1, label="Bayes filter")
    ax.set_xlabel("step")
    ax.set_title(title)
    ax.legend()
plt.tight_layout()
plt.show()

# %% [markdown]
# **Figure 3.3.2** (the paper's Figs. 6–8). Loss, accuracy and predictive entropy per step for the
# EM-like schedule (blue) and SGD (red). Faint: raw per-batch values; solid: 20-step averages. The
# two solid curves lie almost on top of each other, and both approach the floor from above.
#
# Whether that small difference is an advantage at all is the question of the next section: the
# paper's Table 1 beside our numbers, the comparison repeated over seeds, and the paper-sized run.
#
# ## Checking the paper
#
# ### Which sticky chain? Reading the rule off the number 1.8833
#
# The task statement is garbled ("transition to a different state with probability proportional
# to modulo distance of 7 with probability proportional to the distance from the previous state …
# the nearby symbol gets higher probability than the distant one"). The "theoretical min entropy"
# is computed "assuming $x_{t+1}=y_t$", i.e. with the previous symbol known, so it is the entropy
# rate $H(y_t\mid y_{t-1})$ of the chain. We compute it for every plausible reading: the rules
# that `sticky_markov_chain` offers, and two readings with a *one-directional* distance
# $(j-i)\bmod 8$.

# %%
forward_distance = (np.arange(n)[None, :] - np.arange(n)[:, None]) % n  # (n, n): (j - i) mod n


def rule_from_weights(weights):
    """Sticky transition matrix: stay with 0.3, else move to j != i with probability ∝ w[i, j]."""
    weights = np.where(forward_distance > 0, weights, 0.0)
    moves = (1 - stay) * weights / weights.sum(axis=1, keepdims=True)
    return MarkovSource(moves + stay * np.eye(n))


candidates = {rule: sticky_markov_chain(n, stay, rule=rule)
              for rule in STICKY_RULES if rule != "dirichlet"}
candidates["forward_distance (j-i mod 8)"] = rule_from_weights(forward_distance.astype(float))
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
# Only **"inverse circular distance"** gives 1.8833 (to the four printed digits), and it is also
# the only reading in which "the nearby symbol gets higher probability" symmetrically. (Plain
# circular distance makes far states likelier; the forward-distance reading gives 1.8772.)
# Recorded in `book/ERRATA.md` (row "§7.2 task statement (transition rule)").
#
# ### The caption's central-limit argument
#
# The caption of Table 1 gives a reason for the small increase of the floor with noise: the noise
# is "averaged over $d_x$ dimensions" (a central-limit argument). That is not why. The filter
# depends on $x_t$ only through its projection on the span of the means, so coordinates outside it
# are ignored however many there are; what sets the increase is the distance between the means
# relative to $\sigma$. Means $N(0,I_{20})$ are about $\sqrt{40}$ apart, which is why $\sigma=1$
# costs little above. With the means held fixed and $d_x$ grown, the floor does not come down; with
# $d_x=20$ and the means moved closer, it goes up:

# %%
floor_dx = {}
for dx in (8, 20, 80):
    fixed = np.zeros((n, dx))
    fixed[:, :n] = 1.5 * np.eye(n)          # pairwise distance 1.5 * sqrt(2) in every d_x
    task = make_sticky_task(states, fixed, rng=np.random.default_rng(2), noise_std=1.0)
    floor_dx[dx] = mean_cross_entropy(bayes_filter_log_probs(task, P), task.targets)
print("means fixed, sigma = 1: Bayes floor for d_x = 8, 20, 80:",
      ", ".join(produced(floor_dx[dx], ".3f") for dx in floor_dx), "nats")
floor_scale = {}
for scale in (1.0, 0.5, 0.25):
    close = sticky_means(n, 20, rng=np.random.default_rng(1), scale=scale)
    task = make_sticky_task(states, close, rng=np.random.default_rng(2), noise_std=1.0)
    dist = np.linalg.norm(close[:, None] - close[None], axis=-1)
    floor_scale[scale] = mean_cross_entropy(bayes_filter_log_probs(task, P), task.targets)
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
# ### Table 1, the paper's values beside ours
#
# The paper's column is copied from its Table 1 (labelled as such); ours is computed on the
# held-out sequence after the last step of the seed-0 run above. "Bayes filter" is the exact floor
# on the same sequence.

# %%
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

# %% [markdown]
# What can be asserted honestly:
#
# * Neither protocol beats the floor. On a finite held-out sequence the loss of any predictor can
#   dip below the true floor only by sampling noise; we allow three standard errors of the
#   per-token difference to the Bayes filter, and the same against the entropy rate.
# * The paper's 1.8833 is the entropy rate we computed, to four digits.

# %%
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
assert abs(paper["entropy_rate"] - m["entropy_rate"]) < 5e-5

# %% [markdown]
# ### Value trajectories (Fig. 9)
#
# Fig. 9 draws, for 200 sampled positions, the arrow from each value's initial to its final
# position in a PCA plane (principal component analysis: the plane along which the points vary
# most), EM in blue and SGD in red. We fit one PCA to the initial values and both final sets of the
# held-out sequence, sample 200 positions, and measure two things the paper describes in words:
# the mean arrow length, and the coherence of the arrows (length of the mean of the unit
# displacement vectors, in the full 15-dimensional value space: 1 = all parallel).

# %%
rng_pca = np.random.default_rng(3)
idx = np.sort(rng_pca.choice(exp.eval_task.T, size=200, replace=False))
V0, Vem, Vsgd = exp.em.values_initial[idx], exp.em.values_final[idx], exp.sgd.values_final[idx]
assert np.allclose(exp.sgd.values_initial, exp.em.values_initial)  # same start
pca = pca_fit(np.concatenate([V0, Vem, Vsgd]), n_components=2)
fig, ax = plt.subplots(figsize=(6, 5))
for V_final, color, name in ((Vem, "tab:blue", "EM-like"), (Vsgd, "tab:red", "SGD")):
    a, b = pca.project(V0), pca.project(V_final)
    ax.quiver(a[:, 0], a[:, 1], b[:, 0] - a[:, 0], b[:, 1] - a[:, 1], color=color, angles="xy",
              scale_units="xy", scale=1, width=0.003, alpha=0.6, label=name)
ax.set_xlabel(f"PC1 ({pca.explained_variance_ratio[0]:.0%})")
ax.set_ylabel(f"PC2 ({pca.explained_variance_ratio[1]:.0%})")
ax.legend()
plt.show()

# %%
stats = {}
for V_final, name in ((Vem, "EM-like"), (Vsgd, "SGD")):
    displacement = V_final - V0
    lengths = np.linalg.norm(displacement, axis=1)
    coherence = np.linalg.norm((displacement / lengths[:, None]).mean(axis=0))
    stats[name] = (lengths.mean(), coherence)
    print(f"{name:8s}: mean displacement {produced(lengths.mean(), '.3f')}, coherence {produced(coherence, '.3f')}")

# %% [markdown]
# **Figure 3.3.3** (the paper's Fig. 9). Displacement of 200 sampled values $v_j=x_jW_V$ of the
# held-out sequence from initialisation to the end of training, projected on the first two
# principal axes of all three point sets.
#
# ### Is the EM-like advantage robust?
#
# One run cannot say whether EM-like beats SGD: we repeat the whole experiment for several seeds
# (new means, initialisation, data and held-out sequence) and compare the final held-out losses.

# %%
results = [exp] + [run_sticky_experiment(CONFIG, rng=np.random.default_rng(seed))
                   for seed in SEEDS if seed != 0]

# %%
print("seed | loss EM  | loss SGD | EM - SGD (paired 2 s.e.) | Bayes filter | "
      "steps to Bayes + 0.1: EM, SGD")
deltas, reach = [], []
for seed, e in zip(SEEDS, results):
    y_e = e.eval_task.targets
    nll = {r.protocol: -r.log_probs(e.eval_task)[np.arange(len(y_e)), y_e] for r in (e.em, e.sgd)}
    paired = nll["em"] - nll["sgd"]
    se = paired.std(ddof=1) / np.sqrt(len(paired))
    d = e.metrics["final_loss_em"] - e.metrics["final_loss_sgd"]
    assert np.isclose(d, paired.mean())
    target = e.metrics["bayes_loss"] + 0.1
    steps_to = [int(np.argmax(smooth(r.losses) <= target)) + 19
                if np.any(smooth(r.losses) <= target) else -1 for r in (e.em, e.sgd)]
    deltas.append(d)
    reach.append(steps_to)
    print(f"  {seed}  | {produced(e.metrics['final_loss_em'], '.4f')}   | "
          f"{produced(e.metrics['final_loss_sgd'], '.4f')}   | "
          f"{produced(d, '+.4f')} ({produced(2 * se, '.4f')})        | "
          f"{e.metrics['bayes_loss']:.4f}       | {produced(steps_to, 'd')}")

# %%
deltas = np.array(deltas)
gap_paper = paper["final_loss_em"] - paper["final_loss_sgd"]
print(f"EM-like lower in {produced(int((deltas < 0).sum()))} of {len(deltas)} seeds; mean "
      f"difference {produced(deltas.mean(), '+.4f')} nats, largest |difference| "
      f"{produced(np.abs(deltas).max(), '.4f')} (Table 1: {gap_paper:+.4f})")
if not FULL:  # the default run's finding (FULL: see the text)
    assert np.abs(deltas).max() < abs(gap_paper)
for e in results:
    assert e.metrics["final_loss_em"] > e.metrics["bayes_loss"] - 0.05
    assert e.metrics["final_loss_sgd"] > e.metrics["bayes_loss"] - 0.05

# %% [markdown]
# Where is the bottleneck? For this task the right routing is known: query $t$ should attend to
# keys whose input carries the same previous symbol, $y_{j-1}=y_{t-1}$. We measure the attention
# mass on those keys on the held-out sequence at the start and the end of training.


# %%
def right_mass(params, task):
    """Attention mass on keys that carry the query's previous symbol (1 = perfect routing)."""
    return same_symbol_attention(head_forward(params, task.X, causal=True).alpha, task)


print("right-key attention mass on the held-out sequence (1 = perfect routing):")
for seed, e in zip(SEEDS, results):
    print(f"  seed {seed}: start {produced(right_mass(e.em.initial, e.eval_task), '.3f')} -> "
          f"EM-like {produced(right_mass(e.em.params, e.eval_task), '.3f')}, SGD "
          f"{produced(right_mass(e.sgd.params, e.eval_task), '.3f')}")

# %% [markdown]
# **What we find.** In the default run the EM-like schedule ends ahead in every seed, but by about
# a thousandth of a nat — within the paired sampling error of the held-out comparison and more than
# ten times smaller than Table 1's gap of 0.022 — and its smoothed loss curve reaches "Bayes + 0.1"
# only a few steps (about 5%) earlier than SGD's. The two heads end up predicting almost the same
# distributions (KL about 0.006 against the paper's 0.10). The right-key attention mass explains
# why: after the default budget both heads route only about a third to a half of their attention
# to the keys that carry the needed symbol, and routing — $W_Q, W_K$ — receives *the same*
# gradient steps in both protocols (Figure 3.3.1). The EM-like schedule only changes how the
# values move, and the values are not the bottleneck here. In Fig. 9 the EM-like arrows are longer
# (its value step is larger by our choice of rates, measured above) but not more coherent than
# SGD's.
#
# So we do **not** reproduce the claim of §7.2 / Table 1 that the EM-like schedule reaches a
# clearly lower loss and converges "much faster" than SGD, nor a KL of 0.10 between them. The
# paper gives neither learning rates nor its exact M-step, and its runs may differ from ours in
# ways we cannot recover; our point is only that with a value step larger than SGD's and identical
# routing updates, the gain is marginal.
#
# ### The paper-sized run (saved): $T=2000$, 1000 steps, five seeds
#
# At the paper's size — one fresh sequence of $T=2000$ per step, 1000 steps, a held-out sequence
# of 4000 tokens — the comparison is too long for a notebook on a CPU, so it is a *saved run*
# (how it was produced: [Reproducibility](#reproducibility)). The next cells only read the saved
# file.

# %%
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
# The claims this page makes about the paper-sized run. Checked on every saved seed (asserted):
# neither protocol beats the Bayes filter by more than sampling noise; the two protocols' final
# losses differ by less than Table 1's gap; the two heads predict far more alike than Table 1's KL
# suggests. Counted, because they do not hold in every seed: the difference lies within three
# paired standard errors; both heads end with less attention on the same-symbol keys than at the
# start.

# %%
for r in rows:
    for k in ("em", "sgd"):
        assert r[f"excess_over_bayes_{k}"] >= -3 * r[f"excess_over_bayes_se_{k}"], (r["seed"], k)
se_saved = np.array([r["paired_se"] for r in rows])
assert np.all(np.abs(d_saved) < abs(gap_paper))
assert np.all(kl_saved < paper["kl_em_sgd"] / 4)
print("checked on every saved seed: both protocols above the Bayes filter (3 s.e.); "
      "|EM - SGD| below Table 1's gap; KL(EM||SGD) below a quarter of Table 1's")
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

# %%
curves_saved = load_curves("dynamics_table1")  # (seeds, steps + 1) per curve
fig, ax = plt.subplots(figsize=(7, 3.6))
for key, color in (("losses_em", "tab:blue"), ("losses_sgd", "tab:red")):
    mean_curve = curves_saved[key].mean(axis=0)
    ax.plot(np.arange(19, len(mean_curve)), smooth(mean_curve), color=color,
            label=f"{key.split('_')[1].upper()} (mean of {curves_saved[key].shape[0]} seeds)")
ax.axhline(np.mean([r["bayes_loss"] for r in rows]), color="black", ls="--", lw=1,
           label="Bayes filter (mean)")
ax.set_ylim(paper["entropy_rate"] - 0.05, 2.3)
ax.set_xlabel("step")
ax.set_ylabel("loss on the step's fresh sequence (nats)")
ax.legend()
plt.show()

# %% [markdown]
# **Figure 3.3.4.** Saved paper-sized run: per-step loss of the EM-like schedule (blue) and SGD
# (red), averaged over the saved seeds, 20-step moving average.
#
# **What the saved run shows.** At the paper's size the default run's picture stays: the EM-like
# schedule ends close to SGD — ahead in some seeds, behind in others (counts printed above) —
# always far inside Table 1's gap (asserted), and the two heads predict nearly the same
# distributions (KL(EM‖SGD) a small fraction of Table 1's, asserted). In most seeds the difference
# is within sampling error; where it is not (printed above), it is SGD that is ahead, the opposite
# of Table 1. The absolute losses are close to Table 1's, so the task is the same in size; what
# does not reproduce is the EM-like advantage. Recorded in `book/ERRATA.md` (row "§7.2 Table 1,
# Results, Takeaways").
#
# One difference from the default run: at this size the heads mostly end with *less* attention on
# the keys that carry the query's previous symbol than they started with (right-key mass column;
# the count of seeds where both heads do is printed above), whereas in the default run that mass
# grew. The explanation given above for the default run (routing, updated identically in both
# protocols, is the bottleneck) therefore does not carry over as it stands; where the trained heads
# attend instead we have not analysed.
#
# ## Key takeaways
#
# - The entropy rate of the chain (1.8833 nats for the paper's sticky chain, the only reading of
#   its garbled rule that gives that number) is the floor for a predictor that knows the previous
#   symbol; with noisy inputs the exact floor is a Bayes filter, a little higher.
# - The EM-like schedule differs from SGD only in how the values move; routing and read-out get the
#   same gradient steps.
# - On this task both schedules approach the floor from above and end within about a hundredth of
#   a nat of each other — inside seed-to-seed noise, far below the gap of the paper's Table 1.
# - A claim that one training method beats another needs the floor, every open choice stated, and
#   several seeds with paired error bars; a single run is not evidence.
#
# ## Check your understanding
#
# 1. A sticky chain over 4 symbols stays with probability $0.4$ and moves to each of the other
#    three with probability $0.2$. What is its entropy rate, and what loss does the uniform
#    predictor have?
#
#    ```{dropdown} Answer
#    $H = -(0.4\ln 0.4 + 3\cdot 0.2\ln 0.2)$ nats, the entropy of one row (every row is the same up
#    to order, so the stationary law does not matter); the uniform predictor has $\ln 4$ nats. Work
#    them out: the uniform predictor is worse by about a twentieth of a nat per symbol.
#    ```
#
# 2. Why can a trained head's held-out loss come out slightly *below* the Bayes filter's, and what
#    does the page do about it?
#
#    ```{dropdown} Answer
#    The held-out sequence is finite, so both losses are averages with sampling noise; the head can
#    be lucky on this particular sequence. The page asserts only that no protocol is below the
#    floor by more than three standard errors of the per-token difference.
#    ```
#
# 3. The EM-like schedule gives the values a step five times larger. Why does that barely change
#    the final loss here?
#
#    ```{dropdown} Answer
#    Because the values are not what limits the head: to predict well, a query must attend to the
#    keys that carry its previous symbol, and routing ($W_Q$, $W_K$) gets identical gradient steps
#    in both protocols. A faster value step cannot make up for routing that has not yet learned
#    where to look.
#    ```
#
# ## Reproducibility
#
# The default run trains online (8 fresh sequences of length 64 per step, 300 steps, `lr = 1`,
# `value_lr = 5`, seeds 0–2) and evaluates on a held-out sequence of 2000 tokens; it takes about
# 10–30 s per seed on 2 CPU cores; all trained numbers go through `produced()` (shown, not compared as
# text by nbval). `FULL=1` switches to the paper's sizes and reruns
# the saved experiment inside this page.
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
