"""The route map of the book: which pages build on which, and a suggested path through them.

The graph is declared here (:data:`NODES`, one entry per Part 0–1 page and one per paper of Parts 2–5),
checked by ``tests/booktools/test_routemap.py`` against the pages that exist and the ``**Builds on:**``
links they state, and drawn by :func:`draw_route_map` for the landing page of the rendered book
(``stage_book`` writes it as ``route_map.svg``). A node's row is its depth in the graph (the longest
chain of prerequisites before it), so every arrow points down the page.

>>> [n.label for n in NODES][:3]
['Reading guide', '6.1 Parallel attention', '6.2 Attention mechanism']
>>> depths()["part1_chapter6/6_1_parallel_attention"]
1
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["NODES", "SUGGESTED_PATH", "Node", "depths", "draw_route_map", "route_map_svg"]


@dataclass(frozen=True)
class Node:
    """One stop of the route: a page (``"<part>/<page>"``) or a whole part (``"<part>"``)."""

    key: str
    label: str
    builds_on: tuple[str, ...] = ()


_CH6 = "part1_chapter6/"
#: The declared page graph, in the suggested reading order (Part 0, Part 1 page by page, then the papers).
NODES: tuple[Node, ...] = (
    Node("part0_reading_guide/00_reading_guide", "Reading guide"),
    Node(_CH6 + "6_1_parallel_attention", "6.1 Parallel attention", ("part0_reading_guide/00_reading_guide",)),
    Node(_CH6 + "6_2_attention_mechanism", "6.2 Attention mechanism", (_CH6 + "6_1_parallel_attention",)),
    Node(_CH6 + "6_3_causal_masking", "6.3 Causal masking", (_CH6 + "6_2_attention_mechanism",)),
    Node(_CH6 + "6_4_multi_head", "6.4 Multi-head attention", (_CH6 + "6_3_causal_masking",)),
    Node(_CH6 + "6_5_positional_encoding", "6.5 Positional encoding", (_CH6 + "6_3_causal_masking",)),
    Node(
        _CH6 + "6_6_context_representation",
        "6.6 The decoder block",
        (_CH6 + "6_4_multi_head", _CH6 + "6_5_positional_encoding"),
    ),
    Node(
        _CH6 + "6_7_layers_and_figure_6_24",
        "6.7 What layers carry",
        (_CH6 + "6_5_positional_encoding", _CH6 + "6_6_context_representation"),
    ),
    Node(_CH6 + "6_8_ablations", "6.8 Ablations", (_CH6 + "6_6_context_representation",)),
    Node("part2_formulation", "Part 2: LLMs formulated", (_CH6 + "6_6_context_representation",)),
    Node(
        "part3_dynamics",
        "Part 3: gradients",
        (_CH6 + "6_2_attention_mechanism", _CH6 + "6_3_causal_masking"),  # 3.1 needs only 6.2; 3.3 needs 6.3
    ),
    Node("part4_margins", "Part 4: margins", (_CH6 + "6_6_context_representation",)),
    Node("part5_svflow", "Part 5: flows", (_CH6 + "6_6_context_representation",)),
)
#: The suggested path: Part 0, Part 1 in order, then the papers (each stop after all it builds on).
SUGGESTED_PATH: tuple[str, ...] = tuple(n.key for n in NODES)

_PART_COLOURS = {
    "part0": "#e8e8e8",
    "part1": "#cfe3f5",
    "part2": "#f6dcc0",
    "part3": "#d7eccd",
    "part4": "#f3d1d6",
    "part5": "#e0d5ef",
}


_COLUMN, _ROW = 2.9, 1.55  # data units between stops side by side, and between rows of the drawing


def depths(nodes: tuple[Node, ...] = NODES) -> dict[str, int]:
    """``{key: longest chain of prerequisites before it}`` (the row of the drawing); raises ValueError on an unknown key or a cycle."""
    by_key = {n.key: n for n in nodes}
    unknown = sorted({b for n in nodes for b in n.builds_on} - set(by_key))
    if unknown:
        raise ValueError(f"nodes: builds_on names unknown stops {unknown}")
    found: dict[str, int] = {}

    def depth(key: str, trail: tuple[str, ...]) -> int:
        if key in trail:
            raise ValueError(f"nodes: a cycle through {' -> '.join(trail + (key,))}")
        if key not in found:
            found[key] = 1 + max((depth(b, trail + (key,)) for b in by_key[key].builds_on), default=-1)
        return found[key]

    return {n.key: depth(n.key, ()) for n in nodes}


def _duration(minutes: int) -> str:
    """``"40 min"``, ``"2 h 15 min"``."""
    hours, rest = divmod(int(minutes), 60)
    return f"{rest} min" if not hours else f"{hours} h" + (f" {rest} min" if rest else "")


def draw_route_map(minutes: dict[str, int | None] | None = None, nodes: tuple[Node, ...] = NODES):
    """The route map as a matplotlib figure: one box per stop, an arrow per "builds on", the suggested
    order as a number in each box, and the reading time under the label when ``minutes`` gives it."""
    import textwrap

    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.patches import FancyBboxPatch

    minutes = minutes or {}
    depth = depths(nodes)
    lanes: dict[int, list[str]] = {}
    for node in nodes:  # a row per depth, read top to bottom; stops of one row side by side, centred
        lanes.setdefault(depth[node.key], []).append(node.key)
    place = {
        key: ((lane - (len(keys) - 1) / 2) * _COLUMN, -row * _ROW)
        for row, keys in lanes.items()
        for lane, key in enumerate(keys)
    }
    width, height = 2.5, 1.2
    n_rows, n_lanes = len(lanes), max(len(keys) for keys in lanes.values())
    half_x = (n_lanes - 1) / 2 * _COLUMN + width / 2 + 0.25
    span_y = (n_rows - 1) * _ROW + height + 0.3
    fig, ax = plt.subplots(figsize=(0.42 * 2 * half_x, 0.42 * span_y))
    for node in nodes:
        x, y = place[node.key]
        for before in node.builds_on:
            bx, by = place[before]
            start = (bx, by - height / 2)  # the bottom of the box it builds on
            if depth[node.key] - depth[before] > 1 and x != bx:  # skips a row: leave by the bottom corner
                start = (bx + np.sign(x - bx) * width / 2, by - height / 2)  # on its side, clear of the row between
            ax.annotate(
                "",
                xy=(x, y + height / 2),
                xytext=start,
                arrowprops={"arrowstyle": "-|>", "color": "#555555", "lw": 1.0, "shrinkA": 1, "shrinkB": 1},
            )
    for node in nodes:
        x, y = place[node.key]
        colour = _PART_COLOURS.get(node.key[:5], "#ffffff")
        box = FancyBboxPatch(
            (x - width / 2, y - height / 2),
            width,
            height,
            boxstyle="round,pad=0.02,rounding_size=0.12",
            fc=colour,
            ec="#333333",
            lw=0.8,
        )
        ax.add_patch(box)
        time = minutes.get(node.key)
        label = "\n".join(textwrap.wrap(node.label, 15, break_long_words=False))
        ax.text(x, y + (0.17 if time else 0), label, ha="center", va="center", fontsize=8.5, linespacing=1.1)
        if time:
            ax.text(x, y - 0.36, f"about {_duration(time)}", ha="center", va="center", fontsize=7.5, color="#333333")
        ax.text(
            x - width / 2 - 0.05,
            y + height / 2 + 0.05,
            str(SUGGESTED_PATH.index(node.key) + 1),
            ha="center",
            va="center",
            fontsize=7.5,
            fontweight="bold",
            color="white",
            bbox={"boxstyle": "circle,pad=0.2", "fc": "#1f4e79", "ec": "none"},
        )
    ax.set_xlim(-half_x, half_x)
    ax.set_ylim(-(n_rows - 1) * _ROW - height / 2 - 0.15, height / 2 + 0.2)
    ax.set_axis_off()
    fig.subplots_adjust(0, 0, 1, 1)
    return fig


def route_map_svg(minutes: dict[str, int | None] | None = None) -> str:
    """:func:`draw_route_map` as SVG text, byte-identical from one call to the next (no date, fixed ids)."""
    import io

    import matplotlib
    import matplotlib.pyplot as plt

    with matplotlib.rc_context({"svg.hashsalt": "nextword-route-map", "svg.fonttype": "path"}):
        fig = draw_route_map(minutes)
        buffer = io.StringIO()
        fig.savefig(buffer, format="svg", metadata={"Date": None})
        plt.close(fig)
    return buffer.getvalue()


def part_minutes(book: Path, part: str) -> int | None:
    """Reading time of a whole part: the sum of its pages' estimates (None if it has no pages)."""
    from nextword.booktools.teaching import estimated_minutes

    pages = sorted((Path(book) / part).glob("*.py"))
    return sum(estimated_minutes(p) for p in pages) if pages else None
