"""Formulation Examples 2.10 and B.1: patch embedding = strided convolution, contrastive gradients, batch norm."""

import numpy as np
import pytest
from scipy.signal import correlate

from nextword.theory.formulation.examples import batch_norm, contrastive_loss, patch_embedding, patchify


def test_patch_embedding_is_a_strided_convolution():
    rng = np.random.default_rng(0)
    img, ker = rng.normal(size=(12, 12, 3)), rng.normal(size=(5, 4, 4, 3))
    out = patch_embedding(img, ker)
    direct = np.stack(
        [sum(correlate(img[:, :, c], ker[o, :, :, c], mode="valid")[::4, ::4] for c in range(3)) for o in range(5)],
        axis=-1,
    ).reshape(9, 5)
    np.testing.assert_allclose(out, direct, atol=1e-12)


def test_patchify_round_trip():
    img = np.arange(4 * 6 * 2, dtype=float).reshape(4, 6, 2)
    patches = patchify(img, 2)  # (6, 8)
    back = patches.reshape(2, 3, 2, 2, 2).transpose(0, 2, 1, 3, 4).reshape(4, 6, 2)
    np.testing.assert_array_equal(back, img)


def test_contrastive_gradients_match_finite_differences():
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(5, 3)), rng.normal(size=(5, 3))
    _, gx, gy = contrastive_loss(x, y, temperature=0.7)
    h = 1e-6
    for arr, g, which in ((x, gx, 0), (y, gy, 1)):
        fd = np.zeros_like(arr)
        for idx in np.ndindex(arr.shape):
            E = np.zeros_like(arr)
            E[idx] = h
            args_p = (x + E, y) if which == 0 else (x, y + E)
            args_m = (x - E, y) if which == 0 else (x, y - E)
            fd[idx] = (contrastive_loss(*args_p, 0.7)[0] - contrastive_loss(*args_m, 0.7)[0]) / (2 * h)
        np.testing.assert_allclose(g, fd, atol=1e-8)


def test_contrastive_loss_is_symmetric_in_the_modalities():
    rng = np.random.default_rng(2)
    x, y = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    assert abs(contrastive_loss(x, y)[0] - contrastive_loss(y, x)[0]) < 1e-12


def test_batch_norm_standardises_under_the_batch_measure_and_couples_sequences():
    rng = np.random.default_rng(3)
    h = rng.normal(1.0, 2.0, size=(3, 4, 2))
    out = batch_norm(h, eps=0.0)
    np.testing.assert_allclose(out.reshape(-1, 2).mean(0), 0.0, atol=1e-12)
    np.testing.assert_allclose(out.reshape(-1, 2).var(0), 1.0, atol=1e-12)
    h2 = h.copy()
    h2[1:] *= 3.0
    assert not np.allclose(batch_norm(h2)[0], batch_norm(h)[0])


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="patch"):
        patchify(np.zeros((5, 5, 1)), 2)
    with pytest.raises(ValueError, match="kernel"):
        patch_embedding(np.zeros((4, 4, 3)), np.zeros((2, 2, 3)))
    with pytest.raises(ValueError, match="temperature"):
        contrastive_loss(np.zeros((2, 2)), np.zeros((2, 2)), temperature=0.0)
    with pytest.raises(ValueError, match="h must"):
        batch_norm(np.zeros((3, 2)))
