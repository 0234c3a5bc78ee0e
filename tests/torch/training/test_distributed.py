"""DistributedDataParallel on CPU: torchrun with 2 gloo processes equals a single-process run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from nextword.torch.training.checkpoint import CKPT  # noqa: E402
from nextword.torch.barrier.config import preset  # noqa: E402
from nextword.torch.barrier.train import train  # noqa: E402

REPO = Path(__file__).resolve().parents[3]


def _torchrun(*args) -> None:
    """``torchrun --standalone --nproc_per_node=2 -m nextword ARGS`` (as the README writes it), one thread
    a process; fails the test with the end of stderr if it fails."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", "-m", "nextword"]
    proc = subprocess.run([*cmd, *map(str, args)], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.mark.slow
def test_torchrun_two_processes_matches_single_process(tmp_path):
    if not torch.distributed.is_available():
        pytest.skip("torch.distributed unavailable")
    _torchrun(
        "train", "--config", "tiny", "--steps", "4", "--no-progress", "--device", "cpu", "--out", tmp_path / "ddp"
    )
    ddp = json.loads((tmp_path / "ddp" / "results.json").read_text())
    assert ddp["world_size"] == 2 and ddp["finished"]
    single = train(preset("tiny", steps=4), tmp_path / "single", progress=False, device="cpu")
    assert abs(ddp["final_train_loss"] - single["final_train_loss"]) < 1e-5
    for a, b in zip(ddp["history"], single["history"]):
        assert abs(a["val_bpc"] - b["val_bpc"]) < 1e-5 and abs(a["train_bpc"] - b["train_bpc"]) < 1e-5
    ck = torch.load(tmp_path / "ddp" / CKPT, weights_only=True)
    cs = torch.load(tmp_path / "single" / CKPT, weights_only=True)
    for k in ck["model"]:
        torch.testing.assert_close(ck["model"][k], cs["model"][k], rtol=1e-4, atol=1e-6)


@pytest.mark.slow
def test_torchrun_sweep_fans_out_one_lambda_per_process(tmp_path):
    _torchrun(
        "sweep", "--config", "tiny", "--steps", "2", "--lambdas", "0,0.5", "--no-progress", "--device", "cpu",
        "--out", tmp_path,
    )  # fmt: skip
    table = json.loads((tmp_path / "sweep.json").read_text())
    assert [r["lambda"] for r in table["rows"]] == [0.0, 0.5]
    # each λ was trained by exactly one process, as a plain single-process run
    for lam in ("0", "0.5"):
        res = json.loads((tmp_path / f"lambda_{lam}" / "results.json").read_text())
        assert res["world_size"] == 1 and res["finished"]
