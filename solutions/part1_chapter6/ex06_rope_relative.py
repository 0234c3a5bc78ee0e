# %% [markdown]
# # Exercise 06 — Why RoPE scores depend on $i-j$
# **Part:** 1 · **Difficulty:** ★★ · **Book notebook:** book/part1_chapter6/6_5_positional_encoding
#
# Chapter 6, Exercise 6. RoPE rotates the query at position $i$ by the angle $i\theta$ and the key at
# position $j$ by $j\theta$ (for every pair of coordinates, with its own frequency $\theta_p$). Explain why
# the score $(R_{i\theta}q)^\top(R_{j\theta}k)$ depends on $i-j$ and not on $i$ and $j$ separately.
#
# 1. Prove it for one coordinate pair with sympy: compute $R_{i\theta}^\top R_{j\theta}$.
# 2. Implement `rope_score(q, k, i, j)` for a full vector (consecutive pairs $(x_{2p},x_{2p+1})$,
#    $\theta_p=10000^{-2p/d}$) with numpy, without calling `nextword.positions`.
# 3. Give the intuition in words.

# %%
import numpy as np
import sympy as sp

# %%
i, j, th = sp.symbols("i j theta", real=True)


def R(a):
    return sp.Matrix([[sp.cos(a), -sp.sin(a)], [sp.sin(a), sp.cos(a)]])


# BEGIN SOLUTION hint="show with sympy that R(i theta)^T R(j theta) depends on j - i only"
product = sp.simplify(R(i * th).T * R(j * th))
assert sp.simplify(product - R((j - i) * th)) == sp.zeros(2, 2)
# END SOLUTION
print("R(iθ)^T R(jθ) =", product.tolist())


# %%
def rope_score(q: np.ndarray, k: np.ndarray, i: int, j: int) -> float:
    """(R_i q) · (R_j k) for vectors of even length d (consecutive pairs, base 10000)."""
    # BEGIN SOLUTION hint="return a float: the dot product of q rotated to position i and k rotated to position j"
    d = q.shape[-1]
    theta = 10000.0 ** (-np.arange(0, d, 2) / d)  # (d/2,)

    def rotate(x, pos):
        c, s = np.cos(pos * theta), np.sin(pos * theta)
        out = np.empty_like(x)
        out[0::2] = x[0::2] * c - x[1::2] * s
        out[1::2] = x[0::2] * s + x[1::2] * c
        return out

    return float(rotate(q, i) @ rotate(k, j))
    # END SOLUTION


rng = np.random.default_rng(0)
q, k = rng.standard_normal(8), rng.standard_normal(8)
print(", ".join(f"{rope_score(q, k, 5 + s, 2 + s):.4f}" for s in (0, 10, 100)), "— the same for every shift")

# %% [markdown]
# **Intuition.**
# <!-- BEGIN SOLUTION -->
# A dot product only sees the *angle between* two vectors (and their lengths). Rotating $q$ by $i\theta$
# and $k$ by $j\theta$ changes that angle by $(j-i)\theta$, whatever $i$ and $j$ are: rotating both by
# the same extra amount (shifting the sentence) turns the pair rigidly and leaves the angle alone.
# Algebraically $R_{i\theta}^\top R_{j\theta}=R_{-i\theta}R_{j\theta}=R_{(j-i)\theta}$, so
# $(R_{i\theta}q)^\top R_{j\theta}k=q^\top R_{(j-i)\theta}k$: the positions enter only through $i-j$. With
# several frequencies, each pair contributes such a term, $\sum_p q_p^\top R_{(j-i)\theta_p}k_p$, so the
# whole score is a function of the offset (the cosine of the angle difference the chapter mentions is
# the $q_{2p}k_{2p}+q_{2p+1}k_{2p+1}$ part of it; a sine term of the same difference completes it).
# <!-- END SOLUTION -->

# %%
from nextword.booktools.exercises.checks import check_ex_p1_06

check_ex_p1_06(rope_score)
