# %% [markdown]
# > Student version generated from `solutions/` by `python -m nextword.booktools.exercises build`;
# > edit the solution, not this file. Replace each `NotImplementedError` stub, then run the
# > self-check cell at the end.

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
# 2. Implement `log_vmf_normaliser(kappa, d)` for $\kappa>0$ in log space using
#    `scipy.special.ive` ($\mathrm{ive}_\nu(\kappa)=I_\nu(\kappa)e^{-\kappa}$). Do not call `nextword.theory`.
# 3. Check your function at $d=3$ against the closed form $C_3(\kappa)=\kappa/(4\pi\sinh\kappa)$.

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
# *Your answer here.*

# %%
def log_vmf_normaliser(kappa: float, d: int) -> float:
    """log C_d(kappa) for kappa > 0, evaluated in log space."""
    raise NotImplementedError("log I_nu(k) = log(ive(nu, k)) + k; combine (d/2-1) log k - (d/2) log(2 pi) - log I_nu(k)")


# %%
for kappa in (0.5, 5.0, 500.0, 5000.0):
    closed = np.log(kappa) - np.log(2 * np.pi) - (kappa + np.log1p(-np.exp(-2 * kappa)))   # log(kappa/(4 pi sinh kappa))
    print(f"kappa = {kappa:7.1f}: yours {log_vmf_normaliser(kappa, 3):12.6f}, closed form {closed:12.6f}")

# %%
from nextword.booktools.exercises.checks import check_ex_p5_02

check_ex_p5_02(log_vmf_normaliser)
