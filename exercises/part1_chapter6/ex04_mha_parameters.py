# %% [markdown]
# > Work on your own copy (`.venv/bin/nextword exercises copy ~/my-exercises` in a terminal; a
# > `git pull` rewrites the repository's `exercises/`). Replace each `NotImplementedError` stub, then
# > run the self-check cell at the end: it lists every check, ✓ or ✗. Stuck? `hint("p1_04", 1)`
# > gives a first hint, tiers 2 and 3 say more. Written answers: after trying, `reveal("p1_04")`.
# > Where you stand on all exercises: `.venv/bin/nextword grade --dir ~/my-exercises`.
# > (For maintainers: this file is generated from `solutions/` by
# > `python -m nextword.booktools.exercises build`; change the solution, not this file.)

# %%
from nextword.booktools.exercises import hint, reveal  # noqa: F401  (hints and model answers on demand)

# %% [markdown]
# # Exercise 04 — Counting the parameters of multi-head attention
# **Part:** 1 · **Difficulty:** ★ · **Book notebook:** book/part1_chapter6/6_4_multi_head
#
# Chapter 6, Exercise 4. A transformer has $d_{\text{model}}=512$, $h=8$ heads per layer and $L=12$
# layers (`n_heads` and `n_layers` in code). How many parameters do its multi-head attention modules hold in total —
# query, key and value projections $W^Q_m, W^K_m, W^V_m$ of every head $m$ plus the output projection
# $W^O$, no biases, nothing else (§6.4)?
#
# 1. Implement `mha_parameter_count(d_model, n_heads, n_layers)` by counting matrix entries head by head.
# 2. Evaluate it for the exercise's model.
# 3. How does the count change with the number of heads, and why?

# %%
import sympy as sp


# %%
def mha_parameter_count(d_model: int, n_heads: int, n_layers: int) -> int:
    """Entries of W^Q_m, W^K_m, W^V_m (each d_model x d_k, for every head m) and W^O, over all layers."""
    raise NotImplementedError("return an int: the number of weights of n_layers multi-head attention modules (no biases) (stuck? hint('p1_04', 1))")


answer = mha_parameter_count(512, 8, 12)
print(f"d_model = 512, 8 heads, 12 layers: {answer:,} parameters")

# %% [markdown]
# **Answer to 3.**
# *Your answer here.* (Once you have written it, `reveal("p1_04", 1)` shows a model answer.)

# %%
raise NotImplementedError("write the count as a sympy expression in d_model, n_heads, n_layers and print it simplified (stuck? hint('p1_04', 1))")

# %%
from nextword.booktools.exercises.checks import check_ex_p1_04

check_ex_p1_04(mha_parameter_count)
