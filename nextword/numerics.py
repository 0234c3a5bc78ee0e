"""Finite differences, the one checker every closed-form gradient and Jacobian in the book is held to,
and the classical Runge–Kutta stepper the pages use to integrate small ODEs against their closed forms.

The central difference ``(f(x + h e_i) − f(x − h e_i)) / 2h`` has error ``O(h²)`` (plus round-off
``O(ε/h)``), so ``h = 1e-6`` in float64 agrees with an exact derivative to about ``1e-8``–``1e-10``.

Two layouts:

* the full Jacobian (``batched=False``): one perturbation per entry of ``x``; the result has shape
  ``f(x).shape + x.shape`` (a scalar ``f`` gives the gradient, shape ``x.shape``);
* a batch of independent points (``batched=True``): ``x (..., d)`` holds points along its leading
  axes and ``f`` acts on each separately (``f(x)`` has shape ``(...)`` or ``(..., m)``); each of the
  ``d`` coordinates is perturbed for all points at once (``2d`` calls instead of ``2·x.size``) and
  the result has shape ``f(x).shape + (d,)``: the gradient of every point, row by row.

>>> central_difference(lambda z: z**2, np.array([3.0])).round(6).tolist()
[[6.0]]
>>> central_difference(lambda z: (z**2).sum(-1), np.array([[1.0, 2.0], [3.0, 4.0]]), batched=True).round(6)
array([[2., 4.],
       [6., 8.]])
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from nextword._validate import (
    as_float_array,
    check_callable,
    check_finite_scalar,
    check_flag,
    check_no_overflow,
    check_positive_int,
)

__all__ = ["central_difference", "rk4"]


def central_difference(
    fn: Callable[[np.ndarray], object], x: object, *, h: float = 1e-6, batched: bool = False
) -> np.ndarray:
    """Central-difference derivative of ``fn`` at ``x`` (float64 throughout).

    ``batched=False``: the Jacobian, shape ``fn(x).shape + x.shape``.
    ``batched=True``: ``x (..., d)`` is a batch of points and ``fn`` acts pointwise; the result is
    each point's derivative, shape ``fn(x).shape + (d,)``.

    >>> central_difference(np.sin, np.zeros(2)).round(6)
    array([[1., 0.],
           [0., 1.]])
    """
    batched = check_flag(batched, "batched")
    check_finite_scalar(h, "h")
    if not callable(fn):
        raise TypeError(f"fn must be a callable array -> array, got {type(fn).__name__}")
    x = as_float_array(x, "x").astype(np.float64)
    if not h > 0:
        raise ValueError(f"h must be > 0, got {h}")
    if batched:
        if x.ndim < 1:
            raise ValueError(f"x must have shape (..., d) when batched=True, got {x.shape}")
        steps = h * np.eye(x.shape[-1])  # (d, d): row i is h e_i
        return np.stack(
            [
                (np.asarray(fn(x + e), dtype=np.float64) - np.asarray(fn(x - e), dtype=np.float64)) / (2 * h)
                for e in steps
            ],
            axis=-1,
        )  # fn(x).shape + (d,)
    f0 = np.asarray(fn(x), dtype=np.float64)
    J = np.empty(f0.shape + (x.size,))  # (*f0.shape, x.size)
    flat = x.reshape(-1)  # (x.size,)
    for i in range(x.size):
        xp, xm = flat.copy(), flat.copy()
        xp[i] += h
        xm[i] -= h
        J[..., i] = (np.asarray(fn(xp.reshape(x.shape))) - np.asarray(fn(xm.reshape(x.shape)))) / (2 * h)
    return J.reshape(f0.shape + x.shape)  # (*f0.shape, *x.shape)


def rk4(f: Callable[[np.ndarray, float], np.ndarray], y0: object, t_end: float, n: int = 400) -> np.ndarray:
    """Integrate ``dy/dt = f(y, t)`` from ``t = 0`` to ``t_end`` with ``n`` classical Runge–Kutta steps.

    One step of size ``h = t_end / n`` from ``t = k h``: ``k1 = f(y, t)``, ``k2 = f(y + h k1/2, t + h/2)``,
    ``k3 = f(y + h k2/2, t + h/2)``, ``k4 = f(y + h k3, t + h)``, ``y ← y + h (k1 + 2 k2 + 2 k3 + k4)/6``;
    the global error is ``O(h⁴)``. ``y0`` has any shape; the result has the same shape.

    >>> float(rk4(lambda y, t: -y, np.array(1.0), 1.0, n=100).round(9)) == round(float(np.exp(-1.0)), 9)
    True
    """
    check_callable(f, "f")
    n = check_positive_int(n, "n")
    t_end = check_finite_scalar(t_end, "t_end")
    y = as_float_array(y0, "y0")
    h = t_end / n
    for k in range(n):
        t = k * h
        k1 = f(y, t)
        k2 = f(y + h / 2 * k1, t + h / 2)
        k3 = f(y + h / 2 * k2, t + h / 2)
        k4 = f(y + h * k3, t + h)
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return check_no_overflow(y, f"the solution from y0 at t_end = {t_end!r}", masked=False)
