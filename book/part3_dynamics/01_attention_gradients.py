# %% [markdown]
# # 3.1 Attention gradients: where the error signal goes inside one head
#
# **The question.** When an attention head helps make a wrong prediction, training nudges every
# number in it — but which way? How does the error at the output tell the values what to become, and
# tell each query which positions to attend to more and which less?
#
# Everything Part 3 says about how attention *learns* — heads that specialise, attention that
# tends to settle before the values do, the comparison with the EM algorithm — rests on a
# handful of derivatives of the loss. This page works them out, first for one query and three
# positions by hand, then for a whole head, and checks each one. Along the way it meets the central
# formula of the gradient-dynamics paper: a score rises when its position is *better than the
# current mixture* at lowering the loss — by how much is called the position's "advantage".
#
# ```{admonition} Learning goals
# :class: tip
# After this page you can
# - compute by hand, for one query and three positions, the descent direction $-u$, the alignment
#   $a_j$ of each value with it, their attention-weighted mean, and the gradient of the loss for
#   every score;
# - explain why a score's descent step is "attention weight × advantage", and predict from the
#   sign of the advantage which scores gradient descent raises;
# - trace which quantities the loss gradient reaches and through what: values directly, scores
#   through the advantage, queries and keys only through the scores;
# - check a hand-derived gradient by nudging one number (a finite difference) and with sympy.
# ```
#
# **Builds on:** [6.2 The attention mechanism](../part1_chapter6/6_2_attention_mechanism.ipynb)
# (queries, keys, values, scores $q\cdot k/\sqrt{d_k}$, softmax weights, the output as a weighted
# average of values) · the chain rule for functions of several variables; a softmax classifier
# trained with the cross-entropy loss, whose gradient with respect to the logits is
# $p - \operatorname{onehot}(y)$ (predicted probabilities minus the one-hot target).
# **Reading time:** about 40 minutes.
#
# ```{admonition} Symbols on this page
# :class: note
# | symbol | meaning | shape |
# |---|---|---|
# | $x_i$ | the input vector of position $i$ (a row vector) | $(d_x,)$ |
# | $d_x$ | the width of an input vector | scalar |
# | $y$, $y_i$ | the target class (of position $i$): an id from 0 to $C-1$ | scalar |
# | $c$ | a class, as an index from 0 to $C-1$ | index |
# | $C$ | the number of classes the head's read-out predicts | scalar |
# | $s$, $s_{ij}$ | the score (of query $i$ on key $j$), $q_i\cdot k_j/\sqrt{d_k}$ | scalar |
# | $S$ | the scores as a matrix, $S[i,j] = s_{ij}$ | $(T, T)$ |
# | $g$, $g_i$ | the context: the head's output (at position $i$), $\sum_j\alpha_{ij}v_j$ | $(d_v,)$ |
# | $W^{\text{out}}$ | the read-out matrix, from a context to the logits | $(d_v, C)$ |
# | $b^{\text{out}}$ | the read-out's bias, added to every position's logits | $(C,)$ |
# | $z$, $z_i$ | the logits (of position $i$), $g_i\,W^{\text{out}} + b^{\text{out}}$ | $(C,)$ |
# | $w_c$ | the read-out vector of class $c$: column $c$ of $W^{\text{out}}$ | $(d_v,)$ |
# | $u$, $u_i$ | the upstream gradient $\partial\mathcal L/\partial g_i$; $-u_i$ is the descent direction | $(d_v,)$ |
# | $U$ | the upstream gradients stacked as rows | $(T, d_v)$ |
# | $a$, $a_{ij}$ | the alignment of value $v_j$ with query $i$'s descent direction, $-u_i\cdot v_j$ (large = helpful) | scalar |
# | $A$, $A_{ij}$ | the advantage: $a_{ij}$ minus its attention-weighted mean over $j$ | scalar |
# | $\varepsilon$ | a small step added to one number to measure a derivative | scalar |
# | $\theta$ | any number the head computes before the context (an entry of a value, a score, a query) | scalar |
# | $\tilde{\mathcal L}$ | the linearised loss $\sum_i u_i\cdot g_i$, with the $u_i$ held fixed | scalar |
# | $\omega$, $\omega_{ij}$ | $e^{s_{ij}}$, used to keep sympy fast | scalar |
# | $D$, $G_Q$ | $\partial\mathcal L/\partial S$ and $\partial\mathcal L/\partial Q$ held fixed, as symbols | $(T,T)$, $(T,d_k)$ |
# ```
#
# *Source: Aggarwal, Dalal, Misra (gradient dynamics), §2 (Eqs. (1)–(12)) and §3 (Eqs. (13)–(36)).*

# %% [markdown]
# ## A tiny example by hand
#
# One query reads three positions. Its attention weights are typed in (scores $0$, $\ln 2$, $0$
# give weights $\tfrac14, \tfrac12, \tfrac14$), and so are the three value vectors, in two
# dimensions. The head's output, the **context** $g = \sum_j \alpha_j v_j$, goes straight into a
# two-class softmax (the read-out matrix is the identity, so the logits *are* $g$), and the target
# is class 0. (Positions are 1, 2, 3 in the text and 0, 1, 2 in code; classes are ids 0 and 1 in both.)

# %%
import numpy as np

weights = np.array([0.25, 0.50, 0.25])     # alpha_j = softmax(0, ln 2, 0)
values = np.array([[1.0, 0.0],             # v_1 votes for class 0
                   [0.0, 1.0],             # v_2 votes for class 1
                   [-1.0, 0.0]])           # v_3 votes against class 0
target = 0                                 # class 0
scores = np.array([0.0, np.log(2.0), 0.0])
assert np.allclose(np.exp(scores) / np.exp(scores).sum(), weights)

context = weights @ values                 # g = sum_j alpha_j v_j = (0, 0.5)
probs = np.exp(context) / np.exp(context).sum()
print("context g =", context, "  p =", probs.round(4), "  loss = -log p_0 =", round(-np.log(probs[0]), 4))

# %% [markdown]
# The model gives the right class a probability of only 0.38 — it leans towards class 1. Which way
# should $g$ move? The gradient of the loss with respect to the logits is $p - \operatorname{onehot}(y)$
# (the classifier fact the page builds on); with the identity read-out it is also the gradient with
# respect to $g$. Call it the {term}`upstream gradient` $u$: the error signal that arrives at the
# head from above. It points where the loss rises fastest, so the head's output should move the
# other way, along the **descent direction** $-u$.

# %%
one_hot = np.eye(2)[target]
upstream = probs - one_hot                 # u = dL/dg (read-out = identity)
descent = -upstream                        # where g should move
print("u =", upstream.round(4), "  descent direction -u =", descent.round(4))

# %% [markdown]
# Now ask of each position: *if the query took a little more of $v_j$, would that help?* Taking
# more of $v_j$ pulls $g$ towards $v_j$, so what matters is how well $v_j$ points along the descent
# direction: its {term}`alignment` $a_j = -u\cdot v_j$. Large means helpful: to first order, taking
# more of $v_j$ lowers the loss at rate $a_j$. But the weights must still add up to 1, so more of
# $v_j$ means less of the others — what counts is whether $v_j$ is better than the *current
# mixture*, whose alignment is the attention-weighted mean $\sum_j \alpha_j a_j$. The difference is
# the position's {term}`advantage`,
# $$A_j = a_j - \sum_{j'} \alpha_{j'} a_{j'} .$$
# A loop, one position at a time:

# %%
alignment = np.zeros(3)
for j in range(3):
    alignment[j] = descent @ values[j]     # a_j = -u . v_j
mean_alignment = sum(weights[j] * alignment[j] for j in range(3))
advantage = np.zeros(3)
for j in range(3):
    advantage[j] = alignment[j] - mean_alignment
    print(f"position {j + 1}: alignment a = {alignment[j]:+.4f}   advantage A = {advantage[j]:+.4f}")
print(f"alignment of the current mixture (attention-weighted mean) = {mean_alignment:+.4f}")

# %% [markdown]
# Only position 1, whose value votes for the target, is better than the mixture. The chain rule
# through the softmax (worked out in general [below, with sympy](#deriving-every-gradient-with-sympy)) turns the advantage into the gradient of each
# score:
# $$\frac{\partial\mathcal L}{\partial s_j} = -\alpha_j A_j ,\qquad
#   \text{so a descent step with learning rate } \eta \text{ changes } s_j \text{ by } +\eta\,\alpha_j A_j .$$

# %%
score_grad = -weights * advantage          # dL/ds_j = -alpha_j A_j
for j in range(3):
    print(f"position {j + 1}: dL/ds = {score_grad[j]:+.4f}  -> descent {'raises' if score_grad[j] < 0 else 'lowers'} s_{j + 1}")
assert abs(score_grad.sum()) < 1e-15     # the score gradients of one query add up to zero

# %% [markdown]
# So gradient descent **raises** $s_1$ and **lowers** $s_2$ and $s_3$. Two things to notice:
#
# - Positions 2 and 3 are equally worse than the mixture (advantage $-0.3112$ for both), yet $s_2$
#   is pushed down twice as hard — because the query already gives position 2 twice the weight.
#   The factor $\alpha_j$ in front means a score moves fast only where the query already looks.
# - The three gradients add up to zero: raising all scores together changes nothing (the softmax
#   ignores a common shift), so only the *relative* scores can learn.
#
# The word "advantage" comes from reinforcement learning: there an agent's *policy* gives each
# action a probability, and an action's advantage is how much better it is than the policy's
# average action; training raises the probability of actions with positive advantage. Here the
# "actions" are the positions a query may read, the "policy" is its attention row, and "better"
# means lowering the loss. Only the word is borrowed — nothing is sampled, there is no reward.
#
# A check by nudging: raising $s_1$ by a small $\varepsilon$ should change the loss by
# $\varepsilon\,\partial\mathcal L/\partial s_1 = -0.2334\,\varepsilon$, and likewise for the others.

# %%
def tiny_loss(scores):
    w = np.exp(scores) / np.exp(scores).sum()
    g = w @ values
    return -np.log(np.exp(g[target]) / np.exp(g).sum())


eps = 1e-6
for j in range(3):
    nudged = scores.copy()
    nudged[j] += eps
    rate = (tiny_loss(nudged) - tiny_loss(scores)) / eps
    assert abs(rate - score_grad[j]) < 1e-6
print("(loss change) / eps matches dL/ds = -alpha * A for all three scores, to 1e-6")

# %% [markdown]
# The values learn too, and more simply: $g$ is linear in each $v_j$ with coefficient $\alpha_j$, so
# $\partial\mathcal L/\partial v_j = \alpha_j u$ — a descent step moves every value along the descent
# direction $-u$, in proportion to how much the query uses it. The values get the upstream signal
# *directly*; the scores get it only after it is compared with the mixture.

# %%
value_grad = weights[:, None] * upstream[None, :]   # row j: dL/dv_j = alpha_j u
print("dL/dv_j, one row per position:\n", value_grad.round(4))

# %% [markdown]
# ```{admonition} In the paper's notation
# :class: seealso
# The gradient-dynamics paper writes column vectors ($q_i = W_Qx_i$), the loss $L$, the logits $\ell_i$
# (our $z_i$) as $W_Og_i$ plus the bias, with $W_O$ the transpose of our $W^{\text{out}}$, and the
# one-hot target $e_{y_i}$, and writes $\delta_{jk}$ for 1 if $j = k$ and 0 otherwise. It works with
# the **compatibility** $b_{ij} = u_i^\top v_j = -a_{ij}$ (a measure of how unhelpful a value is, not
# a bias: this page writes the bias $b^{\text{out}}$), which is good when *small*, and writes the
# score gradient as $\partial L/\partial s_{ij} = \alpha_{ij}(b_{ij} - \mathbb E_{\alpha_i}[b])$ with $\mathbb
# E_{\alpha_i}[b] = \sum_j\alpha_{ij}b_{ij}$ (its Eq. (23)). Its advantage $A_{ij} := -(b_{ij} -
# \mathbb E_{\alpha_i}[b])$ is ours. (In its Eq. (32) the letter $A$ also stands for the matrix of
# attention weights, which this page calls $\alpha$.)
# ```
#
# ## Where the gradient goes: the whole head
#
# The paper studies one attention head followed by a linear read-out and a softmax over $C$
# classes, trained with the cross-entropy summed over positions (its Eqs. (1)–(9), here in the
# book's row-vector form):
#
# $$q_i = x_i\,W^Q,\quad k_j = x_j\,W^K,\quad v_j = x_j\,W^V,\quad
#   s_{ij} = \frac{q_i\cdot k_j}{\sqrt{d_k}},\quad \alpha_{ij} = \frac{e^{s_{ij}}}{\sum_{j'} e^{s_{ij'}}},
#   \quad g_i = \sum_j \alpha_{ij} v_j,$$
# $$z_i = g_i\,W^{\text{out}} + b^{\text{out}},\quad p_i = \operatorname{softmax}(z_i),\quad
#   \mathcal L = -\sum_i \log p_{i, y_i}.$$
#
# Backpropagation runs this chain backwards. The tiny example was one row of it; Figure 3.1.1 shows
# the whole route.

# %%
import matplotlib.pyplot as plt
import sympy as sp
from IPython.display import Math, display

from nextword.attention import softmax
from nextword.booktools.display import produced
from nextword.booktools.plotting import heatmap, use_book_style
from nextword.booktools.schematics.dynamics import draw_gradient_flow
from nextword.numerics import central_difference
from nextword.theory.dynamics import (
    HeadParams,
    ToyConfig,
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
ax = draw_gradient_flow()
plt.show()

# %% [markdown]
# **Figure 3.1.1.** One head, forward (grey) and backward (vermilion). Follow the vermilion arrows
# from the loss: the gradient reaches the logits as $p_i - \operatorname{onehot}(y_i)$ and the context
# as the upstream gradient $u_i = (p_i - \operatorname{onehot}(y_i))\,(W^{\text{out}})^\top$. From
# there it splits: the **values** get the upstream signals directly, weighted by attention; the
# **weights** get $u_i\cdot v_j = -a_{ij}$; the **scores** get $-\alpha_{ij}A_{ij}$; the **queries and
# keys** get theirs only through the scores. (Not drawn: the projection matrices $W^Q$, $W^K$, $W^V$
# get theirs from those of the queries, keys and values by one more matrix product.) The numbers in
# brackets are the paper's equation numbers.
#
# In matrix form, with the upstream gradients stacked as rows of $U$, the per-position gradients
# are (code names on the right; `HeadGradients` is what `head_gradients` returns):
#
# | gradient | formula | paper | code |
# |---|---|---|---|
# | upstream, $\partial\mathcal L/\partial g_i$ | $u_i = (p_i-\operatorname{onehot}(y_i))\,(W^{\text{out}})^\top$ | (10), (14) | `upstream_gradient`, `HeadGradients.U` |
# | weights, $\partial\mathcal L/\partial\alpha_{ij}$ | $u_i\cdot v_j = -a_{ij}$ | (11), (17) | `compatibility_matrix(U, V)` |
# | scores, $\partial\mathcal L/\partial s_{ij}$ | $-\alpha_{ij}A_{ij}$ | (23) | `score_gradient`, `HeadGradients.dS` |
# | values, $\partial\mathcal L/\partial v_j$ | $\sum_i\alpha_{ij}u_i$, i.e. $\alpha^\top U$ | (16) | `responsibility_signal`, `HeadGradients.dV` |
# | queries, $\partial\mathcal L/\partial q_i$ | $\sum_j(\partial\mathcal L/\partial s_{ij})\,k_j/\sqrt{d_k}$ | (24); with (23) inserted, (25) | inside `head_gradients` |
# | keys, $\partial\mathcal L/\partial k_j$ | $\sum_i(\partial\mathcal L/\partial s_{ij})\,q_i/\sqrt{d_k}$ | (26); with (23) inserted, (27) | inside `head_gradients` |
#
# The loss is the *sum* over positions, so $u_i = \partial\mathcal L/\partial g_i$ exactly.

# %% [markdown]
# ## Deriving every gradient with sympy
#
# We let sympy differentiate a small symbolic head and compare with each formula of the table.
# sympy shows its results as rendered maths; code indices count from 0.
#
# **The read-out, Eqs. (13)–(14).** For one position with $C=3$ logits and target class 0, the
# cross-entropy is $-\log\operatorname{softmax}(z)_0$. Sympy differentiates it and we compare with
# $p-\operatorname{onehot}(y)$ (Eq. (13)); then we put a symbolic read-out $z = g\,W^{\text{out}} + b^{\text{out}}$ in
# front ($d_v = 2$) and compare $\partial\mathcal L/\partial g$ with
# $(p-\operatorname{onehot}(y))(W^{\text{out}})^\top$ — the upstream gradient of Eq. (14), which is
# also the paper's definition (10).

# %%
logits = sp.Matrix(sp.symbols("z0:3"))
softmax_of_logits = sp.Matrix([sp.exp(e) for e in logits]) / sum(sp.exp(e) for e in logits)
loss_one_position = -sp.log(softmax_of_logits[0])
onehot_target = sp.Matrix([1, 0, 0])
grad_logits = sp.Matrix([sp.diff(loss_one_position, e) for e in logits])
assert sp.simplify(grad_logits - (softmax_of_logits - onehot_target)) == sp.zeros(3, 1)  # Eq. (13)
display(Math(r"\frac{\partial \mathcal L}{\partial z_0} = " + sp.latex(sp.simplify(grad_logits[0]))
             + r" = p_0 - 1 \quad\text{(13)}"))

# %%
context_sym = sp.Matrix(1, 2, sp.symbols("g0:2"))           # a row vector (1, d_v)
W_out_sym = sp.Matrix(2, 3, sp.symbols("w0:6"))             # (d_v, C)
bias_sym = sp.Matrix(1, 3, sp.symbols("c0:3"))
logits_of_g = context_sym * W_out_sym + bias_sym            # (1, C)
probs_of_g = sp.Matrix(1, 3, [sp.exp(e) for e in logits_of_g]) / sum(sp.exp(e) for e in logits_of_g)
loss_of_g = -sp.log(probs_of_g[0])
upstream_sym = sp.Matrix(1, 2, [sp.diff(loss_of_g, gk) for gk in context_sym])
assert sp.simplify(upstream_sym - (probs_of_g - onehot_target.T) * W_out_sym.T) == sp.zeros(1, 2)  # (14)
display(Math(r"\frac{\partial \mathcal L}{\partial g} = (p - \operatorname{onehot}(y))\,(W^{\text{out}})^\top"
             r"\quad\text{(14)}"))

# %% [markdown]
# **Why a linear stand-in for the loss is enough.** Past the context $g_i$, the loss is a
# complicated function (read-out, softmax, log). But the chain rule says that for any number
# $\theta$ computed *before* $g$ — an entry of a value, a score, a query —
# $$\frac{\partial\mathcal L}{\partial \theta} = \sum_i u_i \cdot \frac{\partial g_i}{\partial \theta},
# \qquad u_i = \frac{\partial\mathcal L}{\partial g_i}.$$
# The right-hand side is exactly the derivative of the {term}`linearised loss`
# $\tilde{\mathcal L} = \sum_i u_i\cdot g_i$ *in which the $u_i$ are held fixed* — treated as
# numbers already computed, not as functions of $\theta$. $\tilde{\mathcal L}$ is not the loss (its
# value is different), but its first derivatives with respect to everything before $g$ are the
# same. This is what backpropagation does at every stage: a stage receives the gradient of its
# output as fixed numbers and passes on their product with its own derivative. So below, the $u_i$
# are free symbols.
#
# **A trick that keeps sympy fast.** The softmax $\alpha_{ij} = e^{s_{ij}}/\sum_{j'} e^{s_{ij'}}$
# puts exponentials everywhere, and simplifying expressions full of them is slow. Write
# $\omega_{ij} = e^{s_{ij}} > 0$ instead: then $\alpha_{ij} = \omega_{ij}/\sum_{j'} \omega_{ij'}$ is
# a ratio of polynomials, and because $\mathrm d \omega_{ij}/\mathrm d s_{ij} = \omega_{ij}$, a
# derivative with respect to a score is
# $\partial/\partial s_{ij} = \omega_{ij}\,\partial/\partial \omega_{ij}$. Every identity below then
# compares rational functions, which `sp.cancel` (bring to one fraction and cancel common factors)
# checks in a fraction of a second.
#
# A symbolic head has matrices whose entries are all different symbols. The helper `symbol_matrix("u",
# 3, 2)` builds the $3\times2$ matrix of the symbols `u00`, `u01`, …, `u21`; we use $T=3$ positions
# and widths $d_k = d_v = d_x = 2$.


# %%
def symbol_matrix(name, rows, cols, **assumptions):
    """The rows x cols matrix of symbols name_{ij} (e.g. u_01), with sympy assumptions if given."""
    return sp.Matrix(rows, cols, [sp.Symbol(f"{name}{i}{j}", **assumptions)
                                  for i in range(rows) for j in range(cols)])


positions, key_width, value_width, input_width = 3, 2, 2, 2
upstream_U = symbol_matrix("u", positions, value_width)   # row i: u_i, held fixed
values_V = symbol_matrix("v", positions, value_width)     # row j: v_j
exp_scores = symbol_matrix("omega", positions, positions, positive=True)  # omega_ij = exp(s_ij)
row_sums = [sum(exp_scores[i, r] for r in range(positions)) for i in range(positions)]
alpha = sp.Matrix(positions, positions,
                  [exp_scores[i, j] / row_sums[i] for i in range(positions) for j in range(positions)])
contexts = alpha * values_V                                 # row i: g_i, Eq. (6)
linear_loss = sum((upstream_U.row(i) * contexts.row(i).T)[0] for i in range(positions))

# %% [markdown]
# **Values, Eqs. (15)–(16).** Differentiate $\tilde{\mathcal L}$ by every entry of every value and
# compare with $\alpha^\top U$ (row $j$: $\sum_i\alpha_{ij}u_i$).

# %%
grad_values = sp.Matrix(positions, value_width,
                        [sp.diff(linear_loss, values_V[j, c])
                         for j in range(positions) for c in range(value_width)])
assert sp.simplify(grad_values - alpha.T * upstream_U) == sp.zeros(positions, value_width)
display(Math(r"\frac{\partial \mathcal L}{\partial v_j} = \sum_i \alpha_{ij} u_i"
             r"\ \text{ for all } j \quad\text{(16), i.e. } \frac{\partial \mathcal L}{\partial V} = \alpha^\top U"))

# %% [markdown]
# **Weights, Eqs. (11) and (17).** With the weights as free symbols (forgetting for a moment that
# they come from a softmax), $\partial\tilde{\mathcal L}/\partial\alpha_{ij}$ should be
# $u_i\cdot v_j = -a_{ij}$: the rate at which more of $v_j$ *raises* query $i$'s loss.

# %%
alpha_free = symbol_matrix("alpha", positions, positions)
loss_of_alpha = sum((upstream_U.row(i) * (alpha_free * values_V).row(i).T)[0] for i in range(positions))
alignment_sym = -(upstream_U * values_V.T)   # (T, T), a_ij = -u_i . v_j
grad_alpha = sp.Matrix(positions, positions,
                       [sp.diff(loss_of_alpha, alpha_free[i, j])
                        for i in range(positions) for j in range(positions)])
assert grad_alpha == (-alignment_sym).applyfunc(sp.expand)
display(Math(r"\frac{\partial \mathcal L}{\partial \alpha_{01}} = " + sp.latex(-alignment_sym[0, 1])
             + r" = u_0\cdot v_1 = -a_{01} \quad\text{(17)}"))

# %% [markdown]
# **Scores, Eq. (23).** Now the real softmax, through $\omega_{ij}$: compare
# $\omega_{ij}\,\partial\tilde{\mathcal L}/\partial \omega_{ij}$ with $-\alpha_{ij}A_{ij}$ for all
# nine scores. (The attention-weighted mean inside $A_{ij}$ is the paper's Eq. (12) with the opposite
# sign: it averages $u_i\cdot v_j$, we average $-u_i\cdot v_j$.)

# %%
grad_scores = sp.Matrix(positions, positions,
                        [exp_scores[i, k] * sp.diff(linear_loss, exp_scores[i, k])
                         for i in range(positions) for k in range(positions)])
mean_a = [sum(alpha[i, j] * alignment_sym[i, j] for j in range(positions)) for i in range(positions)]
advantage_sym = sp.Matrix(positions, positions,
                          [alignment_sym[i, k] - mean_a[i] for i in range(positions) for k in range(positions)])
closed_23 = sp.Matrix(positions, positions,
                      [-alpha[i, k] * advantage_sym[i, k] for i in range(positions) for k in range(positions)])
assert sp.cancel(grad_scores - closed_23) == sp.zeros(positions, positions)

# %% [markdown]
# To *see* the formula, take row 0 alone with the alignments $a_{0j}$ as symbols and rename
# $\omega_{0j}/\sum_{j'} \omega_{0j'}$ as $\alpha_{0j}$ (eliminating
# $\alpha_{02} = 1-\alpha_{00}-\alpha_{01}$); sympy's factorised $\partial\mathcal L/\partial s_{01}$
# is $-\alpha_{01}(a_{01} - \sum_{j}\alpha_{0j}a_{0j}) = -\alpha_{01}A_{01}$ written out.

# %%
a_row = sp.symbols("a_00 a_01 a_02")
alpha_row = sp.symbols("alpha_00 alpha_01 alpha_02", positive=True)
loss_row0 = -sum(alpha[0, j] * a_row[j] for j in range(positions))  # sum_j alpha_0j (u_0 . v_j)
d_s01 = sp.cancel(exp_scores[0, 1] * sp.diff(loss_row0, exp_scores[0, 1]))
d_s01 = sp.factor(d_s01.subs({exp_scores[0, k]: alpha_row[k] for k in range(positions)})
                  .subs(alpha_row[2], 1 - alpha_row[0] - alpha_row[1]))
check = -alpha_row[1] * (a_row[1] - sum(alpha_row[k] * a_row[k] for k in range(positions)))
assert sp.expand(d_s01 - check.subs(alpha_row[2], 1 - alpha_row[0] - alpha_row[1])) == 0
display(Math(r"\frac{\partial \mathcal L}{\partial s_{01}} = " + sp.latex(d_s01)
             + r" = -\alpha_{01}\,A_{01}\quad\text{(23)}"))

# %% [markdown]
# **Queries and keys, Eqs. (24)–(27).** The scores come from queries and keys,
# $s_{ij} = q_i\cdot k_j/\sqrt{d_k}$. Whatever $\partial\mathcal L/\partial s$ is, the chain rule
# only needs it as fixed numbers — the same linearisation as before, one stage further back — so we
# call it a symbolic matrix $D$ and differentiate $\sum_{ij} D_{ij}s_{ij}$. Row $i$ of the result is
# the chain rule of Eq. (24), with $D$ standing for $\partial\mathcal L/\partial s$; putting Eq. (23) in
# for $D$ turns it into (25). The keys' rows are (26), and with (23) put in, (27). The $1/\sqrt{d_k}$
# stays a symbol so that we can see it carried through.

# %%
queries_Q = symbol_matrix("q", positions, key_width)
keys_K = symbol_matrix("k", positions, key_width)
d_k = sp.Symbol("d_k", positive=True)
score_grad_D = symbol_matrix("D", positions, positions)  # stands for dL/ds, held fixed
scores_qk = queries_Q * keys_K.T / sp.sqrt(d_k)
loss_of_scores = sum(score_grad_D[i, j] * scores_qk[i, j]
                     for i in range(positions) for j in range(positions))
grad_Q = sp.Matrix(positions, key_width, [sp.diff(loss_of_scores, queries_Q[i, c])
                                          for i in range(positions) for c in range(key_width)])
grad_K = sp.Matrix(positions, key_width, [sp.diff(loss_of_scores, keys_K[j, c])
                                          for j in range(positions) for c in range(key_width)])
assert sp.simplify(grad_Q - score_grad_D * keys_K / sp.sqrt(d_k)) == sp.zeros(positions, key_width)
assert sp.simplify(grad_K - score_grad_D.T * queries_Q / sp.sqrt(d_k)) == sp.zeros(positions, key_width)
display(Math(r"\frac{\partial \mathcal L}{\partial q_{00}} = " + sp.latex(sp.simplify(grad_Q[0, 0]))
             + r"\quad\text{(24); with (23) put in for } D\text{, (25); likewise (26), (27) for the keys}"))

# %% [markdown]
# **Projection matrices, Eqs. (29)–(32).** One more linear stage: $Q = XW^Q$, so with
# $\partial\mathcal L/\partial Q$ held fixed (a symbolic matrix $G_Q$),
# $\partial\mathcal L/\partial W^Q = X^\top G_Q$ (Eq. (29); Eq. (30) is the same for $W^K$). For the
# values, the contexts stacked as rows ($g_i$ is row $i$) are $\alpha X W^V$, which gives
# $\partial\mathcal L/\partial W^V = X^\top\alpha^\top U$ (Eqs. (31)–(32), which the paper writes in
# column form).

# %%
inputs_X = symbol_matrix("x", positions, input_width)
W_Q_sym = symbol_matrix("WQ", input_width, key_width)
grad_Q_fixed = symbol_matrix("gq", positions, key_width)  # stands for dL/dQ, held fixed
queries_of_W = inputs_X * W_Q_sym
loss_of_WQ = sum(grad_Q_fixed[i, c] * queries_of_W[i, c]
                 for i in range(positions) for c in range(key_width))
grad_WQ = sp.Matrix(input_width, key_width, [sp.diff(loss_of_WQ, W_Q_sym[r, c])
                                             for r in range(input_width) for c in range(key_width)])
assert sp.simplify(grad_WQ - inputs_X.T * grad_Q_fixed) == sp.zeros(input_width, key_width)  # (29)

# %%
W_V_sym = symbol_matrix("WV", input_width, value_width)
contexts_of_WV = alpha_free * (inputs_X * W_V_sym)  # row i: g_i; the stack is alpha X W^V
loss_of_WV = sum((upstream_U.row(i) * contexts_of_WV.row(i).T)[0] for i in range(positions))
grad_WV = sp.Matrix(input_width, value_width, [sp.diff(loss_of_WV, W_V_sym[r, c])
                                               for r in range(input_width) for c in range(value_width)])
assert sp.expand(grad_WV - inputs_X.T * alpha_free.T * upstream_U) == sp.zeros(input_width, value_width)
display(Math(r"\nabla_{W^Q}\mathcal L = X^\top \frac{\partial \mathcal L}{\partial Q}\ \text{(29, 30)},\qquad"
             r"\nabla_{W^V}\mathcal L = X^\top\alpha^\top U\ \text{(31, 32)}"))

# %% [markdown]
# ## Which scores rise: the advantage on a random head
#
# The tiny example had one query. On a head with six positions and random weights, the library
# computes all the pieces of Figure 3.1.1 at once. The claim to check, for *every* pair $(i, j)$:
# nudging the score $s_{ij}$ up by a small $\varepsilon$ changes the loss by
# $\varepsilon\,\partial\mathcal L/\partial s_{ij} = -\varepsilon\,\alpha_{ij}A_{ij}$, so the loss
# falls exactly where the advantage is positive — where the alignment $a_{ij}$ is *above* query
# $i$'s attention-weighted mean.

# %%
rng = np.random.default_rng(3)
T, d_x, d_k, d_v, C = 6, 4, 3, 3, 4
params = HeadParams.init(d_x, d_k, d_v, C, rng=rng, scale=0.8)
X = rng.standard_normal((T, d_x))
y = rng.integers(0, C, size=T)
forward = head_forward(params, X)
U = upstream_gradient(forward.probs, y, params.W_O)             # (T, d_v): row i is u_i
align = -U @ forward.V.T                                          # (T, T): a_ij = -u_i . v_j
Adv = align - (forward.alpha * align).sum(axis=1, keepdims=True)  # (T, T): A_ij
dS = -forward.alpha * Adv                                         # (T, T): dL/ds_ij


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
falls = dL < 0
print(f"raising s_ij lowers the loss for {falls.sum()} of {T * T} pairs; "
      f"all of them have A_ij > 0: {bool(np.all(Adv[falls] > 0))}; "
      f"none has A_ij < 0: {bool(not np.any(Adv[falls] < 0))}")
assert np.all(Adv[falls] > 0) and not np.any(Adv[falls] < 0)

# %%
fig, axes = plt.subplots(1, 3, figsize=(12, 3.4))
panels = [(align, "alignment $a_{ij}=-u_i\\cdot v_j$"),
          (Adv, "advantage $A_{ij}$"),
          (-dS, "descent step $-\\partial\\mathcal{L}/\\partial s_{ij}$")]
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
row_mean = (forward.alpha * align).sum(axis=1, keepdims=True)
# Figure 3.1.2: the right panel has the middle one's sign everywhere (red where red, blue where blue)
assert np.array_equal(np.sign(-dS), np.sign(Adv))
# Figure 3.1.2: the scores that fall (blue on the right) are those whose alignment is below the row's mean
assert np.array_equal(dS > 0, align < row_mean)
red_below = int(((align > 0) & (align < row_mean)).sum())
print(f"cells with positive alignment (red, left) whose score still falls: {red_below}")
assert red_below > 0   # Figure 3.1.2: a red cell on the left can still fall

# %% [markdown]
# **Figure 3.1.2.** A random head of six positions: the alignments, the advantages and the step
# gradient descent gives the scores. Each panel's colour scale is symmetric about zero (white = 0,
# red = positive, blue = negative). Look at the middle and right panels: they have the same colours
# cell for cell — descent raises the scores with positive advantage — but the right one is the
# advantage reweighted by $\alpha_{ij}$, so it is strong only where the query already attends (and
# nearly white where it barely does, whatever the advantage). The left panel alone does not tell
# which scores fall: a score falls where its alignment is below its row's attention-weighted mean,
# and a red cell can be below that mean too (their number is printed under the figure).
#
# ## Key takeaways
#
# - The error reaches an attention head as the upstream gradient $u_i = \partial\mathcal L/\partial g_i$;
#   the head's output should move along the descent direction $-u_i$, and every other gradient of
#   the head is built from $u_i$ by the chain rule.
# - Values get the upstream signal directly: $\partial\mathcal L/\partial v_j = \sum_i\alpha_{ij}u_i$,
#   so a descent step moves a value along $-u_i$ for every query that uses it, in proportion to its
#   weight.
# - A score gets the advantage: $\partial\mathcal L/\partial s_{ij} = -\alpha_{ij}A_{ij}$, where
#   $A_{ij}$ is how much better $v_j$ is aligned with $-u_i$ than the query's current mixture.
#   Descent raises the scores with positive advantage. The factor $\alpha_{ij}$ lets a score move
#   fast only where the query already looks, and a weight near 1 has little left to gain: the
#   mixture then is mostly $v_j$ itself, so $A_{ij}$ shrinks in proportion to $1-\alpha_{ij}$.
# - Queries and keys learn only through the scores, carrying the $1/\sqrt{d_k}$ of the forward
#   pass.
# - Every formula of the paper's §3 holds; some of its sentences about them do not (the sign of the
#   advantage in words, the effect of $-u_i$ on the correct logit) — [checked below](#checking-the-paper).
#
# ## Check your understanding
#
# (Exercise 01, `exercises/part3_dynamics/ex01_advantage_routing.ipynb`, asks you to implement the
# score gradient and the advantage and to show that the advantages of one query have an
# attention-weighted average of zero, $\sum_j\alpha_{ij}A_{ij} = 0$ — not a plain average of zero: in
# the tiny example they are $+0.9337$, $-0.3112$, $-0.3112$.)
#
# 1. In the tiny example, suppose the target were class 1 instead of class 0. Without running
#    code, which scores would gradient descent raise and which lower?
#
#    ```{dropdown} Answer
#    Now $u = p - \operatorname{onehot}(1) = (0.3775, -0.3775)$, so the alignments $a_j = -u\cdot v_j$
#    are $a_1 = -0.3775$, $a_2 = 0.3775$, $a_3 = 0.3775$, and the mixture's alignment is
#    $0.25(-0.3775) + 0.5(0.3775) + 0.25(0.3775) = 0.1888$. Position 1 (it votes for class 0) has
#    advantage $-0.5663$: its score falls. Positions 2 and 3 have advantage $+0.1888$: their scores
#    rise — position 2 twice as fast, because its weight is twice as large
#    ($\partial\mathcal L/\partial s = (0.1416, -0.0944, -0.0472)$).
#    ```
#
# 2. Suppose every position offers the same value vector. What are the score gradients, and what
#    does that say about what attention can learn?
#
#    ```{dropdown} Answer
#    All alignments of a query are equal, $a_{ij} = -u_i\cdot v$, so each equals its mean, every
#    advantage is 0, and every $\partial\mathcal L/\partial s_{ij}$ is 0: when all positions offer
#    the same thing there is nothing to prefer, and the scores do not move. Attention learns only
#    from *differences* between what the positions offer.
#    ```
#
# 3. A position has a large positive advantage but the query gives it weight $10^{-6}$. Will its
#    score grow quickly?
#
#    ```{dropdown} Answer
#    No: $\partial\mathcal L/\partial s_{ij} = -\alpha_{ij}A_{ij}$ carries the factor $\alpha_{ij}$, so
#    a position the query barely looks at barely learns — a helpful position that is ignored at the
#    start can stay ignored for a long time. (The next page, [3.2](02_routing_and_specialisation.ipynb), follows this rich-get-richer effect.)
#    ```
#
# 4. A classmate writes the score gradient as $\alpha_{ij}(u_i\cdot v_j - \sum_{j'}\alpha_{ij'}\,u_i\cdot v_{j'})$
#    (correct) and concludes that descent raises the scores of positions with $u_i\cdot v_j$
#    *above* the mean. What single fact about $u_i$ shows the conclusion is backwards?
#
#    ```{dropdown} Answer
#    $u_i = \partial\mathcal L/\partial g_i$ points in the direction that *increases* the loss. A
#    value with large $u_i\cdot v_j$ points along $u_i$, so mixing in more of it raises the loss; the
#    helpful values have $u_i\cdot v_j$ below the mean (alignment $a_{ij}$ above it), and descent
#    raises *their* scores, since it moves each score against its gradient.
#    ```

# %% tags=["hide-cell"]
# the numbers of answer 1: the tiny example with target class 1
upstream_1 = probs - np.eye(2)[1]
alignment_1 = -values @ upstream_1
mean_1 = weights @ alignment_1
advantage_1 = alignment_1 - mean_1
score_grad_1 = -weights * advantage_1
print(f"weights {weights}, u = {upstream_1.round(4)}, a = {alignment_1.round(4)}, mixture's alignment {mean_1:.4f}, "
      f"A = {advantage_1.round(4)}, dL/ds = {score_grad_1.round(4)}")
assert np.allclose(upstream_1, [0.3775, -0.3775], atol=5e-5)
assert abs(mean_1 - 0.1888) < 5e-5 and np.allclose(advantage_1, [-0.5663, 0.1888, 0.1888], atol=5e-5)
assert score_grad_1[0] > 0 > score_grad_1[2] > score_grad_1[1]
assert np.allclose(score_grad_1, [0.1416, -0.0944, -0.0472], atol=5e-5)   # the answer's dL/ds
assert abs(score_grad_1[1] / score_grad_1[2] - 2) < 1e-12    # position 2 twice as fast as 3

# %% [markdown]
# ## Checking the paper
#
# The derivations above are the paper's §3, and they hold. This section checks the library's
# implementation numerically, on random sizes, in the ways a referee would; checks the chain-rule
# steps (18)–(22) one by one; and records two places where the paper's *sentences* about its
# formulas are wrong: the direction of the advantage after Eq. (23), and what $-u_i$ does to the
# correct logit after Eq. (14). Both are rows of the errata ledger (`book/ERRATA.md`). The paper's
# notation is the side box's.
#
# ### Finite differences and autograd, random sizes
#
# `head_gradients` assembles the read-out (`cross_entropy_upstream`) and the closed-form attention
# backward (`attention_backward`): Eqs. (24)–(28) for queries and keys (Eqs. (24)–(25) are the query
# half, (26)–(27) the key half, and (28) the pair written together), (29)–(32) for the projections. We compare every
# parameter gradient with a {term}`central finite difference` of the loss,
# $(\mathcal L(\theta+\varepsilon)-\mathcal L(\theta-\varepsilon))/2\varepsilon$, for several random
# sizes, causal and not. Its error is $\mathcal O(\varepsilon^2)$; with $\varepsilon=10^{-5}$ in
# float64 we expect an *absolute* error near $\varepsilon^2 = 10^{-10}$ (times the size of the third
# derivatives) plus round-off near $10^{-16}\lvert\mathcal L\rvert/\varepsilon$ (float64's relative
# precision times the size of the loss, divided by $\varepsilon$), of order $10^{-11}$ to $10^{-10}$ for a summed loss of
# a few nats. The cell asserts a *relative* error: the largest error divided by the largest entry of the
# gradient must be below $10^{-6}$. Figure 3.1.3 measures both, step by step, on one head.


# %% tags=["hide-cell"]
def loss_of(params, X, y, causal):
    return cross_entropy(head_forward(params, X, causal=causal).log_probs, y)


def fd_grad(params, X, y, causal, name, h=1e-5):
    """Central finite differences (step h, the text's epsilon) of the summed loss for one parameter array."""
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
        grads = head_gradients(params, X, y, causal=causal)
        for name in ("W_Q", "W_K", "W_V", "W_O", "b"):
            fd = fd_grad(params, X, y, causal, name)
            rel = np.abs(getattr(grads, name) - fd).max() / max(np.abs(fd).max(), 1e-12)
            worst = max(worst, rel)
            assert rel < 1e-6, (trial, causal, name, rel)
print("closed form vs central differences, 30 gradient arrays: worst relative error < 1e-6")

# %% [markdown]
# The same comparison against torch's {term}`automatic differentiation` (autograd: the gradient
# computed by replaying the forward computation backwards, operation by operation), now to machine
# precision. The torch reference is written from the forward equations (1)–(9) only.

# %% tags=["hide-cell"]
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
            grads = head_gradients(params, X, y, causal=causal)
            for k in t:
                worst_t = max(worst_t, float(np.abs(t[k].grad.numpy() - getattr(grads, k)).max()))
    assert worst_t < 1e-12
    print("closed form vs torch autograd, 20 gradient arrays: worst absolute error < 1e-12")

# %% [markdown]
# ### The $1/\sqrt{d_k}$ matters
#
# Dropping it from the backward (computing $\partial\mathcal L/\partial W^Q$ as
# $X^\top(\partial\mathcal L/\partial S)\,K$ instead of $X^\top(\partial\mathcal L/\partial S)\,K/\sqrt{d_k}$,
# Eqs. (24) and (29)) while keeping it in the forward pass — a common slip when transcribing Eqs. (25)–(28) —
# makes the query and key gradients wrong by exactly a factor $\sqrt{d_k}$; the value and read-out
# gradients do not notice.

# %% tags=["hide-cell"]
T, d_x, d_k, d_v, C = 6, 4, 9, 3, 3
params = HeadParams.init(d_x, d_k, d_v, C, rng=rng, scale=0.8)
X = rng.standard_normal((T, d_x))
y = rng.integers(0, C, size=T)
grads = head_gradients(params, X, y)
ratio = fd_grad(params, X, y, False, "W_Q") / (X.T @ (grads.dS @ (X @ params.W_K)))
print(f"true dL/dW_Q divided by the backward without 1/sqrt(d_k): {ratio.mean():.6f} "
      f"(1/sqrt(d_k) = {1 / np.sqrt(d_k):.6f}), the same for all {ratio.size} entries")
assert np.allclose(ratio, 1 / np.sqrt(d_k), rtol=1e-6)

# %% [markdown]
# ### How small a step: the finite-difference step study
#
# How the finite-difference error behaves with the step $\varepsilon$ confirms the comparison is
# meaningful: the error falls as $\varepsilon^2$ until round-off (float64's relative precision,
# about $10^{-16}$, times the size of the loss, divided by $\varepsilon$) takes over.

# %% tags=["hide-cell"]
steps_fd = np.logspace(-8, -1, 15)
errs = np.array([np.abs(fd_grad(params, X, y, False, "W_K", h=h) - grads.W_K).max() for h in steps_fd])
fig, ax = plt.subplots(figsize=(5.5, 3.6))
ax.loglog(steps_fd, errs, "o-", label="|FD - closed form|, $W^K$")
ax.loglog(steps_fd, errs[-1] * (steps_fd / steps_fd[-1]) ** 2, "--", color="gray", label="slope 2")
ax.set_xlabel("finite-difference step $\\varepsilon$")
ax.set_ylabel("max abs error")
ax.legend()
plt.show()
i_best = int(np.argmin(errs))
largest_entry = np.abs(grads.W_K).max()   # the scale the relative check above divides by
print(f"smallest error {errs[i_best]:.0e} at step {steps_fd[i_best]:.0e}; the largest entry of dL/dW^K is "
      f"{largest_entry:.1f} and the loss {grads.loss:.1f} nats, so the smallest relative error is below 1e-9: "
      f"{errs[i_best] / largest_entry < 1e-9}")
# Figure 3.1.3: relative to the gradient's size, the minimum is far below the 1e-6 the check above allows
assert errs[i_best] / largest_entry < 1e-9
# Figure 3.1.3: the minimum lies between 1e-11 and 1e-8, at a step between 1e-7 and 1e-3
assert 1e-11 < errs[i_best] < 1e-8
assert 1e-7 <= steps_fd[i_best] <= 1e-3
# Figure 3.1.3: slope 2 at large steps (the error grows by about 10^2 per decade of step)
slope_large = np.polyfit(np.log10(steps_fd[-6:]), np.log10(errs[-6:]), 1)[0]
assert abs(slope_large - 2) < 0.1

# %% [markdown]
# **Figure 3.1.3.** Central-difference error of $\partial\mathcal L/\partial W^K$ (Eqs. (27), (30))
# against the closed form. Read it from the right: slope 2 for large steps, then a minimum (its
# value and step are printed under the figure; it lies between $10^{-11}$ and $10^{-8}$), then round-off growing as
# the step shrinks. The curve is an absolute error. Divided by the largest entry of the gradient (printed
# under the figure), the minimum is a relative error far below the $10^{-6}$ that the check above allows,
# and it is reached at a step between $10^{-7}$ and $10^{-3}$ (printed under the figure), a range that
# contains the check's $\varepsilon = 10^{-5}$.
#
# ### Eqs. (18)–(22), one step at a time
#
# The sympy derivation above checks Eq. (23), the end of a chain of rewrites. Here each step of the
# chain is checked on its own, in the paper's notation: the softmax Jacobian (18),
# $\partial\alpha_{ij}/\partial s_{ik} = \alpha_{ij}(\delta_{jk} - \alpha_{ik})$ (with
# $\delta_{jk}$ = 1 if $j = k$, else 0), against sympy's derivative of the softmax for all 27 index
# triples; then, with $\partial L/\partial\alpha_{ij} = b_{ij}$ (17) as free symbols, the sum (19),
# the expanded form (20) exactly as printed, (21) and (22), each against the others and against the
# true derivative of the linearised loss (with $b_{ij} = u_i^\top v_j$) for all nine scores.

# %% tags=["hide-cell"]
jacobian_ok = all(
    sp.cancel(exp_scores[i, k] * sp.diff(alpha[i, j], exp_scores[i, k])
              - alpha[i, j] * ((1 if j == k else 0) - alpha[i, k])) == 0
    for i in range(positions) for j in range(positions) for k in range(positions))
assert jacobian_ok                                                            # Eq. (18)
b_free = symbol_matrix("b", positions, positions)                             # dL/dalpha_ij, Eq. (17)
step_forms = {}
for i in range(positions):
    for k in range(positions):
        eq19 = sum(b_free[i, j] * exp_scores[i, k] * sp.diff(alpha[i, j], exp_scores[i, k])
                   for j in range(positions))
        eq20 = sum(b_free[i, j] * alpha[i, j] * ((1 if j == k else 0) - alpha[i, k]) for j in range(positions))
        eq21 = alpha[i, k] * b_free[i, k] - alpha[i, k] * sum(alpha[i, j] * b_free[i, j] for j in range(positions))
        mean_b = sum(alpha[i, j] * b_free[i, j] for j in range(positions))      # Eq. (12)
        eq22 = alpha[i, k] * (b_free[i, k] - mean_b)
        assert sp.cancel(eq19 - eq20) == 0 and sp.cancel(eq20 - eq21) == 0 and sp.cancel(eq21 - eq22) == 0
        b_is_uv = {b_free[i, j]: (upstream_U.row(i) * values_V.row(j).T)[0] for j in range(positions)}
        true_derivative = exp_scores[i, k] * sp.diff(linear_loss, exp_scores[i, k])
        assert sp.cancel(eq20.subs(b_is_uv) - true_derivative) == 0           # (20) itself is the derivative
        step_forms[i, k] = eq20
print("Eq. (18) holds for all 27 (i, j, k); Eqs. (19), (20), (21), (22) agree with each other and with "
      "the true derivative for all 9 scores")
display(Math(r"\text{(20), } i = k = 0:\ " + sp.latex(step_forms[0, 0])))

# %% [markdown]
# All five steps hold as printed.
#
# ### Eq. (14) and the sentence after it
#
# Eq. (14), $u_i = W_O^\top(p_i - e_{y_i})$, holds (sympy above). The sentence after it says that
# $-u_i$ is the direction along which moving $g_i$ "would increase the logit of the correct token
# and decrease loss". The second half holds: along $-u_i$ the loss changes at rate
# $-\lVert u_i\rVert^2 \le 0$. The first half does not hold in general. Along $-u_i$ the correct
# logit changes at rate $-w_{y}\cdot u_i$, where $w_c$ is the read-out vector of class $c$ (column
# $c$ of our $W^{\text{out}}$, row $c$ of the paper's $W_O$); written out,
# $$-w_y\cdot u_i = (1-p_{i,y})\lVert w_y\rVert^2 - \sum_{c\ne y} p_{i,c}\; w_y\cdot w_c ,$$
# which is negative when the other classes' read-out vectors point the same way as the correct
# one's and are longer: the loss then falls because the *wrong* logits fall faster than the correct
# one. The smallest example: $d_v = 1$, $C = 2$, $W_O = (1, 3)^\top$, $g = 0$, target class 0.

# %% tags=["hide-cell"]
W_out_ex = np.array([[1.0, 3.0]])                 # (d_v, C) = (1, 2): the paper's W_O = (1, 3)^T
p_ex = softmax(np.zeros(1) @ W_out_ex)            # g = 0, no bias: p = (0.5, 0.5)
u_ex = (p_ex - np.eye(2)[0]) @ W_out_ex.T         # Eq. (14), target class 0
rate_loss_ex = u_ex @ -u_ex                       # d(loss) along -u
rate_logits_ex = -u_ex @ W_out_ex                 # d(logits) along -u, (C,)
print(f"u = {u_ex[0]:.1f}; along -u: the loss changes at rate {rate_loss_ex:.1f}, the correct logit at "
      f"{rate_logits_ex[0]:+.1f}, the other logit at {rate_logits_ex[1]:+.1f}")
assert rate_loss_ex < 0 and rate_logits_ex[0] < 0 and rate_logits_ex[1] < rate_logits_ex[0]

# %% [markdown]
# How often does it happen? On random heads of the size of the paper's §7.1 toy ($T = 5$, $d_x = 3$,
# $d_k = d_v = 2$, $C = 3$, Gaussian weights of standard deviation 0.5, the scale page [3.2](02_routing_and_specialisation.ipynb) chooses
# for the toy since the paper gives none; random inputs and targets), we count
# the positions at which moving $g_i$ along $-u_i$ lowers the correct logit, and check the loss
# half and the formula above at every position.

# %% tags=["hide-cell"]
toy = ToyConfig()
rng_14 = np.random.default_rng(14)
heads_14, logit_falls, positions_14 = 1000, 0, 0
for _ in range(heads_14):
    head = HeadParams.init(toy.d_x, toy.d_k, toy.d_v, toy.num_classes, rng=rng_14, scale=toy.init_scale)
    X_h, y_h = rng_14.standard_normal((toy.T, toy.d_x)), rng_14.integers(0, toy.num_classes, size=toy.T)
    p_h = head_forward(head, X_h).probs                                  # (T, C)
    U_h = upstream_gradient(p_h, y_h, head.W_O)                          # (T, d_v)
    w_y = head.W_O[:, y_h].T                                             # (T, d_v): read-out vector of y_i
    rate_logit = -(U_h * w_y).sum(axis=1)                                # (T,)
    gram = head.W_O.T @ head.W_O                                         # (C, C): w_c . w_c'
    formula = gram[y_h, y_h] - (p_h * gram[y_h]).sum(axis=1)             # the display above
    assert np.allclose(rate_logit, formula, atol=1e-12)
    assert np.all(-(U_h * U_h).sum(axis=1) < 0)                           # the loss half: it falls
    logit_falls += int((rate_logit < 0).sum())
    positions_14 += toy.T
print(f"{heads_14} random heads, {positions_14} positions: the correct logit falls along -u_i at "
      f"{produced(logit_falls)} positions ({produced(logit_falls / positions_14, '.1%')}); "
      f"the loss falls at all {positions_14}")
assert 0.03 < logit_falls / positions_14 < 0.25

# %% [markdown]
# So "$-u_i$ increases the correct logit" is false at a minority of positions — about one in ten
# here — and needs a condition on the read-out (it holds, for instance, when the read-out vectors
# of different classes are orthogonal). What $-u_i$ always does is lower the loss. Recorded in the
# errata ledger (row "§3.1, sentence after Eq. (14)").
#
# ### What the prose gets backwards
#
# Eq. (23) and the definition of $A_{ij}$ are right, and the paper's §3.4 and §4.1 read them
# correctly: descent raises scores with positive advantage. But the sentence after (23) ("scores
# increase for positions whose compatibility exceeds the current attention-weighted average"),
# contribution (2), the abstract ("route more strongly to values that are above-average for their
# error signal"), §5.1 after (44) (the E-step "increases responsibilities for positions whose
# compatibility $b_{ij}$ exceeds the current mean") and conclusion (1) read "compatibility" as if a
# larger $b_{ij}$ were better. With $b_{ij}=u_i^\top v_j = -a_{ij}$ and
# $u_i=\partial L/\partial g_i$ it is the other way round — the tiny example (the score of $v_1$,
# whose $b$ is lowest, rises) and the random head of Figure 3.1.2 (every score whose raising lowers the
# loss has a positive advantage, checked by nudging all 36 scores) both show it: attention moves toward values whose compatibility is
# *below* average (they point along $-u_i$). The equations are right; the wording is not. Recorded
# in the errata ledger (row "§3.4 sentence after Eq. (23)").
#
# ### First-order updates, Eqs. (33), (34), (35) and (36)
#
# The updates (33)–(36) are first-order: for a small learning rate, the loss change of a full
# gradient step is $-\eta\Vert\nabla\mathcal L\Vert^2 + \mathcal O(\eta^2)$. We check that the
# ratio of actual to predicted change tends to 1 as $\eta$ shrinks, its distance from 1 falling by
# at least a factor 5 per decade.

# %% tags=["hide-cell"]
grads = head_gradients(params, X, y)
sq = sum(float(np.sum(getattr(grads, n) ** 2)) for n in ("W_Q", "W_K", "W_V", "W_O", "b"))
ratios = {}
for eta in (1e-2, 1e-3, 1e-4):
    ratios[eta] = (loss_of(params.sgd(grads, eta), X, y, False) - grads.loss) / (-eta * sq)
    print(f"eta={eta:.0e}: actual dL / (-eta ||grad||^2) = {ratios[eta]:.6f}")
assert abs(ratios[1e-4] - 1) < 1e-3
assert abs(ratios[1e-3] - 1) < abs(ratios[1e-2] - 1) / 5 and abs(ratios[1e-4] - 1) < abs(ratios[1e-3] - 1) / 5

# %% [markdown]
# ## Reproducibility
#
# Everything on this page is exact or a deterministic computation from seeded random draws
# (`numpy.random.default_rng(3)` for the random head of Figure 3.1.2, `default_rng(0)` for the
# numerical checks, `default_rng(14)` for the heads of the Eq. (14) count); no training run.
# Library: `nextword.theory.dynamics` (`head_forward`, `head_gradients` and the §3 helpers),
# `nextword.attention.gradients.attention_backward`, `nextword.numerics.central_difference`; the
# schematic from `nextword.booktools.schematics.dynamics.draw_gradient_flow`. The library keeps the
# paper's names for some helpers (`compatibility_matrix` returns $u_i\cdot v_j = -a_{ij}$,
# `advantage_matrix` our $A_{ij}$; the read-out is the field `W_O`).

# %% tags=["hide-cell", "nbval-ignore-output"]
# nbval-ignore-output: package versions
import platform  # noqa: E402

assert np.allclose(advantage_matrix(forward.alpha, compatibility_matrix(U, forward.V)), Adv, atol=1e-14)
assert np.allclose(score_gradient(forward.alpha, compatibility_matrix(U, forward.V)), dS, atol=1e-14)
assert np.allclose(responsibility_signal(forward.alpha, U), forward.alpha.T @ U, atol=1e-14)
print(f"numpy {np.__version__}, sympy {sp.__version__}, torch {torch.__version__ if torch else 'absent'}, "
      f"python {platform.python_version()}")
