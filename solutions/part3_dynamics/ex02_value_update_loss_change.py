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
    # BEGIN SOLUTION hint="return the first-order loss change of every query, shape (T,) (Eq. 41)"
    ubar_j = alpha[:, j] @ U  # (d_v,), Eq. (37)
    return -eta * alpha[:, j] * (U @ ubar_j)
    # END SOLUTION


def dominant(alpha: np.ndarray, U: np.ndarray, j: int, eta: float) -> np.ndarray:
    """Eq. (43): -eta alpha_ij^2 ||u_i||^2 for every query i, shape (T,)."""
    # BEGIN SOLUTION hint="return the dominant term of Eq. (43) for every query, shape (T,)"
    return -eta * alpha[:, j] ** 2 * np.sum(U * U, axis=1)
    # END SOLUTION


# BEGIN SOLUTION hint="set alpha_bad (T, T), U_bad (T, d_v) and j_bad so that some query's loss rises"
alpha_bad = np.array([[0.9, 0.1], [0.4, 0.6]])  # query 0 uses column 0 heavily, query 1 a little
U_bad = np.array([[1.0, 0.0], [-1.0, 0.0]])  # opposite error directions
j_bad = 0
# END SOLUTION
print("Eq. (41):", np.round(first_order(alpha_bad, U_bad, j_bad, 1.0), 4))
print("Eq. (43):", np.round(dominant(alpha_bad, U_bad, j_bad, 1.0), 4))

# %% [markdown]
# **Answer to 3.**
# <!-- BEGIN SOLUTION -->
# Summing (41) over $i$ gives $-\eta\|\sum_r\alpha_{rj}u_r\|^2=-\eta\|\bar u_j\|^2\le0$, so the
# *total* loss cannot rise to first order; but $v_j$ moves along the users' average error, and a
# user whose $u_i$ points against that average ($u_i^\top\bar u_j<0$) is hurt. Eq. (43) drops the
# other users' contributions, which is only justified when query $i$ is (nearly) the only user of
# the column — exactly the specialised regime the feedback loop of §4.4 drives towards.
# <!-- END SOLUTION -->

# %%
from nextword.booktools.exercises.checks import check_ex_p3_02

check_ex_p3_02(first_order, dominant, alpha_bad, U_bad, j_bad)
