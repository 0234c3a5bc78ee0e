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
# <!-- BEGIN SOLUTION -->
# (a) Without the mask the model can read the token it must predict: trained that way, the training loss
# collapses towards 0 while generation — where the future does not exist — fails badly (§6.3). Removed
# only at test time, positions see tokens they were never trained to see: predictions degrade.
# (b) Without positions one attention layer sees its context as a bag of tokens: order-dependent
# predictions (the order-2 fillers) suffer, order-free ones (finding the subject by content) survive;
# removed from trained weights, everything shifts and the model is lost.
# (c) One head must serve both the local (previous-token) and the long-range (subject) pattern with one
# set of weights; reading the trained four heads as one mixes their scores: both degrade.
# (d) Residuals carry the token identity and each block's input forward; without them (at test time) the
# blocks' outputs replace the stream instead of adding to it — collapse. In training, deep stacks
# without residuals suffer from vanishing gradients.
# <!-- END SOLUTION -->

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
    # BEGIN SOLUTION hint="return per-token losses of shape (N, T-1), each token predicted from its prefix alone"
    x = torch.from_numpy(np.asarray(ids, dtype=np.int64))
    out = np.empty((x.shape[0], x.shape[1] - 1))
    with torch.no_grad():
        for t in range(x.shape[1] - 1):
            last = model(x[:, :t + 1])[:, -1]  # (N, V)
            out[:, t] = F.cross_entropy(last, x[:, t + 1], reduction="none").double().numpy()
    return out
    # END SOLUTION


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
# BEGIN SOLUTION hint="fill results[name] = {'teacher_forced': float, 'honest': float} for the five models"
models = {"baseline": baseline, "no mask": leaky}
for name in ("no positions", "single head", "no residual"):
    models[name] = with_config(baseline, **ABLATIONS[name])
for name, m in models.items():
    results[name] = {"teacher_forced": float(token_nll(m, test.ids).mean()),
                     "honest": float(honest_loss(m, test.ids).mean())}
# END SOLUTION
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
# <!-- BEGIN SOLUTION -->
# (a) Confirmed: retrained without the mask, the teacher-forced loss falls far below the baseline's (the
# model copies the next token; it cannot reach zero, since the last position of a window has nothing to
# copy) while its honest loss is far above the baseline's (the check below asserts that it exceeds the
# teacher-forced loss by more than 1 nat). (b)–(d) Each
# test-time removal raises the loss; removing the residuals or the positions is far more destructive than
# keeping a single head (the blocks were trained to add small corrections to the stream, and the weights
# expect positions) — which of those two is worse changes with the seed and the CPU.
# What the test-time experiment cannot show is how much each component matters *for learning*: the book
# notebook retrains without positions and finds the agreement still learned whenever its baseline has
# learned it (finding the subject is a lookup by content) while the fillers suffer: their loss is about what the current token alone
# allows. A stack *could* read order through the causal mask, but that model gets little or nothing out of it.
# <!-- END SOLUTION -->

# %%
from nextword.booktools.exercises.checks import check_ex_p1_12

check_ex_p1_12(honest_loss, results, baseline, test)
