# %% [markdown]
# > Work on your own copy (`.venv/bin/nextword exercises copy ~/my-exercises` in a terminal; a
# > `git pull` rewrites the repository's `exercises/`). Replace each `NotImplementedError` stub, then
# > run the self-check cell at the end: it lists every check, ✓ or ✗. Stuck? `hint("p2_03", 1)`
# > gives a first hint, tiers 2 and 3 say more. Written answers: after trying, `reveal("p2_03")`.
# > Where you stand on all exercises: `.venv/bin/nextword grade --dir ~/my-exercises`.
# > (For maintainers: this file is generated from `solutions/` by
# > `python -m nextword.booktools.exercises build`; change the solution, not this file.)

# %%
from nextword.booktools.exercises import hint, reveal  # noqa: F401  (hints and model answers on demand)

# %% [markdown]
# # Exercise 03 — Discretising a state-space model
# **Part:** 2 · **Difficulty:** ★★ · **Book notebook:** book/part2_formulation/05_temporal_structure
#
# Appendix C writes a linear state-space model in continuous time, $\dot v=Av+Bh$, $u=Cv+Dh$, with
# $A\in\mathbb R^{s\times s}$, $B\in\mathbb R^{s\times d}$. If the input is held constant on each step
# $[t_i,t_{i+1})$ of length $\Delta t$ ("zero-order hold"), the exact state satisfies
#
# $$v_{i+1}=\bar A v_i+\bar B h_i,\qquad \bar A=e^{A\Delta t},\qquad \bar B=\Big(\int_0^{\Delta t}e^{At'}\,dt'\Big)B,$$
#
# the corrected form of (C.4a). The sequence map of (5.9) is then $u_i=Cv_i+Dh_i$.
#
# 1. Implement `zoh(A, B, dt)` returning `(Abar, Bbar)`. It must also work when $A$ is singular
#    (e.g. $A=0$, where $\bar B=\Delta t\,B$), so avoid $A^{-1}$. Hint: the exponential of the block
#    matrix $\begin{pmatrix}A&B\\0&0\end{pmatrix}\Delta t$ contains both $\bar A$ and $\bar B$
#    (`scipy.linalg.expm`).
# 2. Implement `scan(Abar, Bbar, C, D, h, v0)` returning the outputs $u_0,\dots,u_{T-1}$, shape
#    `(T, d_out)`, for inputs `h` of shape `(T, d)`.
# 3. In words: why is this recurrence exact for piecewise-constant inputs but only first-order
#    accurate for a smooth input?
#
# Do not import `nextword.theory.formulation.ssm` (the checker uses it to compare).

# %%
import numpy as np
import scipy.linalg

A_demo = np.array([[-1.0, 2.0], [0.0, -3.0]])
B_demo = np.array([[1.0], [1.0]])


# %%
def zoh(A: np.ndarray, B: np.ndarray, dt: float) -> tuple[np.ndarray, np.ndarray]:
    """Zero-order-hold discretisation: (Abar (s, s), Bbar (s, d))."""
    raise NotImplementedError("return (Abar, Bbar): the exact zero-order-hold discretisation over one step dt (stuck? hint('p2_03', 1))")


def scan(Abar, Bbar, C, D, h, v0) -> np.ndarray:
    """Outputs u_i = C v_i + D h_i with v_{i+1} = Abar v_i + Bbar h_i, shape (T, d_out)."""
    raise NotImplementedError("return the outputs u, shape (T, d_out) (stuck? hint('p2_03', 1))")


Abar, Bbar = zoh(A_demo, B_demo, 0.1)
print("Abar =", np.round(Abar, 4).tolist(), " Bbar =", np.round(Bbar, 4).ravel().tolist())
print("with A = 0, Bbar / dt =", np.round(zoh(np.zeros((2, 2)), B_demo, 0.1)[1] / 0.1, 6).ravel().tolist())

# %% [markdown]
# **Answer to 3.**
# *Your answer here.* (Once you have written it, `reveal("p2_03", 1)` shows a model answer.)

# %%
from nextword.booktools.exercises.checks import check_ex_p2_03

check_ex_p2_03(zoh, scan)
