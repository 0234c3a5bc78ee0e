"""The torch path: small language models, one training loop, the §7 barrier experiment, saved runs.

Import torch-dependent modules explicitly (``from nextword.torch.models import gpt``); the numpy
library never imports torch. The subpackages, bottom to top (``.importlinter`` checks the order):

``models``    the models: ``block`` (the one transformer Block both LMs stack), ``gpt`` (SmallGPT of
              §7.1), ``lm`` (the Chapter 6 TinyLM, its export to the numpy decoder), ``rnn`` (the
              recurrent baseline)
``training``  one loop with checkpoints, exact resume, devices, AMP and DDP, knowing no objective:
              ``engine`` (``fit``, the loop every run uses), ``token_lm`` (TinyLM's next-token training,
              behind ``train_lm``), ``data`` (character batching), ``checkpoint``, ``device`` (device
              and bf16 autocast selection), ``distributed``, ``fetch`` (WikiText-2 download)
``barrier``   the §7 experiment: ``prior`` (EmbeddingPrior and the margin penalty −log|det(I − Σ_t Wᵀ)|,
              Theorem 1), ``config`` (TrainConfig, presets paper | cpu | quick | tiny), ``train`` (CE +
              λ·margin on the one loop: ``train``, ``train_or_load``), ``robustness`` (bits per character,
              BPC under embedding noise §7.3, prior diagnostics §7.4), ``sweep`` (the λ path of §7.4)
``svflow``    SVFlow's torch parts (Part 5): ``hybrid`` training, its measurements ``hybrid_runs``,
              the prefix-shuffling ``probe``, the trained character ``lm``
``probes``    Chapter 6 probes and ablations: ``ablation``, ``layer_probe``, ``fig628``
``runs``      the saved runs behind the book (``book/results/``): the registry, the GPU tier
              (``gpu_check``), and the Part 4 notebooks' plumbing (``book``)
``cli``       the torch commands of ``nextword`` (train, robustness, sweep, report, fetch)
"""
