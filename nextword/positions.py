"""Positional information: sinusoidal, learned and rotary (Chapter 6, §6.5).

Conventions: row vectors, sequences of shape ``(..., T, d)``; positions are 0-based integers
(Chapter 6 writes ``t = 0, 1, ...`` for the encodings).

* :func:`sinusoidal_encoding` — Vaswani et al. / Chapter 6: ``PE(t, 2i) = sin(t ω_i)``,
  ``PE(t, 2i+1) = cos(t ω_i)`` with ``ω_i = base^(-2i/d_model)`` (Fig. 6.23).
* :func:`sinusoidal_shift_matrix` — the block rotation ``R_k`` with ``PE(t+k) = R_k PE(t)``
  (the "linear function of the encoding at position t" of §6.5).
* :class:`LearnedPositionalEmbedding` — a trainable ``(max_len, d_model)`` table (Fig. 6.26).
* :func:`apply_rope` / :func:`rope_rotation_matrix` — rotary embedding (Fig. 6.27; the RoFormer
  inner product of the formulation paper §5.3.2), rotating **consecutive pairs**
  ``(x[2i], x[2i+1])`` by the angle ``t θ_i``, ``θ_i = base^(-2i/d)``. (Some libraries, e.g. the
  Hugging Face Llama code, pair ``x[i]`` with ``x[i + d/2]`` instead; the two differ by a fixed
  permutation of the coordinates.)
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, DTypeLike, NDArray

from nextword._validate import (
    as_float_array,
    as_generator,
    as_index_array,
    check_float_dtype,
    check_positive_int,
    check_real,
    check_size,
)

__all__ = [
    "ENCODINGS",
    "sinusoidal_encoding",
    "sinusoidal_shift_matrix",
    "LearnedPositionalEmbedding",
    "rope_frequencies",
    "apply_rope",
    "rope_rotation_matrix",
]


#: The positional encodings of §6.5, the one list the numpy decoder, the torch TinyLM and the Fig. 6.28
#: probe share: name -> how the position enters the model ("added" to the token embeddings before the
#: first block, "rotated" into queries and keys inside attention, or "none": no position at all).
ENCODINGS: dict[str, str] = {"sinusoidal": "added", "learned": "added", "rope": "rotated", "none": "none"}


def _check_base(base: float) -> float:
    return check_real(base, "base", lo=1.0, lo_open=True)


def rope_frequencies(d: int, base: float = 10000.0) -> NDArray[np.float64]:
    """Angular frequencies ``ω_i = base^(-2i/d)`` for ``i = 0 .. ceil(d/2)-1``, shape ``(ceil(d/2),)``.

    Shared by the sinusoidal encoding (pair ``(2i, 2i+1)`` oscillates at ``ω_i``) and RoPE.
    """
    d = check_positive_int(d, "d")
    check_size((d,), "rope_frequencies(d)")
    base = _check_base(base)
    return base ** (-np.arange(0, d, 2, dtype=np.float64) / d)


def sinusoidal_encoding(num_positions: int, d_model: int, base: float = 10000.0) -> NDArray[np.float64]:
    """Sinusoidal positional encodings, shape ``(num_positions, d_model)`` (Chapter 6, §6.5).

    ``PE(t, 2i) = sin(t / base^(2i/d_model))`` and ``PE(t, 2i+1) = cos(t / base^(2i/d_model))``
    for ``t = 0 .. num_positions-1``: even dimensions sine, odd dimensions cosine, so every pair
    lies on the unit circle, ``PE(t,2i)^2 + PE(t,2i+1)^2 = 1``. An odd ``d_model`` keeps the final
    sine column. float64.

    >>> np.round(sinusoidal_encoding(2, 4), 4)
    array([[0.    , 1.    , 0.    , 1.    ],
           [0.8415, 0.5403, 0.01  , 1.    ]])
    """
    num_positions = check_positive_int(num_positions, "num_positions")
    d_model = check_positive_int(d_model, "d_model")
    check_size((num_positions, d_model), "sinusoidal_encoding(num_positions, d_model)")
    omega = rope_frequencies(d_model, base)  # (ceil(d/2),)
    angles = np.arange(num_positions, dtype=np.float64)[:, None] * omega[None, :]  # (T, ceil(d/2))
    pe = np.empty((num_positions, 2 * omega.size))
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles)
    return pe[:, :d_model]


def sinusoidal_shift_matrix(k: float, d_model: int, base: float = 10000.0) -> NDArray[np.float64]:
    """Block rotation ``R_k`` (``(d_model, d_model)``) with ``PE(t + k) = R_k @ PE(t)`` for all ``t``.

    Column-vector form; for row vectors ``PE(t+k) = PE(t) @ R_k.T``. Block ``i`` acts on the pair
    ``(sin t ω_i, cos t ω_i)`` as ``[[cos k ω_i, sin k ω_i], [-sin k ω_i, cos k ω_i]]`` (the angle
    addition formulas). It depends on ``k`` only, not on ``t``: the relative-position property
    Chapter 6 mentions after Fig. 6.23. Requires an even ``d_model`` and a finite offset ``k``.

    >>> bool(np.allclose(sinusoidal_shift_matrix(2, 4) @ sinusoidal_encoding(1, 4)[0],
    ...                  sinusoidal_encoding(3, 4)[2]))
    True
    """
    k = check_real(k, "k")
    d_model = check_positive_int(d_model, "d_model")
    if d_model % 2:
        raise ValueError(f"d_model must be even for the block rotation, got {d_model}")
    check_size((d_model, d_model), "sinusoidal_shift_matrix(d_model)")
    omega = rope_frequencies(d_model, base)
    c, s = np.cos(k * omega), np.sin(k * omega)
    R = np.zeros((d_model, d_model))
    idx = np.arange(0, d_model, 2)
    R[idx, idx], R[idx, idx + 1] = c, s
    R[idx + 1, idx], R[idx + 1, idx + 1] = -s, c
    return R


class LearnedPositionalEmbedding:
    """A learned absolute position table ``P`` of shape ``(max_len, d_model)`` (Fig. 6.26).

    ``emb(T)`` returns the first ``T`` rows, ``emb(positions)`` the rows at integer positions.
    Asking for a position ``>= max_len`` raises ``ValueError``: there is no row for it, the
    extrapolation failure Chapter 6 describes for learned encodings (Fig. 6.28).

    >>> emb = LearnedPositionalEmbedding(8, 4, rng=np.random.default_rng(0))
    >>> emb(3).shape
    (3, 4)
    """

    def __init__(
        self,
        max_len: int,
        d_model: int,
        *,
        rng: np.random.Generator | int | None = None,
        std: float = 0.02,
        dtype: DTypeLike = np.float64,
    ) -> None:
        self.max_len = check_positive_int(max_len, "max_len")
        self.d_model = check_positive_int(d_model, "d_model")
        check_size((self.max_len, self.d_model), "LearnedPositionalEmbedding(max_len, d_model)")
        std = check_real(std, "std", lo=0.0)
        dtype = check_float_dtype(dtype)
        rng = as_generator(rng)
        self.table = (std * rng.standard_normal((self.max_len, self.d_model))).astype(dtype)

    def _positions(self, positions: int | ArrayLike) -> NDArray[np.int64]:
        if isinstance(positions, (int, np.integer)) and not isinstance(positions, bool):
            T = check_positive_int(positions, "positions (a length T)")
            if T > self.max_len:
                raise ValueError(
                    f"sequence length {T} exceeds max_len={self.max_len} of the "
                    "learned positional table (no rows for later positions)"
                )
            return np.arange(T)
        return as_index_array(positions, "positions", upper=self.max_len)

    def __call__(self, positions: int | ArrayLike) -> NDArray[np.floating]:
        """Rows of the table: an int ``T`` gives ``(T, d_model)``; an index array ``(...)`` gives ``(..., d_model)``."""
        return self.table[self._positions(positions)]

    def backward(self, positions: int | ArrayLike, grad_output: ArrayLike) -> NDArray[np.floating]:
        """Gradient of a loss w.r.t. ``table`` given ``dL/d(output)`` of shape ``(..., d_model)`` (scatter-add)."""
        pos = self._positions(positions)
        g = as_float_array(grad_output, "grad_output")
        if g.shape != pos.shape + (self.d_model,):
            raise ValueError(f"grad_output must have shape {pos.shape + (self.d_model,)}, got {g.shape}")
        grad = np.zeros_like(self.table, dtype=np.result_type(self.table, g))
        np.add.at(grad, pos, g)
        return grad

    def num_parameters(self) -> int:
        return self.table.size


def _rope_angles(T: int, d: int, positions: ArrayLike | None, base: float) -> NDArray[np.float64]:
    if positions is None:
        pos = np.arange(T, dtype=np.float64)
    else:
        pos = as_float_array(positions, "positions")
        if pos.ndim == 0 or pos.shape[-1] != T:
            raise ValueError(f"positions must have shape (..., T) with T={T} (the length axis of x), got {pos.shape}")
    return pos[..., :, None] * rope_frequencies(d, base)  # (..., T, d/2)


def apply_rope(x: ArrayLike, positions: ArrayLike | None = None, base: float = 10000.0) -> NDArray[np.floating]:
    """Rotary position embedding of ``x (..., T, d)`` (Fig. 6.27; formulation paper §5.3.2).

    Each consecutive pair ``(x[t, 2i], x[t, 2i+1])`` is rotated by the angle ``p_t θ_i`` with
    ``θ_i = base^(-2i/d)`` and ``p_t = positions[t]`` (default ``t``)::

        y[2i]   = x[2i] cos(p θ_i) - x[2i+1] sin(p θ_i)
        y[2i+1] = x[2i] sin(p θ_i) + x[2i+1] cos(p θ_i)

    i.e. ``y[t] = rope_rotation_matrix(p_t, d) @ x[t]``. Because rotations compose,
    ``apply_rope(q)[i] · apply_rope(k)[j] = q[i]^T R_{j-i} k[j]`` depends on the positions only
    through ``i - j`` (Exercise 6). In complex form, with ``z = x[2i] + 1j x[2i+1]``, this is
    ``z e^{i p θ_i}``. ``d`` must be even; the dtype of ``x`` is kept.

    >>> y = apply_rope(np.array([[1.0, 0.0], [1.0, 0.0]]))
    >>> np.round(y, 4)            # position 1 rotated by 1 radian
    array([[1.    , 0.    ],
           [0.5403, 0.8415]])
    """
    x = as_float_array(x, "x", min_ndim=2)
    T, d = x.shape[-2], x.shape[-1]
    if d == 0 or d % 2:
        raise ValueError(f"the last dimension d of x must be even for RoPE, got x.shape={x.shape}")
    ang = _rope_angles(T, d, positions, base)  # (..., T, d/2)
    try:
        np.broadcast_shapes(x.shape[:-1], ang.shape[:-1])
    except ValueError:
        raise ValueError(
            f"positions of shape {ang.shape[:-1]} do not match x's leading axes {x.shape[:-1]} (the batch must agree)"
        ) from None
    cos, sin = np.cos(ang).astype(x.dtype), np.sin(ang).astype(x.dtype)
    x_even, x_odd = x[..., 0::2], x[..., 1::2]  # (..., T, d/2) each
    out = np.empty(np.broadcast_shapes(x.shape, ang.shape[:-1] + (d,)), dtype=x.dtype)
    out[..., 0::2] = x_even * cos - x_odd * sin
    out[..., 1::2] = x_even * sin + x_odd * cos
    return out


def rope_rotation_matrix(position: float, d: int, base: float = 10000.0) -> NDArray[np.float64]:
    """Block-diagonal rotation ``R_p`` (``(d, d)``) used by :func:`apply_rope` at position ``p``.

    Column-vector form: ``apply_rope(x)[t] == R_{p_t} @ x[t]`` (row form ``x[t] @ R.T``).
    ``R_p`` is orthogonal and ``R_p.T @ R_s = R_{s-p}``, which is why RoPE scores depend only on
    the offset between query and key positions. ``position`` must be finite (a NaN or infinite
    angle has no rotation).

    >>> bool(np.allclose(rope_rotation_matrix(1, 4).T @ rope_rotation_matrix(3, 4),
    ...                  rope_rotation_matrix(2, 4)))
    True
    """
    position = check_real(position, "position")
    d = check_positive_int(d, "d")
    if d % 2:
        raise ValueError(f"d must be even for RoPE, got {d}")
    check_size((d, d), "rope_rotation_matrix(d)")
    ang = position * rope_frequencies(d, base)
    c, s = np.cos(ang), np.sin(ang)
    R = np.zeros((d, d))
    idx = np.arange(0, d, 2)
    R[idx, idx], R[idx, idx + 1] = c, -s
    R[idx + 1, idx], R[idx + 1, idx + 1] = s, c
    return R
