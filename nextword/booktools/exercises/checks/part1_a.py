"""Checkers for Chapter 6 Exercises 1, 2, 3, 7, 10, 11 (helper P1a; re-exported by ``part1``).

Each checker recomputes the expected result with the library (attention, the running-example source,
the numpy export of a torch model, torch's FLOP counter) or checks properties; none holds a copy of
the solution.
"""
from __future__ import annotations

import numpy as np

from ._common import check_close, check_shape, check_true, fail, passed

__all__ = ["check_ex_p1_01", "check_ex_p1_02", "check_ex_p1_03", "check_ex_p1_07", "check_ex_p1_10",
           "check_ex_p1_11"]

_Q3 = np.array([1.0, 0.0, -1.0, 0.0])
_K3 = np.array([[1.0, 1, 0, 0], [0, 1, 1, 0], [-1, 0, 1, 1]])


def _call(fn, *args, what: str):
    try:
        return fn(*args)
    except NotImplementedError:
        fail(f"{what} still raises NotImplementedError — fill in the stub first")


def check_ex_p1_01(attention_steps) -> bool:
    """Exercise 1: ``attention_steps(q, K) -> (scaled_scores, exponentials, weights)``, each ``(n,)``.

    Checked on the exercise's numbers and on random inputs against ``nextword.attention``.
    """
    from nextword.attention.core import scaled_dot_product_attention

    rng = np.random.default_rng(11)
    cases = [(_Q3, _K3)] + [(rng.standard_normal(d), rng.standard_normal((n, d))) for d, n in ((4, 5), (16, 7))]
    for q, K in cases:
        out = _call(attention_steps, q.copy(), K.copy(), what="attention_steps")
        if not isinstance(out, tuple) or len(out) != 3:
            fail("attention_steps must return a tuple (scaled_scores, exponentials, weights)")
        scores, exps, weights = out
        n, d = K.shape
        _, w_ref = scaled_dot_product_attention(q[None], K, np.eye(n), return_weights=True)
        s_ref = K @ q / np.sqrt(d)
        check_close("scaled_scores", scores, s_ref, rtol=1e-9, atol=1e-12)
        exps = check_shape("exponentials", exps, (n,))
        check_true(np.all(exps > 0), "exponentials must be positive")
        check_close("exponentials (up to a common factor)", exps / exps.sum(), w_ref[0], rtol=1e-9, atol=1e-12)
        check_close("weights", weights, w_ref[0], rtol=1e-9, atol=1e-12)
    return passed("scaled scores, exponentials and weights match scaled dot-product attention "
                  "(Exercise 1's numbers and two random cases)")


def check_ex_p1_02(attention_output, in_convex_hull) -> bool:
    """Exercise 2: ``attention_output(q, K, V) -> (weights, output)`` and ``in_convex_hull(x, V) -> bool``."""
    from nextword.attention.core import scaled_dot_product_attention

    rng = np.random.default_rng(12)
    for n, d, dv in ((3, 4, 2), (6, 5, 3), (10, 8, 4)):
        q, K, V = rng.standard_normal(d) * 3, rng.standard_normal((n, d)), rng.standard_normal((n, dv))
        res = _call(attention_output, q, K, V, what="attention_output")
        if not isinstance(res, tuple) or len(res) != 2:
            fail("attention_output must return (weights, output)")
        w, out = res
        ref_out, ref_w = scaled_dot_product_attention(q[None], K, V, return_weights=True)
        w = check_close("weights", w, ref_w[0], rtol=1e-9, atol=1e-12)
        check_true(np.all(w >= 0) and abs(w.sum() - 1) < 1e-12, "weights must be non-negative and sum to 1")
        check_close("output", out, ref_out[0], rtol=1e-9, atol=1e-12)
        check_true(bool(_call(in_convex_hull, np.asarray(out), V, what="in_convex_hull")),
                   "in_convex_hull says the attention output is outside the hull of the values")
        outside = V.mean(0) + 10 * (V.max(0) - V.min(0) + 1)  # beyond every value in every coordinate
        check_true(not bool(in_convex_hull(outside, V)),
                   "in_convex_hull accepts a point that lies outside the hull of the values")
        corner = V[0]
        check_true(bool(in_convex_hull(corner, V)), "in_convex_hull rejects a value vector itself (a vertex)")
    return passed("weights form a distribution, output = Σ α v matches the library, and the hull test "
                  "accepts outputs and vertices and rejects outside points")


def check_ex_p1_03(generation_style_loss, model, windows, entropy_rate: float) -> bool:
    """Exercise 3: the student's ``generation_style_loss(model, windows)`` and a model trained without the mask.

    Verifies the function against an independent computation (the numpy export of the model, one
    prefix at a time) and that the model shows the leakage: teacher-forced loss below the entropy
    rate, generation-style loss well above it.
    """
    import torch

    from nextword.attention.core import log_softmax
    from nextword.torch.lm import TinyLM, evaluate_loss, to_numpy_decoder

    if not isinstance(model, TinyLM):
        fail(f"model must be a nextword.torch.lm.TinyLM, got {type(model).__name__}")
    check_true(not model.config.causal, "the model for this experiment must be trained WITHOUT the mask (causal=False)")
    windows = np.asarray(windows)
    check_true(windows.ndim == 2 and windows.shape[1] >= 4, "windows must be a (num_windows, L) array of token ids")
    sub = windows[:8]
    got = _call(generation_style_loss, model, sub, what="generation_style_loss")
    lm = to_numpy_decoder(model)
    nll = [-log_softmax(lm.logits(row[:t])[-1])[row[t]] for row in sub for t in range(1, sub.shape[1])]
    with torch.no_grad():
        check_close("generation_style_loss on 8 windows", float(got), float(np.mean(nll)), rtol=1e-4, atol=1e-4)
    teacher = evaluate_loss(model, windows)
    gen = float(generation_style_loss(model, windows))
    check_true(teacher < entropy_rate,
               f"teacher-forced loss {teacher:.3f} is not below the entropy rate {entropy_rate:.3f}: "
               "train longer, or check that the model has no mask")
    check_true(gen > entropy_rate + 0.5,
               f"generation-style loss {gen:.3f} is not clearly above the entropy rate {entropy_rate:.3f}")
    return passed(f"generation_style_loss is right; leakage shown: teacher-forced {teacher:.2f} < H = "
                  f"{entropy_rate:.2f} < generation-style {gen:.2f} nats")


_ROLES = {2: "semantic", 16: "discourse", 19: "semantic", 21: "syntactic"}


def check_ex_p1_07(mutual_information, pairs) -> bool:
    """Exercise 7: a plug-in estimator ``mutual_information(ids, position) -> nats`` and three pairs
    ``(context_word, next_word, kind)`` for the controlled running example
    (:class:`nextword.chapter6.running_example.RunningExampleSource`)."""
    from nextword.chapter6 import RunningExampleSource

    src = RunningExampleSource()
    ids = src.sample(30000, np.random.default_rng(17))
    for pos in (2, 3, 16, 19, 21, 10):
        est = _call(mutual_information, ids, pos, what="mutual_information")
        check_close(f"I(word {pos}; blank) estimated from 30000 sentences", float(est), src.mutual_information(pos),
                    rtol=0.0, atol=0.01)
    pairs = list(pairs)
    check_true(len(pairs) == 3, f"give exactly three pairs, got {len(pairs)}")
    kinds = set()
    for item in pairs:
        if not (isinstance(item, tuple) and len(item) == 3):
            fail("each pair must be a tuple (context_word, next_word, kind)")
        ctx, nxt, kind = item
        check_true(kind in ("syntactic", "semantic", "discourse"),
                   f"kind must be 'syntactic', 'semantic' or 'discourse', got {kind!r}")
        slots = [p for p, alts in src.slots.items() if ctx in alts]
        check_true(bool(slots), f"{ctx!r} is not one of the words that vary in the controlled sentence")
        pos = slots[0]
        check_true(src.mutual_information(pos) > 1e-9,
                   f"{ctx!r} (word {pos}) carries no information about the blank: attention to it is not justified")
        possible = {s[-1] for s, _ in src.joint() if s[pos - 1] == ctx}
        check_true(nxt in possible, f"{nxt!r} never follows a sentence with {ctx!r} at word {pos}")
        check_true(_ROLES[pos] == kind, f"the dependency between {ctx!r} and the blank is not {kind}")
        kinds.add(kind)
    check_true(len(kinds) == 3, "use one pair of each kind (syntactic, semantic, discourse)")
    return passed("the plug-in mutual information matches the exact values, and each pair links an "
                  "informative word to a possible next word with the right kind of dependency")


def check_ex_p1_10(variance_expression, simulate_variance) -> bool:
    """Exercise 10: ``variance_expression(d)`` (a sympy expression in the positive symbol ``sigma``)
    and ``simulate_variance(d, sigma, n, rng)`` (a Monte Carlo estimate of Var(q·k))."""
    import sympy as sp

    sigma = sp.symbols("sigma", positive=True)
    for d in (1, 2, 3):  # sympy.stats needs ~6 s for d = 3 and ~30 s for d = 5
        expr = _call(variance_expression, d, what="variance_expression")
        check_true(isinstance(expr, sp.Expr), f"variance_expression({d}) must return a sympy expression")
        bad = expr.free_symbols - {sigma}
        check_true(not bad, f"variance_expression({d}) may only contain the symbol sigma (positive=True), got {bad}")
        check_true(sp.simplify(expr - d * sigma ** 4) == 0,
                   f"variance_expression({d}) is not the variance of a sum of {d} products of independent "
                   "zero-mean entries with variance sigma^2")
    rng = np.random.default_rng(10)
    ds = [4, 32, 256]
    ests = []
    for d in ds:
        n = 20000
        est = float(_call(simulate_variance, d, 0.7, n, rng, what="simulate_variance"))
        exact = d * 0.7 ** 4
        se = exact * np.sqrt(2.0 / n) * 2  # generous: Var of a sample variance of a heavy-ish tailed product
        check_true(abs(est - exact) < 5 * se, f"simulate_variance({d}, 0.7) = {est:.3f} is too far from the truth")
        ests.append(est)
    slope = np.polyfit(np.log(ds), np.log(ests), 1)[0]
    check_true(abs(slope - 1) < 0.05, f"the simulated variance should grow linearly in d (log-log slope {slope:.3f})")
    return passed("Var(q·k) = d σ⁴ symbolically for d = 1, 2, 3, and the simulation agrees and grows linearly in d")


def _measured_flops(kind: str, T: int, d: int) -> tuple[int, int]:
    """Forward and backward matmul FLOPs of one Elman RNN layer or one single-head attention layer."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    g = torch.Generator().manual_seed(0)
    X = torch.randn(T, d, generator=g, dtype=torch.float64, requires_grad=True)
    Ws = [torch.randn(d, d, generator=g, dtype=torch.float64, requires_grad=True) for _ in range(4 if kind == "attention" else 2)]
    with FlopCounterMode(display=False) as fwd:
        if kind == "rnn":
            W_x, W_h = Ws
            U = X @ W_x  # (T, d) input part, all steps at once
            h = torch.tanh(U[0])
            outs = [h]
            for t in range(1, T):  # the sequential part
                h = torch.tanh(U[t] + h @ W_h)
                outs.append(h)
            out = torch.stack(outs)
        else:
            W_q, W_k, W_v, W_o = Ws
            Q, K, V = X @ W_q, X @ W_k, X @ W_v
            A = torch.softmax((Q @ K.T / d ** 0.5).masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf")), -1)
            out = (A @ V) @ W_o
    with FlopCounterMode(display=False) as bwd:
        out.sum().backward()
    return fwd.get_total_flops(), bwd.get_total_flops()


def check_ex_p1_11(flop_formulas) -> bool:
    """Exercise 11: ``flop_formulas(T, d) -> {"rnn": (fwd, bwd, steps), "attention": (fwd, bwd, steps)}``.

    ``fwd``/``bwd``: matmul FLOPs (2mnp per (m×n)(n×p) product) of one layer's forward and backward pass
    (the RNN's first step starts from h = 0, so it has no h W_h product); ``steps``: the number of
    operations that must run one after another. Compared with torch's FLOP counter and with the
    longest path in the dependency graph (``nextword.chapter6.recurrent``).
    """
    from nextword.chapter6 import attention_graph, rnn_graph, sequential_depth

    for T, d in ((5, 4), (12, 8), (7, 16)):
        got = _call(flop_formulas, T, d, what="flop_formulas")
        if not isinstance(got, dict) or set(got) != {"rnn", "attention"}:
            fail('flop_formulas must return a dict with keys "rnn" and "attention"')
        for kind, graph in (("rnn", rnn_graph(T)), ("attention", attention_graph(T))):
            fwd, bwd = _measured_flops(kind, T, d)
            f, b, steps = got[kind]
            check_true(int(f) == fwd, f"{kind} forward FLOPs for T={T}, d={d} do not match the measured count")
            check_true(abs(b - bwd) <= 0.05 * bwd, f"{kind} backward FLOPs for T={T}, d={d} are off by more than 5%")
            check_true(int(steps) == sequential_depth(graph),
                       f"{kind}: the number of sequential steps for T={T} is not the longest dependency chain")
    return passed("forward FLOPs exact, backward within 5% of torch's FLOP counter, sequential steps = "
                  "longest dependency chain, for three (T, d)")
