"""The Part 3 schematics draw the gradient routes the paper derives, and refuse malformed input."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from nextword.booktools.schematics.dynamics import (  # noqa: E402
    BACKWARD_SIGNALS,
    FLOW_NODES,
    FORWARD_EDGES,
    backward_route,
    draw_feedback_loop,
    draw_gradient_flow,
    draw_page_route,
    draw_protocols,
    protocol_updates,
)


def test_every_backward_signal_reverses_a_forward_edge():
    assert {(to, source) for source, to, _, _ in BACKWARD_SIGNALS} <= set(FORWARD_EDGES)


def test_values_get_the_upstream_signal_and_queries_keys_only_through_the_scores():
    assert "s" not in backward_route("v") and "alpha" not in backward_route("v")
    assert backward_route("v")[-2] == "g"  # straight from the context, i.e. from u_i
    for node in ("q", "k"):
        assert backward_route(node)[-3:] == ["alpha", "s", node]
    with pytest.raises(ValueError, match="node"):
        backward_route("x")


def test_gradient_flow_draws_every_node_and_signal():
    ax = draw_gradient_flow()
    texts = [t.get_text() for t in ax.texts]
    for _, label, _ in FLOW_NODES.values():
        assert label in texts
    for _, _, formula, equation in BACKWARD_SIGNALS:
        assert f"{formula}  {equation}" in texts
    plt.close("all")


def test_feedback_loop_and_page_route_check_their_input():
    ax = draw_feedback_loop(steps=["a", "b", "c"])
    assert [t.get_text() for t in ax.texts if t.get_text()] == ["a", "b", "c"]
    with pytest.raises(ValueError, match="steps"):
        draw_feedback_loop(steps=["only one"])
    ax = draw_page_route([("3.1", "one"), ("3.2", "two")])
    assert [t.get_text() for t in ax.texts if t.get_text()] == ["3.1\none", "3.2\ntwo"]
    with pytest.raises(ValueError, match="pages"):
        draw_page_route([])
    plt.close("all")


def test_protocols_differ_only_in_the_value_step():
    updates = protocol_updates(1.0, 5.0)
    assert updates["SGD"][0] == updates["EM-like"][0] and updates["SGD"][2] == updates["EM-like"][2]
    assert updates["SGD"][1] != updates["EM-like"][1] and "5" in updates["EM-like"][1]
    ax = draw_protocols(1.0, 5.0)
    texts = [t.get_text() for t in ax.texts]
    assert texts.count(updates["EM-like"][1]) == 1
    with pytest.raises(ValueError, match="value_lr"):
        protocol_updates(1.0, 0.0)
    plt.close("all")
