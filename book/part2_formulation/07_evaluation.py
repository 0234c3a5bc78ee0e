# %% [markdown]
# # 2.7 Evaluating language models: scoring by probabilities, by samples, by answers
#
# **The question.** A language model is a probability distribution over text. How do we measure
# how close it is to real language — and what can we measure when we can read the model's
# probabilities, when we can only draw samples from it, or when a question has one right answer?
#
# Every claim that one model is "better" than another rests on such a measurement, and each
# measurement needs different access to the model and answers a different question. The paper
# (§8.1) frames evaluation as a {term}`divergence` between the true distribution of replies to a
# prompt and the model's, and adds scoring rules for questions with one right answer and counts of
# right and wrong items for a retrieved set (calibration, the last measure below, is not in the
# paper). This page computes the main choices on models whose truth we know, so
# that we can see what each number means: {term}`cross-entropy` and {term}`perplexity` (from the
# model's probabilities), the {term}`energy distance` and the {term}`MMD <maximum mean discrepancy>`
# (from samples only), the {term}`CRPS` (one right answer), {term}`precision` and {term}`recall` (a
# retrieved set), and {term}`calibration`.
#
# ```{admonition} Learning goals
# :class: tip
# After this page you can
# - compute cross-entropy, perplexity and their gap to the entropy by hand for a small model, and
#   explain why no model's expected cross-entropy is below the entropy rate of the text;
# - explain which evaluation needs the model's probabilities and which needs only its samples, and
#   read a permutation-test p-value for a sample-based divergence;
# - compute the CRPS of a forecast against one answer and precision and recall of a retrieved set;
# - recognise over- and under-confidence in a reliability diagram.
# ```
#
# **Builds on:** [2.2 Next-token prediction and the KL objective](02_objective_kl.ipynb) (the KL
# divergence, and why next-token cross-entropy is the training loss) ·
# [2.6 Sequence generation](06_sequence_generation.ipynb) (sampling replies, the decoding
# temperature) · {term}`entropy` and the {term}`entropy rate` of a source
# ([6.3](../part1_chapter6/6_3_causal_masking.ipynb)). **Reading time:** about 40 minutes.
#
# ```{admonition} Symbols on this page
# :class: note
# | symbol | meaning | shape |
# |---|---|---|
# | $p$, $p_v$ | the true distribution of the next token; its probability of token $v$ | probabilities |
# | $\mathbf q$, $\mathbf q_v$ | a model's distribution of the next token; its probability of $v$ | probabilities |
# | $H(p)$, $H$ | the entropy of $p$; the entropy rate of a source (nats or bits per token) | number |
# | $\mathbf D$ | a divergence between the true and the model's distribution of replies (8.3) | number |
# | $F$, $G$ | cumulative distribution functions (a forecast's; the answer's law) | functions |
# | $F_n$, $G_m$ | the empirical cumulative distribution functions of two samples of sizes $n$, $m$ | functions |
# | $y$ | the one correct answer of a numerical question | number |
# | $z$ | the variable the CRPS integrates over; $\mathbf 1\{z\ge y\}$ is 1 when $z\ge y$, else 0 (the CDF of a point mass at $y$) | number |
# | $S$, $S'$ | two independent draws from the forecast | numbers |
# | $R$, $R'$; $M$, $M'$ | independent draws from the law of real replies; from the model's (mapped to a common space) | vectors |
# | $\kappa$ | the MMD's kernel: a similarity of two points (here a Gaussian of their distance) | function |
# | $\mathcal N(\mu,\sigma^2)$ | a Gaussian forecast with mean $\mu$ and standard deviation $\sigma$ | |
# | $U[0,1]$ | the uniform distribution on $[0,1]$ | |
# | $r$ | the number of names a retrieval returns | integer |
# | $\tau$ | the temperature the model's next-token scores (its logits) are divided by | number |
# | $T$, $\mathrm{PPL}_{\mathrm{seq}}$, $\mathrm{PPL}_{\mathrm{token}}$ | a text's length; its perplexity as one sequence and per token | integer, numbers |
# ```
#
# ```{admonition} In the paper's notation
# :class: note
# The paper writes the true law of text as a bold $\mathbf p$ (8.1), the model's next-token law as
# a bold $\mathbf q$ and its law of whole sequences as $\pi$ (8.2), and a divergence as
# $\mathbf D$; this page writes the true next-token distribution $p$ without bold (the book's
# distribution $p$) and the model's as a bold $\mathbf q$, as the paper does (a plain $q$ is a query
# in the book).
# ```
#
# *Source: Baptista, Stuart, Tran, "Large Language Models: A Mathematical Formulation", §8.1
# (Eqs. 8.1–8.4, Examples 8.1–8.2, footnote 6).*

# %% tags=["parameters"]
import os

FULL = os.environ.get("FULL", "0") == "1"
N_HELD = 40_000 if FULL else 20_000  # held-out tokens for cross-entropy
N_LINES = 120 if FULL else 60  # generated / real lines per sample in the energy-distance section

# %%
import math
import re
from collections import Counter
from fractions import Fraction

import matplotlib.pyplot as plt
import numpy as np
import scipy.integrate
import scipy.stats
import sympy as sp
from IPython.display import Math, display

from nextword.booktools.display import produced
from nextword.booktools.plotting import use_book_style
from nextword.data import load_corpus, markov_source
from nextword.decoding import NGramLM, sample
from nextword.evaluation import (
    bits_per_token, calibration_bins, crps_gaussian, crps_sample, cross_entropy, energy_distance,
    expected_calibration_error, median_heuristic_bandwidth, mmd_squared, permutation_test,
    perplexity, precision_recall_f1,
)
from nextword.tokenizers import CharTokenizer

use_book_style()
rng = np.random.default_rng(0)

# %% [markdown]
# ## A tiny example by hand
#
# **Scoring by probabilities.** The true next token is `a` with probability 1/2, `b` and `c` with
# 1/4 each. Model A knows this; model B swaps `a` and `b`. The held-out text is "a a b c" (the
# true frequencies). A model's {term}`cross-entropy` on it is its average surprise,
# $-\frac1T\sum_t\log_2 \mathbf q(\text{token}_t)$ bits over its $T$ tokens, and its {term}`perplexity` is $2^{\text{cross-entropy}}$:
# the number of equally likely choices that would be as surprising.

# %%
text = ["a", "a", "b", "c"]
truth = {"a": Fraction(1, 2), "b": Fraction(1, 4), "c": Fraction(1, 4)}
model_b = {"a": Fraction(1, 4), "b": Fraction(1, 2), "c": Fraction(1, 4)}
for name, model in [("A (= truth)", truth), ("B (a, b swapped)", model_b)]:
    surprises = [-math.log2(model[token]) for token in text]  # bits per token
    ce_bits = sum(surprises) / len(text)
    print(f"model {name:17s}: surprises {surprises} -> cross-entropy {ce_bits} bits, "
          f"perplexity 2^{ce_bits} = {2**ce_bits:.3f}")
entropy_bits = -sum(p * math.log2(p) for p in truth.values())
kl_bits = sum(p * math.log2(p / model_b[t]) for t, p in truth.items())
print(f"entropy H(p) = {entropy_bits} bits; KL(p || B) = {kl_bits} bits; H + KL = {entropy_bits + kl_bits}")
assert entropy_bits == 1.5 and kl_bits == 0.25
# a model that reads the previous token: P(a | start) = 1, P(a | a) = P(b | a) = 1/2, P(c | b) = 1
model_ctx = {"start": {"a": Fraction(1)}, "a": {"a": Fraction(1, 2), "b": Fraction(1, 2)}, "b": {"c": Fraction(1)}}
ce_ctx = sum(-math.log2(model_ctx[prev][token]) for prev, token in zip(["start"] + text[:-1], text)) / len(text)
print(f"context model (reads the previous token): cross-entropy {ce_ctx} bits, below H(p) = {entropy_bits}")
assert ce_ctx == 0.5 < entropy_bits

# %% [markdown]
# Model A scores the entropy, 1.5 bits (perplexity $2^{1.5}\approx2.83$); model B scores 1.75 bits,
# and the excess, 0.25 bits, is exactly the KL divergence from the truth to B. That is Example 8.1
# in miniature: cross-entropy = entropy + KL, so a lower cross-entropy means a model closer to the
# truth; and on a text with the true frequencies, as here, no model that gives every position the
# same distribution scores below the entropy. A model that reads the context can: the context model
# of the last line above, which reads the previous token, bets on the order of this one short text
# and scores 0.5 bits. Only the *expected* score, over
# texts drawn from the source, is bounded below by the entropy, as
# [the next section](#cross-entropy-and-perplexity-scoring-a-model-by-its-probabilities-example-81)
# explains.
#
# **Scoring a retrieved set.** Asked "who speaks in this scene?", a model returns {Romeo, Juliet,
# Nurse}; the truth is {Romeo, Tybalt}. One true positive (Romeo), two false positives, one false
# negative (Tybalt): {term}`precision` = correct among returned = 1/3, {term}`recall` = found among
# true = 1/2.

# %%
returned, true_set = {"Romeo", "Juliet", "Nurse"}, {"Romeo", "Tybalt"}
scores = precision_recall_f1(returned, true_set)
print(f"precision {Fraction(len(returned & true_set), len(returned))} = {scores.precision:.3f}, "
      f"recall {Fraction(len(returned & true_set), len(true_set))} = {scores.recall:.3f}")
assert np.isclose(scores.precision, 1 / 3) and np.isclose(scores.recall, 1 / 2)

# %% [markdown]
# ## Cross-entropy and perplexity: scoring a model by its probabilities (Example 8.1)
#
# §8.1 measures a model, for one prompt, by a divergence $\mathbf D$ between the true law of replies
# (8.1) and the model's law (8.2), written (8.3), and averages over prompts (8.4). With $\mathbf D=\mathrm{KL}$ this is a
# constant minus the expected log-likelihood of the model on real text, so models are compared by
# their cross-entropy on held-out text. For one position the identity behind it is
# $-\sum_v p_v\log \mathbf q_v=H(p)+\mathrm{KL}(p\,\|\,\mathbf q)$, the tiny example's, for any three-outcome $p$
# and $\mathbf q$ (sympy):

# %%
p_s = sp.symbols("p1:4", positive=True)
q_s = sp.symbols("q1:4", positive=True)
ce_expr = -sum(p * sp.log(q) for p, q in zip(p_s, q_s))
h_plus_kl = -sum(p * sp.log(p) for p in p_s) + sum(p * sp.log(p / q) for p, q in zip(p_s, q_s))
identity_gap = sp.simplify(sp.expand_log(ce_expr - h_plus_kl, force=True))
display(Math(r"-\sum_v p_v\log \mathbf q_v - \Big[H(p) + \mathrm{KL}(p\,\|\,\mathbf q)\Big] = " + sp.latex(identity_gap)))
assert identity_gap == 0

# %% [markdown]
# For a stationary source the per-token version is the entropy rate $H$ plus an average KL, so
# **no model's expected cross-entropy is below $H$**, and perplexity $e^{\mathrm{CE}}$ (in nats) is at
# least $e^H$ in expectation; measured on one finite text it can come out a little below (compare
# the best perplexity printed below with $e^H$). To see the floor we need a source whose $H$ we know: a random order-3 Markov chain on
# 6 symbols (each next symbol depends on the 3 before it; rows drawn from a Dirichlet(0.3), a random
# probability vector that, with a parameter below 1, puts most of its mass on a few symbols, so some
# contexts are quite predictable). The models: uniform, and {term}`n-gram models <n-gram model>` of
# orders 1–5 (add-0.1 smoothing) fitted on training samples of increasing length; the true source
# itself is the reference. A helper scores a model on every position of a sequence:


# %%
def held_out_log_probs(lm, seq):
    """log pi(f_t | f_{<t}) for every position of ``seq`` (n-gram: cache by context)."""
    cache, out = {}, np.empty(len(seq))
    n1 = lm.order - 1
    for t in range(len(seq)):
        ctx = tuple(seq[max(0, t - n1):t]) if n1 else ()
        if ctx not in cache:
            cache[ctx] = lm.next_logits(list(ctx))
        out[t] = cache[ctx][seq[t]]
    return out


# %%
src = markov_source(6, 3, rng, concentration=0.3)
H = src.entropy_rate()
test_seq = src.sample(N_HELD, rng).tolist()
true_lp = np.array([np.log(src.transition[tuple(test_seq[t - 3:t])][test_seq[t]])
                    for t in range(3, N_HELD)])
se = true_lp.std() / np.sqrt(len(true_lp))  # i.i.d. standard error (rough: the terms are dependent)
print(f"entropy rate H = {H:.4f} nats/token; true model on held-out: "
      f"{produced(cross_entropy(true_lp), '.4f')} (± {produced(se, '.4f')})")
assert abs(cross_entropy(true_lp) - H) < 5 * se

uniform = NGramLM(6, 1, k=0.0)  # no counts: every context uniform
u_lp = held_out_log_probs(uniform, test_seq)
assert abs(perplexity(u_lp) - 6) < 1e-12  # uniform over V: perplexity exactly |V|

# %%
train_sizes = [300, 1000, 3000, 10_000, 30_000, 100_000]
orders = [1, 2, 3, 4, 5]
ce_table = np.zeros((len(orders), len(train_sizes)))
train_seq = src.sample(max(train_sizes), rng)
for j, n in enumerate(train_sizes):
    for i, o in enumerate(orders):
        lm = NGramLM(6, o, k=0.1).fit(train_seq[:n])
        ce_table[i, j] = cross_entropy(held_out_log_probs(lm, test_seq)[3:])  # positions of true_lp
print("held-out cross-entropy (nats/token); columns = training length", train_sizes)
for o, row in zip(orders, ce_table):
    print(f"  order {o}: " + "  ".join(produced(x, ".4f") for x in row))
print(f"uniform: {cross_entropy(u_lp):.4f} = log 6; entropy rate {H:.4f}; "
      f"best perplexity {produced(np.exp(ce_table.min()), '.3f')} vs e^H = {np.exp(H):.3f} "
      "(the floor of the expected value; one finite sample can land below it)")
assert ce_table.min() > H - 5 * se  # nobody beats the entropy rate (up to sampling noise)
assert np.argmin(ce_table[:, -1]) == orders.index(4)  # Figure 2.7.1: as data grows, the true context length wins
assert ce_table[orders.index(5), 0] > ce_table[orders.index(4), 0] + 0.1  # little data: 5 overfits
assert np.all(ce_table[:3, -1] > H + 0.5)  # contexts shorter than the source's stall far above H
gap = ce_table[orders.index(4), -1] - cross_entropy(true_lp)
print(f"4-gram at 100k tokens: {produced(gap, '.4f')} nats/token above the true model "
      "on the same held-out positions")
assert 0 < gap < 0.02

# %%
fig, ax = plt.subplots(figsize=(7, 4.2), layout="constrained")
for o, row in zip(orders, ce_table):
    ax.semilogx(train_sizes, row, "o-", label=f"{o}-gram")
ax.axhline(np.log(6), color="0.5", ls=":", label="uniform (log 6)")
ax.axhline(H, color="k", ls="--", label="entropy rate H")
ax.set_xlabel("training tokens")
ax.set_ylabel("held-out cross-entropy (nats/token)")
ax.legend(ncol=2, fontsize=8)
plt.show()

# %% [markdown]
# **Figure 2.7.1.** Example 8.1 on a source with a known floor: held-out cross-entropy of n-gram
# models against training length, for a random order-3 Markov source on 6 symbols. The dashed black
# line is the entropy rate $H$, the lower bound of every model's *expected* cross-entropy (on a
# finite held-out sample a curve can come out a hair below it: sampling noise, explained below), and
# the dotted grey line the uniform model; the solid lines are the n-gram orders (1-gram blue, 2-gram vermilion, 3-gram bluish green,
# 4-gram orange, 5-gram reddish purple; the 1-gram's line runs along the dotted uniform one — compare
# the table's first row with log 6 — because the source's six symbols are almost equally frequent). Look at the 4-gram (context 3, the true order): it
# approaches $H$ as data grows; shorter contexts stall far above it, and the 5-gram pays for its
# extra parameters when data is scarce.
#
# The floor holds up to sampling noise: on a finite held-out sample even the true model's score can
# land on either side of $H$ (compare the true model's score printed above, with its standard error,
# with $H$), so the fair comparison is with the true model's score on the same positions — the
# excess of a fitted model over it estimates the average KL of (8.3).
#
# ## The same on real text: tiny Shakespeare characters
#
# On real text there is no known floor, but the ranking works the same way. n-grams of orders 1–6
# on the 1M training characters, evaluated on held-out characters, in bits per character:

# %%
corpus = load_corpus("shakespeare")
tok = CharTokenizer.train(corpus.train)
V = tok.vocab_size
train_ids = tok.encode_array(corpus.train)
val_ids = tok.encode_array(corpus.val[:N_HELD]).tolist()
char_models = {o: NGramLM(V, o, k=0.01).fit(train_ids) for o in (1, 2, 3, 4, 5, 6)}
bpc = {o: bits_per_token(held_out_log_probs(m, val_ids)) for o, m in char_models.items()}
print(f"uniform over {V} ids: {np.log2(V):.3f} bits/char")
print("  ".join(f"order {o}: {b:.3f}" for o, b in bpc.items()))
best_char = min(bpc, key=bpc.get)
assert bpc[1] < np.log2(V) and best_char in (4, 5) and bpc[6] > bpc[best_char]

# %% [markdown]
# ## Energy distance and MMD: scoring a model by its samples (Example 8.2)
#
# Often we can only *sample* from a model. The {term}`energy distance` and the
# {term}`MMD <maximum mean discrepancy>` (maximum mean discrepancy) compare two distributions through
# two sets of samples alone: roughly, they ask whether points of the two sets are farther from each
# other than points within each set. With $R,R'$ two independent draws from one law (real replies)
# and $M,M'$ from the other (the model's), the energy distance is
# $2\,\mathbb E|R-M|-\mathbb E|R-R'|-\mathbb E|M-M'|$, and the squared MMD is
# $\mathbb E\,\kappa(R,R')+\mathbb E\,\kappa(M,M')-2\,\mathbb E\,\kappa(R,M)$ for a kernel $\kappa$ (a
# similarity of two points); both are 0 when the two laws agree, and `energy_distance` and
# `mmd_squared` replace each expectation by the average over pairs of sample points. Example
# 8.2 suggests projecting variable-length replies "into a common space" first; we map each line of
# text to three numbers — its length in characters, its fraction of vowels among letters and its
# mean word length — and compare real held-out lines with lines generated by the 2-gram and the
# 5-gram character models (EOS = newline; each generated line continues a random training line, so
# the model starts from a real context).
#
# For sampling we refit the two models with lighter smoothing (add-$10^{-4}$ instead of add-0.01)
# and use nucleus filtering (`top_p=0.95`: each character is drawn only from the most likely
# characters whose probabilities add up to 0.95): with add-0.01 smoothing and 66 symbols, a context seen once gives the unseen
# characters more than a third of its mass, one such character sends a high-order model into a context it
# never saw (where it is uniform), and the line dissolves into noise — smoothing that is harmless
# for cross-entropy is harmful for generation. First, an independent check of the estimator: in
# one dimension the biased energy distance (every average taken over all pairs of points, the
# "V-statistic" of the printout) equals $2\int(F_n-G_m)^2$, the square of
# `scipy.stats.energy_distance` (which is defined as the square root of that integral).

# %%
a1, b1 = rng.normal(0, 1, 50), rng.normal(0.5, 1.3, 70)
ed_v, ed_scipy = energy_distance(a1, b1, unbiased=False), scipy.stats.energy_distance(a1, b1)
print(f"1-D check: V-statistic {ed_v:.6f}, scipy.stats.energy_distance squared {ed_scipy**2:.6f}")
assert np.isclose(ed_v, ed_scipy**2, rtol=1e-12)


# %%
def features(lines):
    """(n, 3): characters, vowel fraction among letters, mean word length."""
    out = []
    for s in lines:
        letters = [ch for ch in s.lower() if ch.isalpha()]
        words = s.split()
        out.append([len(s), sum(ch in "aeiou" for ch in letters) / max(1, len(letters)),
                    np.mean([len(w) for w in words]) if words else 0.0])
    return np.array(out)


real_lines = [ln for ln in corpus.val.splitlines() if len(ln) > 1 and not ln.endswith(":")]
pick = rng.permutation(len(real_lines))
real_a = [real_lines[i] for i in pick[:N_LINES]]
real_b = [real_lines[i] for i in pick[N_LINES:2 * N_LINES]]
EOS = tok.encode("\n")[0]
train_lines = [ln for ln in corpus.train.splitlines() if len(ln) > 20]


def generate_lines(model, n, seed):
    """n generated lines, each continuing a random training line + newline (a real context)."""
    r = np.random.default_rng(seed)
    lines = []
    while len(lines) < n:
        prompt = tok.encode(train_lines[r.integers(len(train_lines))] + "\n")
        out = sample(model.next_logits, prompt, 120, rng=r, eos_id=EOS, top_p=0.95)
        s = tok.decode(out[len(prompt):]).rstrip("\n")
        if len(s) > 1 and not s.endswith(":"):
            lines.append(s)
    return lines


# %% [markdown]
# A raw divergence value has no scale, so each is turned into a {term}`permutation test`:
# re-splitting the pooled samples at random gives the divergence's distribution when both samples
# share a law (`permutation_test`), and the p-value is the share of splits at least as divergent
# as the real split, counting the real split itself among them (so with 199 re-splits the smallest
# possible p-value is $1/200=0.005$). A small p-value says "these two sets do not come from the same law". (Both
# divergences here are the unbiased estimates, which can come out slightly negative when the two
# laws agree — an estimated $\mathrm{MMD}^2$ below 0 included, although a square cannot be. The MMD compares points through a Gaussian kernel, a similarity that falls with their
# distance; its width is set to the median distance between the pooled points (of the reference and the
# 2-gram lines, once for all three comparisons), the usual "median heuristic".)

# %%
gen_models = {o: NGramLM(V, o, k=1e-4).fit(train_ids) for o in (2, 5)}  # light smoothing
gen = {o: generate_lines(gen_models[o], N_LINES, o) for o in (2, 5)}
X = {"real (second half)": features(real_b), "2-gram": features(gen[2]), "5-gram": features(gen[5])}
ref = features(real_a)
mu, sd = ref.mean(0), ref.std(0)


def standardise(F):
    """Features on the reference sample's scale (mean 0, standard deviation 1 per feature)."""
    return (F - mu) / sd


h_bw = median_heuristic_bandwidth(standardise(ref), standardise(X["2-gram"]))

# %%
results = {}
for name, F in X.items():
    ed = permutation_test(standardise(ref), standardise(F), energy_distance, n_permutations=199,
                          rng=np.random.default_rng(1))
    mm = permutation_test(standardise(ref), standardise(F), lambda a, b: mmd_squared(a, b, h_bw),
                          n_permutations=199, rng=np.random.default_rng(2))
    results[name] = (ed, mm)
    print(f"real vs {name:18s}: energy distance {produced(ed.statistic, '7.4f')} "
          f"(p = {produced(ed.p_value, '.3f')}), MMD^2 {produced(mm.statistic, '7.4f')} "
          f"(p = {produced(mm.p_value, '.3f')})")
print("example 5-gram lines:", produced(str([s[:40] for s in gen[5][:3]])))
assert results["real (second half)"][0].p_value > 0.05
assert results["2-gram"][0].p_value < 0.01 and results["2-gram"][1].p_value < 0.01
assert results["5-gram"][0].statistic < results["2-gram"][0].statistic
assert results["5-gram"][0].p_value < 0.05  # ... yet the test still tells the 5-gram's lines apart
real_f = features(real_a + real_b)
for name, lines in [("real", real_a + real_b), ("2-gram", gen[2]), ("5-gram", gen[5])]:
    f_ = features(lines)
    print(f"{name:7s}: line length mean {produced(f_[:, 0].mean(), '.1f')} sd {produced(f_[:, 0].std(), '.1f')}; "
          f"vowel fraction {produced(f_[:, 1].mean(), '.3f')}; mean word length {produced(f_[:, 2].mean(), '.2f')}")
two_f = features(gen[2])
assert two_f[:, 0].std() > 2 * real_f[:, 0].std()  # the 2-gram's line lengths are far too irregular
assert features(gen[5])[:, 0].std() > 1.5 * real_f[:, 0].std()  # ... and the 5-gram's still are

# %% [markdown]
# Two disjoint random samples of real held-out lines (the reference and the "second half" of the
# shuffled lines) are not told apart by the test (large p-value: their divergence is within the
# permutation null; it shows no difference, it does not prove there is none), the 2-gram's lines
# are clearly not like Shakespeare's — most visibly in their lengths, whose standard deviation is
# more than twice the real lines' (the last lines printed, with the vowel fractions and mean word
# lengths beside them) — and the 5-gram is closer (a smaller divergence), though the test still
# tells its lines from real ones here: their lengths too are far more irregular than the real lines'
# (a standard deviation more than 1.5 times theirs, asserted).
#
# ## CRPS: scoring a distribution against one correct answer (footnote 6)
#
# For a numerical question with a single correct answer $y$, footnote 6 scores the model's
# predictive distribution, with cumulative distribution function $F$, by the {term}`CRPS`
# (continuous ranked probability score)
# $\mathrm{CRPS}(F,y)=\int(F(z)-\mathbf 1\{z\ge y\})^2\,dz$: the area under the *squared* gap
# between the forecast's CDF and the step of the true answer (the square of their $L^2$ distance,
# not the square of the area between them). Lower is better; a forecast that puts all its mass on $y$
# scores 0. The library computes it from samples through $\mathbb E|S-y|-\tfrac12\mathbb E|S-S'|$;
# we check that against the integral definition by quadrature, and against the closed form for a
# Gaussian.

# %%
draws = rng.normal(2.0, 1.5, 400)
y_obs = 3.1


def ecdf(t):
    """Empirical CDF of the 400 draws."""
    return np.searchsorted(np.sort(draws), t, side="right") / len(draws)


lo, hi = draws.min() - 1, draws.max() + 1
breaks = np.unique(np.concatenate([np.sort(draws), [y_obs]]))
integral = sum(scipy.integrate.quad(lambda t: (ecdf(t) - (t >= y_obs)) ** 2, a, b)[0]
               for a, b in zip(np.concatenate([[lo], breaks]), np.concatenate([breaks, [hi]])))
print(f"CRPS of 400 draws at y = {y_obs}: sample formula {produced(crps_sample(draws, y_obs), '.6f')}, "
      f"integral of footnote 6 {produced(integral, '.6f')}, "
      f"Gaussian closed form {crps_gaussian(2.0, 1.5, y_obs):.6f}")
assert abs(crps_sample(draws, y_obs) - integral) < 1e-6
assert abs(crps_gaussian(2.0, 1.5, y_obs) - crps_sample(rng.normal(2.0, 1.5, 200_000), y_obs)) < 0.01

# %% [markdown]
# The sample formula and the integral agree to round-off on the same 400 draws. The Gaussian closed
# form differs from them: 400 draws are only an estimate of the forecast they come from; the last
# line of the cell compares the closed form with the sample formula on many more draws.
#
# The use case: an "LLM" answers *"how many lines does this speech have?"* (true answer 7) with a
# distribution of numbers, given as 500 draws; three forecasters are scored: sharp and right
# (Poisson with mean 7), sharp and wrong (Poisson with mean 12), and vague (every whole number from 1
# to 29 equally likely). A uniform forecast has no single most likely answer, so each forecast is
# described by where it is centred (its mean, minus the truth) and how wide it is (its standard
# deviation); the CRPS penalises both.

# %%
truth_count = 7
lowest, highest = 1, 29  # the vague forecast: every whole number from 1 to 29 equally likely
forecasters = {"sharp, right": rng.poisson(7, 500), "sharp, wrong": rng.poisson(12, 500),
               "vague": rng.integers(lowest, highest + 1, 500)}
print(f"vague: uniform on the whole numbers {lowest} to {highest}; 500 draws from each forecast")
crps_of = {name: crps_sample(s.astype(float), truth_count) for name, s in forecasters.items()}
for name, s in forecasters.items():
    print(f"  {name:13s}: CRPS {produced(crps_of[name], '.3f')}, "
          f"mean - truth = {produced(s.mean() - truth_count, '+.1f')}, "
          f"standard deviation {produced(s.std(), '.1f')}")
assert crps_of["sharp, right"] < crps_of["sharp, wrong"] < crps_of["vague"]
# the laws the draws come from: means 7, 12, 15; standard deviations sqrt(7), sqrt(12), sqrt((29^2 - 1) / 12)
for name, mean, sd in [("sharp, right", 7, 7**0.5), ("sharp, wrong", 12, 12**0.5), ("vague", 15, 70**0.5)]:
    assert abs(forecasters[name].mean() - mean) < 5 * sd / 500**0.5 and abs(forecasters[name].std() / sd - 1) < 0.15

# %% [markdown]
# The CRPS is a *proper* scoring rule: when the answer is itself random, $y\sim G$, the expected score
# is smallest for the forecast $F=G$. With $G=\mathcal N(0,1)$ and Gaussian forecasts
# $\mathcal N(\mu,\sigma^2)$, the expected CRPS (closed form averaged over 20,000 draws of $y$) is
# minimised at $(\mu,\sigma)=(0,1)$:

# %%
y_draws = rng.normal(0, 1, 20_000)
mus, sigmas = np.linspace(-1, 1, 41), np.linspace(0.3, 2.0, 35)
score = np.array([[np.mean(crps_gaussian(m_, s_, y_draws)) for s_ in sigmas] for m_ in mus])
i_best, j_best = np.unravel_index(np.argmin(score), score.shape)
print(f"expected CRPS over {y_draws.size:,} draws of y minimised at "
      f"mu = {produced(mus[i_best], '.2f')}, sigma = {produced(sigmas[j_best], '.2f')}")
assert abs(mus[i_best]) <= 0.05 and abs(sigmas[j_best] - 1) <= 0.1

# %% [markdown]
# ## Precision and recall for a retrieved set
#
# End of §8.1: when the model returns a set, count true positives, false positives and false
# negatives against the ground truth, as in the tiny example. The task: given the *speech text* of
# a passage of held-out Shakespeare (40 consecutive blocks, speaker tags removed), retrieve the set
# of characters who speak in it. The "model": rank the speakers of the training text (those with at
# least five speeches there) by how often the last word of their name is mentioned in the passage
# (ties broken by their training frequency) and return the top $r$.

# %%
speakers = Counter(re.findall(r"^([A-Z][A-Za-z ]+):$", corpus.train, flags=re.M))
candidates = [s for s, c in speakers.items() if c >= 5]
blocks = corpus.val.split("\n\n")


def passage(i):
    """The speakers (truth) and the speech text of blocks i .. i + 39 of the held-out text."""
    chunk = blocks[i:i + 40]
    truth = {b.split("\n")[0][:-1] for b in chunk if b.split("\n")[0].endswith(":")}
    text = "\n".join("\n".join(b.split("\n")[1:]) for b in chunk)
    return truth, text


def retrieve(text, r):
    """The r speakers whose last name word is mentioned most often in text."""
    words = Counter(re.findall(r"[A-Za-z]+", text.lower()))
    score = {s: words[s.split()[-1].lower()] + 1e-4 * speakers[s] for s in candidates}
    return set(sorted(candidates, key=lambda s: -score[s])[:r])


# %%
rs = [1, 2, 3, 5, 8, 12, 20]
pr = np.zeros((len(rs), 2))
starts = range(0, 600, 40)
for i in starts:
    truth, text = passage(i)
    for j, r in enumerate(rs):
        got = retrieve(text, r)
        r_ = precision_recall_f1(got, truth)
        tp = len(got & truth)  # independent count
        assert np.isclose(r_.precision, tp / len(got)) and np.isclose(r_.recall, tp / len(truth))
        pr[j] += r_.precision, r_.recall
pr /= len(starts)
for r, (p_, r_) in zip(rs, pr):
    print(f"top-{r:2d}: mean precision {p_:.3f}, mean recall {r_:.3f}")
assert pr[0, 0] > pr[-1, 0] and pr[-1, 1] > pr[0, 1]  # the precision/recall trade-off
assert np.all(np.diff(pr[:, 1]) >= 0)  # Figure 2.7.2: recall grows (never falls: the top-r sets are nested)
assert np.all(np.diff(pr[1:, 0]) < 0)  # from two names on, precision falls with every step

# %% [markdown]
# Returning more names raises recall and, from two names on, lowers precision — the two numbers
# measure different failures (claims that are wrong, truths that are missed), which is why the
# two are reported together (§8.1 names them as the usual pair; it reports no numbers of its own).
#
# ## Calibration (not in §8): does the model's confidence match its accuracy?
#
# A model is {term}`calibrated <calibration>` when, among the predictions it makes with confidence
# 70 %, about 70 % are right. The {term}`expected calibration error` (ECE; Guo et al., 2017) bins
# predictions by the model's probability of its own top answer and averages
# $|\text{accuracy}-\text{confidence}|$ over the bins, each bin weighted by its share of the
# predictions. We take next-character prediction on held-out
# text with the 5-gram, at decoding temperatures $\tau$ ([2.6](06_sequence_generation.ipynb)):
# lowering $\tau$ raises the probability of every top answer and raising it lowers them, so for a
# model close to calibrated at $\tau=1$, as this one turns out to be, $\tau<1$ makes it
# over-confident and $\tau>1$ under-confident. First a sanity check: a
# forecaster that is right with exactly its stated probability has ECE near 0.

# %%
conf_syn = rng.uniform(0.2, 1.0, 20_000)
assert expected_calibration_error(conf_syn, rng.uniform(size=conf_syn.size) < conf_syn) < 0.02
m5 = char_models[5]
ctxs = [tuple(val_ids[max(0, t - 4):t]) for t in range(len(val_ids))]
logits = np.stack([m5.next_logits(list(c_)) for c_ in ctxs])  # (T, V) log-probs
targets = np.array(val_ids)

# %%
taus = [0.5, 0.7, 1.0, 1.4, 2.0]
eces, bins_at = [], {}
for t in taus:
    z_ = logits / t
    prob = np.exp(z_ - z_.max(1, keepdims=True))
    prob /= prob.sum(1, keepdims=True)
    conf, correct = prob.max(1), prob.argmax(1) == targets
    eces.append(expected_calibration_error(conf, correct, 15))
    bins_at[t] = calibration_bins(conf, correct, 15)
    print(f"tau = {t:.1f}: accuracy {correct.mean():.3f}, mean confidence {conf.mean():.3f}, "
          f"ECE {eces[-1]:.4f}")
assert np.argmin(eces) == taus.index(1.0)
conf_at = {t: bins_at[t].confidence[bins_at[t].count > 0] for t in taus}
acc_at = {t: bins_at[t].accuracy[bins_at[t].count > 0] for t in taus}
w_at = {t: bins_at[t].count[bins_at[t].count > 0] for t in taus}
over = {t: float(np.average(conf_at[t] - acc_at[t], weights=w_at[t])) for t in taus}
print("mean confidence - accuracy:", {t: round(v, 3) for t, v in over.items()})
assert over[0.5] > 0.05 and over[2.0] < -0.05  # tau < 1 over-confident, tau > 1 under-confident

# %%
fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), layout="constrained")
for t in (0.5, 1.0, 2.0):
    b = bins_at[t]
    keep = b.count > 0
    axes[0].plot(b.confidence[keep], b.accuracy[keep], "o-", label=f"$\\tau$ = {t}")
axes[0].plot([0, 1], [0, 1], "k--", lw=0.8)
axes[0].set_xlabel("confidence (probability of the top character)")
axes[0].set_ylabel("accuracy")
axes[0].legend()
axes[1].plot(rs, pr[:, 0], "o-", label="precision")
axes[1].plot(rs, pr[:, 1], "s-", label="recall")
axes[1].set_xlabel("names returned (r)")
axes[1].set_ylabel("mean over 15 passages")
axes[1].legend()
plt.show()

# %% [markdown]
# **Figure 2.7.2.** Left: reliability diagram of the character 5-gram's next-character predictions
# on held-out text — accuracy against confidence, one point per confidence bin, for $\tau=0.5$
# (blue), 1 (vermilion) and 2 (bluish green); the dashed black diagonal is perfect calibration.
# Lowering $\tau$ pushes the curve below the diagonal (over-confidence), raising it pushes the curve
# above. Right: §8.1's precision (blue circles) and recall (vermilion squares) for the
# speaker-retrieval task as the number of returned names grows.

# %% [markdown]
# ## Key takeaways
#
# - Cross-entropy on held-out text is entropy + KL: lower is closer to the truth, and no model's
#   expected cross-entropy is below the entropy rate (on one finite held-out text a model can land
#   below it by chance: a hair on a long text, far below on the tiny example's four tokens, whose
#   order its context model bets on); perplexity is its exponential, per token.
# - When only samples are available, the energy distance and MMD compare a model's replies with
#   real ones, after mapping both to a common space; a permutation test turns the value into a
#   p-value.
# - For a question with one right answer, the CRPS scores the whole predictive distribution, both
#   where it is centred and how wide it is (on this page's question sharp and right beat sharp and
#   wrong, which beat vague: the order of these three forecasts, not a rule), and the true
#   distribution scores best on average.
# - Precision (right among returned) and recall (found among true) measure different failures and
#   trade off as a model returns more.
# - Calibration asks whether confidence matches accuracy; changing the temperature moves a model
#   from over- to under-confident.

# %% [markdown]
# ## Check your understanding
#
# 1. In the tiny example, a model C predicts `a`, `b`, `c` with 1/3 each. What are its cross-entropy
#    and perplexity on "a a b c", and its KL divergence from the truth?
#
#    ```{dropdown} Answer
#    Every token costs $\log_2 3$ bits, so the cross-entropy is $\log_2 3$ bits and the perplexity
#    exactly 3. KL = cross-entropy − entropy $=\log_2 3-\tfrac32$ bits, less than model B's
#    $\tfrac14$ bit because $\log_2 3<\tfrac74$ (since $3^4<2^7$): C is closer to the truth.
#    ```
#
# 2. You can sample from a chatbot but not read its probabilities. Which of this page's measures can
#    you compute, and which not?
#
#    ```{dropdown} Answer
#    Energy distance and MMD (samples only, after projecting replies to a common space), the CRPS of
#    its numerical answers (from samples of the answer), precision and recall of returned sets. Not
#    cross-entropy or perplexity, which need the probability the model gives to real text.
#    Calibration needs a confidence: one the model reports, or one you estimate from many samples
#    of the same short answer (the share of the draws that give its most common answer).
#    ```
#
# 3. This page's retriever is changed to return, for every passage, all its candidates (every
#    speaker it knows). What are its recall and, roughly, its precision?
#
#    ```{dropdown} Answer
#    Recall as high as this model can go, which here is not 1: it knows only the speakers with at
#    least five speeches in the training text (168 names), and returning all of them finds on average
#    0.77 of a passage's speakers (printed below) — the others do not speak often enough, or at all,
#    in the training text (only a list holding every speaker of the held-out text would reach recall
#    1). Precision is tiny, 0.03 on average (the few true speakers divided by 168 names): the
#    trade-off at its extreme, which is why one number alone is not enough.
#    ```

# %% tags=["hide-cell"]
# The numbers the answers state. Question 1: model C, uniform over a, b, c.
model_c = {t: Fraction(1, 3) for t in "abc"}
tiny_text, tiny_truth = ["a", "a", "b", "c"], {"a": Fraction(1, 2), "b": Fraction(1, 4), "c": Fraction(1, 4)}
ce_c = sum(-math.log2(model_c[token]) for token in tiny_text) / len(tiny_text)
kl_c = sum(p * math.log2(p / model_c[t]) for t, p in tiny_truth.items())
print(f"Q1: cross-entropy {ce_c:.4f} bits = log2 3, perplexity {2**ce_c:.4f}, KL {kl_c:.4f} bits < {kl_bits}")
assert abs(ce_c - math.log2(3)) < 1e-12 and abs(2**ce_c - 3) < 1e-9
assert abs(kl_c - (math.log2(3) - 1.5)) < 1e-12 and kl_c < kl_bits and 3**4 < 2**7
# Question 3: return every speaker the model knows (the candidates) for each of the 15 passages
everyone = [precision_recall_f1(set(candidates), passage(i)[0]) for i in starts]
recall_all = np.mean([s_.recall for s_ in everyone])
precision_all = np.mean([s_.precision for s_ in everyone])
print(f"Q3: all {len(candidates)} known speakers returned: mean recall {recall_all:.2f}, "
      f"mean precision {precision_all:.2f} over {len(everyone)} passages")
assert len(candidates) == 168 and 0.7 < recall_all < 0.85 and precision_all < 0.05

# %% [markdown]
# ## Checking the paper
#
# **Per token or per sequence?** Example 8.1 calls the exponentiated negative log-likelihood *of a
# single sequence* its perplexity. That number grows exponentially with the length, so it cannot
# compare texts of different lengths; the per-token normalisation used by `perplexity` (and
# everywhere in practice) is its geometric-mean version:
# $\mathrm{PPL}_{\mathrm{token}}=\mathrm{PPL}_{\mathrm{seq}}^{1/T}$. Recorded in `book/ERRATA.md` (row "§8.1,
# Example 8.1 (last sentence)"). The 4-gram of
# the Markov source, on the first $T$ held-out tokens:

# %% tags=["hide-cell"]
lm4 = NGramLM(6, 4, k=0.1).fit(train_seq)
lp4 = held_out_log_probs(lm4, test_seq)
for T in (10, 100, 1000):
    print(f"T = {T:4d}: sequence perplexity exp(NLL) = 10^{produced(-lp4[:T].sum() / np.log(10), '.1f')}"
          f", per token {produced(perplexity(lp4[:T]), '.3f')}")
assert np.isclose(np.exp(-lp4[:100].sum()) ** (1 / 100), perplexity(lp4[:100]))

# %% [markdown]
# **Footnote 6's CRPS, in closed form.** For a uniform forecast on $[0,1]$ and an answer
# $y\in[0,1]$ the integral of footnote 6 can be done by hand; sympy, and the library's sample
# formula on a dense uniform sample against it:

# %% tags=["hide-cell"]
zz, yy = sp.symbols("z y", real=True)
crps_uniform = sp.simplify(sp.integrate(zz**2, (zz, 0, yy)) + sp.integrate((zz - 1) ** 2, (zz, yy, 1)))
display(Math(r"\mathrm{CRPS}(U[0,1], y) = " + sp.latex(sp.factor(crps_uniform)) + " = "
             + sp.latex(sp.expand(crps_uniform))))
grid = (np.arange(20_000) + 0.5) / 20_000  # a dense uniform sample
for yv in (0.1, 0.5, 0.9):
    assert abs(crps_sample(grid, yv) - float(crps_uniform.subs(yy, yv))) < 1e-6

# %% [markdown]
# The other claims of §8.1 hold as checked above: cross-entropy = entropy + KL, so the KL route of
# Example 8.1 ranks models by held-out cross-entropy, with the entropy rate as floor; the energy
# distance and MMD of Example 8.2 work from samples only, after a projection to a common space; the
# CRPS is minimised by the true distribution (proper); precision and recall trade off.

# %% [markdown]
# ## Reproducibility
#
# The page runs on the CPU in well under a minute. `FULL=1` doubles the held-out set and the
# number of lines per sample; the checks are the same. Numbers estimated from random samples are
# shown as produced numbers (excluded from nbval's text comparison); their claims are asserted where
# they are printed.

# %% tags=["hide-cell"]
print(f"FULL = {FULL}: {N_HELD} held-out tokens, {N_LINES} lines per sample")
