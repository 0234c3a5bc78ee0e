# %% [markdown]
# # Part 3: checking the paper, a second pass (Aggarwal, Dalal, Misra)
#
# A reference page, not a lesson. The lessons of this part check the paper where they teach it
# ([3.1](01_attention_gradients.ipynb) to [3.4](04_design_choices.ipynb)). There, the steps of §3.4 from the
# chain rule to the boxed score gradient are checked through their end result, Eq. (23). This page checks
# each step on its own. A claim that fails is recorded in the [errata ledger](../ERRATA.md); every verdict
# is in the [coverage map](../coverage.yaml).

# %%
import numpy as np
import sympy as sp

from nextword.theory.dynamics.gradients import HeadParams

print("sympy", sp.__version__.split(".")[0], "(major version)")

# %% [markdown]
# ## §3.4, Eqs. (18)–(22): each step of the score gradient on its own
#
# For one query i with scores s_i1, …, s_iT, weights α_ij = softmax_j(s_i) and compatibilities
# b_ij = u_iᵀ v_j (Eq. 17: ∂L/∂α_ij = b_ij), §3.4 writes the softmax Jacobian (18), the chain rule (19),
# its expansion (20), a rewrite (21) and the centred form (22). With T = 3 and every s_ik and b_ij a free
# symbol, sympy checks each one against the derivative of L̃ = Σ_j b_ij α_ij (the loss as a function of
# the weights, to first order, which is what (19) differentiates):

# %%
T = 3
s = sp.symbols(f"s1:{T + 1}", real=True)
b = sp.symbols(f"b1:{T + 1}", real=True)
z = [sp.exp(x) for x in s]
alpha = [zj / sum(z) for zj in z]
L_tilde = sum(bj * aj for bj, aj in zip(b, alpha))
E_b = sum(aj * bj for aj, bj in zip(alpha, b))
delta = lambda j, k: 1 if j == k else 0  # noqa: E731 (Kronecker delta)
steps_hold = {name: True for name in ("(18)", "(19)", "(20)", "(21)", "(22)")}
for k in range(T):
    exact = sp.diff(L_tilde, s[k])
    jac = [sp.diff(alpha[j], s[k]) for j in range(T)]
    eq18 = [alpha[j] * (delta(j, k) - alpha[k]) for j in range(T)]
    steps_hold["(18)"] &= all(sp.simplify(jac[j] - eq18[j]) == 0 for j in range(T))
    eq19 = sum(b[j] * jac[j] for j in range(T))  # sum_j (dL/dalpha_j)(dalpha_j/ds_k), with (17)
    eq20 = sum(b[j] * alpha[j] * (delta(j, k) - alpha[k]) for j in range(T))
    eq21 = alpha[k] * b[k] - alpha[k] * sum(alpha[j] * b[j] for j in range(T))
    eq22 = alpha[k] * (b[k] - E_b)
    steps_hold["(19)"] &= sp.simplify(eq19 - exact) == 0
    steps_hold["(20)"] &= sp.simplify(eq20 - exact) == 0
    steps_hold["(21)"] &= sp.simplify(eq21 - eq20) == 0
    steps_hold["(22)"] &= sp.simplify(eq22 - eq21) == 0
print("each step equals the derivative (or the step before) for every k:", steps_hold)
assert all(steps_hold.values())

# %% [markdown]
# ## Eq. (20) on a real head, against finite differences of the loss
#
# The symbolic check treats b_ij as fixed numbers. In a head, b_ij = u_iᵀ v_j with u_i = W_Oᵀ(p_i − e_{y_i})
# itself a function of the scores; Eq. (20) claims the *exact* derivative of the cross-entropy at the
# current point. Central differences of the loss of query i in each of its scores, on a random head
# (T = 5 positions, widths 4, 3 classes):

# %%
rng = np.random.default_rng(46)
T_head, d_x, d_k, d_v, C = 5, 4, 4, 4, 3
params = HeadParams.init(d_x, d_k, d_v, C, rng=rng, scale=1.0)  # unit scale: gradients of order 0.1 to 1
X = rng.normal(size=(T_head, d_x))
y = rng.integers(0, C, size=T_head)
V = X @ params.W_V
scores = (X @ params.W_Q) @ (X @ params.W_K).T / np.sqrt(d_k)  # Eq. (4), row i = query i


def loss_of_query(i, s_i):
    """-log p_{i, y_i} as a function of query i's scores s_i (T,): Eqs. (5)-(9) for one position."""
    a = np.exp(s_i - s_i.max())
    a /= a.sum()
    logits = (a @ V) @ params.W_O + params.b
    return -(logits[y[i]] - np.log(np.exp(logits - logits.max()).sum()) - logits.max())


worst, largest = 0.0, 0.0
for i in range(T_head):
    a = np.exp(scores[i] - scores[i].max())
    a /= a.sum()
    logits = (a @ V) @ params.W_O + params.b
    p = np.exp(logits - logits.max())
    p /= p.sum()
    u = params.W_O @ (p - np.eye(C)[y[i]])  # Eq. (10), row-vector form
    b_i = V @ u  # Eq. (11): b_ij = u_i . v_j
    eq20 = np.array([sum(b_i[j] * a[j] * ((j == k) - a[k]) for j in range(T_head)) for k in range(T_head)])
    h = 1e-6
    fd = np.array([(loss_of_query(i, scores[i] + h * np.eye(T_head)[k])
                    - loss_of_query(i, scores[i] - h * np.eye(T_head)[k])) / (2 * h) for k in range(T_head)])
    worst, largest = max(worst, np.abs(eq20 - fd).max()), max(largest, np.abs(eq20).max())
print(f"Eq. (20) against central differences, every query and score: agrees to 1e-8: {worst < 1e-8}; "
      f"largest gradient entry above 0.05: {largest > 0.05}")
assert worst < 1e-8 and largest > 0.05

# %% [markdown]
# Each of Eqs. (18)–(22) holds on its own for any scores and compatibilities, and Eq. (20) is the exact
# derivative of the cross-entropy of a real head, not only through its end result (23).
