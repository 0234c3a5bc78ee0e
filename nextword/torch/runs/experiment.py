"""What a saved run of the registry is: one :class:`Experiment`, whatever computes it.

An experiment names the code that computes its numbers (``entry``: functions or modules, whose import
closure :func:`nextword.provenance.code_closure` reads from the code), its configuration, the device it
needs, and how it is made, one of two ways:

- **trained** — ``train(workdir)`` does the long, resumable work in ``runs/<name>/`` (checkpointed, so
  an interruption costs at most one checkpoint interval; the registry continues a run there only when it
  was made by the same code and configuration, see :mod:`~nextword.torch.runs.registry`) and ``save(workdir) -> Saved`` reads the
  finished run: the §7 barrier runs, the benchmarks, the GPU tier;
- **per seed** — ``run_seed(seed) -> (row, curves)`` runs one seed; every finished seed is kept at once
  in ``<results>/<name>/partial/``, and the rows are gathered (``summarise``) when all seeds are there:
  Part 3's Table 1, Fig. 6.28, the hybrid SVFlows, the SVFlow LM.

``fingerprint`` is a cheap replay of the run's first steps (:mod:`~nextword.torch.runs.fingerprint`)
that ``nextword results verify`` compares between the run's own commit and the working tree; ``timing``
marks numbers that are timings, which no replay can vouch for.

>>> exp = Experiment("demo", "a demo", "book/none.py", lambda: {"steps": 3}, ("nextword.provenance",),
...                  run_seed=lambda seed: ({"x": seed}, {}))
>>> exp.kind, exp.command, exp.device
('seeded', 'nextword results run demo', 'cpu')
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["Experiment", "Saved", "RunSeed", "runs_root", "timed", "wall_time", "REPO"]

REPO = Path(__file__).resolve().parents[3]

#: ``run_seed(seed) -> (row, curves)``; a row may name files to keep beside the result under ``"files"``.
RunSeed = Callable[[int], tuple[dict[str, Any], dict[str, np.ndarray]]]


@dataclass(frozen=True)
class Saved:
    """What a trained experiment's ``save`` returns: the numbers, small arrays, and files to copy beside them."""

    data: Mapping[str, Any]
    curves: Mapping[str, Any] = field(default_factory=dict)
    files: Mapping[str, Path] = field(default_factory=dict)  # name in book/results/<name>/ -> source


@dataclass(frozen=True)
class Experiment:
    """One saved run of ``book/results/<name>/``.

    ``description``: one line, what it is; ``reader``: the page that reads it; ``config()``: the
    configuration it is saved with (JSON values); ``entry``: the code that computes it
    (``"module"`` or ``"module:function"``, see :func:`nextword.provenance.code_closure`); ``train`` and
    ``save`` (trained) or ``run_seed`` and ``summarise`` (per seed); ``depends``: experiments whose saved
    results it reads; ``device``: ``"cpu"`` or ``"cuda"`` (the GPU tier, which this machine may lack);
    ``fingerprint``: ``(procedure, params)`` of its replay, or None; ``timing``: its numbers are timings.
    """

    name: str
    description: str
    reader: str
    config: Callable[[], Mapping[str, Any]]
    entry: tuple[str, ...]
    train: Callable[[Path], None] | None = None
    save: Callable[[Path], Saved] | None = None
    run_seed: RunSeed | None = None
    summarise: Callable[[list[dict[str, Any]]], dict[str, Any]] | None = None
    seeds: tuple[int, ...] = (0,)
    depends: tuple[str, ...] = ()
    device: str = "cpu"
    fingerprint: tuple[str, Mapping[str, Any]] | None = None
    timing: bool = False

    def __post_init__(self) -> None:
        if (self.train is None) != (self.save is None) or (self.train is None) == (self.run_seed is None):
            raise ValueError(f"{self.name}: give train and save (trained) or run_seed (per seed), not both")
        if self.device not in ("cpu", "cuda"):
            raise ValueError(f"{self.name}: device must be 'cpu' or 'cuda', got {self.device!r}")

    @property
    def kind(self) -> str:
        """``"trained"`` or ``"seeded"``."""
        return "trained" if self.train is not None else "seeded"

    @property
    def command(self) -> str:
        """The command that makes it (what ``result.json`` records)."""
        return f"nextword results run {self.name}"


def runs_root() -> Path:
    """Working directory of the long runs: ``$NEXTWORD_RUNS_DIR`` or ``<repo>/runs`` (git-ignored)."""
    return Path(os.environ.get("NEXTWORD_RUNS_DIR", REPO / "runs"))


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def timed(workdir: Path, fn: Callable[[], Any]) -> None:
    """Run ``fn`` and append ``{"start", "end"}`` to ``workdir/wall.json`` (an open session if it dies)."""
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / "wall.json"
    sessions = json.loads(path.read_text())["sessions"] if path.exists() else []
    sessions.append({"start": _now(), "end": None})
    path.write_text(json.dumps({"sessions": sessions}, indent=1))
    fn()
    sessions[-1]["end"] = _now()
    path.write_text(json.dumps({"sessions": sessions}, indent=1))


def wall_time(workdir: Path, done_file: str = "results.json") -> float:
    """Seconds summed over the recorded sessions; a session without an end stops at ``done_file``'s mtime."""
    path = workdir / "wall.json"
    if not path.exists():
        return float("nan")
    total = 0.0
    res = workdir / done_file
    for s in json.loads(path.read_text())["sessions"]:
        start = _dt.datetime.fromisoformat(s["start"]).timestamp()
        end = (
            _dt.datetime.fromisoformat(s["end"]).timestamp()
            if s["end"]
            else (res.stat().st_mtime if res.exists() else start)
        )
        total += max(end - start, 0.0)
    return total


def jsonable(value: Any) -> Any:
    """``value`` as plain JSON values (numpy scalars as numbers, anything else as its string)."""
    return json.loads(json.dumps(value, default=lambda v: v.item() if isinstance(v, np.generic) else str(v)))


def ordered(names: Sequence[str], depends: Mapping[str, Sequence[str]]) -> list[str]:
    """``names`` with what each depends on first (KeyError for an unknown name).

    >>> ordered(["b"], {"a": (), "b": ("a",)})
    ['a', 'b']
    """
    out: list[str] = []

    def visit(n: str) -> None:
        for d in depends[n]:
            visit(d)
        if n not in out:
            out.append(n)

    for n in names:
        visit(n)
    return out
