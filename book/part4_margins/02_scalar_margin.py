# %% [markdown]
# # 4.2 The scalar margin and support tokens
#
# *Source: Agarwal et al., §3.1–3.4 (Proposition 1, Eqs. 7–12, Definition 3.1, Figures 3.2–3.3) and
# Appendix B.1–B.3 (Lemmas B.1–B.2, proof of Proposition 1).*
#
# In $d=1$ the projections are scalars $w_Q,w_K,w_V$ and the logits are $\ell_{ts}=a\,x_tx_s$ with
# $a=w_Kw_Q$. Proposition 1 states that the diagonal derivative of the residual map is
# $\partial e_t/\partial x_t=1-a\,\mathrm{Var}_t$ (Eq. 8), with $\mathrm{Var}_t$ the attention-weighted
# variance of the attended values (Eq. 7). This defines the **margin** $m_t=1-a\mathrm{Var}_t$ (Eq. 9),
# the sequence margin $m(x)=\min_t m_t$ (Eq. 10) and the **support tokens** $\arg\min_t m_t$
# (Definition 3.1). We derive the formula, find exactly when it holds, and recompute every number the
# paper prints about Figures 3.2 and 3.3.

# %%
import numpy as np
import matplotlib.pyplot as plt
import sympy as sp

from nextword.booktools.plotting import use_book_style
from nextword.theory.barrier import (
    scalar_margin, scalar_attention_variance, support_tokens, sequence_margin,
    embedding_log_density, causal_residual,
)
from nextword.numerics import central_difference

use_book_style()

# %% [markdown]
# ## Proposition 1 in sympy, via Lemmas B.1 and B.2
#
# Take a query $x_t$ and three past tokens $x_1,x_2,x_3$ with values $v_s=w\,x_s$. Lemma B.1 is the
# softmax Jacobian $\partial\alpha_i/\partial\ell_j=\alpha_i(\delta_{ij}-\alpha_j)$; with
# $\partial\ell_{ts}/\partial x_t=a\,x_s$ the chain rule gives Eq. (60),
# $\partial\alpha_{ts}/\partial x_t=a\,\alpha_{ts}(x_s-\bar x_t)$. Summing against the values and using
# Lemma B.2 ($\sum_s\alpha_s v_s(v_s-\bar v)=\mathrm{Var}$) closes the proof.

# %%
xt, a, w = sp.symbols("x_t a w", real=True)
xs = sp.symbols("x1:4", real=True)
ell = [a * xt * x for x in xs]
Z = sum(sp.exp(l) for l in ell)
alpha = [sp.exp(l) / Z for l in ell]

# Lemma B.1: softmax Jacobian
lsym = sp.symbols("l1:4", real=True)
soft = [sp.exp(l) / sum(sp.exp(m) for m in lsym) for l in lsym]
b1 = all(sp.simplify(sp.diff(soft[i], lsym[j]) - soft[i] * ((1 if i == j else 0) - soft[j])) == 0
         for i in range(3) for j in range(3))
print("Lemma B.1 (softmax Jacobian) holds:", b1)

# Eq. (60): dα_s/dx_t = a α_s (x_s - x̄)
xbar = sum(al * x for al, x in zip(alpha, xs))
eq60 = all(sp.simplify(sp.diff(alpha[s], xt) - a * alpha[s] * (xs[s] - xbar)) == 0 for s in range(3))
print("Eq. (60) holds:", eq60)

# Lemma B.2: Σ α (v - v̄)² = Σ α v² - v̄²  (for values v_s = w x_s)
v = [w * x for x in xs]
vbar = sum(al * vv for al, vv in zip(alpha, v))
var_v = sum(al * (vv - vbar) ** 2 for al, vv in zip(alpha, v))
b2 = sp.simplify(var_v - (sum(al * vv**2 for al, vv in zip(alpha, v)) - vbar**2)) == 0
print("Lemma B.2 holds:", b2)

# the diagonal derivative itself
mu = vbar
de_dxt = sp.simplify(1 - sp.diff(mu, xt))
var_x = sp.simplify(var_v / w**2)  # attention-weighted variance of the embeddings
print("de_t/dx_t - (1 - a*w*Var_x)  =", sp.simplify(de_dxt - (1 - a * w * var_x)))
print("de_t/dx_t - (1 - a*Var_v)    =", sp.factor(sp.simplify(de_dxt - (1 - a * var_v)) / var_x))
print("     ... times Var_x; it vanishes for w in", sp.solve(sp.Eq(a * w * (w - 1), 0), w))
assert b1 and eq60 and b2
assert sp.simplify(de_dxt - (1 - a * w * var_x)) == 0

# %% [markdown]
# So the exact diagonal derivative is
#
# $$\frac{\partial e_t}{\partial x_t}=1-a\,w_V\,\mathrm{Var}_t(x)=1-\frac{a}{w_V}\mathrm{Var}_t(v),$$
#
# and Eq. (8), $1-a\,\mathrm{Var}_t(v)$, is exact only for $w_V=1$ (the proof in B.3 "identifies $x_s$
# with $v_s$ in the logit coupling") or the trivial $w_V=0$. Its deviation from 1 is $w_V$ times the
# true one (for $w_V=\tfrac12$ it halves it), and the degeneracy boundary sits at
# $\mathrm{Var}_t(x)=1/(a w_V)$, i.e. $\mathrm{Var}_t(v)=w_V/a$, not at $\mathrm{Var}_t(v)=1/a$. The library's `scalar_margin` is the
# exact derivative; we check it against finite differences for $w_V=\tfrac12$ (this is an erratum, see
# `book/ERRATA.md`). Everything below uses $w_V=1$, where the paper and the exact form agree.

# %%
x_ex = np.array([0.4, -1.2, 2.0, 0.3, 1.1, -0.5])
a_ex, w_half = 0.6, 0.5
m_exact = scalar_margin(x_ex, a=a_ex, w_v=w_half)
m_fd = np.diagonal(central_difference(
    lambda z: causal_residual(z[:, None], [[a_ex]], [[1.0]], [[w_half]])[:, 0], x_ex))
m_paper = 1 - a_ex * scalar_attention_variance(x_ex, a=a_ex, w_v=w_half)
print("exact m_t :", np.array2string(m_exact, precision=4))
print("finite diff:", np.array2string(m_fd, precision=4))
print("Eq. (8)   :", np.array2string(m_paper, precision=4))
assert np.allclose(m_exact, m_fd, atol=1e-8) and not np.allclose(m_paper, m_fd, atol=1e-2)
assert np.allclose(scalar_margin(x_ex, a=a_ex), 1 - a_ex * scalar_attention_variance(x_ex, a=a_ex))

# %% [markdown]
# ## Margins and support tokens on example sequences
#
# The margin at position $t$ is small when the past is **dispersed** *and* the current query spreads its
# attention over that dispersion. With $a=0.5$, three length-8 sequences:

# %%
a_pos = 0.5
seqs = {
    "calm": np.array([0.2, 0.1, 0.3, 0.2, 0.0, 0.25, 0.1, 0.2]),
    "one outlier": np.array([0.2, 0.1, 2.5, 0.2, 0.0, 0.25, 0.1, 0.2]),
    "two clusters": np.array([-1.5, 1.5, -1.4, 1.6, 0.0, -1.5, 1.4, 0.1]),
}
fig, axes = plt.subplots(1, 3, figsize=(11, 3.2), sharey=True)
for ax, (name, x) in zip(axes, seqs.items()):
    m = scalar_margin(x, a=a_pos)
    sup = support_tokens(m)
    colors = ["C3" if t in sup else "C0" for t in range(len(x))]
    ax.bar(np.arange(1, len(x) + 1), m, color=colors)
    ax.set_title(f"{name}: m(x) = {sequence_margin(m):.3f}")
    ax.set_xlabel("position t")
    ax.set_ylim(0, 1.05)
    print(f"{name:13s} margins {np.array2string(m, precision=3)}  support tokens (1-based) {(sup + 1).tolist()}")
axes[0].set_ylabel("m_t = 1 - a Var_t")
plt.tight_layout()
plt.show()

# %% [markdown]
# *Figure 4.2.1 — Definition 3.1 on three sequences ($a=0.5$, $w_V=1$). Red bars are the support tokens.
# A calm sequence has all margins near 1. One outlier makes every later position whose query still
# attends to both the outlier and the rest lose margin. Alternating clusters give the smallest
# margins, at the query $x_5=0$ that weights both clusters equally.*
#
# ## Figure 3.2: conditional density of $x_3$ given $x_1=0,\ x_2=2$
#
# Under strict causality the conditional density is
# $p(x_3\mid x_1,x_2)=\mathcal N(e_3;0,\sigma^2)\,|m_3|$ — the last per-position term of Eq. (16).
# The paper does not state $\sigma$; we take $\sigma=1$ (the factor in panel (b) does not depend on it).

# %%
x3 = np.linspace(-4, 6, 2001)
Xc = np.stack([np.zeros_like(x3), np.full_like(x3, 2.0), x3], axis=-1)[..., None]  # (G, 3, 1)


def cond_density(a_val, sigma=1.0, X=Xc):
    return np.exp(embedding_log_density(X, [[a_val]], [[1.0]], sigma=sigma, per_position=True)[:, 2])


fig, axes = plt.subplots(1, 3, figsize=(12, 3.4))
styles = {0.25: ("C3", "a = +0.25"), 0.0: ("k", "a = 0 (Gaussian)"), -0.25: ("C2", "a = -0.25")}
for a_val, (c, lab) in styles.items():
    axes[0].plot(x3, cond_density(a_val), color=c, label=lab)
    axes[1].plot(x3, scalar_margin(Xc[..., 0], a=a_val)[:, 2], color=c, label=lab)
for a_val in (-0.55, -0.35, 0.0, 0.35, 0.55):
    axes[2].plot(x3, cond_density(a_val), label=f"a = {a_val:+.2f}")
axes[0].set_title("(a) p(x3 | x1=0, x2=2)")
axes[1].set_title("(b) factor 1 - a Var_3")
axes[2].set_title("(c) sweep over a")
for ax in axes:
    ax.set_xlabel("x3")
    ax.legend(fontsize=7)
plt.tight_layout()
plt.show()

# %% [markdown]
# *Figure 4.2.2 — our rebuild of the paper's Figure 3.2 ($\sigma=1$, $w_V=1$). Positive coupling lowers
# and broadens the peak, negative coupling sharpens it; the factor in (b) stays in $[0.75,1]$ for
# $a=+0.25$ and $[1,1.25]$ for $a=-0.25$, because here $\mathrm{Var}_3=4\alpha(1-\alpha)\le1$.*
#
# The numbers printed in the paper's caption and text, against ours:

# %%
peaks = {a_val: cond_density(a_val).max() for a_val in (0.0, 0.25, -0.25)}
factor_min = scalar_margin(Xc[..., 0], a=0.25)[:, 2].min()
factor_max = scalar_margin(Xc[..., 0], a=-0.25)[:, 2].max()
rows = [("peak, a = 0 (Gaussian)", 0.38, peaks[0.0]), ("peak, a = +0.25", 0.32, peaks[0.25]),
        ("peak, a = -0.25", 0.52, peaks[-0.25]), ("min factor, a = +0.25", 0.75, factor_min),
        ("max factor, a = -0.25", 1.25, factor_max)]
print(f"{'quantity':26s} {'paper':>7s} {'ours':>8s}")
for name, paper, ours in rows:
    print(f"{name:26s} {paper:7.2f} {ours:8.4f}")
assert np.isclose(peaks[0.0], 1 / np.sqrt(2 * np.pi), atol=1e-6)  # a = 0: exactly N(1, 1) at x3 = 1
assert np.isclose(factor_min, 0.75, atol=1e-6) and np.isclose(factor_max, 1.25, atol=1e-6)

# can one sigma explain all three peaks? fit sigma to the paper's baseline 0.38
sigma_fit = 1 / (0.38 * np.sqrt(2 * np.pi))
print(f"sigma matching the baseline 0.38: {sigma_fit:.4f}; peaks then "
      + ", ".join(f"a={a_val:+.2f}: {cond_density(a_val, sigma_fit).max():.3f}" for a_val in (0.0, 0.25, -0.25)))

# %% [markdown]
# The factor values 0.75 and 1.25 are confirmed. The peak heights are not: with $a=0$ the conditional
# is exactly $\mathcal N(x_3;1,\sigma^2)$ (uniform attention on $(0,2)$), whose peak is
# $1/\sqrt{2\pi}\approx0.399$ at $\sigma=1$, not $0.38$; and $0.310$/$0.495$ replace $0.32$/$0.52$.
# No single $\sigma$ reproduces all three printed values (with the $\sigma$ that gives 0.38 the other
# two become 0.297 and 0.474). The qualitative claims — flatter for $a>0$, sharper for $a<0$ — hold.
# Recorded in `book/ERRATA.md`.
#
# ## Does the induced conditional density integrate to 1?
#
# It does whenever $x_3\mapsto e_3$ is a bijection. Here $\mathrm{Var}_3\le1$, so for $|a|<1$ the margin
# stays positive and each density integrates to 1. For $a=1.5$ the factor $1-a\mathrm{Var}_3$ dips to
# $-0.5$: the map folds, some noise values have three preimages, and the formula with $|m_3|$
# integrates to more than 1. Dropping the configurations with $m_3\le 0$ (the "hard exclusion" of
# Figure 3.3) does not repair it: the two increasing branches on either side of the fold still cover an
# overlapping range of noise values, so the remaining integral also exceeds 1. In the folded regime
# Eq. (16) is not a normalised density, and the generative rule $x_t=\mu_t(x)+\varepsilon_t$ has no
# unique solution — the "Jacobian non-degeneracy" assumption of Theorem 2 has to hold *globally*.

# %%
x3w = np.linspace(-14, 16, 6001)
Xw = np.stack([np.zeros_like(x3w), np.full_like(x3w, 2.0), x3w], axis=-1)[..., None]
hw = x3w[1] - x3w[0]
for a_val in (-0.55, -0.35, -0.25, 0.0, 0.25, 0.35, 0.55):
    integral = cond_density(a_val, X=Xw).sum() * hw
    print(f"a = {a_val:+.2f}: ∫ p(x3 | x1, x2) dx3 = {integral:.8f}")
    assert abs(integral - 1) < 1e-8
p_fold = cond_density(1.5, X=Xw)
m_fold = scalar_margin(Xw[..., 0], a=1.5)[:, 2]
print(f"a = +1.50: min factor {m_fold.min():+.3f};  ∫ with |m| = {p_fold.sum() * hw:.4f};  "
      f"∫ over m > 0 only = {p_fold[m_fold > 0].sum() * hw:.4f}")
assert p_fold.sum() * hw > 1.01 and p_fold[m_fold > 0].sum() * hw > 1.01

# %% [markdown]
# ## Figure 3.3: 4000 random length-5 sequences, $a=\pm0.2$
#
# Entries are drawn i.i.d. from $\mathcal N(0,4)$ (standard deviation 2). A sequence is *excluded* when
# some position has $m_t\le0$. The paper reports 613/4000 excluded for $a=+0.2$ and none for
# $a=-0.2$; its random seed is unknown, so we compare with the exclusion probability estimated from
# $2\times10^5$ sequences.

# %%
rng = np.random.default_rng(0)
x_pop = rng.normal(0.0, 2.0, size=(4000, 5))
res = {}
for a_val in (0.2, -0.2):
    m = scalar_margin(x_pop, a=a_val)[:, 1:]  # positions 2..5 (position 1 has no context)
    var = scalar_attention_variance(x_pop, a=a_val)[:, 1:]
    lp = embedding_log_density(x_pop[..., None], [[a_val]], [[1.0]], sigma=1.0)
    excluded = m.min(axis=1) <= 0
    res[a_val] = (m, var, lp, excluded)
    print(f"a = {a_val:+.1f}: excluded {excluded.sum()}/4000; Var_t up to {var.max():.1f} "
          f"(last position: {var[:, -1].max():.1f}); factor in [{m.min():.2f}, {m.max():.2f}]")
    assert np.allclose(m, 1 - a_val * var)

big = np.random.default_rng(1).normal(0.0, 2.0, size=(200_000, 5))
p_ex = (scalar_margin(big, a=0.2).min(axis=1) <= 0).mean()
se = np.sqrt(p_ex * (1 - p_ex) / big.shape[0])
print(f"P(excluded | a = +0.2) = {p_ex:.4f} ± {se:.4f}  ->  {4000 * p_ex:.0f} ± {1.96 * np.sqrt(4000 * p_ex * (1 - p_ex)):.0f}"
      " of 4000 (95%); paper: 613")
assert abs(613 - 4000 * p_ex) < 1.96 * np.sqrt(4000 * p_ex * (1 - p_ex))
assert res[-0.2][3].sum() == 0

# how far does Var_t reach for a = -0.2? spread of the maximum over 100 independent sets of 4000
reps = np.random.default_rng(2).normal(0.0, 2.0, size=(100, 4000, 5))
var_reps = scalar_attention_variance(reps, a=-0.2)
for label, vmax in (("all positions", var_reps.max(axis=(1, 2))), ("last position", var_reps[..., -1].max(axis=1))):
    lo, mid, hi = np.percentile(vmax, [2.5, 50, 97.5])
    print(f"a = -0.2, max Var_t over 4000 sequences, {label}: median {mid:.1f}, 95% range [{lo:.1f}, {hi:.1f}]")

# %%
fig, axes = plt.subplots(2, 2, figsize=(10, 6.5))
for row, a_val in enumerate((0.2, -0.2)):
    m, var, lp, excluded = res[a_val]
    axes[row, 0].scatter(var.ravel(), m.ravel(), s=2, alpha=0.3)
    axes[row, 0].set_xlabel("Var_t")
    axes[row, 0].set_ylabel("factor m_t")
    axes[row, 0].axhline(0, color="k", lw=0.8)
    axes[row, 0].set_title(f"({'a' if row == 0 else 'c'}) a = {a_val:+.1f}: factor vs Var_t")
    worst_var = var.max(axis=1)
    axes[row, 1].scatter(worst_var[~excluded], lp[~excluded], s=2, alpha=0.3, label="valid")
    if excluded.any():
        axes[row, 1].scatter(worst_var[excluded], np.full(excluded.sum(), lp[~excluded].min()), s=2,
                             color="C3", label="excluded (m_t ≤ 0)")
    axes[row, 1].set_xlabel("max_t Var_t")
    axes[row, 1].set_ylabel("log p(x)")
    axes[row, 1].set_title(f"({'b' if row == 0 else 'd'}) a = {a_val:+.1f}: log-density")
    axes[row, 1].legend(fontsize=7, markerscale=4)
plt.tight_layout()
plt.show()

# %% [markdown]
# *Figure 4.2.3 — rebuild of Figure 3.3 (seed 0). Panels (a),(c): every position of every sequence lies on
# the line $1-a\mathrm{Var}_t$. Panel (b): the excluded sequences (red, drawn at the bottom edge) all have
# some $\mathrm{Var}_t\ge5=1/a$. Panel (d): no exclusion for $a<0$.*
#
# What survives: the exclusion count ($612$ with seed 0; $611\pm45$ expected; the paper's 613 is well
# inside), the exact linear factor, the boundary at $\mathrm{Var}=5$, and the
# $+\log(1+0.2\cdot16)=+\log4.2\approx1.44$ nats at $\mathrm{Var}=16$. The paper's "Var extends to
# ≈16 for $a<0$" is within the seed-to-seed range only if it refers to the **last position** (median
# maximum about 18); over all positions the maximum is typically about 22 and rarely below 18. Two
# conventions are silent in the paper: which position's variance is plotted, and that the excluded
# configurations get log-density $-\infty$ although Eq. (16) with $|\det|$ gives them a finite value —
# we follow the figure and mark them instead of plotting their value.
