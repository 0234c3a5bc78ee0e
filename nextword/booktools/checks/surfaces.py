"""No 3-D surfaces: a function of two variables is drawn as a heatmap or a contour plot, never as a surface.

A 3-D surface hides half of itself behind the other half, and its heights cannot be read off. A code cell of a
page must not call a surface method (:data:`SURFACE_CALLS`: ``plot_surface``, ``plot_trisurf``,
``plot_wireframe``, ``contour3D``, ``bar3d``, …) nor make a 3-D axes (``projection="3d"``, also in
``subplot_kw``) — except to hand it to a schematic of geometry that the book allows
(:data:`SCHEMATICS_3D`): Part 5's unit sphere with a tangent plane and a step on it
(``nextword.booktools.schematics.sphere.draw_tangent_plane``) shows points, arrows and the sphere's own
shape, no data. The library is held to the same rule by :func:`library_surfaces` (a test in
``tests/booktools/test_pagecheck_surfaces.py``): outside :data:`SCHEMATICS_3D` no function of ``nextword``
calls a surface method, so a page cannot draw one through the library either.

>>> code = 'ax = fig.add_subplot(projection="3d")\\nax.plot_surface(X, Y, Z)'
>>> [p.message for p in check(parse_page("# %%\\n" + code))]  # doctest: +NORMALIZE_WHITESPACE
['a 3-D axes (projection="3d"): draw a function of two variables as a heatmap or contour plot',
 'draws a 3-D surface (ax.plot_surface): use a heatmap (nextword.booktools.plotting.heatmap) or a contour plot']
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from nextword.booktools.pages import REPO_ROOT, Page, Problem, parse_page  # noqa: F401 (the doctest)

__all__ = ["SCHEMATICS_3D", "SURFACE_CALLS", "check", "code_surfaces", "library_surfaces"]

#: Methods of a 3-D axes (or of mpl_toolkits) that draw a surface, a mesh, 3-D bars or 3-D contours.
SURFACE_CALLS = frozenset(
    {"plot_surface", "plot_trisurf", "plot_wireframe", "contour3D", "contourf3D", "bar3d", "voxels"}
)
#: ``{module path: functions}`` allowed to draw on a 3-D axes: schematics of geometry, no data.
SCHEMATICS_3D = {"nextword/booktools/schematics/sphere.py": frozenset({"draw_tangent_plane"})}
_ALLOWED_NAMES = frozenset(name for names in SCHEMATICS_3D.values() for name in names)


def _parse(code: str) -> ast.AST | None:
    code = "\n".join("" if re.match(r"\s*[%!]", line) else line for line in code.split("\n"))  # IPython magics
    try:
        return ast.parse(code)
    except SyntaxError:
        return None


def _name(func: ast.AST) -> str:
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _three_d(call: ast.Call) -> bool:
    """``projection="3d"`` as a keyword, or inside ``subplot_kw={...}`` / ``subplot_kw=dict(...)``."""
    for kw in call.keywords:
        if kw.arg == "projection" and isinstance(kw.value, ast.Constant) and str(kw.value.value).lower() == "3d":
            return True
        if kw.arg == "subplot_kw":
            inner = ast.dump(kw.value)
            if "projection" in inner and re.search(r"value='3d'", inner, re.I):
                return True
    return False


def code_surfaces(code: str) -> list[tuple[int, str]]:
    """``(line within code, message)`` for each surface call and each 3-D axes of a code cell; a 3-D axes is
    allowed when the cell hands it to a schematic of :data:`SCHEMATICS_3D` and draws no surface itself."""
    tree = _parse(code)
    if tree is None:
        return []
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    surfaces = [(c.lineno, _name(c.func)) for c in calls if _name(c.func) in SURFACE_CALLS]
    schematic = any(_name(c.func) in _ALLOWED_NAMES for c in calls)
    found = []
    for call in calls:
        if (_three_d(call) or _name(call.func) == "Axes3D") and not (schematic and not surfaces):
            found.append(
                (
                    call.lineno,
                    'a 3-D axes (projection="3d"): draw a function of two variables as a heatmap or contour plot',
                )
            )
    for line, name in surfaces:
        found.append(
            (
                line,
                f"draws a 3-D surface (ax.{name}): use a heatmap (nextword.booktools.plotting.heatmap) or a contour plot",
            )
        )
    return sorted(set(found))


def check(page: Page) -> list[Problem]:
    """A problem per surface call or 3-D axes in the page's code cells."""
    return [
        Problem("surfaces", cell.line + line - 1, message)
        for cell in page.code_cells()
        for line, message in code_surfaces(cell.text)
    ]


def library_surfaces(root: Path = REPO_ROOT) -> list[str]:
    """``"path:line: function calls method"`` for each surface call in ``nextword/`` outside :data:`SCHEMATICS_3D`."""
    found = []
    for path in sorted((Path(root) / "nextword").rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        tree = _parse(path.read_text(encoding="utf-8"))
        if tree is None:
            continue
        allowed = SCHEMATICS_3D.get(rel, frozenset())
        enclosing: dict[ast.AST, str] = {}
        for func in ast.walk(tree):  # outer functions first: an inner function's name overwrites
            if isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
                enclosing.update({node: func.name for node in ast.walk(func)})
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and _name(node.func) in SURFACE_CALLS:
                name = enclosing.get(node, "<module>")
                if name not in allowed:
                    found.append(f"{rel}:{node.lineno}: {name} calls {_name(node.func)}")
    return sorted(set(found))
