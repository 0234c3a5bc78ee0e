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
    # BEGIN SOLUTION hint="return a float: the plug-in mutual information (nats) between the word at `position` and the blank"
    x, y = ids[:, position - 1], ids[:, -1]
    joint = np.zeros((ids.max() + 1, ids.max() + 1))
    np.add.at(joint, (x, y), 1.0)
    P = joint / joint.sum()
    px, py = P.sum(1, keepdims=True), P.sum(0, keepdims=True)
    nz = P > 0
    return float((P[nz] * np.log(P[nz] / (px @ py)[nz])).sum())
    # END SOLUTION


for j in range(1, 22):
    mi = mutual_information(ids, j)
    if mi > 0.005:
        print(f"word {j:2d} ({RUNNING_EXAMPLE[j - 1]:9s}): I = {mi:.3f} nats")

# %%
# BEGIN SOLUTION hint="set pairs to a list of three (context_word, next_word, kind) tuples, one per kind"
pairs = [("now", "runs", "syntactic"),  # 'now' + singular 'code' -> third-person -s; 'would' -> base form
         ("cake", "rises", "semantic"),  # the object noun picks the verb family
         ("hastily", "crashes", "discourse")]  # the adverb earlier in the story makes failure likelier
# END SOLUTION
for ctx, nxt, kind in pairs:
    print(f"{ctx!r} -> {nxt!r}: {kind}")

# %% [markdown]
# **Discussion.**
# <!-- BEGIN SOLUTION -->
# In the controlled language, four words carry information about the blank: "code/cake" (word 19,
# by far the most), "software/pastry" (word 2), "would/now" (word 21) and "finally/hastily" (word 16);
# "engineer(s)" and every fixed word carry none, so attention to them is not justified. Word 2 is
# informative only *through* word 19 (it changes which object is likely); once word 19 is read it adds
# nothing, so a model that reads word 19 has no need of it. (The run notebook 6.2 shows attends to
# words 16 and 19, not 2; its other training runs read other words besides word 19, word 2 among them.)
#
# For the real sentence, three well-motivated pairs:
#
# * **"would" → "run" (syntactic).** The modal immediately before the blank requires a bare infinitive:
#   "would run/compile/work", never "runs" or "ran". A local, grammatical constraint (the classic
#   job of a previous-token head).
# * **"code" → "compile" (semantic).** The head of the relative clause ("the code that would ___") is
#   the subject of the blank verb; it selects verbs that code can do — compile, run, crash, work.
#   "software", the second word, reinforces the same semantic field from twenty words before the blank.
# * **"submitted" / "finally" → "work" or "pass" (discourse).** "Finally submitted", after months of
#   remote work, sets up an outcome: the continuation is likely about whether the code works or solves
#   the problem ("would finally work", "would pass review"). This is a narrative link, not grammar.
#
# "engineer" is often cited for subject–verb agreement, but it is the subject of "submitted", not of the
# blank: after "would" agreement is neutralised, and the blank's subject is "code". So in this sentence
# "engineer" deserves little attention for the next word — the same conclusion the mutual information
# gives in the controlled language, and a correction of the chapter's reading of Fig. 6.10.
# <!-- END SOLUTION -->

# %%
from nextword.booktools.exercises.checks import check_ex_p1_07

check_ex_p1_07(mutual_information, pairs)
