"""Command line for the §7 barrier (margin) experiments.

    nextword train --config quick --lambda-margin 0.05 --out runs/margin
    nextword train --config quick --lambda-margin 0 --out runs/ce
    nextword robustness --out runs/margin          # Fig. 7.5 noise curve
    nextword sweep --config quick --out runs/sweep  # Table 1 / Fig. 7.6
    nextword report runs/ce runs/margin runs/sweep
    nextword fetch                                  # WikiText-2, needs internet

Sizes: ``--config quick`` (the notebooks' miniature, seconds), ``cpu`` (§7.1's model and optimiser on
tiny Shakespeare, 20–26 min per cross-entropy arm and about 66 min per margin arm on 2 cores; what ``make results`` runs), ``paper`` (§7.1 itself:
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
import math
import sys
from pathlib import Path

from nextword._cli import (
    default_threads,
    one_line,
    existing_dir,
    existing_path,
    nonnegative_float as _nonnegative_float,
    nonnegative_int as _nonnegative_int,
    output_dir,
    positive_int as _positive_int,
)

__all__ = ["main", "build_parser", "config_from_args"]

_CORPORA = ("shakespeare", "tinyshakespeare", "wikitext2", "wikitext-2")

#: ``--config``'s presets (nextword.torch.barrier.config.PRESETS), one line each for ``--help``
PRESETS = {
    "tiny": "a few steps of a 1-layer d=16 model (tests, seconds)",
    "quick": "2 layers, d=64, 200 steps on 200k characters of tiny Shakespeare (the notebooks' miniature, seconds to a minute)",
    "cpu": "§7.1's model and optimiser at lr 3e-3 (§7.1: 1e-3) with the margin on 16 positions per sequence, 20 epochs on tiny Shakespeare (what `nextword results run` trains; the saved runs took 20–26 min for a cross-entropy arm and about 66 min for a margin arm on 2 cores)",
    "paper": "§7.1 exactly (use --data wikitext2 --device cuda --amp; a GPU job)",
}
THREADS_HELP = "torch threads (default: " + "one per two usable cores, at least 1 and at most 4)"


def _floats(text: str) -> list[float]:
    try:
        values = [float(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None
    if not values or any(not (math.isfinite(v) and v >= 0) for v in values):
        raise argparse.ArgumentTypeError(f"expected comma-separated finite numbers >= 0, got {text!r}")
    return values


def _corpus(text: str) -> str:
    if text in _CORPORA:
        return text
    path = Path(text).expanduser()
    if path.is_file() and path.stat().st_size == 0:
        raise argparse.ArgumentTypeError(f"{text!r} is an empty file")
    if path.exists():
        return text
    raise argparse.ArgumentTypeError(
        f"{text!r} is neither {' | '.join(_CORPORA[::2])} nor an existing file or WikiText-2 directory"
    )


def _device(text: str) -> str:
    """``auto | cpu | cuda | cuda:N | mps``, and a GPU named must be present (checked before any work)."""
    kind = text.split(":")[0]
    if text != "auto" and kind not in ("cpu", "cuda", "mps"):
        raise argparse.ArgumentTypeError(f"expected auto, cpu, cuda, cuda:N or mps, got {text!r}")
    if kind in ("cuda", "mps"):
        import torch

        from nextword.torch.training.device import select_device

        try:
            select_device(text)
        except (ValueError, RuntimeError) as exc:
            raise argparse.ArgumentTypeError(str(exc).splitlines()[0]) from None
        if kind == "mps" and not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
            raise argparse.ArgumentTypeError(f"device={text!r} requested but MPS is not available")
    return text


def _margin_methods() -> tuple[str, ...]:
    from nextword.torch.barrier.prior import METHODS

    return METHODS


def _add_run_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--config",
        default="quick",
        choices=list(PRESETS),
        help="preset size (default quick): " + "; ".join(f"{name}: {text}" for name, text in PRESETS.items()),
    )
    p.add_argument(
        "--data",
        type=_corpus,
        default=None,
        help="shakespeare | wikitext2 | PATH (a text file or a WikiText-2 folder) (default: the preset's)",
    )
    # the flags that override one field of the preset (default None: the preset's): a type, or the choices
    for flag, kind, text in (
        ("--lambda-margin", _nonnegative_float, "λ_m >= 0 (default: the preset's; paper 0.05)"),
        ("--steps", _positive_int, "total optimiser steps, overrides --epochs (default: preset)"),
        ("--epochs", _positive_int, "epochs when --steps is not given (default: preset)"),
        ("--batch-size", _positive_int, "sequences per step (default: preset)"),
        ("--seed", _nonnegative_int, "random seed (default: preset, 0)"),
        (
            "--margin-positions",
            _nonnegative_int,
            "k positions per sequence for the margin term, 0: all, exact (default: preset)",
        ),
        ("--margin-method", _margin_methods(), "how the margin is computed (default: preset)"),
        ("--eval-windows", _positive_int, "validation windows per evaluation (default: preset)"),
        ("--max-chars", _positive_int, "truncate the corpus, quick runs (default: preset)"),
        ("--checkpoint-every", _positive_int, "steps between checkpoints (default: preset)"),
    ):
        how = {"choices": kind} if isinstance(kind, tuple) else {"type": kind}
        p.add_argument(flag, default=None, help=text, **how)
    p.add_argument(
        "--device", type=_device, default="auto", help="auto (cuda → mps → cpu) | cpu | cuda | mps (default auto)"
    )
    p.add_argument("--amp", action="store_true", help="bfloat16 autocast on CUDA (default off)")
    p.add_argument("--out", type=output_dir, default=Path("runs/barrier"), help="output folder (default runs/barrier)")
    p.add_argument("--threads", type=_positive_int, default=None, help=THREADS_HELP)
    p.add_argument("--no-progress", action="store_true", help="no progress bar (default: shown)")


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="nextword", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    ap.set_defaults(_commands=sub.choices)  # each command's own parser, for errors that show its usage
    t = sub.add_parser("train", help="train one model (CE + λ·margin)")
    _add_run_args(t)
    t.add_argument("--resume", action="store_true", help="continue from OUT/ckpt.pt (default: start at step 0)")
    t.add_argument("--overwrite", action="store_true", help="start afresh in an OUT that holds a run (default: refuse)")
    t.add_argument(
        "--max-steps-this-run", type=_positive_int, default=None, help="stop after N steps, checkpointed (default: all)"
    )
    t.add_argument("--robustness", action="store_true", help="also compute the noise curve at the end (default off)")
    r = sub.add_parser("robustness", help="BPC under Gaussian embedding noise for a trained run (Fig. 7.5)")
    r.add_argument("--out", type=existing_dir, required=True, help="run folder holding ckpt.pt (required)")
    r.add_argument("--sigmas", type=_floats, default=None, help="comma-separated σ (default: the run's)")
    r.add_argument("--draws", type=_positive_int, default=None, help="noise draws per σ (default: the run's)")
    r.add_argument("--device", type=_device, default="auto", help="auto | cpu | cuda | mps (default auto)")
    r.add_argument("--threads", type=_positive_int, default=None, help=THREADS_HELP)
    s = sub.add_parser("sweep", help="λ regularisation path (Table 1 / Fig. 7.6)")
    _add_run_args(s)
    s.add_argument("--lambdas", type=_floats, default=None, help="comma-separated λ values (default: Table 1's)")
    s.add_argument(
        "--sigma", type=_nonnegative_float, default=None, help="σ of the noisy column (default: Table 1's, 0.3)"
    )
    rep = sub.add_parser("report", help="print tables from run / sweep directories or JSON files")
    rep.add_argument("paths", nargs="+", type=existing_path, help="run or sweep folders, or their JSON files")
    f = sub.add_parser("fetch", help="download WikiText-2 raw (checksum-verified)")
    f.add_argument("--target", type=output_dir, default=None, help="data folder (default: $NEXTWORD_DATA_DIR or cache)")
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
    lines = []
    for p in map(Path, paths):
        f = p / "sweep.json" if (p / "sweep.json").exists() else (p / "results.json" if p.is_dir() else p)
        try:
            res = json.loads(f.read_text())
            lines += _report_one(f, res)
        except (KeyError, TypeError, AttributeError, json.JSONDecodeError) as exc:
            raise ValueError(f"{f} is not a run's results.json or a sweep's sweep.json ({one_line(exc)})") from None
        lines.append("")
    return "\n".join(lines)


def _report_one(f: Path, res: dict) -> list[str]:
    from nextword.torch.barrier.config import TrainConfig

    lines = []
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
    return lines


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
        say=lambda text: print(text, file=sys.stderr, flush=True),
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
    from nextword._cli import user_errors

    return user_errors()  # DataNotFoundError, CheckpointError, JSONDecodeError, … are OSError or ValueError


def _refuse_overwrite(args: argparse.Namespace) -> str | None:
    """Why ``train`` must not start afresh in ``--out`` (it holds a run), or None."""
    from nextword.torch.training.checkpoint import CKPT, PREV_CKPT, RESULTS

    if args.resume or args.overwrite:
        return None
    held = [name for name in (RESULTS, CKPT, PREV_CKPT) if (Path(args.out) / name).exists()]
    if held:
        return f"{args.out} holds a run ({', '.join(held)}): add --resume to continue it or --overwrite to replace it"
    return None


def main(argv: list[str] | None = None) -> int:
    """Run one subcommand; user errors end in one ``error:`` line and exit status 2 (as argparse)."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    command = args._commands[args.cmd]
    if extra:  # reported with the command's usage, not the list of commands
        command.error(f"unrecognized arguments: {' '.join(extra)}")
    commands = {"train": _train, "robustness": _robustness, "sweep": _sweep, "report": _print_report, "fetch": _fetch}
    try:
        if args.cmd in ("train", "sweep"):
            try:
                config_from_args(args)
            except (ValueError, TypeError) as e:  # an inconsistent combination of options
                command.error(str(e))
        if args.cmd == "train" and (why := _refuse_overwrite(args)):
            parser.exit(2, f"{parser.prog} {args.cmd}: error: {why}\n")
        if args.cmd in ("train", "sweep", "robustness"):
            import torch

            torch.set_num_threads(args.threads or default_threads())
        return commands[args.cmd](args)
    except _user_errors() as e:
        parser.exit(2, f"{parser.prog} {args.cmd}: error: {one_line(e)}\n")
