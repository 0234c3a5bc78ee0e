# %% [markdown]
# # 2.6 Sequence generation: greedy, exhaustive, beam, sampling
#
# *Source: Baptista, Stuart, Tran, "Large Language Models: A Mathematical Formulation", §6
# (Eqs. 6.1–6.4, Example 6.1, Remarks 6.2–6.3).*
#
# A trained model gives next-token conditionals $\pi_m(\cdot\mid f_{1:m-1})$; §6 turns them into
# text. Deterministic decoders look for the most likely continuation (6.3) — exactly by enumeration,
# greedily (6.4), or with a beam (Example 6.1); stochastic decoders sample, possibly at a changed
# temperature (Remark 6.2) or only for the first few tokens (§6.4). §6.1 adds EOS and PAD.
#
# The model: a character 4-gram (`nextword.decoding.ngram.NGramLM`, add-0.05 smoothing) fitted on the training
# split of tiny Shakespeare — a real trained model with $|\mathbf V|=66$ whose probabilities are cheap
# enough to enumerate three characters ahead ($66^3\approx2.9\times10^5$ continuations). The decoders
# are those of `nextword.decoding`, which accept any `next_logits(prefix)` callable (a
# `nextword.torch.models.lm.TinyLM` plugs in through `next_logits_fn`). Default run: 6 prompts for the
# exhaustive comparison; `FULL=1` uses 20.

# %% tags=["parameters"]
import os

FULL = os.environ.get("FULL", "0") == "1"
N_PROMPTS = 20 if FULL else 6  # prompts for the exhaustive (6.3) comparison, 3 characters each
N_SAMPLES = 4000 if FULL else 1500  # draws for the exactness check of §6.3
N_RUNS = 100 if FULL else 50  # decodes per temperature / per L'

# %%
import matplotlib.pyplot as plt
import numpy as np
import sympy as sp
from scipy import stats

from nextword.data import load_corpus
from nextword.decoding import (
    apply_temperature, beam_search, exhaustive_search, greedy, log_softmax, lookahead_search, mixed,
    pad_to_length, sample, sequence_log_prob,
)
from nextword.evaluation import cross_entropy
from nextword.decoding import NGramLM, random_table_model, table_model
from nextword.booktools.plotting import use_book_style
from nextword.tokenizers import CharTokenizer

use_book_style()
rng = np.random.default_rng(0)

# %%
corpus = load_corpus("shakespeare")
tok = CharTokenizer.train(corpus.train)
V = tok.vocab_size
lm = NGramLM(V, order=4, k=0.05).fit(tok.encode_array(corpus.train))


class Counted:
    """Wrap next_logits and count model evaluations (the cost unit of §6.2)."""

    def __init__(self, f):
        self.f, self.calls = f, 0

    def __call__(self, prefix):
        self.calls += 1
        return self.f(prefix)


held = tok.encode_array(corpus.val[:5_000])
lp = np.array([lm.next_logits(held[max(0, t - 3):t])[held[t]] for t in range(3, len(held))])
print(f"|V| = {V}; held-out cross-entropy of the 4-gram: {cross_entropy(lp):.3f} nats/char")


def show(ids, start):
    return repr(tok.decode(ids[start:]))


# %% [markdown]
# ## 1. Greedy decoding (6.4) is not the most likely sequence (6.3)
#
# Greedy commits to the most likely next token and never revisits it. The smallest counterexample,
# in exact arithmetic: first token $a$ with probability $\tfrac12$ or $b$ with $\tfrac25$; after $a$
# the best second token has $\tfrac25$, after $b$ it has $\tfrac9{10}$.

# %%
pa, pb, pa2, pb2 = sp.Rational(1, 2), sp.Rational(2, 5), sp.Rational(2, 5), sp.Rational(9, 10)
print(f"greedy path a->: {pa * pa2}, best path b->: {pb * pb2}; greedy loses a factor {sp.nsimplify(pa * pa2 / (pb * pb2))}")
toy = table_model(3, 2, {(): np.log([.5, .4, .1]), (0,): np.log([.4, .3, .3]), (1,): np.log([.05, .9, .05])})
assert greedy(toy.next_logits, [], 2) == [0, 0] and exhaustive_search(toy.next_logits, [], 2) == [1, 1]

# %% [markdown]
# On the character model, greedy decoding from a speaker's name falls into a loop — the most likely
# next character, repeated, cycles through a few frequent words:

# %%
g_long = greedy(lm.next_logits, tok.encode("ROMEO:\n"), 60)
print(show(g_long, 7))

# %% [markdown]
# ## 2. Greedy vs exhaustive (6.3) vs beam search, three characters ahead
#
# For each prompt (a random 12-character window of held-out text) we decode $L-\ell_{\rm prompt}=3$
# characters with greedy, exhaustive search over all $66^3$ continuations, and beam search of widths
# 1–16, and compare $\log\pi(f_{\ell+1:\ell+3}\mid f_{1:\ell})$. Costs are counted in model
# evaluations: greedy needs 3, beam $\le 1+k+k$, exhaustive $1+66+66^2=4423$. For the first prompt the
# exhaustive answer is cross-checked against a brute-force log-probability tensor $(66,66,66)$.

# %%
starts = rng.integers(0, len(corpus.val) - 12, N_PROMPTS)
prompts = [tok.encode(corpus.val[s:s + 12]) for s in starts]
widths = [1, 2, 4, 8, 16]
n_new = 3
rows = []
for i, p in enumerate(prompts):
    f = Counted(lm.next_logits)
    g = greedy(f, p, n_new)
    c_g, f.calls = f.calls, 0
    e = exhaustive_search(f, p, n_new)
    c_e, f.calls = f.calls, 0
    score = lambda s: sequence_log_prob(lm.next_logits, s, len(p))  # noqa: E731
    beams, c_b = [], []
    for w in widths:
        beams.append(beam_search(f, p, n_new, w))
        c_b.append(f.calls)
        f.calls = 0
    rows.append((score(g), score(e), [score(b) for b in beams]))
    assert beams[0] == g  # width 1 is greedy
    assert all(score(b) <= score(e) + 1e-12 for b in beams + [g])  # (6.3) is the maximum
    if i == 0:  # brute force: the full log-probability tensor of 3 more characters
        l1 = lm.next_logits(p)  # (V,)
        l2 = np.stack([lm.next_logits(p + [a]) for a in range(V)])  # (V, V)
        l3 = np.stack([[lm.next_logits(p + [a, b]) for b in range(V)] for a in range(V)])  # (V, V, V)
        total = l1[:, None, None] + l2[:, :, None] + l3
        assert list(np.unravel_index(np.argmax(total), total.shape)) == e[len(p):]
    print(f"{tok.decode(p)!r:16s} greedy {show(g, len(p)):7s} {score(g):7.3f} | exhaustive {show(e, len(p)):7s} "
          f"{score(e):7.3f} | beam k=4 {show(beams[2], len(p)):7s} {score(beams[2]):7.3f}")
print(f"model calls: greedy {c_g}, beam k={widths} -> {c_b}, exhaustive {c_e}")
rows_g = np.array([r[0] for r in rows])
rows_e = np.array([r[1] for r in rows])
rows_b = np.array([r[2] for r in rows])  # (prompts, widths)
print(f"greedy optimal for {np.sum(np.isclose(rows_g, rows_e))}/{len(prompts)} prompts; "
      f"beam k=4 for {np.sum(np.isclose(rows_b[:, 2], rows_e))}/{len(prompts)}")

# %% [markdown]
# Greedy is often already optimal for such a short horizon, but not always; a beam of a few
# candidates closes the gap at a small multiple of greedy's cost, while exhaustive search is
# $|\mathbf V|^{n-1}$ times more expensive — the reason (6.3) is intractable beyond toy sizes.
#
# ## 3. Example 6.1: the windowed look-ahead is not beam search
#
# Example 6.1 describes "beam search" as: at each step maximise $\pi_{m:m+1}(v,v'\mid f_{1:m-1})$
# over pairs with $v$ among the $k$ greedy favourites, commit $f_m=v$, slide by one. That is a
# sliding two-token look-ahead (`lookahead_search`); beam search keeps the $k$ best *partial
# sequences* and never commits early (`beam_search`). The ledger already records the naming
# (`book/ERRATA.md`, §6.2 row); here is the evidence on random peaked Markov models ($|\mathbf V|=4$,
# 4 new tokens, $k=2$) and on the character model.

# %%
wins = {"same": 0, "look-ahead better": 0, "beam better": 0, "tie, different": 0}
for seed in range(200):
    m = random_table_model(4, 2, np.random.default_rng(seed), temperature=0.5)
    a, b = lookahead_search(m.next_logits, [0], 4, 2, 2), beam_search(m.next_logits, [0], 4, 2)
    la, lb = sequence_log_prob(m.next_logits, a, 1), sequence_log_prob(m.next_logits, b, 1)
    key = "same" if a == b else ("look-ahead better" if la > lb + 1e-12 else "beam better" if lb > la + 1e-12 else "tie, different")
    wins[key] += 1
print("200 random models:", wins)
assert wins["look-ahead better"] > 0 and wins["beam better"] > 0

f_la, f_bs = Counted(lm.next_logits), Counted(lm.next_logits)
p = tok.encode("KING HENRY")
la_out = lookahead_search(f_la, p, 12, 2, 4)
bs_out = beam_search(f_bs, p, 12, 4)
print(f"character model, 12 characters after 'KING HENRY': look-ahead {show(la_out, len(p))} "
      f"({sequence_log_prob(lm.next_logits, la_out, len(p)):.3f}, {f_la.calls} calls); "
      f"beam {show(bs_out, len(p))} ({sequence_log_prob(lm.next_logits, bs_out, len(p)):.3f}, {f_bs.calls} calls)")

# %% [markdown]
# The two disagree on a sizeable fraction of random models and neither dominates: each is sometimes
# the more likely. On the character model they happen to agree for this prompt, at different costs.
# Example 6.1's cost $k|\mathbf V|$ per step is the look-ahead's (each of the $k$
# first tokens needs one more model call, each returning $|\mathbf V|$ scores); beam search also
# costs about $k$ calls per step.
#
# ## 4. Temperature and the limit τ → 0 (Remark 6.2)
#
# Decoding at temperature $\tau$ samples from $\sigma(z/\tau)$. As $\tau\to0^+$ this tends to the
# point mass on $\arg\max z$ (when the maximum is unique), so sampling becomes greedy decoding.
# Sympy for two logits $a>b$:

# %%
a_, b_ = sp.symbols("a b", real=True)
tau = sp.Symbol("tau", positive=True)
p_top = 1 / (1 + sp.exp((b_ - a_) / tau))  # softmax((a, b)/tau)[0]
print("lim_{tau->0+} p_top =", sp.limit(p_top.subs({a_: 1, b_: 0}), tau, 0, "+"),
      "; lim_{tau->oo} p_top =", sp.limit(p_top.subs({a_: 1, b_: 0}), tau, sp.oo))

# %% [markdown]
# Numerically: for each $\tau$ we draw `N_RUNS` continuations of 20 characters and record how often the
# sample *is* the greedy continuation, how many distinct continuations appear, and the average
# per-character log-probability under the model at $\tau=1$. At $\tau=10^{-3}$ every sample equals
# greedy.

# %%
taus = [2.0, 1.0, 0.7, 0.5, 0.3, 0.1, 0.03, 1e-3]
prompt = tok.encode("ROMEO:\n")
g20 = greedy(lm.next_logits, prompt, 20)
frac_greedy, distinct, mean_lp = [], [], []
for t in taus:
    r = np.random.default_rng(1)
    outs = [sample(lm.next_logits, prompt, 20, temperature=t, rng=r) for _ in range(N_RUNS)]
    frac_greedy.append(np.mean([o == g20 for o in outs]))
    distinct.append(len({tuple(o) for o in outs}))
    mean_lp.append(np.mean([sequence_log_prob(lm.next_logits, o, len(prompt)) for o in outs]) / 20)
    print(f"tau = {t:6.3f}: P(sample == greedy) = {frac_greedy[-1]:.2f}, distinct = {distinct[-1]:3d}/{N_RUNS}, "
          f"mean log pi per char = {mean_lp[-1]:.3f}")
assert frac_greedy[-1] == 1.0 and distinct[-1] == 1
z = lm.next_logits(prompt)
assert np.allclose(np.exp(log_softmax(apply_temperature(z, 1e-4))), np.eye(V)[np.argmax(z)], atol=1e-12)

# %% [markdown]
# ## 5. Stochastic generation is exact (§6.3)
#
# Drawing $f_m\sim\pi_m(\cdot\mid f_{1:m-1})$ one position at a time samples *exactly* from
# $\pi_{1:L}$ conditioned on the prompt (the set (6.2)) — the chain rule (6.1a) read forwards. We
# check it on two-character continuations: the empirical frequencies of the 10 most likely pairs (and
# of "all others") against the exact joint probabilities, with a chi-square test.

# %%
p = tok.encode("First Citizen:\n")
l1 = lm.next_logits(p)
joint = np.exp(l1[:, None] + np.stack([lm.next_logits(p + [a]) for a in range(V)]))  # (V, V)
assert abs(joint.sum() - 1) < 1e-12
r = np.random.default_rng(2)
draws = np.array([sample(lm.next_logits, p, 2, rng=r)[-2:] for _ in range(N_SAMPLES)])  # (N, 2)
counts = np.zeros((V, V))
np.add.at(counts, (draws[:, 0], draws[:, 1]), 1)
top = np.argsort(-joint.ravel())[:10]
obs = np.append(counts.ravel()[top], N_SAMPLES - counts.ravel()[top].sum())
exp_ = N_SAMPLES * np.append(joint.ravel()[top], 1 - joint.ravel()[top].sum())
chi = stats.chisquare(obs, exp_)
for k in top[:5]:
    print(f"  {tok.decode(list(np.unravel_index(k, (V, V))))!r}: exact {joint.ravel()[k]:.4f}, "
          f"empirical {counts.ravel()[k] / N_SAMPLES:.4f}")
print(f"chi-square over the top 10 pairs + rest: p-value {chi.pvalue:.3f}")
assert chi.pvalue > 1e-3

# %% [markdown]
# ## 6. Mixing deterministic and stochastic generation (§6.4, Remark 6.3)
#
# Sample the first $L'$ new tokens, then continue greedily. With $L'=1$ (the chain-of-thought use of
# Remark 6.3) the outputs differ only through the first token, so there are at most $|\mathbf V|$ of
# them; as $L'$ grows, diversity rises towards full sampling and the average log-probability drops.

# %%
n_gen, runs = 20, N_RUNS
Lps = [0, 1, 2, 5, 10, 20]
mix_distinct, mix_lp = [], []
for Lp in Lps:
    r = np.random.default_rng(3)
    outs = [mixed(lm.next_logits, prompt, Lp, n_gen, rng=r if Lp else None) for _ in range(runs)]
    mix_distinct.append(len({tuple(o) for o in outs}))
    mix_lp.append(np.mean([sequence_log_prob(lm.next_logits, o, len(prompt)) for o in outs]) / n_gen)
    print(f"L' = {Lp:2d}: distinct {mix_distinct[-1]:3d}/{runs}, mean log pi per char {mix_lp[-1]:.3f}")
assert mix_distinct[0] == 1 and mix_distinct[1] <= V
assert mix_distinct[1] < mix_distinct[-1] and mix_lp[0] > mix_lp[-1]
assert mixed(lm.next_logits, prompt, 0, n_gen) == greedy(lm.next_logits, prompt, n_gen)

# %%
fig, axes = plt.subplots(1, 3, figsize=(14, 4), layout="constrained")
axes[0].plot(widths, (rows_b - rows_e[:, None]).T, "o-", alpha=0.7)
axes[0].axhline(0, color="k", lw=0.8)
axes[0].set_xscale("log", base=2)
axes[0].set_xlabel("beam width k")
axes[0].set_ylabel(r"$\log\pi$(beam) $-$ $\log\pi$(exhaustive)")
axes[0].set_title("one line per prompt, 3 characters")
axes[1].semilogx(taus, frac_greedy, "o-", label="P(sample = greedy)")
axes[1].semilogx(taus, np.array(distinct) / N_RUNS, "s-", label="distinct / runs")
axes[1].set_xlabel(r"temperature $\tau$")
axes[1].legend()
axes[1].set_title("Remark 6.2")
ax2 = axes[2]
ax2.plot(Lps, np.array(mix_distinct) / runs, "o-", label="distinct / runs")
ax2.set_xlabel("sampled prefix length L'")
ax2.set_ylabel("diversity")
ax3 = ax2.twinx()
ax3.plot(Lps, mix_lp, "s--", color="C1", label="mean log pi per char")
ax3.set_ylabel(r"mean $\log\pi$ per character", color="C1")
ax2.set_title("§6.4: sample L' tokens, then greedy")
plt.show()

# %% [markdown]
# **Figure 6.1.** Left: beam search (Example 6.1, standard form) against the exact maximiser of (6.3)
# for three-character continuations; width 1 is greedy (6.4); a gap of 0 means optimal. Middle:
# Remark 6.2 — as $\tau\to0$ sampling collapses onto the greedy continuation. Right: §6.4's mixed
# decoding — diversity and likelihood trade off as the sampled prefix $L'$ grows ($L'=0$ is greedy,
# $L'=20$ full sampling).
#
# ## 7. EOS and PAD (§6.1)
#
# We make the newline character the EOS token: a response is one line (greedy decoding loops and never
# ends its line here, so we sample at $\tau=0.7$). Generation stops when EOS is
# produced; the paper instead fills the remaining positions up to $L$ with PAD, whose transition
# probability is a Dirac mass once EOS has appeared. Each PAD then contributes $\log1=0$, so the
# padded and the stopped sequence have the same probability — and any non-PAD token after EOS has
# probability 0. (PAD is the unknown-character id 0 here.)

# %%
EOS, PAD, L_total = tok.encode("\n")[0], 0, 60
p = tok.encode("KING RICHARD II:\n")
out = sample(lm.next_logits, p, L_total - len(p), temperature=0.7, rng=np.random.default_rng(5), eos_id=EOS)
padded = pad_to_length(out, L_total, PAD)
lp_stop = sequence_log_prob(lm.next_logits, out, len(p), eos_id=EOS)
lp_pad = sequence_log_prob(lm.next_logits, padded, len(p), eos_id=EOS, pad_id=PAD)
bad = padded[:-1] + [tok.encode("x")[0]]
print(f"sampled (tau = 0.7) to EOS: {show(out, len(p))} ({len(out) - len(p)} tokens), padded to L = {len(padded)}")
print(f"log pi stopped {lp_stop:.6f}, padded {lp_pad:.6f}, a non-PAD token after EOS: "
      f"{sequence_log_prob(lm.next_logits, bad, len(p), eos_id=EOS, pad_id=PAD)}")
assert out[-1] == EOS and lp_stop == lp_pad
assert sequence_log_prob(lm.next_logits, bad, len(p), eos_id=EOS, pad_id=PAD) == -np.inf

# %% [markdown]
# EOS changes what "most likely" means: a finished sequence stops paying probability, so (6.3)
# favours short responses. After "JULIET: Ay, my lord" the exact maximiser over up to 3 more
# characters is to end the line after a full stop, whereas beam search with a length penalty (scores
# divided by $n^{\alpha}$, here $\alpha=1$) keeps going:

# %%
p = tok.encode("JULIET:\nAy, my lord")
ex = exhaustive_search(lm.next_logits, p, 3, eos_id=EOS)
long_beam = beam_search(lm.next_logits, p, 3, 8, eos_id=EOS, length_penalty=1.0)
print(f"exhaustive with EOS: {show(ex, len(p))} (log pi {sequence_log_prob(lm.next_logits, ex, len(p), eos_id=EOS):.3f}); "
      f"beam k=8, length penalty 1: {show(long_beam, len(p))}")
assert ex[-1] == EOS and len(ex) < len(long_beam) and long_beam[-1] != EOS
