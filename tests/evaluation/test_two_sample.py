"""Tests for nextword.evaluation.two_sample (permutation tests for Example 8.2's divergences)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from nextword.evaluation import energy_distance, mmd_squared
from nextword.evaluation import permutation_test


def _mean_gap(a, b):
    return abs(float(np.mean(a)) - float(np.mean(b)))


def test_exact_test_matches_enumeration_by_hand():
    x, y = np.array([0.1, 0.5, 2.0]), np.array([1.0, 3.0, 4.0, 0.0])
    res = permutation_test(x, y, _mean_gap)
    pooled = np.concatenate([x, y])
    stats = [_mean_gap(pooled[list(c)], np.delete(pooled, list(c))) for c in itertools.combinations(range(7), 3)]
    assert res.exact and len(res.null) == 35
    assert res.p_value == pytest.approx(np.mean(np.array(stats) >= _mean_gap(x, y) - 1e-12))


def test_p_value_under_the_null_is_roughly_uniform():
    rng = np.random.default_rng(0)
    ps = [
        permutation_test(rng.normal(size=15), rng.normal(size=15), energy_distance, n_permutations=99, rng=rng).p_value
        for _ in range(60)
    ]
    assert 0.3 < np.mean(ps) < 0.7
    assert np.mean(np.array(ps) <= 0.1) < 0.25


def test_detects_a_shift_and_a_scale_change():
    rng = np.random.default_rng(1)
    shift = permutation_test(
        rng.normal(0, 1, (40, 2)), rng.normal(0.8, 1, (40, 2)), energy_distance, rng=rng, n_permutations=199
    )
    assert shift.p_value <= 0.01
    h = 1.0
    scale = permutation_test(
        rng.normal(0, 1, 60), rng.normal(0, 3, 60), lambda a, b: mmd_squared(a, b, h), rng=rng, n_permutations=199
    )
    assert scale.p_value <= 0.01 and not scale.exact
    assert scale.p_value >= 1 / 200  # the +1 correction: never exactly 0


def test_bad_input():
    with pytest.raises(TypeError, match="rng"):
        permutation_test(np.zeros(30), np.ones(30), _mean_gap)
    with pytest.raises(ValueError, match="matching"):
        permutation_test(np.zeros((3, 2)), np.zeros((3, 3)), _mean_gap)
    with pytest.raises(ValueError, match="finite"):
        permutation_test(np.array([np.nan, 1.0]), np.ones(2), _mean_gap)
    with pytest.raises(ValueError, match="n_permutations"):
        permutation_test(np.zeros(30), np.ones(30), _mean_gap, rng=np.random.default_rng(0), n_permutations=0)
