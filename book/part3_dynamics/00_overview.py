# %% [markdown]
# # Part 3 — The gradient dynamics of attention: overview
#
# **The question.** How does plain training — gradient descent on the next-token loss — teach an
# attention head *where* to look and *what* to hand over? Part 1 showed what a trained head does;
# this part asks how it got there, by following the error signal backwards through one head and
# watching what the resulting updates do over many steps. A student who can read these gradients
# can predict which attention weights will grow and why a head specialises, and can test the
# paper's claim that attention settles before the values do.
#
# ```{admonition} Learning goals
# :class: tip
# After this part you can
# - derive the gradients of one attention head and say which quantities each one reaches;
# - predict from the sign of the advantage which attention scores gradient descent raises;
# - explain the feedback loop between routing (the weights) and content (the values), and its
#   reading as an EM-like algorithm;
# - judge a paper's training comparison by reproducing it with a known optimum and several seeds.
# ```
#
# **Builds on:** [6.2 The attention mechanism](../part1_chapter6/6_2_attention_mechanism.ipynb)
# (queries, keys, values, softmax weights) and [6.3 Causal masking](../part1_chapter6/6_3_causal_masking.ipynb)
# (a position reads only itself and earlier positions, as the head of 3.3 does) · the chain rule, the softmax and the
# cross-entropy loss of a classifier. **Reading time:** about 8 minutes.
#
# *Source: N. Aggarwal, S. R. Dalal, V. Misra, "Gradient Dynamics of Attention: How Cross-Entropy
# Sculpts Bayesian Manifolds", §2–8 (the derivations of §2–3, the dynamics of §4–6, the experiments
# of §7, the diagnostics and design advice of §8).*

# %%
import matplotlib.pyplot as plt

from nextword.booktools.plotting import use_book_style
from nextword.booktools.schematics.dynamics import draw_page_route

use_book_style()

# %% [markdown]
# ## What the paper claims, in plain words
#
# The paper studies the smallest setting with the whole story in it: one attention head, a linear
# read-out, a softmax over classes, trained with cross-entropy.
#
# - **Scores learn by comparison with the average.** The gradient of a score is the
#   {term}`attention weight` times "how much worse than the current mixture this position is"; the
#   paper names its negative, how much *better* than the mixture the position is, the {term}`advantage`. Descent raises the scores of positions that would
#   lower the loss more than what the query reads now.
# - **Values learn from the errors of the queries that use them.** Each {term}`value` is pushed
#   *against* its users' error signals (their {term}`upstream gradient`s, which point where the loss
#   rises), so in the direction that would fix their errors, weighted by how much each user attends to it.
# - **The two feed each other.** A position that helps gets more attention; more attention makes
#   its value adapt more to that query; the value then helps more. Heads *specialise* this way.
# - **This looks like EM.** The attention weights play the role of EM's soft assignments
#   (responsibilities), the values the role of cluster centres; the paper argues attention settles
#   first and values keep refining, and that an EM-like training schedule learns faster than SGD
#   (stochastic gradient descent: one gradient step on every parameter for each fresh batch of data).
# - **Design advice follows.** Keys are pushed apart by different groups of queries; LayerNorm on
#   values keeps their norms stable, and {term}`attention dropout` (setting random attention weights
#   to zero during training) disrupts the feedback loop, so that values are used more evenly.
#
# ## What you need first
#
# - **Attention itself** — queries, keys, values, scores, the softmax and the weighted average:
#   [6.2 The attention mechanism](../part1_chapter6/6_2_attention_mechanism.ipynb).
# - **The causal mask** (page [3.3](03_sticky_chain_em_vs_sgd.ipynb) trains a head whose positions read only themselves and earlier ones):
#   [6.3 Causal masking](../part1_chapter6/6_3_causal_masking.ipynb).
# - **The chain rule for vectors and matrices** — a gradient passed backwards through a product
#   of a row vector and a matrix, $v = x\,W^V$, comes back multiplied by the transpose:
#   $\partial\mathcal L/\partial x = (\partial\mathcal L/\partial v)\,(W^V)^\top$; any calculus text's
#   chapter on partial derivatives. Page [3.1](01_attention_gradients.ipynb) works the gradients of one
#   query by hand first and checks this rule with sympy for the read-out. The notation
#   table of [Appendix A](../partA_appendix/A_notation_and_environment.ipynb) maps the paper's
#   symbols to the book's.
# - **Softmax and cross-entropy** — the gradient of the cross-entropy loss of a softmax classifier
#   with respect to its logits is the predicted probabilities minus the one-hot target; page
#   [3.1](01_attention_gradients.ipynb) re-derives it with sympy.
# - **Gradient descent**; the idea of the **EM algorithm** for a mixture of Gaussians (alternate soft
#   assignments and weighted means), which page [3.2](02_routing_and_specialisation.ipynb) recalls;
#   and, for page [3.3](03_sticky_chain_em_vs_sgd.ipynb), the idea of a **Markov chain** (the next
#   symbol depends only on the current one), which that page recalls.
# - **Layer normalisation**, for page [3.4](04_design_choices.ipynb) (LayerNorm on the values): rescaling a
#   vector to mean 0 and variance 1, [6.6 The decoder block](../part1_chapter6/6_6_context_representation.ipynb).
#
# ## The route through this part

# %%
ax = draw_page_route([("3.1", "Attention\ngradients"), ("3.2", "Routing and\nspecialisation"),
                      ("3.3", "Sticky chain:\nEM vs SGD"), ("3.4", "Design\nchoices")])
plt.show()

# %% [markdown]
# **Figure 3.0.1.** The reading order of Part 3: the gradients of one step first, then what they
# do over many steps, then the paper's main experiment, then what they imply for the keys and for
# two design options. Each page links back to the ones it needs.
#
# - [3.1 Attention gradients](01_attention_gradients.ipynb) — when a head contributes to a wrong
#   prediction, which way does each of its numbers move, and why is the score's gradient an
#   "advantage"?
# - [3.2 Routing and specialisation](02_routing_and_specialisation.ipynb) — what do the gradients
#   do over many steps: how does one value update change the loss, and does the feedback loop make a
#   head specialise?
# - [3.3 The sticky Markov chain](03_sticky_chain_em_vs_sgd.ipynb) — does the EM-like schedule
#   really train faster than SGD on the paper's task, and how close do both get to the best possible
#   prediction?
# - [3.4 Design choices](04_design_choices.ipynb) — do the keys of competing hypotheses become
#   orthogonal as the paper says, and what do LayerNorm on the values and attention dropout do?
#
# ## What the book found
#
# Every formula of the paper's §3 holds: [3.1](01_attention_gradients.ipynb) derives the gradients with
# sympy, checks numerically that a small gradient step (the form of the update rules (33)–(36))
# changes the loss as the first-order formula predicts, and compares
# the library's gradients with finite differences and autograd. Some of the paper's sentences and numbers did not survive a check; each
# lesson shows its check in its *Checking the paper* section (folded on screen), the second pass on its own
# page, and the book's [errata](../ERRATA.md) list collects them:
#
# - **The direction of the advantage is stated backwards in the prose** (§3.4 after Eq. (23),
#   contribution (2), the abstract, §5.1, §11): attention moves towards values whose
#   {term}`compatibility` (the paper's measure of how much a value would *raise* the loss) is *below*
#   the mean, as the equations say — [3.1](01_attention_gradients.ipynb).
# - **What the descent direction does to the correct logit** (§3.1 after Eq. (14)): it always lowers
#   the loss, but it does not always raise the correct token's logit —
#   [3.1](01_attention_gradients.ipynb).
# - **The feedback loop's sign** (§4.4, §4.5, Fig. 1): a value moves against its users' error
#   signal, so its compatibility *falls*; the loop holds with the sign corrected —
#   [3.2](02_routing_and_specialisation.ipynb).
# - **Keys are pushed apart, but not to orthogonality** (§6.2): the keys of two competing
#   hypotheses end far past a right angle, still moving towards opposite; those of three or five
#   end nearly balanced (their unit vectors sum to less than one key's length), with the mean
#   cosine of a regular simplex ($-\tfrac12$ and $-\tfrac14$), though not all at equal angles —
#   [3.4](04_design_choices.ipynb).
# - **The sticky chain's transition rule** (§7.2) is garbled in the text; of the six readings the
#   book tries, only one gives the 1.8833 that §7.2's Table 1 prints as its "theoretical min entropy"
#   (the best possible loss for a predictor that knows the previous symbol) —
#   [3.3](03_sticky_chain_em_vs_sgd.ipynb).
# - **How much the noisy inputs raise that floor** is set by the distance between the symbol
#   means, not by the input dimension (§7.2, Table 1 caption) — [3.3](03_sticky_chain_em_vs_sgd.ipynb).
# - **EM-like versus SGD (Table 1) is not reproduced**: with our reading the two schedules end within
#   noise of each other over several seeds, and a paper-sized run finds no EM-like advantage either
#   (where the difference exceeds three standard errors of its sampling noise, SGD is ahead) —
#   [3.3](03_sticky_chain_em_vs_sgd.ipynb).
# - **That values keep learning after attention has frozen does not follow from the gradients** (§6.1):
#   the value step is a weighted sum of the error signals and vanishes at every stationary point,
#   however large the loss; whether values keep moving is a property of a training run —
#   [the second pass over the paper](checking_the_paper.ipynb).
