"""Evaluation (formulation paper §8): ``metrics`` cross-entropy, perplexity, energy distance, MMD,
CRPS, calibration, precision/recall; ``two_sample`` permutation two-sample tests.
"""

from nextword.evaluation.metrics import (
    token_log_probs,
    cross_entropy,
    bits_per_token,
    perplexity,
    energy_distance,
    mmd_squared,
    median_heuristic_bandwidth,
    crps_sample,
    crps_gaussian,
    RetrievalScores,
    precision_recall_f1,
    CalibrationBins,
    calibration_bins,
    expected_calibration_error,
    SpearmanResult,
    spearman,
)
from nextword.evaluation.two_sample import (
    PermutationResult,
    permutation_test,
)

__all__ = [
    "token_log_probs",
    "cross_entropy",
    "bits_per_token",
    "perplexity",
    "energy_distance",
    "mmd_squared",
    "median_heuristic_bandwidth",
    "crps_sample",
    "crps_gaussian",
    "RetrievalScores",
    "precision_recall_f1",
    "CalibrationBins",
    "calibration_bins",
    "expected_calibration_error",
    "SpearmanResult",
    "spearman",
    "PermutationResult",
    "permutation_test",
]
