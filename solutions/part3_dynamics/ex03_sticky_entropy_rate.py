# %% [markdown]
# # Exercise 03 — Which sticky chain is behind "theoretical min entropy 1.8833"?
# **Part:** 3 · **Difficulty:** ★★ · **Book notebook:** book/part3_dynamics/03_sticky_chain_em_vs_sgd
#
# §7.2 uses a chain on $C=8$ states (`n` in code) that stays put with probability $s=0.3$ and otherwise jumps from
# state $z$ to another state $y\ne z$ with probability proportional to a weight $w(\rho)$ of the circular distance
# $\rho(z,y)=\min(|z-y|,C-|z-y|)$ (the number of steps between them around the ring; `d` in code). With $M$ its
# transition matrix (as on page 3.3, $M_{z,y}$ is the probability that $y$ follows $z$; the code below calls it `P`)
# and $\nu$ its stationary law (a row vector, $\nu M=\nu$), Table 1 reports a "theoretical min entropy" of 1.8833 —
# the entropy rate $H=-\sum_z\nu_z\sum_yM_{z,y}\log M_{z,y}$ (nats) of the chain.
#
# 1. Implement `transition(n, stay, rule)` for the rules `"uniform_others"` ($w=1$),
#    `"circular_distance"` ($w=\rho$) and `"inverse_circular_distance"` ($w=1/\rho$), and, for contrast, the
#    rule `"line_distance"` ($w=|z-y|$: the states on a line instead of a ring). Row $z$ of the matrix
#    is the law of the next state given state $z$.
# 2. Implement `entropy_rate(P)` for **any** irreducible transition matrix (find the stationary law
#    $\nu$ yourself; numpy only).
# 3. Set `best_rule` to the rule whose 8-state, $s=0.3$ chain has entropy rate 1.8833.
# 4. Why is $\nu$ uniform for the three ring rules, so that $H$ is just the entropy of one row? Why
#    not for `"line_distance"`?

# %%
import numpy as np


# %%
def transition(n: int, stay: float, rule: str) -> np.ndarray:
    """(n, n) sticky transition matrix: P[z, z] = stay, P[z, y] ∝ w(d(z, y)) for y != z."""
    # BEGIN SOLUTION hint="return the (n, n) transition matrix of the sticky chain for `rule`"
    i, j = np.indices((n, n))
    d = np.minimum(np.abs(i - j), n - np.abs(i - j)).astype(float)  # (n, n)
    off = i != j
    if rule == "uniform_others":
        w = off.astype(float)
    elif rule == "circular_distance":
        w = d
    elif rule == "inverse_circular_distance":
        w = np.where(off, 1.0 / np.where(off, d, 1.0), 0.0)
    elif rule == "line_distance":
        w = np.abs(i - j).astype(float)
    else:
        raise ValueError(f"unknown rule {rule!r}")
    return (1 - stay) * w / w.sum(axis=1, keepdims=True) + stay * np.eye(n)
    # END SOLUTION


def entropy_rate(P: np.ndarray) -> float:
    """H = -sum_z nu_z sum_y P_zy log P_zy in nats, nu the stationary law of P."""
    # BEGIN SOLUTION hint="return a float: the entropy rate (nats) of the chain with transition matrix P"
    w, vecs = np.linalg.eig(P.T)
    nu = np.real(vecs[:, np.argmin(np.abs(w - 1))])
    nu = nu / nu.sum()
    plogp = np.where(P > 0, P * np.log(np.where(P > 0, P, 1.0)), 0.0)
    return float(-(nu * plogp.sum(axis=1)).sum())
    # END SOLUTION


for rule in ("uniform_others", "circular_distance", "inverse_circular_distance"):
    print(f"{rule:28s} H = {entropy_rate(transition(8, 0.3, rule)):.4f} nats")

# BEGIN SOLUTION hint="set best_rule to one of the three rule names"
best_rule = "inverse_circular_distance"
# END SOLUTION

# %% [markdown]
# **Answer to 4.**
# <!-- BEGIN SOLUTION -->
# Each ring rule's weights depend only on the circular distance, so row $z+1$ is row $z$ shifted by one
# place: the matrix is circulant. Its columns are then shifts of one another too, so every column
# sums to the same value as the rows, namely 1 — the chain is doubly stochastic — and
# $\nu=\tfrac1C\mathbf 1^\top$ satisfies $\nu M=\tfrac1C\mathbf 1^\top M=\tfrac1C\mathbf 1^\top$. With a
# uniform $\nu$ and identical row entropies, $H$ equals the entropy of any row:
# $H_{\mathrm b}(0.3)+0.7\,H(w/\textstyle\sum w)$, with $H_{\mathrm b}(s)=-s\log s-(1-s)\log(1-s)$ the entropy
# of staying or leaving and $H(w/\sum w)$ the entropy of where a jump lands.
# On the line the weights $w_{zy}=|z-y|$ are symmetric but not circulant: the row sums
# $r_z=\sum_yw_{zy}$ are largest at the two ends, so the columns of $M$ no longer sum to 1 and $\nu$ is
# not uniform. Try $\nu_z\propto r_z$: then $\nu_zM_{z,y}\propto(1-s)\,w_{zy}$ for $y\ne z$, symmetric in
# $z$ and $y$ (detailed balance), so this $\nu$ is stationary and the end states are visited most.
# <!-- END SOLUTION -->

# %%
from nextword.booktools.exercises.checks import check_ex_p3_03

check_ex_p3_03(transition, entropy_rate, best_rule)
