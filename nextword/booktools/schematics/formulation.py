"""Schematic figures of Part 2 (Baptista, Stuart, Tran, "Large Language Models: A Mathematical Formulation").

Each figure is drawn from the objects it explains, so it cannot disagree with the code of its page:

* :func:`bpe_merge_tree` / :func:`draw_bpe_merge_tree` — the tokens of a byte-pair encoding as trees of
  pairs: each merged token sits above the two symbols it joins, the initial symbols at the bottom (§2.2);
* :func:`draw_part2_route` — the formulation as a pipeline, text -> tokens -> vectors -> next-token
  distribution -> training, generation and evaluation, each box labelled with the page that builds it;
* :func:`draw_kl_gap` — two distributions side by side and the per-outcome terms of their
  Kullback-Leibler divergence (§4), signed, on a scale centred on zero;
* :func:`draw_set_transformer` — the next-token model of §5.1–5.2 as a flow of boxes: the attention
  block (5.3a–d) repeated, pooling, the linear map B and the softmax (5.6)–(5.7).

>>> from nextword.tokenizers import learn_bpe
>>> [(n.symbol, n.level) for n in bpe_merge_tree(learn_bpe("abcababc", names="de")) if n.level == 2]
[('e', 2), ('e', 2)]
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes

from nextword.booktools.schematics.core import COLOURS, arrow, blank, box
from nextword.tokenizers.trainer import BPEResult

__all__ = [
    "TreeNode",
    "bpe_merge_tree",
    "draw_bpe_merge_tree",
    "draw_part2_route",
    "draw_kl_gap",
    "draw_set_transformer",
]


@dataclass(frozen=True)
class TreeNode:
    """One box of a merge tree: ``symbol`` drawn at ``(x, level)``; ``children`` are indices into the
    node list (empty for an initial symbol, two for a merged one)."""

    symbol: Hashable
    level: int
    x: float
    children: tuple[int, ...]


def bpe_merge_tree(result: BPEResult) -> list[TreeNode]:
    """The final sequence of a :func:`nextword.tokenizers.learn_bpe` run as a forest of pair trees.

    The leaves are the initial symbols of ``result.trace[0]`` at x = 0, 1, 2, ... (0-based positions) and
    level 0; a symbol created by merge k (1-based) sits at level k, at the mean x of its two children.
    Reading the leaves under a node left to right spells the text that token stands for.
    """
    if not isinstance(result, BPEResult):
        raise TypeError(f"result must be a BPEResult (from learn_bpe), got {type(result).__name__}")
    parts = {new: pair for pair, new in result.merges}
    level = {new: k + 1 for k, (_, new) in enumerate(result.merges)}
    nodes: list[TreeNode] = []
    next_leaf = [0]

    def expand(symbol: Hashable) -> int:
        if symbol not in parts:
            nodes.append(TreeNode(symbol, 0, float(next_leaf[0]), ()))
            next_leaf[0] += 1
            return len(nodes) - 1
        left, right = (expand(s) for s in parts[symbol])
        x = (nodes[left].x + nodes[right].x) / 2
        nodes.append(TreeNode(symbol, level[symbol], x, (left, right)))
        return len(nodes) - 1

    for symbol in result.sequence:
        expand(symbol)
    if next_leaf[0] != len(result.trace[0]):
        raise ValueError("result is inconsistent: its trees do not spell its input sequence")
    return nodes


def draw_bpe_merge_tree(result: BPEResult, *, ax: Axes | None = None) -> Axes:
    """Draw :func:`bpe_merge_tree` of ``result``: one box per node, a line from each merged token down to
    the pair it joins, and on the left the merge that created each level (``level k: new = left right``).
    The tops of the trees, read left to right, are the final encoded sequence."""
    nodes = bpe_merge_tree(result)
    n_leaves = len(result.trace[0])
    top = len(result.merges)
    if ax is None:
        _, ax = plt.subplots(figsize=(1.0 + 0.75 * n_leaves, 1.2 + 0.9 * top))
    blank(ax, (-4.6, n_leaves - 0.4), (-0.6, top + 0.6))
    roots = set(range(len(nodes))) - {c for node in nodes for c in node.children}
    for node in nodes:
        for child in node.children:
            ax.plot([node.x, nodes[child].x], [node.level, nodes[child].level], color=COLOURS["edge"], lw=1.0, zorder=0)
    for i, node in enumerate(nodes):
        colour = COLOURS["state"] if i in roots else COLOURS["input"]
        box(ax, (node.x, node.level), str(node.symbol), width=0.55, height=0.45, colour=colour, fontsize=10)
    ax.text(-4.5, 0, "level 0: initial symbols", ha="left", va="center", fontsize=8)
    for k, ((left, right), new) in enumerate(result.merges):
        ax.text(-4.5, k + 1, f"level {k + 1}: {new} = {left} {right}", ha="left", va="center", fontsize=8)
    return ax


#: The pages of Part 2 as (page number, what it builds) in the order of the pipeline of
#: :func:`draw_part2_route` (the appendix page 2.9 re-uses every stage and is drawn apart).
PART2_STAGES = (
    ("2.1", "text → tokens → vectors\n(BPE, embedding φ)"),
    ("2.4", "attention block,\nset transformer"),
    ("2.5", "order: positions,\nsparse, state space"),
    ("2.2", "next-token distribution,\nKL objective"),
    ("2.3", "fine-tuning,\nKL-regularised RL"),
    ("2.6", "generation:\ngreedy, beam, sampling"),
    ("2.7", "evaluation:\nperplexity, MMD, CRPS"),
)


def draw_part2_route(*, ax: Axes | None = None) -> Axes:
    """The formulation of Part 2 as a pipeline of boxes, each labelled with its page (``2.n``).

    Top row, left to right: how a text becomes a next-token distribution (2.1 -> 2.4 -> 2.5 -> 2.2);
    bottom row: what is done with that distribution (trained further 2.3, generated from 2.6, scored 2.7),
    with discrete diffusion (2.8) as the alternative to next-token generation and the appendix (2.9) aside.
    """
    if ax is None:
        _, ax = plt.subplots(figsize=(11, 3.6))
    blank(ax, (-1.5, 10.5), (-2.6, 1.0))
    positions = [(0, 0), (3, 0), (6, 0), (9, 0), (9, -1.8), (6, -1.8), (3, -1.8)]
    colours = [COLOURS["input"]] * 4 + [COLOURS["state"]] * 3
    for (page, text), xy, colour in zip(PART2_STAGES, positions, colours):
        box(ax, xy, f"{page}  {text}", width=2.6, height=0.95, colour=colour, fontsize=8)
    half_width, half_height = 1.3, 0.475
    for (x, y), (x_next, _) in zip(positions[:3], positions[1:4]):
        arrow(ax, (x + half_width, y), (x_next - half_width, y), shrink=2)
    arrow(ax, (9, -half_height), (9, -1.8 + half_height), shrink=2)
    arrow(ax, (8.4, -half_height), (6.6, -1.8 + half_height), shrink=2)
    arrow(ax, (6 - half_width, -1.8), (3 + half_width, -1.8), shrink=2)
    box(
        ax,
        (0, -1.8),
        "2.8  discrete diffusion:\na whole sequence at once",
        width=2.6,
        height=0.95,
        colour=COLOURS["value"],
        fontsize=8,
    )
    ax.text(
        4.5,
        0.75,
        "2.9: the paper's examples and appendices, checked one by one",
        ha="center",
        fontsize=8,
        style="italic",
    )
    return ax


def _check_distribution(values, name: str) -> np.ndarray:
    array = np.asarray(values, dtype=float)
    if array.ndim != 1 or array.size < 2:
        raise ValueError(f"{name} must be a 1-D probability vector of length >= 2, got shape {array.shape}")
    if np.any(array < 0) or not np.isclose(array.sum(), 1.0, atol=1e-9):
        raise ValueError(f"{name} must be non-negative and add up to 1, got sum {array.sum():.6g}")
    return array


def draw_kl_gap(
    p,
    q,
    labels: Sequence[str],
    *,
    model_symbol: str = "q",
    outcome_name: str = "outcome",
    ax: Axes | None = None,
) -> Axes:
    """Two distributions over the same outcomes and the gap between them, KL(p ‖ q) = Σ p log(p/q).

    Left bars: the data distribution ``p``; right bars: the model ``q``. Under each outcome its term
    p log(p/q) in nats, coloured on a diverging scale centred on zero (red: q too small there, blue: q too
    large). The title gives the sum. ``q`` must be positive wherever ``p`` is (else the gap is infinite).
    ``model_symbol`` names the model in the legend and the title (the formulation paper writes π).
    ``outcome_name`` says what the outcomes are, in the page's symbols (e.g. ``"text $f$"``); the x-axis
    label names it and the boxed terms under it.
    """
    p = _check_distribution(p, "p")
    q = _check_distribution(q, "q")
    if p.shape != q.shape or len(labels) != p.size:
        raise ValueError(f"p, q and labels must have one entry per outcome, got {p.size}, {q.size}, {len(labels)}")
    if np.any((p > 0) & (q == 0)):
        raise ValueError("q must be positive wherever p is (KL(p || q) is infinite otherwise)")
    terms = np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0) / np.where(q > 0, q, 1.0)), 0.0)
    if ax is None:
        _, ax = plt.subplots(figsize=(1.2 + 1.1 * p.size, 3.4))
    x = np.arange(p.size)
    ax.bar(x - 0.2, p, width=0.4, color="0.35", label="data p")
    ax.bar(x + 0.2, q, width=0.4, color="C0", label=f"model {model_symbol}")
    limit = max(float(np.abs(terms).max()), 1e-12)
    cmap = plt.get_cmap("RdBu_r")
    for i, term in enumerate(terms):
        level = 0.5 + 0.5 * term / limit
        ax.text(
            i,
            -0.06,
            f"{term:+.3f}",
            ha="center",
            va="top",
            fontsize=8,
            color="white" if abs(level - 0.5) > 0.3 else "black",
            bbox={"fc": cmap(level), "ec": "none", "pad": 1.5},
        )
    ax.set_xticks(x, list(labels))
    ax.tick_params(axis="x", pad=22)
    ax.set_xlabel(f"{outcome_name} (boxed under each: its term p log(p/{model_symbol}), in nats)")
    ax.set_ylim(-0.02, max(p.max(), q.max()) * 1.2)
    ax.set_ylabel("probability")
    m = model_symbol
    ax.set_title(f"KL(p ‖ {m}) = sum of the terms p log(p/{m}) = {terms.sum():.3f} nats", fontsize=9)
    ax.legend(fontsize=8, loc="upper right")
    return ax


#: The steps of one attention block (5.3a–d) and of the head (5.6)–(5.7), as (label, equation) pairs.
SET_TRANSFORMER_STEPS = (
    ("ATT: h_i + Σ_j α_ij V h_j", "(5.3a)"),
    ("N: normalise each h_i", "(5.3b)"),
    ("h_i + NN(h_i)", "(5.3c)"),
    ("N: normalise each h_i", "(5.3d)"),
)


def draw_set_transformer(n_blocks: int = 2, *, pooling: str = "mean", ax: Axes | None = None) -> Axes:
    """The set transformer q_m = softmax(B ∘ P ∘ A_K ∘ … ∘ A_1(h_{1:m-1}) / τ) of §5.1–5.2 as boxes and arrows.

    Left to right: the embedded prefix h_{1:m-1}; one attention block drawn open (its four steps
    (5.3a–d), the only step that mixes positions, ATT, highlighted); the remaining ``n_blocks - 1``
    blocks as one box; the pooling P (``"mean"`` or ``"max"``, Example 5.4) that turns the sequence into
    one vector; the linear map B to |V| scores; the softmax with temperature τ (5.7).
    """
    if not isinstance(n_blocks, int) or isinstance(n_blocks, bool) or n_blocks < 1:
        raise ValueError(f"n_blocks must be a positive int, got {n_blocks!r}")
    if pooling not in ("mean", "max"):
        raise ValueError(f"pooling must be 'mean' or 'max', got {pooling!r}")
    if ax is None:
        _, ax = plt.subplots(figsize=(12, 3.8))
    blank(ax, (-1.2, 13.2), (-2.3, 2.3))
    box(ax, (0, 0), "h_1, …, h_(m−1)\n(embedded prefix)", width=2.0, height=0.9, colour=COLOURS["input"], fontsize=8)
    ys = (1.5, 0.5, -0.5, -1.5)
    for (label, equation), y in zip(SET_TRANSFORMER_STEPS, ys):
        colour = COLOURS["query"] if equation == "(5.3a)" else COLOURS["state"]
        box(ax, (3.3, y), f"{label}   {equation}", width=3.2, height=0.7, colour=colour, fontsize=8)
    for y_from, y_to in zip(ys[:-1], ys[1:]):
        arrow(ax, (3.3, y_from - 0.35), (3.3, y_to + 0.35), shrink=1)
    ax.text(3.3, 2.1, "attention block A_1", ha="center", fontsize=9)
    arrow(ax, (1.0, 0), (1.7, 1.5), shrink=1)
    later = "A_2" if n_blocks == 2 else f"A_2, …, A_{n_blocks}"
    rest = f"{later}\n(same steps,\nown parameters)" if n_blocks > 1 else "(n_b = 1: no\nfurther block)"
    box(ax, (6.3, 0), rest, width=1.8, height=1.1, colour=COLOURS["state"], fontsize=8)
    arrow(ax, (4.9, -1.5), (5.4, -0.2), shrink=1)
    pool_text = "P: mean over\npositions" if pooling == "mean" else "P: max over\npositions"
    box(ax, (8.4, 0), pool_text + "\n(Ex. 5.4)", width=1.7, height=1.1, colour=COLOURS["value"], fontsize=8)
    box(ax, (10.3, 0), "B: d_e → |V|\nscores", width=1.5, height=1.1, colour=COLOURS["key"], fontsize=8)
    box(
        ax, (12.2, 0), "softmax(· / τ)\n= q_m(· | h)\n(5.7)", width=1.6, height=1.1, colour=COLOURS["input"], fontsize=8
    )
    for x_from, x_to in ((7.2, 7.55), (9.25, 9.55), (11.05, 11.4)):
        arrow(ax, (x_from, 0), (x_to, 0), shrink=1)
    # (5.6) for the blocks drawn: every block named up to three, the dots only for a longer stack
    stack = " ∘ ".join(f"A_{k}" for k in range(n_blocks, 0, -1)) if n_blocks <= 3 else f"A_{n_blocks} ∘ … ∘ A_1"
    ax.text(8.4, -1.9, f"T = P ∘ {stack}   (5.6)", ha="center", fontsize=9)
    return ax
