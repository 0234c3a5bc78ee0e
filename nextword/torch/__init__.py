"""The torch path: small GPT models, the margin (log-barrier) embedding prior, training, robustness.

Import torch-dependent modules explicitly (``from nextword.torch import model``); the numpy library
never imports torch.
"""
