# %% [markdown]
# # Part 4 — Support tokens and stability margins: overview
#
# **The question.** Can one causal attention layer be read as a probability model of the
# embeddings it produces — and if so, what does the exact probability add to the usual picture of
# attention as a weighted average? The paper's answer is a hidden term: a *margin* that measures how
# close each position is to a configuration where the layer stops being invertible, a handful of
# *support tokens* that sit closest to it, and a training penalty built from that term. A student
# who can compute the margin can say when such a model is a proper density at all, which positions
# limit its stability, and what the penalty does — and can judge the paper's claim that the penalty
# makes a language model more robust.
#
# ```{admonition} Learning goals
# :class: tip
# After this part you can
# - explain how noise pushed through a causal attention layer defines a density of the embeddings,
#   and compute its log-density as a log-determinant plus a noise term that falls with the squared
#   prediction error;
# - compute scalar and matrix margins and name the support tokens of a sequence;
# - say when the density exists (the margin stays positive) and where the paper's theorems need
#   more than the paper assumes;
# - judge the paper's training experiments — what the margin penalty does, what it costs, and what
#   its robustness gain is made of.
# ```
#
# **Builds on:** [6.2 The attention mechanism](../part1_chapter6/6_2_attention_mechanism.ipynb)
# (queries, keys, values, softmax weights) and [6.3 Causal masking](../part1_chapter6/6_3_causal_masking.ipynb)
# (a position reads only its past); for the depth page and the pages on trained models (4.5 to 4.9),
# [6.6 The decoder block](../part1_chapter6/6_6_context_representation.ipynb) · derivatives and the chain rule, the determinant of a matrix,
# the normal distribution and the density of a transformed random variable.
# **Reading time:** about 8 minutes.
#
# ```{admonition} Symbols on this page
# :class: note
# | symbol | meaning | shape |
# |---|---|---|
# | $x_t$ | the embedding of position $t$ (a column vector in Part 4) | $(d,)$ |
# | $W_Q,W_K,W_V$ | query, key and value matrices: $q_t=W_Q x_t$ | $(d_k,d)$, $(d_k,d)$, $(d,d)$ |
# | $f$, $y$ | an invertible map and its value, $y=f(x)$, in the change-of-variables rule | function, vector |
# | $\lambda_m$ | the weight of the margin penalty in training | number |
# ```
#
# *Source: D. Agarwal, D. D. Mavani, S. Gupta, K. Sethuraman, T. Dharamsi, "Support Tokens, Stability
# Margins, and a New Foundation for Robust LLMs", §2–7 with Appendices A–D (the latent-noise view of
# §2, the margins of §3–4, the token-level process of §5, depth in §6, the experiments of §7).*

# %% [markdown]
# ## What the paper claims, in plain words
#
# - **Attention as a generator.** Read as a generative model, a causal attention layer makes
#   each embedding from its past plus random noise. Turning embeddings back into noise gives an
#   exact probability for every sequence of embeddings (§2).
# - **A hidden stability term.** Because the current token steers its own attention weights, that
#   probability contains, besides a prediction-error term, one extra factor per position: the
#   {term}`margin <stability margin>`, which is 1 when nothing is steered and reaches 0 where the
#   layer stops being invertible. Near that boundary the log of the margin falls to $-\infty$: a
#   {term}`log-barrier` (§3).
# - **Support tokens.** The positions with the smallest margin, the
#   {term}`support tokens <support token>`, decide how stable the whole sequence
#   is, as support vectors decide the margin of a support vector machine (§3.2).
# - **A proper process over texts.** With a token decoder on top, the model gives consistent
#   probabilities to texts of every length, so it defines one random process over token sequences
#   (§5).
# - **Depth adds nothing new.** In a standard deep transformer only the first token-dependent layer
#   contributes a stability term (§6).
# - **A training penalty.** Adding the negative log-margin to the usual cross-entropy loss gives a
#   model that is more robust to noise in its embeddings, at almost no cost in accuracy (§7).

# %% [markdown]
# ## What you need first
#
# - **Causal attention** — queries, keys, values, the softmax weights and the weighted average of
#   the past: [6.2 The attention mechanism](../part1_chapter6/6_2_attention_mechanism.ipynb) and
#   [6.3 Causal masking](../part1_chapter6/6_3_causal_masking.ipynb). Part 4 uses the paper's
#   column-vector notation ($q_t=W_Q x_t$); [the latent-noise page](01_latent_noise_view.ipynb) has
#   a table that translates it.
# - **Derivatives, the chain rule and the Jacobian** (the matrix of partial derivatives of a
#   vector function): any calculus text; [the scalar-margin page](02_scalar_margin.ipynb) works the
#   one-dimensional case by hand.
# - **Determinants** — the determinant of a triangular matrix is the product of its diagonal, and
#   $\lvert\det\rvert$ measures how much a linear map stretches volume: a linear-algebra text's
#   chapter on determinants.
# - **The change-of-variables rule for densities** — if $y=f(x)$ with $f$ invertible, then
#   $p_X(x)=p_Y(f(x))\,\lvert\det\partial f/\partial x\rvert$; a probability text's chapter on
#   transformations of random variables. [The latent-noise page](01_latent_noise_view.ipynb) checks it numerically.
# - **For the four experiment pages:** training a language model with cross-entropy and reading its loss in bits
#   per character; [6.6 The decoder block](../part1_chapter6/6_6_context_representation.ipynb) for the
#   decoder block (layer norm, attention, MLP, residual paths).

# %% [markdown]
# ## The route through this part
#
# The five theory pages build one on the last; the four experiment pages can be read after
# [4.3](03_matrix_margin.ipynb).
#
# - [4.1 The latent-noise view](01_latent_noise_view.ipynb) — how does a causal attention layer
#   define a density of its embeddings, and why does its log-determinant split into one term per
#   position?
# - [4.2 The scalar margin](02_scalar_margin.ipynb) — with one-dimensional embeddings, when is the
#   layer invertible, how far is a sequence from the point where it stops being so, and which
#   positions are closest?
# - [4.3 The matrix margin](03_matrix_margin.ipynb) — what replaces the scalar margin in $d$
#   dimensions, when is the matrix form exact, and how does the log-barrier look in the plane of
#   Figure 1.1?
# - [4.4 The token-level process](04_token_level_process.ipynb) — do the probabilities the model
#   gives to texts of different lengths agree with each other, and what breaks without causality?
# - [4.5 Depth](05_depth.ipynb) — in a stack of layers, which layers contribute a stability term?
# - [4.6 Support tokens in a trained model](06_support_tokens_trained.ipynb) — in a small language
#   model trained with the paper's penalty, which positions of real text are the support tokens?
# - [4.7 Barrier training](barrier_training.ipynb) — does the margin penalty keep a language model
#   away from unstable configurations, and what does it cost in prediction quality?
# - [4.8 Robustness to embedding noise](robustness_to_noise.ipynb) — is the penalised model really
#   more robust when its embeddings are perturbed, and how much of that is a change of scale?
# - [4.9 The regularisation path](regularisation_path.ipynb) — as the penalty's weight grows, is
#   there a best weight, as the paper's table says?
#
# Beside the route, [Part 4: checking the paper, a second pass](checking_the_paper.ipynb) is a reference
# page for the claims the lessons leave aside: §7's corpus sizes and the sentences with which the paper reads
# its own tables, each path of Appendix A's derivative on its own, and Lemma B.2 in several dimensions.

# %% [markdown]
# ## What the book found
#
# The identities of §2–3 and Appendix B hold in the setting their proofs use (values equal to the
# embeddings, $W_V=I$), checked with sympy, finite differences and autograd; so do Kolmogorov
# consistency in the cases the book can compute and the depth localisation of §6. Where a statement
# did not survive a check, the page named below shows the check (a lesson in its section "Checking
# the paper", folded on screen; the reference page in its own section), and the [errata](../ERRATA.md) list it
# under "Margins — Agarwal et al." and the location given here:
#
# - **The margin formula holds only when values equal the embeddings** (Prop. 1, Eq. 8; Thm. 1,
#   Eq. 14). The paper's slope uses the covariance of the *values*, which contains $W_V$ twice; in the
#   exact slope its place is taken by $W_V$ once times the covariance of the embeddings. The two agree
#   for $W_V=I$ but not in general. Shown in [4.2](02_scalar_margin.ipynb) and
#   [4.3](03_matrix_margin.ipynb).
# - **Including the current token** (App. A, Eqs. 48–54) also changes the key, a path the paper's
#   derivative leaves out. Shown in [4.3](03_matrix_margin.ipynb).
# - **Figure 1.1's support token and Eq. (21) as "the" relaxation** (Fig. 1.1 caption; §4, after
#   Eq. 22). Under strict causal attention tokens 1 and 2 have nothing, or one token, to attend to, so their
#   margin is exactly 1; when the {term}`coupling` matrix is symmetric and positive semidefinite (queries
#   and keys made by the same matrix, as in 4.3) and values equal the embeddings, no later token on the
#   stable side has a margin above 1, so token 1 is never strictly the closest to instability (in the
#   sequence 4.3 computes, a later token is the support token). The log-barrier
#   objective (21) is only one member of the barrier family (weight 1, barrier at margin 0), and its own
#   minimiser need not keep the margin above the level that the constrained problem (22) demands.
#   Shown in [4.3](03_matrix_margin.ipynb).
# - **Figure 3.2's peak heights** cannot all be reproduced by any one noise scale, and in its panel (c)
#   the peak does not keep falling as the coupling grows, although the spread does keep growing; the
#   margin factors and Figure 3.3's exclusion count are confirmed. Shown in [4.2](02_scalar_margin.ipynb).
# - **Local invertibility is not enough for a density** (§5.1, Theorem 2, Assumption A2). Past a fold
#   the one-step conditional integrates to more than 1, so Theorem 2 needs a globally invertible
#   layer. Shown in [4.2](02_scalar_margin.ipynb).
# - **The trained penalty goes the other way** (§3.4, §7.1, §7.4). Training with the margin penalty
#   drives the {term}`coupling` (how strongly a token's query and an earlier token's key multiply in
#   their score) negative and moves the layer away from the boundary where it stops being invertible,
#   instead of holding it just in front of it: on the windows 4.7 measures, no position's margin (the
#   $\lvert\det\rvert$ of [4.3](03_matrix_margin.ipynb)) comes below 1. (With vectors a negative coupling alone does not guarantee this,
#   as [4.6](06_support_tokens_trained.ipynb) shows; it is measured.) There the term rewards a wider
#   spread of the attended embeddings (the attention weights themselves become more concentrated).
#   Shown in [4.7](barrier_training.ipynb).
# - **The robustness gain is mostly a change of scale** in the book's trained pair (§7.3, Fig. 7.5),
#   and at the paper's model size and optimiser (on tiny Shakespeare: the paper's WikiText-2 set-up was not
#   run) it reverses for large noise; the paper's own tables show the gap between the two models, for noise
#   of standard deviation $\sigma$ added to the embeddings,
#   narrowing from $\sigma=0.3$ to $\sigma=0.5$, where Fig. 7.5's caption says it widens. Shown in
#   [4.8](robustness_to_noise.ipynb).
# - **The regularisation path shows no U-shaped optimum** (§7.4, Table 1, Fig. 7.6) at the paper's
#   model size and optimiser, and Table 1's own attention-entropy column does not show the sparser
#   attention that §7.4's prediction (i) expects as the weight grows. Shown in
#   [4.9](regularisation_path.ipynb).
# - **Two smaller slips in §7**: the stated model size does not match the stated architecture
#   (§7.1), and the cross-entropy-only model gets two different clean scores (Table 1's $\lambda_m=0$
#   row against Fig. 7.4: a second run or a misprint).
#   Shown in [4.5](05_depth.ipynb) and [4.7](barrier_training.ipynb).
# - **A third small slip in §7, in Fig. 7.5's caption** (§7.3): it has the margin model below the
#   cross-entropy one "across the entire noise range", but the range starts at $\sigma=0$, where the
#   table under the caption puts it above (the §7.3 text, "every noise level $\sigma>0$", is right).
#   Shown in [the checking page](checking_the_paper.ipynb).
