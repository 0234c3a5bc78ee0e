"""Saved results with provenance: what produced a number, where, and with which code.

Every result the book draws a conclusion from lives under ``book/results/<experiment>/``:

- ``result.json`` — the numbers (``data``) and their provenance: the exact ``command``, the git
  ``commit`` of the code that produced them (and whether the tree was dirty), the ``code``
  (a digest of what each source file computes, :func:`code_digests`), the ``config``,
  the ``seeds``, the ``wall_time_s``, the ``machine`` (CPU model, threads, numpy/torch versions)
  and the ``created`` time (UTC);
- optionally ``curves.npz`` — small arrays (learning curves, sweeps) saved beside it.

``NEXTWORD_RESULTS_DIR`` overrides the directory (tests use a temporary one).

>>> import tempfile, os
>>> with tempfile.TemporaryDirectory() as tmp:
...     path = save_result("demo", {"loss": 1.5}, command="python demo.py", config={"steps": 3},
...                        seeds=[0], wall_time_s=0.1, results_dir=tmp)
...     saved = load_result("demo", results_dir=tmp)
>>> saved["data"]["loss"], sorted(set(PROVENANCE_FIELDS) - set(saved))
(1.5, [])
"""

from __future__ import annotations

import datetime as _dt
import functools
import hashlib
import io
import json
import os
import platform
import re
import subprocess
import tokenize
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "PROVENANCE_FIELDS",
    "results_root",
    "machine_info",
    "git_commit",
    "code_digests",
    "changed_code",
    "save_result",
    "load_result",
    "load_curves",
    "is_current",
]

#: Largest file :func:`save_result` copies beside a result (a weights-only ``model.pt``: 2 MiB).
MAX_FILE_BYTES = 2 * 1024 * 1024

#: Fields every ``result.json`` carries besides ``data``.
PROVENANCE_FIELDS = ("command", "commit", "dirty", "config", "seeds", "wall_time_s", "machine", "created")

_REPO_ROOT = Path(__file__).resolve().parents[1]


def results_root(results_dir: str | os.PathLike | None = None) -> Path:
    """The folder holding saved results: ``results_dir``, else ``$NEXTWORD_RESULTS_DIR``, else ``book/results``."""
    if results_dir is not None:
        return Path(results_dir)
    env = os.environ.get("NEXTWORD_RESULTS_DIR")
    return Path(env) if env else _REPO_ROOT / "book" / "results"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_info() -> dict[str, Any]:
    """CPU model, core count, thread settings and library versions of this machine."""
    info: dict[str, Any] = {
        "cpu": _cpu_model(),
        "arch": platform.machine(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
    }
    try:  # torch is optional; record it when present
        import torch

        info["torch"] = torch.__version__
        info["torch_threads"] = torch.get_num_threads()
        info["cuda"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    except ImportError:
        info["torch"] = None
    return info


def git_commit(paths: Sequence[str | os.PathLike] = (), repo: str | os.PathLike | None = None) -> tuple[str, bool]:
    """``(commit, dirty)``: the last commit touching ``paths`` (all of HEAD if empty) and whether they have
    uncommitted changes; ``("unknown", True)`` outside a git checkout. ``$NEXTWORD_GIT_COMMIT`` (a 40-digit
    hash, with ``$NEXTWORD_GIT_DIRTY=0`` for a clean copy) overrides both: a tree copied to another machine
    (a lent GPU) may carry a ``.git`` that is not the one it was copied from."""
    repo = Path(repo) if repo is not None else _REPO_ROOT
    rel = [str(p) for p in paths]
    stated = os.environ.get("NEXTWORD_GIT_COMMIT", "")
    if len(stated) == 40 and all(c in "0123456789abcdef" for c in stated):  # a copied tree: the copier knows
        return stated, os.environ.get("NEXTWORD_GIT_DIRTY", "1") != "0"
    try:
        commit = subprocess.run(
            ["git", "log", "-1", "--format=%H", "--", *rel], cwd=repo, check=True, capture_output=True, text=True
        ).stdout.strip()
        status = subprocess.run(
            ["git", "status", "--porcelain", "--", *rel], cwd=repo, check=True, capture_output=True, text=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown", True
    return (commit or "unknown"), bool(status)


def _dotted(path: str) -> str:
    return path[: -len(".py")].replace("/", ".") if path.endswith(".py") else path.replace("/", ".")


def _apply_renames(text: str, renames: Mapping[str, str]) -> str:
    """``text`` with every moved module's path and dotted name replaced by its new one (longest first)."""
    for old in sorted(renames, key=len, reverse=True):
        new = renames[old]
        text = re.sub(re.escape(old) + r"(?![\w/])", new, text)
        text = re.sub(re.escape(_dotted(old)) + r"(?![\w.])", _dotted(new), text)
    return text


@functools.lru_cache(maxsize=1024)  # a pure function of the text; `results list` digests each shared file once
def _python_digest(source: str) -> str:
    r"""SHA-256 (first 16 hex digits) of the tokens that compute: comments, blank and continuation lines and docstrings dropped.

    So a file that only moved (its imports renamed by :func:`_apply_renames`), was reformatted or had
    its prose edited keeps its digest; any change to a statement, a name or a number changes it.

    >>> _python_digest("def f(x):\n    'Doc.'\n    return x + 1  # one\n") == _python_digest(
    ...     "def f(x):\n\n    return x + 1\n")
    True
    >>> _python_digest("def f(x):\n    return x + 1\n") == _python_digest("def f(x):\n    return x + 2\n")
    False
    """
    try:
        tokens = [
            t
            for t in tokenize.generate_tokens(io.StringIO(source).readline)
            if t.type not in (tokenize.COMMENT, tokenize.NL, tokenize.ENCODING)
        ]
    except (tokenize.TokenError, SyntaxError):  # not Python after all: its text counts
        return hashlib.sha256(source.encode()).hexdigest()[:16]
    kept: list[str] = []
    at_statement_start, skip_newline = True, False
    for i, tok in enumerate(tokens):
        if skip_newline and tok.type == tokenize.NEWLINE:
            skip_newline = False
            continue
        nxt = tokens[i + 1].type if i + 1 < len(tokens) else tokenize.ENDMARKER
        if tok.type == tokenize.STRING and at_statement_start and nxt in (tokenize.NEWLINE, tokenize.ENDMARKER):
            skip_newline = True  # a docstring (a bare string statement): prose, not computation
            continue
        names = {tokenize.NEWLINE: "<newline>", tokenize.INDENT: "<indent>", tokenize.DEDENT: "<dedent>"}
        kept.append(names.get(tok.type, tok.string))
        at_statement_start = tok.type in names
    return hashlib.sha256("\x00".join(kept).encode()).hexdigest()[:16]


def _git(args: Sequence[str], repo: Path) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def code_digests(
    paths: Sequence[str | os.PathLike],
    *,
    rev: str | None = None,
    renames: Mapping[str, str] | None = None,
    repo: str | os.PathLike | None = None,
) -> dict[str, str]:
    """``{path: digest}`` of what each file under ``paths`` computes (folders: their ``.py`` files).

    ``rev`` reads the files as they were at that git commit instead of the working tree. ``renames``
    (old path -> new path, e.g. ``{"nextword/torch/lm.py": "nextword/torch/models/lm.py"}``) names the
    files that moved since: each old file is keyed by its new path, and the old paths and dotted module
    names in every file's text are rewritten to the new ones before digesting, so code that only moved
    keeps its digests. A Python file's digest ignores comments, blank lines and docstrings
    (:func:`_python_digest`); any other file's is of its bytes. A path missing at ``rev`` raises
    ``FileNotFoundError``.
    """
    repo = Path(repo) if repo is not None else _REPO_ROOT
    renames = dict(renames or {})
    files: list[str] = []
    for p in (str(p) for p in paths):
        if rev is None:
            full = repo / p
            if full.is_dir():
                files += sorted(str(f.relative_to(repo)) for f in full.rglob("*.py"))
            elif full.is_file():
                files.append(p)
            else:
                raise FileNotFoundError(f"code path {p!r} is not in {repo}")
        else:
            try:
                listed = _git(["ls-tree", "-r", "--name-only", rev, "--", p], repo).split()
            except (OSError, subprocess.CalledProcessError) as err:
                raise FileNotFoundError(f"cannot list {p!r} at commit {rev}: {err}") from err
            if not listed:
                raise FileNotFoundError(f"code path {p!r} is not in commit {rev}")
            files += [f for f in listed if f == p or f.endswith(".py")]
    out: dict[str, str] = {}
    for f in files:
        if rev is None:
            text = (repo / f).read_text()
        else:
            try:
                text = _git(["show", f"{rev}:{f}"], repo)
            except (OSError, subprocess.CalledProcessError) as err:
                raise FileNotFoundError(f"cannot read {f!r} at commit {rev}: {err}") from err
        text = _apply_renames(text, renames)
        key = renames.get(f, f)
        out[key] = _python_digest(text) if f.endswith(".py") else hashlib.sha256(text.encode()).hexdigest()[:16]
    return out


def changed_code(
    saved: Mapping[str, Any],
    code_paths: Sequence[str | os.PathLike] | None = None,
    renames: Mapping[str, str] | None = None,
) -> list[str] | None:
    """The files whose computation differs between a saved record and the working tree ([] if none).

    ``code_paths``: where that code lives now (default: the record's own ``code_paths``, moved through
    ``renames``). A record with ``code`` digests is compared with them; an older record (a ``commit``
    only) has its files read at that commit, moved through ``renames``. ``None`` when the record's code
    cannot be read (unknown or unreachable commit, or a record saved from an uncommitted tree).
    """
    renames = dict(renames or {})
    now_paths = (
        list(code_paths)
        if code_paths is not None
        else [renames.get(str(p), str(p)) for p in saved.get("code_paths", ("nextword",))]
    )
    try:
        now = code_digests(now_paths, renames=renames)
    except FileNotFoundError:
        return None
    then = saved.get("code")
    if then is None:  # a record written before digests were kept: read its commit's files
        if saved.get("dirty", True) or not re.fullmatch(r"[0-9a-f]{40}", str(saved.get("commit", ""))):
            return None
        try:
            then = code_digests(saved.get("code_paths", ("nextword",)), rev=saved["commit"], renames=renames)
        except FileNotFoundError:
            return None
    return sorted(f for f in set(now) | set(then) if now.get(f) != then.get(f))


def _jsonable(value: Any) -> Any:
    """Plain JSON values; a non-finite float (an undefined ratio such as 0/0) becomes ``None`` (``null``).

    >>> _jsonable({"ratio": float("nan"), "x": np.float64(2.5), "xs": np.arange(2)})
    {'ratio': None, 'x': 2.5, 'xs': [0, 1]}
    """
    if isinstance(value, float | np.floating) and not np.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "__dataclass_fields__"):
        import dataclasses

        return _jsonable(dataclasses.asdict(value))
    return value


def save_result(
    name: str,
    data: Mapping[str, Any],
    *,
    command: str,
    config: Mapping[str, Any] | Any,
    seeds: Sequence[int],
    wall_time_s: float,
    curves: Mapping[str, np.ndarray] | None = None,
    code_paths: Sequence[str | os.PathLike] = ("nextword",),
    results_dir: str | os.PathLike | None = None,
    files: Mapping[str, str | os.PathLike] | None = None,
) -> Path:
    """Write ``<results>/<name>/result.json`` (and ``curves.npz`` if ``curves``); return the JSON path.

    ``files`` (name in the folder -> source path) are copied beside it, each at most
    :data:`MAX_FILE_BYTES` (a ValueError naming the file otherwise, raised before anything is written).

    The file is strict JSON: a non-finite number (NaN, ±inf) is written as ``null``.
    ``config`` may be a mapping or a dataclass; ``code_paths`` (relative to the repository) name the code that
    produced the numbers: its last commit is recorded as ``commit`` and what each file computes as ``code``
    (:func:`code_digests`), which :func:`is_current` compares against to skip finished runs.
    """
    if not isinstance(name, str) or not name.strip("/") or ".." in Path(name).parts:
        raise ValueError(f"name must be a folder name under the results directory, got {name!r}")
    for target, source in (files or {}).items():
        if Path(source).stat().st_size > MAX_FILE_BYTES:
            raise ValueError(f"files[{target!r}] = {source} is larger than {MAX_FILE_BYTES} bytes; not saved")
    folder = results_root(results_dir) / name
    folder.mkdir(parents=True, exist_ok=True)
    commit, dirty = git_commit(code_paths)
    record = {
        "data": _jsonable(data),
        "command": command,
        "commit": commit,
        "dirty": dirty,
        "code_paths": [str(p) for p in code_paths],
        "code": code_digests(code_paths),
        "config": _jsonable(config),
        "seeds": [int(s) for s in seeds],
        "wall_time_s": float(wall_time_s),
        "machine": machine_info(),
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
    path = folder / "result.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(record, indent=1, sort_keys=False, allow_nan=False) + "\n")  # strict JSON
    tmp.replace(path)  # atomic: an interrupted write never leaves half a file
    if curves:
        np.savez_compressed(folder / "curves.npz", **{k: np.asarray(v) for k, v in curves.items()})
    for target, source in (files or {}).items():
        (folder / target).write_bytes(Path(source).read_bytes())
    return path


def load_result(name: str, results_dir: str | os.PathLike | None = None) -> dict[str, Any]:
    """Read ``<results>/<name>/result.json``; a missing file names the command that makes it (``make results``)."""
    path = results_root(results_dir) / name / "result.json"
    if not path.is_file():
        raise FileNotFoundError(f"no saved result {name!r} at {path}; `make results` produces the saved runs")
    return json.loads(path.read_text())


def load_curves(name: str, results_dir: str | os.PathLike | None = None) -> dict[str, np.ndarray]:
    """The arrays of ``<results>/<name>/curves.npz`` (no pickles are loaded)."""
    path = results_root(results_dir) / name / "curves.npz"
    with np.load(path, allow_pickle=False) as f:
        return {k: f[k] for k in f.files}


def is_current(
    name: str,
    config: Mapping[str, Any] | Any,
    results_dir: str | os.PathLike | None = None,
    *,
    code_paths: Sequence[str | os.PathLike] | None = None,
    renames: Mapping[str, str] | None = None,
) -> bool:
    """True when ``name`` is saved with the same ``config`` by code that still computes the same thing.

    The code is compared file by file (:func:`changed_code`): what it computes, not where it lives or
    which commit last touched it, so code that only moved (``renames``: old path -> new path; its new
    place in ``code_paths``) or whose prose changed keeps the saved run current, and an uncommitted edit
    that changes a statement makes it stale.
    """
    try:
        saved = load_result(name, results_dir)
    except FileNotFoundError:
        return False
    if saved.get("config") != _jsonable(config):
        return False
    return changed_code(saved, code_paths, renames) == []
