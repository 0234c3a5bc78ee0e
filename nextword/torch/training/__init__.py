"""One training loop with checkpoints, exact resume, devices, AMP and DDP, used by every torch run.

``engine`` (``fit``: the loop; ``optimiser_step``) · ``token_lm`` (the Chapter 6 TinyLM's next-token
training on it, behind ``train_lm``) · ``config`` (TrainConfig and presets) · ``data`` (character
batching) · ``checkpoint`` · ``distributed`` · ``loop`` (§7's CE + λ·margin on it: ``train``,
``train_or_load``) · ``fetch`` (WikiText-2 download, never called by tests) · ``gpu_check`` (the loop on
a GPU: CUDA against CPU, bf16 AMP, steps/s, the §7 pair; ``nextword gpu-check``).
"""
