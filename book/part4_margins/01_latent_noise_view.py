# %% [markdown]
# # 4.1 The latent-noise view of causal self-attention
#
# *Source: Agarwal et al., "Support Tokens, Stability Margins, and a New Foundation for Robust LLMs",
# §2 (Eqs. 1–5) and Appendix B.2 (Lemma B.3), Corollary 3.1 (Eq. 16).*
#
# The paper reads one causal attention layer as a **generative model for embeddings**. Gaussian noise
# $\varepsilon_t\sim\mathcal N(0,\sigma^2 I_d)$ (Eq. 1) is pushed through
# $x_t=\mu_t(x)+\varepsilon_t$ (Eq. 3), where $\mu_t(x)=\sum_{s<t}\alpha_{ts}(x)\,v_s$ is the strict-causal
# attention summary of Eq. (2). Read backwards this is the residual map
# $\varepsilon_t=e_t(x)=x_t-\mu_t(x)$ (Eq. 4), and the change-of-variables formula (Eq. 5) gives the exact
# log-density of the embeddings:
#
# $$\log p(x_{1:L})=\log p(\varepsilon_{1:L})+\log\left|\det J_{x\mapsto\varepsilon}\right| .$$
#
# **Notation and conventions used in all of Part 4** (the paper's, which differ from Chapter 6):
#
# | symbol | meaning | code |
# |---|---|---|
# | $X\in\mathbb R^{L\times d}$ | rows are the embeddings $x_t$ | `X[t]` (0-based $t$) |
# | $q_t=W_Qx_t,\ k_s=W_Kx_s,\ v_s=W_Vx_s$ | **column-vector** maps, $W_Q,W_K\in\mathbb R^{d_k\times d}$, $W_V\in\mathbb R^{d\times d}$ | `X @ W_Q.T` |
# | $\ell_{ts}=q_t^\top k_s=x_s^\top A x_t$ | logits without $1/\sqrt{d_k}$ | $A=W_K^\top W_Q$ (Eq. 15) |
# | strict / inclusive | $s<t$ (Eq. 2) / $s\le t$ (App. A) | `include_current=False/True` |
#
# Position $t=1$ has nothing to attend to under the strict mask, so $\mu_1=0$ and $e_1=x_1$.

# %%
import numpy as np
import matplotlib.pyplot as plt
import sympy as sp

from nextword.booktools.plotting import use_book_style, heatmap
from nextword.theory.barrier import (
    causal_residual, residual_jacobian, diagonal_blocks,
    noise_log_density, log_barrier, embedding_log_density,
)
from nextword.numerics import central_difference

use_book_style()
rng = np.random.default_rng(0)

# %% [markdown]
# ## The Jacobian is block lower-triangular (Lemma B.3), symbolically
#
# With $d=1$, $L=3$ and $v_s=w\,x_s$, the residuals are $e_1=x_1$, $e_2=x_2-w x_1$ (one key, weight 1)
# and $e_3=x_3-\frac{e^{a x_3x_1}wx_1+e^{a x_3 x_2}wx_2}{e^{a x_3x_1}+e^{a x_3x_2}}$. Sympy builds the
# $3\times3$ Jacobian: every entry above the diagonal is zero because $e_t$ never looks at $x_{s>t}$;
# the diagonal is $(1,\,1,\,\partial e_3/\partial x_3)$, and only the last entry depends on the
# current token through the query.

# %%
x1, x2, x3, a, w = sp.symbols("x1 x2 x3 a w", real=True)
z1, z2 = sp.exp(a * x3 * x1), sp.exp(a * x3 * x2)
e = sp.Matrix([x1, x2 - w * x1, x3 - (z1 * w * x1 + z2 * w * x2) / (z1 + z2)])
J_sym = e.jacobian([x1, x2, x3])
print("entries above the diagonal:", [sp.simplify(J_sym[i, j]) for i in range(3) for j in range(3) if j > i])
print("diagonal:", [sp.simplify(J_sym[i, i]) for i in range(2)], "and")
alpha = z1 / (z1 + z2)
var_x = sp.simplify(alpha * (1 - alpha) * (x1 - x2) ** 2)  # attention-weighted variance of (x1, x2)
print("de3/dx3 - (1 - a*w*Var_x) =", sp.simplify(J_sym[2, 2] - (1 - a * w * var_x)))
print("det J =", "de3/dx3 (the product of the diagonal)" if sp.simplify(J_sym.det() - J_sym[2, 2]) == 0 else "?")
assert all(sp.simplify(J_sym[i, j]) == 0 for i in range(3) for j in range(3) if j > i)
assert sp.simplify(J_sym[2, 2] - (1 - a * w * var_x)) == 0

# %% [markdown]
# The last line is worth remembering: in $d=1$ the diagonal derivative is
# $1-a\,w\,\mathrm{Var}_\alpha(x)$, the variance of the attended **embeddings** times $w$. The paper's
# Proposition 1 writes $1-a\,\mathrm{Var}_t$ with the variance of the **values** $v_s=wx_s$, i.e.
# $1-a\,w^2\mathrm{Var}_\alpha(x)$; the two agree only for $w\in\{0,1\}$. Notebook 4.2 takes this up.
#
# ## The same structure numerically, for $d=2$
#
# The library's `residual_jacobian` returns the exact $(L,d,L,d)$ Jacobian
# $J[t,i,u,j]=\partial e_t[i]/\partial x_u[j]$ for any $W_V$. We check it against central finite
# differences and draw $|J|$ as an $Ld\times Ld$ matrix, next to the Jacobian of a non-causal
# (bidirectional) layer.

# %%
L, d = 6, 2
X = rng.normal(size=(L, d))
W_Q, W_K = 0.8 * rng.normal(size=(d, d)), 0.8 * rng.normal(size=(d, d))
W_V = rng.normal(size=(d, d))

J = residual_jacobian(X, W_Q, W_K, W_V)  # (L, d, L, d)
J_fd = central_difference(lambda Z: causal_residual(Z, W_Q, W_K, W_V), X)
print("exact Jacobian = finite differences (atol 1e-7):", bool(np.allclose(J, J_fd, atol=1e-7)))
assert np.allclose(J, J_fd, atol=1e-7)

J_bi = residual_jacobian(X, W_Q, W_K, W_V, context="bidirectional")
upper = [np.abs(J[t, :, u, :]).max() for t in range(L) for u in range(t + 1, L)]
print(f"largest entry above the block diagonal: causal {max(upper):.1e}, "
      f"bidirectional {max(np.abs(J_bi[t, :, u, :]).max() for t in range(L) for u in range(t + 1, L)):.3f}")
assert max(upper) == 0.0

# %%
fig, axes = plt.subplots(1, 2, figsize=(10, 4.4))
labels = [f"x{t + 1}[{i}]" for t in range(L) for i in range(d)]
heatmap(np.abs(J.reshape(L * d, L * d)), ax=axes[0], title="strict causal: |∂e/∂x|",
        row_labels=labels, col_labels=labels)
heatmap(np.abs(J_bi.reshape(L * d, L * d)), ax=axes[1], title="bidirectional: |∂e/∂x|",
        row_labels=labels, col_labels=labels)
for ax in axes:
    ax.tick_params(axis="x", rotation=90, labelsize=7)
    ax.tick_params(axis="y", labelsize=7)
plt.tight_layout()
plt.show()

# %% [markdown]
# *Figure 4.1.1 — Lemma B.3 as a picture. Left: the Jacobian of the strict-causal residual map is block
# lower-triangular ($\partial e_t/\partial x_u=0$ for $u>t$), with $2\times2$ diagonal blocks
# $\partial e_t/\partial x_t$; the first is exactly $I$ ($\mu_1=0$). Right: a non-causal layer fills the
# upper triangle, so its determinant no longer factorises over positions.*
#
# ## Determinant factorisation (Eq. 59) and the log-density decomposition (Eq. 16)
#
# Because of the triangular structure, $\log|\det J|=\sum_t\log|\det\partial e_t/\partial x_t|$.
# The log-density then splits into the **noise energy** $\sum_t\log\mathcal N(e_t;0,\sigma^2I)$ and the
# **log-barrier** $\sum_t\log|\det\partial e_t/\partial x_t|$.

# %%
sigma = 0.5
blocks = diagonal_blocks(X, W_Q, W_K, W_V)  # (L, d, d)
full = np.linalg.slogdet(J.reshape(L * d, L * d))[1]
by_blocks = np.linalg.slogdet(blocks)[1].sum()
print(f"log|det J| = {full:.10f}   sum_t log|det J_tt| = {by_blocks:.10f}")
assert np.isclose(full, by_blocks, atol=1e-12)

noise = noise_log_density(X, W_Q, W_K, W_V, sigma=sigma, per_position=True)
barrier = log_barrier(X, W_Q, W_K, W_V, per_position=True)
total = embedding_log_density(X, W_Q, W_K, W_V, sigma=sigma)
e_res = causal_residual(X, W_Q, W_K, W_V)
direct = (-0.5 * np.sum(e_res**2) / sigma**2 - 0.5 * L * d * np.log(2 * np.pi * sigma**2)
          + np.linalg.slogdet(J_fd.reshape(L * d, L * d))[1])  # Eq. (5) with a numerical Jacobian
for t in range(L):
    print(f"t={t + 1}:  noise {noise[t]:9.4f}   barrier {barrier[t]:8.4f}")
print(f"log p(x) = {total:.6f}   (Eq. 5 with finite differences: {direct:.6f})")
assert np.isclose(total, direct, atol=1e-6) and np.isclose(total, noise.sum() + barrier.sum())

# %%
fig, ax = plt.subplots(figsize=(6.4, 3.4))
pos = np.arange(1, L + 1)
ax.bar(pos - 0.18, noise, width=0.36, label="noise energy  log N(e_t; 0, σ²I)")
ax.bar(pos + 0.18, barrier, width=0.36, label="log-barrier  log|det ∂e_t/∂x_t|")
ax.axhline(0, color="k", lw=0.8)
ax.set_xlabel("position t")
ax.set_ylabel("nats")
ax.legend(loc="lower left", fontsize=8)
plt.show()

# %% [markdown]
# *Figure 4.1.2 — Corollary 3.1, Eq. (16), position by position for one random sequence ($d=2$,
# $\sigma=0.5$, random $W_Q,W_K,W_V$). The barrier term is 0 at $t=1$ (no context) and is the only
# place where the geometry of the attended context enters the likelihood.*
#
# ## The density is normalised: a 2-D quadrature check
#
# The change of variables only yields a probability density if $x\mapsto\varepsilon$ is a bijection.
# In $d=1$ with negative coupling ($a\,w<0$) every diagonal derivative is $\ge 1$, so each
# $x_t\mapsto e_t$ is increasing and onto, and $\int p(x_1,x_2,x_3)\,dx=1$. We integrate $x_3$ and $x_2$
# on a grid for a fixed $x_1$ (conditional density) — the integral must be 1.

# %%
grid = np.linspace(-10, 10, 401)
h = grid[1] - grid[0]
G2, G3 = np.meshgrid(grid, grid, indexing="ij")
Xg = np.stack([np.full(G2.shape, 0.7), G2, G3], axis=-1)[..., None]  # (401, 401, 3, 1)
logp = embedding_log_density(Xg, [[-0.8]], [[1.0]], [[0.9]], sigma=1.0, per_position=True)
cond = np.exp(logp[..., 1] + logp[..., 2]).sum() * h * h  # ∫∫ p(x2, x3 | x1) dx2 dx3
print(f"∫∫ p(x2, x3 | x1 = 0.7) dx2 dx3 = {cond:.10f}")
assert abs(cond - 1) < 1e-8

# %% [markdown]
# **Takeaways.** The attention layer defines an explicit, normalised density on embeddings; its
# Jacobian is block lower-triangular because of causality; and the determinant reduces to the
# product of $d\times d$ diagonal blocks, which is where the "margin" of the next notebooks lives.
