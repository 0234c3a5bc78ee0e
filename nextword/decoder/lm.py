"""A small decoder-only language model in numpy, with a KV cache (Chapter 6, §6.6, Fig. 6.29).

``tokens (..., T)`` → token embedding ``E[tokens]`` (+ positional encoding) → ``num_layers``
:class:`~nextword.decoder.layers.TransformerBlock` s → (final norm, pre-norm only) → unembedding
``W_U (d_model, vocab_size)`` → logits ``(..., T, vocab_size)``; ``softmax`` of row ``t`` is
``P(w[t+1] | w[0..t])``.

Decoding strategies live in :mod:`nextword.decoding`; they only need :meth:`DecoderLM.next_logits`.

The flags of :class:`DecoderConfig` are the ablations of Chapter 6, Exercise 12: ``causal=False``
(no mask), ``positional="none"`` (no positions), ``num_heads=1`` (single head), ``residual=False``
(no skips); :meth:`DecoderLM.parameters` gives named, editable arrays and
``logits(tokens, head_mask=...)`` switches individual heads off.

>>> cfg = DecoderConfig(vocab_size=11, d_model=8, num_heads=2, num_layers=2, max_len=16)
>>> lm = DecoderLM(cfg, rng=np.random.default_rng(0))
>>> lm.logits([1, 2, 3]).shape, lm.next_logits([1, 2, 3]).shape
((3, 11), (11,))
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal, Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from nextword._validate import (
    as_float_array,
    as_generator,
    as_index_array,
    as_token_list,
    check_choice,
    check_flag,
    check_positive_int,
    check_real,
    check_size,
)
from nextword.embedding import embed
from nextword.attention.kv_cache import KVCache
from nextword.decoder.layers import TransformerBlock, layer_norm, rms_norm
from nextword.positions import ENCODINGS, sinusoidal_encoding

__all__ = ["DecoderConfig", "DecoderLM"]


@dataclass(frozen=True)
class DecoderConfig:
    """Hyper-parameters of :class:`DecoderLM` (validated on construction)."""

    vocab_size: int
    d_model: int
    num_heads: int
    num_layers: int
    max_len: int
    d_ff: int | None = None  # default 4 * d_model
    positional: Literal["sinusoidal", "learned", "rope", "none"] = "sinusoidal"
    norm: Literal["layer", "rms"] = "layer"
    pre_norm: bool = True  # False: Chapter 6's post-norm formula
    causal: bool = True
    residual: bool = True
    activation: Literal["gelu", "gelu_tanh", "relu"] = "gelu"
    tie_embeddings: bool = False  # logits = h E^T instead of h W_U
    rope_base: float = 10000.0
    eps: float = 1e-5
    emb_std: float = 1.0  # init std of the token (and learned position) embeddings
    dtype: Literal["float64", "float32"] = "float64"

    def __post_init__(self) -> None:
        for name in ("vocab_size", "d_model", "num_heads", "num_layers", "max_len"):
            check_positive_int(getattr(self, name), name)
        if self.d_ff is not None:
            check_positive_int(self.d_ff, "d_ff")
        if self.d_model % self.num_heads:
            raise ValueError(f"num_heads={self.num_heads} must divide d_model={self.d_model}")
        choices = {
            "positional": tuple(ENCODINGS),
            "norm": ("layer", "rms"),
            "activation": ("gelu", "gelu_tanh", "relu"),
            "dtype": ("float64", "float32"),
        }
        for name, allowed in choices.items():
            check_choice(getattr(self, name), name, allowed)
        for name in ("pre_norm", "causal", "residual", "tie_embeddings"):
            check_flag(getattr(self, name), name)
        check_real(self.eps, "eps", lo=0.0, lo_open=True)
        check_real(self.emb_std, "emb_std", lo=0.0)
        check_real(self.rope_base, "rope_base", lo=1.0, lo_open=True)
        check_size((self.vocab_size, self.d_model), "DecoderConfig(vocab_size, d_model)")
        check_size((self.d_model, self.ff_dim), "DecoderConfig(d_model, d_ff)")
        if self.positional == "learned":
            check_size((self.max_len, self.d_model), "DecoderConfig(max_len, d_model)")
        if self.positional == "rope" and (self.d_model // self.num_heads) % 2:
            raise ValueError("positional='rope' needs an even head dimension d_model/num_heads")

    @property
    def ff_dim(self) -> int:
        return 4 * self.d_model if self.d_ff is None else self.d_ff


class DecoderLM:
    """Decoder-only transformer LM with numpy parameters and a KV cache.

    Use :meth:`logits` for a whole sequence, :meth:`new_cache` + :meth:`logits_cached` for
    incremental decoding (identical numbers up to float rounding), or :meth:`next_logits` — a
    ``prefix -> logits`` callable that reuses an internal cache across calls whose prefixes share
    a beginning (greedy, sampling and beam search all benefit). After editing parameters in place,
    call :meth:`reset_cache` (or use :meth:`load_parameters`, which does it).
    """

    def __init__(self, config: DecoderConfig, *, rng: np.random.Generator | int | None = None) -> None:
        if not isinstance(config, DecoderConfig):
            raise TypeError(f"config must be a DecoderConfig, got {type(config).__name__}")
        self.config = c = config
        rng = as_generator(rng)
        dtype = np.dtype(c.dtype)
        self.tok_emb = (c.emb_std * rng.standard_normal((c.vocab_size, c.d_model))).astype(dtype)
        self.pos_emb = (
            (c.emb_std * rng.standard_normal((c.max_len, c.d_model))).astype(dtype)
            if c.positional == "learned"
            else None
        )
        self.blocks = [
            TransformerBlock(
                c.d_model,
                c.num_heads,
                c.ff_dim,
                rng=rng,
                norm=c.norm,
                pre_norm=c.pre_norm,
                causal=c.causal,
                residual=c.residual,
                activation=c.activation,
                eps=c.eps,
                dtype=dtype,
                rope_base=c.rope_base if c.positional == "rope" else None,
            )
            for _ in range(c.num_layers)
        ]
        self.norm_f_weight = np.ones(c.d_model, dtype) if c.pre_norm else None
        self.norm_f_bias = np.zeros(c.d_model, dtype) if c.pre_norm and c.norm == "layer" else None
        self.W_U = (
            None
            if c.tie_embeddings
            else (rng.standard_normal((c.d_model, c.vocab_size)) / np.sqrt(c.d_model)).astype(dtype)
        )
        self._pe = np.zeros((0, c.d_model), dtype)
        self.reset_cache()

    # ---- parameters ------------------------------------------------------------------------
    def parameters(self) -> dict[str, np.ndarray]:
        """Named parameter arrays (live views): ``tok_emb``, ``pos_emb`` (learned only),
        ``blocks.{i}.attn.W_q|W_k|W_v|W_o``, ``blocks.{i}.norm1.weight``, ``blocks.{i}.ffn.W1``, …,
        ``norm_f.weight`` (pre-norm), ``W_U`` (untied)."""
        p: dict[str, np.ndarray] = {"tok_emb": self.tok_emb}
        if self.pos_emb is not None:
            p["pos_emb"] = self.pos_emb
        for i, blk in enumerate(self.blocks):
            p.update({f"blocks.{i}.{k}": v for k, v in blk.parameters().items()})
        if self.norm_f_weight is not None:
            p["norm_f.weight"] = self.norm_f_weight
        if self.norm_f_bias is not None:
            p["norm_f.bias"] = self.norm_f_bias
        if self.W_U is not None:
            p["W_U"] = self.W_U
        return p

    def num_parameters(self) -> int:
        return sum(a.size for a in self.parameters().values())

    def load_parameters(self, params: Mapping[str, ArrayLike], *, strict: bool = True) -> None:
        """Copy arrays into the model by name (shapes must match, entries finite; ``strict``
        requires every name). Nothing is copied unless every array passes the checks."""
        if not isinstance(params, Mapping):
            raise TypeError(f"params must be a mapping from parameter names to arrays, got {type(params).__name__}")
        own = self.parameters()
        unknown = sorted(set(params) - set(own))
        missing = sorted(set(own) - set(params))
        if unknown or (strict and missing):
            raise ValueError(f"parameter names do not match: unknown {unknown}, missing {missing}")
        checked = {}
        for name, value in params.items():
            arr = as_float_array(value, f"params[{name!r}]")
            if arr.shape != own[name].shape:
                raise ValueError(f"params[{name!r}] must have shape {own[name].shape}, got {arr.shape}")
            checked[name] = arr
        for name, arr in checked.items():
            own[name][...] = arr
        self.reset_cache()

    # ---- forward ---------------------------------------------------------------------------
    def _positional(self, x: np.ndarray, start: int) -> np.ndarray:
        """Add absolute positions ``start .. start+T-1`` to ``x (..., T, d)``."""
        T, c = x.shape[-2], self.config
        if c.positional == "learned":
            if start + T > c.max_len:
                raise ValueError(
                    f"positions up to {start + T - 1} exceed max_len={c.max_len} of the learned positional table"
                )
            return x + self.pos_emb[start : start + T]
        if c.positional == "sinusoidal":
            if start + T > self._pe.shape[0]:  # built lazily: rows do not depend on the table length
                n = max(start + T, min(c.max_len, max(64, 2 * self._pe.shape[0])))
                self._pe = sinusoidal_encoding(n, c.d_model).astype(x.dtype)
            return x + self._pe[start : start + T]
        return x  # "rope" acts inside attention; "none" adds nothing

    def _head_mask(self, head_mask: ArrayLike | None) -> NDArray[np.floating] | None:
        if head_mask is None:
            return None
        hm = as_float_array(head_mask, "head_mask", ndim=2)
        want = (self.config.num_layers, self.config.num_heads)
        if hm.shape != want:
            raise ValueError(f"head_mask must have shape (num_layers, num_heads) = {want}, got {hm.shape}")
        return hm

    def _forward(
        self, tokens: ArrayLike, cache: KVCache | None, head_mask: ArrayLike | None, return_weights: bool
    ) -> Any:
        c = self.config
        ids = as_index_array(tokens, "tokens", upper=c.vocab_size)
        if ids.ndim == 0 or ids.shape[-1] == 0:
            raise ValueError(f"tokens must have shape (..., T) with T >= 1, got {ids.shape}")
        hm = self._head_mask(head_mask)
        start = 0 if cache is None else cache.length
        x = self._positional(embed(self.tok_emb, ids), start)  # (..., T, d)
        weights = []
        for i, blk in enumerate(self.blocks):
            out = blk(
                x,
                cache=None if cache is None else cache.layers[i],
                head_mask=None if hm is None else hm[i],
                return_weights=return_weights,
            )
            x, w = out if return_weights else (out, None)
            weights.append(w)
        if c.pre_norm:
            x = (
                rms_norm(x, self.norm_f_weight, eps=c.eps)
                if c.norm == "rms"
                else layer_norm(x, self.norm_f_weight, self.norm_f_bias, eps=c.eps)
            )
        logits = x @ (self.tok_emb.T if self.W_U is None else self.W_U)  # (..., T, V)
        return (logits, weights) if return_weights else logits

    def logits(
        self, tokens: ArrayLike, *, head_mask: ArrayLike | None = None, return_weights: bool = False
    ) -> NDArray[np.floating] | tuple[NDArray[np.floating], list[NDArray[np.floating]]]:
        """Next-token logits ``(..., T, vocab_size)`` for ``tokens (..., T)`` (integer ids).

        ``head_mask (num_layers, num_heads)`` scales each head's output (0 = ablated).
        ``return_weights`` also returns a list of per-layer weights ``(..., num_heads, T, T)``.
        ``T`` may exceed ``max_len`` for sinusoidal, rotary or no positions (extrapolation, as in
        Fig. 6.28) but not for learned positions, which have no rows beyond ``max_len``.
        """
        return self._forward(tokens, None, head_mask, return_weights)

    def new_cache(self) -> KVCache:
        """An empty :class:`~nextword.attention.kv_cache.KVCache` for :meth:`logits_cached`."""
        return KVCache(self.config.num_layers, capacity=self.config.max_len)

    def logits_cached(
        self, tokens: ArrayLike, cache: KVCache, *, head_mask: ArrayLike | None = None
    ) -> NDArray[np.floating]:
        """Logits ``(..., T_new, V)`` of ``tokens (..., T_new)`` that follow the ``cache.length``
        cached positions; the cache is extended. Equals the corresponding rows of
        ``logits(all_tokens)``. Needs ``causal=True`` (without the mask, earlier positions
        would change when tokens are appended, so there is nothing to cache)."""
        if not self.config.causal:
            raise ValueError(
                "a KV cache needs causal=True: without the mask, old positions "
                "attend to new tokens and their keys/values change"
            )
        if not isinstance(cache, KVCache) or len(cache.layers) != self.config.num_layers:
            raise TypeError("cache must be a KVCache from DecoderLM.new_cache()")
        return self._forward(tokens, cache, head_mask, False)

    def reset_cache(self) -> None:
        """Forget the internal cache of :meth:`next_logits`."""
        self._cache: KVCache | None = None
        self._cached_tokens: list[int] = []

    def next_logits(self, prefix: Sequence[int] | NDArray[np.integer]) -> NDArray[np.floating]:
        """Logits ``(vocab_size,)`` of the token that follows ``prefix`` (a non-empty list of ids).

        Reuses the cached keys/values of the longest common beginning with the previous call's
        prefix and computes only the rest (for a non-causal model it recomputes everything).
        """
        ids = as_index_array(
            prefix if isinstance(prefix, np.ndarray) else as_token_list(prefix, "prefix"),
            "prefix",
            upper=self.config.vocab_size,
        )
        if ids.ndim != 1 or ids.size == 0:
            raise ValueError(f"prefix must be a non-empty 1-D sequence of token ids, got shape {ids.shape}")
        if not self.config.causal:
            return self.logits(ids)[-1]
        toks = ids.tolist()
        if self._cache is None:
            self._cache = self.new_cache()
            self._cached_tokens = []
        n = 0
        for a, b in zip(self._cached_tokens, toks):
            if a != b:
                break
            n += 1
        n = min(n, len(toks) - 1)  # always feed at least the last token to get its logits
        self._cache.truncate(n)
        out = self.logits_cached(ids[n:], self._cache)[-1]
        self._cached_tokens = toks
        return out

    def __repr__(self) -> str:
        return f"DecoderLM({', '.join(f'{k}={v!r}' for k, v in asdict(self.config).items())})"
