# %% [markdown]
# > Student version generated from `solutions/` by `python -m nextword.booktools.exercises build`;
# > edit the solution, not this file. Replace each `NotImplementedError` stub, then run the
# > self-check cell at the end.

# %% [markdown]
# # Exercise 02 — Attention output is a convex combination
# **Part:** 1 · **Difficulty:** ★★ · **Book notebook:** book/part1_chapter6/6_2_attention_mechanism
#
# Chapter 6, Exercise 2. Prove that the attention output $\sum_{j\le i}\alpha[i,j]\,v[j]$ is a convex
# combination of the value vectors when the $\alpha[i,j]$ come from a softmax, and say what this means
# geometrically.
#
# 1. Give the proof (markdown), and confirm the key identity $\sum_j\alpha[i,j]=1$ with sympy for three
#    symbolic scores.
# 2. Implement `attention_output(q, K, V) -> (weights, output)` (numpy, scale $1/\sqrt d$).
# 3. Implement `in_convex_hull(x, V) -> bool`, deciding whether `x` is a convex combination of the rows of
#    `V`, as a linear feasibility problem (`scipy.optimize.linprog`), and use it on the output.

# %%
import numpy as np
import sympy as sp
from scipy.optimize import linprog

# %%
raise NotImplementedError("define three symbolic scores z1, z2, z3, build the softmax weights and simplify their sum")

# %% [markdown]
# **Proof and geometry.**
# *Your answer here.*

# %%
def attention_output(q: np.ndarray, K: np.ndarray, V: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Softmax weights ``(n,)`` of ``q (d,)`` against ``K (n, d)`` and the output ``weights @ V``."""
    raise NotImplementedError("scores K @ q / sqrt(d), a stable softmax, then weights @ V")


def in_convex_hull(x: np.ndarray, V: np.ndarray) -> bool:
    """True if ``x (dv,)`` is a convex combination of the rows of ``V (n, dv)``."""
    raise NotImplementedError("linprog with a zero objective: equality constraints V.T @ lam = x and sum(lam) = 1, bounds lam >= 0")


rng = np.random.default_rng(0)
q, K, V = rng.standard_normal(4), rng.standard_normal((5, 4)), rng.standard_normal((5, 2))
w, out = attention_output(q, K, V)
print("weights:", np.round(w, 3), "sum", f"{w.sum():.6f}")
print("output in the hull of the values:", in_convex_hull(out, V),
      "| a point far outside:", in_convex_hull(out + 100.0, V))

# %%
from nextword.booktools.exercises.checks import check_ex_p1_02

check_ex_p1_02(attention_output, in_convex_hull)
