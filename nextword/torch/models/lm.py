"""A small, readable, trainable decoder-only LM in torch (Chapter 6, §6.6, Fig. 6.29).

The torch twin of :class:`nextword.decoder.DecoderLM`: the same architecture and the same flags
(:class:`LMConfig` is a :class:`~nextword.decoder.DecoderConfig` with an ``init_std``), but with autograd so the
book can *train* tiny models on a CPU in seconds (leakage without the mask, head specialisation,
positional variants, ablations). :func:`to_numpy_decoder` copies a trained model into the numpy
``DecoderLM`` (logits agree to ~1e-5 in float32, tighter in float64), so every numpy tool
(decoding, KV cache, attention maps) works on trained weights.

Row-vector convention of Chapter 6: activations ``(B, T, d_model)``; weights are stored as
``(d_in, d_out)`` parameters and applied as ``x @ W`` (not ``nn.Linear``'s ``x W^T``), so names and
shapes are those of the numpy model: ``tok_emb (V, d)``, ``pos_emb (max_len, d)``,
``blocks.{i}.W_qkv (d, 3d)`` (``[W_q | W_k | W_v]``), ``blocks.{i}.W_o (d, d)``,
``blocks.{i}.W1 (d, d_ff)``, ``b1``, ``W2 (d_ff, d)``, ``b2``, norms, ``W_U (d, V)``.

Positional encodings are not re-derived: the sinusoidal table is
:func:`nextword.positions.sinusoidal_encoding` (a buffer, regrown on demand for longer inputs) and
RoPE uses :func:`nextword.positions.rope_frequencies` (consecutive pairs, as
:func:`~nextword.positions.apply_rope`; the tests check equality).

Training and evaluation live one floor up, in :mod:`nextword.torch.training.token_lm` (``train_lm``,
``evaluate_loss``): a model knows no loop.

Tiny worked example::

    >>> cfg = LMConfig(vocab_size=5, d_model=8, num_heads=2, num_layers=1, max_len=16)
    >>> model = TinyLM(cfg, seed=0)
    >>> tuple(model(torch.zeros(2, 3, dtype=torch.long)).shape)   # ids (B, T) -> logits (B, T, V)
    (2, 3, 5)
    >>> to_numpy_decoder(model).logits([0, 1, 2]).shape
    (3, 5)
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Callable, Sequence

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from nextword.decoder import DecoderConfig
from nextword.torch.models.block import BlockSpec, RowBlock
from nextword.positions import ENCODINGS, rope_frequencies, sinusoidal_encoding

__all__ = ["LMConfig", "TinyLM", "Block", "to_numpy_decoder", "next_logits_fn"]


@dataclass(frozen=True)
class LMConfig(DecoderConfig):
    """Hyper-parameters of :class:`TinyLM`: a :class:`nextword.decoder.DecoderConfig` plus ``init_std``.

    Every field of the numpy model's configuration means the same here (one vocabulary, one
    validation): ``positional`` is ``"sinusoidal"`` (added, Fig. 6.23), ``"learned"`` (added table,
    Fig. 6.26), ``"rope"`` (rotary, inside attention, Fig. 6.27) or ``"none"``; the flags ``causal``,
    ``residual``, ``pre_norm`` are the ablations of Exercise 12 (``pre_norm=False`` is the chapter's
    post-norm block ``u = LN(h + MHA(h))``, ``h' = LN(u + FFN(u))``). ``init_std`` is the std of every
    weight matrix and embedding of :class:`TinyLM` at initialisation; ``emb_std`` and ``dtype`` only
    describe the numpy twin made by :func:`to_numpy_decoder` (TinyLM computes in float32).

    >>> LMConfig(vocab_size=5, d_model=8, num_heads=2, num_layers=1, max_len=4).to_decoder_config().d_model
    8
    """

    init_std: float = 0.02

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.init_std > 0:
            raise ValueError(f"init_std must be > 0, got {self.init_std}")

    def block_spec(self, attention: str = "explicit") -> BlockSpec:
        """The :class:`~nextword.torch.models.block.BlockSpec` of every block of this model.

        TinyLM's blocks use ``"explicit"`` attention (the weights are what Chapter 6 shows and probes);
        ``"fused"`` gives the same block on PyTorch's fused kernel (no weights).
        """
        return BlockSpec(
            d_model=self.d_model,
            num_heads=self.num_heads,
            ff_dim=self.ff_dim,
            norm=self.norm,
            eps=self.eps,
            activation=self.activation,
            pre_norm=self.pre_norm,
            residual=self.residual,
            causal=self.causal,
            attention=attention,
        )

    def to_decoder_config(self, dtype: str | None = None) -> DecoderConfig:
        """The matching :class:`nextword.decoder.DecoderConfig` (for :func:`to_numpy_decoder`)."""
        kw = {f.name: getattr(self, f.name) for f in fields(DecoderConfig)}
        if dtype is not None:
            kw["dtype"] = dtype
        return DecoderConfig(**kw)


class Block(RowBlock):
    """TinyLM's block: the one :class:`~nextword.torch.models.block.Block` in Chapter 6's layout, configured
    by an :class:`LMConfig` (``Block(config, generator)``, the name the Chapter 6 pages use)."""

    def __init__(self, c: LMConfig, gen: torch.Generator) -> None:
        if not isinstance(c, LMConfig):
            raise TypeError(f"c must be an LMConfig, got {type(c).__name__}")
        super().__init__(c.block_spec(), gen, init_std=c.init_std)
        self.c = c


class TinyLM(nn.Module):
    """Decoder-only transformer LM: ``ids (B, T)`` → logits ``(B, T, vocab_size)``.

    ``forward(ids, return_attention=True)`` also returns a list (one per layer) of attention
    weights ``(B, num_heads, T, T)``; ``head_mask (num_layers, num_heads)`` scales each head's
    output (0 = head switched off), as in :meth:`nextword.decoder.DecoderLM.logits`.
    Sinusoidal and RoPE models accept sequences longer than ``max_len``; learned positions raise.
    """

    def __init__(self, config: LMConfig, *, seed: int | None = 0) -> None:
        super().__init__()
        if not isinstance(config, LMConfig):
            raise TypeError(f"config must be an LMConfig, got {type(config).__name__}")
        self.config = c = config
        gen = torch.Generator()  # own generator: the init never touches torch's global RNG state
        gen.manual_seed(int(seed) if seed is not None else int(np.random.SeedSequence().entropy % 2**63))
        std = c.init_std
        self.tok_emb = nn.Parameter(std * torch.randn(c.vocab_size, c.d_model, generator=gen))
        self.pos_emb = (
            nn.Parameter(std * torch.randn(c.max_len, c.d_model, generator=gen)) if c.positional == "learned" else None
        )
        self.blocks = nn.ModuleList(Block(c, gen) for _ in range(c.num_layers))
        self.W_U = None if c.tie_embeddings else nn.Parameter(std * torch.randn(c.d_model, c.vocab_size, generator=gen))
        self.norm_f = (
            (nn.LayerNorm(c.d_model, eps=c.eps) if c.norm == "layer" else nn.RMSNorm(c.d_model, eps=c.eps))
            if c.pre_norm
            else None
        )
        # the numpy table itself (float64, kept out of .float()/.double() casts), regrown on demand
        self.pe_table = sinusoidal_encoding(c.max_len, c.d_model) if c.positional == "sinusoidal" else None
        dh = c.d_model // c.num_heads
        freqs = rope_frequencies(dh, c.rope_base) if c.positional == "rope" else np.zeros(0)
        self.register_buffer("rope_freqs", torch.tensor(freqs, dtype=torch.float64), persistent=False)

    def _add_positions(self, x: torch.Tensor) -> torch.Tensor:
        """``x (B, T, d)`` plus the added encoding; unchanged for the ones that are not added (RoPE, none)."""
        T, c = x.shape[1], self.config
        if ENCODINGS.get(c.positional) != "added":
            if c.positional not in ENCODINGS:  # the config validates the name; a new one must be implemented here
                raise ValueError(f"positional={c.positional!r} is not one of {tuple(ENCODINGS)}")
            return x
        if c.positional == "learned":
            if T > c.max_len:
                raise ValueError(f"sequence length {T} exceeds max_len={c.max_len} of the learned position table")
            return x + self.pos_emb[:T]
        if c.positional == "sinusoidal":
            if T > self.pe_table.shape[0]:  # nothing is learned, so longer inputs just extend the table
                self.pe_table = sinusoidal_encoding(T, c.d_model)
            return x + torch.from_numpy(self.pe_table[:T]).to(dtype=x.dtype, device=x.device)  # (T, d)
        raise ValueError(f"TinyLM adds no positional encoding named {c.positional!r}")

    def forward(
        self, ids: torch.Tensor, *, return_attention: bool = False, head_mask: torch.Tensor | np.ndarray | None = None
    ) -> torch.Tensor | tuple[torch.Tensor, list[torch.Tensor]]:
        c = self.config
        ids = torch.as_tensor(ids)
        if ids.dtype not in (torch.int64, torch.int32) or ids.ndim != 2 or ids.shape[1] == 0:
            raise ValueError(
                f"ids must be an integer tensor of shape (B, T) with T >= 1, got {tuple(ids.shape)} {ids.dtype}"
            )
        if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= c.vocab_size):
            raise ValueError(
                f"ids must lie in [0, vocab_size={c.vocab_size}), got range [{int(ids.min())}, {int(ids.max())}]"
            )
        hm = None
        if head_mask is not None:
            hm = torch.as_tensor(
                np.asarray(head_mask, dtype=np.float64) if not torch.is_tensor(head_mask) else head_mask
            )
            if tuple(hm.shape) != (c.num_layers, c.num_heads):
                raise ValueError(
                    f"head_mask must have shape (num_layers, num_heads) = "
                    f"{(c.num_layers, c.num_heads)}, got {tuple(hm.shape)}"
                )
        # F.embedding: a backward that is bitwise the same at any thread count (indexing's is not)
        x = self._add_positions(F.embedding(ids.long(), self.tok_emb))  # (B, T, d)
        freqs = self.rope_freqs if c.positional == "rope" else None
        weights = []
        for i, blk in enumerate(self.blocks):
            x, w = blk(x, freqs, None if hm is None else hm[i])
            weights.append(w)
        if self.norm_f is not None:
            x = self.norm_f(x)
        logits = x @ (self.tok_emb.T if self.W_U is None else self.W_U)  # (B, T, V)
        return (logits, weights) if return_attention else logits

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())


def next_logits_fn(model: TinyLM) -> Callable[[Sequence[int]], np.ndarray]:
    """A ``prefix -> logits (V,)`` callable for :mod:`nextword.decoding` (recomputes the prefix)."""

    @torch.no_grad()
    def next_logits(prefix: Sequence[int]) -> np.ndarray:
        ids = torch.as_tensor(np.asarray(list(prefix), dtype=np.int64))[None]  # (1, T)
        model.eval()
        return model(ids)[0, -1].double().numpy()

    return next_logits


def to_numpy_decoder(model: TinyLM, dtype: str = "float64"):
    """Copy ``model``'s weights into a :class:`nextword.decoder.DecoderLM` with the same architecture.

    The two compute the same function (the tests check logits to 1e-5); names map one to one,
    e.g. ``blocks.0.W_qkv[:, :d]`` → ``blocks.0.attn.W_q``, ``blocks.0.norm1.weight`` →
    ``blocks.0.norm1.weight``, ``blocks.0.W1`` → ``blocks.0.ffn.W1``, ``norm_f.*`` → ``norm_f.*``.
    """
    from nextword.decoder import DecoderLM

    c, d = model.config, model.config.d_model
    lm = DecoderLM(c.to_decoder_config(dtype), rng=np.random.default_rng(0))
    sd = {k: v.detach().double().cpu().numpy() for k, v in model.state_dict().items()}
    params = {"tok_emb": sd["tok_emb"]}
    if c.positional == "learned":
        params["pos_emb"] = sd["pos_emb"]
    for i in range(c.num_layers):
        p = f"blocks.{i}."
        W = sd[p + "W_qkv"]
        params.update(
            {
                p + "attn.W_q": W[:, :d],
                p + "attn.W_k": W[:, d : 2 * d],
                p + "attn.W_v": W[:, 2 * d :],
                p + "attn.W_o": sd[p + "W_o"],
            }
        )
        for k in ("W1", "b1", "W2", "b2"):
            params[p + "ffn." + k] = sd[p + k]
        for n in ("norm1", "norm2"):
            params[f"{p}{n}.weight"] = sd[f"{p}{n}.weight"]
            if c.norm == "layer":
                params[f"{p}{n}.bias"] = sd[f"{p}{n}.bias"]
    if c.pre_norm:
        params["norm_f.weight"] = sd["norm_f.weight"]
        if c.norm == "layer":
            params["norm_f.bias"] = sd["norm_f.bias"]
    if not c.tie_embeddings:
        params["W_U"] = sd["W_U"]
    lm.load_parameters(params)
    return lm
