"""One Block for both torch models, and the numbers it must keep.

``data/one_block_reference.npz`` was computed by the code *before* TinyLM and SmallGPT shared
:mod:`nextword.torch.models.block` (commit 8661b7e, the script is :func:`_compute` below): SmallGPT's
logits, loss, a gradient and its state-dict keys on a fixed seed, six steps of the §7 loop at the
``tiny`` preset, and TinyLM's training losses, logits, attention and evaluation in six
configurations (pre-/post-norm, RMS, RoPE, learned positions, no residual). On the machine and torch
that computed it the new code must give every number bit for bit; elsewhere (another CPU kernel, the
perturbation pass's ``ATEN_CPU_CAPABILITY=default``) float32 rounding may differ, so there the check
is to 1e-3 relative and 1e-4 absolute (fifteen AdamW steps at lr 1e-2 carry the rounding along).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from nextword.torch.models import gpt as G  # noqa: E402
from nextword.torch.models import lm as L  # noqa: E402
from nextword.torch.training import token_lm as T  # noqa: E402
from nextword.torch.models.block import Block, BlockSpec, LinearBlock, RowBlock  # noqa: E402

REF = Path(__file__).parent / "data" / "one_block_reference.npz"
LM_CONFIGS = {
    "default": dict(),
    "postnorm": dict(pre_norm=False, activation="relu"),
    "noresid": dict(pre_norm=False, residual=False, norm="rms"),
    "preln_noresid": dict(residual=False, norm="rms"),
    "pre_rope": dict(pre_norm=True, positional="rope", norm="rms", activation="gelu_tanh"),
    "learned": dict(positional="learned", tie_embeddings=False),
}


def _compute() -> dict[str, np.ndarray]:
    from nextword.torch.barrier.config import preset
    from nextword.torch.barrier.train import train

    out: dict[str, np.ndarray] = {}
    torch.manual_seed(0)
    cfg = G.SmallGPTConfig(vocab_size=11, max_len=12, num_layers=2, num_heads=3, d_model=24, d_ff=40)
    m = G.SmallGPT(cfg)
    g = torch.Generator().manual_seed(1)
    x = torch.randint(0, 11, (3, 12), generator=g)
    y = torch.randint(0, 11, (3, 12), generator=g)
    logits, loss = m(x, y)
    out["gpt_x"], out["gpt_y"] = x.numpy(), y.numpy()
    out["gpt_logits"], out["gpt_loss"] = logits.detach().numpy(), loss.detach().numpy()
    loss.backward()
    out["gpt_grad_qkv"] = m.blocks[0].attn.qkv.weight.grad.numpy()
    out["gpt_keys"] = np.array(list(m.state_dict().keys()))
    with tempfile.TemporaryDirectory() as tmp:
        res = train(preset("tiny"), tmp, progress=False, device="cpu")
    out["loop_history_val"] = np.array([h["val_bpc"] for h in res["history"]])
    out["loop_history_train"] = np.array([h["train_bpc"] for h in res["history"]])
    out["loop_final_loss"] = np.array(res["final_train_loss"])
    for name, kw in LM_CONFIGS.items():
        c = L.LMConfig(vocab_size=7, d_model=12, num_heads=3, num_layers=2, max_len=16, **kw)
        lm = L.TinyLM(c, seed=3)
        ids = np.tile(np.arange(7), 30)
        losses = T.train_lm(lm, ids, steps=15, batch_size=4, block_size=9, lr=1e-2, seed=0, progress=False)
        out[f"lm_{name}_losses"] = np.array(losses)
        lg, ws = lm(torch.as_tensor(ids[:10][None]), return_attention=True)
        out[f"lm_{name}_logits"], out[f"lm_{name}_w0"] = lg.detach().numpy(), ws[0].detach().numpy()
        out[f"lm_{name}_eval"] = np.array(T.evaluate_loss(lm, ids, 9))
    return out


@pytest.fixture(scope="module")
def computed():
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    mp = pytest.MonkeyPatch()
    mp.delenv("NEXTWORD_PERTURB", raising=False)  # the perturbation pass nudges trained models on purpose
    try:
        yield _compute()
    finally:
        mp.undo()
        torch.set_num_threads(old)


def test_numbers_equal_the_code_before_the_shared_block(computed):
    with np.load(REF, allow_pickle=False) as f:
        ref = {k: f[k] for k in f.files}
    same_machine = (
        str(ref.pop("torch_version")) == torch.__version__
        and str(ref.pop("cpu_capability")) == torch.backends.cpu.get_cpu_capability()
    )
    assert set(ref) == set(computed)
    np.testing.assert_array_equal(computed["gpt_keys"], ref["gpt_keys"])  # saved checkpoints still load
    for k in sorted(ref):
        if ref[k].dtype.kind in "iuU":
            np.testing.assert_array_equal(computed[k], ref[k], err_msg=k)
        elif same_machine:
            np.testing.assert_array_equal(computed[k], ref[k], err_msg=f"{k} is not bit-identical")
        else:
            np.testing.assert_allclose(computed[k], ref[k], rtol=1e-3, atol=1e-4, err_msg=k)


def test_both_models_stack_the_one_block():
    tiny = L.TinyLM(L.LMConfig(vocab_size=5, d_model=8, num_heads=2, num_layers=2, max_len=8))
    gpt = G.SmallGPT(G.SmallGPTConfig(vocab_size=5, max_len=8, num_layers=2, num_heads=2, d_model=8))
    assert all(isinstance(b, RowBlock) and isinstance(b, Block) for b in tiny.blocks)
    assert all(isinstance(b, LinearBlock) and isinstance(b, Block) for b in gpt.blocks)
    assert gpt.blocks[0].spec == BlockSpec(d_model=8, num_heads=2, ff_dim=32, attention="fused")
    assert G.SmallGPTConfig.paper().block_spec().attention == "fused"


def test_explicit_and_fused_attention_compute_the_same_block():
    spec = BlockSpec(d_model=12, num_heads=3, ff_dim=20)
    blk = RowBlock(spec, torch.Generator().manual_seed(0), init_std=0.3).double()
    fused = RowBlock(BlockSpec(d_model=12, num_heads=3, ff_dim=20, attention="fused"), torch.Generator(), init_std=0.3)
    fused = fused.double()
    fused.load_state_dict(blk.state_dict())
    x = torch.randn(2, 7, 12, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    (a, w), (b, none) = blk(x), fused(x)
    assert none is None and w.shape == (2, 3, 7, 7)
    torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)  # float64: the same function


def test_tinylm_config_gives_the_block_spec_and_the_spec_validates():
    c = L.LMConfig(vocab_size=5, d_model=8, num_heads=2, num_layers=1, max_len=8, norm="rms", pre_norm=False)
    spec = c.block_spec()
    assert (spec.attention, spec.norm, spec.pre_norm, spec.ff_dim) == ("explicit", "rms", False, 32)
    assert c.block_spec("fused").attention == "fused"
    with pytest.raises(ValueError, match="attention must be one of"):
        c.block_spec("flash")
    with pytest.raises(ValueError, match="divisible by num_heads"):
        BlockSpec(d_model=8, num_heads=3, ff_dim=8)
