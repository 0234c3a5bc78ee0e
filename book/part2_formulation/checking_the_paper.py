# %% [markdown]
# # Part 2: checking the paper, a second pass (Baptista, Stuart, Tran)
#
# A reference page, not a lesson. The lessons of this part check the paper's mathematics where they teach
# it ([2.1](01_tokenisation_bpe.ipynb) to [2.9](09_examples_appendix.ipynb)). This page is a second reader's
# pass over the numbers the paper quotes about published models and data: the model its §7 illustrations
# use, the sizes of training corpora in Remark 4.2 and of the diffusion chain in Remark 9.1, and, computed on
# a small source, the average effectiveness of Eq. (8.4). Each section names the item, computes what the
# published sources allow and asserts it. A claim that fails is recorded in the
# [errata ledger](../ERRATA.md); every verdict is in the [coverage map](../coverage.yaml).

# %%
print("Part 2, second pass: sizes quoted in §7, Remark 4.2 and Remark 9.1; Eq. (8.4) computed")

# %% [markdown]
# ## §7: "the Qwen-2.5 model with 3B parameters", from its published configuration
#
# §7 runs its illustrations with "the Qwen-2.5 model with 3B parameters" [52] (its translation example,
# §7.5, names the variant it used, Qwen2.5-3B-Instruct; §7.4's fine-tuned coding example uses the
# code-tuned Qwen-2.5-Coder at 3B, and [52] is the Qwen2.5-Coder report). The Instruct model's
# `config.json` on Hugging Face (`Qwen/Qwen2.5-3B-Instruct`, as copied with its `_name_or_path` by `osllmai-community/Qwen2.5-3B-Instruct`; the base model `Qwen/Qwen2.5-3B` has the same
# sizes) gives the architecture: `hidden_size` 2048, `num_hidden_layers` 36, `num_attention_heads` 16,
# `num_key_value_heads` 2, `intermediate_size` 11008, `vocab_size` 151936, `tie_word_embeddings` true.
# The parameters of a Qwen2 decoder (biases on the query, key and value projections only; two RMS norms per
# layer and one at the end; a gated MLP of three matrices; the output layer shares the embedding table):

# %%
cfg = {"hidden": 2048, "layers": 36, "heads": 16, "kv_heads": 2, "mlp": 11008, "vocab": 151936}
head_dim = cfg["hidden"] // cfg["heads"]
kv_width = cfg["kv_heads"] * head_dim
attention = (cfg["hidden"] * cfg["hidden"] + cfg["hidden"]  # query projection and its bias
             + 2 * (cfg["hidden"] * kv_width + kv_width)  # key and value projections and biases
             + cfg["hidden"] * cfg["hidden"])  # output projection, no bias
mlp = 3 * cfg["hidden"] * cfg["mlp"]  # gate, up and down projections
per_layer = attention + mlp + 2 * cfg["hidden"]  # plus two RMS norm weights
embedding = cfg["vocab"] * cfg["hidden"]  # shared with the output layer
total = cfg["layers"] * per_layer + embedding + cfg["hidden"]  # plus the final norm
print(f"per layer {per_layer:,}; embedding table {embedding:,}; total {total:,} = {total / 1e9:.2f} billion")
print(f"without the embedding table: {(total - embedding) / 1e9:.2f} billion")
assert 2.9e9 < total < 3.2e9

# %% [markdown]
# The published configuration has about 3.09 billion parameters (2.77 billion outside the embedding table):
# "3B" holds.

# %% [markdown]
# ## Remark 4.2: the sizes of training corpora, against the cited works
#
# Remark 4.2 quotes three sizes: LLaMA-3 was trained on "about 15 trillion multilingual tokens" [44], LLaMA-2
# on "2 trillion tokens" [95], and "the totality of all available human-generated text data on the web" "contains
# a median of 3100 trillion tokens" and will be needed for training "between 2026 and 2032" [98]. The models'
# cards say "over 15 trillion tokens" (Llama 3) and "2 trillion tokens" (Llama 2). The headline estimate of
# reference [98] (Villalobos et al., "Will we run out of data?") is an *effective* stock of public
# human-generated text of about 300 trillion tokens, with a 90% interval from 100 to 1000 trillion, and it is
# this stock that [98] projects to be fully used by training between 2026 and 2032.

# %%
quoted = {"Llama 3": 15e12, "Llama 2": 2e12}  # Remark 4.2
published = {"Llama 3": 15e12, "Llama 2": 2e12}  # the model cards
for name in quoted:
    print(f"{name}: quoted {quoted[name] / 1e12:.0f} trillion tokens, published {published[name] / 1e12:.0f} trillion")
assert quoted == published
stock_quoted = 3100e12  # Remark 4.2: "a median of 3100 trillion tokens", needed between 2026 and 2032
stock_effective, stock_interval = 300e12, (100e12, 1000e12)  # [98]'s headline estimate and its 90% interval
inside = stock_interval[0] <= stock_quoted <= stock_interval[1]
print(f"stock of human text: quoted {stock_quoted / 1e12:.0f} trillion tokens; [98]'s effective stock "
      f"{stock_effective / 1e12:.0f} trillion, 90% interval {stock_interval[0] / 1e12:.0f} to "
      f"{stock_interval[1] / 1e12:.0f} trillion; the quoted figure inside that interval: {inside}")
assert not inside  # 3100 trillion is not [98]'s estimate of the effective stock

# %% [markdown]
# The two models' training-corpus sizes are as published, and so are the years 2026–2032. The stock those
# years belong to in [98] is the effective stock, about 300 trillion tokens, and 3100 trillion lies outside
# even the 90% interval of that estimate: it is not that estimate. Where the number comes from we could not
# check here. [98] may list about 3100 trillion tokens as its estimate of the text on the *whole* web, indexed
# or not, next to a smaller figure for the indexed web; if so, the remark quotes a real number of [98], but in
# the role of the stock that training will use up by 2032, which [98] puts at about 300 trillion. Recorded in
# the ledger (row "Remark 4.2, the stock of human-generated text") with that right form.

# %% [markdown]
# ## Remark 9.1: how large the sequence chain is, and what the structure buys
#
# (As on lesson [2.8](08_discrete_diffusion.ipynb), the paper's sequence length L is written T here, as in
# Chapter 6, and its chain states i, j are written y, z.)
# Remark 9.1 identifies the sequences of length T with the integers 1, …, |V|^T, takes |V| = O(10⁴)
# (Example 2.2) and T = O(10⁴) (Example 3.2), concludes that the chain's state space is enormous and that
# Q(·) needs a sparse structure. Lesson [2.8](08_discrete_diffusion.ipynb) builds the structure the
# practical samplers use (each token corrupted independently, one token changing per jump) at T = 3 and checks
# its row bound and factorisation. Here are the sizes at the orders the remark quotes, with Example 3.2's
# own T = 4096 (LLaMA-2) beside T = 10⁴: the number of decimal digits of |V|^T, the non-zeros of one row of
# the structured generator, T(|V| − 1) + 1, and the entries of the one |V| × |V| generator that the
# factorised chain needs.

# %%
import sys  # noqa: E402

sys.set_int_max_str_digits(100_000)  # |V|^T is printed digit by digit below: exact, not estimated
vocab = 10**4
for length in (4096, 10**4):
    digits = len(str(vocab**length))  # exact integer arithmetic
    row_nonzeros = length * (vocab - 1) + 1
    print(f"|V| = {vocab:,}, T = {length:,}: |V|^T has {digits:,} decimal digits; a row of the one-token-per-jump "
          f"generator has {row_nonzeros:,} non-zeros; the per-token generator has {vocab**2:,} entries")
    assert digits == length * 4 + 1
    assert row_nonzeros < 10**9 and vocab**2 == 10**8

# %% [markdown]
# The remark holds: the number of the chain's states has more than sixteen thousand digits, and no dense or even
# row-by-row representation is possible. It also shows what "sparse" has to mean here: a row of the
# one-token-per-jump generator still has 40,955,905 (T = 4096) to 99,990,001 (T = 10⁴) non-zeros and there are |V|^T rows, so
# sparsity alone does not make the chain tractable. What does is the independence across positions that
# gives that sparsity: the transition matrix factorises into T copies of one |V| × |V| matrix (lesson 2.8
# asserts e^{t(Q⊕Q⊕Q)} = e^{tQ}⊗e^{tQ}⊗e^{tQ}), so simulating the *forward* process only ever needs the
# small generator. Generation runs the *reverse* chain, and that one does not factorise. Its rates
# Q̄_yz = Q_zy p(z, t)/p(y, t) (the text after Eq. 9.4; Eq. D.1) keep the one-token-per-jump pattern (Q̄_yz is zero wherever Q_zy is),
# but the ratio p(z, t)/p(y, t) depends on the whole sequence: the same jump of one position has different
# rates in sequences that differ elsewhere. That is why the reverse rates are learned by a network s(y, t)
# of the whole sequence, not assembled from one small matrix. On lesson 2.8's three sentences (T = 3,
# tokens a, b, c, mask M, β = 0.5, t = 0.7), the rates of unmasking the first position to a:

# %%
import numpy as np  # noqa: E402

from nextword.theory.formulation import (  # noqa: E402
    absorbing_generator, forward_marginal, reverse_generator, sequence_generator,
)

V_seq, T_seq, mask_seq = 4, 3, 3
Q_seq = sequence_generator(absorbing_generator(V_seq, mask_seq, 0.5), T_seq)  # (64, 64)
sentences, sentence_weights = [(0, 1, 2), (2, 1, 0), (1, 1, 1)], [0.5, 0.3, 0.2]  # lesson 2.8's data
p0_seq = np.zeros(V_seq**T_seq)  # the data law on the 64 sequences
for sentence, w in zip(sentences, sentence_weights):
    p0_seq[(sentence[0] * V_seq + sentence[1]) * V_seq + sentence[2]] = w
Q_rev = reverse_generator(Q_seq, forward_marginal(p0_seq, Q_seq, 0.7))


def state(text):
    """The index of a three-letter sequence over a, b, c, M."""
    return sum("abcM".index(ch) * V_seq ** (T_seq - 1 - n) for n, ch in enumerate(text))


off_diagonal = ~np.eye(V_seq**T_seq, dtype=bool)
same_pattern = bool(((Q_rev[off_diagonal] != 0) <= (Q_seq.T[off_diagonal] != 0)).all())
rate_bc, rate_bb = Q_rev[state("Mbc"), state("abc")], Q_rev[state("Mbb"), state("abb")]
print(f"reverse rates non-zero only where the forward jump back exists: {same_pattern}")
print(f"unmask the first position to a: from Mbc {rate_bc:.4f}, from Mbb {rate_bb:.4f}")
assert same_pattern and rate_bc > 0.5 and rate_bb < 1e-9  # "abb" has probability 0
assert Q_seq[state("abc"), state("Mbc")] == Q_seq[state("abb"), state("Mbb")] == 0.5  # same forward rate

# %% [markdown]
# The forward rates of the two jumps are the same (β = 0.5); the reverse rates are not, because only "abc"
# is a sentence of the data: the reverse chain must know the other positions.
#
# ## Eq. (8.4): the average effectiveness over prompts, computed
#
# Eq. (8.3) scores a model on one prompt by a divergence D between the true distribution of the response
# and the model's, and Eq. (8.4) averages it over a distribution of prompts "typically over prompts of
# different lengths". Example 8.1 takes D = KL and rewrites the average as a constant minus the expected
# log-likelihood of the responses, the constant not depending on the model. Lesson
# [2.7](07_evaluation.ipynb) checks that identity on unprompted text. Here (8.4) itself is computed by
# enumeration: a source that is a Markov chain on 3 tokens, two models (other Markov chains), prompts of
# lengths 1 and 2 drawn from the source, and responses that fill the sequence up to T = 4 tokens.

# %%
import itertools  # noqa: E402

import numpy as np  # noqa: E402

from nextword.booktools.display import produced  # noqa: E402  (random chains: shown, not compared)

rng_84 = np.random.default_rng(84)
n_tokens, total_length = 3, 4
start = rng_84.dirichlet(np.ones(n_tokens))
chains = {name: rng_84.dirichlet(np.ones(n_tokens), size=n_tokens) for name in ("source", "model A", "model B")}


def log_prob(chain, seq, given):
    """log P(seq | the tokens `given` before it) for a Markov chain (given is never empty here)."""
    prev, total = given[-1], 0.0
    for tok in seq:
        total, prev = total + np.log(chains[chain][prev, tok]), tok
    return total


prompts = [p for n in (1, 2) for p in itertools.product(range(n_tokens), repeat=n)]
weight = {p: 0.5 * np.exp(np.log(start[p[0]]) + (log_prob("source", p[1:], p[:1]) if len(p) > 1 else 0.0))
          for p in prompts}  # pi^prompt: length 1 or 2 with probability 1/2 each, then the source's law
assert abs(sum(weight.values()) - 1) < 1e-12


def effectiveness(model, prompt):
    """Eq. (8.3) with D = KL(p || pi): over every response that fills the sequence up to T tokens."""
    responses = itertools.product(range(n_tokens), repeat=total_length - len(prompt))
    return sum(np.exp(log_prob("source", r, prompt)) * (log_prob("source", r, prompt) - log_prob(model, r, prompt))
               for r in responses)


def expected_log_likelihood(model, prompt):
    """E over the true responses of log pi(response | prompt): Example 8.1's second term, for one prompt."""
    responses = itertools.product(range(n_tokens), repeat=total_length - len(prompt))
    return sum(np.exp(log_prob("source", r, prompt)) * log_prob(model, r, prompt) for r in responses)


e = {m: sum(weight[p] * effectiveness(m, p) for p in prompts) for m in chains}                   # Eq. (8.4)
second_term = {m: sum(weight[p] * expected_log_likelihood(m, p) for p in prompts) for m in chains}
const = {m: e[m] + second_term[m] for m in chains}                                                # Example 8.1
for m in chains:
    print(f"{m:8s}: e = {produced(e[m], '.6f')} nats; e + E E log pi = {produced(const[m], '.6f')}")
assert abs(e["source"]) < 1e-12 and e["model A"] > 0 and e["model B"] > 0
assert abs(const["model A"] - const["model B"]) < 1e-12 and abs(const["model A"] - const["source"]) < 1e-12
print(f"the constant is the same for the source and both models (to 1e-12): minus the average entropy of "
      f"the responses, whose value is {produced(-const['source'], '.6f')} nats")

# %% [markdown]
# Eq. (8.4) is well defined over prompts of different lengths (each prompt's response fills the sequence to
# the same T), is zero for the true source and positive for the two models, and with D = KL it is, as
# Example 8.1 says, a constant (the same for every model: minus the average entropy of the true responses)
# minus the average log-likelihood the model gives them. So comparing two models by their average
# log-likelihood on true responses is the same as comparing them by (8.4).
