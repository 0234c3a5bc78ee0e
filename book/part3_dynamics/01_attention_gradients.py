# %% [markdown]
# # 3.1 Attention gradients: where the error signal goes inside one head
#
# **The question.** When an attention head helps make a wrong prediction, training nudges every
# number in it — but which way? How does the error at the output tell the values what to become, and
# tell each query which earlier positions to attend to more and which less?
#
# Everything Part 3 says about how attention *learns* — heads that specialise, attention that
# settles early while the values keep improving, the comparison with the EM algorithm — rests on a
# handful of derivatives of the loss. This page works them out, first for one query and three
# positions by hand, then in general, and checks each one three ways. Along the way it meets the
# paper's central formula: a score rises when its position is *better than average* at reducing
# the error, which the paper calls an "advantage".
#
# ```{admonition} Learning goals
# :class: tip
# After this page you can
# - compute by hand, for one query and three positions, the upstream error $u$, the compatibilities
#   $b_j = u^\top v_j$, their attention-weighted mean, and the gradient of the loss for every score;
# - explain why a score's gradient is "attention weight × (compatibility − its mean)", and predict
#   from the sign of the advantage which scores gradient descent raises;
# - trace which quantities the loss gradient reaches and through what: values directly, scores
#   through the advantage, queries and keys only through the scores;
# - check a hand-derived gradient with sympy, central finite differences and autograd.
# ```
#
# **Builds on:** [6.2 The attention mechanism](../part1_chapter6/6_2_attention_mechanism.ipynb)
# (queries, keys, values, scores $q\cdot k/\sqrt{d_k}$, softmax weights, the output as a weighted
# average of values) · the chain rule for functions of several variables; a softmax classifier
# trained with the cross-entropy loss, whose gradient with respect to the logits is
# $p - e_y$ (predicted probabilities minus the one-hot target). **Reading time:** about 40 minutes.
#
# *Source: Aggarwal, Dalal, Misra (gradient dynamics), §2 (Eqs. (1)–(12)) and §3 (Eqs. (13)–(36)).*

# %%
import matplotlib.pyplot as plt
import numpy as np
import sympy as sp
from IPython.display import Math, display

from nextword.attention import softmax
from nextword.booktools.plotting import heatmap, use_book_style
from nextword.booktools.schematics.dynamics import draw_gradient_flow
from nextword.numerics import central_difference
from nextword.theory.dynamics import (
    HeadParams,
    advantage_matrix,
    compatibility_matrix,
    cross_entropy,
    head_forward,
    head_gradients,
    responsibility_signal,
    score_gradient,
    upstream_gradient,
)

use_book_style()

# %% [markdown]
# ## A tiny example by hand
#
# One query reads three positions. Its attention weights are typed in (scores $0$, $\ln 2$, $0$
# give weights $\tfrac14, \tfrac12, \tfrac14$), and so are the three value vectors, in two
# dimensions. The head's output, the **context** $g = \sum_j \alpha_j v_j$, goes straight into a
# two-class softmax (the read-out matrix is the identity, so the logits *are* $g$), and the target
# is class A (index 0 in code; positions are 1, 2, 3 in the text and 0, 1, 2 in code).

# %%
weights = np.array([0.25, 0.50, 0.25])     # alpha_j = softmax(0, ln 2, 0)
values = np.array([[1.0, 0.0],             # v_1 votes for class A
                   [0.0, 1.0],             # v_2 votes for class B
                   [-1.0, 0.0]])           # v_3 votes against class A
target = 0                                 # class A
assert np.allclose(softmax(np.array([0.0, np.log(2.0), 0.0])), weights)

context = weights @ values                 # g = sum_j alpha_j v_j = (0, 0.5)
probs = np.exp(context) / np.exp(context).sum()
print("context g =", context, "  p =", probs.round(4), "  loss = -log p_A =", round(-np.log(probs[0]), 4))

# %% [markdown]
# The model gives the right class a probability of only 0.38 — it leans towards B. Which way should $g$ move? The
# gradient of the loss with respect to the logits is $p - e_y$ (this is the classifier fact the
# page builds on); with the identity read-out it is also the gradient with respect to $g$. Call it
# the {term}`upstream gradient` $u$: the error signal that arrives at the head from above. Moving
# $g$ along $-u$ lowers the loss.

# %%
one_hot = np.eye(2)[target]
upstream = probs - one_hot                 # u = dL/dg (read-out = identity)
print("u =", upstream.round(4), "  -> g should move along -u =", (-upstream).round(4))

# %% [markdown]
# Now ask of each position: *if the query took a little more of $v_j$, would that help?* To first
# order, taking more of $v_j$ changes the loss at the rate $b_j = u^\top v_j$, the
# {term}`compatibility` of $v_j$ with the error (Eq. (17)): negative means $v_j$ points along $-u$
# and helps. But the weights must still add up to 1, so more of $v_j$ means less of the others —
# what counts is whether $v_j$ is better than the *current mixture*, whose compatibility is the
# attention-weighted mean $\mathbb E_\alpha[b] = \sum_j \alpha_j b_j$. A loop, one position at a
# time:

# %%
compat = np.zeros(3)
for j in range(3):
    compat[j] = upstream @ values[j]       # b_j = u . v_j
mean_compat = sum(weights[j] * compat[j] for j in range(3))
score_grad = np.zeros(3)
for j in range(3):
    score_grad[j] = weights[j] * (compat[j] - mean_compat)     # dL/ds_j, Eq. (23)
    print(f"position {j + 1}: b = {compat[j]:+.4f}   b - mean = {compat[j] - mean_compat:+.4f}"
          f"   dL/ds = {score_grad[j]:+.4f}")
print(f"attention-weighted mean compatibility E[b] = {mean_compat:.4f}")
assert abs(score_grad.sum()) < 1e-15     # the score gradients of one query add up to zero

# %% [markdown]
# Gradient descent changes each score by $-\eta\,\partial L/\partial s_j$. So it **raises** $s_1$
# (the value that votes for the target: $b_1$ is below the mean) and **lowers** $s_2$ and $s_3$.
# Two things to notice:
#
# - Positions 2 and 3 are equally worse than average ($b_j - \mathbb E[b] = +0.3112$ for both), yet
#   $s_2$ is pushed down twice as hard — because the query already gives position 2 twice the weight.
#   The factor $\alpha_j$ in front means a score moves fast only where the query already looks.
# - The three gradients add up to zero: raising all scores together changes nothing (the softmax
#   ignores a common shift), so only the *relative* scores can learn.
#
# The paper writes the bracket with the opposite sign and calls it the {term}`advantage`,
# $A_j = -(b_j - \mathbb E_\alpha[b])$, so that $\partial L/\partial s_j = -\alpha_j A_j$ and
# descent raises scores with positive advantage. The word comes from reinforcement learning: there
# an agent's *policy* gives each action a probability, and an action's advantage is how much better
# it is than the policy's average action; training raises the probability of actions with positive
# advantage. Here the "actions" are the positions a query may read, the "policy" is its attention
# row, and "better" means lowering the loss. Only the word is borrowed — nothing is sampled, there
# is no reward.
#
# The same numbers in matrix form (one line of numpy), and a check by nudging: raising $s_1$ by a
# small $\varepsilon$ should change the loss by $\varepsilon\,\partial L/\partial s_1 = -0.2334\,\varepsilon$.

# %%
advantage = -(compat - weights @ compat)
assert np.allclose(score_grad, weights * (compat - weights @ compat), atol=1e-15)
assert np.allclose(score_grad, -weights * advantage, atol=1e-15)


def tiny_loss(scores):
    g = softmax(scores) @ values
    return -np.log(np.exp(g[target]) / np.exp(g).sum())


scores = np.array([0.0, np.log(2.0), 0.0])
eps = 1e-6
for j in range(3):
    nudged = scores.copy()
    nudged[j] += eps
    rate = (tiny_loss(nudged) - tiny_loss(scores)) / eps
    assert abs(rate - score_grad[j]) < 1e-6
print("advantage A =", advantage.round(4), "; (loss change)/eps matches dL/ds to 1e-6")

# %% [markdown]
# The values learn too, and more simply: $g$ is linear in each $v_j$ with coefficient $\alpha_j$, so
# $\partial L/\partial v_j = \alpha_j u$ — every value is pushed along $-u$, in proportion to how much
# the query uses it (Eq. (16) for one query). The values get the upstream signal *directly*; the
# scores get it only after it is compared with the mean.

# %%
value_grad = weights[:, None] * upstream[None, :]   # row j: dL/dv_j = alpha_j u
print(value_grad.round(4))

# %% [markdown]
# ## Where the gradient goes: the whole head
#
# The paper studies one attention head followed by a linear read-out and a softmax over $C$
# classes, trained with cross-entropy summed over positions (Eqs. (1)–(9)):
#
# $$q_i = W_Q x_i,\quad k_j = W_K x_j,\quad v_j = W_V x_j,\quad
#   s_{ij} = \frac{q_i^\top k_j}{\sqrt{d_k}},\quad \alpha_{ij} = \frac{e^{s_{ij}}}{\sum_r e^{s_{ir}}},
#   \quad g_i = \sum_j \alpha_{ij} v_j,$$
# $$\ell_i = W_O g_i + b,\quad p_i = \operatorname{softmax}(\ell_i),\quad
#   L = -\sum_i \log p_{i, y_i}.$$
#
# Backpropagation runs this chain backwards. The tiny example was one row of it; Figure 3.1.1 shows
# the whole route.

# %%
ax = draw_gradient_flow()
plt.show()

# %% [markdown]
# **Figure 3.1.1.** One head, forward (grey) and backward (red). The loss gradient reaches the
# logits as $p_i - e_{y_i}$ and the context as the upstream gradient $u_i$. From there it splits:
# the **values** get the upstream signals directly, weighted by attention (16); the **weights** get
# the compatibilities $b_{ij}$ (17); the **scores** get the advantage-weighted signal (23); the
# **queries and keys** get theirs only through the scores (25, 27), and the projection matrices from
# those by one more matrix product (29)–(32). The equation numbers are the paper's.
#
# **Conventions.** The paper uses column vectors ($q_i = W_Q x_i$). The book keeps Chapter 6's
# row vectors: a sequence is $X\in\mathbb R^{T\times d_x}$, $Q = XW_Q$ with $W_Q\in\mathbb
# R^{d_x\times d_k}$ (the transpose of the paper's matrix), logits $\ell_i = g_iW_O + b$ with
# $W_O\in\mathbb R^{d_v\times C}$. Weight gradients are therefore the transposes of the paper's
# (29)–(32); the per-position gradients are the same vectors. The loss is the *sum* (9) over
# positions, so $u_i = \partial L/\partial g_i$ exactly. The library's names:
#
# | paper | meaning | code |
# |---|---|---|
# | $u_i = W_O^\top(p_i-e_{y_i})$ (10, 14) | upstream error at position $i$ | `HeadGradients.U`, `upstream_gradient` |
# | $b_{ij}=u_i^\top v_j$ (11, 17) | compatibility = $\partial L/\partial\alpha_{ij}$ | `compatibility_matrix(U, V)` |
# | $\mathbb E_{\alpha_i}[b]$ (12) | attention-weighted mean compatibility | `expected_compatibility` |
# | $\alpha_{ij}(b_{ij}-\mathbb E_{\alpha_i}[b])$ (23) | $\partial L/\partial s_{ij}$ | `score_gradient`, `HeadGradients.dS` |
# | $A_{ij} = -(b_{ij}-\mathbb E_{\alpha_i}[b])$ (§3.4) | advantage | `advantage_matrix` |
# | $\sum_i\alpha_{ij}u_i$ (16) | $\partial L/\partial v_j$ | `responsibility_signal`, `HeadGradients.dV` |

# %% [markdown]
# ## Deriving every gradient with sympy
#
# We let sympy differentiate a small symbolic head and compare with each formula of Figure 3.1.1.
# sympy shows its results as rendered maths; code indices count from 0.
#
# **The read-out, Eqs. (13)–(14).** For one position with $C=3$ logits and target class 0, the
# cross-entropy is $-\log\operatorname{softmax}(\ell)_0$. Sympy differentiates it and we compare
# with $p-e_y$; then we put a symbolic read-out $\ell = gW_O + b$ in front ($d_v = 2$) and compare
# $\partial L/\partial g$ with $W_O(p-e_y)$ in row form, i.e. the paper's $W_O^\top(p-e_y)$.

# %%
logits = sp.Matrix(sp.symbols("ell0:3"))
softmax_of_logits = sp.Matrix([sp.exp(e) for e in logits]) / sum(sp.exp(e) for e in logits)
loss_one_position = -sp.log(softmax_of_logits[0])
e_target = sp.Matrix([1, 0, 0])
grad_logits = sp.Matrix([sp.diff(loss_one_position, e) for e in logits])
assert sp.simplify(grad_logits - (softmax_of_logits - e_target)) == sp.zeros(3, 1)  # Eq. (13)
display(Math(r"\frac{\partial L}{\partial \ell_0} = " + sp.latex(sp.simplify(grad_logits[0]))
             + r" = p_0 - 1 \quad\text{(13)}"))

# %%
context_sym = sp.Matrix(sp.symbols("g0:2"))
W_O_sym = sp.Matrix(2, 3, sp.symbols("w0:6"))  # (d_v, C), row convention
bias_sym = sp.Matrix(sp.symbols("c0:3"))
logits_of_g = (context_sym.T * W_O_sym).T + bias_sym  # (C, 1)
probs_of_g = sp.Matrix([sp.exp(e) for e in logits_of_g]) / sum(sp.exp(e) for e in logits_of_g)
loss_of_g = -sp.log(probs_of_g[0])
upstream_sym = sp.Matrix([sp.diff(loss_of_g, gk) for gk in context_sym])
assert sp.simplify(upstream_sym - W_O_sym * (probs_of_g - e_target)) == sp.zeros(2, 1)  # Eq. (14)
display(Math(r"\frac{\partial L}{\partial g} = W_O\,(p - e_y)"
             r"\quad\text{(row form of the paper's } W_O^\top(p-e_y)\text{, Eq. (14))}"))

# %% [markdown]
# **Why a linear stand-in for the loss is enough.** Past the context $g_i$, the loss is a
# complicated function (read-out, softmax, log). But the chain rule says that for anything $\theta$
# *before* $g$ — a value, a score, a query —
# $$\frac{\partial L}{\partial \theta} = \sum_i u_i^\top \frac{\partial g_i}{\partial \theta},
# \qquad u_i = \frac{\partial L}{\partial g_i}.$$
# The right-hand side is exactly the derivative of the {term}`linearised loss`
# $\tilde L = \sum_i u_i^\top g_i$ *in which the $u_i$ are held fixed* — treated as numbers already
# computed, not as functions of $\theta$. $\tilde L$ is not the loss (its value is different), but
# its first derivatives with respect to everything upstream of $g$ are the same. This is what
# backpropagation does at every stage: a stage receives the gradient of its output as fixed numbers
# and passes on their product with its own derivative. So below, $u_i$ are free symbols.
#
# **A trick that keeps sympy fast.** The softmax $\alpha_{ij} = e^{s_{ij}}/\sum_r e^{s_{ir}}$ puts
# exponentials everywhere, and simplifying expressions full of them is slow. Write
# $z_{ij} = e^{s_{ij}} > 0$ instead: then $\alpha_{ij} = z_{ij}/\sum_r z_{ir}$ is a ratio of
# polynomials, and because $\mathrm d z_{ij}/\mathrm d s_{ij} = z_{ij}$, a derivative with respect to
# a score is $\partial/\partial s_{ij} = z_{ij}\,\partial/\partial z_{ij}$. Every identity below then
# compares rational functions, which `sp.cancel` (bring to one fraction and cancel common factors)
# checks in a fraction of a second.
#
# A symbolic head has matrices whose entries are all different symbols. The helper
# `symbol_matrix("u", 3, 2)` builds the $3\times2$ matrix whose entry $(i, a)$ is the symbol
# $u_{ia}$; we use $T=3$ positions and widths $d_k = d_v = d_x = 2$.


# %%
def symbol_matrix(name, rows, cols, **assumptions):
    """The rows x cols matrix of symbols name_{ij} (e.g. u_01), with sympy assumptions if given."""
    return sp.Matrix(rows, cols, [sp.Symbol(f"{name}{i}{j}", **assumptions)
                                  for i in range(rows) for j in range(cols)])


positions, key_width, value_width, input_width = 3, 2, 2, 2
upstream_U = symbol_matrix("u", positions, value_width)   # row i: u_i, held fixed
values_V = symbol_matrix("v", positions, value_width)     # row j: v_j
exp_scores = symbol_matrix("z", positions, positions, positive=True)  # z_ij = exp(s_ij)
row_sums = [sum(exp_scores[i, r] for r in range(positions)) for i in range(positions)]
alpha = sp.Matrix(positions, positions,
                  [exp_scores[i, j] / row_sums[i] for i in range(positions) for j in range(positions)])
contexts = alpha * values_V                                 # row i: g_i, Eq. (6)
linear_loss = sum((upstream_U.row(i) * contexts.row(i).T)[0] for i in range(positions))

# %% [markdown]
# **Values, Eq. (16).** Differentiate $\tilde L$ by every entry of every value and compare with
# $\alpha^\top U$ (row $j$: $\sum_i\alpha_{ij}u_i$).

# %%
grad_values = sp.Matrix(positions, value_width,
                        [sp.diff(linear_loss, values_V[j, a])
                         for j in range(positions) for a in range(value_width)])
assert sp.simplify(grad_values - alpha.T * upstream_U) == sp.zeros(positions, value_width)
display(Math(r"\frac{\partial L}{\partial v_j} = \sum_i \alpha_{ij} u_i"
             r"\ \text{ for all } j \quad\text{(16), i.e. } \frac{\partial L}{\partial V} = \alpha^\top U"))

# %% [markdown]
# **Weights, Eq. (17).** With the weights as free symbols $a_{ij}$ (forgetting for a moment that
# they come from a softmax), $\partial\tilde L/\partial a_{ij}$ should be the compatibility
# $b_{ij} = u_i^\top v_j$.

# %%
alpha_free = symbol_matrix("a", positions, positions)
loss_of_alpha = sum((upstream_U.row(i) * (alpha_free * values_V).row(i).T)[0] for i in range(positions))
compat_B = upstream_U * values_V.T  # (T, T), b_ij = u_i . v_j
grad_alpha = sp.Matrix(positions, positions,
                       [sp.diff(loss_of_alpha, alpha_free[i, j])
                        for i in range(positions) for j in range(positions)])
assert grad_alpha == compat_B.applyfunc(sp.expand)
display(Math(r"\frac{\partial L}{\partial \alpha_{01}} = " + sp.latex(compat_B[0, 1])
             + r" = b_{01} \quad\text{(17)}"))

# %% [markdown]
# **Scores, Eq. (23).** Now the real softmax, through $z_{ik}$: compare
# $z_{ik}\,\partial\tilde L/\partial z_{ik}$ with $\alpha_{ik}(b_{ik} - \mathbb E_{\alpha_i}[b])$
# for all nine scores.

# %%
grad_scores = sp.Matrix(positions, positions,
                        [exp_scores[i, k] * sp.diff(linear_loss, exp_scores[i, k])
                         for i in range(positions) for k in range(positions)])
mean_b = [sum(alpha[i, j] * compat_B[i, j] for j in range(positions)) for i in range(positions)]  # (12)
closed_23 = sp.Matrix(positions, positions,
                      [alpha[i, k] * (compat_B[i, k] - mean_b[i])
                       for i in range(positions) for k in range(positions)])
assert sp.cancel(grad_scores - closed_23) == sp.zeros(positions, positions)

# %% [markdown]
# To *see* the formula, take row 0 alone with the compatibilities $b_{0j}$ as symbols and rename
# $z_{0j}/\sum_r z_{0r}$ as $\alpha_{0j}$ (eliminating $\alpha_{02} = 1-\alpha_{00}-\alpha_{01}$);
# sympy's factorised $\partial L/\partial s_{01}$ is $\alpha_{01}(b_{01} - \mathbb E_{\alpha_0}[b])$
# written out.

# %%
b_row = sp.symbols("b_00 b_01 b_02")
alpha_row = sp.symbols("alpha_00 alpha_01 alpha_02", positive=True)
loss_row0 = sum(alpha[0, j] * b_row[j] for j in range(positions))  # sum_j alpha_0j b_0j
d_s01 = sp.cancel(exp_scores[0, 1] * sp.diff(loss_row0, exp_scores[0, 1]))
d_s01 = sp.factor(d_s01.subs({exp_scores[0, k]: alpha_row[k] for k in range(positions)})
                  .subs(alpha_row[2], 1 - alpha_row[0] - alpha_row[1]))
check = alpha_row[1] * (b_row[1] - sum(alpha_row[k] * b_row[k] for k in range(positions)))
assert sp.expand(d_s01 - check.subs(alpha_row[2], 1 - alpha_row[0] - alpha_row[1])) == 0
display(Math(r"\frac{\partial L}{\partial s_{01}} = " + sp.latex(d_s01)
             + r" = \alpha_{01}\,(b_{01} - \mathbb{E}_{\alpha_0}[b])\quad\text{(23)}"))

# %% [markdown]
# **Queries and keys, Eqs. (25), (27).** The scores come from queries and keys,
# $s_{ij} = q_i^\top k_j/\sqrt{d_k}$ (Eq. (4)). Whatever $\partial L/\partial s$ is, the chain rule
# only needs it as fixed numbers — the same linearisation as before, one stage further back — so we
# call it a symbolic matrix $D$ and differentiate $\sum_{ij} D_{ij}s_{ij}$. The $1/\sqrt{d_k}$ stays
# a symbol so that we can see it carried through.

# %%
queries_Q = symbol_matrix("q", positions, key_width)
keys_K = symbol_matrix("k", positions, key_width)
d_k = sp.Symbol("d_k", positive=True)
score_grad_D = symbol_matrix("D", positions, positions)  # stands for dL/ds, held fixed
scores_qk = queries_Q * keys_K.T / sp.sqrt(d_k)
loss_of_scores = sum(score_grad_D[i, j] * scores_qk[i, j]
                     for i in range(positions) for j in range(positions))
grad_Q = sp.Matrix(positions, key_width, [sp.diff(loss_of_scores, queries_Q[i, a])
                                          for i in range(positions) for a in range(key_width)])
grad_K = sp.Matrix(positions, key_width, [sp.diff(loss_of_scores, keys_K[j, a])
                                          for j in range(positions) for a in range(key_width)])
assert sp.simplify(grad_Q - score_grad_D * keys_K / sp.sqrt(d_k)) == sp.zeros(positions, key_width)
assert sp.simplify(grad_K - score_grad_D.T * queries_Q / sp.sqrt(d_k)) == sp.zeros(positions, key_width)
display(Math(r"\frac{\partial L}{\partial q_{00}} = " + sp.latex(sp.simplify(grad_Q[0, 0]))
             + r"\quad\text{(25); likewise (27) for the keys}"))

# %% [markdown]
# **Projection matrices, Eqs. (29)–(32).** One more linear stage: $Q = XW_Q$, so with
# $\partial L/\partial Q$ held fixed (a symbolic matrix $G_Q$), $\partial L/\partial W_Q = X^\top G_Q$
# (Eq. (29); Eq. (30) is the same for $W_K$). For the values, $g = \alpha X W_V$ gives
# $\partial L/\partial W_V = X^\top\alpha^\top U$ (Eq. (31)), whose transpose is the paper's
# column-form $UAX^\top$ (Eq. (32)).

# %%
inputs_X = symbol_matrix("x", positions, input_width)
W_Q_sym = symbol_matrix("WQ", input_width, key_width)
grad_Q_fixed = symbol_matrix("gq", positions, key_width)  # stands for dL/dQ, held fixed
queries_of_W = inputs_X * W_Q_sym
loss_of_WQ = sum(grad_Q_fixed[i, a] * queries_of_W[i, a]
                 for i in range(positions) for a in range(key_width))
grad_WQ = sp.Matrix(input_width, key_width, [sp.diff(loss_of_WQ, W_Q_sym[a, b])
                                             for a in range(input_width) for b in range(key_width)])
assert sp.simplify(grad_WQ - inputs_X.T * grad_Q_fixed) == sp.zeros(input_width, key_width)  # (29)

# %%
W_V_sym = symbol_matrix("WV", input_width, value_width)
contexts_of_WV = alpha_free * (inputs_X * W_V_sym)  # g = alpha X W_V
loss_of_WV = sum((upstream_U.row(i) * contexts_of_WV.row(i).T)[0] for i in range(positions))
grad_WV = sp.Matrix(input_width, value_width, [sp.diff(loss_of_WV, W_V_sym[a, b])
                                               for a in range(input_width) for b in range(value_width)])
assert sp.expand(grad_WV - inputs_X.T * alpha_free.T * upstream_U) == sp.zeros(input_width, value_width)
# Eq. (32) in the paper's column convention: U_col A X_col^T with U_col = U^T, X_col = X^T
assert sp.expand(grad_WV.T - (upstream_U.T * alpha_free * inputs_X)) == sp.zeros(value_width, input_width)
display(Math(r"\nabla_{W_Q}L = X^\top \frac{\partial L}{\partial Q}\ \text{(29, 30)},\qquad"
             r"\nabla_{W_V}L = X^\top\alpha^\top U = (UAX^\top)^\top_{\text{paper}}\ \text{(31, 32)}"))

# %% [markdown]
# ## The advantage on a random head: which scores rise
#
# The tiny example had one query. On a head with six positions and random weights, the library
# computes all the pieces of Figure 3.1.1 at once. The claim to check, for *every* pair $(i, j)$:
# nudging the score $s_{ij}$ up by a small $\varepsilon$ changes the loss by
# $\varepsilon\,\partial L/\partial s_{ij} = -\varepsilon\,\alpha_{ij}A_{ij}$, so the loss falls
# exactly where the advantage is positive — where $b_{ij}$ is *below* its attention-weighted mean.

# %%
rng = np.random.default_rng(3)
T, d_x, d_k, d_v, C = 6, 4, 3, 3, 4
params = HeadParams.init(d_x, d_k, d_v, C, rng=rng, scale=0.8)
X = rng.standard_normal((T, d_x))
y = rng.integers(0, C, size=T)
forward = head_forward(params, X)
U = upstream_gradient(forward.probs, y, params.W_O)   # (T, d_v), Eq. (10)
B = compatibility_matrix(U, forward.V)                # (T, T), Eq. (11)
Adv = advantage_matrix(forward.alpha, B)              # (T, T), §3.4
dS = score_gradient(forward.alpha, B)                 # (T, T), Eq. (23)
assert np.allclose(dS, head_gradients(params, X, y).dS, atol=1e-14)
assert np.allclose(responsibility_signal(forward.alpha, U), head_gradients(params, X, y).dV, atol=1e-14)


# %%
def loss_from_scores(S):
    """The head's summed loss when its score matrix is S (T, T) and everything else is fixed."""
    G = softmax(S) @ forward.V
    return cross_entropy(np.log(softmax(G @ params.W_O + params.b)), y)


S0 = forward.Q @ forward.K.T / np.sqrt(d_k)
eps = 1e-6
dL = np.zeros((T, T))
for i, j in np.ndindex(T, T):
    S1 = S0.copy()
    S1[i, j] += eps
    dL[i, j] = loss_from_scores(S1) - loss_from_scores(S0)
assert np.allclose(dL, -eps * forward.alpha * Adv, atol=1e-11)

# %%
falls = dL < 0
above_mean = B - (forward.alpha * B).sum(1, keepdims=True) > 0
print(f"raising s_ij lowers the loss for {falls.sum()} of {T * T} pairs; "
      f"all of them have A_ij > 0 (b_ij below the mean): {bool(np.all(Adv[falls] > 0))}; "
      f"none has b_ij above the mean: {bool(not np.any(above_mean[falls]))}")
assert np.all(Adv[falls] > 0)
assert not np.any(above_mean[falls])
assert np.all(np.sign(dL[np.abs(dL) > 1e-12]) == -np.sign(Adv[np.abs(dL) > 1e-12]))
assert np.allclose((forward.alpha * Adv).sum(axis=1), 0.0, atol=1e-12)  # alpha-mean zero per row

# %%
fig, axes = plt.subplots(1, 3, figsize=(12, 3.4))
panels = [(B, "compatibility $b_{ij}=u_i^\\top v_j$ (11)"),
          (Adv, "advantage $A_{ij}$ (§3.4)"),
          (-dS, "descent direction $-\\partial L/\\partial s_{ij}$ (23)")]
labels = [str(n) for n in range(1, T + 1)]   # positions 1..6, as in the text
for ax, (matrix, title) in zip(axes, panels):
    limit = np.abs(matrix).max()   # symmetric limits: white is exactly zero
    heatmap(matrix, ax=ax, title=title, cmap="RdBu_r", vmin=-limit, vmax=limit,
            row_labels=labels, col_labels=labels)
    assert ax.images[0].get_clim() == (-limit, limit)
    ax.set_xlabel("key position j")
    ax.set_ylabel("query position i")
plt.tight_layout()
plt.show()

# %% [markdown]
# **Figure 3.1.2.** A random head of six positions: the compatibilities, the advantages and the
# direction in which gradient descent moves the scores. Each panel's colour scale is symmetric about
# zero (white = 0, red > 0, blue < 0), so the signs can be read off: the right panel is red exactly
# where the middle one is red — descent raises the scores with positive advantage — and it is the
# advantage reweighted by $\alpha_{ij}$, so it is large only where the query already attends (and
# nearly white where it barely does, whatever the advantage). In
# each row of the left panel, the red cells (compatibility above the row's mean) are the ones whose
# scores fall.
#
# ## Checking the paper
#
# The derivations above are the paper's §3, and they hold. This section checks the library's
# implementation numerically, on random sizes, in the ways a referee would; records where the
# paper's *prose* states the direction of the advantage backwards; and checks the first-order
# updates (33)–(36).
#
# ### Finite differences and autograd, random sizes
#
# `head_gradients` assembles the read-out (`cross_entropy_upstream`) and the closed-form attention
# backward (`attention_backward`). We compare every parameter gradient with a
# {term}`central finite difference` of the loss, $(L(\theta+h)-L(\theta-h))/2h$, for several random
# sizes, causal and not. Its error is $O(h^2)$; with $h=10^{-5}$ in float64 we expect agreement to
# about $10^{-8}$ relative.


# %%
def loss_of(params, X, y, causal):
    return cross_entropy(head_forward(params, X, causal=causal).log_probs, y)


def fd_grad(params, X, y, causal, name, h=1e-5):
    """Central finite differences of the summed loss with respect to one parameter array."""
    def loss_at(W):
        return loss_of(HeadParams(**{**params.__dict__, name: W}), X, y, causal)
    return central_difference(loss_at, getattr(params, name), h=h)  # the parameter's shape


rng = np.random.default_rng(0)
worst = 0.0
for trial, (T, d_x, d_k, d_v, C) in enumerate([(5, 3, 2, 2, 3), (7, 4, 3, 5, 4), (4, 6, 5, 3, 2)]):
    params = HeadParams.init(d_x, d_k, d_v, C, rng=rng, scale=0.8)
    X = rng.standard_normal((T, d_x))
    y = rng.integers(0, C, size=T)
    for causal in (False, True):
        g = head_gradients(params, X, y, causal=causal)
        for name in ("W_Q", "W_K", "W_V", "W_O", "b"):
            fd = fd_grad(params, X, y, causal, name)
            rel = np.abs(getattr(g, name) - fd).max() / max(np.abs(fd).max(), 1e-12)
            worst = max(worst, rel)
            assert rel < 1e-6, (trial, causal, name, rel)
print("closed form vs central differences, 30 gradient arrays: worst relative error < 1e-6")

# %% [markdown]
# The same comparison against torch's {term}`automatic differentiation` (autograd: the gradient
# computed by replaying the forward computation backwards, operation by operation), now to machine
# precision. The torch reference is written from the forward equations (1)–(9) only.

# %%
try:
    import torch
except ImportError:  # pragma: no cover - torch is part of the book environment
    torch = None

if torch is not None:
    worst_t = 0.0
    for T, d_x, d_k, d_v, C in [(6, 5, 4, 3, 4), (9, 3, 2, 6, 5)]:
        params = HeadParams.init(d_x, d_k, d_v, C, rng=rng, scale=0.8)
        X = rng.standard_normal((T, d_x))
        y = rng.integers(0, C, size=T)
        for causal in (False, True):
            t = {k: torch.tensor(v, requires_grad=True) for k, v in params.__dict__.items()}
            Xt = torch.tensor(X)
            S = (Xt @ t["W_Q"]) @ (Xt @ t["W_K"]).T / np.sqrt(d_k)  # Eq. (4), with 1/sqrt(d_k)
            if causal:
                S = S.masked_fill(~torch.tril(torch.ones(T, T, dtype=torch.bool)), float("-inf"))
            G = torch.softmax(S, dim=-1) @ (Xt @ t["W_V"])
            logits_t = G @ t["W_O"] + t["b"]
            L = torch.nn.functional.cross_entropy(logits_t, torch.tensor(y), reduction="sum")
            L.backward()
            g = head_gradients(params, X, y, causal=causal)
            for k in t:
                worst_t = max(worst_t, float(np.abs(t[k].grad.numpy() - getattr(g, k)).max()))
    assert worst_t < 1e-12
    print("closed form vs torch autograd, 20 gradient arrays: worst absolute error < 1e-12")

# %% [markdown]
# ### The $1/\sqrt{d_k}$ matters
#
# Dropping it from the backward (computing $X^\top(\partial L/\partial S)\,K$ instead of Eq. (25))
# while keeping it in the forward pass — a common slip when transcribing Eqs. (25)–(28) — makes the
# query/key gradients wrong by exactly a factor $\sqrt{d_k}$; the value and read-out gradients do
# not notice.

# %%
T, d_x, d_k, d_v, C = 6, 4, 9, 3, 3
params = HeadParams.init(d_x, d_k, d_v, C, rng=rng, scale=0.8)
X = rng.standard_normal((T, d_x))
y = rng.integers(0, C, size=T)
g = head_gradients(params, X, y)
ratio = fd_grad(params, X, y, False, "W_Q") / (X.T @ (g.dS @ (X @ params.W_K)))
print(f"true dL/dW_Q divided by the backward without 1/sqrt(d_k): {ratio.mean():.6f} "
      f"(1/sqrt(d_k) = {1 / np.sqrt(d_k):.6f}), the same for all {ratio.size} entries")
assert np.allclose(ratio, 1 / np.sqrt(d_k), rtol=1e-6)

# %% [markdown]
# ### How small a step: the finite-difference step study
#
# How the finite-difference error behaves with the step $h$ confirms the comparison is meaningful:
# the error falls as $h^2$ until round-off ($\sim\varepsilon/h$) takes over.

# %%
hs = np.logspace(-8, -1, 15)
errs = [np.abs(fd_grad(params, X, y, False, "W_K", h=h) - g.W_K).max() for h in hs]
fig, ax = plt.subplots(figsize=(5.5, 3.6))
ax.loglog(hs, errs, "o-", label="|FD - closed form|, $W_K$")
ax.loglog(hs, errs[-1] * (hs / hs[-1]) ** 2, "--", color="gray", label="slope 2")
ax.set_xlabel("finite-difference step h")
ax.set_ylabel("max abs error")
ax.legend()
plt.show()
i_best = int(np.argmin(errs))
assert errs[i_best] < 1e-8
assert 1e-7 <= hs[i_best] <= 1e-3

# %% [markdown]
# **Figure 3.1.3.** Central-difference error of $\partial L/\partial W_K$ (Eqs. (27), (30)) against
# the closed form: slope 2 for large $h$, round-off for small $h$; the minimum, near $10^{-8}$, is
# the agreement we assert above.
#
# ### What the prose gets backwards
#
# Eq. (23) and the definition of $A_{ij}$ are right, and the paper's §3.4 and §4.1 read them
# correctly: descent raises scores with positive advantage. But the sentence after (23) ("scores
# increase for positions whose compatibility exceeds the current attention-weighted average"),
# contribution (2), the abstract ("route more strongly to values that are above-average for their
# error signal"), §5.1 after (44) (the E-step "increases responsibilities for positions whose
# compatibility $b_{ij}$ exceeds the current mean") and conclusion (1) read "compatibility" as if a
# larger $b_{ij}$ were better. With $b_{ij}=u_i^\top v_j$ and $u_i=\partial L/\partial g_i$ it is
# the other way round — the tiny example (the score of $v_1$, whose $b$ is lowest, rises) and
# Figure 3.1.2 (the loss falls exactly where $b_{ij}$ is below the mean, on all 36 scores) both show
# it: attention moves toward values whose compatibility is *below* average (they point along
# $-u_i$). The equations are right; the wording is not. Recorded in `book/ERRATA.md`.
#
# ### First-order updates (33)–(36)
#
# The updates (33)–(36) are first-order: for a small learning rate, the loss change of a full
# gradient step is $-\eta\Vert\nabla L\Vert^2 + O(\eta^2)$. We check the ratio of actual to
# predicted change tends to 1 linearly in $\eta$.

# %%
g = head_gradients(params, X, y)
sq = sum(float(np.sum(getattr(g, n) ** 2)) for n in ("W_Q", "W_K", "W_V", "W_O", "b"))
for eta in (1e-2, 1e-3, 1e-4):
    actual = loss_of(params.sgd(g, eta), X, y, False) - g.loss
    print(f"eta={eta:.0e}: actual dL / (-eta ||grad||^2) = {actual / (-eta * sq):.6f}")
eta = 1e-4
assert abs((loss_of(params.sgd(g, eta), X, y, False) - g.loss) / (-eta * sq) - 1) < 1e-2

# %% [markdown]
# ## Key takeaways
#
# - The error reaches an attention head as the upstream gradient $u_i = \partial L/\partial g_i$;
#   every other gradient of the head is built from it by the chain rule.
# - Values get the upstream signal directly: $\partial L/\partial v_j = \sum_i\alpha_{ij}u_i$, so a
#   value is pushed along $-u_i$ by every query that uses it, in proportion to its weight.
# - A score gets an advantage-weighted signal, $\partial L/\partial s_{ij} = -\alpha_{ij}A_{ij}$:
#   descent raises the scores of positions whose compatibility $b_{ij}$ is *below* the query's
#   attention-weighted mean (better than the current mixture), most where the query already looks.
# - Queries and keys learn only through the scores (Eqs. (25), (27)), carrying the $1/\sqrt{d_k}$ of
#   the forward pass; dropping it makes their gradients wrong by exactly $\sqrt{d_k}$.
# - Every formula of the paper's §3 holds (sympy, finite differences, autograd); its prose states
#   the direction of the advantage backwards in several places.
#
# ## Check your understanding
#
# (Exercise 01, `exercises/part3_dynamics/ex01_advantage_routing.ipynb`, asks you to implement the
# score gradient and the advantage and to show that the advantages of one query average to zero.)
#
# 1. In the tiny example, suppose the target were class B instead of A. Without running code, which
#    scores would gradient descent raise and which lower?
#
#    ```{dropdown} Answer
#    Now $u = p - e_B = (0.3775, -0.3775)$, so $b_1 = 0.3775$, $b_2 = -0.3775$, $b_3 = -0.3775$ and
#    $\mathbb E[b] = -0.1888$. Position 1 is above the mean (it votes for A): its score falls.
#    Positions 2 and 3 are below the mean: their scores rise — position 2 twice as fast, because its
#    weight is twice as large.
#    ```
#
# 2. Suppose every position offers the same value vector. What are the score gradients, and what
#    does that say about what attention can learn?
#
#    ```{dropdown} Answer
#    All compatibilities of a query are equal, $b_{ij} = u_i^\top v$, so each equals its mean and
#    every $\partial L/\partial s_{ij}$ is 0: when all positions offer the same thing there is
#    nothing to prefer, and the scores do not move. Attention learns only from *differences*
#    between what the positions offer.
#    ```
#
# 3. A position has a hugely positive advantage but the query gives it weight $10^{-6}$. Will its
#    score grow quickly?
#
#    ```{dropdown} Answer
#    No: $\partial L/\partial s_{ij} = -\alpha_{ij}A_{ij}$ carries the factor $\alpha_{ij}$, so a
#    position the query barely looks at barely learns — a helpful position that is ignored at the
#    start can stay ignored for a long time. (The next page, 3.2, follows this rich-get-richer effect.)
#    ```
#
# 4. The paper's sentence after (23) says scores rise where compatibility *exceeds* the mean. What
#    single fact about $u_i$ shows it is backwards?
#
#    ```{dropdown} Answer
#    $u_i = \partial L/\partial g_i$ points in the direction that *increases* the loss. A value with
#    large $b_{ij} = u_i^\top v_j$ points along $u_i$, so mixing in more of it raises the loss; the
#    helpful values have $b_{ij}$ below the mean.
#    ```
#
# ## Reproducibility
#
# Everything on this page is exact or a deterministic computation from seeded random draws
# (`numpy.random.default_rng(3)` for the advantage check, `default_rng(0)` for the numerical
# checks); no training run. Library: `nextword.theory.dynamics` (`head_forward`, `head_gradients`
# and the §3 helpers), `nextword.attention.core.attention_backward`,
# `nextword.numerics.central_difference`; the schematic from
# `nextword.booktools.schematics.dynamics.draw_gradient_flow`.

# %% tags=["hide-cell", "nbval-ignore-output"]
# nbval-ignore-output: package versions
import platform  # noqa: E402

print(f"numpy {np.__version__}, sympy {sp.__version__}, torch {torch.__version__ if torch else 'absent'}, "
      f"python {platform.python_version()}")
