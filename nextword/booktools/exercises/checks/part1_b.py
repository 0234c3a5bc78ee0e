"""Checkers for Chapter 6 Exercises 4, 5, 6, 8, 9, 12 (helper P1b; re-exported by ``part1``).

Every expected value is computed with the library (``MultiHeadAttention.num_parameters``,
``sinusoidal_encoding``, ``apply_rope``, array sizes measured from ``rnn_states`` and attention
outputs, ``nextword.chapter6.probing`` and ``nextword.torch.probes.ablation``) or is a property; no checker holds a copy
of a solution.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping

import numpy as np

from nextword.booktools.display import produced
from ._common import ExerciseCheckError, Report, as_array, call_student, check_close, check_int, check_shape, check_true, describe, fail, passed  # noqa: F401

__all__ = ["check_ex_p1_04", "check_ex_p1_05", "check_ex_p1_06", "check_ex_p1_08", "check_ex_p1_09",
           "check_ex_p1_12"]


_call = call_student  # shared: a stub, a non-function or a crash becomes a clear failure


_int = check_int


# ---- Exercise 4 -------------------------------------------------------------------------------
def check_ex_p1_04(mha_parameter_count: Callable) -> bool:
    """Exercise 4: ``mha_parameter_count(d_model, n_heads, n_layers) -> int`` (no biases)."""
    from nextword.attention import MultiHeadAttention

    r = Report("Exercise 1.04")
    with r.check("parameter counts of 1 to 12 layers of MultiHeadAttention (no biases)"):
        for d, h, L in ((32, 1, 5), (32, 32, 1), (48, 6, 3), (64, 4, 2), (512, 8, 12)):
            got = _int(f"mha_parameter_count({d}, {h}, {L})",
                       _call(mha_parameter_count, f"mha_parameter_count({d}, {h}, {L})", d, h, L))
            expected = MultiHeadAttention(d, h, rng=np.random.default_rng(0)).num_parameters() * L
            if got == expected:
                continue
            msg = f"mha_parameter_count({d}, {h}, {L}): got {got}, expected {expected}"
            known = {3 * d * d * L: "counts the query/key/value projections only — the output projection W^O "
                                    "is part of the module too",
                     # full-width heads: h·3d² for W^Q, W^K, W^V, plus W^O as d × d or as (h·d) × d
                     (3 * h + 1) * d * d * L: "gives each head full-width d_model × d_model matrices; a head "
                                              "projects to d_k = d_model / n_heads columns",
                     4 * h * d * d * L: "gives each head full-width d_model × d_model matrices (and W^O rows for "
                                        "all of them); a head projects to d_k = d_model / n_heads columns",
                     expected // L if L > 1 else -1: "counts one layer only: multiply by n_layers",
                     expected + 4 * d * L: "adds biases; the exercise counts weight matrices only",
                     expected + 3 * d * L: "adds biases (of W^Q, W^K, W^V); the exercise counts weight matrices only",
                     (3 * d * d + h * (d // h) ** 2) * L if h > 1 else -1: "gives W^O one d_k × d_k block per "
                                                                           "head; W^O maps the concatenated heads "
                                                                           "(h·d_k = d_model) to d_model: d_model²",
                     3 * d * d * L + d * d if L > 1 else -1: "counts W^O once: every layer has its own output "
                                                             "projection, so it is multiplied by n_layers too"}
            if got in known:
                msg += f"\n    likely mistake: {known[got]}"
            fail(msg)
    return r.done("parameter counts match MultiHeadAttention.num_parameters() × layers for 5 configurations, "
                  "including Exercise 4's (and they do not depend on the number of heads)")


# ---- Exercise 5 -------------------------------------------------------------------------------
def _pe_variant(t: int, d: int, dims: list[int], exponent) -> np.ndarray:
    dim = np.asarray(dims)
    angle = t / 10000.0 ** (exponent(dim) / d)
    return np.where(dim % 2 == 0, np.sin(angle), np.cos(angle))


def check_ex_p1_05(pe_values: Callable) -> bool:
    """Exercise 5: ``pe_values(t, d_model, dims) -> (len(dims),)`` sinusoidal encodings PE(t, dim)."""
    from nextword.positions import sinusoidal_encoding

    r = Report("Exercise 1.05")
    with r.check("PE(t, dim) matches the sinusoidal encoding"):
        # the exercise's own four values first (the smallest case), then a full small vector, then odd orders
        for t, d, dims in ((10, 128, [0, 1, 2, 3]), (7, 16, list(range(16))), (123, 64, [62, 63, 5, 4])):
            got = _call(pe_values, f"pe_values({t}, {d}, {dims})", t, d, list(dims))
            expected = sinusoidal_encoding(t + 1, d)[t, dims]
            idx = np.asarray(dims)
            check_close(f"pe_values(t={t}, d_model={d}, dims={dims})", got, expected, rtol=1e-9, atol=1e-12,
                        mistakes={"the exponent uses dim, not 2⌊dim/2⌋: both dimensions of a pair share one frequency":
                                  _pe_variant(t, d, dims, lambda dim: dim),
                                  "the exponent uses 2·dim with dim the dimension: in PE(t, 2m) the m counts "
                                  "pairs, so dimension dim has exponent 2⌊dim/2⌋ / d_model":
                                  _pe_variant(t, d, dims, lambda dim: 2 * dim),
                                  "t · 10000^(2m/d_model): the wavelengths grow with m, so the angle is "
                                  "t / 10000^(2m/d_model)":
                                  _pe_variant(t, d, dims, lambda dim: -2 * (dim // 2)),
                                  "the exponent is m/d_model with m the pair (dim // 2): the factor 2 is missing, "
                                  "PE(t, 2m) = sin(t / 10000^(2m/d_model))":
                                  _pe_variant(t, d, dims, lambda dim: dim // 2),
                                  "the pairs are counted from 1 ((dim + 1) // 2): dimensions 2m and 2m + 1 form "
                                  "pair m = dim // 2, counted from 0":
                                  _pe_variant(t, d, dims, lambda dim: 2 * ((dim + 1) // 2)),
                                  "sine and cosine swapped: even dimensions take the sine":
                                  np.where(idx % 2 == 0, np.cos(t / 10000.0 ** (2 * (idx // 2) / d)),
                                           np.sin(t / 10000.0 ** (2 * (idx // 2) / d))),
                                  "angles in degrees? the sinusoids take radians":
                                  np.where(
                                      idx % 2 == 0, np.sin(np.deg2rad(t / 10000.0 ** (2 * (idx // 2) / d))),
                                      np.cos(np.deg2rad(t / 10000.0 ** (2 * (idx // 2) / d))))})
    with r.check("each sine/cosine pair lies on the unit circle: PE(10,0)² + PE(10,1)² = 1"):
        vals = as_array("pe_values(10, 128, [0, 1])", _call(pe_values, "pe_values(10, 128, [0, 1])", 10, 128, [0, 1]))
        check_true(vals.shape == (2,), f"pe_values(10, 128, [0, 1]) should have shape (2,), got {vals.shape}")
        check_true(abs(vals[0] ** 2 + vals[1] ** 2 - 1) < 1e-12,
                   f"PE(10,0)² + PE(10,1)² should be 1, got {vals[0] ** 2 + vals[1] ** 2:.10g} "
                   f"(PE(10,0), PE(10,1) = {describe(vals)}): a pair must use one angle, sine and cosine")
    return r.done("PE(t, dim) matches sinusoidal_encoding (Exercise 5's four values and two other cases); "
                  "PE(10,0)² + PE(10,1)² = 1")


# ---- Exercise 6 -------------------------------------------------------------------------------
def _halves_as_pairs(x: np.ndarray) -> np.ndarray:
    """(x_0, x_h, x_1, x_(h+1), …), h = d/2: the half-split layout's pairs made consecutive."""
    h = x.shape[-1] // 2
    return np.stack([x[:h], x[h:]], axis=1).reshape(-1)


def _rope_score_with(q: np.ndarray, k: np.ndarray, i: int, j: int, theta: np.ndarray) -> float:
    """(R(iθ) q)·(R(jθ) k) over consecutive pairs with the frequencies ``theta`` (d/2,) (diagnosis only)."""
    def rotate(x, pos):
        c, s = np.cos(pos * theta), np.sin(pos * theta)
        out = np.empty_like(x)
        out[0::2], out[1::2] = x[0::2] * c - x[1::2] * s, x[0::2] * s + x[1::2] * c
        return out

    return float(rotate(q, i) @ rotate(k, j))


def check_ex_p1_06(rope_score: Callable) -> bool:
    """Exercise 6: ``rope_score(q, k, i, j) -> float``: the dot product of q rotated to position i and
    k rotated to position j (consecutive pairs, base 10000), and its dependence on i − j only."""
    from nextword.positions import apply_rope

    r = Report("Exercise 1.06")
    rng = np.random.default_rng(606)
    with r.check("rope_score matches apply_rope for d = 2, 8, 16"):
        for d in (2, 8, 16):
            q, k = rng.standard_normal(d), rng.standard_normal(d)
            for i, j in ((0, 0), (5, 2), (3, 9), (40, 17)):
                got = as_array(f"rope_score(q, k, {i}, {j})", _call(rope_score, f"rope_score(q, k, {i}, {j})",
                                                                     q.copy(), k.copy(), i, j))
                expected = float(apply_rope(q[None], positions=[i])[0] @ apply_rope(k[None], positions=[j])[0])
                check_close(f"rope_score(q, k, i={i}, j={j}) with d={d}, q={describe(q, precision=3)}, "
                            f"k={describe(k, precision=3)}", got, expected, rtol=1e-9, atol=1e-10,
                            mistakes={"the plain q·k: rotate q to position i and k to position j first": q @ k,
                                      "i and j swapped (or the rotation's sign flipped): q goes to position i": float(
                                          apply_rope(q[None], positions=[j])[0] @ apply_rope(k[None], positions=[i])[0]),
                                      "pairs (x_m, x_(m+d/2)) (the 'rotate half' layout of some libraries): this "
                                      "exercise pairs consecutive coordinates (x_2m, x_2m+1)": float(
                                          apply_rope(_halves_as_pairs(q)[None], positions=[i])[0]
                                          @ apply_rope(_halves_as_pairs(k)[None], positions=[j])[0]),
                                      "θ_m = 10000^(−m/d): the exponent is 2m/d (m numbers the pairs, 2m is the "
                                      "pair's first coordinate)":
                                          _rope_score_with(q, k, i, j, 10000.0 ** (-np.arange(d // 2) / d)),
                                      "θ_m = 10000^(+2m/d): the frequencies decrease, θ_m = 10000^(−2m/d)":
                                          _rope_score_with(q, k, i, j, 10000.0 ** (np.arange(0, d, 2) / d)),
                                      "k rotated by −j (its rotation transposed): the score then depends on i + j; "
                                      "rotate k forward to position j, like q to i, and the product R(iθ)ᵀ R(jθ) = "
                                      "R((j−i)θ) does the rest":
                                          _rope_score_with(q, k, i, -j, 10000.0 ** (-np.arange(0, d, 2) / d))})
    with r.check("the score depends on i − j only (shifting both positions changes nothing)"):
        q, k = rng.standard_normal(8), rng.standard_normal(8)
        base = float(as_array("rope_score", _call(rope_score, "rope_score(q, k, 7, 3)", q, k, 7, 3)))
        for s in (1, 10, 100):
            shifted = float(as_array("rope_score", _call(rope_score, f"rope_score(q, k, {7 + s}, {3 + s})",
                                                         q, k, 7 + s, 3 + s)))
            check_true(abs(shifted - base) < 1e-9,
                       f"rope_score(q, k, {7 + s}, {3 + s}) = {shifted:.6g} differs from rope_score(q, k, 7, 3) = "
                       f"{base:.6g}: it should depend on i − j only")
    return r.done("rope_score matches apply_rope for d = 2, 8, 16 and is unchanged when i and j shift together")


# ---- Exercise 8 -------------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def _measured_rnn(T: int, d: int) -> int:
    from nextword.chapter6 import rnn_states

    rng = np.random.default_rng(0)
    return rnn_states(rng.standard_normal((T, d)), np.eye(d) * 0.5, np.eye(d) * 0.5)[-1].size


@functools.lru_cache(maxsize=None)
def _measured_transformer(T: int, d: int) -> int:
    from nextword.attention import MultiHeadAttention

    return MultiHeadAttention(d, 1, rng=np.random.default_rng(0))(np.ones((T, d))).size


def check_ex_p1_08(rnn_memory: Callable, transformer_memory: Callable, crossover_length: Callable) -> bool:
    """Exercise 8: numbers kept for the context — ``rnn_memory(T, d)``, ``transformer_memory(T, d)``
    (one layer) — and ``crossover_length(factor, d)``, the smallest T with transformer ≥ factor × RNN."""
    r = Report("Exercise 1.08")
    sizes = ((1, 4), (5, 16), (50, 8), (22, 512))
    counts = (("rnn_memory", rnn_memory, _measured_rnn, "the size of the state an RNN carries forward",
               ((lambda T, d: T * d, "an RNN keeps only its current state, not one state per position"),)),
              ("transformer_memory", transformer_memory, _measured_transformer,
               "the size of the per-position representations",
               ((lambda T, d: T * T, "that is the attention matrix; count the d-vectors kept per position"),
                (lambda T, d: 2 * T * d, "2Td counts a key and a value per position, the cache of question 3; "
                                         "here one layer keeps one d-vector (its output) per position"),
                (lambda T, d: (T - 1) * d, "(T − 1) d leaves one position out: all T positions, the current one "
                                           "included, keep their d-vector"))))
    for name, fn, measured, what, mistakes in counts:
        with r.check(f"{name}(T, d) = {what}"):
            for T, d in sizes:
                got = _int(f"{name}({T}, {d})", _call(fn, f"{name}({T}, {d})", T, d))
                if got != measured(T, d):
                    why = next((why for mistake, why in mistakes if got == mistake(T, d)), None)
                    likely = f"\n    likely mistake: {why}" if why else ""
                    fail(f"{name}({T}, {d}): got {got}, expected {measured(T, d)}{likely}")
    with r.check("crossover_length(factor, d) = the smallest T with transformer ≥ factor × RNN"):
        for factor, d in ((3, 16), (10, 64), (10, 512), (25, 8)):
            got = _int(f"crossover_length({factor}, {d})",
                       _call(crossover_length, f"crossover_length({factor}, {d})", factor, d))
            expected = next(T for T in range(1, 200) if _measured_transformer(T, d) >= factor * _measured_rnn(T, d))
            if got != expected:
                msg = f"crossover_length({factor}, {d}): got {got}, expected {expected}"
                try:  # the crossover of the student's own counts: a right loop over wrong counts is not a loop slip
                    own = next((T for T in range(1, 200)
                                if transformer_memory(T, d) >= factor * rnn_memory(T, d)), None)
                    own_counts_right = all(transformer_memory(T, d) == _measured_transformer(T, d)
                                           and rnn_memory(T, d) == _measured_rnn(T, d) for T in range(1, 200))
                except Exception:  # noqa: BLE001 — the probe only chooses the message
                    own, own_counts_right = None, True
                if got == own and not own_counts_right:
                    msg += ("\n    likely mistake: none in the loop — it finds the crossover of your rnn_memory and "
                            "transformer_memory, which are wrong (see the checks above)")
                elif got == expected + 1:
                    msg += "\n    likely mistake: the first T where the ratio reaches the factor (≥), not exceeds it (>)"
                fail(msg)
    return r.done("memory counts match the arrays an RNN and an attention layer keep; the crossover lengths "
                  "are the smallest such T (and do not depend on d_model)")


# ---- Exercise 9 -------------------------------------------------------------------------------
def check_ex_p1_09(subject_attention: Callable, ablation_effect: Callable, model, batch, subject_head: int) -> bool:
    """Exercise 9: the probe ``subject_attention(weights, subject_pos, marker_mask) -> (h,)``, the causal
    test ``ablation_effect(nll_fn, num_heads, group) -> (h,)`` for a 1-layer model, and the head the
    student identified in the trained 1-layer ``model`` (a TinyLM) on ``batch`` (an AgreementTask ProbeBatch)."""
    import torch

    from nextword.torch.probes.ablation import token_nll
    from nextword.attention.core import causal_mask, softmax
    from nextword.chapter6 import attention_to_keys, head_ablation_effects

    r = Report("Exercise 1.09")
    rng = np.random.default_rng(909)
    N, H, T = 6, 3, 8
    w = softmax(np.where(causal_mask(T), rng.normal(size=(N, H, T, T)) * 2, -np.inf))
    keys = rng.integers(0, 3, size=N)
    qm = rng.random((N, T)) < 0.4
    qm[:, -1] = True
    with r.check("subject_attention on random causal weights (N=6, h=3 heads, T=8)"):
        expected = attention_to_keys(w, keys, qm)
        rows = w[np.arange(N), :, keys, :]  # (N, H, T): the subject's row instead of its column
        check_close("subject_attention(weights, subject_pos, marker_mask) on random weights",
                    _call(subject_attention, "subject_attention", w, keys, qm), expected, rtol=1e-9, atol=1e-12,
                    mistakes={"averaged over all queries: keep only those with marker_mask": attention_to_keys(
                                  w, keys, np.ones_like(qm)),
                              "took the subject's row (what the subject attends to), not its column (what "
                              "attends to it)": (rows * qm[:, None, :]).sum(axis=(0, 2)) / qm.sum(),
                              "a mean of per-sentence means: the sentences have different numbers of markers, and "
                              "the mean runs over all marker queries (n, i) together":
                                  np.mean([attention_to_keys(w[n:n + 1], keys[n:n + 1], qm[n:n + 1])
                                           for n in range(N)], axis=0),
                              "the first sentence's subject position for every sentence: each sentence n has its "
                              "own subject, subject_pos[n]": attention_to_keys(w, np.full(N, keys[0]), qm),
                              "an off-by-one key: subject_pos is already the 0-based index of the subject's "
                              "column": attention_to_keys(w, (keys - 1) % T, qm),
                              "an off-by-one key (subject_pos + 1): subject_pos is already the 0-based index of the "
                              "subject's column": attention_to_keys(w, np.minimum(keys + 1, T - 1), qm)})
    planted = rng.random(H)
    group = rng.random((N, T)) < 0.5
    group[0, 0] = True
    base = rng.random((N, T))

    def nll_fn(mask):  # removing head h adds planted[h] on the group, 0.3 elsewhere
        off = np.zeros((1, H)) if mask is None else 1.0 - np.asarray(mask, dtype=float)
        return base + np.where(group, (off[0] * planted).sum(), 0.3 * off.sum())

    with r.check("ablation_effect recovers a planted per-head effect"):
        expected = head_ablation_effects(nll_fn, 1, H, {"g": group})["g"][0]
        check_close("ablation_effect(nll_fn, 3, group) with planted effects", _call(ablation_effect, "ablation_effect",
                    nll_fn, H, group), expected, rtol=1e-9, atol=1e-12,
                    mistakes={"the loss with the head removed, not its increase over the full model":
                              expected + base[group].mean(),
                              "the mean over all positions, not over group":
                                  group.mean() * planted + (1 - group.mean()) * 0.3,
                              "the mask is inverted (1 at the removed head, 0 elsewhere keeps that head alone): "
                              "head_mask has 0 for the head switched off and 1 for the others":
                                  np.array([(nll_fn(np.eye(H)[None, m]) - nll_fn(None))[group].mean()
                                            for m in range(H)]),
                              "a ratio of the losses (ablated / full): the effect is their difference":
                                  (expected + base[group].mean()) / base[group].mean()})
    with r.check("subject_head is the head that carries agreement in the trained model"):
        if getattr(getattr(model, "config", None), "num_layers", None) != 1:
            fail("model should be the trained 1-layer TinyLM of the exercise")
        head = _int("subject_head", subject_head)
        ids = np.asarray(batch.ids)
        with torch.no_grad():
            _, attn = model(torch.from_numpy(ids[:, :-1]), return_attention=True)
        marker = np.asarray(batch.marker_mask)[:, :-1]
        scores = attention_to_keys(attn[0].double().numpy(), np.asarray(batch.subject_pos), marker)
        effects = head_ablation_effects(lambda m: token_nll(model, ids, head_mask=m), 1, model.config.num_heads,
                                        {"agreement": marker})["agreement"][0]
        check_true(0 <= head < model.config.num_heads, f"subject_head = {head} is not a head of the model")
        # the causal test decides: a head can look at the subject without being used (another head may
        # carry the same information), but the head whose removal breaks agreement must look at it
        check_true(head == int(np.argmax(effects)),
                   f"subject_head = {head} is not the head whose removal costs most at the markers (Δloss per "
                   f"head {describe(effects, precision=2)}; attention weight on the subject per head "
                   f"{describe(scores, precision=2)}, heads by index): "
                   + ("likely mistake: subject_head is an index (head 1 is index 0): you gave the head's number"
                      if head == int(np.argmax(effects)) + 1 and head != int(np.argmax(scores)) else
                      "where a head looks is weaker evidence than what breaks when it is switched off"))
        check_true(effects[head] > 0.5 and scores[head] > 0.4,
                   f"the model has not learned the agreement: switching subject_head off costs "
                   f"{effects[head]:.2f} nat at the markers and it puts {scores[head]:.2f} of the marker queries' "
                   "weight on the subject (expected > 0.5 nat and > 0.4) — train longer?")
    if r.failures:
        return r.done("")
    return r.done(f"probe and causal test implemented correctly; head {produced(head + 1, 'd')} (index "
                  f"{produced(head, 'd')}) carries the agreement "
                  "(the largest loss at the markers when removed, and it looks at the subject)")


# ---- Exercise 12 ------------------------------------------------------------------------------
def _prefix_slips(model, ids: np.ndarray) -> dict[str, np.ndarray]:
    """The per-token losses (N, T-1) of the usual slips of a prefix-only evaluation (diagnosis only)."""
    import torch
    import torch.nn.functional as F

    x = torch.from_numpy(np.asarray(ids, dtype=np.int64))
    N, T = x.shape
    rows = torch.arange(N)
    out = {k: np.empty((N, T - 1)) for k in ("long", "first", "own", "batch", "drop0")}
    model.eval()
    with torch.no_grad():
        for t in range(T - 1):
            logits = model(x[:, :t + 1])  # (N, t+1, V)
            target = x[:, t + 1]
            out["long"][:, t] = F.cross_entropy(model(x[:, :t + 2])[:, -2], target, reduction="none").double().numpy()
            out["first"][:, t] = F.cross_entropy(logits[:, 0], target, reduction="none").double().numpy()
            out["own"][:, t] = F.cross_entropy(logits[:, -1], x[:, t], reduction="none").double().numpy()
            out["batch"][:, t] = -torch.log_softmax(logits[:, -1], dim=0)[rows, target].double().numpy()
            shorter = logits[:, -1] if t == 0 else model(x[:, 1:t + 1])[:, -1]
            out["drop0"][:, t] = F.cross_entropy(shorter, target, reduction="none").double().numpy()
    return {"the prefix includes the target: ids[:, :t+2] lets a model without the mask read ids[:, t+1]; run it "
            "on ids[:, :t+1] and take the last position's logits": out["long"],
            "the logits of the prefix's first position ([:, 0]): the prediction of ids[:, t+1] is the last "
            "position's ([:, -1])": out["first"],
            "the target is ids[:, t], the prefix's own last token: the prefix ids[:, :t+1] predicts ids[:, t+1]":
                out["own"],
            "the log-softmax runs over the batch axis (dim 0): normalise over the vocabulary (dim -1)": out["batch"],
            "the prefix starts at token 1: ids[:, :t+1] starts at token 0": out["drop0"]}


def check_ex_p1_12(honest_loss: Callable, results: Mapping[str, Mapping[str, float]], baseline=None,
                   test=None) -> bool:
    """Exercise 12: ``honest_loss(model, ids) -> (N, T-1)`` (prefix-only predictions) and the measured
    ``results[name] = {"teacher_forced": float, "honest": float}`` for ``"baseline"``, ``"no mask"``
    (retrained without the mask) and the test-time ablations ``"no positions"``, ``"single head"``,
    ``"no residual"``, mean losses in nats on ``test.ids``. With the trained ``baseline`` and the ``test`` batch
    the units are checked against the baseline's own loss (without them no scale can be told: bits would pass)."""
    from nextword.torch.probes.ablation import prefix_nll, token_nll
    from nextword.torch.models.lm import LMConfig, TinyLM

    r = Report("Exercise 1.12")
    ids = np.random.default_rng(1212).integers(0, 7, size=(4, 9))
    with r.check("honest_loss = per-token losses from prefixes only, for a causal and a non-causal model"):
        for causal in (True, False):
            m = TinyLM(LMConfig(vocab_size=7, d_model=8, num_heads=2, num_layers=2, max_len=12, causal=causal,
                                init_std=0.3), seed=0)
            mistakes = {} if causal else {
                "one teacher-forced pass over the whole sequence: run the model on each prefix ids[:, :t+1]":
                    token_nll(m, ids)}
            mistakes.update(_prefix_slips(m, ids))
            check_close(f"honest_loss of a {'causal' if causal else 'non-causal'} 2-layer model on ids of shape (4, 9)",
                        _call(honest_loss, "honest_loss", m, ids), prefix_nll(m, ids), rtol=1e-4, atol=1e-5,
                        mistakes=mistakes)
    names = ("baseline", "no mask", "no positions", "single head", "no residual")
    vals: dict[str, tuple[float, float]] = {}
    with r.check("results holds finite teacher-forced and honest losses for the five models"):
        if not isinstance(results, Mapping) or set(names) - set(results):
            fail(f"results should be a dict with the keys {names}, got "
                 f"{sorted(results) if isinstance(results, Mapping) else type(results).__name__}")
        for n in names:
            item = results[n]
            if not isinstance(item, Mapping) or {"teacher_forced", "honest"} - set(item):
                fail(f"results[{n!r}] should be a dict with 'teacher_forced' and 'honest'")
            tf, hon = float(item["teacher_forced"]), float(item["honest"])
            check_true(math.isfinite(tf) and math.isfinite(hon) and tf >= 0 and hon >= 0,
                       f"results[{n!r}] should hold finite, non-negative losses (nats), got {tf}, {hon}")
            vals[n] = (tf, hon)
    if len(vals) == len(names):
        with r.check("causal baseline: teacher-forced and honest losses coincide"):
            check_true(abs(vals["baseline"][0] - vals["baseline"][1]) < 1e-3,
                       f"for the causal baseline, teacher-forced {vals['baseline'][0]:.4f} and honest "
                       f"{vals['baseline'][1]:.4f} losses should coincide")
        with r.check("the losses are means per token, in nats: the causal baseline's is below ln|V|, a uniform "
                     "guess's"):
            from nextword.chapter6 import AgreementTask

            vocab = AgreementTask.make(np.random.default_rng(0)).vocab_size
            if baseline is not None and test is not None:
                reference = float(token_nll(baseline, np.asarray(test.ids)).mean())  # one pass; causal, so = honest
                got = vals["baseline"][0]
                if not abs(got - reference) <= 1e-3 * max(1.0, reference):
                    bits = abs(got - reference / math.log(2)) <= 1e-3 * max(1.0, reference)
                    positions = np.asarray(test.ids).shape[1] - 1
                    summed = abs(got - positions * reference) <= 1e-3 * positions * max(1.0, reference)
                    fail(f"results['baseline']['teacher_forced'] = {got:.4f}, but the baseline's mean loss per token "
                         f"on test.ids is {reference:.4f} nats\n    likely mistake: "
                         + ("log base 2 instead of e — the losses are in bits (nats / ln 2); report them in nats"
                            if bits else f"a sum over the {positions} positions: results holds the mean over all "
                            "positions (losses.mean())" if summed else
                            "measure every model on test.ids, with the mean over all positions"))
            check_true(vals["baseline"][1] < math.log(vocab),
                       f"the baseline's honest loss {vals['baseline'][1]:.3f} is above ln|V| = ln {vocab} = "
                       f"{math.log(vocab):.3f}, the loss of a uniform guess over the task's vocabulary\n    likely "
                       "mistake: " + ("a sum over positions: results holds the mean over all positions "
                                      "(losses.mean())" if vals["baseline"][1] > 3 * math.log(vocab) else
                                      "a mean loss per token in nats is expected — or is the model untrained?"))
        with r.check("no mask: the teacher-forced loss hides a much worse honest loss"):
            swapped = vals["no mask"][0] - vals["no mask"][1] > 1.0
            check_true(vals["no mask"][1] - vals["no mask"][0] > 1.0,
                       f"the model trained without the mask should look much better teacher-forced "
                       f"({vals['no mask'][0]:.3f}) than when it predicts from prefixes ({vals['no mask'][1]:.3f}) "
                       + ("\n    likely mistake: the two losses swapped — 'teacher_forced' is the one-pass loss "
                          "(token_nll), 'honest' the prefix-only one (honest_loss)" if swapped else
                          "— was it retrained with causal=False?"))
        with r.check("the test-time ablations are made from the causal baseline: teacher-forced = honest"):
            for n in ("no positions", "single head", "no residual"):
                check_true(abs(vals[n][0] - vals[n][1]) < 1e-3,
                           f"removing '{n}': teacher-forced {vals[n][0]:.4f} and honest {vals[n][1]:.4f} losses "
                           "differ, so the ablated model sees the future\n    likely mistake: the component was "
                           "removed from the model retrained without the mask; remove it from the causal baseline "
                           "(with_config(baseline, ...))")
        with r.check("every test-time ablation raises the honest loss"):
            for n in ("no positions", "single head", "no residual"):
                check_true(vals[n][1] > vals["baseline"][1] + 0.05,
                           f"removing '{n}' from the trained model should raise its honest loss "
                           f"({vals[n][1]:.3f}) above the baseline's ({vals['baseline'][1]:.3f})")
    return r.done("honest_loss matches prefix-only evaluation; the results show the leak without the mask and "
                  "a loss increase for every test-time ablation")
