"""The §7 barrier experiment: the EmbeddingPrior and margin penalty (``prior``), the run's configuration
(``config``), CE + λ·margin training on the one loop (``train``), BPC, BPC under embedding noise and prior
diagnostics (``robustness``), and the λ path (``sweep``)."""
