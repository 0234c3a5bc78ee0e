# %% [markdown]
# # Part 2 — Large language models as mathematics: overview
#
# **The question.** What exactly *is* a large language model, written as mathematics rather than as
# code: which objects does it manipulate, which function does it compute, and what does training
# minimise? Baptista, Stuart and Tran answer with one chain of definitions, from text to tokens to
# vectors to a probability for the next token, and then to training, generation and evaluation.
# A student who can follow that chain can read papers about these models with precise
# questions — and this part shows that asking them pays: several of the paper's printed
# formulas do not survive an executable check.
#
# ```{admonition} Learning goals
# :class: tip
# After this part you can
# - follow a text through the whole formulation: tokens, embedding, attention blocks, the
#   next-token distribution, and the sequence it generates;
# - explain why training a model on next-token prediction minimises a divergence between the data's
#   distribution over whole texts and the model's;
# - compute the pieces (byte-pair encoding, attention block, KL objective, decoders, evaluation
#   scores) on examples small enough to check exactly;
# - recognise, on the paper's own formulas, the slips the book's checks found and state the
#   corrected forms.
# ```
#
# **Builds on:** [6.3 Causal masking](../part1_chapter6/6_3_causal_masking.ipynb) (attention with
# queries, keys, values and a causal mask; a next-word model trained on whole sentences) ·
# [6.6 The decoder block](../part1_chapter6/6_6_context_representation.ipynb) (the residual
# stream, layer normalisation, the feed-forward network) · probability distributions and conditional probability; logarithms; matrix products; a
# gradient. **Reading time:** about 8 minutes.
#
# ```{admonition} Symbols on this page
# :class: note
# | symbol | meaning | shape |
# |---|---|---|
# | $p(y,z)$, $p(z\mid y)$ | a joint probability and a conditional probability | numbers |
# | $v$, $\dot v$ | the state of a linear differential equation and its time derivative ($v$ is the paper's letter for a state-space model's state, kept as in [2.5](05_temporal_structure.ipynb); not Chapter 6's value) | vectors |
# | $A$, $B$ | the matrices of a state-space model, $\dot v=Av+Bh$ ([2.5](05_temporal_structure.ipynb)) | matrices |
# | $h$ | the input of a state-space model | vector |
# | $y$, $z$ | two random quantities | |
# ```
#
# *Source: R. Baptista, A. Stuart, S. Tran, "Large Language Models: A Mathematical Formulation",
# §2–6, §8–9 and Appendices A–D; of §7 and Appendix E (the applications with a 3-billion-parameter
# model) the model is not run, but its printed answers are checked in [2.9](09_examples_appendix.ipynb).*

# %%
import matplotlib.pyplot as plt

from nextword.booktools.plotting import use_book_style
from nextword.booktools.schematics.formulation import draw_part2_route

use_book_style()

# %% [markdown]
# ## What the paper claims, in plain words
#
# - Text can be represented, without loss, as a shorter sequence over a larger vocabulary of
#   {term}`tokens <token>` (byte-pair encoding), and each token as a learned vector; how to balance
#   vocabulary size against sequence length is an open question.
# - A model of whole texts is built from one piece: the probability of the next token given the
#   tokens before it. Multiplying these probabilities gives the probability of a whole text.
# - Training minimises the Kullback–Leibler divergence (a measure of the gap between two probability
#   distributions) from the data to the model; because both factor token by token, this is the
#   familiar next-token cross-entropy loss, up to a constant the model cannot change. Fine-tuning continues that training on new, task-specific
#   data; reinforcement learning adds a reward, with a penalty that keeps the model near where it
#   started.
# - The next-token model is a stack of attention blocks that, without positions or a causal mask,
#   sees its input as an unordered collection — only through the proportions in which its vectors
#   occur, a probability distribution of vectors (the paper calls it a *set* transformer, though
#   repeating one token changes the proportions, and so the output); word order is put back by
#   positional encodings, masks, or a state-space model that replaces attention.
# - Generation and evaluation are further maps on the same next-token probabilities. Discrete
#   diffusion, a newer alternative, does without them: it writes a whole text at once by undoing a
#   random corruption.
#
# ## What you need first
#
# - **Attention, masks and the decoder block** — Part 1:
#   [6.2](../part1_chapter6/6_2_attention_mechanism.ipynb),
#   [6.3](../part1_chapter6/6_3_causal_masking.ipynb),
#   [6.6](../part1_chapter6/6_6_context_representation.ipynb).
# - **Softmax and reading a page's checks** — [Part 0](../part0_reading_guide/00_reading_guide.ipynb).
# - **Conditional probability and the chain rule** $p(y,z)=p(y)\,p(z\mid y)$, expectations — any
#   first probability course; [2.2](02_objective_kl.ipynb) recalls what it uses.
# - **Entropy, cross-entropy, logarithms** — the {term}`entropy` entry of the glossary and
#   [6.3](../part1_chapter6/6_3_causal_masking.ipynb), which measures a loss against an
#   {term}`entropy rate`.
# - **Matrix products, gradients, and (for 2.5 and 2.8) a linear differential equation
#   $\dot v = Av$ and its matrix exponential** — a linear-algebra and an ODE course; the symbols of
#   all the papers side by side are in [Appendix A](../partA_appendix/A_notation_and_environment.ipynb).
#
# ## The route through this part
#
# - [2.1 Tokenisation: byte-pair encoding and the embedding φ](01_tokenisation_bpe.ipynb) — how is a
#   text cut into tokens, and how does each token become a vector?
# - [2.2 Next-token prediction and the KL objective](02_objective_kl.ipynb) — why does predicting
#   one token at a time, scored by cross-entropy, fit a model of whole texts?
# - [2.3 Fine-tuning and KL-regularised reinforcement learning](03_finetuning_and_rl.ipynb) — how is
#   a trained model adapted to new data or to a reward without drifting too far?
# - [2.4 The attention block and the set transformer](04_attention_block_set_transformer.ipynb) —
#   what function does the network compute, and what does it ignore when it has no positions?
# - [2.5 Temporal structure](05_temporal_structure.ipynb) — how are word order and the cost of long
#   texts put back: positional encodings, causal and sparse attention, state-space models?
# - [2.6 Sequence generation](06_sequence_generation.ipynb) — how is text produced from next-token
#   probabilities, and does the greedy choice find the most likely text?
# - [2.7 Evaluation](07_evaluation.ipynb) — how do we score a model: perplexity, distances between
#   samples, scores against one correct answer?
# - [2.8 Discrete diffusion](08_discrete_diffusion.ipynb) — can a model write a whole text at once
#   by learning to undo a random corruption of it?
# - [2.9 The remaining examples and appendices](09_examples_appendix.ipynb) — do the paper's other
#   examples (images as sequences, classification, batch normalisation, derivatives) check out?
#
# The pages follow the order of the paper's sections; the figure shows how they fit together.

# %%
fig, ax = plt.subplots(figsize=(11, 3.6))
draw_part2_route(ax=ax)
plt.show()

# %% [markdown]
# **Figure 2.0.1.** The formulation as a pipeline. Top row: a text becomes tokens and vectors (2.1),
# passes through attention blocks (2.4) that are given a sense of order (2.5), and comes out as a
# probability for the next token, which training fits to data (2.2). Bottom row: what is done with
# that distribution — adapted further (2.3), generated from (2.6) and scored (2.7); discrete
# diffusion (2.8) is the alternative to generating one token at a time. Page
# [2.9](09_examples_appendix.ipynb), named in the line above the boxes, checks the examples that fit
# none of them. The fills sort the boxes: blue for the model and its training, orange for what is
# done with the trained model, and a pale lilac for 2.8, the alternative that does without
# next-token generation.
#
# ## What the book found
#
# Every formula the part uses is recomputed; where a printed one fails its check, the page shows
# the failure (a lesson in its section *Checking the paper*, folded on screen; the second-pass page in its
# own sections), uses a corrected form, and the book's
# [errata list](../ERRATA.md) records it, under the source "Formulation — Baptista, Stuart, Tran"
# and the location named below.
#
# - **Remark 2.5 measured** ([2.1](01_tokenisation_bpe.ipynb)): on tiny Shakespeare, more BPE merges
#   shorten a text with quickly diminishing returns, close to a power law with a small exponent;
#   Example 3.2's "several pages" for a 4096-token window holds, but CLIP's 77 tokens hold at most 77
#   words, less than one paragraph, not "several paragraphs" ("Example 3.2, CLIP's context
#   window"); and encoding is one-to-one but not the "bijection" with all texts over the larger
#   vocabulary that §2 calls it: a text such as `ab`, written with the old tokens, is never a code
#   ("§2, opening paragraph").
# - **The shared-prefix objective is not biased** ([2.2](02_objective_kl.ipynb); "§10 … and
#   Eq. (4.5)"): the paper calls its empirical objective a biased approximation; divided by the
#   number of texts (a factor (4.5) leaves out), it is unbiased, and sharing prefixes changes only
#   its variance.
# - **The attention block** ([2.4](04_attention_block_set_transformer.ipynb)): layer normalisation
#   written with sums instead of averages is neither centred nor shift invariant ("§5.1, Example
#   5.2, Eq. (5.4)"); mean pooling divides by the wrong count ("§5.2, Example 5.4"); Appendix B's
#   measure form adds the block's input where (5.3) adds the current value ("Appendix B, Eq.
#   (B.4c)"); max pooling is not of the linear form (B.5) ("Appendix B, Example B.2").
# - **Temporal structure** ([2.5](05_temporal_structure.ipynb)): the printed wavelengths of
#   Example 5.8 leave no coarse scale ("§5.3.1, Example 5.8"); the RoFormer inner product drops the
#   rotation's cross-terms ("§5.3.2"); multiplying a score by 0 does not mask it ("§5.3.3, causal
#   attention"); the state-space solution formulas of Appendix C are defined only when the state
#   and the input have the same width, and even then hold only when $A$ and $B$ commute
#   ("Appendix C, Eq. (C.3a)" and "(C.4a)"); (5.9a) reads an input that does not exist ("§5.3.4,
#   Eq. (5.9a)").
# - **Generation** ([2.6](06_sequence_generation.ipynb)): Example 6.1's windowed search is a
#   different algorithm from beam search ("§6.2, Example 6.1").
# - **Evaluation** ([2.7](07_evaluation.ipynb)): the exponentiated *negative* log-likelihood of a
#   whole sequence (one over its probability) is not the perplexity used in practice, which is per
#   token ("§8.1, Example 8.1").
# - **Discrete diffusion** ([2.8](08_discrete_diffusion.ipynb)): the printed rate matrices of
#   Examples 9.2 and 9.3 have rows that do not sum to zero, (9.1) conserves probability only with
#   the transposed generator, and the reverse process samples the data at time 0, not at the end
#   time of the forward process ("§9, Eqs. (9.1)–(9.4) …", "§9, Example 9.2", "§9, Example 9.3",
#   "§9, paragraph after Eq. (9.4)" and the others of §9 and Appendix D).
# - **The remaining examples** ([2.9](09_examples_appendix.ipynb)): Example 2.10's CLIP does not give
#   its image sequence the text model's width (768 against 512; "Example 2.10, CLIP's widths");
#   Example B.1's batch measure has the wrong weight ("Appendix B, Example B.1"); of §7.4's claims about the two generated programs,
#   the blow-up and the bounded solution hold, but "a specific example in two dimensions" fits only
#   the first, and the fine-tuned model's ODE is linear although a nonlinear one was asked for
#   ("§7.4 (Coding), the two programs of App. E.4"); the arithmetic of Appendix E.3 checks out.
# - **The sizes the paper quotes** ([checking the paper, a second pass](checking_the_paper.ipynb)):
#   Remark 4.2's stock of human-generated web text, "a median of 3100 trillion tokens", is not the
#   stock that the cited work expects training to use up between 2026 and 2032 (its effective stock,
#   about 300 trillion tokens, whose 90% interval ends far below 3100 trillion); the figure may be the
#   cited work's estimate for the whole web, indexed or not, quoted in the wrong role, which the book
#   could not check ("Remark 4.2, the stock of human-generated text").
