"""The generation schematics show the probabilities the model gives, and refuse inconsistent input."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from nextword.booktools.schematics.generation import draw_masking_chain, draw_search_tree  # noqa: E402
from nextword.decoding import exhaustive_search, greedy  # noqa: E402
from nextword.decoding.ngram import table_model  # noqa: E402

#: The smallest model on which greedy decoding misses the most likely sequence (page 2.6).
TOY = table_model(3, 2, {(): np.log([0.5, 0.4, 0.1]), (0,): np.log([0.4, 0.3, 0.3]), (1,): np.log([0.05, 0.9, 0.05])})


def _texts(ax) -> list[str]:
    return [t.get_text() for t in ax.texts]


def test_search_tree_labels_every_leaf_with_its_path_probability():
    paths = {"greedy": greedy(TOY.next_logits, [], 2), "most likely": exhaustive_search(TOY.next_logits, [], 2)}
    ax = draw_search_tree(TOY.next_logits, ["a", "b", "c"], depth=2, highlight=paths)
    texts = _texts(ax)
    assert "0.36" in texts  # b then b: 0.4 * 0.9, the most likely path
    assert "0.20" in texts  # a then a: 0.5 * 0.4, greedy's path
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["greedy", "most likely"]
    plt.close("all")


def test_search_tree_refuses_a_path_of_the_wrong_length():
    with pytest.raises(ValueError, match="highlight"):
        draw_search_tree(TOY.next_logits, ["a", "b", "c"], depth=2, highlight={"greedy": [0]})
    with pytest.raises(ValueError, match="depth"):
        draw_search_tree(TOY.next_logits, ["a", "b", "c"], depth=4)


def test_masking_chain_draws_one_grey_box_per_masked_token():
    states = np.array([[0, 1, 2], [0, 3, 2], [3, 3, 2], [3, 3, 3]])
    ax = draw_masking_chain(states, ["the", "cat", "sat", "M"], 3, [0.0, 0.5, 1.0, 2.0])
    assert _texts(ax).count("M") == int((states == 3).sum())
    assert "t = 0.5" in _texts(ax)
    plt.close("all")


def test_masking_chain_arrows_are_in_the_book_palette():
    """The forward arrow is vermilion, the reverse one blue (the caption of Fig. 2.8.1 names them)."""
    from matplotlib.colors import to_hex

    from nextword.booktools.plotting import BOOK_COLORS
    from nextword.booktools.schematics.core import COLOURS

    ax = draw_masking_chain(np.array([[0, 1], [2, 2]]), ["a", "b", "M"], 2, [0.0, 1.0])
    labels = {t.get_text(): to_hex(t.get_color()) for t in ax.texts}
    assert labels["forward:\nmask"] == "#d55e00" and labels["reverse:\nunmask"] == "#0072b2"
    arrows = {to_hex(t.arrow_patch.get_edgecolor()) for t in ax.texts if getattr(t, "arrow_patch", None)}
    assert arrows == {"#d55e00", "#0072b2"}
    assert COLOURS["highlight"] in BOOK_COLORS  # every schematic's highlight is a palette colour
    plt.close("all")


def test_masking_chain_needs_one_time_per_row():
    with pytest.raises(ValueError, match="one row per time"):
        draw_masking_chain(np.zeros((2, 3), dtype=int), ["a", "M"], 1, [0.0])
    with pytest.raises(ValueError, match="increase"):
        draw_masking_chain(np.zeros((2, 3), dtype=int), ["a", "M"], 1, [1.0, 0.0])
