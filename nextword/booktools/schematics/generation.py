"""Schematic figures of sequence generation and discrete diffusion (Part 2, pages 2.6 and 2.8).

Both figures are computed from the objects they show, so a picture cannot disagree with the code:

* :func:`draw_search_tree` — every continuation of a prompt as a tree (one level per new token),
  each branch labelled with the model's next-token probability and each leaf with the probability
  of its whole path; chosen paths (greedy, the most likely sequence, a beam) are drawn in colour.
  The numbers come from the model's ``next_logits`` (formulation paper, §6.2, Eqs. 6.3–6.4).
* :func:`draw_masking_chain` — the states of a sequence at a few times of a masking (absorbing)
  chain, one row of token boxes per time, masked positions grey; arrows show the forward
  (masking) direction and the reverse (unmasking) one (formulation paper, §9).

>>> from nextword.decoding.ngram import table_model
>>> model = table_model(2, 2, {(): np.log([0.6, 0.4])})
>>> ax = draw_search_tree(model.next_logits, ["a", "b"], depth=2, highlight={"greedy": [0, 0]})
>>> sorted(t.get_text() for t in ax.texts if t.get_text().startswith("0.3"))
['0.30', '0.30']
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np

from nextword.booktools.schematics.core import COLOURS, arrow, blank, box

__all__ = ["PATH_COLOURS", "draw_masking_chain", "draw_search_tree"]

#: Colours of highlighted paths, in the order the ``highlight`` mapping lists them.
PATH_COLOURS = ("#D55E00", "#0072B2", "#009E73", "#CC79A7")  # Okabe–Ito: vermilion, blue, bluish green, reddish purple
#: The masking chain's arrows: forward (masking) in the schematics' highlight, vermilion; reverse in Okabe–Ito blue.
REVERSE_COLOUR = "#0072B2"


def _probabilities(next_logits: Callable[[list[int]], np.ndarray], prefix: list[int]) -> np.ndarray:
    """softmax(next_logits(prefix)) as float64, shape (V,)."""
    z = np.asarray(next_logits(list(prefix)), dtype=float)
    z = z - z.max()
    p = np.exp(z)
    return p / p.sum()


def draw_search_tree(
    next_logits: Callable[[list[int]], np.ndarray],
    vocab: Sequence[str],
    *,
    depth: int = 2,
    prompt: Sequence[int] = (),
    highlight: Mapping[str, Sequence[int]] | None = None,
    ax=None,
):
    """Draw the tree of all ``len(vocab) ** depth`` continuations of ``prompt`` under a model.

    ``next_logits(prefix) -> (V,)`` is the model (any additive constant); the branch from a node
    with prefix ``f_{1:m-1}`` to its child ``v`` is labelled ``pi_m(v | f_{1:m-1})``, and each leaf
    with the product of the probabilities along its path, ``pi(f_{l+1:l+depth} | prompt)`` (Eq. 6.1a).
    ``highlight`` maps a name (shown in the legend) to a path of ``depth`` token ids (new tokens
    only, 0-based ids into ``vocab``); its branches are drawn thick in one colour each.
    Returns the axes. Raises ValueError for a depth outside 1..3, a vocabulary of more than 5
    words, or a highlighted path of the wrong length or with an unknown id.
    """
    if not 1 <= depth <= 3:
        raise ValueError(f"depth must be 1, 2 or 3 (the tree has |V|^depth leaves), got {depth}")
    n_vocab = len(vocab)
    if not 1 <= n_vocab <= 5:
        raise ValueError(f"vocab must have 1 to 5 words to be drawn, got {n_vocab}")
    highlight = dict(highlight or {})
    for name, path in highlight.items():
        if len(path) != depth or any(not 0 <= int(v) < n_vocab for v in path):
            raise ValueError(f"highlight[{name!r}] must be {depth} token ids in 0..{n_vocab - 1}, got {list(path)}")
    if ax is None:
        _, ax = plt.subplots(figsize=(1.0 + 0.9 * n_vocab**depth, 1.6 + 1.5 * depth))
    n_leaves = n_vocab**depth
    blank(ax, (-0.8, n_leaves - 0.2), (-depth * 1.6 - 0.9, 0.6))
    ax.set_aspect("auto")

    def x_of(path: tuple[int, ...]) -> float:
        """Centre of a node: the mean x of the leaves below it."""
        width = n_vocab ** (depth - len(path))
        first = sum(v * n_vocab ** (depth - 1 - i) for i, v in enumerate(path))
        return first + (width - 1) / 2

    on_path = {name: {tuple(int(v) for v in path[:i]) for i in range(depth + 1)} for name, path in highlight.items()}
    box(ax, (x_of(()), 0.0), "prompt", width=1.1, height=0.45, colour=COLOURS["input"], fontsize=8)
    frontier = [((), 1.0)]
    for level in range(1, depth + 1):
        y = -1.6 * level
        new_frontier = []
        for path, path_prob in frontier:
            probs = _probabilities(next_logits, [*prompt, *path])
            for v in range(n_vocab):
                child = (*path, v)
                names = [name for name in highlight if child in on_path[name]]
                colour = PATH_COLOURS[list(highlight).index(names[0]) % len(PATH_COLOURS)] if names else "0.6"
                start, end = (x_of(path), y + 1.6 - 0.25), (x_of(child), y + 0.25)
                arrow(ax, start, end, colour=colour, width=2.4 if names else 0.8, shrink=2.0)
                mid = (0.45 * start[0] + 0.55 * end[0], 0.45 * start[1] + 0.55 * end[1])
                ax.text(
                    *mid,
                    f"{probs[v]:.2f}",
                    fontsize=7,
                    ha="center",
                    va="center",
                    color="k",
                    bbox={"fc": "white", "ec": "none", "pad": 0.5},
                )
                box(ax, (x_of(child), y), vocab[v], width=0.6, height=0.42, colour=COLOURS["state"], fontsize=8)
                new_frontier.append((child, path_prob * probs[v]))
        frontier = new_frontier
    for path, path_prob in frontier:
        ax.text(
            x_of(path), -1.6 * depth - 0.5, f"{path_prob:.2f}", ha="center", va="top", fontsize=8, fontweight="bold"
        )
    ax.text(-0.75, -1.6 * depth - 0.5, "path\nprobability", ha="left", va="top", fontsize=7, color="0.3")
    for i, name in enumerate(highlight):
        ax.plot([], [], color=PATH_COLOURS[i % len(PATH_COLOURS)], lw=2.4, label=name)
    if highlight:
        ax.legend(loc="upper right", fontsize=8, frameon=False)
    return ax


def draw_masking_chain(
    states: np.ndarray,
    vocab: Sequence[str],
    mask_id: int,
    times: Sequence[float],
    *,
    ax=None,
):
    """Draw a sequence as it is masked over time: one row of token boxes per time, mask in grey.

    ``states`` has shape (n_times, L): the token ids of one path of the chain at ``times`` (increasing);
    ``vocab[mask_id]`` is the mask token. A downward vermilion arrow on the left says "forward: mask" and
    an upward blue one on the right "reverse: unmask". Returns the axes. Raises ValueError when ``states``
    is not (n_times, L) with one time per row, when the times do not increase, or when an id is
    not in ``vocab``.
    """
    states = np.asarray(states)
    if states.ndim != 2 or states.shape[0] != len(times):
        raise ValueError(
            f"states must be (n_times, L) with one row per time, got {states.shape} and {len(times)} times"
        )
    if np.any(np.diff(np.asarray(times, dtype=float)) <= 0):
        raise ValueError(f"times must increase, got {list(times)}")
    if states.size and (states.min() < 0 or states.max() >= len(vocab)) or not 0 <= mask_id < len(vocab):
        raise ValueError(f"every id (and mask_id = {mask_id}) must index vocab of {len(vocab)} words")
    n_times, length = states.shape
    if ax is None:
        _, ax = plt.subplots(figsize=(2.4 + 1.0 * length, 0.9 + 0.75 * n_times))
    blank(ax, (-2.2, 1.2 * length + 0.9), (-0.9 * n_times + 0.2, 0.6))
    for row, (time, state) in enumerate(zip(times, states)):
        y = -0.9 * row
        ax.text(-0.75, y, f"t = {time:g}", ha="right", va="center", fontsize=8)
        for i, token in enumerate(state):
            masked = int(token) == mask_id
            box(
                ax,
                (1.2 * i, y),
                vocab[int(token)],
                width=1.0,
                height=0.5,
                colour="#bdbdbd" if masked else COLOURS["input"],
                fontsize=8,
            )
    top, bottom = 0.0, -0.9 * (n_times - 1)
    arrow(ax, (-1.85, top), (-1.85, bottom), colour=COLOURS["highlight"], width=1.6, shrink=1.0)
    ax.text(-2.0, (top + bottom) / 2, "forward:\nmask", ha="right", va="center", fontsize=8, color=COLOURS["highlight"])
    right = 1.2 * (length - 1) + 0.75
    arrow(ax, (right, bottom), (right, top), colour=REVERSE_COLOUR, width=1.6, shrink=1.0)
    ax.text(
        right + 0.15, (top + bottom) / 2, "reverse:\nunmask", ha="left", va="center", fontsize=8, color=REVERSE_COLOUR
    )
    return ax
