# %% [markdown]
# # Exercise 08 — Memory of an RNN vs a transformer
# **Part:** 1 · **Difficulty:** ★ · **Book notebook:** book/part1_chapter6/6_6_context_representation
#
# Chapter 6, Exercise 8. An RNN keeps one hidden state of dimension $d_{\text{model}}$; a transformer keeps
# a representation for each of the $T$ positions. For which $T$ is the transformer's memory 10 times the
# RNN's (same $d_{\text{model}}$)?
#
# 1. Implement `rnn_memory(T, d)` and `transformer_memory(T, d)`: the number of floats each keeps for the
#    context (one layer).
# 2. Implement `crossover_length(factor, d)`: the smallest $T$ with transformer ≥ factor × RNN.
# 3. What changes if you count the keys and values a decoder caches during generation?

# %%
import numpy as np

from nextword.attention import MultiHeadAttention
from nextword.chapter6 import rnn_states


# %%
def rnn_memory(T: int, d: int) -> int:
    # BEGIN SOLUTION hint="return an int: how many numbers the RNN keeps about the context"
    return d
    # END SOLUTION


def transformer_memory(T: int, d: int) -> int:
    # BEGIN SOLUTION hint="return an int: how many numbers one attention layer keeps about the context"
    return T * d
    # END SOLUTION


def crossover_length(factor: int, d: int) -> int:
    # BEGIN SOLUTION hint="return an int: the smallest T at which the transformer keeps at least factor times the RNN's numbers"
    T = 1
    while transformer_memory(T, d) < factor * rnn_memory(T, d):
        T += 1
    return T
    # END SOLUTION


print("10x at T =", crossover_length(10, 512), "(d_model = 512) and", crossover_length(10, 64), "(d_model = 64)")

# the arrays themselves: the state an RNN carries and the outputs of one attention layer
rng = np.random.default_rng(0)
T, d = 10, 512
h_last = rnn_states(rng.standard_normal((T, d)), np.eye(d) * 0.1, np.eye(d) * 0.1)[-1]
reps = MultiHeadAttention(d, 8, rng=rng)(rng.standard_normal((T, d)))
print(f"measured at T = {T}: RNN keeps {h_last.size} floats, the attention layer {reps.size} = {reps.size // h_last.size}x")

# %% [markdown]
# **Answer to 3.**
# <!-- BEGIN SOLUTION -->
# The ratio is $T\,d_{\text{model}}/d_{\text{model}}=T$, so the transformer holds 10 times the RNN's numbers at
# $T=10$, for any $d_{\text{model}}$. During generation a decoder caches a key *and* a value per position
# and layer, $2T\,d_{\text{model}}$ numbers per layer, so one layer reaches the factor 10 at $T=5$ — and an
# $n$-layer model multiplies this by $n$ (a multi-layer RNN also keeps $n$ states, so the per-layer ratio
# $2T$ is what matters). The RNN's memory is constant in $T$; the transformer's grows linearly (the
# attention *weights* add $T^2$ per head if they are stored, e.g. for the backward pass).
# <!-- END SOLUTION -->

# %%
from nextword.booktools.exercises.checks import check_ex_p1_08

check_ex_p1_08(rnn_memory, transformer_memory, crossover_length)
