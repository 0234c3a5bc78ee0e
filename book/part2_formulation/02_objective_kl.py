# %% [markdown]
# # 2.2 Next-token prediction and the KL objective
#
# *Source: Baptista, Stuart, Tran, "Large Language Models: A Mathematical Formulation", §3
# (Eqs. 3.1–3.4) and §4.1–4.2 (Eqs. 4.1–4.5, Remarks 4.5–4.7).*
#
# An LLM models a distribution over token sequences through its next-token conditionals — the
# autoregressive factorisation (3.1)/(3.3). Training minimises the KL divergence from the data
# law to the model (Optimisation Problem 4.4). Because both laws factorise, that KL splits into a
# sum over positions of expected next-token KLs (4.2a–d, 4.4b), which is why next-token
# cross-entropy is the right loss. We derive this with sympy, then check every identity exactly on a
# synthetic Markov source whose law we know (`nextword.data.synthetic`), using a count-based n-gram model
# (`nextword.decoding.ngram`) as $\pi$. Finally we compare the shared-prefix estimator (4.5) with independent
# draws (Remark 4.7) by simulation.

# %% tags=["parameters"]
import os

FULL = os.environ.get("FULL", "0") == "1"  # more Monte Carlo repetitions; same checks
REPS = 8000 if FULL else 2000

# %%
import matplotlib.pyplot as plt
import numpy as np
import sympy as sp

from nextword.decoding import NGramLM
from nextword.booktools.plotting import use_book_style
from nextword.data import markov_source
from nextword.theory.formulation import (
    kl_decomposition, kl_divergence, markov_next_probs, position_losses, sequence_distribution,
    shared_prefix_estimate,
)

use_book_style()
rng = np.random.default_rng(0)

# %% [markdown]
# ## 1. The decomposition (4.2a–d), symbolically
#
# Take $L=2$ binary tokens. The data law is $p(f_1)\,p(f_2\mid f_1)$ and the model
# $\pi(f_1)\,\pi(f_2\mid f_1)$, with free parameters $a=p(f_1{=}1)$, $b_x=p(f_2{=}1\mid f_1{=}x)$ and
# $\alpha,\beta_x$ for $\pi$. Sympy writes the joint KL (4.2a) and the sum of the two expected
# next-token KLs (4.4b) and checks that their difference simplifies to zero.

# %%
a, b0, b1, al, be0, be1 = sp.symbols("a b0 b1 alpha beta0 beta1", positive=True)
p1 = {0: 1 - a, 1: a}
p2 = {(0, 0): 1 - b0, (0, 1): b0, (1, 0): 1 - b1, (1, 1): b1}  # p(f2 | f1) keyed by (f1, f2)
q1 = {0: 1 - al, 1: al}
q2 = {(0, 0): 1 - be0, (0, 1): be0, (1, 0): 1 - be1, (1, 1): be1}
pairs = [(x, y) for x in (0, 1) for y in (0, 1)]
J_joint = sum(p1[x] * p2[x, y] * sp.log(p1[x] * p2[x, y] / (q1[x] * q2[x, y])) for x, y in pairs)  # (4.2a)
kl_pos1 = sum(p1[x] * sp.log(p1[x] / q1[x]) for x in (0, 1))
kl_pos2 = sum(p1[x] * sum(p2[x, y] * sp.log(p2[x, y] / q2[x, y]) for y in (0, 1)) for x in (0, 1))  # (4.4b)
difference = sp.simplify(sp.expand_log(J_joint - kl_pos1 - kl_pos2, force=True))
print("(4.2a) - [E KL(position 1) + E KL(position 2)] =", difference)
theta_free = sp.expand_log(sum(p1[x] * p2[x, y] * sp.log(p1[x] * p2[x, y]) for x, y in pairs), force=True)
cross_entropy = -sp.expand_log(sum(p1[x] * p2[x, y] * (sp.log(q1[x]) + sp.log(q2[x, y])) for x, y in pairs), force=True)
print("(4.2a) - [const + L(theta)] =", sp.simplify(sp.expand_log(J_joint, force=True) - theta_free - cross_entropy))

# %% [markdown]
# The first identity is (4.2b)–(4.4b): the log of a product is a sum of logs, and the expectation
# of a function of $f_{1:\ell}$ only needs $p_{1:\ell}$. The second is (4.2d)/(4.3a): the $\theta$-free
# constant is minus the entropy of the data, and the rest is the next-token cross-entropy
# $\mathcal L(\theta)$.
#
# ## 2. A source with a known law and a model to score
#
# The data source is a random order-2 Markov chain on $|V|=3$ tokens, started from its stationary
# law, so $p_{1:L}$ is known exactly. The model $\pi$ is a bigram (order-1 context) count model
# fitted to 20 short samples, so it is wrong in two ways: too short a context, and finite data.
# `sequence_distribution` builds the joint law of $L$ tokens from the conditionals (3.1); we check it
# sums to one and matches the frequencies of sequences drawn with the source's own sampler.

# %%
V, L = 3, 6
source = markov_source(V, 2, rng, concentration=0.7)
p_next = markov_next_probs(source)
model = NGramLM(V, order=2, k=1.0).fit([source.sample(40, rng) for _ in range(20)])
joint_p, seqs = sequence_distribution(p_next, V, L)
joint_q, _ = sequence_distribution(model.next_probs, V, L)
print(f"{V}^{L} = {len(seqs)} sequences; sum p = {joint_p.sum():.12f}, sum pi = {joint_q.sum():.12f}")
draws = np.array([source.sample(L, rng) for _ in range(20000)])
freq = np.bincount(np.ravel_multi_index(draws.T, (V,) * L), minlength=V**L) / len(draws)
tv = 0.5 * np.abs(freq - joint_p).sum()
print(f"TV(empirical frequencies of 20000 sampled sequences, (3.1)) = {tv:.3f}")
assert abs(joint_p.sum() - 1) < 1e-12 and abs(joint_q.sum() - 1) < 1e-12 and tv < 0.08

# %% [markdown]
# ## 3. The decomposition, numerically (4.2a–d, 4.4b, Remark 4.6)
#
# `kl_decomposition` returns the joint KL (4.2a), the expected next-token KL at each position
# (4.4b), the cross-entropy terms of (4.3a) and the entropy terms (the constant of 4.2d). We check
# the identities, and Remark 4.6's consequence: the joint KL bounds the next-token KL at *every*
# position $m$, so driving the training objective down controls next-token errors everywhere.

# %%
dec = kl_decomposition(p_next, model.next_probs, V, L)
direct = kl_divergence(joint_p, joint_q)
print(f"joint KL (4.2a), by enumeration of p and pi : {direct:.6f}")
print(f"sum over positions of E KL (4.4b)           : {dec.per_position.sum():.6f}")
print("position m                 :", "  ".join(f"{m:7d}" for m in range(1, L + 1)))
print("E KL(p_m || pi_m)          :", "  ".join(f"{x:7.4f}" for x in dec.per_position))
print("cross-entropy term of (4.3a):", "  ".join(f"{x:7.4f}" for x in dec.cross_entropy))
print("entropy term (constant)    :", "  ".join(f"{x:7.4f}" for x in dec.entropy))
assert np.isclose(direct, dec.joint, rtol=1e-12) and np.isclose(dec.per_position.sum(), direct, rtol=1e-10)
assert np.allclose(dec.per_position, dec.cross_entropy - dec.entropy, atol=1e-12)
assert np.all(direct >= dec.per_position)  # Remark 4.6: J bounds every position's term
# beyond the source's context (m > 2) the conditional entropy is the entropy rate of the source
print(f"entropy rate of the source (nextword.data.synthetic): {source.entropy_rate():.4f} nats")
assert np.allclose(dec.entropy[2:], source.entropy_rate(), atol=1e-12)

# %% [markdown]
# Two further checks of Remark 4.5. The non-parametric minimiser of each term is the data
# conditional itself: with $\pi=p$ every term vanishes. And a model whose context covers the
# source's (an order-2 context, fitted on plenty of data: 400 sequences of 100 tokens — the first
# two positions are learned from the 400 sequence starts only) brings every term close to zero,
# while the bigram model cannot go below the KL caused by its missing context, whatever its data.

# %%
assert np.allclose(kl_decomposition(p_next, p_next, V, L).per_position, 0.0, atol=1e-12)
big = [source.sample(100, rng) for _ in range(400)]  # 40k tokens, 400 sequence starts
trigram = NGramLM(V, order=3, k=0.5).fit(big)
bigram_big = NGramLM(V, order=2, k=0.5).fit(big)
dec3 = kl_decomposition(p_next, trigram.next_probs, V, L)
dec2 = kl_decomposition(p_next, bigram_big.next_probs, V, L)
print(f"joint KL, order-2-context model, 40k tokens: {dec3.joint:.4f}")
print(f"joint KL, order-1-context model, 40k tokens: {dec2.joint:.4f}")
assert dec3.joint < 0.1 * dec2.joint

fig, ax = plt.subplots()
pos = np.arange(1, L + 1)
for off, (name, d) in zip([-0.27, 0.0, 0.27], [("bigram, 800 tokens", dec), ("bigram, 40k tokens", dec2),
                                               ("trigram, 40k tokens", dec3)]):
    ax.bar(pos + off, d.per_position, 0.27, label=f"{name}: J = {d.joint:.3f}")
ax.set_xlabel("position m")
ax.set_ylabel(r"$E_{f_{1:m-1}}\, KL(p_m \| \pi_m)$")
ax.legend(loc="center left")
plt.show()

# %% [markdown]
# **Figure 2.1.** The joint KL of Optimisation Problem 4.4 split into its next-token terms (4.4b)
# for three models of the same order-2 source. Position 1 (no context) and 2 (one token) are
# learnable by a bigram model; from position 3 on the bigram's missing context costs a fixed amount
# per token that more data does not remove, while the trigram's terms all shrink.
#
# ## 4. Remark 4.7: shared-prefix versus independent estimators
#
# The population objective $\mathcal L(\theta)=\sum_\ell \mathbb E_{p_{1:\ell}}[-\log\pi_\ell]$ can be
# estimated
#
# * **independently**: for each $\ell$ draw $N$ fresh sequences of length $\ell$ and average the
#   position-$\ell$ loss ($N L(L+1)/2$ tokens), or
# * **with shared prefixes**, as in (4.5): draw $N$ sequences of length $L$ and use every position
#   of each ($NL$ tokens). ((4.5) is written as a sum over $n$ without the $1/N$ of the empirical
#   measure; we divide by $N$, which changes nothing about the minimiser.)
#
# Both are **unbiased**: each term of the shared-prefix sum has the right expectation, whatever the
# correlation between terms. What the sharing changes is the variance,
# $\mathrm{Var}_{\rm shared}=\tfrac1N\mathrm{Var}(\sum_\ell X_\ell)$ versus
# $\mathrm{Var}_{\rm indep}=\tfrac1N\sum_\ell\mathrm{Var}(X_\ell)$, the difference being
# $\tfrac2N\sum_{\ell<\ell'}\mathrm{Cov}(X_\ell,X_{\ell'})$. We compute both variances exactly by
# enumeration and compare with a simulation.

# %%
X = position_losses(seqs, model.next_probs, V)  # (V**L, L): -log pi_l(f_l | f_<l) for every sequence
L_true = float(joint_p @ X.sum(axis=1))
assert np.isclose(L_true, dec.objective, rtol=1e-12)
mean_l = joint_p @ X
cov = (X - mean_l).T @ ((X - mean_l) * joint_p[:, None])  # (L, L) exact covariance of the X_l
N = 50
var_shared_exact = cov.sum() / N
var_indep_exact = np.trace(cov) / N

shared, indep = np.empty(REPS), np.empty(REPS)
for r in range(REPS):
    idx = rng.choice(len(seqs), size=N, p=joint_p)
    shared[r] = X[idx].sum(axis=1).mean()
    # independent draws for every l (the length-l prefix of a fresh full sequence has law p_{1:l})
    idx_l = rng.choice(len(seqs), size=(N, L), p=joint_p)
    indep[r] = X[idx_l, np.arange(L)].mean(axis=0).sum()
assert np.isclose(shared_prefix_estimate(seqs[idx], model.next_probs, V), shared[-1], rtol=1e-12)

print(f"L(theta) exactly                      : {L_true:.4f}")
for name, est, v in [("shared prefixes (4.5)", shared, var_shared_exact), ("independent per l", indep, var_indep_exact)]:
    se = est.std(ddof=1) / np.sqrt(REPS)
    print(f"{name:22s}: mean {est.mean():.4f} (+- {se:.4f}); variance {est.var(ddof=1):.5f}, exact {v:.5f}")
    assert abs(est.mean() - L_true) < 4 * se  # unbiased
    assert abs(est.var(ddof=1) / v - 1) < 0.15
offdiag = cov.sum() - np.trace(cov)
print(f"sum of cross-position covariances: {offdiag:+.4f}  (tokens used: shared {N * L}, independent {N * L * (L + 1) // 2})")

fig, ax = plt.subplots()
bins = np.linspace(min(shared.min(), indep.min()), max(shared.max(), indep.max()), 40)
ax.hist(shared, bins, alpha=0.6, label=f"shared prefixes, N={N}")
ax.hist(indep, bins, alpha=0.6, label=f"independent per position, N={N}")
ax.axvline(L_true, color="k", lw=1, label=r"$\mathcal{L}(\theta)$")
ax.set_xlabel("estimate of the objective (nats)")
ax.legend()
plt.show()

# %% [markdown]
# **Figure 2.2.** Sampling distributions of the two estimators of Remark 4.7 over repeated data
# sets: both are centred on the exact objective (no bias). Their spreads differ by the
# cross-position covariance term; for this source and model the position losses are positively
# correlated, so sharing prefixes costs some variance per sequence — but it uses $(L+1)/2$ times
# fewer tokens. At an equal token budget the shared-prefix estimator has variance
# $\mathrm{Var}(\sum_\ell X_\ell)/(N(L+1)/2)$:

# %%
budget_factor = (L + 1) / 2
print(f"tokens per sequence: shared prefix {L}, independent draws {L * (L + 1) // 2} ({budget_factor:g} times more)")
print(f"equal-budget variance: shared {var_shared_exact / budget_factor:.5f} vs independent {var_indep_exact:.5f}")
assert var_shared_exact / budget_factor < var_indep_exact

# %% [markdown]
# So the statement in §10 that the population objective "is approximated in a biased way, using
# correlated data samples" does not hold for (4.5): the estimator is unbiased; the correlation only
# affects its variance (recorded in `book/ERRATA.md`).
#
# ## Summary
#
# * (3.1) builds a proper joint law from next-token conditionals; sampling agrees with it.
# * The joint KL equals the sum of expected next-token KLs (sympy for $L=2$, exact enumeration for
#   $L=6$), equals entropy-free cross-entropy up to the data entropy, and bounds each position's KL.
# * The entropy terms beyond the source's context equal its entropy rate — the floor of any model's
#   per-token loss.
# * The shared-prefix estimator (4.5) is unbiased, like independent draws; the two differ in
#   variance and in token cost.
