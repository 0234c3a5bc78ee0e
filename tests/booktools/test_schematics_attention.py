"""The attention schematics are drawn from the arrays they show, and refuse inconsistent input."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from nextword.attention import MultiHeadAttention  # noqa: E402
from nextword.booktools.schematics.attention import (  # noqa: E402
    draw_causal_mask,
    draw_heads_split_concat,
    draw_one_head,
)

EMBEDDINGS = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
W = np.array([[1.0, 0.0], [1.0, 1.0]])


def _texts(ax) -> list[str]:
    return [t.get_text() for t in ax.texts]


def test_one_head_shows_the_weights_it_computes():
    ax = draw_one_head(EMBEDDINGS, W, W, W, ["a", "b", "c"])
    texts = _texts(ax)
    assert texts.count("−∞") == 3  # the three future entries of a 3x3 causal score matrix
    assert "1.00" in texts  # row 1 puts all its weight on itself
    plt.close("all")


def test_one_head_needs_one_label_per_word():
    with pytest.raises(ValueError, match="words"):
        draw_one_head(EMBEDDINGS, W, W, W, ["a", "b"])


def test_causal_mask_blocks_the_upper_triangle():
    ax = draw_causal_mask(["w1", "w2", "w3", "w4"])
    texts = _texts(ax)
    assert texts.count("−∞") == 4 * 3 // 2
    assert texts.count("0") == 4 * 5 // 2
    plt.close("all")


def test_heads_split_concat_draws_every_head():
    mha = MultiHeadAttention(8, 2, rng=np.random.default_rng(0))
    ax = draw_heads_split_concat(mha, np.random.default_rng(1).standard_normal((3, 8)))
    assert sum("head 1" in t for t in _texts(ax)) >= 1
    assert sum("head 2" in t for t in _texts(ax)) >= 1
    plt.close("all")
