"""Tests for nextword.decoding (formulation paper §6).

Expected values are computed independently: by enumerating every continuation
(Eq. 6.3), from the chain rule on the table model, or from the filtered,
renormalised distribution; never copied from a paper.
"""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest

from nextword.decoding import (
    beam_search,
    exhaustive_search,
    filter_logits,
    greedy,
    log_softmax,
    lookahead_search,
    mixed,
    pad_to_length,
    sample,
    sequence_log_prob,
)
from nextword.decoding import random_table_model, table_model


def enumerate_best(lm, prompt, n, eos_id=None):
    """Independent Eq. (6.3): score every full continuation with the chain rule, truncate at EOS."""
    V = lm.vocab_size
    best, best_lp = None, -np.inf
    for cont in itertools.product(range(V), repeat=n):
        cont = list(cont)
        if eos_id is not None and eos_id in cont:
            cont = cont[: cont.index(eos_id) + 1]
        lp = lm.log_prob(list(prompt) + cont, start=len(prompt))
        if lp > best_lp:
            best, best_lp = list(prompt) + cont, lp
    return best, best_lp


# ------------------------------------------------------------------- search decoders
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("eos_id", [None, 0])
def test_full_beam_equals_exhaustive_search(seed, eos_id):
    rng = np.random.default_rng(seed)
    V, n = 3, 4
    lm = random_table_model(V, 3, rng, temperature=0.5)
    prompt = [int(rng.integers(V))]
    expected, expected_lp = enumerate_best(lm, prompt, n, eos_id)
    got_ex = exhaustive_search(lm.next_logits, prompt, n, eos_id=eos_id)
    assert got_ex == expected
    # a beam wide enough for every partial continuation is exact (Eq. 6.3)
    for width in (V ** (n - 1), V**n):
        got = beam_search(lm.next_logits, prompt, n, width, eos_id=eos_id)
        assert got == expected
    np.testing.assert_allclose(sequence_log_prob(lm.next_logits, expected, len(prompt)), expected_lp)


def test_greedy_beaten_by_exhaustive_on_constructed_example():
    # §6.2: a likely first token can hide a much likelier path.
    lm = table_model(
        3, 2, {(): np.log([0.5, 0.4, 0.1]), (0,): np.log([0.4, 0.3, 0.3]), (1,): np.log([0.05, 0.9, 0.05])}
    )
    g = greedy(lm.next_logits, [], 2)
    e = exhaustive_search(lm.next_logits, [], 2)
    assert g == [0, 0] and e == [1, 1]
    lp_g = sequence_log_prob(lm.next_logits, g, 0)
    lp_e = sequence_log_prob(lm.next_logits, e, 0)
    np.testing.assert_allclose([np.exp(lp_g), np.exp(lp_e)], [0.5 * 0.4, 0.4 * 0.9])
    assert lp_e > lp_g
    assert beam_search(lm.next_logits, [], 2, 2) == e  # width 2 already finds it here


@pytest.mark.parametrize("seed", range(20))
def test_greedy_is_beam_width_one_and_never_beats_exhaustive(seed):
    rng = np.random.default_rng(100 + seed)
    lm = random_table_model(3, 2, rng)
    prompt = [1]
    for eos in (None, 2):
        g = greedy(lm.next_logits, prompt, 4, eos_id=eos)
        assert beam_search(lm.next_logits, prompt, 4, 1, eos_id=eos) == g
        # independent greedy: argmax of the model's probabilities at each step
        seq = list(prompt)
        for _ in range(4):
            seq.append(int(np.argmax(lm.next_probs(seq))))
            if eos is not None and seq[-1] == eos:
                break
        assert g == seq
        e = exhaustive_search(lm.next_logits, prompt, 4, eos_id=eos)
        assert sequence_log_prob(lm.next_logits, e, 1) >= sequence_log_prob(lm.next_logits, g, 1) - 1e-12


def test_eos_stops_and_is_kept():
    # token 2 is EOS and always the most likely continuation after token 0
    lm = table_model(3, 2, {(): np.log([0.7, 0.2, 0.1]), (0,): np.log([0.1, 0.2, 0.7])})
    assert greedy(lm.next_logits, [], 5, eos_id=2) == [0, 2]
    assert greedy(lm.next_logits, [], 5) == [0, 2, 0, 2, 0]  # no EOS: 2 is an ordinary token
    rng = np.random.default_rng(0)
    for _ in range(20):
        out = sample(lm.next_logits, [], 6, rng=rng, eos_id=2)
        assert 2 not in out[:-1] and (out[-1] == 2 or len(out) == 6)


def test_length_penalty_prefers_longer_outputs():
    # EOS (token 0) first costs log 0.6; the long path costs more in total but less per token.
    lm = table_model(2, 2, {(): np.log([0.6, 0.4]), (1,): np.log([0.1, 0.9])})
    short = beam_search(lm.next_logits, [], 4, 4, eos_id=0)
    assert short == exhaustive_search(lm.next_logits, [], 4, eos_id=0) == [0]
    long_ = beam_search(lm.next_logits, [], 4, 4, eos_id=0, length_penalty=1.0)
    # independent: best mean log-prob over all EOS-truncated continuations
    cands = {tuple(c[: c.index(0) + 1] if 0 in c else c) for c in map(list, itertools.product(range(2), repeat=4))}
    best = max(cands, key=lambda c: lm.log_prob(list(c)) / len(c))
    assert long_ == list(best) and len(long_) > 1


def test_pad_semantics_in_sequence_log_prob():
    lm = random_table_model(4, 2, np.random.default_rng(5))
    eos, pad = 3, 0
    out = greedy(lm.next_logits, [1], 6, eos_id=eos)
    padded = pad_to_length(out, 8, pad)
    base = sequence_log_prob(lm.next_logits, out, 1, eos_id=eos)
    if out[-1] == eos:
        assert sequence_log_prob(lm.next_logits, padded, 1, eos_id=eos, pad_id=pad) == base
        bad = out + [1]
        assert sequence_log_prob(lm.next_logits, bad, 1, eos_id=eos, pad_id=pad) == -np.inf
        with pytest.raises(ValueError, match="pad_id"):
            sequence_log_prob(lm.next_logits, bad, 1, eos_id=eos)
    seq = [1, 3, 0, 0]
    assert sequence_log_prob(lm.next_logits, seq, 1, eos_id=3, pad_id=0) == pytest.approx(np.log(lm.next_probs([1])[3]))


def test_sequence_log_prob_matches_chain_rule():
    lm = random_table_model(3, 3, np.random.default_rng(9))
    toks = [0, 2, 1, 1, 0]
    manual = sum(np.log(lm.next_probs(toks[:m])[toks[m]]) for m in range(2, 5))
    assert sequence_log_prob(lm.next_logits, toks, 2) == pytest.approx(manual)
    assert sequence_log_prob(lm.next_logits, toks, 5) == 0.0


# ------------------------------------------------------------ Example 6.1 look-ahead
def lookahead_reference(lm, prompt, n, window, k):
    """Example 6.1 literally: at each m maximise pi over the next min(window, left) tokens
    by enumeration, first token among the k most likely; commit the first token."""
    seq = list(prompt)
    V = lm.vocab_size
    while len(seq) - len(prompt) < n:
        d = min(window, n - (len(seq) - len(prompt)))
        p0 = lm.next_probs(seq)
        allowed = set(np.argsort(-p0, kind="stable")[:k].tolist())
        best = max(
            (c for c in itertools.product(range(V), repeat=d) if c[0] in allowed),
            key=lambda c: (lm.log_prob(seq + list(c), start=len(seq)), [-t for t in c]),
        )
        seq.append(best[0])
    return seq


@pytest.mark.parametrize("seed", range(8))
def test_lookahead_matches_enumeration_and_limits(seed):
    lm = random_table_model(3, 2, np.random.default_rng(200 + seed), temperature=0.5)
    f = lm.next_logits
    for window, k in ((2, 1), (2, 2), (3, 3), (2, 3)):
        assert lookahead_search(f, [0], 4, window, k) == lookahead_reference(lm, [0], 4, window, k)
    assert lookahead_search(f, [0], 4, 1) == greedy(f, [0], 4)
    assert lookahead_search(f, [0], 4, 4) == exhaustive_search(f, [0], 4)
    assert lookahead_search(f, [0], 4, 2, 1) == greedy(f, [0], 4)  # restricted to the argmax
    for eos in (0, 2):
        assert lookahead_search(f, [0], 4, 4, eos_id=eos) == exhaustive_search(f, [0], 4, eos_id=eos)
        assert lookahead_search(f, [0], 4, 1, eos_id=eos) == greedy(f, [0], 4, eos_id=eos)


def test_example_6_1_lookahead_is_not_beam_search():
    """Example 6.1 calls the windowed look-ahead "beam search"; standard beam search (k
    best partial sequences) is a different algorithm: over random models the two return
    different sequences, and neither always has the higher probability (ERRATA row)."""
    wins = {"lookahead": 0, "beam": 0}
    for seed in range(60):
        lm = random_table_model(4, 2, np.random.default_rng(seed), temperature=0.5)
        f = lm.next_logits
        a, b = lookahead_search(f, [0], 4, 2, 2), beam_search(f, [0], 4, 2)
        if a != b:
            la, lb = sequence_log_prob(f, a, 1), sequence_log_prob(f, b, 1)
            wins["lookahead" if la > lb else "beam"] += 1
    assert wins["lookahead"] > 0 and wins["beam"] > 0


def test_decoders_on_the_numpy_decoder_lm_with_kv_cache():
    decoder = pytest.importorskip("nextword.decoder")
    cfg = decoder.DecoderConfig(vocab_size=4, d_model=8, num_heads=2, num_layers=1, max_len=16)
    lm = decoder.DecoderLM(cfg, rng=np.random.default_rng(0))
    f = lm.next_logits  # branching prefixes exercise its cache
    prompt, n = [1, 2], 3

    def full(prefix):  # no cache: last row of a full forward pass
        return lm.logits(prefix)[-1]

    assert greedy(f, prompt, n) == greedy(full, prompt, n)
    best = exhaustive_search(full, prompt, n)
    assert beam_search(f, prompt, n, 4**n) == best
    # sequence_log_prob = sum of one full forward pass's log-softmax rows (Eq. 6.1a)
    rows = log_softmax(lm.logits(best)[:-1])  # (T-1, V): row t predicts token t+1
    manual = sum(rows[t - 1, best[t]] for t in range(len(prompt), len(best)))
    np.testing.assert_allclose(sequence_log_prob(f, best, len(prompt)), manual, rtol=1e-10)


# ---------------------------------------------------------------------------- sampling
@pytest.mark.parametrize("seed", range(5))
def test_temperature_to_zero_is_greedy(seed):
    lm = random_table_model(5, 2, np.random.default_rng(seed))
    g = greedy(lm.next_logits, [2], 8)
    s = sample(lm.next_logits, [2], 8, temperature=1e-9, rng=np.random.default_rng(seed))
    assert s == g


@pytest.mark.parametrize(
    "kwargs",
    [dict(), dict(top_k=2), dict(top_p=0.7), dict(temperature=0.6, top_k=3, top_p=0.9), dict(temperature=2.0)],
)
def test_sample_frequencies_match_filtered_distribution(kwargs):
    """First-token frequencies vs the filtered, renormalised target distribution.

    N = 4000 draws with a fixed seed; each frequency must lie within 5 binomial
    standard deviations of its target (per-cell false-alarm rate ~ 6e-7), and
    filtered-out tokens must never appear.
    """
    z = np.array([1.2, 0.3, -0.4, 0.9, -1.5])
    target = np.exp(log_softmax(filter_logits(z, **kwargs)))
    # target computed independently: renormalise exp(z / t) over the kept set
    t = kwargs.get("temperature", 1.0)
    kept = np.isfinite(filter_logits(z, **kwargs))
    manual = np.where(kept, np.exp(z / t), 0.0)
    np.testing.assert_allclose(target, manual / manual.sum(), atol=1e-12)
    rng = np.random.default_rng(123)
    N = 4000
    draws = Counter(sample(lambda prefix: z, [], 1, rng=rng, **kwargs)[0] for _ in range(N))
    for v in range(len(z)):
        f = draws[v] / N
        if target[v] == 0:
            assert draws[v] == 0
        else:
            assert abs(f - target[v]) <= 5 * np.sqrt(target[v] * (1 - target[v]) / N), (v, f, target[v])


def test_sampled_sequences_follow_the_joint_distribution():
    # §6.3: ancestral sampling draws exactly from pi(f_{2:3} | f_1); check all 9 pairs.
    lm = random_table_model(3, 2, np.random.default_rng(11))
    rng = np.random.default_rng(12)
    N = 4000
    counts = Counter(tuple(sample(lm.next_logits, [0], 2, rng=rng)[1:]) for _ in range(N))
    for pair in itertools.product(range(3), repeat=2):
        p = np.exp(lm.log_prob([0, *pair], start=1))
        assert abs(counts[pair] / N - p) <= 5 * np.sqrt(p * (1 - p) / N)


def test_sample_reproducible_and_no_global_state():
    lm = random_table_model(6, 2, np.random.default_rng(0))
    a = sample(lm.next_logits, [0], 10, rng=np.random.default_rng(7))
    np.random.seed(1)
    b = sample(lm.next_logits, [0], 10, rng=np.random.default_rng(7))
    np.random.seed(2)
    assert a == b
    with pytest.raises(TypeError, match="Generator"):
        sample(lm.next_logits, [0], 3)


def test_mixed_samples_then_greedy():
    lm = random_table_model(4, 2, np.random.default_rng(3))
    rng = np.random.default_rng(4)
    for _ in range(10):
        out = mixed(lm.next_logits, [1], 2, 6, rng=rng)
        assert len(out) == 7
        # the tail after L' = 2 sampled tokens is the greedy continuation of the head
        assert out == greedy(lm.next_logits, out[:3], 4)
    # L' = 0 is greedy and needs no rng; L' = max_new_tokens is pure sampling
    assert mixed(lm.next_logits, [1], 0, 5) == greedy(lm.next_logits, [1], 5)
    assert mixed(lm.next_logits, [1], 5, 5, rng=np.random.default_rng(8)) == sample(
        lm.next_logits, [1], 5, rng=np.random.default_rng(8)
    )
    # the first token is random: more than one distinct output over a few seeds
    firsts = {mixed(lm.next_logits, [1], 1, 3, temperature=3.0, rng=np.random.default_rng(s))[1] for s in range(30)}
    assert len(firsts) > 1


@pytest.mark.parametrize(
    "call, exc, match",
    [
        (lambda f: sample(f, [0], 2, temperature=0.0, rng=np.random.default_rng(0)), ValueError, "temperature"),
        (lambda f: sample(f, [0], 2, top_p=0.0, rng=np.random.default_rng(0)), ValueError, "top_p"),
        (lambda f: sample(f, [0], 2, top_p=1.5, rng=np.random.default_rng(0)), ValueError, "top_p"),
        (lambda f: sample(f, [0], 2, top_k=0, rng=np.random.default_rng(0)), ValueError, "top_k"),
        (lambda f: sample(f, [0], 2, rng=0), TypeError, "Generator"),
        (lambda f: beam_search(f, [0], 2, 0), ValueError, "beam_width"),
        (lambda f: greedy(f, [0], -1), ValueError, "max_new_tokens"),
        (lambda f: greedy(f, [0.5], 2), TypeError, "prompt"),
        (lambda f: mixed(f, [0], 3, 2, rng=np.random.default_rng(0)), ValueError, "num_sampled"),
        (lambda f: mixed(f, [0], 1, 2), TypeError, "Generator"),
        (lambda f: sequence_log_prob(f, [0, 1], 3), ValueError, "start"),
        (lambda f: exhaustive_search(f, [0], 40), ValueError, "enumerate"),
        (lambda f: lookahead_search(f, [0], 3, 0), ValueError, "window"),
        (lambda f: lookahead_search(f, [0], 3, 2, 0), ValueError, "top_k"),
        (lambda f: exhaustive_search(f, [0], 2, vocab_size=5), ValueError, "vocab_size"),
        (lambda f: greedy(lambda p: np.zeros((2, 3)), [0], 2), ValueError, r"shape \(V,\)"),
        (lambda f: greedy(lambda p: np.array([np.nan, 1.0, 0.0]), [0], 2), ValueError, "NaN"),
    ],
)
def test_decoder_validation(call, exc, match):
    lm = random_table_model(3, 2, np.random.default_rng(0))
    with pytest.raises(exc, match=match):
        call(lm.next_logits)


def test_zero_new_tokens_returns_prompt():
    lm = random_table_model(3, 2, np.random.default_rng(0))
    f = lm.next_logits
    assert greedy(f, [2, 1], 0) == [2, 1]
    assert beam_search(f, [2, 1], 0, 3) == [2, 1]
    assert sample(f, [2, 1], 0, rng=np.random.default_rng(0)) == [2, 1]
    assert exhaustive_search(f, [2, 1], 0) == [2, 1]


def test_torch_logits_accepted():
    torch = pytest.importorskip("torch")
    lm = random_table_model(4, 2, np.random.default_rng(1))
    tf = lambda prefix: torch.from_numpy(lm.next_logits(prefix)).float()  # noqa: E731
    assert greedy(tf, [0], 5) == greedy(lm.next_logits, [0], 5)
