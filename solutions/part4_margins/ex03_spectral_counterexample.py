# %% [markdown]
# # Exercise 03 — The spectral condition is not necessary
# **Part:** 4 · **Difficulty:** ★★ · **Book notebook:** book/part4_margins/03_matrix_margin
#
# Lemma B.4: if $\rho(\Sigma_tA)<1$ then $I-\Sigma_tA$ is invertible. The remark after it says the
# converse fails. As on page 4.3, $A=W_K^\top W_Q$ and $\Sigma_t$ is the attention-weighted covariance of the
# values position $t$ attends to, so that $I-\Sigma_tA$ is the diagonal Jacobian block
# $\partial\hat\varepsilon_t/\partial x_t$. Build a concrete counterexample with an actual attention context
# ($W_V=I$, strict causal: position $t$ attends to the earlier positions $s<t$ only): choose
# $X\in\mathbb R^{T\times d}$ ($d\ge2$; row $t$ is $x_t^\top$) and $W_Q,W_K$ of shape $(d_k,d)$ such that at the
# **last** position the spectral margin $1-\rho(\Sigma_tA)$ is $\le0$ while $|\det(I-\Sigma_tA)|\ge0.1$.
# You may use `nextword.theory.barrier.matrix_margins` to explore. Then explain why Lemma B.4 holds.

# %%
import numpy as np

from nextword.theory.barrier import matrix_margins

# %%
# BEGIN SOLUTION hint="set X (T, d), W_Q and W_K (d_k, d) to a counterexample"
W_Q = np.eye(2)
W_K = np.eye(2)
X = 2.5 * np.array([[0.0, 0.0], [1.0, 0.3], [-0.6, 0.8], [0.2, -0.1]])
# END SOLUTION
mm = matrix_margins(X, W_Q, W_K)
print(f"last position: 1 - rho = {mm.spectral[-1]:+.3f}, det = {mm.det[-1]:+.3f}")

# %% [markdown]
# **Why Lemma B.4 holds.**
# <!-- BEGIN SOLUTION -->
# If $\rho(M)<1$ then every eigenvalue $\nu$ of $M=\Sigma_tA$ has $|\nu|<1$, so $1-\nu\ne0$ and
# $\det(I-M)=\prod(1-\nu)\ne0$. The determinant vanishes only when some eigenvalue *equals* 1, while $\rho\ge1$
# says only that some eigenvalue has modulus at least 1: a real $\nu$ past 1, a negative one (factor $1-\nu>1$)
# or a complex pair has that modulus without making the determinant 0. Here $A=I$, so $\Sigma_tA=\Sigma_t$ is
# symmetric positive semi-definite with real eigenvalues $\ge0$: $\rho\approx1.83$ is an eigenvalue that has
# passed 1, whose factor $1-1.83$ flips the sign of the determinant ($-0.638$; the other eigenvalue is then
# $1-0.638/0.831\approx0.23$) without making it 0. So $\rho<1$ is sufficient for invertibility, not necessary:
# it certifies only the eigenvalues inside the unit disc, and the block stays invertible wherever no eigenvalue
# equals 1.
# <!-- END SOLUTION -->

# %%
from nextword.booktools.exercises.checks import check_ex_p4_03

check_ex_p4_03(X, W_Q, W_K)
