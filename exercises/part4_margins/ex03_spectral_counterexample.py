# %% [markdown]
# > Student version generated from `solutions/` by `python -m nextword.booktools.exercises build`;
# > edit the solution, not this file. Replace each `NotImplementedError` stub, then run the
# > self-check cell at the end.

# %% [markdown]
# # Exercise 03 — The spectral condition is not necessary
# **Part:** 4 · **Difficulty:** ★★ · **Book notebook:** book/part4_margins/03_matrix_margin
#
# Lemma B.4: if $\rho(\Sigma_tA)<1$ then $I-\Sigma_tA$ is invertible. The remark after it says the
# converse fails. Build a concrete counterexample with an actual attention context ($W_V=I$, strict
# causal): choose $X\in\mathbb R^{L\times d}$ ($d\ge2$) and $W_Q,W_K$ such that at the **last** position
# the spectral margin $1-\rho(\Sigma_tA)$ is $\le0$ while $|\det(I-\Sigma_tA)|\ge0.1$.
# You may use `nextword.theory.barrier.matrix_margins` to explore. Then explain why Lemma B.4 holds.

# %%
import numpy as np

from nextword.theory.barrier import matrix_margins

# %%
raise NotImplementedError("try W_Q = W_K = I (so A = I) and a spread-out context; scale X until an eigenvalue of Σ_t A passes 1")
mm = matrix_margins(X, W_Q, W_K)
print(f"last position: 1 - rho = {mm.spectral[-1]:+.3f}, det = {mm.det[-1]:+.3f}")

# %% [markdown]
# **Why Lemma B.4 holds.**
# *Your answer here.*

# %%
from nextword.booktools.exercises.checks import check_ex_p4_03

check_ex_p4_03(X, W_Q, W_K)
