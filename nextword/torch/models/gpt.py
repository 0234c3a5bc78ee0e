"""SmallGPT: the small causal character-level GPT of the support-tokens paper, §7.1.

Architecture (nanoGPT-like, pre-norm): token embedding ``wte`` (|V|, d) + learned positions ``wpe``
(T, d) → ``num_layers`` blocks ``x + MHA(LN(x))``, ``x + MLP(LN(x))`` (the schematic Eqs. (41)–(42) of
the paper) → final LayerNorm → linear head tied to ``wte``. The blocks are the one
:class:`~nextword.torch.models.block.Block` of the torch models (the Chapter 6 TinyLM's too), in its
``nn.Linear`` layout (:class:`~nextword.torch.models.block.LinearBlock`, the names of the saved
checkpoints) with fused attention: :meth:`SmallGPTConfig.block_spec`. Row-vector convention as in Chapter 6:
a sequence of embeddings is a ``(B, T, d)`` tensor whose rows are ``x_t``.

The paper's size is ``d_model=128, num_heads=4, num_layers=2, max_len=256`` (:meth:`SmallGPTConfig.paper`). With a 4×
feed-forward (``d_ff = 4·d_model``) and a tied head the blocks hold ``2·(12d² + 13d) ≈ 397K`` parameters, not the "~150K
transformer parameters" quoted in §7.1; the embedding count (|V|·d ≈ 130K for |V| = 1013) matches.
The book reports our count beside theirs rather than bending the architecture to the number.

Tiny worked example::

    >>> import torch
    >>> cfg = SmallGPTConfig(vocab_size=11, max_len=8, num_layers=1, num_heads=2, d_model=16)
    >>> model = SmallGPT(cfg)
    >>> logits, loss = model(torch.zeros(3, 8, dtype=torch.long), torch.zeros(3, 8, dtype=torch.long))
    >>> tuple(logits.shape), loss.ndim
    ((3, 8, 11), 0)
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from nextword.torch.models.block import BlockSpec, LinearBlock

__all__ = ["SmallGPTConfig", "SmallGPT"]


@dataclass(frozen=True)
class SmallGPTConfig:
    """Hyper-parameters of :class:`SmallGPT`, named as in :class:`nextword.decoder.DecoderConfig`.

    ``vocab_size`` may be left ``None`` in a training configuration (the corpus decides it; see
    :func:`nextword.torch.barrier.train.build`), but :class:`SmallGPT` needs it set. ``d_ff`` is the
    feed-forward width (``None``: ``4 · d_model``). All plain values, so they round-trip through JSON.

    >>> SmallGPTConfig(d_model=8, num_heads=2).ff_dim
    32
    """

    vocab_size: int | None = None
    max_len: int = 256
    num_layers: int = 2
    num_heads: int = 4
    d_model: int = 128
    d_ff: int | None = None
    dropout: float = 0.0
    init_std: float = 0.02

    def __post_init__(self) -> None:
        for name in ("vocab_size", "max_len", "num_layers", "num_heads", "d_model", "d_ff"):
            value = getattr(self, name)
            if value is None and name in ("vocab_size", "d_ff"):
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if self.d_model % self.num_heads:
            raise ValueError(f"d_model={self.d_model} must be divisible by num_heads={self.num_heads}")
        for name in ("dropout", "init_std"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
                raise ValueError(f"{name} must be a number, got {value!r}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")
        if not 0.0 <= self.init_std < float("inf"):
            raise ValueError(f"init_std must be a finite number >= 0, got {self.init_std}")

    @property
    def ff_dim(self) -> int:
        """The feed-forward width: ``d_ff``, or ``4 · d_model`` when unset."""
        return 4 * self.d_model if self.d_ff is None else self.d_ff

    @classmethod
    def paper(cls, vocab_size: int | None = None) -> "SmallGPTConfig":
        """The §7.1 size: d_model=128, 4 heads, 2 pre-norm blocks, context 256."""
        return cls(vocab_size=vocab_size, max_len=256, num_layers=2, num_heads=4, d_model=128)

    def to_dict(self) -> dict:
        return asdict(self)

    def block_spec(self) -> BlockSpec:
        """The :class:`~nextword.torch.models.block.BlockSpec` of SmallGPT's blocks: pre-norm, LayerNorm,
        exact GELU, causal, fused attention (Eqs. (41)–(42))."""
        return BlockSpec(
            d_model=self.d_model,
            num_heads=self.num_heads,
            ff_dim=self.ff_dim,
            norm="layer",
            activation="gelu",
            pre_norm=True,
            residual=True,
            causal=True,
            attention="fused",
            dropout=self.dropout,
        )


class SmallGPT(nn.Module):
    """Causal character-level GPT; ``forward(idx, targets)`` returns ``(logits, mean CE in nats)``.

    ``idx``: ``(B, T)`` int64 token ids with ``T ≤ max_len``. ``noise_std`` adds
    ``N(0, noise_std² I)`` to the token embeddings (the §7.3 robustness probe), drawn from
    ``generator`` so that evaluation is reproducible.
    """

    def __init__(self, cfg: SmallGPTConfig) -> None:
        super().__init__()
        if not isinstance(cfg, SmallGPTConfig):
            raise TypeError(f"cfg must be a SmallGPTConfig, got {type(cfg).__name__}")
        if cfg.vocab_size is None:
            raise ValueError("cfg.vocab_size must be set (a positive int) to build a SmallGPT")
        self.cfg = cfg
        self.wte = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.wpe = nn.Embedding(cfg.max_len, cfg.d_model)
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList([LinearBlock(cfg.block_spec()) for _ in range(cfg.num_layers)])
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        self.head.weight = self.wte.weight  # weight tying
        self.apply(self._init_weights)
        for name, p in self.named_parameters():  # GPT-2 scaled residual init
            if name.endswith("proj.weight") or name.endswith("mlp.2.weight"):
                nn.init.normal_(p, mean=0.0, std=cfg.init_std / math.sqrt(2 * cfg.num_layers))

    def _init_weights(self, module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=self.cfg.init_std)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=self.cfg.init_std)

    def num_parameters(self) -> dict[str, int]:
        """Parameter counts: ``embedding`` (wte), ``positions`` (wpe), ``transformer`` (the rest)."""
        emb = self.wte.weight.numel()
        pos = self.wpe.weight.numel()
        total = sum(p.numel() for p in self.parameters())  # tied head counted once
        return {"embedding": emb, "positions": pos, "transformer": total - emb - pos, "total": total}

    def token_embeddings(self, idx: torch.Tensor) -> torch.Tensor:
        """``(B, T)`` ids → ``(B, T, d)`` token embeddings (what the EmbeddingPrior sees)."""
        self._check_idx(idx)
        return self.wte(idx)

    def _check_idx(self, idx: torch.Tensor) -> None:
        if not isinstance(idx, torch.Tensor) or idx.dtype != torch.long or idx.ndim != 2:
            raise TypeError(
                f"idx must be an int64 tensor of shape (B, T), got {getattr(idx, 'dtype', type(idx))} "
                f"{tuple(getattr(idx, 'shape', ()))}"
            )
        if idx.shape[1] > self.cfg.max_len:
            raise ValueError(f"idx has T={idx.shape[1]} > max_len={self.cfg.max_len}")
        V = self.wte.num_embeddings
        if idx.numel() and (int(idx.min()) < 0 or int(idx.max()) >= V):
            raise ValueError(f"idx must hold token ids in [0, vocab_size) = [0, {V})")

    def forward(
        self,
        idx: torch.Tensor,
        targets: torch.Tensor | None = None,
        *,
        tok_emb: torch.Tensor | None = None,
        noise_std: float = 0.0,
        generator: torch.Generator | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Logits ``(B, T, |V|)`` and, if ``targets`` ``(B, T)`` is given, the mean CE (nats).

        ``tok_emb`` lets a caller pass precomputed token embeddings (so that the margin penalty and
        the language model share one lookup).
        """
        self._check_idx(idx)
        B, T = idx.shape
        x = self.wte(idx) if tok_emb is None else tok_emb  # (B, T, d)
        if noise_std < 0:
            raise ValueError(f"noise_std must be >= 0, got {noise_std}")
        if noise_std > 0:
            noise = torch.randn(x.shape, generator=generator, device=x.device, dtype=x.dtype)
            x = x + noise_std * noise
        pos = torch.arange(T, device=idx.device)
        x = self.drop(x + self.wpe(pos))  # (B, T, d)
        for block in self.blocks:
            x, _ = block(x)
        logits = self.head(self.ln_f(x))  # (B, T, |V|)
        loss = None
        if targets is not None:
            if not isinstance(targets, torch.Tensor) or targets.dtype != torch.long:
                raise TypeError(f"targets must be an int64 tensor, got {getattr(targets, 'dtype', type(targets))}")
            if targets.shape != idx.shape:
                raise ValueError(f"targets must have shape {tuple(idx.shape)}, got {tuple(targets.shape)}")
            V = logits.shape[-1]
            if targets.numel() and (int(targets.min()) < 0 or int(targets.max()) >= V):
                raise ValueError(f"targets must hold token ids in [0, vocab_size) = [0, {V})")
            flat = logits.reshape(B * T, -1)  # (B·T, |V|)
            if flat.dtype not in (torch.float32, torch.float64):  # bf16 under autocast
                flat = flat.float()
            loss = F.cross_entropy(flat, targets.reshape(B * T))
        return logits, loss
