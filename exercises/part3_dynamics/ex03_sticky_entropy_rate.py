# %% [markdown]
# > Work on your own copy (`.venv/bin/nextword exercises copy ~/my-exercises` in a terminal; a
# > `git pull` rewrites the repository's `exercises/`). Replace each `NotImplementedError` stub, then
# > run the self-check cell at the end: it lists every check, ✓ or ✗. Stuck? `hint("p3_03", 1)`
# > gives a first hint, tiers 2 and 3 say more. Written answers: after trying, `reveal("p3_03")`.
# > Where you stand on all exercises: `.venv/bin/nextword grade --dir ~/my-exercises`.
# > (For maintainers: this file is generated from `solutions/` by
# > `python -m nextword.booktools.exercises build`; change the solution, not this file.)

# %%
from nextword.booktools.exercises import hint, reveal  # noqa: F401  (hints and model answers on demand)

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
    raise NotImplementedError("return the (n, n) transition matrix of the sticky chain for `rule` (stuck? hint('p3_03', 1))")


def entropy_rate(P: np.ndarray) -> float:
    """H = -sum_z nu_z sum_y P_zy log P_zy in nats, nu the stationary law of P."""
    raise NotImplementedError("return a float: the entropy rate (nats) of the chain with transition matrix P (stuck? hint('p3_03', 1))")


for rule in ("uniform_others", "circular_distance", "inverse_circular_distance"):
    print(f"{rule:28s} H = {entropy_rate(transition(8, 0.3, rule)):.4f} nats")

raise NotImplementedError("set best_rule to one of the three rule names (stuck? hint('p3_03', 1))")

# %% [markdown]
# **Answer to 4.**
# *Your answer here.* (Once you have written it, `reveal("p3_03", 1)` shows a model answer.)

# %%
from nextword.booktools.exercises.checks import check_ex_p3_03

check_ex_p3_03(transition, entropy_rate, best_rule)
