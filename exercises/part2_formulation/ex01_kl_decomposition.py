# %% [markdown]
# > Work on your own copy (`.venv/bin/nextword exercises copy ~/my-exercises` in a terminal; a
# > `git pull` rewrites the repository's `exercises/`). Replace each `NotImplementedError` stub, then
# > run the self-check cell at the end: it lists every check, ✓ or ✗. Stuck? `hint("p2_01", 1)`
# > gives a first hint, tiers 2 and 3 say more. Written answers: after trying, `reveal("p2_01")`.
# > Where you stand on all exercises: `.venv/bin/nextword grade --dir ~/my-exercises`.
# > (For maintainers: this file is generated from `solutions/` by
# > `python -m nextword.booktools.exercises build`; change the solution, not this file.)

# %%
from nextword.booktools.exercises import hint, reveal  # noqa: F401  (hints and model answers on demand)

# %% [markdown]
# # Exercise 01 — The KL objective, position by position
# **Part:** 2 · **Difficulty:** ★★ · **Book notebook:** book/part2_formulation/02_objective_kl
#
# The training objective of Optimisation Problem 4.4 is the KL divergence between the data law
# $\mathbf p_{1:T}$ and the model $\pi_{1:T}$ on whole sequences. Using the autoregressive
# factorisations (3.1) and (3.3), (4.2a–c) and (4.4b) rewrite it as a sum over positions (the paper
# writes the length as $L$ and a position as $\ell$; here $T$ and $t$, as in Chapter 6):
#
# $$J=\sum_{t=1}^{T}\ \mathbb E_{f_{1:t-1}\sim\mathbf p_{1:t-1}}\ D_{\rm KL}\big(\mathbf p_t(\cdot\mid f_{1:t-1})\,\big\|\,\pi_t(\cdot\mid f_{1:t-1})\big).$$
#
# A model is given as a function `next_probs(prefix) -> (V,)` returning the next-token law after
# a tuple of token ids (the empty tuple gives the first token's law). In code `V` is the vocabulary's size
# $\lvert\mathcal V\rvert$ (the book keeps $V$ for a matrix of values), and the tokens are `0, …, V-1`.
#
# 1. Implement `per_position_kl(p_next, q_next, V, T)` returning the $T$ terms of the sum, by
#    enumerating prefixes. Use `nextword.theory.formulation.objectives.kl_divergence` for one KL between two
#    vectors, but not `kl_decomposition`.
# 2. Check on the example below that the terms add up to the joint KL.
# 3. In words: why does driving $J$ to a small value control the next-token error at *every*
#    position (Remark 4.6)? What would change if each position had its own parameters (Remark 4.5)?

# %%
import itertools

import numpy as np

from nextword.theory.formulation import kl_divergence, sequence_distribution

rng = np.random.default_rng(0)
V_demo, T_demo = 2, 4
p_table = {ctx: rng.dirichlet(np.ones(V_demo)) for ctx in [(), (0,), (1,)]}
q_table = {ctx: rng.dirichlet(np.ones(V_demo)) for ctx in [(), (0,), (1,)]}
p_demo = lambda prefix: p_table[tuple(prefix[-1:])]  # noqa: E731  (a first-order Markov chain)
q_demo = lambda prefix: q_table[tuple(prefix[-1:])]  # noqa: E731


# %%
def per_position_kl(p_next, q_next, V: int, T: int) -> np.ndarray:
    """Terms E_{f_{1:t-1} ~ p} KL(p_t(.|f_{1:t-1}) || pi_t(.|f_{1:t-1})) for t = 1..T, shape (T,)."""
    raise NotImplementedError("return an array of shape (T,): the expected KL between the next-token laws at each position (stuck? hint('p2_01', 1))")


terms = per_position_kl(p_demo, q_demo, V_demo, T_demo)
joint = kl_divergence(sequence_distribution(p_demo, V_demo, T_demo)[0], sequence_distribution(q_demo, V_demo, T_demo)[0])
print("per-position terms:", np.round(terms, 4))
print(f"sum of terms {terms.sum():.6f}  vs  joint KL {joint:.6f}")

# %% [markdown]
# **Answer to 3.**
# *Your answer here.* (Once you have written it, `reveal("p2_01", 1)` shows a model answer.)

# %%
from nextword.booktools.exercises.checks import check_ex_p2_01

check_ex_p2_01(per_position_kl)
