"""Tests for nextword.positions: sinusoidal, learned and rotary position encodings."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nextword.positions import (
    LearnedPositionalEmbedding,
    apply_rope,
    rope_rotation_matrix,
    sinusoidal_encoding,
    sinusoidal_shift_matrix,
)

TOL = dict(rtol=1e-10, atol=1e-10)


# --------------------------------------------------------------------------- sinusoidal
@pytest.mark.parametrize("d_model", [4, 7, 16])
def test_sinusoidal_matches_chapter_formula_elementwise(d_model):
    """Chapter 6, §6.5: PE(t, 2i) = sin(t / 10000^(2i/d)), PE(t, 2i+1) = cos(same), by a plain loop."""
    T = 9
    ref = np.zeros((T, d_model))
    for t in range(T):
        for dim in range(d_model):
            i = dim // 2
            angle = t / 10000.0 ** (2 * i / d_model)
            ref[t, dim] = math.sin(angle) if dim % 2 == 0 else math.cos(angle)
    np.testing.assert_allclose(sinusoidal_encoding(T, d_model), ref, rtol=0, atol=1e-14)


@settings(max_examples=40, deadline=None)
@given(t=st.integers(0, 5000), k=st.integers(-200, 200), half_d=st.integers(1, 32))
def test_sinusoidal_unit_circle_and_shift_rotation(t, k, half_d):
    d = 2 * half_d
    pe = sinusoidal_encoding(max(t, t + k) + 1, d)
    pairs = pe[t, 0::2] ** 2 + pe[t, 1::2] ** 2
    np.testing.assert_allclose(pairs, 1.0, rtol=0, atol=1e-12)  # PE(t,2i)^2 + PE(t,2i+1)^2 = 1
    if t + k >= 0:
        R = sinusoidal_shift_matrix(k, d)
        np.testing.assert_allclose(R @ pe[t], pe[t + k], rtol=0, atol=1e-9)  # PE(t+k) = R_k PE(t)
        np.testing.assert_allclose(R.T @ R, np.eye(d), atol=1e-12)  # R_k is a rotation


def test_sinusoidal_shift_matrix_is_block_rotation_independent_of_t():
    R = sinusoidal_shift_matrix(3, 8)
    off_block = R.copy()
    for i in range(0, 8, 2):
        off_block[i : i + 2, i : i + 2] = 0
        np.testing.assert_allclose(np.linalg.det(R[i : i + 2, i : i + 2]), 1.0)
    assert np.all(off_block == 0)
    with pytest.raises(ValueError, match="even"):
        sinusoidal_shift_matrix(1, 5)


def test_sinusoidal_bad_inputs():
    with pytest.raises(ValueError):
        sinusoidal_encoding(0, 4)
    with pytest.raises(TypeError):
        sinusoidal_encoding(3, 4.0)
    with pytest.raises(ValueError, match="base"):
        sinusoidal_encoding(3, 4, base=1.0)


# --------------------------------------------------------------------------- learned
def test_learned_positions_lookup_gradient_and_extrapolation_error():
    torch = pytest.importorskip("torch")
    emb = LearnedPositionalEmbedding(6, 3, rng=np.random.default_rng(0))
    np.testing.assert_array_equal(emb(4), emb.table[:4])
    pos = np.array([[0, 5, 5], [1, 1, 2]])
    np.testing.assert_array_equal(emb(pos), emb.table[pos])
    g = np.random.default_rng(1).standard_normal((2, 3, 3))
    ref = torch.nn.Embedding(6, 3, dtype=torch.float64)
    with torch.no_grad():
        ref.weight.copy_(torch.from_numpy(emb.table))
    (ref(torch.from_numpy(pos)) * torch.from_numpy(g)).sum().backward()
    np.testing.assert_allclose(emb.backward(pos, g), ref.weight.grad.numpy(), **TOL)
    assert emb.num_parameters() == 18
    with pytest.raises(ValueError, match="exceeds max_len"):
        emb(7)
    with pytest.raises(ValueError, match=r"\[0, 6\)"):
        emb([0, 6])
    with pytest.raises(ValueError, match="grad_output must have shape"):
        emb.backward(pos, g[:, :2])


# --------------------------------------------------------------------------- RoPE
def test_rope_equals_rotation_matrix_and_complex_form():
    rng = np.random.default_rng(2)
    T, d = 7, 6
    x = rng.standard_normal((T, d))
    y = apply_rope(x)
    for t in range(T):
        np.testing.assert_allclose(y[t], rope_rotation_matrix(t, d) @ x[t], **TOL)
    # complex form: z = x[2i] + 1j x[2i+1] is multiplied by exp(1j t theta_i)
    theta = 10000.0 ** (-np.arange(0, d, 2) / d)
    z = (x[:, 0::2] + 1j * x[:, 1::2]) * np.exp(1j * np.arange(T)[:, None] * theta)
    np.testing.assert_allclose(y[:, 0::2], z.real, **TOL)
    np.testing.assert_allclose(y[:, 1::2], z.imag, **TOL)
    np.testing.assert_allclose(np.linalg.norm(y, axis=-1), np.linalg.norm(x, axis=-1), **TOL)


def test_rope_matches_torch_complex_reference():
    """The RoFormer / Llama reference recipe: view consecutive pairs as complex numbers."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 9, 8))  # (B, h, T, d)
    tx = torch.from_numpy(x)
    theta = 1.0 / (500.0 ** (torch.arange(0, 8, 2, dtype=torch.float64) / 8))
    freqs = torch.polar(
        torch.ones(9, 4, dtype=torch.float64), torch.outer(torch.arange(9.0, dtype=torch.float64), theta)
    )
    ref = torch.view_as_real(torch.view_as_complex(tx.reshape(2, 3, 9, 4, 2)) * freqs).reshape(2, 3, 9, 8)
    np.testing.assert_allclose(apply_rope(x, base=500.0), ref.numpy(), **TOL)


@settings(max_examples=40, deadline=None)
@given(i=st.integers(0, 60), j=st.integers(0, 60), shift=st.integers(-30, 1000), seed=st.integers(0, 2**16))
def test_rope_scores_depend_only_on_offset(i, j, shift, seed):
    rng = np.random.default_rng(seed)
    q, k = rng.standard_normal(8), rng.standard_normal(8)
    s = apply_rope(q[None], [i])[0] @ apply_rope(k[None], [j])[0]
    s_shift = apply_rope(q[None], [i + shift])[0] @ apply_rope(k[None], [j + shift])[0]
    np.testing.assert_allclose(s_shift, s, rtol=1e-9, atol=1e-9)
    # and equals q^T R_{j-i} k
    np.testing.assert_allclose(s, q @ rope_rotation_matrix(j - i, 8) @ k, rtol=1e-9, atol=1e-9)


def test_formulation_paper_roformer_inner_product_needs_complex_pairs():
    """Formulation paper §5.3.2 prints Re[sum_j (Qh_k)_j^T (Kh_l)_j e^{i(k-l)psi_j}] for RoFormer.

    Read with real coordinates (or real 2-blocks) it is sum_j q_j k_j cos((k-l) psi_j), which is
    not the RoPE score <R_k q, R_l k>: the sine cross-terms are missing. The RoPE score is the real
    part with complex pairs z = x_{2j} + i x_{2j+1} and a conjugated key. (Recorded in ERRATA.md.)
    """
    rng = np.random.default_rng(4)
    d, k_pos, l_pos = 8, 5, 2
    q, k = rng.standard_normal(d), rng.standard_normal(d)
    rope = apply_rope(q[None], [k_pos])[0] @ apply_rope(k[None], [l_pos])[0]
    psi = 10000.0 ** (-np.arange(0, d, 2) / d)
    zq, zk = q[0::2] + 1j * q[1::2], k[0::2] + 1j * k[1::2]
    complex_form = np.real(np.sum(zq * np.conj(zk) * np.exp(1j * (k_pos - l_pos) * psi)))
    np.testing.assert_allclose(complex_form, rope, **TOL)
    printed_real = np.sum((q[0::2] * k[0::2] + q[1::2] * k[1::2]) * np.cos((k_pos - l_pos) * psi))
    assert abs(printed_real - rope) > 1e-3


def test_rope_positions_batch_and_dtype():
    x = np.random.default_rng(5).standard_normal((2, 4, 6)).astype(np.float32)
    y = apply_rope(x, positions=[3, 4, 5, 6])
    assert y.dtype == np.float32
    full = apply_rope(np.concatenate([np.zeros((2, 3, 6), np.float32), x], axis=1))
    np.testing.assert_allclose(y, full[:, 3:], rtol=1e-6, atol=1e-6)


def test_rope_bad_inputs():
    with pytest.raises(ValueError, match="even"):
        apply_rope(np.ones((3, 5)))
    with pytest.raises(ValueError, match="at least 2"):
        apply_rope(np.ones(4))
    with pytest.raises(ValueError, match="positions must have shape"):
        apply_rope(np.ones((3, 4)), positions=[0, 1])
    with pytest.raises(ValueError, match="non-finite"):
        apply_rope(np.array([[np.nan, 0.0]]))
    with pytest.raises(ValueError, match="even"):
        rope_rotation_matrix(1, 3)


def test_sinusoidal_wavelength_grows_with_dimension():
    """Wavelength of pair i is 2π·base^(2i/d): it grows with the dimension, from 2π (i = 0) to
    2π·base^((d-2)/d) < 2π·base (Chapter 6 §6.5 text; the caption of Fig. 6.25 says it decreases)."""
    d, T = 128, 5_000
    pe = sinusoidal_encoding(T, d)
    # measure each sine column's period from its upward zero crossings, independently of the formula
    measured = []
    for i in (0, 5, 20):
        col = pe[:, 2 * i]
        ups = np.flatnonzero((col[:-1] < 0) & (col[1:] >= 0))
        measured.append(np.mean(np.diff(ups)))
    assert measured[0] < measured[1] < measured[2]
    np.testing.assert_allclose(measured, [2 * np.pi * 10000 ** (2 * i / d) for i in (0, 5, 20)], rtol=0.02)
    longest = 2 * np.pi * 10000 ** ((d - 2) / d)
    assert longest < 0.9 * 2 * np.pi * 10000  # the "10000·2π" end point is only reached as d → ∞
    assert abs(longest / (2 * np.pi) - 8.7e3) < 50  # the ERRATA row's "≈ 8.7·10³·2π" at d = 128
