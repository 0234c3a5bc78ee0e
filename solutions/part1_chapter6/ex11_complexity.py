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
    # BEGIN SOLUTION hint="return {'rnn': (fwd, bwd, steps), 'attention': (fwd, bwd, steps)} with int entries"
    rnn_fwd = 2 * T * d * d + 2 * (T - 1) * d * d  # X W_x, then z W_z for t = 2..T
    att_fwd = 3 * 2 * T * d * d + 2 * T * T * d + 2 * T * T * d + 2 * T * d * d  # QKV, QK^T, AV, W^O
    # backward: for C = A B, dA = dC B^T and dB = A^T dC, two products of the same size
    return {"rnn": (rnn_fwd, 2 * rnn_fwd, T), "attention": (att_fwd, 2 * att_fwd, 1)}
    # END SOLUTION


for T, d in ((128, 512), (4096, 512)):
    f = flop_formulas(T, d)
    print(f"T = {T:5d}, d = {d}: RNN {f['rnn'][0] / 1e9:7.3f} GFLOP fwd in {f['rnn'][2]} sequential steps; "
          f"attention {f['attention'][0] / 1e9:7.3f} GFLOP fwd in {f['attention'][2]} step(s); "
          f"ratio {f['attention'][0] / f['rnn'][0]:.2f}")

# %% [markdown]
# **Complexity and trade-off.**
# <!-- BEGIN SOLUTION -->
# Forward, one layer: the RNN costs $4Td^2-2d^2=O(Td^2)$ and the attention layer
# $8Td^2+4T^2d=O(Td^2+T^2d)$; the backward pass of each is twice its forward (each product needs two
# products of the same size), so the totals keep the same orders: RNN $O(Td^2)$, attention
# $O(Td^2+T^2d)$. Memory for training follows the same pattern: the RNN stores $T$ states ($O(Td)$), the
# attention layer also the $T\times T$ weights ($O(T^2)$ per head) unless they are recomputed.
#
# The difference that matters is **depth**. The RNN's $T$ products $z[t-1]W_z$ form a chain: step $t$
# cannot start before step $t-1$ ends, so its $O(Td^2)$ work runs as $T$ small matrix–vector products,
# one after another — forward and, by backpropagation through time, backward. Attention's work is a
# handful of large matrix products with no dependency between positions: sequential depth 1 per layer,
# so a GPU can run all of it at once.
#
# Total work always favours the RNN: attention does at least twice its FLOPs (four $d\times d$
# projections against two), and the $T^2d$ term takes over once $T>2d$ — at $d=512$ the ratio is 2.26
# for $T=128$ and 10.0 for $T=4096$ (computed below the formulas). Wall-clock
# time on parallel hardware favours attention, because it turns the computation into a few big, dense
# matrix multiplications that keep thousands of arithmetic units busy, while the RNN leaves them idle
# waiting for the previous step. That is the trade the chapter describes: more total computation
# (quadratic in $T$) bought for $O(1)$ sequential depth and a path of length one between any two positions.
# At generation time the picture changes: both produce one token per step, and a KV cache makes each
# attention step $O(d^2+Td)$ (the new token's projections, then its scores and weighted sum over $T$ cached
# keys and values) against the RNN's $O(d^2)$.
# <!-- END SOLUTION -->

# %%
from nextword.booktools.exercises.checks import check_ex_p1_11

check_ex_p1_11(flop_formulas)
