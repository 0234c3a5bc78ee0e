# %% [markdown]
# # 2.1 Tokenisation: byte-pair encoding and the embedding φ
#
# **The question.** A language model computes with vectors of numbers, but it is given text. How is
# a text cut into pieces — {term}`tokens <token>` — and how does each piece become a vector?
#
# The answer fixes two numbers every later page depends on. The number of distinct pieces, the
# {term}`vocabulary` size, is the width of the model's last layer: the model must put a probability
# on every piece. The number of pieces in a text, its length in tokens, sets the cost of attention,
# which compares every position with every other. Cut text into single letters and the vocabulary is
# tiny but sequences are long; give every word its own piece and sequences are short but the
# vocabulary is huge. {term}`Byte-pair encoding` (BPE), a method widely used by large language
# models, sits in between, and this page builds it from one rule: *replace the most frequent
# neighbouring pair by a new symbol, and repeat*.
#
# ```{admonition} Learning goals
# :class: tip
# After this page you can
# - run byte-pair encoding by hand on a short string: count neighbouring pairs, merge the most
#   frequent, repeat, and undo the merges to get the text back;
# - explain the trade-off between vocabulary size and sequence length, and read it off a measured
#   curve;
# - compute an embedding lookup as a {term}`one-hot vector` times a matrix, and say why its number
#   of parameters does not depend on the length of the text.
# ```
#
# **Builds on:** [6.2 The attention mechanism](../part1_chapter6/6_2_attention_mechanism.ipynb) (each
# word enters attention as an {term}`embedding`, a vector of numbers; this page says where that
# vector comes from) · counting with Python dictionaries; a matrix times a vector; a derivative as a
# limit of difference quotients. **Reading time:** about 30 minutes.
#
# ```{admonition} Symbols on this page
# :class: note
# | symbol | meaning | shape |
# |---|---|---|
# | $\mathcal V$ | the vocabulary after the merges; $\lvert\mathcal V\rvert$ is its size | set |
# | $\mathcal V_0$, $\mathcal V_1$ | the initial alphabet (letters or bytes); the vocabulary after one merge | sets |
# | $a$, $b$, $c$, $d$, $e$ | the symbols of the tiny example's alphabet and its merges (letters, not numbers: the paper's own letters of Example 2.1, kept; not the bias $b$, width $d$ or embedding $e$ of the book's notation table, [Appendix A](../partA_appendix/A_notation_and_environment.ipynb)) | symbols |
# | $f$, $f_m$ | a text (over the initial alphabet $f^{(0)}$, after one merge $f^{(1)}$, …); its token at position $m$ | tokens |
# | $m$ | a position in a text | integer |
# | $T$ | the length of a text in tokens | integer |
# | $\kappa$, $\gamma$ | scale and exponent of the fitted power law $T\approx\kappa\lvert\mathcal V\rvert^{-\gamma}$ | numbers |
# | $\lambda_{\text{att}}$, $\lambda_{\text{out}}$ | weights of the attention cost and of the output-layer cost in the toy cost | numbers |
# | $C$ | the toy cost per sequence, smallest at the vocabulary size $\lvert\mathcal V\rvert^*$ | number |
# | $d_e$ | the embedding width | integer |
# | $\phi$ | the embedding map: token $\mapsto$ vector | $\mathcal V\to\mathbb R^{d_e}$ |
# | $v$ | a token of the vocabulary $\mathcal V$ (the paper's letter of Definition 2.6, kept; not Chapter 6's value $v[j]$) | token |
# | $\varphi$, $\varphi_v$ | the embedding table (the paper's layout: one column per token); the column of token $v$ | $(d_e,\lvert\mathcal V\rvert)$, $(d_e,)$ |
# | $E=\varphi^\top$ | the same table as the library stores it, one row per token | $(\lvert\mathcal V\rvert,d_e)$ |
# | $o_v$ | the one-hot vector of token $v$ | $(\lvert\mathcal V\rvert,)$ |
# | $G$ | the gradient of a loss with respect to the embedded text | $(T,d_e)$ |
# ```
#
# ```{admonition} In the paper's notation
# :class: note
# The paper writes the vocabularies in bold, $\mathbf V_0$ and $\mathbf V$; the book writes
# $\mathcal V_0$ and $\mathcal V$. It labels tokens $1,\dots,\lvert\mathbf V\rvert$; the library labels them from 0.
# It writes the length of a text as $M$ and a context window (Example 3.2) as $L$; here both are
# $T$, the book's length of a sequence, as in Chapter 6 (the book keeps $L$ for the number of layers).
# ```
#
# *Source: Baptista, Stuart, Tran, "Large Language Models: A Mathematical Formulation", §2 (its opening paragraph) and §2.1–2.3
# (Examples 2.1–2.3, Remarks 2.4–2.5, Definitions 2.6–2.7, Remarks 2.8–2.9; Example 3.2).*

# %%
import itertools
import os
import re
from collections import Counter

import matplotlib.pyplot as plt
import numpy as np
import sympy as sp
from IPython.display import Math, display

from nextword.booktools.plotting import use_book_style
from nextword.booktools.schematics.formulation import draw_bpe_merge_tree
from nextword.data import load_corpus
from nextword.embedding import TokenEmbedding, embed, embedding_grad, one_hot
from nextword.tokenizers import BPETokenizer, CharTokenizer, learn_bpe

use_book_style()
rng = np.random.default_rng(0)

# %% [markdown]
# How much text the real-text sections learn their merges from (see Reproducibility: `FULL=1`
# uses the whole training split, whose merges compress the held-out text somewhat more; the curves
# keep their shape).

# %% tags=["parameters"]
FULL = os.environ.get("FULL", "0") == "1"
TRAIN_CHARS = None if FULL else 200_000  # characters of tiny Shakespeare used to learn merges
MAX_MERGES = 3840  # vocabulary 256 + 3840 = 4096 at the end of the curve

# %% [markdown]
# ## A tiny example by hand: Example 2.1
#
# A {term}`token` is one piece of text as the model sees it: a letter, part of a word, a whole word.
# The {term}`vocabulary` is the finite set of all tokens the model knows. The paper's first example
# starts from the three-letter alphabet $\mathcal V_0=\{a,b,c\}$ and the text
# $f^{(0)}=abcababc$ (8 symbols). One round of {term}`byte-pair encoding`:
#
# 1. count every pair of neighbouring symbols (overlapping: `abc` has the pairs `ab` and `bc`);
# 2. give the most frequent pair a new name and replace it everywhere, left to right;
# 3. stop when no pair occurs twice (a new token for a pair seen once would shorten the text by one
#    symbol but add one to the vocabulary: nothing is compressed).
#
# With pencil and paper: the pairs of `abcababc` are `ab bc ca ab ba ab bc`, so `ab` occurs 3 times.
# Call it `d`: the text becomes `dcddc`. Its pairs are `dc cd dd dc`, so `dc` occurs twice; call it
# `e`: the text becomes `ede`. Its pairs `ed`, `de` occur once each, so we stop. The same by loop
# (Python counts positions from 0):

# %%
def count_pairs(symbols):
    """How often each neighbouring pair occurs, in order of first appearance."""
    counts = {}
    for position in range(len(symbols) - 1):
        pair = (symbols[position], symbols[position + 1])
        counts[pair] = counts.get(pair, 0) + 1
    return counts


def merge_pair(symbols, pair, new_symbol):
    """Replace every occurrence of `pair` by `new_symbol`, scanning left to right."""
    merged, position = [], 0
    while position < len(symbols):
        if tuple(symbols[position:position + 2]) == pair:
            merged.append(new_symbol)
            position += 2
        else:
            merged.append(symbols[position])
            position += 1
    return merged


# %%
text = list("abcababc")
vocabulary = ["a", "b", "c"]
for new_symbol in ["d", "e", "f"]:
    counts = count_pairs(text)
    best_pair = max(counts, key=counts.get)  # ties: the pair seen first
    shown = {left + right: n for (left, right), n in counts.items()}
    if counts[best_pair] < 2:
        print(f"{''.join(text):9s} pairs {shown}: no pair occurs twice, stop")
        break
    text = merge_pair(text, best_pair, new_symbol)
    vocabulary.append(new_symbol)
    print(f"pairs {shown}: {new_symbol} = {''.join(best_pair)} -> {''.join(text)}")
print("vocabulary V =", vocabulary, f"({len(vocabulary)} symbols), text length {len(text)}")

# %% [markdown]
# The text shrank from 8 symbols to 5 to 3 while the vocabulary grew from 3 to 4 to 5: that is the
# whole trade-off of BPE in miniature. The library's `learn_bpe` does the same and also keeps the
# list of merges and the text after each one (its *trace*):

# %%
result = learn_bpe("abcababc", names="de")
print("merges:", [(left + right, new) for (left, right), new in result.merges])
print("trace:", ["".join(sequence) for sequence in result.trace])
assert ["".join(s) for s in result.trace] == ["abcababc", "dcddc", "ede"]
assert result.vocab == ("a", "b", "c", "d", "e")
assert list(result.vocab) == vocabulary and list(result.sequence) == text  # the loop above agrees

# %% [markdown]
# Every new token is a pair of older ones, so each token of the final text is a small tree whose
# leaves are the original letters. Drawing the trees shows what the encoded text `ede` stands for.

# %%
fig, ax = plt.subplots(figsize=(8, 2.6))
draw_bpe_merge_tree(result, ax=ax)
plt.show()

# %% [markdown]
# **Figure 2.1.1.** Byte-pair encoding of $abcababc$ as trees of pairs. The bottom row is the input,
# one box per letter; each box above joins the two boxes under it, at the level of the merge that
# created it (left: the merges in order). The top box of each tree (orange; all the others are blue),
# read left to right, is the encoded text $ede$; the leaves under each top spell the letters it
# stands for.
#
# Reading the leaves of the trees is decoding: replace each new symbol by its pair until only letters
# are left. No information is lost: encoding is one-to-one (two different texts never get the same
# code), and decoding gives the text back. But it is not a bijection, a one-to-one pairing with
# *all* texts over $\mathcal V$, as the paper calls it: the two-symbol text $ab$ is also a text over
# $\mathcal V$, decodes to the same letters as $d$, and is never what encoding produces (it would
# have merged the pair). Encoding pairs the texts over $\mathcal V_0$ one-to-one with the *encoded*
# texts ([checked below](#checking-the-paper)). Decoding `ede`:

# %%
pair_of = {"d": "ab", "e": "dc"}
decoded = "".join(result.sequence)
while any(symbol in decoded for symbol in pair_of):
    decoded = "".join(pair_of.get(symbol, symbol) for symbol in decoded)
    print("expand one level:", decoded)
assert decoded == "abcababc"

# %% [markdown]
# ## Byte-pair encoding on real text (Example 2.2, Remark 2.4)
#
# Byte-level tokenisers, such as GPT-2's, start from the 256 possible values of a byte (the UTF-8
# encoding of any text is a sequence of bytes, so nothing is ever "unknown") and learn tens of
# thousands of merges from a large web corpus. We learn far fewer, `MAX_MERGES` = 3840 merges, for a
# vocabulary of $256+3840=4096$ tokens, from the first `TRAIN_CHARS` = 200,000 characters of tiny
# Shakespeare. As GPT-2 does, the text is first split into words and punctuation, so that no merge
# crosses a word boundary. The last 10% of the file (`held_out`) is never seen by the merges.

# %%
corpus = load_corpus("shakespeare")
train_text = corpus.train if TRAIN_CHARS is None else corpus.train[:TRAIN_CHARS]
held_out = corpus.val  # the last 10% of the file, never seen by the merges
chars = CharTokenizer.train(corpus.train)
print(f"distinct characters in tiny Shakespeare: {len(set(corpus.train))}; "
      f"CharTokenizer vocabulary {chars.vocab_size} (id 0 = unknown)")

# %%
big = BPETokenizer.train(train_text, 256 + MAX_MERGES, pattern="gpt2")
merges = big.merge_list()
print(f"learned {len(merges)} merges on {len(train_text):,} characters -> |V| = {big.vocab_size}")
print("first 12 merges:", [big.token_bytes(x).decode() for _, _, x in merges[:12]])
assert big.decode(big.encode(held_out)) == held_out  # lossless on unseen text

# %% [markdown]
# The first merges are the frequent pairs of English: " t", "he", and by the ninth merge " the" (a
# space belongs to the word after it). The paper's Remark 2.4 says that after enough merges most
# common words become a single token. We test it on the held-out text: of its 100 most frequent words (with the
# leading space they have mid-sentence), how many are one token?

# %%
word_counts = Counter(w for w in held_out.split() if w.isalpha())
top_words = [w for w, _ in word_counts.most_common(100)]
single = [w for w in top_words if len(big.encode(" " + w)) == 1]
print(f"{len(single)} of the 100 most frequent held-out words are one token "
      f"(|V| = {big.vocab_size}); the others: {[w for w in top_words if w not in single][:10]}")
assert len(single) >= 90

# %% [markdown]
# Why the exceptions? Most are capitalised words that start a line of verse ("And", "That"). There
# they follow a line break, not a space, so the merges did make "And" one token, but " And" with its
# space is rare and was never merged. The test above asked for the form with the space. Count where
# each exception occurs in the held-out text, and its length in tokens with and without the space:

# %%
others = [w for w in top_words if w not in single]
starts_a_line = []
for w in others:
    after_newline = len(re.findall(rf"\n{w}\b", held_out))
    after_space = len(re.findall(rf" {w}\b", held_out))
    in_merge_text = len(re.findall(rf"\b{w}\b", train_text))  # the text the merges were learned from
    bare, spaced = len(big.encode(w)), len(big.encode(" " + w))
    print(f"{w!r:10}: held out, after a line break {after_newline:3d} times, after a space "
          f"{after_space:3d}; in the merge text {in_merge_text:3d} times; tokens: {bare} without "
          f"the space, {spaced} with it")
    if bare == 1:
        starts_a_line.append(w)
        assert after_newline > after_space and spaced > 1  # one token where it occurs: at a line start
    else:
        assert in_merge_text < 10  # too rare in the merge text to be merged
print(f"one token without the space: {starts_a_line}")
assert len(starts_a_line) >= len(others) - 1

# %% [markdown]
# So "And", "That", "As" and "Of" are single tokens where they actually occur, at the start of a
# line; "Signior", a form of address, never occurs in the text the merges were learned from and
# stays split.
#
# ## Vocabulary size against sequence length (Remark 2.5)
#
# Each merge adds one token to the vocabulary and shortens the text. How fast? BPE is greedy, so
# a tokenizer with fewer merges is exactly the first merges of a longer run: one run gives every
# vocabulary size. We encode the held-out text with growing prefixes of the merge list and count its
# tokens.

# %%
n_bytes = len(held_out.encode("utf-8"))
merge_counts = [0, 16, 32, 64, 128, 256, 512, 1024, 2048, MAX_MERGES]
lengths = []
for k in merge_counts:
    prefix_tokenizer = BPETokenizer(merges[:k], pattern="gpt2")
    lengths.append(len(prefix_tokenizer.encode(held_out)))
vocab = np.array([256 + k for k in merge_counts])
lengths = np.array(lengths)
bytes_per_token = n_bytes / lengths
for size, n_tokens, ratio in zip(vocab, lengths, bytes_per_token):
    print(f"|V| = {size:5d}: held-out text = {n_tokens:7d} tokens, {ratio:.3f} bytes/token")
assert lengths[0] == n_bytes  # no merges: one token per byte
assert np.all(np.diff(lengths) < 0)  # Figure 2.1.2: more merges, strictly shorter; bytes per token grows
first_cut = 1 - lengths[5] / lengths[0]  # the first 256 merges (|V| 256 -> 512)
last_cut = 1 - lengths[-1] / lengths[-2]  # the last merges (|V| 2304 -> 4096)
print(f"the first 256 merges shorten the text by {100 * first_cut:.0f}%, "
      f"the last {merge_counts[-1] - merge_counts[-2]} merges by {100 * last_cut:.0f}%")
assert first_cut > 4 * last_cut  # diminishing returns (also with the merges of the whole split)

# %% [markdown]
# Diminishing returns: the first 256 merges cut the length by 45%, the last 1792 (from a vocabulary
# of 2304 to 4096) by 6%. Over the upper part of the curve the length $T$ is close to a power law
# $T(|\mathcal V|)\approx\kappa|\mathcal V|^{-\gamma}$ with a small exponent $\gamma$; we fit $\kappa$
# and $\gamma$ by least squares on the logarithms.

# %%
fit_mask = vocab >= 512
slope, log_a = np.polyfit(np.log(vocab[fit_mask]), np.log(lengths[fit_mask]), 1)
a_fit, b_fit = np.exp(log_a), -slope
print(f"fit over |V| >= 512: T ≈ {a_fit:.4g} |V|^(-{b_fit:.3f})  (kappa = {a_fit:.4g}, gamma = {b_fit:.3f})")
assert 0.1 < b_fit < 0.25  # a small exponent

# %% [markdown]
# **What the trade-off costs, in a toy model.** The paper leaves open where the balance lies. A crude
# cost per sequence, per unit of model width, has two terms: attention compares every pair of the
# $T$ positions (cost $\propto T^2$, Example 3.2), and the output layer scores every one of the
# $|\mathcal V|$ tokens at every position (cost $\propto T|\mathcal V|$; it is the output map of the
# paper's Eq. (5.7), met in [2.4](04_attention_block_set_transformer.ipynb)). With weights
# $\lambda_{\text{att}}$, $\lambda_{\text{out}}$ for the two terms, the toy cost is
# $C(|\mathcal V|)=\lambda_{\text{att}}T^2+\lambda_{\text{out}}T|\mathcal V|$ with
# $T=\kappa|\mathcal V|^{-\gamma}$, and sympy finds where it stops falling:

# %%
V = sp.Symbol(r"\lvert\mathcal{V}\rvert", positive=True)  # the vocabulary size |V|
kappa, gamma = sp.symbols("kappa gamma", positive=True)  # T = kappa |V|^(-gamma)
lam_att, lam_out = sp.symbols("lambda_att lambda_out", positive=True)  # weights of the two costs
length_of_V = kappa * V ** (-gamma)
cost = lam_att * length_of_V**2 + lam_out * length_of_V * V  # per unit of model width
stationary = sp.solve(sp.Eq(sp.diff(cost, V), 0), V)
assert len(stationary) == 1
closed_form = (2 * kappa * gamma * lam_att / ((1 - gamma) * lam_out)) ** (1 / (1 + gamma))
display(Math(r"C = " + sp.latex(sp.powsimp(cost)) + r",\qquad \frac{dC}{d\lvert\mathcal V\rvert}=0"
             r" \text{ at } \lvert\mathcal V\rvert^* = " + sp.latex(closed_form)))

# %% [markdown]
# Two checks of sympy's root against the closed form, at arbitrary values, and that it is a minimum
# (the second derivative is positive when $\gamma<1$):

# %%
for values in ({kappa: 3.0, gamma: 0.2, lam_att: 1.0, lam_out: 2.0},
               {kappa: 50.0, gamma: 0.5, lam_att: 0.3, lam_out: 1.0}):
    v_star = float(stationary[0].subs(values))
    assert abs(v_star - float(closed_form.subs(values))) < 1e-9 * v_star
    assert float(sp.diff(cost, V, 2).subs(values).subs(V, v_star)) > 0  # a minimum (gamma < 1)
print("sympy's root equals the closed form and is a minimum at both test points")

# %% [markdown]
# With the measured $\gamma\approx0.17$ the optimum grows with the length scale $\kappa$ of the text
# and with the weight $\lambda_{\text{att}}$ of attention. The model ignores memory, training-data
# efficiency and what a model can learn, but it makes Remark 2.5 concrete: where the balance lies depends on how much long
# sequences cost against large vocabularies, that is, on the architecture and the task. For a
# 10,000-character text (a few pages) with $\lambda_{\text{att}}=\lambda_{\text{out}}$:

# %%
text_chars = 10_000
scale = text_chars / len(held_out)  # the fit is for the whole held-out text
fitted = {kappa: a_fit * scale, gamma: b_fit, lam_att: 1, lam_out: 1}
V_star = float(stationary[0].subs(fitted))
print(f"toy optimum for a {text_chars}-character text with equal weights: |V|* ≈ {V_star:.0f}")
cost_fn = sp.lambdify(V, cost.subs(fitted))
grid = np.geomspace(256, 65536, 20000)
grid_best = grid[np.argmin(cost_fn(grid))]
assert abs(grid_best - V_star) / V_star < 0.01  # the stationary point is the grid minimum
attention_term, output_term = (lengths * scale) ** 2, lengths * scale * vocab
# Figure 2.1.2: the attention term falls all the way; the output term rises from |V| = 512 on
assert np.all(np.diff(attention_term) < 0) and np.all(np.diff(output_term[fit_mask]) > 0)

# %%
fig, axes = plt.subplots(1, 3, figsize=(14, 4), layout="constrained")
axes[0].plot(vocab, lengths / lengths[0], "o-")
axes[0].plot(vocab[fit_mask], a_fit * vocab[fit_mask] ** (-b_fit) / lengths[0], "k--",
             label=f"power-law fit $\\propto|\\mathcal{{V}}|^{{-{b_fit:.2f}}}$")
axes[0].set_ylabel("tokens / bytes (held-out text)")
axes[0].legend()
axes[1].plot(vocab, bytes_per_token, "o-")
axes[1].set_ylabel("bytes per token")
tokens_per_text = lengths * scale
axes[2].plot(vocab, tokens_per_text**2, "o-", label="attention $\\propto T^2$")
axes[2].plot(vocab, tokens_per_text * vocab, "s-", label="output layer $\\propto T|\\mathcal{V}|$")
axes[2].plot(vocab, tokens_per_text**2 + tokens_per_text * vocab, "k^-", label="sum")
axes[2].axvline(V_star, color="grey", ls=":", label="sympy optimum $|\\mathcal{V}|^*$")
axes[2].set_yscale("log")
axes[2].set_ylabel("toy cost per 10,000 characters")
axes[2].legend(fontsize=8)
for axis in axes:
    axis.set_xscale("log")
    axis.set_xticks([256, 512, 1024, 2048, 4096], ["256", "512", "1024", "2048", "4096"])
    axis.minorticks_off()
    axis.set_xlabel("vocabulary size |V|")
plt.show()

# %% [markdown]
# **Figure 2.1.2.** Remark 2.5 measured on held-out tiny Shakespeare. Left: length in tokens
# relative to raw bytes as the vocabulary grows from 256 to 4096 (nested prefixes of one run's
# merges); the dashed black line is the power-law fit. Middle: the same as bytes per token — see how
# it flattens. Right: the toy cost with equal weights for a 10,000-character text, its attention
# term $T^2$ (blue circles), its output term $T|\mathcal V|$ (vermilion squares) and their sum (black
# triangles); the dotted grey line is the sympy optimum $|\mathcal V|^*$, near the bottom of the sum,
# where the fall of the attention term and the rise of the output term cancel — their rates of
# change balance there, not their sizes. (The output term dips over the first few merges, while the
# text still shortens fast, and rises from then on.)
#
# ## The embedding φ: a lookup is a matrix product (Definitions 2.6–2.7, Remarks 2.8–2.9)
#
# After tokenisation a text is a list of integers, the tokens' labels $1,\dots,|\mathcal V|$
# (Example 2.3 relabels $\{a,b,c,d,e\}$ as $\{1,\dots,5\}$). The model needs vectors. The
# {term}`embedding` $\phi$ gives each token $v$ a learned vector $\varphi_v$ of $d_e$ numbers: the
# columns of one matrix $\varphi\in\mathbb R^{d_e\times|\mathcal V|}$, so $\phi(v)=\varphi_v$. A text
# is embedded token by token: $(\phi\circ f)_m=\phi(f_m)$ for each position $m$.
#
# A {term}`one-hot vector` $o_v$ has a 1 in place $v$ and 0 elsewhere. Multiplying $\varphi$ by
# $o_v$ picks out column $v$, so a lookup is a matrix product, $\phi(v)=\varphi o_v$. With a
# symbolic $2\times3$ matrix:

# %%
phi_sym = sp.Matrix(2, 3, lambda i, j: sp.Symbol(f"varphi_{i + 1}{j + 1}"))
for v in range(3):  # the three tokens (counted from 0 here)
    o_v = sp.Matrix([1 if j == v else 0 for j in range(3)])  # one-hot column
    assert phi_sym * o_v == phi_sym[:, v]
o_2 = sp.Matrix([0, 1, 0])  # the paper's token 2 (counted from 1)
display(Math(sp.latex(phi_sym) + sp.latex(o_2) + "=" + sp.latex(phi_sym * o_2)))

# %% [markdown]
# The library stores the transpose, $E=\varphi^\top$, one row per token (the row-vector convention of
# Chapter 6), and labels tokens from 0. We embed one held-out line and check three things: the lookup
# equals one-hot rows times the table and equals the paper's columns; the table has $d_e|\mathcal V|$
# parameters whatever the length $T$ of the text (Remark 2.8: the same $\varphi$ serves every length);
# and the gradient of a loss with respect to the table is the one-hot matrix transposed times the
# gradient with respect to the vectors, so a token used twice collects the sum of its two gradients.
# Computing it needs no matrix product: add each position's gradient row into the row of the table
# that belongs to that position's token (a *scatter-add*); every other row gets zero.

# %%
d_e = 16
emb = TokenEmbedding(big.vocab_size, d_e, rng=rng, std=0.02)
line = held_out.splitlines()[3]
ids = np.array(big.encode(line))
H = emb(ids)  # (T, d_e): the embedded text, phi o f
print(f"line {line!r}: T = {ids.size} tokens -> embedded text of shape (T, d_e) = {H.shape}")
assert np.array_equal(H, one_hot(ids, big.vocab_size) @ emb.table)
assert np.array_equal(H.T, emb.phi[:, ids])  # (phi o f)_m = varphi_{f_m}, columns
for T in (1, 10, 1000):  # Remark 2.8: one table for every length
    assert embed(emb.table, np.zeros(T, dtype=int)).shape == (T, d_e)
print(f"parameters of phi: d_e * |V| = {emb.num_parameters()} for every sequence length")

# %%
G = rng.standard_normal(H.shape)  # dL/dh for the linear loss L = sum(G * h)
scatter = np.zeros((big.vocab_size, d_e))
for position, token in enumerate(ids):  # the scatter-add: row of G at each position -> its token's row
    scatter[token] += G[position]
grad = embedding_grad(ids, G, big.vocab_size)  # the library's scatter-add
assert np.allclose(grad, scatter) and np.allclose(grad, one_hot(ids, big.vocab_size).T @ G)
unused_rows = np.setdiff1d(np.arange(big.vocab_size), ids)
assert np.all(grad[unused_rows] == 0)
print(f"{len(unused_rows)} of {big.vocab_size} rows get zero gradient from this line")

# %% [markdown]
# The same objects show what learning $\varphi$ this way leaves open. A token that never occurs in
# the training text gets zero gradient through the lookup, so the lookup's gradient never moves its
# row. Only something else would: weight decay (a term of each update that shrinks every weight a
# little towards zero, used or not), or a model that reuses the table as its output layer
# (the output layer scores every token at every position, so its gradient reaches every row). And,
# Remark 2.9's own caveat, nothing in $\phi$ ties synonyms together: a rare
# word split into several tokens is embedded as several vectors, a frequent synonym as one. Learning
# the table is the job of the training objective of [2.2](02_objective_kl.ipynb).

# %% [markdown]
# ## Key takeaways
#
# - Byte-pair encoding builds a vocabulary by one rule: merge the most frequent neighbouring pair into
#   a new token, and repeat; every token is a tree of pairs, so decoding is exact.
# - More merges mean a larger vocabulary and shorter texts, with diminishing returns: on tiny
#   Shakespeare the first 256 merges cut the length by 45%, the last 1792 by 6%.
# - The vocabulary size and the sequence length pull costs in opposite directions (the output layer
#   against attention), so the best size depends on the model and the task (Remark 2.5).
# - The embedding is a table of one learned vector per token; a lookup is a one-hot vector times the
#   table, and the same table serves texts of every length.

# %% [markdown]
# ## Check your understanding
#
# 1. Run BPE by hand on `aaabdaaabac` (stop when no pair occurs twice). Which merges do you make, and
#    what is the final text?
#
#    ```{dropdown} Answer
#    Pairs: `aa` occurs 4 times (overlapping: `aaa` has two), more than any other, so merge `aa` →
#    `Z`, scanning left to right: `ZabdZabac`. Now `Za` and `ab` occur twice each; `Za` is seen first,
#    so `Za` → `Y`: `YbdYbac`. Then `Yb` occurs twice: `Yb` → `X`: `XdXac`. No pair occurs twice:
#    stop. Vocabulary $\{a,b,d,c,Z,Y,X\}$, length $11\to5$. (`learn_bpe("aaabdaaabac", names="ZYX")`
#    confirms it.)
#    ```
#
# 2. Why does the embedding table's number of parameters not depend on the length of the text, and
#    why does that matter?
#
#    ```{dropdown} Answer
#    The same table $\varphi$ is applied to each position separately: position $m$ gets column
#    $\varphi_{f_m}$. So the table has $d_e|\mathcal V|$ numbers whatever $T$ is, and one trained model
#    can read a text of any length (up to what the later layers allow) — Remark 2.8.
#    ```
#
# 3. A word is rare in the training text and is split into three tokens; its synonym is frequent
#    and is one token. Will their embeddings be close?
#
#    ```{dropdown} Answer
#    Nothing makes them close. The rare word enters the model as three vectors (a point of
#    $\mathbb R^{3d_e}$), the frequent one as a single vector (a point of $\mathbb R^{d_e}$), so there
#    is not even one pair of vectors to compare. Nor does training tie them together: each piece's
#    vector is learned from every word the piece occurs in (a piece that is itself rare gets few
#    gradient updates, one that never occurs gets none through the lookup), and nothing in the loss
#    asks the three vectors to say what the synonym's one vector says. This is Remark 2.9's point.
#    ```

# %% tags=["hide-cell"]
# The numbers the answers state. Question 1: BPE by hand on aaabdaaabac, with the loop of the tiny example.
q1_text = list("aaabdaaabac")
q1_counts = count_pairs(q1_text)
print("Q1: pair counts", {left + right: n for (left, right), n in q1_counts.items()})
assert q1_counts[("a", "a")] == 4 and max(q1_counts.values()) == 4
q1 = learn_bpe("aaabdaaabac", names="ZYX")
print("Q1: merges", [(left + right, new) for (left, right), new in q1.merges], "trace",
      ["".join(step) for step in q1.trace], f"length {len(q1.trace[0])} -> {len(q1.sequence)}")
assert ["".join(step) for step in q1.trace] == ["aaabdaaabac", "ZabdZabac", "YbdYbac", "XdXac"]
assert [(left + right, new) for (left, right), new in q1.merges] == [("aa", "Z"), ("Za", "Y"), ("Yb", "X")]
assert len(q1.trace[0]) == 11 and len(q1.sequence) == 5

# %% [markdown]
# ## Checking the paper
#
# **Example 2.1, stopped early, and Example 2.3.** The paper notes BPE may stop after one level,
# giving $\mathcal V_1=\{a,b,c,d\}$ and $f^{(1)}=dcddc$; Example 2.3 relabels $\mathcal V$ as
# $\{1,\dots,5\}$.

# %% tags=["hide-cell"]
early = learn_bpe("abcababc", 1, names="d")
assert early.vocab == ("a", "b", "c", "d")
assert "".join(early.sequence) == "dcddc"
labels = {s: i + 1 for i, s in enumerate(result.vocab)}
print("stopped after one merge:", "".join(early.sequence), early.vocab)
print("relabelled (Example 2.3):", [labels[s] for s in result.sequence])

# %% [markdown]
# **§2's bijection.** The opening of §2 says there is a bijection between sequences over
# $\mathcal V_0$ and sequences over $\mathcal V$. Encoding (the merges applied in order, as in the
# tiny example) is one-to-one, but it is not onto: a text over $\mathcal V$ is a code only if
# decoding it and encoding again gives it back, and a text that contains a pair encoding would have
# merged ($ab$, $dc$) fails that. With Example 2.1's merges:

# %% tags=["hide-cell"]
def encode_tiny(text):
    """Example 2.1's encoding of a text over {a, b, c}: its merges applied in order."""
    symbols = list(text)
    for pair, new_symbol in result.merges:
        symbols = merge_pair(symbols, pair, new_symbol)
    return "".join(symbols)


def decode_tiny(code):
    """Replace each new symbol by its pair until only letters are left."""
    while any(symbol in code for symbol in pair_of):
        code = "".join(pair_of.get(symbol, symbol) for symbol in code)
    return code


print(f"decode('ab') = {decode_tiny('ab')!r} = decode('d') = {decode_tiny('d')!r}; "
      f"encode('ab') = {encode_tiny('ab')!r}")
assert decode_tiny("ab") == decode_tiny("d") == "ab" and encode_tiny("ab") == "d"
texts_0 = ["".join(t) for size in range(1, 9) for t in itertools.product("abc", repeat=size)]
codes = {encode_tiny(t) for t in texts_0}
assert len(codes) == len(texts_0)  # one-to-one: different texts, different codes
assert all(decode_tiny(encode_tiny(t)) == t for t in texts_0)  # decoding gives the text back
texts_V = ["".join(t) for size in range(1, 4) for t in itertools.product("abcde", repeat=size)]
not_codes = [x for x in texts_V if encode_tiny(decode_tiny(x)) != x]
print(f"encoding is one-to-one on all {len(texts_0):,} texts over {{a,b,c}} of 1 to 8 letters; "
      f"of the {len(texts_V)} texts over {{a,b,c,d,e}} of 1 to 3 symbols, {len(not_codes)} are no "
      f"text's code, e.g. {not_codes[:4]}")
assert not_codes == [x for x in texts_V if "ab" in x or "dc" in x]  # exactly those with a mergeable pair

# %% [markdown]
# **Example 2.2's orders of magnitude.** The example quotes $|\mathcal V_0|=\mathcal O(10^2)$ (tiny
# Shakespeare has 65 characters, above), $|\mathcal V|=\mathcal O(10^4)$ for web-scale corpora (ours:
# 4096), and texts of several paragraphs as $T=\mathcal O(10^2)$ tokens. Taking the held-out
# speeches longer than 200 characters as paragraphs (the first 50 of them; many speeches are a single
# short line, too short to count as one), the median one is about a hundred tokens, so several are a
# few hundred: $\mathcal O(10^2)$ holds.

# %% tags=["hide-cell"]
paragraphs = [p for p in held_out.split("\n\n") if len(p) > 200][:50]
toks_per_par = np.array([len(big.encode(p)) for p in paragraphs])
chars_per_par = np.array([len(p) for p in paragraphs])
print(f"speeches longer than 200 characters: median {np.median(chars_per_par):.0f} characters "
      f"-> median {np.median(toks_per_par):.0f} tokens")
assert 50 <= np.median(toks_per_par) <= 300  # a paragraph is O(10^2) tokens

# %% [markdown]
# **BPE's merges are nested.** The curve above took prefixes of one merge list; retraining with 500
# merges gives exactly the first 500.

# %% tags=["hide-cell"]
small = BPETokenizer.train(train_text, 256 + 500, pattern="gpt2")
assert small.merge_list() == merges[:500]  # nesting: the prefix *is* the smaller tokenizer
print("the 500-merge tokenizer is the first 500 merges of the 3840-merge one")

# %% [markdown]
# **Example 3.2, the context windows in text.** The example says LLaMA-2's $T=4096$ tokens are "up to
# several pages" and CLIP's $T=77$ "up to several paragraphs". From the measured curve: words per
# token at each tokenizer's size, times $T$. LLaMA-2's vocabulary (32,000) and CLIP's (49,408) are
# beyond our largest tokenizer, so those two rows extrapolate the power-law fit. Pages and paragraphs
# use the common conventions of 500 and 100 words; tiny Shakespeare is verse, not web text, so the
# numbers are indicative. A bound needs no extrapolation: our tokenizer, like CLIP's and GPT-2's,
# first splits the text into words and punctuation and never merges across them, so a text has at
# least as many tokens as words, and a window of $T$ tokens holds at most $T$ words.

# %% tags=["hide-cell"]
n_words = len(held_out.split())
print(f"held-out text: {n_words:,} words, {n_bytes:,} bytes")
windows = ((f"our BPE, |V| = {vocab[-1]}", vocab[-1], 4096),
           ("LLaMA-2 (|V| = 32,000)", 32_000, 4096),
           ("CLIP text (|V| = 49,408)", 49_408, 77))
for name, model_vocab, context in windows:
    # tokens for the held-out text: measured at our size, extrapolated beyond it
    n_tokens = lengths[-1] if model_vocab == vocab[-1] else a_fit * model_vocab ** (-b_fit)
    words_in_window = context * n_words / n_tokens
    print(f"{name:26s} T = {context:4d}: about {words_in_window:,.0f} words "
          f"= {words_in_window / 500:.1f} pages = {words_in_window / 100:.1f} paragraphs")
words_4096 = 4096 * n_words / (a_fit * 32_000 ** (-b_fit))
words_77 = 77 * n_words / (a_fit * 49_408 ** (-b_fit))
assert 2 < words_4096 / 500 < 20  # LLaMA-2: "several pages" holds
toks_held_out = len(big.encode(held_out))
words_per_speech = np.array([len(par.split()) for par in paragraphs])
assert toks_held_out >= n_words and np.all(toks_per_par >= words_per_speech)  # at least a token per word
print(f"tokens >= words: held-out text {toks_held_out:,} >= {n_words:,}, and in each of the "
      f"{len(paragraphs)} speeches; so 77 tokens hold at most 77 words = {77 / 100:.2f} paragraphs")
assert words_77 < 77 < 100  # CLIP: less than one 100-word paragraph, not "several"

# %% [markdown]
# A 4096-token window holds several pages of this text, as the example says. CLIP's 77 tokens hold
# about 57 words of this verse by the extrapolation, and at most 77 words of any text by the bound:
# less than one 100-word paragraph, not "up to several paragraphs" (row "Example 3.2, CLIP's
# context window" of `book/ERRATA.md`). The quadratic attention cost of the example is the $T^2$
# term of the toy cost.
#
# **The embedding's gradient by finite difference.** The scatter-add gradient above, against a
# difference quotient on one entry of the table:

# %% tags=["hide-cell"]
eps, (v0, j0) = 1e-6, (int(ids[0]), 3)
bumped = emb.table.copy()
bumped[v0, j0] += eps
fd = (np.sum(G * embed(bumped, ids)) - np.sum(G * H)) / eps
assert abs(fd - grad[v0, j0]) < 1e-6
print(f"dL/dE[{v0},{j0}]: scatter-add {grad[v0, j0]:.6f}, finite difference {fd:.6f}")

# %% [markdown]
# ## Reproducibility
#
# The merges are learned on the first `TRAIN_CHARS` = 200,000 characters of tiny Shakespeare's
# training split (well under a second); `FULL=1` learns them on the whole million-character split. The
# cell below learns those merges too: they shorten the held-out text somewhat more (at
# $|\mathcal V|=4096$ by a further 9%; the last 1792 merges cut 10% instead of 6%, and the fitted
# exponent is 0.203 instead of 0.172), and the curves keep their shape — diminishing returns, a small
# exponent. The lesson's percentages are those of the default run. Nothing on this page is random
# except the embedding table and the test gradient $G$, drawn from the generator seeded with 0.
# Library: `nextword.tokenizers` (`learn_bpe`, `BPETokenizer`), `nextword.embedding`.

# %% tags=["hide-cell"]
print(f"FULL = {FULL}: merges learned on {len(train_text):,} of {len(corpus.train):,} "
      f"training characters; held-out text {len(held_out):,} characters")
# what FULL=1 changes: the merges learned on the whole training split, the same curve measured again
full_merges = BPETokenizer.train(corpus.train, 256 + MAX_MERGES, pattern="gpt2").merge_list()
full_lengths = np.array([len(BPETokenizer(full_merges[:k], pattern="gpt2").encode(held_out))
                         for k in merge_counts])
full_gamma = -np.polyfit(np.log(vocab[fit_mask]), np.log(full_lengths[fit_mask]), 1)[0]
full_first, full_last = 1 - full_lengths[5] / full_lengths[0], 1 - full_lengths[-1] / full_lengths[-2]
print(f"merges of the whole split: held-out text at |V| = 4096 {full_lengths[-1]:,} tokens against "
      f"{lengths[-1]:,} ({100 * (1 - full_lengths[-1] / lengths[-1]):.0f}% fewer); gamma {full_gamma:.3f} "
      f"against {b_fit:.3f}; the first 256 merges cut {100 * full_first:.0f}%, the last 1792 "
      f"{100 * full_last:.0f}% (merges of the first {len(train_text):,} characters: "
      f"{100 * first_cut:.0f}% and {100 * last_cut:.0f}%)")
assert np.all(np.diff(full_lengths) < 0) and 0.1 < full_gamma < 0.25 and full_first > 4 * full_last
