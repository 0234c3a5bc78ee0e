# %% [markdown]
# > Work on your own copy (`.venv/bin/nextword exercises copy ~/my-exercises` in a terminal; a
# > `git pull` rewrites the repository's `exercises/`). Replace each `NotImplementedError` stub, then
# > run the self-check cell at the end: it lists every check, ✓ or ✗. Stuck? `hint("p5_01", 1)`
# > gives a first hint, tiers 2 and 3 say more. Written answers: after trying, `reveal("p5_01")`.
# > Where you stand on all exercises: `.venv/bin/nextword grade --dir ~/my-exercises`.
# > (For maintainers: this file is generated from `solutions/` by
# > `python -m nextword.booktools.exercises build`; change the solution, not this file.)

# %%
from nextword.booktools.exercises import hint, reveal  # noqa: F401  (hints and model answers on demand)

# %% [markdown]
# # Exercise 01 — Retraction versus exponential map on the sphere
# **Part:** 5 · **Difficulty:** ★ · **Book notebook:** book/part5_svflow/01_spherical_geometry
#
# Liao §2.2 states that the retraction $R_x(w)=(x+w)/\lVert x+w\rVert$ (Eq. 3) approximates the
# exponential map $\exp_x(w)=\cos\lVert w\rVert\,x+\sin\lVert w\rVert\,w/\lVert w\rVert$ (Eq. 2) up to
# $\mathcal O(\lVert w\rVert^2)$, for $x\in\mathbb S^{d-1}$ and a tangent step $w\perp x$ (the paper writes
# $v$ for the step; Part 5 writes $w$, since the book keeps $v[j]$ for a value vector).
#
# 1. Implement `exp_map(x, w)` (with $\exp_x(0)=x$) and `retraction(x, w)` for vectors of shape `(d,)`,
#    using numpy only.
# 2. For a fixed unit $x$ and unit tangent $\hat w$ in $d=5$, compute
#    the error $\mathrm{err}(r)=\lVert R_x(r\hat w)-\exp_x(r\hat w)\rVert$ for step lengths $r$ in
#    `np.logspace(-3, -1.5, 10)` and fit the slope of $\log\mathrm{err}$ against $\log r$. Store it in `slope`.
# 3. In words: what is the order of the error, and what does it say about the paper's bound?

# %%
import numpy as np

rng = np.random.default_rng(0)
d = 5
x = rng.standard_normal(d)
x /= np.linalg.norm(x)
w_hat = rng.standard_normal(d)
w_hat -= (w_hat @ x) * x              # tangent at x
w_hat /= np.linalg.norm(w_hat)        # unit length


# %%
def exp_map(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Eq. (2): the point at distance ||w|| along the great circle from x in the direction of w (w tangent at x)."""
    raise NotImplementedError("return exp_x(w), shape (d,) (Eq. 2) (stuck? hint('p5_01', 1))")


def retraction(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Eq. (3): (x + w) / ||x + w||."""
    raise NotImplementedError("return R_x(w), shape (d,) (Eq. 3) (stuck? hint('p5_01', 1))")


# %%
rs = np.logspace(-3, -1.5, 10)  # step lengths r
raise NotImplementedError("set slope to the fitted log-log slope of the retraction error against r = ||w|| (stuck? hint('p5_01', 1))")
print(f"fitted slope: {slope:.3f}")

# %% [markdown]
# **Answer to 3.**
# *Your answer here.* (Once you have written it, `reveal("p5_01", 1)` shows a model answer.)

# %%
from nextword.booktools.exercises.checks import check_ex_p5_01

check_ex_p5_01(exp_map, retraction, slope)
