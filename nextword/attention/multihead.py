"""Multi-head self-attention in numpy (Chapter 6, §6.4, Figs. 6.17–6.20).

Row-vector convention of Chapter 6: for an input ``X (..., T, d_model)``,
``Q = X W_q``, ``K = X W_k``, ``V = X W_v`` (each ``(d_model, d_model)``); head ``h`` uses the
column block ``h*d_head:(h+1)*d_head`` (``d_head = d_model / num_heads``), attends with scale
``1/sqrt(d_head)``, and the concatenated heads go through ``W_o``:

    MHA(X) = concat_h( softmax(Q_h K_h^T / sqrt(d_head) + mask) V_h ) W_o

Parameters: ``4 d_model^2`` (plus ``4 d_model`` biases when ``bias=True``), the same as one head
of full width (Chapter 6, Exercise 4).

Compared with ``torch.nn.MultiheadAttention`` (``batch_first=True``), which computes ``x A^T + b``,
``W_q = in_proj_weight[:d].T`` and ``W_o = out_proj.weight.T``;
:meth:`MultiHeadAttention.from_torch_state_dict` / :meth:`~MultiHeadAttention.to_torch_state_dict`
do the conversion.

Also re-exported by :mod:`nextword.attention`.
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from nextword._validate import as_float_array, check_positive_int
from nextword.attention.core import attend, check_mask
from nextword.attention.kv_cache import LayerKVCache
from nextword.positions import apply_rope

__all__ = ["MultiHeadAttention"]


class MultiHeadAttention:
    """Multi-head (self-)attention with parameters ``W_q, W_k, W_v, W_o`` as numpy arrays.

    Parameters
    ----------
    d_model, num_heads:
        Model width and number of heads; ``num_heads`` must divide ``d_model``.
    rng:
        Generator for the initialisation (entries ``N(0, 1/d_model)``); default a fresh one.
    bias:
        Add biases ``b_q, b_k, b_v, b_o`` (torch's default); off by default as in Chapter 6.
    dtype:
        ``np.float64`` (checks) or ``np.float32`` (speed).
    rope_base:
        If given, apply rotary position embedding (:func:`~nextword.positions.apply_rope`) to each
        head's queries and keys with this base.

    Storage: ``W_q, W_k, W_v`` are views into one fused ``(d_model, 3 d_model)`` matrix so the
    three projections are a single matmul; assigning ``mha.W_q = A`` copies ``A`` into it, and
    in-place edits of ``mha.W_q`` act on the model (handy for ablations).

    >>> mha = MultiHeadAttention(8, 2, rng=np.random.default_rng(0))
    >>> mha(np.ones((5, 8))).shape, mha.num_parameters()
    ((5, 8), 256)
    """

    def __init__(self, d_model: int, num_heads: int, *, rng: np.random.Generator | None = None,
                 bias: bool = False, dtype: Any = np.float64, rope_base: float | None = None) -> None:
        self.d_model = check_positive_int(d_model, "d_model")
        self.num_heads = check_positive_int(num_heads, "num_heads")
        if self.d_model % self.num_heads:
            raise ValueError(f"num_heads={num_heads} must divide d_model={d_model}")
        self.head_dim = self.d_model // self.num_heads
        if rope_base is not None and self.head_dim % 2:
            raise ValueError(f"RoPE needs an even head dimension, got d_model/num_heads = {self.head_dim}")
        self.rope_base = rope_base
        dtype = np.dtype(dtype)
        if dtype not in (np.float32, np.float64):
            raise TypeError(f"dtype must be float32 or float64, got {dtype}")
        rng = np.random.default_rng() if rng is None else rng
        d, std = self.d_model, 1.0 / np.sqrt(self.d_model)
        self.W_qkv = (std * rng.standard_normal((d, 3 * d))).astype(dtype)  # (d, 3d) = [W_q|W_k|W_v]
        self.W_o = (std * rng.standard_normal((d, d))).astype(dtype)  # (d, d)
        self.b_qkv = np.zeros(3 * d, dtype) if bias else None  # (3d,)
        self.b_o = np.zeros(d, dtype) if bias else None  # (d,)

    # ---- parameters ------------------------------------------------------------------------
    def _block(self, i: int) -> np.ndarray:
        return self.W_qkv[:, i * self.d_model:(i + 1) * self.d_model]  # (d, d) view

    def _set_block(self, i: int, value: object, name: str) -> None:
        arr = as_float_array(value, name, ndim=2)
        if arr.shape != (self.d_model, self.d_model):
            raise ValueError(f"{name} must have shape (d_model, d_model) = "
                             f"{(self.d_model, self.d_model)}, got {arr.shape}")
        self._block(i)[...] = arr

    W_q = property(lambda self: self._block(0), lambda self, a: self._set_block(0, a, "W_q"),
                   doc="Query projection ``(d_model, d_model)``; ``Q = X W_q``.")
    W_k = property(lambda self: self._block(1), lambda self, a: self._set_block(1, a, "W_k"),
                   doc="Key projection ``(d_model, d_model)``; ``K = X W_k``.")
    W_v = property(lambda self: self._block(2), lambda self, a: self._set_block(2, a, "W_v"),
                   doc="Value projection ``(d_model, d_model)``; ``V = X W_v``.")

    @property
    def dtype(self) -> np.dtype:
        return self.W_qkv.dtype

    @property
    def bias(self) -> bool:
        return self.b_qkv is not None

    def parameters(self) -> dict[str, np.ndarray]:
        """Named parameter arrays (views: editing them edits the module)."""
        p = {"W_q": self.W_q, "W_k": self.W_k, "W_v": self.W_v, "W_o": self.W_o}
        if self.bias:
            d = self.d_model
            p.update(b_q=self.b_qkv[:d], b_k=self.b_qkv[d:2 * d], b_v=self.b_qkv[2 * d:], b_o=self.b_o)
        return p

    def num_parameters(self) -> int:
        """``4 d_model^2`` (+ ``4 d_model`` with biases)."""
        return sum(p.size for p in self.parameters().values())

    def astype(self, dtype: Any) -> "MultiHeadAttention":
        """A copy with parameters in ``dtype`` (e.g. ``np.float32`` for the fast path)."""
        new = object.__new__(MultiHeadAttention)
        new.__dict__.update(self.__dict__)
        new.W_qkv, new.W_o = self.W_qkv.astype(dtype), self.W_o.astype(dtype)
        if self.bias:
            new.b_qkv, new.b_o = self.b_qkv.astype(dtype), self.b_o.astype(dtype)
        return new

    # ---- forward ---------------------------------------------------------------------------
    def __call__(self, X: object, causal: bool = True, return_weights: bool = False, *,
                 mask: object = None, positions: object = None, cache: LayerKVCache | None = None,
                 head_mask: object = None) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """Self-attention of ``X (..., T, d_model)`` → ``(..., T, d_model)``.

        ``causal`` applies the mask of Fig. 6.13 (on by default: this is a decoder).
        ``return_weights`` also returns per-head weights ``(..., num_heads, T, T_keys)``.
        ``mask``: extra boolean ``(T, T_keys)`` mask, True = may attend.
        ``positions``: RoPE positions ``(T,)`` (default ``cache.length + arange(T)``).
        ``cache``: a :class:`~nextword.attention.kv_cache.LayerKVCache`; the new keys/values are appended and
        the queries attend to everything cached (queries are the last ``T`` positions).
        ``head_mask``: ``(num_heads,)`` multipliers of each head's output before ``W_o``
        (0 switches a head off).
        """
        X = as_float_array(X, "X", min_ndim=2)
        if X.shape[-1] != self.d_model:
            raise ValueError(f"X must have shape (..., T, d_model) with d_model={self.d_model}, "
                             f"got {X.shape}")
        T, h, dh = X.shape[-2], self.num_heads, self.head_dim
        qkv = X @ self.W_qkv  # (..., T, 3d)
        if self.b_qkv is not None:
            qkv += self.b_qkv
        qkv = qkv.reshape(X.shape[:-1] + (3, h, dh))  # (..., T, 3, h, dh)
        q = np.swapaxes(qkv[..., 0, :, :], -2, -3)  # (..., h, T, dh) view
        k = np.swapaxes(qkv[..., 1, :, :], -2, -3)  # (..., h, T, dh) view
        v = np.swapaxes(qkv[..., 2, :, :], -2, -3)  # (..., h, T, dh) view
        offset = 0 if cache is None else cache.length
        if self.rope_base is not None:
            pos = np.arange(offset, offset + T) if positions is None else positions
            q = apply_rope(q, pos, self.rope_base)
            k = apply_rope(k, pos, self.rope_base)
        if cache is not None:
            k, v = cache.append(k, v)  # (..., h, offset+T, dh)
        m = None if mask is None else check_mask(mask, T, k.shape[-2])
        ctx, w = attend(q, k, v, causal=causal, mask=m, scale=1.0 / np.sqrt(dh),
                         need_weights=return_weights)  # ctx (..., h, T, dh)
        if head_mask is not None:
            hm = as_float_array(head_mask, "head_mask", ndim=1)
            if hm.shape != (h,):
                raise ValueError(f"head_mask must have shape (num_heads,) = ({h},), got {hm.shape}")
            ctx = ctx * hm.astype(ctx.dtype)[:, None, None]
        ctx = np.swapaxes(ctx, -2, -3).reshape(X.shape[:-1] + (self.d_model,))  # (..., T, h*dh)
        out = ctx @ self.W_o  # (..., T, d)
        if self.b_o is not None:
            out += self.b_o
        return (out, w) if return_weights else out

    # ---- torch interop ---------------------------------------------------------------------
    @classmethod
    def from_torch_state_dict(cls, state_dict: Mapping[str, Any], num_heads: int, *,
                              dtype: Any = np.float64, rope_base: float | None = None
                              ) -> "MultiHeadAttention":
        """Build from a ``torch.nn.MultiheadAttention(d, num_heads, batch_first=True)`` state dict.

        Needs ``in_proj_weight (3d, d)`` and ``out_proj.weight (d, d)`` (and the biases if the torch
        module had them); tensors or arrays are accepted.
        """
        if "in_proj_weight" not in state_dict or "out_proj.weight" not in state_dict:
            raise ValueError("state_dict needs 'in_proj_weight' and 'out_proj.weight' (a torch "
                             "MultiheadAttention with kdim = vdim = embed_dim); got keys "
                             f"{sorted(state_dict)}")
        W_in = _to_numpy(state_dict["in_proj_weight"])  # (3d, d)
        W_out = _to_numpy(state_dict["out_proj.weight"])  # (d, d)
        d = W_in.shape[1]
        if W_in.shape != (3 * d, d) or W_out.shape != (d, d):
            raise ValueError(f"expected in_proj_weight (3d, d) and out_proj.weight (d, d), got "
                             f"{W_in.shape} and {W_out.shape}")
        bias = state_dict.get("in_proj_bias") is not None
        mha = cls(d, num_heads, bias=bias, dtype=dtype, rope_base=rope_base,
                  rng=np.random.default_rng(0))
        mha.W_qkv[...] = W_in.T
        mha.W_o[...] = W_out.T
        if bias:
            mha.b_qkv[...] = _to_numpy(state_dict["in_proj_bias"])
            mha.b_o[...] = _to_numpy(state_dict["out_proj.bias"])
        return mha

    def to_torch_state_dict(self) -> dict[str, Any]:
        """State dict (torch tensors) for ``torch.nn.MultiheadAttention(d_model, num_heads,
        bias=self.bias, batch_first=True)``."""
        import torch

        sd = {"in_proj_weight": torch.from_numpy(np.ascontiguousarray(self.W_qkv.T)),
              "out_proj.weight": torch.from_numpy(np.ascontiguousarray(self.W_o.T))}
        if self.bias:
            sd["in_proj_bias"] = torch.from_numpy(self.b_qkv.copy())
            sd["out_proj.bias"] = torch.from_numpy(self.b_o.copy())
        return sd


def _to_numpy(t: Any) -> np.ndarray:
    if hasattr(t, "detach"):
        t = t.detach().cpu().numpy()
    return np.array(t, dtype=np.float64)
