"""Fingerprints of saved runs: the first steps of a run's computation, replayed on one CPU thread in seconds.

A fingerprint is what a run's code computes for the run's own configuration over its first few
optimiser steps (:data:`~nextword.torch.runs.barrier_runs.FINGERPRINT_STEPS`), and its measurements on a
few validation windows: the loss of the last step, a SHA-256 of the weights and each weight tensor's sum,
validation bits per character, noise curves, the rows of a per-seed run. ``nextword results verify``
computes it twice, with the code of the run's own commit (a copy of that commit, ``git archive``) and with
the working tree, on this machine, one thread each, and compares: the same bits mean the code that
changed since the run still computes the same numbers on those steps (:mod:`~nextword.torch.runs.registry`
records the verdict in the run's ``result.json``).

This file is run as a script against either copy of the package (``python fingerprint.py PROCEDURE
PARAMS``, with ``PYTHONPATH`` at the copy), so it imports ``nextword`` only inside the procedures, through
:func:`load`, which follows the modules and names that moved since (``NEXTWORD_MOVED``: the registry's
:data:`~nextword.torch.runs.moved.MOVED` and :data:`~nextword.torch.runs.moved.MOVED_NAMES`, as JSON).

>>> compare({"a": [1.0, 2.0]}, {"a": [1.0, 2.0]})
(True, 0.0)
>>> compare({"a": [1.0, 2.0]}, {"a": [1.0, 2.5]})
(False, 0.2)
>>> compare({"a": 1e-9}, {"a": 2e-9})                  # below 1 the difference counts as it is
(False, 1e-09)
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import json
import os
import sys
import tempfile
from collections.abc import Callable
from typing import Any

__all__ = ["PROCEDURES", "compare", "load", "main"]


def load(module: str, name: str) -> Any:
    """``module.name`` as this copy of the package has it, following moves (``NEXTWORD_MOVED``)."""
    moved = json.loads(os.environ.get("NEXTWORD_MOVED", "{}"))
    modules = {
        old.removesuffix(".py").replace("/", "."): new.removesuffix(".py").replace("/", ".")
        for old, new in moved.get("modules", {}).items()
    }
    names = {new: old for old, new in moved.get("names", {}).items()}  # new dotted name -> old one
    candidates = [(module, name)]
    candidates += [(old, name) for old, new in modules.items() if new == module]
    if f"{module}.{name}" in names:
        old_module, _, old_name = names[f"{module}.{name}"].rpartition(".")
        candidates += [(old_module, old_name)]
        candidates += [(old, old_name) for old, new in modules.items() if new == old_module]
    errors = []
    for mod, attr in candidates:
        try:
            return getattr(importlib.import_module(mod), attr)
        except (ImportError, AttributeError) as err:
            errors.append(f"{mod}.{attr}: {err}")
    raise ImportError(f"cannot find {module}.{name} in this copy: {'; '.join(errors)}")


# ------------------------------------------------------------------------------------------- values
def _weights(*modules) -> dict[str, Any]:
    """SHA-256 of every parameter and buffer (in order) and each tensor's sum (float64), per module."""
    h = hashlib.sha256()
    sums = {}
    for i, m in enumerate(modules):
        for name, t in m.state_dict().items():
            t = t.detach().cpu().contiguous()
            h.update(name.encode())
            h.update(t.numpy().tobytes())
            sums[f"{i}.{name}"] = float(t.double().sum())
    return {"weights_sha256": h.hexdigest(), "weight_sums": sums}


def _arrays(arrays: dict[str, Any]) -> dict[str, Any]:
    """A SHA-256 of named arrays (float64, in key order) and each array's sum."""
    import numpy as np

    h = hashlib.sha256()
    sums = {}
    for k in sorted(arrays):
        a = np.asarray(arrays[k], dtype=np.float64)
        h.update(k.encode())
        h.update(a.tobytes())
        sums[k] = float(a.sum())
    return {"arrays_sha256": h.hexdigest(), "array_sums": sums}


def _plain(value: Any) -> Any:
    """JSON values (numpy scalars and arrays as numbers and lists)."""
    return json.loads(json.dumps(value, default=lambda v: v.tolist() if hasattr(v, "tolist") else str(v)))


def _dataclass(cls: type, values: dict[str, Any], **changes: Any) -> Any:
    """``cls(**values)`` with lists back to tuples where the field's default is a tuple, and nested configs."""
    kw = {}
    for f in dataclasses.fields(cls):
        if f.name not in values:
            continue
        v = values[f.name]
        default = f.default if f.default is not dataclasses.MISSING else None
        if f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
            default = f.default_factory()  # type: ignore[misc]
        if dataclasses.is_dataclass(default) and isinstance(v, dict):
            v = _dataclass(type(default), v)
        elif isinstance(default, tuple) and isinstance(v, list):
            v = tuple(v)
        kw[f.name] = v
    return dataclasses.replace(cls(**kw), **changes)


# --------------------------------------------------------------------------------------- procedures
def _trained_gpt(config: dict[str, Any], steps: int, workdir: str):
    """The first ``steps`` optimiser steps of a §7 run; ``(values, gpt, cfg, (vx, vy))`` on 2 validation windows."""
    TrainConfig = load("nextword.torch.barrier.config", "TrainConfig")
    train = load("nextword.torch.barrier.train", "train")
    load_checkpoint = load("nextword.torch.barrier.train", "load_checkpoint")
    load_char_data = load("nextword.torch.training.data", "load_char_data")
    eval_windows = load("nextword.torch.training.data", "eval_windows")
    evaluate_bpc = load("nextword.torch.barrier.robustness", "evaluate_bpc")

    cfg = TrainConfig.from_dict(config)
    res = train(cfg, workdir, device="cpu", max_steps_this_run=steps, progress=False)
    gpt, prior = load_checkpoint(workdir)[:2]
    data = load_char_data(cfg.data, max_chars=cfg.max_chars)
    vx, vy = eval_windows(data.val, block_size=cfg.block_size, max_windows=2)
    values = {
        "steps": res["steps"],
        "final_train_loss": res["final_train_loss"],
        "val_bpc": evaluate_bpc(gpt, vx, vy),
        **_weights(gpt, prior),
    }
    return values, gpt, cfg, (vx, vy)


def barrier_train(p: dict[str, Any]) -> dict[str, Any]:
    """A §7 arm: its first ``steps`` steps, weights, and validation BPC on 2 windows."""
    with tempfile.TemporaryDirectory() as tmp:
        return _trained_gpt(p["config"], p["steps"], tmp)[0]


def barrier_sweep(p: dict[str, Any]) -> dict[str, Any]:
    """A λ path: each λ's first ``steps`` steps, and its BPC at σ = 0 and ``sigma`` (1 draw, 2 windows)."""
    noise_curve = load("nextword.torch.barrier.robustness", "noise_curve")
    out = {}
    for config in p["configs"]:
        with tempfile.TemporaryDirectory() as tmp:
            values, gpt, cfg, (vx, vy) = _trained_gpt(config, p["steps"], tmp)
        curve = noise_curve(gpt, vx, vy, sigmas=[0.0, p["sigma"]], draws=1, seed=cfg.seed)
        out[f"{cfg.lambda_margin:g}"] = {**values, "bpc_mean": curve["bpc_mean"]}
    return out


def barrier_noise(p: dict[str, Any]) -> dict[str, Any]:
    """§7.3's probe on saved models (``models``: paths of ``model.pt``): BPC under noise, 1 draw, few windows."""
    import torch

    TrainConfig = load("nextword.torch.barrier.config", "TrainConfig")
    build = load("nextword.torch.barrier.train", "build")
    load_char_data = load("nextword.torch.training.data", "load_char_data")
    eval_windows = load("nextword.torch.training.data", "eval_windows")
    noise_curve = load("nextword.torch.barrier.robustness", "noise_curve")
    out = {}
    for path in p["models"]:
        ck = torch.load(path, map_location="cpu", weights_only=True)
        cfg = TrainConfig.from_dict(ck["config"])
        gpt, prior = build(cfg, ck["vocab_size"], torch.device("cpu"))
        gpt.load_state_dict(ck["model"])
        gpt.eval()
        data = load_char_data(cfg.data, max_chars=cfg.max_chars)
        vx, vy = eval_windows(data.val, block_size=cfg.block_size, max_windows=p["windows"])
        curve = noise_curve(gpt, vx, vy, sigmas=p["sigmas"], draws=1, seed=cfg.seed)
        rms = float(gpt.wte.weight.detach().pow(2).mean().sqrt())
        out[os.path.basename(os.path.dirname(path))] = {"bpc_mean": curve["bpc_mean"], "embedding_rms": rms}
    return out


def table1(p: dict[str, Any]) -> dict[str, Any]:
    """Part 3's Table 1, seed 0, for the first ``steps`` steps of both protocols."""
    StickyExperimentConfig = load("nextword.theory.dynamics.sticky", "StickyExperimentConfig")
    ProtocolConfig = load("nextword.theory.dynamics.sticky", "ProtocolConfig")
    table1_seed = load("nextword.theory.dynamics.table1", "table1_seed")

    values = dict(p["config"])
    protocol = _dataclass(ProtocolConfig, values.pop("protocol"), steps=p["steps"])
    cfg = _dataclass(StickyExperimentConfig, values, protocol=protocol)
    row, curves = table1_seed(cfg, 0)
    return {"row": _plain(row), **_arrays(curves)}


def fig628(p: dict[str, Any]) -> dict[str, Any]:
    """Fig. 6.28, seed 0: the four variants after ``steps`` steps, scored on 4 test windows."""
    Fig628Config = load("nextword.torch.probes.fig628", "Fig628Config")
    fig628_seed = load("nextword.torch.probes.fig628", "fig628_seed")

    run = fig628_seed(_dataclass(Fig628Config, p["config"], steps=p["steps"], num_windows=4), 0)
    return {**_arrays(run.curves), **_weights(*(run.models[v] for v in sorted(run.models)))}


def hybrid(p: dict[str, Any]) -> dict[str, Any]:
    """Page 5.4's hybrid SVFlow, seed 0, after ``steps`` steps: the measurements and the training log."""
    HybridConfig = load("nextword.torch.svflow.hybrid", "HybridConfig")
    hybrid_seed = load("nextword.torch.svflow.hybrid_runs", "hybrid_seed")

    row, curves = hybrid_seed(_dataclass(HybridConfig, p["config"], steps=p["steps"]), 0)
    return {"row": _plain(row), **_arrays(curves)}


def svflow_lm(p: dict[str, Any]) -> dict[str, Any]:
    """Liao §6's character LM, seed 0: 2 checkpoints of ``steps`` steps, the prefix-shuffling tables on 2 sequences."""
    import numpy as np

    SVFlowLMConfig = load("nextword.torch.svflow.lm", "SVFlowLMConfig")
    train_svflow_lm = load("nextword.torch.svflow.lm", "train_svflow_lm")
    shuffle_table_arrays = load("nextword.torch.svflow.lm", "shuffle_table_arrays")
    prefix_shuffling_experiment = load("nextword.torch.svflow.probe", "prefix_shuffling_experiment")
    load_char_data = load("nextword.torch.training.data", "load_char_data")

    cfg = _dataclass(
        SVFlowLMConfig, p["config"], steps_per_checkpoint=p["steps"], n_checkpoints=2, n_eval_seqs=2, val_chars=2000
    )
    data = load_char_data("shakespeare")
    train, val = data.train.numpy(), data.val.numpy()
    ckpts, losses, val_losses = train_svflow_lm(cfg, train, val, data.vocab.vocab_size, seed=0)
    seqs = val[: cfg.n_eval_seqs * (cfg.seq_len + 1)].reshape(cfg.n_eval_seqs, cfg.seq_len + 1)
    tab = prefix_shuffling_experiment(ckpts[-1], seqs, cfg.ps, np.random.default_rng(0))
    return {
        "losses": losses,
        "val_losses": val_losses,
        **_arrays(shuffle_table_arrays(tab)),
        **_weights(ckpts[-1]),
    }


PROCEDURES: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    f.__name__: f for f in (barrier_train, barrier_sweep, barrier_noise, table1, fig628, hybrid, svflow_lm)
}


# ------------------------------------------------------------------------------------------- compare
def _numbers(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(_numbers(v, f"{prefix}{k}."))
        return out
    if isinstance(value, list):
        out = {}
        for i, v in enumerate(value):
            out.update(_numbers(v, f"{prefix}{i}."))
        return out
    return {prefix.rstrip("."): value}


def compare(then: dict[str, Any], now: dict[str, Any]) -> tuple[bool, float | None]:
    """``(bitwise, deviation)``: whether two fingerprints are the same values, and the largest difference of
    their numbers relative to their size, ``|a − b| / max(1, |a|, |b|)`` (a sum of weights near zero is not
    blown up; None when their layouts differ)."""
    if then == now:
        return True, 0.0
    a, b = _numbers(then), _numbers(now)
    if a.keys() != b.keys():
        return False, None
    worst = 0.0
    for k in a:
        x, y = a[k], b[k]
        if (
            isinstance(x, bool)
            or isinstance(y, bool)
            or not isinstance(x, (int, float))
            or not isinstance(y, (int, float))
        ):
            continue  # a digest: its numbers are compared one by one beside it
        if x != y:
            worst = max(worst, abs(x - y) / max(1.0, abs(x), abs(y)))
    return False, worst


def main(argv: list[str] | None = None) -> int:
    """``fingerprint.py PROCEDURE PARAMS_JSON``: print the fingerprint as one JSON line (one torch thread)."""
    argv = sys.argv[1:] if argv is None else argv
    import torch

    torch.set_num_threads(1)
    values = PROCEDURES[argv[0]](json.loads(argv[1]))
    print(json.dumps(_plain(values), sort_keys=True))
    return 0


if __name__ == "__main__":
    # run against a copy of the package: this file's own folder must not shadow anything on sys.path
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(os.path.abspath(__file__))]
    sys.exit(main())
