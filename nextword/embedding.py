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

from typing import Any

import numpy as np

from nextword._validate import as_float_array, as_index_array, check_positive_int

__all__ = ["embed", "one_hot", "embedding_grad", "TokenEmbedding"]


def _check_table(table: object) -> np.ndarray:
    return as_float_array(table, "table", ndim=2)


def embed(table: object, ids: object) -> np.ndarray:
    """Rows of ``table (vocab_size, d_model)`` at integer ``ids (...)`` → ``(..., d_model)`` (Def. 2.7)."""
    E = _check_table(table)
    idx = as_index_array(ids, "ids", upper=E.shape[0])
    return E[idx]


def one_hot(ids: object, vocab_size: int, dtype: Any = np.float64) -> np.ndarray:
    """One-hot vectors ``(..., vocab_size)``: ``one_hot(ids, V)[..., v] = [ids == v]``."""
    V = check_positive_int(vocab_size, "vocab_size")
    idx = as_index_array(ids, "ids", upper=V)
    out = np.zeros(idx.shape + (V,), dtype=dtype)
    np.put_along_axis(out, idx[..., None], 1, axis=-1)
    return out


def embedding_grad(ids: object, grad_output: object, vocab_size: int) -> np.ndarray:
    """``∂L/∂table`` (``(vocab_size, d_model)``) from ``∂L/∂embed(table, ids)`` of shape ``(..., d_model)``.

    Equals ``one_hot(ids).reshape(-1, V).T @ grad_output.reshape(-1, d)`` without forming the
    one-hot matrix (``np.add.at`` accumulates repeated ids).
    """
    V = check_positive_int(vocab_size, "vocab_size")
    idx = as_index_array(ids, "ids", upper=V)
    g = as_float_array(grad_output, "grad_output", min_ndim=1)
    if g.shape[:-1] != idx.shape:
        raise ValueError(f"grad_output must have shape ids.shape + (d_model,) = {idx.shape} + (d,), got {g.shape}")
    grad = np.zeros((V, g.shape[-1]), dtype=g.dtype)
    np.add.at(grad, idx.reshape(-1), g.reshape(-1, g.shape[-1]))  # (N,), (N, d)
    return grad


class TokenEmbedding:
    """The embedding table ``E (vocab_size, d_model)`` as a small stateful object.

    ``phi`` is the paper's ``φ = E^T`` (``(d_model, vocab_size)``, columns are tokens).
    Initialisation ``N(0, std^2)`` from ``rng``.
    """

    def __init__(self, vocab_size: int, d_model: int, *, rng: np.random.Generator | None = None,
                 std: float = 1.0, dtype: Any = np.float64) -> None:
        self.vocab_size = check_positive_int(vocab_size, "vocab_size")
        self.d_model = check_positive_int(d_model, "d_model")
        rng = np.random.default_rng() if rng is None else rng
        self.table = (std * rng.standard_normal((self.vocab_size, self.d_model))).astype(dtype)

    @property
    def phi(self) -> np.ndarray:
        """The paper's ``φ ∈ R^{d_e × |V|}`` (a transposed view of ``table``)."""
        return self.table.T

    def __call__(self, ids: object) -> np.ndarray:
        return embed(self.table, ids)

    def backward(self, ids: object, grad_output: object) -> np.ndarray:
        return embedding_grad(ids, grad_output, self.vocab_size)

    def num_parameters(self) -> int:
        return self.table.size
