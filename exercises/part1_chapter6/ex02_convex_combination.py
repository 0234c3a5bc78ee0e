# %% [markdown]
# > Work on your own copy (`.venv/bin/nextword exercises copy ~/my-exercises` in a terminal; a
# > `git pull` rewrites the repository's `exercises/`). Replace each `NotImplementedError` stub, then
# > run the self-check cell at the end: it lists every check, ✓ or ✗. Stuck? `hint("p1_02", 1)`
# > gives a first hint, tiers 2 and 3 say more. Written answers: after trying, `reveal("p1_02")`.
# > Where you stand on all exercises: `.venv/bin/nextword grade --dir ~/my-exercises`.
# > (For maintainers: this file is generated from `solutions/` by
# > `python -m nextword.booktools.exercises build`; change the solution, not this file.)

# %%
from nextword.booktools.exercises import hint, reveal  # noqa: F401  (hints and model answers on demand)

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
# 2. Implement `attention_output(q, K, V) -> (weights, output)` (numpy, scores $q\cdot k[j]/\sqrt{d_k}$ with
#    $d_k$ the length of `q`; the keys and values are the rows of `K` and `V`).
# 3. Implement `in_convex_hull(x, V) -> bool`, deciding whether `x` is a convex combination of the rows of
#    `V`, as a linear feasibility problem (`scipy.optimize.linprog`), and use it on the output.

# %%
import numpy as np
import sympy as sp
from scipy.optimize import linprog

# %%
raise NotImplementedError("build the three softmax weights as sympy expressions and print their simplified sum (stuck? hint('p1_02', 1))")

# %% [markdown]
# **Proof and geometry.**
# *Your answer here.* (Once you have written it, `reveal("p1_02", 1)` shows a model answer.)

# %%
def attention_output(q: np.ndarray, K: np.ndarray, V: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Softmax weights ``(n,)`` of ``q (d,)`` against ``K (n, d)`` and the output ``weights @ V``."""
    raise NotImplementedError("return (weights, output): arrays of shape (n,) and (d_v,) (stuck? hint('p1_02', 1))")


def in_convex_hull(x: np.ndarray, V: np.ndarray) -> bool:
    """True if ``x (dv,)`` is a convex combination of the rows of ``V (n, dv)``."""
    raise NotImplementedError("return True if x is a convex combination of the rows of V, else False (stuck? hint('p1_02', 1))")


rng = np.random.default_rng(0)
q, K, V = rng.standard_normal(4), rng.standard_normal((5, 4)), rng.standard_normal((5, 2))
w, out = attention_output(q, K, V)
print("weights:", np.round(w, 3), "sum", f"{w.sum():.6f}")
print("output in the hull of the values:", in_convex_hull(out, V),
      "| a point far outside:", in_convex_hull(out + 100.0, V))

# %%
from nextword.booktools.exercises.checks import check_ex_p1_02

check_ex_p1_02(attention_output, in_convex_hull)
