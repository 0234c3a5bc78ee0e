# %% [markdown]
# > Work on your own copy (`.venv/bin/nextword exercises copy ~/my-exercises` in a terminal; a
# > `git pull` rewrites the repository's `exercises/`). Replace each `NotImplementedError` stub, then
# > run the self-check cell at the end: it lists every check, ✓ or ✗. Stuck? `hint("p3_04", 1)`
# > gives a first hint, tiers 2 and 3 say more. Written answers: after trying, `reveal("p3_04")`.
# > Where you stand on all exercises: `.venv/bin/nextword grade --dir ~/my-exercises`.
# > (For maintainers: this file is generated from `solutions/` by
# > `python -m nextword.booktools.exercises build`; change the solution, not this file.)

# %%
from nextword.booktools.exercises import hint, reveal  # noqa: F401  (hints and model answers on demand)

# %% [markdown]
# # Exercise 04 — One EM-like M-step on the values
# **Part:** 3 · **Difficulty:** ★★★ · **Book notebook:** book/part3_dynamics/03_sticky_chain_em_vs_sgd
#
# The EM-like schedule of §5.3/§7.2 updates values in closed form: after a forward pass (E-step)
# giving $\alpha$ and the upstream errors $u_i=\partial\mathcal L/\partial g_i$ (Eq. 14, summed loss (9)), every value of the
# sequence moves by $\Delta v_j=-\eta_v\sum_i\alpha_{ij}u_i$ (Eq. 33). In a real head the values are
# $V=XW^V$ (`params.W_V` in code), so the book carries $\Delta V$ back to the weights by least squares:
# $W^V\leftarrow W^V+\arg\min_\Delta\|X\Delta-\Delta V\|$.
#
# 1. Implement `em_value_step(params, X, y, value_lr)` for one causal sequence `X (T, d_x)`,
#    `y (T,)` and a `nextword.theory.dynamics.HeadParams` (row vectors: `Q = X @ params.W_Q`, …,
#    logits `G @ params.W_O + params.b`, so `params.W_O` has shape `(d_v, C)` and, as a row,
#    $u_i=(p_i-\operatorname{onehot}(y_i))(W^{\text{out}})^\top$ with $W^{\text{out}}$ = `params.W_O`, as page 3.3
#    writes it — the paper's Eq. (14) writes the same vector as the column $W_O^\top(p_i-e_{y_i})$ with its
#    $W_O$ of shape $C\times d_v$, the transpose of `params.W_O`, and $e_{y_i}$ the one-hot vector).
#    Return the new `W_V`. You may use
#    `nextword.attention.scaled_dot_product_attention` and `softmax`, not `nextword.theory`.
# 2. Why would updating a free table of per-position values $v_t$ (instead of $W^V$) make the
#    training loss of a causal head meaningless?

# %%
import numpy as np

from nextword.attention import scaled_dot_product_attention, softmax
from nextword.theory.dynamics import HeadParams

rng = np.random.default_rng(0)
params_demo = HeadParams.init(6, 3, 5, 4, rng=rng, scale=0.5)
X_demo = rng.standard_normal((10, 6))
y_demo = rng.integers(0, 4, size=10)


# %%
def em_value_step(params: HeadParams, X: np.ndarray, y: np.ndarray, value_lr: float) -> np.ndarray:
    """New W_V (d_x, d_v) after the M-step Delta V = -value_lr alpha^T U and a least-squares pull-back."""
    raise NotImplementedError("return the new W_V after one EM-like M-step (the shape of params.W_V) (stuck? hint('p3_04', 1))")


W_new = em_value_step(params_demo, X_demo, y_demo, 1.0)
print("||Delta W_V|| =", round(float(np.linalg.norm(W_new - params_demo.W_V)), 4))

# %% [markdown]
# **Answer to 2.**
# *Your answer here.* (Once you have written it, `reveal("p3_04", 1)` shows a model answer.)

# %%
from nextword.booktools.exercises.checks import check_ex_p3_04

check_ex_p3_04(em_value_step)
