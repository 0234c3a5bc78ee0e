"""The Part 2 schematics are drawn from the objects they show, and refuse inconsistent input."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from nextword.booktools.schematics.formulation import (  # noqa: E402
    PART2_STAGES,
    bpe_merge_tree,
    draw_bpe_merge_tree,
    draw_kl_gap,
    draw_part2_route,
    draw_set_transformer,
)
from nextword.tokenizers import learn_bpe  # noqa: E402


def _texts(ax) -> list[str]:
    return [t.get_text() for t in ax.texts]


def test_merge_tree_of_example_2_1_spells_the_input():
    result = learn_bpe("abcababc", names="de")
    nodes = bpe_merge_tree(result)
    leaves = [n.symbol for n in sorted(nodes, key=lambda n: n.x) if n.level == 0]
    assert "".join(leaves) == "abcababc"
    assert sorted(n.symbol for n in nodes if n.level == 2) == ["e", "e"]
    assert sum(n.symbol == "d" for n in nodes) == 3  # two inside the e's, one on its own
    for node in nodes:  # a parent sits one or more levels above, centred over its children
        if node.children:
            left, right = (nodes[c] for c in node.children)
            assert node.level > max(left.level, right.level)
            assert node.x == (left.x + right.x) / 2


def test_merge_tree_drawing_labels_each_merge():
    ax = draw_bpe_merge_tree(learn_bpe("abcababc", names="de"))
    texts = _texts(ax)
    assert "level 1: d = a b" in texts and "level 2: e = d c" in texts
    assert texts.count("e") == 2
    plt.close("all")


def test_merge_tree_refuses_other_objects():
    with pytest.raises(TypeError, match="result"):
        bpe_merge_tree(("a", "b"))


def test_route_names_every_page_of_part_2():
    texts = " ".join(_texts(draw_part2_route()))
    for n in range(1, 10):
        assert f"2.{n}" in texts
    assert len(PART2_STAGES) == 7
    plt.close("all")


def test_kl_gap_title_is_the_sum_of_the_terms():
    p, q = np.array([0.5, 0.3, 0.2]), np.array([0.4, 0.4, 0.2])
    ax = draw_kl_gap(p, q, ["a", "b", "c"])
    expected = float(np.sum(p * np.log(p / q)))
    assert f"{expected:.3f} nats" in ax.get_title()
    assert "+0.000" in _texts(ax)  # equal probabilities contribute nothing
    assert ax.get_xlabel().startswith("outcome") and "p log(p/q)" in ax.get_xlabel()
    named = draw_kl_gap(p, q, ["a", "b", "c"], model_symbol="π", outcome_name="text $f$")
    assert named.get_xlabel().startswith("text $f$") and "p log(p/π)" in named.get_xlabel()
    plt.close("all")


def test_kl_gap_refuses_bad_distributions():
    with pytest.raises(ValueError, match="add up to 1"):
        draw_kl_gap([0.5, 0.6], [0.5, 0.5], ["a", "b"])
    with pytest.raises(ValueError, match="positive wherever"):
        draw_kl_gap([0.5, 0.5], [1.0, 0.0], ["a", "b"])
    with pytest.raises(ValueError, match="one entry per outcome"):
        draw_kl_gap([0.5, 0.5], [0.5, 0.5], ["a"])


def test_set_transformer_diagram_shows_every_step_of_the_block():
    texts = " ".join(_texts(draw_set_transformer(3, pooling="max")))
    for equation in ("(5.3a)", "(5.3b)", "(5.3c)", "(5.3d)", "(5.6)", "(5.7)"):
        assert equation in texts
    assert "A_2, …, A_3" in texts and "max over" in texts
    assert "T = P ∘ A_3 ∘ A_2 ∘ A_1" in texts  # (5.6) names every block drawn, no dots for missing ones
    assert "T = P ∘ A_2 ∘ A_1" in " ".join(_texts(draw_set_transformer(2)))
    assert "A_5 ∘ … ∘ A_1" in " ".join(_texts(draw_set_transformer(5)))
    # the book's letters (positions i, j; the softmax by name), not the paper's h_k, α_kl, σ
    assert "h_i + Σ_j α_ij V h_j" in texts and "softmax(· / τ)" in texts
    assert not any(letter in texts for letter in ("h_k", "α_kl", "σ("))
    plt.close("all")


def test_set_transformer_diagram_refuses_bad_arguments():
    with pytest.raises(ValueError, match="n_blocks"):
        draw_set_transformer(0)
    with pytest.raises(ValueError, match="pooling"):
        draw_set_transformer(2, pooling="sum")
