# %% [markdown]
# # 4.4 The token-level process: Kolmogorov consistency
#
# *Source: Agarwal et al., §5 (Eqs. 28–34; Theorems 2–3, Proposition 2) and Appendix C (Assumptions
# A1–A2, Lemmas C.1–C.2, Eqs. 68–75).*
#
# Combine the embedding prior $p_\sigma(x_{1:n})$ with a causal categorical head
# $P(y_{1:n}\mid x_{1:n})=\prod_tP(y_t\mid y_{<t},x_{\le t})$ (Eq. 28) and integrate the embeddings out
# (Eq. 31): $P_n(y_{1:n})=\int P(y_{1:n}\mid x_{1:n})\,p_\sigma(x_{1:n})\,dx_{1:n}$. **Theorem 2** says
# the family is projectively consistent, $\sum_{y_n}P_n(y_{1:n})=P_{n-1}(y_{1:n-1})$ (Eq. 32), under
# strict causality; **Proposition 2** says non-causal attention breaks it. We check both by computing
# every $P_n$ independently — by quadrature over $\mathbb R^n$ and by Monte Carlo — on a 3-token
# vocabulary with $d=1$.
#
# **Set-up.** $V=\{0,1,2\}$, $P(y_t=k\mid x_t)=\mathrm{softmax}_k(w_kx_t+b_k)$; prior with $a=-0.6$,
# $w_V=0.8$, $\sigma=1$. With $a\,w_V<0$ every margin is $\ge1$, so each $x_t\mapsto e_t$ is an increasing
# bijection of $\mathbb R$: this is what makes the one-step conditional integrate to 1 (Eq. 72,
# Assumption A2) *for every context*. (For $a\,w_V>0$ a wide enough context folds the map — see
# notebook 4.2 — and A2 fails there.)

# %%
import numpy as np
import matplotlib.pyplot as plt

from nextword.booktools.plotting import use_book_style
from nextword.theory.barrier import (
    token_law_quadrature, sample_scalar_process, token_law_monte_carlo, emission_probs,
)

use_book_style()
HEAD = dict(W_out=[-1.0, 0.0, 1.5], b_out=[0.0, 0.3, -0.2])
PRIOR = dict(a=-0.6, w_v=0.8, sigma=1.0)
K = 3

# %% [markdown]
# ## Quadrature: $P_1$, $P_2$, $P_3$ computed separately
#
# Each $P_n$ integrates the full joint density (change of variables with the full $n\times n$ Jacobian
# determinant) on a uniform grid; the rectangle rule is spectrally accurate for these smooth, fast
# decaying integrands. Refining the grid estimates the quadrature error.

# %%
grids = {1: np.linspace(-10, 10, 401), 2: np.linspace(-10, 10, 201), 3: np.linspace(-10, 10, 61)}
P, mass = {}, {}
for n, g in grids.items():
    P[n], mass[n] = token_law_quadrature(n, grid=g, **PRIOR, **HEAD)
P3_coarse, _ = token_law_quadrature(3, grid=np.linspace(-10, 10, 51), **PRIOR, **HEAD)
quad_err = np.abs(P[3] - P3_coarse).max()
for n in (1, 2, 3):
    print(f"n = {n}: ∫ p_σ(x_1:n) dx = {mass[n]:.8f},  Σ_y P_n(y) = {P[n].sum():.8f}")
print(f"quadrature error estimate for P_3 (61 vs 51 points per axis) below 1e-7: {quad_err < 1e-7}")
for n in (2, 3):
    gap = np.abs(P[n].sum(axis=-1) - P[n - 1]).max()
    print(f"max_y |Σ_(y_{n}) P_{n}(y) - P_{n - 1}(y)| below 1e-7: {gap < 1e-7}")
    assert gap < 10 * quad_err + 1e-9
assert all(abs(mass[n] - 1) < 1e-6 for n in mass)

# %% [markdown]
# ## Monte Carlo with error bars
#
# An independent route: sample $x_{1:3}$ ancestrally from the generative rule
# $x_t=\mu_t(x)+\varepsilon_t$ (the library solves the implicit equation in $x_t$ by bisection) and
# average $\prod_tP(y_t\mid x_t)$. If the change-of-variables density is right, the quadrature values
# must sit within the Monte Carlo error bars.

# %%
rng = np.random.default_rng(0)
x_mc = sample_scalar_process(20_000, 3, rng=rng, **PRIOR)
mc3, se3 = token_law_monte_carlo(x_mc, **HEAD)
mc2, se2 = token_law_monte_carlo(x_mc[:, :2], **HEAD)
z3 = (mc3 - P[3]) / se3
z2 = (mc2 - P[2]) / se2
print(f"P_3: max |MC - quadrature| / SE = {np.abs(z3).max():.2f} over {z3.size} sequences")
print(f"P_2: max |MC - quadrature| / SE = {np.abs(z2).max():.2f} over {z2.size} sequences")
assert np.abs(z3).max() < 4 and np.abs(z2).max() < 4

# %%
labels = [f"{i}{j}" for i in range(K) for j in range(K)]
idx = np.arange(K * K)
fig, ax = plt.subplots(figsize=(7.5, 3.4))
ax.bar(idx - 0.27, P[2].ravel(), width=0.27, label="P_2(y1, y2), quadrature on R²")
ax.bar(idx, P[3].sum(axis=-1).ravel(), width=0.27, label="Σ_y3 P_3(y1, y2, y3), quadrature on R³")
ax.errorbar(idx + 0.27, mc2.ravel(), yerr=2 * se2.ravel(), fmt="o", ms=3, color="C3",
            label="Monte Carlo ± 2 SE (ancestral samples)")
ax.set_xticks(idx, labels)
ax.set_xlabel("prefix y1 y2")
ax.set_ylabel("probability")
ax.legend(fontsize=7)
plt.show()

# %% [markdown]
# *Figure 4.4.1 — Theorem 2, Eq. (32), for $n=3$: the length-2 law computed on its own (blue) equals the
# length-3 law with the last token summed out (orange) to within the quadrature error, and both agree
# with ancestral sampling (red, 20 000 sequences).*
#
# ## Proposition 2: non-causal attention breaks consistency
#
# **The paper's abstract counterexample** (proof of Proposition 2, Eq. 75): $P_2(y_1{=}1\mid y_2)$ is
# $0.9$ or $0.1$, $P_2(y_2{=}1)=0.9$, while $P_1(y_1{=}1)=\tfrac12$.

# %%
p_y1_given_y2 = {1: 0.9, 0: 0.1}
p_y2 = {1: 0.9, 0: 0.1}
marg = sum(p_y1_given_y2[y2] * p_y2[y2] for y2 in (0, 1))
print(f"Σ_y2 P_2(y1 = 1, y2) = {marg:.2f}  vs  P_1(y1 = 1) = 0.50")
assert np.isclose(marg, 0.82)

# %% [markdown]
# **An actual attention layer.** Let every position attend to all *other* positions ($s\ne t$, no
# mask). For $n=1$ nothing is attended: $x_1\sim\mathcal N(0,\sigma^2)$. For $n=2$ each position sees
# only the other, so $e=(x_1-w x_2,\ x_2-wx_1)$ is linear and $x=(I-W)^{-1}\varepsilon$:
# $\mathrm{Var}(x_1)=\sigma^2(1+w^2)/(1-w^2)^2$. Appending a token changes the law of the first one.

# %%
w_nc = 0.5
var_exact = (1 + w_nc**2) / (1 - w_nc**2) ** 2
NC = dict(a=-0.6, w_v=w_nc, sigma=1.0, context="others")
g2 = np.linspace(-12, 12, 241)
P1_nc, _ = token_law_quadrature(1, grid=g2, **NC, **HEAD)
P2_nc, m2_nc = token_law_quadrature(2, grid=g2, **NC, **HEAD)
# the head averaged over N(0, var) — the closed form for the first token's law under n = 2
G = np.linspace(-15, 15, 3001)
dens = np.exp(-G**2 / (2 * var_exact)) / np.sqrt(2 * np.pi * var_exact)
closed = (emission_probs(G[:, None], **HEAD)[:, 0, :] * dens[:, None]).sum(axis=0) * (G[1] - G[0])
print(f"Var(x_1): n = 1 -> 1.0000, n = 2 -> {var_exact:.4f} (closed form)")
print("P_1(y1)              :", np.array2string(P1_nc, precision=4))
print("Σ_y2 P_2(y1, y2)     :", np.array2string(P2_nc.sum(axis=1), precision=4))
print("closed form (n = 2)  :", np.array2string(closed, precision=4))
assert np.allclose(P2_nc.sum(axis=1), closed, atol=1e-6) and abs(m2_nc - 1) < 1e-6
assert np.abs(P2_nc.sum(axis=1) - P1_nc).max() > 0.05

# %% [markdown]
# Nonlinear attention, $n=2\to3$: with three positions each softmax has two keys. The same quadrature
# that confirmed Eq. (32) for the causal layer now shows a gap far above its own error.

# %%
g3 = np.linspace(-10, 10, 61)
P2n, _ = token_law_quadrature(2, grid=np.linspace(-10, 10, 201), **NC, **HEAD)
P3n, m3n = token_law_quadrature(3, grid=g3, **NC, **HEAD)
P3n_c, _ = token_law_quadrature(3, grid=np.linspace(-10, 10, 51), **NC, **HEAD)
err_nc = np.abs(P3n - P3n_c).max()
gap_nc = np.abs(P3n.sum(axis=-1) - P2n).max()
print(f"non-causal: ∫ p_σ(x_1:3) dx = {m3n:.5f}; quadrature error below 1e-7: {err_nc < 1e-7}; "
      f"max |Σ_y3 P_3 - P_2| = {gap_nc:.4f}")
assert gap_nc > 100 * err_nc

fig, ax = plt.subplots(figsize=(7.5, 3.2))
ax.bar(idx - 0.2, P2n.ravel(), width=0.4, label="P_2(y1, y2)")
ax.bar(idx + 0.2, P3n.sum(axis=-1).ravel(), width=0.4, label="Σ_y3 P_3(y1, y2, y3)")
ax.set_xticks(idx, labels)
ax.set_xlabel("prefix y1 y2")
ax.set_title("non-causal attention (s ≠ t): Eq. (32) fails")
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# *Figure 4.4.2 — Proposition 2 with a real (unmasked) attention layer: the prefix law extracted from
# the length-3 model differs from the length-2 model. Lemma C.1's prefix-stability clause fails because
# the earlier positions' attention normalisation now includes the appended token.*
#
# ## Theorem 3: one process for all lengths
#
# Theorem 3 is Kolmogorov's extension theorem: a projectively consistent family of laws on the finite
# sets $V^n$ extends to a unique law on $V^\infty$ whose length-$n$ marginals are the $P_n$ (Eq. 33).
# Its only model-specific hypothesis is Eq. (32), which is what we checked. Concretely it means we can
# sample long sequences once and read every shorter law off their prefixes: below, 20 000 sequences of
# length 6 are sampled (embeddings ancestrally, tokens from the head) and the empirical frequency of
# each length-2 prefix is compared with $P_2$ from quadrature.

# %%
rng = np.random.default_rng(1)
x_long = sample_scalar_process(20_000, 6, rng=rng, **PRIOR)
probs = emission_probs(x_long, **HEAD)  # (N, 6, K)
u = rng.random(size=probs.shape[:2])[..., None]
y_long = (u > np.cumsum(probs, axis=-1)).sum(axis=-1)  # (N, 6) sampled tokens
freq = np.zeros((K, K))
np.add.at(freq, (y_long[:, 0], y_long[:, 1]), 1.0)
freq /= len(y_long)
se_f = np.sqrt(P[2] * (1 - P[2]) / len(y_long))
zf = (freq - P[2]) / se_f
print(f"length-2 prefixes of length-6 samples vs P_2: max |z| = {np.abs(zf).max():.2f}")
assert np.abs(zf).max() < 4
