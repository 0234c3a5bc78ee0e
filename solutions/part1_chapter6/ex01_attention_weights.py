# %% [markdown]
# # Exercise 01 — Attention weights by hand
# **Part:** 1 · **Difficulty:** ★ · **Book notebook:** book/part1_chapter6/6_2_attention_mechanism
#
# Chapter 6, Exercise 1. A sequence has length $T=5$ and $d_{\text{model}}=4$. For position $i=3$ the
# query is $q[3]=[1,0,-1,0]$ and the keys of the positions it may see are $k[1]=[1,1,0,0]$,
# $k[2]=[0,1,1,0]$, $k[3]=[-1,0,1,1]$. Compute the attention weights $\alpha[3,j]$ step by step with
# the formula of §6.2:
#
# 1. the scaled scores $q[3]\cdot k[j]/\sqrt{d_k}$ (one head: $d_k=d_{\text{model}}=4$, the length of the query),
# 2. their exponentials,
# 3. the normalised weights.
#
# Write `attention_steps(q, K)` returning the three arrays for any query `q (d,)` and keys `K (n, d)`
# (use only numpy; no library softmax), then read off $\alpha[3,2]$ and $\alpha[3,3]$.

# %%
import numpy as np

q3 = np.array([1.0, 0.0, -1.0, 0.0])
K3 = np.array([[1.0, 1, 0, 0], [0, 1, 1, 0], [-1, 0, 1, 1]])


# %%
def attention_steps(q: np.ndarray, K: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Scaled scores, exponentials and softmax weights of one query ``q (d,)`` against keys ``K (n, d)``."""
    # BEGIN SOLUTION hint="return (scaled_scores, exponentials, weights): three arrays of shape (n,)"
    d = q.shape[0]
    scores = K @ q / np.sqrt(d)  # (n,)
    exps = np.exp(scores - scores.max())  # the shift cancels in the ratio and avoids overflow
    weights = exps / exps.sum()
    return scores, exps, weights
    # END SOLUTION


scores, exps, weights = attention_steps(q3, K3)
print("scaled scores:", np.round(scores, 4))
print("exponentials: ", np.round(exps, 4))
print("weights:      ", np.round(weights, 4), " sum =", f"{weights.sum():.6f}")

# %% [markdown]
# **The numbers, step by step.**
#
# <!-- BEGIN SOLUTION -->
# $q[3]\cdot k[1]=1$, $q[3]\cdot k[2]=-1$, $q[3]\cdot k[3]=-2$; divided by
# $\sqrt4=2$: $[0.5,-0.5,-1]$. Exponentials $[e^{0.5},e^{-0.5},e^{-1}]=[1.6487,0.6065,0.3679]$ with sum
# $2.6231$, so $\alpha[3,1]=0.6285$, $\alpha[3,2]=e^{-0.5}/2.6231=0.2312$, $\alpha[3,3]=e^{-1}/2.6231=0.1402$.
# (Subtracting the maximum score before exponentiating, as the code does, multiplies every
# exponential by $e^{-0.5}$ and leaves the weights unchanged.) The query is closest in direction to
# $k[1]$, so position 1 gets most of the weight even though position 3 is the query's own.
# <!-- END SOLUTION -->

# %%
from nextword.booktools.exercises.checks import check_ex_p1_01

check_ex_p1_01(attention_steps)
