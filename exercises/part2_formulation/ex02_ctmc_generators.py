# %% [markdown]
# > Work on your own copy (`.venv/bin/nextword exercises copy ~/my-exercises` in a terminal; a
# > `git pull` rewrites the repository's `exercises/`). Replace each `NotImplementedError` stub, then
# > run the self-check cell at the end: it lists every check, ✓ or ✗. Stuck? `hint("p2_02", 1)`
# > gives a first hint, tiers 2 and 3 say more. Written answers: after trying, `reveal("p2_02")`.
# > Where you stand on all exercises: `.venv/bin/nextword grade --dir ~/my-exercises`.
# > (For maintainers: this file is generated from `solutions/` by
# > `python -m nextword.booktools.exercises build`; change the solution, not this file.)

# %%
from nextword.booktools.exercises import hint, reveal  # noqa: F401  (hints and model answers on demand)

# %% [markdown]
# # Exercise 02 — Rate matrices for discrete diffusion, and their reversal
# **Part:** 2 · **Difficulty:** ★ · **Book notebook:** book/part2_formulation/08_discrete_diffusion
#
# A continuous-time Markov chain on the $\lvert\mathcal V\rvert$ values of a token (`V` in code) is described
# by a *generator* $Q$: $Q_{yz}\ge0$ is the rate of jumping $y\to z$ ($y\ne z$) and each row sums to zero
# (the paper writes the states $i$, $j$; the book keeps those letters for the positions of a query and a
# key). Examples 9.2 and 9.3 of §9 print two
# matrices meant to be such generators — a uniform one and an absorbing ("mask") one — but as
# printed their rows do not sum to zero.
#
# 1. Implement the corrected `uniform_generator(V, beta)`: every state jumps to each of the
#    $\lvert\mathcal V\rvert$ states (itself included, which does nothing) at rate $\beta/\lvert\mathcal V\rvert$.
# 2. Implement `absorbing_generator(V, mask, beta)`: every state other than `mask` jumps to `mask`
#    at rate $\beta$; `mask` never leaves.
# 3. Implement `reverse_rates(Q, p)`, the reverse-time generator of (D.1),
#    $\bar Q_{yz}=Q_{zy}\,p_z/p_y$ for $y\ne z$, with the diagonal chosen so that rows sum to zero.
# 4. In words: what is the matrix printed in Example 9.2, if not a generator?
#
# Do not import `nextword.theory.formulation.diffusion` (the checker uses it to compare).

# %%
import numpy as np

V_demo, beta_demo = 4, 0.5


# %%
def uniform_generator(V: int, beta: float) -> np.ndarray:
    """Generator (V, V) of uniform resampling at total rate beta (rows sum to 0)."""
    raise NotImplementedError("return the (V, V) rate matrix of uniform noise at rate beta (stuck? hint('p2_02', 1))")


def absorbing_generator(V: int, mask: int, beta: float) -> np.ndarray:
    """Generator (V, V): y -> mask at rate beta for every state y != mask; the mask row is zero."""
    raise NotImplementedError("return the (V, V) rate matrix that sends every state to `mask` at rate beta (stuck? hint('p2_02', 1))")


def reverse_rates(Q: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Reverse-time generator Q̄ of (D.1) for a law p with p > 0, shape (V, V)."""
    raise NotImplementedError("return the (V, V) reverse-time rate matrix of Eq. (D.1) (stuck? hint('p2_02', 1))")


print("uniform generator, rows sum to 0:", bool(np.allclose(uniform_generator(V_demo, beta_demo).sum(axis=1), 0)))
print("absorbing generator, rows sum to 0:", bool(np.allclose(absorbing_generator(V_demo, V_demo - 1, beta_demo).sum(axis=1), 0)))

# %% [markdown]
# **Answer to 4.**
# *Your answer here.* (Once you have written it, `reveal("p2_02", 1)` shows a model answer.)

# %%
from nextword.booktools.exercises.checks import check_ex_p2_02

check_ex_p2_02(uniform_generator, absorbing_generator, reverse_rates)
