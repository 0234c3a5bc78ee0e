# %% [markdown]
# > Work on your own copy (`.venv/bin/nextword exercises copy ~/my-exercises` in a terminal; a
# > `git pull` rewrites the repository's `exercises/`). Replace each `NotImplementedError` stub, then
# > run the self-check cell at the end: it lists every check, ✓ or ✗. Stuck? `hint("p1_01", 1)`
# > gives a first hint, tiers 2 and 3 say more. Written answers: after trying, `reveal("p1_01")`.
# > Where you stand on all exercises: `.venv/bin/nextword grade --dir ~/my-exercises`.
# > (For maintainers: this file is generated from `solutions/` by
# > `python -m nextword.booktools.exercises build`; change the solution, not this file.)

# %%
from nextword.booktools.exercises import hint, reveal  # noqa: F401  (hints and model answers on demand)

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
    raise NotImplementedError("return (scaled_scores, exponentials, weights): three arrays of shape (n,) (stuck? hint('p1_01', 1))")


scores, exps, weights = attention_steps(q3, K3)
print("scaled scores:", np.round(scores, 4))
print("exponentials: ", np.round(exps, 4))
print("weights:      ", np.round(weights, 4), " sum =", f"{weights.sum():.6f}")

# %% [markdown]
# **The numbers, step by step.**
#
# *Your answer here.* (Once you have written it, `reveal("p1_01", 1)` shows a model answer.)

# %%
from nextword.booktools.exercises.checks import check_ex_p1_01

check_ex_p1_01(attention_steps)
