# %% [markdown]
# # 2.1 Tokenisation: byte-pair encoding and the embedding φ
#
# *Source: Baptista, Stuart, Tran, "Large Language Models: A Mathematical Formulation", §2.1–2.3
# (Examples 2.1–2.3, Remarks 2.4–2.5, Definitions 2.6–2.7).*
#
# Text starts as a sequence over a small alphabet $\mathbf V_0$ (characters or bytes). Byte-pair
# encoding (BPE) builds a larger vocabulary $\mathbf V$ by repeatedly naming the most frequent
# adjacent pair, so the same text becomes a shorter sequence over more symbols. The embedding
# $\phi$ then sends each token to a column of a matrix $\varphi\in\mathbb R^{d_e\times|\mathbf V|}$.
# This notebook replays Example 2.1 symbol by symbol, trains a byte-level BPE on tiny Shakespeare
# (Example 2.2, Remark 2.4), measures the vocabulary-size versus sequence-length trade-off that
# Remark 2.5 leaves open, and checks that the lookup $\phi$ is a one-hot matrix product.
#
# Library: `nextword.tokenizers` (`learn_bpe`, `BPETokenizer`), `nextword.embedding`.
# Default run: BPE trained on the first 200k characters of the training split (about 1 s); set
# `FULL=1` to train on the whole 1M-character split (the curve barely moves).

# %% tags=["parameters"]
import os

FULL = os.environ.get("FULL", "0") == "1"
TRAIN_CHARS = None if FULL else 200_000  # characters of tiny Shakespeare used to learn merges
MAX_MERGES = 3840  # vocabulary 256 + 3840 = 4096 at the end of the curve

# %%
from collections import Counter

import matplotlib.pyplot as plt
import numpy as np
import sympy as sp

from nextword.data import load_corpus
from nextword.embedding import TokenEmbedding, embed, embedding_grad, one_hot
from nextword.booktools.plotting import use_book_style
from nextword.tokenizers import BPETokenizer, CharTokenizer, learn_bpe

use_book_style()
rng = np.random.default_rng(0)

# %% [markdown]
# ## 1. Example 2.1 step by step
#
# $\mathbf V_0=\{a,b,c\}$ and $f^{(0)}=abcababc$. `learn_bpe` counts overlapping adjacent pairs,
# merges the most frequent one everywhere (left to right, ties to the pair seen first), and stops
# when no pair occurs twice. We print the pair counts it sees at each level, the merge it makes,
# and the trace $f^{(0)}\to f^{(1)}\to f^{(2)}$.

# %%
result = learn_bpe("abcababc", names="de")


def pair_counts(seq):
    """Overlapping adjacent-pair counts in order of first occurrence (what learn_bpe compares)."""
    return dict(Counter(zip(seq, seq[1:])))


for level, seq in enumerate(result.trace):
    counts = {"".join(p): c for p, c in pair_counts(seq).items()}
    merge = result.merges[level] if level < len(result.merges) else None
    action = f"merge {''.join(merge[0])} -> {merge[1]}" if merge else "no pair occurs twice: stop"
    print(f"f^({level}) = {''.join(seq):9s} pair counts {counts}  =>  {action}")
print("final vocabulary V =", "{" + ", ".join(result.vocab) + "}")

assert ["".join(s) for s in result.trace] == ["abcababc", "dcddc", "ede"]
assert result.vocab == ("a", "b", "c", "d", "e")
# stopping early after one level gives V_1 = {a, b, c, d} and f^(1) = dcddc, as the example says
early = learn_bpe("abcababc", 1, names="d")
assert early.vocab == ("a", "b", "c", "d") and "".join(early.sequence) == "dcddc"
# the encoding is a bijection: expanding the new symbols recovers f^(0)
expand = {"d": "ab", "e": "dc"}
text = "".join(result.sequence)
while any(s in text for s in expand):
    text = "".join(expand.get(s, s) for s in text)
assert text == "abcababc"
# Example 2.3: relabel V as {1, ..., 5}
labels = {s: i + 1 for i, s in enumerate(result.vocab)}
print("relabelled (Example 2.3):", [labels[s] for s in result.sequence])

# %% [markdown]
# Every step of Example 2.1 survives: $ab$ occurs three times, so $d=ab$ and $f^{(1)}=dcddc$; then
# $dc$ occurs twice, so $e=dc$ and $f^{(2)}=ede$, where every pair is unique. The trace shows the
# trade-off in miniature: length $8\to5\to3$ while $|\mathbf V|$ grows $3\to4\to5$.
#
# ## 2. Example 2.2 on real text: byte-level BPE on tiny Shakespeare
#
# In practice $\mathbf V_0$ is the 256 byte values of UTF-8 (so any text can be encoded) and BPE
# adds merges on top. Tiny Shakespeare uses only 65 distinct characters, which is the
# $|\mathbf V_0|=\mathcal O(10^2)$ of Example 2.2. We learn `MAX_MERGES` merges once, splitting the
# text GPT-2-style into words and punctuation first so that merges never straddle a word boundary.

# %%
corpus = load_corpus("shakespeare")
train_text = corpus.train if TRAIN_CHARS is None else corpus.train[:TRAIN_CHARS]
held_out = corpus.val  # the last 10% of the file, never seen by the merges
chars = CharTokenizer.train(corpus.train)
print(f"distinct characters in tiny Shakespeare: {len(set(corpus.train))}; "
      f"CharTokenizer vocabulary {chars.vocab_size} (id 0 = unknown)")

big = BPETokenizer.train(train_text, 256 + MAX_MERGES, pattern="gpt2")
merges = big.merge_list()
print(f"learned {len(merges)} merges on {len(train_text):,} characters -> |V| = {big.vocab_size}")
print("first 12 merges:", [big.token_bytes(x).decode() for _, _, x in merges[:12]])
assert big.decode(big.encode(held_out)) == held_out  # lossless on unseen text

# %% [markdown]
# The first merges are the frequent English bigrams (" t", "he", " the", ...). Remark 2.4 says that,
# recursed deeply, BPE gives the common words a token of their own. We check it on held-out text:
# among the 100 most frequent words (with their leading space, as they appear mid-sentence), how
# many are a single token?

# %%
words = Counter(w for w in held_out.split() if w.isalpha())
top = [w for w, _ in words.most_common(100)]
single = [w for w in top if len(big.encode(" " + w)) == 1]
print(f"{len(single)} of the 100 most frequent held-out words are one token "
      f"(|V| = {big.vocab_size}); the others: {[w for w in top if w not in single][:10]}")
assert len(single) >= 90

paragraphs = [p for p in held_out.split("\n\n") if len(p) > 200][:50]
toks_per_par = np.array([len(big.encode(p)) for p in paragraphs])
chars_per_par = np.array([len(p) for p in paragraphs])
print(f"speeches longer than 200 characters: median {np.median(chars_per_par):.0f} characters "
      f"-> median {np.median(toks_per_par):.0f} tokens")

# %% [markdown]
# So at $|\mathbf V|=4096=\mathcal O(10^{3.6})$ the frequent words are single tokens, and a speech of
# a few hundred characters is of order $10^2$ tokens — the orders of magnitude of Example 2.2
# (which quotes $|\mathbf V|=\mathcal O(10^4)$ for web-scale corpora).
#
# ## 3. Remark 2.5: vocabulary size versus sequence length, measured
#
# BPE training is greedy and nested: the tokenizer with $K$ merges is the first $K$ merges of the
# one with more. So one training run gives the whole curve — we take prefixes of the merge list
# (and check nesting once by retraining with fewer merges). For each size we encode the held-out
# text and record its length in tokens, i.e. bytes per token.

# %%
small = BPETokenizer.train(train_text, 256 + 500, pattern="gpt2")
assert small.merge_list() == merges[:500]  # nesting: the prefix *is* the smaller tokenizer

n_bytes = len(held_out.encode("utf-8"))
sizes = [0, 16, 32, 64, 128, 256, 512, 1024, 2048, MAX_MERGES]
lengths = []
for k in sizes:
    tok = BPETokenizer(merges[:k], pattern="gpt2")
    lengths.append(len(tok.encode(held_out)))
vocab = np.array([256 + k for k in sizes])
lengths = np.array(lengths)
bpt = n_bytes / lengths
for v, n, b in zip(vocab, lengths, bpt):
    print(f"|V| = {v:5d}: held-out text = {n:7d} tokens, {b:.3f} bytes/token")
assert lengths[0] == n_bytes and np.all(np.diff(lengths) < 0)  # more merges, strictly shorter

# %% [markdown]
# Length falls fast for the first few hundred merges and slowly after: going from 256 to 512
# symbols removes far more tokens than going from 2048 to 4096. Over the upper part of the curve the
# sequence length is close to a power law $M(|\mathbf V|)\approx a|\mathbf V|^{-b}$, which we fit by
# least squares in log–log coordinates.
#
# What does the trade-off cost? A crude per-sequence cost model for one layer of width $d$ is
# $C(|\mathbf V|)=c_1 M^2 d + c_2 M|\mathbf V| d$: attention is quadratic in the length $M$
# (Example 3.2), the output layer $B$ of (5.7) is linear in $M$ and in $|\mathbf V|$. Sympy finds the
# stationary point of $C$ under the power law.

# %%
fit_mask = vocab >= 512
b_fit, log_a = np.polyfit(np.log(vocab[fit_mask]), np.log(lengths[fit_mask]), 1)
a_fit, b_fit = np.exp(log_a), -b_fit
print(f"fit over |V| >= 512: M ≈ {a_fit:.4g} |V|^(-{b_fit:.3f})")

Vs, a_s, b_s, c1, c2 = sp.symbols("V a b c_1 c_2", positive=True)
M_of_V = a_s * Vs ** (-b_s)
cost = c1 * M_of_V**2 + c2 * M_of_V * Vs  # per unit width d
stationary = sp.solve(sp.Eq(sp.diff(cost, Vs), 0), Vs)
assert len(stationary) == 1
closed_form = (2 * a_s * b_s * c1 / ((1 - b_s) * c2)) ** (1 / (1 + b_s))
print("dC/dV = 0 at V* =", closed_form)
for vals in ({a_s: 3.0, b_s: 0.2, c1: 1.0, c2: 2.0}, {a_s: 50.0, b_s: 0.5, c1: 0.3, c2: 1.0}):
    v_star = float(stationary[0].subs(vals))
    assert abs(v_star - float(closed_form.subs(vals))) < 1e-9 * v_star
    assert float(sp.diff(cost, Vs, 2).subs(vals).subs(Vs, v_star)) > 0  # a minimum (b < 1)

# %% [markdown]
# $V^*=\big(\tfrac{2ab\,c_1}{(1-b)c_2}\big)^{1/(1+b)}$: with $b<1$ (measured: $b\approx0.1$–$0.2$) the
# optimum grows with the text's length scale $a$ and with the weight $c_1$ of attention. This is
# only a toy model (it ignores memory, training-data efficiency and what the model can learn), but
# it makes Remark 2.5's point concrete: where the balance lies depends on the cost of long
# sequences versus large vocabularies, i.e. on the architecture and the task.
# We evaluate it for a 10,000-character text (a few pages, the context lengths of Example 3.2),
# giving the two terms equal weight.

# %%
text_chars = 10_000
scale = text_chars / len(held_out)  # the fit is for the whole held-out text
V_star = float(stationary[0].subs({a_s: a_fit * scale, b_s: b_fit, c1: 1, c2: 1}))
print(f"toy optimum for a {text_chars}-character text with c1 = c2: |V|* ≈ {V_star:.0f}")
cost_fn = sp.lambdify(Vs, cost.subs({a_s: a_fit * scale, b_s: b_fit, c1: 1, c2: 1}))
grid = np.geomspace(256, 65536, 20000)
assert abs(grid[np.argmin(cost_fn(grid))] - V_star) / V_star < 0.01  # the stationary point is the grid minimum

# %%
fig, axes = plt.subplots(1, 3, figsize=(14, 4), layout="constrained")
axes[0].plot(vocab, lengths / lengths[0], "o-")
axes[0].plot(vocab[fit_mask], a_fit * vocab[fit_mask] ** (-b_fit) / lengths[0], "k--", label=f"fit $\\propto|V|^{{-{b_fit:.2f}}}$")
axes[0].set_xscale("log")
axes[0].set_xlabel("vocabulary size |V|")
axes[0].set_ylabel("tokens / bytes (held-out text)")
axes[0].legend()
axes[1].plot(vocab, bpt, "o-")
axes[1].set_xscale("log")
axes[1].set_xlabel("vocabulary size |V|")
axes[1].set_ylabel("bytes per token")
M_text = lengths * scale
axes[2].plot(vocab, M_text**2, "o-", label="attention $\\propto M^2$")
axes[2].plot(vocab, M_text * vocab, "s-", label="output layer $\\propto M|V|$")
axes[2].plot(vocab, M_text**2 + M_text * vocab, "k^-", label="sum")
axes[2].axvline(V_star, color="grey", ls=":", label="sympy optimum $V^*$")
axes[2].set_xscale("log")
axes[2].set_yscale("log")
axes[2].set_xlabel("vocabulary size |V|")
axes[2].set_ylabel("cost per 10,000 characters (units of d)")
axes[2].legend(fontsize=8)
plt.show()

# %% [markdown]
# **Figure 1.1.** Remark 2.5 measured on held-out tiny Shakespeare. Left: sequence length relative
# to raw bytes as the byte-level BPE vocabulary grows from 256 to 4096 (one training run, nested
# prefixes of its merges); the dashed line is the power-law fit. Middle: the same as bytes per token.
# Right: the toy cost model $M^2+M|\mathbf V|$ for a 10,000-character text; the dotted line is the
# sympy optimum $V^*$.
#
# **Example 3.2, the context windows in text.** The example says LLaMA-2's $L=4096$ tokens are "up to
# several pages" and CLIP's $L=77$ "up to several paragraphs". With the measured curve we can say how
# much of *this* text each window holds: words per token at the tokenizer's size, from the power-law
# fit (LLaMA-2's vocabulary has 32,000 entries and CLIP's 49,408 — beyond our largest tokenizer, so
# those two rows are extrapolations of the fit), times $L$. Pages and paragraphs use the common
# conventions of 500 and 100 words; tiny Shakespeare is verse, not web text, so the numbers are indicative.

# %%
n_words = len(held_out.split())
print(f"held-out text: {n_words:,} words, {n_bytes:,} bytes")
for name, V_model, L_ctx in ((f"our BPE, |V| = {vocab[-1]}", vocab[-1], 4096), ("LLaMA-2 (|V| = 32,000)", 32_000, 4096),
                              ("CLIP text (|V| = 49,408)", 49_408, 77)):
    tokens_text = lengths[-1] if V_model == vocab[-1] else a_fit * V_model ** (-b_fit)   # tokens for the held-out text
    words_in_window = L_ctx * n_words / tokens_text
    print(f"{name:26s} L = {L_ctx:4d}: about {words_in_window:,.0f} words = {words_in_window / 500:.1f} pages "
          f"= {words_in_window / 100:.1f} paragraphs")
words_4096 = 4096 * n_words / (a_fit * 32_000 ** (-b_fit))
words_77 = 77 * n_words / (a_fit * 49_408 ** (-b_fit))
assert 2 < words_4096 / 500 < 20 and 0.3 < words_77 / 100 < 3     # "several pages", "up to several paragraphs"

# %% [markdown]
# On this text a 4096-token window holds several pages (printed above), as the example says, and
# CLIP's 77 tokens hold well under one 100-word paragraph of verse — "up to several paragraphs" is
# generous at this vocabulary size. The quadratic attention cost of the example is the $M^2$ term of the cost model above.
#
# ## 4. Definitions 2.6–2.7: the embedding φ
#
# $\varphi=(\varphi_1,\dots,\varphi_{|\mathbf V|})\in\mathbb R^{d_e\times|\mathbf V|}$ has the token
# vectors as columns and $\phi(v)=\varphi_v$; on a sequence, $(\phi\circ f)_m=\phi(f_m)$. Writing
# $e_v$ for the $v$-th standard basis vector, $\phi(v)=\varphi e_v$: a lookup is a matrix product
# with a one-hot vector. Sympy first, on a $2\times3$ symbolic $\varphi$:

# %%
phi_sym = sp.Matrix(2, 3, lambda i, j: sp.Symbol(f"varphi_{i + 1}{j + 1}"))
for v in range(3):
    e_v = sp.Matrix([1 if j == v else 0 for j in range(3)])
    assert phi_sym * e_v == phi_sym[:, v]
print("varphi * e_2 =", list(phi_sym * sp.Matrix([0, 1, 0])), "= column 2 of varphi")

# %% [markdown]
# `nextword.embedding` stores the transpose $E=\varphi^\top$ (rows are tokens, Chapter 6's row-vector
# convention) with 0-based ids. We embed a held-out line and check: lookup equals one-hot times
# table, equals the paper's column form; the parameter count does not depend on the sequence length
# (Remark 2.8); and the gradient of a loss with respect to the table is the one-hot transpose times
# the output gradient (a token used twice gets the sum).

# %%
d_e = 16
emb = TokenEmbedding(big.vocab_size, d_e, rng=rng, std=0.02)
line = held_out.splitlines()[3]
ids = np.array(big.encode(line))
H = emb(ids)  # (M, d_e): h_{1:M} = phi o f
print(f"line {line!r}: M = {ids.size} tokens -> h has shape {H.shape}")
assert np.array_equal(H, one_hot(ids, big.vocab_size) @ emb.table)
assert np.array_equal(H.T, emb.phi[:, ids])  # (phi o f)_m = varphi_{f_m}, columns
for M in (1, 10, 1000):  # Remark 2.8: one table for every length
    assert embed(emb.table, np.zeros(M, dtype=int)).shape == (M, d_e)
print(f"parameters of phi: d_e * |V| = {emb.num_parameters()} for every sequence length")

G = rng.standard_normal(H.shape)  # dL/dh for the linear loss L = sum(G * h)
grad = embedding_grad(ids, G, big.vocab_size)
assert np.allclose(grad, one_hot(ids, big.vocab_size).T @ G)
eps, (v0, j0) = 1e-6, (int(ids[0]), 3)
bumped = emb.table.copy()
bumped[v0, j0] += eps
fd = (np.sum(G * embed(bumped, ids)) - np.sum(G * H)) / eps
assert abs(fd - grad[v0, j0]) < 1e-6
print(f"dL/dE[{v0},{j0}]: scatter-add {grad[v0, j0]:.6f}, finite difference {fd:.6f}")

# %% [markdown]
# Remark 2.9's caveat is visible in the same objects: the rows of $E$ for tokens that never occur
# in the training data receive zero gradient, and a rare word split into several tokens is embedded
# as several vectors — nothing in $\phi$ ties synonyms together. Training the table is the job of the
# objective of §4 (notebook 2.2).
