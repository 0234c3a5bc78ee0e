# %% [markdown]
# > Work on your own copy (`.venv/bin/nextword exercises copy ~/my-exercises` in a terminal; a
# > `git pull` rewrites the repository's `exercises/`). Replace each `NotImplementedError` stub, then
# > run the self-check cell at the end: it lists every check, ✓ or ✗. Stuck? `hint("p1_10", 1)`
# > gives a first hint, tiers 2 and 3 say more. Written answers: after trying, `reveal("p1_10")`.
# > Where you stand on all exercises: `.venv/bin/nextword grade --dir ~/my-exercises`.
# > (For maintainers: this file is generated from `solutions/` by
# > `python -m nextword.booktools.exercises build`; change the solution, not this file.)

# %%
from nextword.booktools.exercises import hint, reveal  # noqa: F401  (hints and model answers on demand)

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
# *Your answer here.* (Once you have written it, `reveal("p1_10", 1)` shows a model answer.)

# %%
def variance_expression(d: int) -> sp.Expr:
    """Var(q·k) for d Gaussian entries N(0, sigma^2) per vector, as a sympy expression in sigma."""
    raise NotImplementedError("return Var(q . k) as a sympy expression in sigma (stuck? hint('p1_10', 1))")


def simulate_variance(d: int, sigma_value: float, n: int, rng: np.random.Generator) -> float:
    """Sample variance of q·k over n independent pairs with N(0, sigma_value^2) entries."""
    raise NotImplementedError("return a float: a Monte Carlo estimate of Var(q . k) from n draws (stuck? hint('p1_10', 1))")


for d in (1, 2):  # the checker also tries d = 3 (sympy.stats gets slow quickly with d)
    print(f"d = {d}: Var(q.k) =", variance_expression(d))
rng = np.random.default_rng(0)
for d in (16, 128, 1024):
    v = simulate_variance(d, 1.0, 20000, rng)
    print(f"d = {d:4d}: simulated {v:8.1f}  (d sigma^4 = {d}),  after dividing by sqrt(d): {v / d:.3f}")

# %%
from nextword.booktools.exercises.checks import check_ex_p1_10

check_ex_p1_10(variance_expression, simulate_variance)
