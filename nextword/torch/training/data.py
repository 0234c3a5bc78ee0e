"""Character data for the torch path: vocabulary, encoding, deterministic epoch batching.

The corpus text comes from :func:`nextword.data.load_corpus` (tiny Shakespeare by default, raw
WikiText-2 from a directory, or any text file). The character vocabulary is the library's
:class:`nextword.tokenizers.CharTokenizer` trained on the *training* split only (the sorted distinct
characters, ids 1…|V|−1; id 0 is reserved for characters never seen in training), so a validation
split may contain characters the model has no embedding for (WikiText-2 does). Tensors are made
here, at the boundary: the tokenizer's int64 ids become ``torch.long`` tensors.

Batching is a pure function of ``(seed, epoch, step-in-epoch)``: each epoch cuts the training ids
into non-overlapping windows of ``block_size + 1`` characters starting at a per-epoch random offset,
shuffles them, and serves them ``batch_size`` at a time. Resuming at step ``s`` therefore needs no
saved data-loader state, and a distributed run (``rank``, ``world_size``) takes rows
``[rank·B/W, (rank+1)·B/W)`` of the same global batch, so W processes see exactly the batch one
process would.

    >>> from nextword.tokenizers import CharTokenizer
    >>> vocab = CharTokenizer.train("abca")
    >>> vocab.chars, encode(vocab, "abz")
    ('abc', tensor([1, 2, 0]))
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from nextword.data import Corpus, load_corpus
from nextword.tokenizers import CharTokenizer

__all__ = ["CharData", "encode", "load_char_data", "epoch_batch", "steps_per_epoch", "eval_windows"]


def encode(vocab: CharTokenizer, text: str) -> torch.Tensor:
    """``text`` → ``(len(text),)`` int64 ids of ``vocab`` as a tensor (unseen characters → 0)."""
    return torch.from_numpy(vocab.encode_array(text))


@dataclass(frozen=True)
class CharData:
    """Encoded splits: ``train`` and ``val`` int64 ids ``(N,)``, their ``vocab``, the corpus name."""

    name: str
    vocab: CharTokenizer
    train: torch.Tensor
    val: torch.Tensor
    source: str

    @property
    def unk_rate_val(self) -> float:
        return float((self.val == 0).float().mean())


def load_char_data(
    data: str | Path = "shakespeare", *, max_chars: int | None = None, val_fraction: float = 0.1
) -> CharData:
    """Load ``"shakespeare"`` | ``"wikitext2"`` | a path, and encode it at the character level.

    ``max_chars`` truncates both splits (train to ``max_chars``, val to ``max_chars // 9``) for
    quick runs; the vocabulary is built from the truncated training text.
    """
    corpus: Corpus = load_corpus(data, val_fraction=val_fraction)
    train, val = corpus.train, corpus.val
    if max_chars is not None:
        if max_chars < 2:
            raise ValueError(f"max_chars must be >= 2, got {max_chars}")
        train, val = train[:max_chars], val[: max(max_chars // 9, 2)]
    if not train:
        raise ValueError("cannot build a vocabulary from an empty training split")
    vocab = CharTokenizer.train(train)
    return CharData(corpus.name, vocab, encode(vocab, train), encode(vocab, val), str(corpus.source))


def _num_windows(n_ids: int, block_size: int) -> int:
    return (n_ids - 1) // block_size


def steps_per_epoch(n_ids: int, block_size: int, batch_size: int) -> int:
    """Full batches of non-overlapping windows per epoch (the last partial batch is dropped)."""
    # one window fewer than the offset-0 count so that every random offset leaves room
    n = _num_windows(n_ids, block_size) - 1
    if n < batch_size:
        raise ValueError(
            f"{n_ids} training ids give {n} windows of {block_size + 1}; need at least batch_size={batch_size}"
        )
    return n // batch_size


def epoch_batch(
    ids: torch.Tensor,
    *,
    block_size: int,
    batch_size: int,
    seed: int,
    epoch: int,
    step_in_epoch: int,
    rank: int = 0,
    world_size: int = 1,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Batch ``step_in_epoch`` of ``epoch``: ``(x, y)`` each ``(batch_size // world_size, block_size)``."""
    spe = steps_per_epoch(ids.numel(), block_size, batch_size)
    if not 0 <= step_in_epoch < spe:
        raise ValueError(f"step_in_epoch must be in [0, {spe}), got {step_in_epoch}")
    if batch_size % world_size:
        raise ValueError(f"batch_size={batch_size} must be divisible by world_size={world_size}")
    g = torch.Generator().manual_seed(int(seed) * 1_000_003 + int(epoch))
    offset = int(torch.randint(0, block_size, (1,), generator=g))
    n = _num_windows(ids.numel(), block_size) - 1
    perm = torch.randperm(n, generator=g)  # (n,)
    local = batch_size // world_size
    rows = perm[step_in_epoch * batch_size + rank * local : step_in_epoch * batch_size + (rank + 1) * local]
    starts = offset + rows * block_size  # (local,)
    window = starts[:, None] + torch.arange(block_size + 1)  # (local, T + 1)
    chunk = ids[window]
    return chunk[:, :-1].contiguous(), chunk[:, 1:].contiguous()


def eval_windows(
    ids: torch.Tensor, *, block_size: int, max_windows: int | None = None, rank: int = 0, world_size: int = 1
) -> tuple[torch.Tensor, torch.Tensor]:
    """Non-overlapping evaluation windows from offset 0: ``(x, y)`` each ``(n, block_size)``.

    ``max_windows`` keeps that many windows spread evenly over the split (all if ``None``); a
    distributed evaluation takes every ``world_size``-th window starting at ``rank``.
    """
    n = _num_windows(ids.numel(), block_size)
    if n < 1:
        raise ValueError(f"validation split has {ids.numel()} ids; need at least block_size + 1 = {block_size + 1}")
    idx = torch.arange(n)
    if max_windows is not None and max_windows < n:
        idx = torch.linspace(0, n - 1, max_windows).round().long().unique()
    idx = idx[rank::world_size]
    window = (idx * block_size)[:, None] + torch.arange(block_size + 1)  # (n, T + 1)
    chunk = ids[window]
    return chunk[:, :-1].contiguous(), chunk[:, 1:].contiguous()
