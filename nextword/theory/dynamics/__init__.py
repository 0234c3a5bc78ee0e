"""Aggarwal, Dalal, Misra — *Gradient dynamics of attention* (Part 3 of the book): ``gradients``
(the head, advantage routing, value updates), ``diagnostics`` (§8.1, PCA), ``toy`` (§7.1),
``sticky`` (§7.2 EM-like vs SGD on the sticky Markov chain).
"""

from nextword.theory.dynamics.gradients import (
    HeadParams, HeadForward, HeadGradients, head_forward, cross_entropy, per_position_loss,
    upstream_gradient, head_gradients, compatibility_matrix, expected_compatibility,
    advantage_matrix, score_gradient, responsibility_signal, value_update,
    first_order_loss_change, dominant_query_loss_change, exact_value_update_loss_change,
)
from nextword.theory.dynamics.diagnostics import (
    AttentionDiagnostics, attention_diagnostics, column_usage, value_norms, PCA, pca_fit,
)
from nextword.theory.dynamics.toy import (
    ToyConfig, ToyRun, simulate_toy, attention_entropy,
)
from nextword.theory.dynamics.sticky import (
    StickyTask, sticky_means, make_sticky_task, bayes_filter_log_probs, markov_entropy_rate,
    mean_cross_entropy, accuracy, predictive_entropy, mean_kl, ProtocolConfig, ProtocolRun,
    train_protocol, StickyExperimentConfig, StickyExperiment, run_sticky_experiment,
    same_symbol_attention,
)

__all__ = [
    "HeadParams", "HeadForward", "HeadGradients", "head_forward", "cross_entropy",
    "per_position_loss", "upstream_gradient", "head_gradients", "compatibility_matrix",
    "expected_compatibility", "advantage_matrix", "score_gradient", "responsibility_signal",
    "value_update", "first_order_loss_change", "dominant_query_loss_change",
    "exact_value_update_loss_change", "AttentionDiagnostics", "attention_diagnostics",
    "column_usage", "value_norms", "PCA", "pca_fit", "ToyConfig", "ToyRun", "simulate_toy",
    "attention_entropy", "StickyTask", "sticky_means", "make_sticky_task",
    "bayes_filter_log_probs", "markov_entropy_rate", "mean_cross_entropy", "accuracy",
    "predictive_entropy", "mean_kl", "ProtocolConfig", "ProtocolRun", "train_protocol",
    "StickyExperimentConfig", "StickyExperiment", "run_sticky_experiment",
    "same_symbol_attention",
]
