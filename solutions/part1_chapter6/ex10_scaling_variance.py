# %% [markdown]
# # Exercise 10 — Why attention divides by $\sqrt{d_k}$
# **Part:** 1 · **Difficulty:** ★★★ · **Book notebook:** book/part1_chapter6/6_2_attention_mechanism
#
# Chapter 6, Exercise 10. Let a query and a key $q,k\in\mathbb R^{d_k}$ (the head width $d_k$ of page 6.2; `d` in code) have i.i.d. entries with mean 0 and variance
# $\sigma^2$, with $q$ independent of $k$. Derive $\operatorname{Var}(q\cdot k)$ and show that without
# scaling it grows linearly with $d_k$.
#
# 1. Write the derivation (markdown).
# 2. `variance_expression(d)`: compute $\operatorname{Var}(q\cdot k)$ for a given small $d_k$ with
#    `sympy.stats` (Gaussian entries), as an expression in the positive symbol `sigma`.
# 3. `simulate_variance(d, sigma_value, n, rng)`: estimate it from `n` random pairs, with entries of standard
#    deviation `sigma_value` (a number; the symbol `sigma` is for sympy only).
# 4. What does dividing by $\sqrt{d_k}$ change?

# %%
import numpy as np
import sympy as sp
from sympy import stats

sigma = sp.symbols("sigma", positive=True)

# %% [markdown]
# **Derivation.**
# <!-- BEGIN SOLUTION -->
# $q\cdot k=\sum_{r=1}^{d_k}q_rk_r$ (components $r$, $s$, as on page 6.2). Each product has mean
# $\mathbb E[q_rk_r]=\mathbb E[q_r]\mathbb E[k_r]=0$ (independence) and variance
# $\mathbb E[q_r^2k_r^2]-0=\mathbb E[q_r^2]\mathbb E[k_r^2]=\sigma^2\cdot\sigma^2=\sigma^4$. For $r\ne s$ the products are
# uncorrelated: $\operatorname{Cov}(q_rk_r,q_sk_s)=\mathbb E[q_r]\mathbb E[q_s]\mathbb E[k_r]\mathbb E[k_s]=0$. Hence
#
# $$\operatorname{Var}(q\cdot k)=\sum_{r=1}^{d_k}\operatorname{Var}(q_rk_r)=d_k\,\sigma^4,$$
#
# linear in $d_k$, for any entry distribution with these two moments (no Gaussianity needed). The
# standard deviation grows like $\sqrt{d_k}\,\sigma^2$, so at $d_k=512$, $\sigma=1$ typical scores are
# $\pm 22$, and a softmax over such scores is essentially one-hot.
#
# Dividing by $\sqrt{d_k}$ gives $\operatorname{Var}(q\cdot k/\sqrt{d_k})=\sigma^4$, independent of the
# dimension: the softmax sees scores of the same spread at every width, so it stays in the regime where
# its Jacobian $\mathrm{diag}(p)-p^\top p$ (for the row vector $p$, as on page 6.2) is not close to zero and gradients reach the queries and keys
# (measured in Figure 6.2.7 of notebook 6.2, the chapter's Fig. 6.12). The variance is 1 only if $\sigma=1$ — the scaling removes the
# dependence on $d_k$, not on $\sigma$.
# <!-- END SOLUTION -->

# %%
def variance_expression(d: int) -> sp.Expr:
    """Var(q·k) for d Gaussian entries N(0, sigma^2) per vector, as a sympy expression in sigma."""
    # BEGIN SOLUTION hint="return Var(q . k) as a sympy expression in sigma"
    qs = [stats.Normal(f"q{i}", 0, sigma) for i in range(d)]
    ks = [stats.Normal(f"k{i}", 0, sigma) for i in range(d)]
    return sp.simplify(stats.variance(sum(a * b for a, b in zip(qs, ks))))
    # END SOLUTION


def simulate_variance(d: int, sigma_value: float, n: int, rng: np.random.Generator) -> float:
    """Sample variance of q·k over n independent pairs with N(0, sigma_value^2) entries."""
    # BEGIN SOLUTION hint="return a float: a Monte Carlo estimate of Var(q . k) from n draws"
    q = sigma_value * rng.standard_normal((n, d))
    k = sigma_value * rng.standard_normal((n, d))
    return float(np.einsum("nd,nd->n", q, k).var())
    # END SOLUTION


for d in (1, 2):  # the checker also tries d = 3 (sympy.stats gets slow quickly with d)
    print(f"d = {d}: Var(q.k) =", variance_expression(d))
rng = np.random.default_rng(0)
for d in (16, 128, 1024):
    v = simulate_variance(d, 1.0, 20000, rng)
    print(f"d = {d:4d}: simulated {v:8.1f}  (d sigma^4 = {d}),  after dividing by sqrt(d): {v / d:.3f}")

# %%
from nextword.booktools.exercises.checks import check_ex_p1_10

check_ex_p1_10(variance_expression, simulate_variance)
