# %% [markdown]
# # 5.2 SVFlow: a flow that averages pulls, its lower bound, and the gap between them
#
# **The question.** A score-based variational flow moves a state by averaging "pulls", one per
# hidden component, each weighted by how responsible that component is believed to be. When does
# this averaged pull point straight uphill on the data's log-density, and what measures how far off
# it is when the weights are wrong?
#
# This is the engine of Part 5: page [5.3](03_attention_as_vmf_posterior.ipynb) shows that an
# attention layer computes exactly such an average, with the attention weights as the "beliefs".
# If the beliefs are right, every layer moves a token's state the steepest way up a probability
# landscape; if they are wrong, the move is biased. The paper measures the bias with a classical
# tool of statistics, the evidence lower bound, and this page builds it from a two-component example
# you can do by hand, derives the paper's identities, and finds one statement that is too strong.
#
# ```{admonition} Learning goals
# :class: tip
# After this page you can
# - compute by hand the SVFlow velocity, the posterior, the ELBO and the gap $\log p-\text{ELBO}$
#   for a two-component mixture at one point;
# - state the ELBO identity (Proposition 3.2) and the gradient decomposition (Theorem 3.3) in words,
#   and explain why the velocity equals $\nabla\log p$ when the weights are the true posterior;
# - recognise a case where the error term $\epsilon$ is zero although the weights are wrong.
# ```
#
# **Builds on:** [5.1 Spherical geometry](01_spherical_geometry.ipynb) (the score function: the
# gradient of a log-density) · [the Part 5 overview](00_overview.ipynb) (the flow picture) · mixtures
# of densities and Bayes' rule, the Kullback–Leibler divergence, gradients, Euler's method.
# **Reading time:** about 30 minutes.
#
# ```{admonition} Symbols on this page
# :class: note
# | symbol | meaning | shape |
# |---|---|---|
# | $x$ | the state the flow moves (a number in the tiny example, a point of the plane later) | scalar or $(d,)$ |
# | $d$ | dimension of the state | integer |
# | $z$ | a hidden component of the mixture | index |
# | $m$ | the centre of a Gaussian component (tiny example) | scalar |
# | $p$ | the mixture: $p(z)$ the prior probability of component $z$, $p(x\mid z)$ its density, $p(x)$ the mixture density, $p(z\mid x)$ the true posterior by Bayes' rule | scalars; a distribution over $z$ |
# | $q(z\mid x)$, $q(x\mid z)$ | the variational posterior: the flow's beliefs (weights) about $z$; on the 2-D mixture it is built as $\mathrm{softmax}_z\log q(x\mid z)$ from 8 Gaussian densities $q(x\mid z)$ | distribution over $z$; scalar |
# | $g$, $g_z(x)$ | the logits of $q$: $q=\mathrm{softmax}(g)$ | scalars |
# | $\lambda$, $\lambda_z(x)$ | the log-likelihood $\log p(x\mid z)$ as a function (sympy) | scalar |
# | $u$, $u_s(x)$ | the flow's velocity (Eq. 9) | like $x$ |
# | $\epsilon$, $\epsilon_s(x)$ | the error term between $\nabla_x\mathrm{ELBO}_s$ and $u_s$ (Eq. 12) | like $x$ |
# | $s$, $\Delta s$ | time along the flow, a subscript on everything that may change with it ($x_s$, $u_s$, and $\mathrm{ELBO}_s$, the evidence lower bound, to be *maximised*); the Euler step | scalars |
# | $x_1,x_2$ | the coordinates of a point of the plane | scalars |
# ```
#
# ```{admonition} In the paper's notation
# :class: seealso
# The paper writes $t$ for the time of the flow, $v_t$ for its velocity and $\mathcal L_t$ for the ELBO; here
# they are $s$, $u_s$ and $\mathrm{ELBO}_s$, because the book keeps $t$ for a position in a sequence,
# $v[j]$ for a value vector and $\mathcal L$ for a loss to be minimised (Chapter 6,
# [Appendix A](../partA_appendix/A_notation_and_environment.ipynb)). Quoted equations keep their numbers
# and are written in these letters.
# ```
#
# *Source: Liao, Transformer as an Euler Discretization of Score-based Variational Flow, §3.1–3.2
# (Definition 3.1, Eq. 9; Proposition 3.2, Eqs. 10–11; Theorem 3.3, Eq. 12; Corollary 3.4, Eq. 13)
# and App. A (proofs, Eqs. 23–34).*

# %%
import matplotlib.pyplot as plt
import numpy as np
import sympy as sp
from IPython.display import Math, display

from nextword.booktools.display import produced
from nextword.booktools.plotting import use_book_style
from nextword.numerics import central_difference
from nextword.theory.svflow import GaussianSVFlow, euler_flow

use_book_style()
rng = np.random.default_rng(0)

# %% [markdown]
# ## A tiny example by hand
#
# One number $x$, two hidden components $z=1,2$, each a Gaussian of variance 1: $p(x\mid 1)$ centred
# at $-1$, $p(x\mid 2)$ at $+1$, each chosen with probability $\tfrac12$. Stand at $x=0.5$.
#
# - **The pulls.** The score of a Gaussian centred at $m$ is $-(x-m)$: it points back to the centre.
#   At $x=0.5$ component 1 pulls with $-1.5$ (left), component 2 with $+0.5$ (right).
# - **Who is responsible.** $\log p(x\mid z)$ is $-\tfrac12(x-m)^2$ plus a constant: $-1.125$ and
#   $-0.125$, one apart. By Bayes' rule the true posterior is $p(1\mid x)=1/(1+e)=0.269$ and
#   $p(2\mid x)=0.731$.
# - **The averaged pull.** With the true posterior as weights: $0.269\cdot(-1.5)+0.731\cdot0.5=-0.038$
#   — a gentle pull to the left, towards 0, where $\log p(x)$ climbs. (Not towards a dip between two
#   peaks: centres two standard deviations apart still merge into *one* bump. Up to a constant,
#   $\log p(x)=-\tfrac12x^2+\log\cosh x$, whose slope $-x+\tanh x$ ($-0.038$ at $x=0.5$: the averaged pull) is negative for every $x>0$, so $p(x)$
#   peaks at 0, midway between the centres, and is flat there to fourth order, $\log p(x)-\log p(0)\approx-x^4/12$:
#   two standard deviations is the borderline, and centres any farther apart would open a dip at 0.)
#
# Now use wrong weights, $q=(\tfrac12,\tfrac12)$ whatever $x$ is. The averaged pull becomes
# $\tfrac12(-1.5)+\tfrac12(0.5)=-0.5$, thirteen times too strong.

# %%
x = 0.5
centres = np.array([-1.0, 1.0])
log_lik = -0.5 * (x - centres) ** 2 - 0.5 * np.log(2 * np.pi)  # log p(x | z), z = 1, 2
scores = -(x - centres)  # d/dx log p(x | z)
true_posterior = np.exp(log_lik) / np.exp(log_lik).sum()  # prior 1/2 cancels
wrong_weights = np.array([0.5, 0.5])
print(f"-(x - m)^2 / 2: {-0.5 * (x - centres) ** 2};  pulls (scores): {scores}")
print(f"true posterior p(z | x): {np.round(true_posterior, 3)};  "
      f"1 / (1 + e) = {1 / (1 + np.e):.3f}")
print(f"averaged pull with the true posterior: {true_posterior @ scores:.3f}")
print(f"averaged pull with q = (1/2, 1/2):     {wrong_weights @ scores:.3f}")


# the slope of log p(x) itself, by a central difference: the mixture density is exact here
def log_marginal(y):
    """log p(y) of the two-component mixture, exactly."""
    return np.log(0.5 * np.exp(-0.5 * (y - centres) ** 2).sum()) - 0.5 * np.log(2 * np.pi)


slope = (log_marginal(x + 1e-6) - log_marginal(x - 1e-6)) / 2e-6
print(f"slope of log p(x) at x = 0.5 (central difference): {slope:.3f}")
assert abs(true_posterior @ scores - slope) < 1e-8

# %% [markdown]
# With the true posterior the averaged pull *is* the slope of $\log p(x)$; with wrong weights it is
# not. How wrong? The **ELBO** (evidence lower bound) scores the weights $q$:
# $\mathrm{ELBO}=\mathbb E_q[\log p(x\mid z)]-\mathrm{KL}(q\,\|\,p(z))$, where $p(z)$ is the prior and the
# Kullback–Leibler divergence $\mathrm{KL}(q\,\|\,p(z))=\sum_z q(z\mid x)\log\big(q(z\mid x)/p(z)\big)$ measures, in
# nats, the divergence from the weights to the prior (0 only when they are equal); $\mathrm{KL}(q\,\|\,p(z\mid x))$ is the
# same sum with the true posterior $p(z\mid x)$ in place of $p(z)$ (the approximation $q$ comes first and is
# averaged over: the other order from Part 2's training objective, the KL from the data to the model). Here $q$ equals the prior, so
# $\mathrm{ELBO}=\tfrac12(-2.044)+\tfrac12(-1.044)=-1.544$, below $\log p(x)=-1.424$ by $0.120$ — exactly
# $\mathrm{KL}(q\,\|\,p(z\mid x))$:

# %%
log_p_x = np.log(0.5 * np.exp(log_lik).sum())
elbo = wrong_weights @ (log_lik + np.log(0.5) - np.log(wrong_weights))
kl_to_true_posterior = wrong_weights @ np.log(wrong_weights / true_posterior)
print(f"log p(x | z): {np.round(log_lik, 3)};  log p(x) = {log_p_x:.3f},  ELBO = {elbo:.3f}")
print(f"log p(x) - ELBO = {log_p_x - elbo:.3f};  KL(q || p(z|x)) = {kl_to_true_posterior:.3f}")
assert abs((log_p_x - elbo) - kl_to_true_posterior) < 1e-12

# %% [markdown]
# Keep one more fact from this example for later: these weights $q=(\tfrac12,\tfrac12)$ do not
# depend on $x$. The paper's error term $\epsilon$ (below) is built from the slope of $\log q$, which
# is then zero — so $\epsilon=0$ here although $q$ is wrong and the pull is thirteen times too strong.
#
# ## The flow and its lower bound (Definition 3.1, Proposition 3.2, Theorem 3.3)
#
# In general a {term}`SVFlow` (score-based variational flow) moves a state $x_s$ with the velocity
#
# $$\frac{dx_s}{ds}=u_s(x_s)=\mathbb E_{q_s(z\mid x)}\big[\nabla_x\log p_s(x\mid z)\big]
# \qquad\text{(Eq. 9)},$$
#
# the average of the components' {term}`score functions <score function>` weighted by a
# {term}`variational posterior` $q_s(z\mid x)$ — a stand-in, computed by the model, for the true
# posterior $p_s(z\mid x)$ of Bayes' rule. The {term}`evidence lower bound` (ELBO) of Eq. (11),
# $\mathrm{ELBO}_s(x)=\mathbb E_q[\log p_s(x\mid z)]-\mathrm{KL}(q_s(z\mid x)\,\|\,p_s(z))$, scores the
# weights, and two identities tie everything together:
#
# - **Proposition 3.2:** $\log p_s(x)=\mathrm{ELBO}_s(x)+\mathrm{KL}\big(q_s(z\mid x)\,\|\,p_s(z\mid x)\big)$
#   — the bound is below $\log p$ by exactly the divergence from the weights to the true posterior;
# - **Theorem 3.3:** $\nabla_x\mathrm{ELBO}_s=u_s+\epsilon_s$ with
#   $\epsilon_s=\mathbb E_q\big[\log\frac{p_s(z\mid x)}{q_s(z\mid x)}\,\nabla_x\log q_s(z\mid x)\big]$ —
#   the velocity is the ELBO's gradient up to an error term that comes from the weights moving with $x$.
#
# Sympy proves both for two components with *arbitrary* logits $g_1(x),g_2(x)$ for
# $q=\mathrm{softmax}(g)$ and arbitrary log-likelihoods $\lambda_1(x),\lambda_2(x)$, uniform prior. The cell
# builds each quantity of Eqs. (9)–(12) from these four functions, then subtracts the two sides:

# %%
x_sym = sp.symbols("x", real=True)
g1, g2, lambda1, lambda2 = (sp.Function(name)(x_sym) for name in ("g1", "g2", "lambda1", "lambda2"))
q_normaliser = sp.exp(g1) + sp.exp(g2)
q = [sp.exp(g1) / q_normaliser, sp.exp(g2) / q_normaliser]  # q(z | x) = softmax(g)
log_liks = [lambda1, lambda2]  # log p(x | z)
prior = sp.Rational(1, 2)
log_p = sp.log(prior * sp.exp(lambda1) + prior * sp.exp(lambda2))  # log p(x)
posterior = [prior * sp.exp(l) / sp.exp(log_p) for l in log_liks]  # p(z | x), Bayes
ELBO = sum(qz * (lz + sp.log(prior) - sp.log(qz)) for qz, lz in zip(q, log_liks))  # Eq. (11)
KL_q_post = sum(qz * sp.log(qz / pz) for qz, pz in zip(q, posterior))
velocity = sum(qz * sp.diff(lz, x_sym) for qz, lz in zip(q, log_liks))  # Eq. (9)
epsilon = sum(qz * sp.log(pz / qz) * sp.diff(sp.log(qz), x_sym)
              for qz, pz in zip(q, posterior))  # Eq. (12)

# %%
residual_prop32 = sp.simplify(sp.expand_log(log_p - ELBO - KL_q_post, force=True))  # Eq. (10)
residual_thm33 = sp.simplify(sp.expand_log(sp.diff(ELBO, x_sym) - velocity - epsilon, force=True))
display(Math(r"\log p(x)-\mathrm{ELBO}(x)-\mathrm{KL}(q\,\|\,p(z\mid x))="
             + sp.latex(residual_prop32)))
display(Math(r"\tfrac{d}{dx}\mathrm{ELBO}(x)-u(x)-\epsilon(x)=" + sp.latex(residual_thm33)))
assert residual_prop32 == 0
assert residual_thm33 == 0

# %% [markdown]
# Both differences simplify to 0 (asserted): for two components, Proposition 3.2 and Theorem 3.3 hold
# for any differentiable logits and likelihoods. Sympy shows only this case; the same algebra works for
# any number of components, because the proof in App. A needs only $\sum_z\nabla_x q(z\mid x)=0$ (the
# weights always add up to 1) and a prior that does not depend on $x$.
#
# ## The picture on a 2-D mixture with 8 components
#
# One time slice of the Gaussian SVFlow of §3.3 (`nextword.theory.svflow.GaussianSVFlow`):
# $p(x\mid z)$ are 8 round Gaussians on a ring, and the weights are
# $q(z\mid x)=\mathrm{softmax}_z\log q(x\mid z)$ for 8 other Gaussians, deliberately rotated, pushed outwards (by a fifth) and widened so that $q$ is wrong. Figure 5.2.1
# shows the velocity, the ELBO gradient and the error term between them.

# %%
n_components, d = 8, 2
angles = 2 * np.pi * np.arange(n_components) / n_components
p_means = 1.5 * np.c_[np.cos(angles), np.sin(angles)]
p_log_vars = np.log(0.25) * np.ones((n_components, d))
rotation = np.array([[np.cos(0.5), -np.sin(0.5)], [np.sin(0.5), np.cos(0.5)]])
q_means = p_means @ rotation * 1.2  # rotated by 0.5 rad and pushed out: q is misaligned
q_log_vars = np.log(0.6) * np.ones((n_components, d))
flow = GaussianSVFlow(q_means, q_log_vars, p_means, p_log_vars)

axis_values = np.linspace(-2.5, 2.5, 41)
grid_x, grid_y = np.meshgrid(axis_values, axis_values)
grid = np.stack([grid_x, grid_y], axis=-1)  # (41, 41, 2)

# %%
error_size, radius = np.linalg.norm(flow.epsilon(grid), axis=-1), np.linalg.norm(grid, axis=-1)  # (41, 41)
inner, outer = radius < 1.0, radius > 2.0
print(f"mean |epsilon|: inside radius 1 {error_size[inner].mean():.2f}, outside radius 2 "
      f"{error_size[outer].mean():.2f}; mean KL(q||p): {flow.kl_gap(grid)[inner].mean():.2f} and "
      f"{flow.kl_gap(grid)[outer].mean():.2f}")
# Figure 5.2.1: epsilon, like KL(q||p), is smallest near the centre and grows towards the edges
assert error_size[outer].mean() > 1.2 * error_size[inner].mean()
assert flow.kl_gap(grid)[outer].mean() > 3 * flow.kl_gap(grid)[inner].mean()
fig, axes = plt.subplots(1, 3, figsize=(12, 3.9), sharey=True)
every_4th = (slice(None, None, 4), slice(None, None, 4))
panels = [("SVFlow field $u$ (Eq. 9)", flow.field(grid)),
          (r"$\nabla_x\mathrm{ELBO}=u+\epsilon$ (ELBO gradient)",
           flow.field(grid) + flow.epsilon(grid)),
          (r"variational error $\epsilon$ (Eq. 12)", flow.epsilon(grid))]
for ax, (title, vectors) in zip(axes, panels):
    ax.contourf(grid_x, grid_y, flow.elbo(grid), levels=25, cmap="viridis")
    ax.quiver(grid_x[every_4th], grid_y[every_4th], vectors[every_4th][..., 0],
              vectors[every_4th][..., 1], color="white")
    ax.scatter(*p_means.T, c="#D55E00", marker="*", s=70, label="p means")
    ax.scatter(*q_means.T, c="k", marker="x", s=30, label="q means")
    ax.set_title(title)
    ax.set_xlabel("$x_1$")
    ax.set_aspect("equal")
axes[0].set_ylabel("$x_2$")
axes[0].legend(fontsize=7, loc="lower left")
plt.show()

# %% [markdown]
# **Figure 5.2.1.** ELBO (background, brighter is higher) of a misaligned 8-component Gaussian
# SVFlow, with the means of $p$ (vermilion stars) and of $q$ (black crosses), and three vector fields
# (white arrows): the SVFlow field $u$, the ELBO gradient, and their difference
# $\epsilon$ (Theorem 3.3). Look at the right panel: $\epsilon$ is smallest near the centre and grows
# towards the edges, where $q$ and $p$ disagree most ($\mathrm{KL}(q\,\|\,p(z\mid x))$ grows the same
# way, printed above); wherever it is large, $u$ is not the steepest-ascent direction of the ELBO.
#
# ## The ideal case: with the right weights the flow climbs $\log p$ (Corollary 3.4)
#
# With the $q$-components equal to the $p$-components, $q(z\mid x)=p(z\mid x)$ everywhere, so the KL
# term and $\epsilon$ vanish and $u=\nabla_x\mathrm{ELBO}=\nabla_x\log p(x)$ (Fisher's identity: the
# posterior-weighted average of the components' scores is the mixture's score — the tiny example's
# $-0.038$). Integrating the flow by forward Euler, $\log p$ then increases along every trajectory
# (steepest ascent, for a small enough step).

# %%
ideal = GaussianSVFlow(p_means, p_log_vars, p_means, p_log_vars)
grad_log_p = central_difference(ideal.log_marginal, grid, h=1e-5, batched=True)  # (41, 41, 2)
print(f"ideal: max |epsilon| < 1e-12: {np.max(np.abs(ideal.epsilon(grid))) < 1e-12}, "
      f"max KL(q||p) < 1e-12: {ideal.kl_gap(grid).max() < 1e-12}")
print(f"ideal: u equals FD grad log p(x) within 1e-6: "
      f"{np.allclose(ideal.field(grid), grad_log_p, atol=1e-6)}")
assert np.max(np.abs(ideal.epsilon(grid))) < 1e-12
assert np.allclose(ideal.field(grid), grad_log_p, atol=1e-6)

# %%
starts = rng.uniform(-2.2, 2.2, size=(200, d))
ds, n_steps = 0.01, 100  # the Euler step Delta s
paths = {name: euler_flow(starts, lambda x, s, f=f: f.field(x), n_steps, ds)
         for name, f in [("ideal q = p", ideal), ("misaligned q", flow)]}
for (name, path), f in zip(paths.items(), (ideal, flow)):
    log_p_along = f.log_marginal(path)  # (n_steps + 1, 200)
    fraction_up = np.mean(np.diff(log_p_along, axis=0) >= -1e-12)
    print(f"{name:>13}: fraction of Euler steps that increase log p = "
          f"{produced(fraction_up, '.3f')}; "
          f"mean log p: {log_p_along[0].mean():.3f} -> {produced(log_p_along[-1].mean(), '.3f')}")
log_p_ideal = ideal.log_marginal(paths["ideal q = p"])
assert np.all(np.diff(log_p_ideal, axis=0) >= -1e-12)

# %%
fig, axes = plt.subplots(1, 2, figsize=(10, 4.4), sharey=True)
for ax, (name, path), f in zip(axes, paths.items(), (ideal, flow)):
    ax.contourf(grid_x, grid_y, f.log_marginal(grid), levels=25, cmap="viridis")
    ax.plot(path[:, :60, 0], path[:, :60, 1], color="white", lw=0.7)
    ax.scatter(path[-1, :, 0], path[-1, :, 1], s=6, c="#D55E00")
    ax.set_title(f"{name}: Euler paths on log p")
    ax.set_xlabel("$x_1$")
    ax.set_aspect("equal")
axes[0].set_ylabel("$x_2$")
plt.show()


def distance_to_nearest_mode(points):
    """Distance of each point (n, 2) to the nearest p-mean, (n,)."""
    return np.min(np.linalg.norm(points[:, None, :] - p_means[None], axis=-1), axis=1)


ideal_path = paths["ideal q = p"]
before, after = distance_to_nearest_mode(ideal_path[0]).mean(), distance_to_nearest_mode(ideal_path[-1]).mean()
print(f"ideal flow: mean distance to the nearest mode {before:.2f} -> {produced(after, '.2f')}")
assert after < before / 4  # Figure 5.2.2: the mean distance to the nearest mode falls more than fourfold
misaligned_end = paths["misaligned q"][-1]
end_radii = np.linalg.norm(misaligned_end, axis=1)
print(f"misaligned flow: end points at radius {produced(end_radii.min(), '.2f')} to "
      f"{produced(end_radii.max(), '.2f')} (the modes: 1.5); "
      f"mean distance to the nearest mode {distance_to_nearest_mode(paths['misaligned q'][0]).mean():.2f} -> "
      f"{produced(distance_to_nearest_mode(misaligned_end).mean(), '.2f')}")
assert end_radii.max() < 1.4 and distance_to_nearest_mode(misaligned_end).mean() > 2 * after  # a ring inside the modes

# %% [markdown]
# **Figure 5.2.2.** Euler trajectories ($\Delta s=0.01$, 100 steps; white, 60 of the 200 shown; end
# points vermilion) of the ideal SVFlow (left, Corollary 3.4) and of the misaligned one (right) over
# $\log p(x)$. The ideal flow climbs $\log p$ at every step and gathers at the mixture modes (the mean
# distance to the nearest mode, printed above, falls more than fourfold). Look at the right panel: the
# misaligned flow — its pulls still point to the modes of $p$, but they are weighted by beliefs $q$ built
# from rotated and widened components — spirals round the centre and ends on a ring inside the circle of
# the modes (radii printed above), rather than at them.
#
# ## Key takeaways
#
# - An SVFlow's velocity is the average of the components' pulls (scores), weighted by a variational
#   posterior $q(z\mid x)$; an attention layer will turn out to compute exactly this average.
# - $\log p(x)$ = ELBO + KL$(q\,\|\,p(z\mid x))$: the bound is below the log-density by exactly how
#   wrong the weights are (Proposition 3.2).
# - The ELBO's gradient is the velocity plus an error term $\epsilon$ built from how the weights move
#   with $x$ (Theorem 3.3); with the true posterior the velocity is $\nabla\log p$ and the flow climbs
#   $\log p$ (Corollary 3.4).
# - $\epsilon=0$ does not mean the weights are right: weights that ignore $x$ give $\epsilon=0$ with
#   any error — the "only if" of Theorem 3.3 is false.
#
# ## Check your understanding
#
# 1. In the tiny example, move to $x=0$. What are the true posterior, the averaged pull, and the
#    gap $\log p-\text{ELBO}$ for $q=(\tfrac12,\tfrac12)$?
#
#    ```{dropdown} Answer
#    At $x=0$ both components are equally likely, so $p(z\mid x)=(\tfrac12,\tfrac12)=q$: the gap
#    (the KL) is 0. The pulls are $-1$ and $+1$ and average to 0, which is the slope of $\log p$ at
#    the symmetric point. Wrong-looking weights can be right at some points.
#    ```
#
# 2. Why does the velocity equal $\nabla\log p(x)$ when $q$ is the true posterior?
#
#    ```{dropdown} Answer
#    $\nabla\log p(x)=\nabla p(x)/p(x)=\sum_z p(z)\nabla p(x\mid z)/p(x)=\sum_z \frac{p(z)p(x\mid z)}{p(x)}\nabla\log p(x\mid z)=\sum_z p(z\mid x)\nabla\log p(x\mid z)$:
#    the posterior-weighted average of the scores (Fisher's identity).
#    ```
#
# 3. Theorem 3.3 says $\epsilon$ "vanishes if and only if $q=p$". Give the simplest counterexample.
#
#    ```{dropdown} Answer
#    Any $q$ that does not depend on $x$ — e.g. uniform weights — has $\nabla_x\log q=0$ and hence
#    $\epsilon=0$, while $q$ differs from the true posterior wherever the components are not equally
#    likely (the tiny example at $x=0.5$: KL $=0.120$).
#    ```

# %% tags=["hide-cell"]
# the numbers of the answers above
x_q1 = 0.0
log_lik_q1 = -0.5 * (x_q1 - centres) ** 2 - 0.5 * np.log(2 * np.pi)
posterior_q1 = np.exp(log_lik_q1) / np.exp(log_lik_q1).sum()
pulls_q1 = -(x_q1 - centres)
gap_q1 = wrong_weights @ np.log(wrong_weights / posterior_q1)
print(f"1. x = 0: posterior {posterior_q1}, pulls {pulls_q1}, averaged pull {posterior_q1 @ pulls_q1:.3f}, "
      f"log p - ELBO = KL = {abs(gap_q1):.3f}")
assert np.allclose(posterior_q1, 0.5) and abs(posterior_q1 @ pulls_q1) < 1e-15 and abs(gap_q1) < 1e-15
print(f"3. uniform q at x = 0.5: KL(q || p(z|x)) = {kl_to_true_posterior:.3f}, epsilon = 0 (q does not depend on x)")

# %% [markdown]
# ## Checking the paper
#
# ### Proposition 3.2 and Theorem 3.3 on the 2-D mixture, to finite-difference precision
#
# On the 41 × 41 grid of the misaligned flow: Eq. (10) to round-off, and the ELBO gradient by central
# finite differences against $u+\epsilon$ (closed form).

# %% tags=["hide-cell"]
gap_prop32 = np.max(np.abs(flow.log_marginal(grid) - flow.elbo(grid) - flow.kl_gap(grid)))
grad_elbo = central_difference(flow.elbo, grid, h=1e-5, batched=True)  # (41, 41, 2)
gap_thm33 = np.max(np.abs(grad_elbo - (flow.field(grid) + flow.epsilon(grid))))
gradient_scale = np.max(np.abs(grad_elbo))
print(f"Prop. 3.2: max |log p - ELBO - KL| on the grid          < 1e-12: {gap_prop32 < 1e-12}")
print(f"Thm. 3.3 : max |FD grad ELBO - (u + eps)| / max|grad|   < 1e-6 : "
      f"{gap_thm33 / gradient_scale < 1e-6}")
print(f"KL(q||p) on the grid: min >= -1e-12: {flow.kl_gap(grid).min() >= -1e-12}, "
      f"max = {flow.kl_gap(grid).max():.4f}")
assert gap_prop32 < 1e-12
assert gap_thm33 / gradient_scale < 1e-6
assert flow.kl_gap(grid).min() >= -1e-12

# %% [markdown]
# ### "$\epsilon_s$ vanishes if and only if $q_s=p_s$": the *only if* part fails
#
# $\epsilon_s=\mathbb E_q[\log\frac pq\,\nabla_x\log q]$ is zero whenever $\nabla_x\log q(z\mid x)=0$,
# i.e. whenever the variational posterior does not depend on $x$ — whatever $p(z\mid x)$ is (the
# tiny example's $q=(\tfrac12,\tfrac12)$). Give every $q$-component the same mean and variance: then
# $q(z\mid x)=1/8$ for all $x$, $\epsilon\equiv0$, but $\mathrm{KL}(q\,\|\,p(z\mid x))>0$ and
# $\nabla\mathrm{ELBO}=u\neq\nabla\log p$.

# %% tags=["hide-cell"]
flat = GaussianSVFlow(np.zeros((n_components, d)), np.zeros((n_components, d)), p_means, p_log_vars)
epsilon_flat = flat.epsilon(grid)
grad_elbo_flat = central_difference(flat.elbo, grid, h=1e-5, batched=True)  # (41, 41, 2)
print(f"x-independent q: max |epsilon| < 1e-12: {np.max(np.abs(epsilon_flat)) < 1e-12}")
print(f"                 mean KL(q||p) on the grid = {flat.kl_gap(grid).mean():.4f}")
print(f"                 grad ELBO == u (FD, 1e-6): "
      f"{np.allclose(grad_elbo_flat, flat.field(grid), atol=1e-6)}")
print(f"                 max |u - grad log p| = "
      f"{np.max(np.abs(flat.field(grid) - flat.marginal_score(grid))):.3f}")
assert np.max(np.abs(epsilon_flat)) < 1e-12
assert flat.kl_gap(grid).mean() > 0.1

# %% [markdown]
# So $\epsilon_s=0$ does **not** imply $q_s=p_s$ (nor that the flow follows $\nabla\log p_s$). The
# correct statement is one-directional: $q_s(\cdot\mid x)=p_s(\cdot\mid x)\Rightarrow\epsilon_s(x)=0$.
# Proposition 3.2's "equality iff $q=p$" is fine (it is about the KL, which is zero only at $q=p$).
# Recorded in [the errata](../ERRATA.md) (row "SVFlow — Liao, Theorem 3.3 (Eq. 12)").

# %% [markdown]
# ### App. A.2, Eq. (34): the cancelled term has $\nabla_x q$, not $\nabla_x\log q$
#
# The proof of Theorem 3.3 cancels $\int\log p_s(x)\,\nabla_x q_s(z\mid x)\,dz$ in Eq. (31), and Eq. (34)
# justifies it, but with the integrand written $\log p_s(x)\,\nabla_x\log q_s(z\mid x)$. That term is not
# zero: $\int\nabla_x\log q\,dz=\int\nabla_x q/q\,dz$ is not $\nabla_x\int q\,dz$. With the two-component
# $q=\mathrm{softmax}(g)$ of the sympy cell above, the sum over $z$ of the printed integrand against the
# intended one:

# %% tags=["hide-cell"]
eq34_printed = sp.simplify(sum(log_p * sp.diff(sp.log(qz), x_sym) for qz in q))
eq34_intended = sp.simplify(sum(log_p * sp.diff(qz, x_sym) for qz in q))
display(Math(r"\sum_z\log p(x)\,\partial_x\log q(z\mid x)=" + sp.latex(eq34_printed)))
display(Math(r"\sum_z\log p(x)\,\partial_x q(z\mid x)=" + sp.latex(eq34_intended)))
assert eq34_intended == 0
assert eq34_printed != 0
at_point = eq34_printed.subs({g1: x_sym, g2: 0, lambda1: 1, lambda2: 1}).doit().subs(x_sym, 1)
print(f"printed form at g = (x, 0), lambda = (1, 1) (so log p = 1), x = 1: {sp.simplify(at_point)} = {float(at_point):.4f}")
assert abs(float(at_point)) > 0.1

# %% [markdown]
# The identity the proof needs, with $\nabla_x q$, holds (it is the same fact as Eq. (33)); as printed,
# Eq. (34)'s first equality fails, so Theorem 3.3 stands but this line of its proof needs $\nabla_x q$.
# Recorded in [the errata](../ERRATA.md) (row "SVFlow — Liao, App. A.2, Eq. (34)").

# %% [markdown]
# ## Reproducibility
#
# Everything on this page is exact (sympy) or deterministic numerics on fixed grids; the only
# random draw is the 200 Euler start points (seed 0). Library: `nextword.theory.svflow`
# (`GaussianSVFlow`, `euler_flow`), `nextword.numerics.central_difference`.

# %% tags=["hide-cell", "nbval-ignore-output"]
# nbval-ignore-output: package versions
print(f"numpy {np.__version__}, sympy {sp.__version__}")
