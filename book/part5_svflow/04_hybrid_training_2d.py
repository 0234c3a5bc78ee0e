# %% [markdown]
# # 5.4 Hybrid training of a 2-D Gaussian SVFlow: semantic alignment versus variational consistency
#
# **The question.** A flow ({term}`SVFlow`) trained only to classify its end points may move with
# wrong beliefs, a wrong {term}`variational posterior` (the error term of
# [5.2](02_svflow_properties.ipynb) is then not zero); a flow trained only to
# make its beliefs right has no reason to keep the classes apart. What does a mixture of the two
# objectives do — does a small weight $\beta$ on the consistency term give both?
#
# The paper answers with a picture (its Fig. 1): on two interleaved half-moons, no consistency
# term separates the classes but leaves the beliefs off, the consistency term alone collapses every
# point onto one spot, and increasing $\beta$ trades separation for consistency. Standard
# transformer training is the case $\beta=0$, so the picture is the paper's argument for why the
# architecture's own structure must supply the consistency. This page rebuilds the experiment,
# runs it over several seeds, and sorts the picture's statements into those that held in every seed
# and those that did not.
#
# ```{admonition} Learning goals
# :class: tip
# After this page you can
# - write the hybrid objective $\mathcal J_{\text{align}}+\beta\,\mathcal J_{\text{var}}$ and say what
#   each term rewards;
# - compute by hand how one Euler step moves a point towards a Gaussian component, and derive the
#   step-size condition $\Delta s<2\sigma^2$ for the flow to stay stable;
# - explain why a claim about a trained model must be checked over several seeds, and which of
#   Fig. 1's statements survive that check here.
# ```
#
# **Builds on:** [5.2 SVFlow](02_svflow_properties.ipynb) (the velocity, the ELBO and the KL gap
# $\log p-\mathrm{ELBO}$) · cross-entropy for a classifier, Euler's method, training with Adam.
# **Reading time:** about 30 minutes.
#
# ```{admonition} Symbols on this page
# :class: note
# | symbol | meaning | shape |
# |---|---|---|
# | $x$, $x_s$, $x_0$ | a point of the plane; the point at time $s$ of the flow; its start, at $s=0$ | $(2,)$ |
# | $x_1,x_2$ | the coordinates of a point (a subscript 1 or 2 on $x$ names a coordinate, not a time: the point at $s=1$ is written $x_{\text{end}}$) | scalars |
# | $s$, $\Delta s$ | time along the flow (from 0 to 1), the Euler step | scalars |
# | $x_{\text{end}}$ | the end point of a path, at $s=1$ | $(2,)$ |
# | $z$, $\mathcal Z$ | a Gaussian component, and the set of the 8 components | index, set |
# | $m$, $\sigma^2$ | centre and variance of a component (tiny example) | scalars |
# | $m_z$, $\sigma_z^2$ | centre and variances of component $z$ of $p$ (a diagonal Gaussian: one variance per coordinate, so $(m_z-x)/\sigma_z^2$ divides coordinate by coordinate) | $(2,)$, $(2,)$ |
# | $q$, $\bar q$ | the flow's beliefs $q(z\mid x)=\mathrm{softmax}_z\log q(x\mid z)$, built from Gaussians $q(x\mid z)$; $\bar q$ their mean over the end points | distributions over $z$ |
# | $p$ | the true posterior $p(z\mid x)$ of the Gaussians $p(x\mid z)$ the flow pulls towards | distribution over $z$ |
# | $u(x)$, $u_s$ | the flow's velocity $\sum_zq(z\mid x)(m_z-x)/\sigma_z^2$; $u_s$: that of the time-$s$ slice | $(2,)$ |
# | $\epsilon$ | the error term of [5.2](02_svflow_properties.ipynb); $\mathrm{ELBO}_s(x)$ is the ELBO of the time-$s$ slice | $(2,)$ |
# | $y$, $p_{\text{end}}(y\mid x_{\text{end}})$ | a point's class; the linear classifier read at the end point | 0 or 1; probability |
# | $\mathcal J$, $\mathcal J_{\text{align}}$, $\mathcal J_{\text{var}}$, $\beta$ | the training objective $\mathcal J_{\text{hybrid}}$; the task loss, the consistency term, and its weight | scalars |
# | $\bar x_{\text{end}}^{(c)}$, $\Sigma^{(c)}$ | mean and covariance of the end points of class $c$ | $(2,)$, $(2,2)$ |
# | $H(\bar q)$ | entropy of the mean posterior $\bar q$ at $s=1$ | scalar |
# ```
#
# ```{admonition} In the paper's notation
# :class: seealso
# The paper writes the end time as $T$ ($T=1$), the end point as $x_T$ and the classifier as $p_T(y\mid x_T)$;
# this page writes $x_{\text{end}}$ and $p_{\text{end}}$, keeping $T$ for the length of a sequence as in the
# rest of the book. It writes $t$ for the time of the flow, $v_t$ for the velocity and $\mathcal L_t$ for the
# ELBO; here $s$, $u_s$ and $\mathrm{ELBO}_s$, since the book keeps $t$ for a position, $v[j]$ for a value
# vector and $\mathcal L$ for a loss to be minimised ([Appendix A](../partA_appendix/A_notation_and_environment.ipynb)). Its consistency term (Eq. 14) multiplies the KL by a time-dependent weight of mean 1,
# which App. C.1 does not specify; this page (and the library) use the constant weight 1.
# ```
#
# *Source: Liao, Transformer as an Euler Discretization of Score-based Variational Flow, §3.3
# (Eqs. 14–16), App. C.1 and Figure 1.*

# %%
import os

import matplotlib.pyplot as plt
import numpy as np
import sympy as sp
import torch
from IPython.display import Math, display
from matplotlib.colors import ListedColormap

from nextword.booktools.display import produced
from nextword.booktools.plotting import use_book_style
from nextword.provenance import load_result
from nextword.theory.svflow import categorical_kl
from nextword.torch.svflow.hybrid import LOG_VAR_RANGE, HybridConfig, train_hybrid
from nextword.torch.svflow.hybrid_runs import hybrid_measurements, moons_data

use_book_style()
torch.set_num_threads(1)  # tiny tensors: one thread is fastest and keeps runs reproducible

# %% tags=["parameters"]
FULL = os.environ.get("FULL", "0") == "1"
STEPS, BATCH = (10_000, 512) if FULL else (300, 256)
BETAS = (0.0, 0.1, 0.5, None)  # None = J_var only (beta -> infinity)
LABELS = ["β = 0", "β = 0.1", "β = 0.5", "J_var only"]

# %% [markdown]
# ## A tiny example by hand
#
# The flow of this page pulls each point towards Gaussian components. Near one component with centre
# $m$ and variance $\sigma^2$ the pull (the score) is $(m-x)/\sigma^2$, and one Euler step of size
# $\Delta s$ moves $x$ to $x+\Delta s\,(m-x)/\sigma^2$: the distance to $m$ is multiplied by
# $1-\Delta s/\sigma^2$. Start at distance 1 with $\Delta s=0.01$:
#
# - $\sigma^2=0.25$: factor $1-0.04=0.96$; after three steps the distance is $0.96^3=0.885$. A gentle,
#   steady approach.
# - $\sigma^2=0.004$: factor $1-2.5=-1.5$; the point jumps over $m$ and lands *further* away on the
#   other side, at distances $1.5, 2.25, 3.375$. The flow explodes.
#
# So the component variances must stay above $\Delta s/2$ for the Euler steps to make sense.

# %%
ds = 0.01  # the Euler step Delta s
for variance in (0.25, 0.004):
    distance, distances = 1.0, []
    for _ in range(3):
        distance = distance + ds * (0.0 - distance) / variance  # centre m = 0, signed distance
        distances.append(distance)
    print(f"sigma^2 = {variance}: Delta s / sigma^2 = {ds / variance:g}, "
          f"factor {1 - ds / variance:+.3f}; "
          f"distances after 1, 2, 3 steps {np.round(np.abs(distances), 3)} "
          f"(signs {np.sign(distances).astype(int)})")
print(f"the bound Delta s / 2 = {ds / 2}")
assert abs(distances[-1]) > 1  # sigma^2 < Delta s / 2: the Euler steps move away from the centre

# %% [markdown]
# ## The flow and the two objectives (Eqs. 14–16)
#
# The flow is the Gaussian SVFlow of [5.2](02_svflow_properties.ipynb) with 8 components in the
# plane, whose means, variances and posterior parameters change with time $s\in[0,1]$ through a small
# neural network (a small MLP on sinusoidal features of $s$, this book's choice; App. C.1 gives the MLP's size). Its velocity is
# $u(x)=\sum_z q(z\mid x)(m_z-x)/\sigma_z^2$, a posterior-weighted pull towards the $p$-means, taken in
# Euler steps of $\Delta s=0.01$ from $s=0$ to $s=1$. The paper's hybrid objective (Eq. 16) is
#
# $$\mathcal J_{\text{hybrid}}=\mathcal J_{\text{align}}+\beta\,\mathcal J_{\text{var}},\qquad
# \mathcal J_{\text{align}}=\mathbb E[-\log p_{\text{end}}(y\mid x_{\text{end}})],\quad
# \mathcal J_{\text{var}}=\mathbb E_{s,x_0}\,\mathrm{KL}\big(q_s(z\mid x_s)\,\|\,p_s(z\mid x_s)\big):$$
#
# $\mathcal J_{\text{align}}$ is the cross-entropy of a linear classifier read at the end point $x_{\text{end}}$
# (the task), and $\mathcal J_{\text{var}}$ is the KL gap of [5.2](02_svflow_properties.ipynb)
# averaged along the path (the consistency of the beliefs). We train $\beta\in\{0, 0.1, 0.5\}$ and $\mathcal J_{\text{var}}$ alone
# ($\beta\to\infty$).
#
# The tiny example's stability condition, from sympy:

# %%
x, m = sp.symbols("x m", positive=True)
variance_sym, ds_sym = sp.Symbol("sigma^2", positive=True), sp.Symbol(r"\Delta s", positive=True)
log_normal = -(x - m) ** 2 / (2 * variance_sym) - sp.log(2 * sp.pi * variance_sym) / 2
score = sp.simplify(sp.diff(log_normal, x))
factor = sp.simplify(sp.diff(x + ds_sym * score, x))
display(Math(r"\tfrac{d}{dx}\log\mathcal N(x;m,\sigma^2)=" + sp.latex(score)
             + r",\qquad \tfrac{d}{dx}\big(x+\Delta s\cdot\text{score}\big)=" + sp.latex(factor)))
display(Math(r"|\text{factor}|<1\iff " + sp.latex(sp.solve([factor < 1, factor > -1], ds_sym))))
print(f"with log sigma^2 >= {LOG_VAR_RANGE[0]}: Delta s / sigma^2 <= "
      f"{0.01 / np.exp(LOG_VAR_RANGE[0]):.3f} at Delta s = 0.01")

# %% [markdown]
# The step is stable (the distance to the centre shrinks) as long as $\Delta s<2\sigma^2$. It is
# also monotone (no overshoot: the factor lies between 0 and 1) only while $\Delta s<\sigma^2$; between
# $\sigma^2$ and $2\sigma^2$ the point lands on alternate sides of the centre, ever closer (factor
# $-0.667$ at $\sigma^2=0.006$, printed with question 1 below). The squashing of the log-variances into
# $[-4,1]$ keeps $\Delta s/\sigma^2\le0.55$ at $\Delta s=0.01$, inside both bounds.
#
# **Setup (App. C.1):** two moons with noise 0.06 (generated here, no scikit-learn), $|\mathcal Z|=8$,
# diagonal Gaussians $q(x\mid z)$ and $p(x\mid z)$ with $q(z\mid x)=\mathrm{softmax}_z\log q(x\mid z)$,
# a 3-layer MLP of width 64 on time features, 100 Euler steps of $\Delta s=0.01$ on $[0,1]$,
# Adam (lr 0.01, betas 0.9/0.999), batch 512, 10,000 steps. **Here:** 300 steps with batch 256 (the
# paper's schedule is an option, see [Reproducibility](#reproducibility)). Two additions, both stated: the log-variance
# squashing above, and each run's gradient clipped to norm 1 (the Euler unroll otherwise occasionally
# blows up at lr 0.01). The four runs are trained side by side in one stacked module
# (`nextword.torch.svflow.hybrid`), which in exact arithmetic is equivalent to training them separately.

# %%
X_train, y_train, X_test, y_test = moons_data()  # 2000 + 600 points, noise 0.06, generator seed 0
CLASS_COLOURS = ListedColormap(["#0072B2", "#D55E00"])  # class 0 blue, class 1 vermilion
fig, ax = plt.subplots(figsize=(4.5, 3.2))
ax.scatter(*X_train.T, c=y_train, s=4, cmap=CLASS_COLOURS)
ax.set_title("(a) two moons, noise 0.06")
ax.set_xlabel("$x_1$")
ax.set_ylabel("$x_2$")
ax.set_aspect("equal")
plt.show()

# %% [markdown]
# **Figure 5.4.1** (cf. Fig. 1a). The training set: class 0 blue, class 1 vermilion.

# %%
config = HybridConfig(betas=BETAS, steps=STEPS, batch_size=BATCH, seed=0)
model, log = train_hybrid(config, X_train, y_train)  # (steps, runs, 3): J_hybrid, J_align, J_var
for run, label in enumerate(LABELS):
    tail = log[-max(1, STEPS // 20):, run].mean(axis=0)
    print(f"{label:>10}: last-5% mean J_hybrid = {produced(tail[0], '.4f')}, "
          f"J_align = {produced(tail[1], '.4f')}, J_var = {produced(tail[2], '.4f')}")

# %%
fig, axes = plt.subplots(1, 2, figsize=(10, 3.4))
for run, label in enumerate(LABELS):
    axes[0].plot(log[:, run, 1], lw=1, label=label)
    axes[1].semilogy(log[:, run, 2] + 1e-6, lw=1, label=label)
axes[0].set_title(r"$\mathcal{J}_{\mathrm{align}}$ (cross-entropy)")
axes[1].set_title(r"$\mathcal{J}_{\mathrm{var}}$ (mean KL over the path)")
for ax in axes:
    ax.set_xlabel("Adam step")
axes[0].set_ylabel("nats")
axes[1].set_ylabel("nats (log scale)")
axes[1].legend(fontsize=8)
plt.show()

# %% [markdown]
# **Figure 5.4.2.** Training curves of the four runs (one mini-batch per step). Look at the right panel
# (log scale): the consistency term $\mathcal J_{\text{var}}$ of the run that does not train it ($\beta=0$,
# blue) stays far above those of the runs that do; on held-out points (below) it is more than ten times
# that of $\beta=0.1$ in every seed.
#
# ## The trained flows, drawn as in Figure 1
#
# Rows: the three hybrid runs; columns: $s=0.2,\dots,1.0$. Background: the ELBO of that time slice,
# $\mathrm{ELBO}_s(x)$; arrows: the SVFlow field $u_s$; points: the test points at time $s$, coloured by
# class (blue and vermilion); black star: the grid maximum of $\mathrm{ELBO}_s$ (the "ELBO optimum"). The last panel is the
# $\mathcal J_{\text{var}}$-only run at $s=1$ (Fig. 1b). Everything below uses the numpy
# `GaussianSVFlow` slices of the trained MLP (`model.slice(run, s)`).

# %%
rows, paths = hybrid_measurements(model, X_test, y_test)  # one dict per run; paths (M, 101, N, 2)
times = np.arange(config.n_steps) * config.dt


def draw_time_slice(ax, flow_slice, points, margin, arrows_every=6, quantile_levels=True):
    """ELBO of one time slice as background, its field as arrows, the test points on top."""
    low, high = points.min(0) - margin, points.max(0) + margin
    grid_x, grid_y = np.meshgrid(np.linspace(low[0], high[0], 60), np.linspace(low[1], high[1], 60))
    grid = np.stack([grid_x, grid_y], -1)  # (60, 60, 2)
    elbo = flow_slice.elbo(grid)
    levels = np.unique(np.quantile(elbo, np.linspace(0, 1, 21))) if quantile_levels else 20
    ax.contourf(grid_x, grid_y, elbo, levels=levels, cmap="viridis")
    every = (slice(None, None, arrows_every), slice(None, None, arrows_every))
    field = flow_slice.field(grid)
    ax.quiver(grid_x[every], grid_y[every], field[every][..., 0], field[every][..., 1],
              color="white", alpha=0.7)
    ax.scatter(*points.T, c=y_test, s=2 if quantile_levels else 4, cmap=CLASS_COLOURS)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_xlabel("$x_1$", fontsize=8)
    ax.set_ylabel("$x_2$", fontsize=8)
    return grid_x, grid_y, elbo


# %%
shown_times = [0.2, 0.4, 0.6, 0.8, 1.0]
fig, axes = plt.subplots(3, 6, figsize=(17, 8.4))
for run in range(3):
    for column, s in enumerate(shown_times):  # s: the time of the flow
        step = int(round(s / config.dt))
        flow_slice = model.slice(run, min(s, times[-1]))
        grid_x, grid_y, elbo = draw_time_slice(axes[run, column], flow_slice, paths[run, step],
                                               margin=0.5)
        i, j = np.unravel_index(np.argmax(elbo), elbo.shape)
        axes[run, column].scatter(grid_x[i, j], grid_y[i, j], marker="*", s=120, c="k")
        if run == 0:
            axes[run, column].set_title(f"s = {s:.1f}")
        if column == 0:
            axes[run, column].set_ylabel(f"{LABELS[run]}\n$x_2$")
    axes[run, 5].axis("off")
axes[1, 5].axis("on")
draw_time_slice(axes[1, 5], model.slice(3, times[-1]), paths[3, -1], margin=1.0,
                quantile_levels=False)
axes[1, 5].set_title("(b) J_var only, s = 1")
plt.show()

# %% [markdown]
# **Figure 5.4.3** (cf. Fig. 1b–c). Where the trained flows have moved the test points by each time $s$
# (the points themselves, not their paths), over the
# ELBO of each time slice (brighter is higher), the test points coloured by class (blue, vermilion), the
# ELBO's grid maximum as a black star (drawn for the three hybrid runs only). Each panel is zoomed to its
# own points (a margin of 0.5 around them, 1 in the last panel) and has no ticks, so sizes cannot be
# compared from panel to panel (the spread of the end states, in the table below, gives their true
# size). With $\mathcal J_{\text{var}}$ alone, all points
# end in one spot (right). The hybrid runs of this seed separate the moons or not (compare the rows).
# Over three seeds (next sections), $\beta=0.1$ separated them in every seed at this training length,
# while $\beta=0$ and $\beta=0.5$ did in some seeds and not in others.
#
# ## Measurements per run, on held-out points
#
# * **class separation:** accuracy of $p_{\text{end}}(y\mid x_{\text{end}})$ and the Fisher ratio
#   $\lVert\bar x_{\text{end}}^{(1)}-\bar x_{\text{end}}^{(0)}\rVert^2/(\mathrm{tr}\,\Sigma^{(0)}+\mathrm{tr}\,\Sigma^{(1)})$ of
#   the end states (large when the two classes end far apart and tight);
# * **ELBO gap:** $\mathcal J_{\text{var}}$ on the test paths (mean over time, taken at every fifth Euler
#   step, and over points of $\mathrm{KL}(q\,\|\,p)=\log p-\mathrm{ELBO}$, Prop. 3.2), and its value at
#   the end points;
# * **alignment:** the mean cosine between $u$ and $\nabla_x\mathrm{ELBO}=u+\epsilon$ (Theorem 3.3) along
#   the paths (at the same every fifth step); a plain cosine, not the {term}`alignment` of the gradient analysis of
#   [3.1](../part3_dynamics/01_attention_gradients.ipynb), and not the task term $\mathcal J_{\text{align}}$ either;
# * **collapse:** the spread of the end states (their mean distance from their own mean point; 0 when
#   all end at one spot) and the effective number of $q$-components used
#   $\exp H(\bar q)$, $\bar q$ the mean posterior at $s=1$.
#
# Everything "at $s=1$" (the KL column, $\bar q$, and the $s=1.0$ panels of Figure 5.4.3) scores the end
# points with the last time slice the Euler steps use, one step before $s=1$ (its step carries the points
# to $s=1$), not with the slice at $s=1$ itself, which no Euler step uses.

# %%
print(f"{'run':>10} | {'accuracy':>8} | {'Fisher':>8} | {'J_var':>8} | {'KL at s=1':>9} | "
      f"{'cos(u,∇ELBO)':>12} | {'spread':>7} | {'n_eff':>5}")
for label, row in zip(LABELS, rows):
    print(f"{label:>10} | {produced(row['acc'], '8.3f')} | {produced(row['fisher'], '8.2f')} | "
          f"{produced(row['jvar'], '8.4f')} | {produced(row['kl_end'], '9.4f')} | {produced(row['cos'], '12.3f')} | "
          f"{produced(row['spread'], '7.3f')} | {produced(row['n_eff'], '5.2f')}")

# %% [markdown]
# ## What held in every seed
#
# One training run is one draw: a run sometimes separates the moons and sometimes collapses all points
# onto one spot (accuracy 1/2), depending on the seed, and even for one seed on the CPU that trains it.
# So we trained this very setting with seeds 0, 1 and 2 (saved with the book; its provenance is in
# [Reproducibility](#reproducibility)), measured each
# run as above, and sort the statements into those that held in every seed and those that did not. The
# saved seed 0 is the run drawn above (same setting and seed), trained when the run was saved: where its
# per-seed line below differs from the table above, the difference comes from the last-digit rounding of
# the CPU that trained it, grown by training (see [Reproducibility](#reproducibility)), so neither the table above nor
# the saved line is "the" outcome of seed 0.
#
# Held in every seed: the run with β = 0.1 separates the classes (accuracy ≥ 0.95); the
# $\mathcal J_{\text{var}}$-only run does not (accuracy < 0.7) and its end states collapse
# (spread < 0.05); the ELBO gap $\mathcal J_{\text{var}}$ of the β = 0.1 run is more than ten times
# smaller than that of β = 0. The next cell checks these on the run above, the cell after it counts, for
# each statement, the seeds in which it held.

# %%
def robust_claims(acc, jvar, spread) -> dict[str, bool]:
    """Statements that held in every seed (runs in LABELS order: beta 0, 0.1, 0.5, J_var only)."""
    return {"beta = 0.1 separates the classes (accuracy >= 0.95)": bool(acc[1] >= 0.95),
            "J_var only does not separate them (accuracy < 0.7)": bool(acc[3] < 0.7),
            "J_var only collapses (spread < 0.05)": bool(spread[3] < 0.05),
            "J_var(beta = 0) > 10 x J_var(beta = 0.1)": bool(jvar[0] > 10 * jvar[1])}


def fragile_claims(acc, jvar) -> dict[str, bool]:
    """Statements that did not hold in every seed."""
    return {"beta = 0 separates the classes (accuracy >= 0.95)": bool(acc[0] >= 0.95),
            "beta = 0.5 separates the classes (accuracy >= 0.95)": bool(acc[2] >= 0.95),
            "J_var falls again from beta = 0.1 to 0.5": bool(jvar[2] < jvar[1])}


accuracies = np.array([row["acc"] for row in rows])
path_kl = np.array([row["jvar"] for row in rows])
claims = robust_claims(accuracies, path_kl, [row["spread"] for row in rows])
for claim, holds in claims.items():
    print(f"{claim}: {holds}")
assert all(claims.values()), claims


# %%
def count_claims(saved, show_fisher=False):
    """Per seed of a saved run: print its numbers; return how many seeds each claim held in."""
    robust_count, fragile_count = {}, {}
    for seed_row in saved["data"]["per_seed"]:
        robust = robust_claims(seed_row["acc"], seed_row["jvar"], seed_row["spread"])
        fragile = fragile_claims(seed_row["acc"], seed_row["jvar"])
        robust_count = {k: robust_count.get(k, 0) + v for k, v in robust.items()}
        fragile_count = {k: fragile_count.get(k, 0) + v for k, v in fragile.items()}
        fisher = ["undefined" if f is None else f"{f:.1e}" for f in seed_row.get("fisher", [])]
        print(f"seed {seed_row['seed']}: accuracy per run {[f'{a:.2f}' for a in seed_row['acc']]}; "
              f"J_var per run {[f'{v:.1e}' for v in seed_row['jvar']]}; "
              f"spread per run {[f'{v:.1e}' for v in seed_row['spread']]}"
              + (f"; Fisher per run {fisher}" if show_fisher else ""))
    return robust_count, fragile_count


saved_default = load_result("hybrid_default")
saved_long = load_result("hybrid_long")
default_setting = (saved_default["config"]["steps"], saved_default["config"]["batch_size"])
assert default_setting == (STEPS, BATCH) or FULL
robust_n, fragile_n = count_claims(saved_default)
n_default = len(saved_default["data"]["per_seed"])
for claim, n in {**robust_n, **fragile_n}.items():
    print(f"{claim}: {n} of {n_default} seeds")
assert n_default >= 3
assert all(n == n_default for n in robust_n.values())

# %% [markdown]
# So in this setting pure cross-entropy training (β = 0) and even β = 0.5 can end in a collapsed flow,
# and the ELBO gap does not always keep falling from β = 0.1 to β = 0.5 (counts above). What held in
# every seed is the contrast between no variational term, a small one and the variational term alone.
#
# **Does longer training settle it?** The fragile statements might only mean that 300 steps are too
# few. A second saved run, `hybrid_long`, trains the same four runs for 2000 steps on batches of 512
# (seeds 0–2) and applies the same two lists of statements. A Fisher ratio printed as "undefined"
# belongs to a run whose test points all end at the same spot (0/0).

# %%
robust_long, fragile_long = count_claims(saved_long, show_fisher=True)
n_long = len(saved_long["data"]["per_seed"])
for claim, n in {**robust_long, **fragile_long}.items():
    short_count = {**robust_n, **fragile_n}[claim]
    print(f"{claim}: {n} of {n_long} seeds (300 steps: {short_count} of {n_default})")
assert n_long == 3
assert saved_long["config"]["steps"] == 2000
always_long = {claim for claim, n in {**robust_long, **fragile_long}.items() if n == n_long}
assert always_long >= {"J_var only does not separate them (accuracy < 0.7)",
                       "J_var only collapses (spread < 0.05)",
                       "J_var(beta = 0) > 10 x J_var(beta = 0.1)"}
assert robust_long["beta = 0.1 separates the classes (accuracy >= 0.95)"] < n_long

# %% [markdown]
# Longer training does not make the trade-off robust; it moves the fragility. After 2000 steps the
# small variational weight β = 0.1 no longer separates the classes in every seed (counts above, beside
# those of the 300-step runs), and which of the three hybrid runs collapses changes from seed to seed.
# What survives both schedules is the contrast at the ends: $\mathcal J_{\text{var}}$ alone never
# separates the classes and always collapses its end states, and β = 0.1 shrinks the ELBO gap by more
# than an order of magnitude against β = 0.
#
# ## Key takeaways
#
# - The hybrid objective adds to the task's cross-entropy $\beta$ times the path-averaged KL gap
#   between the flow's beliefs $q$ and the true posterior $p$; standard training is $\beta=0$.
# - Euler steps towards a Gaussian component are stable only if $\Delta s<2\sigma^2$; the page keeps
#   the variances above that bound.
# - Trained on the consistency term alone, the flow collapses every point onto one spot in every seed,
#   with beliefs there spread evenly over the eight components (in the run drawn above, the components
#   have drifted together): the beliefs become trivially right and the classes are lost. Collapse is not
#   the only way to make the term zero (components of $q$ that copy those of $p$ would do it too), but
#   nothing in the term keeps the classes apart, and training found the collapsed flow.
# - A small $\beta$ cuts the KL gap by more than ten times against $\beta=0$ in every seed, but
#   whether a given run separates the classes changes from seed to seed at each of $\beta=0$, 0.1 and
#   0.5 (at 0.1 after longer training), and for one seed can change from one CPU to another: the monotone
#   trade-off drawn in the paper's Fig. 1(c) is one draw ([checked below](#checking-the-paper)).
#
# ## Check your understanding
#
# 1. In the tiny example, below which variance does an Euler step of $\Delta s=0.01$ make the distance
#    to the centre *grow*, and what happens exactly at that variance?
#
#    ```{dropdown} Answer
#    The factor $1-\Delta s/\sigma^2$ has size above 1 when $\sigma^2<\Delta s/2=0.005$. At exactly
#    $\sigma^2=0.005$ the factor is $-1$: the point jumps to the mirror position and back, forever, at
#    the same distance.
#    ```
#
# 2. Why does $\mathcal J_{\text{var}}$ alone lead to collapse, even though it "only" asks the beliefs
#    to be right?
#
#    ```{dropdown} Answer
#    The KL gap is zero whenever $q(z\mid x)=p(z\mid x)$, and that can be reached in several ways: the
#    components of $q$ copy those of $p$, or all components merge into one, or every point moves to
#    where the two posteriors agree. Nothing in $\mathcal J_{\text{var}}$ prefers a way that keeps the
#    classes apart; only $\mathcal J_{\text{align}}$ rewards that. In every seed here, training reached a
#    collapsed flow (in the run drawn above, one whose components have merged).
#    ```
#
# 3. The saved runs show β = 0.5 separating the moons in some seeds and not in others. What would
#    you need before claiming "raising β reduces class separation"?
#
#    ```{dropdown} Answer
#    A statement about the distribution over seeds: e.g. the separation rate or the mean Fisher ratio
#    over many seeds, falling with β by more than its seed-to-seed spread. One run per β — what a figure
#    shows — cannot support it here (β = 0.5 separated in 2 of 3 seeds at 300 steps, 1 of 3 at 2000).
#    ```

# %% tags=["hide-cell"]
# the numbers of the answers above
for variance in (0.006, 0.005, 0.004):
    step_factor = 1 - ds / variance
    print(f"1. sigma^2 = {variance}: factor 1 - Delta s / sigma^2 = {step_factor:+.3f}, |factor| > 1: {abs(step_factor) > 1}")
assert abs((1 - ds / 0.005) + 1) < 1e-12 and abs(1 - ds / 0.004) > 1 > abs(1 - ds / 0.006)
print(f"3. beta = 0.5 separates in {fragile_n['beta = 0.5 separates the classes (accuracy >= 0.95)']} of {n_default} "
      f"seeds at 300 steps, {fragile_long['beta = 0.5 separates the classes (accuracy >= 0.95)']} of {n_long} at 2000")

# %% [markdown]
# ## Checking the paper
#
# ### Fig. 1(c) against the seeds
#
# The paper draws one run per β (Fig. 1c) and reads a monotone trade-off from it: β = 0 separates the
# classes well, and raising β to 0.5 "gradually" reduces the separation while aligning the field with the
# ELBO gradient. In the counts above this picture is fragile: β = 0 separated the moons in 1 of 3 seeds
# at 300 steps and 2 of 3 at 2000; β = 0.5 in 2 of 3 and 1 of 3; even β = 0.1 failed in 1 of 3 at 2000
# steps. A failed run's end states often collapse as the $\mathcal J_{\text{var}}$-only run's do, but not
# always: after 2000 steps, β = 0.5 of seed 1 misses the moons with its end states not collapsed to one spot (its
# accuracy and spread are in the per-seed lines printed above). What
# held in every seed of both schedules is the contrast at the ends (listed above). The monotone
# trade-off of Fig. 1(c) is one draw, not a reproducible property of this setup. The book's
# [errata](../ERRATA.md) records it (row "SVFlow — Liao, §3.3, Fig. 1(c)").
#
# ### Does the collapse happen "onto a single Gaussian component"?
#
# Fig. 1b's caption says the $\mathcal J_{\text{var}}$-only flow collapses "onto a single Gaussian
# component". The end states do collapse to a point, but a point where $q=p$ can be reached without
# singling out a component: we look at the posterior there, at how far apart the $p$-components are, and
# at the effective number of components used in every saved seed.

# %% tags=["hide-cell"]
last_slice = model.slice(3, times[-1])
end_points = paths[3, -1]
q_end = np.exp(last_slice.log_q(end_points)).mean(0)
p_end = np.exp(last_slice.log_post(end_points)).mean(0)
spread_of_means = np.linalg.norm(last_slice.p_means - last_slice.p_means.mean(0), axis=1).max()
print(f"J_var only, s = 1: max_z q(z|x_end) = {produced(q_end.max(), '.3f')}, "
      f"KL(q||p) = {produced(float(categorical_kl(np.log(q_end), np.log(p_end))), '.1e')}")
print(f"                   largest distance of a p-mean from their centroid = "
      f"{produced(spread_of_means, '.3f')}")
n_eff_saved = [seed_row["n_eff"][3] for saved in (saved_default, saved_long) for seed_row in saved["data"]["per_seed"]]
print(f"J_var only, effective number of components at s = 1, every saved seed (both schedules): "
      f"{min(n_eff_saved):.2f} to {max(n_eff_saved):.2f} of 8")
assert q_end.max() < 0.5 and rows[3]["n_eff"] > 6 and spread_of_means < 0.5
assert min(n_eff_saved) > 7.5

# %% [markdown]
# The end states collapse to a single point, as the paper reports. The posterior there is *not* peaked
# on one component ($\max_zq$ is far below 1, and the effective number of components is near 8 in every
# seed). In the run drawn above, the eight $p$-components have instead drifted together (the printed
# largest distance of a $p$-mean from their centroid, asserted below 0.5; compare the extent of
# the moons in Figure 5.4.1), and at the spot where the paths end both posteriors are close to uniform and
# agree (the printed $\max_zq$ and KL), so $q=p$ is trivially satisfied. "Collapse onto a single Gaussian
# component" is right in that sense — the components merge — rather than in the sense of one component
# winning the posterior; for the saved seeds the page has only the effective number of components, which
# says the posterior is flat there, not why. Either way, training on $\mathcal J_{\text{var}}$ alone
# drove it to zero here by destroying the information the representation should carry, which is the
# paper's point (though a $q$ that copies $p$ would make it zero without a collapse).
#
# ## Reproducibility
#
# The page trains the four runs for 300 steps with batch 256 (seed 0); setting the environment variable
# `FULL=1` runs the paper's 10,000 steps with batch 512 instead. Training for hundreds of steps amplifies
# last-digit differences between CPUs and their floating-point kernels (seed 0 on one thread, run on
# one machine with torch's AVX-512, its AVX2 and its unvectorised kernels, gave three β = 0 runs that
# ended at three different accuracies, one of them 1/2 like the saved run's), so the training table
# and the per-run measurements are printed as produced numbers (shown, but not compared as text when the
# notebook is re-run), and only the statements that held in every seed are asserted; none of them says
# whether the β = 0 or the β = 0.5 run of a seed separates the classes. The two saved runs
# of the same setting (seeds 0–2) were produced as follows:

# %% tags=["hide-cell"]
print(f"hybrid_default: produced by `{saved_default['command']}` "
      f"at commit {saved_default['commit'][:10]}"
      f"{' (uncommitted changes)' if saved_default['dirty'] else ''} "
      f"on {saved_default['created'][:10]}; "
      f"seeds {saved_default['seeds']} of this setting")
print(f"hybrid_long: produced by `{saved_long['command']}` at commit {saved_long['commit'][:10]}"
      f"{' (uncommitted changes)' if saved_long['dirty'] else ''} on {saved_long['created'][:10]}; "
      f"{saved_long['config']['steps']} steps, batch {saved_long['config']['batch_size']}, "
      f"seeds {saved_long['seeds']}; wall time {saved_long['wall_time_s'] / 60:.0f} min")
