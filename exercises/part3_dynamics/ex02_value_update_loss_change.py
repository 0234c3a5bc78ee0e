# %% [markdown]
# > Student version generated from `solutions/` by `python -m nextword.booktools.exercises build`;
# > edit the solution, not this file. Replace each `NotImplementedError` stub, then run the
# > self-check cell at the end.

# %% [markdown]
# # Exercise 02 — What a value update does to each query's loss
# **Part:** 3 · **Difficulty:** ★★ · **Book notebook:** book/part3_dynamics/02_routing_and_specialisation
#
# Moving only $v_j$ by the responsibility-weighted step $\Delta v_j=-\eta\sum_r\alpha_{rj}u_r$
# (Eq. 33) changes query $i$'s loss, to first order, by
# $\Delta L_i\approx-\eta\,\alpha_{ij}\sum_r\alpha_{rj}\,u_i^\top u_r$ (Eq. 41). If query $i$
# dominates column $j$, this becomes $\Delta L_i\approx-\eta\,\alpha_{ij}^2\|u_i\|^2$ (Eq. 43).
#
# 1. Implement `first_order(alpha, U, j, eta)` and `dominant(alpha, U, j, eta)`, each returning the
#    vector $(\Delta L_i)_{i=1..T}$ of Eq. (41), resp. (43). Numpy only.
# 2. Build a small configuration `alpha_bad (T, T)`, `U_bad (T, d_v)`, `j_bad` in which some
#    query's loss goes **up** to first order, although (43) promises every query a decrease.
# 3. Explain in two sentences why this does not contradict the total loss falling.

# %%
import numpy as np


# %%
def first_order(alpha: np.ndarray, U: np.ndarray, j: int, eta: float) -> np.ndarray:
    """Eq. (41): Delta L_i for every query i, shape (T,)."""
    raise NotImplementedError("ubar_j = alpha[:, j] @ U; then -eta * alpha[:, j] * (U @ ubar_j)")


def dominant(alpha: np.ndarray, U: np.ndarray, j: int, eta: float) -> np.ndarray:
    """Eq. (43): -eta alpha_ij^2 ||u_i||^2 for every query i, shape (T,)."""
    raise NotImplementedError("use alpha[:, j] ** 2 and the squared row norms of U")


raise NotImplementedError("two queries share column 0; give the lighter user an error opposite to the heavier one's")
print("Eq. (41):", np.round(first_order(alpha_bad, U_bad, j_bad, 1.0), 4))
print("Eq. (43):", np.round(dominant(alpha_bad, U_bad, j_bad, 1.0), 4))

# %% [markdown]
# **Answer to 3.**
# *Your answer here.*

# %%
from nextword.booktools.exercises.checks import check_ex_p3_02

check_ex_p3_02(first_order, dominant, alpha_bad, U_bad, j_bad)
