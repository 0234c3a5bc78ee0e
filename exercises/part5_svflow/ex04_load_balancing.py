# %% [markdown]
# > Work on your own copy (`.venv/bin/nextword exercises copy ~/my-exercises` in a terminal; a
# > `git pull` rewrites the repository's `exercises/`). Replace each `NotImplementedError` stub, then
# > run the self-check cell at the end: it lists every check, ✓ or ✗. Stuck? `hint("p5_04", 1)`
# > gives a first hint, tiers 2 and 3 say more. Written answers: after trying, `reveal("p5_04")`.
# > Where you stand on all exercises: `.venv/bin/nextword grade --dir ~/my-exercises`.
# > (For maintainers: this file is generated from `solutions/` by
# > `python -m nextword.booktools.exercises build`; change the solution, not this file.)

# %%
from nextword.booktools.exercises import hint, reveal  # noqa: F401  (hints and model answers on demand)

# %% [markdown]
# # Exercise 04 — Is the load-balancing loss minimised by balanced routing?
# **Part:** 5 · **Difficulty:** ★★★ · **Book notebook:** book/part5_svflow/03_attention_as_vmf_posterior
#
# The auxiliary MoE loss (Liao, Eq. 22) is $\mathcal J_{\text{bal}}=\sum_zf_zP_z$, with $f_z$ the fraction of
# inputs whose arg-max expert is $z$ and $P_z$ the mean gate probability of expert $z$. §4.3 reads it as a
# coarse variational regulariser and says that minimising it "matches the marginal expert distribution to
# a uniform prior".
#
# 1. Show that $\mathcal J_{\text{bal}}=1/\lvert\mathcal Z\rvert$ for $\lvert\mathcal Z\rvert$ experts (as page 5.3
#    counts them) whenever $f$ or $P$ is uniform, and that a collapsed router gives 1.
# 2. With $\lvert\mathcal Z\rvert=2$ experts (expert 1 and expert 2, as page 5.3 numbers them: columns 0 and 1
#    of `gates`), construct a gate matrix `gates` of shape `(N, 2)` whose $\mathcal J_{\text{bal}}$ is *below* $1/2$ while its marginal $P$ is not
#    uniform, each by a clear margin: $\mathcal J_{\text{bal}}<1/2-0.01$ and $\lvert P_1-1/2\rvert>0.02$. (Hint: arg-max only sees which gate is larger; an exact tie goes to the lower index, expert 1
#    (column 0), as in `load_balancing_loss`: a convention, not a law.)
# 3. What is the infimum of $\mathcal J_{\text{bal}}$ over two-expert routers in your family?

# %%
import numpy as np

from nextword.theory.svflow import load_balancing_loss

# %% [markdown]
# **Answer to 1.**
# *Your answer here.* (Once you have written it, `reveal("p5_04", 1)` shows a model answer.)

# %%
raise NotImplementedError("set gates to an (N, 2) matrix of gate probabilities (stuck? hint('p5_04', 1))")
J, f, P = load_balancing_loss(gates)
print(f"J_bal = {J:.4f}, f = {np.round(f, 3)}, P = {np.round(P, 3)}")

# %% [markdown]
# **Answer to 3.**
# *Your answer here.* (Once you have written it, `reveal("p5_04", 2)` shows a model answer.)

# %%
from nextword.booktools.exercises.checks import check_ex_p5_04

check_ex_p5_04(gates)
