# %% [markdown]
# # 5.4 Hybrid training of a 2-D Gaussian SVFlow: semantic alignment versus variational consistency
#
# **Source:** Liao, §3.3 (Eqs. 14–16), App. C.1 and Figure 1.
#
# A Gaussian SVFlow with 8 components moves 2-D points by the field of Eq. (9); its parameters depend on
# time through a small MLP. It is trained with the hybrid objective (Eq. 16)
# $$\mathcal J_{\text{hybrid}}=\mathcal J_{\text{align}}+\beta\,\mathcal J_{\text{var}},\qquad
# \mathcal J_{\text{align}}=\mathbb E[-\log p_T(y\mid x_T)],\quad
# \mathcal J_{\text{var}}=\mathbb E_{t,x_0}\,\mathrm{KL}(q_t(z\mid x_t)\,\|\,p_t(z\mid x_t)),$$
# for $\beta\in\{0,0.1,0.5\}$ and with $\mathcal J_{\text{var}}$ alone ($\beta\to\infty$). Figure 1 of the paper
# claims: (b) $\mathcal J_{\text{var}}$ alone collapses every point onto a single ELBO optimum; (c) with
# $\beta=0$ the classes separate but the field is not aligned with the ELBO gradient; increasing $\beta$
# aligns the field (smaller ELBO gap) while gradually reducing class separation.
#
# **Setup (App. C.1):** two moons with noise 0.06 (generated here, no scikit-learn), $|\mathcal Z|=8$,
# diagonal Gaussians $q(x\mid z)$ and $p(x\mid z)$ with $q(z\mid x)=\mathrm{softmax}_z\log q(x\mid z)$, a 3-layer
# MLP of width 64 on sinusoidal time features, forward Euler with $\Delta t=0.01$ on $[0,1]$, Adam (lr 0.01,
# betas 0.9/0.999), batch 512, 10,000 steps. **Default run here:** 300 steps with batch 256 (seconds on a
# CPU); `FULL=1` runs the paper's 10,000 steps with batch 512. Two additions, both stated: log-variances are
# squashed into $[-4,1]$ (Euler stability, derived below) and each run's gradient is clipped to norm 1 (the
# Euler unroll otherwise occasionally blows up at lr 0.01). The four runs are trained side by side in one
# stacked module (`nextword.torch.svflow.hybrid`), which is equivalent to training them separately.

# %%
import os

import numpy as np
import sympy as sp
import matplotlib.pyplot as plt
import torch

from nextword.booktools.plotting import use_book_style
from nextword.theory.svflow import categorical_kl
from nextword.provenance import load_result
from nextword.torch.svflow.hybrid import LOG_VAR_RANGE, HybridConfig, train_hybrid
from nextword.torch.svflow.hybrid_runs import hybrid_measurements, moons_data

use_book_style()
sp.init_printing(use_latex="mathjax")
torch.set_num_threads(1)          # tiny tensors: one thread is fastest and keeps runs reproducible

# %% tags=["parameters"]
FULL = os.environ.get("FULL", "0") == "1"
STEPS, BATCH = (10_000, 512) if FULL else (300, 256)
BETAS = (0.0, 0.1, 0.5, None)     # None = J_var only (beta -> infinity)
LABELS = ["β = 0", "β = 0.1", "β = 0.5", "J_var only"]

# %% [markdown]
# ## 1. The Gaussian field and the Euler step size
#
# For $p(x\mid z)=\mathcal N(m_z,\mathrm{diag}\,\sigma_z^2)$ the conditional score is $(m_z-x)/\sigma_z^2$, so the
# SVFlow field is $v(x)=\sum_zq(z\mid x)(m_z-x)/\sigma_z^2$ — a posterior-weighted pull towards the $p$-means.
# Near a single component, Euler's step multiplies the distance to $m_z$ by $1-\Delta t/\sigma_z^2$; sympy
# gives the stability condition:

# %%
x, m, s2, dt = sp.symbols("x m sigma2 dt", positive=True)
log_n = -(x - m) ** 2 / (2 * s2) - sp.log(2 * sp.pi * s2) / 2
score = sp.simplify(sp.diff(log_n, x))
factor = sp.simplify(sp.diff(x + dt * score, x))
print("score d/dx log N(x; m, sigma2) =", score)
print("Euler amplification factor      =", factor)
print("|factor| < 1  <=>", sp.solve([factor < 1, factor > -1], dt))
print(f"with log sigma^2 >= {LOG_VAR_RANGE[0]}: dt / sigma^2 <= {0.01 / np.exp(LOG_VAR_RANGE[0]):.3f} at dt = 0.01")

# %% [markdown]
# The step is stable (and monotone) as long as $\Delta t<2\sigma^2$; the squashing keeps
# $\Delta t/\sigma^2\le0.55$ at $\Delta t=0.01$.
#
# ## 2. Data (Figure 1a)

# %%
X_train, y_train, X_test, y_test = moons_data()  # 2000 + 600 points, noise 0.06, generator seed 0
fig, ax = plt.subplots(figsize=(4.5, 3.2))
ax.scatter(*X_train.T, c=y_train, s=4, cmap="coolwarm")
ax.set_title("(a) two moons, noise 0.06")
ax.set_aspect("equal")
plt.show()

# %% [markdown]
# **Figure 4.1** (cf. Fig. 1a). The training set, coloured by class.
#
# ## 3. Training the four runs

# %% tags=["nbval-ignore-output"]
cfg = HybridConfig(betas=BETAS, steps=STEPS, batch_size=BATCH, seed=0)
model, log = train_hybrid(cfg, X_train, y_train)
for r, lab in enumerate(LABELS):
    tail = log[-max(1, STEPS // 20):, r].mean(axis=0)
    print(f"{lab:>10}: last-5% mean J_hybrid = {tail[0]:.4f}, J_align = {tail[1]:.4f}, J_var = {tail[2]:.4f}")

# %%
fig, axes = plt.subplots(1, 2, figsize=(10, 3.4))
for r, lab in enumerate(LABELS):
    axes[0].plot(log[:, r, 1], lw=1, label=lab)
    axes[1].semilogy(log[:, r, 2] + 1e-6, lw=1, label=lab)
axes[0].set_title(r"$\mathcal{J}_{\mathrm{align}}$ (cross-entropy)")
axes[1].set_title(r"$\mathcal{J}_{\mathrm{var}}$ (mean KL over the path)")
for a in axes:
    a.set_xlabel("Adam step")
axes[1].legend(fontsize=8)
plt.show()

# %% [markdown]
# **Figure 4.2.** Training curves of the four runs (one mini-batch per step).
#
# ## 4. Measurements per run, on held-out points
#
# * **class separation:** accuracy of $p_T(y\mid x_T)$ and the Fisher ratio
#   $\lVert\bar x_T^{(1)}-\bar x_T^{(0)}\rVert^2/(\mathrm{tr}\,\Sigma^{(0)}+\mathrm{tr}\,\Sigma^{(1)})$ of the end states;
# * **ELBO gap:** $\mathcal J_{\text{var}}$ on the test paths (mean over time and points of
#   $\mathrm{KL}(q\,\|\,p)=\log p-\mathcal L$, Prop. 3.2), and its value at the last step;
# * **alignment:** the mean cosine between $v$ and $\nabla_x\mathcal L=v+\epsilon$ (Theorem 3.3) along the paths;
# * **collapse:** the spread of the end states and the effective number of $q$-components used
#   $\exp H(\bar q)$, $\bar q$ the mean posterior at $t=1$.
#
# Everything below uses the numpy `GaussianSVFlow` slices of the trained MLP (`model.slice(run, t)`).

# %%
rows, paths = hybrid_measurements(model, X_test, y_test)  # one dict per run; paths (M, 101, N, 2)
times = np.arange(cfg.n_steps) * cfg.dt

# %% tags=["nbval-ignore-output"]
print(f"{'run':>10} | {'accuracy':>8} | {'Fisher':>8} | {'J_var':>8} | {'KL at t=1':>9} | {'cos(v,∇L)':>9} | {'spread':>7} | {'n_eff':>5}")
for lab, rw in zip(LABELS, rows):
    print(f"{lab:>10} | {rw['acc']:8.3f} | {rw['fisher']:8.2f} | {rw['jvar']:8.4f} | {rw['kl_end']:9.4f} | "
          f"{rw['cos']:9.3f} | {rw['spread']:7.3f} | {rw['n_eff']:5.2f}")

# %% [markdown]
# Which of these properties are robust? 300 steps of training amplify last-digit differences between
# CPUs (the table above is therefore not compared by `pytest --nbval`), and some properties are not robust
# at all: a run sometimes separates the moons and sometimes collapses all points onto one spot (accuracy
# 1/2), depending on the seed and even on the CPU's floating-point kernels. We ran this very setting with
# seeds 0–2 (a saved run, `nextword results run hybrid_default`, in
# `book/results/hybrid_default/`) and sort the statements into those that held in every seed — asserted
# here and on each saved seed — and those that did not, whose counts we print from the saved run.
#
# Held in every seed: the run with β = 0.1 separates the classes (accuracy ≥ 0.95); the
# $\mathcal J_{\text{var}}$-only run does not (accuracy < 0.7) and its end states collapse (spread < 0.05);
# the ELBO gap $\mathcal J_{\text{var}}$ of the β = 0.1 run is more than ten times smaller than that of β = 0.

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


acc = np.array([rw["acc"] for rw in rows])
jvar = np.array([rw["jvar"] for rw in rows])
claims = robust_claims(acc, jvar, [rw["spread"] for rw in rows])
for k, v in claims.items():
    print(f"{k}: {v}")
assert all(claims.values()), claims

# %%
saved_default = load_result("hybrid_default")
assert (saved_default["config"]["steps"], saved_default["config"]["batch_size"]) == (STEPS, BATCH) or FULL
print(f"saved run: produced by `{saved_default['command']}` at commit {saved_default['commit'][:10]}"
      f"{' (uncommitted changes)' if saved_default['dirty'] else ''} on {saved_default['created'][:10]}; "
      f"seeds {saved_default['seeds']} of this setting")
robust_n, fragile_n = {}, {}
for r in saved_default["data"]["per_seed"]:
    rc, fc = robust_claims(r["acc"], r["jvar"], r["spread"]), fragile_claims(r["acc"], r["jvar"])
    robust_n = {k: robust_n.get(k, 0) + v for k, v in rc.items()}
    fragile_n = {k: fragile_n.get(k, 0) + v for k, v in fc.items()}
    print(f"seed {r['seed']}: accuracy per run {[f'{a:.2f}' for a in r['acc']]}; J_var per run "
          f"{[f'{v:.1e}' for v in r['jvar']]}; spread per run {[f'{v:.1e}' for v in r['spread']]}")
n_default = len(saved_default["data"]["per_seed"])
for k, n in {**robust_n, **fragile_n}.items():
    print(f"{k}: {n} of {n_default} seeds")
assert n_default >= 3 and all(n == n_default for n in robust_n.values())

# %% [markdown]
# So the picture of Fig. 1c is fragile in this setting: pure cross-entropy training (β = 0) and even
# β = 0.5 can end in a collapsed flow, and the ELBO gap does not always keep falling from β = 0.1 to
# β = 0.5 (counts above). What held in every seed is the contrast between no variational term, a small one
# and the variational term alone.

# %% [markdown]
# **Does longer training settle it?** The fragile statements might only mean that 300 steps are too few.
# The saved run `hybrid_long` trains the same four runs for 2000 steps on batches of 512 (seeds 0–2;
# `nextword results run hybrid_long`, in `book/results/hybrid_long/`) and applies the same
# two lists of statements. A Fisher ratio printed as "undefined" belongs to a run whose test points all end
# at the same spot (0/0).

# %%
saved_long = load_result("hybrid_long")
print(f"saved run: produced by `{saved_long['command']}` at commit {saved_long['commit'][:10]}"
      f"{' (uncommitted changes)' if saved_long['dirty'] else ''} on {saved_long['created'][:10]}; "
      f"{saved_long['config']['steps']} steps, batch {saved_long['config']['batch_size']}, seeds {saved_long['seeds']}; "
      f"wall time {saved_long['wall_time_s'] / 60:.0f} min")


def fisher_text(f) -> str:
    return "undefined" if f is None else f"{f:.1e}"


robust_long, fragile_long = {}, {}
for r in saved_long["data"]["per_seed"]:
    rc, fc = robust_claims(r["acc"], r["jvar"], r["spread"]), fragile_claims(r["acc"], r["jvar"])
    robust_long = {k: robust_long.get(k, 0) + v for k, v in rc.items()}
    fragile_long = {k: fragile_long.get(k, 0) + v for k, v in fc.items()}
    print(f"seed {r['seed']}: accuracy per run {[f'{a:.2f}' for a in r['acc']]}; J_var per run "
          f"{[f'{v:.1e}' for v in r['jvar']]}; spread per run {[f'{v:.1e}' for v in r['spread']]}; "
          f"Fisher per run {[fisher_text(f) for f in r['fisher']]}")
n_long = len(saved_long["data"]["per_seed"])
for k, n in {**robust_long, **fragile_long}.items():
    print(f"{k}: {n} of {n_long} seeds (300 steps: {({**robust_n, **fragile_n})[k]} of {n_default})")
assert n_long == 3 and saved_long["config"]["steps"] == 2000
always_long = {k for k, n in {**robust_long, **fragile_long}.items() if n == n_long}
assert always_long >= {"J_var only does not separate them (accuracy < 0.7)", "J_var only collapses (spread < 0.05)",
                       "J_var(beta = 0) > 10 x J_var(beta = 0.1)"}
assert robust_long["beta = 0.1 separates the classes (accuracy >= 0.95)"] < n_long

# %% [markdown]
# Longer training does not make the picture of Fig. 1c robust; it moves the fragility. After 2000 steps
# the small variational weight β = 0.1 no longer separates the classes in every seed (counts above, beside
# those of the 300-step runs), and which of the three hybrid runs collapses changes from seed to seed. What
# survives both schedules is the contrast at the ends: $\mathcal J_{\text{var}}$ alone never separates
# the classes and always collapses its end states, and β = 0.1 shrinks the ELBO gap by more than an order
# of magnitude against β = 0 (asserted).

# %% [markdown]
# ## 5. Figure 1, rebuilt
#
# Rows: the three hybrid runs; columns: $t=0.2,\dots,1.0$. Background: the ELBO $\mathcal L_t(x)$ of that
# time slice; arrows: the SVFlow field $v_t$; points: the test points at time $t$, coloured by class; red
# star: the grid maximum of $\mathcal L_t$ (the "ELBO optimum"). The last panel is the $\mathcal J_{\text{var}}$-only run at
# $t=1$ (Fig. 1b).

# %%
show_t = [0.2, 0.4, 0.6, 0.8, 1.0]
fig, axes = plt.subplots(3, 6, figsize=(17, 8.4))
for r in range(3):
    for c, t in enumerate(show_t):
        k = int(round(t / cfg.dt))
        pts = paths[r, k]
        lo, hi = pts.min(0) - 0.5, pts.max(0) + 0.5
        gx, gy = np.meshgrid(np.linspace(lo[0], hi[0], 60), np.linspace(lo[1], hi[1], 60))
        grid = np.stack([gx, gy], -1)
        sl = model.slice(r, min(t, times[-1]))
        L = sl.elbo(grid)
        ax = axes[r, c]
        ax.contourf(gx, gy, L, levels=np.unique(np.quantile(L, np.linspace(0, 1, 21))), cmap="viridis")
        sub = (slice(None, None, 6), slice(None, None, 6))
        V = sl.field(grid)
        ax.quiver(gx[sub], gy[sub], V[sub][..., 0], V[sub][..., 1], color="white", alpha=0.7)
        ax.scatter(*pts.T, c=y_test, s=2, cmap="coolwarm")
        i, j = np.unravel_index(np.argmax(L), L.shape)
        ax.scatter(gx[i, j], gy[i, j], marker="*", s=120, c="red")
        ax.set_xticks([])
        ax.set_yticks([])
        if r == 0:
            ax.set_title(f"t = {t:.1f}")
        if c == 0:
            ax.set_ylabel(LABELS[r])
for r in range(3):
    axes[r, 5].axis("off")
ax = axes[1, 5]
ax.axis("on")
pts = paths[3, -1]
lo, hi = pts.min(0) - 1.0, pts.max(0) + 1.0
gx, gy = np.meshgrid(np.linspace(lo[0], hi[0], 60), np.linspace(lo[1], hi[1], 60))
grid = np.stack([gx, gy], -1)
sl = model.slice(3, times[-1])
ax.contourf(gx, gy, sl.elbo(grid), levels=20, cmap="viridis")
V = sl.field(grid)
ax.quiver(gx[::6, ::6], gy[::6, ::6], V[::6, ::6, 0], V[::6, ::6, 1], color="white", alpha=0.7)
ax.scatter(*pts.T, c=y_test, s=4, cmap="coolwarm")
ax.set_title("(b) J_var only, t = 1")
ax.set_xticks([])
ax.set_yticks([])
plt.show()

# %% [markdown]
# **Figure 4.3** (cf. Fig. 1b–c). Trajectories of the test points under the trained flows, over the ELBO
# of each time slice. With $\mathcal J_{\text{var}}$ alone, all points end in one spot (right). The hybrid runs
# separate the moons; compare the field and the contours per row.
#
# ## 6. Does the collapse happen "onto a single Gaussian component"?
#
# Fig. 1b's caption says the $\mathcal J_{\text{var}}$-only flow collapses "onto a single Gaussian component". The
# end states do collapse to a point, but a point where $q=p$ can be reached without singling out a
# component: we look at the posterior there and at how far apart the $p$-components are.

# %% tags=["nbval-ignore-output"]
last = model.slice(3, times[-1])
xT = paths[3, -1]
q_end = np.exp(last.log_q(xT)).mean(0)
p_end = np.exp(last.log_post(xT)).mean(0)
spread_means = np.linalg.norm(last.p_means - last.p_means.mean(0), axis=1).max()
print(f"J_var only, t = 1: max_z q(z|x_T) = {q_end.max():.3f}, KL(q||p) = {float(categorical_kl(np.log(q_end), np.log(p_end))):.1e}")
print(f"                   largest distance of a p-mean from their centroid = {spread_means:.3f}")

# %% [markdown]
# The end states collapse to a single point, as the paper reports. The posterior there is *not* peaked on
# one component ($\max_zq$ is far below 1, $n_{\text{eff}}$ in the table is near 8): instead the eight
# $p$-components have drifted together (their means lie within a small distance of each other), so the
# mixture is in effect one Gaussian and $q=p$ is trivially satisfied. "Collapse onto a single Gaussian
# component" is right in that sense — the components merge — rather than in the sense of one component
# winning the posterior. Either way, $\mathcal J_{\text{var}}$ alone is minimised by destroying the
# information the representation should carry, which is the paper's point.
#
# **Summary.** The qualitative picture of Fig. 1 holds only in part, and not in every seed. Without the task
# loss the flow collapses all points (no class information survives, accuracy 1/2), in every seed; with the
# task loss and β = 0.1 the classes separate, and the trajectory-averaged ELBO gap $\mathcal J_{\text{var}}$
# is far smaller than with β = 0, in every seed (asserted). Beyond that the runs are fragile: pure
# cross-entropy training (β = 0) of this flow at lr 0.01 is not reliably the "separates classes well" case of
# Fig. 1c, a run with β = 0.5 can collapse too, and the ELBO gap does not always fall further from β = 0.1
# to β = 0.5 (the counts over three seeds are printed in section 4). The other half of the trade-off —
# "gradually reducing class separation" as β grows — is not what we see: when the β = 0.5 run separates the
# moons, it separates them fully. The paper's 10,000 steps were not run.
