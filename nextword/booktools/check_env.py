"""Environment report: ``nextword check-env``.

Prints one ``[OK]``/``[FAIL]`` line per requirement (Python, each dependency with its version,
torch's device, the data directory). Paste its output into bug reports. Exit status 1 when a
required item fails; optional items (torch, the data) print ``[--]`` when missing.

The required packages and torch are imported (a broken install shows as "not importable"); the optional
tools of the notebook pipeline (:data:`TOOLS`: jupytext, nbval, …) are looked up in the installed
distributions' metadata instead of imported: importing them costs seconds (jupytext alone about 2 s,
most of it a URI grammar that ``jsonschema`` builds at import), and the report runs in two pages of the
book, so in both notebook passes of ``make test``.
"""

from __future__ import annotations

import importlib
import platform
import sys
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


def run_checks() -> list[CheckResult]:
    """Run every check and return the results (no printing)."""
    results = []
    ok_python = sys.version_info >= (3, 10)
    results.append(CheckResult("python", "OK" if ok_python else "FAIL", f"{platform.python_version()} (need >= 3.10)"))
    for name in REQUIRED + OPTIONAL:
        try:
            results.append(CheckResult(name, "OK", _module_version(name)))
        except Exception as exc:  # ImportError or a broken install
            status = "FAIL" if name in REQUIRED else "--"
            results.append(CheckResult(name, status, f"not importable ({type(exc).__name__}: {exc})"))
    try:
        results.append(CheckResult("torch device", "OK", _torch_device()))
    except Exception as exc:
        results.append(CheckResult("torch device", "--", f"unavailable ({type(exc).__name__})"))
    from nextword.data import DataNotFoundError, find_data_file

    try:
        results.append(CheckResult("data: tiny Shakespeare", "OK", str(find_data_file("tinyshakespeare/input.txt"))))
    except DataNotFoundError as exc:
        results.append(
            CheckResult("data: tiny Shakespeare", "--", str(exc).splitlines()[0] + " (set NEXTWORD_DATA_DIR)")
        )
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
