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
    # BEGIN SOLUTION hint="return dL/ds, shape (T, T) (Eq. 23)"
    B = U @ V.T  # (T, T), b_ij = u_i . v_j
    mean = np.sum(alpha * B, axis=1, keepdims=True)  # (T, 1), Eq. (12)
    return alpha * (B - mean)
    # END SOLUTION


def advantage(alpha: np.ndarray, U: np.ndarray, V: np.ndarray) -> np.ndarray:
    """A_ij = -(b_ij - E_alpha_i[b]), shape (T, T)."""
    # BEGIN SOLUTION hint="return the advantage matrix A, shape (T, T) (Sec. 3.4)"
    B = U @ V.T
    return -(B - np.sum(alpha * B, axis=1, keepdims=True))
    # END SOLUTION


A_demo = advantage(alpha_demo, U_demo, V_demo)
print("every alpha-weighted row sum of A is 0:", bool(np.allclose((alpha_demo * A_demo).sum(axis=1), 0.0, atol=1e-12)))

# %% [markdown]
# **Answer to 2.**
# <!-- BEGIN SOLUTION -->
# $\sum_j\alpha_{ij}A_{ij}=-\sum_j\alpha_{ij}b_{ij}+\mathbb E_{\alpha_i}[b]\sum_j\alpha_{ij}
# =-\mathbb E_{\alpha_i}[b]+\mathbb E_{\alpha_i}[b]=0$ because the row sums to one. A descent step
# moves the scores by $\Delta s_{ij}=\eta\,\alpha_{ij}A_{ij}$, so the score changes of a row add up to
# zero, $\sum_j\Delta s_{ij}=\eta\sum_j\alpha_{ij}A_{ij}=0$: attention is *reallocated* within the row, never created — some keys must lose
# what others gain (to first order, $\Delta\alpha_{ij}=\alpha_{ij}(\Delta s_{ij}-\sum_k\alpha_{ik}
# \Delta s_{ik})$ and $\sum_j\Delta\alpha_{ij}=0$). A key whose compatibility is above the mean has
# $A_{ij}<0$ (its alignment $a_{ij}$ is below the mean): its score *falls*. High $b_{ij}=u_i^\top v_j$ means $v_j$ points along the error $u_i$,
# i.e. attending to it would increase the loss; the helpful values are those with $b_{ij}$ below
# the mean (the errata notes that the paper's prose says the opposite).
# <!-- END SOLUTION -->

# %%
from nextword.booktools.exercises.checks import check_ex_p3_01

check_ex_p3_01(score_gradient, advantage)
