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


# BEGIN SOLUTION hint="show with sympy that R(i theta)^T R(j theta) depends on j - i only"
product = sp.simplify(R(i * th).T * R(j * th))
assert sp.simplify(product - R((j - i) * th)) == sp.zeros(2, 2)
# END SOLUTION
print("R(iθ)^T R(jθ) =", product.tolist())


# %%
def rope_score(q: np.ndarray, k: np.ndarray, i: int, j: int) -> float:
    """(R(iθ) q) · (R(jθ) k) for vectors of even length d_k (consecutive pairs, base 10000)."""
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
# Algebraically $R(i\theta)^\top R(j\theta)=R(-i\theta)R(j\theta)=R\big((j-i)\theta\big)$, so
# $(R(i\theta)q)^\top R(j\theta)k=q^\top R\big((j-i)\theta\big)k$: the positions enter only through $i-j$. With
# several frequencies, each pair contributes such a term: with $q^{(m)}=(q_{2m},q_{2m+1})$ and $k^{(m)}$ the
# pairs, the score is $\sum_m q^{(m)\top} R\big((j-i)\theta_m\big)k^{(m)}$, a function of the offset.
# Written out, pair $m$ contributes
# $\cos\big((j-i)\theta_m\big)\,(q_{2m}k_{2m}+q_{2m+1}k_{2m+1})+\sin\big((j-i)\theta_m\big)\,(q_{2m+1}k_{2m}-q_{2m}k_{2m+1})$: the cosine of the angle difference
# that the chapter mentions multiplies the pair's plain dot product, and a sine of the same difference
# completes it.
# <!-- END SOLUTION -->

# %%
from nextword.booktools.exercises.checks import check_ex_p1_06

check_ex_p1_06(rope_score)
