# %% [markdown]
# > Work on your own copy (`.venv/bin/nextword exercises copy ~/my-exercises` in a terminal; a
# > `git pull` rewrites the repository's `exercises/`). Replace each `NotImplementedError` stub, then
# > run the self-check cell at the end: it lists every check, ✓ or ✗. Stuck? `hint("p3_01", 1)`
# > gives a first hint, tiers 2 and 3 say more. Written answers: after trying, `reveal("p3_01")`.
# > Where you stand on all exercises: `.venv/bin/nextword grade --dir ~/my-exercises`.
# > (For maintainers: this file is generated from `solutions/` by
# > `python -m nextword.booktools.exercises build`; change the solution, not this file.)

# %%
from nextword.booktools.exercises import hint, reveal  # noqa: F401  (hints and model answers on demand)

# %% [markdown]
# # Exercise 01 — The advantage form of the score gradient
# **Part:** 3 · **Difficulty:** ★ · **Book notebook:** book/part3_dynamics/01_attention_gradients
#
# A head with attention weights $\alpha\in\mathbb R^{T\times T}$ (rows sum to 1), values
# $V\in\mathbb R^{T\times d_v}$ and upstream errors $U\in\mathbb R^{T\times d_v}$ (row $i$ is
# $u_i=\partial\mathcal L/\partial g_i$, Eq. 10) has compatibilities $b_{ij}=u_i^\top v_j$ (Eq. 11).
# This exercise keeps the paper's notation: $b_{ij}$ is good when *small*. Page 3.1 teaches the same
# quantities with the alignment $a_{ij}=-u_i\cdot v_j=-b_{ij}$ (good when large): there the
# advantage is $A_{ij}=a_{ij}-\sum_{j'}\alpha_{ij'}a_{ij'}$, the same number as below, and
# $\partial\mathcal L/\partial s_{ij}=-\alpha_{ij}A_{ij}$.
#
# 1. Implement `score_gradient(alpha, U, V)` returning $\partial\mathcal L/\partial s_{ij}=\alpha_{ij}(b_{ij}-
#    \mathbb E_{\alpha_i}[b])$ (Eq. 23) without loops, and `advantage(alpha, U, V)` returning
#    $A_{ij}=-(b_{ij}-\mathbb E_{\alpha_i}[b])$ (§3.4). Masked keys ($\alpha_{ij}=0$) may get any
#    advantage; the checker only looks at visible ones. Use numpy only.
# 2. Show that $\sum_j\alpha_{ij}A_{ij}=0$ for every query $i$, and say what this means for how a
#    gradient step reallocates attention. Which way does a score move when $b_{ij}$ is *above* the
#    attention-weighted mean?

# %%
import numpy as np

from nextword.attention import softmax

rng = np.random.default_rng(0)
alpha_demo = softmax(rng.standard_normal((4, 4)))
U_demo, V_demo = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))


# %%
def score_gradient(alpha: np.ndarray, U: np.ndarray, V: np.ndarray) -> np.ndarray:
    """dL/ds (T, T) by Eq. (23): alpha * (B - E_alpha[b]) with B = U V^T."""
    raise NotImplementedError("return dL/ds, shape (T, T) (Eq. 23) (stuck? hint('p3_01', 1))")


def advantage(alpha: np.ndarray, U: np.ndarray, V: np.ndarray) -> np.ndarray:
    """A_ij = -(b_ij - E_alpha_i[b]), shape (T, T)."""
    raise NotImplementedError("return the advantage matrix A, shape (T, T) (Sec. 3.4) (stuck? hint('p3_01', 1))")


A_demo = advantage(alpha_demo, U_demo, V_demo)
print("every alpha-weighted row sum of A is 0:", bool(np.allclose((alpha_demo * A_demo).sum(axis=1), 0.0, atol=1e-12)))

# %% [markdown]
# **Answer to 2.**
# *Your answer here.* (Once you have written it, `reveal("p3_01", 1)` shows a model answer.)

# %%
from nextword.booktools.exercises.checks import check_ex_p3_01

check_ex_p3_01(score_gradient, advantage)
