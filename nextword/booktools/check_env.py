"""Environment report: ``nextword check-env``.

Prints one ``[OK]``/``[FAIL]`` line per requirement (Python; each dependency with its version, against
pyproject.toml's specifier; torch's device; the data directory), one line per optional extra (torch,
book, dev, instructor, student: installed, or what is missing), and what a bug report needs besides:
nextword's commit, the OS, the CPU and the thread settings. Paste its output into bug reports. Exit status 1 when a
required item fails; optional items (torch, the data) print ``[--]`` when missing.

The required packages and torch are imported (a broken install shows as "not importable"); the optional
tools of the notebook pipeline (:data:`TOOLS`: jupytext, nbval, …) are looked up in the installed
distributions' metadata instead of imported: importing them costs seconds (jupytext alone about 2 s,
most of it a URI grammar that ``jsonschema`` builds at import), and the report runs in two pages of the
book, so in both notebook passes of ``make test``.
"""

from __future__ import annotations

import importlib
import os
import platform
import sys
from pathlib import Path
from dataclasses import dataclass

__all__ = ["CheckResult", "REQUIRED", "OPTIONAL", "TOOLS", "run_checks", "format_report", "main"]

REQUIRED = ("numpy", "scipy", "matplotlib", "sympy", "tqdm")
OPTIONAL = ("torch", "jupytext", "nbval", "nbconvert", "ipykernel", "pytest", "hypothesis")
#: the optional items whose installed version is read from their distribution's metadata (not imported)
TOOLS = ("jupytext", "nbval", "nbconvert", "ipykernel", "pytest", "hypothesis")


@dataclass(frozen=True)
class CheckResult:
    """One line of the report: ``status`` is "OK", "FAIL" or "--" (optional and missing)."""

    name: str
    status: str
    detail: str

    def line(self) -> str:
        return f"[{self.status}] {self.name}: {self.detail}"


def _module_version(name: str) -> str:
    if name in TOOLS:
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version(name)
        except PackageNotFoundError:
            raise ImportError(f"No distribution named {name!r} is installed") from None
    module = importlib.import_module(name)
    return str(getattr(module, "__version__", "unknown version"))


def _torch_device() -> str:
    import torch

    if torch.cuda.is_available():
        return f"cuda ({torch.cuda.get_device_name(0)})"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"


def requirements() -> dict[str, list[str]]:
    """``{"": core requirements, extra: its requirements}`` as pyproject.toml states them (the checkout's file
    when there is one, else the installed distribution's metadata)."""
    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    try:
        import tomllib

        project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
        return {"": list(project["dependencies"]), **project.get("optional-dependencies", {})}
    except (ImportError, OSError, KeyError):  # Python 3.10, or an installed copy without the file
        from importlib.metadata import PackageNotFoundError, requires

        out: dict[str, list[str]] = {"": []}
        try:
            reqs = requires("nextword") or []
        except PackageNotFoundError:
            return out
        for req in reqs:
            spec, _, marker = req.partition(";")
            extra = marker.split("==")[-1].strip().strip("'\"") if "extra" in marker else ""
            out.setdefault(extra, []).append(spec.strip())
        return out


def _requirement_check(text: str) -> tuple[str, str, bool]:
    """``(name, detail, satisfied)`` for one requirement string such as ``numpy>=2,<3``."""
    from importlib.metadata import PackageNotFoundError, version

    from packaging.requirements import Requirement

    req = Requirement(text)
    try:
        have = version(req.name)
    except PackageNotFoundError:
        return req.name, f"not installed (need {req.specifier or 'any version'})", False
    ok = not req.specifier or req.specifier.contains(have, prereleases=True)
    return req.name, f"{have} (need {req.specifier})" if req.specifier else have, ok


def _extras(reqs: dict[str, list[str]]) -> list[CheckResult]:
    """One line per optional extra: installed and within its specifiers, or what is missing."""
    out = []
    for extra, texts in reqs.items():
        if not extra or extra == "all":
            continue
        bad = []
        for text in texts:
            if text.startswith("nextword["):
                continue
            name, detail, ok = _requirement_check(text)
            if not ok:
                bad.append(f"{name} {detail}")
        detail = "installed" if not bad else "; ".join(bad) + f" (pip install -e '.[{extra}]')"
        out.append(CheckResult(f"extra {extra}", "OK" if not bad else "--", detail))
    return out


def _system() -> list[CheckResult]:
    """The lines a bug report needs besides the packages: nextword's commit, OS, CPU, threads."""
    from nextword._cli import default_threads, usable_cpus
    from nextword.provenance import git_commit, machine_info

    commit, dirty = git_commit()
    threads = f"{usable_cpus()} usable CPUs; nextword train's default --threads {default_threads()}"
    if "torch" in sys.modules:
        threads += f"; torch now {sys.modules['torch'].get_num_threads()}"
    env = [f"{k}={os.environ[k]}" for k in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "MKL_NUM_THREADS") if k in os.environ]
    return [
        CheckResult("nextword", "OK", f"commit {commit[:12]}{' (modified)' if dirty else ''}"),
        CheckResult("os", "OK", platform.platform()),
        CheckResult("cpu", "OK", f"{machine_info()['cpu']} ({platform.machine()})"),
        CheckResult("threads", "OK", threads + (f"; {', '.join(env)}" if env else "")),
    ]


def _shown_path(path: Path) -> str:
    """``path`` relative to the checkout nextword is imported from when it lies inside it, else absolute.

    The report is stored in the book's pages, so it must not name the directory of whoever built them.
    """
    checkout = Path(__file__).resolve().parents[2]
    try:
        return f"{Path(path).resolve().relative_to(checkout).as_posix()} (in nextword's checkout)"
    except ValueError:
        return str(path)


def run_checks() -> list[CheckResult]:
    """Run every check and return the results (no printing)."""
    results = []
    ok_python = sys.version_info >= (3, 10)
    results.append(CheckResult("python", "OK" if ok_python else "FAIL", f"{platform.python_version()} (need >= 3.10)"))
    reqs = requirements()
    core = {}
    for text in reqs.get("", []):
        name, detail, ok = _requirement_check(text)
        core[name] = (detail, ok)
    for name in REQUIRED + OPTIONAL:
        try:
            found = _module_version(name)
        except Exception as exc:  # ImportError or a broken install
            status = "FAIL" if name in REQUIRED else "--"
            results.append(CheckResult(name, status, f"not importable ({type(exc).__name__}: {exc})"))
            core.pop(name, None)
            continue
        if name in core:  # against pyproject.toml's specifier
            detail, ok = core.pop(name)
            results.append(CheckResult(name, "OK" if ok else "FAIL", detail))
        else:
            results.append(CheckResult(name, "OK", found))
    for name, (detail, ok) in core.items():  # the rest of the core requirements (regex, …)
        results.append(CheckResult(name, "OK" if ok else "FAIL", detail))
    try:
        results.append(CheckResult("torch device", "OK", _torch_device()))
    except Exception as exc:
        results.append(CheckResult("torch device", "--", f"unavailable ({type(exc).__name__})"))
    from nextword.data import DataNotFoundError, find_data_file

    try:
        results.append(
            CheckResult("data: tiny Shakespeare", "OK", _shown_path(find_data_file("tinyshakespeare/input.txt")))
        )
    except DataNotFoundError as exc:
        results.append(
            CheckResult("data: tiny Shakespeare", "--", str(exc).splitlines()[0] + " (set NEXTWORD_DATA_DIR)")
        )
    results += _extras(reqs)
    results += _system()
    return results


def format_report(results: list[CheckResult]) -> str:
    """The printed report, one line per check, then a summary line."""
    failed = [r for r in results if r.status == "FAIL"]
    lines = [r.line() for r in results]
    lines.append("environment OK" if not failed else f"{len(failed)} required item(s) failed")
    return "\n".join(lines)


def main() -> int:
    results = run_checks()
    print(format_report(results))
    return 1 if any(r.status == "FAIL" for r in results) else 0
