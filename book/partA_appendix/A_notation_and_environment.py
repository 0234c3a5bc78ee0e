# %% [markdown]
# # Appendix A: one notation for five sources, and your environment
#
# A reference page, not a lesson: come here when a paper's symbol puzzles you, or when something does not
# run. The [reading guide](../part0_reading_guide/00_reading_guide.ipynb) explains how the book teaches;
# the {doc}`glossary </glossary>` defines its words.

# %% [markdown]
# ## Your environment
#
# Paste this report into any bug report (it is the output of `nextword check-env`).

# %% tags=["nbval-ignore-output"]
# nbval-ignore-output: the environment report (what this machine has installed)
from nextword.booktools.check_env import format_report, run_checks

results = run_checks()
print(format_report(results))

# %%
assert not [r for r in results if r.status == "FAIL"], "a required package is missing: see the report above"
print("all required packages import")

# %% [markdown]
# ## Notation concordance
#
# ### The book's symbols
#
# One meaning per symbol, for the whole book (Chapter 6's notation: row vectors, $q[i] = e[i]\,W^Q$). A page
# may use these symbols without saying what they are; every other symbol of a page is in the "Symbols on
# this page" box at its top, and where a paper writes something differently, its page says so in a side
# box "In the paper's notation".
#
# <!-- the book's notation table: generated from book/notation.yaml by python -m nextword.booktools.notation -->
#
# | symbol | meaning | shape | used in |
# |---|---|---|---|
# | $\mathcal V$ | the vocabulary: the set of tokens a model reads and predicts; $\lvert\mathcal V\rvert$ is its size | a set | Ch. 6; Parts 1, 2, 4 |
# | $w[t]$ | the word (token) at position $t$ of a text | a token, an integer id from 0 to $\lvert\mathcal V\rvert-1$ in code | Ch. 6; Part 1 |
# | $T$ | the length of a sequence: its number of positions (the bold $\mathbf T$ of 2.4 and 2.9 is the set transformer, after their paper) | scalar | Ch. 6; all parts |
# | $n$ | a number of items being counted (tokens, samples, steps); the page says which (2.9 keeps its paper's $n$ of Example B.1 for the index of a sequence in a batch, and 2.3 the $n$ of (4.8) for the index of a sample, $f^{(n)}$) | scalar | all parts |
# | $N$ | a number of samples or sequences drawn or trained on (2.4 keeps the paper's normalisation $\mathbf N$ of (5.3b), written $\mathrm N$, an operator's name) | scalar | Parts 2, 3, 5 |
# | $t$ | a position in a sequence (a time step), counted from 1 in the text (6.5 and 6.7 count it from 0, as the encoding tables and the code do; 2.5, 2.8 and 2.9 keep their paper's $t$ for a continuous time: of a state-space model, a Markov chain, an ODE, the hours of a day) | index | Ch. 6; all parts |
# | $i$ | the position of the word that asks (the query), counted from 1 in the text (6.5 counts it from 0, like its $t$, as its page says) | index | Ch. 6; all parts |
# | $j$ | the position of a word that is looked at (a key), counted from 1 in the text (6.5 counts it from 0, like its $t$, as its page says) | index | Ch. 6; Parts 1, 2, 3 |
# | $x[t]$ | the input vector of position $t$ (an embedding, or a recurrent network's input); Part 4, Part 5 and 2.4–2.5 write vectors as columns, after their papers (Part 4: $q_t = W_Q x_t$), and so do 2.1's and 2.9's embedding table (one column per token), 6.5's rotations and the Part 3 checking page's §2–§3, as their pages say | $(d,)$, a row vector | Ch. 6; Parts 1, 4 |
# | $X$ | the input vectors of a sequence stacked as rows, $X[t] = x[t]$ | $(T, d)$ | Ch. 6; Parts 1, 3, 4 |
# | $e[i]$ | the embedding of word $i$: the row of $E$ of its token (plus its position's encoding, where added); 2.1 keeps the paper's letter $e$ of its Example 2.1 for a merged symbol | $(d_{\text{model}},)$, a row vector | Ch. 6; Part 1 |
# | $E$ | the embedding table: one row per token of the vocabulary | $(\lvert\mathcal V\rvert, d_{\text{model}})$ | Ch. 6; Parts 1, 2, 4 |
# | $q[i]$ | the query of word $i$, $q[i] = e[i]\,W^Q$: what word $i$ looks for (Part 5's $q(z\mid x)$ and Part 2's bold $\mathbf q$ are distributions, as their pages say) | $(d_k,)$, a row vector | Ch. 6; all parts |
# | $k[j]$ | the key of word $j$, $k[j] = e[j]\,W^K$: what word $j$ offers to be found by (2.9 keeps the paper's $k$ of its Lemma A.1 for a token of the vocabulary) | $(d_k,)$, a row vector | Ch. 6; all parts |
# | $v[j]$ | the value of word $j$, $v[j] = e[j]\,W^V$: what word $j$ hands over when looked at (2.5 and the Part 2 overview keep the paper's $v$ for a state-space model's state, and 2.1 its $v$ of Definition 2.6 for a token of the vocabulary) | $(d_v,)$, a row vector | Ch. 6; all parts |
# | $Q$ | the queries of a sequence stacked as rows, $Q = X W^Q$ (in 2.4 and 2.5, after their paper, $Q$, $K$, $V$ are the weight matrices of Eq. (5.2), $Q = (W^Q)^\top$; in 2.8, $Q$ is a rate matrix) | $(T, d_k)$ | Ch. 6; Parts 1, 3 |
# | $K$ | the keys of a sequence stacked as rows, $K = X W^K$ (2.9 keeps the paper's $K'$, $K$ of its Example 2.10 for the sides of an image and of its grid of patches) | $(T, d_k)$ | Ch. 6; Parts 1, 3 |
# | $V$ | the values of a sequence stacked as rows, $V = X W^V$ (the vocabulary is $\mathcal V$) | $(T, d_v)$ | Ch. 6; Parts 1, 3 |
# | $W^Q$ | the query projection: a learned matrix, multiplied on the right of a row vector | $(d_{\text{model}}, d_k)$ for one head; $(d_{\text{model}}, h\,d_k)$ for all the heads of a layer side by side (6.4, 6.6) | Ch. 6; Parts 1, 3, 5 |
# | $W^K$ | the key projection | $(d_{\text{model}}, d_k)$ for one head; $(d_{\text{model}}, h\,d_k)$ for all the heads of a layer side by side (6.4, 6.6) | Ch. 6; Parts 1, 3, 5 |
# | $W^V$ | the value projection | $(d_{\text{model}}, d_v)$ for one head; $(d_{\text{model}}, h\,d_v)$ for all the heads of a layer side by side (6.4, 6.6) | Ch. 6; Parts 1, 3, 5 |
# | $W^O$ | the output projection of multi-head attention: maps the concatenated heads back to the model width | $(h\,d_v, d_{\text{model}})$ | Ch. 6; Part 1 |
# | $\alpha[i,j]$ | the attention weight of query $i$ on key $j$: the softmax over $j$ of the scores, in $[0, 1]$, adding up to 1 over $j$ | scalar | Ch. 6; all parts |
# | $d_{\text{model}}$ | the model width: the length of an embedding and of the residual stream | scalar | Ch. 6; Part 1 |
# | $d_k$ | the width of a query and of a key (of one head: $d_{\text{model}}/h$ in multi-head attention) | scalar | Ch. 6; Parts 1, 3, 4 |
# | $d_v$ | the width of a value (of one head) | scalar | Ch. 6; Parts 1, 3 |
# | $d$ | the width (dimension) of the vectors of a page that has only one width (2.1 keeps the paper's letter $d$ of its Example 2.1 for a merged symbol) | scalar | all parts |
# | $h$ | the number of attention heads (Part 2 writes $h_i$, after its paper, for the vector of token $i$) | scalar | Ch. 6; Part 1 |
# | $d_{ff}$ | the hidden width of the feed-forward network (usually $4d_{\text{model}}$) | scalar | Ch. 6; Part 1 |
# | $W_1$ | the first weight matrix of the feed-forward network | $(d_{\text{model}}, d_{ff})$ | Ch. 6; Part 1 |
# | $W_2$ | the second weight matrix of the feed-forward network | $(d_{ff}, d_{\text{model}})$ | Ch. 6; Part 1 |
# | $b$ | a bias vector, added after a matrix product ($b_1$, $b_2$ in the feed-forward network); 2.1 keeps the paper's letters $a,\dots,e$ of its Example 2.1 for the symbols of a text | a row vector | Ch. 6; Parts 1, 2, 3 |
# | $L$ | the number of layers (decoder blocks) of a stack | scalar | Ch. 6; Parts 1, 4, 5 |
# | $\ell$ | the index of a layer, from 1 to $L$ (6.7's depth $\ell$ and 5.3's state $x^\ell$, after $\ell$ blocks, start at 0, the input; 5.1 and 5.6 count layers from 0 to $L-1$, after their paper, as their pages say) | index | Ch. 6; Parts 1, 4, 5 |
# | $P$ | a probability, as in $P(w[t+1]\mid w[1..t])$ (2.3's $P$, $P'$ are transition matrices, 2.4's $P$ is the paper's pooling of (5.6), and 5.3's and 5.6's $P$, $P_z$ the mean gates of Eq. (22), as their pages say) | scalar | Ch. 6; all parts |
# | $p$ | a probability distribution over the vocabulary (or over the outcomes the page names), as a vector of probabilities | $(\lvert\mathcal V\rvert,)$ | all parts |
# | $H$ | entropy, in nats: $H(p) = -\sum_x p(x)\log p(x)$ (the bold $\mathbf H$ of 2.9 is a map of the embedding table, after its paper's Lemma A.1) | scalar | Ch. 6; all parts |
# | $\mathcal L$ | a loss to be minimised (the average next-token cross-entropy, in nats, unless the page says otherwise) | scalar | Parts 2–5 |
# | $\eta$ | a learning rate: the step size of gradient descent | scalar | Parts 3, 4 |
# | $\tau$ | a temperature: scores are divided by $\tau$ before a softmax (in 2.8, the time step of τ-leaping) | scalar | Part 2 |
# | $\beta$ | an inverse temperature: scores are multiplied by $\beta$ before a softmax (6.2, 3.2; 2.4's sharpness of a soft maximum, $\frac1\beta\log\int e^{\beta h}$). Pages that use it for something else declare it in their symbols box: after their source, 2.3 the strength of the KL penalty, which divides the reward ($e^{r/\beta}$, a temperature, not an inverse one), 2.8 a rate of masking (or of uniform jumps), and 5.0, 5.4 and 5.6 the weight of the consistency term; in a letter of the book's own choosing, 2.5 a weight of a tiny recurrence, 2.9 the shift of a normalisation (its paper writes $b$) and 4.7 $\beta_t$, an attention mass | scalar | Ch. 6; Parts 2–5 |
# | $\mu$ | a mean | scalar or vector | all parts |
# | $\sigma$ | a standard deviation ($\sigma^2$ a variance); 2.8 keeps the paper's diffusion coefficient $\sigma(t)$ of its noise schedule $Q(t)=\sigma^2(t)Q^0$ | scalar | all parts |
# | $\mathcal N$ | the normal (Gaussian) distribution, $\mathcal N(\mu, \sigma^2)$ | a distribution | all parts |
# | $I$ | the identity matrix | $(d, d)$ | all parts |
# | $\mathcal O$ | order of growth: $\mathcal O(T^2)$ grows at most like $T^2$ | — | all parts |
# | $\pi$ | the number $\pi$, the ratio of a circle's circumference to its diameter (Part 2 writes $\pi$, after its paper, for a model's distribution; 2.4 keeps the paper's $\pi(\cdot;s)$ of Appendix B for a measure reweighted by the scores of a query $s$) | scalar | all parts |
#
# <!-- end of the notation table -->
#
# ### The five sources side by side
#
# The five sources name the same objects differently. The lessons write the book's symbols (the table
# above) where they can and give a source's own symbols once, in a side box "In the paper's notation";
# some parts keep more of their source's notation than others (Part 4, for instance, keeps its paper's
# column vectors) and say so. This table moves between the sources. "—" means the source has no such
# object.
#
# | object | Ch. 6 (Part 1) | formulation paper (Part 2) | dynamics paper (Part 3) | margins paper (Part 4) | SVFlow paper (Part 5) | `nextword` argument |
# |---|---|---|---|---|---|---|
# | token embedding of position i | $\mathbf e[i]\in\mathbb R^{d_{\text{model}}}$ (row) | $h_k\in\mathbb R^{d_e}$, $h=\phi\circ f$ (Def. 2.6–2.7) | $x_i\in\mathbb R^{d_x}$ | $x_t\in\mathbb R^{d}$ (column) | $x_q$ on the sphere $\mathbb S^{d-1}$ | `X[..., i, :]` |
# | embedding table | — (the book writes $E$) | $\varphi\in\mathbb R^{d_e\times\lvert V\rvert}$ | — | $E$ (prior's token table) | — | `table (V, d)` |
# | query | $\mathbf q[i]=\mathbf e[i]W^Q$ | $Qh_k$ | $q_i=W_Q x_i$ | $q_t=W_Qx_t$ | $W_{q,h}^\top x_q$ | `q = X @ W_q` |
# | key | $\mathbf k[j]=\mathbf e[j]W^K$ | $Kh_l$ | $k_j=W_K x_j$ | $k_s=W_Kx_s$ | $k_z$ (latent component) | `k = X @ W_k` |
# | value | $\mathbf v[j]=\mathbf e[j]W^V$ | $Vh_l$ | $v_j=W_V x_j$ | $v_s=W_Vx_s$ | $v_z$ | `v = X @ W_v` |
# | score | $\mathbf q[i]^\top\mathbf k[j]/\sqrt{d_{\text{model}}}$ (the book divides by $\sqrt{d_k}$, one head's width: [6.2](../part1_chapter6/6_2_attention_mechanism.ipynb)) | $\langle Qh_k,Kh_l\rangle_{\mathbb R^c}$ (5.2) | $s_{ij}=q_i^\top k_j/\sqrt{d_k}$ (4) | $q_t^\top k_s$ (no scaling) | $k_z^\top W_kW_q^\top x_q$ | `scores` |
# | attention weight | $\alpha[i,j]$, $j\le i$ | $\exp(\cdot)/Z_k$ (5.2b) | $\alpha_{ij}$ | $\alpha_{ts}$, $s<t$ (strict) | $\sigma_{k_z,h}(x_q)=q(z\mid x_q,h)$ (vMF posterior) | `weights` |
# | attention output | $\sum_j\alpha[i,j]\mathbf v[j]$ | $\mathrm{ATT}(h)_k-h_k$ | $g_i=\sum_j\alpha_{ij}v_j$ (6) | $\mu_t(x)=\sum_{s<t}\alpha_{ts}v_s$ (2) | $f_{\text{Attn}}(x_q)$ | `out` |
# | bilinear form of scores (the matrix between the query's input and the key's, query side first unless noted) | $W^Q {W^K}^\top$ | $Q^\top K$ | $W_Q^\top W_K$ | $A=W_K^\top W_Q$ (15), key side first: $q_t^\top k_s = x_s^\top A\,x_t$, so $A$ is the transpose of Part 3's $W_Q^\top W_K$ | $W_kW_q^\top$, key side first | — |
# | upstream gradient / residual | — | — | $u_i=\partial L/\partial g_i$ (10), $b_{ij}=u_i^\top v_j$ (11) | $e_t=x_t-\mu_t(x)$ (4), $\Sigma_t$ (13) | score $\nabla\log p$ | `grad_out`, `residual` |
# | width | $d_{\text{model}}$, $d_{\text{head}}=d_{\text{model}}/n_{\text{heads}}$ (the book: $d_k$) | $d_e$, $c$ (key width) | $d_x,d_k,d_v$ | $d$ | $d$ | `d_model`, `d_head` |
# | heads | $n_{\text{heads}}$ (the book: $h$) | — | single head | single head | $H$, index $h$ | `num_heads` |
# | concentration / temperature | $\sqrt{d_{\text{model}}}$ | $\tau$ (§6 decoding) | — | $\sigma$ (latent-noise scale) | $\kappa$ (vMF), $\sigma$ (score scale) | `scale`, `temperature` |
# | which scores training raises | — | — | advantage $A_{ij}=-(b_{ij}-\mathbb E_{\alpha_i}[b])$ (§3.4) | — | advantage $\eta_\ell(z)$ (App. B; the book's $S_\ell(z)$), with the **opposite sign**: how much belief in $z$ *raises* the loss, so descent lowers the logits with above-average advantage ([5.6](../part5_svflow/06_appendix_b_gradients.ipynb)) | `advantage_matrix` |
# | distance from non-invertibility | — | — | — | margin $m_t=1-a\,\mathrm{Var}_t$ (9), block $I-\Sigma_tA$ (14) | — | `scalar_margin`, `matrix_margins` |
# | a step that stays on the sphere | — | — | — | — | retraction $R_x(v)$ (3), exponential map $\exp_x(v)$ (2) | `retraction`, `exp_map` |
#
# **Vector conventions.** Chapter 6 and `nextword`'s public functions use **row vectors**: a sequence is
# an array `X` of shape `(..., T, d)` and projections multiply on the right, `q[i] = e[i] W^Q`. The
# formulation, dynamics, margins and SVFlow papers use **column vectors**, `q_t = W_Q x_t`. The two agree
# when $W_Q = (W^Q)^\top$; every docstring says which convention it uses. (Chapter 6 writes the score as
# $\mathbf q[i]^\top\mathbf k[j]$, as copied in the table above, meaning the dot product; with row vectors
# it is $\mathbf q[i]\,\mathbf k[j]^\top$.) Two exceptions follow their
# paper on purpose: `nextword.theory.barrier` takes `X (L, d)` with rows $x_t$ but applies the maps as
# columns, $q_t = W_Q x_t$ (Part 4's notation), and the torch margin prior `nextword.torch.barrier.prior` scores
# $x_t W x_s^\top$ with one learnable $W = W_Q^\top W_K$, so Theorem 1's $A = W_K^\top W_Q$ is $W^\top$. The cell below checks that the
# two conventions give the same attention weights.

# %%
import numpy as np

from nextword.attention import scaled_dot_product_attention

rng = np.random.default_rng(0)
T, d = 5, 4
X = rng.normal(size=(T, d))  # rows e[i] (Chapter 6) = columns x_t (papers), stacked
W_Q_row, W_K_row, W_V_row = (rng.normal(size=(d, d)) for _ in range(3))  # Chapter 6: q[i] = e[i] W^Q

# Row-vector convention, as nextword computes it.
out_row, alpha_row = scaled_dot_product_attention(
    X @ W_Q_row, X @ W_K_row, X @ W_V_row, causal=True, return_weights=True
)

# Column-vector convention of the papers: W_Q = (W^Q)^T, q_t = W_Q x_t, scores q_t^T k_s / sqrt(d).
W_Q, W_K, W_V = W_Q_row.T, W_K_row.T, W_V_row.T
q_cols = np.stack([W_Q @ X[t] for t in range(T)])
k_cols = np.stack([W_K @ X[t] for t in range(T)])
v_cols = np.stack([W_V @ X[t] for t in range(T)])
out_col, alpha_col = scaled_dot_product_attention(q_cols, k_cols, v_cols, causal=True, return_weights=True)

assert np.allclose(alpha_row, alpha_col, atol=1e-12) and np.allclose(out_row, out_col, atol=1e-12)
print("row-vector (Chapter 6) and column-vector (papers) conventions agree; causal weights:")
print(np.array2string(alpha_row, precision=3, suppress_small=True))
