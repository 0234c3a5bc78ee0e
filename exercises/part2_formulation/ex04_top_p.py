# %% [markdown]
# > Work on your own copy (`.venv/bin/nextword exercises copy ~/my-exercises` in a terminal; a
# > `git pull` rewrites the repository's `exercises/`). Replace each `NotImplementedError` stub, then
# > run the self-check cell at the end: it lists every check, ✓ or ✗. Stuck? `hint("p2_04", 1)`
# > gives a first hint, tiers 2 and 3 say more. Written answers: after trying, `reveal("p2_04")`.
# > Where you stand on all exercises: `.venv/bin/nextword grade --dir ~/my-exercises`.
# > (For maintainers: this file is generated from `solutions/` by
# > `python -m nextword.booktools.exercises build`; change the solution, not this file.)

# %%
from nextword.booktools.exercises import hint, reveal  # noqa: F401  (hints and model answers on demand)

# %% [markdown]
# # Exercise 04 — Nucleus (top-p) filtering
# **Part:** 2 · **Difficulty:** ★ · **Book notebook:** book/part2_formulation/06_sequence_generation
#
# §6.3 samples each token from the model's conditional $\pi_m(\cdot\mid f_{1:m-1})$, possibly at a
# changed temperature (Eq. 5.7, Remark 6.2). A common refinement is *nucleus* (top-p) filtering
# (Holtzman et al., 2020): rank the tokens by probability, keep the smallest set whose total
# probability reaches a chosen mass $p_{\mathrm{nuc}}$, and renormalise over that set before sampling.
#
# 1. Implement `top_p_filter(logits, p)` for a logit vector of shape `(V,)` and a mass
#    $0<p_{\mathrm{nuc}}\le1$ (`p` in code): return a
#    vector of the same shape that keeps the logits of the nucleus unchanged and sets every other
#    entry to $-\infty$. The nucleus is the shortest prefix of the ranking (most likely first) whose
#    probability mass is $\ge p_{\mathrm{nuc}}$; keep also every token *tied* with the last kept one, so the result
#    does not depend on how ties are ordered. Compute the probabilities with a stable softmax.
# 2. Implement `nucleus_probs(logits, p)`: the renormalised distribution sampled from, shape `(V,)`.
# 3. In words: which values of $p_{\mathrm{nuc}}$ give greedy decoding (6.4) and plain sampling (§6.3)? Is a
#    sequence generated with top-p filtering an exact draw from $\pi_{1:T}$ conditioned on the
#    prompt, and what happens to the cross-entropy (Example 8.1) of real text under the filtered
#    model?
#
# Do not import `nextword.decoding` (the checker uses its `top_p_filter` to compare).

# %%
import numpy as np

from nextword.attention import softmax

logits_demo = np.log(np.array([0.5, 0.3, 0.15, 0.05]))


# %%
def top_p_filter(logits: np.ndarray, p: float) -> np.ndarray:
    """Keep the nucleus of ``logits (V,)`` unchanged, set the rest to -inf."""
    raise NotImplementedError("return the logits (V,) with every token outside the nucleus set to -inf (stuck? hint('p2_04', 1))")


def nucleus_probs(logits: np.ndarray, p: float) -> np.ndarray:
    """The distribution top-p sampling draws from, shape (V,)."""
    raise NotImplementedError("return the probabilities (V,) of the renormalised nucleus (stuck? hint('p2_04', 1))")


for p in (0.4, 0.7, 0.85, 0.96, 1.0):
    kept = np.isfinite(top_p_filter(logits_demo, p))
    print(f"p = {p:.2f}: keeps {int(kept.sum())} tokens, probabilities {np.round(nucleus_probs(logits_demo, p), 4).tolist()}")

# %% [markdown]
# **Answer to 3.**
# *Your answer here.* (Once you have written it, `reveal("p2_04", 1)` shows a model answer.)

# %%
from nextword.booktools.exercises.checks import check_ex_p2_04

check_ex_p2_04(top_p_filter, nucleus_probs)
