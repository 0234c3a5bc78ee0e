"""The no-3-D-surfaces check (``nextword.booktools.checks.surfaces``) catches what it targets."""

from __future__ import annotations

from nextword.booktools.checks import surfaces
from nextword.booktools.pages import BOOK, parse_page, read_page


def _found(code: str) -> list[str]:
    return [message.split(":")[0] for _, message in surfaces.code_surfaces(code)]


def test_a_surface_of_data_is_caught_in_every_spelling():
    assert _found('ax = fig.add_subplot(1, 2, 1, projection="3d")\nax.plot_surface(X, Y, Z, cmap="viridis")') == [
        'a 3-D axes (projection="3d")',
        "draws a 3-D surface (ax.plot_surface)",
    ]
    assert _found('fig, ax = plt.subplots(subplot_kw={"projection": "3d"})') == ['a 3-D axes (projection="3d")']
    assert _found("fig, ax = plt.subplots(subplot_kw=dict(projection='3D'))") == ['a 3-D axes (projection="3d")']
    assert _found("ax = Axes3D(fig)") == ['a 3-D axes (projection="3d")']
    for method in ("plot_trisurf", "plot_wireframe", "contour3D", "bar3d"):
        assert _found(f"ax.{method}(x, y, z)") == [f"draws a 3-D surface (ax.{method})"]


def test_heatmaps_contours_and_the_sphere_schematic_pass():
    assert _found("heatmap(ax, weights)\nax.contour(X, Y, Z)\nax.imshow(Z)\n%matplotlib inline") == []
    schematic = 'ax3d = fig.add_subplot(projection="3d")\nlanding = draw_tangent_plane(ax3d, step_length=1.0)'
    assert _found(schematic) == []
    assert _found(schematic + "\nax3d.plot_surface(X, Y, Z)") != []  # a schematic does not excuse a data surface


def test_a_page_problem_carries_the_line_of_the_call():
    page = parse_page("# %% [markdown]\n# # 9.1 A page\n\n# %%\nimport numpy as np\nax.plot_surface(X, Y, Z)\n")
    assert [(p.check, p.line) for p in surfaces.check(page)] == [("surfaces", 6)]


def test_the_library_draws_surfaces_only_in_the_allowed_schematics():
    assert surfaces.library_surfaces() == []
    sphere = read_page(BOOK / "part5_svflow" / "01_spherical_geometry.py")
    assert surfaces.check(sphere) == []  # the tangent-plane schematic is allowed


def test_the_library_scan_catches_a_surface_outside_the_allowlist(tmp_path):
    module = tmp_path / "nextword" / "booktools" / "plots.py"
    module.parent.mkdir(parents=True)
    module.write_text("def draw(ax, Z):\n    def inner():\n        ax.plot_surface(X, Y, Z)\n    inner()\n")
    assert surfaces.library_surfaces(tmp_path) == ["nextword/booktools/plots.py:3: inner calls plot_surface"]
