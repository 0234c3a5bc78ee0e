"""The book's saved runs: experiments sized beyond a notebook's default, run once, read by the notebooks.

Each experiment is a list of seeds and a function that runs one seed. A run is **resumable**: every
finished seed is written at once to ``<results>/<name>/partial/seed<k>.json`` (+ ``.npz``), so an
interruption loses at most the seed in progress; when every seed is there, the seeds are gathered
into ``<results>/<name>/result.json`` (+ ``curves.npz``) with :func:`nextword.provenance.save_result`
(command, commit of the code, config, seeds, wall time, machine) and the partial files are removed.
A result that is current (same config, code that computes the same thing: :func:`nextword.provenance.is_current`)
is skipped.

Command line: the registry's (:mod:`nextword.torch.runs.registry`)::

    nextword results list
    nextword results run dynamics_table1 [--jobs 2] [--seeds 0 1]

Experiments (see :data:`EXPERIMENTS`): ``dynamics_table1`` (Part 3 §7.2 Table 1 at T = 2000, 1000
steps, 5 seeds), ``positions_fig628`` (§6.5, Fig. 6.28 over seeds 0–3), ``hybrid_default`` and ``hybrid_long``
(Liao App. C.1: notebook 5.4's setting and 2,000 steps with batch 512, seeds 0–2), ``svflow_lm`` (Liao §6 on a
character LM trained for 3 x 250 steps). Each entry names its notebook.

>>> sorted(EXPERIMENTS)[:1]
['dynamics_table1']
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from nextword.provenance import git_commit, is_current, load_result, results_root, save_result
from nextword.torch.runs.moved import MOVED

__all__ = ["Experiment", "EXPERIMENTS", "run_experiment", "is_saved_current"]

RunSeed = Callable[[int], tuple[dict[str, Any], dict[str, np.ndarray]]]


@dataclass(frozen=True)
class Experiment:
    """One saved run: ``run_seed(seed) -> (row, curves)``; ``summarise(rows) -> dict`` (optional)."""

    name: str
    notebook: str
    config: Mapping[str, Any]
    seeds: tuple[int, ...]
    run_seed: RunSeed
    code_paths: tuple[str, ...]
    summarise: Callable[[list[dict[str, Any]]], dict[str, Any]] | None = None


# ---- Part 3 §7.2, Table 1 ------------------------------------------------------------------------
def _dynamics_table1() -> Experiment:
    from nextword.theory.dynamics.table1 import PAPER_TABLE1, table1_seed

    def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
        d = np.array([r["delta_loss"] for r in rows])
        return {
            "em_lower": int((d < 0).sum()),
            "n_seeds": len(rows),
            "mean_delta": float(d.mean()),
            "min_delta": float(d.min()),
            "max_delta": float(d.max()),
            "mean_kl_em_sgd": float(np.mean([r["kl_em_sgd"] for r in rows])),
        }

    return Experiment(
        "dynamics_table1",
        "book/part3_dynamics/03_sticky_chain_em_vs_sgd.py",
        dataclasses.asdict(PAPER_TABLE1),
        (0, 1, 2, 3, 4),
        lambda seed: table1_seed(PAPER_TABLE1, seed),
        (
            "nextword/theory/dynamics/table1.py",
            "nextword/theory/dynamics/sticky.py",
            "nextword/theory/dynamics/gradients.py",
            "nextword/data/synthetic.py",
            "nextword/torch/runs/seeded_runs.py",
        ),
        summarise,
    )


# ---- §6.5, Fig. 6.28 ----------------------------------------------------------------------------------
def _fig628(name: str, cfg: Any, seeds: tuple[int, ...]) -> Experiment:
    from nextword.torch.probes.fig628 import VARIANTS, fig628_seed

    def run_seed(seed: int) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        curves = fig628_seed(cfg, seed).curves  # variant -> (L_test,)
        row = {
            f"{stat}_{v}": float(c[sl].mean())
            for v, c in curves.items()
            for stat, sl in (("inside", slice(0, cfg.L_train)), ("beyond", slice(cfg.L_train, None)))
        }
        return row, curves

    def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            f"{stat}_{v}_{f.__name__}": float(f([r[f"{stat}_{v}"] for r in rows]))
            for v in VARIANTS
            for stat in ("inside", "beyond")
            for f in (np.min, np.max, np.mean)
        }

    return Experiment(
        name,
        "book/part1_chapter6/6_5_positional_encoding.py",
        dataclasses.asdict(cfg),
        seeds,
        run_seed,
        (
            "nextword/torch/probes/fig628.py",
            "nextword/torch/models/lm.py",
            "nextword/torch/models/block.py",
            "nextword/torch/training/token_lm.py",
            "nextword/torch/training/engine.py",
            "nextword/torch/probes/ablation.py",
            "nextword/data/synthetic.py",
            "nextword/positions.py",
            "nextword/torch/runs/seeded_runs.py",
        ),
        summarise,
    )


def _positions_fig628() -> Experiment:
    from nextword.torch.probes.fig628 import DEFAULT_FIG628

    return _fig628("positions_fig628", DEFAULT_FIG628, (0, 1, 2, 3))


# ---- Liao §3.3 / App. C.1, the 5.4 longer run ---------------------------------------------------------
def _hybrid(name: str, steps: int, batch_size: int, seeds: tuple[int, ...], log_every: int) -> Experiment:
    from nextword.torch.svflow.hybrid import HybridConfig
    from nextword.torch.svflow.hybrid_runs import hybrid_seed

    cfg = HybridConfig(steps=steps, batch_size=batch_size)

    def run_seed(seed: int) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        row, curves = hybrid_seed(cfg, seed)
        return row, {"log": curves["log"][::log_every]}  # (steps / log_every, runs, 3)

    config = dict(dataclasses.asdict(cfg), seed="per seed", log_every=log_every)
    return Experiment(
        name,
        "book/part5_svflow/04_hybrid_training_2d.py",
        config,
        seeds,
        run_seed,
        (
            "nextword/torch/svflow/hybrid_runs.py",
            "nextword/torch/svflow/hybrid.py",
            "nextword/theory/svflow/flow.py",
            "nextword/torch/runs/seeded_runs.py",
        ),
    )


def _hybrid_long() -> Experiment:
    return _hybrid("hybrid_long", 2000, 512, (0, 1, 2), 5)


def _hybrid_default() -> Experiment:
    return _hybrid("hybrid_default", 300, 256, (0, 1, 2), 1)  # notebook 5.4's own setting, over seeds


# ---- Liao §6 on a trained causal LM ------------------------------------------------------------------
def _svflow_lm() -> Experiment:
    from nextword.torch.svflow.lm import CPU_SVFLOW_LM

    cfg = CPU_SVFLOW_LM

    def run_seed(seed: int) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        from nextword.evaluation import spearman
        from nextword.torch.svflow.probe import prefix_shuffling_experiment
        from nextword.torch.training.data import load_char_data
        from nextword.torch.svflow.lm import (
            deep_and_full_tables,
            save_checkpoint,
            shuffle_table_arrays,
            train_svflow_lm,
        )

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
        folder = results_root() / "svflow_lm"
        folder.mkdir(parents=True, exist_ok=True)
        path = save_checkpoint(ckpts[-1], folder / "checkpoint_fp16.pth")
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
        }
        return row, curves

    config = dict(dataclasses.asdict(cfg), corpus="shakespeare (tiny Shakespeare, 90/10 split)", seed="per seed")
    return Experiment(
        "svflow_lm",
        "book/part5_svflow/05_prefix_shuffling.py",
        config,
        (0,),
        run_seed,
        (
            "nextword/torch/svflow/lm.py",
            "nextword/torch/models/lm.py",
            "nextword/torch/models/block.py",
            "nextword/torch/training/token_lm.py",
            "nextword/torch/training/engine.py",
            "nextword/torch/svflow/probe.py",
            "nextword/theory/svflow/flow.py",
            "nextword/torch/training/data.py",
            "nextword/data",
            "nextword/torch/runs/seeded_runs.py",
        ),
    )


#: name -> factory of the :class:`Experiment` (factories keep imports lazy).
EXPERIMENTS: dict[str, Callable[[], Experiment]] = {
    "dynamics_table1": _dynamics_table1,
    "positions_fig628": _positions_fig628,
    "hybrid_long": _hybrid_long,
    "hybrid_default": _hybrid_default,
    "svflow_lm": _svflow_lm,
}


# ---- machinery ----------------------------------------------------------------------------------
def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=lambda v: v.item() if isinstance(v, np.generic) else str(v)))


def _partial_dir(name: str, results_dir: str | os.PathLike | None) -> Path:
    return results_root(results_dir) / name / "partial"


def _load_partial(exp: Experiment, seed: int, results_dir) -> tuple[dict, dict] | None:
    folder = _partial_dir(exp.name, results_dir)
    js, npz = folder / f"seed{seed}.json", folder / f"seed{seed}.npz"
    if not js.is_file():
        return None
    try:
        saved = json.loads(js.read_text())
        if saved.get("config") != _jsonable(exp.config):
            return None
        with np.load(npz, allow_pickle=False) as f:
            curves = {k: f[k] for k in f.files}
    except (OSError, ValueError, json.JSONDecodeError):
        return None  # unreadable partial file: run the seed again
    return saved["row"], curves


def _run_one(name: str, seed: int, results_dir: str | None, threads: int) -> int:
    """Run one seed of ``name`` and write its partial files (in a worker process)."""
    import torch

    torch.set_num_threads(threads)
    exp = EXPERIMENTS[name]()
    commit, dirty = git_commit(exp.code_paths)  # the code this seed runs (the result records the latest)
    t0 = time.perf_counter()
    row, curves = exp.run_seed(seed)
    row = dict(row, wall_time_s=time.perf_counter() - t0, code_commit=commit, code_dirty=dirty)
    folder = _partial_dir(name, results_dir)
    folder.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(folder / f"seed{seed}.tmp.npz", **curves)
    os.replace(folder / f"seed{seed}.tmp.npz", folder / f"seed{seed}.npz")
    tmp = folder / f"seed{seed}.json.tmp"
    tmp.write_text(json.dumps({"config": _jsonable(exp.config), "seed": seed, "row": _jsonable(row)}) + "\n")
    os.replace(tmp, folder / f"seed{seed}.json")  # the json last: it marks the seed as done
    print(f"[{name}] seed {seed} done in {row['wall_time_s']:.0f} s", flush=True)
    return seed


def _override_commit(path: Path) -> None:
    """Outside a git checkout, ``NEXTWORD_COMMIT`` (and ``NEXTWORD_DIRTY=0``) name the source commit."""
    record = json.loads(path.read_text())
    if record.get("commit") == "unknown" and os.environ.get("NEXTWORD_COMMIT"):
        record["commit"] = os.environ["NEXTWORD_COMMIT"]
        record["dirty"] = os.environ.get("NEXTWORD_DIRTY", "1") != "0"
        path.write_text(json.dumps(record, indent=1) + "\n")


def _complete(name: str, results_dir: str | os.PathLike | None) -> bool:
    try:
        return load_result(name, results_dir)["data"].get("complete", True) is not False
    except FileNotFoundError:
        return False


def is_saved_current(name: str, results_dir: str | os.PathLike | None = None) -> bool:
    """True when ``name``'s saved result has every seed, its configuration, and code that computes the same."""
    exp = EXPERIMENTS[name]()
    return _complete(name, results_dir) and is_current(
        name, _jsonable(exp.config), results_dir, code_paths=exp.code_paths, renames=MOVED
    )


def run_experiment(
    name: str,
    *,
    seeds: Sequence[int] | None = None,
    jobs: int = 1,
    threads: int = 1,
    force: bool = False,
    partial_ok: bool = False,
    results_dir: str | os.PathLike | None = None,
) -> Path | None:
    """Run the missing seeds of ``name`` (``jobs`` processes of ``threads`` torch threads each) and save.

    Returns the path of ``result.json`` once every seed is done (None while some are missing, e.g.
    when ``seeds`` asks for a subset). Skips an experiment whose saved result is current.
    ``partial_ok`` saves the seeds finished so far (at least one) as the result, marked
    ``data["complete"] = False`` with the planned seeds in ``data["seeds_planned"]``.
    """
    if name not in EXPERIMENTS:
        raise ValueError(f"name must be one of {sorted(EXPERIMENTS)}, got {name!r}")
    exp = EXPERIMENTS[name]()
    if not force and is_saved_current(name, results_dir):
        print(f"[{name}] saved result is current; skipped (--force reruns it)")
        return results_root(results_dir) / name / "result.json"
    wanted = exp.seeds if seeds is None else tuple(int(s) for s in seeds)
    unknown = set(wanted) - set(exp.seeds)
    if unknown:
        raise ValueError(f"seeds must be among {list(exp.seeds)}, got {sorted(unknown)}")
    todo = [s for s in wanted if force or _load_partial(exp, s, results_dir) is None]
    rd = None if results_dir is None else str(results_dir)
    if jobs > 1 and len(todo) > 1:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            list(pool.map(_run_one, [name] * len(todo), todo, [rd] * len(todo), [threads] * len(todo)))
    else:
        for s in todo:
            _run_one(name, s, rd, threads)
    done = {s: _load_partial(exp, s, results_dir) for s in exp.seeds}
    missing = [s for s, v in done.items() if v is None]
    finished = tuple(s for s in exp.seeds if done[s] is not None)
    if missing and not (partial_ok and finished):
        print(f"[{name}] seeds {missing} still to run; partial results kept")
        return None
    rows = [dict(done[s][0], seed=s) for s in finished]
    keys = done[finished[0]][1].keys()
    curves = {k: np.stack([done[s][1][k] for s in finished]) for k in keys}  # (seeds, ...)
    data: dict[str, Any] = {"complete": not missing, "seeds_planned": list(exp.seeds), "per_seed": rows}
    if exp.summarise is not None:
        data["summary"] = exp.summarise(rows)
    command = f"nextword results run {name}"
    path = save_result(
        name,
        data,
        command=command,
        config=exp.config,
        seeds=finished,
        wall_time_s=float(sum(r["wall_time_s"] for r in rows)),
        curves=curves,
        code_paths=exp.code_paths,
        results_dir=results_dir,
    )
    _override_commit(path)
    if not missing:
        shutil.rmtree(_partial_dir(name, results_dir), ignore_errors=True)
    print(f"[{name}] saved {path}" + (f" with {len(finished)} of {len(exp.seeds)} seeds" if missing else ""))
    return path
