# %% [markdown]
# # Exercise 01 — The KL objective, position by position
# **Part:** 2 · **Difficulty:** ★★ · **Book notebook:** book/part2_formulation/02_objective_kl
#
# The training objective of Optimisation Problem 4.4 is the KL divergence between the data law
# $\mathbf p_{1:L}$ and the model $\pi_{1:L}$ on whole sequences. Using the autoregressive
# factorisations (3.1) and (3.3), (4.2a–c) and (4.4b) rewrite it as a sum over positions:
#
# $$J=\sum_{\ell=1}^{L}\ \mathbb E_{f_{1:\ell-1}\sim\mathbf p_{1:\ell-1}}\ D_{\rm KL}\big(\mathbf p_\ell(\cdot\mid f_{1:\ell-1})\,\big\|\,\pi_\ell(\cdot\mid f_{1:\ell-1})\big).$$
#
# A model is given as a function `next_probs(prefix) -> (V,)` returning the next-token law after
# a tuple of token ids (the empty tuple gives the first token's law).
#
# 1. Implement `per_position_kl(p_next, q_next, V, L)` returning the $L$ terms of the sum, by
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
V_demo, L_demo = 2, 4
p_table = {ctx: rng.dirichlet(np.ones(V_demo)) for ctx in [(), (0,), (1,)]}
q_table = {ctx: rng.dirichlet(np.ones(V_demo)) for ctx in [(), (0,), (1,)]}
p_demo = lambda prefix: p_table[tuple(prefix[-1:])]  # noqa: E731  (a first-order Markov chain)
q_demo = lambda prefix: q_table[tuple(prefix[-1:])]  # noqa: E731


# %%
def per_position_kl(p_next, q_next, V: int, L: int) -> np.ndarray:
    """Terms E_{f_{1:l-1} ~ p} KL(p_l(.|f_{1:l-1}) || pi_l(.|f_{1:l-1})) for l = 1..L, shape (L,)."""
    # BEGIN SOLUTION hint="return an array of shape (L,): the expected KL between the next-token laws at each position"
    out = np.zeros(L)
    for l in range(L):
        for prefix in itertools.product(range(V), repeat=l):
            weight = 1.0
            for m in range(l):  # probability of the prefix under p, by (3.1)
                weight *= p_next(prefix[:m])[prefix[m]]
            if weight > 0:
                out[l] += weight * kl_divergence(p_next(prefix), q_next(prefix))
    return out
    # END SOLUTION


terms = per_position_kl(p_demo, q_demo, V_demo, L_demo)
joint = kl_divergence(sequence_distribution(p_demo, V_demo, L_demo)[0], sequence_distribution(q_demo, V_demo, L_demo)[0])
print("per-position terms:", np.round(terms, 4))
print(f"sum of terms {terms.sum():.6f}  vs  joint KL {joint:.6f}")

# %% [markdown]
# **Answer to 3.**
# <!-- BEGIN SOLUTION -->
# Every term of the sum is an expectation of a KL divergence, hence non-negative, so each single
# term is at most the total: $\mathbb E_{f_{1:m-1}}D_{\rm KL}(\mathbf p_m\|\pi_m)\le J$ for every $m$.
# Making $J$ small therefore makes the expected next-token error small at every position at once —
# a quantitative guarantee for generation, which uses exactly these conditionals. With one
# parameter vector shared by all positions, the positions compete for it and the minimiser balances
# them; if each $\pi_\ell$ had its own parameters $\theta_\ell$, the sum would split into $L$ separate
# problems, each minimised by $\pi_\ell=\mathbf p_\ell$ on its own (Remark 4.5). The bound still holds
# then, but the sharing is what lets data at one length inform predictions at all lengths.
# <!-- END SOLUTION -->

# %%
from nextword.booktools.exercises.checks import check_ex_p2_01

check_ex_p2_01(per_position_kl)
