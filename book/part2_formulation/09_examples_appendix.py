# %% [markdown]
# # 2.9 The remaining examples: images as sequences, classifiers, derivatives and a model's printed answers
#
# **The question.** A transformer reads sequences of vectors. How can the same machine read an
# image — and how much of what a paper shows around its main line (images, classification, the
# derivatives that training needs, batch normalisation, and a real model's answers to arithmetic and
# coding prompts) can we compute and check ourselves?
#
# These examples are where the formalism of Part 2 touches practice. Multimodal models (models that
# read more than one kind of data, such as images and text), for example CLIP (a model trained to
# tell which caption belongs to which image), rest on turning an image into a short sequence of
# wide vectors, just as byte-pair encoding turns
# text into tokens; the derivatives of Appendix A are what backpropagation computes when a model
# is trained; batch normalisation explains why language models use layer normalisation instead; and
# the model outputs of the paper's §7 are a lesson in reading claims about what a language model can
# do: much of what a model prints can be checked without the model.
#
# ```{admonition} Learning goals
# :class: tip
# After this page you can
# - turn an image into a sequence of patch vectors by hand and explain the trade between sequence
#   length and vector width (Example 2.10);
# - explain what a contrastive loss trains and why a classifier is a map into the probability
#   simplex (Example 3.3);
# - compute the gradient with respect to an embedding table as a sum over the positions of each
#   token (Lemma A.1), and explain why batch normalisation couples the sequences of a batch;
# - check a model's printed answer (a multiplication, a differential equation) without the model.
# ```
#
# **Builds on:** [2.1 Tokenisation](01_tokenisation_bpe.ipynb) (sequences of tokens and the
# embedding table $\varphi$) ·
# [2.4 The attention block and the set transformer](04_attention_block_set_transformer.ipynb) (the
# set transformer $\mathbf T$ and the output map $B$, written bold, $\mathbf B$, on this page as in the
# paper's Appendix A.2) · the chain rule, the softmax and its derivative, convolution as a sliding
# weighted sum, the intermediate value theorem, first-order linear differential equations (an
# integrating factor). **Reading time:** about 45 minutes.
#
# ```{admonition} Symbols on this page
# :class: note
# | symbol | meaning | shape |
# |---|---|---|
# | $K'$, $K$ | side of the image in pixels; side of the grid of patches (the paper's letters of Example 2.10, kept; not the keys $K$ of the book's notation table, Appendix A) | integers |
# | $d_l$ | width of each patch vector (the image's "embedding width") | integer |
# | $i_{\text{original}}$, $i_{\text{convolved}}$ | the image, and the image after the strided convolution | $(K',K',3)$, $(K,K,d_l)$ |
# | $\mathbf S^{K,K}$ | the grid of pixel (or patch) positions $\{1..K\}\times\{1..K\}$ | set |
# | $N$, $n$ | the number of items in a batch (image–caption pairs, or sequences); the index of a sequence in the batch, 1 to $N$ | integers |
# | $x$, $W$, $b$ | a classifier's input, weight matrix and bias (the bias $b$ of the book's notation table: $xW+b$) | $(784,)$, $(784,10)$, $(10,)$ |
# | $p_{\text{batch}}$ | the batch measure (a distribution of vectors, as [2.4](04_attention_block_set_transformer.ipynb)'s empirical measure $p$): weight $1/(MN)$ on every token of every sequence of the batch | measure |
# | $\mathbb E_{p}$, $\mathbb V_{p}$ | the mean and the variance (per coordinate) of the measure $p$, i.e. of a vector drawn from it | $(d_e,)$ |
# | $u$ | a vector to be normalised | $(d_e,)$ |
# | $\mathfrak N(u;p)$ | batch normalisation of the vector $u$ with the statistics of $p$ | $(d_e,)$ |
# | $\delta$ | $\delta_h$ puts weight 1 on the vector $h$ | measure |
# | $\Gamma$, $\beta$, $\varepsilon$ | the normalisation's learned scale and shift, and its small stabilising constant | $(d_e,d_e)$, $(d_e,)$, number |
# | $d_e$ | the embedding width | integer |
# | $\varphi$, $\varphi_k$ | the embedding table of [2.1](01_tokenisation_bpe.ipynb), one column per token; its vector for token $k$ (row $k$ of the code's table $\varphi^\top$, the \"rows\" of this page) | $(d_e,\lvert\mathcal V\rvert)$, $(d_e,)$ |
# | $f$, $f_m$ | a text; its token at position $m$ | tokens |
# | $M$ | the length of a text (of each sequence of a batch) | integer |
# | $m$, $k$, $k'$ | a position in the text; a token of the vocabulary ($k'$ a second one; $k$ is the paper's letter of Lemma A.1, kept: not the key $k$ of the book's notation table) | integers |
# | $h$, $h_m$ | the embedded text $\varphi_{f_1},\dots,\varphi_{f_M}$; its vector at position $m$ | $(M,d_e)$ |
# | $\mathbf G$, $\mathbf H$ | a map of the embedded text into $\mathbb R^{\lvert\mathcal V\rvert}$; the same map as a function of the table, $\mathbf H(\varphi,f)=\mathbf G(h)$ | |
# | $D_m\mathbf G$ | the derivative of $\mathbf G$ with respect to $h_m$ | $(\lvert\mathcal V\rvert,d_e)$ |
# | $\mathbf T$, $\mathbf B$ | the set transformer (a vector out of a sequence) and the output map to scores (2.4's $B$, bold here as in Appendix A.2) | $\mathbb R^{d_e}$, $(\lvert\mathcal V\rvert,d_e)$ |
# | $\tau$ | the softmax temperature | number |
# | $z$, $\mathbf q$ | the scores $\mathbf B\,\mathbf T(h)/\tau$ and the next-token probabilities $\mathbf q=\mathrm{softmax}(z)$, **columns** in this section (as in the paper) | $(\lvert\mathcal V\rvert,)$ |
# | $J(z)$ | the Jacobian of the softmax, $\mathrm{diag}(\mathbf q)-\mathbf q\mathbf q^\top$ | $(\lvert\mathcal V\rvert,\lvert\mathcal V\rvert)$ |
# | $\nu$ | the index of a coordinate of $\mathbf T(h)$ | integer |
# | $\vartheta$, $\theta$ | the network's parameters, $\vartheta=(\theta^{(b)},\theta^{(t)})$: those of $\mathbf B$ and those of $\mathbf T$ | vectors |
# | $t$ | time (hours of the day in E.1, the ODE's time in E.4) | number |
# | $s_{\text{Mon}}(t)$, $s_{\text{Tue}}(t)$, $\Delta(t)$ | where the traveller is along the route (0 = New York, 1 = Philadelphia) on each day; their difference | numbers |
# | $y_1$, $y_2$ | the state of the first program's ODE ($y_2=y_1'$) | numbers |
# | $\omega$ | $y_2^2$ written as a function of $y_1$ (a first integral) | number |
# | $t_{\text{blow}}$ | the time at which the first program's solution blows up | number |
# | $y$ | the solution of the second program's ODE | number |
# ```
#
# ```{admonition} In the paper's notation
# :class: note
# The paper writes the batch measure as $\pi$ (here $p_{\text{batch}}$: the book keeps $\pi$ for the model's
# distribution, [2.2](02_objective_kl.ipynb)), its mean as $\mathbb E_{u\sim\pi}[u]$ (reusing the letter $u$ of
# the vector being normalised), and the normalisation's scale and shift as $D$, $b$ (as does
# [2.4](04_attention_block_set_transformer.ipynb) for Example 5.2's; here $\Gamma$, $\beta$, since $D_m$ is a
# derivative and $b$ the classifier's bias on this page). Its embedding
# table is $\varphi\in\mathbb R^{d_e\times|\mathcal V|}$ with one *column* per token, called
# $\varphi_v$ in Definition 2.6 and $\theta_v$ in Appendix A.1 (where Lemma A.1's Kronecker delta
# $\delta_{k,f_m}$ is written $\mathbb 1\{f_m=k\}$ here: the book keeps $\delta$ for the point mass $\delta_h$); the library, as the row-vector
# convention of Chapter 6, stores one *row* per token. The model's answer in E.1 calls the two
# positions $f(t)$, $g(t)$ and their difference $h(t)$. Example 2.10's sides $K'$, $K$ and Lemma A.1's
# token $k$ are kept (the book's $K$ and $k$ are otherwise keys).
# It writes the vocabulary in bold, $\mathbf V$ (the book: $\mathcal V$), and the length of a
# sequence as $\ell$ (Example B.1) or $M$ (Lemma A.1); here it is $M$ in both (the book keeps $\ell$
# for the index of a layer; its $T$, the length of a sequence elsewhere, would clash here with the
# set transformer $\mathbf T$). In Appendix A.2 it
# writes the softmax as $\sigma$ and its Jacobian as $\sigma'(z)$; here they are softmax, in words, and
# $J(z)$ (the book's $\sigma$ is a standard deviation), and the next-token probabilities are a bold
# $\mathbf q$, as on [2.4](04_attention_block_set_transformer.ipynb) (a plain $q$ is a query).
# ```
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
# 16 numbers became a sequence of length 4; with $d_l$ output channels it would be 4 vectors of
# width $d_l$. Shorter sequence, wider elements: the trade Example 2.10 describes for CLIP.
#
# ## Images as sequences of wide vectors (Example 2.10, Remark 2.11)
#
# An RGB image $i_{\text{original}}:\mathbf S^{K',K'}\to\mathbb R^3$ is mapped by a linear
# convolution to $i_{\text{convolved}}:\mathbf S^{K,K}\to\mathbb R^{d_l}$ and flattened to a sequence
# of $K^2$ vectors in $\mathbb R^{d_l}$. With CLIP's $K'=224$, $K=7$, $d_l=768$ the convolution has
# kernel size and stride $K'/K=32$. `patch_embedding` implements it as "cut into $32\times32$
# patches, flatten, multiply", as in the tiny example; we check it against a direct strided
# cross-correlation (`scipy.signal.correlate`, sampled every 32 pixels) on a random image and a
# random kernel with 16 output channels instead of 768 (the map is the same for every channel).

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
# in convolution weights. (The example also says that CLIP chooses $d_l$ equal to its text width
# $d_e$; the released model does not, [checked below](#checking-the-paper).)
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
# loss: in a batch of $N$ (image, caption) pairs, the $N\times N$ matrix of similarities (image
# vector · caption vector, divided by a temperature) should be largest on its diagonal, so the loss
# is the mean of two cross-entropies: that of picking each image's own caption among the $N$, and
# that of picking each caption's own image. `contrastive_loss` returns the loss and its gradients; we check them by
# central differences (`nextword.numerics.central_difference`).

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
# similar of 64 views B? The whole experiment is the loop below: 300 steps of gradient descent on
# fresh batches of 64 pairs, for three seeds.


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
assert all(0.35 < after < 0.7 for _, after in acc.values())  # Figure 2.9.1: about one pair in two

# %%
fig, axes = plt.subplots(1, 2, figsize=(9, 3.2))
axes[0].imshow(image[:64, :64])
for t in range(0, 64, p):
    axes[0].axhline(t - 0.5, color="w", lw=0.8)
    axes[0].axvline(t - 0.5, color="w", lw=0.8)
axes[0].set_title("Example 2.10: 32 x 32 patches (corner)")
axes[0].set_xlabel("pixel column")
axes[0].set_ylabel("pixel row")
before_after = np.array([acc[s] for s in (0, 1, 2)])  # (3 seeds, before/after)
axes[1].vlines(range(3), before_after[:, 0], before_after[:, 1], color="0.6", lw=1.5)
axes[1].plot(range(3), before_after[:, 0], "o", color="C0", ms=8, label="before training")
axes[1].plot(range(3), before_after[:, 1], "s", color="C1", ms=8, label="after contrastive training")
axes[1].axhline(1 / 64, color="k", ls=":", lw=1, label="chance, 1/64")
axes[1].set_xticks(range(3), [f"seed {s}" for s in (0, 1, 2)])
axes[1].set_xlabel("run")
axes[1].set_ylabel("held-out retrieval accuracy")
axes[1].set_ylim(-0.04, 1)
axes[1].set_xlim(-0.5, 2.5)
axes[1].legend(fontsize=7, loc="upper left")
plt.tight_layout()
plt.show()

# %% [markdown]
# **Figure 2.9.1.** Left: the patch grid of Example 2.10 (white lines) on the top-left corner of the
# random image; each square becomes one element of the sequence. Right: cross-modal retrieval among
# 64 held-out pairs before training (blue circles) and after 300 steps of the contrastive loss
# (vermilion squares), joined by a grey line, for three seeds; the dotted black line is chance,
# 1/64. Look at the jump from chance level to about one pair in two for every seed.
#
# ## Classification: a map into the probability simplex (Example 3.3)
#
# A classifier maps an input to a probability for each of its labels: a point of the *probability
# simplex* (non-negative numbers summing to 1). MNIST's problem (labelling $28\times28$-pixel images
# of handwritten digits) maps $\mathbb R^{28^2}$ to the simplex over 10 digits. No data is downloaded here, so we use ten synthetic classes in
# $\mathbb R^{784}$ (Gaussian blobs) and the softmax-linear map $x\mapsto\mathrm{softmax}(xW+b)$
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
# A normalisation layer rescales vectors to mean 0 and variance 1 in each coordinate, then applies a
# learned scale $\Gamma$ and shift $\beta$. *Which* mean and variance? {term}`Layer normalisation
# <layer normalisation>` ([6.6](../part1_chapter6/6_6_context_representation.ipynb)) takes them over
# the coordinates of one token. Example B.1's batch normalisation takes them, coordinate by
# coordinate, over every token of every sequence in the batch:
#
# $$\mathfrak N(u;p_{\text{batch}})=\Gamma\,\frac{u-\mathbb E_{p_{\text{batch}}}}
# {\sqrt{\mathbb V_{p_{\text{batch}}}+\varepsilon}}+\beta,\qquad
# p_{\text{batch}}=\frac1{MN}\sum_{n=1}^{N}\sum_{m=1}^{M}\delta_{h^{(n)}_m},$$
#
# where $h^{(n)}_m$ is the vector at position $m$ of the $n$-th sequence and $\delta_{h}$ puts
# weight 1 on the vector $h$, so $p_{\text{batch}}$ gives each of the
# $MN$ tokens of the batch the weight $1/(MN)$. By hand, with $N=2$ sequences of $M=2$
# one-number tokens, $(1,3)$ and $(5,7)$: the batch mean is $4$ and the variance $5$, so the first
# sequence becomes $(-3,-1)/\sqrt5$ (taking $\Gamma=1$, $\beta=0$ and ignoring $\varepsilon$) — and
# if only the *second* sequence changes, the first one's output changes too.

# %%
tiny_batch = np.array([[[1.0], [3.0]], [[5.0], [7.0]]])  # (N, M, d_e) = (2, 2, 1)
print("batch norm of (1, 3) next to (5, 7):", batch_norm(tiny_batch, eps=0.0)[0].ravel().round(4),
      " = (-3, -1)/sqrt(5):", (np.array([-3.0, -1.0]) / np.sqrt(5)).round(4))
assert np.allclose(batch_norm(tiny_batch, eps=0.0)[0].ravel(), np.array([-3.0, -1.0]) / np.sqrt(5))
tiny_other = tiny_batch.copy()
tiny_other[1] = [[1.0], [3.0]]  # the second sequence now equals the first
print("batch norm of (1, 3) next to (1, 3):", batch_norm(tiny_other, eps=0.0)[0].ravel().round(4))
assert not np.allclose(batch_norm(tiny_other, eps=0.0)[0], batch_norm(tiny_batch, eps=0.0)[0])

# %% [markdown]
# Three facts, checked on a batch of 5 sequences of 7 tokens in $\mathbb R^4$ (with $\Gamma=I$,
# $\beta=0$): (i) the normalised tokens have mean 0 and variance $\mathbb V/(\mathbb V+\varepsilon)$
# under $p_{\text{batch}}$ (per coordinate); (ii) reordering the sequences of the batch permutes
# the outputs; (iii) a sequence's output depends on the *other* sequences — so a block that uses
# batch normalisation is not a function of one sequence, and the measure-to-measure reading of the
# paper's Appendix B needs the batch measure, not the sequence's own.

# %%
d_e = 4
batch = rng.normal(2.0, 3.0, size=(5, 7, d_e))  # 5 sequences of 7 tokens in R^4
eps = 1e-5
out = batch_norm(batch, eps=eps)
tokens_all = batch.reshape(-1, d_e)
print(f"(i)  mean under the batch measure: max |.| < 1e-12: "
      f"{np.max(np.abs(out.reshape(-1, d_e).mean(0))) < 1e-12};  "
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
# ## The derivatives training needs (Appendix A)
#
# Training moves every parameter against the gradient of the loss, so the model's output must be
# differentiated with respect to the embedding table $\varphi$ and the network's parameters
# $\vartheta$.
#
# **Lemma A.1: the derivative with respect to the embedding table.** Write the model's output as a
# function of the embedded text, $\mathbf G(h)$ with $h_m=\varphi_{f_m}$, and as a function of the
# table, $\mathbf H(\varphi,f)=\mathbf G(h)$. Changing the vector $\varphi_k$ of token $k$ moves
# every position that holds token $k$, and no other, so by the chain rule the derivative with
# respect to $\varphi_k$ is
#
# $$\frac{\partial\mathbf H}{\partial\varphi_k}=\sum_{m=1}^{M}D_m\mathbf G(h)\,\mathbb 1\{f_m=k\},$$
#
# where $\mathbb 1\{f_m=k\}$ is 1 if position $m$ holds token $k$ and 0 otherwise: the sum of the
# position derivatives over the positions where token $k$ occurs, and zero for a
# token that does not occur. For the text of tokens $(2,0,2,4)$ (numbered from 0, as in the code):
# row 2 collects two terms, from positions 1 and 3; rows 0 and 4 one each; rows 1 and 3 none. A
# check by central differences, with a random smooth $\mathbf G$:

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
# **Appendix A.2: the derivative with respect to $\vartheta$, through $\mathbf B\circ\mathbf T$.** The
# next-token probabilities are $\mathbf q=\mathrm{softmax}(z)$ with scores $z=\mathbf B\,\mathbf T(h)/\tau$, and
# $\vartheta=(\theta^{(b)},\theta^{(t)})$ splits into the entries of $\mathbf B$ and the parameters of
# $\mathbf T$. The chain rule gives $\partial\mathbf q/\partial\mathbf B_{k\nu}=J(z)_{:,k}\,\mathbf
# T(h)_\nu/\tau$ and $\partial\mathbf q/\partial\theta^{(t)}=J(z)\,\mathbf B\,\partial_{\theta^{(t)}}\mathbf
# T/\tau$, with $J(z)=\mathrm{diag}(\mathbf q)-\mathbf q\mathbf q^\top$ the softmax's Jacobian. Here, as in the
# paper, $z$ and $\mathbf q$ are **columns** ($\mathbf B\,\mathbf T(h)$ is a matrix times a column), so
# $\mathbf q\mathbf q^\top$ is the $|\mathcal V|\times|\mathcal V|$ matrix of products $\mathbf q_k\mathbf q_{k'}$; with the book's row
# vectors the same Jacobian is written $\mathrm{diag}(\mathbf q)-\mathbf q^\top\mathbf q$
# ([6.2](../part1_chapter6/6_2_attention_mechanism.ipynb)). Sympy confirms that Jacobian for three
# outputs:

# %%
zs = sp.symbols("z1:4", real=True)
sig = [sp.exp(zi) / sum(sp.exp(zj) for zj in zs) for zi in zs]
jacobian_gap = sp.Matrix(3, 3, lambda i, j: sp.simplify(
    sp.diff(sig[i], zs[j]) - (sig[i] * (1 if i == j else 0) - sig[i] * sig[j])))
display(Math(r"\frac{\partial\,\mathrm{softmax}(z)_k}{\partial z_{k'}} - \big(\mathrm{diag}(\mathbf q) - \mathbf q\mathbf q^\top\big)_{kk'} = "
             + sp.latex(jacobian_gap)))
assert jacobian_gap == sp.zeros(3, 3)

# %% [markdown]
# Numerically we assemble both products (with $\partial\mathbf T/\partial\theta^{(t)}$ itself by
# central differences, since A.2 is about the assembly) and compare with central differences of
# $\mathbf q$, for a two-block set transformer; $\theta^{(t)}$ is the query matrix of the first block.

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
# ## Checking a model's answer without the model (§7, Appendix E)
#
# The paper's §7 shows what a 3-billion-parameter model (Qwen-2.5) prints for a few prompts. The
# book does not run that model, but several of its answers are mathematics, and mathematics can be
# checked without the model. The outputs below are quoted from the paper's Appendix E as data.
# Two words: *greedy decoding* always takes the most likely next token (what sampling becomes in the
# limit of temperature $\tau\to0$, [2.6](06_sequence_generation.ipynb)); *in-context learning* (ICL) puts a worked example into the
# prompt, here a step-by-step method for multiplying.
#
# **Multiplications (E.3).** For each pair: the true product, the model's last line without the
# worked example, and with it.

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


# %% [markdown]
# The partial products of the first answer are right; the final addition is not. With the worked
# example in the prompt, the model's working for $473\times45$ — the only working with the example
# that the paper prints in full — follows the method it was shown: split each number into place
# values, multiply every part by every part, add the list one number at a time. (For the other pairs
# only the last line of the answer with the example is printed, and with the example in the prompt
# $874\times25$ comes out wrong, so the paper does not show that the model always follows the
# method.) Every step of that working can be replayed:

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
print(f"378 x 64: 378 x 4 = {378 * 4}, 378 x 60 = {378 * 60}, their sum {378 * 4 + 378 * 60} = 378 x 64 = {378 * 64}; "
      f"the second sample's 24048 is wrong")
pairs = {(a, b) for a, b, *_ in E3}
print(f"distinct task pairs shown: {len(pairs)}; with the context's example 184 x 67: "
      f"{len(pairs | {(184, 67)})}")
assert len(pairs) == 5 and len(pairs | {(184, 67)}) == 6

# %% [markdown]
# **A logic question (E.1).** A traveller drives from New York to Philadelphia on Monday, 9:00 to
# 12:00, and back along the same road on Tuesday, 9:00 to 12:00. Is there a place where he is at
# the same time of day on both days? Measure his place along the route, 0 at New York and 1 at
# Philadelphia: $s_{\text{Mon}}(t)$ and $s_{\text{Tue}}(t)$ for $t$ in hours. Their difference
# $\Delta(t)=s_{\text{Mon}}(t)-s_{\text{Tue}}(t)$ is continuous, $\Delta(9)=0-1=-1$ and
# $\Delta(12)=1-0=+1$, so by the intermediate value theorem $\Delta$ is 0 somewhere in between: yes.
# (Equivalently: two travellers on the same day, one from each end, must cross.) It is the *sign
# change* of $\Delta$ that forces the meeting. The model's explanation in E.1 reaches the right
# answer by another route: it asserts that the two positions agree at noon, $\Delta(12)=0$, which is
# false — at noon the traveller is in Philadelphia on Monday and in New York on Tuesday. On random
# continuous journeys (piecewise linear, allowed to stop and turn back), $\Delta$ runs from $-1$ to
# $+1$ every time and always crosses 0:

# %%
rng_e1 = np.random.default_rng(0)
grid = np.linspace(9.0, 12.0, 601)  # hours
met = 0
for _ in range(1000):
    knots = np.linspace(9.0, 12.0, 8)
    mon = np.concatenate([[0.0], rng_e1.uniform(-0.2, 1.2, 6), [1.0]]).clip(0, 1)  # s_Mon at the knots
    tue = np.concatenate([[1.0], rng_e1.uniform(-0.2, 1.2, 6), [0.0]]).clip(0, 1)  # s_Tue
    delta = np.interp(grid, knots, mon) - np.interp(grid, knots, tue)
    assert delta[0] == -1.0 and delta[-1] == 1.0  # Delta(9) = -1 and Delta(12) = +1, never 0 at noon
    met += bool(np.any(np.sign(delta[:-1]) != np.sign(delta[1:])) or np.any(delta == 0))
print(f"random journey pairs with a common place at a common time: {met} of 1000")
assert met == 1000

# %% [markdown]
# **Two programs (E.4).** Asked for MATLAB code that solves "a nonlinear ODE", the model without
# fine-tuning wrote a program that integrates, with MATLAB's `ode45` (an adaptive Runge–Kutta 4(5)
# method, which scipy calls RK45),
#
# $$y_1'=y_2,\qquad y_2'=-y_1-y_2^2,\qquad (y_1,y_2)(0)=(1,0),\qquad t\in[0,10];$$
#
# the model fine-tuned on code wrote one for $y'=-y+\sin t$, $y(0)=1$, on the same interval. The
# paper says the first solution blows up inside $[0,10]$ and the second stays bounded. Both can be
# decided without a solver.
#
# *The first program.* Follow $\omega=y_2^2$ as a function of $y_1$ along the solution (a relation
# between the two coordinates that holds at every time of the solution, which is what a *first
# integral* of an ODE gives):
# $d\omega/dt=2y_2y_2'$ and $dy_1/dt=y_2$, so $d\omega/dy_1=2y_2'=-2y_1-2\omega$. This linear equation with $\omega(1)=0$ has the solution
# $\omega(y_1)=\tfrac12e^{2(1-y_1)}-y_1+\tfrac12$ (checked by sympy below), which is positive for every
# $y_1<1$. So $y_2=-\sqrt{\omega}$ never returns to 0, $y_1$ decreases from 1 for ever, and the time to
# reach $y_1=-\infty$ is
#
# $$t_{\text{blow}}=\int_{-\infty}^{1}\frac{dy_1}{\sqrt{\omega(y_1)}},$$
#
# finite because $\omega$ grows like $e^{-2y_1}$. An adaptive RK45 stops just there.

# %%
y1_s, t_s = sp.symbols("y_1 t", real=True)
omega_expr = sp.exp(2 * (1 - y1_s)) / 2 - y1_s + sp.Rational(1, 2)
assert sp.simplify(sp.diff(omega_expr, y1_s) - (-2 * y1_s - 2 * omega_expr)) == 0 and omega_expr.subs(y1_s, 1) == 0
omega_fn = sp.lambdify(y1_s, omega_expr, "numpy")
with np.errstate(over="ignore"):  # omega(1 - u) overflows to inf for large u, where the integrand is 0
    t_star = quad(lambda u: 1 / np.sqrt(omega_fn(1 - u)), 0, np.inf, limit=200)[0]  # u = 1 - y_1
blow = solve_ivp(lambda t, y: [y[1], -y[0] - y[1] ** 2], (0, 10), [1.0, 0.0], method="RK45",
                 rtol=1e-10, atol=1e-12)
print(f"blow-up time from the first integral: t_blow = {t_star:.4f}; RK45 gives up at t = "
      f"{produced(blow.t[-1], '.4f')} with |y| > 1e10: "
      f"{blow.status == -1 and np.abs(blow.y[:, -1]).max() > 1e10}")
assert blow.status == -1 and abs(blow.t[-1] - t_star) < 1e-3 and t_star < 10

# %% [markdown]
# *The second program* is linear: $y'+y=\sin t$ is solved by an integrating factor, and with
# $y(0)=1$ the solution is $y=\tfrac32e^{-t}+\tfrac12(\sin t-\cos t)$ — a decaying exponential plus
# an oscillation of amplitude $1/\sqrt2$, bounded for all time.

# %%
y_exact = sp.Rational(3, 2) * sp.exp(-t_s) + (sp.sin(t_s) - sp.cos(t_s)) / 2
assert sp.simplify(sp.diff(y_exact, t_s) - (-y_exact + sp.sin(t_s))) == 0 and y_exact.subs(t_s, 0) == 1
calm = solve_ivp(lambda t, y: [-y[0] + np.sin(t)], (0, 10), [1.0], rtol=1e-10, atol=1e-12,
                 dense_output=True)
gap_calm = np.abs(calm.y[0] - sp.lambdify(t_s, y_exact)(calm.t)).max()
print(f"fine-tuned model's ODE: max |y| on [0, 10] = {np.abs(calm.y).max():.4f}; "
      f"max |RK45 - closed form| < 1e-8: {gap_calm < 1e-8}")
assert calm.status == 0 and np.abs(calm.y).max() <= 1.0 + 1e-9 and gap_calm < 1e-8

# %% [markdown]
# The first solution blows up at $t_{\text{blow}}\approx1.78$, well inside $[0,10]$, so a plot of it
# can only show the part before; the second never exceeds 1 in size (it starts at $y(0)=1$). Whether the programs run in MATLAB, and
# what else the paper says about them, is [checked below](#checking-the-paper).
#
# ## Key takeaways
#
# - An image becomes a sequence by cutting it into patches and applying one linear map to each — a
#   convolution whose stride is its kernel size; CLIP trades a $1024$ times shorter sequence for
#   $256$ times wider elements.
# - A contrastive loss aligns two encoders by making each item most similar to its own partner in a
#   batch; a classifier maps into the probability simplex through a softmax.
# - The gradient with respect to an embedding table adds up the position derivatives of every
#   occurrence of a token; tokens absent from the text get zero gradient.
# - Batch normalisation uses statistics of the whole batch, so one sequence's output depends on the
#   others — layer normalisation does not.
# - A model's printed answer can often be checked without the model: exact arithmetic, the
#   intermediate value theorem and a first integral settle the mathematics of the answers in the
#   paper's Appendix E.1, E.3 and E.4 (what a model would print again, or whether a program runs in
#   MATLAB, needs the model or MATLAB).
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
#    and 3 (counting from 1), so changing it moves both positions' vectors, and its derivative is the
#    sum of the two position derivatives $D_1\mathbf G+D_3\mathbf G$.
#    ```
#
# 3. Why is a model using batch normalisation awkward for generating text one token at a time?
#
#    ```{dropdown} Answer
#    Its output for one sequence depends on the other sequences in the batch (check (iii), and the
#    by-hand batch of two), so the same prompt can give different next-token probabilities depending
#    on what else is being processed — and a batch of one has the statistics of a single sequence
#    only. Layer normalisation uses each token's own statistics and has neither problem.
#    ```

# %% tags=["hide-cell"]
# The numbers the answers state. Question 1: the patch sequence of a 64 x 64 RGB image.
side, patch_side, width = 64, 8, 512
q1_image = np.zeros((side, side, 3))
q1_kernel = np.zeros((width, patch_side, patch_side, 3))
q1_seq = patch_embedding(q1_image, q1_kernel)
print(f"Q1: sequence {q1_seq.shape[0]} x {q1_seq.shape[1]}; patch {patchify(q1_image, patch_side).shape[1]} "
      f"numbers; weights {q1_kernel.size:,} (pixels {side * side:,})")
assert q1_seq.shape == (64, 512) and patchify(q1_image, patch_side).shape[1] == 192
assert q1_kernel.size == 98_304 == 192 * 512 and side * side == 4096
# Question 2: rows with a non-zero derivative, and the positions (from 1) that hold token 2
rows_used = [k for k in range(n_vocab) if np.abs(fd[k]).max() > 0]
positions_of_2 = [m + 1 for m in range(seq_len) if token_ids[m] == 2]
print(f"Q2: rows with a non-zero derivative {rows_used}; token 2 at positions {positions_of_2}")
assert rows_used == [0, 2, 4] and positions_of_2 == [1, 3]

# %% [markdown]
# ## Checking the paper
#
# **§7.4 and Appendix E.4, claim by claim.** The paper's statements about the two programs, and what
# this page establishes about each:
#
# | claim (where) | verdict | how |
# |---|---|---|
# | the first program's solution "blows up in the selected time range" (§7.4; E.4, Fig. 1) | holds | first integral: $t_{\text{blow}}\approx1.78<10$; RK45 stops there, also at MATLAB's default tolerances (below) |
# | with fine-tuning "this issue is not present": a bounded solution (E.4, Fig. 2) | holds for the program shown | closed form $y=\tfrac32e^{-t}+\tfrac12(\sin t-\cos t)$, $\lvert y\rvert\le1$ on $[0,10]$ |
# | "both examples produce an ODE that is integrated using RK45" (§7.4) | holds | both programs call `ode45`, a Runge–Kutta 4(5) pair (read from the printed code) |
# | "neither code is general purpose …; instead, a specific example in two dimensions is given" (§7.4) | first program only | the first system is two-dimensional (a second-order ODE for $y_1$); the second is one-dimensional and first order (`y0 = [1]`) (below) |
# | the prompt asked for "a nonlinear ODE" (E.4) | first program only | the fine-tuned model's vector field $-y+\sin t$ is linear in $y$ (below): its example stays bounded partly because it does not answer the prompt |
# | "both models produce a valid MATLAB script without syntax errors" (§7.4) | not checked | no MATLAB here. The second file begins with a `function` definition followed by script lines, a layout MATLAB's rules for script files may refuse; the paper shows its plot, so it ran in some arrangement |
# | RK45 is "the method that MATLAB recommends as the first choice to solve non-stiff ODEs" (§7.4) | not checked | a statement about MATLAB's documentation |
# | the fine-tuning data "over 5.5 trillion tokens"; a 3B model (§7.4) | not checked | quoted from the model's report; the model is not run |
# | fine-tuning is what made the example better (§7.4, E.4) | not checkable | one draw from each model; the models are not run |
#
# So the two claims of E.4 — the blow-up and the bounded solution — hold; of §7.4's further claims
# about both programs, "a specific example in two dimensions" (and the "specific second order ODE"
# of its plots) fits the first program only, and the rest cannot be checked without MATLAB or the
# model. Recorded in `book/ERRATA.md` (row "§7.4 (Coding), the two programs").

# %% tags=["hide-cell"]
yv, y2v = sp.symbols("y y_2", real=True)
programs = {  # the vector fields and initial states of App. E.4, as printed
    "without fine-tuning": ([y1_s, y2v], [y2v, -y1_s - y2v**2], [1.0, 0.0]),
    "fine-tuned (Qwen-2.5-Coder)": ([yv], [-yv + sp.sin(t_s)], [1.0]),
}
for name, (state, field, y0) in programs.items():
    hessians = [sp.hessian(component, state) for component in field]
    nonlinear = any(h != sp.zeros(len(state), len(state)) for h in hessians)
    print(f"{name:28s}: dimension {len(y0)}, vector field nonlinear in the state: {nonlinear}")
dims = {name: len(y0) for name, (_, _, y0) in programs.items()}
assert dims == {"without fine-tuning": 2, "fine-tuned (Qwen-2.5-Coder)": 1}
assert sp.hessian(-yv + sp.sin(t_s), [yv]) == sp.zeros(1, 1)  # the fine-tuned field is linear
assert sp.hessian(-y1_s - y2v**2, [y1_s, y2v]) != sp.zeros(2, 2)  # the first one is not
# ode45 with MATLAB's default tolerances (RelTol 1e-3, AbsTol 1e-6) stops at the same time
blow_default = solve_ivp(lambda t, y: [y[1], -y[0] - y[1] ** 2], (0, 10), [1.0, 0.0], method="RK45",
                         rtol=1e-3, atol=1e-6)
print(f"RK45 at MATLAB's default tolerances gives up at t = {produced(blow_default.t[-1], '.3f')} "
      f"(t_blow = {t_star:.3f})")
assert blow_default.status == -1 and abs(blow_default.t[-1] - t_star) < 1e-2

# %% [markdown]
# **§7.3 and Appendix E.3, claim by claim.**
#
# | claim | verdict |
# |---|---|
# | $473\times45=21285$; the model answers 21385 without the worked example and 21285 with it | holds (the products are exact; the model's answers are quoted) |
# | the no-context error | lies in the final addition: both partial products (2365, 18920) are right |
# | of the three further pairs, "one out of three" right without ICL, all three with ICL | holds |
# | for $874\times25$ the worked example turns a right answer into a wrong one | holds |
# | every printed "truth" is the true product | holds |
# | "six different pairs of integers, where each pair contains a two digit and three digit number" | five task pairs are shown, six with the worked example $184\times67$; every pair is three digits by two (below) |
# | at $\tau=0.5$ the first sample for $378\times64$ reasons to the right answer, the second does not | holds (1512 + 22680 = 24192; 24048 is wrong) |
# | "four out of five" right without ICL and "five out of five" with ICL at $\tau=0.5$ | not checkable: those outputs are not printed |
# | stochasticity improves the chance of a right answer "with and without ICL" (§7.3) | not shown for ICL: with the worked example the greedy answer for $378\times64$ was already right, so five out of five cannot show an improvement |
#
# **§7.1 and Appendix E.1.** The model's "Yes" is right, and so is the theorem it names; its step
# $\Delta(12)=0$ is false (shown in the lesson). The paper flags a different sentence as dubious (that
# taking the same route makes the position continuous), not this one.

# %% tags=["hide-cell"]
every_pair = pairs | {(184, 67)}
print("digits of every pair:", sorted({(len(str(a)), len(str(b))) for a, b in every_pair}))
assert all(len(str(a)) == 3 and len(str(b)) == 2 for a, b in every_pair)

# %% [markdown]
# **Example 2.10: CLIP's widths.** The example gives $K'=224$, $K=7$, $d_l=768$ and adds that $d_l$
# "is indeed chosen to coincide with the text embedding dimension $d_e$", so that the image sequence
# lies in the text model's embedding space. $K'/K=32$ pixels per patch identifies the model:
# CLIP ViT-B/32. Its published configuration (Radford et al. 2021, Table 20, and the released
# `openai/clip-vit-base-patch32` configuration, quoted below as data) has image width 768, as the
# example says, but text width 512: the two towers do not share a width. Each tower's pooled output
# is mapped by its own learned linear projection into a joint 512-dimensional space, and the
# contrastive loss compares vectors there, never the image sequence with the text sequence (recorded
# in `book/ERRATA.md`, row "Example 2.10, CLIP's widths"). No released CLIP model has equal widths
# (ViT-L/14: 1024 for images, 768 for text).

# %% tags=["hide-cell"]
# Quoted from CLIP's Table 20 / the released configuration of ViT-B/32 (data, not computed here)
CLIP_B32 = {"image_resolution": 224, "vision_patch_size": 32, "vision_width": 768,
            "text_width": 512, "embed_dim": 512, "context_length": 77, "vocab_size": 49_408}
patches_per_side = CLIP_B32["image_resolution"] // CLIP_B32["vision_patch_size"]
print(f"K'/K = {K_img}/{K_seq} = {K_img // K_seq} = ViT-B/32's patch side; {patches_per_side}^2 = "
      f"{patches_per_side**2} patches; image width {CLIP_B32['vision_width']}, text width "
      f"{CLIP_B32['text_width']}, joint space {CLIP_B32['embed_dim']}")
assert K_img // K_seq == CLIP_B32["vision_patch_size"] and patches_per_side == K_seq
assert d_l == CLIP_B32["vision_width"] and d_l != CLIP_B32["text_width"]  # d_l is not d_e
CLIP_L14 = {"vision_width": 1024, "text_width": 768}  # quoted likewise: the largest CLIP of the paper
print(f"ViT-L/14: image width {CLIP_L14['vision_width']}, text width {CLIP_L14['text_width']}")
assert CLIP_L14["vision_width"] != CLIP_L14["text_width"]

# %% [markdown]
# **Lemma A.1 and Appendix A.2** agree with central differences (the lesson's cells). **Example
# B.1: the weight of the batch measure.** The example prints the batch measure as
# $p_{\text{batch}}=\frac1{Mn}\sum_{m=1}^{M}\sum_{n=1}^{N}\delta_{h_m^{(n)}}$ (the paper's letters: $\pi$, $\ell$, $k$), with the summation index $n$
# in the weight. Read literally the weights $\frac1{Mn}$ sum to $1+\frac12+\dots+\frac1N$ (the $N$-th harmonic number, printed below as `H_N`), not 1,
# and favour the first sequences of the batch; the measure meant (and the one `batch_norm` uses in
# the lesson) gives every token of the batch the weight $\frac1{MN}$ (row "Appendix B, Example
# B.1, the batch measure π" of `book/ERRATA.md`):

# %% tags=["hide-cell"]
n_seq, M = batch.shape[:2]
literal_mass = sum(M / (M * n) for n in range(1, n_seq + 1))
print(f"total weight of the printed pi for N = {n_seq}: {literal_mass:.4f} "
      f"(= H_N); with 1/(M N): {M * n_seq / (M * n_seq):.0f}")
assert abs(literal_mass - 1) > 0.5
assert np.allclose(out.reshape(-1, d_e).mean(0), 0, atol=1e-12)  # batch_norm centres under 1/(M N)

# %% [markdown]
# **What the checks found.** Example 2.10's convolution-and-flatten is exactly patch extraction
# followed by a matrix product, and its sequence/width trade-off is as stated, but CLIP's image width
# (768) is not its text width (512); Remark 2.11's
# discrete images enter as reals with an error bounded by the rounding; Example 3.3's classifier maps
# into the simplex. Lemma A.1 and Appendix A.2's chain rule through $\mathbf B\circ\mathbf T$ match
# central differences. Example B.1's batch normalisation couples the sequences of a batch, as a map
# of the batch measure must (whose weight is $1/(MN)$, not the printed $1/(Mn)$). The
# arithmetic of App. E.3 is as the paper says, except that its six pairs include the worked example;
# the two solutions of E.4 behave as claimed, but §7.4's "specific example in two dimensions" fits
# only the first program, and the fine-tuned model's example is a linear ODE; the model's E.1
# explanation contains a false step.

# %% [markdown]
# ## Reproducibility
#
# The page runs on the CPU in well under a minute and has no run-size switch. Numbers produced by
# training (the contrastive encoders, the classifier) and by the adaptive ODE solver are shown as
# produced numbers (excluded from nbval's text comparison); their claims are asserted where they are
# printed. The model outputs of Appendix E are quoted from the paper, not generated.

# %% tags=["hide-cell"]
print("seeds: numpy default_rng(0) for the page, 0-2 for the contrastive runs, 3 for Lemma A.1, "
      "1 and 2 for the two set-transformer blocks of A.2, 0 for E.1")
