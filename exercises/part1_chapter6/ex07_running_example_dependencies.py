# %% [markdown]
# > Work on your own copy (`.venv/bin/nextword exercises copy ~/my-exercises` in a terminal; a
# > `git pull` rewrites the repository's `exercises/`). Replace each `NotImplementedError` stub, then
# > run the self-check cell at the end: it lists every check, ✓ or ✗. Stuck? `hint("p1_07", 1)`
# > gives a first hint, tiers 2 and 3 say more. Written answers: after trying, `reveal("p1_07")`.
# > Where you stand on all exercises: `.venv/bin/nextword grade --dir ~/my-exercises`.
# > (For maintainers: this file is generated from `solutions/` by
# > `python -m nextword.booktools.exercises build`; change the solution, not this file.)

# %%
from nextword.booktools.exercises import hint, reveal  # noqa: F401  (hints and model answers on demand)

# %% [markdown]
# # Exercise 07 — Which words deserve attention in the running example?
# **Part:** 1 · **Difficulty:** ★★ · **Book notebook:** book/part1_chapter6/6_2_attention_mechanism
#
# Chapter 6, Exercise 7. For "The software engineer who had been working remotely from the mountain cabin
# for several months finally submitted the code that would ___", identify three word pairs (a context
# word, a possible next word) for which a high attention weight is justified, and say whether each
# dependency is syntactic, semantic or discourse.
#
# A justified weight is one that brings **information about the next word**. To make that measurable
# we use `nextword.chapter6.running_example.RunningExampleSource`, a small language of variants of the sentence
# in which words 2, 3, 16, 19 and 21 vary and the blank depends on some of them.
#
# 1. Implement the plug-in estimate of the mutual information $\mathrm{I}(w[j];\text{blank})$ (in nats;
#    an upright I, as in 6.2: the italic $I$ is the identity matrix) from sampled sentences.
# 2. Use it to find which words carry information about the blank, then give three pairs
#    `(context_word, next_word, kind)`, one of each kind, from the controlled language: the context word
#    one of its varying words, the next word one it can put in the blank (`src.decode(ids[k])` returns
#    sentence `k` as a list of words, its blank last).
# 3. Discuss the pairs you would choose for the real sentence.

# %%
import numpy as np

from nextword.chapter6 import RUNNING_EXAMPLE, RunningExampleSource

src = RunningExampleSource()
ids = src.sample(30000, np.random.default_rng(0))  # (30000, 22): 21 context words + the blank
print("varying words:", {p: alts for p, alts in src.slots.items()})


# %%
def mutual_information(ids: np.ndarray, position: int) -> float:
    """Plug-in I(word at 1-based ``position`` ; last column) in nats from sampled sentences ``ids (N, 22)``."""
    raise NotImplementedError("return a float: the plug-in mutual information (nats) between the word at `position` and the blank (stuck? hint('p1_07', 1))")


for j in range(1, 22):
    mi = mutual_information(ids, j)
    if mi > 0.005:
        print(f"word {j:2d} ({RUNNING_EXAMPLE[j - 1]:9s}): I = {mi:.3f} nats")

# %%
raise NotImplementedError("set pairs to a list of three (context_word, next_word, kind) tuples, one per kind (stuck? hint('p1_07', 1))")
for ctx, nxt, kind in pairs:
    print(f"{ctx!r} -> {nxt!r}: {kind}")

# %% [markdown]
# **Discussion.**
# *Your answer here.* (Once you have written it, `reveal("p1_07", 1)` shows a model answer.)

# %%
from nextword.booktools.exercises.checks import check_ex_p1_07

check_ex_p1_07(mutual_information, pairs)
