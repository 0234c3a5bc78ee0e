"""A small recurrent LM in torch: the fixed-size-state baseline of Chapter 6, §6.1.

``ids (B, T)`` → embedding → one GRU (or tanh RNN) layer with state ``(B, hidden_size)`` → linear
head → logits ``(B, T, vocab_size)``. It exposes ``config.vocab_size`` / ``config.max_len`` and the
same call signature as :class:`nextword.torch.models.lm.TinyLM`, so :func:`nextword.torch.training.token_lm.train_lm` and
:func:`~nextword.torch.training.token_lm.evaluate_loss` train and score both the same way (the copy-task
comparison of the information bottleneck, Fig. 6.2).

>>> import numpy as np
>>> m = RecurrentLM(RecurrentConfig(vocab_size=5, hidden_size=8), seed=0)
>>> tuple(m(torch.zeros(2, 7, dtype=torch.long)).shape), m.num_parameters()
((2, 7, 5), 517)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch
import torch.nn as nn

__all__ = ["RecurrentConfig", "RecurrentLM"]


@dataclass(frozen=True)
class RecurrentConfig:
    """``cell``: ``"gru"`` or ``"rnn"`` (Elman, tanh). ``max_len`` only documents the training length
    (a recurrent model has no limit)."""

    vocab_size: int
    hidden_size: int
    cell: Literal["gru", "rnn"] = "gru"
    max_len: int = 1 << 20

    def __post_init__(self) -> None:
        for name in ("vocab_size", "hidden_size", "max_len"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        if self.cell not in ("gru", "rnn"):
            raise ValueError(f"cell must be 'gru' or 'rnn', got {self.cell!r}")


class RecurrentLM(nn.Module):
    """Embedding (``hidden_size`` wide) → GRU/RNN → linear head. The whole past is in one state."""

    def __init__(self, config: RecurrentConfig, *, seed: int | None = 0) -> None:
        super().__init__()
        if not isinstance(config, RecurrentConfig):
            raise TypeError(f"config must be a RecurrentConfig, got {type(config).__name__}")
        self.config = c = config
        state = torch.random.get_rng_state()
        torch.manual_seed(int(seed) if seed is not None else int(np.random.SeedSequence().entropy % 2**63))
        try:  # nn.GRU draws from the global generator: seed it, then put the caller's state back
            self.emb = nn.Embedding(c.vocab_size, c.hidden_size)
            cls = nn.GRU if c.cell == "gru" else nn.RNN
            self.rnn = cls(c.hidden_size, c.hidden_size, batch_first=True)
            self.head = nn.Linear(c.hidden_size, c.vocab_size)
        finally:
            torch.random.set_rng_state(state)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        ids = torch.as_tensor(ids)
        if ids.ndim != 2 or ids.dtype not in (torch.int64, torch.int32):
            raise ValueError(f"ids must be an integer tensor of shape (B, T), got {tuple(ids.shape)} {ids.dtype}")
        if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= self.config.vocab_size):
            raise ValueError(f"ids must lie in [0, vocab_size={self.config.vocab_size})")
        states, _ = self.rnn(self.emb(ids.long()))  # (B, T, hidden): one state per step, computed in order
        return self.head(states)  # (B, T, V)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())
