# %% [markdown]
# # 2.3 Fine-tuning, low-rank updates and KL-regularised reinforcement learning
#
# *Source: Baptista, Stuart, Tran, "Large Language Models: A Mathematical Formulation", §4.3–4.5
# (Eqs. 4.6–4.8, Data Assumption 4.8, Remarks 4.9–4.10).*
#
# After pre-training on a broad source, a model is adapted: by **fine-tuning** on a small data set
# from a shifted source $\mathbf p'$ (4.6), often with the update restricted to a **low-rank**
# matrix (LoRA, Remark 4.9); or by **reinforcement learning** against a reward while a KL term keeps
# it near the reference model (4.7). We do both on models small enough to check exactly:
#
# * the model is a softmax table $\pi(b\mid a)=\mathrm{softmax}(W_a)_b$ over $|V|=10$ tokens
#   (`nextword.theory.formulation.objectives`), trained by Adam on the next-token cross-entropy (4.5)/(4.6);
#   the sources are Markov chains (`nextword.data.synthetic`), so the population KL to the target is
#   computable;
# * for RL, the policy is any law on the $3^4=81$ sequences of length 4, so (4.7) is computed
#   exactly and its closed-form minimiser $\pi^*\propto\pi_{\rm ref}e^{r/\beta}$ can be checked.

# %% tags=["parameters"]
import os

FULL = os.environ.get("FULL", "0") == "1"  # more data seeds / Monte Carlo batches; same checks
SEEDS = 12 if FULL else 4
BATCHES = 2000 if FULL else 400

# %%
import matplotlib.pyplot as plt
import numpy as np
import scipy.optimize
import sympy as sp

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
# ## 1. Pre-training, then a shifted source
#
# Source $\mathbf p$ is a random first-order chain on 10 tokens. The fine-tuning source $\mathbf p'$
# changes its next-token logits by a **rank-2** matrix, $\log P'=\log P+0.8\,UW^\top$ (rows
# renormalised), so the right update really is low-rank. Pre-training uses 100 sequences of 100
# tokens from $\mathbf p$.

# %%
V = 10
src = markov_source(V, 1, rng, concentration=0.5)
P = src.transition
U, W_ = rng.normal(size=(V, 2)), rng.normal(size=(2, V))
logits_new = np.log(P) + 0.8 * U @ W_
P_new = np.exp(logits_new - logits_new.max(axis=1, keepdims=True))
P_new /= P_new.sum(axis=1, keepdims=True)
src_new = MarkovSource(P_new, "rank-2 logit shift of the pre-training chain")
w_old, w_new = src.stationary_distribution(), src_new.stationary_distribution()

counts_pre = bigram_counts([src.sample(100, rng) for _ in range(100)], V)
W_pre, hist_pre = fit_table(np.zeros((V, V)), counts_pre, steps=600, lr=0.1)
kl_pre_old, kl_pre_new = table_kl(P, W_pre, w_old), table_kl(P_new, W_pre, w_new)
print(f"pre-trained model: KL to p = {produced(kl_pre_old, '.4f')}, KL to p' = {produced(kl_pre_new, '.4f')} nats/token")
assert kl_pre_old < 0.01 and kl_pre_new > 0.3

# %% [markdown]
# ## 2. Fine-tuning (4.6): full update versus LoRA (Remark 4.9)
#
# With $N_{\rm fine}$ short sequences from $\mathbf p'$ we compare: training from scratch on them;
# full fine-tuning of all $|V|^2$ logits starting at $W_{\rm pre}$; and LoRA, $W=W_{\rm pre}+AB$ with
# $A\in\mathbb R^{|V|\times r}$, $B\in\mathbb R^{r\times|V|}$ ($2|V|r$ trainable numbers; $B=0$ at the
# start so the model starts at the pre-trained one). The score is the population KL to $\mathbf p'$
# (averaged over the stationary law), computed exactly, averaged over several fine-tuning data
# sets. Every method runs the same number of Adam steps.


# %%
def finetune_scores(n_seq, steps, seed):
    data_rng = np.random.default_rng(seed)
    counts = bigram_counts([src_new.sample(30, data_rng) for _ in range(n_seq)], V)
    out = {"from scratch": table_kl(P_new, fit_table(np.zeros((V, V)), counts, steps=steps, lr=0.1)[0], w_new),
           "full fine-tune": table_kl(P_new, fit_table(W_pre, counts, steps=steps, lr=0.05)[0], w_new)}
    for r in (1, 2, 4):
        A, B, _ = fit_lora(W_pre, counts, r, np.random.default_rng(seed + 100), steps=steps, lr=0.05)
        out[f"LoRA r={r}"] = table_kl(P_new, W_pre + A @ B, w_new)
    return out


step_grid = [25, 50, 100, 200, 400]
curves = {}
for steps in step_grid:
    runs = [finetune_scores(10, steps, s) for s in range(SEEDS)]
    for name in runs[0]:
        curves.setdefault(name, []).append(np.mean([run[name] for run in runs]))
print("mean KL to p' after fine-tuning on 10 sequences of 30 tokens (", SEEDS, "data sets )")
print("steps          :" + "".join(f"{s:8d}" for s in step_grid))
for name, c in curves.items():
    print(f"{name:15s}:" + "".join(produced(x, "8.3f") for x in c))  # Adam's output: shown, not compared
best = {name: min(c) for name, c in curves.items()}
assert best["LoRA r=2"] < best["full fine-tune"] and best["LoRA r=2"] < best["from scratch"]
assert best["LoRA r=2"] < best["LoRA r=1"]

fig, ax = plt.subplots()
for name, c in curves.items():
    ax.plot(step_grid, c, "o-", label=name)
ax.axhline(kl_pre_new, color="k", lw=1, ls=":", label="pre-trained, no update")
ax.set_xscale("log")
ax.minorticks_off()
ax.set_xticks(step_grid, [str(x) for x in step_grid])
ax.set_xlabel("Adam steps on the fine-tuning data")
ax.set_ylabel("KL(p' || model), nats/token")
ax.legend(ncol=2)
plt.show()

# %% [markdown]
# **Figure 3.1.** Fine-tuning on 290 tokens from the shifted source. The flexible updates (full,
# from scratch, LoRA $r=4$) over-fit the small data set — their KL rises with more steps — while LoRA
# with the rank of the true shift ($r=2$) reaches the lowest KL: restricting the update to rank $r$ is the implicit
# regularisation Remark 4.9 mentions. Rank 1 cannot express the shift; rank 4 has more freedom to
# fit noise. Starting from the pre-trained model beats training from scratch when data is scarce.
#
# At the population level (expected counts instead of samples, so no noise) the rank statement is
# sharp: LoRA with $r\ge 2$ reaches the target, $r=1$ cannot.

# %%
pop_counts = w_new[:, None] * P_new  # expected transition frequencies under p'
for r in (1, 2):
    A, B, _ = fit_lora(W_pre, pop_counts, r, np.random.default_rng(7), steps=3000, lr=0.05)
    print(f"LoRA r={r}, population data: KL to p' = {produced(table_kl(P_new, W_pre + A @ B, w_new), '.4f')}, "
          f"rank of the update = {np.linalg.matrix_rank(A @ B, tol=1e-8)}")
    if r == 1:
        kl_r1 = table_kl(P_new, W_pre + A @ B, w_new)
    else:
        kl_r2 = table_kl(P_new, W_pre + A @ B, w_new)
floor = table_kl(P_new, np.log(P) + 0.8 * U @ W_, w_new)  # W_pre stands in for log P; this is the exact shift
print("the exact rank-2 shift applied to log P gives KL < 1e-12:", floor < 1e-12)
assert kl_r2 < 0.01 < kl_r1
for big_V in (1000, 50_000):
    print(f"|V| = {big_V:6d}: full update {big_V**2:>13,d} numbers; LoRA r=8: {2 * big_V * 8:>9,d}")

# %% [markdown]
# (The residual KL of the rank-2 fit is the pre-training error of $W_{\rm pre}$ itself, which LoRA
# inherits: the update corrects the shift, not the imperfections of the frozen weights.)
#
# ## 3. KL-regularised RL (4.7): the closed-form optimum
#
# For sequences $f\in V^L$, (4.7) is $\mathcal L^{\rm RL}(\pi)=-\mathbb E_\pi r+\beta D_{\rm KL}(\pi\|\pi_{\rm ref})$.
# Completing the KL gives the Gibbs variational identity
# $\mathcal L^{\rm RL}(\pi)=\beta D_{\rm KL}(\pi\|\pi^*)-\beta\log Z$ with
# $\pi^*=\pi_{\rm ref}e^{r/\beta}/Z$, so $\pi^*$ is the unique minimiser over all laws and the minimum is
# $-\beta\log Z$. Sympy checks the identity on a two-point space:

# %%
p, q0, r0, r1, bt = sp.symbols("p q0 r0 r1 beta", positive=True)
pi_, ref = [p, 1 - p], [q0, 1 - q0]
rew = [r0, r1]
Z = sum(ref[i] * sp.exp(rew[i] / bt) for i in range(2))
star = [ref[i] * sp.exp(rew[i] / bt) / Z for i in range(2)]
objective = -sum(pi_[i] * rew[i] for i in range(2)) + bt * sum(pi_[i] * sp.log(pi_[i] / ref[i]) for i in range(2))
gibbs = bt * sum(pi_[i] * sp.log(pi_[i] / star[i]) for i in range(2)) - bt * sp.log(Z)
print("(4.7) - [beta KL(pi || pi*) - beta log Z] =", sp.simplify(sp.expand_log(objective - gibbs, force=True)))

# %% [markdown]
# Now sequences: $L=4$ tokens over $\{0,1,2\}$, $\pi_{\rm ref}$ a random Markov chain (the "reference
# model"), and a sequence-level reward: $+1$ for each token 2, and $+2$ if the sequence ends with the
# token it starts with (a long-range preference that no single next-token factor can see). We
# minimise (4.7) numerically (L-BFGS) over *all* laws on the 81 sequences (softmax logits $z$;
# $\nabla_z\mathcal L^{\rm RL}=\pi\odot(g-\pi\cdot g)$ with $g=-r+\beta\log(\pi/\pi_{\rm ref})$ — a full
# autoregressive table can represent any such law) and compare with the closed form.

# %%
Vr, Lr = 3, 4
ref_src = markov_source(Vr, 1, rng)
pi_ref, seqs = sequence_distribution(markov_next_probs(ref_src), Vr, Lr)
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
print(f"beta = {beta}: (4.7) at the numerical minimiser {produced(rl_objective(pi_gd, pi_ref, reward, beta), '.4f')}, "
      f"closed form -beta log Z = {min_value:.4f}")
assert abs(rl_objective(pi_gd, pi_ref, reward, beta) - min_value) < 1e-5
assert 0.5 * np.abs(pi_gd - pi_star).sum() < 1e-3
print("TV(pi from the optimiser, closed-form pi*) < 1e-3:", 0.5 * np.abs(pi_gd - pi_star).sum() < 1e-3)

# %% [markdown]
# **β's effect.** Small β lets the policy chase reward (π* concentrates on the best sequences);
# large β keeps it at the reference model, with $\mathbb E_{\pi^*}r=\mathbb E_{\rm ref}r+\mathrm{Var}_{\rm ref}(r)/\beta+O(\beta^{-2})$.
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
print(f"max reward {reward.max():.0f} at {best_seqs.sum()} sequence(s); reference expected reward {pi_ref @ reward:.3f}")
print(f"beta = 0.01: expected reward {exp_reward[0]:.3f};  beta = 100: {exp_reward[-1]:.3f}, KL {kl_paid[-1]:.1e}")
var_ref = pi_ref @ reward**2 - (pi_ref @ reward) ** 2
print(f"large-beta expansion E_ref r + Var_ref(r)/beta at beta = 100: {pi_ref @ reward + var_ref / betas[-1]:.3f}")
assert exp_reward[0] > reward.max() - 1e-3 and abs(exp_reward[-1] - pi_ref @ reward - var_ref / betas[-1]) < 1e-3
assert np.all(np.diff(exp_reward) <= 1e-12) and np.all(np.diff(kl_paid) <= 1e-12)

fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
axes[0].semilogx(betas, exp_reward, "o-", ms=3)
axes[0].axhline(pi_ref @ reward, color="k", ls=":", lw=1, label=r"$\pi_{\rm ref}$")
axes[0].set_xlabel(r"$\beta$")
axes[0].set_ylabel(r"$E_{\pi^*}\, r$")
axes[0].legend()
axes[1].plot(kl_paid, exp_reward, "o-", ms=3)
axes[1].set_xlabel(r"$KL(\pi^* \| \pi_{\rm ref})$")
axes[1].set_ylabel(r"$E_{\pi^*}\, r$")
plt.show()

# %% [markdown]
# **Figure 3.2.** The KL-regularised optimum of (4.7) as β varies: expected reward (left) and the
# reward–KL trade-off (right). Both are monotone in β.
#
# **The policy class matters.** $\pi^*$ is generally not a (time-homogeneous) Markov chain even when
# $\pi_{\rm ref}$ is: the "ends as it starts" reward couples the first and last tokens. Minimising
# (4.7) over Markov policies only (first-token logits + a $3\times3$ transition table) leaves a gap
# above $-\beta\log Z$.

# %%
def markov_policy(theta):
    """Joint law on the 81 sequences of a Markov policy: (3.3) with pi(f_1) pi(f_2|f_1) ... vectorised."""
    first = np.exp(theta[:Vr] - theta[:Vr].max())
    first /= first.sum()
    T = np.exp(theta[Vr:].reshape(Vr, Vr))
    T /= T.sum(axis=1, keepdims=True)
    return first[seqs[:, 0]] * np.prod(T[seqs[:, :-1], seqs[:, 1:]], axis=1)


nxt_check = lambda prefix: np.full(Vr, 1 / Vr) if not prefix else np.eye(Vr)[(prefix[-1] + 1) % Vr] * 0.5 + 0.5 / Vr  # noqa: E731
theta_check = np.concatenate([np.zeros(Vr), np.log(np.eye(Vr)[(np.arange(Vr) + 1) % Vr] * 0.5 + 0.5 / Vr).ravel()])
assert np.allclose(markov_policy(theta_check), sequence_distribution(nxt_check, Vr, Lr)[0])


res = scipy.optimize.minimize(lambda th: rl_objective(markov_policy(th), pi_ref, reward, beta),
                              np.zeros(Vr + Vr * Vr), method="L-BFGS-B")
gap = res.fun - min_value
print(f"best Markov policy: (4.7) = {res.fun:.4f}; over all laws: {min_value:.4f}; gap = beta KL(pi_Markov || pi*) = {gap:.4f}")
assert gap > 1e-3
assert np.isclose(gap, beta * kl_divergence(markov_policy(res.x), pi_star), rtol=1e-6)

# %% [markdown]
# ## 4. The sample objective (4.8) and its gradient
#
# (4.8) replaces the expectations by $N$ samples from $\pi_\theta$ itself. As a number it is an
# unbiased estimate of (4.7). But the samples depend on θ: differentiating (4.8) with the samples
# held fixed gives $\frac{\beta}{N}\sum_n\nabla\log\pi_\theta(f^{(n)})$, whose expectation is **zero**
# — the reward drops out entirely. The gradient of (4.7) needs the score-function (REINFORCE) form
# $\frac1N\sum_n\big(g(f^{(n)})-\bar g\big)\nabla\log\pi_\theta(f^{(n)})$, $g=-r+\beta\log(\pi_\theta/\pi_{\rm ref})$.
# With the joint logits $z$, $\nabla_z\log\pi(f)=e_f-\pi$. Averaging many batches at $\pi_\theta=\pi_{\rm ref}$:

# %%
pi_now = pi_ref
exact_grad = rl_gradient(np.log(pi_now), beta)[1]
N = 64
values, naive, reinforce = [], np.zeros_like(pi_now), np.zeros_like(pi_now)
for _ in range(BATCHES):
    idx = rng.choice(len(pi_now), size=N, p=pi_now)
    values.append(rl_empirical_objective(np.log(pi_now[idx]), np.log(pi_ref[idx]), reward[idx], beta))
    score = np.eye(len(pi_now))[idx] - pi_now  # (N, S): grad_z log pi(f_n)
    g = -reward[idx] + beta * (np.log(pi_now[idx]) - np.log(pi_ref[idx]))
    naive += beta * score.mean(axis=0) / BATCHES
    reinforce += ((g - g.mean())[:, None] * score).sum(axis=0) / (N - 1) / BATCHES
values = np.array(values)
se = values.std(ddof=1) / np.sqrt(BATCHES)
cos = lambda a, c: float(a @ c / np.linalg.norm(a) / np.linalg.norm(c))  # noqa: E731
print(f"(4.8) averaged over batches: {values.mean():.4f} +- {se:.4f}; (4.7) exactly: {rl_objective(pi_now, pi_ref, reward, beta):.4f}")
print(f"|naive gradient| / |exact| = {np.linalg.norm(naive) / np.linalg.norm(exact_grad):.3f}")
print(f"cosine(REINFORCE mean, exact) = {cos(reinforce, exact_grad):.3f}; "
      f"|REINFORCE| / |exact| = {np.linalg.norm(reinforce) / np.linalg.norm(exact_grad):.3f}")
assert abs(values.mean() - rl_objective(pi_now, pi_ref, reward, beta)) < 4 * se + 1e-12
assert np.linalg.norm(naive) < 0.1 * np.linalg.norm(exact_grad) and cos(reinforce, exact_grad) > 0.97

# %% [markdown]
# (The $N-1$ makes the baseline-subtracted estimator unbiased.) At $\pi_\theta=\pi_{\rm ref}$ the KL term
# is zero, so the naive gradient's expectation is exactly zero; away from it, the naive gradient
# still ignores the reward. Remark 4.10's point — RL needs samples from the model during training —
# shows up here a second time: the gradient itself must account for where the samples came from.
#
# ## Summary
#
# * Fine-tuning from a pre-trained model beats training from scratch on scarce data; a LoRA update
#   of the right rank regularises and wins; at the population level rank $r$ reaches the target
#   exactly when the shift has rank $\le r$.
# * (4.7) is minimised by $\pi^*\propto\pi_{\rm ref}e^{r/\beta}$ with value $-\beta\log Z$ (sympy identity;
#   a generic optimiser over all laws reaches it); β trades reward for KL monotonically; a restricted
#   (Markov) policy class leaves a gap $\beta D_{\rm KL}(\pi\|\pi^*)$.
# * (4.8) is an unbiased estimate of (4.7), but its gradient with fixed samples is not the gradient
#   of (4.7); the score-function estimator is.
