"""Examples of Baptista, Stuart, Tran that the rest of the library does not cover.

* Example 2.10 (§2.4) — an image ``S^{K',K'} -> R^3`` becomes a sequence ``S^{K^2} -> R^{d_l}`` by a
  linear convolution with stride ``K'/K`` followed by flattening: :func:`patchify`,
  :func:`patch_embedding`; and CLIP's contrastive alignment of two modalities:
  :func:`contrastive_loss` (symmetric cross-entropy over the similarity matrix, with its gradients).
* Example B.1 (Appendix B) — batch normalisation, a normalisation that depends on an input measure
  ``pi`` (the empirical measure of every token of every sequence in a batch): :func:`batch_norm`.

Shapes: images ``(H, W, C)`` (channels last); sequences as rows ``(..., M, d)``; embeddings of ``N``
pairs ``(N, d)``.

>>> img = np.arange(4 * 4 * 3, dtype=float).reshape(4, 4, 3)
>>> patchify(img, 2).shape                      # K' = 4, K = 2: 4 patches of 2*2*3 numbers
(4, 12)
"""

from __future__ import annotations

import numpy as np

from nextword.attention import log_softmax

__all__ = ["patchify", "patch_embedding", "contrastive_loss", "batch_norm"]


def patchify(image: object, patch: int) -> np.ndarray:
    """Cut ``image (H, W, C)`` into non-overlapping ``patch x patch`` squares, row-major:
    ``(H/patch * W/patch, patch*patch*C)``; each row is one square flattened as ``(row, col, channel)``.

    >>> patchify(np.zeros((6, 6, 1)), 3).shape
    (4, 9)
    """
    img = np.asarray(image, dtype=np.float64)
    if img.ndim != 3:
        raise ValueError(f"image must have shape (H, W, C), got {img.shape}")
    if int(patch) != patch or patch < 1:
        raise ValueError(f"patch must be a positive integer, got {patch}")
    H, W, C = img.shape
    if H % patch or W % patch:
        raise ValueError(f"image sides ({H}, {W}) must be multiples of patch = {patch}")
    grid = img.reshape(H // patch, patch, W // patch, patch, C)  # (K, p, K, p, C)
    grid = grid.transpose(0, 2, 1, 3, 4)  # (K, K, p, p, C)
    return grid.reshape((H // patch) * (W // patch), patch * patch * C)  # (K^2, p*p*C)


def patch_embedding(image: object, kernel: object, bias: object | None = None) -> np.ndarray:
    """Example 2.10: the linear convolution ``i_original -> i_convolved`` with stride equal to the kernel
    size, flattened to the sequence ``i_sequence : S^{K^2} -> R^{d_l}``.

    ``image (K', K', C)``, ``kernel (d_l, p, p, C)`` with ``p = K'/K`` -> ``(K^2, d_l)``.

    >>> k = np.zeros((5, 2, 2, 3)); k[:, 0, 0, 0] = 1.0
    >>> patch_embedding(np.ones((4, 4, 3)), k).shape
    (4, 5)
    """
    ker = np.asarray(kernel, dtype=np.float64)
    if ker.ndim != 4 or ker.shape[1] != ker.shape[2]:
        raise ValueError(f"kernel must have shape (d_l, p, p, C), got {ker.shape}")
    d_l, p, _, C = ker.shape
    img = np.asarray(image, dtype=np.float64)
    if img.ndim != 3 or img.shape[2] != C:
        raise ValueError(f"image must have shape (H, W, {C}) to match the kernel's channels, got {img.shape}")
    out = patchify(img, p) @ ker.reshape(d_l, p * p * C).T  # (K^2, p*p*C) @ (p*p*C, d_l)
    if bias is not None:
        b = np.asarray(bias, dtype=np.float64)
        if b.shape != (d_l,):
            raise ValueError(f"bias must have shape ({d_l},), got {b.shape}")
        out = out + b
    return out


def contrastive_loss(x: object, y: object, temperature: float = 1.0) -> tuple[float, np.ndarray, np.ndarray]:
    """CLIP's symmetric contrastive loss for ``N`` paired embeddings ``x (N, d)``, ``y (N, d)``.

    With logits ``S = x y^T / temperature``, the loss is the mean of the cross-entropy of each row
    (image -> its text) and of each column (text -> its image) against the diagonal. Returns
    ``(loss, dL/dx, dL/dy)``. (CLIP normalises the embeddings first; pass normalised rows to get its loss.)

    >>> loss, gx, gy = contrastive_loss(np.eye(3), np.eye(3), temperature=0.1)
    >>> bool(loss < 1e-4), gx.shape             # perfectly aligned, well separated pairs
    (True, (3, 3))
    """
    X = np.asarray(x, dtype=np.float64)
    Y = np.asarray(y, dtype=np.float64)
    if X.ndim != 2 or Y.shape != X.shape:
        raise ValueError(f"x and y must both have shape (N, d), got {X.shape} and {Y.shape}")
    if not (np.isfinite(temperature) and temperature > 0):
        raise ValueError(f"temperature must be positive, got {temperature}")
    N = X.shape[0]
    S = X @ Y.T / temperature  # (N, N)
    row = log_softmax(S, axis=1)
    col = log_softmax(S, axis=0)
    loss = float(-(np.trace(row) + np.trace(col)) / (2 * N))
    dS = (np.exp(row) + np.exp(col) - 2 * np.eye(N)) / (2 * N)  # dL/dS
    return loss, dS @ Y / temperature, dS.T @ X / temperature


def batch_norm(h: object, D: object | None = None, b: object | None = None, eps: float = 1e-5) -> np.ndarray:
    """Example B.1: ``N(u; pi) = D (u - E_pi u) / sqrt(V_pi u + eps) + b`` with ``pi`` the empirical measure
    of all tokens of all sequences, ``h (N, l, d_e)`` (mean and variance per coordinate).

    ``D (d_e, d_e)`` defaults to the identity and ``b (d_e,)`` to zero; the normalised vector is a
    row ``z``, so ``D z`` is computed as ``z @ D.T``.

    >>> out = batch_norm(np.random.default_rng(0).normal(3.0, 2.0, size=(4, 5, 2)))
    >>> bool(np.allclose(out.reshape(-1, 2).mean(axis=0), 0.0))
    True
    """
    H = np.asarray(h, dtype=np.float64)
    if H.ndim != 3:
        raise ValueError(f"h must be a batch of sequences of shape (N, l, d_e), got {H.shape}")
    d_e = H.shape[-1]
    tokens = H.reshape(-1, d_e)  # (N*l, d_e): the support of pi
    z = (H - tokens.mean(axis=0)) / np.sqrt(tokens.var(axis=0) + eps)
    Dm = np.eye(d_e) if D is None else np.asarray(D, dtype=np.float64)
    bv = np.zeros(d_e) if b is None else np.asarray(b, dtype=np.float64)
    if Dm.shape != (d_e, d_e) or bv.shape != (d_e,):
        raise ValueError(f"D must be ({d_e}, {d_e}) and b ({d_e},), got {Dm.shape} and {bv.shape}")
    return z @ Dm.T + bv
