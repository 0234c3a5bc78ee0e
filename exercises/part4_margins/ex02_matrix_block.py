# %% [markdown]
# > Work on your own copy (`.venv/bin/nextword exercises copy ~/my-exercises` in a terminal; a
# > `git pull` rewrites the repository's `exercises/`). Replace each `NotImplementedError` stub, then
# > run the self-check cell at the end: it lists every check, ✓ or ✗. Stuck? `hint("p4_02", 1)`
# > gives a first hint, tiers 2 and 3 say more. Written answers: after trying, `reveal("p4_02")`.
# > Where you stand on all exercises: `.venv/bin/nextword grade --dir ~/my-exercises`.
# > (For maintainers: this file is generated from `solutions/` by
# > `python -m nextword.booktools.exercises build`; change the solution, not this file.)

# %%
from nextword.booktools.exercises import hint, reveal  # noqa: F401  (hints and model answers on demand)

# %% [markdown]
# # Exercise 02 — The exact diagonal Jacobian block for any $W_V$
# **Part:** 4 · **Difficulty:** ★★ · **Book notebook:** book/part4_margins/03_matrix_margin
#
# Rows $x_t$ of $X\in\mathbb R^{T\times d}$; column-vector maps $q_t=W_Qx_t$, $k_s=W_Kx_s$, $v_s=W_Vx_s$;
# scores $\zeta_{ts}=q_t^\top k_s$; strict-causal weights $\alpha_{ts}=\mathrm{softmax}_{s<t}(\zeta_{ts})$, $\mu_t=\sum_{s<t}\alpha_{ts}v_s$,
# $\hat\varepsilon_t=x_t-\mu_t$ (Eqs. 2–4). Theorem 1 (Eq. 14) states $\partial \hat\varepsilon_t/\partial x_t=I-\Sigma_tA$ with
# $A=W_K^\top W_Q$ and $\Sigma_t$ the attention-weighted covariance of the values.
# (The book's letters, as in Part 4: $T$ positions, scores $\zeta_{ts}$, residuals $\hat\varepsilon_t$; the paper
# writes $L$, $\ell_{ts}$ and $e_t$.)
#
# 1. Derive $\partial\mu_t/\partial x_t$ for a general $W_V$ (use Lemma B.1 and
#    $\partial\zeta_{ts}/\partial x_t=A^\top x_s$) and implement `diagonal_block(X, t, W_Q, W_K, W_V)`
#    (0-based `t`, shape `(d, d)`) without calling `nextword.theory.barrier`. At `t = 0` nothing is attended:
#    take $\mu_t=0$ there, so the block is $I$.
# 2. State exactly when your block equals the paper's $I-\Sigma_tA$.

# %%
import numpy as np

from nextword.attention import softmax

rng = np.random.default_rng(0)
X = rng.normal(size=(5, 3))
W_Q, W_K, W_V = rng.normal(size=(2, 3)), rng.normal(size=(2, 3)), rng.normal(size=(3, 3))


# %%
def diagonal_block(X, t, W_Q, W_K, W_V):
    """Exact ∂ε̂_t/∂x_t (strict causal) for any W_V; shape (d, d)."""
    raise NotImplementedError("return the exact Jacobian block dε̂_t/dx_t, shape (d, d) (stuck? hint('p4_02', 1))")


print(np.round(diagonal_block(X, 3, W_Q, W_K, W_V), 4))

# %% [markdown]
# **Answer to 2.**
# *Your answer here.* (Once you have written it, `reveal("p4_02", 1)` shows a model answer.)

# %%
from nextword.booktools.exercises.checks import check_ex_p4_02

check_ex_p4_02(diagonal_block)
