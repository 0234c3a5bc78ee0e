"""The per-seed experiments of the registry: sized beyond a notebook's default, run once, read by the notebooks.

Each is a list of seeds and a function that runs one seed (:class:`~nextword.torch.runs.experiment.Experiment`
with ``run_seed``); the registry (:mod:`~nextword.torch.runs.registry`) keeps every finished seed at once
and gathers them when all are there::

    nextword results list
    nextword results run dynamics_table1 [--jobs 2] [--seeds 0 1]

``dynamics_table1`` (Part 3 §7.2 Table 1 at T = 2000, 1000 steps, 5 seeds), ``positions_fig628`` (§6.5,
Fig. 6.28 over seeds 0–3), ``hybrid_default`` and ``hybrid_long`` (Liao App. C.1: notebook 5.4's setting
and 2,000 steps with batch 512, seeds 0–2), ``svflow_lm`` (Liao §6 on a character LM trained for 3 x 250
steps). Each entry names its notebook.

>>> [e.name for e in experiments()][:1]
['dynamics_table1']
"""

from __future__ import annotations

import dataclasses
import functools
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from nextword.torch.runs.experiment import Experiment

__all__ = ["experiments", "FINGERPRINT_STEPS"]

#: Training steps a fingerprint of a per-seed run replays (:mod:`nextword.torch.runs.fingerprint`).
FINGERPRINT_STEPS = 3


# ---- Part 3 §7.2, Table 1 ------------------------------------------------------------------------
def _table1_seed(seed: int) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    from nextword.theory.dynamics.table1 import PAPER_TABLE1, table1_seed

    return table1_seed(PAPER_TABLE1, seed)


def _table1_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    d = np.array([r["delta_loss"] for r in rows])
    return {
        "em_lower": int((d < 0).sum()),
        "n_seeds": len(rows),
        "mean_delta": float(d.mean()),
        "min_delta": float(d.min()),
        "max_delta": float(d.max()),
        "mean_kl_em_sgd": float(np.mean([r["kl_em_sgd"] for r in rows])),
    }


def _table1_config() -> dict[str, Any]:
    from nextword.theory.dynamics.table1 import PAPER_TABLE1

    return dataclasses.asdict(PAPER_TABLE1)


# ---- §6.5, Fig. 6.28 ----------------------------------------------------------------------------------
def _fig628_seed(seed: int) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    from nextword.torch.probes.fig628 import DEFAULT_FIG628, fig628_seed

    cfg = DEFAULT_FIG628
    curves = fig628_seed(cfg, seed).curves  # variant -> (L_test,)
    row = {
        f"{stat}_{v}": float(c[sl].mean())
        for v, c in curves.items()
        for stat, sl in (("inside", slice(0, cfg.L_train)), ("beyond", slice(cfg.L_train, None)))
    }
    return row, curves


def _fig628_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    from nextword.torch.probes.fig628 import VARIANTS

    return {
        f"{stat}_{v}_{f.__name__}": float(f([r[f"{stat}_{v}"] for r in rows]))
        for v in VARIANTS
        for stat in ("inside", "beyond")
        for f in (np.min, np.max, np.mean)
    }


def _fig628_config() -> dict[str, Any]:
    from nextword.torch.probes.fig628 import DEFAULT_FIG628

    return dataclasses.asdict(DEFAULT_FIG628)


# ---- Liao §3.3 / App. C.1, the 5.4 longer run ---------------------------------------------------------
def _hybrid_config(steps: int, batch_size: int):
    from nextword.torch.svflow.hybrid import HybridConfig

    return HybridConfig(steps=steps, batch_size=batch_size)


def _hybrid_seed(
    steps: int, batch_size: int, log_every: int, seed: int
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    from nextword.torch.svflow.hybrid_runs import hybrid_seed

    row, curves = hybrid_seed(_hybrid_config(steps, batch_size), seed)
    return row, {"log": curves["log"][::log_every]}  # (steps / log_every, runs, 3)


# ---- Liao §6 on a trained causal LM ------------------------------------------------------------------
def _svflow_lm_seed(seed: int) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    from nextword.evaluation import spearman
    from nextword.torch.svflow.lm import (
        CPU_SVFLOW_LM,
        deep_and_full_tables,
        save_checkpoint,
        shuffle_table_arrays,
        train_svflow_lm,
    )
    from nextword.torch.svflow.probe import prefix_shuffling_experiment
    from nextword.torch.training.data import load_char_data

    cfg = CPU_SVFLOW_LM
    data = load_char_data("shakespeare")
    train, val = data.train.numpy(), data.val.numpy()
    ckpts, losses, val_losses = train_svflow_lm(cfg, train, val, data.vocab.vocab_size, seed=seed)
    seqs = val[: cfg.n_eval_seqs * (cfg.seq_len + 1)].reshape(cfg.n_eval_seqs, cfg.seq_len + 1)  # (M, N)
    curves: dict[str, np.ndarray] = {"train_loss": np.asarray(losses)}
    tables = []
    for c, model in enumerate(ckpts):
        tab = prefix_shuffling_experiment(model, seqs, cfg.ps, np.random.default_rng(0))
        arrays = shuffle_table_arrays(tab, prefix=f"ckpt{c}.")
        curves.update(arrays)
        tables.append(deep_and_full_tables(arrays, cfg.deep, prefix=f"ckpt{c}."))
    nlp = np.concatenate([t["table1"]["neg_log_p_per_dim"]["base"] for t in tables])  # 3 checkpoints x 4 bins
    ppl = np.concatenate([t["logppl_base"] for t in tables])
    ece = np.concatenate([t["ece_base"] for t in tables])
    s_ppl, s_ece = spearman(nlp, ppl), spearman(nlp, ece)
    path = save_checkpoint(ckpts[-1], Path(tempfile.mkdtemp(prefix="svflow_lm")) / "checkpoint_fp16.pth")
    row = {
        "val_loss": val_losses,
        "val_bits_per_char": [v / np.log(2) for v in val_losses],
        "train_loss_last100": [
            float(np.mean(losses[(c + 1) * cfg.steps_per_checkpoint - 100 : (c + 1) * cfg.steps_per_checkpoint]))
            for c in range(len(ckpts))
        ],
        "steps": [(c + 1) * cfg.steps_per_checkpoint for c in range(len(ckpts))],
        "num_parameters": ckpts[-1].num_parameters(),
        "vocab": "<unk>" + data.vocab.chars,  # the characters of ids 0, 1, …; id 0 is the unknown id
        "checkpoint": path.name,
        "checkpoint_bytes": path.stat().st_size,
        "tables": tables,
        "spearman_logppl": [s_ppl.rho, s_ppl.p_value],
        "spearman_ece": [s_ece.rho, s_ece.p_value],
        "files": {path.name: str(path)},  # kept beside the result by the registry, then dropped from the row
    }
    return row, curves


def _svflow_lm_config() -> dict[str, Any]:
    from nextword.torch.svflow.lm import CPU_SVFLOW_LM

    return dict(
        dataclasses.asdict(CPU_SVFLOW_LM), corpus="shakespeare (tiny Shakespeare, 90/10 split)", seed="per seed"
    )


# ---- the table ----------------------------------------------------------------------------------------
_HERE = "nextword.torch.runs.seeded_runs"


def experiments() -> list[Experiment]:
    """Every per-seed experiment of the registry."""
    fp = FINGERPRINT_STEPS
    out = [
        Experiment(
            "dynamics_table1",
            "Part 3 §7.2 / Table 1: EM-like vs SGD on the sticky chain at the paper's size, 5 seeds",
            "book/part3_dynamics/03_sticky_chain_em_vs_sgd.py",
            _table1_config,
            (f"{_HERE}:_table1_seed,_table1_summary",),
            run_seed=_table1_seed,
            summarise=_table1_summary,
            seeds=(0, 1, 2, 3, 4),
            fingerprint=("table1", {"config": _table1_config(), "steps": fp}),
        ),
        Experiment(
            "positions_fig628",
            "§6.5 / Fig. 6.28: positional encodings trained at one length, tested at a longer one, 4 seeds",
            "book/part1_chapter6/6_5_positional_encoding.py",
            _fig628_config,
            (f"{_HERE}:_fig628_seed,_fig628_summary",),
            run_seed=_fig628_seed,
            summarise=_fig628_summary,
            seeds=(0, 1, 2, 3),
            fingerprint=("fig628", {"config": _fig628_config(), "steps": fp}),
        ),
    ]
    for name, steps, batch, log_every, what in (
        ("hybrid_long", 2000, 512, 5, "Liao App. C.1 / Fig. 1: hybrid SVFlow training, 2,000 steps, 3 seeds"),
        ("hybrid_default", 300, 256, 1, "Liao App. C.1: notebook 5.4's own setting over 3 seeds"),
    ):
        config = dataclasses.asdict(_hybrid_config(steps, batch))
        out.append(
            Experiment(
                name,
                what,
                "book/part5_svflow/04_hybrid_training_2d.py",
                lambda config=config, log_every=log_every: dict(config, seed="per seed", log_every=log_every),
                (f"{_HERE}:_hybrid_seed",),
                run_seed=functools.partial(_hybrid_seed, steps, batch, log_every),
                seeds=(0, 1, 2),
                fingerprint=("hybrid", {"config": config, "steps": fp}),
            )
        )
    out.append(
        Experiment(
            "svflow_lm",
            "Liao §6 / Tables 1-2: prefix shuffling on a trained character LM (3 checkpoints)",
            "book/part5_svflow/05_prefix_shuffling.py",
            _svflow_lm_config,
            (f"{_HERE}:_svflow_lm_seed",),
            run_seed=_svflow_lm_seed,
            fingerprint=("svflow_lm", {"config": _svflow_lm_config(), "steps": fp}),
        )
    )
    return out
