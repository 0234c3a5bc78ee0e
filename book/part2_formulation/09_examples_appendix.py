# %% [markdown]
# # 2.9 The remaining examples: images as sequences, classifiers, derivatives and the printed model outputs
#
# **The question.** A transformer reads sequences of vectors. How can the same machine read an
# image — and do the paper's smaller worked examples around its main line (images, classification,
# the derivatives that training needs, batch normalisation, and the arithmetic and differential
# equations it asked a real model about) hold when we compute them?
#
# These examples are where the paper's formalism touches practice. Multimodal models such as CLIP
# rest on turning an image into a short sequence of wide vectors, just as byte-pair encoding turns
# text into tokens; the derivatives of Appendix A are what backpropagation computes when a model
# is trained; batch normalisation explains why modern language models use layer normalisation
# instead; and the model outputs of §7 are a lesson in reading claims about what an LLM can do.
# Each section states the example, computes it and checks it against an independent computation.
#
# ```{admonition} Learning goals
# :class: tip
# After this page you can
# - turn an image into a sequence of patch vectors by hand and explain the trade between sequence
#   length and vector width (Example 2.10);
# - explain what a contrastive loss trains and why classification is a map into the probability
#   simplex (Example 3.3);
# - compute the gradient with respect to an embedding table as a scatter-add over the positions of
#   each token (Lemma A.1), and explain why batch normalisation couples the sequences of a batch;
# - check a printed model output (a multiplication, a differential equation) independently.
# ```
#
# **Builds on:** [2.1 Tokenisation](01_tokenisation_bpe.ipynb) (sequences of tokens and the
# embedding table φ) ·
# [2.4 The attention block and the set transformer](04_attention_block_set_transformer.ipynb) (the
# set transformer $\mathbf T$ and the output map $\mathbf B$) · the chain rule, the softmax and its derivative, convolution as a
# sliding weighted sum. **Reading time:** about 40 minutes.
#
# *Source: Baptista, Stuart, Tran, "Large Language Models: A Mathematical Formulation" —
# Example 2.10 and Remark 2.11 (§2.4), Example 3.3 (§3), Appendix A (Lemma A.1, the
# ϑ-derivative of A.2), Example B.1, and the model outputs of §7 / Appendix E (E.1, E.3, E.4).*

# %%
from dataclasses import replace

import matplotlib.pyplot as plt
import numpy as np
import sympy as sp
from IPython.display import Math, display
from scipy.integrate import quad, solve_ivp
from scipy.signal import correlate

from nextword.attention import log_softmax, softmax
from nextword.booktools.display import produced
from nextword.booktools.plotting import use_book_style
from nextword.numerics import central_difference
from nextword.theory.formulation.examples import (
    batch_norm, contrastive_loss, patch_embedding, patchify,
)
from nextword.theory.formulation.set_transformer import (
    BlockParams, next_token_distribution, set_transformer,
)

use_book_style()
rng = np.random.default_rng(0)

# %% [markdown]
# ## A tiny example by hand
#
# A $4\times4$ grey image (one channel) with pixel values $0,\dots,15$, row by row. Cut it into
# $2\times2$ squares ("patches"), read each patch row by row, and you have a sequence of 4 vectors
# of 4 numbers — a sentence of 4 "words". A linear map applied to every patch (here: the mean of
# its 4 pixels) gives one number per patch; that is exactly a convolution whose stride equals its
# kernel size, since the patches do not overlap.

# %%
tiny_image = np.arange(16.0).reshape(4, 4, 1)  # (height, width, channels)
patches = []
for top in (0, 2):
    for left in (0, 2):
        patch = tiny_image[top:top + 2, left:left + 2, 0]
        patches.append(patch.ravel())
        print(f"patch at row {top}, column {left}: {patch.ravel()} -> mean {patch.mean()}")
assert np.array_equal(np.array(patches), patchify(tiny_image, 2))
averaging_kernel = np.full((1, 2, 2, 1), 0.25)  # (d_out, patch, patch, channels)
print("patch_embedding with the averaging kernel:", patch_embedding(tiny_image, averaging_kernel).ravel())
assert np.array_equal(patch_embedding(tiny_image, averaging_kernel).ravel(), [2.5, 4.5, 10.5, 12.5])

# %% [markdown]
# 16 numbers became a sequence of length 4; with $d$ output channels it would be 4 vectors of
# width $d$. Shorter sequence, wider elements: the trade Example 2.10 describes for CLIP.
#
# ## Images as sequences of wide vectors (Example 2.10, Remark 2.11)
#
# An RGB image $i_{\text{original}}:\mathbf S^{K',K'}\to\mathbb R^3$ is mapped by a linear
# convolution to $i_{\text{convolved}}:\mathbf S^{K,K}\to\mathbb R^{d_l}$ and flattened to a sequence
# of $K^2$ vectors in $\mathbb R^{d_l}$. With CLIP's $K'=224$, $K=7$, $d_l=768$ the convolution has
# kernel size and stride $K'/K=32$. `patch_embedding` implements it as "cut into $32\times32$
# patches, flatten, multiply", as in the tiny example; we check it against a direct strided
# cross-correlation (`scipy.signal.correlate`, sampled every 32 pixels) on a random image and a
# random kernel with a smaller width $d_l=16$ (the map is the same for every output channel).

# %%
K_img, K_seq, d_l = 224, 7, 768
p = K_img // K_seq  # patch side, 32
image = rng.uniform(0, 1, size=(K_img, K_img, 3))
kernel = rng.normal(size=(16, p, p, 3)) / p
seq = patch_embedding(image, kernel)  # (49, 16)
direct = np.stack([
    sum(correlate(image[:, :, c], kernel[o, :, :, c], mode="valid")[::p, ::p] for c in range(3))
    for o in range(kernel.shape[0])], axis=-1).reshape(K_seq * K_seq, -1)  # (7, 7, 16) -> (49, 16)
err = np.max(np.abs(seq - direct))
print(f"sequence shape {seq.shape}; max |patch_embedding - strided correlation| < 1e-10: {err < 1e-10}")
assert err < 1e-10 and patchify(image, p).shape == (K_seq**2, p * p * 3)
print(f"length x width: original {K_img**2:,} x 3 = {K_img**2 * 3:,} numbers;  "
      f"sequence {K_seq**2} x {d_l} = {K_seq**2 * d_l:,} numbers")
print(f"sequence {K_img**2 // K_seq**2}x shorter, each element {d_l // 3}x wider; "
      f"convolution weights {d_l * p * p * 3:,}")

# %% [markdown]
# The trade is the one the example describes: a sequence $1024$ times shorter whose elements are
# $256$ times wider (printed above) — the same move as byte-pair encoding makes for text, paid here
# in convolution weights.
#
# **Remark 2.11: 8-bit images are treated as continuous.** An 8-bit image is an integer tensor in
# $\{0,\dots,255\}^{K'\times K'\times3}$; encoders take it as a real array (here scaled by $1/255$).
# Because the embedding is linear, the gap between the embedding of a continuous image and of its
# 8-bit version is bounded by the rounding error: each pixel moves by at most $1/510$, so each
# sequence element moves by at most $\tfrac1{510}\|\text{kernel row}\|_1$ (the sum of the absolute
# weights of that output channel).

# %%
img_8bit = np.round(image * 255).astype(np.uint8)
seq_8bit = patch_embedding(img_8bit.astype(float) / 255, kernel)
gap = np.max(np.abs(seq_8bit - seq), axis=0)  # (16,) per output channel
bound = np.abs(kernel).reshape(kernel.shape[0], -1).sum(axis=1) / 510
print(f"dtype {img_8bit.dtype}, values in [{img_8bit.min()}, {img_8bit.max()}];  "
      f"max gap / bound = {np.max(gap / bound):.3f} (<= 1)")
assert np.all(gap <= bound + 1e-12)

# %% [markdown]
# ## Aligning images and text: the contrastive loss of CLIP
#
# CLIP aligns the image sequence (pooled to one vector) with the text sequence by a *contrastive*
# loss: in a batch of $N$ (image, caption) pairs, the $N\times N$ matrix of similarities should be
# largest on its diagonal, so the loss is the cross-entropy of picking each image's own caption
# among the $N$ (and each caption's own image). `contrastive_loss` returns the loss and its
# gradients; we check them by central differences (`nextword.numerics.central_difference`).

# %%
N, d_a, d_b, d_z, d_emb = 8, 12, 10, 6, 6
xa, yb = rng.normal(size=(N, d_emb)), rng.normal(size=(N, d_emb))
loss, gx, gy = contrastive_loss(xa, yb, temperature=0.5)
fd_x = central_difference(lambda x: contrastive_loss(x, yb, 0.5)[0], xa)  # (N, d_emb)
print(f"contrastive loss {loss:.4f}; max |dL/dx - finite differences| < 1e-8: "
      f"{np.max(np.abs(gx - fd_x)) < 1e-8}")
assert np.max(np.abs(gx - fd_x)) < 1e-8

# %% [markdown]
# Then we train two linear encoders, one per "modality", on synthetic pairs: two noisy linear views
# of a shared hidden vector (as an image and its caption describe the same scene), and measure
# cross-modal retrieval on held-out pairs — for each held-out view A, is its own partner the most
# similar of 64 views B?


# %%
def views(n, rng_v, Ma, Mb):
    """n paired views (n, d_a) and (n, d_b) of a shared latent (n, d_z), with noise 0.1."""
    z = rng_v.normal(size=(n, d_z))  # shared latent
    return z @ Ma + 0.1 * rng_v.normal(size=(n, d_a)), z @ Mb + 0.1 * rng_v.normal(size=(n, d_b))


def retrieval_accuracy(A, B, Wa, Wb):
    """Share of rows of A whose most similar row of B (after the encoders) is its own partner."""
    S = (A @ Wa) @ (B @ Wb).T
    return float(np.mean(np.argmax(S, axis=1) == np.arange(len(A))))


# %%
acc = {}
for seed in (0, 1, 2):
    rs = np.random.default_rng(seed)
    Ma, Mb = rs.normal(size=(d_z, d_a)), rs.normal(size=(d_z, d_b))
    Wa, Wb = 0.1 * rs.normal(size=(d_a, d_emb)), 0.1 * rs.normal(size=(d_b, d_emb))
    A_test, B_test = views(64, rs, Ma, Mb)
    before = retrieval_accuracy(A_test, B_test, Wa, Wb)
    for step in range(300):
        A, B = views(64, rs, Ma, Mb)
        _, gxa, gyb = contrastive_loss(A @ Wa, B @ Wb, temperature=1.0)
        Wa, Wb = Wa - 0.02 * A.T @ gxa, Wb - 0.02 * B.T @ gyb
    acc[seed] = (before, retrieval_accuracy(A_test, B_test, Wa, Wb))
    print(f"seed {seed}: held-out retrieval accuracy among 64 pairs {produced(before, '.2f')} -> "
          f"{produced(acc[seed][1], '.2f')} (chance {1 / 64:.3f})")
assert all(after > 0.3 and after > before + 0.25 for before, after in acc.values())

# %%
fig, axes = plt.subplots(1, 2, figsize=(9, 3.2))
axes[0].imshow(image[:64, :64])
for t in range(0, 64, p):
    axes[0].axhline(t - 0.5, color="w", lw=0.8)
    axes[0].axvline(t - 0.5, color="w", lw=0.8)
axes[0].set_title("Example 2.10: 32 x 32 patches (corner)")
axes[1].bar(range(3), [acc[s][1] for s in (0, 1, 2)], color="C1", label="after contrastive training")
axes[1].bar(range(3), [acc[s][0] for s in (0, 1, 2)], color="C0", label="before")
axes[1].set_xticks(range(3), [f"seed {s}" for s in (0, 1, 2)])
axes[1].set_ylabel("held-out retrieval accuracy")
axes[1].legend(fontsize=7)
plt.tight_layout()
plt.show()

# %% [markdown]
# **Figure 2.9.1.** Left: the patch grid of Example 2.10 on a corner of the random image (each
# square becomes one element of the sequence). Right: cross-modal retrieval among 64 held-out pairs
# before and after training with the CLIP-style loss, for three seeds; chance is 1/64.
#
# ## Classification: a map into the probability simplex (Example 3.3)
#
# A classifier maps an input to a probability for each of its labels: a point of the *probability
# simplex* (non-negative numbers summing to 1). MNIST's problem maps $\mathbb R^{28^2}$ to the
# simplex over 10 digits. No data is downloaded here, so we use ten synthetic classes in
# $\mathbb R^{784}$ (Gaussian blobs) and the softmax-linear map $x\mapsto\mathrm{softmax}(Wx+b)$
# ($784\cdot10+10$ parameters), trained by gradient descent on cross-entropy. The gradient is checked
# against central differences first.

# %%
d_in, n_cls = 28 * 28, 10
centres = rng.normal(size=(n_cls, d_in)) * 0.15
labels = rng.integers(0, n_cls, size=600)
Xc = centres[labels] + rng.normal(size=(600, d_in))
W, bias = np.zeros((d_in, n_cls)), np.zeros(n_cls)


def ce_and_grad(W, bias, X, y):
    """Mean cross-entropy of softmax(X W + bias) against labels y, and its gradients in W and bias."""
    logp = log_softmax(X @ W + bias)
    P = np.exp(logp)
    P[np.arange(len(y)), y] -= 1.0
    return float(-logp[np.arange(len(y)), y].mean()), X.T @ P / len(y), P.mean(axis=0)


_, gW, _ = ce_and_grad(W, bias, Xc[:50], labels[:50])
idx = [(3, 2), (400, 7), (783, 0)]
fd_W = central_difference(lambda W_: ce_and_grad(W_, bias, Xc[:50], labels[:50])[0], W)  # (784, 10)
assert np.allclose([gW[i, j] for i, j in idx], [fd_W[i, j] for i, j in idx], atol=1e-8)
assert np.allclose(gW, fd_W, atol=1e-8)  # every entry, not only the three above

# %%
for step in range(100):
    loss_c, gW, gb = ce_and_grad(W, bias, Xc[:500], labels[:500])
    W, bias = W - 0.05 * gW, bias - 0.05 * gb
probs = softmax(Xc[500:] @ W + bias)
test_acc = float(np.mean(np.argmax(probs, axis=1) == labels[500:]))
print(f"parameters {W.size + bias.size:,}; outputs on the simplex: min prob >= 0: {probs.min() >= 0}, "
      f"max |sum - 1| < 1e-12: {np.max(np.abs(probs.sum(axis=1) - 1)) < 1e-12}")
print(f"train cross-entropy {produced(loss_c, '.2f')} (log 10 = {np.log(10):.2f} at start); "
      f"held-out accuracy {produced(test_acc, '.2f')} (chance 0.10)")
assert probs.min() >= 0 and np.max(np.abs(probs.sum(axis=1) - 1)) < 1e-12 and test_acc > 0.5

# %% [markdown]
# ## Batch normalisation mixes the sequences of a batch (Example B.1)
#
# A normalisation layer rescales vectors to mean 0 and variance 1 (then applies a learned scale $D$
# and shift $b$). *Which* mean and variance? Example B.1's batch normalisation
# $\mathfrak N(u;\pi)=D(u-\mathbb E_\pi u)/\sqrt{\mathbb V_\pi u+\varepsilon}+b$ takes them under
# $\pi$, the empirical measure of every token of every sequence in the batch. Three checks: (i) with
# $D=I$, $b=0$ the normalised tokens have mean 0 and variance $\mathbb V/(\mathbb V+\varepsilon)$
# under $\pi$ (per coordinate); (ii) reordering the sequences of the batch permutes the outputs;
# (iii) unlike {term}`layer normalisation` ([6.6](../part1_chapter6/6_6_context_representation.ipynb)), a
# sequence's output depends on the *other* sequences — so a block that uses it is not a function of
# one sequence, and the measure-to-measure reading of Appendix B needs $\pi$ to be the batch
# measure, not the sequence's own.

# %%
d_e = 4
batch = rng.normal(2.0, 3.0, size=(5, 7, d_e))  # 5 sequences of 7 tokens in R^4
eps = 1e-5
out = batch_norm(batch, eps=eps)
tokens_all = batch.reshape(-1, d_e)
print(f"(i)  mean under pi: max |.| < 1e-12: {np.max(np.abs(out.reshape(-1, d_e).mean(0))) < 1e-12};  "
      f"variance = V/(V+eps): "
      f"{np.allclose(out.reshape(-1, d_e).var(0), tokens_all.var(0) / (tokens_all.var(0) + eps))}")
perm = rng.permutation(5)
print(f"(ii) permuting the batch permutes the outputs: {np.allclose(batch_norm(batch[perm], eps=eps), out[perm])}")
other = batch.copy()
other[1:] += 5.0  # change the other sequences only
moved = np.max(np.abs(batch_norm(other, eps=eps)[0] - out[0]))
print(f"(iii) sequence 0 unchanged, others shifted by 5: its batch-norm output moves by {moved:.2f}")
assert np.max(np.abs(out.reshape(-1, d_e).mean(0))) < 1e-12 and moved > 0.5
assert np.allclose(batch_norm(batch[perm], eps=eps), out[perm])

# %% [markdown]
# ## Checking the paper
#
# **Lemma A.1: the derivative with respect to the embedding table is a scatter-add.** Appendix A.1
# differentiates $\mathbf H(\varphi,f)=\mathbf G(\varphi\circ f)$ with respect to the embedding table
# $\varphi$ (one row $\varphi_k\in\mathbb R^{d_e}$ per token): the block for row $k$ is
# $\sum_{m=1}^{M} D_m\mathbf G(\varphi\circ f)\,\delta_{k,f_m}$, the sum of the position derivatives
# over the positions where token $k$ occurs (zero for a token that does not occur). A check by
# central differences on a random smooth $\mathbf G:\mathbb R^{M\times d_e}\to\mathbb R^{|V|}$, with a
# repeated token:

# %%
rng_a1 = np.random.default_rng(3)
n_vocab, d_table, seq_len = 5, 3, 4
table = rng_a1.normal(size=(n_vocab, d_table))  # phi: one row per token
token_ids = np.array([2, 0, 2, 4])  # token 2 occurs twice, tokens 1 and 3 not at all
mix = rng_a1.normal(size=(seq_len, n_vocab, d_table))  # G(h) = sum_m mix_m tanh(h_m), (|V|,)


def g_of_h(h: np.ndarray) -> np.ndarray:
    """A smooth map from a sequence h (M, d_e) to R^{|V|}."""
    return np.einsum("mvd,md->v", mix, np.tanh(h))


d_m = [mix[m] * (1 - np.tanh(table[token_ids[m]]) ** 2) for m in range(seq_len)]  # D_m G, (|V|, d_e)
lemma = [sum(d_m[m] for m in range(seq_len) if token_ids[m] == k) if k in token_ids
         else np.zeros((n_vocab, d_table)) for k in range(n_vocab)]
fd = central_difference(lambda tab: g_of_h(tab[token_ids]), table)  # [output, k, coordinate]
fd = fd.transpose(1, 0, 2)  # [k, output, coordinate]
err_a1 = max(np.abs(fd[k] - lemma[k]).max() for k in range(n_vocab))
print(f"Lemma A.1 against central differences: max error < 1e-8: {err_a1 < 1e-8}; "
      f"rows of absent tokens 1 and 3 are zero: {not fd[1].any() and not fd[3].any()}")
assert err_a1 < 1e-8 and not fd[1].any() and not fd[3].any()

# %% [markdown]
# **Appendix A.2: the ϑ-derivative through $\mathbf B\circ\mathbf T$.**
# $q=\mathrm{softmax}(\mathbf B\,\mathbf T(h)/\tau)$ with $\vartheta=(\theta^{(b)},\theta^{(t)})$. The
# chain rule gives $\partial q/\partial\mathbf B_{jk}=\sigma'(z)_{:,j}\,\mathbf T(h)_k/\tau$ and
# $\partial q/\partial\theta^{(t)}=\sigma'(z)\,\mathbf B\,\partial_{\theta^{(t)}}\mathbf T/\tau$ with
# $\sigma'(z)=\mathrm{diag}(q)-qq^\top$ the softmax's Jacobian. Sympy confirms that Jacobian for
# three outputs:

# %%
zs = sp.symbols("z1:4", real=True)
sig = [sp.exp(zi) / sum(sp.exp(zj) for zj in zs) for zi in zs]
jacobian_gap = sp.Matrix(3, 3, lambda i, j: sp.simplify(
    sp.diff(sig[i], zs[j]) - (sig[i] * (1 if i == j else 0) - sig[i] * sig[j])))
display(Math(r"\frac{\partial\sigma_i}{\partial z_j} - \big(\mathrm{diag}(q) - qq^\top\big)_{ij} = "
             + sp.latex(jacobian_gap)))
assert jacobian_gap == sp.zeros(3, 3)

# %% [markdown]
# Numerically we assemble both products (with $\partial\mathbf T/\partial\theta^{(t)}$ itself by
# central differences, since A.2 is about the assembly) and compare with central differences of
# $q$, for a two-block set transformer; $\theta^{(t)}$ is the query matrix of the first block.

# %%
d_model, V_size, tau = 4, 5, 0.7
blocks = [BlockParams.random(d_model, 3, 8, np.random.default_rng(s), scale=0.5) for s in (1, 2)]
Bm = rng.normal(size=(V_size, d_model))
hseq = rng.normal(size=(6, d_model))
Tval = set_transformer(hseq, blocks)
q = next_token_distribution(hseq, blocks, Bm, tau)
sig_prime = np.diag(q) - np.outer(q, q)
dq_dB = np.einsum("ij,k->ijk", sig_prime, Tval) / tau  # (|V|, |V|, d_model)
fd_B = central_difference(lambda B_: next_token_distribution(hseq, blocks, B_, tau), Bm)
print(f"dq/dB: max |chain rule - FD| < 1e-8: {np.max(np.abs(dq_dB - fd_B)) < 1e-8}")
assert np.max(np.abs(dq_dB - fd_B)) < 1e-8


# %%
def with_query(Q_first):
    """The blocks with the first block's query matrix replaced by Q_first (theta^(t))."""
    b0 = blocks[0]
    return [replace(b0, att=replace(b0.att, Q=Q_first))] + blocks[1:]


Q0 = blocks[0].att.Q
n_theta = Q0.size
dT = central_difference(lambda Q_: set_transformer(hseq, with_query(Q_)), Q0).reshape(d_model, n_theta)
dq_dtheta = sig_prime @ Bm @ dT / tau  # (|V|, n_theta)
fd_theta = central_difference(lambda Q_: next_token_distribution(hseq, with_query(Q_), Bm, tau), Q0)
fd_theta = fd_theta.reshape(V_size, n_theta)
print(f"dq/dtheta^(t) (first block's Q, {n_theta} entries): max |chain rule - FD| < 1e-7: "
      f"{np.max(np.abs(dq_dtheta - fd_theta)) < 1e-7}")
assert np.max(np.abs(dq_dtheta - fd_theta)) < 1e-7

# %% [markdown]
# **§7 and Appendix E: the arithmetic and the differential equation that can be checked.** §7 shows
# outputs of a 3-billion-parameter model, which the book does not run (see the book's contents
# page). But Appendix E.3 prints worked multiplications and E.4 prints two differential equations
# with a claim about their solutions; those statements can be checked without the model. The model
# outputs below are quoted from App. E.3 as data, not reproduced. ICL = in-context learning: a
# worked example placed in the prompt.

# %%
# App. E.3: (a, b, last line without ICL, last line with ICL), as printed
E3 = [(473, 45, 21385, 21285), (299, 89, 26911, 26611), (378, 64, 24072, 24192),
      (952, 76, 72352, 72352), (874, 25, 21850, 6128)]
E3_TRUTH = {(473, 45): 21285, (299, 89): 26611, (378, 64): 24192, (952, 76): 72352, (874, 25): 21850}
for a, b, plain, icl in E3:
    print(f"{a} x {b} = {a * b:6d}   without ICL {plain:6d} ({'right' if plain == a * b else 'wrong'})"
          f"   with ICL {icl:6d} ({'right' if icl == a * b else 'wrong'})")
assert all(E3_TRUTH[(a, b)] == a * b for a, b, *_ in E3)  # every printed "truth" is the product
three = E3[1:4]  # "three other pairs" of App. E.3
assert sum(p_ == a * b for a, b, p_, _ in three) == 1 and all(i == a * b for a, b, _, i in three)
assert E3[4][2] == 874 * 25 and E3[4][3] != 874 * 25  # ICL turns a right answer wrong
# the no-context working of 473 x 45: both partial products are right, their sum is not
assert (473 * 5, 473 * 40) == (2365, 18920) and 2365 + 18920 == 473 * 45 != 21385
print("no-context working: 2365 + 18920 =", 2365 + 18920, "(the output adds them to 21385)")


# %%
def digit_products(m: int, n: int) -> list[int]:
    """The ICL context's method: place-value parts of m times place-value parts of n, in its order."""

    def parts(x: int) -> list[int]:
        return [int(c) * 10 ** (len(str(x)) - 1 - i) for i, c in enumerate(str(x))]

    return [u * v for u in parts(m) for v in parts(n)]


# the context's worked example (184 x 67) and the model's ICL working of 473 x 45, with running sums
worked = [((184, 67), [6000, 700, 4800, 560, 240, 28], [6700, 11500, 12060, 12300, 12328]),
          ((473, 45), [16000, 2000, 2800, 350, 120, 15], [18000, 20800, 21150, 21270, 21285])]
for (m, n), R, sums in worked:
    assert digit_products(m, n) == R and list(np.cumsum(R)[1:]) == sums and sums[-1] == m * n
    print(f"{m} x {n}: R = {R}, running sums {sums}: correct")
# the two tau = 0.5 samples for 378 x 64: the first's partial products and sum are right, not the second
assert 378 * 4 == 1512 and 378 * 60 == 22680 and 1512 + 22680 == 378 * 64 != 24048
pairs = {(a, b) for a, b, *_ in E3}
print(f"distinct task pairs shown: {len(pairs)}; with the context's example 184 x 67: "
      f"{len(pairs | {(184, 67)})}")
assert len(pairs) == 5 and len(pairs | {(184, 67)}) == 6

# %% [markdown]
# Every product and every "truth" of App. E.3 is right, and so are the counts of §7.3 and E.3
# (without ICL one of the three further pairs is right; with ICL all three; for 874 × 25 the context
# turns a right answer into a wrong one). The no-context error for 473 × 45 is in the final
# addition, not in the partial products. E.3 announces "six different pairs"; five task pairs are
# shown, six if the worked example of the context counts. The "four out of five" and "five out of
# five" of the repeated stochastic runs cannot be checked: those outputs are not printed.
#
# **E.1.** The paper's own argument (two travellers on the same day must meet) is the intermediate
# value theorem applied to $h(t)=f(t)-g(t)$, with $f$ Monday's and $g$ Tuesday's position along the
# route. The model's explanation in E.1 asserts $f(12)=g(12)$, which is false: at noon Frank is in
# Philadelphia on Monday and in New York on Tuesday, so $h(12)=D$ and $h(9)=-D$ ($D$ the route
# length), and it is this sign change that forces a meeting. A check on random continuous journeys
# (piecewise linear, allowed to stop and turn back):

# %%
rng_e1 = np.random.default_rng(0)
grid = np.linspace(9.0, 12.0, 601)
met = 0
for _ in range(1000):
    knots = np.linspace(9.0, 12.0, 8)
    mon = np.concatenate([[0.0], rng_e1.uniform(-0.2, 1.2, 6), [1.0]]).clip(0, 1)  # D = 1
    tue = np.concatenate([[1.0], rng_e1.uniform(-0.2, 1.2, 6), [0.0]]).clip(0, 1)
    h = np.interp(grid, knots, mon) - np.interp(grid, knots, tue)
    assert h[0] == -1.0 and h[-1] == 1.0  # h(9) = -D, h(12) = +D: never h(12) = 0
    met += bool(np.any(np.sign(h[:-1]) != np.sign(h[1:])) or np.any(h == 0))
print(f"random journey pairs with a common place at a common time: {met} of 1000")
assert met == 1000

# %% [markdown]
# **E.4.** The first program integrates $y_1'=y_2$, $y_2'=-y_1-y_2^2$ from $(1,0)$ on $[0,10]$, and
# the paper says its solution blows up in that range. It does, in finite time, and the time can be
# computed without a solver: along the solution $w=y_2^2$ as a function of $y=y_1$ satisfies
# $dw/dy=-2y-2w$, so $w(y)=\tfrac12 e^{2(1-y)}-y+\tfrac12$ (sympy below), $y_1$ decreases from 1 for
# ever, and the blow-up time is $T^*=\int_{-\infty}^{1}dy/\sqrt{w(y)}$, finite because $w$ grows like
# $e^{-2y}$. An adaptive RK45 (scipy's, the method of MATLAB's `ode45`) stops just there. The
# fine-tuned model's $y'=-y+\sin t$, $y(0)=1$ has the bounded solution
# $y=\tfrac32e^{-t}+\tfrac12(\sin t-\cos t)$.

# %%
yy, tt = sp.symbols("y t", real=True)
w_expr = sp.exp(2 * (1 - yy)) / 2 - yy + sp.Rational(1, 2)
assert sp.simplify(sp.diff(w_expr, yy) - (-2 * yy - 2 * w_expr)) == 0 and w_expr.subs(yy, 1) == 0
w_fn = sp.lambdify(yy, w_expr, "numpy")
with np.errstate(over="ignore"):  # w(1 - u) overflows to inf for large u, where the integrand is 0
    t_star = quad(lambda u: 1 / np.sqrt(w_fn(1 - u)), 0, np.inf, limit=200)[0]  # u = 1 - y
blow = solve_ivp(lambda t, y: [y[1], -y[0] - y[1] ** 2], (0, 10), [1.0, 0.0], method="RK45",
                 rtol=1e-10, atol=1e-12)
print(f"blow-up time from the first integral: T* = {t_star:.4f}; RK45 gives up at t = "
      f"{produced(blow.t[-1], '.4f')} with |y| > 1e10: "
      f"{blow.status == -1 and np.abs(blow.y[:, -1]).max() > 1e10}")
assert blow.status == -1 and abs(blow.t[-1] - t_star) < 1e-3 and t_star < 10

# %%
y_exact = sp.Rational(3, 2) * sp.exp(-tt) + (sp.sin(tt) - sp.cos(tt)) / 2
assert sp.simplify(sp.diff(y_exact, tt) - (-y_exact + sp.sin(tt))) == 0 and y_exact.subs(tt, 0) == 1
calm = solve_ivp(lambda t, y: [-y[0] + np.sin(t)], (0, 10), [1.0], rtol=1e-10, atol=1e-12,
                 dense_output=True)
gap_calm = np.abs(calm.y[0] - sp.lambdify(tt, y_exact)(calm.t)).max()
print(f"fine-tuned model's ODE: max |y| on [0, 10] = {np.abs(calm.y).max():.4f}; "
      f"max |RK45 - closed form| < 1e-8: {gap_calm < 1e-8}")
assert calm.status == 0 and np.abs(calm.y).max() <= 1.0 + 1e-9 and gap_calm < 1e-8

# %% [markdown]
# So the two claims of E.4 (and of §7.4) hold: the first solution blows up inside $[0,10]$ — at
# $T^*\approx1.78$, so MATLAB's plot can show only the part before it — and the second stays
# bounded. What the paper attributes to fine-tuning (a better example) is one draw of each model and
# is not checkable without them.
#
# **Example B.1: the weight of the batch measure.** The example prints the batch measure as
# $\pi=\frac1{\ell n}\sum_{k=1}^{\ell}\sum_{n=1}^{N}\delta_{h_k^{(n)}}$, with the summation index $n$
# in the weight. Read literally the weights $\frac1{\ell n}$ sum to $1+\frac12+\dots+\frac1N$, not 1,
# and favour the first sequences of the batch; the measure meant (and the one `batch_norm` uses in
# the section above) gives every token of the batch the weight $\frac1{\ell N}$:

# %%
n_seq, ell = batch.shape[:2]
literal_mass = sum(ell / (ell * n) for n in range(1, n_seq + 1))
print(f"total weight of the printed pi for N = {n_seq}: {literal_mass:.4f} "
      f"(= H_N); with 1/(ell N): {ell * n_seq / (ell * n_seq):.0f}")
assert abs(literal_mass - 1) > 0.5
assert np.allclose(out.reshape(-1, d_e).mean(0), 0, atol=1e-12)  # batch_norm centres under 1/(ell N)

# %% [markdown]
# **What the checks found.** Example 2.10's convolution-and-flatten is exactly patch extraction
# followed by a matrix product, and its sequence/width trade-off is as stated; the CLIP-style loss
# has the gradients we use and aligns two synthetic modalities. Remark 2.11's discrete images enter
# as reals with an error bounded by the rounding. Example 3.3's classifier maps into the simplex.
# Lemma A.1 and Appendix A.2's chain rule through $\mathbf B\circ\mathbf T$ match central
# differences. Example B.1's batch normalisation couples the sequences of a batch, which is why it
# is a map of the batch measure (whose weight is $1/(\ell N)$, not the printed $1/(\ell n)$). The
# printed arithmetic of App. E.3 and the two differential equations of E.4 are as the paper says;
# the model's E.1 explanation contains a false step.
#
# ## Key takeaways
#
# - An image becomes a sequence by cutting it into patches and applying one linear map to each — a
#   convolution whose stride is its kernel size; CLIP trades a $1024$ times shorter sequence for
#   $256$ times wider elements.
# - A contrastive loss aligns two encoders by making each item most similar to its own partner in a
#   batch; a classifier maps into the probability simplex through a softmax.
# - The gradient with respect to an embedding table adds up the position gradients of every
#   occurrence of a token; tokens absent from the text get zero gradient.
# - Batch normalisation uses statistics of the whole batch, so one sequence's output depends on the
#   others — layer normalisation does not.
# - A model's printed output can often be checked without the model: the arithmetic, the
#   intermediate value theorem and a first integral settle the claims of Appendix E.
#
# ## Check your understanding
#
# 1. A $64\times64$ RGB image is cut into $8\times8$ patches and each patch mapped to a vector of
#    width $512$. How long is the sequence, how wide each element, and how many weights does the map
#    have (no bias)?
#
#    ```{dropdown} Answer
#    $(64/8)^2=64$ elements of width $512$ (the image had $64^2=4096$ pixels of width 3); the map
#    multiplies each flattened patch of $8\cdot8\cdot3=192$ numbers by a $192\times512$ matrix:
#    $98\,304$ weights.
#    ```
#
# 2. In the Lemma A.1 check, the text is tokens (2, 0, 2, 4). Which rows of the embedding table get
#    a non-zero gradient, and why does row 2 get a sum of two terms?
#
#    ```{dropdown} Answer
#    Rows 0, 2 and 4 — the tokens that occur; rows 1 and 3 get zero. Row 2 is used at positions 1
#    and 3 (counting from 1), so changing it moves both positions' vectors, and its gradient is the
#    sum of the two position derivatives $D_1\mathbf G+D_3\mathbf G$.
#    ```
#
# 3. Why is a model using batch normalisation awkward for generating text one token at a time?
#
#    ```{dropdown} Answer
#    Its output for one sequence depends on the other sequences in the batch (check (iii)), so the
#    same prompt can give different next-token probabilities depending on what else is being
#    processed — and a batch of one has statistics of a single sequence only. Layer normalisation
#    uses each token's own statistics and has neither problem.
#    ```
#
# ## Reproducibility
#
# The page runs on the CPU in well under a minute and has no run-size switch. Numbers produced by
# training (the contrastive encoders, the classifier) and by the adaptive ODE solver are shown
# through `produced()` (compared as `<produced>` by nbval); their claims are asserted where they are
# printed. The model outputs of Appendix E are quoted from the paper, not generated.

# %% tags=["hide-cell"]
print("seeds: numpy default_rng(0) for the page, 0-2 for the contrastive runs, 3 for Lemma A.1, "
      "0 for E.1")
