# %% [markdown]
# > Work on your own copy (`.venv/bin/nextword exercises copy ~/my-exercises` in a terminal; a
# > `git pull` rewrites the repository's `exercises/`). Replace each `NotImplementedError` stub, then
# > run the self-check cell at the end: it lists every check, ✓ or ✗. Stuck? `hint("p1_11", 1)`
# > gives a first hint, tiers 2 and 3 say more. Written answers: after trying, `reveal("p1_11")`.
# > Where you stand on all exercises: `.venv/bin/nextword grade --dir ~/my-exercises`.
# > (For maintainers: this file is generated from `solutions/` by
# > `python -m nextword.booktools.exercises build`; change the solution, not this file.)

# %%
from nextword.booktools.exercises import hint, reveal  # noqa: F401  (hints and model answers on demand)

# %% [markdown]
# # Exercise 11 — Parallel attention vs sequential recurrence: cost and depth
# **Part:** 1 · **Difficulty:** ★★★ · **Book notebook:** book/part1_chapter6/6_6_context_representation
#
# Chapter 6, Exercise 11. Compare the computational complexity of processing a sequence of length $T$
# with width $d$ for an RNN and for a transformer, forward and backward, and discuss the trade-off
# between parallelism and total computation.
#
# Count it exactly for one layer of each, with matrix-multiplication FLOPs ($2n_1n_2n_3$ for an
# $(n_1\times n_2)$ by $(n_2\times n_3)$ product; elementwise work is lower order):
#
# * RNN: $U=XW_x$ for all steps at once, then $z[1]=\tanh(U[1])$ and $z[t]=\tanh(U[t]+z[t-1]W_z)$
#   (the state $z[t]$ and its matrix $W_z$ as in 6.1; the book keeps $h$ for the number of heads);
# * single-head causal attention: $Q,K,V=XW^Q,XW^K,XW^V$, scores $QK^\top$ (all $T\times T$ computed,
#   then masked), weights times $V$, output projection $W^O$.
#
# Implement `flop_formulas(T, d)` returning, for each model, (forward FLOPs, backward FLOPs, number of
# steps that must run one after another). The checker measures them with torch's FLOP counter and the
# dependency graphs of `nextword.chapter6.recurrent`. Then give the big-O summary and the discussion.

# %%
import numpy as np


# %%
def flop_formulas(T: int, d: int) -> dict[str, tuple[int, int, int]]:
    """{"rnn": (fwd, bwd, sequential_steps), "attention": (fwd, bwd, sequential_steps)} for one layer."""
    raise NotImplementedError("return {'rnn': (fwd, bwd, steps), 'attention': (fwd, bwd, steps)} with int entries (stuck? hint('p1_11', 1))")


for T, d in ((128, 512), (4096, 512)):
    f = flop_formulas(T, d)
    print(f"T = {T:5d}, d = {d}: RNN {f['rnn'][0] / 1e9:7.3f} GFLOP fwd in {f['rnn'][2]} sequential steps; "
          f"attention {f['attention'][0] / 1e9:7.3f} GFLOP fwd in {f['attention'][2]} step(s); "
          f"ratio {f['attention'][0] / f['rnn'][0]:.2f}")

# %% [markdown]
# **Complexity and trade-off.**
# *Your answer here.* (Once you have written it, `reveal("p1_11", 1)` shows a model answer.)

# %%
from nextword.booktools.exercises.checks import check_ex_p1_11

check_ex_p1_11(flop_formulas)
