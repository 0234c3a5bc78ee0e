"""DecoderConfig, DecoderLM and the KV cache refuse bad input by name (issue #22)."""

from __future__ import annotations

import numpy as np
import pytest

from nextword.attention.kv_cache import KVCache, LayerKVCache
from nextword.decoder import DecoderConfig, DecoderLM

BASE = dict(vocab_size=5, d_model=4, num_heads=2, num_layers=1, max_len=8)


@pytest.mark.parametrize(
    "field, value, exc, match",
    [
        ("eps", -1.0, ValueError, "eps must lie in"),
        ("eps", np.nan, ValueError, "eps must be finite"),
        ("emb_std", np.inf, ValueError, "emb_std must be finite"),
        ("rope_base", 1.0, ValueError, "rope_base must lie in"),
        ("causal", "yes", TypeError, "causal must be True or False"),
        ("positional", None, TypeError, "positional must be one of"),
        ("vocab_size", 10**9, ValueError, "vocab_size, d_model.*limit"),
    ],
)
def test_config_fields_are_checked(field: str, value: object, exc: type, match: str) -> None:
    with pytest.raises(exc, match=match):
        DecoderConfig(**{**BASE, field: value})


def test_int_seed_is_default_rng() -> None:
    a = DecoderLM(DecoderConfig(**BASE), rng=42)
    b = DecoderLM(DecoderConfig(**BASE), rng=np.random.default_rng(42))
    np.testing.assert_array_equal(a.logits([1, 2]), b.logits([1, 2]))
    with pytest.raises(TypeError, match="rng must be"):
        DecoderLM(DecoderConfig(**BASE), rng=np.random.RandomState(0))


def test_load_parameters_checks_everything_before_copying() -> None:
    lm = DecoderLM(DecoderConfig(**BASE), rng=0)
    before = lm.tok_emb.copy()
    bad = {"tok_emb": np.zeros((5, 4)), "W_U": np.full((4, 5), np.nan)}
    with pytest.raises(ValueError, match=r"params\['W_U'\] contains 20 non-finite"):
        lm.load_parameters(bad, strict=False)
    np.testing.assert_array_equal(lm.tok_emb, before)  # nothing was copied
    with pytest.raises(TypeError, match="params must be a mapping"):
        lm.load_parameters([("tok_emb", before)])


def test_prefix_none_is_named() -> None:
    lm = DecoderLM(DecoderConfig(**BASE), rng=0)
    with pytest.raises(TypeError, match="prefix must be a 1-D sequence"):
        lm.next_logits(None)


def test_kv_cache_refuses_nonfinite_and_mixed_keys() -> None:
    with pytest.raises(ValueError, match="k contains 1 non-finite"):
        LayerKVCache(4).append(np.array([[[np.nan, 1.0]]]), np.ones((1, 1, 2)))
    with pytest.raises(TypeError, match="share one float dtype"):
        LayerKVCache(4).append(np.ones((1, 1, 2)), np.ones((1, 1, 2), np.float32))
    with pytest.raises(TypeError, match="length must be an integer"):
        KVCache(1).truncate(0.5)
    with pytest.raises(ValueError, match="capacity"):
        KVCache(1, capacity=10**12)
