# %% [markdown]
# > Work on your own copy (`.venv/bin/nextword exercises copy ~/my-exercises` in a terminal; a
# > `git pull` rewrites the repository's `exercises/`). Replace each `NotImplementedError` stub, then
# > run the self-check cell at the end: it lists every check, ✓ or ✗. Stuck? `hint("p5_02", 1)`
# > gives a first hint, tiers 2 and 3 say more. Written answers: after trying, `reveal("p5_02")`.
# > Where you stand on all exercises: `.venv/bin/nextword grade --dir ~/my-exercises`.
# > (For maintainers: this file is generated from `solutions/` by
# > `python -m nextword.booktools.exercises build`; change the solution, not this file.)

# %%
from nextword.booktools.exercises import hint, reveal  # noqa: F401  (hints and model answers on demand)

# %% [markdown]
# # Exercise 02 — The vMF normaliser without overflow
# **Part:** 5 · **Difficulty:** ★★ · **Book notebook:** book/part5_svflow/01_spherical_geometry
#
# The von Mises–Fisher density on $\mathbb S^{d-1}$ is $C_d(\kappa)\exp(\kappa\mu^\top x)$ with
# $C_d(\kappa)=\kappa^{d/2-1}/\big((2\pi)^{d/2}I_{d/2-1}(\kappa)\big)$ (Liao, Eq. 18). App. C.2.3 of the paper
# warns that $\log C_d(\kappa)$ "can overflow" for large $\kappa$ and reports its numbers with that caveat.
#
# 1. Show that the direct formula with `scipy.special.iv` fails: evaluate it for $(\kappa,d)=(1000,3)$ and
#    $(1,1024)$ and say why each fails.
# 2. Implement `log_vmf_normaliser(kappa, d)` for $\kappa>0$ in log space. The scaled Bessel function
#    `scipy.special.ive` ($\mathrm{ive}_\nu(\kappa)=I_\nu(\kappa)e^{-\kappa}$) removes the overflow at large
#    $\kappa$, but $\log\mathrm{ive}_\nu(\kappa)+\kappa$ is still $-\infty$ at $(\kappa,d)=(1,1024)$: there
#    $\mathrm{ive}$ itself underflows. Make your $\log I_\nu$ finite there too (a power series summed in log
#    space, or the uniform asymptotic expansion for large $\nu$). Do not call `nextword.theory`.
# 3. Check your function at $d=3$ against the closed form $C_3(\kappa)=\kappa/(4\pi\sinh\kappa)$, and your
#    $\log I_\nu$ against `mpmath` (it comes with sympy) at small $\kappa$ in high dimension.

# %%
import numpy as np
from scipy import special


def naive_log_cd(kappa: float, d: int) -> float:
    nu = d / 2 - 1
    with np.errstate(all="ignore"):
        return float(np.log(np.float64(kappa) ** nu / (np.float64(2 * np.pi) ** (d / 2) * special.iv(nu, kappa))))


print(f"naive log C_3(1000)  = {naive_log_cd(1000.0, 3)}")
print(f"naive log C_1024(1)  = {naive_log_cd(1.0, 1024)}")

# %% [markdown]
# **Answer to 1.**
# *Your answer here.* (Once you have written it, `reveal("p5_02", 1)` shows a model answer.)

# %%
def log_bessel_i(nu: float, kappa: float) -> float:
    """log I_nu(kappa) for nu >= 0, kappa > 0, finite wherever the logarithm is a float."""
    raise NotImplementedError("return log I_nu(kappa) as a float, finite even where ive(nu, kappa) underflows to 0 (stuck? hint('p5_02', 1))")


def log_vmf_normaliser(kappa: float, d: int) -> float:
    """log C_d(kappa) for kappa > 0, evaluated in log space."""
    raise NotImplementedError("return log C_d(kappa) as a float, finite for every kappa > 0 and d >= 2 (stuck? hint('p5_02', 1))")


# %%
for kappa in (0.5, 5.0, 500.0, 5000.0):
    closed = np.log(kappa) - np.log(2 * np.pi) - (kappa + np.log1p(-np.exp(-2 * kappa)))   # log(kappa/(4 pi sinh kappa))
    print(f"kappa = {kappa:7.1f}: yours {log_vmf_normaliser(kappa, 3):12.6f}, closed form {closed:12.6f}")

# %%
import mpmath

mpmath.mp.dps = 30
worst = 0.0
for kappa, d in [(0.5, 512), (1.0, 1024), (5.0, 2048), (0.01, 3), (1e-3, 4096), (30.0, 2048), (200.0, 1024)]:
    nu = d / 2 - 1
    exact = float(mpmath.log(mpmath.besseli(nu, kappa)))
    ours = log_bessel_i(nu, kappa)
    with np.errstate(all="ignore"):
        naive = float(np.log(special.ive(nu, kappa)) + kappa)
    worst = max(worst, abs(ours - exact) / abs(exact))
    print(f"(kappa, d) = ({kappa:g}, {d}): log I_nu = {ours:.6f} (mpmath {exact:.6f}); log(ive) + kappa = {naive:.6f}")
assert worst < 1e-12
print("largest relative difference to mpmath < 1e-12")

# %%
from nextword.booktools.exercises.checks import check_ex_p5_02

check_ex_p5_02(log_vmf_normaliser)
