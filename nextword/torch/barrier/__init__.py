"""The §7 barrier objective and its measurements: the EmbeddingPrior and margin penalty (``prior``), BPC,
BPC under embedding noise and prior diagnostics (``robustness``). Nothing here trains; see ``training``."""
