# %% [markdown]
# # 3.4 Design choices measured: key geometry (§6.2), LayerNorm on values and attention dropout (§8.2)
#
# *Source: Aggarwal, Dalal, Misra, §6.2 (hypothesis frames and key orthogonality) and §8.2
# (regularisation and stability). Library: `nextword.theory.dynamics` (the §2.1 head, Eq. 23),
# `nextword.theory.dynamics.design` (the options and a retrieval toy).*
#
# The paper turns its gradient formulas into three design statements, none of them measured in the
# paper itself:
#
# * **§6.2** — the key gradient $\partial L/\partial k_j\propto\sum_i\alpha_{ij}(b_{ij}-\mathbb E_{\alpha_i}[b])\,q_i$
#   pushes apart the keys that different groups of queries find helpful, "encouraging approximate
#   orthogonality of distinct hypothesis axes";
# * **§8.2** — "LayerNorm on values can stabilize norms while leaving directional dynamics intact";
# * **§8.2** — "attention dropout disrupts the feedback loop, limiting over-specialization and
#   encouraging more evenly used values".
#
# We check the key-gradient formula, then measure the three statements on a toy in which the
# hypotheses are known. **The toy** (`retrieval_task`): tokens belong to $G$ groups (the hypotheses);
# in every sequence each group has a random class, shown only by its *carrier* tokens; every position
# must predict its group's class, so the *asker* tokens must route to their own group's carriers. One
# head of §2.1 is trained by full-batch gradient descent on the mean cross-entropy.

# %%
import matplotlib.pyplot as plt
import numpy as np
import sympy as sp

from nextword.attention import scaled_dot_product_attention
from nextword.booktools.display import produced
from nextword.booktools.plotting import use_book_style
from nextword.theory.dynamics import (
    HeadParams, compatibility_matrix, cross_entropy, head_forward, score_gradient, upstream_gradient,
)
from nextword.theory.dynamics.design import DesignConfig, retrieval_task, train_design

use_book_style()

# %% [markdown]
# ## 1. The key gradient of §6.2
#
# With scores $s_{ij}=q_i^\top k_j/\sqrt{d_k}$ and Eq. (23), $\partial L/\partial s_{ij}=\alpha_{ij}(b_{ij}-\mathbb E_{\alpha_i}[b])$
# with $b_{ij}=u_i^\top v_j$, the chain rule gives
# $\partial L/\partial k_j=\frac1{\sqrt{d_k}}\sum_i\alpha_{ij}(b_{ij}-\mathbb E_{\alpha_i}[b])\,q_i$. We evaluate
# it with the library's Eq. (23) and compare with central finite differences of the loss in each key
# entry, computed through `scaled_dot_product_attention` only.

# %%
rng = np.random.default_rng(0)
T, d_x, d_k, d_v, C = 6, 5, 3, 4, 3
params = HeadParams.init(d_x, d_k, d_v, C, rng=rng, scale=0.8)
X, y = rng.normal(size=(T, d_x)), rng.integers(0, C, size=T)
fw = head_forward(params, X)
U = upstream_gradient(fw.probs, y, params.W_O)                                 # u_i, (T, d_v)
dS = score_gradient(fw.alpha, compatibility_matrix(U, fw.V))                   # Eq. (23), (T, T)
dK_formula = dS.T @ fw.Q / np.sqrt(d_k)                                        # §6.2, row j = dL/dk_j


def loss_given_keys(K):
    G = scaled_dot_product_attention(fw.Q, K, fw.V)
    logits = G @ params.W_O + params.b
    return cross_entropy(logits - np.log(np.exp(logits).sum(axis=1, keepdims=True)), y)


h = 1e-6
dK_fd = np.zeros_like(fw.K)
for idx in np.ndindex(fw.K.shape):
    E = np.zeros_like(fw.K)
    E[idx] = h
    dK_fd[idx] = (loss_given_keys(fw.K + E) - loss_given_keys(fw.K - E)) / (2 * h)
err = np.max(np.abs(dK_formula - dK_fd))
print(f"max |§6.2 key gradient - finite differences| < 1e-8: {err < 1e-8}  (largest entry {np.max(np.abs(dK_fd)):.3f})")
assert err < 1e-8

# %% [markdown]
# ## 2. Where the push apart ends: orthogonal, or a simplex?
#
# In the toy, let $k_g=e_gW_K$ be the key direction of group $g$. Askers of group $g$ find their own
# carriers helpful (advantage $>0$) and the other groups' tokens unhelpful, so the formula moves $k_g$
# along $+q_g$ and every other key along $-q_g$. With $G$ interchangeable groups the end point of such a
# push is a configuration of $G$ unit vectors with equal pairwise cosine $c$ and (by symmetry) zero sum:

# %%
G_sym, c = sp.symbols("G", positive=True), sp.symbols("c", real=True)
norm_of_sum = G_sym + G_sym * (G_sym - 1) * c          # |sum_g k_g|^2 for unit vectors with pairwise cosine c
c_star = sp.solve(sp.Eq(norm_of_sum, 0), c)[0]
print("equal-angle configuration with zero sum: cos =", c_star)
assert sp.simplify(c_star + 1 / (G_sym - 1)) == 0

# %% [markdown]
# So the mechanism predicts a regular simplex, $\cos(k_g,k_h)=-1/(G-1)$ — orthogonality only in the
# limit of many hypotheses. We train the head for $G=2,3,5$ (three seeds each) and measure the mean
# pairwise cosine of the group keys before and after training.

# %%
key_rows = {}
for G in (2, 3, 5):
    for seed in (0, 1, 2):
        rng_s = np.random.default_rng(seed)
        task = retrieval_task(G, 4, n_seq=24, rng=rng_s)
        p0 = HeadParams.init(task.X.shape[-1], 6, 4, 4, rng=rng_s, scale=0.3)
        run = train_design(task, p0, DesignConfig(steps=250, lr=1.0), rng=rng_s)
        key_rows[G, seed] = run
        print(f"G = {G}, seed {seed}: loss {produced(run.losses[0], '.2f')} -> {produced(run.losses[-1], '.3f')};  "
              f"mean cos(k_g, k_h) {produced(run.key_cos[0], '+.2f')} -> {produced(run.key_cos[-1], '+.2f')}   "
              f"(simplex {-1 / (G - 1):+.2f})")
        assert run.losses[-1] < 0.1 * run.losses[0]
        assert abs(run.key_cos[-1] + 1 / (G - 1)) < 0.2 and run.key_cos[-1] < -0.15

# %%
fig, ax = plt.subplots(figsize=(6.4, 3.4))
for (G, seed), run in key_rows.items():
    ax.plot(run.key_cos, color=f"C{(2, 3, 5).index(G)}", lw=1, label=f"G = {G}" if seed == 0 else None)
for G in (2, 3, 5):
    ax.axhline(-1 / (G - 1), color=f"C{(2, 3, 5).index(G)}", ls="--", lw=0.8,
               label="simplex value $-1/(G-1)$" if G == 2 else None)
ax.axhline(0, color="k", lw=0.6)
ax.set_xlabel("gradient step")
ax.set_ylabel("mean pairwise cos of group keys")
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# *Figure 3.4.1 — the group keys during training (three seeds per $G$); dashed: the simplex value
# $-1/(G-1)$, black: orthogonality.*
#
# The keys are pushed apart as §6.2 says, but to the simplex printed above, not to orthogonality: two
# hypotheses end up nearly *opposite*, three at about 120°. Orthogonality is approached only as $G$
# grows (or if the keys must also serve other queries that break the symmetry). The "approximate
# orthogonality" the paper cites from its wind-tunnel models therefore needs more than the mechanism
# of §6.2. Recorded in `book/ERRATA.md`.
#
# ## 3. §8.2: LayerNorm on the values, attention dropout
#
# To give over-specialisation something to act on, every group now has three carriers of different
# reliability: carrier 1 shows the class with probability 0.95, carriers 2 and 3 with 0.75 (otherwise a
# random class), and each carrier shows its slot, so a head can learn whom to trust. We train three
# variants for three seeds each — plain, LayerNorm on the values (`value_norm=True`, no affine), and
# attention dropout with rate 0.3 (inverted, masks from a seeded generator) — and measure the largest
# value norm, the key geometry, and how askers split their attention among their own carriers
# (evaluated without dropout). Trained quantities are printed to one decimal: the LayerNorm run of
# seed 0 is sensitive to round-off (its attention weights differ in the second decimal between CPU
# kernels — the LayerNorm backward divides by each value row's spread), so only comparisons that hold
# in every seed are asserted.

# %%
variants = {"plain": DesignConfig(steps=250, lr=1.0), "LayerNorm on values": DesignConfig(steps=250, lr=1.0, value_norm=True),
            "attention dropout 0.3": DesignConfig(steps=250, lr=1.0, dropout=0.3)}


def carrier_shares(run, task):
    """Askers' attention over their own group's carriers, renormalised: mean shares and mean entropy."""
    w_all = []
    for i in np.flatnonzero(~task.carrier):
        own = np.flatnonzero(task.carrier & (task.kinds == task.kinds[i]))
        w = run.alpha[:, i, own]                                   # (N, carriers)
        w_all.append(w / w.sum(axis=1, keepdims=True))
    w_all = np.concatenate(w_all)                                  # (N * askers, carriers)
    return w_all.mean(axis=0), float(np.mean(-(w_all * np.log(w_all)).sum(axis=1)))


design = {}
for name, cfg in variants.items():
    for seed in (0, 1, 2):
        rng_s = np.random.default_rng(seed)
        task = retrieval_task(3, 4, n_seq=32, rng=rng_s, carriers=3, reliability=(0.95, 0.75, 0.75))
        p0 = HeadParams.init(task.X.shape[-1], 4, 4, 4, rng=rng_s, scale=0.3)
        run = train_design(task, p0, cfg, rng=rng_s)
        shares, ent = carrier_shares(run, task)
        design[name, seed] = (run, shares, ent)
        print(f"{name:22s} seed {seed}: loss {produced(run.losses[-1], '.2f')}  max ||v|| "
              f"{produced(run.value_norm_max[0], '.1f')} -> {produced(run.value_norm_max[-1], '.1f')}  key cos "
              f"{produced(run.key_cos[-1], '+.1f')}  reliable-carrier share {produced(shares[0], '.1f')}  "
              f"entropy over carriers {produced(ent, '.1f')}")
print(f"(uniform over 3 carriers: share 0.33, entropy log 3 = {np.log(3):.2f}; LayerNorm gives ||v|| ≈ sqrt(d_v) = 2)")

# %%
share = {name: np.array([design[name, s][1][0] for s in (0, 1, 2)]) for name in variants}
ent = {name: np.array([design[name, s][2] for s in (0, 1, 2)]) for name in variants}
vmax = {name: np.array([design[name, s][0].value_norm_max[-1] for s in (0, 1, 2)]) for name in variants}
kcos = {name: np.array([design[name, s][0].key_cos[-1] for s in (0, 1, 2)]) for name in variants}
# LayerNorm: norms pinned at sqrt(d_v) (up to eps) while the plain head's grow; routing geometry kept
assert np.all(np.abs(vmax["LayerNorm on values"] - 2.0) < 0.01) and np.all(vmax["plain"] > 3.0)
assert np.all(np.abs(kcos["LayerNorm on values"] - kcos["plain"]) < 0.1)
# dropout: the most reliable carrier loses share and attention spreads, in every seed
assert np.all(share["attention dropout 0.3"] < share["plain"]) and np.all(ent["attention dropout 0.3"] > ent["plain"])
loss_end = {name: np.array([design[name, s][0].losses[-1] for s in (0, 1, 2)]) for name in variants}
assert np.all(loss_end["attention dropout 0.3"] > loss_end["plain"])     # hedging costs training loss
assert np.all(share["LayerNorm on values"] > share["plain"])             # LayerNorm does not reduce specialisation
print("reliable-carrier share, LayerNorm > plain in every seed:", bool(np.all(share["LayerNorm on values"] > share["plain"])))
print("reliable-carrier share, dropout < plain in every seed:  ", bool(np.all(share["attention dropout 0.3"] < share["plain"])))
print("entropy over carriers, dropout > plain in every seed:   ", bool(np.all(ent["attention dropout 0.3"] > ent["plain"])))
print("training loss, dropout > plain in every seed:           ", bool(np.all(loss_end["attention dropout 0.3"] > loss_end["plain"])))

# %%
fig, axes = plt.subplots(1, 2, figsize=(10, 3.4))
for k, name in enumerate(variants):
    for seed in (0, 1, 2):
        run = design[name, seed][0]
        axes[0].plot(run.value_norm_max, color=f"C{k}", lw=1, label=name if seed == 0 else None)
    axes[1].bar(np.arange(3) + 0.27 * (k - 1), np.mean([design[name, s][1] for s in (0, 1, 2)], axis=0),
                width=0.27, color=f"C{k}", label=name)
axes[0].set_xlabel("gradient step")
axes[0].set_ylabel("largest value norm ||v_j||")
axes[0].legend(fontsize=7)
axes[1].set_xticks(range(3), ["carrier 1 (0.95)", "carrier 2 (0.75)", "carrier 3 (0.75)"])
axes[1].set_ylabel("askers' attention share")
axes[1].legend(fontsize=7)
plt.tight_layout()
plt.show()

# %% [markdown]
# *Figure 3.4.2 — left: value norms during training (three seeds per variant); right: how askers split
# their attention among their group's three carriers (mean over seeds).*
#
# **What the measurements say** (three seeds, printed above):
#
# * **LayerNorm on values** pins every value norm at $\sqrt{d_v}$ while the plain head's values keep
#   growing, and the routing geometry (group-key cosines) is unchanged — the "stabilise norms, keep the
#   directions" reading holds on this toy. It does not reduce specialisation: the reliable carrier's
#   share is higher in every seed (printed above).
# * **Attention dropout** lowers the reliable carrier's share and raises the entropy over carriers in
#   every seed: the head hedges across redundant sources, as §8.2 says ("more evenly used values").
#   The price is a higher training loss at the same number of steps.
# * **Key geometry (§6.2)**: pushed apart, but to a simplex, not to orthogonality (§2).
