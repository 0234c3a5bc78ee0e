# %% [markdown]
# # Exercise 03 — The ELBO, its gradient and the variational error
# **Part:** 5 · **Difficulty:** ★★ · **Book notebook:** book/part5_svflow/02_svflow_properties
#
# For a discrete latent $z$ with uniform prior, the instantaneous ELBO is
# $\mathrm{ELBO}(x)=\mathbb E_{q(z|x)}[\log p(x|z)]-\mathrm{KL}(q(z|x)\,\|\,p(z))$ (Liao, Eq. 11), and
# Theorem 3.3 states $\nabla_x\mathrm{ELBO}=u+\epsilon$ with the SVFlow field $u=\mathbb E_q[\nabla_x\log p(x|z)]$
# and $\epsilon=\mathbb E_q[\log\frac{p(z|x)}{q(z|x)}\nabla_x\log q(z|x)]$ (Eq. 12). (The paper writes
# $\mathcal L$ for the ELBO and $v$ for the field; Part 5 writes $\mathrm{ELBO}$ and $u$, since the book keeps
# $\mathcal L$ for a loss to be minimised and $v[j]$ for a value vector.)
#
# `GaussianSVFlow` gives you, for points `x (N, d)`: `flow.log_q(x)` ($\log q(z|x)$, `(N, Z)`),
# `flow.log_lik(x)` ($\log p(x|z)$), `flow.log_post(x)` ($\log p(z|x)$) and `flow.grad_log_q(x)`
# ($\nabla_x\log q(z|x)$, `(N, Z, d)`).
#
# 1. Implement `my_elbo(flow, x)` → `(N,)` and `my_epsilon(flow, x)` → `(N, d)` with numpy (do not call
#    `flow.elbo`/`flow.epsilon`).
# 2. The paper says $\epsilon$ vanishes *if and only if* $q=p$. Prove the "if" and disprove the "only if".

# %%
import numpy as np

from nextword.theory.svflow import GaussianSVFlow

rng = np.random.default_rng(0)
Z, d = 4, 2
flow = GaussianSVFlow(rng.normal(size=(Z, d)), np.zeros((Z, d)), rng.normal(size=(Z, d)), np.zeros((Z, d)))
x = rng.normal(size=(3, d))


# %%
def my_elbo(flow: GaussianSVFlow, x: np.ndarray) -> np.ndarray:
    """Eq. (11) with the uniform prior p(z) = 1/Z."""
    # BEGIN SOLUTION hint="return the ELBO of every point, shape (N,) (Eq. 11)"
    log_q = flow.log_q(x)
    q = np.exp(log_q)
    return np.sum(q * (flow.log_lik(x) - np.log(log_q.shape[-1]) - log_q), axis=-1)
    # END SOLUTION


def my_epsilon(flow: GaussianSVFlow, x: np.ndarray) -> np.ndarray:
    """Eq. (12): E_q[ log(p(z|x)/q(z|x)) grad_x log q(z|x) ]."""
    # BEGIN SOLUTION hint="return the variational error epsilon(x), shape (N, d) (Eq. 12)"
    log_q = flow.log_q(x)
    w = np.exp(log_q) * (flow.log_post(x) - log_q)
    return np.einsum("nz,nzd->nd", w, flow.grad_log_q(x))
    # END SOLUTION


print("ELBO:", np.round(my_elbo(flow, x), 4))
print("log p(x) - ELBO:", np.round(flow.log_marginal(x) - my_elbo(flow, x), 4))

# %% [markdown]
# **Answer to 2.**
# <!-- BEGIN SOLUTION -->
# *If:* when $q(\cdot|x)=p(\cdot|x)$ the factor $\log\frac{p(z|x)}{q(z|x)}$ is 0 for every $z$, so
# $\epsilon(x)=0$. *Only if* fails: $\epsilon$ is also 0 whenever $\nabla_x\log q(z|x)=0$, i.e. when $q$ does
# not depend on $x$. Example: give all $q$-components the same mean and variance, so $q(z|x)=1/Z$ for every
# $x$; then $\epsilon\equiv0$ while $p(z|x)$ is generally far from uniform ($\mathrm{KL}>0$), and
# $\nabla\mathrm{ELBO}=u\ne\nabla\log p$. (Pointwise coincidences, where the $Z$ terms cancel, give further
# examples.) See `book/ERRATA.md`.
# <!-- END SOLUTION -->

# %%
from nextword.booktools.exercises.checks import check_ex_p5_03

check_ex_p5_03(my_elbo, my_epsilon)
