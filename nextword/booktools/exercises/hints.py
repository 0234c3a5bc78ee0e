"""Hints on demand, in tiers, and model answers to reveal after trying.

``hint("p4_01", 1)`` prints the first (gentlest) hint of Part 4, Exercise 01; tier 2 names the method,
tier 3 is close to the code. ``reveal("p4_01")`` prints the model answers of the exercise's written
(markdown) questions, read from its solution notebook (``solutions/``, the single source).

>>> hint("p1_01", 1)
Hint 1 of 3 for p1_01: Three steps, one per returned array: dot products, then exponentials, then normalise. (next: hint('p1_01', 2))
"""
from __future__ import annotations

import re
from pathlib import Path

__all__ = ["HINTS", "hint", "reveal", "exercise_id", "solution_for", "repo_root"]

def repo_root() -> Path:
    """The checkout holding ``solutions/`` (found upwards from this file, so the package may move)."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "solutions").is_dir() and (parent / "pyproject.toml").is_file():
            return parent
    return here.parents[3]


_ROOT = repo_root()

HINTS: dict[str, tuple[str, ...]] = {
    "p1_01": (
        "Three steps, one per returned array: dot products, then exponentials, then normalise.",
        "Each score is the dot product of the query with one key row, divided by √d_k (d_k = length of q). "
        "Subtracting the largest score before exp changes nothing after normalising and avoids overflow.",
        "scores = K @ q / sqrt(len(q)); e = exp(scores - scores.max()); weights = e / e.sum()",
    ),
    "p1_02": (
        "A convex combination has non-negative coefficients that sum to 1 — which property does softmax give you?",
        "Symbolically: the sum of exp(z_i) / Σ_j exp(z_j) over i simplifies to 1. For the hull test, look for "
        "coefficients λ ≥ 0 with Σ λ = 1 and Vᵀ λ = x: a feasibility problem for linear programming.",
        "scipy.optimize.linprog with a zero objective, A_eq = [Vᵀ; 1ᵀ], b_eq = [x; 1], bounds (0, None); "
        "feasible (status 0) means inside.",
    ),
    "p1_03": (
        "A generator never sees the word it is about to produce: feed only the prefix.",
        "For each t, run the model on windows[:, :t] and use the logits of the last position to predict windows[:, t].",
        "for t in 1..T-1: F.cross_entropy(model(windows[:, :t])[:, -1], windows[:, t]); average the T-1 values.",
    ),
    "p1_04": (
        "Count weight matrices: per head the query, key and value projections, then the output projection.",
        "A head projects d_model → d_k = d_model / n_heads; with n_heads heads the three projections give "
        "3 · d_model · d_model together. The output projection W^O is d_model × d_model.",
        "4 · d_model² per layer, times n_layers — n_heads cancels (sympy shows it).",
    ),
    "p1_05": (
        "Dimensions come in pairs (2m, 2m+1) that share one frequency; the even one is a sine, the odd one a cosine.",
        "The angle of dimension dim is t / 10000^(2m / d_model) with m = dim // 2, the pair it belongs to.",
        "angle = t / 10000 ** (2 * (dim // 2) / d_model); sin(angle) for even dim, cos(angle) for odd dim.",
    ),
    "p1_06": (
        "A rotation by iθ followed by the transpose of a rotation by jθ is a single rotation: by which angle?",
        "Write R(φ) as a 2×2 sympy Matrix and simplify R(iθ)ᵀ R(jθ). Numerically, rotate each pair "
        "(x[2m], x[2m+1]) by position · θ_m with θ_m = 10000^(-2m/d_k).",
        "simplify(R(i*θ).T * R(j*θ) - R((j - i)*θ)) == zeros; rope_score = rotate(q, i) @ rotate(k, j).",
    ),
    "p1_07": (
        "Mutual information compares the joint law of two words with the product of their marginals.",
        "Count a joint table of (word at `position`, blank) over the sampled sentences, normalise it, and sum "
        "p(x,y) log(p(x,y) / (p(x) p(y))) over the non-zero cells (natural log: nats). Positions are 1-based.",
        "x, y = ids[:, position-1], ids[:, -1]; np.add.at(P, (x, y), 1); P /= P.sum(); then the sum above.",
    ),
    "p1_08": (
        "What does each model carry from one position to the next — one vector, or one per position?",
        "An RNN carries its current state (d numbers) whatever T; one attention layer keeps a d-vector for every "
        "position it can attend to.",
        "rnn: d; transformer: T · d; crossover: the first T = 1, 2, … with T · d ≥ factor · d.",
    ),
    "p1_09": (
        "Separate looking from using: what the head attends to, and what breaks when it is switched off.",
        "subject_attention: the weight from each marker query to its sentence's subject column, averaged over "
        "the marker queries. ablation_effect: the mean loss on `group` with head m masked minus the full model's.",
        "col = weights[arange(N), :, :, subject_pos]; average col over marker_mask. For each head m, a (1, h) mask of "
        "ones with 0 at m: nll_fn(mask)[group].mean() - nll_fn(None)[group].mean().",
    ),
    "p1_10": (
        "q·k is a sum of d independent products q_r k_r: variances of independent terms add.",
        "Var(q_r k_r) = E[q_r²] E[k_r²] = σ⁴ for zero-mean independent entries. sympy.stats can do it with "
        "Normal variables; the simulation draws (n, d) arrays for q and k.",
        "variance(sum(Normal(f'q{r}', 0, σ) * Normal(f'k{r}', 0, σ) for r in range(d))); simulation: (q * k).sum(1).var().",
    ),
    "p1_11": (
        "Count each matrix product (n1×n2)(n2×n3) as 2·n1·n2·n3 FLOPs; then ask which operations must wait for others.",
        "RNN: X W_x once, then T-1 products z W_z (the first step starts from z = 0). Attention: three "
        "projections, Q Kᵀ and the weights times V (T×T by T×d), and the output projection. A product's backward pass costs two products.",
        "rnn fwd = 2Td² + 2(T-1)d², attention fwd = 8Td² + 4T²d; bwd ≈ 2 × fwd; steps: rnn T, attention 1.",
    ),
    "p1_12": (
        "'Honest' means the model never sees the token it predicts, whatever its mask.",
        "Run the model on each prefix ids[:, :t+1] and score the next token with the last position's logits; "
        "for the results, compare that with the teacher-forced loss of one pass (token_nll).",
        "for t in range(T-1): logits = model(ids[:, :t+1])[:, -1]; cross-entropy against ids[:, t+1].",
    ),
    "p2_01": (
        "The chain rule of KL: the joint KL splits into one expected KL of next-token laws per position.",
        "Term t averages KL(p(·|prefix) ‖ q(·|prefix)) over all prefixes of length t-1, weighted by their "
        "probability under p (not q).",
        "itertools.product(range(V), repeat=t-1) for the prefixes; weight = Π p(token | earlier tokens).",
    ),
    "p2_02": (
        "A rate matrix has non-negative off-diagonal entries and rows that sum to 0.",
        "Uniform noise jumps to each state at rate β/V; absorbing noise jumps only to the mask state at rate β, "
        "and the mask never leaves. The reverse rate from y to z is the forward rate from z to y times p_z / p_y.",
        "uniform: β (ones((V, V)) / V - I); reverse: Q̄ = Qᵀ · p[None, :] / p[:, None], then reset the diagonal "
        "to minus the off-diagonal row sums.",
    ),
    "p2_03": (
        "Between samples the input is held constant: solve the linear ODE exactly over one step.",
        "Abar = exp(dt A); Bbar = ∫_0^dt exp(t'A) dt' B, which needs no inverse of A if you exponentiate the block "
        "matrix [[A, B], [0, 0]].",
        "M = zeros((s+d, s+d)); M[:s, :s] = A; M[:s, s:] = B; E = expm(M * dt); return E[:s, :s], E[:s, s:]. "
        "scan: record u_i = C v_i + D h_i, then v = Abar v + Bbar h_i.",
    ),
    "p2_04": (
        "Sort the tokens from most to least likely and keep the shortest head whose probability reaches p.",
        "The token that crosses p belongs to the nucleus; tokens tied with the last kept one are kept too. "
        "Set the rest to -inf so a softmax gives them probability 0.",
        "probs = softmax(logits); n = min((cumsum(sorted probs) < p).sum() + 1, V), and n = V when p = 1 (round-off "
        "can leave the whole cumsum just under 1, or make it reach 1 before the last token); keep logits >= the "
        "n-th largest.",
    ),
    "p3_01": (
        "Differentiate the loss through the softmax: the Jacobian of softmax is diag(α) − α αᵀ.",
        "With B_ij = u_i · v_j (u = dL/d output), dL/ds_ij = α_ij (B_ij − Σ_k α_ik B_ik); the advantage is minus "
        "the bracket, without the α_ij factor (A_ij > 0: raising s_ij lowers the loss).",
        "B = U @ V.T; mean = (alpha * B).sum(1, keepdims=True); grad = alpha * (B - mean); advantage = mean - B.",
    ),
    "p3_02": (
        "Moving v_j changes every output that attends to j, in proportion to α_ij.",
        "Eq. (41): ΔL_i = −η α_ij u_i · ū_j with ū_j = Σ_i α_ij u_i; Eq. (43) keeps only the i-th term of ū_j.",
        "first_order: -eta * alpha[:, j] * (U @ (alpha[:, j] @ U)); dominant: -eta * alpha[:, j]**2 * "
        "(U**2).sum(1). Counterexample: two users of column 0 with opposite errors.",
    ),
    "p3_03": (
        "The entropy rate of a stationary Markov chain is the average row entropy, weighted by the stationary law.",
        "The stationary law ν is the left eigenvector of P for eigenvalue 1; H = −Σ_z ν_z Σ_y P_zy log P_zy "
        "(0 log 0 = 0). For the rules, the off-diagonal mass 1 − stay is split by the rule's weights.",
        "ν from np.linalg.eig(P.T), normalised; circular distance d = min(|z-y|, n-|z-y|), line distance |z-y|; "
        "divide each row's weights by that row's sum (w.sum(axis=1)); then compute the three ring chains' rates and "
        "compare with 1.8833.",
    ),
    "p3_04": (
        "An M-step moves each value vector against the errors of the queries that attend to it.",
        "Compute α (causal), the output errors U = (P − onehot) W_Oᵀ, the value change Δv_j = −η Σ_i α_ij u_i, "
        "then solve for the W_V that produces the new values by least squares.",
        "alpha from scaled_dot_product_attention(..., causal=True, return_weights=True); "
        "W_V + np.linalg.lstsq(X, dV)[0] for the new W_V.",
    ),
    "p4_01": (
        "The margin of position t is 1 minus a times the attention-weighted variance of its (strict) past.",
        "Weights α_t = softmax_s(a x_t x_s) over s < t; Var_t = Σ α x² − (Σ α x)². Support tokens: every "
        "position whose margin equals the minimum — there can be ties.",
        "m = ones(T); for t ≥ 1 fill m[t]; support = np.flatnonzero(m <= m.min() + 1e-12).",
    ),
    "p4_02": (
        "ε̂_t = x_t − μ_t: the block is I minus the derivative of the attention average with respect to its query.",
        "Moving x_t re-weights the past: ∂μ_t/∂x_t = Σ_s α_ts (v_s − v̄_t)(x_s − x̄_t)ᵀ A with A = W_Kᵀ W_Q. "
        "Position 0 has no context.",
        "cross = (alpha[:, None] * (v - v_bar)).T @ (past - x_bar); return eye(d) - cross @ A.",
    ),
    "p4_03": (
        "A spectral radius above 1 does not make I − M singular: only an eigenvalue exactly 1 does.",
        "With W_Q = W_K = I the blocks are I minus a weighted covariance; spread the context out until an "
        "eigenvalue of Σ_t A passes 1 (well past, so the determinant stays away from 0).",
        "e.g. d = 2, W_Q = W_K = I, a few context points at ±c along one axis; increase c and watch "
        "matrix_margins(X, W_Q, W_K).",
    ),
    "p4_04": (
        "Without the mask, x_1 and x_2 are both functions of both noises ε_1 and ε_2.",
        "The model is ε = (I − W) x with W = [[0, w_V], [w_V, 0]]; so x = M ε with M = (I − W)⁻¹ and "
        "Cov(x) = σ² M Mᵀ.",
        "M = inv(eye(2) - [[0, w_V], [w_V, 0]]); Var(x_1) = sigma**2 * (M @ M.T)[0, 0] and "
        "Cov(x_1, x_2) = sigma**2 * (M @ M.T)[0, 1].",
    ),
    "p5_01": (
        "The exponential map follows the great circle; the retraction steps in the tangent direction and renormalises.",
        "exp_x(w) = cos‖w‖ x + sin‖w‖ w/‖w‖ (and x when w = 0); R_x(w) = (x + w)/‖x + w‖. For the slope, use "
        "small steps only (‖w‖ ≤ 0.05).",
        "errors = [‖R(x, r w_hat) − exp(x, r w_hat)‖ for r in rs]; slope = np.polyfit(log rs, log errors, 1)[0].",
    ),
    "p5_02": (
        "Take the logarithm before the number is formed: log C = ν log κ − (d/2) log 2π − log I_ν(κ), ν = d/2 − 1.",
        "log I_ν(κ) = log(ive(ν, κ)) + κ removes the overflow at large κ. Where ive itself underflows (large ν, "
        "small κ) use the power series I_ν(κ) = (κ/2)^ν Σ_j (κ²/4)^j / (j! Γ(ν+j+1)) in log space.",
        "log t_j = cumsum(log(κ²/4) − log j − log(j + ν)); log I = ν log(κ/2) − gammaln(ν+1) + logsumexp(log t).",
    ),
    "p5_03": (
        "ELBO = E_q[log p(x, z) − log q(z|x)]; the gap to log p(x) is a KL divergence.",
        "With Z components: q = exp(log_q); ELBO = Σ_z q (log p(x|z) + log(1/Z) − log q). The variational error is "
        "the part of the ELBO's gradient that the field u does not give.",
        "epsilon: weights w = q * (log_post − log_q), shape (N, Z), contracted with grad_log_q (N, Z, d).",
    ),
    "p3_05": (
        "The key gradient is the query-weighted sum of advantages: first get u_i = dL/dg_i, then b_ij = u_i · v_j.",
        "head_forward gives alpha, Q, V; upstream_gradient(probs, y, W_O) gives U (T, d_v). The score gradient is "
        "alpha_ij (b_ij − Σ_j' alpha_ij' b_ij') (Eq. 23); keys collect it through the queries.",
        "dS = alpha * (B − (alpha*B).sum(1, keepdims=True)) with B = U V^T (the row sums of alpha*B are the "
        "α-weighted means, not np.mean); dL/dK = dS^T Q / sqrt(d_k). For the cosine: "
        "|Σ_g k_g|² = G + G(G−1)c must vanish.",
    ),
    "p5_05": (
        "Write the step forward first (posterior q, scores s, x1), then differentiate the two terms of J "
        "with respect to the posterior logits.",
        "Task term: delta_1 = W_cls (softmax(W_cls^T x1) − onehot(y)) and A(z) = delta_1 · s(x0, z). KL term: "
        "R(z) = log q(z|x0) − log p(z|x0), p the normalised likelihoods (uniform prior).",
        "S = (A − E_q A) + beta (R − E_q R); the softmax Jacobian turns S into dJ/db_g = q * S.",
    ),
    "p5_04": (
        "J_bal = Σ_z f_z P_z mixes hard dispatch fractions f with soft probabilities P.",
        "Put some inputs almost exactly at (1/2, 1/2) — their argmax is expert 1 (column 0) but they barely move "
        "P — and others firmly on expert 2. Nudge them to (1/2 + tiny, 1/2 − tiny) rather than tie them exactly: an "
        "exact tie goes to expert 1 only by arg-max's convention (the lower index), which a router need not share.",
        "rows (1/2 + tiny, 1/2 − tiny) for a fraction of the inputs, (0, 1) for the rest; tune the fraction.",
    ),
}


def exercise_id(solution: Path) -> str:
    """``solutions/part4_margins/ex01_scalar_margin.py`` → ``"p4_01"``.

    >>> exercise_id(Path("solutions/part4_margins/ex01_scalar_margin.py"))
    'p4_01'
    """
    part = re.match(r"part(\d+)", Path(solution).parent.name)
    number = re.match(r"ex(\d+)", Path(solution).name)
    if not part or not number:
        raise ValueError(f"solution must be solutions/partN_*/exNN_*.py, got {solution}")
    return f"p{int(part[1])}_{number[1]}"


def solution_for(exercise: str, root: Path = _ROOT) -> Path:
    """The solution source of ``exercise`` (e.g. ``"p5_02"``)."""
    m = re.fullmatch(r"p(\d+)_(\d+)", str(exercise))
    if not m:
        raise ValueError(f"exercise should look like 'p5_02' (part 5, exercise 02), got {exercise!r}")
    found = sorted(Path(root).glob(f"solutions/part{m[1]}_*/ex{m[2]}_*.py"))
    if not found:
        raise ValueError(f"no exercise {exercise!r}: no solutions/part{m[1]}_*/ex{m[2]}_*.py")
    return found[0]


def hint(exercise: str, tier: int = 1) -> None:
    """Print hint ``tier`` (1 = a nudge, 2 = the method, 3 = close to the code) of ``exercise``."""
    tiers = HINTS.get(str(exercise))
    if tiers is None:
        raise ValueError(f"no hints for {exercise!r}; exercises with hints: {', '.join(sorted(HINTS))}")
    if not isinstance(tier, int) or isinstance(tier, bool) or tier < 1:
        raise ValueError(f"tier must be an int >= 1, got {tier!r}")
    k = min(tier, len(tiers))
    more = f" (next: hint({exercise!r}, {k + 1}))" if k < len(tiers) else ""
    print(f"Hint {k} of {len(tiers)} for {exercise}: {tiers[k - 1]}{more}")


_MD_REGION = re.compile(r"^#\s*<!--\s*BEGIN SOLUTION\s*-->\s*$(?P<body>.*?)^#\s*<!--\s*END SOLUTION\s*-->\s*$",
                        re.MULTILINE | re.DOTALL)


def model_answers(exercise: str, root: Path = _ROOT) -> list[str]:
    """The model answers (markdown) of ``exercise``'s written questions, in order."""
    text = solution_for(exercise, root).read_text(encoding="utf-8")
    answers = []
    for m in _MD_REGION.finditer(text):
        lines = [ln[2:] if ln.startswith("# ") else ln.lstrip("#") for ln in m["body"].strip("\n").splitlines()]
        answers.append("\n".join(lines).strip())
    return answers


def reveal(exercise: str, which: int | None = None) -> None:
    """Show the model answer(s) of ``exercise``'s written questions — after you have written yours.

    ``which`` picks one (1-based, in the order of the notebook); by default all are shown.
    """
    answers = model_answers(exercise)
    if not answers:
        print(f"{exercise} has no written question; its checker is the answer key.")
        return
    chosen = list(enumerate(answers, start=1))
    if which is not None:
        if not 1 <= which <= len(answers):
            raise ValueError(f"which must be between 1 and {len(answers)} for {exercise}, got {which!r}")
        chosen = [chosen[which - 1]]
    text = "\n\n".join(f"**Model answer {k} of {len(answers)} ({exercise}).**\n\n{a}" for k, a in chosen)
    try:
        from IPython import get_ipython
        from IPython.display import Markdown, display

        if get_ipython() is not None:
            display(Markdown(text))
            return
    except ImportError:  # pragma: no cover - IPython is part of the jupyter stack
        pass
    print(text)
