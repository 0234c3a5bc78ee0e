"""The §7 barrier runs of the registry (:mod:`nextword.torch.runs.registry`, ``nextword results``).

    nextword results run barrier_ce           # one experiment (and what it depends on)
    nextword results run --train-only NAME    # only the resumable training part

Each :class:`Experiment` has two parts: ``train`` (the long, resumable work, in ``runs/<name>/``,
checkpointed, so an interruption costs at most one checkpoint interval) and ``save`` (cheap: reads
the finished run and writes ``book/results/<name>/`` with :func:`nextword.provenance.save_result`:
the numbers, the exact command, the commit of the code that determines them, the configuration,
the seeds, the wall time and the machine, plus ``curves.npz`` and, where a notebook analyses the
trained model, a weights-only ``model.pt`` of at most 2 MB). An experiment is skipped when
:func:`nextword.provenance.is_current` says its saved result has the same configuration and was
produced by code that still computes the same thing (file by file; modules that only moved, listed in
:data:`~nextword.torch.runs.moved.MOVED`, count as unchanged).

Wall time is the sum over the training sessions recorded in ``runs/<name>/wall.json``: on a shared
machine it measures the machine's load as much as the work, so the saved result also holds the
steps per second of the run.

To add a trained experiment of this kind, add one entry to :data:`EXPERIMENTS`; the registry lists it.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nextword.torch.runs.moved import MOVED

__all__ = [
    "Experiment",
    "Saved",
    "EXPERIMENTS",
    "BARRIER_CODE",
    "runs_root",
    "run_experiment",
    "wall_time",
    "SWEEP_LAMBDAS",
    "load_saved_model",
    "in_order",
]

_REPO = Path(__file__).resolve().parents[3]

#: Files whose content determines the barrier runs' numbers (recorded as ``code_paths`` and digested as ``code``).
BARRIER_CODE = tuple(
    f"nextword/torch/{m}.py"
    for m in (
        "models/gpt",
        "models/block",
        "barrier/prior",
        "barrier/config",
        "barrier/train",
        "training/engine",
        "training/data",
        "barrier/robustness",
        "training/checkpoint",
        "training/distributed",
        "barrier/sweep",
    )
) + ("nextword/data/__init__.py",)

#: λ values of the §7.4 path at the CPU tier (Table 1 of the paper uses 0, .005, .01, .02, .05, .1, .2).
SWEEP_LAMBDAS = (0.0, 0.01, 0.05, 0.1, 0.2)


def runs_root() -> Path:
    """Working directory of the long runs: ``$NEXTWORD_RUNS_DIR`` or ``<repo>/runs`` (git-ignored)."""
    return Path(os.environ.get("NEXTWORD_RUNS_DIR", _REPO / "runs"))


@dataclass(frozen=True)
class Saved:
    """What an experiment's ``save`` returns: the numbers, small arrays, and files to copy beside them."""

    data: Mapping[str, Any]
    curves: Mapping[str, Any] = field(default_factory=dict)
    files: Mapping[str, Path] = field(default_factory=dict)  # name in book/results/<name>/ -> source


@dataclass(frozen=True)
class Experiment:
    """One saved result: ``train(workdir)`` (resumable, may be long) then ``save(workdir) -> Saved``."""

    name: str
    description: str
    config: Callable[[], Mapping[str, Any]]
    train: Callable[[Path], None]
    save: Callable[[Path], Saved]
    seeds: Sequence[int] = (0,)
    depends: Sequence[str] = ()
    code_paths: Sequence[str] = BARRIER_CODE

    @property
    def command(self) -> str:
        return f"nextword results run {self.name}"


# --------------------------------------------------------------------------- wall time bookkeeping
def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _timed(workdir: Path, fn: Callable[[], None]) -> None:
    """Run ``fn`` and append ``{"start", "end"}`` to ``workdir/wall.json`` (an open session if it dies)."""
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / "wall.json"
    sessions = json.loads(path.read_text())["sessions"] if path.exists() else []
    sessions.append({"start": _now(), "end": None})
    path.write_text(json.dumps({"sessions": sessions}, indent=1))
    fn()
    sessions[-1]["end"] = _now()
    path.write_text(json.dumps({"sessions": sessions}, indent=1))


def wall_time(workdir: Path) -> float:
    """Seconds summed over the recorded sessions; a session without an end stops at ``results.json``'s mtime."""
    path = workdir / "wall.json"
    if not path.exists():
        return float("nan")
    total = 0.0
    res = workdir / "results.json"
    for s in json.loads(path.read_text())["sessions"]:
        start = _dt.datetime.fromisoformat(s["start"]).timestamp()
        end = (
            _dt.datetime.fromisoformat(s["end"]).timestamp()
            if s["end"]
            else (res.stat().st_mtime if res.exists() else start)
        )
        total += max(end - start, 0.0)
    return total


# --------------------------------------------------------------------------- §7 barrier experiments
def _cpu_arm(lam: float, seed: int = 0):
    from nextword.torch.barrier.config import preset

    return preset("cpu", lambda_margin=lam, seed=seed)


def _train_arm(lam: float, seed: int = 0) -> Callable[[Path], None]:
    def run(workdir: Path) -> None:
        from nextword.torch.barrier.train import train_or_load

        _timed(workdir, lambda: train_or_load(_cpu_arm(lam, seed), workdir, resume=True, progress=False))

    return run


def _save_arm(workdir: Path) -> Saved:
    res = json.loads((workdir / "results.json").read_text())
    if not res.get("finished"):
        raise RuntimeError(f"{workdir} is not finished ({res.get('steps')}/{res.get('total_steps')} steps)")
    hist = res["history"]
    wall = wall_time(workdir)
    data = {
        k: res[k]
        for k in (
            "final_val_bpc",
            "final_train_bpc",
            "final_train_loss",
            "steps",
            "total_steps",
            "steps_per_epoch",
            "data",
            "model_params",
            "diagnostics",
            "history",
        )
    }
    data["steps_per_second"] = res["steps"] / wall if wall == wall and wall > 0 else None
    curves = {k: [h[k] for h in hist] for k in ("step", "epoch", "train_bpc", "val_bpc", "train_margin")}
    from nextword.torch.training.checkpoint import export_weights

    return Saved(data, curves, {"model.pt": export_weights(workdir)})


def _save_arm_numbers(workdir: Path) -> Saved:
    """:func:`_save_arm` without the weights (a second seed's numbers; the notebooks analyse seed 0's model)."""
    saved = _save_arm(workdir)
    return Saved(saved.data, saved.curves)


def _robustness_config() -> dict:
    from nextword.torch.barrier.config import preset

    cfg = preset("cpu")
    return {
        "arms": {"barrier_ce": _cpu_arm(0.0).to_dict(), "barrier_margin": _cpu_arm(0.05).to_dict()},
        "sigmas": list(cfg.noise_sigmas),
        "draws": cfg.noise_draws,
        "seed": cfg.seed,
        "eval_windows": 128,
    }


def _train_robustness(workdir: Path) -> None:
    """Fig. 7.5's probe on the trained pair, at absolute σ and at σ rescaled to each arm's embedding RMS.

    ``relative`` uses σ · RMS(E_arm) / RMS(E_ce): equal noise relative to the embedding scale, equal to
    the absolute grid for the CE arm (a penalty that grows the embeddings otherwise looks robust).
    """

    def run() -> None:
        from nextword.torch.training.data import eval_windows, load_char_data
        from nextword.torch.training.checkpoint import save_json
        from nextword.torch.barrier.train import load_checkpoint
        from nextword.torch.barrier.robustness import embedding_rms, noise_curve

        cfg = _robustness_config()
        models = {arm: load_checkpoint(runs_root() / arm) for arm in ("barrier_ce", "barrier_margin")}
        rms = {arm: embedding_rms(m[0]) for arm, m in models.items()}
        out: dict[str, Any] = {"finished": True, "embedding_rms": rms, "absolute": {}, "relative": {}}
        for arm, (gpt, _, tc, _) in models.items():
            data = load_char_data(tc.data, max_chars=tc.max_chars)
            vx, vy = eval_windows(data.val, block_size=tc.block_size, max_windows=cfg["eval_windows"])
            out["absolute"][arm] = noise_curve(gpt, vx, vy, sigmas=cfg["sigmas"], draws=cfg["draws"], seed=cfg["seed"])
            scale = rms[arm] / rms["barrier_ce"]
            out["relative"][arm] = (
                out["absolute"][arm]
                if arm == "barrier_ce"
                # the same σ for the CE arm
                else noise_curve(
                    gpt, vx, vy, sigmas=[s * scale for s in cfg["sigmas"]], draws=cfg["draws"], seed=cfg["seed"]
                )
            )
        save_json(out, workdir / "results.json")

    if not (workdir / "results.json").exists():
        _timed(workdir, run)


def _save_robustness(workdir: Path) -> Saved:
    res = json.loads((workdir / "results.json").read_text())
    data = {k: res[k] for k in ("embedding_rms", "absolute", "relative")}
    curves = {"sigmas": res["absolute"]["barrier_ce"]["sigmas"]}
    for kind in ("absolute", "relative"):
        for arm, c in res[kind].items():
            curves[f"{kind}_{arm}_bpc_mean"] = c["bpc_mean"]
            curves[f"{kind}_{arm}_degradation"] = c["degradation"]
    return Saved(data, curves)


def _sweep_config():
    """The λ path at the CPU tier: a smaller, shorter schedule than the two arms (five times the arms' cost
    does not fit the shared machine): d_model=64, T=128, batch 32, 250 steps, one evaluation at the end."""
    from nextword.torch.barrier.config import preset
    from nextword.torch.models.gpt import SmallGPTConfig

    return preset(
        "cpu",
        model=SmallGPTConfig(max_len=128, num_layers=2, num_heads=4, d_model=64),
        batch_size=32,
        steps=250,
        eval_every=250,
        lr=3e-3,
        margin_positions=16,
        checkpoint_every=50,
    )


def _train_sweep(workdir: Path) -> None:
    from nextword.torch.barrier.sweep import run_sweep

    _timed(workdir, lambda: run_sweep(_sweep_config(), SWEEP_LAMBDAS, workdir, sigma=0.3, device="cpu", progress=False))


def _save_sweep(workdir: Path) -> Saved:
    """The sweep table, plus each λ's degradation at σ = 0.3 rescaled to its embedding RMS (vs. λ = 0)."""
    from nextword.torch.training.data import eval_windows, load_char_data
    from nextword.torch.barrier.train import load_checkpoint
    from nextword.torch.barrier.robustness import noise_curve
    from nextword.torch.barrier.sweep import lambda_dir

    table = json.loads((workdir / "sweep.json").read_text())
    rows, sigma = table["rows"], table["sigma"]
    cfg = _sweep_config()
    data = load_char_data(cfg.data, max_chars=cfg.max_chars)
    vx, vy = eval_windows(data.val, block_size=cfg.block_size, max_windows=cfg.eval_windows)
    rms0 = rows[0]["embedding_rms"]
    for r in rows:
        gpt = load_checkpoint(lambda_dir(workdir, r["lambda"]))[0]
        r["relative_sigma"] = sigma * r["embedding_rms"] / rms0
        r["relative_degradation"] = noise_curve(
            gpt, vx, vy, sigmas=[0.0, r["relative_sigma"]], draws=cfg.noise_draws, seed=cfg.seed
        )["degradation"][1]
    data_out = {
        "sigma": sigma,
        "rows": rows,
        "histories": {
            f"{r['lambda']:g}": json.loads((lambda_dir(workdir, r["lambda"]) / "results.json").read_text())["history"]
            for r in rows
        },
    }
    keys = (
        "lambda",
        "bpc",
        "bpc_sigma",
        "degradation",
        "relative_degradation",
        "entropy",
        "snr",
        "normalised_var",
        "trace_sigma_A",
        "margin",
        "embedding_rms",
    )
    curves = {k: [r.get(k, float("nan")) for r in rows] for k in keys}
    return Saved(data_out, curves)


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


EXPERIMENTS: dict[str, Experiment] = {
    e.name: e
    for e in (
        Experiment(
            "barrier_ce",
            "§7.2 / Fig. 7.4: the cross-entropy arm (λ_m = 0) at the cpu tier",
            lambda: _cpu_arm(0.0).to_dict(),
            _train_arm(0.0),
            _save_arm,
        ),
        Experiment(
            "barrier_margin",
            "§7.2 / Fig. 7.4: the margin arm (λ_m = 0.05) at the cpu tier",
            lambda: _cpu_arm(0.05).to_dict(),
            _train_arm(0.05),
            _save_arm,
        ),
        Experiment(
            "barrier_ce_seed1",
            "§7.2 / Fig. 7.4: the cross-entropy arm again, seed 1 (do the §7 findings hold across seeds?)",
            lambda: _cpu_arm(0.0, seed=1).to_dict(),
            _train_arm(0.0, seed=1),
            _save_arm_numbers,
        ),
        Experiment(
            "barrier_margin_seed1",
            "§7.2 / Fig. 7.4: the margin arm again, seed 1",
            lambda: _cpu_arm(0.05, seed=1).to_dict(),
            _train_arm(0.05, seed=1),
            _save_arm_numbers,
        ),
        Experiment(
            "barrier_robustness",
            "§7.3 / Fig. 7.5: BPC under embedding noise of the trained pair",
            _robustness_config,
            _train_robustness,
            _save_robustness,
            depends=("barrier_ce", "barrier_margin"),
        ),
        Experiment(
            "barrier_sweep",
            "§7.4 / Table 1 / Fig. 7.6: the λ path (smaller, shorter schedule)",
            lambda: {**_sweep_config().to_dict(), "lambdas": list(SWEEP_LAMBDAS), "sigma": 0.3},
            _train_sweep,
            _save_sweep,
        ),
    )
}


# --------------------------------------------------------------------------- driver
def run_experiment(exp: Experiment, *, force: bool = False, results_dir: str | os.PathLike | None = None) -> str:
    """Train (resumably) and save one experiment unless it is current; returns what happened."""
    from nextword.provenance import is_current, save_result

    config = exp.config()
    if not force and is_current(exp.name, config, results_dir, code_paths=exp.code_paths, renames=MOVED):
        return "current"
    workdir = runs_root() / exp.name
    exp.train(workdir)
    saved = exp.save(workdir)
    path = save_result(
        exp.name,
        saved.data,
        command=exp.command,
        config=config,
        seeds=exp.seeds,
        wall_time_s=wall_time(workdir),
        curves=saved.curves,
        code_paths=exp.code_paths,
        results_dir=results_dir,
        files=saved.files,
    )
    return f"saved {path}"


def in_order(names: Sequence[str]) -> list[str]:
    """``names`` with what each depends on first (KeyError for an unknown name)."""
    out: list[str] = []

    def visit(n: str) -> None:
        if n not in EXPERIMENTS:
            raise KeyError(n)
        for d in EXPERIMENTS[n].depends:
            visit(d)
        if n not in out:
            out.append(n)

    for n in names:
        visit(n)
    return out
