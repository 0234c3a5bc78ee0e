"""The torch path: small GPT models, the margin (log-barrier) embedding prior, training, robustness.

Import torch-dependent modules explicitly (``from nextword.torch import model``); the numpy library
never imports torch.

Modules
-------
``model``       SmallGPT (§7.1), device selection cuda → mps → cpu, bfloat16 autocast on CUDA
``prior``       EmbeddingPrior and the margin penalty −log|det(I − Σ_t Wᵀ)| (Theorem 1, Eq. (24)):
                direct, second-moment and Sylvester evaluation paths, position subsampling, diagnostics
``data``        character vocabulary (``<unk>`` = 0), deterministic epoch batches, evaluation windows
``train``       CE + λ·margin training with atomic checkpoints, exact resume, DDP
``robustness``  bits per character, BPC under embedding noise (§7.3), prior diagnostics (§7.4)
``sweep``       the λ regularisation path (§7.4); ``book`` notebook plumbing and the paper's numbers
``barrier``     the CLI: ``python -m nextword.torch.barrier train|robustness|sweep|report|fetch``
``fetch``       checksum-verified WikiText-2 download (never called by tests or notebooks)
``lm``, ``rnn`` the Chapter 6 TinyLM (export to the numpy decoder) and the recurrent baseline
``ablation``    Chapter 6 ablations of torch models (token and prefix losses)
``svflow_hybrid``, ``svflow_probe``  SVFlow's torch parts (Part 5: hybrid training, prefix shuffling)
"""
