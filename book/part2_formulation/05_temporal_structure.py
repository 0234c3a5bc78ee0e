# %% [markdown]
# # 2.5 Temporal structure: positions, causal and sparse attention, state-space models
#
# **The question.** The attention block of [2.4](04_attention_block_set_transformer.ipynb) sees a
# prefix as a set: it ignores word order, lets every position read every other (the future too),
# and compares all pairs of positions, a cost that grows with the square of the length. How do
# language models put order back, hide the future, and make long texts affordable?
#
# The paper's §5.3 lists the fixes in use: add a {term}`positional encoding` to each vector; build
# position into the score itself (the rotary form, RoPE); mask the scores so a position sees only
# itself and the past ({term}`causal mask`), or only a window of neighbours (sparse attention); or
# replace attention by a {term}`state-space model`, a recurrence that reads the sequence once, in
# order, at a cost linear in its length. Each fix is a formula you can check — and several of the
# printed ones fail the check in instructive ways.
#
# ```{admonition} Learning goals
# :class: tip
# After this page you can
# - compute by hand why multiplying a score by 0 does not mask it, and what a $-\infty$ score does;
# - explain what makes the base-10000 sinusoidal encoding multi-scale, and RoPE a rotation of
#   complex pairs whose score depends only on the offset;
# - count the inner products of full, causal and banded attention, and compute a windowed layer;
# - run a linear state-space recurrence by hand, and explain why its discretisation (exact for an
#   input held constant over each step) needs $e^{A(t-t')}B$ in that order.
# ```
#
# **Builds on:** [2.4 The attention block](04_attention_block_set_transformer.ipynb) (the attention
# map (5.2) and its {term}`permutation-equivariant` blind spot) ·
# [6.3 Causal masking](../part1_chapter6/6_3_causal_masking.ipynb) (the causal mask as $-\infty$
# scores) · [6.5 Positional encoding](../part1_chapter6/6_5_positional_encoding.ipynb) (sinusoidal
# encodings and RoPE) · complex numbers $e^{\mathrm i\,\theta}$; a linear ODE $\dot v=Av$ and the matrix
# exponential. **Reading time:** about 45 minutes.
#
# ```{admonition} Symbols on this page
# :class: note
# | symbol | meaning | shape |
# |---|---|---|
# | $i$, $j$ | positions of a query and of a key in the sequence (counted from 1); in the recurrence, $i$ is the step that reads input $h_i$ | integers |
# | $m$ | the position being predicted; the sequence $h_1,\dots,h_{m-1}$ has $n=m-1$ vectors | integers |
# | $h_i$ | the vector at position $i$ (a column, as in the paper) | $(d_e,)$ |
# | $Q$, $K$, $V$ | the query, key and value matrices of (5.2) | $(c,d_e)$, $(c,d_e)$, $(d_e,d_e)$ |
# | $d_e$, $c$ | the embedding width; the width of queries and keys | integers |
# | $\omega$ | the half-width of a band: position $i$ sees the positions $j$ with $\lvert i-j\rvert\le\omega$ | integer |
# | $r$, $\lambda$ | $r_i$ is the absolute positional encoding of position $i$; $\lambda_\nu$ the $\nu$-th wavelength divided by $2\pi$ | $(d_e,)$, number |
# | $q$, $k$ | a query vector and a key vector (RoPE section; columns, as $h_i$; the query and key of the book's notation table (Appendix A), not bold: a bold $\mathbf q$ is a next-token distribution in Part 2) | $(c,)$ |
# | $R$, $\psi_\nu$ | $R_i$ is the rotation RoPE applies at position $i$; $\psi_\nu$ the angle per position of coordinate pair $\nu$ | $(c,c)$, number |
# | $z$ | a pair of coordinates of a vector $q$ as one complex number, $z=q_{2\nu-1}+\mathrm i\,q_{2\nu}$ ($\mathrm i$ the imaginary unit; coordinates counted from 1); $z_{q,\nu}$, $z_{k,\nu}$: pair $\nu$ of the query / the key, $\nu=1,\dots,c/2$ | complex |
# | $\theta$ | an angle | number |
# | $\gamma$, $\beta$, $v_i$ | the tiny recurrence's two weights and its state after $i$ inputs | numbers |
# | $v$, $\dot v$, $s$ | the state of a state-space model, its time derivative, and its dimension | $(s,)$ |
# | $A$, $B$, $C$, $D$ | the state-space model's matrices: $\dot v=Av+Bh$, read-out $u=Cv+Dh$ | $(s,s)$, $(s,d_e)$, $(d_e,s)$, $(d_e,d_e)$ |
# | $h(t)$, $u$ | the input (continuous time) and the read-out | $(d_e,)$ |
# | $t$, $t'$, $\Delta t$, $t_i$ | time, an integration variable, the step length, the time $i\Delta t$ | numbers |
# | $\bar A$, $\bar B$ | the discretised matrices of the recurrence $v_{i+1}=\bar Av_i+\bar Bh_i$ | $(s,s)$, $(s,d_e)$ |
# | $\kappa_\rho$ | the convolution kernel $C\bar A^{\rho-1}\bar B$ of the unrolled recurrence at lag $\rho$ | $(d_e,d_e)$ |
# | $\nu$ | the index of a wavelength, or of a pair of coordinates | integer |
# | $a$, $\psi_a$ | the index of a single coordinate of $q$, $k$, and the paper's angle for it (only in its RoFormer sum, checked at the end) | integer, number |
# | $\mathbf f$, $\mathbf g$ | the state update and the read-out of (5.9) | maps |
# ```
#
# ```{admonition} In the paper's notation
# :class: note
# The paper writes the band's half-width as $r$ and the positional encoding of position $m$ as
# $r_m$; the book writes $\omega$ and $r_i$. It writes the positions of a query and a key as $k$ and $l$
# (here $i$ and $j$, as in Chapter 6: the book keeps $k$ for a key), the step of the recurrence as
# $k$ (here $i$), the index of a wavelength as $j$ (here $\nu$; in its RoFormer sum $j$ runs over the $c$
# coordinates, here $a$, where the book's $\nu$ counts the $c/2$ pairs) and the imaginary unit as $i$ (here $\mathrm i$). Its RoFormer formula writes the query and the key vectors as
# $Qh_k$ and $Kh_l$ (the book: a query vector $q$ and a key vector $k$, the letters of the book's notation table) and the angles as $\psi_j$ (here
# $\psi_\nu$, and $\psi_a$ where the checking section sums over coordinates); the lag of the convolution kernel is $\rho$ here. Appendix C writes the initial state as $\vartheta_0$ (here $v_0$) and the integration variable as $s$
# (the book keeps $s$ for the state dimension and writes $t'$). Its state of the recurrence (5.9) is $v$,
# kept here: on this page $v$ is that state, not Chapter 6's value. §5.3.3 writes the sparse pattern as
# an adjacency matrix $A$ (not used here: $A$ is the state-space matrix).
# ```
#
# *Source: Baptista, Stuart, Tran, "Large Language Models: A Mathematical Formulation", §5.3
# (Example 5.8, Eqs. 5.8–5.9) and Appendix C (Eqs. C.1–C.4).*
#
# Conventions: the formulas use column vectors, as the paper does and as
# [2.4](04_attention_block_set_transformer.ipynb) does ($Qh_i$, $R_i q$, $\dot v=Av+Bh$); the
# code stores a sequence as an array with one row per position, so $Qh_i$ is row $i$ of `h @ Q.T`
# (the code's random matrices `Wq`, `Wk`, `Wv` play the parts of $Q^\top$, $K^\top$, $V^\top$).
# Positions are 0-based in code (the paper counts from 1). `nextword.theory.formulation.ssm`
# takes Appendix C's matrices as they are ($A$ acts on the state from the left).

# %%
import matplotlib.pyplot as plt
import numpy as np
import scipy.integrate
import scipy.linalg
import sympy as sp
from IPython.display import Math, display
from matplotlib.ticker import NullFormatter

from nextword.attention import band_mask, causal_mask, scaled_dot_product_attention, softmax
from nextword.booktools.plotting import heatmap, use_book_style
from nextword.positions import apply_rope, rope_frequencies, sinusoidal_encoding
from nextword.theory.formulation import (
    discretize_euler, discretize_zoh, ssm_convolve, ssm_exact_state, ssm_kernel, ssm_scan,
)

use_book_style()
rng = np.random.default_rng(0)

# %% [markdown]
# ## A tiny example by hand
#
# **Masking.** Two one-dimensional tokens $h=(1,2)$ with $Q=K=V=1$, as in
# [2.4](04_attention_block_set_transformer.ipynb): token 1's scores with tokens 1 and 2 are $(1,2)$. Causal attention must give token 2, the future, weight 0. The
# paper writes the masked score as $\mathbb 1_{j\le i}\langle Qh_i,Kh_j\rangle$: token 1's scores
# become $(1, 0)$ — but $e^0=1$, so token 2 still gets weight $1/(e+1)=0.2689$. Setting the masked
# score to $-\infty$ instead gives $e^{-\infty}=0$:

# %%
scores_token1 = np.array([1.0, 2.0])  # <h_1, h_1>, <h_1, h_2>
allowed = np.array([1.0, 0.0])  # token 1 may see token 1, not token 2
times_zero = softmax(scores_token1 * allowed)
minus_inf = softmax(np.where(allowed == 1, scores_token1, -np.inf))
print(f"indicator x score: weights {np.round(times_zero, 4)}  (the future still gets weight)")
print(f"-inf score       : weights {minus_inf}")
assert times_zero[1] > 0.25
assert minus_inf[1] == 0.0

# %% [markdown]
# **A state-space recurrence.** Instead of attention, read the sequence once, keeping a running
# state: $v_i=\gamma\,v_{i-1}+\beta\,h_i$. With $\gamma=\tfrac12$, $\beta=1$, $v_0=0$ and inputs
# $(h_1,h_2,h_3)=(1,2,3)$: $v_1=1$, $v_2=\tfrac12\cdot1+2=2.5$, $v_3=\tfrac12\cdot2.5+3=4.25$. Each
# step costs the same fixed work (here two multiplications and an addition), so the whole sequence
# costs time linear in its length, and $v_i$ depends only on the inputs up to $h_i$: causal by
# construction.

# %%
gamma_tiny, beta_tiny, state = 0.5, 1.0, 0.0
for i, h_i in enumerate([1.0, 2.0, 3.0]):
    state = gamma_tiny * state + beta_tiny * h_i
    print(f"v_{i + 1} = {gamma_tiny} * previous + {beta_tiny} * {h_i} = {state}")
assert state == 4.25
# the library's scan returns the states v_0, ..., v_{T-1}: a fourth input lets it reach v_3
inputs = np.array([[1.0], [2.0], [3.0], [0.0]])
tiny_states, _ = ssm_scan(np.array([[gamma_tiny]]), np.array([[beta_tiny]]), np.eye(1), np.zeros((1, 1)),
                          inputs, np.zeros(1))
assert np.array_equal(tiny_states.ravel(), [0.0, 1.0, 2.5, 4.25])

# %% [markdown]
# ## Absolute encodings: Example 5.8 as printed versus base 10000
#
# Example 5.8 sets $\lambda_\nu=2^{2\nu/d_e}$ for $\nu=1,\dots,d_e/2$ and
# $r_i=(\sin(i/\lambda_1),\cos(i/\lambda_1),\dots)$ for position $i$. The trigonometric encoding of Vaswani et al.
# (and Chapter 6, `sinusoidal_encoding`) uses $\lambda_\nu=10000^{2(\nu-1)/d_e}$. We write the formula
# once with a free base and starting index, check that base 10000 with $\nu-1$ reproduces the library,
# and then look at what base 2 does.


# %%
def trig_encoding(positions, d, base, first_nu):
    """r_i of Example 5.8 with lambda_nu = base^(2 nu / d), nu = first_nu .. first_nu + d/2 - 1."""
    lam = base ** (2 * np.arange(first_nu, first_nu + d // 2) / d)  # (d/2,)
    ang = np.asarray(positions, dtype=float)[:, None] / lam[None, :]  # (M, d/2)
    r = np.empty((len(positions), d))
    r[:, 0::2], r[:, 1::2] = np.sin(ang), np.cos(ang)
    return r


d, M = 64, 512
usual = trig_encoding(np.arange(M), d, 10000.0, first_nu=0)
assert np.allclose(usual, sinusoidal_encoding(M, d), atol=1e-12)
printed = trig_encoding(np.arange(1, M + 1), d, 2.0, first_nu=1)
lam = 2.0 ** (2 * np.arange(1, d // 2 + 1) / d)
print(f"as printed: wavelengths 2*pi*lambda_nu range over [{2 * np.pi * lam.min():.2f}, "
      f"{2 * np.pi * lam.max():.2f}] positions")
lam_u = 10000.0 ** (2 * np.arange(d // 2) / d)
print(f"base 10000: wavelengths range over [{2 * np.pi * lam_u.min():.2f}, "
      f"{2 * np.pi * lam_u.max():.0f}] positions")


# %%
def similarity_kernel(lam, offsets):
    """<r_i, r_{i+D}> / |r|^2 = mean_nu cos(D / lambda_nu): it depends on the offset D only."""
    return np.cos(np.asarray(offsets, dtype=float)[:, None] / lam[None, :]).mean(axis=1)


offsets = np.arange(0, M)
k_printed, k_usual = similarity_kernel(lam, offsets), similarity_kernel(lam_u, offsets)
assert np.allclose(printed[5] @ printed[5 + 37] / (d / 2), k_printed[37])  # check the identity once
print(f"ratio of longest to shortest wavelength: printed {lam.max() / lam.min():.2f}, "
      f"base 10000 {lam_u.max() / lam_u.min():.0f}")
for name, kern in [("as printed (base 2)", k_printed), ("base 10000", k_usual)]:
    print(f"{name:20s}: similarity first < 0.5 at offset {np.argmax(kern < 0.5):3d}; "
          f"mean |similarity| over offsets 10..511 = {np.abs(kern[10:]).mean():.3f}")
assert np.argmax(k_printed < 0.5) <= 3  # as printed: similarity falls at once
assert np.abs(k_printed[10:]).mean() < 0.1  # ... and stays near 0
assert np.argmax(k_usual < 0.5) > 20  # Figure 2.5.1: base 10000 decaying gradually
print(f"as printed: most negative similarity {k_printed.min():.2f}, at offset {np.argmin(k_printed)}")
assert np.argmin(k_printed) == 4 and k_printed.min() < -0.75  # Figure 2.5.1: the dark stripes

# %% [markdown]
# With base 2 the wavelengths span only a factor of 2 (about 6.4 to 12.6 positions), so the
# encoding has no coarse scale: positions more than a few steps apart look unrelated, and "how far
# apart" is not encoded smoothly. Base 10000 spans almost four orders of magnitude (a factor 7499
# for $d_e=64$, printed above), and similarity decays
# gradually with the offset — the multi-scale property the usual encoding is chosen for. (The
# encodings of the 512 positions stay distinct in both cases:)

# %%
for name, r_enc in [("as printed (base 2)", printed), ("base 10000", usual)]:
    dists = np.linalg.norm(r_enc[:, None, :] - r_enc[None, :, :], axis=-1)
    closest = dists[~np.eye(M, dtype=bool)].min()
    print(f"{name:20s}: smallest distance between the encodings of two positions {closest:.3f}")
    assert closest > 0.1

# %%
fig, axes = plt.subplots(1, 3, figsize=(14, 4), layout="constrained")
panels = [("Example 5.8 as printed (base 2)", printed, 1), ("base 10000", usual, 0)]
for ax, (name, r, first) in zip(axes[:2], panels):  # printed: positions 1..128; usual: 0..127
    heatmap(r[:128] @ r[:128].T / (d / 2), ax=ax, title=name, vmin=-1, vmax=1)
    ticks = [0, 31, 63, 95, 127]
    ax.set_xticks(ticks, [str(t + first) for t in ticks])
    ax.set_yticks(ticks, [str(t + first) for t in ticks])
    ax.set_xlabel("position j" + (" (from 0, as the library counts)" if first == 0 else ""))
    ax.set_ylabel("position i")
axes[2].plot(offsets[:200], k_printed[:200], label="as printed (base 2)")
axes[2].plot(offsets[:200], k_usual[:200], label="base 10000")
axes[2].set_xlabel("offset i - j")
axes[2].set_ylabel("cosine similarity")
axes[2].legend()
plt.show()

# %% [markdown]
# **Figure 2.5.1.** Cosine similarity $\langle r_i,r_j\rangle/|r|^2$ of the encodings of the first
# 128 positions (left and middle, one heatmap each: positions 1 to 128 as the example counts them,
# 0 to 127 as the library does), and as a function of the offset $i-j$ (right:
# blue as printed, vermilion base 10000). Left: Example 5.8 with $\lambda_\nu=2^{2\nu/d_e}$ — only
# immediate neighbours are similar, a thin bright diagonal flanked by dark stripes: positions 4
# apart have nearly opposite encodings (similarity about $-0.8$). Middle: the usual base 10000 — a broad
# diagonal band, similarity decaying gradually with $|i-j|$. We read "2" as a slip (or an extraction
# loss) for 10000 and $\nu$ for $\nu-1$ ([checked below](#checking-the-paper)) and use base 10000
# elsewhere.
#
# ## The RoFormer inner product (§5.3.2) equals RoPE on complex pairs
#
# RoPE rotates each consecutive pair of query/key coordinates by an angle proportional to the
# position (`apply_rope`), in place of the plain score (5.8), $\langle Qh_i,Kh_j\rangle$: at
# position $i$, pair $\nu$ (coordinates $2\nu-1$ and $2\nu$, counted from 1) turns by $i\psi_\nu$. Writing
# that pair of a vector $q$ as a complex number $z=q_{2\nu-1}+\mathrm i\,q_{2\nu}$, a rotation is a multiplication by $e^{\mathrm i\,i\psi_\nu}$, so the score of a
# query vector $q$ at position $i$ with a key vector $k$ at position $j$ is
# $\langle R_i q,R_j k\rangle=\mathrm{Re}\sum_{\nu=1}^{c/2}z_{q,\nu}\,\overline{z_{k,\nu}}\,
# e^{\mathrm i\,(i-j)\psi_\nu}$: it depends on the positions only through the offset $i-j$. (The paper's
# formula sums over the $c$ real coordinates instead and loses the sine terms of the rotation;
# [checked below](#checking-the-paper).) Sympy for one pair, then numbers:

# %%
# one coordinate pair of the query vector q and of the key vector k, and its angle
q1, q2, k1, k2, phi = sp.symbols("q_1 q_2 k_1 k_2 psi", real=True)


def rot(angle):
    """The 2x2 rotation matrix by `angle`."""
    return sp.Matrix([[sp.cos(angle), -sp.sin(angle)], [sp.sin(angle), sp.cos(angle)]])


kk, ll = sp.symbols("i j", integer=True)  # the positions of the query and the key
rope = (rot(kk * phi) * sp.Matrix([q1, q2])).dot(rot(ll * phi) * sp.Matrix([k1, k2]))
pair_product = (q1 + sp.I * q2) * (k1 - sp.I * k2) * sp.exp(sp.I * (kk - ll) * phi)
complex_form = sp.re(sp.expand(pair_product))
rope_vs_complex = sp.simplify(sp.expand_trig(rope - complex_form))
display(Math(r"\langle R_i q,R_j k\rangle-\mathrm{Re}\big[z_q\overline{z_k}e^{\mathrm i\,(i-j)\psi}\big]="
             + sp.latex(rope_vs_complex)))
assert rope_vs_complex == 0

# %%

c_dim, T = 8, 6
qs, ks = rng.normal(size=(T, c_dim)), rng.normal(size=(T, c_dim))
psi = rope_frequencies(c_dim)  # (c/2,)
scores_rope = apply_rope(qs) @ apply_rope(ks).T  # (T, T)
zq, zk = qs[:, 0::2] + 1j * qs[:, 1::2], ks[:, 0::2] + 1j * ks[:, 1::2]  # (T, c/2)
offset = np.arange(T)[:, None] - np.arange(T)[None, :]  # i - j
phases = np.exp(1j * offset[..., None] * psi)  # (T, T, c/2)
scores_complex = np.einsum("kj,lj,klj->kl", zq, zk.conj(), phases).real
assert np.allclose(scores_rope, scores_complex, atol=1e-12)
print("RoPE scores == complex-pair RoFormer form for all (i, j): True")

# %% [markdown]
# ## Causal and banded sparse attention, with operation counts (§5.3.3)
#
# **Masking must remove terms, not zero the score.** The paper replaces the inner product by
# $\mathbb 1_{j\le i}\langle Qh_i,Kh_j\rangle$. Inside (5.2) that turns a masked score into $0$, and
# $e^0=1$: the future still gets weight. A mask has to drop the masked terms from both sums in
# (5.2) — equivalently set their score to $-\infty$, which is what `causal_mask` /
# `scaled_dot_product_attention(..., causal=True)` do. Test: change only the last token and see
# whether earlier outputs move.

# %%
T, c_dim = 6, 4
h = rng.normal(size=(T, c_dim))
Wq, Wk, Wv = (rng.normal(size=(c_dim, c_dim)) for _ in range(3))


def att_indicator_times_score(h):
    """The attention sum of (5.2) (its added h_i left out: the earlier positions compared below keep
    theirs) with the printed causal score 1_{j <= i} <Q h_i, K h_j>."""
    s = (h @ Wq) @ (h @ Wk).T  # (T, T) scores <Q h_i, K h_j>
    return softmax(s * causal_mask(T)) @ (h @ Wv)


def att_masked(h):
    """The attention sum of (5.2) (its added h_i left out) with masked scores set to -inf."""
    return scaled_dot_product_attention(h @ Wq, h @ Wk, h @ Wv, causal=True, scale=1.0)


h2 = h.copy()
h2[-1] += 3.0  # change the future only
leak_printed = np.abs(att_indicator_times_score(h2)[:-1] - att_indicator_times_score(h)[:-1]).max()
leak_masked = np.abs(att_masked(h2)[:-1] - att_masked(h)[:-1]).max()
print(f"indicator x score: earlier outputs move by up to {leak_printed:.3f}")
print(f"-inf mask        : earlier outputs move by up to {leak_masked:.3f}")
assert leak_printed > 1e-2  # the printed form leaks the future
assert leak_masked == 0.0  # the -inf mask does not

# %% [markdown]
# **Counting inner products.** On $n=m-1$ positions full attention needs $n^2$ inner products. With
# $j\le i$ (a position sees itself, as in (5.2)) a causal layer needs $n(n+1)/2$ (the paper prints
# $(m-1)(m-2)/2$, the count for $j<i$; [checked below](#checking-the-paper)). A banded mask
# $|i-j|\le\omega$ needs $n(2\omega+1)-\omega(\omega+1)$ (linear in $n$), a causal band $0\le i-j\le\omega$ needs
# $n(\omega+1)-\omega(\omega+1)/2$. Sympy sums the indicators; the library's masks agree.

# %%
n, i_, j_ = sp.symbols("n i j", integer=True, positive=True)  # n = m - 1 positions
causal_count = sp.summation(sp.summation(1, (j_, 1, i_)), (i_, 1, n))
display(Math(r"\sum_{i=1}^{n}\sum_{j=1}^{i}1=" + sp.latex(sp.factor(causal_count))))
assert sp.simplify(causal_count - n * (n + 1) / 2) == 0


ms = np.array([16, 32, 64, 128, 256, 512])
omega = 8  # the half-width of the band
counts = {
    "full": ms**2,
    "causal": np.array([causal_mask(m).sum() for m in ms]),
    f"band |i-j|<={omega}": np.array([band_mask(m, omega).sum() for m in ms]),
    f"causal band (window {omega + 1})": np.array([band_mask(m, omega, causal=True).sum() for m in ms]),
}
assert np.all(counts["causal"] == ms * (ms + 1) // 2)
assert np.all(counts[f"band |i-j|<={omega}"] == ms * (2 * omega + 1) - omega * (omega + 1))  # Figure 2.5.2: grow linearly
assert np.all(counts[f"causal band (window {omega + 1})"] == ms * (omega + 1) - omega * (omega + 1) // 2)
for name, cnt in counts.items():
    print(f"{name:24s}: " + "  ".join(f"{c:7d}" for c in cnt))

# %% [markdown]
# A banded layer only ever needs those inner products: computing each row's $2\omega+1$ scores directly
# (a loop over the window) gives the same output as the full masked softmax.

# %%
T, omega = 40, 3  # T positions, half-width omega
h = rng.normal(size=(T, c_dim))
q, k, v = h @ Wq, h @ Wk, h @ Wv
full = scaled_dot_product_attention(q, k, v, mask=band_mask(T, omega), scale=1.0)
windowed, products = np.empty_like(full), 0
for i in range(T):
    lo, hi = max(0, i - omega), min(T, i + omega + 1)
    s = k[lo:hi] @ q[i]  # only the window's scores
    products += hi - lo
    windowed[i] = softmax(s) @ v[lo:hi]
assert np.allclose(full, windowed, atol=1e-12)
assert products == band_mask(T, omega).sum()
print(f"windowed computation: {products} inner products instead of {T * T}; outputs equal")

# %%
fig, ax = plt.subplots()
for name, cnt in counts.items():
    ax.loglog(ms, cnt, "o-", label=name)
ax.minorticks_off()
ax.set_xticks(ms, [str(x) for x in ms])
ax.set_xlabel("sequence length n = m - 1")
ax.set_ylabel("inner products per layer")
ax.legend()
plt.show()

# %% [markdown]
# **Figure 2.5.2.** Inner products needed by one attention layer (§5.3.3) against the length $n=m-1$,
# on log–log axes, for half-width $\omega=8$: full and causal attention grow as $n^2$ (slope 2; causal
# needs about half), the banded masks grow linearly, $\mathcal O(\omega n)$: slope 1 once $n$ is well
# above $\omega$. Their first segment is a little steeper (the band's count goes from 200 to 472 when $n$
# doubles from 16 to 32): the positions near the ends, which see fewer than $2\omega+1$ keys, are a
# larger share of a short sequence.
#
# ## State-space models (§5.3.4, Appendix C)
#
# A continuous-time SSM evolves a hidden state $v\in\mathbb R^s$ driven by an input $h(t)$, (C.1a), and
# reads out $u$ from $v$ and $h$, (C.1b); the linear choice is $\dot v=Av+Bh$, (C.2a), and $u=Cv+Dh$,
# (C.2b). (Remark C.1 discretises it in time to take the place of attention.) Variation of
# constants gives the exact state
#
# $$v(t)=e^{At}v_0+\int_0^t e^{A(t-t')}Bh(t')\,dt' .\qquad\text{(C.3a, corrected)}$$
#
# The order matters: the paper prints $e^{At}Be^{-At'}$, which is the same only when $A$ and $B$
# commute ([checked below](#checking-the-paper)). Sympy with $2\times2$ matrices that do not commute:
# the corrected formula satisfies the ODE.

# %%
t_, r_s = sp.symbols("t r", real=True)
A2 = sp.Matrix([[-1, 2], [0, -3]])
B2 = sp.Matrix([[1, 0], [1, 1]])
h_const = sp.Matrix([1, 2])  # a constant input keeps the symbolic integrals quick
v_corr = ((A2 * (t_ - r_s)).exp() * B2 * h_const).integrate((r_s, 0, t_))  # v0 = 0
print("A B - B A =", (A2 * B2 - B2 * A2).tolist())
residual_corr = sp.simplify(v_corr.diff(t_) - A2 * v_corr - B2 * h_const)
display(Math(r"\text{corrected (C.3a): } \dot v - Av - Bh = " + sp.latex(residual_corr.T)))
assert residual_corr == sp.zeros(2, 1)

# %% [markdown]
# **Discretisation (C.4).** Holding $h$ constant on each step of length $\Delta t$ ("zero-order
# hold") makes the corrected recurrence exact:
# $v_{i+1}=e^{A\Delta t}v_i+\big(\int_0^{\Delta t}e^{At'}dt'\big)Bh_i$ (`discretize_zoh`). The printed
# (C.4a) inherits the ordering problem of (C.3a) ([checked below](#checking-the-paper)). We test the zero-order
# hold against the exact solution (an accurate ODE solve) for a piecewise-constant input.

# %%
s_dim = d_in = 3
A = rng.normal(size=(s_dim, s_dim)) - 2.0 * np.eye(s_dim)
B = rng.normal(size=(s_dim, d_in))
dt, n_hold = 0.2, 15  # step length and number of steps
hs = rng.normal(size=(n_hold, d_in))  # h(t) = hs[i] on [t_i, t_{i+1})


def exact_piecewise(A, B, dt, hs, v0):
    """The state at t_i = i dt for the input hs[i] held on [t_i, t_{i+1}) (accurate ODE solve)."""
    def rhs(t, x):
        return A @ x + B @ hs[min(int(t / dt + 1e-9), len(hs) - 1)]

    t_end = dt * (len(hs) - 1)
    sol = scipy.integrate.solve_ivp(rhs, (0, t_end), v0, t_eval=dt * np.arange(len(hs)),
                                    rtol=1e-11, atol=1e-12, max_step=dt / 10)
    return sol.y.T


v0 = np.zeros(s_dim)
exact = exact_piecewise(A, B, dt, hs, v0)
zoh, _ = ssm_scan(*discretize_zoh(A, B, dt), np.eye(s_dim), np.zeros((s_dim, d_in)), hs, v0)
err_zoh = np.abs(zoh - exact).max()
print(f"non-commuting A, B: ZOH error < 1e-7: {err_zoh < 1e-7}")
assert err_zoh < 1e-7
hold_case = (A, B, dt, hs, v0, exact)  # kept for the check of the printed (C.4a) at the end

# %% [markdown]
# For a smooth input the hold itself costs $\mathcal O(\Delta t)$; forward Euler (the step
# $v_{i+1}=v_i+\Delta t\,(Av_i+Bh_i)$, i.e. $\bar A=I+\Delta t\,A$, $\bar B=\Delta t\,B$) is also first order.
# Exact reference: `ssm_exact_state` (the corrected (C.3a) by adaptive quadrature).

# %%
s_dim, d_in = 6, 2  # s > d_e, as Appendix C recommends
A = rng.normal(size=(s_dim, s_dim)) / np.sqrt(s_dim) - 1.5 * np.eye(s_dim)
B = rng.normal(size=(s_dim, d_in))
C, D = rng.normal(size=(d_in, s_dim)), rng.normal(size=(d_in, d_in))


def h_fn(t):
    """A smooth two-channel input."""
    return np.array([np.sin(3 * t), np.cos(t) ** 2])


T_end = 2.0
v_exact = ssm_exact_state(A, B, np.ones(s_dim), h_fn, np.array([T_end]))[0]
steps = np.array([10, 20, 40, 80, 160])
errors = {"zero-order hold": [], "forward Euler": []}
for n_steps in steps:
    dt = T_end / n_steps
    hs = np.array([h_fn(k * dt) for k in range(n_steps + 1)])
    for name, disc in [("zero-order hold", discretize_zoh), ("forward Euler", discretize_euler)]:
        v, _ = ssm_scan(*disc(A, B, dt), C, D, hs, np.ones(s_dim))
        errors[name].append(np.abs(v[-1] - v_exact).max())
for name, e in errors.items():
    slope = np.polyfit(np.log(T_end / steps), np.log(e), 1)[0]
    print(f"{name:16s}: error at dt = {T_end / steps[-1]:.4f} is {e[-1]:.2e}; "
          f"observed order {slope:.2f}")
    assert 0.9 < slope < 1.1  # Figure 2.5.3: the errors fall at first order

fig, ax = plt.subplots()
for name, e in errors.items():
    ax.loglog(T_end / steps, e, "o-", label=name)
ax.set_xticks(T_end / steps, [f"{d:g}" for d in T_end / steps])  # one label per step length tried
ax.xaxis.set_minor_formatter(NullFormatter())  # no labels between them
ax.set_xlabel("step length $\\Delta t$")
ax.set_ylabel("error of the state at $t=2$\n(its largest coordinate)")
ax.legend()
plt.show()

# %% [markdown]
# **Figure 2.5.3.** Error of the discretised state at time 2 against the exact solution (C.3a,
# corrected) for a smooth input — the largest absolute coordinate of their difference — against the
# step length $\Delta t$, on log–log axes: both discretisations (blue: zero-order hold,
# vermilion: forward Euler) fall along lines of slope 1 — first order in $\Delta t$.
#
# ## The SSM as a causal, linear-cost sequence map (5.9)
#
# With linear $\mathbf f,\mathbf g$ the recurrence (5.9) is $v_{i+1}=\bar Av_i+\bar Bh_i$,
# $u_i=Cv_i+Dh_i$ (the read-out (5.9b)): one pass over the sequence, $\mathcal O(m)$. Unrolled it is
# a causal convolution with kernel $\kappa_\rho=C\bar A^{\rho-1}\bar B$ (plus $Dh_i$ at lag 0 and the
# fading effect of $v_0$), the other way structured state-space models such as S4 evaluate it. (Our
# recurrence indexes the inputs from 0, so $u_i$ depends on $h_0,\dots,h_i$; the paper's indexing of
# (5.9a) is [checked below](#checking-the-paper).)

# %%
Ab, Bb = discretize_zoh(A, B, 0.1)
T = 256
hs = rng.normal(size=(T, d_in))
v0 = rng.normal(size=s_dim)
_, u_scan = ssm_scan(Ab, Bb, C, D, hs, v0)
u_conv = ssm_convolve(Ab, Bb, C, D, hs, v0)
assert np.allclose(u_scan, u_conv, atol=1e-10)
hs2 = hs.copy()
hs2[40] += 1.0
_, u_scan2 = ssm_scan(Ab, Bb, C, D, hs2, v0)
assert np.array_equal(u_scan[:40], u_scan2[:40])
kernel = ssm_kernel(Ab, Bb, C, T)
print(f"scan == convolution: True; causal: outputs before position 40 unchanged; "
      f"|kappa_rho| decays from {np.abs(kernel[1]).max():.3f} to {np.abs(kernel[-1]).max():.1e} "
      f"over {T} steps")
per_step = s_dim * s_dim + s_dim * d_in + d_in * s_dim + d_in * d_in
print(f"multiply-adds per position: {per_step}, so {T * per_step} for length {T} (linear in the length); "
      f"full attention needs {T * T} inner products of length c (quadratic in the length)")

# %% [markdown]
# ## Key takeaways
#
# - Order enters attention through the vectors (a positional encoding added to each embedding;
#   base 10000 gives wavelengths spanning almost four orders of magnitude) or through the score (RoPE: rotate
#   each pair of coordinates by an angle proportional to the position, so the score depends on the
#   offset only); a causal mask breaks the symmetry too, since each position sees a different
#   prefix ([2.4](04_attention_block_set_transformer.ipynb)'s last table).
# - A mask must remove the masked terms — a score of $-\infty$, weight exactly 0 — not multiply the
#   score by 0, which still gives the masked positions weight.
# - Full and causal attention cost a number of inner products quadratic in the length; a band of
#   half-width $\omega$ costs $\mathcal O(\omega m)$ and can be computed window by window.
# - A state-space model replaces attention by a recurrence: causal by construction and linear in the
#   length. Its zero-order-hold discretisation, built from $e^{A(t-t')}B$ in that order, is exact
#   for an input held constant over each step (for a smooth input it is first order in $\Delta t$).

# %% [markdown]
# ## Check your understanding
#
# 1. In the tiny example, what weight does the printed form (indicator times score) give to the
#    future token if token 1's own score is 0 as well?
#
#    ```{dropdown} Answer
#    Both scores are then 0, so the weights are $(\tfrac12,\tfrac12)$: the future gets half the
#    weight. Multiplying by 0 is not masking; only $-\infty$ (dropping the term) is.
#    ```
#
# 2. A causal band of window $\omega+1$ (a position sees itself and the $\omega$ before it) on a sequence of
#    $n$ positions: roughly how many inner products, and why is it linear in $n$?
#
#    ```{dropdown} Answer
#    Each position computes at most $\omega+1$ scores, so about $(\omega+1)n$ in all (exactly
#    $n(\omega+1)-\omega(\omega+1)/2$, the count asserted above: 4572 for $n=512$, $\omega=8$). The window does not
#    grow with $n$, so the total is linear in $n$.
#    ```
#
# 3. In the tiny state-space example, how does $v_3$ change if $h_1$ changes by 1? Does any $v_i$
#    depend on a later input?
#
#    ```{dropdown} Answer
#    $v_3=\gamma^2\beta h_1+\gamma\beta h_2+\beta h_3$, so it changes by $\gamma^2\beta=\tfrac14$. No: $v_i$ is built from
#    $h_1,\dots,h_i$ only, so the recurrence is causal without any mask.
#    ```

# %% tags=["hide-cell"]
# The numbers the answers state. Question 1: both scores 0 under the printed form.
q1_weights = softmax(np.array([0.0, 2.0]) * allowed)
print(f"Q1: weights {q1_weights}")
assert np.allclose(q1_weights, [0.5, 0.5])
# Question 2: the causal band of window 9 on 512 positions
print(f"Q2: causal band, n = {ms[-1]}, ω = 8: {band_mask(ms[-1], 8, causal=True).sum()} inner products")
assert band_mask(512, 8, causal=True).sum() == 512 * 9 - 8 * 9 // 2 == 4572
# Question 3: the change of v_3 when h_1 changes by 1 is gamma^2 beta
bumped_states, _ = ssm_scan(np.array([[gamma_tiny]]), np.array([[beta_tiny]]), np.eye(1), np.zeros((1, 1)),
                            inputs + np.array([[1.0], [0.0], [0.0], [0.0]]), np.zeros(1))
print(f"Q3: v_3 changes by {bumped_states[3, 0] - tiny_states[3, 0]} = γ^2 β = {gamma_tiny**2 * beta_tiny}")
assert bumped_states[3, 0] - tiny_states[3, 0] == gamma_tiny**2 * beta_tiny == 0.25

# %% [markdown]
# ## Checking the paper
#
# **Example 5.8, the wavelengths.** As printed, $\lambda_\nu=2^{2\nu/d_e}$ gives wavelengths between 6.42
# and 12.57 positions for $d_e=64$ (a factor 1.96), and the similarity of two encodings falls below
# 0.5 at offset 2 — the lesson's Figure 2.5.1 and the cells before it. The usual base 10000 spans a
# factor 7499. Recorded in `book/ERRATA.md`, row "§5.3.1, Example 5.8".
#
# **§5.3.2, the RoFormer inner product.** The paper sums over the $c$ *real* coordinates
# $q_a$, $k_a$ of the query and the key ($a=1,\dots,c$ counts coordinates, where the lesson's $\nu$
# counts the $c/2$ pairs),
# $\mathrm{Re}\sum_{a=1}^{c} q_a k_a e^{\mathrm i\,(i-j)\psi_a}=\sum_{a=1}^{c} q_a k_a\cos((i-j)\psi_a)$,
# which drops the sine cross-terms of a rotation. Sympy for one pair (recorded in `book/ERRATA.md`,
# row "§5.3.2"):

# %% tags=["hide-cell"]
printed_pair = (q1 * k1 + q2 * k2) * sp.cos((kk - ll) * phi)
rope_vs_printed = sp.simplify(sp.expand_trig(rope - printed_pair))
display(Math(r"\langle R_i q,R_j k\rangle-\text{printed form}=" + sp.latex(rope_vs_printed)))
assert rope_vs_printed != 0

# %% [markdown]
# **§5.3.3, the count of a causal layer.** The paper says causal attention needs $(m-1)(m-2)/2$
# inner products. That counts the pairs $j<i$; with $j\le i$ (a position sees itself, as in (5.2))
# the count is the $n(n+1)/2$ above, $n=m-1$. And the indicator must remove the masked terms, not
# zero their score: in the tiny example the future keeps weight 0.2689, and on a random sequence
# changing only the last token moves earlier outputs by 3.613 (row "§5.3.3, causal attention").
# The sparse rule that follows also swaps its indices: the formula weights the score
# $\langle Qh_i,Kh_j\rangle$ by entry $(j,i)$ of its adjacency matrix, the next sentence computes a
# term when entry $(i,j)$ is not 0. For a symmetric band the two agree; for a pattern that is not
# symmetric, such as the causal one, they are each other's transpose.

# %% tags=["hide-cell"]
printed_count = n * (n - 1) / 2
display(Math(r"\text{printed: }" + sp.latex(sp.factor(printed_count))
             + r",\qquad \text{difference from } j\le i: " + sp.latex(sp.factor(causal_count
                                                                                - printed_count))))
assert sp.simplify(causal_count - printed_count - n) == 0

# %% [markdown]
# **Appendix C, (C.3a) as printed.** The printed solution has $e^{At}Be^{-At'}$: $B$ is $s\times d_e$
# and $e^{-At'}$ is $s\times s$, so the product exists only when $s=d_e$, and even then it solves
# the ODE only when $A$ and $B$ commute. With the non-commuting $2\times2$ pair above:

# %% tags=["hide-cell"]
v_printed = ((A2 * t_).exp() * B2 * (-A2 * r_s).exp() * h_const).integrate((r_s, 0, t_))
residual_printed = sp.simplify(v_printed.diff(t_) - A2 * v_printed - B2 * h_const)
display(Math(r"\text{printed (C.3a): } \dot v - Av - Bh = " + sp.latex(residual_printed.T)))
assert residual_printed != sp.zeros(2, 1)

# %% [markdown]
# **Appendix C, (C.4a) as printed.** The printed recurrence,
# $v_{i+1}=e^{A\Delta t}v_i+e^{At_{i+1}}\big(\int_0^{\Delta t}Be^{-At'}dt'\big)e^{-At_i}h_i$, on the
# piecewise-constant test above (non-commuting $A$, $B$ with $s=d_e$), and on a commuting pair:

# %% tags=["hide-cell"]
def printed_c4(A, B, dt, hs, v0):
    """(C.4a) as printed (it needs s = d_e for the products to exist)."""
    v, out = v0, [v0]
    integral = scipy.integrate.quad_vec(lambda z: B @ scipy.linalg.expm(-A * z), 0.0, dt)[0]
    for k in range(len(hs) - 1):
        tk, tk1 = k * dt, (k + 1) * dt
        forcing = scipy.linalg.expm(A * tk1) @ integral @ scipy.linalg.expm(-A * tk) @ hs[k]
        v = scipy.linalg.expm(A * dt) @ v + forcing
        out.append(v)
    return np.array(out)


A_hold, B_hold, dt_hold, hs_hold, v0_hold, exact_hold = hold_case
err_printed = np.abs(printed_c4(A_hold, B_hold, dt_hold, hs_hold, v0_hold) - exact_hold).max()
A_comm = np.diag([-1.0, -2.0, -3.0])
B_comm = np.diag([1.0, 0.5, 2.0])  # diagonal, so it commutes with A_comm
exact_comm = exact_piecewise(A_comm, B_comm, dt_hold, hs_hold, v0_hold)
err_printed_comm = np.abs(printed_c4(A_comm, B_comm, dt_hold, hs_hold, v0_hold) - exact_comm).max()
print(f"non-commuting A, B: printed (C.4a) error {err_printed:.3f}")
print(f"commuting A, B    : printed (C.4a) error < 1e-7: {err_printed_comm < 1e-7}")
assert err_printed > 1e-2
assert err_printed_comm < 1e-7

# %% [markdown]
# **§5.3.4, the index of (5.9a).** As printed, (5.9a) runs $i=0,\dots,m-2$ with input $h_i$, so it
# reads an $h_0$ that the sequence $h_{1:m-1}$ does not have; our recurrence indexes the inputs
# from 0, and $u_i$ depends on $h_0,\dots,h_i$ (row "§5.3.4, Eq. (5.9a)"). (The paper's next sentence,
# "$v_{i+1}$ depends only on $h_{1:i}$", holds for the printed iteration once its first step is
# read without the missing $h_0$, $v_1=\mathbf f(v_0)$; with the inputs indexed from 0 it is
# $h_{0:i}$, and with (5.9a) reading $h_{i+1}$ it would be $h_{1:i+1}$.)

# %% [markdown]
# ## Reproducibility
#
# Everything on this page is exact, a round-off bound, or an accurate ODE solve with its tolerance
# asserted; random matrices and inputs come from the seeded generator `rng` (seed 0), nothing is
# trained. Library: `nextword.positions` (`sinusoidal_encoding`, `apply_rope`),
# `nextword.attention` (`causal_mask`, `band_mask`), `nextword.theory.formulation.ssm`. In the
# print below, `d` is the encoding width $d_e$ and `M` the number of positions encoded.

# %% tags=["hide-cell"]
print(f"encodings: d = {d}, M = {M}; SSM orders of accuracy from {len(steps)} step sizes")
