"""Fig. 6.28 measured (§6.5): four positional encodings trained at one length, tested at a longer one.

The source is an order-2 Markov chain on 8 symbols (``markov_source(8, 2, rng(0), concentration=0.3)``),
whose entropy rate is the lowest loss any model can reach at every position. Each variant
(``sinusoidal``, ``learned``, ``rope``, ``none``) is a 2-layer :class:`~nextword.torch.models.lm.TinyLM`
trained on windows of ``L_train`` tokens and scored position by position on windows of ``L_test``
(:func:`nextword.torch.probes.ablation.position_losses`). The learned model gets an ``L_test``-row table whose
rows beyond ``L_train`` are never trained. Notebook 6.5 runs :data:`DEFAULT_FIG628` for one seed;
the saved run (``nextword results run positions_fig628``) repeats it over seeds.

>>> cfg = Fig628Config(width=8, steps=3, num_windows=2)
>>> out = fig628_seed(cfg, 0)
>>> sorted(out.curves), out.curves["rope"].shape
(['learned', 'none', 'rope', 'sinusoidal'], (128,))
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nextword._validate import check_positive_int

from nextword.torch.probes.ablation import position_losses
from nextword.data.synthetic import MarkovSource, markov_source
from nextword.positions import ENCODINGS
from nextword.torch.models.lm import LMConfig, TinyLM
from nextword.torch.training.token_lm import train_lm

__all__ = ["VARIANTS", "Fig628Config", "DEFAULT_FIG628", "Fig628Run", "fig628_source", "fig628_seed"]

#: The four encodings of §6.5 (:data:`nextword.positions.ENCODINGS`), in the figure's order.
VARIANTS = tuple(ENCODINGS)


@dataclass(frozen=True)
class Fig628Config:
    """Sizes of the Fig. 6.28 measurement: model ``width`` (2 layers, 2 heads), ``steps`` of AdamW at ``lr``
    on ``batch`` windows of ``L_train`` tokens from a training stream of ``n_train`` tokens; the test
    uses ``num_windows`` windows of ``L_test`` targets."""

    width: int = 16
    steps: int = 600
    L_train: int = 32
    L_test: int = 128
    batch: int = 16
    lr: float = 1e-2
    n_train: int = 30_000
    num_windows: int = 128

    def __post_init__(self) -> None:
        for name in ("width", "steps", "L_train", "L_test", "batch", "n_train", "num_windows"):
            check_positive_int(getattr(self, name), f"{type(self).__name__}.{name}")
        if self.L_test <= self.L_train:
            raise ValueError(f"L_test must exceed L_train = {self.L_train}, got {self.L_test}")


#: What notebook 6.5 runs (seed 0) and the saved run repeats over seeds 0-3.
DEFAULT_FIG628 = Fig628Config()


@dataclass(frozen=True)
class Fig628Run:
    """Per-position test losses ``curves[variant] (L_test,)`` and the trained ``models``."""

    curves: dict[str, np.ndarray]
    models: dict[str, TinyLM]


def fig628_source() -> tuple[MarkovSource, np.ndarray]:
    """The order-2 source and its test stream (``128 * 129`` tokens, generator seed 2)."""
    src = markov_source(8, 2, np.random.default_rng(0), concentration=0.3)
    return src, src.sample(128 * 129, np.random.default_rng(2))


def fig628_seed(cfg: Fig628Config, seed: int) -> Fig628Run:
    """Train the four variants with ``seed`` (initialisation and batches) and score them on the test stream.

    The training stream (generator seed 1) and the test stream are the same for every seed, so seeds
    differ only in the models' initialisation and the order of the training windows.
    """
    if not isinstance(cfg, Fig628Config):
        raise TypeError(f"cfg must be a Fig628Config, got {type(cfg).__name__}")
    src, test_stream = fig628_source()
    if cfg.num_windows * (cfg.L_test + 1) > test_stream.size:
        raise ValueError(
            f"num_windows * (L_test + 1) must be <= {test_stream.size}, got {cfg.num_windows * (cfg.L_test + 1)}"
        )
    train_stream = src.sample(cfg.n_train, np.random.default_rng(1))
    curves, models = {}, {}
    for v in VARIANTS:
        lm_cfg = LMConfig(
            vocab_size=8,
            d_model=cfg.width,
            num_heads=2,
            num_layers=2,
            max_len=cfg.L_test if v == "learned" else cfg.L_train,
            positional=v,
        )
        model = TinyLM(lm_cfg, seed=seed)
        train_lm(
            model,
            train_stream,
            steps=cfg.steps,
            batch_size=cfg.batch,
            block_size=cfg.L_train,
            lr=cfg.lr,
            seed=seed,
            progress=False,
        )
        curves[v] = position_losses(model, test_stream, cfg.L_test, num_windows=cfg.num_windows)  # (L_test,)
        models[v] = model
    return Fig628Run(curves, models)
