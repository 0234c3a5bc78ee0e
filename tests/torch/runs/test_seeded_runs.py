"""The per-seed runs write where they are told: ``svflow_lm``'s checkpoint goes beside its result in the
``results_dir`` the registry is given, never into the default results folder."""

from __future__ import annotations

import dataclasses

import pytest

pytest.importorskip("torch")

from nextword import provenance  # noqa: E402
from nextword.torch.runs import registry  # noqa: E402
from nextword.torch.svflow import lm as svflow_lm  # noqa: E402


def test_svflow_lm_keeps_its_checkpoint_in_the_results_dir_it_is_given(tmp_path, monkeypatch):
    default = tmp_path / "default_results"
    default.mkdir()
    monkeypatch.setenv("NEXTWORD_RESULTS_DIR", str(default))  # results_root() without a results_dir
    tiny = dataclasses.replace(
        svflow_lm.CPU_SVFLOW_LM,
        d_model=16,
        num_layers=1,
        num_heads=2,
        seq_len=32,
        batch=4,
        steps_per_checkpoint=100,
        n_eval_seqs=4,
        val_chars=200,
    )
    monkeypatch.setattr(svflow_lm, "CPU_SVFLOW_LM", tiny)
    given = tmp_path / "given"
    registry.run(["svflow_lm"], force=True, results_dir=given)
    saved = provenance.load_result("svflow_lm", results_dir=given)
    row = saved["data"]["per_seed"][0]
    assert (given / "svflow_lm" / row["checkpoint"]).stat().st_size == row["checkpoint_bytes"]
    assert list(default.iterdir()) == []
