# %% [markdown]
# > Work on your own copy (`.venv/bin/nextword exercises copy ~/my-exercises` in a terminal; a
# > `git pull` rewrites the repository's `exercises/`). Replace each `NotImplementedError` stub, then
# > run the self-check cell at the end: it lists every check, ✓ or ✗. Stuck? `hint("p1_12", 1)`
# > gives a first hint, tiers 2 and 3 say more. Written answers: after trying, `reveal("p1_12")`.
# > Where you stand on all exercises: `.venv/bin/nextword grade --dir ~/my-exercises`.
# > (For maintainers: this file is generated from `solutions/` by
# > `python -m nextword.booktools.exercises build`; change the solution, not this file.)

# %%
from nextword.booktools.exercises import hint, reveal  # noqa: F401  (hints and model answers on demand)

# %% [markdown]
# # Exercise 12 — Ablating a trained transformer
# **Part:** 1 · **Difficulty:** ★★★ · **Book notebook:** book/part1_chapter6/6_8_ablations
#
# Chapter 6, Exercise 12. Remove from a trained transformer (a) the causal mask, (b) the positional
# encoding, (c) multi-head attention (single head instead), or (d) the residual connections. Predict the
# failure mode or degradation of each on language modelling, and justify it by the role of the component.
#
# Write your predictions first (cell below), then test them. A 2-layer, 4-head `TinyLM` is trained on
# `AgreementTask` (order-2 fillers + subject agreement); `nextword.torch.probes.ablation.with_config` removes a
# component from the trained weights. For the mask, a model is also *retrained* without it, because the
# failure the chapter has in mind (§6.3) appears in training.
#
# 1. Implement `honest_loss(model, ids)`: per-token losses `(N, T-1)` in nats (the natural log) for `ids` of shape
#    `(N, T)`, where the prediction of `ids[:, t+1]`
#    comes from running the model on `ids[:, :t+1]` only (as in generation).
# 2. Fill `results[name] = {"teacher_forced": ..., "honest": ...}` (mean losses per token over all positions
#    of `test.ids`, in nats) for
#    `"baseline"`, `"no mask"` (retrained), `"no positions"`, `"single head"`, `"no residual"` (test time).
# 3. Compare with your predictions.

# %% [markdown]
# **Predictions.**
# *Your answer here.* (Once you have written it, `reveal("p1_12", 1)` shows a model answer.)

# %%
import dataclasses

import numpy as np
import torch
import torch.nn.functional as F

from nextword.booktools.display import produced
from nextword.torch.probes.ablation import ABLATIONS, token_nll, with_config
from nextword.chapter6 import AgreementTask
from nextword.torch.models.lm import LMConfig, TinyLM
from nextword.torch.training.token_lm import train_lm

torch.set_num_threads(1)
task = AgreementTask.make(np.random.default_rng(0))
train = task.sample(4000, np.random.default_rng(1))
test = task.sample(256, np.random.default_rng(2))


# %%
def honest_loss(model: TinyLM, ids: np.ndarray) -> np.ndarray:
    """Per-token losses (N, T-1): token t+1 predicted from the model run on tokens 0..t only."""
    raise NotImplementedError("return per-token losses of shape (N, T-1), each token predicted from its prefix alone (stuck? hint('p1_12', 1))")


# %% [markdown]
# **Try `honest_loss` on a tiny untrained model** before the training below (a few seconds). For a causal
# model the prefix-only losses must equal the teacher-forced ones (`token_nll`, one pass): position $t$
# never sees beyond $t$ anyway. For the same weights without the mask they must differ — that difference is
# what the exercise measures.

# %%
ids_by_hand = np.random.default_rng(0).integers(0, 5, size=(2, 6))  # (N, T): two sequences of 6 tokens
for causal in (True, False):
    tiny = TinyLM(LMConfig(vocab_size=5, d_model=8, num_heads=2, num_layers=2, max_len=6, causal=causal,
                           init_std=0.3), seed=0)
    got = honest_loss(tiny, ids_by_hand)
    gap = None if got is None else float(np.max(np.abs(np.asarray(got) - token_nll(tiny, ids_by_hand))))
    expected = "equal" if causal else "differ"
    right = gap is not None and np.shape(got) == (2, 5) and ((gap < 1e-5) if causal else (gap > 1e-3))
    print(f"{'causal' if causal else 'no mask'}: honest and teacher-forced losses should {expected}: "
          f"{'right' if right else 'not yet'}")

# %%
cfg = LMConfig(vocab_size=task.vocab_size, d_model=32, num_heads=4, num_layers=2, max_len=task.length)
baseline = TinyLM(cfg, seed=0)
train_lm(baseline, train.ids, steps=600, batch_size=32, lr=1e-2, seed=0, progress=False)
leaky = TinyLM(dataclasses.replace(cfg, causal=False), seed=0)  # retrained without the mask
train_lm(leaky, train.ids, steps=600, batch_size=32, lr=1e-2, seed=0, progress=False)

results = {}
raise NotImplementedError("fill results[name] = {'teacher_forced': float, 'honest': float} for the five models (stuck? hint('p1_12', 1))")
# a trained model's digits change with the seed and the CPU: they are shown through produced() (not compared
# by nbval); the text around them states what check_ex_p1_12 below asserts (with the same 1e-3 and 0.05 nat)
base = results["baseline"]["honest"]
for name, r in results.items():
    same = abs(r["teacher_forced"] - r["honest"]) < 1e-3
    print(f"{name:14s} teacher-forced {produced(r['teacher_forced'], '.3f')} {'=' if same else '≠'} honest "
          f"{produced(r['honest'], '.3f')} nats;  honest loss "
          f"{'above' if r['honest'] > base + 0.05 else 'not above'} the baseline's (by more than 0.05 nat)")
removed = [n for n in results if n not in ("baseline", "no mask")]
print("test-time removals, largest honest loss first:",
      produced(sorted(removed, key=lambda n: -results[n]["honest"])))  # an ordering of produced numbers

# %% [markdown]
# **Comparison with the predictions.**
# *Your answer here.* (Once you have written it, `reveal("p1_12", 2)` shows a model answer.)

# %%
from nextword.booktools.exercises.checks import check_ex_p1_12

check_ex_p1_12(honest_loss, results, baseline, test)
