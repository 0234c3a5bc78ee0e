"""Linear state-space models (SSMs): continuous time (C.1–C.3), discretisation (C.4), scan and kernel.

Formulation paper (Baptista, Stuart, Tran), §5.3.4 Eq. (5.9) and Appendix C.

Convention
----------
Column-vector convention of Appendix C: the state ``v ∈ R^s`` evolves by
``dv/dt = A v + B h(t)`` and the output is ``u = C v + D h`` with ``A (s, s)``, ``B (s, d)``,
``C (d, s)``, ``D (d, d)``. Sequences are stored as rows, ``h`` of shape ``(T, d)``, so in code
``v @ A.T`` is ``A v``.

Discrete recurrence (the corrected (C.4), zero-order hold: ``h`` constant on ``[t_k, t_{k+1})``)::

    v_{k+1} = Ā v_k + B̄ h_k,      Ā = e^{AΔt},   B̄ = (∫_0^Δt e^{Az} dz) B
    u_k     = C v_k + D h_k

so ``u_k`` depends on ``h_0, …, h_k`` only (causal) and a length-``T`` sequence costs ``O(T)``.
Unrolled, it is a causal convolution with kernel ``K_j = C Ā^j B̄`` (:func:`ssm_kernel`).

Worked example (scalar decay driven by a constant input; the exact state is ``1 - e^{-t}``)::

    >>> Ab, Bb = discretize_zoh(np.array([[-1.0]]), np.array([[1.0]]), 0.5)
    >>> v, u = ssm_scan(Ab, Bb, np.eye(1), np.zeros((1, 1)), np.ones((3, 1)), np.zeros(1))
    >>> np.round(v[:, 0], 4)           # states at t = 0, 0.5, 1.0
    array([0.    , 0.3935, 0.6321])
"""

from __future__ import annotations

import numbers
from collections.abc import Callable

import numpy as np

from nextword._validate import as_float_array, check_callable, check_finite_scalar, check_positive_int

__all__ = [
    "discretize_zoh",
    "discretize_euler",
    "ssm_scan",
    "ssm_kernel",
    "ssm_convolve",
    "ssm_exact_state",
]


def _dt(dt: object) -> float:
    if isinstance(dt, (bool, np.bool_)) or not isinstance(dt, numbers.Real):
        raise TypeError(f"dt must be a real number, got {type(dt).__name__}")
    dt = float(dt)
    if not np.isfinite(dt) or dt <= 0:
        raise ValueError(f"dt must be > 0 and finite, got {dt}")
    return dt


def _check_AB(A: object, B: object, names: tuple[str, str] = ("A", "B")) -> tuple[np.ndarray, np.ndarray]:
    """``A (s, s)``, ``B (s, d)`` as float64; errors name them as ``names`` (``Abar``, ``Bbar``
    for the discrete system)."""
    a, b = names
    A = as_float_array(A, a, ndim=2).astype(np.float64)
    B = as_float_array(B, b, ndim=2).astype(np.float64)
    if A.shape[0] != A.shape[1] or A.shape[0] == 0:
        raise ValueError(f"{a} must be square (s, s) with s >= 1, got {A.shape}")
    if B.shape[0] != A.shape[0]:
        raise ValueError(f"{b} must have shape (s, d) with s = {A.shape[0]}, got {B.shape}")
    return A, B


def discretize_zoh(A: object, B: object, dt: float) -> tuple[np.ndarray, np.ndarray]:
    """Zero-order-hold discretisation (corrected (C.4a)): ``Ā = e^{AΔt}``, ``B̄ = ∫_0^Δt e^{Az} dz B``.

    Exact for inputs that are constant on each step. Computed with one block exponential
    ``expm([[A, B], [0, 0]] Δt) = [[Ā, B̄], [0, I]]``, so it also works for singular ``A``.
    Shapes: ``A (s, s)``, ``B (s, d)`` → ``Ā (s, s)``, ``B̄ (s, d)``.
    """
    A, B = _check_AB(A, B)
    dt = _dt(dt)
    s, d = B.shape
    M = np.zeros((s + d, s + d))
    M[:s, :s] = A
    M[:s, s:] = B
    import scipy.linalg  # imported where used: scipy.linalg and scipy.integrate take about a second to import

    E = scipy.linalg.expm(M * dt)  # (s + d, s + d)
    return E[:s, :s], E[:s, s:]


def discretize_euler(A: object, B: object, dt: float) -> tuple[np.ndarray, np.ndarray]:
    """Forward-Euler discretisation ``Ā = I + Δt A``, ``B̄ = Δt B`` (first order; for comparison)."""
    A, B = _check_AB(A, B)
    dt = _dt(dt)
    return np.eye(A.shape[0]) + dt * A, dt * B


def _check_system(Abar, Bbar, C, D, h, v0):
    Abar, Bbar = _check_AB(Abar, Bbar, ("Abar", "Bbar"))
    s, d = Bbar.shape
    C = as_float_array(C, "C", ndim=2).astype(np.float64)
    D = as_float_array(D, "D", ndim=2).astype(np.float64)
    h = as_float_array(h, "h", ndim=2).astype(np.float64)
    v0 = as_float_array(v0, "v0", ndim=1).astype(np.float64)
    if C.shape[1] != s:
        raise ValueError(f"C must have shape (d_out, {s}), got {C.shape}")
    if D.shape != (C.shape[0], d):
        raise ValueError(f"D must have shape ({C.shape[0]}, {d}), got {D.shape}")
    if h.shape[1] != d:
        raise ValueError(f"h must have shape (T, {d}), got {h.shape}")
    if v0.shape != (s,):
        raise ValueError(f"v0 must have shape ({s},), got {v0.shape}")
    return Abar, Bbar, C, D, h, v0


def ssm_scan(Abar: object, Bbar: object, C: object, D: object, h: object, v0: object) -> tuple[np.ndarray, np.ndarray]:
    """Run the recurrence (5.9) with linear f, g: ``v_{k+1} = Ā v_k + B̄ h_k``, ``u_k = C v_k + D h_k``.

    Parameters: ``Abar (s, s)``, ``Bbar (s, d)``, ``C (d_out, s)``, ``D (d_out, d)``, inputs
    ``h (T, d)``, initial state ``v0 (s,)``. Returns ``(v, u)`` with ``v (T, s)`` the states
    ``v_0..v_{T-1}`` and ``u (T, d_out)``. One pass: ``O(T s (s + d))`` operations.
    """
    Abar, Bbar, C, D, h, v0 = _check_system(Abar, Bbar, C, D, h, v0)
    T = h.shape[0]
    v = np.empty((T, v0.size))
    state = v0
    for k in range(T):
        v[k] = state
        state = Abar @ state + Bbar @ h[k]
    u = v @ C.T + h @ D.T  # (T, d_out)
    return v, u


def ssm_kernel(Abar: object, Bbar: object, C: object, T: int) -> np.ndarray:
    """Convolution kernel ``K_j = C Ā^{j-1} B̄`` for ``j = 1..T-1`` and ``K_0 = 0``, shape ``(T, d_out, d)``.

    With ``v_0 = 0``, ``u_k = D h_k + sum_{j=1}^{k} K_j h_{k-j}`` (see :func:`ssm_convolve`).
    """
    Abar, Bbar = _check_AB(Abar, Bbar, ("Abar", "Bbar"))
    C = as_float_array(C, "C", ndim=2).astype(np.float64)
    if C.shape[1] != Abar.shape[0]:
        raise ValueError(f"C must have shape (d_out, {Abar.shape[0]}), got {C.shape}")
    T = check_positive_int(T, "T")
    K = np.zeros((T, C.shape[0], Bbar.shape[1]))
    M = Bbar.copy()  # Ā^{j-1} B̄
    for j in range(1, T):
        K[j] = C @ M
        M = Abar @ M
    return K


def ssm_convolve(Abar: object, Bbar: object, C: object, D: object, h: object, v0: object) -> np.ndarray:
    """Outputs of :func:`ssm_scan` computed as a causal convolution (plus the ``v0`` transient), ``(T, d_out)``."""
    Abar, Bbar, C, D, h, v0 = _check_system(Abar, Bbar, C, D, h, v0)
    T = h.shape[0]
    K = ssm_kernel(Abar, Bbar, C, T)  # (T, d_out, d)
    u = h @ D.T
    for k in range(T):
        if k:
            u[k] += np.einsum("jod,jd->o", K[1 : k + 1], h[k - 1 :: -1][:k])
    state = v0.copy()
    for k in range(T):  # transient C Ā^k v0
        u[k] += C @ state
        state = Abar @ state
    return u


def ssm_exact_state(
    A: object,
    B: object,
    v0: object,
    h: Callable[[float], np.ndarray],
    times: object,
    *,
    epsabs: float = 1e-12,
    epsrel: float = 1e-10,
) -> np.ndarray:
    """Exact state of ``dv/dt = A v + B h(t)`` by the variation-of-constants formula (corrected (C.3a)).

    ``v(t) = e^{At} v0 + ∫_0^t e^{A(t - r)} B h(r) dr`` (the printed (C.3a) places ``B`` between
    ``e^{At}`` and ``e^{-Ar}``, which only type-checks when ``s = d``). The integral is computed by
    adaptive quadrature (``scipy.integrate.quad_vec``). ``h`` maps a time to an array ``(d,)``;
    ``times`` is a 1-D array of times ``>= 0``. Returns states, shape ``(len(times), s)``.
    """
    check_finite_scalar(epsabs, "epsabs")
    check_finite_scalar(epsrel, "epsrel")
    check_callable(h, "h")
    A, B = _check_AB(A, B)
    v0 = as_float_array(v0, "v0", ndim=1).astype(np.float64)
    if v0.shape != (A.shape[0],):
        raise ValueError(f"v0 must have shape ({A.shape[0]},), got {v0.shape}")
    times = as_float_array(times, "times", ndim=1).astype(np.float64)
    if times.size and times.min() < 0:
        raise ValueError("times must be >= 0")
    import scipy.integrate

    expA = _expm_path(A)
    out = np.empty((times.size, A.shape[0]))
    for n, t in enumerate(times):
        forced, _ = scipy.integrate.quad_vec(
            lambda r: expA(t - r) @ (B @ np.asarray(h(r), dtype=np.float64)), 0.0, t, epsabs=epsabs, epsrel=epsrel
        )
        out[n] = expA(t) @ v0 + forced
    return out


def _expm_path(A: np.ndarray) -> Callable[[float], np.ndarray]:
    """``t -> e^{At}`` from one eigendecomposition (``scipy.linalg.expm`` if ``A`` is near-defective)."""
    lam, R = np.linalg.eig(A)
    if np.linalg.cond(R) < 1e8:
        Rinv = np.linalg.inv(R)
        return lambda t: ((R * np.exp(lam * t)) @ Rinv).real
    import scipy.linalg  # pragma: no cover

    return lambda t: scipy.linalg.expm(A * t)  # pragma: no cover
