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
:meth:`MultiHeadAttention.from_torch_state_dict` / :meth:`~MultiHeadAttention.torch_state_arrays`
do the conversion.

**Mask polarity.** Here a boolean mask is True where a query *may attend* (as torch's
``scaled_dot_product_attention``); ``torch.nn.MultiheadAttention``'s boolean ``attn_mask`` and
``key_padding_mask`` are True where attention is *blocked*. Reusing a torch mask unconverted
silently inverts it: convert with :func:`mask_from_torch` / :func:`key_mask_from_torch` (and
:func:`mask_to_torch` for the way back). Float masks are additive in both and pass unchanged.

Also re-exported by :mod:`nextword.attention`.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from nextword._validate import (
    as_array,
    as_float_array,
    check_finite_scalar,
    check_flag,
    check_float_dtype,
    check_positive_int,
    check_rng,
)
from nextword.attention.core import attend, check_batch_axes, check_key_mask, check_mask, combine_masks
from nextword.attention.kv_cache import LayerKVCache
from nextword.positions import apply_rope

__all__ = ["MultiHeadAttention", "mask_from_torch", "mask_to_torch", "key_mask_from_torch"]


class MultiHeadAttention:
    """Multi-head (self-)attention with parameters ``W_q, W_k, W_v, W_o`` as numpy arrays.

    Parameters
    ----------
    d_model, num_heads:
        Model width and number of heads; ``num_heads`` must divide ``d_model``.
    rng:
        Generator (or int seed) for the initialisation (entries ``N(0, 1/d_model)``); default a
        fresh one.
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

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        *,
        rng: np.random.Generator | None = None,
        bias: bool = False,
        dtype: Any = np.float64,
        rope_base: float | None = None,
    ) -> None:
        self.d_model = check_positive_int(d_model, "d_model")
        self.num_heads = check_positive_int(num_heads, "num_heads")
        if self.d_model % self.num_heads:
            raise ValueError(f"num_heads={num_heads} must divide d_model={d_model}")
        self.head_dim = self.d_model // self.num_heads
        check_flag(bias, "bias")
        if rope_base is not None:
            check_finite_scalar(rope_base, "rope_base", positive=True)
        if rope_base is not None and self.head_dim % 2:
            raise ValueError(f"RoPE needs an even head dimension, got d_model/num_heads = {self.head_dim}")
        self.rope_base = rope_base
        dtype = check_float_dtype(dtype, "dtype")  # "banana" named, not "data type not understood"
        rng = check_rng(rng)
        d, std = self.d_model, 1.0 / np.sqrt(self.d_model)
        self.W_qkv = (std * rng.standard_normal((d, 3 * d))).astype(dtype)  # (d, 3d) = [W_q|W_k|W_v]
        self.W_o = (std * rng.standard_normal((d, d))).astype(dtype)  # (d, d)
        self.b_qkv = np.zeros(3 * d, dtype) if bias else None  # (3d,)
        self.b_o = np.zeros(d, dtype) if bias else None  # (d,)

    # ---- parameters ------------------------------------------------------------------------
    def _block(self, i: int) -> np.ndarray:
        return self.W_qkv[:, i * self.d_model : (i + 1) * self.d_model]  # (d, d) view

    def _set_block(self, i: int, value: object, name: str) -> None:
        arr = as_float_array(value, name, ndim=2)
        if arr.shape != (self.d_model, self.d_model):
            raise ValueError(
                f"{name} must have shape (d_model, d_model) = {(self.d_model, self.d_model)}, got {arr.shape}"
            )
        self._block(i)[...] = arr

    W_q = property(
        lambda self: self._block(0),
        lambda self, a: self._set_block(0, a, "W_q"),
        doc="Query projection ``(d_model, d_model)``; ``Q = X W_q``.",
    )
    W_k = property(
        lambda self: self._block(1),
        lambda self, a: self._set_block(1, a, "W_k"),
        doc="Key projection ``(d_model, d_model)``; ``K = X W_k``.",
    )
    W_v = property(
        lambda self: self._block(2),
        lambda self, a: self._set_block(2, a, "W_v"),
        doc="Value projection ``(d_model, d_model)``; ``V = X W_v``.",
    )

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
            p.update(b_q=self.b_qkv[:d], b_k=self.b_qkv[d : 2 * d], b_v=self.b_qkv[2 * d :], b_o=self.b_o)
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
    def __call__(
        self,
        X: object,
        causal: bool | str = True,
        return_weights: bool = False,
        *,
        mask: object = None,
        key_mask: object = None,
        positions: object = None,
        cache: LayerKVCache | None = None,
        head_mask: object = None,
    ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """Self-attention of ``X (..., T, d_model)`` → ``(..., T, d_model)``.

        ``X`` must have the module's dtype when it is a float array (``TypeError`` otherwise, as
        torch; convert the module with :meth:`astype`); lists and integer arrays are converted to it.
        ``causal`` applies the mask of Fig. 6.13 (on by default: this is a decoder); ``True`` =
        ``"bottom_right"`` (the queries are the last ``T`` of the ``T_keys`` positions, as with a
        cache) or ``"top_left"`` (torch's ``is_causal``); see
        :func:`~nextword.attention.scaled_dot_product_attention`.
        ``return_weights`` also returns per-head weights ``(..., num_heads, T, T_keys)``.
        ``mask``: extra mask, **boolean True = may attend** (the opposite of
        ``torch.nn.MultiheadAttention``; see :func:`mask_from_torch`) or float (added to the
        scores, e.g. ALiBi). Shape ``(T, T_keys)``, or ``(..., T, T_keys)`` whose leading axes
        are ``X``'s leading axes (one mask per example), or ``(..., num_heads, T, T_keys)``
        (one mask per example and head); size-1 axes broadcast.
        ``key_mask``: ``(..., T_keys)`` per-example key mask, **True = real key** (the opposite of
        torch's ``key_padding_mask``; see :func:`key_mask_from_torch`), or float (added).
        A query with no visible key gets a zero context (as torch).
        ``positions``: RoPE positions ``(T,)`` (default ``cache.length + arange(T)``).
        ``cache``: a :class:`~nextword.attention.kv_cache.LayerKVCache`; the new keys/values are appended and
        the queries attend to everything cached (queries are the last ``T`` positions).
        ``head_mask``: ``(num_heads,)`` multipliers of each head's output before ``W_o``
        (0 switches a head off).
        """
        if cache is not None and not isinstance(cache, LayerKVCache):
            raise TypeError(f"cache must be a LayerKVCache or None, got {type(cache).__name__}")
        raw = as_array(X, "X")
        if isinstance(X, np.ndarray) and np.issubdtype(raw.dtype, np.floating) and raw.dtype != self.dtype:
            raise TypeError(
                f"X has dtype {raw.dtype} but the parameters are {self.dtype}; convert "
                f"X with .astype(np.{self.dtype}) or the module with "
                f"mha.astype(np.{raw.dtype})"
            )
        X = as_float_array(raw, "X", min_ndim=2).astype(self.dtype, copy=False)
        if X.shape[-1] != self.d_model:
            raise ValueError(f"X must have shape (..., T, d_model) with d_model={self.d_model}, got {X.shape}")
        T, h, dh = X.shape[-2], self.num_heads, self.head_dim
        batch = X.shape[:-2]
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
        Tk = k.shape[-2]
        m = None
        if mask is not None:
            m = check_mask(mask, T, Tk, dtype=self.dtype)
            if m.ndim <= X.ndim:  # (..., T, Tk): leading axes are X's, add the head axis
                check_batch_axes(m.shape[:-2], batch, "mask", f"(..., {T}, {Tk})")
                m = m[..., None, :, :]  # (..., 1, T, Tk)
            elif m.ndim == X.ndim + 1 and m.shape[-3] in (1, h):  # (..., h, T, Tk) per head
                check_batch_axes(m.shape[:-3], batch, "mask", f"(..., num_heads, {T}, {Tk})")
            else:
                raise ValueError(
                    f"mask must have shape (T, T_keys), (..., T, T_keys) with X's leading "
                    f"axes {batch}, or (..., num_heads={h}, T, T_keys); got {m.shape}"
                )
        if key_mask is not None:
            km = check_key_mask(key_mask, Tk, batch, dtype=self.dtype)  # (..., 1, Tk)
            m = combine_masks(m, km[..., None, :, :], self.dtype)  # (..., 1, 1, Tk)
        ctx, w = attend(
            q, k, v, causal=causal, mask=m, scale=1.0 / np.sqrt(dh), need_weights=return_weights
        )  # ctx (..., h, T, dh)
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
    def from_torch_state_dict(
        cls, state_dict: Mapping[str, Any], num_heads: int, *, dtype: Any = None, rope_base: float | None = None
    ) -> "MultiHeadAttention":
        """Build from a ``torch.nn.MultiheadAttention(d, num_heads, batch_first=True)`` state dict.

        Needs ``in_proj_weight (3d, d)`` and ``out_proj.weight (d, d)`` (and the biases if the torch
        module had them); tensors or arrays are accepted, and must be finite (``ValueError``
        naming the entry otherwise). ``dtype`` defaults to that of ``in_proj_weight`` (float32
        stays float32, anything else becomes float64), so a float32 torch module gives a float32
        numpy one that accepts the same float32 inputs. Masks are **not** part of a state dict, and torch's boolean
        masks mean "blocked" where ours mean "may attend": convert them with
        :func:`mask_from_torch` / :func:`key_mask_from_torch`.
        """
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"state_dict must be a mapping (a torch state dict), got {type(state_dict).__name__}")
        if "in_proj_weight" not in state_dict or "out_proj.weight" not in state_dict:
            raise ValueError(
                "state_dict needs 'in_proj_weight' and 'out_proj.weight' (a torch "
                "MultiheadAttention with kdim = vdim = embed_dim); got keys "
                f"{sorted(state_dict)}"
            )
        W_in = _to_numpy(state_dict["in_proj_weight"], "in_proj_weight")  # (3d, d)
        W_out = _to_numpy(state_dict["out_proj.weight"], "out_proj.weight")  # (d, d)
        d = W_in.shape[1]
        if W_in.shape != (3 * d, d) or W_out.shape != (d, d):
            raise ValueError(
                f"expected in_proj_weight (3d, d) and out_proj.weight (d, d), got {W_in.shape} and {W_out.shape}"
            )
        bias = state_dict.get("in_proj_bias") is not None
        if dtype is None:
            src = state_dict["in_proj_weight"]
            src_dtype = str(getattr(src, "dtype", np.asarray(src).dtype)).replace("torch.", "")
            dtype = np.float32 if src_dtype == "float32" else np.float64
        mha = cls(d, num_heads, bias=bias, dtype=dtype, rope_base=rope_base, rng=np.random.default_rng(0))
        mha.W_qkv[...] = W_in.T
        mha.W_o[...] = W_out.T
        if bias:
            if state_dict.get("out_proj.bias") is None:
                raise ValueError("state_dict has 'in_proj_bias' but no 'out_proj.bias'")
            b_in = _to_numpy(state_dict["in_proj_bias"], "in_proj_bias")  # (3d,)
            b_out = _to_numpy(state_dict["out_proj.bias"], "out_proj.bias")  # (d,)
            if b_in.shape != (3 * d,) or b_out.shape != (d,):
                raise ValueError(
                    f"expected in_proj_bias (3d,) = ({3 * d},) and out_proj.bias (d,) = "
                    f"({d},), got {b_in.shape} and {b_out.shape}"
                )
            mha.b_qkv[...] = b_in
            mha.b_o[...] = b_out
        return mha

    def torch_state_arrays(self) -> dict[str, np.ndarray]:
        """The state of ``torch.nn.MultiheadAttention(d_model, num_heads, bias=self.bias, batch_first=True)``
        as numpy arrays under torch's names (``{k: torch.from_numpy(v) for k, v in ...items()}`` is its
        ``state_dict``; this module never imports torch). Masks do not travel with it: give the torch module
        ``mask_to_torch(mask)`` (its boolean masks mean "blocked", ours "may attend")."""
        sd = {
            "in_proj_weight": np.ascontiguousarray(self.W_qkv.T),
            "out_proj.weight": np.ascontiguousarray(self.W_o.T),
        }
        if self.bias:
            sd["in_proj_bias"] = self.b_qkv.copy()
            sd["out_proj.bias"] = self.b_o.copy()
        return sd


def _to_numpy(t: Any, name: str) -> np.ndarray:
    """A finite float64 copy of a tensor or array from a state dict."""
    if hasattr(t, "detach"):
        t = t.detach().cpu().numpy()
    return as_float_array(np.array(t), f"state_dict[{name!r}]").astype(np.float64)


def _is_torch(t: Any) -> bool:
    return hasattr(t, "detach") and hasattr(t, "numpy")


def mask_from_torch(attn_mask: Any, num_heads: int | None = None) -> np.ndarray:
    """Convert a ``torch.nn.MultiheadAttention`` ``attn_mask`` to this library's polarity.

    torch's boolean mask is True where attention is **blocked**; ours (and torch SDPA's) is True
    where a query **may attend**, so booleans are negated. Float masks are additive in both and are
    returned unchanged (as numpy). A 3-D torch mask ``(B * num_heads, T, T_keys)`` is reshaped to
    our per-head layout ``(B, num_heads, T, T_keys)`` when ``num_heads`` is given.

    >>> mask_from_torch(np.array([[False, True], [False, False]])).astype(int)   # torch: True = blocked
    array([[1, 0],
           [1, 1]])
    """
    if num_heads is not None:
        check_positive_int(num_heads, "num_heads")
    m = np.asarray(attn_mask.detach().cpu().numpy() if _is_torch(attn_mask) else attn_mask)
    if np.issubdtype(m.dtype, np.floating) and np.isnan(m).any():
        raise ValueError("attn_mask contains NaN (an additive mask holds 0 or -inf)")
    if m.ndim not in (2, 3):
        raise ValueError(f"attn_mask must have shape (T, T_keys) or (B * num_heads, T, T_keys), got {m.shape}")
    if m.ndim == 3 and num_heads is not None:
        h = check_positive_int(num_heads, "num_heads")
        if m.shape[0] % h:
            raise ValueError(f"a 3-D attn_mask must have B * num_heads = B * {h} rows, got {m.shape}")
        m = m.reshape((m.shape[0] // h, h) + m.shape[1:])  # (B, h, T, T_keys)
    return ~m if m.dtype == np.bool_ else m


def key_mask_from_torch(key_padding_mask: Any) -> np.ndarray:
    """Convert torch's ``key_padding_mask (B, T_keys)`` (bool: True = padding, ignore) to our
    ``key_mask`` (True = real key); float masks (additive) pass unchanged.

    >>> key_mask_from_torch(np.array([[False, True]])).tolist()
    [[True, False]]
    """
    m = np.asarray(key_padding_mask.detach().cpu().numpy() if _is_torch(key_padding_mask) else key_padding_mask)
    if m.ndim < 1:
        raise ValueError(f"key_padding_mask must have shape (B, T_keys), got {m.shape}")
    if np.issubdtype(m.dtype, np.floating) and np.isnan(m).any():
        raise ValueError("key_padding_mask contains NaN (an additive mask holds 0 or -inf)")
    return ~m if m.dtype == np.bool_ else m


def mask_to_torch(mask: object) -> np.ndarray:
    """Our mask (bool: True = may attend; float: additive) in ``torch.nn.MultiheadAttention``'s ``attn_mask``
    convention (bool: True = blocked; float unchanged), as a contiguous array (``torch.from_numpy`` of it is
    the tensor; this module never imports torch). A per-head mask ``(B, num_heads, T, T_keys)`` becomes
    torch's ``(B * num_heads, T, T_keys)``."""
    m = np.asarray(mask)
    if m.ndim == 4:
        m = m.reshape((m.shape[0] * m.shape[1],) + m.shape[2:])  # (B * h, T, T_keys)
    return np.ascontiguousarray(~m if m.dtype == np.bool_ else m)
