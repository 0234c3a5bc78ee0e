# %% [markdown]
# # 0 Reading guide: how a page of this book teaches
#
# **The question.** How should you read a page of this book so that you learn the idea, and know when
# you can trust a number it shows?
# Every page runs code, and code can show a number that looks right and is not. This book closes that
# gap with a habit you will see on every page: work a tiny example by hand, compute the same thing with
# the library, and let an `assert` check that the two agree. This page shows the habit once, on the
# {term}`softmax`, the function at the heart of attention.
#
# ```{admonition} Learning goals
# :class: tip
# After this page you can
# - compute a softmax of three scores by hand and say what its outputs add up to;
# - explain what an `assert` on a page guarantees, and what happens when its claim is false;
# - recognise an exact number and a {term}`produced number` on a page, and say why they are shown differently;
# - find your way: the route map, the glossary, the exercises and Appendix A.
# ```
#
# **Builds on:** Python and numpy (arrays and `@`), the exponential function, and basic probability (a
# distribution adds up to 1). **Reading time:** about 12 minutes.
#
# ```{admonition} Symbols on this page
# :class: note
# | symbol | meaning | shape |
# |---|---|---|
# | $s_1$, $s_2$, $s_3$, $s_j$ | the score of word 1, 2, 3, of word $j$ (counted from 1) | number |
# | $p_1$, $p_2$, $p_3$, $p_j$ | the softmax weight (share) of word 1, 2, 3, of word $j$; together they are a probability distribution $p$ | number in $(0, 1)$ |
# | $j$ | the position of a word that is scored (a word to be looked at), counted from 1 | integer |
# | $c$ | a number added to every score (question 2) | number |
# | $q[i]$, $\mathbf q[i]$, $W_Q$, $x_t$ | a query as the book writes it, and as Chapter 6 prints it (bold); a query matrix and an input as one of the papers writes them | vectors, matrix |
# ```
#
# Every lesson page opens with a box like this one: the symbols the page uses, each with one meaning.
# Words and positions count from 1, as in the chapter; Python counts from 0, so in the code word $j$ is
# `scores[j - 1]`.
#
# *Source: none; this page introduces the book's method. The book follows Chapter 6 of* Predicting the
# Next Word *and four papers (see the [landing page](../../index.md)).*

# %%
import numpy as np
import sympy as sp
from IPython.display import Math, display

from nextword.booktools.display import produced
from nextword.attention import softmax

# %% [markdown]
# ## A tiny example by hand
#
# Three words of a sentence get the scores 1, 2 and 3: the larger the score, the more a later word
# should look at it. The softmax turns scores $s_1, s_2, s_3$ into shares that are positive and add up
# to 1:
#
# $$p_j = \frac{e^{s_j}}{e^{s_1} + e^{s_2} + e^{s_3}}.$$
#
# Here $e^{s_j}=\exp(s_j)$ is the exponential: Euler's number, about 2.718 (the first line the cell below
# prints), raised to the power $s_j$. By hand: take the exponential of each score, add the three powers,
# and divide each one by the sum. A loop does exactly that, one word at a time; follow it with a
# calculator:

# %%
print(f"e = {np.e:.3f}")
scores = [1.0, 2.0, 3.0]
total = 0.0
for score in scores:
    total += np.exp(score)
    print(f"e^{score:.0f} = {np.exp(score):.2f}")
print(f"sum of the powers: {total:.2f}")
weights_by_loop = [np.exp(score) / total for score in scores]
for j in (1, 2, 3):
    print(f"word {j}: score {scores[j - 1]:.0f}, weight {weights_by_loop[j - 1]:.4f}")
print(f"sum of the weights: {sum(weights_by_loop):.4f}")

# %% [markdown]
# The same numbers, exactly, with sympy: the first weight is a ratio of exponentials, and the three
# exact weights add up to exactly 1.

# %%
exact_weights = [sp.exp(s) / sum(sp.exp(t) for t in (1, 2, 3)) for s in (1, 2, 3)]
display(Math(r"p_1 = " + sp.latex(exact_weights[0])))
assert sp.simplify(sum(exact_weights) - 1) == 0

# %% [markdown]
# ## Compute, then check
#
# A page never stops at the by-hand answer: it computes the same thing with the book's library,
# `nextword`, and asserts that the two agree. An `assert` is a line of Python that stops the page with an
# error when its claim is false. So a page that runs to the end has checked, on *your* machine, every
# claim it makes about what it computes. (A page says so when a sentence is not checked: a timing, or a
# claim about a model it cannot run.)

# %%
weights = softmax(np.array(scores))
assert np.allclose(weights, weights_by_loop, atol=1e-12)
assert np.allclose(weights, [float(w) for w in exact_weights], atol=1e-12)
print("nextword's softmax agrees with the loop and with sympy:", np.round(weights, 4))

# %% [markdown]
# What a failed check looks like: here we claim, wrongly, that the middle word gets the largest weight.
# The page would stop at this line; we catch the error only to show you its message.

# %%
try:
    assert weights.argmax() == 1, f"the largest weight is at word {weights.argmax() + 1}, not word 2"
except AssertionError as error:
    print("AssertionError:", error)

# %% [markdown]
# ## Exact numbers and produced numbers
#
# Two kinds of numbers appear on the pages. **Exact** numbers come from a formula, a count or sympy:
# they are the same on every computer and are printed as they are. **Produced** numbers come out of
# training, random sampling or an iterative method: the last digits can differ between two computers
# (another processor rounds differently, another seed draws differently), so the page asserts the claim
# about them with a tolerance instead of the digits, and marks them. In the rendered book a produced
# number has a dotted underline; point at it and a note says that it was *produced by training or
# sampling: it varies with the seed and the CPU, and the page asserts its claim* (screen readers read
# the note too; in the PDF the number carries a dagger, †). An exact number has no such mark. Below, a
# Monte Carlo estimate of the first weight: draw words with the softmax's probabilities and count how
# often word 1 comes up. The exact weight is printed plainly, the estimate is marked.

# %%
rng = np.random.default_rng(0)
draws = rng.choice(3, size=20_000, p=weights)
share_of_word_1 = np.mean(draws == 0)
print(f"exact weight of word 1: {weights[0]:.4f}; share in 20,000 draws: {produced(share_of_word_1, '.4f')}")
assert abs(share_of_word_1 - weights[0]) < 0.01  # the claim about the estimate, with a tolerance

# %% [markdown]
# ## Finding your way
#
# - **Order.** The [landing page](../../index.md) has the route map: which pages build on which, a
#   suggested path, what each part assumes and the reading time of every page. Start with §6.1,
#   [Parallel attention](../part1_chapter6/6_1_parallel_attention.ipynb).
# - **Words.** A technical word links to the {doc}`glossary </glossary>` where a page first uses it.
# - **Practice.** Parts 1–5 have exercises; each ends with a self-check cell that marks every check ✓ or
#   ✗ and says what went wrong, and the list of a part's exercises links each one to a worked solution.
#   Try first. Work in a copy of your own (`nextword exercises copy ~/my-exercises`, which an update of
#   the book leaves alone); in a notebook, `hint("p1_01", 1)` gives a first hint for Part 1's first
#   exercise, and `nextword grade --dir ~/my-exercises` shows ✓, ✗ or *not started* for every exercise.
# - **Symbols.** The five sources name the same things differently (a query is $\mathbf q[i]$ in the
#   chapter and $W_Q x_t$ in a paper). The book writes vectors as rows, $q[i]=e[i]\,W^Q$; Parts 4 and 5,
#   some pages of Part 2 and a few sections elsewhere (6.5's rotations, Part 3's checking page) keep
#   their paper's columns, and those pages say so.
#   [Appendix A](../partA_appendix/A_notation_and_environment.ipynb)
#   has one table to move between them, and the report on your Python environment.
# - **Size.** Long, paper-sized runs are behind the `FULL=1` environment variable; a page's default run is
#   a smaller, faithful version that finishes in about a minute on a laptop, or in a few minutes on the
#   pages that train several models (6.4, 6.8 and 4.9 say so in their *Reproducibility* sections).
# - **The end of a page.** After the questions come folded sections (on screen; click a heading to open it, the PDF prints them open): on
#   most pages that follow a source, *Checking the paper* recomputes the numbers the source prints and
#   says what the book found; last, *Reproducibility* says how the page's runs were made (this page has
#   only that one). The lesson reads without them.
# - **Honesty.** When a source's claim fails a check, the page says so in one sentence with a link to its
#   *Checking the paper* section, and the errata list records it.
#
# ## Key takeaways
#
# - A softmax turns scores into positive weights that add up to 1; a larger score gets a larger share.
# - Every lesson page works a tiny example by hand, computes it with `nextword`, and asserts that they
#   agree.
# - A page that runs to the end has checked its claims about what it computes on your machine; a false
#   claim stops it.
# - Exact numbers are printed as they are; produced numbers (training, sampling) are marked (a dotted
#   underline on screen, a dagger † in the PDF), and their claims are checked with a tolerance.
#
# ## Check your understanding
#
# 1. Scores 0, 0 and $\ln 2$ go through a softmax. What are the three weights?
#
#    ```{dropdown} Answer
#    $e^0 = 1$, $e^0 = 1$ and $e^{\ln 2} = 2$ add up to 4, so the weights are $1/4$, $1/4$ and $1/2$
#    (printed below).
#    ```
#
# 2. Adding the same number $c$ to every score: does it change the softmax weights?
#
#    ```{dropdown} Answer
#    No. Every $e^{s_j + c}$ is $e^{c} e^{s_j}$, and the common factor $e^c$ cancels between the top and
#    the bottom of the fraction. (The library uses this: it subtracts the largest score before
#    exponentiating, so that no exponential overflows.)
#    ```
#
# 3. A page shows a trained model's loss, and on your laptop its last digit comes out different. Is
#    something wrong?
#
#    ```{dropdown} Answer
#    Not by itself: a loss after training is a produced number (it carries the mark: the dotted underline, or † in print), and
#    its last digits depend on the machine. What must hold is the page's assert about it (for example
#    "the loss is below the target"); if that assert passed, the claim held on your machine.
#    ```

# %% tags=["hide-cell"]
q1 = softmax(np.array([0.0, 0.0, np.log(2)]))
print("Q1: weights of the scores 0, 0, ln 2:", np.round(q1, 4))
shifted = softmax(np.array(scores) + 5.0)
print("Q2: scores + 5 give the same weights:", np.round(shifted, 4))
assert np.allclose(q1, [0.25, 0.25, 0.5], atol=1e-12)
assert np.allclose(shifted, weights, atol=1e-12)

# %% [markdown]
# ## Reproducibility
#
# The environment this page ran in (the full report is in
# [Appendix A](../partA_appendix/A_notation_and_environment.ipynb)).

# %% tags=["hide-cell", "nbval-ignore-output"]
# nbval-ignore-output: the environment report (what this machine has installed)
from nextword.booktools.check_env import run_checks

results = run_checks()
print(f"{len(results)} packages checked: " + ", ".join(sorted({r.status for r in results})))

# %% tags=["hide-cell"]
assert not [r for r in results if r.status == "FAIL"], "a required package is missing: see Appendix A"
print("all required packages import")
