"""Command line for the §7 barrier (margin) experiments.

    nextword train --config quick --lambda-margin 0.05 --out runs/margin
    nextword train --config quick --lambda-margin 0 --out runs/ce
    nextword robustness --out runs/margin          # Fig. 7.5 noise curve
    nextword sweep --config quick --out runs/sweep  # Table 1 / Fig. 7.6
    nextword report runs/ce runs/margin runs/sweep
    nextword fetch                                  # WikiText-2, needs internet

Sizes: ``--config quick`` (the notebooks' miniature, seconds), ``cpu`` (§7.1's model and optimiser on
tiny Shakespeare, ≤ 30 min per run on 2 cores; what ``make results`` runs), ``paper`` (§7.1 itself:
``train --config paper --data wikitext2 --device cuda --amp``, a GPU job).
Several GPUs / processes: ``torchrun --nproc_per_node=N -m nextword train ...``
(DistributedDataParallel; gloo on CPU, nccl on CUDA) or ``... sweep`` (one λ per process).
``--resume`` continues a run from ``OUT/ckpt.pt`` (or, if that file is damaged, from the previous
good checkpoint ``OUT/ckpt.prev.pt``, saying so).

Mistakes in the command (a negative ``--lambda-margin``, a ``--data`` path that does not exist, a
run directory without a checkpoint, ``--resume`` with another configuration) are reported in one
line with exit status 2, as argparse does; a traceback means a bug.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

__all__ = ["main", "build_parser", "config_from_args"]

_CORPORA = ("shakespeare", "tinyshakespeare", "wikitext2", "wikitext-2")


def _floats(text: str) -> list[float]:
    try:
        values = [float(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None
    if not values or any(not v >= 0 for v in values):
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers >= 0, got {text!r}")
    return values


def _bounded(kind: type, low: float, name: str):
    """An argparse ``type`` that parses ``kind`` (int or float) and rejects values below ``low``."""

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {name}, got {text!r}") from None
        if not value >= low:  # also rejects NaN
            raise argparse.ArgumentTypeError(f"must be >= {low:g}, got {text}")
        return value

    return parse


_nonnegative_float = _bounded(float, 0, "a number >= 0")
_positive_int = _bounded(int, 1, "a positive integer")
_nonnegative_int = _bounded(int, 0, "an integer >= 0")


def _corpus(text: str) -> str:
    if text in _CORPORA or Path(text).expanduser().exists():
        return text
    raise argparse.ArgumentTypeError(
        f"{text!r} is neither {' | '.join(_CORPORA[::2])} nor an existing file or WikiText-2 directory"
    )


def _margin_methods() -> tuple[str, ...]:
    from nextword.torch.barrier.prior import METHODS

    return METHODS


def _add_run_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--config",
        default="quick",
        choices=["quick", "cpu", "paper", "tiny"],
        help="preset size (quick: miniature; cpu: §7.1 on tiny Shakespeare, ≤ 30 min; paper: §7.1)",
    )
    p.add_argument("--data", type=_corpus, default=None, help="shakespeare | wikitext2 | PATH (file or wikitext dir)")
    p.add_argument("--lambda-margin", type=_nonnegative_float, default=None, help="λ_m >= 0 (paper: 0.05)")
    p.add_argument("--steps", type=_positive_int, default=None, help="total optimiser steps (overrides --epochs)")
    p.add_argument("--epochs", type=_positive_int, default=None)
    p.add_argument("--batch-size", type=_positive_int, default=None)
    p.add_argument("--seed", type=_nonnegative_int, default=None)
    p.add_argument(
        "--margin-positions",
        type=_nonnegative_int,
        default=None,
        help="k positions per sequence for the margin term (0: all, exact)",
    )
    p.add_argument("--margin-method", default=None, choices=_margin_methods())
    p.add_argument("--eval-windows", type=_positive_int, default=None, help="validation windows per evaluation")
    p.add_argument("--max-chars", type=_positive_int, default=None, help="truncate the corpus (quick runs)")
    p.add_argument("--checkpoint-every", type=_positive_int, default=None)
    p.add_argument("--device", default="auto", help="auto (cuda → mps → cpu) | cpu | cuda | mps")
    p.add_argument("--amp", action="store_true", help="bfloat16 autocast on CUDA")
    p.add_argument("--out", default="runs/barrier", help="output directory")
    p.add_argument("--no-progress", action="store_true")


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="nextword", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train", help="train one model (CE + λ·margin)")
    _add_run_args(t)
    t.add_argument("--resume", action="store_true", help="continue from OUT/ckpt.pt")
    t.add_argument("--max-steps-this-run", type=_positive_int, default=None, help="stop after N steps (checkpointed)")
    t.add_argument("--robustness", action="store_true", help="also compute the noise curve at the end")
    r = sub.add_parser("robustness", help="BPC under Gaussian embedding noise for a trained run (Fig. 7.5)")
    r.add_argument("--out", required=True, help="run directory (holding ckpt.pt)")
    r.add_argument("--sigmas", type=_floats, default=None, help="comma-separated σ (default: the run's)")
    r.add_argument("--draws", type=_positive_int, default=None)
    r.add_argument("--device", default="auto")
    s = sub.add_parser("sweep", help="λ regularisation path (Table 1 / Fig. 7.6)")
    _add_run_args(s)
    s.add_argument("--lambdas", type=_floats, default=None, help="comma-separated λ values")
    s.add_argument(
        "--sigma", type=_nonnegative_float, default=None, help="σ of the noisy column (default: Table 1's, 0.3)"
    )
    rep = sub.add_parser("report", help="print tables from run / sweep directories or JSON files")
    rep.add_argument("paths", nargs="+")
    f = sub.add_parser("fetch", help="download WikiText-2 raw (checksum-verified)")
    f.add_argument("--target", default=None, help="data directory (default: $NEXTWORD_DATA_DIR or cache)")
    return ap


def config_from_args(args: argparse.Namespace):
    """The :class:`~nextword.torch.barrier.config.TrainConfig` of a ``train``/``sweep`` command line.

    Options left out keep the preset's values; ``--epochs`` without ``--steps`` trains for that many
    epochs (it drops a preset's ``steps``).
    """
    from nextword.torch.barrier.config import preset

    overrides = _overrides(args)
    if args.steps is not None:
        overrides["steps"] = args.steps
    elif args.epochs is not None:
        overrides["steps"] = None
    return preset(args.config, **overrides)


def _overrides(args: argparse.Namespace) -> dict:
    return dict(
        data=args.data,
        lambda_margin=args.lambda_margin,
        epochs=args.epochs,
        batch_size=args.batch_size,
        seed=args.seed,
        margin_positions=args.margin_positions,
        margin_method=args.margin_method,
        eval_windows=args.eval_windows,
        max_chars=args.max_chars,
        checkpoint_every=args.checkpoint_every,
        amp=args.amp or None,
    )


def _report(paths: list[str]) -> str:
    from nextword.torch.barrier.config import TrainConfig

    lines = []
    for p in map(Path, paths):
        f = p / "sweep.json" if (p / "sweep.json").exists() else (p / "results.json" if p.is_dir() else p)
        res = json.loads(f.read_text())
        if "rows" in res:
            lines.append(f"## sweep {f}  (σ = {res['sigma']})")
            lines.append("| λ_m | BPC | BPC_σ | Deg | H (nats) | SNR | trΣ/RMS² | margin | emb RMS |")
            lines.append("|---|---|---|---|---|---|---|---|---|")
            for r in res["rows"]:
                lines.append(
                    f"| {r['lambda']:.3f} | {r['bpc']:.3f} | {r['bpc_sigma']:.3f} | {r['degradation']:.2f} | "
                    f"{r.get('entropy', float('nan')):.2f} | {r.get('snr', float('nan')):.3f} | "
                    f"{r.get('normalised_var', float('nan')):.1f} | {r.get('margin', float('nan')) + 0.0:.4f} | "
                    f"{r.get('embedding_rms', float('nan')):.3f} |"
                )
        else:
            c = TrainConfig.from_dict(res["config"])
            lines.append(
                f"## run {f}  λ_m={c.lambda_margin:g}, {res['steps']}/{res['total_steps']} steps, "
                f"{res['data']['name']}, d_model={c.d_model}, T={c.block_size}, B={c.batch_size}, "
                f"{res['device']}"
            )
            lines.append("| step | epoch | train BPC | val BPC | margin |")
            lines.append("|---|---|---|---|---|")
            for h in res["history"]:
                lines.append(
                    f"| {h['step']} | {h['epoch']:.2f} | {h['train_bpc']:.3f} | {h['val_bpc']:.3f} | "
                    f"{h['train_margin'] + 0.0:.4f} |"
                )
            if "noise_curve" in res:
                nc = res["noise_curve"]
                lines.append("| σ | BPC | degradation |")
                lines.append("|---|---|---|")
                for s, m, d in zip(nc["sigmas"], nc["bpc_mean"], nc["degradation"]):
                    lines.append(f"| {s:.2f} | {m:.3f} | {d:.2f} |")
        lines.append("")
    return "\n".join(lines)


def _train(args) -> int:
    from nextword.torch.barrier.train import train

    res = train(
        config_from_args(args),
        args.out,
        device=args.device,
        resume=args.resume,
        max_steps_this_run=args.max_steps_this_run,
        progress=not args.no_progress,
        robustness=args.robustness,
    )
    if res.get("history"):
        h = res["history"][-1]
        print(
            f"step {res['steps']}/{res['total_steps']}: train BPC {h['train_bpc']:.4f}, "
            f"val BPC {h['val_bpc']:.4f}, final train loss {res['final_train_loss']:.6f}"
        )
    return 0


def _robustness(args) -> int:
    from nextword.torch.training.data import eval_windows, load_char_data
    from nextword.torch.training.checkpoint import RESULTS, save_json
    from nextword.torch.barrier.train import load_checkpoint
    from nextword.torch.training.device import select_device
    from nextword.torch.barrier.robustness import noise_curve

    out = Path(args.out)
    dev = select_device(args.device)
    gpt, _, cfg, _ = load_checkpoint(out, device=dev)
    data = load_char_data(cfg.data, max_chars=cfg.max_chars)
    vx, vy = eval_windows(data.val, block_size=cfg.block_size, max_windows=cfg.eval_windows)
    curve = noise_curve(
        gpt,
        vx,
        vy,
        sigmas=args.sigmas or cfg.noise_sigmas,
        draws=args.draws or cfg.noise_draws,
        seed=cfg.seed,
        amp=cfg.amp,
        progress=True,
    )
    save_json(curve, out / "robustness.json")
    if (out / RESULTS).exists():
        res = json.loads((out / RESULTS).read_text())
        res["noise_curve"] = curve
        save_json(res, out / RESULTS)
    for s, m, d in zip(curve["sigmas"], curve["bpc_mean"], curve["degradation"]):
        print(f"σ={s:.2f}  BPC={m:.4f}  degradation={d:.3f}")
    return 0


def _sweep(args) -> int:
    from nextword.torch.barrier.config import TABLE1_SIGMA
    from nextword.torch.barrier.sweep import PAPER_LAMBDAS, run_sweep

    table = run_sweep(
        config_from_args(args),
        args.lambdas or PAPER_LAMBDAS,
        args.out,
        sigma=TABLE1_SIGMA if args.sigma is None else args.sigma,
        device=args.device,
        progress=not args.no_progress,
    )
    print(_report([str(Path(args.out))]) if Path(args.out, "sweep.json").exists() else table)
    return 0


def _print_report(args) -> int:
    print(_report(args.paths))
    return 0


def _fetch(args) -> int:
    from nextword.torch.training.fetch import fetch_wikitext2

    print(fetch_wikitext2(args.target))
    return 0


def _user_errors() -> tuple[type[BaseException], ...]:
    """Exceptions that mean "the command or its files are wrong", not "the code is wrong"."""
    from nextword.data import DataNotFoundError

    from nextword.torch.training.checkpoint import CheckpointError

    return (DataNotFoundError, CheckpointError, FileNotFoundError, NotADirectoryError, json.JSONDecodeError)


def main(argv: list[str] | None = None) -> int:
    """Run one subcommand; user errors end in one ``error:`` line and exit status 2 (as argparse)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    commands = {"train": _train, "robustness": _robustness, "sweep": _sweep, "report": _print_report, "fetch": _fetch}
    try:
        if args.cmd in ("train", "sweep"):
            try:
                config_from_args(args)
            except (ValueError, TypeError) as e:  # an inconsistent combination of options
                parser.error(str(e))
        return commands[args.cmd](args)
    except _user_errors() as e:
        parser.exit(2, f"{parser.prog} {args.cmd}: error: {e}\n")


if __name__ == "__main__":
    sys.exit(main())
