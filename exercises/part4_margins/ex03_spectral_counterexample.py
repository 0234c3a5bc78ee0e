# %% [markdown]
# > Work on your own copy (`.venv/bin/nextword exercises copy ~/my-exercises` in a terminal; a
# > `git pull` rewrites the repository's `exercises/`). Replace each `NotImplementedError` stub, then
# > run the self-check cell at the end: it lists every check, ✓ or ✗. Stuck? `hint("p4_03", 1)`
# > gives a first hint, tiers 2 and 3 say more. Written answers: after trying, `reveal("p4_03")`.
# > Where you stand on all exercises: `.venv/bin/nextword grade --dir ~/my-exercises`.
# > (For maintainers: this file is generated from `solutions/` by
# > `python -m nextword.booktools.exercises build`; change the solution, not this file.)

# %%
from nextword.booktools.exercises import hint, reveal  # noqa: F401  (hints and model answers on demand)

# %% [markdown]
# # Exercise 03 — The spectral condition is not necessary
# **Part:** 4 · **Difficulty:** ★★ · **Book notebook:** book/part4_margins/03_matrix_margin
#
# Lemma B.4: if $\rho(\Sigma_tA)<1$ then $I-\Sigma_tA$ is invertible. The remark after it says the
# converse fails. As on page 4.3, $A=W_K^\top W_Q$ and $\Sigma_t$ is the attention-weighted covariance of the
# values position $t$ attends to, so that $I-\Sigma_tA$ is the diagonal Jacobian block
# $\partial\hat\varepsilon_t/\partial x_t$. Build a concrete counterexample with an actual attention context
# ($W_V=I$, strict causal: position $t$ attends to the earlier positions $s<t$ only): choose
# $X\in\mathbb R^{T\times d}$ ($d\ge2$; row $t$ is $x_t^\top$) and $W_Q,W_K$ of shape $(d_k,d)$ such that at the
# **last** position the spectral margin $1-\rho(\Sigma_tA)$ is $\le0$ while $|\det(I-\Sigma_tA)|\ge0.1$.
# You may use `nextword.theory.barrier.matrix_margins` to explore. Then explain why Lemma B.4 holds.

# %%
import numpy as np

from nextword.theory.barrier import matrix_margins

# %%
raise NotImplementedError("set X (T, d), W_Q and W_K (d_k, d) to a counterexample (stuck? hint('p4_03', 1))")
mm = matrix_margins(X, W_Q, W_K)
print(f"last position: 1 - rho = {mm.spectral[-1]:+.3f}, det = {mm.det[-1]:+.3f}")

# %% [markdown]
# **Why Lemma B.4 holds.**
# *Your answer here.* (Once you have written it, `reveal("p4_03", 1)` shows a model answer.)

# %%
from nextword.booktools.exercises.checks import check_ex_p4_03

check_ex_p4_03(X, W_Q, W_K)
