"""Attention (Chapter 6, §6.2–6.4): softmax, masks, scaled dot-product and multi-head attention,
the KV cache, and the closed-form gradients of an attention head.

``core`` softmax, masks, scaled dot-product attention · ``multihead`` multi-head attention ·
``kv_cache`` per-layer key/value cache · ``gradients`` closed-form backward (Part 3's boxed results).
"""

from nextword.attention.core import (
    softmax,
    log_softmax,
    causal_mask,
    causal_alignment,
    band_mask,
    scaled_dot_product_attention,
)
from nextword.attention.multihead import (
    MultiHeadAttention,
    mask_from_torch,
    mask_to_torch,
    key_mask_from_torch,
)
from nextword.attention.gradients import (
    AttentionGradients,
    attention_backward,
    CrossEntropyUpstream,
    cross_entropy_upstream,
)
from nextword.attention.kv_cache import (
    LayerKVCache,
    KVCache,
)

__all__ = [
    "softmax",
    "log_softmax",
    "causal_mask",
    "causal_alignment",
    "band_mask",
    "scaled_dot_product_attention",
    "MultiHeadAttention",
    "mask_from_torch",
    "mask_to_torch",
    "key_mask_from_torch",
    "AttentionGradients",
    "attention_backward",
    "CrossEntropyUpstream",
    "cross_entropy_upstream",
    "LayerKVCache",
    "KVCache",
]
