# %% [markdown]
# > Work on your own copy (`.venv/bin/nextword exercises copy ~/my-exercises` in a terminal; a
# > `git pull` rewrites the repository's `exercises/`). Replace each `NotImplementedError` stub, then
# > run the self-check cell at the end: it lists every check, ✓ or ✗. Stuck? `hint("p1_08", 1)`
# > gives a first hint, tiers 2 and 3 say more. Written answers: after trying, `reveal("p1_08")`.
# > Where you stand on all exercises: `.venv/bin/nextword grade --dir ~/my-exercises`.
# > (For maintainers: this file is generated from `solutions/` by
# > `python -m nextword.booktools.exercises build`; change the solution, not this file.)

# %%
from nextword.booktools.exercises import hint, reveal  # noqa: F401  (hints and model answers on demand)

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
    raise NotImplementedError("return an int: how many numbers the RNN keeps about the context (stuck? hint('p1_08', 1))")


def transformer_memory(T: int, d: int) -> int:
    raise NotImplementedError("return an int: how many numbers one attention layer keeps about the context (stuck? hint('p1_08', 1))")


def crossover_length(factor: int, d: int) -> int:
    raise NotImplementedError("return an int: the smallest T at which the transformer keeps at least factor times the RNN's numbers (stuck? hint('p1_08', 1))")


print("10x at T =", crossover_length(10, 512), "(d_model = 512) and", crossover_length(10, 64), "(d_model = 64)")

# the arrays themselves: the state an RNN carries and the outputs of one attention layer
rng = np.random.default_rng(0)
T, d = 10, 512
h_last = rnn_states(rng.standard_normal((T, d)), np.eye(d) * 0.1, np.eye(d) * 0.1)[-1]
reps = MultiHeadAttention(d, 8, rng=rng)(rng.standard_normal((T, d)))
print(f"measured at T = {T}: RNN keeps {h_last.size} floats, the attention layer {reps.size} = {reps.size // h_last.size}x")

# %% [markdown]
# **Answer to 3.**
# *Your answer here.* (Once you have written it, `reveal("p1_08", 1)` shows a model answer.)

# %%
from nextword.booktools.exercises.checks import check_ex_p1_08

check_ex_p1_08(rnn_memory, transformer_memory, crossover_length)
