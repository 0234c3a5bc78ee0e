"""§7.2: the sticky Markov-chain task, the Bayes bound, and EM-like vs SGD training (Table 1).

The task (our reading of §7.2; the chain itself is :func:`nextword.data.sticky_markov_chain`):

* states ``y_0, y_1, …, y_T`` of a Markov chain on ``C`` symbols (transition matrix ``P``);
* inputs ``x_t = μ_{y_{t-1}} + ε_t``, ``ε_t ~ N(0, σ² I_{d_x})`` for ``t = 1..T`` — each input
  carries the *previous* symbol; target at position ``t`` is ``y_t``;
* a causal single head predicts ``y_t`` from ``x_1..x_t``.

Since the chain is first order, the best possible predictor is the exact HMM filter
``p(y_t | x_{1:t}) = Σ_z p(y_{t-1}=z | x_{1:t}) P[z, y_t]`` (:func:`bayes_filter_log_probs`); its
cross-entropy is the honest floor for any model on the same sample. When the noise is small
compared with the distances between the means it approaches the entropy rate
``H(y_t | y_{t-1})`` (the paper's "theoretical min entropy", which assumes ``y_{t-1}`` is known).

Protocols (:func:`train_protocol`), mean cross-entropy, either full-batch on one training sequence or online
(a fresh sequence every step):

* ``"sgd"`` — gradient descent on ``W_Q, W_K, W_V, W_O, b`` with one learning rate ``lr``.
* ``"em"`` — per step: E-like forward pass (α, u); M-like closed-form value step
  ``Δv_j = -η_v Σ_i α_ij u_i`` (Eq. (33)) on the values of the training sequence, mapped back to
  ``W_V`` by least squares (``W_V ← argmin ||X W - (V + ΔV)||``, i.e.
  ``ΔW_V = -η_v (X^T X)^{-1} X^T α^T U``) so that the head stays a function of its input and can be evaluated
  on fresh data; then a small SGD step (``lr``) on ``W_Q, W_K, W_O, b`` only. (Updating a free
  per-position table ``v_t`` instead would let ``v_t`` memorise ``y_t`` — query ``t`` sees key ``t``.)

Conventions as in :mod:`nextword.theory.dynamics` (row vectors, ``X (T, d_x)``, log-probs
``(T, C)``, nats).

>>> P = np.array([[0.9, 0.1], [0.1, 0.9]])
>>> means = np.array([[5.0, 0.0], [-5.0, 0.0]])
>>> task = make_sticky_task(np.array([0, 0, 1, 1]), means, rng=np.random.default_rng(0))
>>> task.X.shape, task.targets.tolist()
((3, 2), [0, 1, 1])
>>> np.round(np.exp(bayes_filter_log_probs(task, P))[0], 3)   # x_1 reveals y_0 = 0
array([0.9, 0.1])
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from nextword._validate import (
    as_float_array,
    check_finite_scalar,
    as_generator,
    as_index_array,
    check_choice,
    check_positive_int,
    check_real,
)
from nextword.attention.core import log_softmax
from nextword.theory.dynamics.gradients import HeadParams, head_forward, head_gradients

__all__ = [
    "StickyTask",
    "sticky_means",
    "make_sticky_task",
    "bayes_filter_log_probs",
    "markov_entropy_rate",
    "mean_cross_entropy",
    "accuracy",
    "predictive_entropy",
    "mean_kl",
    "ProtocolConfig",
    "ProtocolRun",
    "train_protocol",
    "StickyExperimentConfig",
    "StickyExperiment",
    "run_sticky_experiment",
    "same_symbol_attention",
]


@dataclass(frozen=True)
class StickyTask:
    """Sampled sequence(s): ``states (..., T+1)`` = ``y_0..y_T``, ``X (..., T, d_x)``,
    ``means (C, d_x)``, ``noise_std`` σ; ``targets`` = ``states[..., 1:]`` (shape ``(..., T)``).
    Leading axes (if any) are a batch of independent sequences."""

    states: np.ndarray
    X: np.ndarray
    means: np.ndarray
    noise_std: float

    @property
    def targets(self) -> np.ndarray:
        """``y_1..y_T``, shape ``(..., T)``."""
        return self.states[..., 1:]

    @property
    def T(self) -> int:
        return self.X.shape[-2]


def sticky_means(num_states: int, d_x: int, *, rng: np.random.Generator, scale: float = 1.0) -> np.ndarray:
    """Symbol means ``μ_c ~ N(0, scale² I_{d_x})``, shape ``(num_states, d_x)`` (§7.2 leaves the
    means unspecified; this is our choice)."""
    C = check_positive_int(num_states, "num_states", minimum=2)
    d = check_positive_int(d_x, "d_x")
    scale = check_real(scale, "scale", lo=0.0)
    return scale * as_generator(rng, "rng", required=True).standard_normal((C, d))


def make_sticky_task(states: object, means: object, *, rng: np.random.Generator, noise_std: float = 1.0) -> StickyTask:
    """Inputs ``x_t = μ_{y_{t-1}} + σ ε_t`` for state sequence(s) ``y_0..y_T``, shape
    ``(..., T+1)`` (a 2-D array is a batch of sequences)."""
    means = as_float_array(means, "means", ndim=2)
    s = as_index_array(states, "states", upper=means.shape[0])
    if s.ndim < 1 or s.shape[-1] < 2:
        raise ValueError(f"states must have shape (..., T+1) with T >= 1, got {s.shape}")
    noise_std = check_real(noise_std, "noise_std", lo=0.0)
    rng = as_generator(rng, "rng", required=True)
    prev = s[..., :-1]  # (..., T): y_{t-1} for t = 1..T
    X = means[prev] + noise_std * rng.standard_normal(prev.shape + (means.shape[1],))  # (..., T, d_x)
    return StickyTask(states=s, X=X, means=means, noise_std=float(noise_std))


def _check_task(task: object) -> None:
    if not isinstance(task, StickyTask):
        raise TypeError(f"task must be a StickyTask (see make_sticky_task), got {type(task).__name__}")


def _check_transition(P: object, C: int | None = None) -> np.ndarray:
    P = as_float_array(P, "transition_matrix", ndim=2)
    if P.shape[0] != P.shape[1] or (C is not None and P.shape[0] != C):
        want = f"({C}, {C})" if C is not None else "square (C, C)"
        raise ValueError(f"transition_matrix must be {want}, got {P.shape}")
    if np.any(P < 0) or not np.allclose(P.sum(axis=1), 1.0, atol=1e-9):
        raise ValueError("transition_matrix must be row-stochastic (entries >= 0, rows sum to 1)")
    return P


def stationary_distribution(P: np.ndarray) -> np.ndarray:
    """Left eigenvector of ``P`` for eigenvalue 1, normalised (assumes an irreducible chain)."""
    w, vecs = np.linalg.eig(P.T)
    pi = np.real(vecs[:, np.argmin(np.abs(w - 1.0))])
    return pi / pi.sum()


def markov_entropy_rate(transition_matrix: object) -> float:
    """``H = -Σ_a π_a Σ_b P_ab log P_ab`` (nats) — ``H(y_t | y_{t-1})`` of the stationary chain.

    >>> print(f"{markov_entropy_rate(np.full((2, 2), 0.5)):.6f}")   # log 2
    0.693147
    """
    P = _check_transition(transition_matrix)
    pi = stationary_distribution(P)
    with np.errstate(divide="ignore", invalid="ignore"):
        plogp = np.where(P > 0, P * np.log(np.where(P > 0, P, 1.0)), 0.0)
    return float(-(pi * plogp.sum(axis=1)).sum())


def bayes_filter_log_probs(task: StickyTask, transition_matrix: object, *, initial: object = None) -> np.ndarray:
    """Exact ``log p(y_t | x_1..x_t)`` by HMM forward filtering, shape ``(T, C)``.

    Hidden state at position ``t`` is ``y_{t-1}``, emission ``N(μ_{y_{t-1}}, σ² I)``. ``initial``
    is the law of ``y_0`` (default: the stationary distribution of ``P``). With ``σ = 0`` the
    filter knows ``y_{t-1}`` and returns ``log P[y_{t-1}, ·]``.
    """
    _check_task(task)
    C = task.means.shape[0]
    if task.X.ndim != 2:
        raise ValueError(f"bayes_filter_log_probs needs one sequence, X (T, d_x); got {task.X.shape}")
    P = _check_transition(transition_matrix, C)
    prior = stationary_distribution(P) if initial is None else as_float_array(initial, "initial", ndim=1)
    if prior.shape != (C,):
        raise ValueError(f"initial must have shape ({C},), got {prior.shape}")
    sq = ((task.X[:, None, :] - task.means[None, :, :]) ** 2).sum(axis=-1)  # (T, C)
    if task.noise_std == 0:
        loglik = np.where(sq < 1e-12, 0.0, -np.inf)
    else:
        loglik = -0.5 * sq / task.noise_std**2  # up to a constant that cancels
    with np.errstate(divide="ignore"):
        log_prior, log_P = np.log(prior), np.log(P)
    out = np.empty((task.T, C))
    for t in range(task.T):
        log_post = log_softmax(log_prior + loglik[t])  # p(y_{t-1} | x_1..x_t)
        out[t] = _logsumexp(log_post[:, None] + log_P, axis=0)  # p(y_t | x_1..x_t)
        log_prior = out[t]
    return out


def _logsumexp(a: np.ndarray, axis: int) -> np.ndarray:
    m = np.max(a, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        return np.squeeze(m, axis=axis) + np.log(np.sum(np.exp(a - m), axis=axis))


# --------------------------------------------------------------------------------------------
# Table 1 metrics
# --------------------------------------------------------------------------------------------
def _lp(log_probs: object, name: str = "log_probs") -> np.ndarray:
    """``(T, C)`` log-probabilities: ``-inf`` allowed (probability 0), NaN and values above 0 (a
    probability above 1, e.g. an overflowed ``1e308``) refused by name."""
    lp = as_float_array(log_probs, name, ndim=2, finite=False)
    if np.isnan(lp).any() or (lp > 1e-9).any():
        raise ValueError(f"{name} must hold log-probabilities (<= 0, -inf allowed), got a NaN or a value > 0")
    return lp


def mean_cross_entropy(log_probs: object, targets: object) -> float:
    """``-(1/T) Σ_t log p_t(y_t)`` (nats per token)."""
    lp = _lp(log_probs)
    y = as_index_array(targets, "targets", upper=lp.shape[1])
    if y.shape != (lp.shape[0],):
        raise ValueError(f"targets must have shape ({lp.shape[0]},), got {y.shape}")
    return float(-lp[np.arange(lp.shape[0]), y].mean())


def accuracy(log_probs: object, targets: object) -> float:
    """Fraction of positions whose argmax prediction equals the target."""
    lp = _lp(log_probs)
    y = as_index_array(targets, "targets", upper=lp.shape[1])
    if y.shape != (lp.shape[0],):
        raise ValueError(f"targets must have shape ({lp.shape[0]},), got {y.shape}")
    return float(np.mean(np.argmax(lp, axis=1) == y))


def predictive_entropy(log_probs: object) -> float:
    """Mean over positions of ``H(p_t) = -Σ_c p_tc log p_tc`` (nats)."""
    lp = _lp(log_probs)
    p = np.exp(lp)
    return float(-np.sum(np.where(p > 0, p * lp, 0.0), axis=1).mean())


def mean_kl(log_p: object, log_q: object) -> float:
    """Mean over positions of ``KL(p_t || q_t)`` (nats) — Table 1's ``KL(EM || SGD)``."""
    a, b = _lp(log_p, "log_p"), _lp(log_q, "log_q")
    if a.shape != b.shape:
        raise ValueError(f"log_p and log_q must have the same shape (T, C), got {a.shape}, {b.shape}")
    p = np.exp(a)
    return float(np.sum(np.where(p > 0, p * (a - b), 0.0), axis=1).mean())


# --------------------------------------------------------------------------------------------
# EM-like vs SGD protocols
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ProtocolConfig:
    """Step budget and step sizes of the §7.2 protocols (the paper gives neither rate).

    ``lr``: SGD's rate on every parameter, and the EM-like protocol's "small SGD step" on
    ``W_Q, W_K, W_O, b`` (both on the mean loss over positions, so they do not depend on ``T``).
    ``value_lr``: ``η_v`` of the EM-like value step ``Δv_j = -η_v Σ_i α_ij u_i`` with the
    paper's ``u_i = W_O^T (p_i - e_{y_i})`` of the summed loss (9).
    """

    steps: int = 1000
    lr: float = 1.0
    value_lr: float = 5.0

    def __post_init__(self) -> None:
        check_positive_int(self.steps, "steps", minimum=0)
        for name in ("lr", "value_lr"):
            v = check_finite_scalar(getattr(self, name), name)
            if not v > 0:
                raise ValueError(f"{name} must be a positive finite number, got {v}")


@dataclass(frozen=True)
class ProtocolRun:
    """Curves ``losses, accuracies, entropies (steps+1,)`` on the training sequence (before each
    step, plus the final point), ``values_initial, values_final (T, d_v)`` (``V = X W_V`` of the
    training sequence), the final ``params`` and the ``initial`` ones."""

    protocol: str
    losses: np.ndarray
    accuracies: np.ndarray
    entropies: np.ndarray
    values_initial: np.ndarray
    values_final: np.ndarray
    params: HeadParams
    initial: HeadParams

    def log_probs(self, task: StickyTask) -> np.ndarray:
        """The trained head's causal ``log p(y_t | x_1..x_t)`` on ``task``, shape ``(T, C)``."""
        return head_forward(self.params, task.X, causal=True).log_probs


def train_protocol(
    protocol: str,
    params: HeadParams,
    task: StickyTask | Callable[[int], StickyTask],
    config: ProtocolConfig = ProtocolConfig(),
    *,
    probe: StickyTask | None = None,
) -> ProtocolRun:
    """Train a causal head with ``protocol`` ``"sgd"`` or ``"em"`` (see the module docstring).

    ``task`` is either one training sequence (every step is a full-batch step on it) or a callable
    ``step -> StickyTask`` giving a fresh sequence per step (online training; then the recorded
    curves are measured on sequences the head has not been trained on yet; ``task`` is called for
    ``step = 0..steps``). Curves are recorded on the step's sequence before its update; the last
    point is measured after the last update.
    ``probe`` (default: the fixed training sequence, required for online training) is the
    sequence whose values ``V = X W_V`` are recorded at the start and the end (Fig. 9).
    """
    if not isinstance(config, ProtocolConfig):
        raise TypeError(f"config must be a ProtocolConfig, got {type(config).__name__}")
    if probe is not None and not isinstance(probe, StickyTask):
        raise TypeError(f"probe must be a StickyTask or None, got {type(probe).__name__}")
    check_choice(protocol, "protocol", ("sgd", "em"))  # an array is named, not "truth value ... ambiguous"
    if not isinstance(params, HeadParams):
        raise TypeError(f"params must be HeadParams, got {type(params).__name__}")
    if isinstance(task, StickyTask):
        fixed = task
        get_task: Callable[[int], StickyTask] = lambda step: fixed  # noqa: E731
        probe = fixed if probe is None else probe
    elif callable(task):
        get_task = task
        if probe is None:
            raise ValueError("probe must be given when task is a callable (online training)")
    else:
        raise TypeError(f"task must be a StickyTask or a callable step -> StickyTask, got {type(task).__name__}")
    losses, accs, ents = [], [], []
    params = params.nudged()  # NEXTWORD_PERTURB (the perturbation pass); a no-op by default
    initial = params
    V0 = probe.X @ params.W_V  # (T_probe, d_v)
    for step in range(config.steps + 1):
        cur = get_task(step)  # online: steps + 1 sequences, the last one only measured
        X, y = cur.X, cur.targets
        g = head_gradients(params, X, y, causal=True, reduction="mean")
        if not np.isfinite(g.loss):
            raise FloatingPointError(f"{protocol} run diverged at step {step}")
        with np.errstate(divide="ignore"):
            lp = np.log(g.probs).reshape(-1, g.probs.shape[-1])  # (N, C)
        y = y.reshape(-1)  # (N,)
        losses.append(g.loss)
        accs.append(accuracy(lp, y))
        ents.append(predictive_entropy(lp))
        if step == config.steps:
            break
        if protocol == "sgd":
            params = params.sgd(g, config.lr)
        else:
            Xf = X.reshape(-1, X.shape[-1])  # (N, d_x)
            # Δv_j = -η_v Σ_i α_ij u_i, Eq. (33), u_i of each sequence's summed loss (9): the mean
            # reduction divided U by N = y.size, so multiply back. (..., T, d_v) -> (N, d_v).
            dV = (-config.value_lr * y.size * g.dV).reshape(-1, g.dV.shape[-1])
            params = params.sgd(g, config.lr, only=("W_Q", "W_K", "W_O", "b"))
            # least squares: ΔW_V = argmin ||X ΔW - ΔV|| = (X^T X)^{-1} X^T ΔV (normal equations)
            try:
                dW_V = np.linalg.solve(Xf.T @ Xf, Xf.T @ dV)  # (d_x, d_v)
            except np.linalg.LinAlgError:  # rank-deficient X (N < d_x): minimum-norm solution
                dW_V = np.linalg.lstsq(Xf, dV, rcond=None)[0]
            params = replace(params, W_V=params.W_V + dW_V)
    return ProtocolRun(
        protocol=protocol,
        losses=np.array(losses),
        accuracies=np.array(accs),
        entropies=np.array(ents),
        values_initial=V0,
        values_final=probe.X @ params.W_V,
        params=params,
        initial=initial,
    )


# --------------------------------------------------------------------------------------------
# the whole §7.2 experiment (Table 1, Figs. 6-9)
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class StickyExperimentConfig:
    """§7.2 set-up. Paper: 8 states, stay 0.3, ``d_x=20, d_k=10, d_v=15``, ``T=2000``, 1000 steps.

    Our choices where the paper is silent: the transition ``rule`` (``inverse_circular_distance``
    is the one that reproduces its "theoretical min entropy" 1.8833), means ``μ_c ~ N(0, I)``,
    Gaussian initialisation ``init_scale``, online training on ``batch`` fresh sequences of
    length ``T`` per step, and the rates in ``protocol``. Metrics are measured on one held-out
    sequence of length ``eval_T``.
    """

    num_states: int = 8
    stay_prob: float = 0.3
    rule: str = "inverse_circular_distance"
    d_x: int = 20
    d_k: int = 10
    d_v: int = 15
    noise_std: float = 1.0
    mean_scale: float = 1.0
    init_scale: float = 0.3
    batch: int = 8
    T: int = 64
    eval_T: int = 2000
    protocol: ProtocolConfig = ProtocolConfig(steps=300, lr=1.0, value_lr=5.0)


@dataclass(frozen=True)
class StickyExperiment:
    """Both runs, the held-out sequence, the chain's transition matrix and the Table 1 metrics.

    ``metrics`` keys: ``final_loss_em, final_loss_sgd, final_acc_em, final_acc_sgd,
    final_entropy_em, final_entropy_sgd, kl_em_sgd`` (held-out, nats), ``entropy_rate`` (the
    paper's "theoretical min entropy"), ``bayes_loss`` (exact filter on the held-out sequence),
    ``bayes_acc``.
    """

    config: StickyExperimentConfig
    transition: np.ndarray
    means: np.ndarray
    eval_task: StickyTask
    em: ProtocolRun
    sgd: ProtocolRun
    metrics: dict[str, float]


def run_sticky_experiment(
    config: StickyExperimentConfig = StickyExperimentConfig(), *, rng: np.random.Generator
) -> StickyExperiment:
    """Run EM-like and SGD from the same initialisation on the same stream of sequences."""
    if not isinstance(config, StickyExperimentConfig):
        raise TypeError(f"config must be a StickyExperimentConfig, got {type(config).__name__}")
    from nextword.data import sticky_markov_chain

    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy Generator, got {type(rng).__name__}")
    c = config
    chain = sticky_markov_chain(c.num_states, c.stay_prob, rule=c.rule)
    P = chain.transition  # (C, C)
    means = sticky_means(c.num_states, c.d_x, rng=rng, scale=c.mean_scale)
    eval_task = make_sticky_task(chain.sample(c.eval_T + 1, rng), means, rng=rng, noise_std=c.noise_std)
    params0 = HeadParams.init(c.d_x, c.d_k, c.d_v, c.num_states, rng=rng, scale=c.init_scale)
    stream = [
        make_sticky_task(
            np.stack([chain.sample(c.T + 1, rng) for _ in range(c.batch)]), means, rng=rng, noise_std=c.noise_std
        )
        for _ in range(c.protocol.steps + 1)
    ]  # (batch, T+1) states per step
    runs = {k: train_protocol(k, params0, stream.__getitem__, c.protocol, probe=eval_task) for k in ("em", "sgd")}
    y = eval_task.targets
    lp = {k: r.log_probs(eval_task) for k, r in runs.items()}
    bayes = bayes_filter_log_probs(eval_task, P)
    metrics = {}
    for k in ("em", "sgd"):
        metrics[f"final_loss_{k}"] = mean_cross_entropy(lp[k], y)
        metrics[f"final_acc_{k}"] = accuracy(lp[k], y)
        metrics[f"final_entropy_{k}"] = predictive_entropy(lp[k])
    metrics["kl_em_sgd"] = mean_kl(lp["em"], lp["sgd"])
    metrics["entropy_rate"] = markov_entropy_rate(P)
    metrics["bayes_loss"] = mean_cross_entropy(bayes, y)
    metrics["bayes_acc"] = accuracy(bayes, y)
    return StickyExperiment(
        config=c, transition=P, means=means, eval_task=eval_task, em=runs["em"], sgd=runs["sgd"], metrics=metrics
    )


def same_symbol_attention(alpha: object, task: StickyTask) -> float:
    """Mean attention mass a query puts on keys that carry the same previous symbol as itself.

    ``alpha (T, T)`` (causal) on a single ``task``: key ``j`` is "right" for query ``t`` when
    ``y_{j-1} = y_{t-1}`` (its input has the same mean). 1 = perfect routing for this task.
    """
    a = as_float_array(alpha, "alpha", ndim=2)
    _check_task(task)
    prev = task.states[:-1]  # (T,): y_{t-1}
    if a.shape != (prev.size, prev.size):
        raise ValueError(f"alpha must have shape (T, T) = {(prev.size, prev.size)}, got {a.shape}")
    return float((a * (prev[:, None] == prev[None, :])).sum(axis=1).mean())
