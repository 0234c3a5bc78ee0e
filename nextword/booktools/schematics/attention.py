"""Schematic figures of attention (Chapter 6, §6.2–6.4), drawn from the arrays they depict.

Each figure is computed, not drawn by hand: the matrices in the boxes are the numbers of the example
passed in, so a schematic cannot disagree with the code it explains.

* :func:`draw_one_head` — embeddings -> queries, keys, values -> scores -> weights -> output (§6.2);
* :func:`draw_causal_mask` — the mask as a matrix of allowed (0) and blocked (-inf) entries (§6.3);
* :func:`draw_heads_split_concat` — queries split into heads, attended, concatenated, times W^O (§6.4).

Signed matrices use a diverging colour map centred on zero; weights (in [0, 1]) a sequential one.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.patches import FancyArrowPatch, Rectangle

from nextword.attention import MultiHeadAttention, causal_mask, scaled_dot_product_attention, softmax

__all__ = ["draw_one_head", "draw_causal_mask", "draw_heads_split_concat"]

HEAD_COLOURS = ("C0", "C1", "C2", "C3", "C4", "C5", "C6", "C7")


def _axes(ax: Axes | None, size: tuple[float, float]) -> Axes:
    if ax is None:
        _, ax = plt.subplots(figsize=size)
    ax.set_aspect("equal")
    ax.axis("off")
    return ax


def _matrix(
    ax: Axes,
    values: np.ndarray,
    x0: float,
    y0: float,
    title: str,
    *,
    signed: bool = True,
    blocked: np.ndarray | None = None,
    row_labels: Sequence[str] | None = None,
    annotate: bool = True,
    edge: str = "0.3",
) -> tuple[float, float, float, float]:
    """Draw ``values (rows, cols)`` as cells of side 1, top-left corner at ``(x0, y0)``.

    Returns the box ``(left, right, top, bottom)`` for arrows. ``blocked`` cells are grey and read -inf.
    """
    values = np.asarray(values, dtype=float)
    rows, cols = values.shape
    scale = max(float(np.max(np.abs(values))), 1e-12)
    cmap = plt.get_cmap("RdBu_r" if signed else "Greens")
    for r in range(rows):
        for c in range(cols):
            y = y0 - r - 1  # row 0 at the top
            if blocked is not None and blocked[r, c]:
                face, text, colour = "0.55", "−∞", "white"
            else:
                level = 0.5 + 0.5 * values[r, c] / scale if signed else values[r, c] / scale
                face = cmap(level if signed else 0.15 + 0.7 * level)
                text = f"{values[r, c]:.2f}"
                colour = "white" if (abs(level - 0.5) > 0.35 if signed else level > 0.7) else "k"
            ax.add_patch(Rectangle((x0 + c, y), 1, 1, facecolor=face, edgecolor=edge, lw=0.8))
            if annotate:
                ax.text(x0 + c + 0.5, y + 0.5, text, ha="center", va="center", fontsize=7, color=colour)
    ax.text(x0 + cols / 2, y0 + 0.35, title, ha="center", va="bottom", fontsize=9)
    if row_labels is not None:
        for r, label in enumerate(row_labels):
            ax.text(x0 - 0.15, y0 - r - 0.5, label, ha="right", va="center", fontsize=8)
    return x0, x0 + cols, y0, y0 - rows


def _arrow(ax: Axes, start: tuple[float, float], end: tuple[float, float], label: str = "") -> None:
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=12, color="0.25", lw=1.0))
    if label:
        mid = ((start[0] + end[0]) / 2, (start[1] + end[1]) / 2 + 0.25)
        ax.text(*mid, label, ha="center", va="bottom", fontsize=8, color="0.15")


def draw_one_head(
    embeddings: np.ndarray,
    W_q: np.ndarray,
    W_k: np.ndarray,
    W_v: np.ndarray,
    words: Sequence[str],
    *,
    causal: bool = True,
    ax: Axes | None = None,
) -> Axes:
    """One attention head on a short sequence, every intermediate array drawn with its numbers.

    ``embeddings (T, d_model)``, ``W_q, W_k, W_v (d_model, d_k)``: queries ``Q = X W_q`` (``X``: the embeddings stacked as rows), keys, values;
    scores ``Q K^T / sqrt(d_k)`` (blocked above the diagonal when ``causal``), weights = row-wise softmax,
    output ``weights @ V (T, d_k)`` (Chapter 6, Figs. 6.5-6.8). The output is checked against
    :func:`nextword.attention.scaled_dot_product_attention` before it is drawn.
    """
    E = np.asarray(embeddings, dtype=float)
    T = E.shape[0]
    if len(words) != T:
        raise ValueError(f"words must have one label per row of embeddings ({T}), got {len(words)}")
    Q, K, V = E @ W_q, E @ W_k, E @ W_v
    d_k = Q.shape[1]
    allowed = causal_mask(T) if causal else np.ones((T, T), dtype=bool)
    scores = Q @ K.T / np.sqrt(d_k)
    weights = softmax(np.where(allowed, scores, -np.inf))
    output = weights @ V
    reference = scaled_dot_product_attention(Q, K, V, causal=causal)
    if not np.allclose(output, reference, atol=1e-12):
        raise AssertionError("the schematic's output differs from scaled_dot_product_attention")
    ax = _axes(ax, (12.5, 5.2))
    gap = 1.6
    x_qkv = E.shape[1] + 3.0
    x_scores = x_qkv + d_k + 3.0
    x_weights = x_scores + T + 2.6
    x_out = x_weights + T + 2.6
    top = 0.0
    e_box = _matrix(ax, E, 0, top - (T + gap), r"embeddings $X$", row_labels=words)
    boxes = {}
    titles = {"Q": r"queries $Q = XW^Q$", "K": r"keys $K = XW^K$", "V": r"values $V = XW^V$"}
    for n, (name, M) in enumerate((("Q", Q), ("K", K), ("V", V))):
        boxes[name] = _matrix(ax, M, x_qkv, top - n * (T + gap), titles[name])
    mid_e = (e_box[1] + 0.1, (e_box[2] + e_box[3]) / 2)
    for name in "QKV":
        _arrow(ax, mid_e, (boxes[name][0] - 0.1, (boxes[name][2] + boxes[name][3]) / 2))
    blocked = ~allowed if causal else None
    s_box = _matrix(ax, scores, x_scores, top - 0.5 * (T + gap), r"scores $QK^\top/\sqrt{d_k}$", blocked=blocked)
    for name in "QK":
        _arrow(ax, (boxes[name][1] + 0.1, (boxes[name][2] + boxes[name][3]) / 2), (s_box[0] - 0.1, s_box[3] + T / 2))
    w_box = _matrix(ax, weights, x_weights, s_box[2], r"weights $\alpha$", signed=False)
    _arrow(ax, (s_box[1] + 0.1, s_box[3] + T / 2), (w_box[0] - 0.1, w_box[3] + T / 2), "softmax\nper row")
    o_box = _matrix(ax, output, x_out, top - 1.5 * (T + gap), r"output $\alpha V$")
    _arrow(ax, (w_box[1] + 0.1, w_box[3] + T / 2), (o_box[0] + d_k / 2, o_box[2] + 0.9))
    _arrow(ax, (boxes["V"][1] + 0.1, (boxes["V"][2] + boxes["V"][3]) / 2), (o_box[0] - 0.1, o_box[3] + T / 2))
    ax.text(x_scores + T / 2, s_box[3] - 0.4, "row i = query i, column j = key j", ha="center", va="top", fontsize=8)
    ax.set_xlim(-3.0, x_out + d_k + 0.5)
    ax.set_ylim(top - 3 * T - 2 * gap - 0.5, top + 1.2)
    return ax


def draw_causal_mask(words: Sequence[str], *, ax: Axes | None = None) -> Axes:
    """The causal mask of ``len(words)`` positions as the matrix added to the scores: 0 or -inf.

    Row ``i`` is the query at word ``i``, column ``j`` the key at word ``j`` (both counted from 1);
    entries with ``j > i`` (the future) are -inf, so their softmax weight is exactly 0 (Fig. 6.13).
    Computed from :func:`nextword.attention.causal_mask`.
    """
    T = len(words)
    allowed = causal_mask(T)
    ax = _axes(ax, (0.75 * T + 2.5, 0.75 * T + 1.5))
    for i in range(T):
        for j in range(T):
            ok = bool(allowed[i, j])
            ax.add_patch(Rectangle((j, -i - 1), 1, 1, facecolor="white" if ok else "0.45", edgecolor="0.3", lw=0.8))
            ax.text(
                j + 0.5,
                -i - 0.5,
                "0" if ok else "−∞",
                ha="center",
                va="center",
                fontsize=10,
                color="k" if ok else "white",
            )
    label_width = 0.16 * max(len(f"{t + 1} {w}") for t, w in enumerate(words))  # in cell units, roughly
    for t, word in enumerate(words):
        ax.text(-0.15, -t - 0.5, f"{t + 1} {word}", ha="right", va="center", fontsize=9)
        ax.text(t + 0.5, 0.15, f"{t + 1} {word}", ha="left", va="bottom", fontsize=9, rotation=45)
    ax.text(T / 2, -T - 0.35, "key position j (the word looked at)", ha="center", va="top", fontsize=9)
    ax.text(
        -label_width - 0.6,
        -T / 2,
        "query position i (the word looking)",
        ha="center",
        va="center",
        fontsize=9,
        rotation=90,
    )
    ax.set_xlim(-label_width - 1.0, T + label_width)
    ax.set_ylim(-T - 1.0, 0.3 + 0.75 * label_width)
    return ax


def draw_heads_split_concat(
    mha: MultiHeadAttention, embeddings: np.ndarray, *, annotate: bool = False, ax: Axes | None = None
) -> Axes:
    """Multi-head attention on ``embeddings (T, d_model)``: split, attend per head, concatenate, W^O.

    Head ``h`` owns columns ``h*d_head:(h+1)*d_head`` of ``Q = X W^Q`` (and of K, V); each head's
    causal attention gives a ``(T, d_head)`` block; the blocks side by side are ``(T, d_model)``, and
    ``W^O`` mixes them (Chapter 6, Fig. 6.18). Checked against ``mha(embeddings)`` before it is drawn.
    """
    E = np.asarray(embeddings, dtype=float)
    T, d_model = E.shape
    n_heads, d_head = mha.num_heads, mha.head_dim
    if n_heads > len(HEAD_COLOURS):
        raise ValueError(f"at most {len(HEAD_COLOURS)} heads can be drawn, got {n_heads}")
    Q, K, V = E @ mha.W_q, E @ mha.W_k, E @ mha.W_v
    head_outputs = []
    for h in range(n_heads):
        cols = slice(h * d_head, (h + 1) * d_head)
        head_outputs.append(scaled_dot_product_attention(Q[:, cols], K[:, cols], V[:, cols], causal=True))
    concat = np.concatenate(head_outputs, axis=1)  # (T, d_model)
    output = concat @ mha.W_o
    if not np.allclose(output, mha(E), atol=1e-10):
        raise AssertionError("the schematic's output differs from MultiHeadAttention")
    ax = _axes(ax, (13.0, 4.8))
    _matrix(ax, Q, 0, 0, rf"queries $Q = XW^Q$ ({T} × {d_model}; keys, values alike)", annotate=annotate)
    x_heads = [d_model + 1.5 + h * (d_head + 1.5) for h in range(n_heads)]
    y_heads = -T - 2.2
    x_concat = x_heads[-1] + d_head + 2.0
    for h in range(n_heads):
        colour = HEAD_COLOURS[h]
        ax.add_patch(Rectangle((h * d_head, -T), d_head, T, fill=False, edgecolor=colour, lw=3))
        _matrix(ax, head_outputs[h], x_heads[h], y_heads, "", annotate=annotate, edge=colour)
        ax.text(
            x_heads[h] + d_head / 2,
            y_heads - T - 0.2,
            f"head {h + 1}:\nattention on its\n{d_head} columns",
            ha="center",
            va="top",
            fontsize=8,
            color=colour,
        )
        _arrow(ax, ((h + 0.5) * d_head, -T - 0.1), (x_heads[h] + d_head / 2, y_heads + 0.1))
        _arrow(ax, (x_heads[h] + d_head / 2 + 0.3, y_heads + 0.1), (x_concat + (h + 0.5) * d_head, -T - 0.1))
    _matrix(ax, concat, x_concat, 0, f"Concat(head 1, …) ({T} × {d_model})", annotate=annotate)
    for h in range(n_heads):
        ax.add_patch(Rectangle((x_concat + h * d_head, -T), d_head, T, fill=False, edgecolor=HEAD_COLOURS[h], lw=3))
    x_out = x_concat + d_model + 3.0
    _matrix(ax, output, x_out, 0, rf"output = Concat $\cdot\, W^O$ ({T} × {d_model})", annotate=annotate)
    _arrow(ax, (x_concat + d_model + 0.1, -T / 2), (x_out - 0.1, -T / 2), r"$\times W^O$")
    ax.set_xlim(-0.5, x_out + d_model + 0.5)
    ax.set_ylim(y_heads - T - 2.6, 1.3)
    return ax
