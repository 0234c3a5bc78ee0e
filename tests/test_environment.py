"""environment.yml (conda users) and pyproject.toml (pip + venv) must describe the same environment."""

import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def _name(requirement: str) -> str:
    name = re.split(r"[<>=!~\[ ;]", requirement.strip(), maxsplit=1)[0]
    return name.lower().replace("_", "-")


def _pyproject_names() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(project["dependencies"])
    for extra, deps in project["optional-dependencies"].items():
        if extra == "instructor":  # otter-grader and nbgrader: for course staff, not the reader's environment
            continue
        reqs += [d for d in deps if not d.startswith("nextword")]
    return {_name(r) for r in reqs}


def _environment_names() -> set[str]:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    names = set()
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            names |= {_name(p) for p in dep["pip"] if not p.startswith("-e")}
        elif _name(dep) not in {"python", "pip"}:
            names.add(_name(dep))
    return names


def test_environment_yml_and_pyproject_list_the_same_packages():
    py, conda = _pyproject_names(), _environment_names()
    assert py == conda, f"only in pyproject: {sorted(py - conda)}; only in environment.yml: {sorted(conda - py)}"


def test_torch_is_pinned_in_both():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "torch==2.13.0" in project["optional-dependencies"]["torch"]
    assert "torch==2.13.0" in (ROOT / "environment.yml").read_text()


def test_environment_installs_the_package_editable():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert "-e ." in pip
