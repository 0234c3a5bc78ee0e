"""Schematic figures of Part 3 (the gradient dynamics of attention), drawn from code.

* :func:`draw_gradient_flow` — one attention head with a read-out: the forward pass left to right and,
  in vermilion, the loss gradient flowing back; each vermilion arrow carries the formula the paper derives for it
  (values get the upstream signal directly, scores an advantage-weighted signal, queries and keys only
  through the scores). The arrows are the data :data:`BACKWARD_SIGNALS`, and :func:`backward_route`
  reads off which quantities a gradient passes through on its way from the loss to a node.
* :func:`draw_feedback_loop` — the routing/content loop of §4.4 as a cycle of four boxes (page 3.2).
* :func:`draw_protocols` — what one training step of SGD and of the EM-like schedule updates (page 3.3).
* :func:`draw_page_route` — the pages of a part as boxes joined by arrows (the part overview).

Every function takes an optional matplotlib ``Axes`` and returns the one it drew on.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
from matplotlib.axes import Axes

from nextword.booktools.schematics.core import COLOURS, arrow, blank, box

__all__ = [
    "BACKWARD_SIGNALS",
    "FORWARD_EDGES",
    "FLOW_NODES",
    "backward_route",
    "draw_feedback_loop",
    "draw_gradient_flow",
    "draw_page_route",
    "draw_protocols",
    "protocol_updates",
]

#: The quantities of one head: name -> (centre (x, y), label, colour role of ``core.COLOURS``).
FLOW_NODES: dict[str, tuple[tuple[float, float], str, str]] = {
    "x": ((0.0, 2.0), "inputs\n$x_j$", "input"),
    "q": ((2.4, 3.6), "queries\n$q_i = x_i W^Q$", "query"),
    "k": ((2.4, 2.0), "keys\n$k_j = x_j W^K$", "key"),
    "v": ((2.4, 0.0), "values\n$v_j = x_j W^V$", "value"),
    "s": ((5.0, 2.8), "scores\n$s_{ij}$", "query"),
    "alpha": ((7.4, 2.8), "weights\n$\\alpha_{ij}$", "state"),
    "g": ((9.8, 1.4), "context\n$g_i$", "state"),
    "logits": ((12.2, 1.4), "logits $z_i$,\nprobs $p_i$", "state"),
    "L": ((14.4, 1.4), "loss\n$\\mathcal{L}$", "input"),
}

#: The forward pass: (from, to) — what is computed from what (Eqs. (1)–(9) of the paper).
FORWARD_EDGES: tuple[tuple[str, str], ...] = (
    ("x", "q"),
    ("x", "k"),
    ("x", "v"),
    ("q", "s"),
    ("k", "s"),
    ("s", "alpha"),
    ("alpha", "g"),
    ("v", "g"),
    ("g", "logits"),
    ("logits", "L"),
)

#: The backward pass: (from, to, the gradient that arrives at ``to``, the paper's equation). Each is the
#: reverse of a forward edge; ``to`` receives the derivative of the loss with respect to itself.
BACKWARD_SIGNALS: tuple[tuple[str, str, str, str], ...] = (
    ("L", "logits", "$p_i - \\mathrm{onehot}(y_i)$", "(13)"),
    ("logits", "g", "$u_i = \\partial \\mathcal{L}/\\partial g_i$", "(14)"),
    ("g", "v", "$\\sum_i \\alpha_{ij}\\, u_i$", "(16)"),
    ("g", "alpha", "$u_i \\cdot v_j = -a_{ij}$", "(17)"),
    ("alpha", "s", "$-\\alpha_{ij}A_{ij}$", "(23)"),
    ("s", "q", "$\\sum_j (\\partial \\mathcal{L}/\\partial s_{ij})\\, k_j/\\sqrt{d_k}$", "(24)"),
    ("s", "k", "$\\sum_i (\\partial \\mathcal{L}/\\partial s_{ij})\\, q_i/\\sqrt{d_k}$", "(26)"),
)

# Which side of its forward edge each vermilion arrow runs on (+1: left of the backward direction, -1: right)
# and how far its label sits from the arrow, in data units; chosen for legibility.
_SIDE = {
    "logits": (1, 0.45),
    "g": (1, 0.45),
    "v": (1, 0.5),
    "alpha": (-1, 1.2),
    "s": (1, 0.45),
    "q": (-1, 0.9),
    "k": (1, 1.0),
}


def backward_route(node: str) -> list[str]:
    """The quantities the loss gradient passes through from ``L`` to ``node``, both ends included.

    Follows :data:`BACKWARD_SIGNALS` (a tree: every quantity gets its gradient from one place).

    >>> backward_route("v")
    ['L', 'logits', 'g', 'v']
    >>> backward_route("q")
    ['L', 'logits', 'g', 'alpha', 's', 'q']
    """
    parent = {to: source for source, to, _, _ in BACKWARD_SIGNALS}
    if node != "L" and node not in parent:
        known = ["L", *parent]
        raise ValueError(f"node must be one of {known} (the gradient reaches no other), got {node!r}")
    route = [node]
    while route[-1] != "L":
        route.append(parent[route[-1]])
    return route[::-1]


def _axes(ax: Axes | None, size: tuple[float, float]) -> Axes:
    if ax is None:
        _, ax = plt.subplots(figsize=size)
    return ax


def draw_gradient_flow(ax: Axes | None = None, *, show_equations: bool = True) -> Axes:
    """One head with a read-out, forward (grey, left to right) and backward (vermilion, right to left).

    Nodes are :data:`FLOW_NODES`, grey arrows :data:`FORWARD_EDGES`, vermilion arrows
    :data:`BACKWARD_SIGNALS` labelled with the gradient each carries (and, if ``show_equations``, the
    paper's equation number). The values' arrow comes straight from the context: values receive the
    upstream signal ``u_i`` without passing through the softmax; queries and keys receive theirs only
    through the scores.
    """
    ax = _axes(ax, (12.5, 5.4))
    width, height = 1.7, 0.85
    for centre, label, role in FLOW_NODES.values():
        box(ax, centre, label, width=width, height=height, colour=COLOURS[role], fontsize=8.5)
    centre = {name: spec[0] for name, spec in FLOW_NODES.items()}
    for a, b in FORWARD_EDGES:
        arrow(ax, centre[a], centre[b], shrink=30.0, width=0.9)
    for source, to, formula, equation in BACKWARD_SIGNALS:
        (x0, y0), (x1, y1) = centre[source], centre[to]
        side, distance = _SIDE[to]
        length = ((x1 - x0) ** 2 + (y1 - y0) ** 2) ** 0.5
        nx, ny = side * -(y1 - y0) / length, side * (x1 - x0) / length  # unit normal on the chosen side
        shift = 0.2
        start, end = (x0 + shift * nx, y0 + shift * ny), (x1 + shift * nx, y1 + shift * ny)
        arrow(ax, start, end, colour=COLOURS["highlight"], width=1.5, shrink=30.0)
        text = f"{formula}  {equation}" if show_equations else formula
        middle = ((x0 + x1) / 2 + (shift + distance) * nx, (y0 + y1) / 2 + (shift + distance) * ny)
        ax.text(*middle, text, ha="center", va="center", fontsize=8.5, color=COLOURS["highlight"])
    blank(ax, (-1.0, 15.4), (-1.1, 5.0))
    ax.text(-0.9, 4.75, "grey: forward pass    vermilion: the loss gradient flowing back", fontsize=8.5, va="top")
    return ax


#: The four steps of the §4.4 loop (with the signs this book checks on page 3.2).
FEEDBACK_STEPS: tuple[str, ...] = (
    "position $j$ helps query $i$:\nadvantage $A_{ij} > 0$",
    "score $s_{ij}$ rises,\nso weight $\\alpha_{ij}$ grows",
    "$u_i$ weighs more in $\\bar u_j = \\sum_{i'} \\alpha_{i'j} u_{i'}$:\n$v_j$ moves further along $-u_i$",
    "alignment $a_{ij} = -u_i \\cdot v_j$ rises\nabove the mean: $A_{ij}$ grows",
)


def draw_feedback_loop(ax: Axes | None = None, steps: Sequence[str] = FEEDBACK_STEPS) -> Axes:
    """The routing/content feedback loop of §4.4 as a cycle: one box per step, arrows step -> next step.

    ``steps`` (at least 2 strings) are placed clockwise around a circle, the first at the top.
    """
    import numpy as np

    steps = list(steps)
    if len(steps) < 2 or not all(isinstance(s, str) for s in steps):
        raise ValueError(f"steps must be at least 2 strings, got {steps!r}")
    ax = _axes(ax, (7.5, 5.6))
    n = len(steps)
    angles = np.pi / 2 - 2 * np.pi * np.arange(n) / n
    centres = [(3.2 * np.cos(a), 2.8 * np.sin(a)) for a in angles]
    for centre, label in zip(centres, steps):
        box(ax, centre, label, width=3.3, height=1.0, colour=COLOURS["state"], fontsize=8.5)
    for i in range(n):
        arrow(ax, centres[i], centres[(i + 1) % n], rad=-0.25, shrink=50.0, width=1.3, colour=COLOURS["highlight"])
    blank(ax, (-5.2, 5.2), (-3.5, 3.5))
    return ax


def draw_page_route(pages: Sequence[tuple[str, str]], ax: Axes | None = None) -> Axes:
    """The pages of a part as boxes in reading order, joined by arrows.

    ``pages``: ``[(number, title), ...]``, e.g. ``[("3.1", "Attention gradients"), ...]`` (at least one).
    """
    pages = list(pages)
    if not pages or not all(isinstance(p, tuple) and len(p) == 2 for p in pages):
        raise ValueError(f"pages must be a non-empty list of (number, title) pairs, got {pages!r}")
    ax = _axes(ax, (2.6 * len(pages) + 0.5, 1.9))
    spacing = 2.6
    for i, (number, title) in enumerate(pages):
        box(ax, (i * spacing, 0.0), f"{number}\n{title}", width=2.2, height=1.1, colour=COLOURS["input"])
        if i:
            arrow(ax, ((i - 1) * spacing + 1.1, 0.0), (i * spacing - 1.1, 0.0), shrink=2.0, width=1.2)
    blank(ax, (-1.3, spacing * (len(pages) - 1) + 1.3), (-0.75, 0.75))
    return ax


#: The parameter groups of one head, in the order :func:`draw_protocols` draws them.
PARAMETER_GROUPS: tuple[str, ...] = (
    "routing\n$W^Q$, $W^K$",
    "values\n$v_j = x_j W^V$",
    "read-out\n$W^{\\mathrm{out}}$, $b$",
)


def protocol_updates(lr: float, value_lr: float) -> dict[str, tuple[str, ...]]:
    """What one step of each protocol of §5.3/§7.2 does to each of :data:`PARAMETER_GROUPS`.

    SGD: a gradient step with rate ``lr`` on everything. EM-like: the same gradient step on routing and
    read-out, and on the values the closed-form step (33), ``Δv_j = -value_lr Σ_i α_ij u_i``, carried to
    ``W_V`` by least squares (``nextword.theory.dynamics.sticky``).

    >>> updates = protocol_updates(1.0, 5.0)
    >>> [a == b for a, b in zip(updates["SGD"], updates["EM-like"])]
    [True, False, True]
    """
    for name, rate in (("lr", lr), ("value_lr", value_lr)):
        if not (isinstance(rate, (int, float)) and rate > 0):
            raise ValueError(f"{name} must be a positive number, got {rate!r}")
    gradient = f"gradient step\nrate {lr:g}"
    value_step = f"closed-form step (33)\n$\\Delta v_j = -{value_lr:g}\\sum_i \\alpha_{{ij}} u_i$"
    return {"SGD": (gradient, gradient, gradient), "EM-like": (gradient, value_step, gradient)}


def draw_protocols(lr: float, value_lr: float, ax: Axes | None = None) -> Axes:
    """The two training schedules as a table of boxes: one row per protocol, one column per parameter
    group (:data:`PARAMETER_GROUPS`); the cells where the protocols differ are highlighted."""
    updates = protocol_updates(lr, value_lr)
    ax = _axes(ax, (9.0, 3.2))
    col_x = [2.4 + 2.9 * c for c in range(len(PARAMETER_GROUPS))]
    for x, group in zip(col_x, PARAMETER_GROUPS):
        box(ax, (x, 2.2), group, width=2.6, height=0.75, colour=COLOURS["input"], fontsize=8.5)
    for r, (protocol, cells) in enumerate(updates.items()):
        y = 1.1 - 1.05 * r
        ax.text(0.1, y, protocol, ha="left", va="center", fontsize=10, fontweight="bold")
        for c, (x, text) in enumerate(zip(col_x, cells)):
            differs = text != updates["SGD"][c]
            colour = COLOURS["highlight"] if differs else COLOURS["edge"]
            box(
                ax,
                (x, y),
                text,
                width=2.6,
                height=0.85,
                colour=COLOURS["state"] if differs else "#ffffff",
                edge=colour,
                fontsize=8.5,
            )
    blank(ax, (0.0, col_x[-1] + 1.45), (-0.5, 2.7))
    return ax
