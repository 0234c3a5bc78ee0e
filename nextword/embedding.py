"""Token embedding φ (formulation paper, Definitions 2.6–2.7; Chapter 6's ``e[t]``).

The paper stores the embedding as a matrix ``φ ∈ R^{d_e × |V|}`` whose **columns** are the token
vectors, ``φ(v) = φ_v``, and extends it to sequences element-wise, ``(φ ∘ f)_m = φ(f_m)``.
Here, in the row-vector convention of Chapter 6, the table is ``E = φ^T`` of shape
``(vocab_size, d_model)``, token ids are 0-based (the paper labels ``V = {1..|V|}``), and

* :func:`embed` — lookup ``E[ids]`` (Def. 2.7): ``ids (...)`` → ``(..., d_model)``;
* :func:`one_hot` — the same map as a matrix product, ``embed(E, ids) == one_hot(ids, V) @ E``;
* :func:`embedding_grad` — its gradient: ``∂L/∂E = one_hot(ids)^T ∂L/∂out``, a scatter-add of
  the output gradients into the rows of the tokens that were looked up (a token used twice
  receives the sum).

>>> E = np.arange(6.0).reshape(3, 2)          # vocab 3, d_model 2
>>> embed(E, [2, 0, 2])
array([[4., 5.],
       [0., 1.],
       [4., 5.]])
>>> embedding_grad([2, 0, 2], np.ones((3, 2)), vocab_size=3)
array([[1., 1.],
       [0., 0.],
       [2., 2.]])
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, DTypeLike, NDArray

from nextword._validate import (
    as_float_array,
    as_generator,
    as_index_array,
    check_positive_int,
    check_real,
    check_size,
    check_float_dtype,
)

__all__ = ["embed", "one_hot", "embedding_grad", "TokenEmbedding"]


def _check_table(table: ArrayLike) -> NDArray[np.floating]:
    E = as_float_array(table, "table", ndim=2)
    if E.shape[0] == 0:
        raise ValueError(f"table must have shape (vocab_size, d_model) with vocab_size >= 1, got {E.shape}")
    return E


def embed(table: ArrayLike, ids: ArrayLike) -> NDArray[np.floating]:
    """Rows of ``table (vocab_size, d_model)`` at integer ``ids (...)`` → ``(..., d_model)`` (Def. 2.7)."""
    E = _check_table(table)
    idx = as_index_array(ids, "ids", upper=E.shape[0])
    return E[idx]


def one_hot(ids: ArrayLike, vocab_size: int, dtype: DTypeLike = np.float64) -> NDArray[np.number]:
    """One-hot vectors ``(..., vocab_size)``: ``one_hot(ids, V)[..., v] = [ids == v]``.

    ``dtype`` is any numeric (or bool) dtype.

    >>> one_hot([1], 3).tolist()
    [[0.0, 1.0, 0.0]]
    """
    V = check_positive_int(vocab_size, "vocab_size")
    idx = as_index_array(ids, "ids", upper=V)
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"dtype must be a numeric numpy dtype, got {dtype!r}") from None
    if not (np.issubdtype(dt, np.number) or dt == np.bool_):
        raise TypeError(f"dtype must be a numeric numpy dtype, got {dt}")
    check_size(idx.shape + (V,), "one_hot(ids, vocab_size)")
    out = np.zeros(idx.shape + (V,), dtype=dt)
    np.put_along_axis(out, idx[..., None], 1, axis=-1)
    return out


def embedding_grad(ids: ArrayLike, grad_output: ArrayLike, vocab_size: int) -> NDArray[np.floating]:
    """``∂L/∂table`` (``(vocab_size, d_model)``) from ``∂L/∂embed(table, ids)`` of shape ``(..., d_model)``.

    Equals ``one_hot(ids).reshape(-1, V).T @ grad_output.reshape(-1, d)`` without forming the
    one-hot matrix (``np.add.at`` accumulates repeated ids).
    """
    V = check_positive_int(vocab_size, "vocab_size")
    idx = as_index_array(ids, "ids", upper=V)
    g = as_float_array(grad_output, "grad_output", min_ndim=1)
    if g.shape[:-1] != idx.shape:
        raise ValueError(f"grad_output must have shape ids.shape + (d_model,) = {idx.shape} + (d,), got {g.shape}")
    check_size((V, g.shape[-1]), "embedding_grad(vocab_size, d_model)")
    grad = np.zeros((V, g.shape[-1]), dtype=g.dtype)
    np.add.at(grad, idx.reshape(-1), g.reshape(-1, g.shape[-1]))  # (N,), (N, d)
    return grad


class TokenEmbedding:
    """The embedding table ``E (vocab_size, d_model)`` as a small stateful object.

    ``phi`` is the paper's ``φ = E^T`` (``(d_model, vocab_size)``, columns are tokens).
    Initialisation ``N(0, std^2)`` from ``rng`` (a ``Generator``, an int seed or ``None``);
    ``std >= 0`` finite; ``dtype`` float32 or float64.

    >>> TokenEmbedding(5, 2, rng=0).table.shape
    (5, 2)
    """

    def __init__(
        self,
        vocab_size: int,
        d_model: int,
        *,
        rng: np.random.Generator | int | None = None,
        std: float = 1.0,
        dtype: DTypeLike = np.float64,
    ) -> None:
        self.vocab_size = check_positive_int(vocab_size, "vocab_size")
        self.d_model = check_positive_int(d_model, "d_model")
        check_size((self.vocab_size, self.d_model), "TokenEmbedding(vocab_size, d_model)")
        std = check_real(std, "std", lo=0.0)
        dtype = check_float_dtype(dtype)
        rng = as_generator(rng)
        self.table = (std * rng.standard_normal((self.vocab_size, self.d_model))).astype(dtype)

    @property
    def phi(self) -> NDArray[np.floating]:
        """The paper's ``φ ∈ R^{d_e × |V|}`` (a transposed view of ``table``)."""
        return self.table.T

    def __call__(self, ids: ArrayLike) -> NDArray[np.floating]:
        return embed(self.table, ids)

    def backward(self, ids: ArrayLike, grad_output: ArrayLike) -> NDArray[np.floating]:
        return embedding_grad(ids, grad_output, self.vocab_size)

    def num_parameters(self) -> int:
        return self.table.size
