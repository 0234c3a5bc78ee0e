"""Chapter 6's own helpers: the running example (``running_example``), probing and head ablation
(``probing``), the recurrent baseline and path-length graphs (``recurrent``).
"""

from nextword.chapter6.running_example import (
    RUNNING_EXAMPLE,
    RunningExampleSource,
)
from nextword.chapter6.probing import (
    attention_to_offset,
    attention_to_keys,
    normalized_entropy,
    head_profile,
    head_ablation_effects,
    permutation_sensitivity,
    AgreementTask,
    ProbeBatch,
)
from nextword.chapter6.recurrent import (
    rnn_states,
    rnn_state_jacobian,
    rnn_graph,
    attention_graph,
    path_lengths,
    sequential_depth,
    copy_task,
    linear_state_recall,
    attention_recall,
)

__all__ = [
    "RUNNING_EXAMPLE",
    "RunningExampleSource",
    "attention_to_offset",
    "attention_to_keys",
    "normalized_entropy",
    "head_profile",
    "head_ablation_effects",
    "permutation_sensitivity",
    "AgreementTask",
    "ProbeBatch",
    "rnn_states",
    "rnn_state_jacobian",
    "rnn_graph",
    "attention_graph",
    "path_lengths",
    "sequential_depth",
    "copy_task",
    "linear_state_recall",
    "attention_recall",
]
