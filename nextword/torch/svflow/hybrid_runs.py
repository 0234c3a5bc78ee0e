"""Liao §3.3 / App. C.1 (notebook 5.4): the held-out measurements of trained hybrid SVFlows, and one seed.

:func:`hybrid_measurements` computes, per run of a trained :class:`~nextword.torch.svflow.hybrid.HybridSVFlow`,
on held-out points: the accuracy of ``p_T(y|x_T)``; the Fisher ratio
``||mean_1 - mean_0||^2 / (tr Sigma_0 + tr Sigma_1)`` of the end states; ``J_var`` on the test paths
(mean of ``KL(q||p)`` over every 5th Euler step) and ``KL`` at ``t = 1``; the mean cosine between the
field ``v`` and ``grad L = v + epsilon`` (Theorem 3.3); the spread of the end states and the effective
number of ``q``-components ``exp H(q_bar)``.

:func:`hybrid_seed` trains the four runs of Fig. 1 (``beta`` = 0, 0.1, 0.5 and ``J_var`` only) on the
two-moons data of notebook 5.4 with one seed and returns the measurements; the saved run
(``nextword results run hybrid_long``) uses 2,000 steps with batch 512.

>>> from nextword.torch.svflow.hybrid import HybridConfig
>>> row, curves = hybrid_seed(HybridConfig(steps=2, batch_size=8), 0)
>>> sorted(row)[:3], curves["log"].shape  # (steps, runs, [J_hybrid, J_align, J_var])
(['acc', 'cos', 'fisher'], (2, 4, 3))
"""

from __future__ import annotations

import dataclasses

import numpy as np

from nextword.theory.svflow.flow import entropy
from nextword.torch.svflow.hybrid import HybridConfig, HybridSVFlow, make_moons, train_hybrid

__all__ = ["MEASURES", "moons_data", "hybrid_measurements", "hybrid_seed"]

#: Keys of each run's measurements, in the order of the notebook's table.
MEASURES = ("acc", "fisher", "jvar", "kl_end", "cos", "spread", "n_eff")


def moons_data() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Notebook 5.4's data: 2000 training and 600 test points, noise 0.06, one generator seeded 0."""
    rng = np.random.default_rng(0)
    X_train, y_train = make_moons(2000, 0.06, rng)
    X_test, y_test = make_moons(600, 0.06, rng)
    return X_train, y_train, X_test, y_test


def hybrid_measurements(
    model: HybridSVFlow, X_test: np.ndarray, y_test: np.ndarray
) -> tuple[list[dict[str, float]], np.ndarray]:
    """One dict of :data:`MEASURES` per run, and the test paths ``(M, n_steps + 1, N, 2)``."""
    X_test = np.asarray(X_test, dtype=float)
    y_test = np.asarray(y_test)
    if X_test.ndim != 2 or X_test.shape[1] != model.cfg.dim or y_test.shape != (X_test.shape[0],):
        raise ValueError(f"X_test must be (N, {model.cfg.dim}) and y_test (N,), got {X_test.shape}, {y_test.shape}")
    cfg = model.cfg
    paths, probs = model.flow(X_test)  # (M, n_steps + 1, N, d), (M, N, C)
    times = np.arange(cfg.n_steps) * cfg.dt
    rows = []
    for r in range(model.M):
        kls, coss = [], []
        for k in range(0, cfg.n_steps, 5):
            sl = model.slice(r, times[k])
            xk = paths[r, k]
            kls.append(sl.kl_gap(xk).mean())
            v = sl.field(xk)
            g = v + sl.epsilon(xk)
            coss.append(np.mean(np.sum(v * g, 1) / (np.linalg.norm(v, axis=1) * np.linalg.norm(g, axis=1) + 1e-300)))
        xT = paths[r, -1]
        mu0, mu1 = xT[y_test == 0].mean(0), xT[y_test == 1].mean(0)
        fisher = np.sum((mu1 - mu0) ** 2) / (np.trace(np.cov(xT[y_test == 0].T)) + np.trace(np.cov(xT[y_test == 1].T)))
        last = model.slice(r, times[-1])
        qbar = np.exp(last.log_q(xT)).mean(0)
        rows.append(
            {
                "acc": float(np.mean(probs[r].argmax(1) == y_test)),
                "fisher": float(fisher),
                "jvar": float(np.mean(kls)),
                "kl_end": float(last.kl_gap(xT).mean()),
                "cos": float(np.mean(coss)),
                "spread": float(np.linalg.norm(xT - xT.mean(0), axis=1).mean()),
                "n_eff": float(np.exp(entropy(np.log(qbar + 1e-300)))),
            }
        )
    return rows, paths


def hybrid_seed(cfg: HybridConfig, seed: int) -> tuple[dict[str, list[float]], dict[str, np.ndarray]]:
    """Train ``cfg`` with ``seed`` (replacing ``cfg.seed``) on :func:`moons_data`; measure on the test set.

    Returns ``row[measure] = [value per run]`` and ``curves["log"] (steps, M, 3)`` (the training log).
    """
    if not isinstance(cfg, HybridConfig):
        raise TypeError(f"cfg must be a HybridConfig, got {type(cfg).__name__}")
    X_train, y_train, X_test, y_test = moons_data()
    model, log = train_hybrid(dataclasses.replace(cfg, seed=int(seed)), X_train, y_train)
    rows, _ = hybrid_measurements(model, X_test, y_test)
    return {k: [rw[k] for rw in rows] for k in MEASURES}, {"log": log}
