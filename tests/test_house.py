"""The rules of the house that neither ruff nor import-linter states (see .importlinter for the rest).

* the numpy library imports torch at module level nowhere (import-linter sees every import statement,
  so it lists the two function-level ones as exceptions; this test checks what actually gets loaded);
* no module-level ``__getattr__`` (lazy re-exports hid four import cycles), no private name imported
  from another module;
* at most ten modules at the top level of ``nextword/``; every package's ``__init__`` says what it holds.
"""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "nextword"
NOT_NUMPY = ("torch", "booktools")


def _modules() -> list[str]:
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__main__":
            continue
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def _numpy_modules() -> list[str]:
    return [m for m in _modules() if len(m.split(".")) < 2 or m.split(".")[1] not in NOT_NUMPY]


def test_numpy_library_does_not_import_torch_at_module_level():
    code = (
        "import importlib, sys\n"
        f"for m in {_numpy_modules()!r}:\n"
        "    importlib.import_module(m)\n"
        "print(sorted(k for k in sys.modules if k == 'torch' or k.startswith('torch.')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", f"torch was imported by the numpy library: {out.strip()[:200]}"


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_lazy_reexports_and_no_private_cross_module_imports(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    lazy = [n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "__getattr__"]
    assert not lazy, "module-level __getattr__ (a lazy re-export): import the names eagerly"
    private = [
        f"{node.module}.{a.name}"
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for a in node.names
        if a.name.startswith("_") and not a.name.startswith("__")
    ]
    assert not private, f"private names imported from another module: {private}"


def test_at_most_ten_modules_at_the_top_level():
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= 10, top


@pytest.mark.parametrize("init", sorted(PACKAGE.rglob("__init__.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_every_package_says_what_it_holds(init):
    assert ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))), f"{init} has no docstring"


REPO = PACKAGE.parent
NOTEBOOK_SOURCES = sorted(p for d in ("book", "solutions", "benchmarks") for p in (REPO / d).rglob("*.py"))


@pytest.mark.parametrize("source", NOTEBOOK_SOURCES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_nextword_import_of_the_book_resolves(source):
    """Cheap guard for moved modules: each ``from nextword... import name`` of a notebook, solution or
    benchmark names something that exists (nbval runs the notebooks themselves)."""
    import importlib

    tree = ast.parse(source.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "nextword":
            if node.module.startswith("nextword.torch"):
                pytest.importorskip("torch")
            module = importlib.import_module(node.module)
            for alias in node.names:
                if not hasattr(module, alias.name):
                    importlib.import_module(f"{node.module}.{alias.name}")  # a submodule
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "nextword":
                    importlib.import_module(alias.name)
