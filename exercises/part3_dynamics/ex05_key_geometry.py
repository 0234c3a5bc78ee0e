# %% [markdown]
# > Work on your own copy (`.venv/bin/nextword exercises copy ~/my-exercises` in a terminal; a
# > `git pull` rewrites the repository's `exercises/`). Replace each `NotImplementedError` stub, then
# > run the self-check cell at the end: it lists every check, ✓ or ✗. Stuck? `hint("p3_05", 1)`
# > gives a first hint, tiers 2 and 3 say more. Written answers: after trying, `reveal("p3_05")`.
# > Where you stand on all exercises: `.venv/bin/nextword grade --dir ~/my-exercises`.
# > (For maintainers: this file is generated from `solutions/` by
# > `python -m nextword.booktools.exercises build`; change the solution, not this file.)

# %%
from nextword.booktools.exercises import hint, reveal  # noqa: F401  (hints and model answers on demand)

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
    raise NotImplementedError("return dL/dK as an array of shape (T, d_k), computed from the advantage form (no finite differences) (stuck? hint('p3_05', 1))")


def simplex_cosine(G: int) -> float:
    """Pairwise cosine of G equal-angle unit vectors with zero sum."""
    raise NotImplementedError("return the pairwise cosine (a float) of G equal-angle unit vectors that sum to zero (stuck? hint('p3_05', 1))")


print("dL/dK =\n", np.round(key_gradient(params, X, y), 4))
print("simplex cosines for G = 2..5:", [round(simplex_cosine(G), 3) for G in range(2, 6)])

# %% [markdown]
# **Answer to 2.**
# *Your answer here.* (Once you have written it, `reveal("p3_05", 1)` shows a model answer.)

# %%
from nextword.booktools.exercises.checks.new_items import check_ex_p3_05

check_ex_p3_05(key_gradient, simplex_cosine)
