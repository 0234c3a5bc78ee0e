# %% [markdown]
# > Work on your own copy (`.venv/bin/nextword exercises copy ~/my-exercises` in a terminal; a
# > `git pull` rewrites the repository's `exercises/`). Replace each `NotImplementedError` stub, then
# > run the self-check cell at the end: it lists every check, ✓ or ✗. Stuck? `hint("p5_03", 1)`
# > gives a first hint, tiers 2 and 3 say more. Written answers: after trying, `reveal("p5_03")`.
# > Where you stand on all exercises: `.venv/bin/nextword grade --dir ~/my-exercises`.
# > (For maintainers: this file is generated from `solutions/` by
# > `python -m nextword.booktools.exercises build`; change the solution, not this file.)

# %%
from nextword.booktools.exercises import hint, reveal  # noqa: F401  (hints and model answers on demand)

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
    raise NotImplementedError("return the ELBO of every point, shape (N,) (Eq. 11) (stuck? hint('p5_03', 1))")


def my_epsilon(flow: GaussianSVFlow, x: np.ndarray) -> np.ndarray:
    """Eq. (12): E_q[ log(p(z|x)/q(z|x)) grad_x log q(z|x) ]."""
    raise NotImplementedError("return the variational error epsilon(x), shape (N, d) (Eq. 12) (stuck? hint('p5_03', 1))")


print("ELBO:", np.round(my_elbo(flow, x), 4))
print("log p(x) - ELBO:", np.round(flow.log_marginal(x) - my_elbo(flow, x), 4))

# %% [markdown]
# **Answer to 2.**
# *Your answer here.* (Once you have written it, `reveal("p5_03", 1)` shows a model answer.)

# %%
from nextword.booktools.exercises.checks import check_ex_p5_03

check_ex_p5_03(my_elbo, my_epsilon)
