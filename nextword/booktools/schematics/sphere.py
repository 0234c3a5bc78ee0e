"""Schematic figures of Part 5 (Liao's spherical SVFlow, page 5.1), drawn from the library's own maps.

Each function draws on a given matplotlib ``Axes`` and returns the numbers it drew, so a page (and
``tests/booktools/test_schematics_sphere.py``) can assert that the picture says what the library
computes:

* :func:`draw_rmsnorm_projection` — token states of different lengths, and where RMSNorm puts them:
  all on one circle of radius ``sqrt(d)`` (Liao, Eq. 7), so states live on a sphere;
* :func:`draw_tangent_plane` — a 3-d view of the unit sphere, the tangent plane at a point ``x``, a
  tangent step ``v`` and where the retraction (Eq. 3) and the exponential map (Eq. 2) land;
* :func:`draw_retraction_vs_exp` — the same step in the plane of ``x`` and ``v`` (a great circle),
  where the difference between the two maps can be read off;
* :func:`draw_vmf_on_circle` — the von Mises–Fisher density on the circle (``d = 2``, Eq. 18) for
  several concentrations, drawn as a bump on the circle around its mean direction;
* :func:`draw_layers_as_flow` — a token state moved layer by layer on the circle: each layer adds an
  update (an Euler step of a flow) and RMSNorm retracts the sum to the circle (§4.4 of the paper).
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np

from nextword.booktools.schematics.core import COLOURS
from nextword.decoder import rms_norm
from nextword.theory.svflow.flow import spherical_euler_flow
from nextword.theory.svflow.sphere import exp_map, retraction, vmf_log_density

__all__ = [
    "draw_rmsnorm_projection",
    "draw_tangent_plane",
    "draw_retraction_vs_exp",
    "draw_vmf_on_circle",
    "draw_layers_as_flow",
]

# the book's palette (nextword.booktools.plotting.BOOK_COLORS), so that captions can name what is drawn
_RETRACTION = "#0072B2"  # blue: the retraction, in every figure of this module
_EXP_MAP = "#D55E00"  # vermilion: the exponential map, and a vMF's mean direction


def draw_rmsnorm_projection(ax: plt.Axes, states: Sequence[Sequence[float]]) -> np.ndarray:
    """Draw 2-d token states as arrows and RMSNorm's image of each on the circle of radius ``sqrt(2)``.

    RMSNorm (Eq. 7 with ``d = 2``, no gain, ``eps = 0``) is ``sqrt(d) x / ||x||``: it keeps each state's
    direction and sets its length to ``sqrt(d)``. A dotted line joins each state to its image.
    ``states``: shape ``(n, 2)``, no zero row. Returns the normalised states, shape ``(n, 2)``.
    """
    states = np.asarray(states, dtype=float)
    if states.ndim != 2 or states.shape[1] != 2 or len(states) == 0:
        raise ValueError(f"states must have shape (n, 2) with n >= 1, got {states.shape}")
    if np.any(np.linalg.norm(states, axis=1) == 0):
        raise ValueError("states must not contain a zero row (RMSNorm has no direction to keep)")
    normalised = rms_norm(states, eps=0.0)  # (n, 2), each of length sqrt(2)
    radius = np.sqrt(2.0)
    circle = np.linspace(0, 2 * np.pi, 300)
    ax.plot(radius * np.cos(circle), radius * np.sin(circle), color="0.45", lw=1.2, label=r"radius $\sqrt{d}$")
    for n, (state, image) in enumerate(zip(states, normalised)):
        colour = f"C{n % 10}"
        ax.annotate("", xy=state, xytext=(0, 0), arrowprops=dict(arrowstyle="-|>", color=colour, lw=1.0, alpha=0.5))
        ax.plot(*state, "o", color=colour, ms=5, alpha=0.5)
        ax.plot([state[0], image[0]], [state[1], image[1]], ":", color=colour, lw=1.0)
        ax.plot(*image, "o", color=colour, ms=7, mec="k", mew=0.6)
    lim = 1.15 * max(radius, float(np.abs(states).max()))
    ax.set_xlim(-lim, lim)
    ax.set_ylim(-lim, lim)
    ax.set_aspect("equal")
    ax.axhline(0, color="0.85", lw=0.6, zorder=0)
    ax.axvline(0, color="0.85", lw=0.6, zorder=0)
    ax.set_xlabel("coordinate 1 of the state")
    ax.set_ylabel("coordinate 2 of the state")
    return normalised


def _step_points(point: np.ndarray, step: np.ndarray) -> dict[str, np.ndarray]:
    """The points of one tangent step: ``x``, ``v``, the tip ``x + v``, ``R_x(v)`` and ``exp_x(v)``."""
    return {
        "x": point,
        "v": step,
        "tip": point + step,
        "retraction": retraction(point, step),
        "exp_map": exp_map(point, step),
    }


def draw_tangent_plane(ax, step_length: float = 1.0, *, elevation: float = 18.0, azimuth: float = -72.0):
    """Draw the unit sphere, its tangent plane at ``x = (0, 0, 1)``, a tangent step and where it lands.

    ``ax`` must be a 3-d axes (``fig.add_subplot(projection="3d")``). The step is ``v = (s, 0, 0)``
    with ``s = step_length > 0``, tangent at ``x`` because ``x . v = 0``. Drawn: the tip ``x + v`` (in
    the plane, off the sphere), the retraction ``R_x(v) = (x + v)/||x + v||`` (the ray from the centre
    through the tip, blue) and the exponential map ``exp_x(v)`` (the great-circle arc of length ``s``
    from ``x``, vermilion). Returns the dict of those points (keys ``x, v, tip, retraction, exp_map``),
    each shape ``(3,)``.
    """
    if not (np.isfinite(step_length) and step_length > 0):
        raise ValueError(f"step_length must be a positive finite number, got {step_length}")
    points = _step_points(np.array([0.0, 0.0, 1.0]), np.array([step_length, 0.0, 0.0]))
    lon, lat = np.meshgrid(np.linspace(0, 2 * np.pi, 40), np.linspace(0, np.pi, 20))
    ax.plot_wireframe(np.cos(lon) * np.sin(lat), np.sin(lon) * np.sin(lat), np.cos(lat), color="0.8", lw=0.4)
    half = max(0.9, 1.15 * step_length)
    plane_u, plane_v = np.meshgrid(np.linspace(-half, half, 2), np.linspace(-half, half, 2))
    ax.plot_surface(plane_u, plane_v, np.ones_like(plane_u), color=COLOURS["input"], alpha=0.35, lw=0)
    x, tip, ret, ex = points["x"], points["tip"], points["retraction"], points["exp_map"]
    ax.quiver(*x, *points["v"], color="k", lw=1.6, arrow_length_ratio=0.12)
    ax.plot(*np.stack([np.zeros(3), tip]).T, "--", color=_RETRACTION, lw=1.0)  # the ray through the tip
    angles = np.linspace(0, step_length, 60)
    ax.plot(np.sin(angles), 0 * angles, np.cos(angles), color=_EXP_MAP, lw=2.8)  # the great-circle arc
    ax.scatter(*x, color="k", s=25)
    ax.scatter(*tip, color="k", s=15)
    ax.scatter(*ret, color=_RETRACTION, s=40, depthshade=False)
    ax.scatter(*ex, color=_EXP_MAP, s=40, depthshade=False)
    ax.text(*(x + [-0.2, 0, 0.1]), "x", fontsize=11)
    ax.text(*(tip + [-0.1, 0, 0.12]), "x + w", fontsize=10)
    ax.text(*(ret + [-0.62, 0, -0.12]), r"$R_x(w)$", color=_RETRACTION, fontsize=11)
    ax.text(*(ex + [0.1, 0, -0.12]), r"$\exp_x(w)$", color=_EXP_MAP, fontsize=11)
    ax.text(-half, half, 1.05, "tangent plane at x", fontsize=9, color="0.3")
    ax.view_init(elev=elevation, azim=azimuth)
    ax.set_xlim(-1.05, 1.05)
    ax.set_ylim(-1.05, 1.05)
    ax.set_zlim(-1.05, 1.05)
    ax.set_box_aspect((1, 1, 1), zoom=1.35)
    ax.set_axis_off()
    return points


def draw_retraction_vs_exp(ax: plt.Axes, step_length: float = 1.0) -> dict[str, np.ndarray]:
    """Draw one tangent step in the plane that holds ``x`` and ``v``: a great circle and its tangent line.
    (Labels call the step ``w``, as Part 5 does; the returned key stays ``v``.)

    ``x = (0, 1)`` (the top of the circle), ``v = (s, 0)`` with ``s = step_length > 0``. The tangent line
    at ``x`` is ``y = 1``; the retraction pulls the tip ``x + v`` back to the circle along the ray from the
    centre (blue), landing at the angle ``arctan(s)`` from ``x``; the exponential map walks the arc of
    length ``s`` (vermilion), landing at the angle ``s``. The gap between the two landing points is about
    ``s^3/3`` for a small step. Returns the dict of the drawn points (keys ``x, v, tip, retraction,
    exp_map``), each shape ``(2,)``.
    """
    if not (np.isfinite(step_length) and step_length > 0):
        raise ValueError(f"step_length must be a positive finite number, got {step_length}")
    points = _step_points(np.array([0.0, 1.0]), np.array([step_length, 0.0]))
    x, tip, ret, ex = points["x"], points["tip"], points["retraction"], points["exp_map"]
    circle = np.linspace(0, 2 * np.pi, 300)
    ax.plot(np.cos(circle), np.sin(circle), color="0.6", lw=1.0)
    ax.plot([-0.4, step_length + 0.4], [1, 1], color="0.6", lw=1.0, ls="-.")
    ax.annotate("", xy=tip, xytext=x, arrowprops=dict(arrowstyle="-|>", color="k", lw=1.6))
    ax.plot([0, tip[0]], [0, tip[1]], "--", color=_RETRACTION, lw=1.0)
    angles = np.linspace(0, step_length, 80)
    ax.plot(np.sin(angles), np.cos(angles), color=_EXP_MAP, lw=2.2)
    ax.plot(*x, "ko", ms=5)
    ax.plot(*tip, "ko", ms=4)
    ax.plot(*ret, "o", color=_RETRACTION, ms=8, label=r"retraction $R_x(w)=(x+w)/\Vert x+w\Vert$")
    ax.plot(*ex, "o", color=_EXP_MAP, ms=8, label=r"exponential map $\exp_x(w)$: arc of length $\Vert w\Vert$")
    ax.plot(0, 0, "k+", ms=8)
    ax.text(x[0] - 0.08, x[1] + 0.08, "x", fontsize=11, ha="right")
    ax.text(tip[0], tip[1] + 0.08, "x + w", fontsize=10, ha="center")
    ax.text(step_length / 2, 1.08, "w (tangent)", fontsize=9, ha="center")
    ax.text(0.05, -0.12, "centre", fontsize=8, color="0.4")
    ax.set_xlim(-1.25, max(1.3, step_length + 0.45))
    ax.set_ylim(-1.25, 1.45)
    ax.set_aspect("equal")
    ax.set_xlabel("along w")
    ax.set_ylabel("along x")
    ax.legend(fontsize=8, loc="lower left")
    return points


def draw_vmf_on_circle(
    ax: plt.Axes, concentrations: Sequence[float] = (1.0, 4.0, 16.0), mean_angle: float = np.pi / 3, scale: float = 0.5
) -> np.ndarray:
    """Draw the von Mises–Fisher density on the unit circle (``d = 2``) for each concentration ``kappa``.

    The density ``p(x) = C_2(kappa) exp(kappa mu . x)`` (Eq. 18) with mean direction
    ``mu = (cos mean_angle, sin mean_angle)`` is drawn as the curve ``(1 + scale p(theta)) (cos theta,
    sin theta)``: a bump on the circle that is tallest at ``mu`` and narrower for larger ``kappa``.
    Returns the densities, shape ``(len(concentrations), 361)``, at the angles
    ``theta = 0, 1, ..., 360`` degrees; each integrates to 1 over the circle (``d theta``).
    """
    concentrations = [float(k) for k in concentrations]
    if not concentrations or any(not (np.isfinite(k) and k >= 0) for k in concentrations):
        raise ValueError(f"concentrations must be a non-empty list of finite numbers >= 0, got {concentrations}")
    if not scale > 0:
        raise ValueError(f"scale must be > 0, got {scale}")
    angles = np.radians(np.arange(361.0))  # (361,)
    on_circle = np.stack([np.cos(angles), np.sin(angles)], axis=1)  # (361, 2)
    mean_direction = np.array([np.cos(mean_angle), np.sin(mean_angle)])
    densities = np.array([np.exp(vmf_log_density(on_circle, mean_direction, k)) for k in concentrations])
    ax.plot(on_circle[:, 0], on_circle[:, 1], color="0.6", lw=1.0)
    cmap = plt.get_cmap("viridis")
    for n, (kappa, density) in enumerate(zip(concentrations, densities)):
        colour = cmap(n / max(len(concentrations) - 1, 1) * 0.85)
        radius = 1 + scale * density
        ax.plot(radius * on_circle[:, 0], radius * on_circle[:, 1], color=colour, lw=1.8, label=rf"$\kappa={kappa:g}$")
    ax.annotate("", xy=mean_direction, xytext=(0, 0), arrowprops=dict(arrowstyle="-|>", color=_EXP_MAP, lw=1.6))
    ax.text(*(0.55 * mean_direction + [0.08, -0.08]), r"$\mu$", color=_EXP_MAP, fontsize=12)
    lim = 1 + scale * float(densities.max()) + 0.1
    ax.set_xlim(-lim, lim)
    ax.set_ylim(-lim, lim)
    ax.set_aspect("equal")
    ax.set_xlabel("coordinate 1")
    ax.set_ylabel("coordinate 2")
    ax.legend(fontsize=8, loc="lower left")
    return densities


def draw_layers_as_flow(
    ax: plt.Axes,
    start_angle: float = np.radians(200),
    pull_angle: float = np.radians(60),
    strength: float = 2.0,
    n_layers: int = 6,
    step: float = 0.25,
) -> np.ndarray:
    """Draw a state on the unit circle moved through ``n_layers`` layers of a "transformer" (§4.4).

    Each layer adds the update ``step * v`` with the constant field ``v = strength * mu`` (the Euclidean
    score of a von Mises–Fisher component with mean direction ``mu = (cos pull_angle, sin pull_angle)``),
    then normalises: ``x_{l+1} = (x_l + step v)/||x_l + step v||`` — one forward Euler step followed by
    the retraction, as :func:`nextword.theory.svflow.spherical_euler_flow` computes. Drawn: each
    update as a grey arrow off the circle, the retraction back along the ray from the centre (dotted),
    and the states numbered by layer. Returns the path, shape ``(n_layers + 1, 2)``.
    """
    if not (isinstance(n_layers, int) and n_layers >= 1):
        raise ValueError(f"n_layers must be a positive int, got {n_layers!r}")
    if not (np.isfinite(step) and step > 0):
        raise ValueError(f"step must be a positive finite number, got {step}")
    mean_direction = np.array([np.cos(pull_angle), np.sin(pull_angle)])
    start = np.array([np.cos(start_angle), np.sin(start_angle)])
    path = spherical_euler_flow(start, lambda x, t: strength * mean_direction, n_layers, step)  # (L+1, 2)
    circle = np.linspace(0, 2 * np.pi, 300)
    ax.plot(np.cos(circle), np.sin(circle), color="0.6", lw=1.0)
    ax.annotate("", xy=mean_direction, xytext=(0, 0), arrowprops=dict(arrowstyle="-|>", color=_EXP_MAP, lw=1.4))
    ax.text(*(0.5 * mean_direction + [0.1, -0.05]), r"$\mu$", color=_EXP_MAP, fontsize=12)
    for layer, (before, after) in enumerate(zip(path[:-1], path[1:])):
        moved = before + step * strength * mean_direction  # the residual sum, off the circle
        ax.annotate("", xy=moved, xytext=before, arrowprops=dict(arrowstyle="-|>", color="0.35", lw=1.1))
        ax.plot([moved[0], after[0]], [moved[1], after[1]], ":", color=_RETRACTION, lw=1.2)
    ax.plot(path[:, 0], path[:, 1], "o", color=_RETRACTION, ms=6, mec="k", mew=0.5, zorder=3)
    for layer, state in enumerate(path):
        ax.text(*(0.82 * state), str(layer), fontsize=9, ha="center", va="center")
    ax.set_xlim(-1.35, 1.6)
    ax.set_ylim(-1.35, 1.6)
    ax.set_aspect("equal")
    ax.set_xlabel("coordinate 1")
    ax.set_ylabel("coordinate 2")
    return path
