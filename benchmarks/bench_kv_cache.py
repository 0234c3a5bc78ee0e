"""Greedy generation with :class:`nextword.decoder.DecoderLM`: KV cache vs full recomputation.

Goal (``benchmarks/targets.py``): generate 256 tokens after a 256-token prompt (so the context grows
to T = 512) at least 10x faster with the KV cache than without; also reported: the memory it costs.
``--targets FILE`` appends the row to FILE for ``make bench``'s table.

* ``uncached`` — every step runs ``lm.logits(prefix)[-1]``: a full forward over the whole prefix;
* ``cached``   — every step runs ``lm.next_logits(prefix)``, which keeps a KV cache and computes
  only the new token (the prompt is processed once).

Both generate the same tokens (checked). Printed: median / min time of each (``--repeats``; CPU seconds
with one thread, wall seconds with more,
default 7), the ratio, the size of the cache buffers and the peak memory allocated during one
generation (``tracemalloc``, which sees numpy's allocations). Thread count as in
``bench_attention.py`` (``--threads``, default 1).

Usage: ``python benchmarks/bench_kv_cache.py [--threads 1] [--repeats 7] [--prompt 256] [--new 256]``
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import tracemalloc


def _parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--prompt", type=int, default=256)
    p.add_argument("--new", type=int, default=256)
    p.add_argument("--d", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--vocab", type=int, default=256)
    p.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    p.add_argument("--targets", default=None, help="append the goal's row to this file (make bench)")
    return p.parse_args()


ARGS = _parse()
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = str(ARGS.threads)

import numpy as np  # noqa: E402

from nextword.decoder import DecoderConfig, DecoderLM  # noqa: E402


def generate(step, prompt: list[int], n: int) -> list[int]:
    seq = list(prompt)
    for _ in range(n):
        seq.append(int(np.argmax(step(seq))))
    return seq


def main() -> None:
    cfg = DecoderConfig(
        vocab_size=ARGS.vocab,
        d_model=ARGS.d,
        num_heads=ARGS.heads,
        num_layers=ARGS.layers,
        max_len=ARGS.prompt + ARGS.new,
        positional="sinusoidal",
        dtype=ARGS.dtype,
    )
    lm = DecoderLM(cfg, rng=np.random.default_rng(0))
    prompt = np.random.default_rng(1).integers(0, cfg.vocab_size, ARGS.prompt).tolist()

    def uncached() -> list[int]:
        return generate(lambda s: lm.logits(s)[-1], prompt, ARGS.new)

    def cached() -> list[int]:
        lm.reset_cache()
        return generate(lm.next_logits, prompt, ARGS.new)

    assert uncached() == cached(), "cached and uncached generation disagree"

    fns = {"uncached": uncached, "cached": cached}
    clock = time.process_time if ARGS.threads == 1 else time.perf_counter  # CPU seconds with one thread
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(ARGS.repeats):  # the two take turns, so load changes on the shared machine hit both
        for name, fn in fns.items():
            t0 = clock()
            fn()
            times[name].append(clock() - t0)
    res = {}
    for name, fn in fns.items():
        tracemalloc.start()
        fn()
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        res[name] = (float(np.median(times[name])), float(np.min(times[name])), peak)
    cache_bytes = lm._cache.nbytes if lm._cache is not None else 0
    T = ARGS.prompt + ARGS.new
    per_token = 2 * cfg.num_layers * cfg.d_model * np.dtype(cfg.dtype).itemsize
    print(
        f"greedy generation of {ARGS.new} tokens after a {ARGS.prompt}-token prompt (T up to {T}); "
        f"DecoderLM d_model={cfg.d_model} heads={cfg.num_heads} layers={cfg.num_layers} vocab={cfg.vocab_size} "
        f"{cfg.dtype}; {lm.num_parameters():,} parameters; threads={ARGS.threads}; median of {ARGS.repeats}"
    )
    print(f"{'variant':10s} {'median s':>9s} {'min s':>8s} {'ms/token':>9s} {'peak alloc MiB':>15s}")
    for name, (med, mn, peak) in res.items():
        print(f"{name:10s} {med:9.3f} {mn:8.3f} {1e3 * med / ARGS.new:9.2f} {peak / 2**20:15.2f}")
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from targets import record

    record(
        ARGS.targets,
        "kv_cache",
        res["uncached"][0] / res["cached"][0],
        what=f"KV-cached greedy generation, {ARGS.new} tokens after {ARGS.prompt}",
    )
    print(
        f"KV cache buffers: {cache_bytes / 2**20:.2f} MiB allocated "
        f"({per_token} bytes/token = 2 x layers x d_model x itemsize; {per_token * T / 2**20:.2f} MiB at T={T})"
    )


if __name__ == "__main__":
    sys.exit(main())
