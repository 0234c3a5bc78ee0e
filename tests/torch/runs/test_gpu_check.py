"""``nextword gpu-check``: its CPU dry-run rehearses every stage and saves, through the registry, the session
and every GPU-tier run it trained, with provenance; without a CUDA GPU the real command says so in one line
and exits 2."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from nextword import provenance  # noqa: E402
from nextword.__main__ import main  # noqa: E402
from nextword.torch.runs import gpu_check  # noqa: E402


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA GPU: the real check would run")
def test_without_a_gpu_it_says_so_in_one_line_and_exits_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        main(["gpu-check", "--out", str(tmp_path)])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("nextword gpu-check: error: no CUDA GPU here")


def test_dry_run_rehearses_every_stage_on_the_cpu(tmp_path, monkeypatch):
    for var in ("NEXTWORD_GPU_TIER", "NEXTWORD_RUNS_DIR", "NEXTWORD_GPU_BUDGET"):
        monkeypatch.delenv(var, raising=False)  # restored after the test: the command sets them for its session
    assert main(["gpu-check", "--dry-run", "--out", str(tmp_path), "--budget", "900"]) == 0
    results = tmp_path / "results"
    check = provenance.load_result("gpu_check", results_dir=results)
    assert set(provenance.PROVENANCE_FIELDS) <= set(check) and check["command"] == "nextword results run gpu_check"
    data = check["data"]
    assert data["dry_run"] and data["gpu"]["torch"] == torch.__version__
    # stage 1: the CPU run against the same run on the (here: CPU) device, float32: identical curves
    assert data["parity"]["parity"] and data["parity"]["max_abs_val_bpc_diff"] == 0.0
    # stage 3: steps per second of the three training steps, all positive
    assert all(data["speed"][k] > 0 for k in ("ce", "margin_exact", "margin_k16"))
    # stage 4: every run finished and was saved through the registry, the margin arm with its weights
    assert all(s["returncode"] == 0 for s in data["train"].values()), data["train"]
    for name in gpu_check.session_runs("cpu", 0):
        saved = provenance.load_result(name, results_dir=results)
        assert set(provenance.PROVENANCE_FIELDS) <= set(saved) and saved["command"] == f"nextword results run {name}"
    ck = torch.load(results / "gpu_barrier_margin" / "model.pt", weights_only=True)
    assert set(ck) == {"model", "prior", "config", "vocab_size"}
    sweep = provenance.load_result("gpu_barrier_sweep", results_dir=results)["data"]
    assert [r["lambda"] for r in sweep["rows"]] == [0.0, 0.05]
    assert gpu_check.PARITY_TOL_BPC == 1e-3


def test_the_speed_stage_times_the_training_step_itself(monkeypatch):
    """``steps_per_second`` sets a run up with barrier training's own ``setup_run`` and times its
    ``train_step`` (no copy of the step): every timed and warm-up step is a call of that function."""
    from nextword.torch.barrier import train as barrier_train
    from nextword.torch.barrier.config import preset

    calls = {"setup_run": 0, "train_step": 0}
    setup_run, train_step = barrier_train.setup_run, barrier_train.train_step

    def counted_setup(*args, **kwargs):
        calls["setup_run"] += 1
        return setup_run(*args, **kwargs)

    def counted_step(*args, **kwargs):
        calls["train_step"] += 1
        return train_step(*args, **kwargs)

    monkeypatch.setattr(barrier_train, "setup_run", counted_setup)
    monkeypatch.setattr(barrier_train, "train_step", counted_step)
    rate = gpu_check.steps_per_second(preset("tiny", lambda_margin=0.05), "cpu", steps=3, warmup=2)
    assert rate > 0 and calls == {"setup_run": 1, "train_step": 5}
