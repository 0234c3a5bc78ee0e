# %% [markdown]
# > Work on your own copy (`.venv/bin/nextword exercises copy ~/my-exercises` in a terminal; a
# > `git pull` rewrites the repository's `exercises/`). Replace each `NotImplementedError` stub, then
# > run the self-check cell at the end: it lists every check, ✓ or ✗. Stuck? `hint("p1_06", 1)`
# > gives a first hint, tiers 2 and 3 say more. Written answers: after trying, `reveal("p1_06")`.
# > Where you stand on all exercises: `.venv/bin/nextword grade --dir ~/my-exercises`.
# > (For maintainers: this file is generated from `solutions/` by
# > `python -m nextword.booktools.exercises build`; change the solution, not this file.)

# %%
from nextword.booktools.exercises import hint, reveal  # noqa: F401  (hints and model answers on demand)

# %% [markdown]
# # Exercise 06 — Why RoPE scores depend on $i-j$
# **Part:** 1 · **Difficulty:** ★★ · **Book notebook:** book/part1_chapter6/6_5_positional_encoding
#
# Chapter 6, Exercise 6. RoPE rotates the query at position $i$ by the angle $i\theta$ and the key at
# position $j$ by $j\theta$ (for every pair of coordinates, with its own frequency $\theta_m$). With
# $R(\phi)$ the rotation of the plane by the angle $\phi$ (as on page 6.5), explain why the score
# $(R(i\theta)q)^\top(R(j\theta)k)$ depends on $i-j$ and not on $i$ and $j$ separately.
#
# 1. Prove it for one coordinate pair with sympy: compute $R(i\theta)^\top R(j\theta)$.
# 2. Implement `rope_score(q, k, i, j)` for full vectors of even length $d_k$ with numpy, without calling
#    `nextword.positions`: pair $m$ (counted from 0) is the coordinates $2m, 2m+1$, and it turns by
#    $\theta_m=10000^{-2m/d_k}$ per position, as on page 6.5.
# 3. Give the intuition in words.

# %%
import numpy as np
import sympy as sp

# %%
i, j, th = sp.symbols("i j theta", real=True)


def R(a):
    return sp.Matrix([[sp.cos(a), -sp.sin(a)], [sp.sin(a), sp.cos(a)]])


raise NotImplementedError("show with sympy that R(i theta)^T R(j theta) depends on j - i only (stuck? hint('p1_06', 1))")
print("R(iθ)^T R(jθ) =", product.tolist())


# %%
def rope_score(q: np.ndarray, k: np.ndarray, i: int, j: int) -> float:
    """(R(iθ) q) · (R(jθ) k) for vectors of even length d_k (consecutive pairs, base 10000)."""
    raise NotImplementedError("return a float: the dot product of q rotated to position i and k rotated to position j (stuck? hint('p1_06', 1))")


rng = np.random.default_rng(0)
q, k = rng.standard_normal(8), rng.standard_normal(8)
print(", ".join(f"{rope_score(q, k, 5 + s, 2 + s):.4f}" for s in (0, 10, 100)), "— the same for every shift")

# %% [markdown]
# **Intuition.**
# *Your answer here.* (Once you have written it, `reveal("p1_06", 1)` shows a model answer.)

# %%
from nextword.booktools.exercises.checks import check_ex_p1_06

check_ex_p1_06(rope_score)
