# %% [markdown]
# # 4.3 The matrix margin: stability when embeddings are vectors
#
# **The question.** With vector embeddings, how far is a position from the point where the
# attention layer stops being invertible? In [4.2](02_scalar_margin.ipynb) one number answered it,
# the slope $m_t=1-a\,\mathrm{Var}_t$; in $d$ dimensions the slope becomes a $d\times d$ matrix, the
# diagonal block $\partial \hat\varepsilon_t/\partial x_t$ of the residual map's Jacobian. Which number of that
# matrix is "the margin", and what do support tokens and the log-barrier look like now?
#
# Real embeddings are vectors, and the training penalty of [4.7](barrier_training.ipynb) is built
# from exactly this matrix: $-\log\lvert\det(I-\Sigma_t A)\rvert$. A student who can compute the block
# by hand can tell when a position is close to the boundary, why two reasonable definitions of the
# margin can disagree about which token is the {term}`support token` (the position closest to the
# boundary), and what a log-barrier does to an optimisation problem.
#
# ```{admonition} Learning goals
# :class: tip
# After this page you can
# - compute the attention-weighted covariance $\Sigma_t$ and the diagonal block $I-\Sigma_t A$ of a
#   short $d=2$ sequence by hand, and its determinant;
# - explain the two margins of Eq. (25), $\lvert\det(I-\Sigma_t A)\rvert$ and $1-\rho(\Sigma_t A)$, and why
#   $\rho<1$ is sufficient for invertibility but not necessary;
# - explain how a log-barrier turns the constraint "keep the margin above $\delta$" into a penalty;
# - read the paper's Figure 1.1 as computed: tokens as points, the boundary, the support token.
# ```
#
# **Builds on:** [4.2 The scalar margin](02_scalar_margin.ipynb) (the margin is the slope of the
# residual map; at zero the inverse map's slope is infinite, and below zero the map folds; support tokens
# have the smallest margin) and
# [4.1 The latent-noise view](01_latent_noise_view.ipynb) (the Jacobian is block lower-triangular,
# so the log-density is the noise energy plus $\sum_t \log\lvert\det\partial \hat\varepsilon_t/\partial x_t \rvert$) ·
# eigenvalues and determinants of a $2\times2$ matrix, a covariance matrix.
# **Reading time:** about 40 minutes.
#
# ```{admonition} Symbols on this page
# :class: note
# | symbol | meaning | shape |
# |---|---|---|
# | $x_t$ | embedding of position $t$ (a column vector; positions counted from 1) | $(d,)$ |
# | $d$, $d_k$ | width of an embedding, of a query or key | numbers |
# | $W_Q,W_K,W_V$ | query, key and value matrices (column-vector maps, $q_t=W_Q x_t$) | $(d_k,d)$, $(d_k,d)$, $(d,d)$ |
# | $A$ | $W_K^\top W_Q$: the score of $x_s$ seen from $x_t$ is $x_s^\top Ax_t$ | $(d,d)$ |
# | $a$ | the coupling of [4.2](02_scalar_margin.ipynb), along one axis | number |
# | $w_V$, $\mathrm{Var}_t$ | the value weight ($W_V=w_V$ in $d=1$, $W_V=w_V I$ in Checking the paper), and in $d=1$ the attention-weighted variance of the earlier embeddings ([4.2](02_scalar_margin.ipynb)) | numbers |
# | $W$ | the one matrix of Figure 4.3.4's layer, $W_Q=W_K=W$ | $(2,2)$ |
# | $\zeta$, $\zeta_{ts}$, $\alpha_{ts}$, $s$ | score and attention weight of position $t$ on an earlier position $s$ ($\zeta_{tt}$: on itself) | numbers, index |
# | $\bar x$, $\bar v$ | attention-weighted means of the earlier embeddings and values ($\bar x_t$, $\bar v_t$ at position $t$) | $(d,)$ |
# | $v_s$, $\mu_t$ | the value of $x_s$, $W_V x_s$ (a column vector, as in [4.1](01_latent_noise_view.ipynb)), and the attention average of the earlier values, $\sum_{s<t}\alpha_{ts}v_s$ (the same vector as $\bar v_t$; Appendix A adds $s=t$) | $(d,)$ |
# | $C_t$ | attention-weighted covariance of the earlier embeddings | $(d,d)$ |
# | $\Sigma$, $\Sigma_t$ | the same for the values, $\Sigma_t=W_V C_t W_V^\top$ (equal to $C_t$ when $W_V=I$) | $(d,d)$ |
# | $\hat\varepsilon_t$ | residual $x_t-\mu_t(x)$; $\partial \hat\varepsilon_t/\partial x_t$ is its diagonal Jacobian block | $(d,)$; $(d,d)$ |
# | $\rho(M)$ | spectral radius: the largest absolute eigenvalue of $M$ | number |
# | $\nu_1$, $\nu_2$; $\nu_r$, $r$ | the eigenvalues of $\Sigma_t A$ when they are real ($d=2$), $\nu_1\ge\nu_2$; $\nu_r$ either of them ($r=1,2$) | numbers |
# | $m$, $\delta$, $\kappa$ | a margin, the margin level of the constrained problem (22), the barrier's weight (often $t$ or $\tau$ in optimisation texts; the book keeps $\tau$ for a temperature) | numbers |
# | $\lambda$ | the weight of the toy's data term, $\tfrac\lambda2\lVert z-z^*\rVert^2$ | number |
# | $z$, $z^*$, $z_\kappa$ | the toy's free embeddings $(x_2,x_3)$, the point the data pull them to, the minimiser of the barrier problem with weight $\kappa$ | $(2,)$ each |
# | $f$, $f^\star$ | the toy's objective, and its smallest value where the constraint holds (the constrained optimum's value; not $f(z^*)$, since $z^*$ breaks the constraint) | function, number |
# | $c$ | the spread of the tiny example | number |
# | $\gamma$ | the scale of a sequence (Figure 4.3.2) | number |
# ```
#
# ```{admonition} In the paper's notation
# :class: seealso
# The paper writes $L$ for the length of the sequence, $\ell_{ts}$ for a score and $e_t(x)$ for the
# residual. Here they are $T$, $\zeta_{ts}$ and $\hat\varepsilon_t(x)$, because in Chapter 6 and in the book's
# notation table (Appendix A) $L$ counts layers, $\ell$ indexes them and $e[i]$ is the embedding of word $i$.
# Equation numbers are the paper's.
# ```
#
# *Source: Agarwal et al., "Support Tokens, Stability Margins, and a New Foundation for Robust LLMs",
# §3.5 (Theorem 1, Eqs. 13–15; Corollary 3.1, Eq. 16), §4 (Eqs. 17–25), Figure 1.1, Appendix A
# (Eqs. 44–56) and Appendix B.4–B.6 (Lemma B.4).*

# %%
import matplotlib.pyplot as plt
import numpy as np
import sympy as sp
import torch
from IPython.display import Math, display
from scipy.optimize import minimize

from nextword.booktools.display import produced
from nextword.booktools.plotting import use_book_style
from nextword.booktools.schematics.margins import draw_margin_regions
from nextword.numerics import central_difference
from nextword.theory.barrier import (
    attention_stats,
    causal_residual,
    diagonal_blocks,
    embedding_log_density,
    jacobian_diagonal_block,
    matrix_margins,
    paper_diagonal_block,
    scalar_margin,
    support_tokens,
)

use_book_style()
rng = np.random.default_rng(0)

# %% [markdown]
# ## A tiny example by hand
#
# Take $d=2$, queries and keys equal to the embeddings ($W_Q=W_K=I$, so the score of $x_s$ seen from
# $x_t$ is $x_s^\top x_t$ and $A=W_K^\top W_Q=I$), values equal to the embeddings ($W_V=I$), and three
# tokens: $x_1=(0,0)$, $x_2=(c,0)$, $x_3=(0,1)$, with a spread $c$ we will vary. At position 3:
#
# - both scores are $x_s^\top x_3=0$, so the weights are $(\tfrac12,\tfrac12)$ and the mean is
#   $\bar x_3=(c/2,\,0)$;
# - the weighted covariance $\Sigma_3=\sum_s \alpha_{3s}(x_s-\bar x_3)(x_s-\bar x_3)^\top$ has
#   $\tfrac12(c/2)^2+\tfrac12(c/2)^2=c^2/4$ in the top-left corner and zeros elsewhere (the past
#   does not vary in the second coordinate);
# - the diagonal block is $I-\Sigma_3 A=\begin{pmatrix}1-c^2/4&0\\0&1\end{pmatrix}$, with determinant
#   $1-c^2/4$.
#
# So $c=1$ gives determinant $0.75$, $c=2$ puts position 3 exactly on the boundary, and $c=3$ gives
# $-1.25$: past it. The same numbers by a loop:

# %%
def block_at_last_position(tokens, A):
    """Weights, covariance Sigma_t and block I - Sigma_t A of the last token (W_V = I, strict)."""
    past, current = tokens[:-1], tokens[-1]
    scores = past @ A @ current  # x_s^T A x_t for every past s
    weights = np.exp(scores) / np.exp(scores).sum()
    mean = weights @ past
    covariance = sum(w * np.outer(x - mean, x - mean) for w, x in zip(weights, past))
    return weights, covariance, np.eye(len(current)) - covariance @ A


identity = np.eye(2)
for spread in (1.0, 2.0, 3.0):
    tokens = np.array([[0.0, 0.0], [spread, 0.0], [0.0, 1.0]])
    weights, covariance, block = block_at_last_position(tokens, identity)
    print(f"c = {spread}: weights {weights}, Sigma_3 = {covariance.tolist()}, "
          f"det(I - Sigma_3 A) = {np.linalg.det(block):+.4f}")
    library_block = diagonal_blocks(tokens, identity, identity)[-1]
    assert np.allclose(block, library_block, atol=1e-12)
    assert np.isclose(np.linalg.det(block), 1 - spread**2 / 4, atol=1e-12)

# %% [markdown]
# Here $\Sigma_3$ and $A$ are both diagonal, so the block acts on each coordinate separately: along the
# first axis it is a scalar margin $1-a\,\mathrm{Var}$ with coupling $a=1$ and variance $c^2/4$, along
# the second it is exactly 1. Each axis is then a point in the plane of 4.2's Figure 4.2.3:

# %%
fig, ax = plt.subplots(figsize=(6.4, 4.0))
points = [(spread**2 / 4, 1.0) for spread in (1.0, 2.0, 3.0)]
labels = [f"c = {spread:g}" for spread in (1.0, 2.0, 3.0)]
boundary = draw_margin_regions(ax, variance_max=3.0, coupling_max=2.0, points=points,
                               point_labels=labels,
                               xlabel=r"variance along the first axis, $c^2/4$",
                               ylabel=r"coupling along it, $a$ (the points: $a = 1$)")
plt.show()
assert np.allclose(boundary[:, 0] * boundary[:, 1], 1.0)
assert np.all(np.diff([variance for variance, _ in points]) > 0)  # Figure 4.3.1: the variance grows as c^2/4

# %% [markdown]
# **Figure 4.3.1.** The tiny example's first axis in the margin plane of
# [4.2](02_scalar_margin.ipynb): the variance along that axis grows as $c^2/4$ while the coupling
# stays 1, so the point slides to the right along $a=1$, reaches the boundary $a\cdot\mathrm{Var}=1$
# at $c=2$, and is past it (in the red of the colour scale) at $c=3$. When $\Sigma_t$ and $A$ share their axes the matrix margin
# is a product of such scalar margins; in general they do not, and the eigenvalues of $\Sigma_t A$ take
# their place.
#
# ## The diagonal block in general: Theorem 1
#
# For any $d$, differentiating $\mu_t=\sum_{s<t}\alpha_{ts}W_V x_s$ through the logits
# $\zeta_{ts}=x_s^\top A x_t$ (with $A=W_K^\top W_Q$) gives, for **any** $W_V$,
#
# $$\frac{\partial \hat\varepsilon_t}{\partial x_t}=I_d-\sum_{s<t}\alpha_{ts}(v_s-\bar v_t)(x_s-\bar x_t)^\top A
#   =I_d-W_V\,C_t\,A,\qquad C_t=\sum_{s<t}\alpha_{ts}(x_s-\bar x_t)(x_s-\bar x_t)^\top ,$$
#
# where $C_t$ is the attention-weighted covariance of the attended embeddings. The paper's Theorem 1
# (Eq. 14) writes $I_d-\Sigma_t A$ with $\Sigma_t$ the covariance of the attended *values*,
# $\Sigma_t=W_V C_t W_V^\top$ (Eq. 13). The two agree when $W_V=I$, the setting of the proof in
# Appendix B.4 and of the tiny example; for other $W_V$ they agree only when
# $W_V C_t(W_V^\top-I)A=0$, generically not ([checked below](#checking-the-paper)). The scalar margin of 4.2 is
# the case $d=1$: $1-a\,w_V \mathrm{Var}_t(x)$. On a random $d=3$ sequence with $W_V=I$:

# %%
T, d, dk = 6, 3, 2
X = rng.normal(size=(T, d))
W_Q, W_K = rng.normal(size=(dk, d)), rng.normal(size=(dk, d))
A = W_K.T @ W_Q
stats = attention_stats(X, W_Q, W_K, np.eye(d))
blocks = diagonal_blocks(X, W_Q, W_K, np.eye(d))
J_finite_diff = central_difference(lambda Z: causal_residual(Z, W_Q, W_K, np.eye(d)), X)
blocks_finite_diff = np.stack([J_finite_diff[t, :, t, :] for t in range(T)])
print("I - Sigma_t A = finite-difference block for every t:",
      bool(np.allclose(np.eye(d) - stats.Sigma @ A, blocks_finite_diff, atol=1e-7)))
assert np.allclose(blocks, np.eye(d) - stats.Sigma @ A, atol=1e-13)
assert np.allclose(blocks, blocks_finite_diff, atol=1e-7)

# %% [markdown]
# A position's block is invertible exactly when $\det(I-\Sigma_t A)\ne0$, and its contribution to the
# log-density (Corollary 3.1, Eq. 16) is $\log\lvert\det(I-\Sigma_t A)\rvert$: the matrix
# {term}`log-barrier`. Two numbers summarise "how far from singular" (the paper's Eq. 25): the absolute
# determinant $\lvert\det(I-\Sigma_t A)\rvert$, and the **spectral margin** $1-\rho(\Sigma_t A)$, where
# $\rho$ is the largest absolute eigenvalue. This page also reads them with a sign, and calls these the
# signed margins of (25): $\det(I-\Sigma_t A)$ itself (not its absolute value), which is negative
# exactly when an odd number of real eigenvalues of $\Sigma_t A$ lie above 1, and $1-\rho$, which is
# negative whenever some eigenvalue has absolute value above 1 (an eigenvalue below $-1$ is enough,
# with no boundary crossed). When the eigenvalues are real and non-negative, as in Figures 4.3.2 and
# 4.3.4, both turn negative as the largest eigenvalue passes 1: on the far side of the boundary. The
# next section shows how the two differ.

# %% [markdown]
# ## The spectral condition is sufficient, not necessary (Lemma B.4)
#
# Lemma B.4: $\rho(\Sigma_t A)<1$ for all $t$ implies every block is invertible. Take $W_Q=W_K=I_2$ and
# $W_V=I$, so $A=I$ and $\Sigma_t A=C_t$ is symmetric positive semidefinite (PSD, written $\succeq0$: a
# covariance, with no negative eigenvalue), with eigenvalues $\nu_1 \ge\nu_2 \ge0$:
# $\det(I-C_t)=(1-\nu_1)(1-\nu_2)$ vanishes only when an eigenvalue **equals** 1. Scaling a
# sequence by $\gamma$ spreads the context; past the point where $\nu_1=1$ the spectral margin
# $1-\rho$ is negative, yet the determinant is nonzero again.

# %%
base = np.array([[0.0, 0.0], [1.0, 0.3], [-0.6, 0.8], [0.2, -0.1]])
gammas = np.linspace(0.2, 3.0, 400)
I2 = np.eye(2)
traj = [matrix_margins(g * base, I2, I2) for g in gammas]
det_last = np.array([m.det[-1] for m in traj])
spec_last = np.array([m.spectral[-1] for m in traj])
gamma_star = gammas[np.argmax(spec_last < 0)]
gamma_probe = 2.5
probe = matrix_margins(gamma_probe * base, I2, I2)
eig = np.linalg.eigvals(np.eye(2) - diagonal_blocks(gamma_probe * base, I2, I2)[-1])
print(f"spectral margin first negative at γ ≈ {gamma_star:.3f}")
print(f"γ = {gamma_probe}: eigenvalues of Σ_t A = {np.sort(eig.real).round(4)}, "
      f"1 - ρ = {probe.spectral[-1]:+.4f}, det(I - Σ_t A) = {probe.det[-1]:+.4f}")
assert probe.spectral[-1] < 0 and abs(probe.det[-1]) > 0.05  # invertible although ρ ≥ 1
assert np.all(det_last[spec_last > 0] > 0)  # sufficiency: ρ < 1 ⇒ det > 0
nu_drawn = np.array([np.linalg.eigvalsh(np.eye(2) - block) for block in
                     (diagonal_blocks(g * base, I2, I2)[-1] for g in gammas)])  # (ν2, ν1) of Σ_t A = C_t
assert nu_drawn[:, 0].max() < 1  # Figure 4.3.2: ν2 stays below 1 over the range drawn ...
assert np.all(det_last[gammas < gamma_star] > 0) and np.all(det_last[gammas >= gamma_star] < 0)  # ... so det crosses once, with 1 - ρ

# %%
fig, ax = plt.subplots(figsize=(6.4, 3.4))
ax.plot(gammas, det_last, label="det(I − Σ_t A), t = 4")
ax.plot(gammas, spec_last, label="1 − ρ(Σ_t A), t = 4")
ax.axhline(0, color="k", lw=0.8)
ax.axvline(gamma_probe, color="C3", ls=":", label=f"γ = {gamma_probe}: invertible, ρ > 1")
ax.set_xlabel("scale γ of the sequence")
ax.set_ylabel("margin at position t = 4")
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# **Figure 4.3.2.** Lemma B.4 and its converse failing, at the last position $t=4$. Here the eigenvalues
# of $\Sigma_t A=C_t$ are real and $\ge0$, so both margins cross 0 at the same scale, where $\nu_1$
# passes 1 ($\gamma\approx1.52$, printed above); in the range drawn $\nu_2$ stays below 1, so the determinant
# crosses 0 only once. Look to the right of the crossing: $1-\rho<0$, so Lemma B.4 certifies nothing,
# yet the determinant does not return to 0 ($-0.64$ at the dotted orange line $\gamma=2.5$): the block is
# invertible although $\rho>1$. Invertible is not the same as stable: the determinant is negative, so in
# the signed form of (25) the position is past the degeneracy boundary (like token 12 of Figure 4.3.4
# below). Had $\nu_2$ also passed 1, the determinant would have crossed 0 a second time and turned
# positive. With non-symmetric $\Sigma_t A$ (general $W_Q \ne W_K$) the eigenvalues can also be complex,
# and then $\rho\ge1$ says even less about $\det$. For the log-density only $\lvert\det\rvert$
# matters; the spectral margin is a convenient certificate, not the boundary.
#
# ## The barrier as an interior-point relaxation (Eqs. 21–22) on a 2-D toy
#
# §4 of the paper reads the log-density as an optimisation problem: fit the data (the squared
# residuals, Eqs. 17–20) while keeping every margin away from 0. A hard constraint "margin
# $\ge\delta$" is awkward for gradient methods; a log-barrier replaces it by the penalty
# $-\kappa\log(m-\delta)$, small far from the boundary and infinite on it, so that the minimiser
# always stays strictly inside. As the weight $\kappa$ shrinks, the barrier problem's solution moves to
# the constrained one (interior-point methods work this way). The model's own log-barrier
# $-\log m_t$ is the member $\kappa=1$, $\delta=0$ of this family (Eq. 21, with noise $\sigma=1$: (21) weighs
# the fit by $1/2\sigma^2$, so against a fit $\tfrac12\sum_t \hat\varepsilon_t^2$ its barrier weight is $\kappa=\sigma^2$; the toy
# below takes $\sigma=1$).
#
# A toy where everything can be drawn: $d=1$, $a=0.5$, $x_1=0$ fixed and two free embeddings $z=(x_2,x_3)$. A data term pulls $z$ toward
# $z^\*=(3,0)$, where the query $x_3=0$ spreads its attention evenly over $\{0,3\}$ and
# $m_3=1-0.5\cdot2.25<0$. We solve the constrained problem (22) with that data term added (the paper's
# (22) has the squared residuals alone, whose minimum $z=0$ needs no constraint; the data term stands in
# for the token likelihood that pulls real embeddings apart, and only $m_3$ is constrained because
# $m_1=m_2=1$ always),
# $\min f(z)=\tfrac12\sum_t \hat\varepsilon_t^2+\tfrac\lambda2\|z-z^\*\|^2$ s.t. $m_3(z)\ge\delta$, directly (SLSQP) and
# through the barrier problems $\min f(z)-\kappa\log(m_3(z)-\delta)$ for $\kappa\to0$. For a *convex*
# problem with one constraint, barrier theory bounds how far the objective at the barrier problem's minimiser
# $z_\kappa$ can lie above the constrained optimum value $f^\star$: $f(z_\kappa)-f^\star\le\kappa$. This toy is not
# convex (its feasible set $m_3\ge\delta$ is the outside of the shaded region of Figure 4.3.3), so here the
# bound is no guarantee; the cell below checks it at every $\kappa$.

# %%
a_toy, lam, delta, z_star = 0.5, 4.0, 0.5, np.array([3.0, 0.0])


def seq(z):
    return np.array([0.0, z[0], z[1]])


def f(z):
    residual = causal_residual(seq(z)[:, None], [[a_toy]], [[1.0]])[:, 0]  # the ε̂_t
    return 0.5 * np.sum(residual**2) + 0.5 * lam * np.sum((z - z_star) ** 2)


def m3(z):
    return scalar_margin(seq(z), a=a_toy)[2]


def barrier_obj(z, kappa):
    gap = m3(z) - delta
    return f(z) - kappa * np.log(gap) if gap > 0 else np.inf


# %% [markdown]
# First the problem without a barrier: the unconstrained optimum violates the margin constraint, and
# a constrained solver (SLSQP) stops on the constraint. Both solvers are iterative, so their last
# digits can differ from one machine to another; the asserts state what must hold whatever they are.

# %%
ref = minimize(f, x0=np.array([1.0, 1.0]), method="SLSQP",
               constraints=[{"type": "ineq", "fun": lambda z: m3(z) - delta}],
               options={"ftol": 1e-14})
f_star = ref.fun
free = minimize(f, x0=np.array([1.0, 1.0]), method="BFGS")
print(f"unconstrained optimum: m_3 = {produced(m3(free.x), '.4f')} < delta = {delta}: "
      "the constraint is active")
print(f"constrained optimum (SLSQP): z = ({produced(ref.x[0], '.4f')}, "
      f"{produced(ref.x[1], '.4f')}), f* = {produced(f_star, '.5f')}, "
      f"m_3 = {produced(m3(ref.x), '.4f')}")
assert m3(free.x) < delta
assert abs(m3(ref.x) - delta) < 1e-6

# %% [markdown]
# Now the barrier path: minimise $f(z)-\kappa\log(m_3(z)-\delta)$ for a decreasing sequence of $\kappa$,
# each started from the previous solution.

# %%
path, z0 = [], np.array([1.0, 1.0])
for kappa in (1.0, 0.3, 0.1, 0.03, 0.01, 0.003, 0.001):
    sol = minimize(barrier_obj, z0, args=(kappa,), method="Nelder-Mead",
                   options={"xatol": 1e-10, "fatol": 1e-13, "maxiter": 4000})
    z0 = sol.x
    path.append(sol.x)
    print(f"kappa = {kappa:6.3f}: z = ({produced(sol.x[0], '.4f')}, {produced(sol.x[1], '.4f')}), "
          f"f - f* = {produced(f(sol.x) - f_star, '.5f')} (≤ kappa), "
          f"m_3 = {produced(m3(sol.x), '.4f')}")
    assert -1e-6 <= f(sol.x) - f_star <= kappa + 1e-6
assert np.linalg.norm(path[-1] - ref.x) < 1e-2
path = np.array(path)
# the paper's own MAP objective (21): kappa = 1, delta = 0
map21 = minimize(lambda z: f(z) - np.log(m3(z)) if m3(z) > 0 else np.inf, np.array([1.0, 1.0]),
                 method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-13})
print(f"Eq. (21) (kappa = 1, delta = 0): z = ({produced(map21.x[0], '.4f')}, "
      f"{produced(map21.x[1], '.4f')}), m_3 = {produced(m3(map21.x), '.4f')}")
assert 0.3 < m3(map21.x) < 0.6  # inside the stable region, as the caption says (about 0.47)
assert m3(map21.x) < delta  # ... but below delta: (21) does not enforce the constraint of (22)
assert m3(ref.x) - m3(map21.x) > 0.02  # so its minimiser is not (22)'s optimum (m_3 = delta there)

# %%
x2_grid, x3_grid = np.meshgrid(np.linspace(-0.5, 4.0, 181), np.linspace(-2.5, 2.5, 181),
                               indexing="ij")
grid_sequences = np.stack([np.zeros_like(x2_grid), x2_grid, x3_grid], axis=-1)  # (181, 181, 3)
grid_residuals = causal_residual(grid_sequences[..., None], [[a_toy]], [[1.0]])[..., 0]
objective = (0.5 * np.sum(grid_residuals**2, axis=-1)
             + 0.5 * lam * ((x2_grid - z_star[0]) ** 2 + (x3_grid - z_star[1]) ** 2))
margin_3 = scalar_margin(grid_sequences, a=a_toy)[..., 2]
fig, ax = plt.subplots(figsize=(6.4, 4.4))
ax.contour(x2_grid, x3_grid, objective, levels=20, linewidths=0.7)
ax.contourf(x2_grid, x3_grid, margin_3 < delta, levels=[0.5, 1.5], colors=["C3"], alpha=0.15)
ax.contour(x2_grid, x3_grid, margin_3, levels=[0.0, delta], colors=["C3", "C1"],
           linestyles=["-", "--"])
ax.plot(*z_star, "k*", ms=10, label="z* (data optimum)")
ax.plot(path[:, 0], path[:, 1], "o-", color="C0", ms=4, label="barrier path, κ → 0")
ax.plot(*ref.x, "s", color="C2", ms=7, label="constrained optimum of (22) + data term")
ax.plot(*map21.x, "^", color="C4", ms=7, label="MAP of Eq. (21) + data term")
ax.set_xlabel("x2")
ax.set_ylabel("x3")
ax.legend(fontsize=7, loc="lower left")
plt.show()

# %% [markdown]
# **Figure 4.3.3.** Eq. (22) with the toy's data term added, and its log-barrier relaxation. Thin
# contours: the objective $f$ (squared residuals plus the data term);
# shaded orange: the region $m_3<\delta$, bounded by the dashed vermilion curve $m_3=\delta$; the
# solid orange curve is the degeneracy boundary $m_3=0$. Look at the blue barrier path: as
# $\kappa\to0$ its points approach the constrained optimum (green square), with the
# bound $f-f^\star\le\kappa$ (a theorem for convex problems, only checked for this one) holding at every $\kappa$. The reddish-purple triangle is the minimiser of the
# paper's MAP objective (21) with the same data term added, the $\kappa=1,\ \delta=0$ member of this family: it keeps the solution
# inside the stable region $m_3>0$ (here $m_3 \approx0.47$) without any explicit $\delta$, trading
# data fit for margin — but it does not keep $m_3 \ge\delta$. The paper calls (21) the
# interior-point relaxation of (22); it is one member of the family, not the relaxation
# ([checked below](#checking-the-paper)).

# %% [markdown]
# ## Fig. 1.1, drawn from computed quantities
#
# Fig. 1.1 of the paper is a schematic: a trajectory of configurations (one dot per token), an
# instability boundary (a curve), each token's margin as its distance to the boundary (an arrow), and
# "token 1" as the support token. Here every element is computed. Take $d=2$, $W_V=I$ (where Theorem 1
# is exact) and $W_Q=W_K=W$, so $A=W^\top W$ is symmetric positive definite — the $a>0$ regime of §3.4 —
# and $\Sigma_t A$ is similar to $A^{1/2}\Sigma_t A^{1/2}\succeq0$: its eigenvalues $\nu_1 \ge\nu_2 \ge0$
# are real. The point $(\nu_1,\nu_2)$ is the token's configuration; the boundary
# $\det(I-\Sigma_t A)=(1-\nu_1)(1-\nu_2)=0$ is the pair of lines $\nu_r=1$. Two margins come from the same
# point: the Euclidean **distance** to the boundary, $\min_r|1-\nu_r|$ (the spectral margin $1-\rho$ of
# Eq. (25) on the stable side), and the likelihood's **log-determinant** $\log|\det|=\sum_r \log|1-\nu_r|$
# (Eq. 24; the margin passed to `support_tokens` below).
#
# The sequence: 12 unit-normal tokens and a Xavier-scaled $W$ (entries $\mathcal N(0,1/d)$), seed 11,
# chosen once and not tuned. $\Sigma_t$ is recomputed by hand from Eq. (13); its eigenvalues must give
# the library's `matrix_margins(...).logabsdet` to $10^{-10}$, and the support token from
# `support_tokens` must match the brute-force determinant.

# %%
rng11 = np.random.default_rng(11)  # seed chosen once, before looking at the result
T11, d11 = 12, 2
X11 = rng11.normal(size=(T11, d11))  # unit-normal embeddings
W11 = rng11.normal(size=(d11, d11)) / np.sqrt(d11)  # Xavier-scaled, W_Q = W_K = W11, W_V = I
A11 = W11.T @ W11  # symmetric positive definite: the a > 0 regime in d = 2
assert np.all(np.linalg.eigvalsh(A11) > 0)


def sigma_t(X, A, t):
    """Eq. (13) by hand: softmax over s < t of x_sᵀ A x_t, weighted covariance of the x_s."""
    if t == 0:
        return np.zeros((X.shape[1], X.shape[1]))
    s = X[:t] @ A @ X[t]
    w = np.exp(s - s.max())
    w /= w.sum()
    D = X[:t] - w @ X[:t]
    return (w[:, None] * D).T @ D


ev = np.array([np.linalg.eigvals(sigma_t(X11, A11, t) @ A11) for t in range(T11)])
assert np.abs(ev.imag).max() < 1e-12  # Σ_t A ~ A^½ Σ_t A^½ ⪰ 0: real eigenvalues ...
assert ev.real.min() > -1e-12  # ... and none negative
# (T, 2): ν1 ≥ ν2, each token's configuration as a point in the plane
nu_pts = np.clip(-np.sort(-ev.real, axis=1), 0.0, None)
mm11 = matrix_margins(X11, W11, W11)  # library: slogdet of the exact blocks I - Σ_t A
assert np.allclose(np.log(np.abs(np.prod(1 - nu_pts, axis=1))), mm11.logabsdet, atol=1e-10)
assert np.array_equal(np.sign(np.prod(1 - nu_pts, axis=1)), mm11.sign)

dist = np.abs(1 - nu_pts).min(axis=1)  # Euclidean distance of (ν1, ν2) to the lines ν1 = 1, ν2 = 1
sup = support_tokens(mm11.logabsdet)  # Definition 3.1 with the log-likelihood's margin (Eq. 24)
det_direct = np.array([np.linalg.det(np.eye(d11) - sigma_t(X11, A11, t) @ A11) for t in range(T11)])
sup_det = np.flatnonzero(np.abs(det_direct) == np.abs(det_direct).min())  # brute force, no library
sup_dist = np.flatnonzero(dist == dist.min())
assert np.array_equal(sup, sup_det)  # library = brute force
assert len(sup) == 1  # one support token

print(f"eigenvalues of A: {np.linalg.eigvalsh(A11).round(3)}")
print(f"{'token':>5s} {'nu1':>7s} {'nu2':>7s} {'distance':>9s} {'log|det|':>9s} {'sign':>5s}")
for t in range(T11):
    print(f"{t + 1:5d} {nu_pts[t, 0]:7.3f} {nu_pts[t, 1]:7.3f} {dist[t]:9.3f} "
          f"{mm11.logabsdet[t]:9.3f} {int(mm11.sign[t]):+5d}")
print(f"support token (log|det|, library): {sup + 1}; by distance in the plane: {sup_dist + 1}")
pairs = [(i, j) for i in range(T11) for j in range(i + 1, T11) if dist[i] != dist[j]]
swapped = [(i + 1, j + 1) for i, j in pairs
           if np.sign(dist[i] - dist[j]) != np.sign(mm11.logabsdet[i] - mm11.logabsdet[j])]
print(f"pairs of tokens the two margins order differently: {len(swapped)} of {len(pairs)}: "
      f"{swapped}")
two = np.sort(mm11.logabsdet)[:2]
print(f"two smallest log|det|: {two.round(3)}, gap {two[1] - two[0]:.3f} nats")
print(f"signed margins of (25): det = {mm11.det.round(3)}")
print(f"                        1 - rho = {mm11.spectral.round(3)}")
print(f"argmin of signed det: token {np.argmin(mm11.det) + 1}; "
      f"argmin of 1 - rho: token {np.argmin(mm11.spectral) + 1}")
assert np.allclose(mm11.spectral, 1 - nu_pts[:, 0], atol=1e-12)  # ρ(Σ_t A) = ν1 here
stable = nu_pts[:, 0] < 1
assert np.allclose(dist[stable], mm11.spectral[stable])  # distance = 1 - ρ on the stable side

# %%
fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 4.2), gridspec_kw={"width_ratios": [1.2, 1]})
g1, g2 = np.meshgrid(np.linspace(-0.1, 1.9, 401), np.linspace(-0.1, 1.2, 261))
with np.errstate(divide="ignore"):
    lg = np.log(np.abs((1 - g1) * (1 - g2)))
lg[g2 > g1] = np.nan  # ν1 ≥ ν2 by convention: the upper-left wedge is not used
cf = ax.contourf(g1, g2, np.clip(lg, -4, 0.6), levels=np.linspace(-4, 0.6, 24), cmap="Greys_r",
                 alpha=0.6)
fig.colorbar(cf, ax=ax, label="log|det(I − Σ_t A)| = log|(1 − ν1)(1 − ν2)|")
ax.plot([1, 1, 1.9], [-0.1, 1, 1], color="C3", lw=2, label="boundary det = 0")
for t in range(T11):  # every token's distance to the boundary (dotted)
    ax.plot([nu_pts[t, 0], 1.0], [nu_pts[t, 1], nu_pts[t, 1]], ":", color="0.4", lw=0.8)
ax.plot(nu_pts[:, 0], nu_pts[:, 1], "-", color="C0", lw=0.9, zorder=2, label="trajectory t = 1 … T")
past = mm11.sign < 0
ax.scatter(nu_pts[~past, 0], nu_pts[~past, 1], color="C0", s=28, zorder=3)
ax.scatter(nu_pts[past, 0], nu_pts[past, 1], color="C3", s=28, zorder=3,
           label="past the boundary (det < 0)")
for t in range(1, T11):
    ax.annotate("1,2" if t == 1 else str(t + 1), nu_pts[t], xytext=(-4, 5) if t % 2 else (4, -10),
                textcoords="offset points", fontsize=8)
for t in sup:
    ax.scatter(*nu_pts[t], s=140, facecolors="none", edgecolors="C1", lw=1.8, zorder=4)
    ax.annotate(f"support token {t + 1}", xy=(1.0, nu_pts[t, 1]), xytext=(1.15, 0.55), color="C1",
                fontsize=9, arrowprops=dict(arrowstyle="->", color="C1", lw=1.4))
ax.set_xlim(-0.1, 1.9)
ax.set_ylim(-0.1, 1.2)
ax.set_xlabel("ν1 (largest eigenvalue of Σ_t A)")
ax.set_ylabel("ν2")
ax.legend(fontsize=7, loc="upper left")
pos1 = np.arange(1, T11 + 1)
bx.bar(pos1 - 0.2, mm11.logabsdet, width=0.4, label="log|det(I − Σ_t A)| (Eq. 24, library)")
bx.bar(pos1 + 0.2, mm11.spectral, width=0.4, label="1 − ρ(Σ_t A) (Eq. 25)")
bx.axhline(0, color="k", lw=0.8)
for t in sup:
    bx.annotate("support\n(log|det|)", (t + 1 - 0.2, mm11.logabsdet[t]), xytext=(0, -22),
                textcoords="offset points", ha="center", color="C1", fontsize=8)
t_min = np.argmin(mm11.spectral)
bx.annotate("min 1 − ρ", (t_min + 1 + 0.2, mm11.spectral[t_min]), xytext=(8, -14),
            textcoords="offset points", ha="right", color="C1", fontsize=8)
bx.set_xticks(pos1)
bx.set_xlim(0.4, T11 + 0.6)
bx.set_ylim(mm11.logabsdet.min() - 0.8, 2.1)
bx.set_xlabel("token position t")
bx.set_ylabel("margin")
bx.legend(fontsize=7, loc="upper center")
plt.tight_layout()
plt.show()

# %% [markdown]
# **Figure 4.3.4.** Fig. 1.1 of the paper, computed. Left: the $(\nu_1,\nu_2)$ plane of $\Sigma_t A$, shaded by
# $\log|\det(I-\Sigma_t A)|$ (white wedge: $\nu_2>\nu_1$, excluded by the ordering); orange lines: the
# boundary $\det=0$; blue: the 12 tokens in order, each with its distance to the boundary (dotted); ringed
# in vermilion, with the arrow: the support token of Definition 3.1 under the log-determinant margin;
# orange dot: a token past the boundary. Right: both margins of Eq. (25) per position, the first as its
# logarithm $\log|\det|$ (blue), and $1-\rho$ (vermilion). Look at which token each margin makes the
# smallest.

# %% [markdown]
# ## Key takeaways
#
# - In $d$ dimensions the slope of the residual map at a position is a matrix, the diagonal block
#   $I-\Sigma_t A$ of its Jacobian (with $W_V=I$); the position is on the degeneracy boundary when the
#   block's determinant is 0, and a margin is one number read from the block.
# - The block is $I-W_V C_t A$ for any value map; the paper's $I-\Sigma_t A$ (covariance of the values)
#   is exact for $W_V=I$, and the scalar margin of 4.2 is its $d=1$ case.
# - Two margins summarise the block: $\lvert\det\rvert$ (what the log-density uses) and the spectral
#   margin $1-\rho$; $\rho<1$ guarantees invertibility but a block with $\rho>1$ can still be invertible.
# - A log-barrier $-\kappa\log(m-\delta)$ keeps an optimiser strictly inside $m>\delta$, and in the
#   toy its minimiser approaches the constrained optimum as $\kappa\to0$ (for convex problems this is a
#   theorem); the model's own barrier is $\kappa=1$, $\delta=0$.
# - Computed for one random sequence, Figure 1.1's support token is token 8 of 12, not token 1. The
#   first two tokens cannot steer their weights (no context, or one attended token with weight 1), so
#   their margin is exactly 1, and over 2000 sequences the support token is never one of them. A token
#   can also sit past the boundary while $\lvert\det\rvert$ calls it safe (token 12 here; both
#   [checked below](#checking-the-paper)).
#
# ## Check your understanding
#
# 1. In the tiny example, take $c=1$ but queries and keys scaled so that $A=2I$. What is
#    $\det(I-\Sigma_3 A)$?
#
#    ```{dropdown} Answer
#    The scores $x_s^\top A x_3=2\,x_s^\top x_3$ are still 0 ($x_3=(0,1)$ and both past tokens have second
#    coordinate 0), so the weights,
#    the mean and $\Sigma_3=\mathrm{diag}(1/4,0)$ do not change. Then
#    $I-\Sigma_3 A=\mathrm{diag}(1-2\cdot\tfrac14,\,1)$ and the determinant is $0.5$.
#    ```
#
# 2. A block has eigenvalues of $\Sigma_t A$ equal to $1.5$ and $0.2$. Is the position invertible? What
#    do the two margins of Eq. (25) say?
#
#    ```{dropdown} Answer
#    Invertible: $\det(I-\Sigma_t A)=(1-1.5)(1-0.2)=-0.4\ne0$. The spectral margin is
#    $1-\rho=1-1.5=-0.5<0$, so it cannot certify invertibility, and the signed determinant says the
#    position is past the boundary (one eigenvalue crossed 1), although $\log\lvert\det\rvert=\log0.4$
#    is finite.
#    ```
#
# 3. Why does the log-barrier problem $\min f(z)-\kappa\log(m(z)-\delta)$ never return a point with
#    $m(z)\le\delta$, even for a tiny $\kappa$?
#
#    ```{dropdown} Answer
#    Because $-\kappa\log(m-\delta)\to+\infty$ as $m\to\delta$ from above, and it is undefined (here:
#    $+\infty$) below: any path from inside to outside must cross an infinite wall. A smaller $\kappa$
#    makes the wall thinner, so the minimiser can come closer to $m=\delta$, but never reach it.
#    ```


# %% tags=["hide-cell"]
# The numbers the answers state: question 1 (c = 1, A = 2I) and question 2 (eigenvalues 1.5 and 0.2).
tokens_q1 = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
_, sigma_q1, block_q1 = block_at_last_position(tokens_q1, 2 * np.eye(2))
eigenvalues_q2 = np.array([1.5, 0.2])
print(f"question 1: Sigma_3 = {sigma_q1.tolist()}, det(I - Sigma_3 A) = {np.linalg.det(block_q1):.2f}")
print(f"question 2: det = {np.prod(1 - eigenvalues_q2):+.1f}, 1 - rho = {1 - eigenvalues_q2.max():+.1f}, "
      f"log|det| = log {abs(np.prod(1 - eigenvalues_q2)):.1f}")
assert np.isclose(np.linalg.det(block_q1), 0.5) and np.allclose(sigma_q1, np.diag([0.25, 0.0]))
assert np.isclose(np.prod(1 - eigenvalues_q2), -0.4) and np.isclose(1 - eigenvalues_q2.max(), -0.5)

# %% [markdown]
# ## Checking the paper
#
# The idea above stands on its own; this section compares the paper's statements with exact
# computations. Each finding is recorded in `book/ERRATA.md`.
#
# ### Eq. (21) as "the" relaxation of (22)
#
# The paper calls (21) "the classical interior-point relaxation of (22)" for any margin level
# $\delta>0$. It is a single member of the barrier family, with weight $\kappa=1$ and the barrier at $0$,
# not at $\delta$: in the toy above its minimiser has $m_3<\delta=0.5$ (asserted in the cell that
# computes it), so it violates the constraint of (22), and it is not (22)'s optimum. Only the family
# $-\kappa\log(m_t-\delta)$ with $\kappa\to0$ relaxes (22). Recorded in `book/ERRATA.md` (row "§4,
# sentence after Eq. (22)").
#
# ### Theorem 1 against finite differences and torch autograd
#
# Random $W_Q,W_K \in\mathbb R^{2\times3}$ and three choices of $W_V$: the identity, a multiple of it,
# and a random matrix.

# %% tags=["hide-cell"]
def torch_blocks(X, W_Q, W_K, W_V, include_current=False):
    """Diagonal blocks of the autograd Jacobian of the residual map (independent reference)."""
    Wq, Wk, Wv = (torch.tensor(m) for m in (W_Q, W_K, W_V))
    allowed = torch.tril(torch.ones(T, T, dtype=torch.bool), diagonal=0 if include_current else -1)

    def residual(Z):
        s = ((Z @ Wq.T) @ (Z @ Wk.T).T).masked_fill(~allowed, float("-inf"))
        return Z - torch.nan_to_num(torch.softmax(s, dim=-1)) @ (Z @ Wv.T)

    J = torch.autograd.functional.jacobian(residual, torch.tensor(X)).numpy()
    return np.stack([J[t, :, t, :] for t in range(T)])


W_Vs = {"W_V = I": np.eye(d), "W_V = 0.5 I": 0.5 * np.eye(d), "W_V random": rng.normal(size=(d, d))}
print(f"{'':12s} {'exact vs autograd':>18s} {'exact vs FD':>12s} {'(14) vs exact':>14s}")
for name, W_V in W_Vs.items():
    exact = np.stack([jacobian_diagonal_block(X, t, W_Q=W_Q, W_K=W_K, W_V=W_V) for t in range(T)])
    J_fd = central_difference(lambda Z: causal_residual(Z, W_Q, W_K, W_V), X)
    fd = np.stack([J_fd[t, :, t, :] for t in range(T)])
    auto = torch_blocks(X, W_Q, W_K, W_V)
    gap14 = np.abs(paper_diagonal_block(X, W_Q, W_K, W_V) - exact).max()
    print(f"{name:12s} {'agree' if np.allclose(exact, auto, atol=1e-12) else 'DIFFER':>18s} "
          f"{'agree' if np.allclose(exact, fd, atol=1e-7) else 'DIFFER':>12s} {gap14:14.4f}")
    assert np.allclose(exact, auto, atol=1e-12) and np.allclose(exact, fd, atol=1e-7)
    st = attention_stats(X, W_Q, W_K, W_V)
    assert np.allclose(exact, np.eye(d) - W_V @ st.C @ A, atol=1e-13)
    assert (gap14 < 1e-12) == (name == "W_V = I")

# %% [markdown]
# The exact block agrees with autograd to machine precision and with finite differences to $10^{-7}$ for
# every $W_V$; the paper's (14) with "covariance of attended values" is exact only for $W_V=I$ (apart from the
# trivial layers $W_V=0$ and $A=0$, where both sides are $I$). For
# $W_V=w_V I$ (a multiple of the identity, $w_V=0.5$ in the table) the exact block is $I-w_V C_t A$ while
# (14) gives $I-w_V^2 C_t A$. The paper substitutes the same
# block in Corollary 3.1 (Eq. 16, next check), in §4 (Eqs. 20, 23, 24) and in the proof's last step
# (Eq. 66, "absorbed into $\Sigma_t$"); its Eq. (65) just before is exact, $\partial\mu_t/\partial x_t=W_V C_t A$ (the block is $I$ minus it). Lemma
# B.4's certificate $\rho(\Sigma_t A)<1$ inherits it: in $d=1$ with $w_V=\tfrac12$ and
# $a\,\mathrm{Var}_t(x)=2$, $\Sigma_t A=0.5<1$ while the exact block $1-a\,w_V \mathrm{Var}_t(x)$ is 0.
# Recorded in `book/ERRATA.md`.
#
# ### Corollary 3.1: the log-density with the exact and with the printed block

# %% tags=["hide-cell"]
sigma = 0.8
W_V = W_Vs["W_V random"]
Jfull = central_difference(lambda Z: causal_residual(Z, W_Q, W_K, W_V), X).reshape(T * d, T * d)
residuals_X = causal_residual(X, W_Q, W_K, W_V)  # the ε̂_t
reference = (-0.5 * np.sum(residuals_X**2) / sigma**2 - 0.5 * T * d * np.log(2 * np.pi * sigma**2)
             + np.linalg.slogdet(Jfull)[1])
ours = embedding_log_density(X, W_Q, W_K, W_V, sigma=sigma)
with_14 = (ours - matrix_margins(X, W_Q, W_K, W_V).logabsdet.sum()
           + np.linalg.slogdet(paper_diagonal_block(X, W_Q, W_K, W_V))[1].sum())
print(f"Eq. (5), numerical Jacobian : {reference:.6f}")
print(f"Eq. (16), exact blocks      : {ours:.6f}")
print(f"Eq. (16), blocks from (14)  : {with_14:.6f}")
assert np.isclose(ours, reference, atol=1e-6) and not np.isclose(with_14, reference, atol=1e-2)

# %% [markdown]
# ### Appendix A: including the current token ($s\le t$)
#
# With $s\le t$ the current token enters $\mu_t$ three times: as a value ($\alpha_{tt}W_V$, Eq. 49),
# through the query (Eq. 50), **and through its own key** $k_t=W_K x_t$ in the logit
# $\zeta_{tt}=q_t^\top k_t$. Eq. (48) differentiates with respect to $q_t$ only, so (53) misses the
# key-path term $\alpha_{tt}(v_t-\bar v_t)\,q_t^\top W_K$. In $d=1$ with $w_V=1$, sympy:

# %% tags=["hide-cell"]
xt, a = sp.symbols("x_t a", real=True)
past = sp.symbols("x1:3", real=True)
nodes = list(past) + [xt]
Zs = sum(sp.exp(a * xt * x) for x in nodes)
al = [sp.exp(a * xt * x) / Zs for x in nodes]
mu = sum(w_ * x for w_, x in zip(al, nodes))
xbar = mu
var = sum(w_ * (x - xbar) ** 2 for w_, x in zip(al, nodes))
exact_slope = 1 - sp.diff(mu, xt)  # dε̂_t/dx_t
eq54 = (1 - al[-1]) - a * var
missing = sp.simplify(eq54 - exact_slope)
ratio = sp.simplify(missing / (al[-1] * xt * (xt - xbar)))
display(Math(r"\text{(54)}-\frac{\partial \hat\varepsilon_t}{\partial x_t}=" + sp.latex(ratio)
             + r"\cdot\alpha_{tt}\,x_t\,(x_t-\bar x_t)"))
assert sp.simplify(missing - a * al[-1] * xt * (xt - xbar)) == 0

# %% tags=["hide-cell"]
print(f"{'':12s} {'exact vs autograd':>18s} {'(53) vs exact':>14s}")
for name, W_V in W_Vs.items():
    exact = np.stack([jacobian_diagonal_block(X, t, W_Q=W_Q, W_K=W_K, W_V=W_V, include_current=True)
                      for t in range(T)])
    auto = torch_blocks(X, W_Q, W_K, W_V, include_current=True)
    gap53 = np.abs(paper_diagonal_block(X, W_Q, W_K, W_V, include_current=True) - exact).max()
    verdict = "agree" if np.allclose(exact, auto, atol=1e-12) else "DIFFER"
    print(f"{name:12s} {verdict:>18s} {gap53:14.4f}")
    assert np.allclose(exact, auto, atol=1e-12)
    assert gap53 > 1e-3
# (53) is recovered when the key-path term is added back (W_V = I)
st = attention_stats(X, W_Q, W_K, None, context="inclusive")
a_tt = np.diagonal(st.alpha)[:, None, None]
key_term = a_tt * (st.v - st.v_bar)[:, :, None] * (st.q @ W_K)[:, None, :]
repaired = paper_diagonal_block(X, W_Q, W_K, None, include_current=True) - key_term
assert np.allclose(repaired, diagonal_blocks(X, W_Q, W_K, None, context="inclusive"), atol=1e-13)
print("(53) + key-path term = exact block (W_V = I):", True)
# the trivial layers the prose sets aside, where (53) is exact: W_V = 0, and A = 0 (W_Q = 0) with a random W_V
for W_Q_trivial, W_V_trivial in ((W_Q, np.zeros((d, d))), (np.zeros_like(W_Q), W_Vs["W_V random"])):
    exact_trivial = np.stack([jacobian_diagonal_block(X, t, W_Q=W_Q_trivial, W_K=W_K, W_V=W_V_trivial,
                                                      include_current=True) for t in range(T)])
    assert np.allclose(paper_diagonal_block(X, W_Q_trivial, W_K, W_V_trivial, include_current=True),
                       exact_trivial, atol=1e-13)
print("(53) = exact block for the trivial layers W_V = 0 and A = 0:", True)

# %% [markdown]
# So, apart from trivial layers ($W_V=0$, or $A=0$, where every score is 0 and the weights cannot move),
# (53)/(54) hold only where $\alpha_{tt}(v_t-\bar v_t)q_t^\top W_K=0$ (e.g. $x_t=\bar x_t$ or
# $W_K^\top W_Q x_t=0$) **and** $W_V=I$. The qualitative conclusion of Appendix A — including $s=t$
# does not remove the barrier — is unaffected. Recorded in `book/ERRATA.md`. Eqs. (48), (49) and (50)
# themselves are right, each for its own path (none of them assumes $W_V=I$); the slip is taking them as
# the whole dependence on $x_t$, which leaves out the key path. [Part 4's checking page](checking_the_paper.ipynb) checks them one path at a time, by
# central differences with a random $W_V$.

# %% [markdown]
# ### Fig. 1.1 against the computed picture
#
# Is one token typically clearly closest, and where does it sit? The same parameters on more random
# sequences:

# %% tags=["hide-cell"]
Xs = rng11.normal(size=(2000, T11, d11))  # 2000 more sequences, same parameters
ms = matrix_margins(Xs, W11, W11)
pos = np.argmin(ms.logabsdet, axis=1)
assert all(pos[i] in support_tokens(ms.logabsdet[i]) for i in range(20))
counts = np.bincount(pos, minlength=T11)
print("support-token position (1-based) over 2000 sequences:")
print("  " + "  ".join(f"{t + 1}:{produced(int(c), 'd')}" for t, c in enumerate(counts)))
share_last_4 = counts[-4:].sum() / len(pos)
share_past = np.mean((ms.spectral < 0).any(axis=1))
print(f"share at the last 4 positions: {produced(share_last_4, '{:.1%}')}; "
      f"sequences with a token past rho = 1: {produced(share_past, '{:.1%}')}")
assert counts[:2].sum() == 0  # positions 1-2 have Sigma_t = 0 and log|det| = 0
assert 0.4 < share_last_4 < 0.6 and share_past > 0.85

# %% [markdown]
# What comes out, and where it departs from the schematic:
#
# - **One support token, but not by a wide gap.** Token 8 ($\nu_1=0.967$) has $\log|\det|=-3.691$; token 5
#   ($\nu_1=0.936$) follows at $-2.819$, a gap of 0.873 nats. Distance and log-determinant choose the same
#   support token and order all but 3 of 65 pairs of tokens alike: the distance sees only the nearer
#   eigenvalue, the determinant also pays for the other one (tokens 7 and 10 swap).
# - **Under strict causal attention token 1 is the least likely support token.** Tokens 1 and 2 always have
#   $\Sigma_t=0$ (no context, or one attended token) and sit at the origin with $\log|\det|=0$; they can be
#   support tokens only if every later token has $|\det|\ge1$. Over 2000 more sequences the support token
#   is never at positions 1–2 and is at one of the last four positions in 49.8% of them: margins shrink
#   as the context grows. The "token 1" of the caption of Fig. 1.1 is a
#   label, not what this layer produces: with $A\succeq0$ every later token on the stable side has
#   $0<\det(I-\Sigma_t A)\le1$ and distance $1-\rho\le1$, so token 1 ($\det=1$, distance 1) is never
#   strictly the closest to instability. Recorded in `book/ERRATA.md`.
# - **The trajectory crosses the boundary.** Token 12 has $\nu_1=1.689$, so $\det(I-\Sigma_t A)<0$. Its
#   distance (0.689) and $|\det|$ look comfortable, so the log-determinant form of Eq. (25) — the one the
#   likelihood selects — ranks it safe, whereas the signed margins ($\det$, or $1-\rho=-0.689$) make it the
#   minimum (the other two swapped pairs involve it). Definition 3.1 is stated for the signed scalar
#   $m_t=1-a\mathrm{Var}_t$ of Eq. (9), whose matrix analogue would name token 12; with $|\det|$ it is
#   token 8. The schematic draws every dot on one side of the curve; with these untrained (Xavier-scale)
#   parameters 94.4% of random sequences have a token past $\rho=1$. Keeping configurations on the stable
#   side is the job of the barrier in Eq. (24), not something random parameters do.

# %% [markdown]
# ## Reproducibility
#
# Exact results: sympy (Appendix A), the library's closed forms in `nextword.theory.barrier`
# (`diagonal_blocks`, `jacobian_diagonal_block`, `paper_diagonal_block`, `attention_stats`,
# `matrix_margins`, `support_tokens`), checked against `nextword.numerics.central_difference` and torch
# autograd. Iterative results (SciPy's SLSQP, BFGS and Nelder–Mead in the barrier toy) and the 2000
# random sequences are printed through `produced()` and asserted with tolerances. Seeds:
# `numpy.random.default_rng(0)` for the $d=3$ examples, `default_rng(11)` for Figure 4.3.4 (chosen
# once, not tuned). The page runs in well under a minute.

# %% tags=["hide-cell", "nbval-ignore-output"]
# nbval-ignore-output: package versions
print(f"numpy {np.__version__}, sympy {sp.__version__}, torch {torch.__version__}")
