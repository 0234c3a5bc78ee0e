# %% [markdown]
# > Work on your own copy (`.venv/bin/nextword exercises copy ~/my-exercises` in a terminal; a
# > `git pull` rewrites the repository's `exercises/`). Replace each `NotImplementedError` stub, then
# > run the self-check cell at the end: it lists every check, ✓ or ✗. Stuck? `hint("p5_05", 1)`
# > gives a first hint, tiers 2 and 3 say more. Written answers: after trying, `reveal("p5_05")`.
# > Where you stand on all exercises: `.venv/bin/nextword grade --dir ~/my-exercises`.
# > (For maintainers: this file is generated from `solutions/` by
# > `python -m nextword.booktools.exercises build`; change the solution, not this file.)

# %%
from nextword.booktools.exercises import hint, reveal  # noqa: F401  (hints and model answers on demand)

# %% [markdown]
# # Exercise 05 — The advantage form of SVFlow's posterior gradient
# **Part:** 5 · **Difficulty:** ★★ · **Book notebook:** book/part5_svflow/06_appendix_b_gradients
#
# One SVFlow step (Liao, Eq. 35) $x^1=x^0+\sum_zq(z\mid x^0)s(x^0,z)$ with posterior
# $q=\mathrm{softmax}(W_gx+b_g)$, isotropic Gaussian likelihoods $\mathcal N(x;\mu_z,\sigma_z^2I)$ (score
# $s(x,z)=-(x-\mu_z)/\sigma_z^2$, uniform prior) and the hybrid objective (Eq. 36)
# $\mathcal J=-\log\mathrm{softmax}(W_{\text{cls}}^\top x^1)_y+\beta\,\mathrm{KL}(q\,\|\,p(\cdot\mid x^0))$.
#
# 1. Implement `logit_gradient(x0, layer, W_cls, y, beta)` → $\partial\mathcal J/\partial b_g$ `(Z,)` by
#    Eqs. (41), (45), (52)–(53): $\delta_1=W_{\text{cls}}(\mathrm{softmax}(W_{\text{cls}}^\top x^1)-\mathrm{onehot}(y))$,
#    $A(z)=\delta_1^\top s(x^0,z)$, $R(z)=\log q(z\mid x^0)-\log p(z\mid x^0)$,
#    $S=(A-\mathbb E_qA)+\beta(R-\mathbb E_qR)$ and the answer $q(z)S(z)$ (the paper writes $\eta$ for $S$;
#    page 5.6 writes $S$, since the book keeps $\eta$ for a learning rate). Use numpy only (the layer's
#    fields are `W_g (Z, d)`, `b_g (Z,)`, `means (Z, d)`, `log_vars (Z,)`).
# 2. With $\beta>0$ and the task term switched off, which way does gradient descent move the logit of
#    a component with $R(z)>\mathbb E_q[R]$? Is the feedback positive, as App. B.4 says?

# %%
import numpy as np
from scipy.special import logsumexp

from nextword.theory.svflow.gradients import GaussianFlowLayer, random_gaussian_layer

rng = np.random.default_rng(0)
layer = random_gaussian_layer(2, 4, rng)
x0, W_cls, y = rng.normal(size=2), rng.normal(size=(2, 3)), 1


# %%
def logit_gradient(x0: np.ndarray, layer: GaussianFlowLayer, W_cls: np.ndarray, y: int, beta: float) -> np.ndarray:
    """dJ/db_g (Z,) = q(z) S(z), Eqs. (41), (45), (52)-(53), for a one-layer flow."""
    raise NotImplementedError("return dJ/db_g as an array of shape (Z,), by the closed form of Eqs. (52)-(53) (stuck? hint('p5_05', 1))")


print("dJ/db_g =", np.round(logit_gradient(x0, layer, W_cls, y, 0.5), 5))

# %% [markdown]
# **Answer to 2.**
# *Your answer here.* (Once you have written it, `reveal("p5_05", 1)` shows a model answer.)

# %%
from nextword.booktools.exercises.checks.new_items import check_ex_p5_05

check_ex_p5_05(logit_gradient)
