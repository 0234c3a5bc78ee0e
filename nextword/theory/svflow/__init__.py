"""Liao — *Transformer as an Euler discretisation of score-based variational flow* (Part 5):
``flow`` (SVFlow, ELBO), ``sphere`` (retraction, exponential map, vMF), ``attention`` (attention as a
vMF posterior, MoE gating). The torch parts are :mod:`nextword.torch.svflow_hybrid` and ``svflow_probe``.
"""

from nextword.theory.svflow.flow import (
    categorical_kl, kl_to_uniform, entropy, log_posterior, log_marginal, elbo, svflow_field,
    variational_error, softmax_grad_log, gaussian_log_density, gaussian_score, GaussianSVFlow,
    euler_flow, spherical_euler_flow,
)
from nextword.theory.svflow.sphere import (
    tangent_projection, exp_map, retraction, log_bessel_iv, log_bessel_iv_naive,
    sphere_log_area, vmf_log_normalizer, vmf_log_normalizer_naive, vmf_log_density, vmf_score,
    vmf_mean_resultant_length, vmf_sample,
)
from nextword.theory.svflow.attention import (
    vmf_attention_params, vmf_attention_log_posterior, head_output, multihead_as_expectation,
    load_balancing_loss, prefix_shuffle, prefix_shuffle_rates, shuffle_rate_bins,
    RATE_BIN_EDGES, head_svflow_metrics, svflow_metrics_from_loglik,
)

__all__ = [
    "categorical_kl", "kl_to_uniform", "entropy", "log_posterior", "log_marginal", "elbo",
    "svflow_field", "variational_error", "softmax_grad_log", "gaussian_log_density",
    "gaussian_score", "GaussianSVFlow", "euler_flow", "spherical_euler_flow",
    "tangent_projection", "exp_map", "retraction", "log_bessel_iv", "log_bessel_iv_naive",
    "sphere_log_area", "vmf_log_normalizer", "vmf_log_normalizer_naive", "vmf_log_density",
    "vmf_score", "vmf_mean_resultant_length", "vmf_sample", "vmf_attention_params",
    "vmf_attention_log_posterior", "head_output", "multihead_as_expectation",
    "load_balancing_loss", "prefix_shuffle", "prefix_shuffle_rates", "shuffle_rate_bins",
    "RATE_BIN_EDGES", "head_svflow_metrics", "svflow_metrics_from_loglik",
]
