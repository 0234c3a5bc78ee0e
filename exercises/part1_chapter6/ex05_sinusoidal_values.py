# %% [markdown]
# > Work on your own copy (`.venv/bin/nextword exercises copy ~/my-exercises` in a terminal; a
# > `git pull` rewrites the repository's `exercises/`). Replace each `NotImplementedError` stub, then
# > run the self-check cell at the end: it lists every check, ✓ or ✗. Stuck? `hint("p1_05", 1)`
# > gives a first hint, tiers 2 and 3 say more. Written answers: after trying, `reveal("p1_05")`.
# > Where you stand on all exercises: `.venv/bin/nextword grade --dir ~/my-exercises`.
# > (For maintainers: this file is generated from `solutions/` by
# > `python -m nextword.booktools.exercises build`; change the solution, not this file.)

# %%
from nextword.booktools.exercises import hint, reveal  # noqa: F401  (hints and model answers on demand)

# %% [markdown]
# # Exercise 05 — Sinusoidal encodings by hand
# **Part:** 1 · **Difficulty:** ★ · **Book notebook:** book/part1_chapter6/6_5_positional_encoding
#
# Chapter 6, Exercise 5. With $\mathrm{PE}(t,2m)=\sin\big(t/10000^{2m/d_{\text{model}}}\big)$ and
# $\mathrm{PE}(t,2m+1)=\cos\big(t/10000^{2m/d_{\text{model}}}\big)$ (§6.5, which writes $m$ for the *pair*
# of dimensions $2m,2m+1$, counted from 0), compute
# $\mathrm{PE}(10,0),\dots,\mathrm{PE}(10,3)$ for $d_{\text{model}}=128$ and verify that
# $\mathrm{PE}(t,0)^2+\mathrm{PE}(t,1)^2=1$.
#
# 1. Implement `pe_values(t, d_model, dims)` from the formula with numpy (do not call
#    `nextword.positions`): each 0-based dimension `dim` in `dims` belongs to the pair `dim // 2` (the $m$
#    of the formula); even dimensions use sine, odd ones cosine.
# 2. Print the four values and the identity, and explain why the identity holds for every pair.

# %%
import numpy as np
import sympy as sp


# %%
def pe_values(t: int, d_model: int, dims) -> np.ndarray:
    """PE(t, dim) for every dimension dim in dims, shape (len(dims),)."""
    raise NotImplementedError("return an array of shape (len(dims),): PE(t, dim) for each dim in dims (stuck? hint('p1_05', 1))")


values = pe_values(10, 128, [0, 1, 2, 3])
for i, v in enumerate(values):
    print(f"PE(10, {i}) = {v:+.6f}")
print(f"PE(10,0)^2 + PE(10,1)^2 = {values[0] ** 2 + values[1] ** 2:.9f}")

# %% [markdown]
# **Why the identity holds.**
# *Your answer here.* (Once you have written it, `reveal("p1_05", 1)` shows a model answer.)

# %%
t = sp.Integer(10)
phi1 = t / sp.Integer(10000) ** sp.Rational(2, 128)
print("angles:", t, "and", sp.nsimplify(phi1), "; sin^2 + cos^2 =", sp.simplify(sp.sin(t) ** 2 + sp.cos(t) ** 2))

# %%
from nextword.booktools.exercises.checks import check_ex_p1_05

check_ex_p1_05(pe_values)
