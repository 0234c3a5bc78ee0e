# %% [markdown]
# > Work on your own copy (`.venv/bin/nextword exercises copy ~/my-exercises` in a terminal; a
# > `git pull` rewrites the repository's `exercises/`). Replace each `NotImplementedError` stub, then
# > run the self-check cell at the end: it lists every check, ✓ or ✗. Stuck? `hint("p3_02", 1)`
# > gives a first hint, tiers 2 and 3 say more. Written answers: after trying, `reveal("p3_02")`.
# > Where you stand on all exercises: `.venv/bin/nextword grade --dir ~/my-exercises`.
# > (For maintainers: this file is generated from `solutions/` by
# > `python -m nextword.booktools.exercises build`; change the solution, not this file.)

# %%
from nextword.booktools.exercises import hint, reveal  # noqa: F401  (hints and model answers on demand)

# %% [markdown]
# # Exercise 02 — What a value update does to each query's loss
# **Part:** 3 · **Difficulty:** ★★ · **Book notebook:** book/part3_dynamics/02_routing_and_specialisation
#
# Moving only $v_j$ by the responsibility-weighted step $\Delta v_j=-\eta\sum_r\alpha_{rj}u_r$
# (Eq. 33) changes query $i$'s loss, to first order, by
# $\Delta\mathcal L_i\approx-\eta\,\alpha_{ij}\sum_r\alpha_{rj}\,u_i^\top u_r$ (Eq. 41). If query $i$
# dominates column $j$, this becomes $\Delta\mathcal L_i\approx-\eta\,\alpha_{ij}^2\|u_i\|^2$ (Eq. 43).
#
# 1. Implement `first_order(alpha, U, j, eta)` and `dominant(alpha, U, j, eta)`, each returning the
#    vector $(\Delta\mathcal L_i)_{i=1..T}$ of Eq. (41), resp. (43) (`j` is the 0-based index of the value
#    that moves, column `j` of `alpha`; the result's entry 0 is query 1). Numpy only.
# 2. Build a small configuration `alpha_bad (T, T)`, `U_bad (T, d_v)`, `j_bad` in which some
#    query's loss goes **up** to first order, although (43) promises every query a decrease.
# 3. Explain in two sentences why this does not contradict the total loss falling.

# %%
import numpy as np


# %%
def first_order(alpha: np.ndarray, U: np.ndarray, j: int, eta: float) -> np.ndarray:
    """Eq. (41): Delta L_i for every query i, shape (T,)."""
    raise NotImplementedError("return the first-order loss change of every query, shape (T,) (Eq. 41) (stuck? hint('p3_02', 1))")


def dominant(alpha: np.ndarray, U: np.ndarray, j: int, eta: float) -> np.ndarray:
    """Eq. (43): -eta alpha_ij^2 ||u_i||^2 for every query i, shape (T,)."""
    raise NotImplementedError("return the dominant term of Eq. (43) for every query, shape (T,) (stuck? hint('p3_02', 1))")


raise NotImplementedError("set alpha_bad (T, T), U_bad (T, d_v) and j_bad so that some query's loss rises (stuck? hint('p3_02', 1))")
print("Eq. (41):", np.round(first_order(alpha_bad, U_bad, j_bad, 1.0), 4))
print("Eq. (43):", np.round(dominant(alpha_bad, U_bad, j_bad, 1.0), 4))

# %% [markdown]
# **Answer to 3.**
# *Your answer here.* (Once you have written it, `reveal("p3_02", 1)` shows a model answer.)

# %%
from nextword.booktools.exercises.checks import check_ex_p3_02

check_ex_p3_02(first_order, dominant, alpha_bad, U_bad, j_bad)
