"""Part 3 §7.2, Table 1 at the paper's size: one seed of the EM-like vs SGD comparison, summarised.

:func:`table1_seed` runs :func:`~nextword.theory.dynamics.sticky.run_sticky_experiment` for one seed
and returns the numbers the book's Table 1 and its robustness check print (held-out losses, the
paired difference with its standard error, KL(EM‖SGD), the Bayes-filter floor, the right-key
attention mass, the step at which each smoothed loss curve first reaches "Bayes + 0.1") and the
per-step curves (Figs. 6–8). The saved run (``nextword results run dynamics_table1``)
calls it for seeds 0–4 with :data:`PAPER_TABLE1`.

>>> from nextword.theory.dynamics.sticky import ProtocolConfig, StickyExperimentConfig
>>> tiny = StickyExperimentConfig(batch=1, T=16, eval_T=64, protocol=ProtocolConfig(steps=25))
>>> row, curves = table1_seed(tiny, 0)
>>> sorted(curves), curves["losses_em"].shape  # (steps + 1,)
(['accuracies_em', 'accuracies_sgd', 'entropies_em', 'entropies_sgd', 'losses_em', 'losses_sgd'], (26,))
>>> bool(abs(row["delta_loss"] - (row["final_loss_em"] - row["final_loss_sgd"])) < 1e-12)
True
"""

from __future__ import annotations

import numpy as np

from .gradients import head_forward
from .sticky import (
    ProtocolConfig,
    StickyExperimentConfig,
    bayes_filter_log_probs,
    run_sticky_experiment,
    same_symbol_attention,
)

__all__ = ["PAPER_TABLE1", "SMOOTH", "smooth", "table1_seed"]

#: The paper's size (§7.2): sequences of T = 2000, 1000 steps; one fresh sequence per step, a held-out
#: sequence of 4000 tokens; our rates (the paper gives none), as in notebook 3.3.
PAPER_TABLE1 = StickyExperimentConfig(
    batch=1, T=2000, eval_T=4000, protocol=ProtocolConfig(steps=1000, lr=1.0, value_lr=5.0)
)
#: Width of the moving average used for "steps to Bayes + 0.1" (as in the notebook's figures).
SMOOTH = 20


def smooth(x: np.ndarray, k: int = SMOOTH) -> np.ndarray:
    """Moving average of width ``k`` (``mode="valid"``): ``(n,)`` → ``(n - k + 1,)``.

    >>> smooth(np.arange(4.0), 2).tolist()
    [0.5, 1.5, 2.5]
    """
    return np.convolve(np.asarray(x, dtype=float), np.ones(k) / k, mode="valid")


def _steps_to(losses: np.ndarray, target: float) -> int:
    """First step at which the ``SMOOTH``-step average reaches ``target`` (-1: never)."""
    s = smooth(losses)
    return int(np.argmax(s <= target)) + SMOOTH - 1 if np.any(s <= target) else -1


def table1_seed(config: StickyExperimentConfig, seed: int) -> tuple[dict[str, float], dict[str, np.ndarray]]:
    """One seed of §7.2: ``(row, curves)``.

    ``row``: the metrics of :class:`~nextword.theory.dynamics.sticky.StickyExperiment` plus
    ``delta_loss`` (EM − SGD, held-out mean), ``paired_se`` (standard error of the per-token
    difference), ``steps_to_bayes01_em/sgd``, ``right_mass_start/em/sgd`` (attention on keys with the
    same previous symbol). ``curves``: per-step loss, accuracy, entropy of both protocols ``(steps + 1,)``.
    The generator is ``np.random.default_rng(seed)``, as in notebook 3.3.
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    e = run_sticky_experiment(config, rng=np.random.default_rng(int(seed)))
    y = e.eval_task.targets  # (eval_T,)
    nll = {r.protocol: -r.log_probs(e.eval_task)[np.arange(len(y)), y] for r in (e.em, e.sgd)}  # (eval_T,)
    paired = nll["em"] - nll["sgd"]
    lp_bayes = bayes_filter_log_probs(e.eval_task, e.transition)
    row = {k: float(v) for k, v in e.metrics.items()}
    row["delta_loss"] = float(paired.mean())
    row["paired_se"] = float(paired.std(ddof=1) / np.sqrt(len(paired)))
    for r in (e.em, e.sgd):
        diff = nll[r.protocol] + lp_bayes[np.arange(len(y)), y]  # excess over the Bayes filter per token
        row[f"excess_over_bayes_{r.protocol}"] = float(diff.mean())
        row[f"excess_over_bayes_se_{r.protocol}"] = float(diff.std(ddof=1) / np.sqrt(len(diff)))
        row[f"steps_to_bayes01_{r.protocol}"] = _steps_to(r.losses, row["bayes_loss"] + 0.1)
    mass = lambda p: same_symbol_attention(head_forward(p, e.eval_task.X, causal=True).alpha, e.eval_task)  # noqa: E731
    row["right_mass_start"] = float(mass(e.em.initial))
    row["right_mass_em"] = float(mass(e.em.params))
    row["right_mass_sgd"] = float(mass(e.sgd.params))
    curves = {
        f"{key}_{r.protocol}": np.asarray(getattr(r, key), dtype=float)
        for r in (e.em, e.sgd)
        for key in ("losses", "accuracies", "entropies")
    }
    return row, curves
