"""Shared plumbing for the Part 4 barrier-training notebooks (no experiment logic lives here).

- :func:`experiment_config` — the default quick CPU configuration, or (``full=True``) §7.1's
  configuration on WikiText-2 (``BARRIER_DATA`` overrides the corpus);
- :func:`runs_dir` — where the notebooks cache their runs so that all three share them
  (``$NEXTWORD_RUNS`` or ``<tmp>/nextword_runs``; a cached run is reused only if its whole
  configuration matches, see :func:`nextword.torch.barrier.train.train_or_load`);
- :func:`saved_run` — a result saved with provenance by ``make results`` (``None`` if not saved yet),
  :func:`all_saved` — whether all the named ones are, :func:`load_saved_model` — a saved run's trained model;
- ``PAPER_*`` — the numbers *reported in the paper* (§7.2–7.4), for side-by-side display only.
  They are quotations, never expected values of a test.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from nextword.perturbation import perturbation
from nextword.torch.barrier.config import TrainConfig, preset

__all__ = [
    "experiment_config",
    "runs_dir",
    "saved_run",
    "all_saved",
    "load_saved_model",
    "PAPER_FIG74",
    "PAPER_FIG75",
    "PAPER_TABLE1",
    "PAPER_SETUP",
]

#: §7.1 as reported (WikiText-2, character level).
PAPER_SETUP = {
    "data": "WikiText-2 (10.9M train chars, |V| = 1013)",
    "d_model": 128,
    "n_head": 4,
    "n_layer": 2,
    "block_size": 256,
    "batch_size": 64,
    "epochs": 20,
    "lambda_margin": 0.05,
    "params": "~150K transformer + ~130K embedding",
}
#: Fig. 7.4 / table of §7.2: final BPC after 20 epochs.
PAPER_FIG74 = {"ce": {"train_bpc": 2.075, "val_bpc": 2.122}, "margin": {"train_bpc": 2.118, "val_bpc": 2.158}}
#: Fig. 7.5 / table of §7.3.
PAPER_FIG75 = {
    "ce": {"clean": 2.122, "bpc_sigma_0.5": 5.478, "degradation": 2.58},
    "margin": {"clean": 2.158, "bpc_sigma_0.5": 5.315, "degradation": 2.46},
}
#: Table 1 (§7.4): λ_m, BPC, BPC at σ = 0.3, Deg, H (nats), SNR, Var_a / RMS².
PAPER_TABLE1 = [
    (0.000, 2.109, 4.934, 2.34, 3.18, 0.961, 76.5),
    (0.005, 2.134, 4.755, 2.23, 3.12, 0.827, 95.5),
    (0.010, 2.148, 4.609, 2.15, 3.08, 0.823, 95.9),
    (0.020, 2.155, 4.496, 2.09, 3.14, 0.831, 107.7),
    (0.050, 2.158, 4.558, 2.11, 3.11, 0.828, 103.1),
    (0.100, 2.169, 4.711, 2.17, 3.26, 0.844, 107.8),
    (0.200, 2.173, 4.723, 2.17, 3.10, 0.817, 99.1),
]


def experiment_config(full: bool = False, **overrides) -> TrainConfig:
    """Quick CPU miniature (default) or the paper's §7.1 run (``full``).

    Environment knobs for the full run: ``BARRIER_DATA`` (corpus, default ``wikitext2``), and, for
    smoke-testing the ``FULL`` code path on a small machine only, ``BARRIER_STEPS`` and
    ``BARRIER_EVAL_WINDOWS``.
    """
    if full:
        env = {"data": os.environ.get("BARRIER_DATA", "wikitext2")}
        if os.environ.get("BARRIER_STEPS"):
            env["steps"] = int(os.environ["BARRIER_STEPS"])
        if os.environ.get("BARRIER_EVAL_WINDOWS"):
            env["eval_windows"] = int(os.environ["BARRIER_EVAL_WINDOWS"])
        return preset("paper", **{**env, **overrides})
    return preset("quick", **overrides)


def runs_dir(full: bool = False) -> Path:
    """Cache directory shared by the three notebooks (created if needed); the perturbation pass
    (``NEXTWORD_PERTURB=k``) has its own, so that the two notebook passes of ``make test`` do not
    retrain over each other's runs."""
    root = Path(os.environ.get("NEXTWORD_RUNS", Path(tempfile.gettempdir()) / "nextword_runs"))
    k = perturbation()
    path = root / (("paper" if full else "quick") + (f"-perturbed{k}" if k else ""))
    path.mkdir(parents=True, exist_ok=True)
    return path


def saved_run(name: str) -> dict | None:
    """``book/results/<name>/result.json`` written by ``make results`` (:mod:`nextword.torch.runs.barrier_runs`), or ``None``.

    The notebooks print "not saved yet" instead of failing when a long run has not been made; after
    ``make results`` they are rebuilt to show it.
    """
    from nextword.provenance import load_result

    try:
        return load_result(name)
    except FileNotFoundError:
        return None


def all_saved(*names: str) -> bool:
    """True when every named run is saved; otherwise print which are missing and how to make them.

    A notebook guards the cells that read those runs with it (``SAVED = all_saved("barrier_ce")``).
    """
    missing = [n for n in names if saved_run(n) is None]
    if missing:
        print(
            f"not saved yet under book/results/: {', '.join(missing)}. `make results` trains them (hours on a "
            f"shared CPU);\nthe cells that read them are skipped until they exist."
        )
    return not missing


def load_saved_model(name: str, results_dir: str | os.PathLike | None = None):
    """``(gpt, prior, cfg)`` of a saved run's ``model.pt`` under ``book/results/<name>/`` (weights-only load)."""
    import torch

    from nextword.provenance import results_root
    from nextword.torch.barrier.config import TrainConfig
    from nextword.torch.barrier.train import build

    ck = torch.load(results_root(results_dir) / name / "model.pt", map_location="cpu", weights_only=True)
    cfg = TrainConfig.from_dict(ck["config"])
    gpt, prior = build(cfg, ck["vocab_size"], torch.device("cpu"))
    gpt.load_state_dict(ck["model"])
    prior.load_state_dict(ck["prior"])
    return gpt.eval(), prior, cfg
