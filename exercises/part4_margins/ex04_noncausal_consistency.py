# %% [markdown]
# > Work on your own copy (`.venv/bin/nextword exercises copy ~/my-exercises` in a terminal; a
# > `git pull` rewrites the repository's `exercises/`). Replace each `NotImplementedError` stub, then
# > run the self-check cell at the end: it lists every check, ✓ or ✗. Stuck? `hint("p4_04", 1)`
# > gives a first hint, tiers 2 and 3 say more. Written answers: after trying, `reveal("p4_04")`.
# > Where you stand on all exercises: `.venv/bin/nextword grade --dir ~/my-exercises`.
# > (For maintainers: this file is generated from `solutions/` by
# > `python -m nextword.booktools.exercises build`; change the solution, not this file.)

# %%
from nextword.booktools.exercises import hint, reveal  # noqa: F401  (hints and model answers on demand)

# %% [markdown]
# # Exercise 04 — Why non-causal attention breaks Kolmogorov consistency
# **Part:** 4 · **Difficulty:** ★★ · **Book notebook:** book/part4_margins/04_token_level_process
#
# Proposition 2 claims that without causal masking the length-$T$ laws need not be consistent
# (Eq. 32 fails). Take $d=1$, values $v_s=w_V\,x_s$ (the value weight of page 4.4, `w_V` in code), and let every
# position attend to all *other* positions (no mask, no self-attention). The prior draws each residual
# $\hat\varepsilon_t=x_t-\mu_t$ as independent noise $\varepsilon_t\sim\mathcal N(0,\sigma^2)$. For $T=1$
# nothing is attended, so $x_1=\varepsilon_1$. For $T=2$ each softmax has a single key, so $\mu_1=w_Vx_2$,
# $\mu_2=w_Vx_1$ and the residual map $(\hat\varepsilon_1,\hat\varepsilon_2)=(x_1-w_Vx_2,\;x_2-w_Vx_1)$ is linear.
# (The book's letters, as in Part 4: $T$ positions, residuals $\hat\varepsilon_t$; the paper writes $n$
# and $e_t$.)
#
# 1. Implement `var_first_embedding(w_V, sigma)`: the variance of $x_1$ under the **length-2** model
#    ($|w_V|<1$). Hint: $x=(I-W)^{-1}\varepsilon$, with $W$ the $2\times2$ matrix that gives $(\mu_1,\mu_2)=Wx$.
# 2. Implement `cov_first_second(w_V, sigma)`: the covariance $\mathrm{Cov}(x_1,x_2)$ under the same model. Its
#    sign says whether the two positions move together; the variance, even in $w_V$, cannot tell $w_V$ from $-w_V$.
# 3. Explain in two or three sentences why this breaks Eq. (32) for a token head that depends on the size
#    of $x_1$ (on $x_1^2$, say), and which step of the proof of Theorem 2 (Lemma C.1 or C.2) fails.

# %%
import numpy as np


# %%
def var_first_embedding(w_V: float, sigma: float) -> float:
    """Var(x_1) when the sequence has length 2 and each position attends only to the other one."""
    raise NotImplementedError("return a float: Var(x_1) in the length-2 non-causal model (stuck? hint('p4_04', 1))")


def cov_first_second(w_V: float, sigma: float) -> float:
    """Cov(x_1, x_2) in the same length-2 model."""
    raise NotImplementedError("return a float: Cov(x_1, x_2) in the length-2 non-causal model (stuck? hint('p4_04', 1))")


print(f"w_V = 0.5, sigma = 1: Var(x_1) = {var_first_embedding(0.5, 1.0):.4f} (length-1 model: 1.0000)")
print(f"Cov(x_1, x_2) = {cov_first_second(0.5, 1.0):+.4f} at w_V = +0.5, {cov_first_second(-0.5, 1.0):+.4f} at w_V = -0.5")

# %% [markdown]
# **Answer to 3.**
# *Your answer here.* (Once you have written it, `reveal("p4_04", 1)` shows a model answer.)

# %%
from nextword.booktools.exercises.checks import check_ex_p4_04

check_ex_p4_04(var_first_embedding, cov_first_second)
