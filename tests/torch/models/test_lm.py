"""Tests for nextword.torch.models.lm: the trainable torch decoder LM and its export to the numpy DecoderLM."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from nextword.decoding import greedy  # noqa: E402
from nextword.positions import apply_rope, rope_frequencies, sinusoidal_encoding  # noqa: E402
from nextword.torch.models.block import apply_rope as torch_rope  # noqa: E402
from nextword.torch.models.lm import LMConfig, TinyLM, next_logits_fn, to_numpy_decoder  # noqa: E402
from nextword.torch.training.token_lm import evaluate_loss, torch_threads, train_lm  # noqa: E402


def _cfg(**kw):
    base = dict(vocab_size=7, d_model=8, num_heads=2, num_layers=2, max_len=12, init_std=0.4)
    base.update(kw)
    return LMConfig(**base)


def _randomise_norms(model, seed=0):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:  # non-trivial gains/biases so the export of norms is really tested
                p.copy_(
                    1.0 + 0.3 * torch.randn(p.shape, generator=g)
                    if name.endswith("weight")
                    else 0.3 * torch.randn(p.shape, generator=g)
                )
    return model


# ---------------------------------------------------------------- positional buffers
def test_sinusoidal_buffer_is_the_numpy_table_and_grows():
    m = TinyLM(_cfg(positional="sinusoidal"))
    np.testing.assert_array_equal(m.pe_table, sinusoidal_encoding(12, 8))
    m(torch.zeros(1, 20, dtype=torch.long))  # longer than max_len: the table is regrown
    np.testing.assert_array_equal(m.pe_table, sinusoidal_encoding(20, 8))


def test_rope_equals_numpy_apply_rope():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 9, 6))  # (B, h, T, dh)
    freqs = torch.tensor(rope_frequencies(6))
    np.testing.assert_allclose(torch_rope(torch.tensor(x), freqs).numpy(), apply_rope(x), rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------- export to numpy
VARIANTS = list(itertools.product(["sinusoidal", "learned", "rope", "none"], [True, False], ["layer", "rms"]))


@pytest.mark.parametrize("positional,pre_norm,norm", VARIANTS)
def test_numpy_export_matches_logits(positional, pre_norm, norm):
    cfg = _cfg(positional=positional, pre_norm=pre_norm, norm=norm)
    model = _randomise_norms(TinyLM(cfg, seed=1)).double()
    ids = np.random.default_rng(2).integers(0, 7, size=(3, 10))
    with torch.no_grad():
        ref = model(torch.from_numpy(ids)).numpy()
    lm = to_numpy_decoder(model)
    np.testing.assert_allclose(lm.logits(ids), ref, rtol=1e-10, atol=1e-10)
    assert np.abs(ref).max() > 0.1  # the comparison is not between two near-zero arrays


@pytest.mark.parametrize(
    "flags",
    [
        dict(causal=False),
        dict(residual=False),
        dict(tie_embeddings=True),
        dict(activation="relu"),
        dict(activation="gelu_tanh", d_ff=5),
    ],
)
def test_numpy_export_matches_flags_float32(flags):
    model = _randomise_norms(TinyLM(_cfg(**flags), seed=3))  # float32, the training dtype
    ids = np.random.default_rng(4).integers(0, 7, size=(2, 12))
    with torch.no_grad():
        ref = model(torch.from_numpy(ids)).numpy()
    np.testing.assert_allclose(to_numpy_decoder(model).logits(ids), ref, rtol=1e-5, atol=1e-5)


def test_attention_maps_and_head_mask_match_numpy():
    model = _randomise_norms(TinyLM(_cfg(), seed=5)).double()
    ids = np.random.default_rng(6).integers(0, 7, size=(1, 9))
    hm = np.array([[1.0, 0.0], [0.5, 1.0]])
    with torch.no_grad():
        logits, att = model(torch.from_numpy(ids), return_attention=True, head_mask=hm)
    ref_logits, ref_w = to_numpy_decoder(model).logits(ids, head_mask=hm, return_weights=True)
    np.testing.assert_allclose(logits.numpy(), ref_logits, atol=1e-10)
    assert len(att) == 2 and tuple(att[0].shape) == (1, 2, 9, 9)
    for a, b in zip(att, ref_w):
        np.testing.assert_allclose(a.numpy(), b, atol=1e-10)
        np.testing.assert_allclose(a.sum(-1).numpy(), 1.0, atol=1e-12)
        assert float(a.triu(1).abs().max()) == 0.0  # causal: nothing above the diagonal


def test_causality_future_tokens_do_not_change_past_logits():
    ids = torch.tensor([[1, 2, 3, 4, 5, 6]])
    changed = ids.clone()
    changed[0, 4:] = 0
    causal, full = TinyLM(_cfg(), seed=0), TinyLM(_cfg(causal=False), seed=0)
    with torch.no_grad():
        assert torch.allclose(causal(ids)[:, :4], causal(changed)[:, :4], atol=0)
        assert not torch.allclose(full(ids)[:, :4], full(changed)[:, :4], atol=1e-6)


# ---------------------------------------------------------------- training and evaluation
def test_train_lm_learns_a_cycle_and_is_reproducible():
    ids = np.tile(np.arange(7), 30)
    runs = []
    for _ in range(2):
        model = TinyLM(_cfg(init_std=0.02), seed=0)
        losses = train_lm(model, ids, steps=80, batch_size=8, block_size=8, lr=1e-2, seed=0, progress=False)
        runs.append(losses)
    assert runs[0] == runs[1]
    assert runs[0][0] > 1.5 and runs[0][-1] < 0.05  # starts near log 7 = 1.95, ends near 0
    assert evaluate_loss(model, ids, 8) < 0.05


def test_training_does_not_touch_global_torch_rng():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    model = TinyLM(_cfg(), seed=0)
    train_lm(model, np.arange(40) % 7, steps=2, batch_size=2, block_size=4, seed=1, progress=False)
    assert torch.equal(torch.rand(3), expected)
    with torch_threads(2):
        with torch_threads(1):
            assert torch.get_num_threads() == 1
        assert torch.get_num_threads() == 2


def test_evaluate_loss_matches_direct_cross_entropy_and_mask():
    model = TinyLM(_cfg(), seed=2)
    rng = np.random.default_rng(0)
    stream = rng.integers(0, 7, size=25)  # 3 windows of 8+1 (24 targets), the last token unused
    x = torch.from_numpy(stream[:24].reshape(3, 8))
    y = torch.from_numpy(stream[1:25].reshape(3, 8))
    with torch.no_grad():
        direct = torch.nn.functional.cross_entropy(model(x).reshape(-1, 7), y.reshape(-1)).item()
    assert evaluate_loss(model, stream, 8) == pytest.approx(direct, rel=1e-6)

    seqs = rng.integers(0, 7, size=(5, 9))
    mask = np.zeros((5, 8), bool)
    mask[:, 5:] = True
    with torch.no_grad():
        nll = torch.nn.functional.cross_entropy(
            model(torch.from_numpy(seqs[:, :-1])).reshape(-1, 7),
            torch.from_numpy(seqs[:, 1:]).reshape(-1),
            reduction="none",
        )
    expect = nll.reshape(5, 8)[:, 5:].mean().item()
    assert evaluate_loss(model, seqs, loss_mask=mask) == pytest.approx(expect, rel=1e-6)
    losses = train_lm(model, seqs, steps=3, batch_size=4, loss_mask=mask, seed=0, progress=False)
    assert len(losses) == 3 and all(np.isfinite(losses))


def test_next_logits_fn_greedy_matches_numpy_decoder():
    model = TinyLM(_cfg(init_std=0.5), seed=7)
    fn = next_logits_fn(model)
    lm = to_numpy_decoder(model)
    assert greedy(fn, [1, 2], 6) == greedy(lm.next_logits, [1, 2], 6)


# ---------------------------------------------------------------- bad input
def test_bad_inputs_raise_clear_errors():
    with pytest.raises(ValueError, match="num_heads"):
        LMConfig(vocab_size=5, d_model=6, num_heads=4, num_layers=1, max_len=4)
    with pytest.raises(ValueError, match="positional"):
        _cfg(positional="alibi")
    with pytest.raises(ValueError, match="even head dimension"):
        LMConfig(vocab_size=5, d_model=6, num_heads=2, num_layers=1, max_len=4, positional="rope")
    with pytest.raises(TypeError, match="LMConfig"):
        TinyLM({"vocab_size": 5})
    model = TinyLM(_cfg(positional="learned"))
    with pytest.raises(ValueError, match="max_len"):
        model(torch.zeros(1, 13, dtype=torch.long))
    with pytest.raises(ValueError, match="vocab_size"):
        model(torch.tensor([[0, 7]]))
    with pytest.raises(ValueError, match=r"\(B, T\)"):
        model(torch.zeros(5, dtype=torch.long))
    with pytest.raises(ValueError, match="head_mask"):
        model(torch.zeros(1, 3, dtype=torch.long), head_mask=np.ones(2))
    with pytest.raises(TypeError, match="seed"):
        train_lm(model, np.arange(20) % 7, steps=1, batch_size=1, block_size=4, progress=False)
    with pytest.raises(ValueError, match="block_size"):
        train_lm(model, np.arange(20) % 7, steps=1, batch_size=1, block_size=40, seed=0, progress=False)
    with pytest.raises(ValueError, match="integer token ids"):
        evaluate_loss(model, np.ones(10), 4)


def test_one_list_of_positional_encodings_and_tinylm_refuses_one_it_does_not_implement():
    """positions.ENCODINGS is the one list: the numpy decoder's config accepts exactly its names, the
    Fig. 6.28 probe trains each of them, and TinyLM raises on a name it has no code for (it used to pass
    the input through unchanged)."""
    from nextword.decoder import DecoderConfig
    from nextword.positions import ENCODINGS
    from nextword.torch.probes.fig628 import VARIANTS

    assert VARIANTS == tuple(ENCODINGS) == ("sinusoidal", "learned", "rope", "none")
    for name in ENCODINGS:
        DecoderConfig(vocab_size=5, d_model=8, num_heads=2, num_layers=1, max_len=4, positional=name)
    with pytest.raises(ValueError):
        DecoderConfig(vocab_size=5, d_model=8, num_heads=2, num_layers=1, max_len=4, positional="alibi")
    model = TinyLM(_cfg(), seed=0)
    object.__setattr__(model.config, "positional", "alibi")  # past the validation, as a new name would be
    with pytest.raises(ValueError, match="alibi"):
        model(torch.zeros(1, 3, dtype=torch.long))
