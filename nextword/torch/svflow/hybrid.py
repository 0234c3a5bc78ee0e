"""Hybrid training of a 2-D Gaussian SVFlow (Liao, §3.3, Eqs. 14–16, App. C.1, Fig. 1) — torch.

The model: ``Z`` diagonal-Gaussian components whose parameters depend on time through a small MLP,
``q(z|x) = softmax_z log q_t(x|z)`` and ``p_t(x|z)``, integrated by forward Euler
``x_{k+1} = x_k + dt v_{t_k}(x_k)`` with the SVFlow field of Eq. (9) from ``t = 0`` to ``T``; a linear
softmax classifier ``p_T(y|x_T)`` on the end state. The objective (Eq. 16) is

    J_hybrid = J_align + beta * J_var,   J_align = E[-log p_T(y|x_T)]  (Eq. 15),
    J_var = E_{t ~ U(0,T), x_0} KL(q_t(z|x_t) || p_t(z|x_t))                 (Eq. 14, lambda = 1),

with the time expectation taken over the Euler grid; ``beta=None`` trains ``J_var`` alone (the
``beta -> infinity`` case of Fig. 1b). :func:`make_moons` draws the two-moons data (no scikit-learn).

This module imports torch (CPU is enough); the numpy library never imports it. After training,
:meth:`HybridSVFlow.slice` returns a numpy :class:`~nextword.theory.svflow.flow.GaussianSVFlow` for any
``t``, so all analysis (ELBO, ``epsilon``, alignment) reuses the numpy implementation.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from nextword._validate import check_positive_int
from nextword.perturbation import nudge_module_
from nextword.theory.svflow.flow import GaussianSVFlow
from nextword.torch.training.checkpoint import resume_from, save_checkpoint
from nextword.torch.training.engine import fit

__all__ = ["make_moons", "HybridConfig", "HybridSVFlow", "train_hybrid", "LOG_VAR_RANGE"]

LOG_VAR_RANGE = (-4.0, 1.0)  # keeps dt / sigma^2 <= 0.55 at dt = 0.01: forward Euler stays stable


def make_moons(n: int, noise: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Two interleaving half circles (the construction of scikit-learn's ``make_moons``).

    Returns ``X (n, 2)`` float64 and labels ``y (n,)`` in ``{0, 1}`` (``n // 2`` of class 0), with
    isotropic Gaussian noise of standard deviation ``noise``. Points are shuffled.
    """
    n = check_positive_int(n, "n", minimum=2)
    if not isinstance(rng, np.random.Generator):
        raise TypeError("rng must be a numpy.random.Generator")
    if noise < 0:
        raise ValueError(f"noise must be >= 0, got {noise}")
    n0 = n // 2
    t0 = np.linspace(0, np.pi, n0)
    t1 = np.linspace(0, np.pi, n - n0)
    X = np.concatenate([np.c_[np.cos(t0), np.sin(t0)], np.c_[1 - np.cos(t1), 0.5 - np.sin(t1)]])
    y = np.concatenate([np.zeros(n0, dtype=np.int64), np.ones(n - n0, dtype=np.int64)])
    X = X + noise * rng.standard_normal(X.shape)
    perm = rng.permutation(n)
    return X[perm], y[perm]


@dataclass(frozen=True)
class HybridConfig:
    """Settings of App. C.1 shared by all runs; ``betas`` lists the runs trained side by side, with
    ``None`` meaning ``J_var`` only (Fig. 1b). ``steps`` = optimiser steps."""

    betas: tuple[float | None, ...] = (0.0, 0.1, 0.5, None)
    n_components: int = 8
    dim: int = 2
    n_classes: int = 2
    hidden: int = 64
    time_features: int = 16
    dt: float = 0.01
    T: float = 1.0
    batch_size: int = 512
    lr: float = 0.01
    steps: int = 10_000
    grad_clip: float | None = 1.0
    seed: int = 0

    @property
    def n_steps(self) -> int:
        return int(round(self.T / self.dt))


class _StackedLinear(nn.Module):
    """``M`` independent linear maps applied to a stacked input ``(M, n, i) -> (M, n, o)``."""

    def __init__(self, M: int, i: int, o: int) -> None:
        super().__init__()
        bound = 1.0 / math.sqrt(i)  # torch.nn.Linear's default initialisation range
        self.weight = nn.Parameter(torch.empty(M, i, o).uniform_(-bound, bound))
        self.bias = nn.Parameter(torch.empty(M, 1, o).uniform_(-bound, bound))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.baddbmm(self.bias, x, self.weight)


class HybridSVFlow(nn.Module):
    """``M = len(cfg.betas)`` independent time-conditioned Gaussian SVFlows + linear classifiers.

    The runs share nothing but the mini-batches; training them in one stacked module is exactly
    equivalent to training them one by one (Adam acts element-wise and the loss is a sum of the runs'
    losses), and about ``M`` times faster on a CPU where small-op overhead dominates.
    Per run, an MLP (3 linear layers, hidden width ``hidden``, SiLU) maps sinusoidal features of ``t``
    to the four ``(Z, d)`` parameter arrays; log-variances are squashed into :data:`LOG_VAR_RANGE`.
    """

    def __init__(self, cfg: HybridConfig) -> None:
        super().__init__()
        self.cfg = cfg
        M, Z, d, h = len(cfg.betas), cfg.n_components, cfg.dim, cfg.hidden
        if M == 0:
            raise ValueError("cfg.betas must list at least one run")
        self.l1 = _StackedLinear(M, 2 * cfg.time_features, h)
        self.l2 = _StackedLinear(M, h, h)
        self.l3 = _StackedLinear(M, h, 4 * Z * d)
        self.classifier = _StackedLinear(M, d, cfg.n_classes)
        self.register_buffer("freqs", torch.arange(1, cfg.time_features + 1, dtype=torch.float32) * math.pi / cfg.T)
        w_align = [0.0 if b is None else 1.0 for b in cfg.betas]
        w_var = [1.0 if b is None else float(b) for b in cfg.betas]
        self.register_buffer("w_align", torch.tensor(w_align))
        self.register_buffer("w_var", torch.tensor(w_var))

    @property
    def M(self) -> int:
        return len(self.cfg.betas)

    def params(self, t: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """``t (n_t,)`` -> ``q_means, q_log_vars, p_means, p_log_vars``, each ``(M, n_t, Z, d)``."""
        feats = torch.cat([torch.sin(t[:, None] * self.freqs), torch.cos(t[:, None] * self.freqs)], dim=1)
        hdn = nn.functional.silu(self.l1(feats.expand(self.M, -1, -1)))
        out = self.l3(nn.functional.silu(self.l2(hdn)))
        out = out.view(self.M, t.shape[0], 4, self.cfg.n_components, self.cfg.dim)  # (M, n_t, 4, Z, d)
        lo, hi = LOG_VAR_RANGE
        squash = lambda r: lo + (hi - lo) * torch.sigmoid(r)  # noqa: E731
        return out[:, :, 0] * 2.0, squash(out[:, :, 1]), out[:, :, 2] * 2.0, squash(out[:, :, 3])

    def forward(self, x0: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Integrate ``x0 (B, d)`` (same start for every run) by forward Euler.

        Returns the paths ``(M, n_steps+1, B, d)``, ``KL(q||p)`` per step ``(M, n_steps, B)`` and the
        classifier logits ``(M, B, n_classes)``. Gaussian log-densities are expanded as
        ``-1/2 sum_i a_i x_i^2 + sum_i a_i m_i x_i + c`` (``a = 1/sigma^2``) so that each Euler step
        is a handful of batched matmuls.
        """
        cfg = self.cfg
        t = torch.arange(cfg.n_steps, dtype=torch.float32) * cfg.dt
        qm, qlv, pm, plv = self.params(t)
        Z, d = cfg.n_components, cfg.dim
        m = torch.cat([qm, pm], dim=2)  # (M, n_t, 2Z, d): q then p components
        lv = torch.cat([qlv, plv], dim=2)
        a = torch.exp(-lv)  # precisions
        ma = m * a
        c = -0.5 * (m * ma + lv + math.log(2 * math.pi)).sum(-1)  # (M, n_t, 2Z)
        W = torch.cat([-0.5 * a, ma], dim=3).transpose(2, 3)  # (M, n_t, 2d, 2Z): [x^2, x] @ W + c
        R = torch.cat([ma[:, :, Z:], a[:, :, Z:]], dim=3)  # (M, n_t, Z, 2d): q @ R = [q.(m a), q.a]
        Ws, Rs, cs = W.unbind(1), R.unbind(1), c[:, :, None, :].unbind(1)
        x = x0.expand(self.M, -1, -1)  # (M, B, d)
        path, kls = [x], []
        for k in range(cfg.n_steps):
            logits = torch.baddbmm(cs[k], torch.cat([x * x, x], dim=-1), Ws[k])  # (M, B, 2Z)
            lg = logits.view(self.M, -1, 2, Z)
            lg = lg - lg.amax(-1, keepdim=True).detach()  # log-softmax by hand: torch's kernel
            log_q, log_p = (lg - lg.exp().sum(-1, keepdim=True).log()).unbind(2)  # is slow for Z = 8
            q = log_q.exp()
            kls.append((q * (log_q - log_p)).sum(-1))
            r = torch.bmm(q, Rs[k])  # (M, B, 2d)
            # Eq. (9): v = sum_z q_z a_z (m_z - x) = q.(m a) - x * (q.a), p-components only
            x = x + cfg.dt * (r[..., :d] - x * r[..., d:])
            path.append(x)
        return torch.stack(path, 1), torch.stack(kls, 1), self.classifier(x)

    def losses(self, x0: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Per-run ``(J_hybrid, J_align, J_var)``, each ``(M,)``, on one mini-batch."""
        _, kls, logits = self(x0)
        j_align = nn.functional.cross_entropy(logits.transpose(1, 2), y.expand(self.M, -1), reduction="none").mean(1)
        j_var = kls.mean(dim=(1, 2))
        return self.w_align * j_align + self.w_var * j_var, j_align, j_var

    def slice(self, run: int, t: float) -> GaussianSVFlow:
        """The numpy :class:`GaussianSVFlow` of run ``run`` at time ``t`` (float64 copy)."""
        with torch.no_grad():
            qm, qlv, pm, plv = (p[run, 0].double().numpy() for p in self.params(torch.tensor([float(t)])))
        return GaussianSVFlow(qm, qlv, pm, plv)

    @torch.no_grad()
    def flow(self, x0: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Numpy convenience: paths ``(M, n_steps+1, N, d)`` and class probabilities ``(M, N, C)``."""
        path, _, logits = self(torch.as_tensor(x0, dtype=torch.float32))
        return path.double().numpy(), torch.softmax(logits, -1).double().numpy()


def train_hybrid(
    cfg: HybridConfig,
    X: np.ndarray,
    y: np.ndarray,
    *,
    out_dir: str | os.PathLike | None = None,
    checkpoint_every: int = 500,
    resume: bool = False,
    stop_after: int | None = None,
    progress: bool = False,
) -> tuple[HybridSVFlow, np.ndarray]:
    """Adam (lr ``cfg.lr``, betas (0.9, 0.999), no weight decay) on ``J_align + beta J_var`` for every
    run of ``cfg.betas`` (``J_var`` alone for ``None``); mini-batches of ``cfg.batch_size`` drawn from
    ``(X, y)`` with a generator seeded by ``cfg.seed``. Each run's gradient is clipped to norm
    ``cfg.grad_clip`` (not in App. C.1; without it the 100-step Euler unroll occasionally blows up
    at lr 0.01); ``grad_clip=None`` switches clipping off.

    The steps run on the book's one loop, :func:`nextword.torch.training.engine.fit`. Given ``out_dir`` it
    checkpoints every ``checkpoint_every`` steps (model, optimiser, the batch generator's state, the log so
    far) and ``resume=True`` continues from there, returning exactly what an uninterrupted run returns;
    ``stop_after`` stops after that many steps (with a checkpoint), e.g. to test ``resume``.

    Returns the model and the log ``(steps, M, 3)`` of ``[J_hybrid, J_align, J_var]`` per step and run (its
    first ``stop_after`` rows when stopped early).
    """
    check_positive_int(cfg.steps, "cfg.steps")
    if (resume or stop_after is not None) and out_dir is None:
        raise ValueError("resume and stop_after need out_dir (where the checkpoints are)")
    torch.manual_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    model = HybridSVFlow(cfg)
    nudge_module_(model, "train_hybrid")  # NEXTWORD_PERTURB (the perturbation pass); a no-op by default
    params = list(model.parameters())
    # foreach: the multi-tensor Adam, bitwise the same steps as the per-parameter loop (tested), faster
    opt = torch.optim.Adam(params, lr=cfg.lr, betas=(0.9, 0.999), weight_decay=0.0, foreach=True)
    Xt, yt = torch.as_tensor(X, dtype=torch.float32), torch.as_tensor(y, dtype=torch.long)
    log = np.zeros((cfg.steps, model.M, 3))
    settings = json.dumps({"config": repr(cfg), "data": [list(Xt.shape), float(Xt.double().sum()), int(yt.sum())]})
    out = None if out_dir is None else Path(out_dir)
    done = 0
    ck = (
        resume_from(out, lambda c: c.get("settings") == settings, {"model": model, "optimizer": opt})
        if resume
        else None
    )
    if ck is not None:
        rng.bit_generator.state = json.loads(ck["rng"])
        done = int(ck["done"])
        log[:done] = ck["log"].numpy()

    def step(i: int) -> dict[str, float]:
        idx = torch.as_tensor(rng.integers(0, len(X), size=cfg.batch_size))
        j_h, j_a, j_v = model.losses(Xt[idx], yt[idx])
        opt.zero_grad()
        j_h.sum().backward()
        if cfg.grad_clip is not None:  # per run: each run's parameters are slice [m] of every tensor
            norms = torch.sqrt(sum((p.grad.flatten(1) ** 2).sum(1) for p in params))  # (M,)
            scale = torch.clamp(cfg.grad_clip / (norms + 1e-12), max=1.0)
            for p in params:
                p.grad.mul_(scale.view(-1, *([1] * (p.grad.dim() - 1))))
        opt.step()
        log[i] = torch.stack([j_h, j_a, j_v], 1).detach().numpy()
        return {"J_hybrid": float(log[i, :, 0].mean())}

    def checkpoint(n: int) -> None:
        out.mkdir(parents=True, exist_ok=True)
        state = {
            "model": model.state_dict(),
            "optimizer": opt.state_dict(),
            "rng": json.dumps(rng.bit_generator.state),
            "done": n,
            "log": torch.from_numpy(log[:n].copy()),
            "settings": settings,
        }
        save_checkpoint(state, out)

    stop = cfg.steps if stop_after is None else min(cfg.steps, int(stop_after))
    fit(
        step,
        start=done,
        stop=max(stop, done),
        total=cfg.steps,
        checkpoint=checkpoint if out is not None else None,
        checkpoint_every=checkpoint_every,
        progress=progress,
        desc="hybrid SVFlow",
    )
    return model, log[: max(stop, done)]
