"""Checkers for Chapter 6 Exercises 4, 5, 6, 8, 9, 12 (helper P1b; re-exported by ``part1``).

Every expected value is computed with the library (``MultiHeadAttention.num_parameters``,
``sinusoidal_encoding``, ``apply_rope``, array sizes measured from ``rnn_states`` and attention
outputs, ``nextword.probing`` and ``nextword.ablation``) or is a property; no checker holds a copy
of a solution.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping

import numpy as np

from ._common import ExerciseCheckError, as_array, check_close, check_shape, check_true, fail, passed, call_student  # noqa: F401

__all__ = ["check_ex_p1_04", "check_ex_p1_05", "check_ex_p1_06", "check_ex_p1_08", "check_ex_p1_09",
           "check_ex_p1_12"]


_call = call_student  # shared: a stub, a non-function or a crash becomes a clear failure


def _int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        fail(f"{name} should be an int, got {type(value).__name__} {value!r}")
    return int(value)


# ---- Exercise 4 -------------------------------------------------------------------------------
def check_ex_p1_04(mha_parameter_count: Callable) -> bool:
    """Exercise 4: ``mha_parameter_count(d_model, n_heads, n_layers) -> int`` (no biases)."""
    from nextword.attention import MultiHeadAttention

    for d, h, L in ((512, 8, 12), (64, 4, 2), (48, 6, 3), (32, 1, 5), (32, 32, 1)):
        got = _int(f"mha_parameter_count({d}, {h}, {L})", _call(mha_parameter_count, "mha_parameter_count", d, h, L))
        expected = MultiHeadAttention(d, h, rng=np.random.default_rng(0)).num_parameters() * L
        if got != expected:
            if got == 3 * d * d * L:
                fail(f"mha_parameter_count({d}, {h}, {L}) counts the query/key/value projections only — "
                     "the output projection is part of the module too")
            if got == h * expected:
                fail(f"mha_parameter_count({d}, {h}, {L}) gives each head full-width matrices; a head "
                     "projects to d_head = d_model / n_heads columns")
            fail(f"mha_parameter_count({d}, {h}, {L}) = {got} does not match the parameters of "
                 f"{L} MultiHeadAttention layer(s)")
    return passed("parameter counts match MultiHeadAttention.num_parameters() × layers for 5 configurations, "
                  "including Exercise 4's (and they do not depend on the number of heads)")


# ---- Exercise 5 -------------------------------------------------------------------------------
def check_ex_p1_05(pe_values: Callable) -> bool:
    """Exercise 5: ``pe_values(t, d_model, dims) -> (len(dims),)`` sinusoidal encodings PE(t, i)."""
    from nextword.positions import sinusoidal_encoding

    for t, d, dims in ((10, 128, [0, 1, 2, 3]), (7, 16, list(range(16))), (123, 64, [62, 63, 5, 4])):
        got = _call(pe_values, "pe_values", t, d, list(dims))
        expected = sinusoidal_encoding(t + 1, d)[t, dims]
        check_close(f"pe_values({t}, {d}, {dims})", got, expected, rtol=1e-9, atol=1e-12)
    vals = as_array("pe_values(10, 128, [0, 1])", _call(pe_values, "pe_values", 10, 128, [0, 1]))
    check_true(abs(vals[0] ** 2 + vals[1] ** 2 - 1) < 1e-12, "PE(10,0)² + PE(10,1)² should be 1")
    return passed("PE(t, i) matches sinusoidal_encoding (Exercise 5's four values and two other cases); "
                  "PE(10,0)² + PE(10,1)² = 1")


# ---- Exercise 6 -------------------------------------------------------------------------------
def check_ex_p1_06(rope_score: Callable) -> bool:
    """Exercise 6: ``rope_score(q, k, i, j) -> float``: the dot product of q rotated to position i and
    k rotated to position j (consecutive pairs, base 10000), and its dependence on i − j only."""
    from nextword.positions import apply_rope

    rng = np.random.default_rng(606)
    for d in (2, 8, 16):
        q, k = rng.standard_normal(d), rng.standard_normal(d)
        for i, j in ((0, 0), (5, 2), (3, 9), (40, 17)):
            got = as_array(f"rope_score(q, k, {i}, {j})", _call(rope_score, "rope_score", q.copy(), k.copy(), i, j))
            expected = float(apply_rope(q[None], positions=[i])[0] @ apply_rope(k[None], positions=[j])[0])
            check_close(f"rope_score(q, k, {i}, {j}) with d={d}", got, expected, rtol=1e-9, atol=1e-10)
    q, k = rng.standard_normal(8), rng.standard_normal(8)
    base = float(_call(rope_score, "rope_score", q, k, 7, 3))
    for s in (1, 10, 100):
        check_true(abs(float(_call(rope_score, "rope_score", q, k, 7 + s, 3 + s)) - base) < 1e-9,
                   f"shifting both positions by {s} changed the score: it should depend on i − j only")
    return passed("rope_score matches apply_rope for d = 2, 8, 16 and is unchanged when i and j shift together")


# ---- Exercise 8 -------------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def _measured_rnn(T: int, d: int) -> int:
    from nextword.recurrent import rnn_states

    rng = np.random.default_rng(0)
    return rnn_states(rng.standard_normal((T, d)), np.eye(d) * 0.5, np.eye(d) * 0.5)[-1].size


@functools.lru_cache(maxsize=None)
def _measured_transformer(T: int, d: int) -> int:
    from nextword.attention import MultiHeadAttention

    return MultiHeadAttention(d, 1, rng=np.random.default_rng(0))(np.ones((T, d))).size


def check_ex_p1_08(rnn_memory: Callable, transformer_memory: Callable, crossover_length: Callable) -> bool:
    """Exercise 8: numbers kept for the context — ``rnn_memory(T, d)``, ``transformer_memory(T, d)``
    (one layer) — and ``crossover_length(factor, d)``, the smallest T with transformer ≥ factor × RNN."""
    for T, d in ((1, 4), (5, 16), (50, 8), (22, 512)):
        got_r = _int(f"rnn_memory({T}, {d})", _call(rnn_memory, "rnn_memory", T, d))
        check_true(got_r == _measured_rnn(T, d),
                   f"rnn_memory({T}, {d}) = {got_r} is not the size of the state an RNN carries forward")
        got_t = _int(f"transformer_memory({T}, {d})", _call(transformer_memory, "transformer_memory", T, d))
        check_true(got_t == _measured_transformer(T, d),
                   f"transformer_memory({T}, {d}) = {got_t} is not the size of the per-position representations")
    for factor, d in ((10, 512), (10, 64), (3, 16), (25, 8)):
        got = _int(f"crossover_length({factor}, {d})", _call(crossover_length, "crossover_length", factor, d))
        expected = next(T for T in range(1, 200) if _measured_transformer(T, d) >= factor * _measured_rnn(T, d))
        check_true(got == expected, f"crossover_length({factor}, {d}) = {got} is not the smallest T at which "
                                    f"the transformer keeps {factor}× the RNN's numbers")
    return passed("memory counts match the arrays an RNN and an attention layer keep; the crossover lengths "
                  "are the smallest such T (and do not depend on d_model)")


# ---- Exercise 9 -------------------------------------------------------------------------------
def check_ex_p1_09(subject_attention: Callable, ablation_effect: Callable, model, batch, subject_head: int) -> bool:
    """Exercise 9: the probe ``subject_attention(weights, subject_pos, marker_mask) -> (H,)``, the causal
    test ``ablation_effect(nll_fn, num_heads, group) -> (H,)`` for a 1-layer model, and the head the
    student identified in the trained 1-layer ``model`` (a TinyLM) on ``batch`` (an AgreementTask ProbeBatch)."""
    import torch

    from nextword.ablation import token_nll
    from nextword.attention import causal_mask, softmax
    from nextword.probing import attention_to_keys, head_ablation_effects

    rng = np.random.default_rng(909)
    N, H, T = 6, 3, 8
    w = softmax(np.where(causal_mask(T), rng.normal(size=(N, H, T, T)) * 2, -np.inf))
    keys = rng.integers(0, 3, size=N)
    qm = rng.random((N, T)) < 0.4
    qm[:, -1] = True
    check_close("subject_attention on random weights", _call(subject_attention, "subject_attention", w, keys, qm),
                attention_to_keys(w, keys, qm), rtol=1e-9, atol=1e-12)
    planted = rng.random(H)
    group = rng.random((N, T)) < 0.5
    group[0, 0] = True
    base = rng.random((N, T))

    def nll_fn(mask):  # removing head h adds planted[h] on the group, 0.3 elsewhere
        off = np.zeros((1, H)) if mask is None else 1.0 - np.asarray(mask, dtype=float)
        return base + np.where(group, (off[0] * planted).sum(), 0.3 * off.sum())

    expected = head_ablation_effects(nll_fn, 1, H, {"g": group})["g"][0]
    check_close("ablation_effect with a planted effect", _call(ablation_effect, "ablation_effect", nll_fn, H, group),
                expected, rtol=1e-9, atol=1e-12)
    if getattr(getattr(model, "config", None), "num_layers", None) != 1:
        fail("model should be the trained 1-layer TinyLM of the exercise")
    head = _int("subject_head", subject_head)
    ids = np.asarray(batch.ids)
    with torch.no_grad():
        _, attn = model(torch.from_numpy(ids[:, :-1]), return_attention=True)
    marker = np.asarray(batch.marker_mask)[:, :-1]
    scores = attention_to_keys(attn[0].double().numpy(), np.asarray(batch.subject_pos), marker)
    check_true(0 <= head < model.config.num_heads and head == int(np.argmax(scores)),
               "subject_head is not the head whose marker queries put the most weight on the subject")
    effects = head_ablation_effects(lambda m: token_nll(model, ids, head_mask=m), 1, model.config.num_heads,
                                    {"agreement": marker})["agreement"][0]
    check_true(effects[head] > 0.5 and head == int(np.argmax(effects)),
               "switching subject_head off should hurt the agreement predictions most — train longer?")
    return passed(f"probe and causal test implemented correctly; head {head} carries the agreement "
                  "(the most attention to the subject, and the largest loss at the markers when removed)")


# ---- Exercise 12 ------------------------------------------------------------------------------
def check_ex_p1_12(honest_loss: Callable, results: Mapping[str, Mapping[str, float]]) -> bool:
    """Exercise 12: ``honest_loss(model, ids) -> (N, L-1)`` (prefix-only predictions) and the measured
    ``results[name] = {"teacher_forced": float, "honest": float}`` for ``"baseline"``, ``"no mask"``
    (retrained without the mask) and the test-time ablations ``"no positions"``, ``"single head"``,
    ``"no residual"``."""
    from nextword.ablation import prefix_nll
    from nextword.torch.lm import LMConfig, TinyLM

    ids = np.random.default_rng(1212).integers(0, 7, size=(4, 9))
    for causal in (True, False):
        m = TinyLM(LMConfig(vocab_size=7, d_model=8, num_heads=2, num_layers=2, max_len=12, causal=causal,
                            init_std=0.3), seed=0)
        check_close(f"honest_loss of a {'causal' if causal else 'non-causal'} 2-layer model",
                    _call(honest_loss, "honest_loss", m, ids), prefix_nll(m, ids), rtol=1e-4, atol=1e-5)
    names = ("baseline", "no mask", "no positions", "single head", "no residual")
    if not isinstance(results, Mapping) or set(names) - set(results):
        fail(f"results should be a dict with the keys {names}")
    vals = {}
    for n in names:
        r = results[n]
        if not isinstance(r, Mapping) or {"teacher_forced", "honest"} - set(r):
            fail(f"results[{n!r}] should be a dict with 'teacher_forced' and 'honest'")
        tf, hon = float(r["teacher_forced"]), float(r["honest"])
        check_true(math.isfinite(tf) and math.isfinite(hon) and tf >= 0 and hon >= 0,
                   f"results[{n!r}] should hold finite, non-negative losses (nats)")
        vals[n] = (tf, hon)
    check_true(abs(vals["baseline"][0] - vals["baseline"][1]) < 1e-3,
               "for the causal baseline, teacher-forced and honest losses should coincide")
    check_true(vals["no mask"][1] - vals["no mask"][0] > 1.0,
               "the model trained without the mask should look much better teacher-forced than when it "
               "predicts from prefixes — was it retrained with causal=False?")
    for n in ("no positions", "single head", "no residual"):
        check_true(vals[n][1] > vals["baseline"][1] + 0.05,
                   f"removing '{n}' from the trained model should raise its honest loss above the baseline's")
    return passed("honest_loss matches prefix-only evaluation; the results show the leak without the mask and "
                  "a loss increase for every test-time ablation")
