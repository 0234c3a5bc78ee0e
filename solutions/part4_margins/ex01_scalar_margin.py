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
    # BEGIN SOLUTION hint="return the margins, shape (T,), with margin 1 at the first position"
    T = len(x)
    m = np.ones(T)
    for t in range(1, T):
        w = softmax(a * x[t] * x[:t])
        mean = np.sum(w * x[:t])
        m[t] = 1.0 - a * np.sum(w * (x[:t] - mean) ** 2)
    return m
    # END SOLUTION


def support(x: np.ndarray, a: float) -> np.ndarray:
    """0-based positions whose margin equals the minimum (up to 1e-12)."""
    # BEGIN SOLUTION hint="return an integer array: the 0-based positions attaining the minimum margin"
    m = scalar_margins(x, a)
    return np.flatnonzero(m <= m.min() + 1e-12)
    # END SOLUTION


print("margins:", np.round(scalar_margins(x_demo, 0.5), 3))
print("support tokens (0-based):", support(x_demo, 0.5))

# %% [markdown]
# **Answer to 3.**
# <!-- BEGIN SOLUTION -->
# The average is over past values, but the *weights* are computed from the current query
# $q_t=w_Qx_t$: moving $x_t$ re-weights the past. Differentiating the softmax (Lemma B.1) gives
# $\partial\alpha_{ts}/\partial x_t=a\,\alpha_{ts}(x_s-\bar x_t)$ (Eq. 60), so
# $\partial\mu_t/\partial x_t=a\sum_s\alpha_{ts}x_s(x_s-\bar x_t)=a\,\mathrm{Var}_t$ (Lemma B.2). The
# residual therefore moves by $1-a\mathrm{Var}_t$: when the past is dispersed and attended broadly, a
# positive coupling flattens the map $x_t\mapsto \hat\varepsilon_t$; its slope is 0 on the degeneracy
# boundary $m_t=0$, and past it ($m_t<0$) the map runs backwards (it folds).
# <!-- END SOLUTION -->

# %%
from nextword.booktools.exercises.checks import check_ex_p4_01

check_ex_p4_01(scalar_margins, support)
