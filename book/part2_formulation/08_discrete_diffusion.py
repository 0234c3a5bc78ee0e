# %% [markdown]
# # 2.8 Discrete diffusion: generating text by undoing random masking
#
# **The question.** Every model so far writes a sentence left to right, one token after another
# ([2.6](06_sequence_generation.ipynb)). Could a model instead start from a sentence whose every
# word is hidden behind a mask and reveal the words in any order? What random process hides the
# words so that it can be run backwards, and what would a network have to learn to run it backwards?
#
# This is the idea of a {term}`discrete diffusion` model, the text version of the diffusion models
# that generate images: a *forward* process destroys a sentence bit by bit at random times, and a
# *reverse* process, run from the fully destroyed state, rebuilds sentences with the statistics of
# real text. The forward process is a {term}`continuous-time Markov chain`, and its mathematics is
# short but easy to get wrong — the rate matrices printed in the paper's own examples are not rate
# matrices, and a student who copies them gets "probabilities" that do not add up to 1
# ([checked below](#checking-the-paper)). This page
# builds the chain by hand for one token, simulates it for short sentences, runs it backwards, and
# checks what the network must learn.
#
# ```{admonition} Learning goals
# :class: tip
# After this page you can
# - write the {term}`rate matrix` of the masking chain, check that it is one (off-diagonal entries
#   $\ge 0$, rows summing to 0), and compute a token's probabilities at time $t$ by hand;
# - simulate the chain exactly (Gillespie) and approximately (τ-leaping), and say how the
#   approximation's error shrinks;
# - compute the reverse rates $\bar Q_{yz}=Q_{zy}\,p(z,t)/p(y,t)$ and explain why running them
#   backwards from time $t_{\max}$ recovers the data;
# - explain why the score-entropy loss is minimised at the probability ratios the reverse rates need.
# ```
#
# **Builds on:** [2.6 Sequence generation](06_sequence_generation.ipynb) (generation left to right,
# the alternative this page replaces) ·
# [2.2 Next-token prediction and the KL objective](02_objective_kl.ipynb) (a data distribution
# over sequences) · the exponential
# distribution, the matrix exponential $e^{tQ}$ and a first-order differential equation
# $\dot p = pQ$. **Reading time:** about 40 minutes.
#
# ```{admonition} Symbols on this page
# :class: note
# | symbol | meaning | shape |
# |---|---|---|
# | $\mathcal V$, $\lvert\mathcal V\rvert$ | the values a token can take (the mask included) and their number | set, integer |
# | $y$, $z$, $u$ | values of a token (states of the chain): $Q_{yz}$ is the rate of a jump from $y$ to $z$; $u$ is a third state (summed over, or a data point) | integers |
# | $m$ | the mask value | integer |
# | $Q$, $Q_{yz}$ | a rate matrix (generator); the rate of the jump $y\to z$. $Q^0$ is a fixed one that a noise schedule scales, $Q(t)=\sigma^2(t)Q^0$ | $(\lvert\mathcal V\rvert,\lvert\mathcal V\rvert)$ |
# | $\sigma^2(t)$, $g(t)$ | the noise schedule (the square of the paper's diffusion coefficient $\sigma(t)$, kept: a scale of the rates, not a standard deviation); the new clock $g(t)=\int_0^t\sigma^2$ | numbers |
# | $\beta$ | the rate of masking (or of uniform jumps) | number |
# | $\Delta t$ | a short time interval | number |
# | $p(t)$, $p(y,t)$, $p_y(t)$ | the law of the token at time $t$ (a row vector); its probability of value $y$ | $(\lvert\mathcal V\rvert,)$ |
# | $p_0$, $p_{0,y}$ | the data's law at time 0 | $(\lvert\mathcal V\rvert,)$ |
# | $t$, $t_{\max}$ | time; the end of the forward process | numbers |
# | $\bar Q(t)$, $\bar p$ | the reverse chain's rate matrix; its law | as $Q$, $p$ |
# | $I$, $\mathbf 1$ | the identity matrix; the vector of ones, a **column** (the one column vector of the page: $\mathbf 1\mathbf 1^\top$ is the matrix of ones, and $pQ\mathbf 1$ adds up the entries of the row $pQ$) | $(\lvert\mathcal V\rvert,\lvert\mathcal V\rvert)$, $(\lvert\mathcal V\rvert,1)$ |
# | $T$ | the number of tokens in a sequence | integer |
# | $\tau$ | the length of one step of τ-leaping | number |
# | $p_{\mathrm{ref}}$ | the law the reverse chain starts from in practice: the forward chain's limit (all masked for masking, uniform for uniform noise) | $(\lvert\mathcal V\rvert,)$ |
# | $\delta_m$ | the law with all its mass on the mask $m$ (the masking chain's $p_{\mathrm{ref}}$) | $(\lvert\mathcal V\rvert,)$ |
# | $s(y,t)_z$, $s_z$ | the network's estimate of the ratio $p(z,t)/p(y,t)$ | numbers |
# | $c$ | a positive constant (the minimiser of $s-c\log s$ is $s=c$) | number |
# | $r$ | the reversed clock $t_{\max}-t$ | number |
# ```
#
# ```{admonition} In the paper's notation
# :class: note
# The paper writes laws as **column** vectors, $\partial_t p=Qp$ (see
# [Checking the paper](#checking-the-paper) for why the book uses rows, $\dot p=pQ$). It writes the
# new clock of (9.3) as $\tau$ (the book's $g$; the book keeps $\tau$ for the leap of τ-leaping) and
# has no name for a reversed clock: its (9.4) runs on $t$ itself, backwards from $t_{\max}$ (the book's
# checks use $r=t_{\max}-t$; the paper's own $s$ is the variable of integration in $g(t)=\int_0^t\sigma^2(s)\,ds$,
# and the book keeps $s$ for the ratio network, as the paper does too).
# It writes the set of values in bold, $\mathbf V$ (the book: $\mathcal V$), the states of the
# chain as $i$, $j$, $k$, $\ell$ (here $y$, $z$, $u$: the book keeps $i$ and $j$ for the positions of
# a query and a key, and $\ell$ for a layer), the length of a sequence as $L$ (here $T$, as in
# Chapter 6) and the end of the forward process as $T$ (here $t_{\max}$). Quoted formulas keep the
# paper's equation numbers and are written in the book's letters. Its diffusion coefficient $\sigma(t)$
# of $Q(t)=\sigma^2(t)Q^0$ is kept: on this page $\sigma^2$ scales the rates (the book's $\sigma$ is
# otherwise a standard deviation).
# ```
#
# *Source: Baptista, Stuart, Tran, "Large Language Models: A Mathematical Formulation", §9
# (Eqs. 9.1–9.5, Examples 9.2–9.3, Remark 9.1) and Appendix D (Theorem D.1).*

# %% tags=["parameters"]
import os

FULL = os.environ.get("FULL", "0") == "1"  # larger Monte Carlo samples; the checks are the same
N_CHAINS = 40_000 if FULL else 8_000

# %%
from fractions import Fraction

import matplotlib.pyplot as plt
import numpy as np
import scipy.optimize
import sympy as sp
from IPython.display import Math, display

from nextword.booktools.display import produced
from nextword.booktools.plotting import use_book_style
from nextword.booktools.schematics.generation import draw_masking_chain
from nextword.numerics import rk4
from nextword.theory.formulation import (
    absorbing_generator, denoising_score_entropy_loss, euler_transition_matrix, forward_marginal,
    generator_violations, gillespie, probability_ratios, reverse_generator, reverse_marginals,
    sample_reverse, score_entropy_loss, sequence_generator, tau_leaping, transition_matrix,
    uniform_generator,
)

use_book_style()
rng = np.random.default_rng(0)

# %% [markdown]
# ## A tiny example by hand
#
# One token, three possible values: `cat`, `dog` and the mask `M`. At time 0 the token is `cat`
# with probability 0.6 and `dog` with 0.4 (our "data"). The forward process: an unmasked token is
# replaced by `M` at a random time, with {term}`rate <rate matrix>` $\beta=1$ — in a short interval
# $\Delta t$ it flips with probability about $\beta\,\Delta t$ — and `M` stays `M` for ever. A rate matrix $Q$
# lists these rates: $Q_{yz}\ge0$ is the rate of the jump $y\to z$, and each diagonal entry is minus
# the total rate of leaving, so every row sums to 0:
#
# $$Q=\begin{pmatrix}-1&0&1\\0&-1&1\\0&0&0\end{pmatrix}\quad(\text{rows and columns: cat, dog, M}).$$
#
# A token that is unmasked at time 0 is still unmasked at time $t$ with probability $e^{-\beta t}$
# (the waiting time to a jump is exponential). So
# $p(t)=\big(0.6\,e^{-t},\ 0.4\,e^{-t},\ 1-e^{-t}\big)$. At $t=\ln 2$, where $e^{-t}=\tfrac12$:

# %%
labels = ["cat", "dog", "M"]
p_data = {"cat": Fraction(3, 5), "dog": Fraction(2, 5), "M": Fraction(0)}
still_unmasked = Fraction(1, 2)  # e^{-beta t} at t = ln 2, beta = 1
p_at_ln2 = {"cat": p_data["cat"] * still_unmasked, "dog": p_data["dog"] * still_unmasked,
            "M": 1 - still_unmasked}
print("p(ln 2) by hand:", {word: str(prob) for word, prob in p_at_ln2.items()})

Q_tiny = absorbing_generator(3, 2, 1.0)  # the library's masking generator: mask id 2, rate 1
print("Q =\n", Q_tiny)
p_expm = forward_marginal(np.array([0.6, 0.4, 0.0]), Q_tiny, np.log(2))  # p(0) e^{tQ}
print("p(0) expm(t Q) at t = ln 2:", np.round(p_expm, 12))
assert np.allclose(p_expm, [float(p_at_ln2[w]) for w in labels], atol=1e-12)

# %% [markdown]
# Now run it backwards. A masked token at time $t$ must have been `cat` or `dog` before; the reverse
# chain unmasks it. Its rates are (the text after Eq. 9.4; Eq. D.1 of Theorem D.1)
#
# $$\bar Q_{yz}(t)=Q_{zy}\,\frac{p(z,t)}{p(y,t)}:$$
#
# the forward rate of the opposite jump, times how much more likely the target is than the source.
# From `M` to `cat` at $t=\ln 2$: $\bar Q_{M,\mathrm{cat}}=Q_{\mathrm{cat},M}\cdot
# \frac{0.3}{0.5}=0.6$; to `dog`: $1\cdot\frac{0.2}{0.5}=0.4$. The reverse chain unmasks at total
# rate 1 and picks `cat` against `dog` in the proportion 0.6 : 0.4 — exactly the data's. It cannot
# turn `cat` into anything (a forward jump into `cat` never happens).

# %%
forward_rate_to_mask = Fraction(1)  # Q[cat, M] = Q[dog, M] = beta = 1
assert np.allclose(Q_tiny[:2, 2], float(forward_rate_to_mask))
Q_bar_by_hand = {word: forward_rate_to_mask * p_at_ln2[word] / p_at_ln2["M"]
                 for word in ["cat", "dog"]}
print("reverse rates out of M at t = ln 2:", {w: str(r) for w, r in Q_bar_by_hand.items()})
Q_bar = reverse_generator(Q_tiny, p_expm)
print("library's reverse generator:\n", np.round(Q_bar, 12) + 0.0)  # + 0.0: no "-0."
assert np.allclose(Q_bar[2, :2], [0.6, 0.4], atol=1e-12)
assert np.allclose(Q_bar[:2], 0, atol=1e-12)  # an unmasked token stays as it is, backwards too

# %% [markdown]
# A sentence is a row of such tokens, each masked at its own random time. One path of the forward
# chain for a four-word sentence (each word's masking time drawn from the exponential law with
# rate $\beta=1$), shown just after each masking; the reverse chain reads the picture from the
# bottom up:

# %%
sentence = ["the", "cat", "sat", "down"]
vocab_words, mask_id = sentence + ["M"], len(sentence)
mask_times = np.random.default_rng(4).exponential(1.0, size=len(sentence))  # rate beta = 1
snapshot_times = [0.0] + [float(np.ceil(t * 100) / 100) for t in np.sort(mask_times)]  # after each
states = np.array([[mask_id if mask_times[i] <= t else i for i in range(len(sentence))]
                   for t in snapshot_times])
fig, ax = plt.subplots(figsize=(7, 4))
draw_masking_chain(states, vocab_words, mask_id, snapshot_times, ax=ax)
plt.show()

# %% [markdown]
# **Figure 2.8.1.** One path of the masking chain on a four-word sentence, one row per time ($t=0$, then the
# moment just after each masking): each word is replaced by the mask `M` (grey boxes) at its own
# exponential time and stays masked, which is the forward chain (the vermilion arrow, read
# downwards). Generation runs the picture upwards (the blue arrow): from an all-mask row, the reverse
# chain reveals words one at a time, in a random order that need not be left to right (on this
# path: "the", then "sat", "cat", "down").
#
# ## The forward process: a continuous-time Markov chain (9.1)–(9.3)
#
# For $|\mathcal V|$ values a rate matrix (also called a generator) is $|\mathcal V|\times|\mathcal V|$
# with $Q_{yz}\ge0$ off the diagonal and rows summing to 0. We write probability laws as **row**
# vectors: they evolve by $\dot p=pQ$, so $p(t)=p(0)\,e^{tQ}$, and $e^{tQ}$ is the matrix of
# probabilities of being at $z$ at time $t$ having started at $y$. (The paper prints (9.1) as
# $\partial_t p=Qp$; with rows summing to 0 that needs $Q^\top$ — see
# [Checking the paper](#checking-the-paper).)
#
# The two standard choices of §9: **uniform noise** (a token jumps to a uniformly random token,
# rate $\beta$: $Q=\beta(\mathbf 1\mathbf 1^\top/|\mathcal V|-I)$), which forgets the data towards the
# uniform law; and **masking** (absorbing: a token jumps to the mask $m$ at rate $\beta$,
# $Q_{ym}=\beta$, $Q_{yy}=-\beta$ for $y\ne m$, mask row 0), which forgets it towards "all masked".
# These are the corrected forms of Examples 9.2 and 9.3 (the printed ones fail the row-sum test;
# [Checking the paper](#checking-the-paper)). For $|\mathcal V|=4$, mask id 3, $\beta=0.5$:

# %%
V, b, mask = 4, 0.5, 3
Q_uni, Q_abs = uniform_generator(V, b), absorbing_generator(V, mask, b)
display(Math(r"Q_{\rm uniform} = " + sp.latex(sp.Matrix(Q_uni).applyfunc(sp.nsimplify))
             + r",\qquad Q_{\rm mask} = " + sp.latex(sp.Matrix(Q_abs).applyfunc(sp.nsimplify))))
assert not generator_violations(Q_uni) and not generator_violations(Q_abs)

# %% [markdown]
# **A noise schedule (9.2)–(9.3).** Practice often speeds the noise up or down over time:
# $Q(t)=\sigma^2(t)Q^0$. All the $Q(t)$ are multiples of one matrix, so they commute, and the
# process is the constant-rate one run on a new clock $g(t)=\int_0^t\sigma^2$:
# $p(t)=p(0)\,e^{g(t)Q^0}$. With $\sigma^2(t)=2t$ (so $g=t^2$) we integrate (9.2) step by step
# with the classical Runge–Kutta method and compare with the closed form.

# %%
p0 = np.array([0.5, 0.3, 0.2, 0.0])


t_end = 1.3
scheduled = rk4(lambda p, t: 2 * t * (p @ Q_uni), p0.copy(), t_end, n=2000)  # dp/dt = sigma^2 p Q0
err = np.abs(scheduled - forward_marginal(p0, Q_uni, t_end**2)).max()
assert err < 1e-10
print("max |p(t) - p0 expm(g(t) Q0)| < 1e-10:", err < 1e-10)

# %% [markdown]
# ## Sequences: one token changes per jump (Remark 9.1)
#
# A sequence of $T$ tokens has $|\mathcal V|^T$ possible values — far too many for a dense matrix
# (Remark 9.1). But if each token is corrupted independently by the same $Q$, the chain on sequences
# is the "Kronecker sum" $Q\oplus\dots\oplus Q$, for two tokens $Q\oplus Q=Q\otimes I+I\otimes Q$,
# where $\otimes$ is the Kronecker product (numpy's `np.kron`: the block matrix whose block $(y,z)$
# is entry $(y,z)$ of the left matrix times the whole right matrix). Only one token changes per jump, so each row has at
# most $T(|\mathcal V|-1)+1$ non-zero entries; and because the tokens are corrupted independently,
# the transition matrix factorises, $e^{t(Q\oplus Q)}=e^{tQ}\otimes e^{tQ}$ — so the *forward*
# (noising) process can be sampled one position at a time. The reverse chain, which generates
# text, does not factorise: its rates depend on the whole sequence (shown on
# [Part 2's checking page](checking_the_paper.ipynb)).

# %%
T = 3
Q_seq = sequence_generator(Q_abs, T)
nnz_per_row = (Q_seq != 0).sum(axis=1).max()
print(f"|V|^T = {V**T} states; at most {nnz_per_row} non-zeros per row "
      f"(bound T(|V|-1)+1 = {T * (V - 1) + 1})")
P1 = transition_matrix(Q_abs, 0.8)
assert np.allclose(transition_matrix(Q_seq, 0.8), np.kron(np.kron(P1, P1), P1), atol=1e-12)
assert not generator_violations(Q_seq, atol=1e-12)

# %% [markdown]
# ## Simulating the chain: Gillespie and τ-leaping
#
# **Gillespie's algorithm** simulates the chain exactly: in state $y$ wait an exponential time with
# rate $-Q_{yy}$ (the total rate of leaving; §9 names the rate $Q_{yy}$, which is never positive, so
# cannot be one), then jump to $z$ with probability $Q_{yz}/(-Q_{yy})$.
# **τ-leaping** freezes the rates over a step of length $\tau$ and moves every position at once,
# each independently with a token's one-step matrix $I+\tau Q$ (here τ is a time step, not a
# temperature). One leap of the whole sequence is therefore the Kronecker product
# $(I+\tau Q)\otimes\dots\otimes(I+\tau Q)$ of $T$ copies — several positions can change in one leap —
# and the law after $n$ leaps is $p_0\big((I+\tau Q)^{\otimes T}\big)^n=p_0e^{t(Q\oplus\dots\oplus Q)}+\mathcal O(\tau)$, $t=n\tau$. We simulate sequences of $T=3$ tokens that start
# from a small "data set" of three sentences, with the masking generator, and compare the
# histograms with the exact law, in {term}`total variation distance`.

# %%
data_seqs = np.array([[0, 1, 2], [2, 1, 0], [1, 1, 1]])  # three "sentences" over {0, 1, 2}; 3 = mask
data_w = np.array([0.5, 0.3, 0.2])
flat = np.ravel_multi_index(data_seqs.T, (V,) * T)  # row-major index of each sentence in V^T
p0_seq = np.zeros(V**T)
p0_seq[flat] = data_w
t_obs = 1.0
exact_seq = forward_marginal(p0_seq, Q_seq, t_obs)


def tv(a, c):
    """Total variation distance between two probability vectors."""
    return 0.5 * np.abs(a - c).sum()


def leap_matrix(Q_token, n_leaps):
    """(V^T, V^T): n_leaps tau-leaps up to t_obs; one leap is T independent token leaps I + tau Q."""
    one_token = euler_transition_matrix(Q_token, t_obs / n_leaps)  # (V, V), I + tau Q
    one_leap = one_token
    for _ in range(T - 1):
        one_leap = np.kron(one_leap, one_token)  # positions in row-major order, as ravel_multi_index
    return np.linalg.matrix_power(one_leap, n_leaps)


# %%
start = rng.choice(flat, size=N_CHAINS, p=data_w)
x_gil, n_jumps = gillespie(Q_seq, start, t_obs, rng)
freq_gil = np.bincount(x_gil, minlength=V**T) / N_CHAINS
x_tau = tau_leaping(Q_abs, np.array(np.unravel_index(start, (V,) * T)).T, t_obs, 20, rng)
freq_tau = np.bincount(np.ravel_multi_index(x_tau.T, (V,) * T), minlength=V**T) / N_CHAINS
law_tau = p0_seq @ leap_matrix(Q_abs, 20)  # the law tau_leaping samples from
print(f"TV(Gillespie histogram, expm)      = {produced(tv(freq_gil, exact_seq), '.3f')}")
print(f"TV(tau-leap histogram, its law)    = {produced(tv(freq_tau, law_tau), '.3f')}")
print(f"TV(tau-leap law (20 leaps), expm)  = {tv(law_tau, exact_seq):.4f}")
print(f"mean number of jumps per chain     = {produced(n_jumps.mean(), '.2f')} "
      f"(exact: {T * (1 - np.exp(-b * t_obs)):.2f})")
assert tv(freq_gil, exact_seq) < 0.05 and tv(freq_tau, law_tau) < 0.05
# holding times: P(no jump by t) = exp(Q_yy t), rate -Q_yy = T*b for a fully unmasked sequence
no_jump = np.mean(n_jumps == 0)
print(f"P(no jump by t): simulated {produced(no_jump, '.3f')}, "
      f"exp(-T beta t) = {np.exp(-T * b * t_obs):.3f}")
assert abs(no_jump - np.exp(-T * b * t_obs)) < 4 * np.sqrt(no_jump * (1 - no_jump) / N_CHAINS)

# %% [markdown]
# The expected number of jumps for a sequence with no mask is $T(1-e^{-\beta t})$ (each token jumps
# at most once, to the mask, and has done so by time $t$ with probability $1-e^{-\beta t}$). The same comparison with uniform noise on the three-letter
# vocabulary $\{0,1,2\}$ (no mask token):

# %%
Q_u3 = uniform_generator(3, b)
Q_u3_seq = sequence_generator(Q_u3, T)
flat3 = np.ravel_multi_index(data_seqs.T, (3,) * T)
p0_u3 = np.zeros(3**T)
p0_u3[flat3] = data_w
exact_u3 = forward_marginal(p0_u3, Q_u3_seq, t_obs)
start3 = rng.choice(flat3, size=N_CHAINS, p=data_w)
freq_gil_u3 = np.bincount(gillespie(Q_u3_seq, start3, t_obs, rng)[0], minlength=3**T) / N_CHAINS
x_tau_u3 = tau_leaping(Q_u3, np.array(np.unravel_index(start3, (3,) * T)).T, t_obs, 20, rng)
freq_tau_u3 = np.bincount(np.ravel_multi_index(x_tau_u3.T, (3,) * T), minlength=3**T) / N_CHAINS
law_tau_u3 = p0_u3 @ leap_matrix(Q_u3, 20)
print(f"uniform: TV(Gillespie, expm) = {produced(tv(freq_gil_u3, exact_u3), '.3f')};  "
      f"TV(tau-leap, its law) = {produced(tv(freq_tau_u3, law_tau_u3), '.3f')};  "
      f"TV(tau-leap law, expm) = {tv(law_tau_u3, exact_u3):.4f}")
assert tv(freq_gil_u3, exact_u3) < 0.05 and tv(freq_tau_u3, law_tau_u3) < 0.05

# %% [markdown]
# How fast does τ-leaping's error shrink with the step? Its law is exact matrix arithmetic, so we
# can measure the error against the matrix exponential for ever smaller steps (masking case):

# %%
leap_sizes, leap_errors = [], []
for n_leaps in [2, 4, 8, 16, 32, 64, 128]:
    law = p0_seq @ leap_matrix(Q_abs, n_leaps)
    leap_sizes.append(t_obs / n_leaps)
    leap_errors.append(tv(law, exact_seq))
slope = np.polyfit(np.log(leap_sizes), np.log(leap_errors), 1)[0]
print(f"log-log slope of TV error against tau: {slope:.2f}")
assert 0.9 < slope < 1.1

# %%
fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
order = np.argsort(-exact_seq)[:10]
seq_labels = ["".join("abcM"[d] for d in np.unravel_index(s, (V,) * T)) for s in order]
xs = np.arange(order.size)
axes[0].bar(xs - 0.25, exact_seq[order], 0.25, label="expm")
axes[0].bar(xs, freq_gil[order], 0.25, label="Gillespie")
axes[0].bar(xs + 0.25, freq_tau[order], 0.25, label="τ-leaping (20 leaps)")
axes[0].set_xticks(xs, seq_labels, rotation=45)
axes[0].set_ylabel("probability at t = 1")
axes[0].set_xlabel("sequence (a, b, c = tokens 0, 1, 2; M = mask)")
axes[0].legend()
axes[1].loglog(leap_sizes, leap_errors, "o-")
axes[1].set_xlabel("τ")
axes[1].set_ylabel("TV(τ-leap law, expm)")
axes[1].set_title(f"first order: slope {slope:.2f}")
plt.show()

# %% [markdown]
# **Figure 2.8.2.** Left: the ten most likely sequences at $t=1$ under the masking forward process
# (tokens 0, 1, 2 written a, b, c; M = mask): exact (matrix exponential of the sequence generator,
# blue), and the frequencies from Gillespie (vermilion) and τ-leaping (bluish green). Look at how
# each triple of bars agrees: Gillespie's bars differ from the exact ones by sampling noise only;
# τ-leaping's by sampling noise plus its own step error, a total variation of 0.0055 between its law
# and the exact one (printed above), the error the right panel measures. Right: the total variation between the
# τ-leaping law and the exact one against the step τ — a straight line of slope 1 on log–log axes,
# first order in τ.
#
# ## Running the chain backwards (9.4) and Theorem D.1
#
# The tiny example's reverse rates, in general (D.1): $\bar Q_{yz}(t)=Q_{zy}\,p(z,t)/p(y,t)$. Two
# algebraic facts carry Theorem D.1: $\bar Q$ is again a rate matrix, and $p\bar Q=-pQ$ — the
# reverse flow exactly undoes the forward flow at every time, so a chain run backwards with
# $\bar Q$ from $p(t_{\max})$ passes through $p(t)$ for every $t$ and ends at the data law $p(0)$. Sympy
# checks $p\bar Q+pQ=0$ for a generic $3\times3$ rate matrix whose off-diagonal rates $Q_{yz}$ are
# free symbols (the states numbered 1, 2, 3: $Q_{12}$, …) and whose probabilities are the $p_y$:

# %%
S = 3
# states y, z = 1, 2, 3 in the symbols (array index y - 1): p_1 is not the data law p_0
q = sp.Matrix(S, S, lambda y, z: sp.Symbol(f"Q_{y + 1}{z + 1}", positive=True) if y != z else 0)
Qs = q - sp.diag(*[sum(q[y, :]) for y in range(S)])  # rows sum to 0
ps = sp.Matrix([[sp.Symbol(f"p_{y + 1}", positive=True) for y in range(S)]])
Qbar = sp.Matrix(S, S, lambda y, z: Qs[z, y] * ps[z] / ps[y] if y != z else 0)
Qbar = Qbar - sp.diag(*[sum(Qbar[y, :]) for y in range(S)])
display(Math(r"p\,\bar Q + p\,Q = " + sp.latex(sp.simplify(ps * Qbar + ps * Qs))))
assert sp.simplify(ps * Qbar + ps * Qs) == sp.zeros(1, S)

# %% [markdown]
# Numerically: start the reverse equation at $p(t_{\max})$ and integrate it down towards $t=0$ with the
# exact reverse rates (`reverse_marginals`: Runge–Kutta on a grid that becomes geometric near 0,
# where the rates out of states with $p_0=0$ grow like $1/t$). Theorem D.1 says it retraces the
# forward marginals, whose closed forms for rate $\beta$ are $p_y(t)=p_{0,y}e^{-\beta t}$ ($y\ne m$),
# $p_m(t)=1-e^{-\beta t}(1-p_{0,m})$ (masking) and $1/|\mathcal V|+(p_0-1/|\mathcal V|)e^{-\beta t}$
# (uniform). Then we *sample* the reverse chain from a state drawn from $p(t_{\max})$ with τ-leaping
# (`sample_reverse`) and recover the data law at $t=0$.

# %%
t_max = 4.0
times = np.concatenate([np.linspace(t_max, 0.1, 120), np.geomspace(0.1, 1e-4, 60)[1:]])
closed = {
    "absorbing": lambda t: np.where(np.arange(V) == mask, 1 - np.exp(-b * t) * (1 - p0[mask]),
                                    p0 * np.exp(-b * t)),
    "uniform": lambda t: 1 / V + (p0 - 1 / V) * np.exp(-b * t),
}
reverse_runs = {}
for name, Q in [("absorbing", Q_abs), ("uniform", Q_uni)]:
    R = reverse_generator(Q, forward_marginal(p0, Q, 1.0))
    assert not generator_violations(R, atol=1e-12)
    pb = reverse_marginals(p0, Q, times)
    exact = np.array([closed[name](t) for t in times])
    err = np.abs(pb - exact).max()
    x0 = sample_reverse(p0, Q, t_max, 400, N_CHAINS, rng)
    freq0 = np.bincount(x0, minlength=V) / N_CHAINS
    print(f"{name:9s}: max |p_bar(t) - p(t)| on the grid < 1e-6: {err < 1e-6};  "
          f"reverse samples at t=0: {produced(np.array2string(freq0, precision=3))} (data {p0})")
    assert err < 1e-6 and tv(freq0, p0) < 0.03
    reverse_runs[name] = (pb, exact)

# %%
fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True)
for ax, (name, (pb, exact)) in zip(axes, reverse_runs.items()):
    for k in range(V):
        ax.plot(times, exact[:, k], color=f"C{k}", lw=3, alpha=0.35)
        ax.plot(times[::8], pb[::8, k], "o", color=f"C{k}", ms=3,
                label=f"state {k}" + (" (mask)" if k == mask else ""))
    ax.set_xlabel("t")
    ax.set_title(name)
axes[0].set_ylabel("probability")
axes[0].legend()
plt.show()

# %% [markdown]
# **Figure 2.8.3.** Forward marginals (thick pale lines, closed form) and the solution of the
# reverse equation (9.4) started from $p(t_{\max})$ and run from $t=t_{\max}$ down to $t\approx 0$ (dots), one
# colour per state (state 3 is the mask in the left panel and an ordinary value in the right one):
# the dots sit on the lines, as Theorem D.1 states, for masking (left) and uniform noise (right).
#
# In practice the reverse chain starts from the reference law $p_{\mathrm{ref}}$ (for masking, all masked), not from
# $p(t_{\max})$, which is unknown. With exact reverse rates, the resulting error at $t=0$ is at most the
# total variation between $p(t_{\max})$ and $p_{\mathrm{ref}}$ (running the same chain from two
# starting laws cannot increase the total variation between them), which decays like
# $e^{-\beta t_{\max}}$:

# %%
for tmax in [1.0, 2.0, 4.0, 8.0]:
    gap = tv(forward_marginal(p0, Q_abs, tmax), np.eye(V)[mask])
    bound = (1 - p0[mask]) * np.exp(-b * tmax)
    print(f"t_max = {tmax:3.0f}: TV(p(t_max), delta_mask) = {gap:.4f}   (1 - p0_m) e^(-beta t_max) = {bound:.4f}")
    assert np.isclose(gap, bound, atol=1e-12)

# %% [markdown]
# ## Learning the reverse rates: the score-entropy loss (9.5)
#
# The reverse rates need the ratios $p(z,t)/p(y,t)$, which are unknown for real text. A network
# $s(y,t)_z$ is trained to approximate them by minimising the {term}`score-entropy loss`
# $\mathbb E_{y\sim p}\sum_{z\ne y}\big(s_z-\tfrac{p(z)}{p(y)}\log s_z\big)$ (the first display after
# (9.4), at one time $t$: the paper integrates it over $t$ from 0 to $t_{\max}$, which does not change
# the minimiser when the network can output any ratios at each time: each time's term is then
# minimised on its own). Each term has the form $s-c\log s$ with $c>0$, which is smallest at $s=c$
# (its derivative $1-c/s$ vanishes there), so the minimiser is the ratio itself. We minimise over all
# $|\mathcal V|(|\mathcal V|-1)$ entries at a fixed time with BFGS (a quasi-Newton optimiser) and
# compare.

# %%
t_fix = 0.7
pt = forward_marginal(p0, Q_uni, t_fix)
off = ~np.eye(V, dtype=bool)


def se(log_s, p, weights=None):
    """Score-entropy loss of the ratio table s = exp(log_s) (off-diagonal entries) at the law p."""
    s = np.ones((V, V))
    s[off] = np.exp(log_s)
    return score_entropy_loss(s, p, weights)


res = scipy.optimize.minimize(se, np.zeros(off.sum()), args=(pt,), method="BFGS",
                              options={"gtol": 1e-10})
err = np.abs(np.exp(res.x) - probability_ratios(pt)[off]).max()
assert err < 1e-5
print("max |argmin s - p(z)/p(y)| < 1e-5:", err < 1e-5)

# %% [markdown]
# Then (9.5): plugging the exact ratio into $\bar Q_{yz}=Q_{zy}\,s(y,t)_z$ reproduces the reverse
# rate matrix of (D.1), so a well-trained ratio network is all the reverse sampler needs.

# %%
for Q in (Q_uni, Q_abs):
    pt_ = forward_marginal(p0, Q, t_fix)
    Qbar_95 = Q.T * probability_ratios(pt_)
    np.fill_diagonal(Qbar_95, 0.0)
    np.fill_diagonal(Qbar_95, -Qbar_95.sum(axis=1))
    assert np.allclose(Qbar_95, reverse_generator(Q, pt_), atol=1e-12)
print("(9.5) with the exact ratios equals (D.1) for both generators")

# %% [markdown]
# ## Key takeaways
#
# - A rate matrix has non-negative off-diagonal rates and rows summing to 0; laws evolve as
#   $p(t)=p(0)e^{tQ}$ (row vectors). Masking sends each token to `M` at rate $\beta$, so it survives
#   unmasked with probability $e^{-\beta t}$.
# - On sequences, tokens are corrupted independently: one token changes per jump, and the forward
#   transition matrix is a Kronecker product of one-token matrices (the reverse chain's rates
#   depend on the whole sequence).
# - Gillespie simulates the chain exactly; τ-leaping moves all positions per step and is accurate to
#   first order in the step.
# - Running the chain backwards with $\bar Q_{yz}=Q_{zy}p(z,t)/p(y,t)$ from $p(t_{\max})$ recovers the
#   data at $t=0$; generation only needs the ratios $p(z,t)/p(y,t)$, which the score-entropy loss
#   is minimised at.

# %% [markdown]
# ## Check your understanding
#
# 1. In the tiny example, compute $p(t)$ at $t=\ln 4$ and the reverse rates out of `M` at that
#    time. What happens to the total unmasking rate as $t$ grows?
#
#    ```{dropdown} Answer
#    $e^{-t}=\tfrac14$, so $p=(\tfrac{3}{20},\,\tfrac{1}{10},\,\tfrac34)$. Reverse rates: to `cat`
#    $1\cdot\tfrac{3}{20}/\tfrac34=\tfrac15$, to `dog` $\tfrac{1}{10}/\tfrac34=\tfrac{2}{15}$, total
#    $e^{-t}/(1-e^{-t})=\tfrac13$, still in the data's proportion 3 : 2. The total rate falls as $t$
#    grows: far in the past
#    of the reverse chain (large $t$) few tokens were still unmasked, so unmasking is rare; near
#    $t=0$ it grows like $1/t$, so every token is revealed by the end.
#    ```
#
# 2. Why are the rows of a rate matrix required to sum to 0, and what goes wrong with the matrix
#    printed in Example 9.2?
#
#    ```{dropdown} Answer
#    With $\dot p=pQ$, the total probability changes at rate $p\,Q\mathbf 1$, which is 0 for every
#    $p$ exactly when every row sums to 0. The printed matrix's rows sum to 1, so
#    $\frac{d}{dt}\sum_yp_y=\sum_yp_y$: total "probability" grows like $e^t$. (What that matrix is,
#    if not a rate matrix, is part of
#    [Exercise 02 of Part 2](../../exercises/part2_formulation/ex02_ctmc_generators.ipynb).)
#    ```
#
# 3. τ-leaping with 20 steps had a total-variation error of about 0.0055 on the masked sequences.
#    About how many steps would bring it to a quarter of that, and why?
#
#    ```{dropdown} Answer
#    About $4\cdot20$: the error is first order in the step τ (measured slope close to 1), so
#    dividing the error by 4 needs a 4 times smaller step, i.e. 4 times as many steps.
#    ```

# %% tags=["hide-cell"]
# The numbers the answers state. Question 1: the tiny example at t = ln 4 (e^{-t} = 1/4).
quarter = Fraction(1, 4)
p_ln4 = {"cat": p_data["cat"] * quarter, "dog": p_data["dog"] * quarter, "M": 1 - quarter}
rates_ln4 = {w: forward_rate_to_mask * p_ln4[w] / p_ln4["M"] for w in ["cat", "dog"]}
print("Q1: p(ln 4) =", {w: str(v) for w, v in p_ln4.items()}, " reverse rates out of M:",
      {w: str(v) for w, v in rates_ln4.items()}, " total", sum(rates_ln4.values()))
assert p_ln4 == {"cat": Fraction(3, 20), "dog": Fraction(1, 10), "M": Fraction(3, 4)}
assert rates_ln4 == {"cat": Fraction(1, 5), "dog": Fraction(2, 15)} and sum(rates_ln4.values()) == Fraction(1, 3)
assert np.allclose(reverse_generator(Q_tiny, forward_marginal(np.array([0.6, 0.4, 0.0]), Q_tiny, np.log(4)))[2, :2],
                   [0.2, 2 / 15], atol=1e-12)
# Question 3: 80 leaps instead of 20 divide the error by about 4
law_80 = p0_seq @ leap_matrix(Q_abs, 80)
ratio_80 = tv(law_tau, exact_seq) / tv(law_80, exact_seq)
print(f"Q3: TV with 20 leaps {tv(law_tau, exact_seq):.4f}, with 80 leaps {tv(law_80, exact_seq):.4f}: "
      f"ratio {ratio_80:.2f}")
assert 3.5 < ratio_80 < 4.5

# %% [markdown]
# ## Checking the paper
#
# **The rate matrices of Examples 9.2 and 9.3, as printed.** The paper requires $\sum_zQ_{yz}=0$
# for every row (text after (9.1)) and says each example "has any constant vector in its
# null-space". As printed, Example 9.2 has diagonal $1-\frac{|\mathcal V|-1}{|\mathcal V|}\beta$ and off-diagonal
# $\beta/|\mathcal V|$; Example 9.3 has $Q_{mm}=1$, $Q_{ym}=\beta$ and $Q_{yz}=1-\beta$ for all $y,z\ne m$
# (diagonal included). Sympy computes the row sums:

# %% tags=["hide-cell"]
V_, beta = sp.Symbol(r"|\mathcal{V}|", positive=True), sp.Symbol("beta", positive=True)
row_uniform = (1 - (V_ - 1) / V_ * beta) + (V_ - 1) * beta / V_
row_absorbing = beta + (V_ - 1) * (1 - beta)
row_uniform_fixed = -(V_ - 1) / V_ * beta + (V_ - 1) * beta / V_
display(Math(r"\text{Example 9.2 as printed, every row: } " + sp.latex(sp.simplify(row_uniform))
             + r";\quad\text{Example 9.3 as printed, mask row: } 1,\ \text{other rows: } "
             + sp.latex(sp.expand(row_absorbing))))
display(Math(r"\text{corrected uniform, row sum: } " + sp.latex(sp.simplify(row_uniform_fixed))
             + r";\quad\text{corrected masking, row sum } (y\ne m)\text{: } "
             + sp.latex(sp.simplify(beta - beta))))
assert sp.simplify(row_uniform) == 1 and sp.simplify(row_uniform_fixed) == 0

# %% [markdown]
# The same check numerically, with the library's `generator_violations`, for $|\mathcal V|=4$, $\beta=0.5$.
# The printed uniform matrix is a *stochastic* matrix (rows sum to 1): it is exactly $I+Q$ for the
# generator $Q=\beta(\mathbf 1\mathbf 1^\top/|\mathcal V|-I)$ — a one-step transition matrix written in place
# of a rate matrix. For the masking example the corrected generator sends every non-mask state to
# the mask at rate $\beta$ ($Q_{ym}=\beta$, $Q_{yy}=-\beta$) and leaves the mask row zero. That zero
# row also means the masking chain is not ergodic in the sense Example 9.3 invokes (from `M` no other
# state can be reached, so the chain is not irreducible); it converges to $\delta_m$ all the same,
# because every other state leaks into `M` — the total variation $(1-p_{0,m})e^{-\beta t_{\max}}$
# printed in the lesson.

# %% tags=["hide-cell"]
printed_uniform = np.full((V, V), b / V)
np.fill_diagonal(printed_uniform, 1 - (V - 1) * b / V)
printed_absorbing = np.zeros((V, V))
printed_absorbing[mask, mask] = 1.0
printed_absorbing[:mask, mask] = b
printed_absorbing[:mask, :mask] = 1 - b
for name, M in [("Example 9.2 as printed", printed_uniform),
                ("Example 9.3 as printed", printed_absorbing),
                ("uniform, corrected", Q_uni), ("absorbing, corrected", Q_abs)]:
    problems = generator_violations(M)
    print(f"{name:24s}: {'a generator' if not problems else '; '.join(problems)}")
assert generator_violations(printed_uniform) and generator_violations(printed_absorbing)
assert np.allclose(printed_uniform, np.eye(V) + Q_uni)
assert not generator_violations(Q_uni) and not generator_violations(Q_abs)

# %% [markdown]
# **Which way does $Q$ act? (9.1) versus the proof of Theorem D.1.** (9.1) writes
# $\partial_t p = Qp$ with zero **row** sums. For a column vector that conserves total mass only if
# the **column** sums vanish: $\frac{d}{dt}\mathbf 1^\top p=\mathbf 1^\top Qp$. The proof in
# Appendix D uses $\dot p(y)=\sum_u Q_{uy}p(u)$, i.e. $\dot p = Q^\top p$, which does conserve mass.
# Integrating both with a non-symmetric generator (the masking one) shows the difference.

# %% tags=["hide-cell"]
as_printed = rk4(lambda p, t: Q_abs @ p, p0, 2.0)
transposed = rk4(lambda p, t: Q_abs.T @ p, p0, 2.0)
print(f"total mass at t=2 with dp/dt = Q p  : {as_printed.sum():.6f}")
print(f"total mass at t=2 with dp/dt = Q^⊤ p: {transposed.sum():.6f}")
assert abs(as_printed.sum() - 1) > 0.1
assert np.allclose(transposed, forward_marginal(p0, Q_abs, 2.0), atol=1e-10)

# %% [markdown]
# **The same orientation in (9.2), (9.3) and (9.4).** The paper prints $Q^0$ and $\bar Q$ acting on
# the column $p$ again: $\partial_t p=\sigma^2(t)Q^0p$ (9.2), $\partial_g p'=Q^0p'$ (9.3, on the clock $g$, where $p'(g(t))=p(t)$; the paper's $\tau$) and
# $\partial_t\bar p=\bar Q\bar p$ (9.4). For the uniform generator, which is symmetric, $Q^0p=Q^{0\top}p$
# and nothing changes; for the masking generator the printed (9.2) and (9.3) lose mass like (9.1).
# For (9.4) the proof of Theorem D.1 itself writes $\frac{d}{dt}\bar p(y)=\sum_u\bar Q_{uy}\bar p(u)$,
# i.e. $\bar Q^\top\bar p$: on the reversed clock $r=t_{\max}-t$ the forward marginal satisfies
# $\frac{dp}{dr}=-Q^\top p=\bar Q^\top p$, and it does **not** satisfy $\frac{dp}{dr}=\bar Q p$ — for
# either generator, because $\bar Q$ is not symmetric even when $Q$ is. The residuals at $t=0.7$, and
# the total mass of the printed (9.2) at $t=1.3$ and of the printed (9.3) at the corresponding time
# $g(1.3)=1.69$ of its clock ($\sigma^2(t)=2t$):

# %% tags=["hide-cell"]
for name, Q in [("uniform", Q_uni), ("absorbing", Q_abs)]:
    sched_printed = rk4(lambda p, t: 2 * t * (Q @ p), p0.copy(), t_end, n=2000)  # (9.2) as printed
    tau_printed = rk4(lambda p, t: Q @ p, p0.copy(), t_end**2, n=2000)  # (9.3) as printed
    pt_ = forward_marginal(p0, Q, 0.7)
    Qbar_num = reverse_generator(Q, pt_)
    res_T = np.abs(Qbar_num.T @ pt_ + Q.T @ pt_).max()  # dp/dr = Qbar^⊤ p  (r = t_max - t)
    res_printed = np.abs(Qbar_num @ pt_ + Q.T @ pt_).max()  # dp/dr = Qbar p   (9.4) as printed
    print(f"{name:9s}: mass of printed (9.2) at t=1.3: {sched_printed.sum():.6f}, of printed (9.3) "
          f"at g=1.69: {tau_printed.sum():.6f};  (9.4) residual with Qbar^⊤ < 1e-12: "
          f"{res_T < 1e-12}, with Qbar as printed: {res_printed:.6f}")
    assert res_T < 1e-12 and res_printed > 1e-2
    assert np.allclose(sched_printed, tau_printed, atol=1e-9)  # (9.3) is (9.2) on the clock g
    if name == "uniform":
        assert np.allclose(sched_printed, forward_marginal(p0, Q, t_end**2), atol=1e-10)
    else:
        assert abs(sched_printed.sum() - 1) > 0.1

# %% [markdown]
# **The proof's last line.** The last display of the proof of Theorem D.1 ends with
# $-\sum_{u\ne y}Q_{uy}\,p(u,t)$; the line before it equals $-\sum_{u}Q_{uy}p(u,t)$
# (the $u=y$ term is $-Q_{yy}p(y,t)$), which is minus the forward right-hand side — the sum must
# include $u=y$. Sympy, for the first state, $y=1$:

# %% tags=["hide-cell"]
y = 0  # array index of the state named 1 in the symbols
line_before = -Qs[y, y] * ps[y] - sum(Qs[u, y] * ps[u] for u in range(S) if u != y)
printed_last = -sum(Qs[u, y] * ps[u] for u in range(S) if u != y)
forward_rhs = (ps * Qs)[y]
display(Math(r"\text{line before} + \text{forward rhs} = "
             + sp.latex(sp.simplify(line_before + forward_rhs))
             + r",\qquad \text{printed last line} + \text{forward rhs} = "
             + sp.latex(sp.simplify(printed_last + forward_rhs))))
assert sp.simplify(line_before + forward_rhs) == 0
assert sp.simplify(printed_last + forward_rhs) != 0

# %% [markdown]
# **Where the reverse chain ends (§9, after (9.4)).** The paper's sentence "sample from the data distribution by
# sampling $\bar p(\cdot,t_{\max})$" should read $\bar p(\cdot,0)$: the reverse chain starts at the noise
# end $t_{\max}$ and ends at $t=0$, where Figure 2.8.3 and the samples above recover the data law.
#
# **The tower-rule form of the loss (§9).** The second display after (9.4) rewrites the loss with the
# known conditionals $p(\cdot,t\mid u)$ of the forward process ("by the tower rule"). The rewrite
# needs, for every data point $u$ and every pair $(y,z)$ that the loss uses, $p(y,t\mid u)>0$
# whenever $p(z,t\mid u)>0$. With uniform noise every conditional has full support for $t>0$ and the
# two losses agree for **any** $s$. With the masking generator a clean token $y$ can only have come
# from $u=y$, so the pairs ($y$ clean, $z\ne y$) are weighted differently and the two losses
# differ. Weighting each term by the forward rate $Q_{zy}$ — the factor that multiplies $s_z$ in
# (9.5), as in the score-entropy paper [63] — removes exactly those pairs and restores the identity.

# %% tags=["hide-cell"]
s_rand = np.exp(rng.normal(size=(V, V)))
for name, Q in [("uniform", Q_uni), ("absorbing", Q_abs)]:
    P = transition_matrix(Q, t_fix)
    pt_ = p0 @ P
    for label, W in [("unweighted (as printed)", None), ("weighted by Q_zy", Q)]:
        marginal_form = score_entropy_loss(s_rand, pt_, W)
        tower_form = denoising_score_entropy_loss(s_rand, p0, P, W)
        gap = tower_form - marginal_form
        gap = 0.0 if abs(gap) < 1e-12 else gap
        print(f"{name:9s} {label:24s}: marginal {marginal_form:9.5f}  "
              f"tower-rule {tower_form:9.5f}  gap {gap:+.6f}")
P_abs = transition_matrix(Q_abs, t_fix)
assert abs(denoising_score_entropy_loss(s_rand, p0, P_abs)
           - score_entropy_loss(s_rand, p0 @ P_abs)) > 1e-3
assert np.isclose(denoising_score_entropy_loss(s_rand, p0, P_abs, Q_abs),
                  score_entropy_loss(s_rand, p0 @ P_abs, Q_abs))

# %% [markdown]
# **What the checks found** (each error of the paper below is a row of `book/ERRATA.md`; the
# confirmations are not):
#
# - The matrices printed in Examples 9.2 and 9.3 are not rate matrices (Example 9.2's rows sum to 1;
#   Example 9.3's mask row sums to 1 and its other rows to $\beta+(|\mathcal V|-1)(1-\beta)$); Example 9.2's is the one-step matrix $I+Q$. Corrected generators:
#   $Q=\beta(\mathbf 1\mathbf 1^\top/|\mathcal V|-I)$ and $Q_{ym}=\beta,\ Q_{yy}=-\beta\ (y\ne m)$.
# - (9.1) must read $\dot p=Q^\top p$ (or $\dot p = pQ$ for row vectors) with zero row sums, and so
#   must (9.2)–(9.3) ($\sigma^2(t)Q^{0\top}p$; harmless only for the symmetric uniform generator) and
#   (9.4) ($\bar Q^\top\bar p$ on the reversed clock, as the proof of Theorem D.1 uses); the
#   holding-time rate is $-Q_{yy}$, not $Q_{yy}$ (the lesson's check of $P(\text{no jump by }t)=e^{Q_{yy}t}$).
# - Example 9.3 calls the masking chain ergodic; with its zero mask row it is not irreducible,
#   though it still converges to $\delta_m$.
# - Gillespie matches the matrix exponential; τ-leaping is first order in τ.
# - Theorem D.1 holds (its proof's last line should sum over all $u$); the reverse sampler
#   recovers the data law, at $t=0$ (not $t_{\max}$).
# - The score-entropy loss is minimised at the ratio; its tower-rule form equals it for uniform
#   noise, and for masking only when weighted by $Q_{zy}$.

# %% [markdown]
# ## Reproducibility
#
# The page runs on the CPU in well under a minute. `FULL=1` raises the number of simulated chains
# from 8,000 to 40,000; the checks are the same. Monte Carlo numbers are shown as produced numbers
# (excluded from nbval's text comparison); their claims are asserted with tolerances of a few
# standard errors where they are printed.

# %% tags=["hide-cell"]
print(f"FULL = {FULL}: {N_CHAINS} chains per simulation")
