# %% [markdown]
# # 4.1 The latent-noise view: attention as a generator of embeddings
#
# **The question.** Attention is usually described as a weighted average that mixes a token with its
# past. Can the same layer be read as a probability model — a recipe that makes embeddings out of
# random noise — and if so, what probability does it give a sequence of embeddings?
#
# The paper behind Part 4 says yes, and the answer is the foundation of everything after this page.
# Read as a generator, the layer makes each embedding $x_t$ as "what attention predicts from the past"
# plus Gaussian noise. Run backwards, the layer's {term}`residual map` takes a sequence of embeddings
# to the noise it must have come from, and the {term}`change of variables` turns the noise's density
# into a density of the embeddings. That density has two parts: a prediction-error term that any
# regression has, and a volume term that exists only because the current token steers its own
# attention. Causality makes the volume term split into one factor per position; those factors are
# the margins of [4.2](02_scalar_margin.ipynb).
#
# ```{admonition} Learning goals
# :class: tip
# After this page you can
# - compute by hand the residuals $\hat\varepsilon_t=x_t-\mu_t(x)$ of a short sequence, and say why the first
#   position's residual is the token itself;
# - explain why causality makes the Jacobian of the residual map block lower-triangular, so that its
#   determinant is the product of the determinants of its diagonal blocks, one per position;
# - compute the log-density of a sequence as noise energy plus log-barrier, and check it against the
#   change-of-variables formula;
# - explain why the formula is a probability density only when the residual map is invertible.
# ```
#
# **Builds on:** [6.2 The attention mechanism](../part1_chapter6/6_2_attention_mechanism.ipynb)
# (queries, keys, values, softmax weights) and [6.3 Causal masking](../part1_chapter6/6_3_causal_masking.ipynb)
# (a position reads only its past) · partial derivatives and the Jacobian, the determinant of a
# triangular matrix, the normal density. **Reading time:** about 30 minutes.
#
# ```{admonition} Symbols on this page
# :class: note
# | symbol | meaning | shape |
# |---|---|---|
# | $x_t$ | embedding of position $t$ (a column vector; positions counted from 1) | $(d,)$ |
# | $x_{1:T}$, $X$ | the whole sequence of $T$ embeddings; $X$ stacks the $x_t$ as rows | $T$ vectors; $(T,d)$ |
# | $d$ | width of an embedding | number |
# | $\varepsilon$, $\sigma$ | Gaussian noise ($\varepsilon_t$ at position $t$), and its standard deviation | $(d,)$, number |
# | $q_t,k_s,v_s$ | query of $x_t$, key and value of $x_s$: $W_Q x_t$, $W_K x_s$, $W_V x_s$ | $(d_k,)$, $(d_k,)$, $(d,)$ |
# | $W_Q,W_K,W_V$ | query, key and value matrices | $(d_k,d)$, $(d_k,d)$, $(d,d)$ |
# | $\zeta_{ts}$, $\alpha_{ts}$ | score and attention weight of position $t$ on an earlier position $s$ | numbers |
# | $s$, $u$ | positions: $s$ an earlier one, $u$ any one (in $\partial \hat\varepsilon_t/\partial x_u$) | numbers |
# | $\mu_t(x)$ | attention summary of the positions before $t$, $\sum_{s<t}\alpha_{ts}v_s$ | $(d,)$ |
# | $\hat\varepsilon_t(x)$, $\hat\varepsilon$ | residual $x_t-\mu_t(x)$ of position $t$ ($\hat\varepsilon_1$, $\hat\varepsilon_2$, … at given positions): the noise position $t$ must have come from | $(d,)$ |
# | $J$, $J_{x\mapsto\varepsilon}$ | Jacobian of the residual map, $\partial \hat\varepsilon_t[r]/\partial x_u[r']$ | $(Td,Td)$ |
# | $r$, $r'$ | components of a vector, counted from 1 (not positions) | indices |
# | $f$ | an invertible map, $\varepsilon=f(x)$, in the change of variables | function |
# | $a$ | coupling in one dimension: the score of $x_s$ seen from $x_t$ is $a\,x_t x_s$, $a=w_K w_Q$ | number |
# | $w_Q,w_K,w_V$ | the three projections when $d=1$ (numbers); with them, $\mathrm{Var}_\alpha(x)$ is the attention-weighted variance of the attended embeddings and $\mathrm{Var}_\alpha(v)=w_V^2\,\mathrm{Var}_\alpha(x)$ that of the values | numbers |
# | $A$ | the matrix of the scores, $\zeta_{ts}=x_s^\top Ax_t$, $A=W_K^\top W_Q$ | $(d,d)$ |
# ```
#
# ```{admonition} In the paper's notation
# :class: seealso
# The paper writes $L$ for the length of the sequence, $\ell_{ts}$ for a score and $e_t(x)$ for the
# residual. Here they are $T$, $\zeta_{ts}$ and $\hat\varepsilon_t(x)$, because in Chapter 6 and in the
# book's notation table (Appendix A) $L$ counts layers, $\ell$ indexes them and $e[i]$ is the embedding of
# word $i$. The hat says what the residual is: the noise $\varepsilon_t$ that the layer infers back from the
# embeddings. Equation numbers are the paper's.
# ```
#
# *Source: Agarwal et al., "Support Tokens, Stability Margins, and a New Foundation for Robust LLMs",
# §2 (Eqs. 1–5), Corollary 3.1 (Eq. 16) and Appendix B.2 (Lemma B.3, Eq. 59).*
#
# **The model.** Gaussian noise $\varepsilon_t \sim\mathcal N(0,\sigma^2 I_d)$ (Eq. 1) is pushed
# through $x_t=\mu_t(x)+\varepsilon_t$ (Eq. 3), where $\mu_t(x)=\sum_{s<t}\alpha_{ts}(x)\,v_s$ is the
# attention summary of the strictly earlier positions (Eq. 2). Read backwards, this is the residual
# map $\varepsilon_t=\hat\varepsilon_t(x)=x_t-\mu_t(x)$ (Eq. 4), and the change of variables (Eq. 5) gives the exact
# log-density of the embeddings:
#
# $$\log p(x_{1:T})=\log p(\varepsilon_{1:T})+\log\left\lvert\det J_{x\mapsto\varepsilon}\right\rvert .$$
#
# The change of variables in one line: if $\varepsilon=f(x)$ with $f$ invertible, probability is
# conserved, so $p(x)\,dx=p(\varepsilon)\,d\varepsilon$ and $p(x)=p(f(x))\,\lvert\det\partial f/\partial x\rvert$:
# the determinant says how much $f$ stretches a small volume. Position $t=1$ has nothing to attend
# to under the strict mask, so $\mu_1=0$ and $\hat\varepsilon_1=x_1$.
#
# One thing the word "generator" hides: $\mu_t(x)$ depends on $x_t$ itself, because $x_t$ is the query
# that sets the weights. So making $x_t$ from $\varepsilon_t$ means solving $x_t-\mu_t(x)=\varepsilon_t$ for
# $x_t$, with the earlier embeddings fixed. That equation has exactly one solution for every
# $\varepsilon_t$ only when $x_t\mapsto\hat\varepsilon_t$ is invertible. The margins of
# [4.2](02_scalar_margin.ipynb) are the slopes of that map: where a slope reaches 0 the map can fold
# back, and then some noise values have several solutions.
#
# ```{admonition} Conventions of all of Part 4 (the paper's, which differ from Chapter 6)
# :class: seealso
# | symbol | meaning | code |
# |---|---|---|
# | $X\in\mathbb R^{T\times d}$ | rows are the embeddings $x_t$ | `X[t]` (0-based $t$) |
# | $q_t=W_Q x_t,\ k_s=W_K x_s,\ v_s=W_V x_s$ | **column-vector** maps | `X @ W_Q.T` |
# | $\zeta_{ts}=q_t^\top k_s=x_s^\top A x_t$ | scores without $1/\sqrt{d_k}$ | $A=W_K^\top W_Q$ (Eq. 15) |
# | strict / inclusive | $s<t$ (Eq. 2) / $s\le t$ (App. A) | `include_current=False/True` |
# | $T$, $\zeta_{ts}$, $\hat\varepsilon_t$ | length of the sequence, a score, a residual (the paper writes $L$, $\ell_{ts}$, $e_t$: see the side box above) | `L` in the library's docstrings; `causal_residual` returns the $\hat\varepsilon_t$ |
# ```

# %%
import math

import matplotlib.pyplot as plt
import numpy as np
import sympy as sp
from IPython.display import Math, display

from nextword.booktools.plotting import heatmap, use_book_style
from nextword.numerics import central_difference
from nextword.theory.barrier import (
    causal_residual,
    diagonal_blocks,
    embedding_log_density,
    log_barrier,
    noise_log_density,
    residual_jacobian,
)

use_book_style()
rng = np.random.default_rng(0)

# %% [markdown]
# ## A tiny example by hand
#
# One-dimensional embeddings ($d=1$), so the projections are numbers and the score of the current
# token on a past one is $a\,x_t x_s$ with one coupling $a=w_K w_Q$; take $a=0.5$, values equal to the
# tokens ($w_V=1$) and three tokens $x=(0.5,\,1.5,\,1.0)$. Going backwards, one position at a time:
#
# - $t=1$: no past, $\mu_1=0$, so $\hat\varepsilon_1=x_1=0.5$.
# - $t=2$: one past token, weight 1, $\mu_2=x_1=0.5$, so $\hat\varepsilon_2=1.5-0.5=1.0$.
# - $t=3$: scores $0.5\cdot1.0\cdot0.5=0.25$ and $0.5\cdot1.0\cdot1.5=0.75$, weights
#   $\mathrm{softmax}(0.25,0.75)\approx(0.378,0.622)$, $\mu_3 \approx0.378\cdot0.5+0.622\cdot1.5=1.122$,
#   so $\hat\varepsilon_3 \approx-0.122$.
#
# The same loop in code (positions from 1 in the printout, from 0 in the list):

# %%
coupling = 0.5
tokens = [0.5, 1.5, 1.0]


def residual(t, tokens, coupling=coupling):
    """Residual x_t - mu_t at position t (1-based), d = 1, values equal to tokens."""
    current, past = tokens[t - 1], tokens[: t - 1]
    if not past:
        return current
    exps = [math.exp(coupling * current * token) for token in past]
    mean = sum(e * token for e, token in zip(exps, past)) / sum(exps)
    return current - mean


scores_3 = [coupling * tokens[2] * token for token in tokens[:2]]
weights_3 = np.exp(scores_3) / np.exp(scores_3).sum()
print(f"position 3: scores {scores_3}, weights {np.round(weights_3, 3).tolist()}, "
      f"mean {weights_3 @ tokens[:2]:.3f}")
residuals = [residual(t, tokens) for t in (1, 2, 3)]
for t, eps in enumerate(residuals, start=1):
    print(f"position {t}: residual ε̂_{t} = {eps:+.4f}")
library = causal_residual(np.array(tokens)[:, None], [[coupling]], [[1.0]])[:, 0]
assert np.allclose(residuals, library, atol=1e-12)

# %% [markdown]
# Which residual moves when a token moves? Nudge each token by $0.001$ and record how every residual
# changes, divided by the nudge: that is one column of the Jacobian $\partial \hat\varepsilon_t/\partial x_u$.

# %%
step = 1e-3
jacobian = np.zeros((3, 3))
for u in range(3):
    nudged = list(tokens)
    nudged[u] += step
    jacobian[:, u] = [(residual(t, nudged) - residual(t, tokens)) / step for t in (1, 2, 3)]
print(np.array2string(jacobian, precision=3, suppress_small=True))
assert np.all(jacobian[np.triu_indices(3, k=1)] == 0)  # a residual never sees a later token

# %% [markdown]
# Every entry above the diagonal is exactly 0: $\hat\varepsilon_1$ and $\hat\varepsilon_2$ never look at later tokens, because
# the mask hides them. So the matrix is lower-triangular, and its determinant is the product of its
# diagonal, $1\cdot1\cdot\partial \hat\varepsilon_3/\partial x_3$. The first two diagonal entries are exactly 1;
# only the last differs, because $x_3$ is also the query that chooses its own weights. With
# $\sigma=1$, the log-density of the sequence is the noise's log-density at the residuals plus the
# log of that one factor:

# %%
slope_3 = jacobian[2, 2]
noise_part = sum(-0.5 * eps**2 - 0.5 * math.log(2 * math.pi) for eps in residuals)
print(f"dε̂_3/dx_3 ≈ {slope_3:.3f};  log p(x) ≈ {noise_part:.3f} + log {slope_3:.3f} "
      f"= {noise_part + math.log(slope_3):.3f}")
exact = embedding_log_density(np.array(tokens)[:, None], [[coupling]], [[1.0]], sigma=1.0)
assert abs(noise_part + math.log(slope_3) - exact) < 1e-3

# %% [markdown]
# That is the whole story of this page in three numbers; the rest checks each step in general.

# %% [markdown]
# ## The Jacobian is block lower-triangular (Lemma B.3), symbolically
#
# With $d=1$, $T=3$ and $v_s=w_V \,x_s$, the residuals are $\hat\varepsilon_1=x_1$, $\hat\varepsilon_2=x_2-w_V x_1$ (one key, weight
# 1) and $\hat\varepsilon_3=x_3-\frac{e^{a x_3 x_1}w_V x_1+e^{a x_3 x_2}w_V x_2}{e^{a x_3 x_1}+e^{a x_3 x_2}}$. Sympy builds the
# $3\times3$ Jacobian: every entry above the diagonal is zero because $\hat\varepsilon_t$ never looks at $x_{s>t}$;
# the diagonal is $(1,\,1,\,\partial \hat\varepsilon_3/\partial x_3)$, and only the last entry depends on the
# current token through the query.

# %%
x1, x2, x3, a, w = sp.symbols("x1 x2 x3 a w_V", real=True)
z1, z2 = sp.exp(a * x3 * x1), sp.exp(a * x3 * x2)  # unnormalised weights of x1, x2 seen from x3
residuals_sym = sp.Matrix([x1, x2 - w * x1, x3 - (z1 * w * x1 + z2 * w * x2) / (z1 + z2)])
J_sym = residuals_sym.jacobian([x1, x2, x3]).applyfunc(sp.simplify)
rows = [[sp.latex(J_sym[i, j]) for j in range(3)] for i in range(2)]  # rows 1 and 2 in full
rows.append([rf"\partial \hat\varepsilon_3/\partial x_{j}" for j in (1, 2, 3)])  # row 3 is long: named
matrix_tex = r"\\".join(" & ".join(row) for row in rows)
display(Math(r"J_{x\mapsto\varepsilon}=\begin{bmatrix}" + matrix_tex + r"\end{bmatrix}"))
assert all(J_sym[i, j] == 0 for i in range(3) for j in range(3) if j > i)
assert J_sym[0, 0] == 1 and J_sym[1, 1] == 1
assert sp.simplify(J_sym.det() - J_sym[2, 2]) == 0  # det J = the product of the diagonal

# %% [markdown]
# The last diagonal entry, simplified, is the margin of [4.2](02_scalar_margin.ipynb): with
# $\alpha$ the weight on $x_1$, the weighted variance of the two past tokens is
# $\mathrm{Var}_\alpha(x)=\alpha(1-\alpha)(x_1-x_2)^2$, and

# %%
alpha = z1 / (z1 + z2)
variance_tokens = sp.simplify(alpha * (1 - alpha) * (x1 - x2) ** 2)
difference = sp.simplify(J_sym[2, 2] - (1 - a * w * variance_tokens))
display(Math(r"\frac{\partial \hat\varepsilon_3}{\partial x_3}-\bigl(1-a\,w_V\,\mathrm{Var}_\alpha(x)\bigr)="
             + sp.latex(difference)))
assert difference == 0

# %% [markdown]
# With values equal to the embeddings ($w_V=1$) this is $1-a\,\mathrm{Var}_\alpha(x)$. The paper writes
# the margin with the variance of the values instead; the two agree only when $w_V$ is 0 or 1
# ([checked below](#checking-the-paper)).
#
# ## The same structure numerically, for $d=2$
#
# The library's `residual_jacobian` returns the exact $(T,d,T,d)$ Jacobian
# $J[t,r,u,r']=\partial \hat\varepsilon_t[r]/\partial x_u[r']$ for any $W_V$. We check it against central finite
# differences and draw $|J|$ as a $Td\times Td$ matrix, next to the Jacobian of a non-causal
# (bidirectional) layer.

# %%
T, d = 6, 2
X = rng.normal(size=(T, d))
W_Q, W_K = 0.8 * rng.normal(size=(d, d)), 0.8 * rng.normal(size=(d, d))
W_V = rng.normal(size=(d, d))

J = residual_jacobian(X, W_Q, W_K, W_V)  # (T, d, T, d)
J_finite_diff = central_difference(lambda Z: causal_residual(Z, W_Q, W_K, W_V), X)
print("exact Jacobian = finite differences (atol 1e-7):",
      bool(np.allclose(J, J_finite_diff, atol=1e-7)))
assert np.allclose(J, J_finite_diff, atol=1e-7)

J_bidirectional = residual_jacobian(X, W_Q, W_K, W_V, context="bidirectional")
above_diagonal = [(t, u) for t in range(T) for u in range(t + 1, T)]  # blocks with u > t
upper = [np.abs(J[t, :, u, :]).max() for t, u in above_diagonal]
upper_bidirectional = [np.abs(J_bidirectional[t, :, u, :]).max() for t, u in above_diagonal]
print(f"largest entry above the block diagonal: causal {max(upper):.1e}, "
      f"bidirectional {max(upper_bidirectional):.3f}")
assert max(upper) == 0.0

# %%
fig, axes = plt.subplots(1, 2, figsize=(10, 4.4))
labels = [f"x{t + 1}[{r + 1}]" for t in range(T) for r in range(d)]
heatmap(np.abs(J.reshape(T * d, T * d)), ax=axes[0], title=r"strict causal: $|\partial\hat\varepsilon/\partial x|$",
        row_labels=labels, col_labels=labels)
heatmap(np.abs(J_bidirectional.reshape(T * d, T * d)), ax=axes[1], title=r"bidirectional: $|\partial\hat\varepsilon/\partial x|$",
        row_labels=labels, col_labels=labels)
for ax in axes:
    ax.tick_params(axis="x", rotation=90, labelsize=7)
    ax.tick_params(axis="y", labelsize=7)
    ax.set_xlabel(r"derivative with respect to $x_u[r']$")
    ax.set_ylabel(r"of $\hat\varepsilon_t[r]$ (same order)")
plt.tight_layout()
plt.show()

# %% [markdown]
# **Figure 4.1.1.** Lemma B.3 as a picture. Left: the Jacobian of the strict-causal residual map is block
# lower-triangular ($\partial \hat\varepsilon_t/\partial x_u=0$ for $u>t$), with $2\times2$ diagonal blocks
# $\partial \hat\varepsilon_t/\partial x_t$; the first two are exactly $I$ ($\mu_1=0$, and $\mu_2=W_V x_1$ does not depend on
# $x_2$: one attended position, whose weight is 1). Right: a non-causal layer fills the
# upper triangle, so its determinant no longer factorises over positions.
#
# ## Determinant factorisation (Eq. 59) and the log-density decomposition (Eq. 16)
#
# Because of the triangular structure, $\log|\det J|=\sum_t \log|\det\partial \hat\varepsilon_t/\partial x_t|$.
# The log-density then splits into the **noise energy** $\sum_t \log\mathcal N(\hat\varepsilon_t;0,\sigma^2I)$ (the
# paper's name for it; it is a log-density, $-\sum_t\lVert \hat\varepsilon_t\rVert^2/2\sigma^2$ plus a constant, so it is
# largest when the layer predicts each embedding well: the opposite sign of an energy in physics, $-\log$ of a
# density, which is *lowest* where the density is high) and the {term}`log-barrier`
# $\sum_t \log|\det\partial \hat\varepsilon_t/\partial x_t|$ (how much the map changes volume at each position: negative
# where it squeezes, positive where it stretches).

# %%
sigma = 0.5
blocks = diagonal_blocks(X, W_Q, W_K, W_V)  # (T, d, d)
full = np.linalg.slogdet(J.reshape(T * d, T * d))[1]
by_blocks = np.linalg.slogdet(blocks)[1].sum()
print(f"log|det J| = {full:.10f}   sum_t log|det J_tt| = {by_blocks:.10f}")
assert np.isclose(full, by_blocks, atol=1e-12)

noise = noise_log_density(X, W_Q, W_K, W_V, sigma=sigma, per_position=True)
barrier = log_barrier(X, W_Q, W_K, W_V, per_position=True)
total = embedding_log_density(X, W_Q, W_K, W_V, sigma=sigma)
residuals_X = causal_residual(X, W_Q, W_K, W_V)
log_det_numerical = np.linalg.slogdet(J_finite_diff.reshape(T * d, T * d))[1]
direct = (-0.5 * np.sum(residuals_X**2) / sigma**2 - 0.5 * T * d * np.log(2 * np.pi * sigma**2)
          + log_det_numerical)  # Eq. (5) with a numerical Jacobian
for t in range(T):
    print(f"t={t + 1}:  noise {noise[t]:9.4f}   barrier {barrier[t]:8.4f}")
print(f"log p(x) = {total:.6f}   (Eq. 5 with finite differences: {direct:.6f})")
assert np.isclose(total, direct, atol=1e-6)
assert np.isclose(total, noise.sum() + barrier.sum())
assert np.abs(barrier).max() < 0.1 < 0.5 < np.abs(noise).min()  # Figure 4.1.2: the barrier bars are small

# %%
fig, ax = plt.subplots(figsize=(6.4, 3.4))
pos = np.arange(1, T + 1)
ax.bar(pos - 0.18, noise, width=0.36, label=r"noise energy  $\log\mathcal{N}(\hat\varepsilon_t;\, 0, \sigma^2 I)$")
ax.bar(pos + 0.18, barrier, width=0.36, label=r"log-barrier  $\log|\det\,\partial\hat\varepsilon_t/\partial x_t|$")
ax.axhline(0, color="k", lw=0.8)
ax.set_xlabel("position t")
ax.set_ylabel("nats")
ax.legend(loc="lower left", fontsize=8)
plt.show()

# %% [markdown]
# **Figure 4.1.2.** Corollary 3.1, Eq. (16), position by position for one random sequence ($d=2$,
# $\sigma=0.5$, random $W_Q,W_K,W_V$): blue bars the noise energy, vermilion bars the log-barrier. For
# this draw the barrier bars are barely visible: each is under 0.1 nats in size, against noise terms of
# 0.5 to 6 nats (the values are printed above the figure). The barrier term is 0 at $t=1$ (no context)
# and at $t=2$ (one attended position, whose weight is 1 whatever the query). It is the only place where
# the *spread* of the attended context enters the likelihood; the noise term sees the context only
# through its weighted mean $\mu_t$. It can have either sign: negative where the map squeezes volume,
# positive where it stretches it (here at $t=4$, $+0.04$).
#
# ## The density is normalised: a 2-D quadrature check
#
# The change of variables only yields a probability density if $x\mapsto\varepsilon$ is a bijection.
# In $d=1$ with $a\,w_V<0$ (for instance a negative coupling $a$ and a positive value weight $w_V$)
# every diagonal derivative $1-a\,w_V\,\mathrm{Var}_\alpha(x)$ is $\ge 1$, so each
# $x_t \mapsto \hat\varepsilon_t$ is increasing and onto, and $\int p(x_1,x_2,x_3)\,dx=1$. We integrate $x_3$ and $x_2$
# on a grid for a fixed $x_1$ (conditional density) — the integral must be 1.

# %%
grid = np.linspace(-10, 10, 401)
grid_step = grid[1] - grid[0]
x2_values, x3_values = np.meshgrid(grid, grid, indexing="ij")
sequences = np.stack([np.full(x2_values.shape, 0.7), x2_values, x3_values], axis=-1)[..., None]
# coupling a = -0.8, value weight w_V = 0.9: every margin 1 - a w_V Var >= 1
log_density = embedding_log_density(sequences, [[-0.8]], [[1.0]], [[0.9]], sigma=1.0,
                                    per_position=True)  # (401, 401, 3)
conditional = np.exp(log_density[..., 1] + log_density[..., 2])  # p(x2, x3 | x1 = 0.7)
integral = conditional.sum() * grid_step**2
print(f"∫∫ p(x2, x3 | x1 = 0.7) dx2 dx3 = {integral:.10f}")
assert abs(integral - 1) < 1e-8

# %% [markdown]
# With $a\,w_V<0$ the margins are all at least 1, the residual map is increasing and onto,
# and the density integrates to 1 to ten digits. With a strong positive $a\,w_V$ (a strong positive
# coupling with values equal to the tokens, say) the map can fold,
# and then the same formula is not a density: [4.2](02_scalar_margin.ipynb) shows where and why.
#
# ## Key takeaways
#
# - A causal attention layer read backwards is the residual map $\hat\varepsilon_t=x_t-\mu_t(x)$: it takes
#   embeddings to the Gaussian noise they came from, and the change of variables turns the noise
#   density into an exact density of the embeddings.
# - Because a position never sees later positions, the Jacobian of the residual map is block
#   lower-triangular, and its log-determinant is a sum of one term per position.
# - The log-density is a noise energy (minus a scaled squared prediction error, plus a constant) plus
#   a log-barrier; the barrier is 0 at the first two positions and is where the current token's steering of its own attention shows up.
# - The formula is a probability density only when the residual map is invertible — in $d=1$ always when
#   $a\,w_V<0$ (for instance a negative coupling with values a positive multiple of the tokens), not
#   always when $a\,w_V>0$ (which a negative coupling with a negative $w_V$ also gives).
#
# ## Check your understanding
#
# 1. In the tiny example, why is $\partial \hat\varepsilon_2/\partial x_2$ exactly 1, while
#    $\partial \hat\varepsilon_3/\partial x_3$ is not?
#
#    ```{dropdown} Answer
#    Position 2 has a single past token, whose weight is 1 whatever the query, so $\mu_2=x_1$ does
#    not depend on $x_2$. Position 3 has two past tokens; its own token $x_3$ is the query that sets
#    their weights, so $\mu_3$ moves when $x_3$ moves.
#    ```
#
# 2. A bidirectional (unmasked) layer is used instead. Which step of this page's argument fails?
#
#    ```{dropdown} Answer
#    The Jacobian is no longer lower-triangular (Figure 4.1.1, right), so its determinant is not the
#    product of the diagonal blocks: the log-density no longer splits into one term per position, and
#    the generator can no longer make the embeddings one position at a time.
#    ```
#
# 3. If attention weights did not depend on the current token at all (say, fixed weights on the
#    past), what would the log-barrier be?
#
#    ```{dropdown} Answer
#    Zero. Every diagonal block would be the identity ($\mu_t$ would not depend on $x_t$), so
#    $\log\lvert\det\rvert=0$ at every position, and the log-density would be the noise energy
#    alone: a plain prediction-error model.
#    ```

# %% [markdown]
# ## Checking the paper
#
# ### Proposition 1: the variance of the embeddings or of the values?
#
# The symbolic diagonal entry above was $1-a\,w_V \,\mathrm{Var}_\alpha(x)$: the variance of the
# attended **embeddings**, times $w_V$. The paper's Proposition 1 writes the margin with the
# variance of the **values** $v_s=w_V x_s$, i.e. $1-a\,\mathrm{Var}_\alpha(v)=1-a\,w_V^2\mathrm{Var}_\alpha(x)$.
# The two differ by

# %% tags=["hide-cell"]
paper_form = 1 - a * w**2 * variance_tokens
gap = sp.factor(sp.simplify(J_sym[2, 2] - paper_form) / variance_tokens)
display(Math(r"\frac{\partial \hat\varepsilon_3}{\partial x_3}-\bigl(1-a\,\mathrm{Var}_\alpha(v)\bigr)="
             + sp.latex(gap) + r"\cdot\mathrm{Var}_\alpha(x)"))
assert set(sp.solve(gap, w)) == {0, 1}

# %% [markdown]
# so they agree only for $w_V \in\{0,1\}$. Page [4.2](02_scalar_margin.ipynb) checks this with finite
# differences; it is recorded in `book/ERRATA.md` (row "Prop. 1 (Eq. 8), Thm. 1 (Eq. 14)").

# %% [markdown]
# ## Reproducibility
#
# All numbers on this page are exact (sympy) or closed-form evaluations of
# `nextword.theory.barrier` (`causal_residual`, `residual_jacobian`, `diagonal_blocks`,
# `noise_log_density`, `log_barrier`, `embedding_log_density`) checked against
# `nextword.numerics.central_difference`. The random $d=2$ example uses `numpy.random.default_rng(0)`.
# The page runs in a few seconds.

# %% tags=["hide-cell", "nbval-ignore-output"]
# nbval-ignore-output: package versions
print(f"numpy {np.__version__}, sympy {sp.__version__}")
