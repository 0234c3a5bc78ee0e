"""One training loop with checkpoints, exact resume, devices, AMP and DDP, used by every torch run.

``engine`` (``fit``: the loop; ``optimiser_step``) · ``token_lm`` (the Chapter 6 TinyLM's next-token
training on it, behind ``train_lm``) · ``data`` (character batching) · ``checkpoint`` · ``device``
(device and bf16 autocast selection) · ``distributed`` · ``fetch`` (WikiText-2 download, never called by
tests). It knows no objective: the §7 barrier training is :mod:`nextword.torch.barrier.train`.
"""
