# %% [markdown]
# # 5.1 Spherical geometry: exponential map, retraction, RMSNorm and the von Mises–Fisher distribution
#
# **Source:** Liao, *Transformer as an Euler Discretization of Score-based Variational Flow*, §2.2
# (Eqs. 2–3), §2.3 (Eqs. 7–8), §4.1 (Eqs. 17–18) and App. C.2.3 (numerical stability).
#
# The paper places every hidden state of a Transformer on the unit sphere $\mathbb S^{d-1}$. Three
# geometric facts carry the argument:
#
# 1. the retraction $R_x(v)=(x+v)/\lVert x+v\rVert$ (Eq. 3) approximates the exponential map
#    $\exp_x(v)=\cos\lVert v\rVert\,x+\sin\lVert v\rVert\,v/\lVert v\rVert$ (Eq. 2) with error
#    $\mathcal O(\lVert v\rVert^2)$;
# 2. residual + RMSNorm, $\mathrm{RMSNorm}(x+v)$, equals the retraction of the *projected* update
#    $R_x((I-xx^\top)v)$ up to $\mathcal O(\lVert v\rVert^2)$ (Eq. 17) — a "relaxed retraction";
# 3. the von Mises–Fisher (vMF) density $C_d(\kappa)\exp(\kappa\mu^\top x)$ (Eq. 18) has the Euclidean
#    score $\kappa\mu$, constant in $x$.
#
# We derive each statement symbolically, measure the error orders, and evaluate the vMF normaliser in
# log space, which removes the overflow the paper reports for large $\kappa$ (App. C.2.3).

# %%
import numpy as np
import sympy as sp
import matplotlib.pyplot as plt

from nextword.decoder import rms_norm
from nextword.numerics import central_difference
from nextword.booktools.plotting import use_book_style
from nextword.theory.svflow import (
    exp_map, retraction, sphere_log_area, tangent_projection,
    vmf_log_density, vmf_log_normalizer, vmf_log_normalizer_naive, vmf_mean_resultant_length,
    vmf_sample, vmf_score,
)

use_book_style()
sp.init_printing(use_latex="mathjax")
rng = np.random.default_rng(0)

# %% [markdown]
# ## 1. Retraction versus exponential map (Eqs. 2–3)
#
# By rotational symmetry it suffices to take $x=e_1$ and $v=t\,e_2$ with $t=\lVert v\rVert$. Then
# $\exp_x(v)=(\cos t,\sin t)$ and $R_x(v)=(1,t)/\sqrt{1+t^2}$. Sympy expands the difference:

# %%
t = sp.symbols("t", positive=True)
exp_v = sp.Matrix([sp.cos(t), sp.sin(t)])
ret_v = sp.Matrix([1, t]) / sp.sqrt(1 + t**2)
diff_series = (ret_v - exp_v).applyfunc(lambda e: sp.series(e, t, 0, 6).removeO())
print("R_x(v) - exp_x(v) =", [sp.simplify(c) for c in diff_series])
norm_series = sp.series(sp.sqrt(sum(c**2 for c in (ret_v - exp_v))), t, 0, 5)
print("||R_x(v) - exp_x(v)|| =", norm_series)

# %% [markdown]
# The first-order and second-order terms cancel: the difference starts at $-t^3/3$ along $v$. So the
# paper's $\mathcal O(\lVert v\rVert^2)$ is true but not sharp — the projective retraction is a
# *second-order* retraction, with error $\tfrac13\lVert v\rVert^3$. (Not an erratum: a big-O bound that
# holds with one order to spare.) Numerically, in $d=16$ with random $x$ and tangent directions:

# %%
d = 16
x = rng.standard_normal(d)
x /= np.linalg.norm(x)
u = tangent_projection(x, rng.standard_normal(d))
u /= np.linalg.norm(u)
w = rng.standard_normal(d)
w /= np.linalg.norm(w)                      # a generic (non-tangent) update direction for Eq. (17)
ts = np.logspace(-3, -0.5, 12)

err_ret = np.array([np.linalg.norm(retraction(x, s * u) - exp_map(x, s * u)) for s in ts])
# Eq. (17): RMSNorm(x + v) on the unit sphere (the library's rms_norm with unit=True, eps=0)
err_17 = np.array([np.linalg.norm(rms_norm(x + s * w, eps=0.0, unit=True)
                                  - retraction(x, tangent_projection(x, s * w))) for s in ts])
small = ts < 0.05
slope_ret = np.polyfit(np.log(ts[small]), np.log(err_ret[small]), 1)[0]
slope_17 = np.polyfit(np.log(ts[small]), np.log(err_17[small]), 1)[0]
print(f"fitted slope, ||R_x(v) - exp_x(v)||              : {slope_ret:.3f}")
print(f"fitted slope, ||RMSNorm(x+v) - R_x((I-xx^T)v)||   : {slope_17:.3f}")
print(f"error / ||v||^3 at ||v|| = 1e-3                   : {err_ret[0] / ts[0]**3:.6f}  (sympy: 1/3)")
assert abs(slope_ret - 3.0) < 0.02 and abs(err_ret[0] / ts[0] ** 3 - 1 / 3) < 1e-3
assert abs(slope_17 - 2.0) < 0.02

# %%
fig, ax = plt.subplots()
ax.loglog(ts, err_ret, "o-", label=r"$\|R_x(v)-\exp_x(v)\|$ (Eq. 3 vs 2)")
ax.loglog(ts, err_17, "s-", label=r"$\|\mathrm{RMSNorm}(x+v)-R_x((I-xx^\top)v)\|$ (Eq. 17)")
ax.loglog(ts, ts**2, "k--", lw=1, label=r"$\|v\|^2$ (the paper's bound)")
ax.loglog(ts, ts**3 / 3, "k:", lw=1, label=r"$\|v\|^3/3$")
ax.set_xlabel(r"$\|v\|$")
ax.set_ylabel("error")
ax.set_title(f"slopes: retraction {slope_ret:.2f}, relaxed retraction {slope_17:.2f}")
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# **Figure 1.1.** Error of the retraction (Eq. 3) against the exponential map (Eq. 2), and of
# residual + unit-sphere RMSNorm against the retraction of the projected update (Eq. 17), on log–log
# axes. The retraction error has slope 3 (second-order retraction, sharper than the stated
# $\mathcal O(\lVert v\rVert^2)$); the relaxed retraction has slope 2, as Eq. (17) states.
#
# ## 2. Why Eq. (17) is only first-order accurate
#
# Split $v=a\,x+w$ with $a=x^\top v$ and $w\perp x$. Then
# $(x+v)/\lVert x+v\rVert=\big((1+a)x+w\big)/\lVert\cdot\rVert=R_x\!\big(w/(1+a)\big)$ exactly, so the
# relaxed retraction is the retraction of a *rescaled* tangent step. The rescaling $1/(1+a)$ differs from
# 1 at first order in $a$, which puts the discrepancy at second order:

# %%
a, s = sp.symbols("a s", real=True)
relaxed = sp.Matrix([1 + a, s]) / sp.sqrt((1 + a) ** 2 + s**2)   # x = e1, v = a e1 + s e2
proj = sp.Matrix([1, s]) / sp.sqrt(1 + s**2)
eps = sp.symbols("epsilon", positive=True)
gap = (relaxed - proj).subs({a: eps * a, s: eps * s})
gap2 = gap.applyfunc(lambda e: sp.simplify(sp.series(e, eps, 0, 3).removeO()))
print("RMSNorm(x+v) - R_x((I-xx^T)v) to second order:", list(gap2))
assert sp.simplify(gap2[1] + a * s * eps**2) == 0

# %% [markdown]
# The tangent component of the gap is $-a\,s$: the product of the normal and tangential parts of the
# update. It vanishes when the update is tangent ($a=0$) — which is the case Eq. (3) covers — and the
# numbers below confirm the library's `rms_norm(..., unit=True)` is exactly $R_x(v)$ applied to the raw
# update (the residual stream followed by RMSNorm is the retraction formula, Eq. 8 on the unit sphere):

# %%
X = rng.standard_normal((4, d))
X /= np.linalg.norm(X, axis=1, keepdims=True)
V = rng.standard_normal((4, d))
gap_rms = np.max(np.abs(rms_norm(X + V, eps=0.0, unit=True) - retraction(X, V)))
gap_radius = np.max(np.abs(rms_norm(np.sqrt(d) * X + V, eps=0.0) / np.sqrt(d) - retraction(X, V / np.sqrt(d))))
print(f"max |RMSNorm_unit(x+v) - R_x(v)|                        = {gap_rms:.2e}")
print(f"radius-sqrt(d) RMSNorm (Eq. 7) after rescaling the state = {gap_radius:.2e}")
assert gap_rms < 1e-14 and gap_radius < 1e-14

# %% [markdown]
# ## 3. The vMF normaliser in log space (Eq. 18)
#
# $C_d(\kappa)=\kappa^{d/2-1}/\big((2\pi)^{d/2}I_{d/2-1}(\kappa)\big)$. In float64, $I_\nu(\kappa)$
# overflows near $\kappa\approx 713$, and $(2\pi)^{d/2}$ overflows for $d\gtrsim 770$ — so for the
# widths of the paper's models ($d=896$–$2048$) the direct formula fails at *every* $\kappa$, not only at
# the large $\kappa$ App. C.2.3 mentions. In log space,
# $\log C_d=(d/2-1)\log\kappa-\tfrac d2\log 2\pi-\log I_{d/2-1}(\kappa)$ with
# $\log I_\nu(\kappa)=\log\mathrm{ive}_\nu(\kappa)+\kappa$ (scipy's exponentially scaled Bessel
# function) and, where even `ive` underflows (order in the thousands, small $\kappa$), the Debye uniform
# expansion or the power series. First the checks against closed forms:

# %%
kap = sp.symbols("kappa", positive=True)
theta = sp.symbols("theta")
# d = 3: integrate exp(kappa cos theta) over the sphere (area element sin theta dtheta dphi)
Z3 = sp.simplify(2 * sp.pi * sp.integrate(sp.exp(kap * sp.cos(theta)) * sp.sin(theta), (theta, 0, sp.pi)))
print("d=3:  1/C_3(kappa) =", Z3)
C3_paper = kap ** sp.Rational(1, 2) / ((2 * sp.pi) ** sp.Rational(3, 2) * sp.besseli(sp.Rational(1, 2), kap))
print("      paper's C_3 * integral, simplified =", sp.simplify((C3_paper * Z3).rewrite(sp.sinh)))

for kv in (0.5, 5.0, 50.0, 5000.0):
    log_c3 = np.log(kv) - np.log(2 * np.pi) - (kv + np.log1p(-np.exp(-2 * kv)))   # log(kappa/(4 pi sinh kappa))
    assert abs(vmf_log_normalizer(kv, 3) - log_c3) < 1e-10 * max(1, abs(log_c3))
    thetas = np.linspace(0, 2 * np.pi, 40001)                # d = 2: 1/C_2 = int exp(k cos) dtheta
    log_int = kv + np.log(np.trapezoid(np.exp(kv * (np.cos(thetas) - 1)), thetas))
    assert abs(-vmf_log_normalizer(kv, 2) - log_int) < 1e-8 * max(1, abs(log_int))
print("log C_d matches the closed form (d=3) and quadrature (d=2) for kappa in {0.5, 5, 50, 5000}")

# %%
kappas = np.array([1.0, 100.0, 700.0, 720.0, 1e3, 1e4, 1e5])
print(f"{'kappa':>8} | {'naive d=3':>12} | {'log-space d=3':>14} | {'naive d=1024':>12} | {'log-space d=1024':>16}")
for kv in kappas:
    print(f"{kv:8.0f} | {vmf_log_normalizer_naive(kv, 3):12.4f} | {vmf_log_normalizer(kv, 3):14.4f} | "
          f"{vmf_log_normalizer_naive(kv, 1024):12.4f} | {vmf_log_normalizer(kv, 1024):16.4f}")
assert np.all(np.isfinite(vmf_log_normalizer(kappas, 1024)))
assert not np.isfinite(vmf_log_normalizer_naive(1e3, 3))

# %% [markdown]
# For $\kappa\to\infty$ the vMF approaches a Gaussian of variance $1/\kappa$ on the tangent plane, so
# $\log C_d(\kappa)=\tfrac{d-1}{2}\log\tfrac{\kappa}{2\pi}-\kappa+\mathcal O(1/\kappa)$. This gives an
# independent check of the log-space value deep in the overflow region, and below the check the
# normaliser is plotted for several widths.

# %%
for dd in (3, 64, 1024):
    kk = np.array([1e6, 1e7])
    asym = 0.5 * (dd - 1) * np.log(kk / (2 * np.pi)) - kk
    rel = np.abs(vmf_log_normalizer(kk, dd) - asym) / np.abs(asym)
    print(f"d={dd:5d}: relative gap to the large-kappa asymptote at kappa=1e6, 1e7: {rel[0]:.1e}, {rel[1]:.1e}")
    assert np.all(rel < 1e-3)

fig, ax = plt.subplots()
kgrid = np.logspace(-2, 5, 200)
for dd in (3, 64, 896, 2048):
    ax.semilogx(kgrid, (vmf_log_normalizer(kgrid, dd) + sphere_log_area(dd)) / dd, label=f"d = {dd}")
ax.axvline(713, color="grey", ls=":", lw=1)
ax.text(800, 0.1, "iv overflows", fontsize=8, color="grey")
ax.set_xlabel(r"$\kappa$")
ax.set_ylabel(r"$(\log C_d(\kappa) + \log|\mathbb{S}^{d-1}|)/d$")
ax.set_title("vMF normaliser relative to the uniform density, per dimension")
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# **Figure 1.2.** $\log C_d(\kappa)$ relative to the uniform density $1/|\mathbb S^{d-1}|$, per dimension
# (the unit the paper's Tables 1–2 use for $-\log p_t$). The curves are finite across the whole range,
# including $\kappa\sim10^5$ (the Qwen3 layers of App. C.2.3) and $d=896$/$2048$ (Qwen2.5 / Llama3.2
# widths). At $\kappa=0$ every curve starts at 0: the vMF is then uniform.
#
# ## 4. The Euclidean score $\kappa\mu$ and a sampler check
#
# Extended to $\mathbb R^d$, $\log p_{\text{vMF}}(x)=\log C_d(\kappa)+\kappa\mu^\top x$ has gradient
# $\kappa\mu$ — the constant score that lets the value–output projection play the conditional score in
# §4.2. (On the sphere itself the Riemannian score is its tangent part $(I-xx^\top)\kappa\mu$.) We check
# it by finite differences and check the normaliser once more through sampling: Wood's sampler draws
# $t=\mu^\top x$ with density $\propto e^{\kappa t}(1-t^2)^{(d-3)/2}$ and $\mathbb E[x]=A_d(\kappa)\mu$,
# $A_d=I_{d/2}/I_{d/2-1}$.

# %%
dd, kv = 5, 6.0
mu = rng.standard_normal(dd)
mu /= np.linalg.norm(mu)
y = rng.standard_normal(dd)
h = 1e-6
f_ext = lambda z: vmf_log_normalizer(kv, dd) + kv * z @ mu        # noqa: E731
fd = central_difference(f_ext, y, h=h)  # (dd,)
print("finite-difference score matches kappa mu to 1e-6:", bool(np.allclose(fd, vmf_score(mu, kv), atol=1e-6)))
assert np.allclose(fd, vmf_score(mu, kv), atol=1e-6)

samples = vmf_sample(mu, kv, 50_000, rng)
emp_mean = samples.mean(axis=0)
print(f"|E[x]| Monte Carlo = {np.linalg.norm(emp_mean):.4f}, A_d(kappa) = {vmf_mean_resultant_length(kv, dd):.4f}")
assert np.allclose(emp_mean, vmf_mean_resultant_length(kv, dd) * mu, atol=0.01)
# the density integrates to one: E_uniform[p_vMF] * |S^{d-1}| = 1 by importance sampling
unif = rng.standard_normal((200_000, dd))
unif /= np.linalg.norm(unif, axis=1, keepdims=True)
mass = np.mean(np.exp(vmf_log_density(unif, mu, kv) + sphere_log_area(dd)))
print(f"integral of p_vMF over the sphere (Monte Carlo) = {mass:.3f}")
assert abs(mass - 1) < 0.03

# %%
tgrid = np.linspace(-1, 1, 400)
log_dens_t = (vmf_log_normalizer(kv, dd) + sphere_log_area(dd - 1) + kv * tgrid
              + 0.5 * (dd - 3) * np.log(np.clip(1 - tgrid**2, 1e-300, None)))
fig, ax = plt.subplots()
ax.hist(samples @ mu, bins=60, density=True, alpha=0.5, label="Wood sampler")
ax.plot(tgrid, np.exp(log_dens_t), "k", lw=1.5, label=r"$C_d(\kappa)|\mathbb{S}^{d-2}|e^{\kappa t}(1-t^2)^{(d-3)/2}$")
ax.set_xlabel(r"$t=\mu^\top x$")
ax.set_ylabel("density")
ax.set_title(fr"vMF on $\mathbb{{S}}^{{{dd - 1}}}$, $\kappa={kv:g}$")
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# **Figure 1.3.** Distribution of $\mu^\top x$ for vMF samples ($d=5$, $\kappa=6$) against the density
# implied by Eq. (18) with the log-space normaliser: the histogram and the curve agree, so $C_d$ normalises
# the density.
#
# **Summary.** The retraction approximates the exponential map with error $\tfrac13\lVert v\rVert^3$
# (the paper's $\mathcal O(\lVert v\rVert^2)$ holds with room to spare). Residual + RMSNorm is the relaxed
# retraction of Eq. (17), accurate to first order, with the second-order gap $-a\,s$ coming from the normal
# part of the update. The vMF normaliser is computed stably in log space for all $\kappa$ and $d$, so the
# overflow caveat of App. C.2.3 is an implementation artefact, not a limit of the metric.
