"""Faults a user meets: a checkpoint damaged on disk, and mistakes on the command line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from nextword.torch import cli  # noqa: E402
from nextword.torch.training.data import load_char_data  # noqa: E402
from nextword.torch.training.checkpoint import (  # noqa: E402
    CKPT,
    PREV_CKPT,
    CheckpointError,
    CheckpointFallbackWarning,
    read_checkpoint,
)
from nextword.torch.barrier.config import PRESETS, preset  # noqa: E402
from nextword.torch.barrier.train import train  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def data():
    return load_char_data("shakespeare", max_chars=PRESETS["tiny"].max_chars)


def _truncate(path: Path) -> None:
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) // 2])


def test_truncated_checkpoint_falls_back_to_the_previous_good_one(tmp_path, data):
    cfg = preset("tiny", checkpoint_every=2)  # checkpoints at steps 2 and 4
    full = train(cfg, tmp_path / "full", progress=False, data=data)
    part = tmp_path / "part"
    train(cfg, part, progress=False, data=data, max_steps_this_run=4)
    assert torch.load(part / PREV_CKPT, weights_only=True)["state"]["step"] == 2
    _truncate(part / CKPT)  # the step-4 file is damaged
    with pytest.warns(CheckpointFallbackWarning, match="falling back"):
        resumed = train(cfg, part, progress=False, data=data, resume=True)
    assert resumed["finished"]
    assert resumed["final_train_loss"] == full["final_train_loss"]  # steps 3-4 redone exactly
    assert resumed["history"] == full["history"]


def test_no_readable_checkpoint_is_a_clear_error(tmp_path):
    with pytest.raises(CheckpointError, match="no readable checkpoint"):
        read_checkpoint(tmp_path)
    (tmp_path / CKPT).write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match="unreadable"):
        read_checkpoint(tmp_path)


def _run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "nextword", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )


@pytest.mark.parametrize(
    "args, needle",
    [
        (["train", "--lambda-margin", "-1"], "--lambda-margin: expected a finite number >= 0"),
        (["train", "--data", "/no/such/corpus.txt"], "--data"),
        (["train", "--config", "tiny", "--margin-positions", "99"], "margin_positions"),
        (["sweep", "--lambdas", "0,x"], "--lambdas"),
    ],
)
def test_cli_user_errors_are_one_line_with_status_2(args, needle, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(args)
    assert e.value.code == 2
    assert needle in capsys.readouterr().err


def test_cli_damaged_or_missing_run_directory_is_one_line_status_2(tmp_path):
    proc = _run_cli("robustness", "--out", str(tmp_path))
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and "no readable checkpoint" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    (tmp_path / CKPT).write_bytes(b"PK\x03\x04 truncated")
    proc = _run_cli("train", "--config", "tiny", "--out", str(tmp_path), "--resume", "--no-progress")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "unreadable" in proc.stderr


def test_cli_missing_data_path_is_one_line_status_2():
    proc = _run_cli("train", "--data", "/no/such/corpus.txt")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].endswith("nor an existing file or WikiText-2 directory")
