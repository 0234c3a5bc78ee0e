# %% [markdown]
# # Exercise 05 — Where the key gradient pushes the keys
# **Part:** 3 · **Difficulty:** ★★ · **Book notebook:** book/part3_dynamics/04_design_choices
#
# §6.2 of Aggarwal, Dalal, Misra writes the key gradient in advantage form,
# $\partial\mathcal L/\partial k_j=\frac1{\sqrt{d_k}}\sum_i\alpha_{ij}(b_{ij}-\mathbb E_{\alpha_i}[b])\,q_i$, with
# $b_{ij}=u_i^\top v_j$ and $u_i=\partial\mathcal L/\partial g_i$ (Eqs. 10–11, 23). This is the paper's notation
# ($b_{ij}$ good when small); pages 3.1 and 3.4 write the same gradient with the alignment
# $a_{ij}=-b_{ij}$ and the advantage $A_{ij}$ as $-\frac1{\sqrt{d_k}}\sum_i\alpha_{ij}A_{ij}\,q_i$.
#
# 1. Implement `key_gradient(params, X, y)` → $\partial\mathcal L/\partial K$ of shape `(T, d_k)` for the summed
#    loss (9) of the §2.1 head (no causal mask: every query attends to all $T$ keys, as in Eq. (5) and
#    `head_forward`'s default), using `head_forward` and `upstream_gradient` from
#    `nextword.theory.dynamics` and the formula above (no finite differences, no autograd).
# 2. When $G$ interchangeable groups of queries each find only their own group's keys helpful, the
#    symmetric push ends in $G$ unit vectors with equal pairwise cosine and zero sum. Implement `simplex_cosine(G)` returning that
#    cosine, and say whether two hypotheses end up orthogonal.

# %%
import numpy as np

from nextword.theory.dynamics import HeadParams, head_forward, upstream_gradient

rng = np.random.default_rng(0)
params = HeadParams.init(4, 3, 2, 3, rng=rng, scale=0.8)
X, y = rng.normal(size=(5, 4)), rng.integers(0, 3, size=5)


# %%
def key_gradient(params: HeadParams, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """dL/dK (T, d_k): (1/sqrt(d_k)) sum_i alpha_ij (b_ij - E_alpha_i[b]) q_i for every key j."""
    # BEGIN SOLUTION hint="return dL/dK as an array of shape (T, d_k), computed from the advantage form (no finite differences)"
    fw = head_forward(params, X)
    U = upstream_gradient(fw.probs, y, params.W_O)                   # (T, d_v)
    B = U @ fw.V.T                                                   # b_ij = u_i . v_j
    dS = fw.alpha * (B - (fw.alpha * B).sum(axis=1, keepdims=True))  # Eq. (23)
    return dS.T @ fw.Q / np.sqrt(fw.Q.shape[1])
    # END SOLUTION


def simplex_cosine(G: int) -> float:
    """Pairwise cosine of G equal-angle unit vectors with zero sum."""
    # BEGIN SOLUTION hint="return the pairwise cosine (a float) of G equal-angle unit vectors that sum to zero"
    return -1.0 / (G - 1)
    # END SOLUTION


print("dL/dK =\n", np.round(key_gradient(params, X, y), 4))
print("simplex cosines for G = 2..5:", [round(simplex_cosine(G), 3) for G in range(2, 6)])

# %% [markdown]
# **Answer to 2.**
# <!-- BEGIN SOLUTION -->
# For unit vectors with pairwise cosine $c$, $\|\sum_g k_g\|^2=G+G(G-1)c$, which vanishes for
# $c=-1/(G-1)$. Two hypotheses end up *opposite* ($c=-1$), three at 120° ($c=-\tfrac12$); the keys
# approach orthogonality only as $G$ grows. Notebook 3.4 measures this on a trained head: the *mean*
# pairwise cosine of three or five groups' keys ends near $-1/(G-1)$ (the keys nearly balance), though
# their single angles are unequal, and two groups' keys end far past a right angle, still moving
# towards opposite; `book/ERRATA.md` records it against §6.2's "approximate orthogonality".
# <!-- END SOLUTION -->

# %%
from nextword.booktools.exercises.checks.new_items import check_ex_p3_05

check_ex_p3_05(key_gradient, simplex_cosine)
