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
# BEGIN SOLUTION hint="build the three softmax weights as sympy expressions and print their simplified sum"
z = sp.symbols("z1:4", real=True)
alpha = [sp.exp(zj) / sum(sp.exp(zk) for zk in z) for zj in z]
total = sp.simplify(sum(alpha))
print("sum of the weights:", total)
print("each weight is positive:", all(sp.ask(sp.Q.positive(a)) for a in alpha))
assert total == 1
# END SOLUTION

# %% [markdown]
# **Proof and geometry.**
# <!-- BEGIN SOLUTION -->
# Write $z_j=q[i]\cdot k[j]/\sqrt{d_k}$ for $j\le i$ and $Z=\sum_{m\le i}e^{z_m}$. Since $e^{x}>0$ for every
# real $x$, $Z>0$ and each $\alpha[i,j]=e^{z_j}/Z>0$; and $\sum_j\alpha[i,j]=Z/Z=1$. A linear combination
# $\sum_j\lambda_jv[j]$ with $\lambda_j\ge0$ and $\sum_j\lambda_j=1$ is by definition a convex
# combination, so the output is one, with coefficients $\lambda_j=\alpha[i,j]$.
#
# Geometrically the output lies in the convex hull of $\{v[1],\dots,v[i]\}$ — the smallest convex set
# containing the values — and the weights are barycentric coordinates of it (the only ones when the
# values are affinely independent). Consequences: every
# coordinate of the output lies between the smallest and largest value of that coordinate; the output
# can never be "more extreme" than the values it reads; when the values are affinely independent it
# equals a single $v[j]$ only in the limit where one weight tends to 1 (all weights are strictly
# positive, so for finite scores the output is in the relative interior of the hull; values that are
# not, say $v[3]=\tfrac12(v[1]+v[2])$, can give $v[3]$ itself with finite scores); and uniform scores
# give the centroid $\frac1i\sum_jv[j]$. Because the weights are softmax outputs, the map from scores to the
# output is smooth, which is what makes attention trainable.
# <!-- END SOLUTION -->

# %%
def attention_output(q: np.ndarray, K: np.ndarray, V: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Softmax weights ``(n,)`` of ``q (d,)`` against ``K (n, d)`` and the output ``weights @ V``."""
    # BEGIN SOLUTION hint="return (weights, output): arrays of shape (n,) and (d_v,)"
    s = K @ q / np.sqrt(q.shape[0])
    w = np.exp(s - s.max())
    w /= w.sum()
    return w, w @ V
    # END SOLUTION


def in_convex_hull(x: np.ndarray, V: np.ndarray) -> bool:
    """True if ``x (dv,)`` is a convex combination of the rows of ``V (n, dv)``."""
    # BEGIN SOLUTION hint="return True if x is a convex combination of the rows of V, else False"
    n = V.shape[0]
    A_eq = np.vstack([V.T, np.ones((1, n))])  # (dv + 1, n)
    b_eq = np.append(x, 1.0)
    res = linprog(np.zeros(n), A_eq=A_eq, b_eq=b_eq, bounds=[(0, None)] * n, method="highs")
    return res.status == 0
    # END SOLUTION


rng = np.random.default_rng(0)
q, K, V = rng.standard_normal(4), rng.standard_normal((5, 4)), rng.standard_normal((5, 2))
w, out = attention_output(q, K, V)
print("weights:", np.round(w, 3), "sum", f"{w.sum():.6f}")
print("output in the hull of the values:", in_convex_hull(out, V),
      "| a point far outside:", in_convex_hull(out + 100.0, V))

# %%
from nextword.booktools.exercises.checks import check_ex_p1_02

check_ex_p1_02(attention_output, in_convex_hull)
