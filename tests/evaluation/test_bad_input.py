"""Evaluation metrics and the permutation test refuse bad input by name (issue #22)."""

from __future__ import annotations

import numpy as np
import pytest

from nextword.evaluation import (
    crps_gaussian,
    crps_sample,
    energy_distance,
    expected_calibration_error,
    mmd_squared,
    permutation_test,
    precision_recall_f1,
)

X = np.arange(6.0)


def test_strings_complex_and_ragged_samples_are_named() -> None:
    with pytest.raises(TypeError, match="x must be a numeric array"):
        energy_distance(np.full(6, "a"), X)
    with pytest.raises(TypeError, match="y must be real"):
        energy_distance(X, X.astype(complex))
    with pytest.raises(ValueError, match="x must be a rectangular"):
        mmd_squared([[1.0, 2.0], [3.0]], X, 1.0)
    with pytest.raises(TypeError, match="observation must be a numeric array"):
        crps_sample(X, "1.0")
    with pytest.raises(TypeError, match="sigma must be a numeric array"):
        crps_gaussian(0.0, "1.0", 0.0)


def test_scalars_are_checked() -> None:
    with pytest.raises(TypeError, match="bandwidth must be a real number"):
        mmd_squared(X, X + 1, None)
    with pytest.raises(TypeError, match="zero_division must be a real number"):
        precision_recall_f1([1], [2], zero_division="1")
    with pytest.raises(TypeError, match="retrieved must be a collection"):
        precision_recall_f1(3, [2])
    with pytest.raises(ValueError, match="n_bins"):
        expected_calibration_error(np.array([0.2, 0.9]), np.array([0, 1]), n_bins=10**12)


def test_permutation_test_refuses_nan_statistics_and_takes_int_seeds() -> None:
    with pytest.raises(ValueError, match="statistic.*NaN"):
        permutation_test(X, X + 1, lambda a, b: np.nan, rng=0, exact=False, n_permutations=5)
    with pytest.raises(TypeError, match="statistic must be a callable"):
        permutation_test(X, X + 1, None, rng=0)
    a = permutation_test(X, X + 1, energy_distance, rng=3, exact=False, n_permutations=20)
    b = permutation_test(X, X + 1, energy_distance, rng=np.random.default_rng(3), exact=False, n_permutations=20)
    assert a.p_value == b.p_value
