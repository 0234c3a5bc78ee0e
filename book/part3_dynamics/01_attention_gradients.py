# %% [markdown]
# # 3.1 Attention gradients: every boxed result of §2–3, derived and checked
#
# *Source: Aggarwal, Dalal, Misra, "Gradient Dynamics of Attention: How Cross-Entropy Sculpts
# Bayesian Manifolds", §2 (Eqs. 1–12) and §3 (Eqs. 13–36).*
#
# The paper studies one attention head followed by a linear read-out and a softmax, trained with
# cross-entropy. Everything it later says about routing, specialisation and EM rests on a handful
# of closed-form gradients. In this notebook we (1) derive each of them with sympy on a small
# symbolic head, (2) check the library implementation — `nextword.attention.attention_backward`
# and `nextword.theory.dynamics.head_gradients` — against central finite differences and torch
# autograd for random sizes, with the $1/\sqrt{d_k}$ scaling of Eq. (4) switched on, and (3)
# check the *sign* of the advantage form (23), which the paper's prose states inconsistently.
#
# **Conventions.** The paper uses column vectors ($q_i = W_Q x_i$). The book keeps Chapter 6's
# row vectors: a sequence is $X\in\mathbb R^{T\times d_x}$, $Q = XW_Q$ with $W_Q\in\mathbb
# R^{d_x\times d_k}$ (the transpose of the paper's matrix), logits $\ell_i = g_iW_O + b$ with
# $W_O\in\mathbb R^{d_v\times C}$. Weight gradients are therefore the transposes of the paper's
# (29)–(32); the per-position gradients are the same vectors. The loss is the *sum* (9) over
# positions, so $u_i = \partial L/\partial g_i$ exactly.
#
# | paper | meaning | code |
# |---|---|---|
# | $u_i = W_O^\top(p_i-e_{y_i})$ (10, 14) | upstream error at position $i$ | `HeadGradients.U`, `upstream_gradient` |
# | $b_{ij}=u_i^\top v_j$ (11, 17) | compatibility = $\partial L/\partial\alpha_{ij}$ | `compatibility_matrix(U, V)` |
# | $\mathbb E_{\alpha_i}[b]$ (12) | attention-weighted mean compatibility | `expected_compatibility` |
# | $\alpha_{ij}(b_{ij}-\mathbb E_{\alpha_i}[b])$ (23) | $\partial L/\partial s_{ij}$ | `score_gradient`, `HeadGradients.dS` |
# | $A_{ij} = -(b_{ij}-\mathbb E_{\alpha_i}[b])$ (§3.4) | advantage | `advantage_matrix` |
# | $\sum_i\alpha_{ij}u_i$ (16) | $\partial L/\partial v_j$ | `responsibility_signal`, `HeadGradients.dV` |

# %%
import matplotlib.pyplot as plt
import numpy as np
import sympy as sp

from nextword.attention import softmax
from nextword.numerics import central_difference
from nextword.booktools.plotting import heatmap, use_book_style
from nextword.theory.dynamics import (
    HeadParams,
    advantage_matrix,
    compatibility_matrix,
    cross_entropy,
    head_forward,
    head_gradients,
    responsibility_signal,
    score_gradient,
    upstream_gradient,
)

use_book_style()
rng = np.random.default_rng(0)

# %% [markdown]
# ## 1. Symbolic derivation
#
# **Read-out, Eqs. (13)–(14).** For one position with $C=3$ logits and target class 0, the
# cross-entropy is $-\log\operatorname{softmax}(\ell)_0$. Sympy differentiates it and we compare
# with $p-e_y$; then we put a symbolic read-out $\ell = gW_O + b$ in front ($d_v = 2$) and compare
# $\partial L/\partial g$ with $W_O(p-e_y)$ in row form, i.e. the paper's $W_O^\top(p-e_y)$.

# %%
C, dv_sym = 3, 2
ell = sp.Matrix(sp.symbols("ell0:3"))
p_sym = sp.Matrix([sp.exp(e) for e in ell]) / sum(sp.exp(e) for e in ell)
L_ce = -sp.log(p_sym[0])
e_y = sp.Matrix([1, 0, 0])
grad_ell = sp.Matrix([sp.diff(L_ce, e) for e in ell])
assert sp.simplify(grad_ell - (p_sym - e_y)) == sp.zeros(3, 1)
print("dL/dl_0 =", sp.simplify(grad_ell[0]))

g_sym = sp.Matrix(sp.symbols("g0:2"))
W_O_sym = sp.Matrix(2, 3, sp.symbols("w0:6"))  # (d_v, C), row convention
b_sym = sp.Matrix(sp.symbols("c0:3"))
logits_sym = (g_sym.T * W_O_sym).T + b_sym  # (C, 1)
p_g = sp.Matrix([sp.exp(e) for e in logits_sym]) / sum(sp.exp(e) for e in logits_sym)
L_g = -sp.log(p_g[0])
u_sym = sp.Matrix([sp.diff(L_g, gk) for gk in g_sym])
assert sp.simplify(u_sym - W_O_sym * (p_g - e_y)) == sp.zeros(2, 1)
print("Eq. (13)-(14) verified: dL/dl = p - e_y and dL/dg = W_O (p - e_y)  [paper: W_O^T (p - e_y)]")

# %% [markdown]
# **Everything upstream of $g$.** Past $g_i$ the loss only enters through $u_i=\partial L/\partial
# g_i$, so by the chain rule every first derivative of $L$ with respect to anything before $g$
# equals the derivative of the *linearised* loss $\tilde L=\sum_i u_i^\top g_i$ with the $u_i$ held
# fixed. We use $\tilde L$ with symbolic $u_i$ and a symbolic head of $T=3$ positions,
# $d_k = d_v = 2$, $d_x=2$, and let sympy do Eqs. (16), (17), (23), (25), (27), (29)–(32).

# %%
T_s, dk_s, dv_s, dx_s = 3, 2, 2, 2
U_s = sp.Matrix(T_s, dv_s, lambda i, a: sp.Symbol(f"u{i}{a}"))
V_s = sp.Matrix(T_s, dv_s, lambda j, a: sp.Symbol(f"v{j}{a}"))
# The softmax is written with z_ij = exp(s_ij) > 0, so d/ds_ij = z_ij d/dz_ij and every check
# below is an identity between rational functions (fast to verify with `cancel`).
Z_s = sp.Matrix(T_s, T_s, lambda i, j: sp.Symbol(f"z{i}{j}", positive=True))
A_s = sp.Matrix(T_s, T_s, lambda i, j: Z_s[i, j] / sum(Z_s[i, k] for k in range(T_s)))  # Eq. (5)
G_s = A_s * V_s  # (T, d_v), Eq. (6)
L_lin = sum((U_s.row(i) * G_s.row(i).T)[0] for i in range(T_s))

# Eq. (16): dL/dv_j = sum_i alpha_ij u_i
dV_sym = sp.Matrix(T_s, dv_s, lambda j, a: sp.diff(L_lin, V_s[j, a]))
assert sp.simplify(dV_sym - A_s.T * U_s) == sp.zeros(T_s, dv_s)
print("Eq. (16) verified: dL/dV = alpha^T U")

# Eq. (17): with alpha as free symbols, dL/dalpha_ij = u_i . v_j = b_ij
alpha_free = sp.Matrix(T_s, T_s, lambda i, j: sp.Symbol(f"a{i}{j}"))
L_alpha = sum((U_s.row(i) * (alpha_free * V_s).row(i).T)[0] for i in range(T_s))
B_s = U_s * V_s.T  # (T, T), b_ij = u_i . v_j
assert sp.Matrix(T_s, T_s, lambda i, j: sp.diff(L_alpha, alpha_free[i, j])) == B_s.applyfunc(sp.expand)
print("Eq. (17) verified: dL/dalpha_01 = b_01 =", B_s[0, 1])

# Eq. (23): dL/ds_ik = alpha_ik (b_ik - E_alpha_i[b])
dS_sym = sp.Matrix(T_s, T_s, lambda i, k: Z_s[i, k] * sp.diff(L_lin, Z_s[i, k]))
E_b = [sum(A_s[i, j] * B_s[i, j] for j in range(T_s)) for i in range(T_s)]  # Eq. (12)
closed_23 = sp.Matrix(T_s, T_s, lambda i, k: A_s[i, k] * (B_s[i, k] - E_b[i]))
assert sp.cancel(dS_sym - closed_23) == sp.zeros(T_s, T_s)
# Display: write the same derivative with b_0j as symbols and alpha_0j = z_0j / sum_k z_0k.
b_row = sp.symbols("b_00 b_01 b_02")
al = sp.symbols("alpha_00 alpha_01 alpha_02", positive=True)
L_b = sum(A_s[0, j] * b_row[j] for j in range(T_s))  # row 0 of L_lin = sum_j alpha_0j b_0j
d01 = sp.cancel(Z_s[0, 1] * sp.diff(L_b, Z_s[0, 1]))
d01 = sp.factor(d01.subs({Z_s[0, k]: al[k] for k in range(T_s)}).subs(al[2], 1 - al[0] - al[1]))
print("Eq. (23) verified; with alpha_02 = 1 - alpha_00 - alpha_01, sympy gives dL/ds_01 =", d01)
check = al[1] * (b_row[1] - sum(al[k] * b_row[k] for k in range(T_s)))
assert sp.expand(d01 - check.subs(al[2], 1 - al[0] - al[1])) == 0

# %% [markdown]
# Now the scores come from queries and keys, $s_{ij} = q_i^\top k_j/\sqrt{d_k}$ (Eq. 4), and those
# from the inputs. We keep $\partial L/\partial s$ as a symbolic matrix $D$ (any function of the
# scores has this chain-rule structure) and check Eqs. (25), (27) and (29)–(30); then (31)–(32)
# for the value projection. The $1/\sqrt{d_k}$ is kept symbolic so that it is visibly carried.

# %%
Q_s = sp.Matrix(T_s, dk_s, lambda i, a: sp.Symbol(f"q{i}{a}"))
K_s = sp.Matrix(T_s, dk_s, lambda j, a: sp.Symbol(f"k{j}{a}"))
dk = sp.Symbol("d_k", positive=True)
D_s = sp.Matrix(T_s, T_s, lambda i, j: sp.Symbol(f"D{i}{j}"))  # stands for dL/ds
scores_qk = Q_s * K_s.T / sp.sqrt(dk)
L_s = sum(D_s[i, j] * scores_qk[i, j] for i in range(T_s) for j in range(T_s))  # first order in s
dQ_sym = sp.Matrix(T_s, dk_s, lambda i, a: sp.diff(L_s, Q_s[i, a]))
dK_sym = sp.Matrix(T_s, dk_s, lambda j, a: sp.diff(L_s, K_s[j, a]))
assert sp.simplify(dQ_sym - D_s * K_s / sp.sqrt(dk)) == sp.zeros(T_s, dk_s)  # Eq. (25)
assert sp.simplify(dK_sym - D_s.T * Q_s / sp.sqrt(dk)) == sp.zeros(T_s, dk_s)  # Eq. (27)
print("Eq. (25): dL/dq_0 =", sp.simplify(dQ_sym[0, 0]))

X_s = sp.Matrix(T_s, dx_s, lambda i, a: sp.Symbol(f"x{i}{a}"))
WQ_s = sp.Matrix(dx_s, dk_s, lambda a, b: sp.Symbol(f"WQ{a}{b}"))
Q_of_W = X_s * WQ_s
GQ = sp.Matrix(T_s, dk_s, lambda i, a: sp.Symbol(f"gq{i}{a}"))  # stands for dL/dQ
L_q = sum(GQ[i, a] * Q_of_W[i, a] for i in range(T_s) for a in range(dk_s))
dWQ_sym = sp.Matrix(dx_s, dk_s, lambda a, b: sp.diff(L_q, WQ_s[a, b]))
assert sp.simplify(dWQ_sym - X_s.T * GQ) == sp.zeros(dx_s, dk_s)  # Eq. (29), row form (same for (30))

WV_s = sp.Matrix(dx_s, dv_s, lambda a, b: sp.Symbol(f"WV{a}{b}"))
G_of_WV = alpha_free * (X_s * WV_s)  # g = alpha X W_V
L_v = sum((U_s.row(i) * G_of_WV.row(i).T)[0] for i in range(T_s))
dWV_sym = sp.Matrix(dx_s, dv_s, lambda a, b: sp.diff(L_v, WV_s[a, b]))
assert sp.expand(dWV_sym - X_s.T * alpha_free.T * U_s) == sp.zeros(dx_s, dv_s)  # Eq. (31)
# Eq. (32) in the paper's column convention: U_col A X_col^T with U_col = U^T, X_col = X^T
assert sp.expand(dWV_sym.T - (U_s.T * alpha_free * X_s)) == sp.zeros(dv_s, dx_s)
print("Eqs. (25), (27), (29)-(32) verified (row form; Eq. (32) also in the paper's column form U A X^T)")

# %% [markdown]
# ## 2. Numerical checks: finite differences and autograd, random sizes
#
# `head_gradients` assembles the read-out (`cross_entropy_upstream`) and the closed-form attention
# backward (`attention_backward`). We compare every parameter gradient with central finite
# differences of the loss for several random sizes, causal and not. Central differences have error
# $O(h^2)$; with $h=10^{-5}$ in float64 we expect agreement to about $10^{-8}$ relative.


# %%
def loss_of(params, X, y, causal):
    return cross_entropy(head_forward(params, X, causal=causal).log_probs, y)


def fd_grad(params, X, y, causal, name, h=1e-5):
    """Central finite differences of the summed loss with respect to one parameter array."""
    return central_difference(lambda W: loss_of(HeadParams(**{**params.__dict__, name: W}), X, y, causal),
                              getattr(params, name), h=h)  # the parameter's shape


worst = 0.0
for trial, (T, d_x, d_k, d_v, C) in enumerate([(5, 3, 2, 2, 3), (7, 4, 3, 5, 4), (4, 6, 5, 3, 2)]):
    params = HeadParams.init(d_x, d_k, d_v, C, rng=rng, scale=0.8)
    X = rng.standard_normal((T, d_x))
    y = rng.integers(0, C, size=T)
    for causal in (False, True):
        g = head_gradients(params, X, y, causal=causal)
        for name in ("W_Q", "W_K", "W_V", "W_O", "b"):
            fd = fd_grad(params, X, y, causal, name)
            rel = np.abs(getattr(g, name) - fd).max() / max(np.abs(fd).max(), 1e-12)
            worst = max(worst, rel)
            assert rel < 1e-6, (trial, causal, name, rel)
print("closed form vs central differences, 30 gradient arrays: worst relative error < 1e-6")

# %% [markdown]
# The same comparison against torch autograd (when torch is installed), now to machine precision.
# The torch reference is written from the forward equations (1)–(9) only.

# %%
try:
    import torch
except ImportError:  # pragma: no cover - torch is part of the book environment
    torch = None

if torch is not None:
    worst_t = 0.0
    for T, d_x, d_k, d_v, C in [(6, 5, 4, 3, 4), (9, 3, 2, 6, 5)]:
        params = HeadParams.init(d_x, d_k, d_v, C, rng=rng, scale=0.8)
        X = rng.standard_normal((T, d_x))
        y = rng.integers(0, C, size=T)
        for causal in (False, True):
            t = {k: torch.tensor(v, requires_grad=True) for k, v in params.__dict__.items()}
            Xt = torch.tensor(X)
            S = (Xt @ t["W_Q"]) @ (Xt @ t["W_K"]).T / np.sqrt(d_k)  # Eq. (4), with 1/sqrt(d_k)
            if causal:
                S = S.masked_fill(~torch.tril(torch.ones(T, T, dtype=torch.bool)), float("-inf"))
            G = torch.softmax(S, dim=-1) @ (Xt @ t["W_V"])
            L = torch.nn.functional.cross_entropy(G @ t["W_O"] + t["b"], torch.tensor(y), reduction="sum")
            L.backward()
            g = head_gradients(params, X, y, causal=causal)
            for k in t:
                worst_t = max(worst_t, float(np.abs(t[k].grad.numpy() - getattr(g, k)).max()))
    assert worst_t < 1e-12
    print("closed form vs torch autograd, 20 gradient arrays: worst absolute error < 1e-12")

# %% [markdown]
# **The $1/\sqrt{d_k}$ matters.** Dropping it from the backward (computing $X^\top(\partial L/\partial S)\,K$
# instead of Eq. (25)) while keeping it in the forward pass (a common slip when transcribing Eqs. (25)–(28)) makes the query/key gradients wrong by
# exactly a factor $\sqrt{d_k}$; the value and read-out gradients do not notice.

# %%
T, d_x, d_k, d_v, C = 6, 4, 9, 3, 3
params = HeadParams.init(d_x, d_k, d_v, C, rng=rng, scale=0.8)
X = rng.standard_normal((T, d_x))
y = rng.integers(0, C, size=T)
g = head_gradients(params, X, y)
ratio = fd_grad(params, X, y, False, "W_Q") / (X.T @ (g.dS @ (X @ params.W_K)))
print(f"true dL/dW_Q divided by the backward without 1/sqrt(d_k): {ratio.mean():.6f} "
      f"(1/sqrt(d_k) = {1 / np.sqrt(d_k):.6f}), the same for all {ratio.size} entries")
assert np.allclose(ratio, 1 / np.sqrt(d_k), rtol=1e-6)

# %% [markdown]
# How the finite-difference error behaves with the step $h$ confirms the comparison is meaningful:
# the error falls as $h^2$ until round-off ($\sim\varepsilon/h$) takes over.

# %%
hs = np.logspace(-8, -1, 15)
errs = [np.abs(fd_grad(params, X, y, False, "W_K", h=h) - g.W_K).max() for h in hs]
fig, ax = plt.subplots(figsize=(5.5, 3.6))
ax.loglog(hs, errs, "o-", label="|FD - closed form|, $W_K$")
ax.loglog(hs, errs[-1] * (hs / hs[-1]) ** 2, "--", color="gray", label="slope 2")
ax.set_xlabel("finite-difference step h")
ax.set_ylabel("max abs error")
ax.legend()
plt.show()
i_best = int(np.argmin(errs))
assert errs[i_best] < 1e-8 and 1e-7 <= hs[i_best] <= 1e-3

# %% [markdown]
# *Figure 3.1.1 — Central-difference error of $\partial L/\partial W_K$ (Eqs. (27), (30)) against
# the closed form: slope 2 for large $h$, round-off for small $h$; the minimum, near $10^{-8}$, is
# the agreement we assert above.*
#
# ## 3. The advantage form and its sign
#
# Eq. (23) says $\partial L/\partial s_{ij} = \alpha_{ij}(b_{ij}-\mathbb E_{\alpha_i}[b])$. With
# the advantage $A_{ij} = -(b_{ij}-\mathbb E_{\alpha_i}[b])$, a gradient-descent step changes the
# score by $\Delta s_{ij} = \eta\,\alpha_{ij}A_{ij}$: **scores rise where the compatibility
# $b_{ij}$ is *below* its attention-weighted mean** (where $v_j$ points against the error $u_i$,
# i.e. helps). We check this directly: nudging one score by $+\varepsilon$ changes the loss by
# $-\varepsilon\alpha_{ij}A_{ij}$, so the loss falls exactly where $A_{ij}>0$, i.e. where
# $b_{ij}<\mathbb E_{\alpha_i}[b]$.

# %%
T, d_x, d_k, d_v, C = 6, 4, 3, 3, 4
params = HeadParams.init(d_x, d_k, d_v, C, rng=rng, scale=0.8)
X = rng.standard_normal((T, d_x))
y = rng.integers(0, C, size=T)
f = head_forward(params, X)
U = upstream_gradient(f.probs, y, params.W_O)
B = compatibility_matrix(U, f.V)
Adv = advantage_matrix(f.alpha, B)
dS = score_gradient(f.alpha, B)
assert np.allclose(dS, head_gradients(params, X, y).dS, atol=1e-14)
assert np.allclose(responsibility_signal(f.alpha, U), head_gradients(params, X, y).dV, atol=1e-14)


def loss_from_scores(S):
    G = softmax(S) @ f.V
    return cross_entropy(np.log(softmax(G @ params.W_O + params.b)), y)


S0 = f.Q @ f.K.T / np.sqrt(d_k)
eps = 1e-6
dL = np.zeros((T, T))
for i, j in np.ndindex(T, T):
    S1 = S0.copy()
    S1[i, j] += eps
    dL[i, j] = loss_from_scores(S1) - loss_from_scores(S0)
assert np.allclose(dL, -eps * f.alpha * Adv, atol=1e-11)
falls = dL < 0
print(f"raising s_ij lowers the loss for {falls.sum()} of {T * T} pairs; "
      f"all of them have A_ij > 0 (b_ij below the mean): {bool(np.all(Adv[falls] > 0))}; "
      f"none has b_ij above the mean: {bool(not np.any((B - (f.alpha * B).sum(1, keepdims=True))[falls] > 0))}")
assert np.all(np.sign(dL[np.abs(dL) > 1e-12]) == -np.sign(Adv[np.abs(dL) > 1e-12]))
assert np.allclose((f.alpha * Adv).sum(axis=1), 0.0, atol=1e-12)  # advantage has alpha-mean zero per row

# %%
fig, axes = plt.subplots(1, 3, figsize=(12, 3.4))
heatmap(B, ax=axes[0], title="compatibility $b_{ij}=u_i\\cdot v_j$ (11)", cmap="coolwarm")
heatmap(Adv, ax=axes[1], title="advantage $A_{ij}$ (§3.4)", cmap="coolwarm")
heatmap(-dS, ax=axes[2], title="descent direction $-\\partial L/\\partial s_{ij}$ (23)", cmap="coolwarm")
for ax in axes:
    ax.set_xlabel("key j")
    ax.set_ylabel("query i")
plt.tight_layout()
plt.show()

# %% [markdown]
# *Figure 3.1.2 — For a random head: the compatibility matrix, the advantage and the descent
# direction for the scores. The descent direction is the advantage reweighted by $\alpha_{ij}$: it
# has the advantage's sign everywhere, and is large only where the query already attends.*
#
# **What the prose gets backwards.** The sentence after (23) ("scores increase for positions whose
# compatibility exceeds the current attention-weighted average"), contribution (2), the abstract
# ("route more strongly to values that are above-average for their error signal"), §5.1 after (44)
# (the E-step "increases responsibilities for positions whose compatibility $b_{ij}$ exceeds the
# current mean") and conclusion (1) read "compatibility" as if larger $b_{ij}$ were better. With $b_{ij}=u_i^\top v_j$ and
# $u_i=\partial L/\partial g_i$ it is the other way round, as the definition of $A_{ij}$ and §4.1
# correctly say: attention moves toward values whose compatibility is *below* average (they point
# along $-u_i$). The equations are right; the wording is not. Recorded in `book/ERRATA.md`.
#
# ## 4. First-order updates (33)–(36)
#
# Finally, the updates (33)–(36) are first-order: for a small learning rate, the loss change of a
# full gradient step is $-\eta\|\nabla L\|^2 + O(\eta^2)$. We check the ratio of actual to
# predicted change tends to 1 linearly in $\eta$.

# %%
g = head_gradients(params, X, y)
sq = sum(float(np.sum(getattr(g, n) ** 2)) for n in ("W_Q", "W_K", "W_V", "W_O", "b"))
for eta in (1e-2, 1e-3, 1e-4):
    actual = loss_of(params.sgd(g, eta), X, y, False) - g.loss
    print(f"eta={eta:.0e}: actual dL / (-eta ||grad||^2) = {actual / (-eta * sq):.6f}")
eta = 1e-4
assert abs((loss_of(params.sgd(g, eta), X, y, False) - g.loss) / (-eta * sq) - 1) < 1e-2

# %% [markdown]
# ## Summary
#
# * Every boxed result of §3 — (13)–(14), (16), (17), (23), (25)/(27)/(28), (29)–(32) — holds:
#   derived symbolically, and the library agrees with finite differences ($<10^{-6}$ relative) and
#   torch autograd ($<10^{-12}$) for random sizes with the $1/\sqrt{d_k}$ of Eq. (4).
# * Eq. (32)'s $UAX^\top$ is the column-vector form; the row form used by the library is
#   $X^\top\alpha^\top U$, its transpose.
# * The advantage form is correct, but the paper's prose states its direction backwards in several
#   places (errata). Notebook 3.2 uses these gradients to study routing and specialisation.
