# %% [markdown]
# > Student version generated from `solutions/` by `python -m nextword.booktools.exercises build`;
# > edit the solution, not this file. Replace each `NotImplementedError` stub, then run the
# > self-check cell at the end.

# %% [markdown]
# # Exercise 04 — Is the load-balancing loss minimised by balanced routing?
# **Part:** 5 · **Difficulty:** ★★★ · **Book notebook:** book/part5_svflow/03_attention_as_vmf_posterior
#
# The auxiliary MoE loss (Liao, Eq. 22) is $\mathcal J_{\text{bal}}=\sum_zf_zP_z$, with $f_z$ the fraction of
# inputs whose arg-max expert is $z$ and $P_z$ the mean gate probability of expert $z$. §4.3 reads it as a
# coarse variational regulariser and says that minimising it "matches the marginal expert distribution to
# a uniform prior".
#
# 1. Show that $\mathcal J_{\text{bal}}=1/E$ whenever $f$ or $P$ is uniform, and that a collapsed router
#    gives 1.
# 2. With $E=2$ experts, construct a gate matrix `gates` of shape `(N, 2)` whose $\mathcal J_{\text{bal}}$ is
#    *below* $1/2$ while its marginal $P$ is not uniform. (Hint: arg-max only sees which gate is larger.)
# 3. What is the infimum of $\mathcal J_{\text{bal}}$ over two-expert routers in your family?

# %%
import numpy as np

from nextword.theory.svflow import load_balancing_loss

# %% [markdown]
# **Answer to 1.**
# *Your answer here.*

# %%
raise NotImplementedError("route a fraction a of inputs with gates (1/2 + tiny, 1/2 - tiny) and the rest with (0, 1)")
J, f, P = load_balancing_loss(gates)
print(f"J_bal = {J:.4f}, f = {np.round(f, 3)}, P = {np.round(P, 3)}")

# %% [markdown]
# **Answer to 3.**
# *Your answer here.*

# %%
from nextword.booktools.exercises.checks import check_ex_p5_04

check_ex_p5_04(gates)
