# %% [markdown]
# # Exercise 01 — Retraction versus exponential map on the sphere
# **Part:** 5 · **Difficulty:** ★ · **Book notebook:** book/part5_svflow/01_spherical_geometry
#
# Liao §2.2 states that the retraction $R_x(v)=(x+v)/\lVert x+v\rVert$ (Eq. 3) approximates the
# exponential map $\exp_x(v)=\cos\lVert v\rVert\,x+\sin\lVert v\rVert\,v/\lVert v\rVert$ (Eq. 2) up to
# $\mathcal O(\lVert v\rVert^2)$, for $x\in\mathbb S^{d-1}$ and $v\perp x$.
#
# 1. Implement `exp_map(x, v)` (with $\exp_x(0)=x$) and `retraction(x, v)` for vectors of shape `(d,)`,
#    using numpy only.
# 2. For a fixed unit $x$ and unit tangent $u$ in $d=5$, compute $e(t)=\lVert R_x(tu)-\exp_x(tu)\rVert$ for
#    $t$ in `np.logspace(-3, -1.5, 10)` and fit the slope of $\log e$ against $\log t$. Store it in `slope`.
# 3. In words: what is the order of the error, and what does it say about the paper's bound?

# %%
import numpy as np

rng = np.random.default_rng(0)
d = 5
x = rng.standard_normal(d)
x /= np.linalg.norm(x)
u = rng.standard_normal(d)
u -= (u @ x) * x                      # tangent at x
u /= np.linalg.norm(u)


# %%
def exp_map(x: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Eq. (2): the geodesic from x with initial velocity v (v tangent at x)."""
    # BEGIN SOLUTION hint="return exp_x(v), shape (d,) (Eq. 2)"
    n = np.linalg.norm(v)
    if n == 0:
        return x.copy()
    return np.cos(n) * x + np.sin(n) * v / n
    # END SOLUTION


def retraction(x: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Eq. (3): (x + v) / ||x + v||."""
    # BEGIN SOLUTION hint="return R_x(v), shape (d,) (Eq. 3)"
    s = x + v
    return s / np.linalg.norm(s)
    # END SOLUTION


# %%
ts = np.logspace(-3, -1.5, 10)
# BEGIN SOLUTION hint="set slope to the fitted log-log slope of the retraction error against ||v||"
errors = np.array([np.linalg.norm(retraction(x, t * u) - exp_map(x, t * u)) for t in ts])
slope = np.polyfit(np.log(ts), np.log(errors), 1)[0]
# END SOLUTION
print(f"fitted slope: {slope:.3f}")

# %% [markdown]
# **Answer to 3.**
# <!-- BEGIN SOLUTION -->
# The slope is 3: with $x=e_1$, $v=te_2$, $R_x(v)=(1,t)/\sqrt{1+t^2}$ and $\exp_x(v)=(\cos t,\sin t)$;
# expanding, the first- and second-order terms agree and the difference is $(t^4/3,\,-t^3/3)+\dots$, so
# $\lVert R_x(v)-\exp_x(v)\rVert=\tfrac13\lVert v\rVert^3+\mathcal O(\lVert v\rVert^5)$. The paper's
# $\mathcal O(\lVert v\rVert^2)$ is true but loose: the projective retraction is a *second-order*
# retraction (it matches the geodesic's acceleration as well as its velocity).
# <!-- END SOLUTION -->

# %%
from nextword.booktools.exercises.checks import check_ex_p5_01

check_ex_p5_01(exp_map, retraction, slope)
