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
    # BEGIN SOLUTION hint="return (Abar, Bbar): the exact zero-order-hold discretisation over one step dt"
    s, d = B.shape
    M = np.zeros((s + d, s + d))
    M[:s, :s] = A
    M[:s, s:] = B
    E = scipy.linalg.expm(M * dt)
    return E[:s, :s], E[:s, s:]
    # END SOLUTION


def scan(Abar, Bbar, C, D, h, v0) -> np.ndarray:
    """Outputs u_i = C v_i + D h_i with v_{i+1} = Abar v_i + Bbar h_i, shape (T, d_out)."""
    # BEGIN SOLUTION hint="return the outputs u, shape (T, d_out)"
    v = np.asarray(v0, dtype=float)
    out = []
    for i in range(len(h)):
        out.append(C @ v + D @ h[i])
        v = Abar @ v + Bbar @ h[i]
    return np.array(out)
    # END SOLUTION


Abar, Bbar = zoh(A_demo, B_demo, 0.1)
print("Abar =", np.round(Abar, 4).tolist(), " Bbar =", np.round(Bbar, 4).ravel().tolist())
print("with A = 0, Bbar / dt =", np.round(zoh(np.zeros((2, 2)), B_demo, 0.1)[1] / 0.1, 6).ravel().tolist())

# %% [markdown]
# **Answer to 3.**
# <!-- BEGIN SOLUTION -->
# Variation of constants gives $v(t_{i+1})=e^{A\Delta t}v(t_i)+\int_{t_i}^{t_{i+1}}e^{A(t_{i+1}-r)}Bh(r)\,dr$
# with no approximation. If $h(r)=h_i$ on the step, the integral is exactly $\big(\int_0^{\Delta t}e^{Az}dz\big)Bh_i$,
# so the recurrence is exact. For a smooth input, replacing $h(r)$ by $h(t_i)$ makes an error
# $O(\Delta t)$ in the integrand over an interval of length $\Delta t$, i.e. $O(\Delta t^2)$ per step;
# these local errors add up over the $t_{\text{end}}/\Delta t$ steps of a fixed time span $[0,t_{\text{end}}]$ (the factors
# $e^{As}$ that carry them to $t_{\text{end}}$ are bounded for $0\le s\le t_{\text{end}}$, whatever $A$; stability is not needed) to a global error $O(\Delta t)$ — first order, as the book notebook measures.
# <!-- END SOLUTION -->

# %%
from nextword.booktools.exercises.checks import check_ex_p2_03

check_ex_p2_03(zoh, scan)
