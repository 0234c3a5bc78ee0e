"""Causal multi-head self-attention forward: nextword (numpy) vs torch.nn.MultiheadAttention.

Goal (``benchmarks/targets.py``): the numpy float32 causal MHA forward at T=512, d_model=512, 8 heads,
one thread, takes at most torch's fast-path time (median of interleaved repeats); ``--targets FILE``
appends the row to FILE for ``make bench``'s table. With one thread the times are the process's
CPU seconds (what each forward costs, whatever else the machine runs); with more, wall seconds.

Both libraries get the same thread count (``--threads``, default 1): the BLAS thread variables are
set before numpy is imported and ``torch.set_num_threads`` is called. Printed: the median (and
min) time of each variant and its ratio to torch. Variants:

* ``numpy nextword``      — :class:`nextword.attention.multihead.MultiHeadAttention` (fused QKV matmul,
                            blocked causal softmax that skips the masked upper triangle);
* ``numpy naive``         — the textbook formula: three projections, full T x T scores, mask with
                            ``np.where``, softmax, weighted sum (kept for comparison);
* ``numpy einsum``        — the naive computation written with ``np.einsum(..., optimize=True)``;
* ``torch MHA (fast)``    — ``nn.MultiheadAttention(..., need_weights=False, is_causal=True)``
                            under ``inference_mode`` (torch's fused SDPA path);
* ``torch MHA (weights)`` — the same with ``need_weights=True`` (materialises the weights).

Usage: ``python benchmarks/bench_attention.py [--threads 1] [--repeats 9] [--T 512] [--d 512] [--heads 8]``
"""

from __future__ import annotations

import argparse
import os
import sys
import time


def _parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--repeats", type=int, default=9)
    p.add_argument("--T", type=int, default=512)
    p.add_argument("--d", type=int, default=512)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--targets", default=None, help="append the goal's row to this file (make bench)")
    return p.parse_args()


ARGS = _parse()
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = str(ARGS.threads)

import numpy as np  # noqa: E402  (after the thread settings)
import torch  # noqa: E402

from nextword.attention import softmax  # noqa: E402
from nextword.attention import MultiHeadAttention  # noqa: E402

torch.set_num_threads(ARGS.threads)


def timeit_interleaved(fns: dict, repeats: int) -> dict[str, tuple[float, float]]:
    """Median and min seconds of each function; the variants take turns within every repeat so a
    change of machine load (the machine is shared) affects all of them alike."""
    for fn in fns.values():
        fn()  # warm-up
    times: dict[str, list[float]] = {name: [] for name in fns}
    clock = time.process_time if ARGS.threads == 1 else time.perf_counter
    for _ in range(repeats):
        for name, fn in fns.items():
            t0 = clock()
            fn()
            times[name].append(clock() - t0)
    return {name: (float(np.median(t)), float(np.min(t))) for name, t in times.items()}


def naive_mha(mha: MultiHeadAttention, X: np.ndarray) -> np.ndarray:
    T, h, dh = X.shape[-2], mha.num_heads, mha.head_dim
    Q, K, V = X @ mha.W_q, X @ mha.W_k, X @ mha.W_v  # (B, T, d) each

    def split(A):
        return A.reshape(A.shape[:-1] + (h, dh)).swapaxes(-2, -3)  # (B, T, d) -> (B, h, T, dh)

    Q, K, V = split(Q), split(K), split(V)
    S = Q @ K.swapaxes(-1, -2) / np.float32(np.sqrt(dh))  # (B, h, T, T)
    S = np.where(np.tri(T, dtype=bool), S, -np.inf)
    ctx = softmax(S) @ V  # (B, h, T, dh)
    return ctx.swapaxes(-2, -3).reshape(X.shape) @ mha.W_o


def einsum_mha(mha: MultiHeadAttention, X: np.ndarray) -> np.ndarray:
    """Heads kept as an axis of einsum contractions instead of reshape + batched matmul."""
    T, h, dh = X.shape[-2], mha.num_heads, mha.head_dim
    W = mha.W_qkv.reshape(mha.d_model, 3, h, dh)  # (d, 3, h, dh)
    Q, K, V = (np.einsum("btd,dhe->bhte", X, W[:, i], optimize=True) for i in range(3))  # (B, h, T, dh)
    S = np.einsum("bhte,bhse->bhts", Q, K, optimize=True) / np.float32(np.sqrt(dh))
    S = np.where(np.tri(T, dtype=bool), S, -np.inf)
    ctx = np.einsum("bhts,bhse->bhte", softmax(S), V, optimize=True)  # (B, h, T, dh)
    return np.einsum("bhte,hef->btf", ctx, mha.W_o.reshape(h, dh, mha.d_model), optimize=True)


def main() -> None:
    B, T, d, h = ARGS.batch, ARGS.T, ARGS.d, ARGS.heads
    rng = np.random.default_rng(0)
    mha = MultiHeadAttention(d, h, rng=rng, dtype=np.float32)
    X = rng.standard_normal((B, T, d)).astype(np.float32)

    ref = torch.nn.MultiheadAttention(d, h, bias=False, batch_first=True).eval()
    ref.load_state_dict({k: torch.from_numpy(v) for k, v in mha.torch_state_arrays().items()})
    tX = torch.from_numpy(X)
    tmask = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)

    def torch_fast():
        with torch.inference_mode():
            return ref(tX, tX, tX, attn_mask=tmask, is_causal=True, need_weights=False)[0]

    def torch_weights():
        with torch.inference_mode():
            return ref(tX, tX, tX, attn_mask=tmask, need_weights=True, average_attn_weights=False)[0]

    def ours():
        return mha(X, causal=True)

    # correctness first (float32 tolerances)
    y_ref = torch_fast().numpy()
    np.testing.assert_allclose(ours(), y_ref, rtol=2e-3, atol=2e-4)
    np.testing.assert_allclose(naive_mha(mha, X), y_ref, rtol=2e-3, atol=2e-4)
    np.testing.assert_allclose(einsum_mha(mha, X), y_ref, rtol=2e-3, atol=2e-4)

    variants = {
        "torch MHA (fast, no weights)": torch_fast,
        "torch MHA (need_weights)": torch_weights,
        "numpy nextword MHA": ours,
        "numpy naive MHA": lambda: naive_mha(mha, X),
        "numpy einsum MHA": lambda: einsum_mha(mha, X),
    }
    results = timeit_interleaved(variants, ARGS.repeats)
    base = results["torch MHA (fast, no weights)"][0]
    print(
        f"causal MHA forward, B={B} T={T} d_model={d} heads={h}, float32, threads={ARGS.threads}, "
        f"median {'CPU' if ARGS.threads == 1 else 'wall'} time of {ARGS.repeats} (numpy {np.__version__}, torch {torch.__version__}, "
        f"{os.cpu_count()} CPUs visible)"
    )
    print(f"{'variant':32s} {'median ms':>10s} {'min ms':>8s} {'ratio vs torch fast':>20s}")
    for name, (med, mn) in results.items():
        print(f"{name:32s} {1e3 * med:10.2f} {1e3 * mn:8.2f} {med / base:20.2f}")
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from targets import record

    record(
        ARGS.targets,
        "mha",
        results["numpy nextword MHA"][0] / base,
        what=f"numpy causal MHA forward, B={B} T={T} d={d} {h} heads, {ARGS.threads} thread{'s' * (ARGS.threads != 1)}",
    )


if __name__ == "__main__":
    sys.exit(main())
