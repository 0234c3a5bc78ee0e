"""Positions and embeddings refuse bad input by name (issue #22); valid input is unchanged."""

from __future__ import annotations

import time

import numpy as np
import pytest

from nextword.decoder import DecoderConfig, DecoderLM
from nextword.embedding import TokenEmbedding, one_hot
from nextword.positions import (
    LearnedPositionalEmbedding,
    rope_rotation_matrix,
    sinusoidal_encoding,
    sinusoidal_shift_matrix,
)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nonfinite_positions_are_refused(bad: float) -> None:
    with pytest.raises(ValueError, match="position must be finite"):
        rope_rotation_matrix(bad, 4)
    with pytest.raises(ValueError, match="k must be finite"):
        sinusoidal_shift_matrix(bad, 4)


def test_position_types_are_named() -> None:
    with pytest.raises(TypeError, match="position must be a real number"):
        rope_rotation_matrix("1.0", 4)
    with pytest.raises(TypeError, match="k must be a real number"):
        sinusoidal_shift_matrix(np.array([1.0, 2.0]), 4)
    with pytest.raises(ValueError, match="sinusoidal_encoding.*limit"):
        sinusoidal_encoding(10**12, 4)


@pytest.mark.parametrize("cls", [TokenEmbedding, LearnedPositionalEmbedding])
def test_embedding_tables_refuse_nan_std_and_integer_dtypes(cls: type) -> None:
    with pytest.raises(ValueError, match="std must be finite"):
        cls(5, 4, rng=0, std=np.nan)
    with pytest.raises(ValueError, match="std must lie in"):
        cls(5, 4, rng=0, std=-1.0)
    with pytest.raises(TypeError, match="dtype must be float32 or float64"):
        cls(5, 4, rng=0, dtype=np.int64)
    with pytest.raises(TypeError, match="rng must be a numpy.random.Generator"):
        cls(5, 4, rng="seed")
    # an int seed is what np.random.default_rng(seed) gives; float32 is kept
    a, b = cls(5, 4, rng=3, dtype=np.float32), cls(5, 4, rng=np.random.default_rng(3), dtype=np.float32)
    assert a.table.dtype == np.float32 and np.array_equal(a.table, b.table)


def test_one_hot_refuses_object_dtype() -> None:
    with pytest.raises(TypeError, match="dtype"):
        one_hot([0, 1], 3, dtype=object)
    assert one_hot([0, 1], 3, dtype=np.int8).dtype == np.int8


def test_sinusoid_table_is_built_lazily() -> None:
    """A huge max_len costs nothing on the first forward pass, and the numbers are those of a
    small max_len (rows of the sinusoid table do not depend on its length)."""
    small = DecoderLM(DecoderConfig(7, 4, 2, 1, max_len=8), rng=0)
    t0 = time.process_time()
    big = DecoderLM(DecoderConfig(7, 4, 2, 1, max_len=10**8), rng=0)
    out = big.logits([1, 2, 3])
    assert time.process_time() - t0 < 0.5
    assert big._pe.shape[0] <= 64
    np.testing.assert_array_equal(out, small.logits([1, 2, 3]))
    # growing the table later gives the same rows as building it at once
    long = list(np.arange(100) % 7)
    np.testing.assert_array_equal(
        big.logits(long)[-1], DecoderLM(DecoderConfig(7, 4, 2, 1, 128), rng=0).logits(long)[-1]
    )
