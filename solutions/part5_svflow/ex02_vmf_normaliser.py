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
# <!-- BEGIN SOLUTION -->
# For $(1000,3)$: $I_{1/2}(1000)\approx e^{1000}/\sqrt{2\pi\cdot1000}$ exceeds the float64 range
# ($\approx e^{709.8}$), so `iv` returns `inf` and the log is $-\infty$. For $(1,1024)$: $(2\pi)^{512}\approx
# 10^{408.7}$ overflows to `inf` while $I_{511}(1)\approx 10^{-1318}$ underflows to 0, so the denominator
# is $\infty\cdot0$, which is NaN, and so is the ratio. In high dimension the direct formula fails at *every* $\kappa$, not only at
# large ones. The scaled function does not rescue $(1,1024)$: $\mathrm{ive}_{511}(1)\approx10^{-1318}$ is
# below the smallest float64 ($\approx10^{-324}$), so `log(ive(nu, kappa)) + kappa` is $-\infty$ and
# $\log C_d$ comes out $+\infty$. The logarithm has to be taken *before* the number is formed: in the power
# series $I_\nu(\kappa)=(\kappa/2)^\nu\sum_j (\kappa^2/4)^j/(j!\,\Gamma(\nu+j+1))$ every term is
# representable in log space.
# <!-- END SOLUTION -->

# %%
def log_bessel_i(nu: float, kappa: float) -> float:
    """log I_nu(kappa) for nu >= 0, kappa > 0, finite wherever the logarithm is a float."""
    # BEGIN SOLUTION hint="return log I_nu(kappa) as a float, finite even where ive(nu, kappa) underflows to 0"
    with np.errstate(under="ignore"):
        scaled = special.ive(nu, kappa)  # I_nu(kappa) e^{-kappa}
    if scaled > 1e-300:  # a normal float: log I = log ive + kappa loses nothing
        return float(np.log(scaled) + kappa)
    # ive underflows (large order, small argument): the power series, every term in log space,
    # I_nu(k) = (k/2)^nu / Gamma(nu+1) * sum_j t_j with t_0 = 1, t_j = t_{j-1} (k^2/4) / (j (j + nu))
    q = kappa * kappa / 4
    j_peak = max(0.0, (-nu + np.sqrt(nu * nu + 4 * q)) / 2)  # where t_j stops growing: j (j + nu) = q
    j = np.arange(1, int(j_peak + 20 * np.sqrt(j_peak + 1) + 60))
    log_t = np.concatenate([[0.0], np.cumsum(np.log(q) - np.log(j) - np.log(j + nu))])
    return float(nu * np.log(kappa / 2) - special.gammaln(nu + 1) + special.logsumexp(log_t))
    # END SOLUTION


def log_vmf_normaliser(kappa: float, d: int) -> float:
    """log C_d(kappa) for kappa > 0, evaluated in log space."""
    # BEGIN SOLUTION hint="return log C_d(kappa) as a float, finite for every kappa > 0 and d >= 2"
    nu = d / 2 - 1
    return float(nu * np.log(kappa) - (d / 2) * np.log(2 * np.pi) - log_bessel_i(nu, kappa))
    # END SOLUTION


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
