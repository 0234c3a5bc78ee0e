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
    # BEGIN SOLUTION hint="return dJ/db_g as an array of shape (Z,), by the closed form of Eqs. (52)-(53)"
    g = layer.W_g @ x0 + layer.b_g
    log_q = g - logsumexp(g)
    q = np.exp(log_q)
    var = np.exp(layer.log_vars)
    diff = x0 - layer.means                                             # (Z, d)
    log_lik = -0.5 * (diff**2).sum(axis=1) / var - 0.5 * x0.size * layer.log_vars
    log_p = log_lik - logsumexp(log_lik)
    s = -diff / var[:, None]                                            # scores (Z, d)
    x1 = x0 + q @ s
    logits = W_cls.T @ x1
    delta = W_cls @ (np.exp(logits - logsumexp(logits)) - np.eye(W_cls.shape[1])[y])
    A = s @ delta                                                       # Eq. (41)
    R = log_q - log_p                                                   # Eq. (45)
    eta = (A - q @ A) + beta * (R - q @ R)                              # Eq. (53), one layer: no B terms
    return q * eta                                                      # Eq. (52) with dg_z/db_z = 1
    # END SOLUTION


print("dJ/db_g =", np.round(logit_gradient(x0, layer, W_cls, y, 0.5), 5))

# %% [markdown]
# **Answer to 2.**
# <!-- BEGIN SOLUTION -->
# With only the self term, $\partial\mathcal J/\partial g_z=\beta q(z)(R(z)-\mathbb E_qR)$, which is
# *positive* exactly when $R(z)=\log q(z)/p(z)$ is above its $q$-average $\mathbb E_qR$ (not the same as
# $q(z)>p(z)$: an over-weighted component whose $R$ is below that average gains). Gradient descent
# subtracts it, so that logit goes *down*: the feedback is negative and pulls $q$ toward $p$. App. B.4's
# "receive positive updates and become even more favored" has the sign reversed; the "Checking the paper"
# section of notebook 5.6 shows it on 200 random layers and `book/ERRATA.md` records it.
# <!-- END SOLUTION -->

# %%
from nextword.booktools.exercises.checks.new_items import check_ex_p5_05

check_ex_p5_05(logit_gradient)
