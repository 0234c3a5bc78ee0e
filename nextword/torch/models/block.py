"""The one transformer block of the torch models: attention + feed-forward, Chapter 6's formulas (Fig. 6.29).

Both torch language models are stacks of this :class:`Block`: the Chapter 6 :class:`~nextword.torch.models.lm.TinyLM`
and the §7.1 :class:`~nextword.torch.models.gpt.SmallGPT` (the paper's model, a preset of the same block:
pre-norm, LayerNorm, exact GELU, causal, fused attention). What a block computes is fixed by a
:class:`BlockSpec`:

- ``pre_norm``: ``u = h + MHA(N(h))``, ``h' = u + FFN(N(u))`` (Eqs. (41)–(42) of the support-tokens paper);
  otherwise Chapter 6's post-norm ``u = N(h + MHA(h))``, ``h' = N(u + FFN(u))``; ``residual=False`` drops
  both skips (an ablation of Exercise 12);
- ``attention``: ``"explicit"`` computes ``softmax(Q Kᵀ / √d_h + M) V`` and returns the weights
  ``(B, h, T, T)`` (the probes and figures read them), ``"fused"`` calls
  :func:`torch.nn.functional.scaled_dot_product_attention` (the same function, faster; no weights, and
  its float32 results differ from the explicit ones in the last bits, ~5e-7);
- ``norm`` (``"layer"`` | ``"rms"``), ``activation`` (``"gelu"`` | ``"gelu_tanh"`` | ``"relu"``), ``causal``.

Where the weights live is the one thing the two models do not share, because their saved checkpoints
fix it (``book/results/``: §7's ``model.pt`` and the SVFlow LM's ``checkpoint_fp16.pth``), and because a
matrix product in the other memory layout is not bitwise the same in float32:

- :class:`RowBlock` — Chapter 6's row-vector convention ``x W`` with ``W (d_in, d_out)``, named as in the
  numpy :class:`nextword.decoder.DecoderLM`: ``W_qkv (d, 3d)`` = ``[W_q | W_k | W_v]``, ``W_o (d, d)``,
  ``W1 (d, d_ff)``, ``b1``, ``W2 (d_ff, d)``, ``b2``, ``norm1``, ``norm2``; drawn from a generator
  (TinyLM never touches torch's global RNG);
- :class:`LinearBlock` — ``nn.Linear`` (``x Wᵀ + b``), named as nanoGPT: ``ln1``, ``attn.qkv``,
  ``attn.proj``, ``ln2``, ``mlp.0``, ``mlp.2`` (with biases), initialised by torch's global RNG (SmallGPT
  re-initialises them, GPT-2 style).

>>> spec = BlockSpec(d_model=8, num_heads=2, ff_dim=16)
>>> blk = RowBlock(spec, torch.Generator().manual_seed(0), init_std=0.02)
>>> out, w = blk(torch.zeros(3, 5, 8))
>>> tuple(out.shape), tuple(w.shape)
((3, 5, 8), (3, 2, 5, 5))
>>> torch.equal(w[0, 0, 0, 1:], torch.zeros(4))                  # causal: token 1 sees only itself
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

__all__ = ["BlockSpec", "Block", "RowBlock", "LinearBlock", "apply_rope"]

_ATTENTION = ("explicit", "fused")


@dataclass(frozen=True)
class BlockSpec:
    """What one block computes (see the module docstring); shared by every torch model's config."""

    d_model: int
    num_heads: int
    ff_dim: int
    norm: str = "layer"
    eps: float = 1e-5
    activation: str = "gelu"
    pre_norm: bool = True
    residual: bool = True
    causal: bool = True
    attention: str = "explicit"
    dropout: float = 0.0

    def __post_init__(self) -> None:
        if self.attention not in _ATTENTION:
            raise ValueError(f"attention must be one of {_ATTENTION}, got {self.attention!r}")
        if self.norm not in ("layer", "rms"):
            raise ValueError(f"norm must be 'layer' or 'rms', got {self.norm!r}")
        if self.activation not in ("gelu", "gelu_tanh", "relu"):
            raise ValueError(f"activation must be gelu, gelu_tanh or relu, got {self.activation!r}")
        if self.d_model % self.num_heads:
            raise ValueError(f"d_model={self.d_model} must be divisible by num_heads={self.num_heads}")

    @property
    def head_dim(self) -> int:
        return self.d_model // self.num_heads


def apply_rope(x: torch.Tensor, freqs: torch.Tensor) -> torch.Tensor:
    """Rotate consecutive pairs of ``x (B, h, T, dh)`` by ``t ω_i`` (``freqs (dh/2,)``), positions ``0..T-1``."""
    T = x.shape[-2]
    ang = torch.arange(T, dtype=freqs.dtype, device=x.device)[:, None] * freqs  # (T, dh/2)
    cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
    xe, xo = x[..., 0::2], x[..., 1::2]  # (B, h, T, dh/2) each
    out = torch.stack((xe * cos - xo * sin, xe * sin + xo * cos), dim=-1)  # (B, h, T, dh/2, 2)
    return out.flatten(-2)  # (B, h, T, dh), pairs interleaved back


def _norm(spec: BlockSpec) -> nn.Module:
    return nn.LayerNorm(spec.d_model, eps=spec.eps) if spec.norm == "layer" else nn.RMSNorm(spec.d_model, eps=spec.eps)


def _activate(z: torch.Tensor, activation: str) -> torch.Tensor:
    if activation == "relu":
        return F.relu(z)
    return F.gelu(z, approximate="tanh" if activation == "gelu_tanh" else "none")


class Block(nn.Module):
    """One decoder block: ``forward(x (B, T, d), rope_freqs, head_mask)`` → ``(x' (B, T, d), weights)``.

    ``weights`` is ``(B, h, T, T)`` with explicit attention and ``None`` with fused attention;
    ``rope_freqs (dh/2,)`` rotates queries and keys (RoPE); ``head_mask (h,)`` scales each head's
    output. Subclasses say where the weights live (:meth:`qkv`, :meth:`out`, :meth:`ffn`, :attr:`norm1`,
    :attr:`norm2`); everything else is here, once.
    """

    spec: BlockSpec

    def qkv(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``x (B, T, d)`` → queries, keys, values, each ``(B, h, T, dh)``."""
        raise NotImplementedError

    def out(self, ctx: torch.Tensor) -> torch.Tensor:
        """The output projection of the concatenated heads ``(B, T, d)`` → ``(B, T, d)``."""
        raise NotImplementedError

    def ffn(self, x: torch.Tensor) -> torch.Tensor:
        """The position-wise feed-forward network ``W2 act(x W1 + b1) + b2``, ``(B, T, d)`` → ``(B, T, d)``."""
        raise NotImplementedError

    def attention(
        self, x: torch.Tensor, rope_freqs: torch.Tensor | None = None, head_mask: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``x (B, T, d)`` → output ``(B, T, d)`` and weights ``(B, h, T, T)`` (None when fused).

        Explicit: ``softmax(Q Kᵀ / √d_h + M) V`` with ``M`` −∞ above the diagonal when causal.
        """
        s = self.spec
        B, T, d = x.shape
        q, k, v = self.qkv(x)  # each (B, h, T, dh)
        if rope_freqs is not None:
            q, k = apply_rope(q, rope_freqs), apply_rope(k, rope_freqs)
        dropout = s.dropout if self.training else 0.0
        if s.attention == "fused":
            w = None
            ctx = F.scaled_dot_product_attention(q, k, v, is_causal=s.causal, dropout_p=dropout)  # (B, h, T, dh)
        else:
            scores = q @ k.transpose(-1, -2) / math.sqrt(s.head_dim)  # (B, h, T, T)
            if s.causal:
                future = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)  # True above diagonal
                scores = scores.masked_fill(future, float("-inf"))
            w = scores.softmax(dim=-1)  # (B, h, T, T)
            ctx = (F.dropout(w, dropout) if dropout else w) @ v  # (B, h, T, dh)
        if head_mask is not None:
            ctx = ctx * head_mask.to(ctx.dtype)[:, None, None]
        ctx = ctx.transpose(1, 2).reshape(B, T, d)  # (B, T, h*dh)
        return self.out(ctx), w

    def forward(
        self, x: torch.Tensor, rope_freqs: torch.Tensor | None = None, head_mask: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        s = self.spec
        skip = 1.0 if s.residual else 0.0  # the skip as a product: autograd then sums gradients in one order
        if s.pre_norm:  # u = h + MHA(N(h)), h' = u + FFN(N(u))
            a, w = self.attention(self.norm1(x), rope_freqs, head_mask)
            u = skip * x + a
            return skip * u + self.ffn(self.norm2(u)), w
        a, w = self.attention(x, rope_freqs, head_mask)  # Chapter 6: u = N(h + MHA(h)), h' = N(u + FFN(u))
        u = self.norm1(skip * x + a)
        return self.norm2(skip * u + self.ffn(u)), w


class RowBlock(Block):
    """:class:`Block` with Chapter 6's weights ``x W`` (``W (d_in, d_out)``), drawn ``N(0, init_std²)`` from ``gen``.

    Parameter order and names are those of the numpy twin: ``W_qkv``, ``W_o``, ``W1``, ``b1``, ``W2``,
    ``b2``, ``norm1``, ``norm2`` (:func:`nextword.torch.models.lm.to_numpy_decoder` maps them one to one).
    """

    def __init__(self, spec: BlockSpec, gen: torch.Generator, *, init_std: float) -> None:
        super().__init__()
        d, ff, std = spec.d_model, spec.ff_dim, init_std
        self.spec = spec
        self.W_qkv = nn.Parameter(std * torch.randn(d, 3 * d, generator=gen))  # (d, 3d) = [W_q | W_k | W_v]
        self.W_o = nn.Parameter(std * torch.randn(d, d, generator=gen))
        self.W1 = nn.Parameter(std * torch.randn(d, ff, generator=gen))
        self.b1 = nn.Parameter(torch.zeros(ff))
        self.W2 = nn.Parameter(std * torch.randn(ff, d, generator=gen))
        self.b2 = nn.Parameter(torch.zeros(d))
        self.norm1, self.norm2 = _norm(spec), _norm(spec)

    def qkv(self, x):
        B, T, d = x.shape
        qkv = (x @ self.W_qkv).view(B, T, 3, self.spec.num_heads, self.spec.head_dim)  # (B, T, 3, h, dh)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)  # each (B, h, T, dh)
        return q, k, v

    def out(self, ctx):
        return ctx @ self.W_o

    def ffn(self, x):
        return _activate(x @ self.W1 + self.b1, self.spec.activation) @ self.W2 + self.b2


class LinearBlock(Block):
    """:class:`Block` with ``nn.Linear`` weights (``x Wᵀ + b``), named as the §7 checkpoints (nanoGPT's names).

    ``ln1``, ``attn.qkv (3d, d)`` + bias, ``attn.proj (d, d)`` + bias, ``ln2``, ``mlp`` =
    ``Linear(d, d_ff), GELU, Linear(d_ff, d), Dropout``; created in that order (torch's global RNG draws
    their default initialisation in that order).
    """

    def __init__(self, spec: BlockSpec) -> None:
        super().__init__()
        d = spec.d_model
        self.spec = spec
        self.ln1 = _norm(spec)
        self.attn = nn.ModuleDict({"qkv": nn.Linear(d, 3 * d), "proj": nn.Linear(d, d)})
        self.ln2 = _norm(spec)
        act = nn.ReLU() if spec.activation == "relu" else nn.GELU("tanh" if spec.activation == "gelu_tanh" else "none")
        self.mlp = nn.Sequential(nn.Linear(d, spec.ff_dim), act, nn.Linear(spec.ff_dim, d), nn.Dropout(spec.dropout))

    @property
    def norm1(self) -> nn.Module:
        return self.ln1

    @property
    def norm2(self) -> nn.Module:
        return self.ln2

    def qkv(self, x):
        B, T, d = x.shape
        h, dh = self.spec.num_heads, self.spec.head_dim
        q, k, v = self.attn.qkv(x).split(d, dim=-1)  # 3 × (B, T, d)
        return tuple(z.view(B, T, h, dh).transpose(1, 2) for z in (q, k, v))  # each (B, h, T, dh)

    def out(self, ctx):
        return self.attn.proj(ctx)

    def ffn(self, x):
        return self.mlp(x)
