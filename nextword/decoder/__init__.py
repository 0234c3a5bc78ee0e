"""The numpy decoder-only transformer (Chapter 6, §6.6): norms, feed-forward and the block
(``layers``), the language model with its config and KV-cached generation (``lm``).
"""

from nextword.decoder.layers import (
    layer_norm,
    rms_norm,
    gelu,
    relu,
    feed_forward,
    TransformerBlock,
)
from nextword.decoder.lm import (
    DecoderConfig,
    DecoderLM,
)

__all__ = [
    "layer_norm",
    "rms_norm",
    "gelu",
    "relu",
    "feed_forward",
    "TransformerBlock",
    "DecoderConfig",
    "DecoderLM",
]
