"""SmallGPT: shapes, loss, causality, the noise probe, device selection, validation."""

from __future__ import annotations


import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

from nextword.torch.models import gpt as M  # noqa: E402
from nextword.torch.training import device as D  # noqa: E402


def _model(**kw):
    torch.manual_seed(0)
    cfg = M.SmallGPTConfig(**{**dict(vocab_size=7, max_len=10, num_layers=2, num_heads=2, d_model=8), **kw})
    return M.SmallGPT(cfg).double()


def test_loss_is_mean_cross_entropy_of_logits():
    m = _model()
    x = torch.randint(0, 7, (3, 10))
    y = torch.randint(0, 7, (3, 10))
    logits, loss = m(x, y)
    manual = -torch.log_softmax(logits, -1).gather(-1, y[..., None]).mean()
    torch.testing.assert_close(loss, manual)
    torch.testing.assert_close(loss, F.cross_entropy(logits.reshape(-1, 7), y.reshape(-1)))


def test_causal_future_tokens_do_not_change_past_logits():
    m = _model()
    x = torch.randint(0, 7, (1, 10))
    x2 = x.clone()
    x2[0, 6:] = (x2[0, 6:] + 1) % 7
    a, _ = m(x)
    b, _ = m(x2)
    torch.testing.assert_close(a[0, :6], b[0, :6])
    assert not torch.allclose(a[0, 6:], b[0, 6:])


def test_weight_tying_and_parameter_count():
    m = _model(d_model=8, num_layers=2, d_ff=32)
    assert m.head.weight is m.wte.weight
    d, L = 8, 2
    per_block = 12 * d * d + 13 * d  # qkv 3d²+3d, proj d²+d, mlp 8d²+5d, 2 LN 4d
    counts = m.num_parameters()
    assert counts["transformer"] == L * per_block + 2 * d  # + final LayerNorm
    assert counts["embedding"] == 7 * d and counts["positions"] == 10 * d


def test_paper_config_counts():
    m = M.SmallGPT(M.SmallGPTConfig.paper(1013))
    c = m.num_parameters()
    assert c["embedding"] == 1013 * 128
    assert c["transformer"] == 2 * (12 * 128**2 + 13 * 128) + 2 * 128


def test_noise_is_reproducible_with_generator_and_changes_output():
    m = _model()
    x = torch.randint(0, 7, (2, 10))
    y = torch.randint(0, 7, (2, 10))
    _, l0 = m(x, y)
    _, l1 = m(x, y, noise_std=0.5, generator=torch.Generator().manual_seed(3))
    _, l2 = m(x, y, noise_std=0.5, generator=torch.Generator().manual_seed(3))
    assert float(l1.detach()) == float(l2.detach()) and float(l1.detach()) != float(l0.detach())


def test_tok_emb_argument_equals_lookup():
    m = _model()
    x = torch.randint(0, 7, (2, 10))
    torch.testing.assert_close(m(x)[0], m(x, tok_emb=m.wte(x))[0])


def test_select_device_and_autocast():
    dev = D.select_device("auto")
    expected = (
        "cuda"
        if torch.cuda.is_available()
        else ("mps" if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available() else "cpu")
    )
    assert dev.type == expected
    assert D.select_device("cpu").type == "cpu"
    with D.autocast_context(torch.device("cpu"), amp=True):
        assert torch.ones(2, 2).dtype == torch.float32


@pytest.mark.parametrize("kw", [dict(d_model=10, num_heads=4), dict(vocab_size=0), dict(dropout=1.0)])
def test_config_validation(kw):
    with pytest.raises(ValueError):
        M.SmallGPTConfig(**{**dict(vocab_size=5), **kw})


def test_forward_validation():
    m = _model()
    with pytest.raises(TypeError):
        m(torch.zeros(2, 3))
    with pytest.raises(ValueError, match="max_len"):
        m(torch.zeros(1, 11, dtype=torch.long))
    with pytest.raises(ValueError, match="noise_std"):
        m(torch.zeros(1, 3, dtype=torch.long), noise_std=-1.0)
