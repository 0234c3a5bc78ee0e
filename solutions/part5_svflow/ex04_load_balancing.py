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
# <!-- BEGIN SOLUTION -->
# If $f_z=1/\lvert\mathcal Z\rvert$ for all $z$, $\mathcal J_{\text{bal}}=\frac1{\lvert\mathcal Z\rvert}\sum_zP_z
# =\frac1{\lvert\mathcal Z\rvert}$; likewise if $P_z=1/\lvert\mathcal Z\rvert$, since $\sum_zf_z=1$.
# A collapsed router sends everything to one expert $z^*$ with gate 1: $f_{z^*}=P_{z^*}=1$, so $\mathcal J_{\text{bal}}=1$.
# <!-- END SOLUTION -->

# %%
# BEGIN SOLUTION hint="set gates to an (N, 2) matrix of gate probabilities"
N, r, tiny = 400, 0.75, 1e-9  # a share r of the inputs near-tied, as page 5.3 writes it
gates = np.array([[0.5 + tiny, 0.5 - tiny]] * int(r * N) + [[0.0, 1.0]] * (N - int(r * N)))
# END SOLUTION
J, f, P = load_balancing_loss(gates)
print(f"J_bal = {J:.4f}, f = {np.round(f, 3)}, P = {np.round(P, 3)}")

# %% [markdown]
# **Answer to 3.**
# <!-- BEGIN SOLUTION -->
# With a share $r\ge\frac12$ of inputs at $(\frac12+\delta,\frac12-\delta)$ and the rest at $(0,1)$ (the letters
# of page 5.3): $f=(r,1-r)$, expert 1's mean gate $P_1=r(\frac12+\delta)$, and
# $\mathcal J_{\text{bal}}=rP_1+(1-r)(1-P_1)=r^2-\tfrac32r+1+\delta(2r^2-r)$. As $\delta\to0$ this is
# minimised at $r=\tfrac34$, giving $\mathcal J_{\text{bal}}\to\tfrac7{16}<\tfrac12$ with $P=(\tfrac38,\tfrac58)$. So the global
# minimiser of Eq. (22) is not a uniform marginal; the loss lowers the product of two different marginals,
# and near-tied gates let the hard fractions $f$ and the soft means $P$ disagree.
# <!-- END SOLUTION -->

# %%
from nextword.booktools.exercises.checks import check_ex_p5_04

check_ex_p5_04(gates)
