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
    # BEGIN SOLUTION hint="return a float: Var(x_1) in the length-2 non-causal model"
    M = np.linalg.inv(np.eye(2) - np.array([[0.0, w_V], [w_V, 0.0]]))
    return float(sigma**2 * (M @ M.T)[0, 0])  # = sigma² (1 + w_V²) / (1 - w_V²)²
    # END SOLUTION


def cov_first_second(w_V: float, sigma: float) -> float:
    """Cov(x_1, x_2) in the same length-2 model."""
    # BEGIN SOLUTION hint="return a float: Cov(x_1, x_2) in the length-2 non-causal model"
    M = np.linalg.inv(np.eye(2) - np.array([[0.0, w_V], [w_V, 0.0]]))
    return float(sigma**2 * (M @ M.T)[0, 1])  # = sigma² 2 w_V / (1 - w_V²)²
    # END SOLUTION


print(f"w_V = 0.5, sigma = 1: Var(x_1) = {var_first_embedding(0.5, 1.0):.4f} (length-1 model: 1.0000)")
print(f"Cov(x_1, x_2) = {cov_first_second(0.5, 1.0):+.4f} at w_V = +0.5, {cov_first_second(-0.5, 1.0):+.4f} at w_V = -0.5")

# %% [markdown]
# **Answer to 3.**
# <!-- BEGIN SOLUTION -->
# Under the length-1 model $x_1\sim\mathcal N(0,\sigma^2)$, but integrating $x_2$ out of the length-2
# model gives $x_1\sim\mathcal N\big(0,\sigma^2(1+w_V^2)/(1-w_V^2)^2\big)$ (and
# $\mathrm{Cov}(x_1,x_2)=2w_V\sigma^2/(1-w_V^2)^2$: the two positions share both noise terms). A head
# $P(y_1\mid x_1)$ that depends on the size of $x_1$ (on $x_1^2$, say) then gives
# $\sum_{y_2}P_2(y_1,y_2)=\mathbb E_{p_2}[P(y_1\mid x_1)]\ne\mathbb E_{p_1}[P(y_1\mid x_1)]=P_1(y_1)$. (A
# logistic head $P(y_1\mid x_1)=\mathrm{sigmoid}(c\,x_1)$ would not notice: its average is $\tfrac12$ under
# every centred Gaussian, and only the variances differ.) Lemma C.1 still holds (the head is causal); what
# fails is Lemma C.2 / Assumption A2: the length-2 prior does not factor as $p_1(x_1)\,p(x_2\mid x_1)$, because
# the position-1 residual $\hat\varepsilon_1=x_1-w_Vx_2$ now depends on the future.
# <!-- END SOLUTION -->

# %%
from nextword.booktools.exercises.checks import check_ex_p4_04

check_ex_p4_04(var_first_embedding, cov_first_second)
