"""Baptista, Stuart, Tran — *LLMs: a mathematical formulation* (Part 2 of the book): ``objectives``
(autoregressive factorisation, KL, fine-tuning and RL), ``diffusion`` (§9 discrete diffusion),
``ssm`` (§5.3 state-space models), ``set_transformer`` (§5.1–5.2).
"""

from nextword.theory.formulation.objectives import (
    NextProbs, kl_divergence, enumerate_sequences, sequence_distribution, markov_next_probs,
    KLDecomposition, kl_decomposition, position_losses, shared_prefix_estimate, rl_objective,
    kl_regularised_optimum, rl_empirical_objective, bigram_counts, table_loss_and_grad,
    fit_table, fit_lora, table_kl,
)
from nextword.theory.formulation.diffusion import (
    generator_violations, check_generator, uniform_generator, absorbing_generator,
    sequence_generator, transition_matrix, forward_marginal, gillespie, tau_leaping,
    euler_transition_matrix, reverse_generator, reverse_marginals, sample_reverse,
    probability_ratios, score_entropy_loss, denoising_score_entropy_loss,
)
from nextword.theory.formulation.ssm import (
    discretize_zoh, discretize_euler, ssm_scan, ssm_kernel, ssm_convolve, ssm_exact_state,
)
from nextword.theory.formulation.set_transformer import (
    AttentionParams, BlockParams, att, attention_block, mean_pool, max_pool, soft_max_pool,
    set_transformer, next_token_distribution, empirical_measure,
)

__all__ = [
    "NextProbs", "kl_divergence", "enumerate_sequences", "sequence_distribution",
    "markov_next_probs", "KLDecomposition", "kl_decomposition", "position_losses",
    "shared_prefix_estimate", "rl_objective", "kl_regularised_optimum",
    "rl_empirical_objective", "bigram_counts", "table_loss_and_grad", "fit_table", "fit_lora",
    "table_kl", "generator_violations", "check_generator", "uniform_generator",
    "absorbing_generator", "sequence_generator", "transition_matrix", "forward_marginal",
    "gillespie", "tau_leaping", "euler_transition_matrix", "reverse_generator",
    "reverse_marginals", "sample_reverse", "probability_ratios", "score_entropy_loss",
    "denoising_score_entropy_loss", "discretize_zoh", "discretize_euler", "ssm_scan",
    "ssm_kernel", "ssm_convolve", "ssm_exact_state", "AttentionParams", "BlockParams", "att",
    "attention_block", "mean_pool", "max_pool", "soft_max_pool", "set_transformer",
    "next_token_distribution", "empirical_measure",
]
