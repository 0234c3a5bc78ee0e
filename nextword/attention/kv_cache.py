"""Key/value cache for incremental (autoregressive) decoding.

When a causal model generates token ``t+1``, the keys and values of positions ``0..t`` do not
change (they depend only on the tokens up to their own position). A KV cache keeps them, so each
new token costs one row of attention instead of a full ``T x T`` recomputation.

Storage per layer: ``keys``/``values`` of shape ``(..., num_heads, capacity, head_dim)``, filled
up to ``length``. Capacity doubles when exceeded. The cache is allocated on the first append, so
the batch shape ``...`` is whatever the first call used.

>>> cache = KVCache(num_layers=1)
>>> k = v = np.ones((2, 3, 4))                    # (heads, T, head_dim)
>>> K, V = cache.layers[0].append(k, v)
>>> K.shape, cache.length
((2, 3, 4), 3)
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from nextword._validate import MAX_ELEMENTS, as_float_array, check_positive_int, check_size

__all__ = ["LayerKVCache", "KVCache"]


class LayerKVCache:
    """Keys and values of one attention layer, ``(..., num_heads, length, head_dim)``."""

    def __init__(self, capacity: int = 64) -> None:
        self._capacity = check_positive_int(capacity, "capacity")
        if self._capacity > MAX_ELEMENTS:
            raise ValueError(f"capacity must be <= {MAX_ELEMENTS} positions, got {self._capacity}")
        self._k: np.ndarray | None = None
        self._v: np.ndarray | None = None
        self.length = 0

    def append(self, k: ArrayLike, v: ArrayLike) -> tuple[NDArray[np.floating], NDArray[np.floating]]:
        """Append ``k (..., h, T, dk)`` and ``v (..., h, T, dv)`` (finite floats of one dtype);
        return all keys/values so far (views)."""
        k, v = as_float_array(k, "k"), as_float_array(v, "v")
        if k.dtype != v.dtype:
            raise TypeError(f"k and v must share one float dtype, got {k.dtype} and {v.dtype}")
        if k.ndim < 2 or v.ndim != k.ndim or k.shape[:-1] != v.shape[:-1]:
            raise ValueError(
                f"k and v must have shapes (..., h, T, dk) and (..., h, T, dv), got {k.shape} and {v.shape}"
            )
        T = k.shape[-2]
        if self._k is None:
            cap = max(self._capacity, T)
            check_size(k.shape[:-2] + (cap, k.shape[-1] + v.shape[-1]), "LayerKVCache(capacity)")
            self._k = np.empty(k.shape[:-2] + (cap, k.shape[-1]), dtype=k.dtype)  # (..., h, cap, dk)
            self._v = np.empty(v.shape[:-2] + (cap, v.shape[-1]), dtype=v.dtype)  # (..., h, cap, dv)
        elif k.shape[:-2] != self._k.shape[:-2] or k.shape[-1] != self._k.shape[-1]:
            raise ValueError(
                f"cached keys have shape {self._k.shape[:-2]} + (T, {self._k.shape[-1]}), "
                f"cannot append k of shape {k.shape}"
            )
        need = self.length + T
        if need > self._k.shape[-2]:
            cap = max(need, 2 * self._k.shape[-2])
            self._k = _grow(self._k, cap, self.length)
            self._v = _grow(self._v, cap, self.length)
        self._k[..., self.length : need, :] = k
        self._v[..., self.length : need, :] = v
        self.length = need
        return self._k[..., :need, :], self._v[..., :need, :]

    def truncate(self, length: int) -> None:
        """Forget every position ``>= length`` (keys there will be overwritten by later appends)."""
        length = check_positive_int(length, "length", minimum=0)
        if not 0 <= length <= self.length:
            raise ValueError(f"length must be in [0, {self.length}], got {length}")
        self.length = int(length)

    @property
    def nbytes(self) -> int:
        """Bytes held by the cache buffers (allocated capacity, not just the used part)."""
        return 0 if self._k is None else self._k.nbytes + self._v.nbytes


def _grow(buf: np.ndarray, cap: int, used: int) -> np.ndarray:
    new = np.empty(buf.shape[:-2] + (cap, buf.shape[-1]), dtype=buf.dtype)  # (..., h, cap, d)
    new[..., :used, :] = buf[..., :used, :]
    return new


class KVCache:
    """One :class:`LayerKVCache` per layer; ``length`` is the number of cached positions."""

    def __init__(self, num_layers: int, capacity: int = 64) -> None:
        num_layers = check_positive_int(num_layers, "num_layers")
        check_size((num_layers,), "KVCache(num_layers)", limit=2**16)
        self.layers = [LayerKVCache(capacity) for _ in range(num_layers)]

    @property
    def length(self) -> int:
        return self.layers[0].length

    def truncate(self, length: int) -> None:
        """Keep only the first ``length`` positions in every layer."""
        length = check_positive_int(length, "length", minimum=0)
        for layer in self.layers:
            layer.truncate(length)

    @property
    def nbytes(self) -> int:
        return sum(layer.nbytes for layer in self.layers)
