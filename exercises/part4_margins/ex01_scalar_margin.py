# %% [markdown]
# > Work on your own copy (`.venv/bin/nextword exercises copy ~/my-exercises` in a terminal; a
# > `git pull` rewrites the repository's `exercises/`). Replace each `NotImplementedError` stub, then
# > run the self-check cell at the end: it lists every check, ✓ or ✗. Stuck? `hint("p4_01", 1)`
# > gives a first hint, tiers 2 and 3 say more. Written answers: after trying, `reveal("p4_01")`.
# > Where you stand on all exercises: `.venv/bin/nextword grade --dir ~/my-exercises`.
# > (For maintainers: this file is generated from `solutions/` by
# > `python -m nextword.booktools.exercises build`; change the solution, not this file.)

# %%
from nextword.booktools.exercises import hint, reveal  # noqa: F401  (hints and model answers on demand)

# %% [markdown]
# # Exercise 01 — Scalar margins and support tokens
# **Part:** 4 · **Difficulty:** ★ · **Book notebook:** book/part4_margins/02_scalar_margin
#
# In $d=1$ with $w_V=1$ and logits $\zeta_{ts}=a\,x_tx_s$, Proposition 1 gives the diagonal derivative of
# the strict-causal residual map as the margin $m_t=1-a\,\mathrm{Var}_t$ (Eqs. 8–9), where
# $\mathrm{Var}_t=\sum_{s<t}\alpha_{ts}(x_s-\bar x_t)^2$ with $\alpha_{t\cdot}=\mathrm{softmax}_s(a\,x_tx_s)$.
# (The book's letters, as in Part 4: $T$ positions, scores $\zeta_{ts}$, residuals $\hat\varepsilon_t$; the paper
# writes $L$, $\ell_{ts}$ and $e_t$.)
#
# 1. Implement `scalar_margins(x, a)` returning all $T$ margins (position 1 has no context; its margin is 1).
#    Use `nextword.attention.softmax`; do not call `nextword.theory.barrier`.
# 2. Implement `support(x, a)`: the 0-based positions attaining the minimum margin (Definition 3.1).
# 3. In words: why is $\partial \hat\varepsilon_t/\partial x_t$ not simply 1, although $\mu_t$ only averages *past* values?

# %%
import numpy as np

from nextword.attention import softmax

x_demo = np.array([-1.5, 1.5, -1.4, 1.6, 0.0, -1.5])


# %%
def scalar_margins(x: np.ndarray, a: float) -> np.ndarray:
    """Margins m_t = 1 - a Var_t for every position of the 1-D sequence x (strict causal, w_V = 1)."""
    raise NotImplementedError("return the margins, shape (T,), with margin 1 at the first position (stuck? hint('p4_01', 1))")


def support(x: np.ndarray, a: float) -> np.ndarray:
    """0-based positions whose margin equals the minimum (up to 1e-12)."""
    raise NotImplementedError("return an integer array: the 0-based positions attaining the minimum margin (stuck? hint('p4_01', 1))")


print("margins:", np.round(scalar_margins(x_demo, 0.5), 3))
print("support tokens (0-based):", support(x_demo, 0.5))

# %% [markdown]
# **Answer to 3.**
# *Your answer here.* (Once you have written it, `reveal("p4_01", 1)` shows a model answer.)

# %%
from nextword.booktools.exercises.checks import check_ex_p4_01

check_ex_p4_01(scalar_margins, support)
