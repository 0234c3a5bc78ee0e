"""Tests of nextword.chapter6.probing: head scores against loops/closed forms, the ablation runner, the task."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nextword.attention import causal_mask, softmax
from nextword.decoder import DecoderConfig, DecoderLM
from nextword.chapter6 import (
    AgreementTask,
    attention_to_keys,
    attention_to_offset,
    head_ablation_effects,
    head_profile,
    normalized_entropy,
    permutation_sensitivity,
)


def _causal_weights(rng, shape, T):
    scores = rng.normal(size=shape + (T, T)) * 2.0
    return softmax(np.where(causal_mask(T), scores, -np.inf))  # (..., T, T)


def test_offset_scores_on_constructed_heads():
    T = 6
    prev = np.eye(T, k=-1)
    prev[0, 0] = 1.0
    assert attention_to_offset(prev, 1) == pytest.approx(1.0)
    assert attention_to_offset(prev, 0) == pytest.approx(0.0)
    uniform = np.tril(np.ones((T, T))) / np.arange(1, T + 1)[:, None]
    # closed form: mean over i >= 1 of 1/(i+1)
    assert attention_to_offset(uniform, 1) == pytest.approx(np.mean(1.0 / np.arange(2, T + 1)))
    assert attention_to_offset(uniform, 0) == pytest.approx(np.mean(1.0 / np.arange(2, T + 1)))
    assert normalized_entropy(uniform) == pytest.approx(1.0)
    assert normalized_entropy(prev) == pytest.approx(0.0)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), T=st.integers(3, 9))
def test_keys_score_matches_loop(seed, T):
    rng = np.random.default_rng(seed)
    N, H = 4, 3
    w = _causal_weights(rng, (N, H), T)
    keys = rng.integers(0, T - 1, size=N)
    qmask = rng.random((N, T)) < 0.5
    qmask[0, T - 1] = True
    got = attention_to_keys(w, keys, qmask)
    expected = np.zeros(H)
    for h in range(H):
        vals = [w[n, h, i, keys[n]] for n in range(N) for i in range(T) if qmask[n, i]]
        expected[h] = np.mean(vals)
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    default = attention_to_keys(w, keys)
    exp_default = [np.mean([w[n, h, i, keys[n]] for n in range(N) for i in range(keys[n], T)]) for h in range(H)]
    np.testing.assert_allclose(default, exp_default, rtol=1e-12)
    ent = normalized_entropy(w)
    assert ent.shape == (N, H) and np.all(ent >= -1e-12) and np.all(ent <= 1 + 1e-12)
    prof = head_profile(w, keys, qmask)
    assert set(prof) == {"diagonal", "previous", "entropy", "target"} and prof["target"].shape == (H,)


def test_bad_inputs_raise():
    w = np.ones((2, 3, 4))
    with pytest.raises(ValueError, match="T, T"):
        attention_to_offset(w, 1)
    with pytest.raises(ValueError, match="offset"):
        attention_to_offset(np.eye(4), 4)
    with pytest.raises(ValueError, match="key_positions"):
        attention_to_keys(np.ones((2, 1, 4, 4)), np.array([0, 7]))
    with pytest.raises(ValueError, match="query_mask"):
        attention_to_keys(np.ones((2, 1, 4, 4)), np.array([0, 1]), np.ones((2, 3), bool))


def test_head_ablation_effects_recovers_planted_effects():
    L, H, N, T = 2, 3, 5, 7
    rng = np.random.default_rng(0)
    effect_a, effect_b = rng.random((L, H)), rng.random((L, H))
    group_a = np.zeros((N, T), bool)
    group_a[:, ::2] = True
    base = rng.random((N, T))

    def nll_fn(mask):
        off = np.zeros((L, H)) if mask is None else 1.0 - mask
        return base + np.where(group_a, (off * effect_a).sum(), (off * effect_b).sum())

    out = head_ablation_effects(nll_fn, L, H, {"a": group_a, "b": ~group_a})
    np.testing.assert_allclose(out["a"], effect_a, atol=1e-12)
    np.testing.assert_allclose(out["b"], effect_b, atol=1e-12)
    with pytest.raises(ValueError, match="group"):
        head_ablation_effects(nll_fn, L, H, {"empty": np.zeros((N, T), bool)})


def test_permutation_invariance_needs_one_layer_and_no_positions():
    ids = np.random.default_rng(1).integers(0, 11, size=(3, 9))

    def logits_fn(num_layers, positional):
        cfg = DecoderConfig(
            vocab_size=11, d_model=8, num_heads=2, num_layers=num_layers, max_len=16, positional=positional
        )
        return DecoderLM(cfg, rng=np.random.default_rng(0)).logits

    rng = np.random.default_rng(2)
    assert permutation_sensitivity(logits_fn(1, "none"), ids, 8, rng) < 1e-10
    assert permutation_sensitivity(logits_fn(2, "none"), ids, 8, rng) > 1e-4  # the mask leaks order
    assert permutation_sensitivity(logits_fn(1, "sinusoidal"), ids, 8, rng) > 1e-4
    with pytest.raises(ValueError, match="position"):
        permutation_sensitivity(logits_fn(1, "none"), ids, 1, rng)


def test_agreement_task_structure():
    task = AgreementTask.make(np.random.default_rng(0), length=20, num_markers=3)
    b = task.sample(50, np.random.default_rng(1))
    m, S = task.filler.num_symbols, task.num_subjects
    assert b.ids.shape == (50, 20) and b.ids.max() < task.vocab_size
    assert np.all(b.subject_pos < task.subject_window)
    subj = b.ids[np.arange(50), b.subject_pos] - m
    assert np.all((0 <= subj) & (subj < S))
    assert np.all(b.marker_mask.sum(1) == 3)
    n, q = np.nonzero(b.marker_mask)
    assert np.all(b.ids[n, q] == task.marker)
    assert np.all(b.ids[n, q + 1] == task.marker + 1 + subj[n])  # agreement with the subject
    assert np.all(q >= task.min_marker)
    assert len(task.token_names()) == task.vocab_size
    with pytest.raises(ValueError):
        AgreementTask.make(np.random.default_rng(0), length=8, num_markers=2)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), T=st.integers(3, 8), offset=st.integers(0, 2))
def test_offset_score_with_query_mask_matches_loop(seed, T, offset):
    rng = np.random.default_rng(seed)
    N, H = 3, 2
    w = _causal_weights(rng, (N, H), T)
    qmask = rng.random((N, T)) < 0.6
    qmask[:, -1] = True
    got = attention_to_offset(w, offset, qmask)
    expected = [
        np.mean([w[n, h, i, i - offset] for n in range(N) for i in range(max(offset, 1), T) if qmask[n, i]])
        for h in range(H)
    ]
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    np.testing.assert_allclose(
        attention_to_offset(w, offset, np.ones((N, T), bool)), attention_to_offset(w, offset).mean(0), rtol=1e-12
    )
