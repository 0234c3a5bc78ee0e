"""One training loop (CE + λ·margin) with checkpoints, exact resume, devices, AMP and DDP.

``config`` (TrainConfig and presets) · ``data`` (character batching) · ``checkpoint`` · ``distributed`` ·
``loop`` (``train``, ``train_or_load``) · ``fetch`` (WikiText-2 download, never called by tests) ·
``gpu_check`` (the loop on a GPU: CUDA against CPU, bf16 AMP, steps/s, the §7 pair; ``nextword gpu-check``).
"""
