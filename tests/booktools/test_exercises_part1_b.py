"""Checkers of Chapter 6 Exercises 4, 5, 6, 8, 9, 12: a right answer passes, wrong ones raise ExerciseCheckError."""

from __future__ import annotations

import numpy as np
import pytest

from nextword.booktools.exercises.checks import (
    ExerciseCheckError,
    check_ex_p1_04,
    check_ex_p1_05,
    check_ex_p1_06,
    check_ex_p1_08,
    check_ex_p1_09,
    check_ex_p1_12,
)
from nextword.positions import apply_rope
from nextword.chapter6 import attention_to_keys, head_ablation_effects


def _stub(*args):
    raise NotImplementedError("stub")


def test_p1_04():
    assert check_ex_p1_04(lambda d, h, L: 4 * d * d * L)
    with pytest.raises(ExerciseCheckError, match="output projection"):
        check_ex_p1_04(lambda d, h, L: 3 * d * d * L)
    with pytest.raises(ExerciseCheckError, match="full-width"):
        check_ex_p1_04(lambda d, h, L: 4 * h * d * d * L)
    # full-width W^Q, W^K, W^V per head with one d × d W^O: the commonest form of the mistake (readex2)
    with pytest.raises(ExerciseCheckError, match="full-width"):
        check_ex_p1_04(lambda d, h, L: (3 * h + 1) * d * d * L)
    with pytest.raises(ExerciseCheckError, match="NotImplementedError"):
        check_ex_p1_04(_stub)


def test_p1_04_a_sympy_integer_passes_and_a_float_or_one_w_o_is_named():
    # ex10: the exercise works in sympy, yet a sympy Integer count was refused as "not an int"; a float from
    # d_model / n_heads got no hint, and W^O counted once for all layers got no diagnosis
    import sympy as sp

    assert check_ex_p1_04(lambda d, h, L: sp.Integer(4 * d * d * L))
    with pytest.raises(ExerciseCheckError, match="use `//`"):
        check_ex_p1_04(lambda d, h, L: L * (3 * h * d * (d / h) + d * d))
    with pytest.raises(ExerciseCheckError, match="counts W\\^O once"):
        check_ex_p1_04(lambda d, h, L: 3 * d * d * L + d * d)
    with pytest.raises(ExerciseCheckError, match="one d_k × d_k block per head"):
        check_ex_p1_04(lambda d, h, L: (3 * d * d + h * (d // h) ** 2) * L)


def _pe(t, d, dims, pair=True):
    dims = np.asarray(dims)
    expo = 2 * (dims // 2) if pair else dims
    ang = t / 10000.0 ** (expo / d)
    return np.where(dims % 2 == 0, np.sin(ang), np.cos(ang))


def test_p1_05():
    assert check_ex_p1_05(lambda t, d, dims: _pe(t, d, dims))
    with pytest.raises(ExerciseCheckError, match="pe_values"):  # exponent dim/d instead of 2m/d per pair
        check_ex_p1_05(lambda t, d, dims: _pe(t, d, dims, pair=False))


def test_p1_05_names_the_inverted_frequency():
    """readex2: t · 10000^(2m/d) for t / 10000^(2m/d) failed with no diagnosis."""

    def inverted(t, d, dims):
        dims = np.asarray(dims)
        ang = t * 10000.0 ** (2 * (dims // 2) / d)
        return np.where(dims % 2 == 0, np.sin(ang), np.cos(ang))

    with pytest.raises(ExerciseCheckError, match="the angle is t / 10000"):
        check_ex_p1_05(inverted)


def test_p1_05_names_the_dimension_index_mistake():
    """Reading PE(t, 2m) with m the dimension (exponent 2·dim/d) is named, and the unit-circle check shows the sum."""

    def doubled(t, d, dims):
        dims = np.asarray(dims)
        ang = t / 10000.0 ** (2 * dims / d)
        return np.where(dims % 2 == 0, np.sin(ang), np.cos(ang))

    with pytest.raises(
        ExerciseCheckError,
        match=r"(?s)likely mistake: the exponent uses 2·dim with dim the dimension"
        r".*PE\(10,0\)² \+ PE\(10,1\)² should be 1, got 0\.8\d+",
    ):
        check_ex_p1_05(doubled)


@pytest.mark.parametrize(
    "exponent, named",
    [
        (lambda dims: dims // 2, "the factor 2 is missing"),  # PE(t, 2m) = sin(t / 10000^(m/d))
        (lambda dims: 2 * ((dims + 1) // 2), "counted from 1"),  # the pair index 1-based
    ],
)
def test_p1_05_names_the_pair_exponent_slips(exponent, named):
    """leftex: the exponent m/d_model (factor 2 missing) and pairs counted from 1 failed with no diagnosis."""

    def wrong(t, d, dims):
        dims = np.asarray(dims)
        ang = t / 10000.0 ** (exponent(dims) / d)
        return np.where(dims % 2 == 0, np.sin(ang), np.cos(ang))

    with pytest.raises(ExerciseCheckError, match=named):
        check_ex_p1_05(wrong)


def test_p1_06_names_k_rotated_backwards():
    """leftex: k rotated by −j (the score then depends on i + j) failed with no diagnosis."""

    def backwards(q, k, i, j):
        return float(apply_rope(q[None], positions=[i])[0] @ apply_rope(k[None], positions=[-j])[0])

    with pytest.raises(ExerciseCheckError, match="k rotated by −j"):
        check_ex_p1_06(backwards)


def test_p1_06():
    def right(q, k, i, j):
        return float(apply_rope(q[None], positions=[i])[0] @ apply_rope(k[None], positions=[j])[0])

    assert check_ex_p1_06(right)
    with pytest.raises(ExerciseCheckError):  # no rotation at all
        check_ex_p1_06(lambda q, k, i, j: float(q @ k))
    with pytest.raises(ExerciseCheckError):  # rotates the query only
        check_ex_p1_06(lambda q, k, i, j: float(apply_rope(q[None], positions=[i])[0] @ k))


def test_p1_06_names_the_half_split_layout():
    """Pairs (x_m, x_(m+d/2)) (a common library layout) failed with no diagnosis; it is named now."""

    def half_split(q, k, i, j):
        d = q.shape[0]
        h = d // 2
        theta = 10000.0 ** (-np.arange(0, d, 2) / d)

        def rotate(x, pos):
            c, s = np.cos(pos * theta), np.sin(pos * theta)
            return np.concatenate([x[:h] * c - x[h:] * s, x[:h] * s + x[h:] * c])

        return float(rotate(q, i) @ rotate(k, j))

    with pytest.raises(ExerciseCheckError, match="rotate half"):
        check_ex_p1_06(half_split)


def test_p1_08_names_the_key_value_count():
    with pytest.raises(ExerciseCheckError, match="a key and a value per position"):
        check_ex_p1_08(lambda T, d: d, lambda T, d: 2 * T * d, lambda f, d: f)


def test_p1_08():
    assert check_ex_p1_08(lambda T, d: d, lambda T, d: T * d, lambda f, d: f)


def test_ex08_a_right_loop_over_wrong_counts_is_not_called_a_loop_slip():
    """leftex: transformer_memory = (T − 1) d (off by one) failed undiagnosed, and the crossover loop run on it
    (right loop, one T later) was told 'the first T where the ratio reaches the factor (≥), not exceeds it (>)'."""

    def loop(f, d):
        T = 1
        while (T - 1) * d < f * d:
            T += 1
        return T

    with pytest.raises(ExerciseCheckError, match="leaves one position out") as info:
        check_ex_p1_08(lambda T, d: d, lambda T, d: (T - 1) * d, loop)
    assert "none in the loop" in str(info.value) and "(≥), not exceeds" not in str(info.value)
    with pytest.raises(ExerciseCheckError, match="reaches the factor"):  # the loop slip itself is still named
        check_ex_p1_08(lambda T, d: d, lambda T, d: T * d, lambda f, d: f + 1)
    with pytest.raises(ExerciseCheckError, match="transformer_memory"):  # the KV cache, 2Td
        check_ex_p1_08(lambda T, d: d, lambda T, d: 2 * T * d, lambda f, d: -(-f // 2))
    with pytest.raises(ExerciseCheckError, match="rnn_memory"):
        check_ex_p1_08(lambda T, d: T * d, lambda T, d: T * d, lambda f, d: f)
    with pytest.raises(ExerciseCheckError, match="crossover_length"):
        check_ex_p1_08(lambda T, d: d, lambda T, d: T * d, lambda f, d: f + 1)


def _agreement_model(decoy: bool = False):
    """A hand-built 1-layer TinyLM for AgreementTask: head 0 looks from the marker to the subject and
    copies it to the output; heads 1-3 are zero. ``decoy``: head 1 also looks from the marker to the
    subject, more sharply than head 0, but its value is zero (it looks and is not used).
    (Trained models take too long for a unit test.)"""
    torch = pytest.importorskip("torch")
    from nextword.chapter6 import AgreementTask
    from nextword.torch.models.lm import LMConfig, TinyLM

    task = AgreementTask.make(np.random.default_rng(0))
    m, S, V, d = task.filler.num_symbols, task.num_subjects, task.vocab_size, 32
    model = TinyLM(LMConfig(vocab_size=V, d_model=d, num_heads=4, num_layers=1, max_len=task.length, d_ff=8), seed=0)
    sd = {k: torch.zeros_like(v) for k, v in model.state_dict().items()}
    for k in sd:
        if k.endswith("norm1.weight") or k.endswith("norm2.weight") or k == "norm_f.weight":
            sd[k] += 1.0
    sd["tok_emb"][torch.arange(V), torch.arange(V)] = 1.0  # one-hot tokens in dims 0..V-1
    W = sd["blocks.0.W_qkv"]  # (d, 3d): head 0 uses columns 0..7 of each block
    W[task.marker, 0] = 3.0  # query of the marker
    W[m : m + S, d + 0] = 3.0  # keys of the subjects
    if decoy:  # head 1 (columns 8..15): a sharper query and key, no value
        W[task.marker, 8] = 5.0
        W[m : m + S, d + 8] = 5.0
    for s in range(S):
        W[m + s, 2 * d + s] = 1.0  # value: which subject
        sd["blocks.0.W_o"][s, 20 + s] = 10.0  # into stream dims 20..23
        sd["W_U"][20 + s, task.marker + 1 + s] = 10.0  # read out as the agreement token
    model.load_state_dict(sd)
    return model, task.sample(64, np.random.default_rng(1))


def test_p1_09():
    def subject_attention(w, keys, qm):
        return attention_to_keys(w, keys, qm)

    def ablation_effect(nll_fn, H, group):
        return head_ablation_effects(nll_fn, 1, H, {"g": group})["g"][0]

    model, batch = _agreement_model()
    assert check_ex_p1_09(subject_attention, ablation_effect, model, batch, 0)
    with pytest.raises(ExerciseCheckError, match="subject_head"):
        check_ex_p1_09(subject_attention, ablation_effect, model, batch, 2)
    with pytest.raises(ExerciseCheckError, match="you gave the head's number"):  # head 1, not index 0
        check_ex_p1_09(subject_attention, ablation_effect, model, batch, 1)
    with pytest.raises(ExerciseCheckError, match="subject_attention"):  # averages over all queries instead
        check_ex_p1_09(lambda w, k, q: attention_to_keys(w, k), ablation_effect, model, batch, 0)

    def subject_attention_loops(w, keys, qm):  # written differently: explicit loops
        N, H = w.shape[:2]
        out = np.zeros(H)
        for h in range(H):
            vals = [w[n, h, i, keys[n]] for n in range(N) for i in range(w.shape[2]) if qm[n, i]]
            out[h] = sum(vals) / len(vals)
        return out

    assert check_ex_p1_09(subject_attention_loops, ablation_effect, model, batch, 0)

    # a head that looks at the subject more than any other need not be the one used: the ablation decides
    import torch

    decoy, decoy_batch = _agreement_model(decoy=True)
    with torch.no_grad():
        _, attn = decoy(torch.from_numpy(decoy_batch.ids[:, :-1]), return_attention=True)
    scores = attention_to_keys(attn[0].double().numpy(), decoy_batch.subject_pos, decoy_batch.marker_mask[:, :-1])
    assert scores[1] > scores[0] > 0.4  # the decoy looks at the subject more than the head that is used
    assert check_ex_p1_09(subject_attention, ablation_effect, decoy, decoy_batch, 0)
    with pytest.raises(ExerciseCheckError, match="weaker evidence than what breaks"):
        check_ex_p1_09(subject_attention, ablation_effect, decoy, decoy_batch, 1)
    with pytest.raises(ExerciseCheckError, match="subject's row .* not its column"):
        check_ex_p1_09(
            lambda w, k, q: (w[np.arange(len(k)), :, k, :] * q[:, None, :]).sum(axis=(0, 2)) / q.sum(),
            ablation_effect,
            model,
            batch,
            0,
        )
    with pytest.raises(ExerciseCheckError, match="the loss with the head removed, not its increase"):
        check_ex_p1_09(
            subject_attention,
            lambda f, H, g: np.array([f(1.0 - np.eye(H)[h][None])[g].mean() for h in range(H)]),
            model,
            batch,
            0,
        )


def test_p1_09_more_slips_named():
    """r9ex: a mean of per-sentence means, one subject for all sentences, an off-by-one subject column, an inverted
    head mask and a ratio of losses all failed with no diagnosis."""

    def subject_attention(w, keys, qm):
        return attention_to_keys(w, keys, qm)

    def ablation_effect(nll_fn, H, group):
        return head_ablation_effects(nll_fn, 1, H, {"g": group})["g"][0]

    model, batch = _agreement_model()
    slips = {
        "a mean of per-sentence means": (
            lambda w, k, q: np.mean(
                [attention_to_keys(w[n : n + 1], k[n : n + 1], q[n : n + 1]) for n in range(len(k))], 0
            ),
            ablation_effect,
        ),
        "the first sentence's subject position": (
            lambda w, k, q: attention_to_keys(w, np.full(len(k), k[0]), q),
            ablation_effect,
        ),
        "an off-by-one key": (lambda w, k, q: attention_to_keys(w, (k - 1) % w.shape[-1], q), ablation_effect),
        "the mask is inverted": (
            subject_attention,
            lambda f, H, g: np.array([(f(np.eye(H)[h][None]) - f(None))[g].mean() for h in range(H)]),
        ),
        "a ratio of the losses": (
            subject_attention,
            lambda f, H, g: np.array([f(1.0 - np.eye(H)[h][None])[g].mean() / f(None)[g].mean() for h in range(H)]),
        ),
    }
    for named, (sa, ae) in slips.items():
        with pytest.raises(ExerciseCheckError, match=named):
            check_ex_p1_09(sa, ae, model, batch, 0)


def test_p1_12():
    pytest.importorskip("torch")
    from nextword.torch.probes.ablation import prefix_nll, token_nll

    good = {
        "baseline": {"teacher_forced": 1.5, "honest": 1.5},
        "no mask": {"teacher_forced": 0.1, "honest": 9.0},
        "no positions": {"teacher_forced": 4.0, "honest": 4.0},
        "single head": {"teacher_forced": 2.0, "honest": 2.0},
        "no residual": {"teacher_forced": 8.0, "honest": 8.0},
    }
    assert check_ex_p1_12(prefix_nll, good)
    with pytest.raises(ExerciseCheckError, match="one teacher-forced pass over the whole sequence"):
        check_ex_p1_12(token_nll, good)  # teacher forcing is not honest without a mask

    def honest_loops(model, ids):  # written differently: one sequence and one prefix at a time, in numpy
        import torch

        out = np.zeros((ids.shape[0], ids.shape[1] - 1))
        with torch.no_grad():
            for n, row in enumerate(ids):
                for t in range(ids.shape[1] - 1):
                    z = model(torch.from_numpy(np.asarray(row[None, : t + 1], dtype=np.int64)))[0, -1].double().numpy()
                    out[n, t] = np.logaddexp.reduce(z) - z[row[t + 1]]
        return out

    assert check_ex_p1_12(honest_loops, good)
    leak_free = {**good, "no mask": {"teacher_forced": 2.0, "honest": 2.1}}
    with pytest.raises(ExerciseCheckError, match="retrained"):
        check_ex_p1_12(prefix_nll, leak_free)
    with pytest.raises(ExerciseCheckError, match="keys"):
        check_ex_p1_12(prefix_nll, {"baseline": good["baseline"]})
    harmless = {**good, "single head": {"teacher_forced": 1.5, "honest": 1.5}}
    with pytest.raises(ExerciseCheckError, match="single head"):
        check_ex_p1_12(prefix_nll, harmless)


def _prefix_loss(kind):
    """honest_loss with one of the usual slips (exf trials: each failed with no diagnosis)."""

    def honest(model, ids):
        import torch
        import torch.nn.functional as F

        x = torch.from_numpy(np.asarray(ids, dtype=np.int64))
        out = np.empty((x.shape[0], x.shape[1] - 1))
        with torch.no_grad():
            for t in range(x.shape[1] - 1):
                logits = (
                    model(x[:, : t + 2])[:, -2]
                    if kind == "long"
                    else model(x[:, : t + 1])[:, 0 if kind == "first" else -1]
                )
                target = x[:, t] if kind == "own" else x[:, t + 1]
                if kind == "batch":
                    out[:, t] = -torch.log_softmax(logits, dim=0)[torch.arange(len(x)), target].double().numpy()
                else:
                    out[:, t] = F.cross_entropy(logits, target, reduction="none").double().numpy()
        return out

    return honest


_GOOD_P1_12 = {
    "baseline": {"teacher_forced": 1.42, "honest": 1.42},
    "no mask": {"teacher_forced": 0.07, "honest": 11.7},
    "no positions": {"teacher_forced": 4.22, "honest": 4.22},
    "single head": {"teacher_forced": 2.42, "honest": 2.42},
    "no residual": {"teacher_forced": 9.0, "honest": 9.0},
}


@pytest.mark.parametrize(
    "kind, named",
    [
        ("long", "the prefix includes the target"),
        ("first", "prefix's first position"),
        ("own", "the prefix's own last token"),
        ("batch", "over the batch axis"),
    ],
)
def test_p1_12_honest_loss_slips_named(kind, named):
    pytest.importorskip("torch")
    with pytest.raises(ExerciseCheckError, match=rf"(?s)likely mistake: [^\n]*{named}"):
        check_ex_p1_12(_prefix_loss(kind), _GOOD_P1_12)


def test_p1_12_results_summed_swapped_or_ablated_from_the_leaky_model_named():
    """exf trials: losses summed over the 23 positions passed, and so did ablations made from the model retrained
    without the mask; the two losses swapped were told 'was it retrained with causal=False?'."""
    pytest.importorskip("torch")
    from nextword.torch.probes.ablation import prefix_nll

    assert check_ex_p1_12(prefix_nll, _GOOD_P1_12)
    summed = {n: {k: 23 * v for k, v in r.items()} for n, r in _GOOD_P1_12.items()}
    with pytest.raises(ExerciseCheckError, match="likely mistake: a sum over positions"):
        check_ex_p1_12(prefix_nll, summed)
    swapped = {n: {"teacher_forced": r["honest"], "honest": r["teacher_forced"]} for n, r in _GOOD_P1_12.items()}
    with pytest.raises(ExerciseCheckError, match="likely mistake: the two losses swapped"):
        check_ex_p1_12(prefix_nll, swapped)
    leaky = {**_GOOD_P1_12, "no positions": {"teacher_forced": 0.9, "honest": 9.5}}
    with pytest.raises(ExerciseCheckError, match="removed from the model retrained without the mask"):
        check_ex_p1_12(prefix_nll, leaky)


def test_p1_12_results_in_bits_named_when_the_baseline_is_given():
    """exf/exg: results converted to bits passed (no scale can be told from the numbers alone); with the trained
    baseline and the test batch the checker compares the baseline's loss with its own and names log base 2."""
    pytest.importorskip("torch")
    import math
    from types import SimpleNamespace

    from nextword.torch.models.lm import LMConfig, TinyLM
    from nextword.torch.probes.ablation import prefix_nll, token_nll

    model = TinyLM(LMConfig(vocab_size=7, d_model=8, num_heads=2, num_layers=2, max_len=12, init_std=0.3), seed=0)
    test = SimpleNamespace(ids=np.random.default_rng(3).integers(0, 7, size=(5, 9)))
    ref = float(token_nll(model, test.ids).mean())
    nats = {
        "baseline": {"teacher_forced": ref, "honest": ref},
        "no mask": {"teacher_forced": 0.07, "honest": ref + 9.0},
        "no positions": {"teacher_forced": ref + 2.0, "honest": ref + 2.0},
        "single head": {"teacher_forced": ref + 1.0, "honest": ref + 1.0},
        "no residual": {"teacher_forced": ref + 7.0, "honest": ref + 7.0},
    }
    assert check_ex_p1_12(prefix_nll, nats, model, test)
    bits = {n: {k: v / math.log(2) for k, v in r.items()} for n, r in nats.items()}
    with pytest.raises(ExerciseCheckError, match="likely mistake: log base 2 instead of e"):
        check_ex_p1_12(prefix_nll, bits, model, test)
    summed = {n: {k: 8 * v for k, v in r.items()} for n, r in nats.items()}
    with pytest.raises(ExerciseCheckError, match="likely mistake: a sum over the 8 positions"):
        check_ex_p1_12(prefix_nll, summed, model, test)
    other = {**nats, "baseline": {"teacher_forced": ref + 0.2, "honest": ref + 0.2}}
    with pytest.raises(ExerciseCheckError, match="measure every model on test.ids"):
        check_ex_p1_12(prefix_nll, other, model, test)


@pytest.mark.parametrize(
    "exponent, named",
    [
        (lambda d: -np.arange(d // 2) / d, "10000\\^\\(−m/d\\)"),
        (lambda d: np.arange(0, d, 2) / d, "10000\\^\\(\\+2m/d\\)"),
    ],
)
def test_p1_06_names_the_frequency_slips(exponent, named):
    """readex2: θ_m = 10000^(−m/d) and 10000^(+2m/d) failed with no diagnosis."""

    def score(q, k, i, j):
        d = q.shape[0]
        theta = 10000.0 ** exponent(d)

        def rotate(x, pos):
            c, s = np.cos(pos * theta), np.sin(pos * theta)
            out = np.empty_like(x)
            out[0::2], out[1::2] = x[0::2] * c - x[1::2] * s, x[0::2] * s + x[1::2] * c
            return out

        return float(rotate(q, i) @ rotate(k, j))

    with pytest.raises(ExerciseCheckError, match=named):
        check_ex_p1_06(score)
