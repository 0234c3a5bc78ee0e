# %% [markdown]
# # 6.2 The attention mechanism
#
# *Source: Chapter 6, §6.2 (the attention-weight formula, Figs. 6.3–6.12, Exercises 1, 2 and 10).
# Library: `nextword.attention`, `nextword.torch.models.lm`, `nextword.chapter6.running_example`.*
#
# For embeddings $e[1..n]$ (rows, width $d_{\text{model}}$) the chapter defines $q[i]=e[i]W^Q$,
# $k[i]=e[i]W^K$, $v[i]=e[i]W^V$ and
#
# $$\alpha[i,j]=\frac{\exp\!\big(q[i]^\top k[j]/\sqrt{d}\big)}{\sum_{k\le i}\exp\!\big(q[i]^\top k[k]/\sqrt{d}\big)},\qquad
# \text{Attention}(q[i],K,V)=\sum_{j\le i}\alpha[i,j]\,v[j].$$
#
# This notebook (1) shows attention as a soft dictionary lookup (Fig. 6.3), (2) follows one query of a
# model **trained here** on variants of the running example through projections, scores, softmax and
# weighted sum (Figs. 6.5–6.8), (3) draws that model's attention matrix as a heatmap and a surface
# (Figs. 6.9–6.11) and compares its weights at the blank with the chapter's Fig. 6.10, and (4) derives
# the $1/\sqrt d$ scaling (Exercise 10) and measures what happens without it (Fig. 6.12).
#
# **Default run**: a 1-layer, 2-head `TinyLM` (width 32) trained for 400 steps on sentences from
# `RunningExampleSource` (about 10 s on 2 CPU cores). The chapter's Fig. 6.10 is an illustration of a
# large model on real text; ours is a measurement on a small language whose dependencies are known.

# %%
import matplotlib.pyplot as plt
import numpy as np
import sympy as sp
import torch
from scipy.optimize import linprog

from nextword.attention import MultiHeadAttention, scaled_dot_product_attention, softmax
from nextword.decoder import layer_norm
from nextword.booktools.plotting import heatmap, use_book_style
from nextword.chapter6 import RUNNING_EXAMPLE, RunningExampleSource
from nextword.data.synthetic import entropy
from nextword.torch.models.lm import LMConfig, TinyLM, evaluate_loss, to_numpy_decoder, train_lm

use_book_style()
torch.set_num_threads(1)  # tiny model: one thread is fastest on a shared 2-core machine

# %% [markdown]
# ## Attention as a soft lookup (Fig. 6.3, Exercises 1–2)
#
# Exercise 1's numbers: $q[3]=[1,0,-1,0]$ against $k[1..3]$ with $d=4$. The scaled scores are
# $[0.5,-0.5,-1]$; sympy keeps the weights exact, the library's `softmax` gives the floats.

# %%
q3 = sp.Matrix([[1, 0, -1, 0]])
K = sp.Matrix([[1, 1, 0, 0], [0, 1, 1, 0], [-1, 0, 1, 1]])
scores = q3 * K.T / sp.sqrt(4)
alpha_exact = [sp.exp(s) / sum(sp.exp(t) for t in scores) for s in scores]
print("scaled scores:", list(scores))
print("alpha[3, j] =", [sp.simplify(a) for a in alpha_exact])
alpha_num = softmax(np.array(scores.tolist(), dtype=float))[0]
print("numerically:", np.array2string(alpha_num, precision=4))
np.testing.assert_allclose(alpha_num, [float(a) for a in alpha_exact], rtol=1e-12)
assert abs(sum(alpha_exact).simplify() - 1) == 0

# %% [markdown]
# A dictionary returns the value of the one key that matches; attention returns a convex combination
# of all values, weighted by how well each key matches (Exercise 2: the weights are positive and sum
# to one, so the output lies in the convex hull of the values). Multiplying the scores by a growing
# inverse temperature $\beta$ turns the soft lookup into the hard one: the output converges to the
# value of the best-matching key. Membership in the convex hull is checked independently with a
# linear program (find $\lambda\ge0$, $\sum\lambda=1$, $\lambda V=$ output).

# %%
rng = np.random.default_rng(0)
keys = rng.standard_normal((6, 4))
values = rng.standard_normal((6, 3))
query = keys[2] + 0.3 * rng.standard_normal(4)  # closest to key 2
best = int(np.argmax(keys @ query))
betas = np.logspace(-2, 2, 41)
dist_to_best = []
for beta in betas:
    out, w = scaled_dot_product_attention(query[None], keys, values, scale=beta, return_weights=True)
    lp = linprog(np.zeros(6), A_eq=np.vstack([values.T, np.ones(6)]), b_eq=np.append(out[0], 1.0),
                 bounds=[(0, None)] * 6)
    assert lp.status == 0 and w.min() >= 0 and abs(w.sum() - 1) < 1e-12  # in the hull, weights convex
    dist_to_best.append(np.linalg.norm(out[0] - values[best]))
print(f"best-matching key: {best}; |output - v[best]| at beta=0.01: {dist_to_best[0]:.3f}, at beta=100: {dist_to_best[-1]:.2e}")
assert dist_to_best[-1] < 1e-6 and np.all(np.diff(dist_to_best)[20:] <= 1e-12)

plt.figure(figsize=(6.4, 3.4))
plt.loglog(betas, dist_to_best, "o-", ms=3)
plt.axvline(1 / np.sqrt(4), color="gray", ls="--", label=r"$\beta=1/\sqrt{d}$")
plt.xlabel(r"inverse temperature $\beta$ (scale on $q^\top k$)")
plt.ylabel(r"$\|\mathrm{output}-v[\mathrm{best}]\|$")
plt.title("soft lookup becomes a hard lookup")
plt.legend()
plt.show()

# %% [markdown]
# *Figure (Fig. 6.3, measured).* Distance between the attention output and the value of the
# best-matching key as the scores are sharpened: at the usual $\beta=1/\sqrt d$ the lookup is soft
# (a blend of values), for large $\beta$ it is a dictionary lookup — which, unlike attention, gives no
# gradient to the non-selected keys.
#
# ## A model trained on the running example
#
# `RunningExampleSource` generates variants of the chapter's sentence in which five words vary and the
# blank depends on exactly three of them: word 19 (code/cake, and its number), word 16
# (finally/hastily) and word 21 (would/now). Everything else, including "engineer(s)" at word 3, is
# irrelevant to the blank. We train a 1-layer, 2-head `TinyLM` on 4000 sentences.

# %%
src = RunningExampleSource()
train_ids = src.sample(4000, np.random.default_rng(0))
test_ids = src.sample(1000, np.random.default_rng(1))
Vocab = len(src.vocab)
cfg = LMConfig(vocab_size=Vocab, d_model=32, num_heads=2, num_layers=1, max_len=22, positional="learned")
model = TinyLM(cfg, seed=0)
losses = train_lm(model, train_ids, steps=400, batch_size=32, lr=3e-3, seed=0, progress=False)
blank = np.zeros((1000, 21), dtype=bool)
blank[:, -1] = True  # score the prediction of word 22 only
blank_loss = evaluate_loss(model, test_ids, loss_mask=blank)
print(f"test loss on the blank: {blank_loss:.2f} nats; the floor H(blank | context) = {src.blank_entropy():.2f}; "
      f"uniform over the 8 verbs: {np.log(8):.2f}")
assert blank_loss < src.blank_entropy() + 0.2

# %% [markdown]
# ## One query, step by step (Figs. 6.5–6.8)
#
# The chapter's own sentence, through the trained model's first (pre-norm) attention layer, computed
# by hand from the exported numpy weights. Query position 21 ("would") is the one whose output
# predicts the blank. Each step is checked against the library's attention weights.

# %%
lm = to_numpy_decoder(model)  # numpy DecoderLM with the trained weights
sent = src.encode(list(RUNNING_EXAMPLE))  # (21,)
e = lm.tok_emb[sent] + lm.pos_emb[:21]  # (21, 32) token + position (Fig. 6.24)
blk = lm.blocks[0]
h = layer_norm(e, blk.norm1_weight, blk.norm1_bias)  # pre-norm input of the attention
mha = blk.attn
dh = mha.head_dim
Q, Kmat, Vmat = h @ mha.W_q, h @ mha.W_k, h @ mha.W_v  # (21, 32) each: Fig. 6.5
head = 0
q, k, v = (M[:, head * dh:(head + 1) * dh] for M in (Q, Kmat, Vmat))  # head 0's (21, 16) slices
i = 20  # 0-based row of word 21
s = k[: i + 1] @ q[i] / np.sqrt(dh)  # Fig. 6.6: scores q[i].k[j] / sqrt(d_head), j <= i
a = softmax(s)  # Fig. 6.7
out = a @ v[: i + 1]  # Fig. 6.8: weighted sum of values
_, lib_w = lm.logits(sent, return_weights=True)
np.testing.assert_allclose(a, lib_w[0][head, i, : i + 1], atol=1e-12)
print(f"head {head}, query 'would': largest weights " +
      ", ".join(f"{RUNNING_EXAMPLE[j]} ({j + 1}) {a[j]:.2f}" for j in np.argsort(a)[::-1][:3]))

# %%
fig, axes = plt.subplots(2, 2, figsize=(11, 7))
labels = [f"{w} {t}" for t, w in enumerate(RUNNING_EXAMPLE, 1)]
heatmap(np.hstack([q, k, v]), ax=axes[0, 0], row_labels=labels, colorbar=True,
        title="q | k | v of head 0 (Fig. 6.5)")
axes[0, 0].set_xticks([dh / 2, 1.5 * dh, 2.5 * dh], labels=["q", "k", "v"], rotation=0)
axes[0, 1].bar(range(1, 22), s)
axes[0, 1].set(title="scores q[21]·k[j]/√d_head (Fig. 6.6)", xlabel="key position j")
axes[1, 0].bar(range(1, 22), a, color="C1")
axes[1, 0].set(title="softmax weights α[21, j] (Fig. 6.7)", xlabel="key position j")
contrib = a[:, None] * v[: i + 1]  # (21, 16) weighted values
heatmap(np.vstack([contrib, out[None]]), ax=axes[1, 1], row_labels=labels + ["= output"],
        title="α[21, j] v[j] and their sum (Fig. 6.8)")
for ax in axes[0, 1], axes[1, 0]:
    ax.set_xticks(range(1, 22), labels=RUNNING_EXAMPLE, rotation=70, fontsize=7)
plt.tight_layout()
plt.show()

# %% [markdown]
# *Figure (Figs. 6.5–6.8, from the trained model).* Top left: queries, keys and values of head 0 for
# the 21 words (Fig. 6.5). Top right: the scaled dot products of query 21 with every key (Fig. 6.6).
# Bottom left: the softmax turns them into weights (Fig. 6.7) — almost all on one word. Bottom right:
# each value scaled by its weight, and their sum, the output (Fig. 6.8).
#
# ## The whole attention matrix (Figs. 6.9–6.11) and the weights at the blank (Fig. 6.10)

# %%
fig, axes = plt.subplots(1, 2, figsize=(13, 5.5))
for hd in range(2):
    heatmap(lib_w[0][hd], ax=axes[hd], row_labels=labels, col_labels=labels, vmin=0, vmax=1,
            title=f"head {hd}: α[i, j] (rows: queries)")
plt.tight_layout()
plt.show()
W0 = lib_w[0]
assert np.allclose(W0.sum(-1), 1) and np.all(np.triu(W0[0], 1) == 0) and np.all(np.triu(W0[1], 1) == 0)
assert W0[:, 17, 1].max() > 0.9  # "the" (18), which predicts the object noun, reads "software" (2)

# %% [markdown]
# *Figure (Fig. 6.9, measured).* The two heads' attention matrices for the chapter's sentence. Rows sum
# to one; the upper triangle is zero (causal mask, §6.3). Most rows are diffuse or attend to
# themselves — their next words are fixed or random — while the rows that have something to predict
# pick the word that tells them (for instance "the" at 18, which predicts the object noun, looks back
# at "software").

# %%
mi = np.array([src.mutual_information(t) for t in range(1, 22)])
row = W0[:, 20, :]  # (2 heads, 21 keys): the query that predicts the blank
fig, axes = plt.subplots(2, 1, figsize=(10, 5), sharex=True)
for hd in range(2):
    axes[0].bar(np.arange(1, 22) + (hd - 0.5) * 0.4, row[hd], width=0.4, label=f"head {hd}")
axes[0].set(ylabel="α[21, j]", title="attention of the blank's query (trained model)")
axes[0].legend()
axes[1].bar(range(1, 22), mi, color="C2")
axes[1].set(ylabel="I(word j ; blank) [nats]", title="exact mutual information with the blank")
axes[1].set_xticks(range(1, 22), labels=RUNNING_EXAMPLE, rotation=70, fontsize=8)
plt.tight_layout()
plt.show()
top = sorted({int(np.argmax(row[hd])) + 1 for hd in range(2)})
print("words with the largest weight per head:", [f"{RUNNING_EXAMPLE[t - 1]} ({t})" for t in top])
print("words with I(word; blank) > 0:", [f"{RUNNING_EXAMPLE[t - 1]} ({t}) {mi[t - 1]:.3f}" for t in np.flatnonzero(mi > 1e-12) + 1])
assert top == [16, 19]  # the two heads split the two distant dependencies
assert row[:, 2].max() < 0.05  # "engineer" (no information about the blank) is ignored

# %% [markdown]
# *Figure (Fig. 6.10, measured).* Top: weights $\alpha[21,j]$ of the query whose output predicts the
# blank. Bottom: the exact mutual information between each word and the blank. The heads divide the
# work: one reads "code" (word 19: semantic family and number), the other "finally" (word 16: success
# or failure); word 21 ("would/now") is the query's own token and reaches the prediction through the
# residual stream. "software" (word 2) carries information about the blank only *through* word 19, so
# a model that reads word 19 has no use for it; "engineer" carries none and gets none.
#
# The chapter's Fig. 6.10 puts the largest weights on "code", "submitted", "engineer" and "software".
# In this controlled language "submitted" and "engineer" have zero mutual information with the blank
# and receive essentially no weight. What the figure's reasoning gets right — attention goes where the
# information about the next word is — holds here; which words those are is a property of the data,
# not of the sentence's grammar. (The chapter's positions 19 and 21 for "submitted" and "code" are
# words 17 and 19; see notebook 6.1.)

# %%
from mpl_toolkits.mplot3d import Axes3D  # noqa: F401, E402  (registers the 3-D projection)

fig = plt.figure(figsize=(11, 4.5))
I_, J_ = np.meshgrid(np.arange(1, 22), np.arange(1, 22), indexing="ij")
for hd in range(2):
    ax = fig.add_subplot(1, 2, hd + 1, projection="3d")
    ax.plot_surface(J_, I_, W0[hd], cmap="viridis", linewidth=0, antialiased=True)
    ax.set(xlabel="key j", ylabel="query i", zlabel="α[i, j]", title=f"head {hd}")
    ax.view_init(elev=35, azim=-60)
plt.tight_layout()
plt.show()

# %% [markdown]
# *Figure (Fig. 6.11, measured).* The same matrices as surfaces. The cliff along the diagonal is the
# causal mask; the ridges are keys that many queries read (head 1's ridge at word 16 is
# "finally"/"hastily").
#
# ## Why divide by $\sqrt d$? (Exercise 10, Fig. 6.12)
#
# For $q,k\in\mathbb R^d$ with i.i.d. entries of mean 0 and variance $\sigma^2$, independent of each
# other, $\operatorname{Var}(q^\top k)=\sum_i\operatorname{Var}(q_ik_i)=\sum_i E[q_i^2]E[k_i^2]=d\sigma^4$
# (the cross terms vanish by independence and zero mean). Sympy carries this out for a **symbolic**
# dimension $d$: write $E[(q^\top k)^2]=\sum_{i}\sum_{j}E[q_iq_j]E[k_ik_j]$, split it into the $d$
# diagonal terms $E[q_i^2]E[k_i^2]$ and the $d(d-1)$ off-diagonal ones $E[q_i]E[q_j]E[k_i]E[k_j]$, and
# subtract $E[q^\top k]^2$. We keep general means $\mu_q,\mu_k$ and variances $\sigma_q^2,\sigma_k^2$
# so that the role of the zero mean is visible, then set $\mu=0$, $\sigma_q=\sigma_k=\sigma$:

# %%
d_sym = sp.symbols("d", integer=True, positive=True)
i_sym, j_sym = sp.symbols("i j", integer=True, positive=True)
sigma_q, sigma_k = sp.symbols("sigma_q sigma_k", positive=True)
mu_q, mu_k = sp.symbols("mu_q mu_k", real=True)
diag_term = (sigma_q**2 + mu_q**2) * (sigma_k**2 + mu_k**2)   # E[q_i^2] E[k_i^2]
off_term = mu_q**2 * mu_k**2                                   # E[q_i]E[q_j]E[k_i]E[k_j], i != j
second_moment = sp.Sum(diag_term + sp.Sum(off_term, (j_sym, 1, d_sym)) - off_term, (i_sym, 1, d_sym)).doit()
mean_qk = sp.Sum(mu_q * mu_k, (i_sym, 1, d_sym)).doit()
var_general = sp.factor(sp.expand(second_moment - mean_qk**2))
sigma = sp.symbols("sigma", positive=True)
var_zero_mean = var_general.subs({mu_q: 0, mu_k: 0, sigma_q: sigma, sigma_k: sigma})
print("Var(q.k), general means  =", var_general)
print("Var(q.k), zero mean, sigma =", var_zero_mean)
assert sp.simplify(var_zero_mean - d_sym * sigma**4) == 0

# %% [markdown]
# The general form shows why the zero mean matters: with $\mu\neq0$ the variance picks up
# $d(\mu_k^2\sigma_q^2+\mu_q^2\sigma_k^2)$ and the mean $d\mu_q\mu_k$ grows with $d$ as well. As an
# independent check, sympy's `stats` module computes the variance from the joint densities for small
# $d$, for Gaussian and for uniform entries (the result does not depend on the distribution):

# %%
from sympy import stats  # noqa: E402

for dist_name in ("Normal", "Uniform"):
    for d_ in (1, 2):  # sympy.stats slows down quickly with d; the argument above is for every d
        if dist_name == "Normal":
            qs = [stats.Normal(f"q{i}", 0, sigma) for i in range(d_)]
            ks = [stats.Normal(f"k{i}", 0, sigma) for i in range(d_)]
        else:  # Uniform(-a, a) has variance a^2/3 = sigma^2 for a = sqrt(3) sigma
            a = sp.sqrt(3) * sigma
            qs = [stats.Uniform(f"q{i}", -a, a) for i in range(d_)]
            ks = [stats.Uniform(f"k{i}", -a, a) for i in range(d_)]
        var = sp.simplify(stats.variance(sum(x * y for x, y in zip(qs, ks))))
        print(f"{dist_name:7s} d = {d_}: Var(q.k) = {var}")
        assert sp.simplify(var - d_ * sigma ** 4) == 0

# %% [markdown]
# A simulation for the dimensions used in practice, and the effect of the scale: the variance of
# $q^\top k/\sqrt d$ is $\sigma^4$ for every $d$ ("near 1" only when $\sigma\approx1$).

# %%
rng = np.random.default_rng(2)
dims = [4, 16, 64, 256, 512, 1024]
sig = 1.0
emp = {}
for d_ in dims:
    qq, kk = sig * rng.standard_normal((20000, d_)), sig * rng.standard_normal((20000, d_))
    dots = np.einsum("nd,nd->n", qq, kk)
    emp[d_] = (dots.var(), (dots / np.sqrt(d_)).var())
    print(f"d = {d_:4d}: Var(q.k) = {emp[d_][0]:8.1f} (d sigma^4 = {d_ * sig ** 4:6.0f}), Var(q.k/sqrt d) = {emp[d_][1]:.3f}")
    assert abs(emp[d_][0] / (d_ * sig ** 4) - 1) < 0.05 and abs(emp[d_][1] - 1) < 0.05
p10 = 1 - (1 - 2 * __import__("scipy").stats.norm.sf(10 / np.sqrt(512))) ** 21
print(f"d = 512, unit variance: std of q.k = {np.sqrt(512):.1f}; P(some |q.k| > 10 among 21 keys) = {p10:.4f}")
assert p10 > 0.99  # the chapter: 'dot products can reach values of magnitude 10 or more for d = 512'

# %% [markdown]
# **Saturation.** The softmax Jacobian is $J=\mathrm{diag}(p)-pp^\top$. When one score dominates,
# $p$ is nearly one-hot and *every* entry of $J$ — diagonal ones included, $p_j(1-p_j)$ — goes to
# zero, so almost no gradient reaches the scores. We measure $\|J\|_F$ (checked against torch
# autograd), the largest weight and the entropy of the weights over 21 keys, with and without the
# scale, as $d$ grows.

# %%
def softmax_jacobian(p):
    return np.diag(p) - np.outer(p, p)  # (n, n)


z = torch.tensor(rng.standard_normal(21) * 5.0)
J_auto = torch.autograd.functional.jacobian(lambda t: torch.softmax(t, 0), z).numpy()
np.testing.assert_allclose(softmax_jacobian(softmax(z.numpy())), J_auto, atol=1e-12)

n_keys, n_rep = 21, 400
stats_ = {}
for d_ in dims:
    qq = rng.standard_normal((n_rep, 1, d_))
    kk = rng.standard_normal((n_rep, n_keys, d_))
    raw = (qq @ np.swapaxes(kk, 1, 2))[:, 0]  # (n_rep, n_keys) unscaled scores
    for name, sc in (("unscaled", raw), ("scaled", raw / np.sqrt(d_))):
        P = softmax(sc)
        jn = np.mean([np.linalg.norm(softmax_jacobian(p)) for p in P])
        stats_[(name, d_)] = (jn, P.max(1).mean(), entropy(P).mean())
for d_ in dims:
    u, s_ = stats_[("unscaled", d_)], stats_[("scaled", d_)]
    print(f"d = {d_:4d}: ||J||_F unscaled {u[0]:.4f} scaled {s_[0]:.4f} | max weight {u[1]:.3f} vs {s_[1]:.3f} "
          f"| entropy {u[2]:.3f} vs {s_[2]:.3f} nats")
sc_norms = [stats_[("scaled", d_)][0] for d_ in dims]
assert stats_[("unscaled", 1024)][0] < 0.25 * stats_[("scaled", 1024)][0]  # 5x smaller at d = 1024
assert max(sc_norms) / min(sc_norms) < 1.2  # scaled: the same regime at every d
assert all(stats_[("unscaled", a)][0] > stats_[("unscaled", b)][0] for a, b in zip(dims[1:], dims[2:]))

# %%
fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
d_show = 512
qq, kk = rng.standard_normal(d_show), rng.standard_normal((n_keys, d_show))
axes[0].bar(range(1, 22), softmax(kk @ qq), color="C3")
axes[0].set(title=f"unscaled, d = {d_show}", xlabel="key j", ylabel="weight")
axes[1].bar(range(1, 22), softmax(kk @ qq / np.sqrt(d_show)), color="C0")
axes[1].set(title=rf"scaled by $1/\sqrt{{d}}$, d = {d_show}", xlabel="key j")
axes[2].loglog(dims, [stats_[("unscaled", d_)][0] for d_ in dims], "o-", color="C3", label="unscaled")
axes[2].loglog(dims, sc_norms, "s-", color="C0", label="scaled")
axes[2].set(xlabel="d", ylabel=r"mean $\|\partial p/\partial z\|_F$", title="softmax Jacobian norm")
axes[2].legend()
plt.tight_layout()
plt.show()

# %% [markdown]
# *Figure (Fig. 6.12, measured).* Left and middle: the weights of one query over 21 random keys at
# $d=512$ without and with the scale — a one-hot spike versus a spread distribution. Right: the mean
# Frobenius norm of the softmax Jacobian. Without scaling it falls steadily with $d$ (the gradient to
# the scores vanishes); with scaling it stays the same at every $d$, because the scaled scores have
# variance $\sigma^4$ whatever the dimension.
#
# **Temperature.** The chapter reads the scale as an inverse temperature: sharper for a larger scale.
# The entropy of the weights is indeed monotone in the scale (checked on the Exercise 1 scores):

# %%
z1 = np.array(scores.tolist(), dtype=float)[0] * 2  # unscaled scores q[3].k[j]
scales = np.linspace(0.01, 10, 200)
H = entropy(softmax(scales[:, None] * z1[None, :]))
assert np.all(np.diff(H) < 0)
print(f"entropy at scale 0.01: {H[0]:.4f} nats (log 3 = {np.log(3):.4f}); at scale 10: {H[-1]:.4f}")

# %% [markdown]
# **Parameters.** $W^Q,W^K,W^V$ hold $3d_{\text{model}}^2$ numbers, as the chapter says; the library's
# attention module also has the output projection $W^O$, hence $4d_{\text{model}}^2$ (Exercise 4,
# notebook 6.4).

# %%
for d_ in (32, 512):
    m_ = MultiHeadAttention(d_, 8, rng=np.random.default_rng(0))
    qkv = sum(m_.parameters()[n].size for n in ("W_q", "W_k", "W_v"))
    print(f"d_model = {d_}: W_Q, W_K, W_V: {qkv} = 3 d^2; with W_O: {m_.num_parameters()} = 4 d^2")
    assert qkv == 3 * d_ ** 2 and m_.num_parameters() == 4 * d_ ** 2

# %% [markdown]
# ## Summary of the checks
#
# | claim (§6.2) | measured here |
# |---|---|
# | Exercise 1 weights | exact (sympy) = `softmax` to 1e-12 |
# | output is a convex combination; soft → hard lookup as the scale grows (Fig. 6.3) | LP hull test for every scale; distance to the selected value → 0 |
# | projections, scores, softmax, weighted sum (Figs. 6.5–6.8) | by hand from a trained model = library weights to 1e-12 |
# | weights concentrate on informative words (Figs. 6.9–6.11) | the blank's query reads words 16 and 19, the only words carrying information the query does not have; zero-information words get < 0.05; differs from Fig. 6.10's choice of words (explained above) |
# | $\operatorname{Var}(q^\top k)=d\sigma^4$ (Exercise 10) | sympy for symbolic $d$ (any zero-mean i.i.d. entries), cross-checked from the densities for $d=1,2$ (Gaussian, uniform), simulation to 5% up to $d=1024$ |
# | $\lvert q^\top k\rvert\ge10$ at $d=512$ | probability > 0.99 over 21 keys (unit variance) |
# | without scaling the softmax saturates and gradients vanish (Fig. 6.12) | $\Vert J\Vert_F$ falls with $d$ unscaled, is flat scaled |
# | $3d^2$ projection parameters | `MultiHeadAttention` ($4d^2$ with $W^O$) |
