# %% [markdown]
# # 2.2 Next-token prediction and the KL objective
#
# **The question.** A language model is trained only to predict the next token from the tokens
# before it. Why does that make it a good model of *whole texts* — and what quantity is training
# actually pushing down?
#
# A large language model that writes one token at a time is pre-trained on one loss: $-\log$ of the
# probability it gave to the token that actually came next, added up (or averaged) over the
# positions of the training texts — the next-token {term}`cross-entropy`. This page shows where that loss comes from. Measure how far
# the model's distribution over whole texts is from the data's with the
# {term}`Kullback–Leibler divergence`; because both distributions are products of next-token
# probabilities, the divergence splits into one term per position, and the only part training can
# change is exactly the next-token cross-entropy. A bonus of the split: a small total forces every
# position's error to be small.
#
# ```{admonition} Learning goals
# :class: tip
# After this page you can
# - compute the probability of a short text as a product of next-token probabilities, and the KL
#   divergence between two small distributions, by hand;
# - show that the KL divergence between whole-text distributions is the sum over positions of
#   expected next-token KL divergences, and equals the summed cross-entropy loss minus a constant;
# - explain why the training objective, with every position of every training text used at once,
#   is an unbiased estimate, and what sharing the texts changes (the variance).
# ```
#
# **Builds on:** [2.1 Tokenisation](01_tokenisation_bpe.ipynb) (a text is a sequence of tokens from
# a finite vocabulary) · [6.3 Causal masking](../part1_chapter6/6_3_causal_masking.ipynb) (a model
# trained on whole sentences, every position predicting the next token; losses in {term}`nats`; the
# {term}`entropy rate` as the lowest expected loss per token any predictor can reach) · conditional probability,
# expectations, variance and covariance, logarithms. **Reading time:** about 35 minutes.
#
# ```{admonition} Symbols on this page
# :class: note
# | symbol | meaning | shape |
# |---|---|---|
# | $\mathcal V$, $\lvert\mathcal V\rvert$ | the vocabulary (a finite set of tokens) and its size | set, integer |
# | $A$, $B$ | the two tokens of the tiny example (numbered 0 and 1 in code) | tokens |
# | $f$, $f_t$, $f_{1:t}$ | a text; its token at position $t$; its first $t$ tokens | tokens |
# | $T$ | the length of the texts (the number of positions) | integer |
# | $t$, $m$ | positions, $1,\dots,T$ ($t$ when summed over, $m$ for one chosen position) | integers |
# | $\mathbf p$, $\mathbf p_{1:T}$ | the data's distribution over texts (of $T$ tokens) | probabilities |
# | $\mathbf p_t(\cdot\mid f_{1:t-1})$ | the data's next-token distribution at position $t$: the law of the token $f_t$ given the $t-1$ before it (the subscript is the position predicted; Chapter 6 files the same prediction under the last position read, $P(w[t+1]\mid w[1..t])$ at position $t$) | $(\lvert\mathcal V\rvert,)$ |
# | $\pi$, $\pi_t(\cdot\mid f_{1:t-1};\theta)$ | the model's distribution over texts; its next-token distribution | as for $\mathbf p$ |
# | $\theta$ | all of the model's parameters | vector |
# | $\phi$, $\varphi$, $\vartheta$ | the embedding map of [2.1](01_tokenisation_bpe.ipynb) and its table; the network's other parameters, $\theta=(\vartheta,\varphi)$ | |
# | $\mathbf q_m$ | the network's next-token distribution, as a function of the embedded prefix (3.4) | $(\lvert\mathcal V\rvert,)$ |
# | $D_{\mathrm{KL}}(\mathbf p\Vert\pi)$ | the Kullback–Leibler divergence from $\mathbf p$ to $\pi$ | number (nats) |
# | $J(\theta)$ | the training objective: $D_{\mathrm{KL}}(\mathbf p_{1:T}\Vert\pi_{1:T}(\cdot;\theta))$ | number |
# | $\mathcal L(\theta)$ | the summed next-token cross-entropy, (4.3a) | number |
# | $a$, $c_{f_1}$ / $\hat a$, $\hat c_{f_1}$ | in the sympy check, the data's / the model's probability of token 1 first, and of token 1 second after the first token $f_1$ (0 or 1) | numbers |
# | $N$ | the number of sample texts in a data set | integer |
# | $\mathbf p^N_{1:t}$ | the {term}`empirical measure` of the first $t$ tokens of the $N$ sample texts (weight $1/N$ on each; the paper's, before (4.5)) | probabilities |
# | $Y_t$, $Y_{t'}$ | the loss $-\log\pi_t(f_t\mid f_{1:t-1})$ at position $t$ of a random text | number |
# ```
#
# ```{admonition} In the paper's notation
# :class: note
# The paper writes the vocabulary in bold, $\mathbf V$ (the book: $\mathcal V$), and a general
# divergence as $\mathcal D$. Its $\pi$ — kept here — is the model's distribution, not the number $\pi$.
# It writes the length of the texts as $L$ and a position as $\ell$; here they are $T$ and $t$, as
# in Chapter 6 (the book keeps $L$ and $\ell$ for the number and the index of layers). Quoted
# formulas keep the paper's equation numbers but are written in the book's letters.
# ```
#
# *Source: Baptista, Stuart, Tran, "Large Language Models: A Mathematical Formulation", §3
# (Eqs. 3.1–3.4, Remark 3.1) and §4.1–4.2 (Eqs. 4.1–4.5, Optimisation Problem 4.4, Remarks 4.5–4.7),
# and the claim about (4.5) in §10.*

# %%
import os

import matplotlib.pyplot as plt
import numpy as np
import sympy as sp
from IPython.display import Math, display

from nextword.booktools.display import produced
from nextword.booktools.plotting import use_book_style
from nextword.booktools.schematics.formulation import draw_kl_gap
from nextword.data import markov_source
from nextword.decoding import NGramLM
from nextword.theory.formulation import (
    kl_decomposition, kl_divergence, markov_next_probs, position_losses, sequence_distribution,
    shared_prefix_estimate,
)

use_book_style()
rng = np.random.default_rng(0)

# %% [markdown]
# The simulation at the end repeats a small random experiment `REPS` times.

# %% tags=["parameters"]
FULL = os.environ.get("FULL", "0") == "1"  # more Monte Carlo repetitions; same checks
REPS = 8000 if FULL else 2000

# %% [markdown]
# ## A tiny example by hand
#
# Texts of two tokens over the vocabulary $\{A, B\}$. The data (the "true" distribution of texts,
# written $\mathbf p$) picks the first token fairly, then usually repeats it:
# $\mathbf p(A)=\mathbf p(B)=0.5$; $\mathbf p(A\mid A)=0.9$, $\mathbf p(A\mid B)=0.2$. The model
# $\pi$ gets the first token slightly wrong, $\pi(A)=0.6$, and ignores the context for the second:
# $\pi(A\mid\cdot)=0.5$.
#
# **Step 1: a text's probability is a product of next-token probabilities** (the paper's (3.1) for
# the data — (3.2) for its first $t$ tokens — and (3.3) for the model; {term}`autoregressive` factorisation). For the text $AA$:
# $\mathbf p(AA)=\mathbf p(A)\,\mathbf p(A\mid A)=0.5\times0.9=0.45$ and
# $\pi(AA)=0.6\times0.5=0.3$.

# %%
tokens = ["A", "B"]
p_first = {"A": 0.5, "B": 0.5}
p_second = {"A": {"A": 0.9, "B": 0.1}, "B": {"A": 0.2, "B": 0.8}}  # p_second[first][second]
pi_first = {"A": 0.6, "B": 0.4}
pi_second = {"A": {"A": 0.5, "B": 0.5}, "B": {"A": 0.5, "B": 0.5}}  # ignores the first token

texts = [first + second for first in tokens for second in tokens]
p_text = {t: p_first[t[0]] * p_second[t[0]][t[1]] for t in texts}
pi_text = {t: pi_first[t[0]] * pi_second[t[0]][t[1]] for t in texts}
for t in texts:
    print(f"text {t}: p = {p_text[t]:.2f}, pi = {pi_text[t]:.2f}")
assert abs(sum(p_text.values()) - 1) < 1e-12 and abs(sum(pi_text.values()) - 1) < 1e-12

# %% [markdown]
# **Step 2: the gap between the two distributions.** The Kullback–Leibler divergence (the paper's
# (4.1)) averages, over texts drawn from the data, the log of how much more likely the data makes a
# text than the model does:
#
# $$D_{\mathrm{KL}}(\mathbf p\,\Vert\,\pi)=\sum_{f}\mathbf p(f)\log\frac{\mathbf p(f)}{\pi(f)}.$$
#
# Some terms are negative (where the model gives *more* probability than the data), but the sum is
# never negative, and it is 0 only when $\pi=\mathbf p$.

# %%
joint_kl = 0.0
for t in texts:
    term = p_text[t] * np.log(p_text[t] / pi_text[t])
    joint_kl += term
    print(f"text {t}: p log(p/pi) = {term:+.4f}")
print(f"KL(p || pi) over whole texts = {joint_kl:.4f} nats")
print(f"the model makes AB {pi_text['AB'] / p_text['AB']:.1f} times too likely")
assert np.isclose(joint_kl, kl_divergence(list(p_text.values()), list(pi_text.values())))
assert np.isclose(pi_text["AB"] / p_text["AB"], 6.0)

# %%
fig, ax = plt.subplots(figsize=(6, 3.6))
draw_kl_gap(list(p_text.values()), list(pi_text.values()), texts, model_symbol="π", outcome_name="text $f$",
            ax=ax)
plt.show()

# %% [markdown]
# **Figure 2.2.1.** The data's distribution over the four texts (grey bars) and the model's (blue
# bars). Under each text, its term $\mathbf p\log(\mathbf p/\pi)$ of the KL divergence: positive
# where the model gives the text too little probability, negative where it gives too much (the
# label is shaded red for a positive term, blue for a negative one, deeper for a larger size); the
# title adds them up. Look at $AB$: it
# is the model's worst mistake (six times too likely), yet the largest terms are the likely texts
# $AA$ and $BB$ that it makes too rare — the data's own probabilities weight the terms.
#
# **Step 3: the same number, position by position.** Position 1: how far $\pi(\cdot)$ is from
# $\mathbf p(\cdot)$. Position 2: for each first token, how far $\pi(\cdot\mid\text{first})$ is from
# $\mathbf p(\cdot\mid\text{first})$, averaged with the data's weights of the first token.

# %%
def kl(p, q):
    """KL divergence between two distributions given as dicts over the same tokens."""
    tokens = list(p)
    return kl_divergence([p[x] for x in tokens], [q[x] for x in tokens])


position_1 = kl(p_first, pi_first)
position_2 = sum(p_first[first] * kl(p_second[first], pi_second[first]) for first in tokens)
print(f"position 1: KL = {position_1:.4f}")
print(f"position 2: expected KL = {position_2:.4f}  "
      f"(after A: {kl(p_second['A'], pi_second['A']):.4f}, after B: "
      f"{kl(p_second['B'], pi_second['B']):.4f})")
print(f"sum = {position_1 + position_2:.4f} = KL over whole texts {joint_kl:.4f}")
assert abs(position_1 + position_2 - joint_kl) < 1e-12

# %% [markdown]
# The two positions add up exactly to the whole-text divergence, and they show *where* the model is
# wrong: almost all of the gap is at position 2, the price of ignoring the context.
#
# **Step 4: what training can change.** Split the log of a ratio into two logs:
# $\sum\mathbf p\log(\mathbf p/\pi)=\sum\mathbf p\,(-\log\pi)-\sum\mathbf p\,(-\log\mathbf p)$. The
# first sum is the cross-entropy of the model on data texts. Because $-\log\pi(f)$ of a text is the
# sum of its next-token losses, $-\log\pi(f_1)-\log\pi(f_2\mid f_1)$, the cross-entropy is the
# *expected total* next-token loss: the sum over the two positions of the average loss at that
# position (an average over positions would be half of it). The second sum is the {term}`entropy` of
# the data, which no model changes. So lowering the cross-entropy lowers the KL divergence by
# exactly the same amount.

# %%
cross_entropy = sum(p_text[t] * -np.log(pi_text[t]) for t in texts)
data_entropy = sum(p_text[t] * -np.log(p_text[t]) for t in texts)
loss_at_1 = sum(p_text[t] * -np.log(pi_first[t[0]]) for t in texts)  # average loss, position 1
loss_at_2 = sum(p_text[t] * -np.log(pi_second[t[0]][t[1]]) for t in texts)  # position 2
print(f"average next-token loss: position 1 {loss_at_1:.4f}, position 2 {loss_at_2:.4f}; "
      f"sum {loss_at_1 + loss_at_2:.4f}")
print(f"cross-entropy {cross_entropy:.4f} - data entropy {data_entropy:.4f} "
      f"= {cross_entropy - data_entropy:.4f} = KL")
assert abs(cross_entropy - (loss_at_1 + loss_at_2)) < 1e-12  # the cross-entropy is the summed loss
assert abs(cross_entropy - data_entropy - joint_kl) < 1e-12

# %% [markdown]
# The library computes all of these terms, for any length, by listing every text
# (`kl_decomposition`; tokens are numbered from 0, $A=0$, $B=1$):

# %%
def tiny_data(prefix):
    """p(next | prefix) of the tiny example, as a vector over (A, B)."""
    if len(prefix) == 0:
        return np.array([0.5, 0.5])
    return np.array([0.9, 0.1]) if prefix[-1] == 0 else np.array([0.2, 0.8])


def tiny_model(prefix):
    """pi(next | prefix) of the tiny example."""
    return np.array([0.6, 0.4]) if len(prefix) == 0 else np.array([0.5, 0.5])


tiny = kl_decomposition(tiny_data, tiny_model, 2, 2)
print("per position:", np.round(tiny.per_position, 4), " joint:", round(tiny.joint, 4))
assert np.allclose(tiny.per_position, [position_1, position_2], atol=1e-12)

# %% [markdown]
# ## The KL objective splits by position (4.2a–d, 4.4b), symbolically
#
# The paper's training problem (Optimisation Problem 4.4) is to choose the model's parameters
# $\theta$ to minimise $J(\theta)=D_{\mathrm{KL}}(\mathbf p_{1:T}\Vert\pi_{1:T}(\cdot;\theta))$, the
# gap between the data's and the model's distributions over texts of $T$ tokens. Its derivation from
# (4.2a) is three steps: the log of a product is a sum of logs, (4.2b); a term about position $t$
# only needs the first $t$ tokens, (4.2c); and the data's own log-probabilities do not depend on
# $\theta$, (4.2d). (Remarks 4.2 and 4.3, printed just before the problem, are about where real
# training text comes from, not about this derivation; see [Checking the paper](#checking-the-paper).)
# Sympy checks it for $T=2$ binary tokens (numbered 0 and 1) with every probability a free
# symbol: the data picks token 1 first with probability $a$, and token 1 second, after a first token
# $f_1$, with probability $c_{f_1}$ (`c0`, `c1` in the code); the model's probabilities are $\hat a$ and $\hat c_{f_1}$.

# %%
a, c0, c1, a_hat, c0_hat, c1_hat = sp.symbols("a c_0 c_1 ahat chat_0 chat_1", positive=True)
p1 = {0: 1 - a, 1: a}
p2 = {(0, 0): 1 - c0, (0, 1): c0, (1, 0): 1 - c1, (1, 1): c1}  # p(f2 | f1) keyed by (f1, f2)
q1 = {0: 1 - a_hat, 1: a_hat}
q2 = {(0, 0): 1 - c0_hat, (0, 1): c0_hat, (1, 0): 1 - c1_hat, (1, 1): c1_hat}
pairs = [(x, y) for x in (0, 1) for y in (0, 1)]
# (4.2a): the joint KL over the four texts
J_joint = sum(p1[x] * p2[x, y] * sp.log(p1[x] * p2[x, y] / (q1[x] * q2[x, y])) for x, y in pairs)
kl_pos1 = sum(p1[x] * sp.log(p1[x] / q1[x]) for x in (0, 1))
kl_pos2 = sum(p1[x] * sum(p2[x, y] * sp.log(p2[x, y] / q2[x, y]) for y in (0, 1))
              for x in (0, 1))  # (4.4b), position 2
difference = sp.simplify(sp.expand_log(J_joint - kl_pos1 - kl_pos2, force=True))
display(Math(r"J - \Big(D_{\mathrm{KL}}\text{ at position 1}"
             r" + \mathbb E_{f_1} D_{\mathrm{KL}}\text{ at position 2}\Big) = " + sp.latex(difference)))
assert difference == 0

# %% [markdown]
# That is (4.2b)–(4.4b). The second identity, (4.2d)/(4.3a): the joint KL is a constant (minus the
# data's entropy) plus the cross-entropy $\mathcal L(\theta)$, the only part that depends on the
# model.

# %%
theta_free = sp.expand_log(sum(p1[x] * p2[x, y] * sp.log(p1[x] * p2[x, y]) for x, y in pairs),
                           force=True)
cross_entropy_sym = -sp.expand_log(
    sum(p1[x] * p2[x, y] * (sp.log(q1[x]) + sp.log(q2[x, y])) for x, y in pairs), force=True)
rest = sp.simplify(sp.expand_log(J_joint, force=True) - theta_free - cross_entropy_sym)
display(Math(r"J - \big(\text{const} + \mathcal L(\theta)\big) = " + sp.latex(rest)))
assert rest == 0

# %% [markdown]
# In general, for texts of $T$ tokens,
#
# $$J(\theta)=\sum_{t=1}^{T}\mathbb E_{f_{1:t-1}\sim\mathbf p}\,
# D_{\mathrm{KL}}\big(\mathbf p_t(\cdot\mid f_{1:t-1})\,\Vert\,
# \pi_t(\cdot\mid f_{1:t-1};\theta)\big)
# =\text{const}\;\underbrace{-\sum_{t=1}^{T}\mathbb E_{f_{1:t}\sim\mathbf p}
# \log\pi_t(f_t\mid f_{1:t-1};\theta)}_{\mathcal L(\theta),\ \text{the cross-entropy}}.$$
#
# Every term of the first sum is $\ge 0$, so (Remark 4.6) the whole-text divergence bounds the
# expected next-token divergence at *every* position $m$: driving $J$ down controls the model's
# next-token errors everywhere. The paper writes the model as $\pi_m(f_m\mid
# f_{1:m-1};\theta)=\mathbf q_m(f_m\mid\phi\circ f_{1:m-1};\vartheta)$ (3.4): a map from the
# embedded prefix ([2.1](01_tokenisation_bpe.ipynb)) to a distribution over the vocabulary, with
# $\theta=(\vartheta,\varphi)$ the network's and the embedding's parameters.
#
# ## A source whose law we know (3.1), and a model to score
#
# To check these identities on more than two tokens we need a data distribution we know exactly.
# The data source is a random order-2 Markov chain on $|\mathcal V|=3$ tokens (each token depends on
# the two before it), started from its stationary law (the distribution of pairs the chain settles
# into, so that it holds at every position), so $\mathbf p_{1:T}$ is known. The model
# $\pi$ is a bigram count model (it looks at one previous token) fitted to 20 short samples, so it
# is wrong in two ways: too short a context, and too little data. `sequence_distribution` builds
# the distribution of all texts of $T$ tokens from the next-token probabilities (3.1); we check it
# sums to one and matches the frequencies of texts drawn from the source.

# %%
V, T = 3, 6
source = markov_source(V, 2, rng, concentration=0.7)
p_next = markov_next_probs(source)
model = NGramLM(V, order=2, k=1.0).fit([source.sample(40, rng) for _ in range(20)])
joint_p, seqs = sequence_distribution(p_next, V, T)
joint_q, _ = sequence_distribution(model.next_probs, V, T)
print(f"{V}^{T} = {len(seqs)} sequences; sum p = {joint_p.sum():.12f}, "
      f"sum pi = {joint_q.sum():.12f}")
assert abs(joint_p.sum() - 1) < 1e-12
assert abs(joint_q.sum() - 1) < 1e-12

# %%
draws = np.array([source.sample(T, rng) for _ in range(20000)])
freq = np.bincount(np.ravel_multi_index(draws.T, (V,) * T), minlength=V**T) / len(draws)
tv = 0.5 * np.abs(freq - joint_p).sum()
print(f"TV(empirical frequencies of 20000 sampled sequences, (3.1)) = {produced(tv, '.3f')}")
assert tv < 0.08

# %% [markdown]
# The {term}`total variation distance` between the two is small: what (3.1) computes is what the
# source produces. (Remark 3.1 takes the data's law to be all the text there is; a chain we wrote
# down is what makes exact checks possible.)
#
# ## The decomposition, numerically (4.2a–d, 4.4b, Remark 4.6)
#
# `kl_decomposition` returns the joint KL (4.2a), the expected next-token KL at each position
# (4.4b) (its inner expectation written out is (4.4a)), the cross-entropy terms of (4.3a) (in the
# network's notation, (4.3b)) and the entropy terms (the constant of 4.2d), all by
# listing the $3^6=729$ texts. The identities of the tiny example hold to round-off, and the joint KL
# bounds every position's term (Remark 4.6).

# %%
dec = kl_decomposition(p_next, model.next_probs, V, T)
direct = kl_divergence(joint_p, joint_q)
print(f"joint KL (4.2a), by enumeration of p and pi : {direct:.6f}")
print(f"sum over positions of E KL (4.4b)           : {dec.per_position.sum():.6f}")
print("position m                 :", "  ".join(f"{m:7d}" for m in range(1, T + 1)))
print("E KL(p_m || pi_m)          :", "  ".join(f"{x:7.4f}" for x in dec.per_position))
print("cross-entropy term of (4.3a):", "  ".join(f"{x:7.4f}" for x in dec.cross_entropy))
print("entropy term (constant)    :", "  ".join(f"{x:7.4f}" for x in dec.entropy))
assert np.isclose(direct, dec.joint, rtol=1e-12)
assert np.isclose(dec.per_position.sum(), direct, rtol=1e-10)
assert np.allclose(dec.per_position, dec.cross_entropy - dec.entropy, atol=1e-12)
assert np.all(direct >= dec.per_position)  # Remark 4.6: J bounds every position's term

# %% [markdown]
# Beyond the source's context (positions $m>2$) the entropy term is the same at every position: it
# is the source's entropy rate, the floor of any model's expected loss per token.

# %%
print(f"entropy rate of the source (nextword.data.synthetic): {source.entropy_rate():.4f} nats")
assert np.allclose(dec.entropy[2:], source.entropy_rate(), atol=1e-12)

# %% [markdown]
# Remark 4.5: if each position had its own free model, the best choice for each term would be the
# data's next-token distribution itself, and every term would vanish. A model whose context covers
# the source's (a trigram count model, which looks at the two previous tokens), fitted on plenty of
# data (400 texts of 100 tokens; its first two positions are learned from the 400 text starts
# only), brings every term close to zero, while
# the bigram model cannot go below the KL caused by its missing context, whatever its data.

# %%
assert np.allclose(kl_decomposition(p_next, p_next, V, T).per_position, 0.0, atol=1e-12)
big = [source.sample(100, rng) for _ in range(400)]  # 40k tokens, 400 sequence starts
trigram = NGramLM(V, order=3, k=0.5).fit(big)
bigram_big = NGramLM(V, order=2, k=0.5).fit(big)
dec3 = kl_decomposition(p_next, trigram.next_probs, V, T)
dec2 = kl_decomposition(p_next, bigram_big.next_probs, V, T)
print(f"joint KL, order-2-context model, 40k tokens: {dec3.joint:.4f}")
print(f"joint KL, order-1-context model, 40k tokens: {dec2.joint:.4f}")
assert dec3.joint < 0.1 * dec2.joint
# what Figure 2.2.2 shows: positions 1-2 are within a bigram's reach (small with enough data);
# from position 3 on its terms stay at one level that 50 times more data barely moves,
# while the trigram's are all far below it
print("positions 3-6, bigram 800 tokens:", np.round(dec.per_position[2:], 4),
      " bigram 40k:", np.round(dec2.per_position[2:], 4), " trigram 40k:", np.round(dec3.per_position[2:], 4))
assert np.all(dec2.per_position[:2] < 0.2 * dec2.per_position[2:].min())
assert np.ptp(dec2.per_position[2:]) < 0.05 * dec2.per_position[2:].min()
assert dec2.per_position[2:].min() > 0.8 * dec.per_position[2:].min()
assert np.all(dec3.per_position < 0.1 * dec2.per_position[2:].min())  # Figure 2.2.2: trigram close to zero

# %%
fig, ax = plt.subplots()
positions = np.arange(1, T + 1)
models = [("bigram, 800 tokens", dec), ("bigram, 40k tokens", dec2), ("trigram, 40k tokens", dec3)]
for offset, (name, d) in zip([-0.27, 0.0, 0.27], models):
    ax.bar(positions + offset, d.per_position, 0.27, label=f"{name}: J = {d.joint:.3f}")
ax.set_xlabel("position m")
ax.set_ylabel(r"$\mathbb{E}_{f_{1:m-1}}\, D_{\mathrm{KL}}(\mathbf{p}_m \Vert \pi_m)$")
ax.set_ylim(0, 1.4 * max(d.per_position.max() for _, d in models))
ax.legend(loc="upper left")
plt.show()

# %% [markdown]
# **Figure 2.2.2.** The whole-text KL divergence $J$ split into its next-token terms (4.4b) for
# three models of the same order-2 source (the legend gives each model's $J$). Look at positions 3
# to 6: the two bigram models' bars stand at the same height — the cost of the missing second token
# of context, which 50 times more data does not remove — while the trigram's bars are close to
# zero at every position. Positions 1 (no context) and 2 (one token of context) are within a
# bigram's reach, and its bars there are small.
#
# ## Estimating the objective from data: shared prefixes (4.5, Remark 4.7)
#
# In practice $\mathbf p$ is unknown; we have $N$ independent sample texts (Data Assumption 4.1). The
# population objective
# $\mathcal L(\theta)=\sum_t \mathbb E[-\log\pi_t]$ can be estimated in two ways:
#
# * **independently**: for each $t$ draw $N$ fresh texts of length $t$ and average the
#   position-$t$ loss ($N T(T+1)/2$ tokens), or
# * **with shared prefixes**, as in (4.5), what every training loop does: draw $N$ texts of length
#   $T$ and use every position of each ($NT$ tokens).
#
# An estimator is {term}`unbiased <unbiased estimator>` if its average over many data sets is the
# quantity it estimates. Both are (the paper's closing section calls the shared-prefix estimate
# biased; [checked below](#checking-the-paper)): each term of the shared-prefix sum has the right expectation,
# whatever the correlation between the terms of one text. What sharing changes is the variance,
# $\mathrm{Var}_{\mathrm{shared}}=\tfrac1N\mathrm{Var}(\sum_t Y_t)$ against
# $\mathrm{Var}_{\mathrm{indep}}=\tfrac1N\sum_t\mathrm{Var}(Y_t)$, where $Y_t$ is the loss at
# position $t$; the difference is $\tfrac2N\sum_{t<t'}\mathrm{Cov}(Y_t,Y_{t'})$. We
# compute both variances exactly by listing the texts, then simulate.

# %%
Y = position_losses(seqs, model.next_probs, V)  # (V**T, T): -log pi_t(f_t | f_<t) per sequence
L_true = float(joint_p @ Y.sum(axis=1))
assert np.isclose(L_true, dec.objective, rtol=1e-12)
mean_t = joint_p @ Y
cov = (Y - mean_t).T @ ((Y - mean_t) * joint_p[:, None])  # (T, T) exact covariance of the Y_t
N = 50
var_shared_exact = cov.sum() / N
var_indep_exact = np.trace(cov) / N
print(f"L(theta) exactly: {L_true:.4f}; exact variances at N = {N}: "
      f"shared {var_shared_exact:.5f}, independent {var_indep_exact:.5f}")

# %%
shared, indep = np.empty(REPS), np.empty(REPS)
for r in range(REPS):
    idx = rng.choice(len(seqs), size=N, p=joint_p)
    shared[r] = Y[idx].sum(axis=1).mean()
    # independent draws for every t (the length-t prefix of a fresh full sequence has law p_{1:t})
    idx_t = rng.choice(len(seqs), size=(N, T), p=joint_p)
    indep[r] = Y[idx_t, np.arange(T)].mean(axis=0).sum()
assert np.isclose(shared_prefix_estimate(seqs[idx], model.next_probs, V), shared[-1], rtol=1e-12)

for name, est, v in [("shared prefixes (4.5)", shared, var_shared_exact),
                     ("independent per t", indep, var_indep_exact)]:
    se = est.std(ddof=1) / np.sqrt(REPS)
    print(f"{name:22s}: mean {produced(est.mean(), '.4f')} (+- {produced(se, '.4f')}); "
          f"variance {produced(est.var(ddof=1), '.5f')}, exact {v:.5f}")
    assert abs(est.mean() - L_true) < 4 * se  # unbiased
    assert abs(est.var(ddof=1) / v - 1) < 0.15

# %%
fig, ax = plt.subplots()
bins = np.linspace(min(shared.min(), indep.min()), max(shared.max(), indep.max()), 40)
ax.hist(shared, bins, histtype="step", lw=1.5, label=f"shared prefixes, N={N}")
ax.hist(indep, bins, histtype="step", lw=1.5, label=f"independent per position, N={N}")
ax.axvline(L_true, color="k", lw=1, label=r"$\mathcal{L}(\theta)$")
ax.set_xlabel("estimate of the objective (nats)")
ax.set_ylabel("data sets")
ax.set_ylim(0, 1.35 * ax.get_ylim()[1])
ax.legend(loc="upper left", fontsize=8)
plt.show()

# %% [markdown]
# **Figure 2.2.3.** The two estimators of Remark 4.7, each computed on `REPS` independent data sets
# of $N$ texts: a histogram of their values (shared prefixes blue, independent draws vermilion), and
# the exact objective $\mathcal L(\theta)$ as a black line. Look at the centres: both histograms sit
# on the line (no bias). Their spreads differ by the
# cross-position covariance term; for this source and model the position losses are positively
# correlated, so sharing prefixes costs some variance per text — but it uses $(T+1)/2$ times
# fewer tokens. At an equal token budget the shared-prefix estimator has variance
# $\mathrm{Var}(\sum_t Y_t)/(N(T+1)/2)$:

# %%
offdiag = cov.sum() - np.trace(cov)
print(f"sum of cross-position covariances: {offdiag:+.4f}  "
      f"(tokens used: shared {N * T}, independent {N * T * (T + 1) // 2})")
budget_factor = (T + 1) / 2
print(f"tokens per sequence: shared prefix {T}, independent draws {T * (T + 1) // 2} "
      f"({budget_factor:g} times more)")
print(f"equal-budget variance: shared {var_shared_exact / budget_factor:.5f} "
      f"vs independent {var_indep_exact:.5f}")
assert offdiag > 0  # positively correlated position losses: sharing costs variance per text
assert var_shared_exact > var_indep_exact
assert var_shared_exact / budget_factor < var_indep_exact

# %% [markdown]
# ## Key takeaways
#
# - A model of whole texts is a product of next-token probabilities (3.1)/(3.3), so a model only
#   ever has to predict the next token.
# - The KL divergence between the data's and the model's distributions over texts splits exactly
#   into one expected next-token KL per position (4.4b).
# - The KL divergence is the summed next-token cross-entropy minus the data's entropy, a constant:
#   training on the cross-entropy loss minimises the gap between the two distributions (dividing
#   the loss by the number of tokens, as training code does, changes its scale, not its minimiser).
# - Because every position's term is non-negative, a small total bounds the next-token error at
#   every position (Remark 4.6); a model with too short a context keeps a floor that more data does
#   not remove.
# - Using every position of every training text ((4.5), divided by the number $N$ of texts) gives an
#   unbiased estimate of the objective; sharing texts across positions changes only its variance,
#   and saves tokens.
#
# ## Check your understanding
#
# 1. In the tiny example, change the model to $\pi(A\mid A)=0.9$, $\pi(A\mid B)=0.2$ (it now uses
#    the context) and keep $\pi(A)=0.6$. What is the KL divergence over whole texts now?
#
#    ```{dropdown} Answer
#    Position 2 now matches the data exactly, so its term is 0 and only position 1 remains:
#    $0.5\log(0.5/0.6)+0.5\log(0.5/0.4)\approx0.0204$ nats, the position-1 term printed above.
#    ```
#
# 2. Why can training minimise the cross-entropy instead of the KL divergence, when it cannot
#    compute the data's probabilities $\mathbf p$?
#
#    ```{dropdown} Answer
#    The two differ by the data's entropy, which does not depend on the model, so they have the
#    same minimiser. And the cross-entropy needs only $\log\pi$ at texts *drawn from* the data —
#    samples, which we have — never the value of $\mathbf p$ itself.
#    ```
#
# 3. A model's total KL on texts of 6 tokens is 0.05 nats. What can you say about its expected
#    next-token KL at position 4?
#
#    ```{dropdown} Answer
#    It is at most 0.05 nats: the total is the sum of the six non-negative position terms, so no
#    single term can exceed it (Remark 4.6).
#    ```

# %% tags=["hide-cell"]
# The numbers the answers state. Question 1: the model now uses the context at position 2.
print(f"pi(A) = {pi_first['A']}, pi(B) = {pi_first['B']}; p(A) = p(B) = {p_first['A']}")
pi_second_q1 = {"A": {"A": 0.9, "B": 0.1}, "B": {"A": 0.2, "B": 0.8}}
kl_q1 = sum(p_text[t] * np.log(p_text[t] / (pi_first[t[0]] * pi_second_q1[t[0]][t[1]])) for t in texts)
print(f"Q1: KL over whole texts = {kl_q1:.4f} nats = position-1 term {position_1:.4f}")
assert abs(kl_q1 - position_1) < 1e-12 and round(kl_q1, 4) == 0.0204
# Question 3: the total is a sum of non-negative position terms, so it bounds each of them.
assert np.all(dec.per_position >= 0) and np.all(dec.per_position <= dec.joint)

# %% [markdown]
# ## Checking the paper
#
# **§10 on (4.5): "biased"?** The paper's closing section says the population objective is
# typically "approximated in a biased way, using correlated data samples", meaning the
# shared-prefix objective (4.5). (Remark 4.7 itself only contrasts it with the unbiased
# independent estimator.) The simulation of the lesson says otherwise: over `REPS` data sets the
# shared-prefix mean is within four standard errors of the exact objective, like the independent
# one (asserted in the simulation cell); the correlation changes only the variance, and for this
# source and model, at an equal token budget, the shared estimator is the *better* one (not a
# general rule: when the position losses are strongly correlated, sharing can cost more variance
# than the saved tokens buy back). Recorded in `book/ERRATA.md` (row "§10 …
# and Eq. (4.5)"), with the numbers the simulation cell prints.
#
# **(4.5) has no $1/N$.** The paper writes (4.5) as a sum over the $N$ texts without the $1/N$ of
# the empirical measure $\mathbf p^N_{1:t}$ it defines just before. The estimators above divide
# by $N$; the factor does not move the minimiser. The library's `shared_prefix_estimate` is the
# averaged form; one line checks it against the simulation's last data set (the `assert` after the
# loop above).
#
# **Remarks 4.2 and 4.3, the training data.** They describe where real training text comes from
# and how its curation breaks the independence of the samples (Data Assumption 4.1); they are about
# practice, and this page does not check them. The corpus sizes Remark 4.2 quotes are checked
# against the works it cites on the part's [second-pass page](checking_the_paper.ipynb): its stock
# of human-generated web text is not the stock that the cited work expects training to use up in the
# years the remark quotes (it may be that work's figure for the whole web, in the wrong role).
#
# **Remark 4.6's bound, position by position.** The bound $J\ge$ each expected next-token KL was
# asserted on the order-2 source; on the tiny example it reads:

# %% tags=["hide-cell"]
print(f"tiny example: J = {tiny.joint:.4f} >= position terms {np.round(tiny.per_position, 4)}")
assert np.all(tiny.joint >= tiny.per_position)

# %% [markdown]
# ## Reproducibility
#
# Everything on this page is exact (enumeration of all texts, sympy) except the sampling check of
# (3.1), the texts the n-gram models are fitted to, and the Monte Carlo study of Remark 4.7 (a random
# experiment repeated many times), which use the seeded generator `rng` (seed 0) and
# `REPS` repetitions. The order-2 source itself is drawn from the same generator, so the exact
# values (the joint KL, the position terms, the variances) are those of this one source; `FULL=1` raises `REPS` from 2000 to 8000, with the same checks. Library:
# `nextword.theory.formulation` (`kl_decomposition`, `sequence_distribution`, `position_losses`,
# `shared_prefix_estimate`), `nextword.decoding.NGramLM`, `nextword.data.markov_source`.

# %% tags=["hide-cell"]
print(f"FULL = {FULL}: REPS = {REPS} Monte Carlo data sets of N = {N} texts of T = {T} tokens")
