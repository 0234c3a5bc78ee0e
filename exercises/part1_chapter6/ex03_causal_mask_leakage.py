# %% [markdown]
# > Work on your own copy (`.venv/bin/nextword exercises copy ~/my-exercises` in a terminal; a
# > `git pull` rewrites the repository's `exercises/`). Replace each `NotImplementedError` stub, then
# > run the self-check cell at the end: it lists every check, ✓ or ✗. Stuck? `hint("p1_03", 1)`
# > gives a first hint, tiers 2 and 3 say more. Written answers: after trying, `reveal("p1_03")`.
# > Where you stand on all exercises: `.venv/bin/nextword grade --dir ~/my-exercises`.
# > (For maintainers: this file is generated from `solutions/` by
# > `python -m nextword.booktools.exercises build`; change the solution, not this file.)

# %%
from nextword.booktools.exercises import hint, reveal  # noqa: F401  (hints and model answers on demand)

# %% [markdown]
# # Exercise 03 — What goes wrong without the causal mask
# **Part:** 1 · **Difficulty:** ★★ · **Book notebook:** book/part1_chapter6/6_3_causal_masking
#
# Chapter 6, Exercise 3. Explain why causal masking is necessary for training an autoregressive
# language model, and describe in detail what happens if a transformer is trained for next-word
# prediction while every position may attend to every position, future included.
#
# Answer with an experiment. A small `TinyLM` **without** the mask is trained below on a random
# order-2 Markov source whose entropy rate $H$ (the best loss any predictor of the next symbol from the
# past can reach) is known.
#
# 1. Implement `generation_style_loss(model, windows)`: the mean negative log-likelihood of $w[t+1]$
#    when the model only gets $w[1..t]$ — one forward pass over the prefix, logits of its last position —
#    for $t=1..T-1$ in every window of $T$ tokens. This is how a generator uses the model.
# 2. Compare it with the usual *teacher-forced* loss — one forward pass over the whole window, every
#    position predicting the next true token (`evaluate_loss`, the loss training minimises) — and with $H$.
# 3. Describe the failure mode in words.

# %%
import numpy as np
import torch
import torch.nn.functional as F

from nextword.booktools.display import produced
from nextword.data import markov_source
from nextword.torch.models.lm import LMConfig, TinyLM
from nextword.torch.training.token_lm import evaluate_loss, train_lm

torch.set_num_threads(1)
source = markov_source(8, 2, np.random.default_rng(0), concentration=0.3)
H = source.entropy_rate()
block = 32
train_stream = source.sample(20_000, np.random.default_rng(1))
windows = source.sample(64 * block, np.random.default_rng(2)).reshape(64, block)  # (64, 32) test windows
model = TinyLM(LMConfig(vocab_size=8, d_model=32, num_heads=2, num_layers=1, max_len=block, causal=False), seed=0)
losses = train_lm(model, train_stream, steps=150, batch_size=32, block_size=block, lr=3e-3, seed=0, progress=False)
print(f"entropy rate H = {H:.3f} nats; final training loss {produced(np.mean(losses[-10:]), '.3f')}")


# %%
@torch.no_grad()
def generation_style_loss(model: TinyLM, windows: np.ndarray) -> float:
    """Mean NLL of w[t+1] from a forward pass over w[1..t] alone (its last position), t = 1..T-1."""
    raise NotImplementedError("return a float: the mean NLL (nats) of each w[t] predicted from w[:t] alone, t = 1..T-1 (stuck? hint('p1_03', 1))")


teacher = evaluate_loss(model, windows)
gen = generation_style_loss(model, windows)
print(f"teacher-forced loss {produced(teacher, '.3f')} | generation-style loss {produced(gen, '.3f')} | H {H:.3f} | "
      f"uniform {np.log(8):.3f}")  # check_ex_p1_03 below asserts teacher < H < gen - 0.5

# %% [markdown]
# **The failure mode.**
# *Your answer here.* (Once you have written it, `reveal("p1_03", 1)` shows a model answer.)

# %%
from nextword.booktools.exercises.checks import check_ex_p1_03

check_ex_p1_03(generation_style_loss, model, windows, H)
