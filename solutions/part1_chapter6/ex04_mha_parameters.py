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
    # BEGIN SOLUTION hint="return an int: the number of weights of n_layers multi-head attention modules (no biases)"
    d_head = d_model // n_heads
    per_head = 3 * d_model * d_head
    per_layer = n_heads * per_head + d_model * d_model
    return n_layers * per_layer
    # END SOLUTION


answer = mha_parameter_count(512, 8, 12)
print(f"d_model = 512, 8 heads, 12 layers: {answer:,} parameters")

# %% [markdown]
# **Answer to 3.**
# <!-- BEGIN SOLUTION -->
# Per layer the $h$ heads contribute $3\,h\,d_{\text{model}}\,d_k=3d_{\text{model}}^2$ because each head's
# width is $d_k=d_{\text{model}}/h$, and $W^O$ adds $d_{\text{model}}^2$: the total
# $4d_{\text{model}}^2L=4\cdot512^2\cdot12=12{,}582{,}912$ does not depend on the number of heads. More heads means more, narrower projections — the same number of entries cut differently.
# sympy confirms the cancellation:
# <!-- END SOLUTION -->

# %%
# BEGIN SOLUTION hint="write the count as a sympy expression in d_model, n_heads, n_layers and print it simplified"
d, h, L = sp.symbols("d_model n_heads n_layers", positive=True)
print(sp.simplify(L * (h * 3 * d * (d / h) + d * d)))
# END SOLUTION

# %%
from nextword.booktools.exercises.checks import check_ex_p1_04

check_ex_p1_04(mha_parameter_count)
