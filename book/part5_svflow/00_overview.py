# %% [markdown]
# # Part 5 — The transformer as an Euler discretisation of score-based variational flow: overview
#
# **The question.** Can a whole transformer be read as one continuous process — a token's state
# flowing, layer by layer, uphill on a probability landscape — so that attention, the feed-forward
# network, the residual addition and the normalisation each get a precise role? Liao's paper says
# yes, and names the process a {term}`score-based variational flow <SVFlow>` (SVFlow). If the reading holds, it
# explains design choices that are otherwise folklore (why attention trains without the balancing
# losses that mixture-of-experts layers need) and gives probability-based measurements of what a
# trained model's layers do. This part rebuilds the reading piece by piece and checks each piece.
#
# ```{admonition} Learning goals
# :class: tip
# After this part you can
# - explain how one transformer layer is one forward Euler step of a flow on a sphere, and which
#   part of the layer plays which role (velocity, step, retraction);
# - compute, on a small Gaussian example, an SVFlow's velocity, its evidence lower bound, how far the
#   bound lies below the log-density, and how far the velocity is from the bound's gradient; and read
#   softmax attention as a posterior over keys;
# - say which of the paper's statements survived an executable check in this book and which did
#   not, with the evidence for each.
# ```
#
# **Builds on:** [6.2 The attention mechanism](../part1_chapter6/6_2_attention_mechanism.ipynb)
# (queries, keys, values, softmax weights) · [6.6 Context representation](../part1_chapter6/6_6_context_representation.ipynb)
# (the decoder block: residual additions and normalisation) · gradients, a probability density, the
# Kullback–Leibler divergence. **Reading time:** about 8 minutes.
#
# ```{admonition} Symbols on this page
# :class: note
# | symbol | meaning | shape |
# |---|---|---|
# | $x$ | a token's state (on the unit sphere, in the transformer reading) | $(d,)$ |
# | $z$ | a hidden component: a key, or an expert | index |
# | $q(z\mid x)$, $p(z\mid x)$ | the flow's beliefs about $z$, and the true posterior | distributions over $z$ |
# | $\beta$ | weight of the consistency term in training | scalar $\ge0$ |
# | $\mu$ | mean direction of a von Mises–Fisher component | $(d,)$, unit |
# | $u(x)$, $\Delta s$ | a flow's velocity and an Euler step's size | $(d,)$, scalar |
# | $s$, $x_s$ | time along the flow, and the state at time $s$ | scalar, $(d,)$ |
# | $\gamma_{\ell',\ell}$ | App. B's gradient of layer $\ell'$'s divergence with respect to the state of layer $\ell$ | $(d,)$ |
# ```
#
# ```{admonition} In the paper's notation
# :class: seealso
# The paper writes $t$ for the time of the flow and $v$ (or $v_t$) for its velocity; here they are $s$ and
# $u$ ($u_s$), because the book keeps $t$ for a position in a sequence and $v[j]$ for a value vector
# (Chapter 6, [Appendix A](../partA_appendix/A_notation_and_environment.ipynb)). It writes $\gamma_{k,\ell}$
# with $k$ a later layer; here $\gamma_{\ell',\ell}$, since $k[j]$ is a key.
# ```
#
# *Source: Liao, Transformer as an Euler Discretization of Score-based Variational Flow
# (arXiv 2604.23740), §2–4, §6 and Appendices A–C.*

# %%
import matplotlib.pyplot as plt
import numpy as np

from nextword.booktools.plotting import use_book_style
from nextword.booktools.schematics.sphere import draw_layers_as_flow

use_book_style()

# %% [markdown]
# ## What the paper claims, in plain words
#
# - **A flow that averages pulls.** An SVFlow moves a state $x$ with a velocity that is a weighted
#   average of "pulls", one per hidden component $z$: each pull points to where component $z$ makes
#   $x$ more likely (a {term}`score function`), and the weights say how much each component is
#   believed responsible for $x$ (a posterior). With the right weights (the true posterior) the velocity
#   is the gradient of the log-density of $x$, so the flow climbs it as steeply as possible (the flow is
#   Eq. 9 of §3.1; the steepest ascent is Corollary 3.4).
# - **A bound that measures the weights.** The log-density splits into an {term}`evidence lower bound` (ELBO)
#   plus a divergence that is zero when the weights are exactly right; the velocity differs from the
#   ELBO's gradient by an error term of the same origin (§3.2).
# - **Training balances two goals.** The usual cross-entropy loss asks the flow to end where the
#   right answer is easy to read off; an added term (weight $\beta$) asks the weights to be right.
#   Trained on the second term alone, the flow collapses everything onto one point; a large $\beta$
#   overwhelms the first (§3.3, Fig. 1).
# - **A transformer is such a flow, discretised.** {term}`RMSNorm` keeps states on a sphere; attention
#   weights are the posterior over keys of {term}`von Mises–Fisher <von Mises–Fisher distribution>`
#   components (bell-shaped bumps on the sphere, each around its own mean direction $\mu$; [5.1](01_spherical_geometry.ipynb) introduces
#   them), value vectors are the pulls,
#   and residual + RMSNorm is one Euler step followed by a retraction back to the sphere (§4; the paper
#   writes the post-norm layout, and 5.1 shows what holds for the pre-norm one).
#   {term}`Mixture-of-experts <mixture of experts>` layers fit the same pattern more loosely, which the
#   paper says is why they need balancing losses and attention does not (§4.3, App. B.4).
# - **The reading gives measurements.** Shuffling the start of a text and watching the flow's
#   log-density and divergences per layer tracks how a pre-trained model's predictions degrade (§6).

# %%
fig, ax = plt.subplots(figsize=(5, 5))
path = draw_layers_as_flow(ax, n_layers=6)
ax.set_title("six layers as six Euler steps on the circle")
plt.show()
assert np.allclose(np.linalg.norm(path, axis=1), 1.0, atol=1e-12)
mu = np.array([np.cos(np.radians(60)), np.sin(np.radians(60))])  # the schematic's mean direction
assert np.all(np.diff(path @ mu) > 0)  # Figure 5.0.1: layer by layer the state turns towards mu

# %% [markdown]
# **Figure 5.0.1.** The paper's reading of a transformer, drawn in two dimensions (a sketch of this book's; the
# paper has no such figure). A token's state (blue,
# numbered by layer) sits on the unit circle. Each layer adds an update — here the constant pull
# towards a mean direction $\mu$ (vermilion arrow) that a von Mises–Fisher component exerts — which takes the
# state off the circle (grey arrow); the normalisation brings it back along the ray from the centre
# (dotted). Layer by layer the state turns towards $\mu$: a flow, taken in Euler steps.
#
# ## What you need first
#
# - **Vectors, dot products, lengths; softmax attention** —
#   [6.2 The attention mechanism](../part1_chapter6/6_2_attention_mechanism.ipynb). Part 5 follows
#   the paper and writes vectors as *columns*: $\mu^\top x$ is the dot product of $\mu$ and $x$, and
#   $xx^\top$ is a $d\times d$ matrix. Chapter 6 writes the same vectors as rows, where these read
#   $x\mu^\top$ and $x^\top x$ ([Appendix A, vector conventions](../partA_appendix/A_notation_and_environment.ipynb)).
# - **The decoder block** (residual stream, normalisation before or after each sub-layer) —
#   [6.6 Context representation](../part1_chapter6/6_6_context_representation.ipynb).
# - **Probability**: Bayes' rule for a posterior, mixtures of densities, the Gaussian density, the
#   Kullback–Leibler divergence — [the KL objective of Part 2](../part2_formulation/02_objective_kl.ipynb)
#   recalls KL; any probability text for the rest.
# - **Calculus**: gradients and the chain rule (the whole part), Taylor series (5.1), and Euler's
#   method for an ordinary differential equation, $x_{s+\Delta s}\approx x_s+\Delta s\,u(x_s)$ — any
#   first course in differential equations.
# - **Part 3 helps for 5.6**: [the gradients of attention](../part3_dynamics/01_attention_gradients.ipynb)
#   introduce the "advantage" form of a softmax gradient that Appendix B uses.
#
# ## The route through this part
#
# - [5.1 Spherical geometry](01_spherical_geometry.ipynb) — why does RMSNorm put every state on a
#   sphere, how does one step on a sphere (exponential map, retraction), and what is a bell curve on
#   a sphere (the von Mises–Fisher distribution)?
# - [5.2 SVFlow: definition, ELBO and gradient decomposition](02_svflow_properties.ipynb) — what is
#   the flow's velocity, and how far is it from the gradient of the bound it should climb?
# - [5.3 Attention as a vMF posterior](03_attention_as_vmf_posterior.ipynb) — in what exact sense are
#   attention weights a posterior and value vectors scores, and is a transformer block one Euler step?
# - [5.4 Hybrid training on 2-D data](04_hybrid_training_2d.ipynb) — what does the weight $\beta$ of
#   the consistency term do to a small flow trained on two moons (the paper's Fig. 1)?
# - [5.5 Prefix shuffling](05_prefix_shuffling.ipynb) — do the flow's measurements track a language
#   model's predictions when its context is scrambled, on a model we can train ourselves?
# - [5.6 Appendix B: the gradients](06_appendix_b_gradients.ipynb) — what do the gradients of the
#   hybrid objective look like, and do they create the feedback loop the paper blames for collapse?
# - [Checking the paper, a second pass](checking_the_paper.ipynb) — a reference page, not a lesson: the
#   three models' configurations, the sentences with which §6 and the captions read Tables 1 and 2, and the
#   appendix's remark on numerical stability, each recomputed from numbers the paper or the models' published
#   configurations print.
#
# ## What the book found
#
# Each finding is shown on the page named, and every statement that failed its check has a row in
# [the errata](../ERRATA.md) (the rows of source "SVFlow — Liao", named here by their location).
#
# - The retraction agrees with the exponential map to second order in the step and differs from it only
#   at third order (by a third of the step length cubed), one order better than the paper states; residual + RMSNorm is exactly a retraction of a rescaled tangent step, accurate
#   to first order as stated (and, in a pre-norm block, the same rule moves the stream's direction); the
#   vMF normaliser that App. C.2.3 reports overflowing is finite when computed in log space
#   ([5.1](01_spherical_geometry.ipynb)).
# - The zero-mean property of conditional scores (§4.3) holds for Gaussians on flat space but fails
#   for the vMF components that the attention reading uses ([5.1](01_spherical_geometry.ipynb);
#   errata row "§4.3, Relaxed Implementation").
# - The ELBO identity and the gradient decomposition hold, but the error term can vanish while the
#   posterior is wrong: only the "if" of Theorem 3.3's "if and only if" holds; and one line of its
#   proof, Eq. (34), needs $\nabla_xq$ where it prints $\nabla_x\log q$ ([5.2](02_svflow_properties.ipynb);
#   errata rows "Theorem 3.3 (Eq. 12)" and "App. A.2, Eq. (34)").
# - Softmax attention is exactly the posterior of Eq. (19); the head weighting of Eq. (21) is off by
#   the number of heads, and the balancing loss of Eq. (22) is not minimised by a uniform expert
#   marginal ([5.3](03_attention_as_vmf_posterior.ipynb); errata rows "§4.2, Eq. (21)" and "§4.3,
#   after Eq. (22)").
# - On two moons, whether hybrid training separates the classes changes from seed to seed at each
#   finite $\beta$ tried (over the two training lengths); the monotone trade-off of Fig. 1(c) is one draw ([5.4](04_hybrid_training_2d.ipynb); errata row
#   "§3.3, Fig. 1(c)").
# - Distributions close to uniform (the paper's "low concentrations") do not bound the divergence
#   KL(q‖p), contrary to App. C.2.4; and Tables 1 and 2 do not support App. C.2.5's reading that the
#   shallow layers contribute little change: they carry about as much of it as the deep ones, or more
#   ([5.5](05_prefix_shuffling.ipynb); errata rows "App. C.2.4" and "App. C.2.5").
# - On the larger of our two small character models (the saved one) the deep layer's log-density
#   reacts to shuffling, slightly, in the direction of the paper's Fig. 2, and across training it does
#   not track the prediction's quality the way the paper reads it: its one correlation with a small p-value, with calibration,
#   has the opposite sign ([5.5](05_prefix_shuffling.ipynb)).
# - Read against the paper's own Table 1, §6.2's Spearman correlations reproduce but rank three models
#   rather than twelve independent points (as a test on the models, p = 1/6), with the bins of each Qwen
#   model going the other way; and §6.3's moderate and high-sensitivity regimes (Qwen2.5 and Qwen3) are told
#   apart by the divergence KL(q‖p) and by calibration, not by the concentrations, whose ratio is nearly the
#   same for the two
#   ([checking the paper, a second pass](checking_the_paper.ipynb); errata rows "§6.2, the reading of the
#   Spearman correlations" and "§6.3, the regimes told apart by the concentrations").
# - The gradient formulas of Appendix B hold once B.1's definition of $\gamma_{\ell',\ell}$ includes $\ell'=\ell$,
#   but the centred self advantage pushes the posterior *towards* its target, not into a
#   winner-takes-all loop; and coupling a token's key, query and value roles did not regularise
#   attention in our test ([5.6](06_appendix_b_gradients.ipynb); errata rows "App. B.1", "App. B.4"
#   and "§4.3 (Why MHA Does Not Require Explicit Regularization)").
