"""Agarwal et al. — *Support tokens, stability margins* (Part 4 of the book): ``margins`` (residual
map, Jacobian blocks, scalar and matrix margins, support tokens), ``density`` (log-density, log-barrier),
``depth`` (§6), ``process`` (§5 Kolmogorov consistency). The torch training is :mod:`nextword.torch`.
"""

from nextword.theory.barrier.margins import (
    CONTEXTS,
    AttentionStats,
    MatrixMargins,
    context_mask,
    attention_stats,
    attention_residual,
    causal_residual,
    residual_jacobian,
    diagonal_blocks,
    jacobian_diagonal_block,
    paper_diagonal_block,
    scalar_margin,
    scalar_attention_variance,
    matrix_margins,
    sequence_margin,
    support_tokens,
)
from nextword.theory.barrier.density import (
    noise_log_density,
    log_barrier,
    embedding_log_density,
)
from nextword.theory.barrier.depth import (
    DepthLayer,
    layer_residual,
    layer_diagonal_blocks,
    deep_residual,
    deep_log_barrier,
)
from nextword.theory.barrier.process import (
    emission_probs,
    token_law_quadrature,
    sample_scalar_process,
    token_law_monte_carlo,
)

__all__ = [
    "CONTEXTS",
    "AttentionStats",
    "MatrixMargins",
    "context_mask",
    "attention_stats",
    "attention_residual",
    "causal_residual",
    "residual_jacobian",
    "diagonal_blocks",
    "jacobian_diagonal_block",
    "paper_diagonal_block",
    "scalar_margin",
    "scalar_attention_variance",
    "matrix_margins",
    "sequence_margin",
    "support_tokens",
    "noise_log_density",
    "log_barrier",
    "embedding_log_density",
    "DepthLayer",
    "layer_residual",
    "layer_diagonal_blocks",
    "deep_residual",
    "deep_log_barrier",
    "emission_probs",
    "token_law_quadrature",
    "sample_scalar_process",
    "token_law_monte_carlo",
]
