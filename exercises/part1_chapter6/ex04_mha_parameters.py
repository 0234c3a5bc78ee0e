# %% [markdown]
# > Student version generated from `solutions/` by `python -m nextword.booktools.exercises build`;
# > edit the solution, not this file. Replace each `NotImplementedError` stub, then run the
# > self-check cell at the end.

# %% [markdown]
# # Exercise 04 — Counting the parameters of multi-head attention
# **Part:** 1 · **Difficulty:** ★ · **Book notebook:** book/part1_chapter6/6_4_multi_head
#
# Chapter 6, Exercise 4. A transformer has $d_{\text{model}}=512$, $n_{\text{heads}}=8$ and
# $n_{\text{layers}}=12$. How many parameters do its multi-head attention modules hold in total —
# query, key and value projections of every head plus the output projection $W^O$, no biases, nothing
# else (§6.4)?
#
# 1. Implement `mha_parameter_count(d_model, n_heads, n_layers)` by counting matrix entries head by head.
# 2. Evaluate it for the exercise's model.
# 3. How does the count change with the number of heads, and why?

# %%
import sympy as sp


# %%
def mha_parameter_count(d_model: int, n_heads: int, n_layers: int) -> int:
    """Entries of W_h^Q, W_h^K, W_h^V (each d_model x d_head, for every head) and W^O, over all layers."""
    raise NotImplementedError("each head has three d_model x (d_model // n_heads) matrices; W^O is d_model x d_model")


answer = mha_parameter_count(512, 8, 12)
print(f"d_model = 512, 8 heads, 12 layers: {answer:,} parameters")

# %% [markdown]
# **Answer to 3.**
# *Your answer here.*

# %%
raise NotImplementedError("with sympy symbols d_model, n_heads, n_layers, simplify your count and watch n_heads cancel")

# %%
from nextword.booktools.exercises.checks import check_ex_p1_04

check_ex_p1_04(mha_parameter_count)
