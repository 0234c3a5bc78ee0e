"""Saved results with provenance: what produced a number, where, and with which code.

Every result the book draws a conclusion from lives under ``book/results/<experiment>/``:

- ``result.json`` — the numbers (``data``) and their provenance: the exact ``command``, the git
  ``commit`` of the code that produced them (and whether the tree was dirty), the ``code_entry``
  (the functions or modules that compute the numbers) and the ``code`` of their import closure (a
  digest of what each function and module computes, :func:`code_closure`), the ``config``, the
  ``seeds``, the ``wall_time_s``, the ``machine`` (CPU model, threads, numpy/torch versions) and the
  ``created`` time (UTC);
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

import ast
import datetime as _dt
import functools
import hashlib
import importlib.metadata
import io
import json
import os
import platform
import re
import subprocess
import sys
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
    "code_closure",
    "closure_digest",
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
    torch = sys.modules.get("torch")  # recorded when the run imported it; this module never imports torch
    if torch is not None:
        info["torch"] = torch.__version__
        info["torch_threads"] = torch.get_num_threads()
        info["cuda"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    else:
        try:
            info["torch"] = importlib.metadata.version("torch")
        except importlib.metadata.PackageNotFoundError:
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


class _Tree:
    """The repository's files in the working tree (``rev`` None) or at a commit; each file read once."""

    def __init__(self, repo: Path, rev: str | None) -> None:
        self.repo, self.rev = repo, rev
        self._text: dict[str, str] = {}
        self._files: frozenset[str] | None = None
        if rev is not None:
            try:
                self._files = frozenset(_git(["ls-tree", "-r", "--name-only", rev], repo).split("\n"))
            except (OSError, subprocess.CalledProcessError) as err:
                raise FileNotFoundError(f"cannot list commit {rev}: {err}") from err

    def exists(self, path: str) -> bool:
        return (self.repo / path).is_file() if self._files is None else path in self._files

    def read(self, path: str) -> str:
        if path not in self._text:
            if self.rev is None:
                self._text[path] = (self.repo / path).read_text()
            else:
                try:
                    self._text[path] = _git(["show", f"{self.rev}:{path}"], self.repo)
                except (OSError, subprocess.CalledProcessError) as err:
                    raise FileNotFoundError(f"cannot read {path!r} at commit {self.rev}: {err}") from err
        return self._text[path]


@functools.lru_cache(maxsize=32)
def _tree_at(repo: Path, rev: str) -> _Tree:
    return _Tree(repo, rev)


def _module_file(tree: _Tree, module: str) -> str | None:
    """``a/b.py`` or ``a/b/__init__.py`` for the dotted ``module`` (None: not a module of the tree)."""
    base = module.replace(".", "/")
    return next((f for f in (base + ".py", base + "/__init__.py") if tree.exists(f)), None)


def _path_module(path: str) -> str:
    """The dotted module of a file path: ``a/b.py`` -> ``a.b``, ``a/b/__init__.py`` -> ``a.b``."""
    return path[: -len("/__init__.py")].replace("/", ".") if path.endswith("/__init__.py") else _dotted(path)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _walk(node: ast.AST):
    """``ast.walk`` without the bodies of ``if TYPE_CHECKING:`` blocks (imports that never run)."""
    todo = [node]
    while todo:
        n = todo.pop()
        yield n
        if isinstance(n, ast.If) and _is_type_checking(n.test):
            todo.extend(n.orelse)
            continue
        todo.extend(ast.iter_child_nodes(n))


def _imports(node: ast.AST, module: str, is_package: bool) -> set[str]:
    """Dotted names that the statements under ``node`` import, at any depth (functions included)."""
    out: set[str] = set()
    for n in _walk(node):
        if isinstance(n, ast.Import):
            out.update(a.name for a in n.names)
        elif isinstance(n, ast.ImportFrom):
            if n.level:
                parts = module.split(".") if is_package else module.split(".")[:-1]
                parts = parts[: len(parts) - (n.level - 1)]
                base = ".".join(parts + ([n.module] if n.module else []))
            else:
                base = n.module or ""
            out.add(base)
            out.update(f"{base}.{a.name}" for a in n.names if a.name != "*")
    return out


def _top_level(tree: ast.Module) -> tuple[dict[str, ast.AST], list[tuple[set[str], ast.AST]]]:
    """A module's top-level definitions by name (functions, classes, assigned names) and its top-level
    import statements with the names each binds."""
    defs: dict[str, ast.AST] = {}
    imports: list[tuple[set[str], ast.AST]] = []
    for n in tree.body:
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defs[n.name] = n
        elif isinstance(n, (ast.Assign, ast.AnnAssign)):
            for t in n.targets if isinstance(n, ast.Assign) else [n.target]:
                for name in ast.walk(t):
                    if isinstance(name, ast.Name):
                        defs[name.id] = n
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            bound = {a.asname or (a.name.split(".")[0] if isinstance(n, ast.Import) else a.name) for a in n.names}
            imports.append((bound, n))
    return defs, imports


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _reached(defs: dict[str, ast.AST], names: Sequence[str]) -> list[str]:
    """``names`` and every top-level definition of the module they refer to, transitively (sorted)."""
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        if name not in defs:
            raise KeyError(name)
        seen.add(name)
        todo.extend(n for n in _names(defs[name]) if n in defs)
    return sorted(seen)


#: Modules a closure does not follow: they record code and numbers and compute none of a run's numbers
#: (the training loop imports this one for its cache key, :func:`closure_digest`).
RECORDING_ONLY = ("nextword.provenance",)


def code_closure(
    entries: Sequence[str],
    *,
    rev: str | None = None,
    renames: Mapping[str, str] | None = None,
    repo: str | os.PathLike | None = None,
) -> dict[str, str]:
    """``{key: digest}`` of the code that ``entries`` run: their import closure, read from the code itself.

    An entry is a module (``"nextword.torch.barrier.train"``: the whole file) or functions of one
    (``"nextword.torch.runs.barrier_runs:_train_arm,_save_arm"``: those functions and every top-level
    function, class or assigned name of the module they refer to, transitively, each digested on its own,
    so the module's other experiments do not count). Every module they import — at any depth, inside
    functions too, but not under ``if TYPE_CHECKING:``; for an entry function, the module-level imports of
    the names it uses — is followed, whole files, with the ``__init__.py`` of every package on the way
    (importing ``a.b.c`` runs them). Only modules of ``nextword`` and of the entries' own top-level packages
    (``benchmarks``) count (torch, numpy are versions recorded in ``machine``). Keys are file paths, and ``path:name`` for the functions
    of an entry module; digests are :func:`_python_digest` (comments, blank lines and docstrings do not
    count).

    ``rev`` reads the repository at that git commit. ``renames`` (old path -> new path) names the modules
    that moved since: an entry's new path is looked up under its old one at ``rev``, every file is keyed
    by its new path, and the old paths and dotted names in its text are rewritten before digesting, so
    code that only moved keeps its digests. FileNotFoundError when an entry is not in the tree (at ``rev``:
    when its module is not; a function that is not there yet is left out, so it counts as changed).

    >>> sorted(code_closure(["nextword.positions:sinusoidal_encoding"]))[:3]
    ['nextword/__init__.py', 'nextword/_validate.py', 'nextword/positions.py:_check_base']
    """
    repo_path = Path(repo) if repo is not None else _REPO_ROOT
    tree = _Tree(repo_path, None) if rev is None else _tree_at(repo_path, rev)
    renames = dict(renames or {})
    roots = {e.split(":")[0].split(".")[0] for e in entries} | {"nextword"}  # a benchmark runs the library too

    def locate(module: str, entry: bool = False) -> str | None:
        """The file of ``module`` in ``tree``, also under its old path at ``rev`` (None: not followed)."""
        if module.split(".")[0] not in roots or (module in RECORDING_ONLY and not entry):
            return None
        found = _module_file(tree, module)
        if found is None:
            base = module.replace(".", "/")
            for new in (base + ".py", base + "/__init__.py"):
                olds = [o for o, n in renames.items() if n == new and tree.exists(o)]
                if olds:
                    return olds[0]
        return found

    def digest(text: str) -> str:
        return _python_digest(_apply_renames(text, renames))

    out: dict[str, str] = {}
    todo: list[str] = []

    def parents(module: str) -> None:
        parts = module.split(".")
        todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))

    for entry in entries:
        module, _, names = entry.partition(":")
        path = locate(module, entry=True)
        if path is None:
            raise FileNotFoundError(f"entry {entry!r}: module {module} is not in the tree")
        module = _path_module(path)  # its name at ``rev`` (relative imports resolve against it)
        parents(module)
        if not names:
            todo.append(module)
            continue
        text = tree.read(path)
        defs, imports = _top_level(ast.parse(text))
        key = renames.get(path, path)
        wanted = names.split(",")
        if rev is not None:  # at an older commit a function may not exist yet: it then counts as changed
            wanted = [n for n in wanted if n in defs]
        try:
            reached = _reached(defs, wanted)
        except KeyError as err:
            raise FileNotFoundError(f"entry {entry!r}: no top-level {err} in {path}") from None
        is_package = path.endswith("__init__.py")
        used: set[str] = set()
        for name in reached:
            out[f"{key}:{name}"] = digest(ast.get_source_segment(text, defs[name]) or "")
            todo.extend(_imports(defs[name], module, is_package))
            used |= _names(defs[name])
        for bound, node in imports:
            if bound & used:
                todo.extend(_imports(node, module, is_package))
    done: set[str] = set()
    while todo:
        module = todo.pop()
        if module in done:
            continue
        done.add(module)
        path = locate(module)
        if path is None:
            continue
        module = _path_module(path)
        parents(module)
        text = tree.read(path)
        out[renames.get(path, path)] = digest(text)
        try:
            parsed = ast.parse(text)
        except SyntaxError:
            continue
        todo.extend(_imports(parsed, module, path.endswith("__init__.py")))
    return dict(sorted(out.items()))


@functools.lru_cache(maxsize=64)
def closure_digest(entries: tuple[str, ...]) -> str:
    """One SHA-256 (first 16 hex digits) of :func:`code_closure` in the working tree: a cache key for runs
    (computed once per process)."""
    return hashlib.sha256(json.dumps(code_closure(entries)).encode()).hexdigest()[:16]


def changed_code(
    saved: Mapping[str, Any],
    entries: Sequence[str],
    renames: Mapping[str, str] | None = None,
) -> list[str] | None:
    """What changed between the code that produced a saved record and the working tree ([] if nothing).

    Compares :func:`code_closure` of ``entries`` now with the same closure read at the record's
    ``commit`` (its own ``code_entry`` when it has one), moved through ``renames``; the keys whose
    digests differ, or that are on one side only, are returned. A record whose commit cannot be read
    (unknown, unreachable, or saved from an uncommitted tree) is compared with the ``code`` digests it
    stored, when it has closure digests; otherwise the answer is ``None``: nobody can tell.
    """
    try:
        now = code_closure(entries, renames=renames)
    except FileNotFoundError:
        return None
    then_entries = saved.get("code_entry") or entries
    commit = str(saved.get("commit", ""))
    then = None
    if not saved.get("dirty", True) and re.fullmatch(r"[0-9a-f]{40}", commit):
        try:
            then = code_closure(then_entries, rev=commit, renames=renames)
        except FileNotFoundError:
            then = None
    if then is None and saved.get("code_entry"):
        then = saved.get("code")
    if then is None:
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
    entries: Sequence[str] = ("nextword",),
    results_dir: str | os.PathLike | None = None,
    files: Mapping[str, str | os.PathLike] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> Path:
    """Write ``<results>/<name>/result.json`` (and ``curves.npz`` if ``curves``); return the JSON path.

    ``files`` (name in the folder -> source path) are copied beside it, each at most
    :data:`MAX_FILE_BYTES` (a ValueError naming the file otherwise, raised before anything is written).

    The file is strict JSON: a non-finite number (NaN, ±inf) is written as ``null``.
    ``config`` may be a mapping or a dataclass; ``entries`` name the code that produced the numbers (functions
    or modules, :func:`code_closure`): the commit of the working tree is recorded as ``commit`` (``dirty``
    when a file of the closure has uncommitted changes), the entries as ``code_entry`` and what each file of
    their import closure computes as ``code``, which :func:`is_current` compares against. ``extra`` adds
    top-level fields (a run's ``fingerprint``).
    """
    if not isinstance(name, str) or not name.strip("/") or ".." in Path(name).parts:
        raise ValueError(f"name must be a folder name under the results directory, got {name!r}")
    for target, source in (files or {}).items():
        if Path(source).stat().st_size > MAX_FILE_BYTES:
            raise ValueError(f"files[{target!r}] = {source} is larger than {MAX_FILE_BYTES} bytes; not saved")
    folder = results_root(results_dir) / name
    folder.mkdir(parents=True, exist_ok=True)
    code = code_closure(entries)
    commit, _ = git_commit()
    _, dirty = git_commit(sorted({k.split(":")[0] for k in code}))
    record = {
        "data": _jsonable(data),
        "command": command,
        "commit": commit,
        "dirty": dirty,
        "code_entry": list(entries),
        "code": code,
        "config": _jsonable(config),
        "seeds": [int(s) for s in seeds],
        "wall_time_s": float(wall_time_s),
        "machine": machine_info(),
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        **_jsonable(dict(extra or {})),
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
    entries: Sequence[str] = ("nextword",),
    renames: Mapping[str, str] | None = None,
) -> bool:
    """True when ``name`` is saved with the same ``config`` by code that still computes the same thing.

    The code is the import closure of ``entries``, compared file by file and function by function
    (:func:`changed_code`): what it computes, not where it lives or which commit last touched it, so code
    that only moved (``renames``: old path -> new path) or whose prose changed keeps the saved run
    current, and an uncommitted edit that changes a statement makes it stale.
    """
    try:
        saved = load_result(name, results_dir)
    except FileNotFoundError:
        return False
    if saved.get("config") != _jsonable(config):
        return False
    return changed_code(saved, entries, renames) == []
