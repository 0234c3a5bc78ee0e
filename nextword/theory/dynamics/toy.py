"""The toy attention simulation of §7.1 (Figs. 2–5) with the closed-form updates of §3.

One sequence of ``T`` Gaussian inputs ``x_j ~ N(0, I_{d_x})`` and random targets
``y_i ∈ {0, …, C-1}``; a single head (:class:`~nextword.theory.dynamics.gradients.HeadParams`, small Gaussian
initialisation) is trained by plain gradient descent on the summed cross-entropy (9), every step
using the closed-form gradients of §3 (:func:`~nextword.theory.dynamics.gradients.head_gradients`, which calls
:func:`nextword.attention.core.attention_backward`). The run records the loss, the attention matrix and
the values ``V = X W_V`` at every step — the raw material of Figs. 2–5.

The paper gives the sizes (``T=5, d_x=3, d_k=2, d_v=2, C=3``, about 100 steps) but not the
learning rate or the initial scale; :class:`ToyConfig`'s defaults (``lr=0.08``,
``init_scale=0.5``) are ours, chosen so that 100 steps are stable and visibly sharpen attention.

>>> run = simulate_toy(ToyConfig(steps=3), rng=np.random.default_rng(0))
>>> run.alphas.shape, run.values.shape, run.losses.shape
((4, 5, 5), (4, 5, 2), (4,))
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nextword._validate import as_float_array, check_finite_scalar, check_flag, check_positive_int
from nextword.theory.dynamics.gradients import HeadParams, head_forward, head_gradients

__all__ = ["ToyConfig", "ToyRun", "simulate_toy", "attention_entropy"]


@dataclass(frozen=True)
class ToyConfig:
    """Sizes and optimiser of the §7.1 toy (defaults: the paper's sizes, our ``lr``/``init_scale``)."""

    T: int = 5
    d_x: int = 3
    d_k: int = 2
    d_v: int = 2
    num_classes: int = 3
    steps: int = 100
    lr: float = 0.08
    init_scale: float = 0.5
    causal: bool = False

    def __post_init__(self) -> None:
        for name in ("T", "d_x", "d_k", "d_v", "num_classes"):
            check_positive_int(getattr(self, name), name)
        check_positive_int(self.steps, "steps", minimum=0)
        check_flag(self.causal, "causal")
        for name in ("lr", "init_scale"):
            v = check_finite_scalar(getattr(self, name), name)
            if not v > 0:
                raise ValueError(f"{name} must be a positive finite number, got {v}")


@dataclass(frozen=True)
class ToyRun:
    """A recorded toy run: ``X (T, d_x)``, ``y (T,)``, ``losses (steps+1,)`` (summed loss (9)),
    ``alphas (steps+1, T, T)``, ``values (steps+1, T, d_v)`` (``V = X W_V`` at each step), and the
    initial and final parameters."""

    X: np.ndarray
    y: np.ndarray
    losses: np.ndarray
    alphas: np.ndarray
    values: np.ndarray
    initial: HeadParams
    final: HeadParams


def attention_entropy(alpha: np.ndarray) -> np.ndarray:
    """Row entropies ``-Σ_j α_ij log α_ij`` (nats), ``(..., T, T) -> (..., T)``; 0·log 0 = 0."""
    a = as_float_array(alpha, "alpha", min_ndim=1).astype(np.float64)
    if (a < 0).any():
        raise ValueError("alpha must hold attention weights (>= 0)")
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(a > 0, a * np.log(np.where(a > 0, a, 1.0)), 0.0)
    return -terms.sum(axis=-1)


def simulate_toy(config: ToyConfig = ToyConfig(), *, rng: np.random.Generator) -> ToyRun:
    """Run the §7.1 toy: draw ``W``'s, ``X`` and ``y`` from ``rng`` (in that order), then
    ``config.steps`` gradient-descent steps on all of ``W_Q, W_K, W_V, W_O, b``."""
    if not isinstance(config, ToyConfig):
        raise TypeError(f"config must be a ToyConfig, got {type(config).__name__}")
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy Generator, got {type(rng).__name__}")
    c = config
    params = HeadParams.init(c.d_x, c.d_k, c.d_v, c.num_classes, rng=rng, scale=c.init_scale)
    X = rng.standard_normal((c.T, c.d_x))  # (T, d_x), x_j ~ N(0, I)
    y = rng.integers(0, c.num_classes, size=c.T)  # (T,)
    params = params.nudged()  # NEXTWORD_PERTURB (the perturbation pass); a no-op by default
    initial = params
    losses, alphas, values = [], [], []
    for step in range(c.steps + 1):
        f = head_forward(params, X, causal=c.causal)
        alphas.append(f.alpha)
        values.append(f.V)
        if step == c.steps:
            losses.append(float(-f.log_probs[np.arange(c.T), y].sum()))
            break
        g = head_gradients(params, X, y, causal=c.causal)
        losses.append(g.loss)
        params = params.sgd(g, c.lr)
    if not np.isfinite(losses[-1]):
        raise FloatingPointError(f"the toy run diverged (lr={c.lr} too large?)")
    return ToyRun(
        X=X,
        y=y,
        losses=np.array(losses),
        alphas=np.stack(alphas),
        values=np.stack(values),
        initial=initial,
        final=params,
    )
