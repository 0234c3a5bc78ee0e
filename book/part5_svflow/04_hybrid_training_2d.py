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
# 100-step unroll otherwise occasionally blows up at lr 0.01). The four runs are trained side by side in one
# stacked module (`nextword.torch.svflow_hybrid`), which is equivalent to training them separately.

# %%
import os

import numpy as np
import sympy as sp
import matplotlib.pyplot as plt
import torch

from nextword.booktools.plotting import use_book_style
from nextword.theory.svflow import categorical_kl, entropy
from nextword.torch.svflow_hybrid import LOG_VAR_RANGE, HybridConfig, make_moons, train_hybrid

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
rng = np.random.default_rng(0)
X_train, y_train = make_moons(2000, 0.06, rng)
X_test, y_test = make_moons(600, 0.06, rng)
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
paths, probs = model.flow(X_test)                     # (M, 101, N, 2), (M, N, 2)
times = np.arange(cfg.n_steps) * cfg.dt
rows = []
for r, lab in enumerate(LABELS):
    kls, coss = [], []
    for k in range(0, cfg.n_steps, 5):
        sl = model.slice(r, times[k])
        xk = paths[r, k]
        kls.append(sl.kl_gap(xk).mean())
        v = sl.field(xk)
        g = v + sl.epsilon(xk)
        coss.append(np.mean(np.sum(v * g, 1) / (np.linalg.norm(v, axis=1) * np.linalg.norm(g, axis=1) + 1e-300)))
    xT = paths[r, -1]
    mu0, mu1 = xT[y_test == 0].mean(0), xT[y_test == 1].mean(0)
    fisher = np.sum((mu1 - mu0) ** 2) / (np.trace(np.cov(xT[y_test == 0].T)) + np.trace(np.cov(xT[y_test == 1].T)))
    last = model.slice(r, times[-1])
    qbar = np.exp(last.log_q(xT)).mean(0)
    rows.append(dict(acc=np.mean(probs[r].argmax(1) == y_test), fisher=fisher, jvar=np.mean(kls),
                     kl_end=last.kl_gap(xT).mean(), cos=np.mean(coss), spread=np.linalg.norm(xT - xT.mean(0), axis=1).mean(),
                     n_eff=float(np.exp(entropy(np.log(qbar + 1e-300))))))

# %% tags=["nbval-ignore-output"]
print(f"{'run':>10} | {'accuracy':>8} | {'Fisher':>8} | {'J_var':>8} | {'KL at t=1':>9} | {'cos(v,∇L)':>9} | {'spread':>7} | {'n_eff':>5}")
for lab, rw in zip(LABELS, rows):
    print(f"{lab:>10} | {rw['acc']:8.3f} | {rw['fisher']:8.2f} | {rw['jvar']:8.4f} | {rw['kl_end']:9.4f} | "
          f"{rw['cos']:9.3f} | {rw['spread']:7.3f} | {rw['n_eff']:5.2f}")

# %% [markdown]
# The checks below assert what held in the default run (the table above is marked as machine-dependent:
# 300 steps of training amplify last-digit differences between CPUs). The paper-sized `FULL` run
# (10,000 steps) has not been executed for this book, so these checks are not known to hold there; a
# 2,000-step side run kept the hybrid runs' accuracy at 1.0 but saw the β = 0 run drift towards collapse.

# %%
acc = np.array([rw["acc"] for rw in rows])
jvar = np.array([rw["jvar"] for rw in rows])
print("hybrid runs separate the classes (accuracy >= 0.95):", bool(np.all(acc[:3] >= 0.95)))
print("J_var-only run does not separate them (accuracy < 0.7):", bool(acc[3] < 0.7))
print("J_var-only end states collapse to a point (spread < 0.05):", bool(rows[3]["spread"] < 0.05))
print("ELBO gap J_var falls as beta grows (0 > 0.1 > 0.5):", bool(jvar[0] > jvar[1] > jvar[2]))
assert np.all(acc[:3] >= 0.95) and acc[3] < 0.7 and rows[3]["spread"] < 0.05
assert jvar[0] > jvar[1] > jvar[2]

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
# **Summary.** The qualitative picture of Fig. 1 holds where it is measurable: without the task loss the
# flow collapses all points (no class information survives, accuracy 1/2); with the task loss the classes
# separate, and the trajectory-averaged ELBO gap $\mathcal J_{\text{var}}$ falls monotonically with $\beta$
# (asserted). The other half of the trade-off — "gradually reducing class separation" as $\beta$ grows —
# does not show in the default run: $\beta=0.5$ still separates the moons perfectly and the Fisher ratio of
# the end states is not monotone in $\beta$ (table above). A longer side run (2,000 steps, batch 512, same
# code: `HybridConfig(steps=2000, batch_size=512)`; not executed here) gave accuracy 1.0 for both $\beta=0.1$
# and $\beta=0.5$ with a much smaller Fisher ratio at $\beta=0.5$ (45 against $7.8\times10^5$) — separation
# reduced in spread, not in accuracy — while the $\beta=0$ run drifted into a collapsed state (accuracy 0.5,
# $\mathcal J_{\text{var}}\approx870$) despite gradient clipping. Pure cross-entropy training of this flow at
# lr 0.01 is therefore not reliably the "separates classes well" case of Fig. 1c; a small $\beta$ stabilised
# it in every run we made.
