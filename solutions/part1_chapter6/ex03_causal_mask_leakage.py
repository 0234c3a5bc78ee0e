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
    # BEGIN SOLUTION hint="return a float: the mean NLL (nats) of each w[t] predicted from w[:t] alone, t = 1..T-1"
    nll = [F.cross_entropy(model(torch.from_numpy(windows[:, :t]))[:, -1], torch.from_numpy(windows[:, t]))
           for t in range(1, windows.shape[1])]
    return float(torch.stack(nll).mean())
    # END SOLUTION


teacher = evaluate_loss(model, windows)
gen = generation_style_loss(model, windows)
print(f"teacher-forced loss {produced(teacher, '.3f')} | generation-style loss {produced(gen, '.3f')} | H {H:.3f} | "
      f"uniform {np.log(8):.3f}")  # check_ex_p1_03 below asserts teacher < H < gen - 0.5

# %% [markdown]
# **The failure mode.**
# <!-- BEGIN SOLUTION -->
# The teacher-forced loss is far *below* the entropy rate, which no predictor that sees only the past
# can achieve: the model is not predicting, it is reading the answer. In a training window the target of
# position $t$ is the token at position $t+1$, which is also an input; without the mask position $t$
# may attend to it, and the cheapest way to minimise cross-entropy is one attention head that looks one
# step ahead plus a value/output path that copies the token identity. Training drives the loss far
# below $H$ within 150 steps (the final training loss is printed above) — though never to
# zero, since the last position of each window has no later token to copy — and the gradient never
# asks the model to learn $P(w[t+1]\mid w[1..t])$.
#
# At generation time position $t$ is the last one: $w[t+1]$ does not exist yet. The head that learned to
# look one step ahead now spreads its weight over whatever keys there are, the copied "answer" is noise,
# and the model is confidently wrong: the generation-style loss is worse than a uniform guess. Sampled
# text degenerates (notebook 6.3 shows long runs of one symbol). There is a second, subtler mismatch:
# even the earlier positions of a prefix compute different representations than in training, because
# in training they could see tokens that are now absent — training and generation no longer compute
# the same function (the chapter's Fig. 6.17; Figure 6.3.6 of notebook 6.3 measures it). The mask removes the shortcut (row $i$ of the attention matrix has no
# entry for $j>i$), forces the model to use only the past, and makes the training loss an honest
# estimate of the loss at generation — in notebook 6.3 the masked model's two losses agree within 0.02 nats.
# <!-- END SOLUTION -->

# %%
from nextword.booktools.exercises.checks import check_ex_p1_03

check_ex_p1_03(generation_style_loss, model, windows, H)
