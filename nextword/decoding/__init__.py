"""Sequence generation (formulation paper §6): ``generation`` greedy, beam, exhaustive, look-ahead
search and sampling; ``filters`` temperature, top-k, top-p; ``ngram`` the smallest model with
``next_logits``, for exact, enumerable checks.
"""

from nextword.decoding.filters import (
    log_softmax,
    apply_temperature,
    top_k_filter,
    top_p_filter,
    filter_logits,
)
from nextword.decoding.generation import (
    NextLogits,
    greedy,
    exhaustive_search,
    beam_search,
    lookahead_search,
    sample,
    mixed,
    sequence_log_prob,
    pad_to_length,
)
from nextword.decoding.ngram import (
    NGramLM,
    random_table_model,
    table_model,
)

__all__ = [
    "log_softmax",
    "apply_temperature",
    "top_k_filter",
    "top_p_filter",
    "filter_logits",
    "NextLogits",
    "greedy",
    "exhaustive_search",
    "beam_search",
    "lookahead_search",
    "sample",
    "mixed",
    "sequence_log_prob",
    "pad_to_length",
    "NGramLM",
    "random_table_model",
    "table_model",
]
