"""Every preset's configuration, and every configuration the registry's experiments are saved with, is the
one recorded in ``presets_snapshot.json``: a refactor of ``config.py`` or ``barrier_runs.py`` must not change
one value (a saved run whose configuration changes is "to run").

A deliberate change of a preset rewrites the snapshot:
``python -c "from tests.torch.barrier.test_presets_unchanged import write; write()"`` (and says why in its commit).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")

SNAPSHOT = Path(__file__).with_name("presets_snapshot.json")


def snapshot() -> dict:
    """``{"presets": …, "experiments": …, "dry_run": …}``: every value as JSON."""
    import os

    from nextword.torch.barrier.config import PRESETS
    from nextword.torch.runs import barrier_runs
    from nextword.torch.runs.experiment import jsonable

    def experiments() -> dict:
        from nextword.torch.runs import registry

        return {
            n: {"config": e.config(), "fingerprint": e.fingerprint}
            for n, e in registry.EXPERIMENTS.items()
            if n in {x.name for x in barrier_runs.experiments()} or e.device == "cuda"
        }

    def tiers() -> dict:
        lams = (0.0, 0.05)  # every other λ the experiments use is in "experiments"
        return {
            f"{f.__name__}({tier}, {lam}, {seed})": f(tier, lam=lam, seed=seed).to_dict()
            for f in (barrier_runs.arm_config, barrier_runs.sweep_config)
            for tier in ("cpu", "gpu")
            for lam in lams
            for seed in (0, 1)
        } | {
            f"sweep_config(gpu, paper, {lam}, {seed})": barrier_runs.sweep_config("gpu", "paper", lam, seed).to_dict()
            for lam in lams
            for seed in (0, 1)
        }

    out = {"presets": {n: c.to_dict() for n, c in PRESETS.items()}, "tiers": tiers(), "experiments": experiments()}
    old = os.environ.get(barrier_runs.GPU_TIER_ENV)
    os.environ[barrier_runs.GPU_TIER_ENV] = "tiny"
    try:
        out["dry_run"] = {"tiers": tiers(), "experiments": experiments()}
    finally:
        if old is None:
            del os.environ[barrier_runs.GPU_TIER_ENV]
        else:
            os.environ[barrier_runs.GPU_TIER_ENV] = old
    return jsonable(out)


def write() -> None:
    SNAPSHOT.write_text(json.dumps(snapshot(), indent=1, sort_keys=True) + "\n")


def test_every_preset_and_experiment_configuration_is_unchanged(monkeypatch):
    from nextword.torch.runs.barrier_runs import GPU_TIER_ENV

    monkeypatch.delenv(GPU_TIER_ENV, raising=False)
    recorded, now = json.loads(SNAPSHOT.read_text()), snapshot()
    for part in recorded:
        for key in recorded[part]:
            assert now[part][key] == recorded[part][key], (part, key)
    assert now == recorded
