"""Drawing pieces shared by the book's schematic figures, and the figures of 6.1.

The pieces take a matplotlib ``Axes`` in data coordinates (the caller sets limits and hides the axes
with :func:`blank`): :func:`box` (a labelled rounded box), :func:`arrow` (an arrow between two points),
:func:`token_row` (a row of word boxes, one per position). :func:`recurrence_vs_attention` draws the
dependency graphs of §6.1 from :func:`nextword.chapter6.rnn_graph` and
:func:`nextword.chapter6.attention_graph`, so the picture has exactly the library's edges.

>>> fig = recurrence_vs_attention(["the", "engineer", "submitted", "code"])
>>> [ax.get_title() for ax in fig.axes]
['recurrent network (7 edges)\\nx[1] → z[4]: 4 arrows', 'one attention layer (10 edges)\\nx[1] → y[4]: 1 arrow']
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["COLOURS", "arrow", "blank", "box", "recurrence_vs_attention", "token_row"]

#: One colour per role, the same in every schematic: inputs, states/outputs, queries, keys, values, highlight.
#: The fills are light tints; the highlight (a path, an arrow, a cell to look at) is the Okabe–Ito vermilion of
#: :data:`nextword.booktools.plotting.BOOK_COLORS`, so a caption can name it as the plots' colours are named.
COLOURS = {
    "input": "#dbe9f6",
    "state": "#fde2c4",
    "query": "#cde8c8",
    "key": "#f6cfd5",
    "value": "#e0d5ef",
    "highlight": "#D55E00",  # vermilion
    "edge": "#7f7f7f",
}


def blank(ax, xlim: tuple[float, float], ylim: tuple[float, float]) -> None:
    """Set the data limits of a schematic and hide its axes (a schematic has no scale)."""
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    ax.set_aspect("equal")
    ax.set_axis_off()


def box(
    ax,
    xy: tuple[float, float],
    text: str,
    *,
    width: float = 0.8,
    height: float = 0.5,
    colour: str = "#ffffff",
    fontsize: float = 9,
    edge: str = "#333333",
) -> None:
    """A rounded box of ``width`` x ``height`` centred on ``xy`` with ``text`` in it."""
    from matplotlib.patches import FancyBboxPatch

    x, y = xy
    ax.add_patch(
        FancyBboxPatch(
            (x - width / 2, y - height / 2),
            width,
            height,
            fc=colour,
            ec=edge,
            lw=0.9,
            boxstyle="round,pad=0.02,rounding_size=0.08",
        )
    )
    ax.text(x, y, text, ha="center", va="center", fontsize=fontsize)


def arrow(
    ax,
    start: tuple[float, float],
    end: tuple[float, float],
    *,
    colour: str = COLOURS["edge"],
    width: float = 1.0,
    rad: float = 0.0,
    shrink: float = 12.0,
) -> None:
    """An arrow from ``start`` to ``end`` (points), bent by ``rad`` (0: straight), stopping short of both."""
    ax.annotate(
        "",
        xy=end,
        xytext=start,
        arrowprops={
            "arrowstyle": "-|>",
            "color": colour,
            "lw": width,
            "shrinkA": shrink,
            "shrinkB": shrink,
            "connectionstyle": f"arc3,rad={rad}",
        },
    )


def token_row(
    ax,
    labels: Sequence[str],
    y: float,
    *,
    colour: str = COLOURS["input"],
    spacing: float = 1.2,
    width: float = 1.0,
    fontsize: float = 9,
) -> list[tuple[float, float]]:
    """One box per label along ``y`` (position i at x = i * spacing, 0-based); returns the box centres."""
    centres = [(i * spacing, y) for i in range(len(labels))]
    for centre, label in zip(centres, labels):
        box(ax, centre, label, width=width, colour=colour, fontsize=fontsize)
    return centres


def _shortest_path(adjacency: np.ndarray, source: int, target: int) -> list[tuple[int, int]]:
    """The edges of one shortest directed path from ``source`` to ``target`` (breadth-first search)."""
    parent = {source: source}
    frontier = [source]
    while frontier and target not in parent:
        next_frontier = []
        for node in frontier:
            for successor in np.flatnonzero(adjacency[node]):
                if int(successor) not in parent:
                    parent[int(successor)] = node
                    next_frontier.append(int(successor))
        frontier = next_frontier
    if target not in parent:
        return []
    path, node = [], target
    while node != source:
        path.append((parent[node], node))
        node = parent[node]
    return path[::-1]


def _graph_panel(
    ax, words: Sequence[str], edges: list[tuple[int, int]], path: list[tuple[int, int]], title: str, top: str
) -> None:
    """Inputs x[1..T] on the bottom row, states ``top``[1..T] on the top row, one arrow per edge of the graph.

    Node numbering is the library's: nodes 0..T-1 are x[1..T], nodes T..2T-1 are the states. The edges of
    ``path`` are drawn vermilion and thick. ``top`` is the letter of the top row: ``"z"`` for a recurrent
    network's states, ``"y"`` for an attention layer's outputs (6.1's letters).
    """
    T = len(words)
    inputs = token_row(ax, [f"x[{t}]\n{w}" for t, w in enumerate(words, start=1)], 0.0, fontsize=8)
    states = token_row(ax, [f"{top}[{t}]" for t in range(1, T + 1)], 1.6, colour=COLOURS["state"], fontsize=8)
    place = {t: inputs[t] for t in range(T)} | {T + t: states[t] for t in range(T)}
    for a, b in sorted(edges, key=lambda e: e in path):  # the path last, on top
        start, end = place[a], place[b]
        on_path = (a, b) in path
        if a >= T and b >= T:  # state to state: along the top row
            start, end = (start[0] + 0.5, start[1]), (end[0] - 0.5, end[1])
        else:
            start, end = (start[0], start[1] + 0.3), (end[0], end[1] - 0.25)
        arrow(
            ax,
            start,
            end,
            colour=COLOURS["highlight"] if on_path else COLOURS["edge"],
            width=1.8 if on_path else 0.8,
            shrink=1.0,
        )
    blank(ax, (-0.7, 1.2 * (T - 1) + 0.7), (-0.55, 2.2))
    ax.set_title(title, fontsize=9.5)


def recurrence_vs_attention(words: Sequence[str]):
    """Fig. 6.1 as two dependency graphs over ``words``: a recurrent network (x[t] → z[t] and
    z[t-1] → z[t], z the state) beside one causal attention layer (x[s] → y[t] for every s ≤ t, y the
    output). A shortest path from the first word x[1] to the last state z[T] or output y[T] is vermilion. Edges and path lengths come from
    ``nextword.chapter6``."""
    import matplotlib.pyplot as plt

    from nextword.chapter6 import attention_graph, path_lengths, rnn_graph

    if len(words) < 2:
        raise ValueError(f"words must hold at least 2 words, got {len(words)}")
    T = len(words)
    fig, axes = plt.subplots(1, 2, figsize=(1.75 * T + 0.6, 2.5))
    for ax, graph, name, top in (
        (axes[0], rnn_graph(T), "recurrent network", "z"),
        (axes[1], attention_graph(T), "one attention layer", "y"),
    ):
        edges = [(int(a), int(b)) for a, b in np.argwhere(np.asarray(graph))]
        hops = int(path_lengths(graph, 0)[2 * T - 1])
        path = _shortest_path(np.asarray(graph), 0, 2 * T - 1)
        if len(path) != hops:
            raise AssertionError(f"breadth-first path of {len(path)} edges, path_lengths says {hops}")
        arrows = "arrow" if hops == 1 else "arrows"
        _graph_panel(ax, words, edges, path, f"{name} ({len(edges)} edges)\nx[1] → {top}[{T}]: {hops} {arrows}", top)
    fig.tight_layout()
    return fig
