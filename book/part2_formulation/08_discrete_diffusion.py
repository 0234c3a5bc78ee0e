# %% [markdown]
# # 2.8 Discrete diffusion: a CTMC that masks text, and the process that unmasks it
#
# *Source: Baptista, Stuart, Tran, "Large Language Models: A Mathematical Formulation", §9
# (Eqs. 9.1–9.5, Examples 9.2–9.3, Remark 9.1) and Appendix D (Theorem D.1).*
#
# Instead of writing a sentence left to right, a discrete diffusion model corrupts a whole sequence
# by a continuous-time Markov chain (CTMC) — tokens are resampled uniformly, or replaced by a mask
# token — and learns to run that chain backwards. This notebook builds the forward chain, simulates
# it two ways (Gillespie and τ-leaping) against the matrix exponential, verifies the reverse-time
# construction of Theorem D.1, and checks that the score-entropy loss is minimised at the
# probability ratio. **Before using the paper's rate matrices we test them against the paper's own
# requirement (zero row sums); they fail, and we use corrected forms.**
#
# **Convention.** A generator $Q$ has $Q_{ij}\ge 0$ for $i\ne j$ (rate of the jump $i\to j$) and
# rows summing to zero. Laws are *row* vectors and evolve by $\dot p = pQ$ (i.e. $\dot p = Q^\top p$
# for columns), so $p(t)=p(0)\,e^{tQ}$. This is the convention of the proof of Theorem D.1;
# §2 below explains why the printed (9.1) needs it.

# %% tags=["parameters"]
import os

FULL = os.environ.get("FULL", "0") == "1"  # larger Monte Carlo samples; the checks are the same
N_CHAINS = 40_000 if FULL else 8_000

# %%
import matplotlib.pyplot as plt
import numpy as np
import sympy as sp

from nextword.booktools.plotting import use_book_style
from nextword.theory.formulation import (
    absorbing_generator, denoising_score_entropy_loss, euler_transition_matrix, forward_marginal,
    generator_violations, gillespie, probability_ratios, reverse_generator, reverse_marginals,
    sample_reverse, score_entropy_loss, sequence_generator, tau_leaping, transition_matrix,
    uniform_generator,
)

use_book_style()
rng = np.random.default_rng(0)

# %% [markdown]
# ## 1. Check the rate matrices of Examples 9.2 and 9.3 first
#
# The paper requires $\sum_j Q_{ij}=0$ for every row (text after (9.1)) and claims that each example
# "has any constant vector in its null-space". As printed, Example 9.2 has diagonal
# $1-\frac{|V|-1}{|V|}\beta$ and off-diagonal $\beta/|V|$; Example 9.3 has $Q_{mm}=1$, $Q_{im}=\beta$
# and $Q_{ij}=1-\beta$ for all $i,j\ne m$ (diagonal included). Sympy computes the row sums.

# %%
V_, beta = sp.symbols("V beta", positive=True)
row_uniform = (1 - (V_ - 1) / V_ * beta) + (V_ - 1) * beta / V_
print("Example 9.2 as printed, every row sums to:", sp.simplify(row_uniform))
print("Example 9.3 as printed, mask row sums to: 1; other rows sum to beta + (V-1)(1-beta) =",
      sp.expand(beta + (V_ - 1) * (1 - beta)))
row_uniform_fixed = -(V_ - 1) / V_ * beta + (V_ - 1) * beta / V_
print("corrected uniform generator, row sum:", sp.simplify(row_uniform_fixed),
      "| corrected absorbing generator, row sum (i != m):", sp.simplify(beta - beta))

# %% [markdown]
# The same check numerically, with the library's `generator_violations`, for $|V|=4$, $\beta=0.5$.
# The printed uniform matrix is a *stochastic* matrix (rows sum to 1): it is exactly $I+Q$ for the
# generator $Q=\beta(\mathbf 1\mathbf 1^\top/|V|-I)$ — a one-step transition matrix written in place of
# a rate matrix. For the absorbing example the corrected generator sends every non-mask state to the
# mask at rate $\beta$ ($Q_{im}=\beta$, $Q_{ii}=-\beta$) and leaves the mask row zero.

# %%
V, b, mask = 4, 0.5, 3
printed_uniform = np.full((V, V), b / V)
np.fill_diagonal(printed_uniform, 1 - (V - 1) * b / V)
printed_absorbing = np.zeros((V, V))
printed_absorbing[mask, mask] = 1.0
printed_absorbing[:mask, mask] = b
printed_absorbing[:mask, :mask] = 1 - b
Q_uni, Q_abs = uniform_generator(V, b), absorbing_generator(V, mask, b)
for name, M in [("Example 9.2 as printed", printed_uniform), ("Example 9.3 as printed", printed_absorbing),
                ("uniform, corrected", Q_uni), ("absorbing, corrected", Q_abs)]:
    problems = generator_violations(M)
    print(f"{name:24s}: {'a generator' if not problems else '; '.join(problems)}")
assert generator_violations(printed_uniform) and generator_violations(printed_absorbing)
assert np.allclose(printed_uniform, np.eye(V) + Q_uni)
assert not generator_violations(Q_uni) and not generator_violations(Q_abs)

# %% [markdown]
# ## 2. Which way does $Q$ act? (9.1) versus the proof of Theorem D.1
#
# (9.1) writes $\partial_t p = Qp$ with zero **row** sums. For a column vector that conserves total
# mass only if the **column** sums vanish: $\frac{d}{dt}\mathbf 1^\top p=\mathbf 1^\top Qp$. The proof in
# Appendix D uses $\dot p(i)=\sum_k Q_{ki}p(k)$, i.e. $\dot p = Q^\top p$, which does conserve mass.
# Integrating both with a non-symmetric generator (the absorbing one) shows the difference.

# %%
p0 = np.array([0.5, 0.3, 0.2, 0.0])


def rk4(f, y, t_end, n=400):
    h = t_end / n
    for _ in range(n):
        k1 = f(y); k2 = f(y + h / 2 * k1); k3 = f(y + h / 2 * k2); k4 = f(y + h * k3)
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return y


as_printed = rk4(lambda p: Q_abs @ p, p0, 2.0)
transposed = rk4(lambda p: Q_abs.T @ p, p0, 2.0)
print(f"total mass at t=2 with dp/dt = Q p  : {as_printed.sum():.6f}")
print(f"total mass at t=2 with dp/dt = Q^T p: {transposed.sum():.6f}")
assert abs(as_printed.sum() - 1) > 0.1
assert np.allclose(transposed, forward_marginal(p0, Q_abs, 2.0), atol=1e-10)

# %% [markdown]
# ## 3. Time change (9.2)–(9.3)
#
# With $Q(t)=\sigma^2(t)Q^0$ all the $Q(t)$ commute, so $p(t)=p(0)e^{g(t)Q^0}$ with
# $g(t)=\int_0^t\sigma^2$. We take $\sigma^2(t)=2t$ (so $g=t^2$), integrate (9.2) directly and
# compare.

# %%
t_end = 1.3
y, n = p0.copy(), 2000
h = t_end / n
f = lambda p, t: 2 * t * (p @ Q_uni)  # noqa: E731  (row convention: dp/dt = sigma^2(t) p Q0)
for k in range(n):
    t = k * h
    k1 = f(y, t); k2 = f(y + h / 2 * k1, t + h / 2); k3 = f(y + h / 2 * k2, t + h / 2); k4 = f(y + h * k3, t + h)
    y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
err = np.abs(y - forward_marginal(p0, Q_uni, t_end**2)).max()
assert err < 1e-10
print("max |p(t) - p0 expm(g(t) Q0)| < 1e-10:", err < 1e-10)

# %% [markdown]
# ## 4. Sequences: a sparse generator on $V^L$ (Remark 9.1)
#
# Corrupting each of the $L$ tokens independently with the same $Q$ gives the Kronecker sum
# $Q\oplus\dots\oplus Q$ on the $|V|^L$ sequences: one token changes per jump, so each row has at most
# $L(|V|-1)+1$ non-zeros instead of $|V|^L$, and the transition matrix factorises,
# $e^{t(Q\oplus Q)}=e^{tQ}\otimes e^{tQ}$ — the reason practical samplers update positions
# independently.

# %%
L = 3
Q_seq = sequence_generator(Q_abs, L)
nnz_per_row = (Q_seq != 0).sum(axis=1).max()
print(f"|V|^L = {V**L} states; at most {nnz_per_row} non-zeros per row (bound L(|V|-1)+1 = {L * (V - 1) + 1})")
P1 = transition_matrix(Q_abs, 0.8)
assert np.allclose(transition_matrix(Q_seq, 0.8), np.kron(np.kron(P1, P1), P1), atol=1e-12)
assert not generator_violations(Q_seq, atol=1e-12)

# %% [markdown]
# ## 5. Simulating the forward chain: Gillespie, τ-leaping, matrix exponential
#
# **Gillespie** draws an exponential holding time in state $i$ with rate $-Q_{ii}$ (the paper says
# "rate parameter $Q_{ii}$", which is $\le 0$; the rate is $-Q_{ii}$), then jumps to $j$ with
# probability $Q_{ij}/(-Q_{ii})$ — exact. **τ-leaping** freezes the rates over a step of length
# $\tau$ and moves every position at once with the one-step matrix $I+\tau Q$; its law after $n$
# leaps is exactly $p_0(I+\tau Q)^n=p_0e^{tQ}+O(\tau)$. We simulate sequences of $L=3$ tokens that
# start from a small "data set" of three sentences, first with the absorbing (mask) generator.

# %%
data_seqs = np.array([[0, 1, 2], [2, 1, 0], [1, 1, 1]])  # three "sentences" over {0, 1, 2}; 3 = mask
data_w = np.array([0.5, 0.3, 0.2])
flat = np.ravel_multi_index(data_seqs.T, (V,) * L)  # row-major index of each sentence in V^L
p0_seq = np.zeros(V**L)
p0_seq[flat] = data_w
t_obs = 1.0
exact_seq = forward_marginal(p0_seq, Q_seq, t_obs)

start = rng.choice(flat, size=N_CHAINS, p=data_w)
x_gil, n_jumps = gillespie(Q_seq, start, t_obs, rng)
freq_gil = np.bincount(x_gil, minlength=V**L) / N_CHAINS
x_tau = tau_leaping(Q_abs, np.array(np.unravel_index(start, (V,) * L)).T, t_obs, 20, rng)
freq_tau = np.bincount(np.ravel_multi_index(x_tau.T, (V,) * L), minlength=V**L) / N_CHAINS
law_tau = p0_seq @ np.linalg.matrix_power(euler_transition_matrix(Q_seq, t_obs / 20), 20)

tv = lambda a, c: 0.5 * np.abs(a - c).sum()  # noqa: E731
print(f"TV(Gillespie histogram, expm)      = {tv(freq_gil, exact_seq):.3f}")
print(f"TV(tau-leap histogram, its law)    = {tv(freq_tau, law_tau):.3f}")
print(f"TV(tau-leap law (20 leaps), expm)  = {tv(law_tau, exact_seq):.4f}")
print(f"mean number of jumps per chain     = {n_jumps.mean():.2f} (exact: {L * (1 - np.exp(-b * t_obs)):.2f})")
assert tv(freq_gil, exact_seq) < 0.05 and tv(freq_tau, law_tau) < 0.05
# holding times: P(no jump by t | start) = exp(Q_ii t) with rate -Q_ii = L*b for a fully unmasked sequence
no_jump = np.mean(n_jumps == 0)
print(f"P(no jump by t): simulated {no_jump:.3f}, exp(-L b t) = {np.exp(-L * b * t_obs):.3f}")
assert abs(no_jump - np.exp(-L * b * t_obs)) < 4 * np.sqrt(no_jump * (1 - no_jump) / N_CHAINS)

# %% [markdown]
# The expected number of jumps for a sequence with no mask is $L(1-e^{-\beta t})$ (each token is
# masked once, at rate $\beta$). The same comparison with uniform noise on the three-letter
# vocabulary $\{0,1,2\}$ (no mask token):

# %%
Q_u3 = uniform_generator(3, b)
Q_u3_seq = sequence_generator(Q_u3, L)
flat3 = np.ravel_multi_index(data_seqs.T, (3,) * L)
p0_u3 = np.zeros(3**L)
p0_u3[flat3] = data_w
exact_u3 = forward_marginal(p0_u3, Q_u3_seq, t_obs)
start3 = rng.choice(flat3, size=N_CHAINS, p=data_w)
freq_gil_u3 = np.bincount(gillespie(Q_u3_seq, start3, t_obs, rng)[0], minlength=3**L) / N_CHAINS
x_tau_u3 = tau_leaping(Q_u3, np.array(np.unravel_index(start3, (3,) * L)).T, t_obs, 20, rng)
freq_tau_u3 = np.bincount(np.ravel_multi_index(x_tau_u3.T, (3,) * L), minlength=3**L) / N_CHAINS
law_tau_u3 = p0_u3 @ np.linalg.matrix_power(euler_transition_matrix(Q_u3_seq, t_obs / 20), 20)
print(f"uniform: TV(Gillespie, expm) = {tv(freq_gil_u3, exact_u3):.3f};  TV(tau-leap, its law) = "
      f"{tv(freq_tau_u3, law_tau_u3):.3f};  TV(tau-leap law, expm) = {tv(law_tau_u3, exact_u3):.4f}")
assert tv(freq_gil_u3, exact_u3) < 0.05 and tv(freq_tau_u3, law_tau_u3) < 0.05

# %% [markdown]
# The τ-leaping error shrinks linearly in τ (absorbing case):

# %%
taus, errs = [], []
for n_leaps in [2, 4, 8, 16, 32, 64, 128]:
    law = p0_seq @ np.linalg.matrix_power(euler_transition_matrix(Q_seq, t_obs / n_leaps), n_leaps)
    taus.append(t_obs / n_leaps)
    errs.append(tv(law, exact_seq))
slope = np.polyfit(np.log(taus), np.log(errs), 1)[0]
print(f"log-log slope of TV error against tau: {slope:.2f}")
assert 0.9 < slope < 1.1

fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
order = np.argsort(-exact_seq)[:10]
labels = ["".join("abcM"[d] for d in np.unravel_index(s, (V,) * L)) for s in order]
xs = np.arange(order.size)
axes[0].bar(xs - 0.25, exact_seq[order], 0.25, label="expm")
axes[0].bar(xs, freq_gil[order], 0.25, label="Gillespie")
axes[0].bar(xs + 0.25, freq_tau[order], 0.25, label="τ-leaping (20 leaps)")
axes[0].set_xticks(xs, labels, rotation=45)
axes[0].set_ylabel("probability at t = 1")
axes[0].legend()
axes[1].loglog(taus, errs, "o-")
axes[1].set_xlabel("τ")
axes[1].set_ylabel("TV(τ-leap law, expm)")
axes[1].set_title(f"first order: slope {slope:.2f}")
plt.show()

# %% [markdown]
# **Figure 8.1.** Left: the ten most likely sequences at $t=1$ under the absorbing forward process
# (M = mask), exact (matrix exponential of the Kronecker-sum generator, (9.1) with $Q^\top$) and two
# samplers. Right: the τ-leaping law converges to the exact one at first order in τ.

# %% [markdown]
# ## 6. The reverse process (9.4) and Theorem D.1
#
# The reverse rates are $\bar Q_{ij}(t)=Q_{ji}\,p(j,t)/p(i,t)$ (D.1). Two algebraic facts carry the
# proof: $\bar Q$ is again a generator, and $p\bar Q=-pQ$ — the reverse flow exactly undoes the
# forward flow at every time. Sympy checks the second for a generic $3\times3$ generator.

# %%
S = 3
q = sp.Matrix(S, S, lambda i, j: sp.Symbol(f"q{i}{j}", positive=True) if i != j else 0)
Qs = q - sp.diag(*[sum(q[i, :]) for i in range(S)])
ps = sp.Matrix([[sp.Symbol(f"p{i}", positive=True) for i in range(S)]])
Qbar = sp.Matrix(S, S, lambda i, j: Qs[j, i] * ps[j] / ps[i] if i != j else 0)
Qbar = Qbar - sp.diag(*[sum(Qbar[i, :]) for i in range(S)])
print("p Qbar + p Q =", sp.simplify(ps * Qbar + ps * Qs))

# %% [markdown]
# The last display of the proof of Theorem D.1 ends with $-\sum_{\ell\ne i}Q_{\ell i}\,p(\ell,t)$; the
# line before it equals $-\sum_{\ell}Q_{\ell i}p(\ell,t)$ (the $\ell=i$ term is $-Q_{ii}p(i,t)$), which
# is minus the forward right-hand side — the sum must include $\ell=i$. Sympy:

# %%
i = 0
line_before = -Qs[i, i] * ps[i] - sum(Qs[l, i] * ps[l] for l in range(S) if l != i)
printed_last = -sum(Qs[l, i] * ps[l] for l in range(S) if l != i)
forward_rhs = (ps * Qs)[i]
print("line before + forward rhs       =", sp.simplify(line_before + forward_rhs))
print("printed last line + forward rhs =", sp.simplify(printed_last + forward_rhs))

# %% [markdown]
# Numerically: start the reverse master equation at $p(T)$ and integrate it down towards $t=0$ with
# the exact reverse rates (`reverse_marginals`, RK4 with a geometric grid near 0, where the rates out
# of states with $p_0=0$ blow up like $1/t$). Theorem D.1 says it retraces the forward marginals,
# whose closed forms for rate $\beta$ are $p_i(t)=p_{0,i}e^{-\beta t}$, $p_m(t)=1-e^{-\beta t}(1-p_{0,m})$
# (absorbing) and $1/|V|+(p_0-1/|V|)e^{-\beta t}$ (uniform). Then we *sample* the reverse chain from
# $x(T)\sim p(T)$ with τ-leaping (`sample_reverse`) and recover the data law at $t=0$.

# %%
T = 4.0
times = np.concatenate([np.linspace(T, 0.1, 120), np.geomspace(0.1, 1e-4, 60)[1:]])
closed = {
    "absorbing": lambda t: np.where(np.arange(V) == mask, 1 - np.exp(-b * t) * (1 - p0[mask]), p0 * np.exp(-b * t)),
    "uniform": lambda t: 1 / V + (p0 - 1 / V) * np.exp(-b * t),
}
fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True)
for ax, (name, Q) in zip(axes, [("absorbing", Q_abs), ("uniform", Q_uni)]):
    R = reverse_generator(Q, forward_marginal(p0, Q, 1.0))
    assert not generator_violations(R, atol=1e-12)
    pb = reverse_marginals(p0, Q, times)
    exact = np.array([closed[name](t) for t in times])
    err = np.abs(pb - exact).max()
    x0 = sample_reverse(p0, Q, T, 400, N_CHAINS, rng)
    freq0 = np.bincount(x0, minlength=V) / N_CHAINS
    print(f"{name:9s}: max |p_bar(t) - p(t)| on the grid < 1e-6: {err < 1e-6};  "
          f"reverse samples at t=0: {np.array2string(freq0, precision=3)} (data {p0})")
    assert err < 1e-6 and tv(freq0, p0) < 0.03
    for k in range(V):
        ax.plot(times, exact[:, k], color=f"C{k}", lw=3, alpha=0.35)
        ax.plot(times[::8], pb[::8, k], "o", color=f"C{k}", ms=3, label=f"state {k}" + (" (mask)" if k == mask else ""))
    ax.set_xlabel("t")
    ax.set_title(name)
axes[0].set_ylabel("probability")
axes[0].legend()
plt.show()

# %% [markdown]
# **Figure 8.2.** Forward marginals (thick lines, closed form) and the solution of the reverse
# equation (9.4) started from $p(T)$ and run from $t=T$ down to $t\approx 0$ (dots): they coincide, as
# Theorem D.1 states. (The paper's sentence "sample from the data distribution by sampling
# $\bar p(\cdot,T)$" should read $\bar p(\cdot,0)$: the reverse chain ends at $t=0$. Recorded in
# `book/ERRATA.md`.)
#
# In practice the reverse chain starts from $p_{\rm ref}$, not $p(T)$. The resulting error at $t=0$ is
# the total variation between $p(T)$ and $p_{\rm ref}$ (it cannot grow under a Markov kernel), which
# decays like $e^{-\beta T}$:

# %%
for T_ in [1.0, 2.0, 4.0, 8.0]:
    gap = tv(forward_marginal(p0, Q_abs, T_), np.eye(V)[mask])
    print(f"T = {T_:3.0f}: TV(p(T), delta_mask) = {gap:.4f}   (1 - p0_m) e^(-beta T) = {(1 - p0[mask]) * np.exp(-b * T_):.4f}")

# %% [markdown]
# ## 7. The score-entropy loss and its tower-rule form
#
# A network $s(i,t)_j$ is trained to approximate the ratio $p(j,t)/p(i,t)$ by minimising
# $\mathbb E_{i\sim p}\sum_{j\ne i}\big(s_j-\tfrac{p(j)}{p(i)}\log s_j\big)$ (first display after
# (9.4)); since $s\mapsto s-\alpha\log s$ is minimised at $s=\alpha$, the minimiser is the ratio.
# We minimise over all $S(S-1)$ entries at a fixed time with BFGS and compare.

# %%
import scipy.optimize  # noqa: E402

t_fix = 0.7
pt = forward_marginal(p0, Q_uni, t_fix)
off = ~np.eye(V, dtype=bool)


def se(z, p, Q=None):
    s = np.ones((V, V))
    s[off] = np.exp(z)
    return score_entropy_loss(s, p, Q)


res = scipy.optimize.minimize(se, np.zeros(off.sum()), args=(pt,), method="BFGS", options={"gtol": 1e-10})
err = np.abs(np.exp(res.x) - probability_ratios(pt)[off]).max()
assert err < 1e-5
print("max |argmin s - p(j)/p(i)| < 1e-5:", err < 1e-5)

# %% [markdown]
# The second display rewrites the loss with the known conditionals $p(\cdot,t\mid k)$ of the
# forward process ("by the tower rule"). The rewrite needs, for every data point $k$ and every pair
# $(i,j)$ that the loss uses, $p(i,t\mid k)>0$ whenever $p(j,t\mid k)>0$. With uniform noise every
# conditional has full support for $t>0$ and the two losses agree for **any** $s$. With the absorbing
# generator a clean token $i$ can only have come from $k=i$, so the pairs ($i$ clean, $j\ne i$) are
# weighted differently and the two losses differ. Weighting each term by the forward rate
# $Q_{ji}$ — the factor that multiplies $s_j$ in (9.5), as in the score-entropy paper [63] — removes
# exactly those pairs and restores the identity.

# %%
s_rand = np.exp(rng.normal(size=(V, V)))
for name, Q in [("uniform", Q_uni), ("absorbing", Q_abs)]:
    P = transition_matrix(Q, t_fix)
    pt_ = p0 @ P
    for label, W in [("unweighted (as printed)", None), ("weighted by Q_ji", Q)]:
        marginal_form = score_entropy_loss(s_rand, pt_, W)
        tower_form = denoising_score_entropy_loss(s_rand, p0, P, W)
        gap = tower_form - marginal_form
        gap = 0.0 if abs(gap) < 1e-12 else gap
        print(f"{name:9s} {label:24s}: marginal {marginal_form:9.5f}  tower-rule {tower_form:9.5f}  gap {gap:+.6f}")
P_abs = transition_matrix(Q_abs, t_fix)
assert abs(denoising_score_entropy_loss(s_rand, p0, P_abs) - score_entropy_loss(s_rand, p0 @ P_abs)) > 1e-3
assert np.isclose(denoising_score_entropy_loss(s_rand, p0, P_abs, Q_abs), score_entropy_loss(s_rand, p0 @ P_abs, Q_abs))

# %% [markdown]
# Finally (9.5): plugging the exact ratio into $\bar Q_{ij}=Q_{ji}\,s(i,t)_j$ reproduces the reverse
# generator of (D.1), so a well-trained ratio network is all the reverse sampler needs.

# %%
for Q in (Q_uni, Q_abs):
    pt_ = forward_marginal(p0, Q, t_fix)
    Qbar_95 = Q.T * probability_ratios(pt_)
    np.fill_diagonal(Qbar_95, 0.0)
    np.fill_diagonal(Qbar_95, -Qbar_95.sum(axis=1))
    assert np.allclose(Qbar_95, reverse_generator(Q, pt_), atol=1e-12)
print("(9.5) with the exact ratios equals (D.1) for both generators")

# %% [markdown]
# ## Summary
#
# * The matrices printed in Examples 9.2 and 9.3 are not rate matrices (their rows sum to 1 and to
#   $\beta+(|V|-1)(1-\beta)$); Example 9.2's is the one-step matrix $I+Q$. Corrected generators:
#   $Q=\beta(\mathbf 1\mathbf 1^\top/|V|-I)$ and $Q_{im}=\beta,\ Q_{ii}=-\beta\ (i\ne m)$.
# * (9.1) must read $\dot p=Q^\top p$ (or $\dot p = pQ$ for row vectors) with zero row sums; the
#   holding-time rate is $-Q_{ii}$.
# * Gillespie matches the matrix exponential; τ-leaping is first order in τ.
# * Theorem D.1 holds (its proof's last line should sum over all $\ell$); the reverse sampler
#   recovers the data law.
# * The score-entropy loss is minimised at the ratio; its tower-rule form equals it for uniform
#   noise, and for masking only when weighted by $Q_{ji}$.
#
# All of these are recorded in `book/ERRATA.md`.
