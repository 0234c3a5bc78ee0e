"""Cost of the §7 margin penalty relative to a cross-entropy-only training step.

At the paper's size (batch 64 × context 256, d = 128, 2 blocks, 4 heads; tiny-Shakespeare
characters, |V| = 66 with <unk>) this times one full optimiser step (forward, backward, AdamW) for

  ce        CE only (the baseline),
  exact     CE + λ·margin, all 64·255 positions, compact Sylvester path with the custom backward,
  k16       CE + λ·margin on k = 16 uniformly subsampled positions per sequence (unbiased),
  direct16  CE + λ·margin, k = 16, the d×d "direct" covariance path with autograd (what a |V| > d
            vocabulary without the Sylvester reduction would cost),
  dense     (with --all) the literal |V|×|V| Sylvester form with autograd, all positions,

and prints the median step time of each and its ratio to ``ce`` — all modes are timed in one
process, interleaved round by round, so that load changes on a shared machine hit them alike — and
the peak resident memory of a fresh process running two steps of only that mode (on CUDA: peak
allocated memory). On a CPU with one thread the times are the process's CPU seconds (what the step
costs, whatever else the machine runs); otherwise wall seconds (CUDA synchronised).

    python benchmarks/bench_margin.py                 # 1 intra-op thread (default; say so when quoting)
    python benchmarks/bench_margin.py --threads 2 --repeats 7 --all
    python -m benchmarks.bench_margin --repeats 7 --save bench_margin_cpu   # the run §7 of the book reads
    python benchmarks/bench_margin.py --profile 3      # where the time of a ce and an exact step goes

``--save NAME`` writes ``book/results/NAME/result.json`` with the provenance of every saved result
(:func:`nextword.provenance.save_result`: command, commit, config, seeds, wall time, machine).

The goal (``benchmarks/targets.py``): exact ≤ 1.3 × ce on a CPU, ≤ 2 × ce on a CUDA GPU;
``--targets FILE`` appends the row to FILE for ``make bench``'s table.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import queue
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

MODES = ("ce", "exact", "k16", "direct16")


def _setup(args: dict):
    import torch

    from nextword.torch.training.data import load_char_data
    from nextword.torch.models.gpt import SmallGPT, SmallGPTConfig
    from nextword.torch.training.device import select_device
    from nextword.torch.barrier.prior import EmbeddingPrior

    torch.set_num_threads(args["threads"])
    dev = select_device(args["device"])
    data = load_char_data("shakespeare")
    torch.manual_seed(0)
    gpt = SmallGPT(SmallGPTConfig(vocab_size=data.vocab.vocab_size, max_len=args["block"], d_model=args["d"])).to(dev)
    prior = EmbeddingPrior(args["d"]).to(dev)
    opt = torch.optim.AdamW(list(gpt.parameters()) + list(prior.parameters()), lr=1e-3, weight_decay=1e-4)
    return torch, dev, data, gpt, prior, opt


def _step(mode, i, args, torch, dev, data, gpt, prior, opt) -> float:
    """One optimiser step of ``mode`` on batch ``i``; returns its time in seconds (see ``_clock``)."""
    from nextword.torch.training.data import epoch_batch
    from nextword.torch.barrier.prior import margin_loss_tokens, sample_positions

    B, T = args["batch"], args["block"]
    x, y = epoch_batch(data.train, block_size=T, batch_size=B, seed=0, epoch=0, step_in_epoch=i)
    x, y = x.to(dev), y.to(dev)
    if dev.type == "cuda":
        torch.cuda.synchronize()
    clock = _clock(args, dev)
    t0 = clock()
    region = torch.profiler.record_function  # labels for --profile; no cost when no profiler runs
    with region("model forward (CE)"):
        tok = gpt.wte(x)
        _, loss = gpt(x, y, tok_emb=tok)
    if mode != "ce":
        pos = None
        if mode in ("k16", "direct16"):
            pos = sample_positions(B, T, 16, torch.Generator().manual_seed(i), device=dev)
        method = {"exact": "sylvester", "k16": "sylvester", "direct16": "direct", "dense": "sylvester_dense"}[mode]
        with region("margin penalty (value and closed-form gradient)"):
            loss = loss + 0.05 * margin_loss_tokens(x, gpt.wte.weight, prior.W, positions=pos, method=method)
    with region("backward"):
        opt.zero_grad(set_to_none=True)
        loss.backward()
    with region("optimiser"):
        opt.step()
    if dev.type == "cuda":
        torch.cuda.synchronize()
    return clock() - t0


def _clock(args: dict, dev):
    """CPU seconds of this process on a CPU with one thread, wall seconds otherwise."""
    return time.process_time if dev.type == "cpu" and args["threads"] == 1 else time.perf_counter


def _time_interleaved(modes, args: dict, queue) -> None:
    """All modes in one process, interleaved round by round, so that load drifts hit them alike."""
    env = _setup(args)
    times = {m: [] for m in modes}
    for r in range(args["warmup"] + args["repeats"]):
        for m in modes:
            dt = _step(m, r, args, *env)
            if r >= args["warmup"]:
                times[m].append(dt)
    queue.put({"times": times, "device": str(env[1])})


def _profile(modes, args: dict, queue) -> None:
    """``args["profile"]`` steps of each mode under ``torch.profiler``: time per labelled region and per operator.

    Self times of the operators are summed over the steps (CPU time of the thread(s) that ran them); the
    regions are the four labelled parts of :func:`_step`. Returns plain dicts for the parent to print.
    """
    env = _setup(args)
    torch, dev = env[0], env[1]
    for r in range(args["warmup"]):
        for m in modes:
            _step(m, r, args, *env)
    activities = [torch.profiler.ProfilerActivity.CPU]
    if dev.type == "cuda":
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    out = {}
    for m in modes:
        with torch.profiler.profile(activities=activities) as prof:
            for r in range(args["profile"]):
                _step(m, args["warmup"] + r, args, *env)
        events = prof.key_averages()
        attr = "self_device_time_total" if dev.type == "cuda" else "self_cpu_time_total"
        regions = {e.key: e.cpu_time_total / 1e6 / args["profile"] for e in events if e.key in REGIONS}
        ops = sorted(
            (
                (e.key, getattr(e, attr) / 1e6 / args["profile"], e.count // args["profile"])
                for e in events
                if e.key not in REGIONS and not e.key.startswith("ProfilerStep")
            ),
            key=lambda t: -t[1],
        )
        linalg = {name: t for name, t, _ in ops if name.startswith("aten::linalg_")}
        out[m] = {"regions": regions, "ops": ops[:12], "ops_total": sum(t for _, t, _ in ops), "linalg": linalg}
    queue.put(out)


REGIONS = ("model forward (CE)", "margin penalty (value and closed-form gradient)", "backward", "optimiser")


def _print_profile(prof: dict, args: dict) -> None:
    print(
        f"profile: {args['profile']} step(s) per mode after {args['warmup']} warm-up, torch.profiler, "
        f"{args['threads']} thread(s); seconds per step"
    )
    for m, p in prof.items():
        print(f"\n{m}: time per labelled part of the step")
        for name in REGIONS:
            if name in p["regions"]:
                print(f"  {name:52s} {p['regions'][name]:7.3f}")
        print(f"{m}: operators by self time (of {p['ops_total']:.3f} s in all operators)")
        for name, t, n in p["ops"]:
            print(f"  {name:52s} {t:7.3f}  {100 * t / p['ops_total']:5.1f} %  {n:5d} calls")
        if p["linalg"]:
            t = sum(p["linalg"].values())
            names = ", ".join(sorted(p["linalg"]))
            print(f"{m}: the factorisations and solves ({names}): {t:.3f} s, {100 * t / p['ops_total']:.1f} %")


def _peak_memory(mode: str, args: dict, queue) -> None:
    """Peak memory of a fresh process doing two steps of one mode (RSS on CPU, allocated on CUDA)."""
    env = _setup(args)
    torch, dev = env[0], env[1]
    for i in range(2):
        _step(mode, i, args, *env)
    peak = (
        torch.cuda.max_memory_allocated(dev) / 2**20
        if dev.type == "cuda"
        else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    )
    queue.put(peak)


def _in_process(target, *a):
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=target, args=(*a, q))
    p.start()
    while True:  # a child that dies (an exception, the OOM killer) never puts: say so instead of waiting forever
        try:
            out = q.get(timeout=5)
            break
        except queue.Empty:
            if not p.is_alive():
                raise RuntimeError(f"{target.__name__} died in its child process (exit code {p.exitcode}); see above")
    p.join()
    return out


def _mib(peak: float | None) -> str:
    return "-" if peak is None else f"{peak:.0f}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--block", type=int, default=256)
    ap.add_argument("-d", type=int, default=128)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--all", action="store_true", help="also time the dense |V|×|V| form")
    ap.add_argument(
        "--no-memory", action="store_true", help="skip the peak-memory processes (one per mode; a quick check)"
    )
    ap.add_argument(
        "--profile",
        type=int,
        default=0,
        metavar="N",
        help="instead of timing, profile N steps of the ce and exact modes with torch.profiler and print where "
        "the time goes (default 0: time, do not profile)",
    )
    ap.add_argument("--json", default=None, help="write the measurements to this file")
    ap.add_argument("--targets", default=None, help="append the goal's row to this file (make bench)")
    ap.add_argument("--save", default=None, help="save as book/results/SAVE/result.json, with provenance")
    argv = sys.argv[1:] if argv is None else list(argv)
    args = vars(ap.parse_args(argv))
    start = time.perf_counter()
    if args["profile"] < 0:
        ap.error(f"--profile must be >= 0, got {args['profile']}")
    if args["profile"]:
        _print_profile(_in_process(_profile, ("ce", "exact"), args), args)
        return 0
    modes = MODES + (("dense",) if args["all"] else ())
    timing = _in_process(_time_interleaved, modes, args)
    results = {
        m: {
            "times": timing["times"][m],
            "peak_mib": None if args["no_memory"] else _in_process(_peak_memory, m, args),
            "device": timing["device"],
        }
        for m in modes
    }
    base = statistics.median(results["ce"]["times"])
    device = results["ce"]["device"]
    unit = "CPU s" if device == "cpu" and args["threads"] == 1 else "wall s"
    print(
        f"margin benchmark: B={args['batch']} T={args['block']} d={args['d']} device={device} "
        f"threads={args['threads']} repeats={args['repeats']} (median step time in {unit}; peak memory of a "
        "fresh process)"
    )
    print(f"{'mode':10s} {'median s':>9s} {'ratio':>7s} {'min s':>7s} {'peak MiB':>9s}")
    for mode in modes:
        t = results[mode]["times"]
        med = statistics.median(t)
        print(f"{mode:10s} {med:9.3f} {med / base:7.2f} {min(t):7.3f} {_mib(results[mode]['peak_mib']):>9s}")
    import datetime
    import os
    import platform

    load = os.getloadavg()
    print(f"load average during the run: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} on {os.cpu_count()} CPUs")
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from targets import record

    ratio = {m: statistics.median(results[m]["times"]) / base for m in modes}
    where = "CUDA GPU" if device.startswith("cuda") else f"CPU, {args['threads']} thread{'s' * (args['threads'] != 1)}"
    record(
        args["targets"],
        "margin_cuda" if device.startswith("cuda") else "margin_cpu",
        ratio["exact"],
        what=f"exact margin step / CE step, B={args['batch']} T={args['block']} d={args['d']}, {where}",
        detail=f"k=16 positions per sequence: {ratio['k16']:.2f}x; CE step {base:.3f} {unit}, {1 / base:.1f} steps/s",
    )
    meta = {
        "date": datetime.date.today().isoformat(),
        "machine": platform.machine(),
        "processor": platform.processor(),
        "cpus": os.cpu_count(),
        "load_average": load,
        "ratios": {m: statistics.median(results[m]["times"]) / base for m in modes},
    }
    if args["json"]:
        Path(args["json"]).write_text(json.dumps({"args": args, **meta, "results": results}, indent=1) + "\n")
    if args["save"]:
        from nextword.provenance import save_result

        path = save_result(
            args["save"],
            {"args": args, **meta, "results": results},
            command="python -m benchmarks.bench_margin " + " ".join(argv),
            config={k: v for k, v in args.items() if k not in ("json", "save")},
            seeds=[0],
            wall_time_s=time.perf_counter() - start,
            entries=("benchmarks.bench_margin",),
        )
        print(f"saved {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
