# %% [markdown]
# # 5.3 Attention as a vMF posterior, heads as SVFlow fields, MoE gating and a block as an Euler step
#
# **The question.** Page [5.2](02_svflow_properties.ipynb) built a flow that moves a state by the
# average of several pulls, weighted by beliefs about which component is responsible. Does an
# attention layer compute exactly that — attention weights as the beliefs, value vectors as the
# pulls — and is a whole transformer block then one step of the flow on the sphere?
#
# This is the bridge of Part 5 from probability to the architecture you know from Chapter 6. If it
# holds, each piece of a transformer gets a meaning: a key says "which bump on the sphere I stand
# for", a query's attention weights are Bayes' rule over those bumps, a value is the pull of its
# bump, and the residual addition with RMSNorm is a step of a flow. This page checks each line of
# that dictionary against the library's attention, and finds two places where the paper needs a
# correction: one formula (the head weighting of Eq. 21) and one statement about a loss (what minimises
# the load-balancing loss of Eq. 22).
#
# ```{admonition} Learning goals
# :class: tip
# After this page you can
# - compute attention weights by hand as the posterior over keys of von Mises–Fisher components
#   (Eq. 19), and a head's output as the posterior-weighted average of value "pulls" (Eq. 20);
# - explain why a stack of residual + RMSNorm blocks is a first-order Euler discretisation of a flow
#   on the sphere, and what "first order" means for the number of layers;
# - read mixture-of-experts gates the same way, and say what the load-balancing loss does and does
#   not enforce.
# ```
#
# **Builds on:** [5.1 Spherical geometry](01_spherical_geometry.ipynb) (the von Mises–Fisher
# distribution, its score $\kappa\mu$, residual + RMSNorm as a retraction) ·
# [5.2 SVFlow](02_svflow_properties.ipynb) (the velocity as a posterior-weighted average of scores) ·
# [6.4 Multi-head attention](../part1_chapter6/6_4_multi_head.ipynb) (heads, $W^Q,W^K,W^V,W^O$; this page's
# $W_q,W_k,W_v,W_o$ are one head's blocks of them, $W_o$ transposed).
# **Reading time:** about 40 minutes.
#
# ```{admonition} Symbols on this page
# :class: note
# | symbol | meaning | shape |
# |---|---|---|
# | $d$, $d_{\text{head}}$ | width of the states; width of one head | integers |
# | $x$ ($x_q$ in Eq. 19) | the query token's state, on the unit sphere | $(d,)$ |
# | $z$, $\mathcal Z$ | an earlier token, read as a latent component (an expert, in an MoE layer); $\mathcal Z$: all of them | index, set |
# | $x_z$ | the state of an earlier token $z$, on the unit sphere: what the head projects into a key, $W_k^\top x_z$, and a value, $W_v^\top x_z$ (one head's $k[j]$ and $v[j]$ of Chapter 6, which writes them as rows, $x_zW_k$ and $x_zW_v$) | $(d,)$ |
# | $o$, $o_z$ | value–output vector of token $z$, $o_z=W_o W_v^\top x_z$ | $(d,)$ |
# | $W$, $W_q,W_k,W_v,W_o$ | a head's query, key, value and output matrices, all four $d\times d_{\text{head}}$ as in the paper: $W_q,W_k,W_v$ are head $m$'s column blocks of Chapter 6's $W^Q,W^K,W^V$ (with the factor $1/\sqrt{d_{\text{head}}}$ of scaled dot-product attention folded into $W_q$), and $W_o$ is the *transpose* of head $m$'s row block of $W^O$; $W_{q,m}$ those of head $m$ | $(d,d_{\text{head}})$ |
# | $\kappa$, $\kappa_z$, $\mu_z$, $\kappa'_z$, $\mu'_z$ | a vMF concentration; those of key $z$'s bump, $\kappa_z\mu_z=W_q W_k^\top x_z$; primed, of the value–output vector of token $z$ | scalar, $(d,)$ |
# | $C_d(\kappa)$, $I_\nu$, $\nu$, $A_d(\kappa)$ | the vMF normaliser; the modified Bessel function of order $\nu$ in it (a bare $I$, as in $I-xx^\top$, is the identity matrix); the mean resultant length $I_{d/2}(\kappa)/I_{d/2-1}(\kappa)$ of [5.1](01_spherical_geometry.ipynb) | scalars |
# | $q$ | $q(z\mid x)$: the attention weights, read as a posterior over tokens; $q(m\mid x)$: a weight per head | $(\lvert\mathcal Z\rvert,)$ |
# | $f_{\text{Attn}}(x)$ | the output of attention at $x$ (heads summed, Eq. 4) | $(d,)$ |
# | $h$, $m$ | the number of heads; a head (its weight in Eq. 21 is written $q(m\mid x)$) | integer, index |
# | $L$, $\Delta s$, $\ell$ | number of weight-shared blocks; the step $1/L$ in the flow's time $s$; a block's index ($x^\ell$: a state after $\ell$ blocks) | integer, scalar, index |
# | $\dot x$ | the velocity of a state along the flow | $(d,)$ |
# | $X^L$, $X(1)$ | all $n$ token states (one per row) after $L$ blocks; the flow's states at time 1 | $(n, d)$ |
# | $g_z(x)$, $y_z(x)$ | the gate of expert $z$ (experts are the components $z$ of an MoE layer, $\lvert\mathcal Z\rvert$ of them); its output | scalar, $(d,)$ |
# | $f$, $f_z$, $P$, $P_z$ | share of inputs whose largest gate is $z$; mean gate of $z$ ($f$, $P$: all of them) | scalars |
# | $\mathcal J_{\text{bal}}$ | the load-balancing loss $\sum_zf_z P_z$ (Eq. 22) | scalar |
# | $r$, $\delta$ | share of inputs routed with near-tied gates $(\tfrac12+\delta,\tfrac12-\delta)$ | scalars |
# | $U$ | the uniform distribution | — |
# | $N$, $a$, $\psi$, $p_{\text{key}}$, $\xi$ | number of random keys; the score vector $W_k W_q^\top x$; the kernel; the density of the key inputs; a key input drawn from it | integer, $(d,)$, function, density, $(d,)$ |
# ```
#
# ```{admonition} In the paper's notation
# :class: seealso
# The paper writes $H$ for the number of heads and $h$ for a head (here $h$ and $m$, as in Chapter 6),
# $k_z$ and $v_z$ for the key and value inputs of token $z$ (here both $x_z$, the token's state: the book keeps
# $k[j]$ and $v[j]$ for the projected key and value, as in Chapter 6), $e_z$ for an expert's output (here
# $y_z$, since $e[i]$ is an embedding),
# $E$ for the number of experts (here $\lvert\mathcal Z\rvert$), and $x_q$ for the query state. It writes $t$
# for the time of the flow and gives the Euler step no letter (§4.4 lets the layer index act as time); here the
# time is $s$, as on every page of Part 5, since the book keeps $t$ for a position in a sequence, and the step
# is $\Delta s$.
# ```
#
# *Source: Liao, Transformer as an Euler Discretization of Score-based Variational Flow, §2.3
# (Eqs. 4–6), §4.2 (Eqs. 19–21), §4.3 (Eq. 22), §4.4, App. B.4 (kernel-smoothing limit, Eqs. 67–70).*

# %%
import matplotlib.pyplot as plt
import numpy as np
import sympy as sp
from IPython.display import Math, display

from nextword.attention import MultiHeadAttention, scaled_dot_product_attention, softmax
from nextword.booktools.display import produced
from nextword.booktools.plotting import use_book_style
from nextword.decoder import rms_norm
from nextword.perturbation import nudge
from nextword.theory.svflow import (
    categorical_kl, exp_map, head_output, kl_to_uniform, load_balancing_loss,
    multihead_as_expectation, spherical_euler_flow, tangent_projection, vmf_attention_log_posterior,
    vmf_attention_params, vmf_log_normalizer, vmf_mean_resultant_length,
)

use_book_style()
rng = np.random.default_rng(0)

# %% [markdown]
# ## A tiny example by hand
#
# One head in $d=2$. The query token's state is $x=(1,0)$ on the unit circle; three earlier tokens
# have states $x_1=(1,0)$, $x_2=(0,1)$, $x_3=(-1,0)$, and the head's matrices are chosen so that
# $W_q W_k^\top=2I$ (so the score of token $z$ is $2\,x_z^\top x$) and $W_o W_v^\top$ swaps the two
# coordinates, so the three tokens' value–output vectors $o_z=W_oW_v^\top x_z$ are $o_1=(0,1)$, $o_2=(1,0)$,
# $o_3=(0,-1)$.
#
# - **Scores → weights.** The scores are $2, 0, -2$; the softmax gives $e^2:1:e^{-2}$, i.e. weights
#   $0.867, 0.117, 0.016$.
# - **The same numbers as Bayes' rule.** Read key $z$ as a von Mises–Fisher bump
#   ([5.1](01_spherical_geometry.ipynb)) with mean
#   direction $\mu_z=x_z$ and concentration $\kappa_z=2$: its unnormalised density at $x$ is
#   $\exp(\kappa_z\mu_z^\top x)=e^2, 1, e^{-2}$. With equal prior probability for the three bumps,
#   the posterior "which bump produced $x$?" is the same $0.867, 0.117, 0.016$.
# - **Values → the pull.** The head's output is $0.867\,o_1+0.117\,o_2+0.016\,o_3=(0.117, 0.851)$: the
#   posterior-weighted average of the values — an SVFlow velocity, if each value is a pull (a
#   {term}`score function`: a vector, the gradient of a log-density; not an attention score, the number the
#   softmax reads — this page uses "score" in both senses, and the context says which).
# - **One block.** Residual addition and RMSNorm: $x+f_{\text{Attn}}(x)=(1.117, 0.851)$, length $1.404$, so the next
#   state is $(0.796, 0.606)$ — one Euler step of the flow, retracted to the circle.

# %%
x = np.array([1.0, 0.0])
keys = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
values = np.array([[0.0, 1.0], [1.0, 0.0], [0.0, -1.0]])
scores = 2 * keys @ x
weights = np.exp(scores) / np.exp(scores).sum()
bump_heights = np.exp(2 * keys @ x)  # exp(kappa_z mu_z . x), kappa_z = 2, mu_z = x_z
bayes_posterior = bump_heights / bump_heights.sum()  # uniform prior cancels
head = weights @ values
next_state = (x + head) / np.linalg.norm(x + head)
print(f"scores {scores}; softmax weights {np.round(weights, 3)}; "
      f"Bayes posterior {np.round(bayes_posterior, 3)}")
print(f"head output {np.round(head, 3)}; x + f_Attn(x) = {np.round(x + head, 3)}, "
      f"length {np.linalg.norm(x + head):.3f}; next state {np.round(next_state, 3)}")
assert np.allclose(weights, bayes_posterior, atol=1e-15)

# %% [markdown]
# The library computes the same head from the matrices ($W_q=W_k=\sqrt2\,I$), and `rms_norm` the same
# next state. It takes the value inputs apart from the key inputs (the paper's key–value pairs), so the
# cell hands it the $o_z$ as values, with $W_v=W_o=I$:

# %%
identity = np.eye(2)
library_weights, library_head = head_output(x, keys, values, np.sqrt(2) * identity,
                                            np.sqrt(2) * identity, identity, identity)
assert np.allclose(library_weights, weights, atol=1e-12)
assert np.allclose(library_head, head, atol=1e-12)
assert np.allclose(rms_norm(x + library_head, eps=0.0, unit=True), next_state, atol=1e-12)
print("head_output and rms_norm reproduce the hand computation (to 1e-12)")

# %% [markdown]
# ## Attention weights are a posterior over keys (Eq. 19)
#
# In general the score of token $z$ (its key input $x_z$) for the query state $x_q$ is $x_z^\top W_k W_q^\top x_q$ (Eq. 5; the
# paper, and Part 5, write vectors as columns — in Chapter 6's row form this is the familiar
# $(x_qW_q)(x_zW_k)^\top$, the query times the key). It is linear in $x_q$, so it can be written as $\kappa_z\mu_z^\top x_q$ with
# $\kappa_z\mu_z=W_q W_k^\top x_z$, the *natural parameter* of a vMF bump (the vector that multiplies $x$ in the
# exponent of its density): a concentration $\kappa_z$ (its length) times a mean direction $\mu_z$
# on the sphere. With a uniform prior over the keys, Bayes' rule over the *unnormalised* bumps
# $\exp(\kappa_z\mu_z^\top x)$ is a softmax over the same scores — the attention weights are a
# {term}`variational posterior` over keys. (The paper's Eq. 5 has no $1/\sqrt{d_{\text{head}}}$: we fold
# it into $W_q$ to compare with scaled dot-product attention.) Ten token states in $d=16$, one head of
# width $d_{\text{head}}=4$:

# %%
d, d_head, n_tokens = 16, 4, 10
W_q, W_k, W_v, W_o = (rng.standard_normal((d, d_head)) / np.sqrt(d) for _ in range(4))
states = rng.standard_normal((n_tokens, d))
states /= np.linalg.norm(states, axis=1, keepdims=True)  # token states on the sphere
x_q = states[-1]

kappa, mu = vmf_attention_params(W_q / np.sqrt(d_head), W_k, states)
posterior = np.exp(vmf_attention_log_posterior(x_q, kappa, mu))
_, attention_weights = scaled_dot_product_attention((x_q @ W_q)[None], states @ W_k, states @ W_v,
                                                    return_weights=True)
print("kappa_z:", np.array2string(kappa, precision=3))
largest_difference = np.max(np.abs(posterior - attention_weights[0]))
print(f"max |q_vMF - attention weights| < 1e-14: {largest_difference < 1e-14}")
assert np.allclose(posterior, attention_weights[0], atol=1e-14)

# %% [markdown]
# The word *unnormalised* matters: a proper vMF density carries the normaliser $C_d(\kappa_z)$, which
# would add a key-dependent bias $\log C_d(\kappa_z)$ to the scores unless all $\kappa_z$ are equal.
# The paper says "unnormalized"; how much the difference matters is measured in
# [Checking the paper](#checking-the-paper), below.
#
# ## Value vectors are pulls: a head's output is an SVFlow velocity (Eq. 20)
#
# The value–output vector of token $z$, $W_o W_v^\top x_z$, does not depend on the query state $x$ —
# exactly like the Euclidean score $\kappa'_z\mu'_z$ of a vMF bump ([5.1](01_spherical_geometry.ipynb)).
# Read that way, the head's
# output $\sum_z q(z\mid x)\,W_o W_v^\top x_z$ is the posterior-weighted average of scores: the SVFlow
# velocity of Eq. (9) for this head (Eq. 20). The library's `MultiHeadAttention` (Eq. 4, heads summed)
# equals the sum of the per-head velocities (row convention: head $m$ uses column block $m$ of
# Chapter 6's $W^Q,W^K,W^V$ as its $W_q,W_k,W_v$, and the transpose of row block $m$ of $W^O$ as its $W_o$):

# %%
n_heads = 4
mha = MultiHeadAttention(d, n_heads, rng=np.random.default_rng(2))
mha_output = mha(states, causal=False)  # (10, d): Eq. (4), all tokens as queries
blocks = [slice(m * d_head, (m + 1) * d_head) for m in range(n_heads)]  # head m's columns
heads = [(mha.W_q[:, b] / np.sqrt(d_head), mha.W_k[:, b], mha.W_v[:, b], mha.W_o[b, :].T)
         for b in blocks]  # (W_q, W_k, W_v, W_o) of each head
every_query_sees_all = states[None].repeat(n_tokens, 0)  # (10, 10, d): keys = values = all states
per_head = np.stack([head_output(states, every_query_sees_all, every_query_sees_all, *matrices)[1]
                     for matrices in heads])  # (heads, 10, d)
print(f"Eq. (20): sum of per-head SVFlow fields == MHA output: "
      f"{np.allclose(per_head.sum(0), mha_output, atol=1e-12)}")
assert np.allclose(per_head.sum(0), mha_output, atol=1e-12)

# %% [markdown]
# ## A transformer block is one Euler step on the sphere (§4.4)
#
# Put [5.1](01_spherical_geometry.ipynb) and the two sections above together. An attention-only
# block on unit-norm states,
# $x^{\ell+1}=\mathrm{RMSNorm}_{\text{unit}}\big(x^\ell+\Delta s\,f_{\text{Attn}}(x^\ell)\big)$ (RMSNorm divided
# by $\sqrt d$, so that its output lies on the unit sphere, as on 5.1), is a
# forward Euler step for the flow $\dot x=(I-xx^\top)f_{\text{Attn}}(x)$ on the sphere, followed by the
# relaxed retraction. If that reading is right, a stack of $L$ blocks with shared weights and step
# $\Delta s=1/L$ must approach the flow's position at time $s=1$ as $L$ grows, with an error that halves
# when $L$ doubles (first order) — whether each step uses the relaxed retraction (what the block
# computes) or the exact geodesic step $\exp_x\big(\Delta s\,(I-xx^\top)f_{\text{Attn}}(x)\big)$ (a *geodesic* is
# the sphere's straight line, a great circle: this step walks along one with 5.1's exponential map).
# The experiment below uses the field $3f_{\text{Attn}}$ in place of $f_{\text{Attn}}$ (the same
# attention layer, its output scaled by 3 so that the tokens move visibly by time $s=1$): the flow is
# $\dot x=(I-xx^\top)\,3f_{\text{Attn}}(x)$ and each block adds $\Delta s\cdot3f_{\text{Attn}}(x^\ell)$. A fixed
# factor changes the velocity field, not the argument.

# %%
n_flow_tokens = 8
start_states = rng.standard_normal((n_flow_tokens, d))
start_states /= np.linalg.norm(start_states, axis=1, keepdims=True)
mha_flow = MultiHeadAttention(d, n_heads, rng=np.random.default_rng(3))


def attention_field(token_states, s):
    """The velocity of every token: 3 f_Attn(states), the same weights at every time s."""
    return 3.0 * mha_flow(token_states, causal=False)


def block_stack(n_layers: int) -> np.ndarray:
    """n_layers residual + unit-RMSNorm blocks, step 1/n_layers (a weight-shared transformer)."""
    token_states = start_states.copy()
    for _ in range(n_layers):
        token_states = rms_norm(token_states + attention_field(token_states, 0.0) / n_layers,
                                eps=0.0, unit=True)
    return token_states


def geodesic_stack(n_layers: int) -> np.ndarray:
    """The same steps, each taken exactly along the sphere: exp map of the tangent part."""
    token_states = start_states.copy()
    for _ in range(n_layers):
        step = tangent_projection(token_states, attention_field(token_states, 0.0) / n_layers)
        token_states = exp_map(token_states, step)
    return token_states


# %%
flow_at_time_1 = spherical_euler_flow(start_states, attention_field, 8192, 1 / 8192)[-1]
layer_counts = np.array([4, 8, 16, 32, 64, 128])
error_block = np.array([np.linalg.norm(block_stack(L) - flow_at_time_1) for L in layer_counts])
error_geodesic = np.array([np.linalg.norm(geodesic_stack(L) - flow_at_time_1)
                           for L in layer_counts])
slope_block = np.polyfit(np.log(layer_counts), np.log(error_block), 1)[0]
slope_geodesic = np.polyfit(np.log(layer_counts), np.log(error_geodesic), 1)[0]
library_16 = spherical_euler_flow(start_states, attention_field, 16, 1 / 16)[-1]
same_as_library = np.allclose(block_stack(16), library_16, atol=1e-12)
print(f"block stack == spherical_euler_flow at L = 16: {same_as_library}")
print(f"convergence slope vs L: relaxed retraction {slope_block:.2f}, "
      f"geodesic Euler {slope_geodesic:.2f}")
error_ratio = error_block / error_geodesic
print(f"relaxed-retraction error / geodesic error, L = 4 ... 128: {np.round(error_ratio, 1)}")
assert np.all(error_ratio > 1)  # Figure 5.3.1: the relaxed retraction misses by more, at every L
assert abs(slope_block + 1) < 0.15  # Figure 5.3.1: both converge at first order (slope -1)
assert abs(slope_geodesic + 1) < 0.15

# %%
fig, ax = plt.subplots()
ax.loglog(layer_counts, error_block, "o-", label="residual + RMSNorm (relaxed retraction)")
ax.loglog(layer_counts, error_geodesic, "s-", label="geodesic Euler (exp map of tangent part)")
ax.loglog(layer_counts, error_block[0] * layer_counts[0] / layer_counts, "k--", lw=1,
          label=r"$\propto 1/L$")
ax.set_xlabel("number of weight-shared layers L (step 1/L)")
ax.set_ylabel(r"$\|X^L - X(1)\|$")
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# **Figure 5.3.1.** Distance between the output of $L$ weight-shared attention blocks (step $1/L$) and
# the time-1 position of the spherical SVFlow with field $3f_{\text{Attn}}$ (computed with 8192 steps of the block's rule), for the
# block's residual + RMSNorm update (blue circles) and for the
# exact geodesic Euler step (vermilion squares), on log–log axes; the dashed black line falls as $1/L$ (a
# reference, drawn through the first blue point). Both converge at first order (slopes near $-1$), so the transformer block is a
# consistent Euler discretisation of the spherical flow (§4.4). The relaxed retraction misses by more at
# every $L$, by a factor that still grows over this range (printed above, with the fitted slopes: the geodesic
# curve is a little steeper over this range); it changes the error's size, not its order. (A real transformer has different weights in every layer: a flow whose velocity
# changes with time.)
#
# ## Mixture-of-experts gates read the same way (Eq. 6, Eq. 22)
#
# A {term}`mixture-of-experts <mixture of experts>` (MoE) layer computes $\sum_z g_z(x)\,y_z(x)$ (Eq. 6): a gate network gives
# weights $g_z(x)\ge0$ that add up to 1, and expert network $z$ gives a vector $y_z(x)$. In the SVFlow
# reading the gates are the posterior $q(z\mid x)$ over experts and each expert approximates a pull
# $\nabla_x\log p(x\mid z)$; a plain feed-forward network is the case of one expert. MoE training can
# drift towards routing most inputs to a few experts, so a load-balancing loss is usually added (Eq. 22;
# [5.6](06_appendix_b_gradients.ipynb) measures how far a small MoE drifts without one: in most seeds, rarely
# to a dead expert),
# $\mathcal J_{\text{bal}}=\sum_z f_z P_z$, where $f_z$ is the fraction of inputs
# whose largest gate is expert $z$ and $P_z$ is the average gate of expert $z$. The paper reads it as a
# coarse version of the consistency term — the gap $\mathrm{KL}(q\,\|\,p)$ of [5.2](02_svflow_properties.ipynb), which
# [5.4](04_hybrid_training_2d.ipynb) adds to the training objective: it pushes the *population* of gates towards using
# every expert equally. With two experts and 4 inputs, by hand:

# %%
gates_by_hand = np.array([[0.9, 0.1], [0.8, 0.2], [0.6, 0.4], [0.3, 0.7]])  # (inputs, experts)
J_by_hand, f_by_hand, P_by_hand = load_balancing_loss(gates_by_hand)
print(f"f (share of inputs whose largest gate is z) = {f_by_hand}; P (mean gate) = {P_by_hand}")
print(f"J_bal = sum_z f_z P_z = 0.75 * 0.65 + 0.25 * 0.35 = {J_by_hand:.4f}")
assert abs(J_by_hand - (0.75 * 0.65 + 0.25 * 0.35)) < 1e-12

# %% [markdown]
# A router that uses both experts equally ($P=f=(\tfrac12,\tfrac12)$) gives $\tfrac12$, a router that sends everything to one expert
# gives 1. Whether uniform use is really the *minimum*, as the paper states, is
# [checked below](#checking-the-paper) — it is not.
#
# ## Key takeaways
#
# - Attention weights are Bayes' rule over keys: each token state $x_z$ stands for an unnormalised vMF bump
#   with natural parameter $W_q W_k^\top x_z$, and the softmax is the posterior under a uniform prior.
# - A value–output vector does not depend on the query, like the vMF score $\kappa\mu$; the head's
#   output is the posterior-weighted average of these pulls — an SVFlow velocity (Eq. 20).
# - Residual + RMSNorm blocks with step $1/L$ converge to the flow on the sphere at first order (shown
#   here for weight-shared attention-only blocks). A real transformer, whose layers have their own
#   weights and fold the step into them, is then *read* as a time-dependent Euler discretisation of a
#   spherical SVFlow — the paper's reading, not something a convergence test on one model can prove.
# - Two of the paper's statements need fixing: Eq. (21)'s uniform head weights give $f_{\text{Attn}}/h$,
#   and the load-balancing loss (22), a correct definition, is not minimised by a uniform expert marginal,
#   as the paper says it is ([checked below](#checking-the-paper)).
#
# ## Check your understanding
#
# 1. In the tiny example, double the concentration ($W_q W_k^\top=4I$). What happens to the weights,
#    and what does that mean for the vMF bumps?
#
#    ```{dropdown} Answer
#    The scores become $4, 0, -4$ and the weights are in the ratio $e^4:1:e^{-4}$, i.e.
#    $0.982, 0.018, 0.0003$ — nearly all of the weight on key 1: the bumps are narrower (larger $\kappa$), so the
#    posterior is more certain that the bump centred on $x$'s own direction produced it. Sharper attention
#    is higher concentration.
#    ```
#
# 2. Why must the vMF components of Eq. (19) be *unnormalised* for the posterior to equal the
#    attention weights exactly?
#
#    ```{dropdown} Answer
#    A normalised vMF density carries the factor $C_d(\kappa_z)$, which depends on the key through
#    $\kappa_z=\lVert W_q W_k^\top x_z\rVert$. In the posterior it adds $\log C_d(\kappa_z)$ to key $z$'s
#    score — a bias attention does not have. Only if all keys had the same $\kappa$ would it cancel.
#    ```
#
# 3. A stack of $L=32$ weight-shared blocks misses the flow's time-1 position by some distance. About
#    how far off would $L=64$ be, and why?
#
#    ```{dropdown} Answer
#    About half as far: forward Euler is first-order, so the error is proportional to the step
#    $1/L$ (Figure 5.3.1, slope $-1$; measured, the ratio of the two distances is 0.49). The relaxed
#    retraction changes the constant, not the order.
#    ```

# %% tags=["hide-cell"]
# the numbers of the answers above
sharper = np.exp(4 * keys @ x) / np.exp(4 * keys @ x).sum()
print(f"1. scores {4 * keys @ x}: weights {np.round(sharper, 4)} (kappa = 2: {np.round(weights, 3)})")
assert sharper[0] > 0.98 and sharper[0] > weights[0]
ratio_64_32 = error_block[layer_counts == 64][0] / error_block[layer_counts == 32][0]
print(f"3. distance at L = 64 / distance at L = 32 = {ratio_64_32:.2f}")
assert abs(ratio_64_32 - 0.5) < 0.05

# %% [markdown]
# ## Checking the paper
#
# ### Eq. (19) needs the components unnormalised
#
# A proper vMF mixture has $q(z\mid x)\propto C_d(\kappa_z)\exp(\kappa_z\mu_z^\top x)$. How much the factor
# $C_d(\kappa_z)$ matters depends on how fast $\log C_d$ changes with $\kappa$: its derivative is
# $-A_d(\kappa)=-I_{d/2}(\kappa)/I_{d/2-1}(\kappa)$, minus the mean resultant length of
# [5.1](01_spherical_geometry.ipynb) (differentiate $\log C_d$ and use $I_\nu'=I_{\nu+1}+\tfrac\nu\kappa I_\nu$).
# For $\kappa\ll d$, $A_d(\kappa)\approx\kappa/d$ is small: the bias $\log C_d(\kappa_z)$ changes by only about
# $\kappa/d$ nats per unit of $\kappa_z$. Whether that is small depends on the scores the
# bias is added to, not on $\kappa/d$ alone: in the table below it barely matters at $\kappa_0=10$, but at
# $d=896$ and $\kappa_0=100$, with $\kappa$ still about a ninth of $d$, it already moves the posterior. From
# $\kappa=d$ on, $A_d(\kappa)$ exceeds $\tfrac12$ and tends to 1, so $\log C_d(\kappa)$ falls by up to one nat
# per unit of $\kappa$ (for $\kappa$ far above $d^2/4$ it approaches $\tfrac{d-1}{2}\log\tfrac{\kappa}{2\pi}-\kappa$,
# the large-$\kappa$ form checked on 5.1; the cell below checks the derivative). Below, 10
# components with a 10% spread of $\kappa$ around $\kappa_0$ (the paper's Fig. 4 reports $\kappa\sim10^2$,
# $10^3$ and $10^5$ for its three models: the concentrations $\kappa'_z$ of the value–output components
# $p(x\mid z)$, whose normalised posterior [5.5](05_prefix_shuffling.ipynb) uses, not of the key bumps
# $\kappa_z$; the computation is the same for either), and the KL divergence between the two posteriors:

# %% tags=["hide-cell"]
kappa_centres = np.array([10.0, 1e2, 1e3, 1e4, 1e5])
widths = (16, 64, 896)
print(f"{'kappa_0':>8} | " + " | ".join(f"KL d={width:<4}" for width in widths))
table, top_key, spread_ratio = [], {}, {}
for kappa_centre in kappa_centres:
    row = []
    for width in widths:
        draw = np.random.default_rng(1)
        directions = draw.standard_normal((n_tokens, width))
        directions /= np.linalg.norm(directions, axis=1, keepdims=True)
        point = draw.standard_normal(width)
        point /= np.linalg.norm(point)
        concentrations = kappa_centre * np.exp(0.1 * draw.standard_normal(n_tokens))
        log_unnormalised = vmf_attention_log_posterior(point, concentrations, directions)
        log_normalised = vmf_attention_log_posterior(point, concentrations, directions, normalised=True)
        row.append(float(categorical_kl(log_unnormalised, log_normalised)))
        # spread over the keys of the normaliser bias log C_d(kappa_z) (the difference of the two log-posteriors,
        # up to a constant) against the spread of the scores kappa_z mu_z . x (the unnormalised log-posterior)
        spread_ratio[kappa_centre, width] = float(np.std(log_normalised - log_unnormalised)
                                                  / np.std(log_unnormalised))
        # which key each posterior favours, and the smaller of the two largest weights
        top_key[kappa_centre, width] = (int(np.argmax(log_unnormalised)) == int(np.argmax(log_normalised)),
                                        float(min(np.exp(log_unnormalised.max()), np.exp(log_normalised.max()))))
    table.append(row)
    print(f"{kappa_centre:8.0f} | " + " | ".join(f"{value:9.4f}" for value in row))
table = np.array(table)
print("spread of the normaliser bias / spread of the scores, over the 10 keys:")
for width in (64, 896):
    print(f"  d = {width:3d}: " + ", ".join(f"{spread_ratio[k, width]:.2f} (kappa_0 = {k:.0e})"
                                          for k in kappa_centres if k >= 100))

# %% tags=["hide-cell"]
equal_concentrations = np.full(n_tokens, 50.0)
gap_equal = float(categorical_kl(
    vmf_attention_log_posterior(point, equal_concentrations, directions),
    vmf_attention_log_posterior(point, equal_concentrations, directions, normalised=True)))
print(f"equal kappa (d = 896): KL < 1e-12: {gap_equal < 1e-12}")
large_16 = [top_key[k, 16] for k in kappa_centres if k >= 100]
print(f"d = 16, kappa_0 >= 100: both posteriors favour the same key, with weight above 0.99: "
      f"{all(same and weight > 0.99 for same, weight in large_16)}; "
      f"d = 64, kappa_0 = 100: same key: {top_key[100.0, 64][0]}")
assert all(same and weight > 0.99 for same, weight in large_16)
assert not top_key[100.0, 64][0]
assert gap_equal < 1e-12
assert table[0, 2] < 1e-3
assert table[2, 2] > 10 * table[0, 2]
# the paper's concentrations (kappa_0 >= 100): the bias is of the same order as the scores
assert all(0.2 < spread_ratio[k, width] < 5 for k in kappa_centres if k >= 100 for width in (64, 896))
# d log C_d / d kappa = -A_d(kappa) (central differences), A_d(kappa) ~ kappa / d for kappa << d, A_d(d) > 1/2
for width in widths:
    for kappa_value in (1.0, 10.0, 100.0, 1e3, 1e5):
        h = 1e-4 * kappa_value
        slope = (vmf_log_normalizer(kappa_value + h, width) - vmf_log_normalizer(kappa_value - h, width)) / (2 * h)
        assert abs(slope + vmf_mean_resultant_length(kappa_value, width)) < 1e-6
    assert abs(vmf_mean_resultant_length(1.0, width) * width - 1) < 0.1
    assert vmf_mean_resultant_length(float(width), width) > 0.5
print("d log C_d / d kappa = -A_d(kappa) (central differences, d = 16, 64, 896); A_d(d) = "
      + ", ".join(f"{float(vmf_mean_resultant_length(float(w), w)):.2f}" for w in widths))

# %% [markdown]
# With equal concentrations the two coincide, and at $\kappa_0=10$ they nearly do (KL below 0.05), but not
# at every $\kappa\ll d$: in $d=896$ the KL is already 0.68 at $\kappa_0=100$. At the
# concentrations the paper reports for its deeper layers the normaliser bias is of the same order as
# the scores (in $d=64$ and $d=896$, from $\kappa_0=100$ on, its spread over the keys is 0.35 to 3.02 times
# theirs, printed above). (The zeros of the $d=16$ column from $\kappa_0=100$ on are of another kind: in 16
# dimensions these scores spread so widely that both posteriors put nearly all their weight on the same
# key, bias or not; in $d=64$ at $\kappa_0=100$, the one case of that column checked, the bias moves the largest
# weight to another key — printed above.) Keep this in mind for the prefix-shuffling metrics of
# [5.5](05_prefix_shuffling.ipynb): there $p(z\mid x)$ *is* a normalised vMF posterior and $q$ is not,
# so $\mathrm{KL}(q\,\|\,p)$ contains the normaliser bias as well as any "misalignment".
#
# ### Eq. (21): the head weighting is off by the number of heads

# %% tags=["hide-cell"]
expectation = multihead_as_expectation(states, every_query_sees_all, every_query_sees_all,
                                       heads)  # uniform head weights q(m|x) = 1/h
ratio = np.linalg.norm(mha_output) / np.linalg.norm(expectation)
print(f"Eq. (21) with q(m|x) = 1/h: ||f_Attn|| / ||E_q(m) q(z|m)[score]|| = {ratio:.6f}  "
      f"(h = {n_heads} heads)")
assert np.allclose(expectation * n_heads, mha_output, atol=1e-12)

# %% [markdown]
# Eq. (4) **sums** the heads; the expectation of Eq. (21) with the "standard" uniform weighting
# $q(m\mid x)=1/h$ **averages** them, so it equals $f_{\text{Attn}}/h$. For Eq. (21) to reproduce Eq. (4)
# either the conditional scores must be $\nabla_x\log p(x\mid z,m)=h\,W_{o,m}W_{v,m}^\top x_z$ (vMF
# concentrations scaled by $h$), or the head "weights" must be 1 rather than a distribution. A factor,
# but it matters when the metrics of §6 read $\kappa'$ off the value–output vectors. Recorded in
# [the errata](../ERRATA.md) (row "SVFlow — Liao, §4.2, Eq. (21)").
#
# ### The kernel-smoothing limit (App. B.4, Eqs. 67–70)
#
# With keys drawn independently from $p_{\text{key}}=\mathcal N(0,I_d)$ and kernel
# $\psi(x,\xi)=\exp(a^\top\xi)$, $a=W_k W_q^\top x$ (column form; $\xi$ a key input drawn from $p_{\text{key}}$), the continuous posterior (70) is
# $q(\xi\mid x)\propto e^{a^\top\xi}\mathcal N(\xi;0,I)=\mathcal N(\xi;a,I)$, so the smoothed mean of the keys
# is exactly $a$. Draw $N$ key inputs $\xi_1,\dots,\xi_N$ from $p_{\text{key}}$ (not unit vectors: here
# they stand in for the token states $x_z$); the attention-weighted mean $\sum_z q(z\mid x)\,\xi_z$, with
# $q(z\mid x)\propto\exp(a^\top\xi_z)$, should converge to $a$ as $N$ grows.

# %% tags=["hide-cell"]
W_q_small, W_k_small = W_q / 2, W_k / 2
a_column = W_k_small @ (W_q_small.T @ x_q)  # xi . a is the score of a key input xi
key_counts = np.array([10, 100, 1000, 10_000, 100_000])
mean_errors = []
for n_keys in key_counts:
    errors = []
    for repeat in range(8):
        key_generator = np.random.default_rng(100 * repeat + int(np.log10(n_keys)))
        random_keys = key_generator.standard_normal((n_keys, d))
        key_weights = softmax(random_keys @ a_column)
        errors.append(np.linalg.norm(key_weights @ random_keys - a_column))
    mean_errors.append(np.mean(errors))
mean_errors = np.array(mean_errors)
slope_keys = np.polyfit(np.log(key_counts), np.log(mean_errors), 1)[0]
for n_keys, error in zip(key_counts, mean_errors):
    print(f"N = {n_keys:6d}: mean ||sum_z q(z|x) xi_z - a|| = {produced(error, '.4f')}")
print(f"fitted slope = {produced(slope_keys, '.2f')} (law of large numbers: -1/2)")
assert mean_errors[-1] < 0.05
assert abs(slope_keys + 0.5) < 0.1

# %% [markdown]
# The error falls like $N^{-1/2}$: softmax attention over many keys is a self-normalised Monte-Carlo
# estimate of the kernel-smoothed posterior expectation, as App. B.4 states.
#
# ### Eq. (22) is not minimised by a uniform expert marginal
#
# The paper: "minimizing $\mathcal J_{\text{bal}}$ matches the marginal expert distribution to a
# uniform prior". With $\lvert\mathcal Z\rvert$ experts a uniform router gives $\mathcal J_{\text{bal}}=1/\lvert\mathcal Z\rvert$, and a collapsed one gives 1.
# But $1/\lvert\mathcal Z\rvert$ is not the minimum. With two experts, route a share $r$ of the inputs with gates
# $(\tfrac12+\delta,\tfrac12-\delta)$ (largest gate: expert 1) and the rest with gates $(0,1)$; sympy
# writes $\mathcal J_{\text{bal}}$ and minimises it over $r$ as $\delta\to0$:

# %% tags=["hide-cell"]
share, delta = sp.symbols("r delta", nonnegative=True)
f_1, P_1 = share, share * (sp.Rational(1, 2) + delta)
J_bal = sp.expand(f_1 * P_1 + (1 - f_1) * (1 - P_1))
J_tied = J_bal.subs(delta, 0)
best_share = sp.solve(sp.diff(J_tied, share), share)[0]
display(Math(r"\mathcal J_{\mathrm{bal}}(r,\delta)=" + sp.latex(J_bal)))
display(Math(r"\delta\to0:\ \mathcal J_{\mathrm{bal}}(r)=" + sp.latex(J_tied)
             + r",\quad r^*=" + sp.latex(best_share)
             + r",\quad \mathcal J_{\mathrm{bal}}(r^*)=" + sp.latex(J_tied.subs(share, best_share))
             + r",\quad P_1(r^*)=" + sp.latex(P_1.subs({share: best_share, delta: 0}))))

# %% tags=["hide-cell"]
n_inputs = 400
gates = np.array([[0.5 + 1e-9, 0.5 - 1e-9]] * int(0.75 * n_inputs)
                 + [[0.0, 1.0]] * int(0.25 * n_inputs))  # (400, 2)
J_toy, f_toy, P_toy = load_balancing_loss(gates)
J_uniform, _, P_uniform = load_balancing_loss(np.full((n_inputs, 2), 0.5))
print(f"toy router   : J_bal = {J_toy:.4f}, f = {np.round(f_toy, 4)}, P = {np.round(P_toy, 4)}, "
      f"KL(P||U) = {float(kl_to_uniform(np.log(P_toy))):.4f}")
print(f"uniform gates: J_bal = {J_uniform:.4f}, P = {np.round(P_uniform, 4)}")
assert J_toy < J_uniform - 0.06
assert abs(P_toy[0] - 0.375) < 1e-6

# %% [markdown]
# So the global minimiser of Eq. (22) over routers does *not* have a uniform marginal:
# $\mathcal J_{\text{bal}}$ drops to $7/16<1/2$ at $P=(3/8,5/8)$. The loss pushes the *product* of two
# different marginals — the hard-assignment fractions $f$ and the soft probabilities $P$ — down, and
# near-tied gates let them disagree. In practice (Switch Transformer) $f$ is not differentiated and
# the loss is used as a penalty next to the task loss, where it does tend to spread the load; the
# clean statement is "$\mathcal J_{\text{bal}}=1/\lvert\mathcal Z\rvert$ when $f$ or $P$ is uniform", not "minimising it makes
# the marginal uniform". §5 (Related Work) repeats the claim, attributed to its reference [27]. Recorded
# in [the errata](../ERRATA.md) (row "SVFlow — Liao, §4.3, after Eq. (22); §5 (Related Work, on [27])").
#
# Below: a toy linear router on 2-D inputs, trained by gradient descent on $\mathcal J_{\text{bal}}$ with
# $f$ held fixed per step (the practical recipe), tracked with $\mathrm{KL}(P\,\|\,U)$ as the
# variational reading suggests. Because $f$ counts arg-max routings, it jumps whenever one input
# crosses a decision boundary, so two runs that differ only by round-off (another CPU, another
# summation order) part ways after a few hundred steps: single trajectories are not reproducible,
# only what holds for every run. We therefore train five routers (five draws of the data, step 2,
# 3000 steps — a step small enough that the curves are resolved) and state only what all five agree
# on, with margins.

# %% tags=["hide-cell"]
n_experts, n_points, n_steps, learning_rate = 4, 2000, 3000, 2.0
W_start = np.array([[3.0, 0.0, -1.0, 0.0],
                    [0.0, 1.0, 0.0, -1.0]])  # starts almost collapsed on expert 0


def train_router(points: np.ndarray) -> np.ndarray:
    """Gradient descent on J_bal (f fixed per step).

    Returns one row (J_bal, KL(P||U), mean KL(q(.|x)||U)) per step."""
    W_router, history = nudge(W_start, "W_router"), []  # nudge: no-op unless NEXTWORD_PERTURB
    for _ in range(n_steps + 1):
        router_gates = softmax(points @ W_router)  # (n, |Z|): the gates q(z|x)
        J_step, f_step, P_step = load_balancing_loss(router_gates)
        history.append((J_step, float(kl_to_uniform(np.log(P_step))),
                        float(np.mean(kl_to_uniform(np.log(router_gates))))))
        # dJ/dlogits with f fixed: d/dl_j sum_z f_z G_z = G_j (f_j - sum_z f_z G_z), input mean
        logit_grad = router_gates * (f_step[None, :] - (router_gates @ f_step)[:, None]) / n_points
        W_router = W_router - learning_rate * points.T @ logit_grad
    return np.array(history)


# %% tags=["hide-cell"]
seeds = range(5)
histories = np.stack([train_router(np.random.default_rng(s).standard_normal((n_points, 2))
                                   + np.array([2.0, 0.0]))
                      for s in seeds])  # (seeds, steps + 1, 3), off-centre data
start, end = histories[:, 0], histories[:, -1]  # (seeds, 3)
n_runs = len(seeds)
print(f"{n_runs} data draws, {n_steps} steps of size {learning_rate}")
print(f"step 0 (no training), mean over the {n_runs} draws: J_bal = {start[:, 0].mean():.2f}, "
      f"KL(P||U) = {start[:, 1].mean():.2f}, mean KL(q(.|x)||U) = {start[:, 2].mean():.2f}")
print(f"step {n_steps}: J_bal fell below 0.35 in {int(np.sum(end[:, 0] < 0.35))}/{n_runs} runs; "
      f"KL(P||U) < 0.06 in {int(np.sum(end[:, 1] < 0.06))}/{n_runs}")
softened = int(np.sum((end[:, 2] > 0.15) & (end[:, 2] < 0.35)))
print(f"step {n_steps}: mean KL(q(.|x)||U) between 0.15 and 0.35 in {softened}/{n_runs}, "
      f"and at least 3x KL(P||U) in {int(np.sum(end[:, 2] > 3 * end[:, 1]))}/{n_runs}")
assert np.all(start[:, 1] > 0.9)
assert np.all(start[:, 2] > 1.1)
assert np.all(end[:, 0] < 0.35)
assert np.all(end[:, 1] < 0.06)  # Figure 5.3.2: KL(P||U) falls below 0.06, near uniform
assert np.all((end[:, 2] > 0.15) & (end[:, 2] < 0.35))
assert np.all(end[:, 2] > 3 * end[:, 1])

# %% tags=["hide-cell"]
fig, ax = plt.subplots()
for i, history in enumerate(histories):
    ax.plot(history[:, 0], color="C0", lw=1, alpha=0.7,
            label=r"$\mathcal{J}_{\mathrm{bal}}$ (Eq. 22)" if i == 0 else None)
    ax.plot(history[:, 1], color="C1", lw=1, alpha=0.7,
            label=r"KL$(P\,\|\,U)$ — marginal" if i == 0 else None)
    ax.plot(history[:, 2], color="C2", lw=1, alpha=0.7,
            label=r"mean KL$(q(\cdot|x)\,\|\,U)$ — per input" if i == 0 else None)
ax.axhline(1 / n_experts, color="grey", ls=":", lw=1)
ax.set_xlabel("gradient step (f held fixed per step)")
ax.set_ylabel(r"$\mathcal{J}_{\mathrm{bal}}$ (a number); KL (nats)")
ax.set_title(f"toy router trained on the load-balancing loss alone ({n_runs} data draws)")
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# **Figure 5.3.2.** A 4-expert linear router trained on $\mathcal J_{\text{bal}}$ alone (with $f$ held
# fixed per step, as in practice), five data draws, one thin line each: $\mathcal J_{\text{bal}}$ (blue),
# KL$(P\|U)$ (vermilion) and the mean per-input KL$(q(\cdot\mid x)\|U)$ (green). The lines jitter from step to
# step because $f$ jumps whenever an input changes its largest gate. In every run the marginal $P$ becomes nearly
# uniform (KL$(P\|U)$ falls below the bound printed above), while the per-input posteriors soften but
# stay further from uniform: their mean KL to uniform stays several times the marginal's (the counts
# above). The loss constrains the population marginal much more than each $q(\cdot\mid x)$ — the
# "coarse-grained" reading of §4.3 — even though its global minimiser is not the uniform marginal
# (cell above). The dotted line is $1/\lvert\mathcal Z\rvert$, the value of $\mathcal J_{\text{bal}}$ when $f$ or $P$
# is uniform.

# %% [markdown]
# ## Reproducibility
#
# Random weights, states and keys are seeded (generator seeds 0–3, 100·repeat + log10 N for the key
# draws, 0–4 for the router's data); the router trainings start from `nudge(W_start, "W_router")`, so
# the perturbed notebook pass reaches them. No saved run. Library: `nextword.theory.svflow`
# (`vmf_attention_params`, `vmf_attention_log_posterior`, `head_output`, `multihead_as_expectation`,
# `load_balancing_loss`, `spherical_euler_flow`), `nextword.attention`, `nextword.decoder.rms_norm`.

# %% tags=["hide-cell", "nbval-ignore-output"]
# nbval-ignore-output: package versions
print(f"numpy {np.__version__}, sympy {sp.__version__}")
