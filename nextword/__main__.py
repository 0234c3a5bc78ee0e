"""``nextword``: one command for what a reader runs by hand (``python -m nextword`` does the same).

    nextword train --config quick --lambda-margin 0.05 --out runs/margin   # §7: CE + λ·margin, resumable
    nextword robustness --out runs/margin                                  # §7.3: BPC under embedding noise
    nextword sweep --config quick --out runs/sweep                         # §7.4: the λ path
    nextword report runs/ce runs/margin runs/sweep                         # tables from run directories
    nextword results list | run | verify [NAME ...]                        # the saved runs of book/results/
    nextword fetch                                                         # WikiText-2 (needs internet)
    nextword check-env                                                     # what the environment holds
    nextword book build PAGE.py | sync | check | render | pdf              # authors: the book's notebooks
    nextword exercises copy DIR                                            # the exercises, to work on in DIR
    nextword grade [PART] --dir DIR                                        # your exercise notebooks: ✓ / ✗
    nextword exercises export --otter DIR | --nbgrader DIR                 # instructors: graded assignments
    nextword gpu-check [--dry-run]                                         # the torch path on a GPU

``nextword COMMAND --help`` describes a command. Mistakes in a command end in one ``error:`` line with
exit status 2. Each command imports what it needs when it runs, so ``nextword --help`` and the
commands of the book's tooling never import torch.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

__all__ = ["COMMANDS", "main"]


def _torch_cli(name: str, argv: list[str]) -> int:
    from nextword.torch.cli import main as torch_main

    return torch_main([name, *argv])


def _results(name: str, argv: list[str]) -> int:
    from nextword.torch.runs.registry import main as results_main

    return results_main(argv)


def _check_env(name: str, argv: list[str]) -> int:
    from nextword.booktools.check_env import main as check_env_main

    parser = argparse.ArgumentParser(prog="nextword check-env", description=COMMANDS[name][0])
    parser.parse_args(argv)
    return check_env_main()


def _grade(name: str, argv: list[str]) -> int:
    from nextword.booktools.exercises.grade import main as grade_main

    return grade_main(argv)


#: ``nextword exercises ACTION``: action -> one-line help
EXERCISE_ACTIONS = {
    "copy": "copy the exercises to a folder of your own to work in (then: nextword grade --dir DIR)",
    "build": "authors: regenerate exercises/ from solutions/",
    "check": "authors: fail when exercises/ differs from what build would write",
    "export": "instructors: write an otter-grader assignment or an nbgrader source tree",
}


def _exercises(name: str, argv: list[str]) -> int:
    from nextword.booktools.exercises.build import copy_main
    from nextword.booktools.exercises.build import main as build_main
    from nextword.booktools.exercises.export import export_main

    if not argv or argv[0] not in EXERCISE_ACTIONS:
        parser = argparse.ArgumentParser(
            prog="nextword exercises",
            description=COMMANDS[name][0],
            formatter_class=argparse.RawDescriptionHelpFormatter,
            epilog="\n".join(f"  {a:7s} {text}" for a, text in EXERCISE_ACTIONS.items()),
        )
        parser.add_argument("action", choices=list(EXERCISE_ACTIONS))
        parser.parse_args(argv[:1])
        return 2  # pragma: no cover - parse_args exits
    action, rest = argv[0], argv[1:]
    if action == "copy":
        return copy_main(rest)
    if action == "export":
        return export_main(rest)
    return build_main([action, *rest])


#: ``nextword book ACTION``: action -> one-line help
BOOK_ACTIONS = {
    "build": "execute pages: py -> ipynb with outputs (PATHS, or --all)",
    "sync": "py -> ipynb without executing (keeps outputs)",
    "check": "fail if a .py/.ipynb pair has drifted",
    "render": "render the executed book to _build/html (Sphinx, incremental)",
    "pdf": "the whole book as one PDF, _build/nextword.pdf (needs TeX)",
}


def _book(name: str, argv: list[str]) -> int:
    if not argv or argv[0] not in BOOK_ACTIONS:
        parser = argparse.ArgumentParser(
            prog="nextword book",
            description=COMMANDS[name][0],
            formatter_class=argparse.RawDescriptionHelpFormatter,
            epilog="\n".join(f"  {a:7s} {text}" for a, text in BOOK_ACTIONS.items()),
        )
        parser.add_argument("action", choices=list(BOOK_ACTIONS))
        parser.parse_args(argv[:1])
        return 2  # pragma: no cover - parse_args exits
    if argv[0] == "pdf":
        from nextword.booktools.pdf import main as pdf_main

        return pdf_main(argv[1:])
    from nextword.booktools.notebooks import main as notebooks_main

    return notebooks_main(argv)


def _gpu_check(name: str, argv: list[str]) -> int:
    from nextword.torch.runs.gpu_command import main as gpu_check_main

    return gpu_check_main(argv)


#: command -> (one-line help, runner(name, remaining argv) -> exit status)
COMMANDS: dict[str, tuple[str, Callable[[str, list[str]], int]]] = {
    "train": ("train one §7 model (CE + λ·margin): checkpoints, --resume, any device, --amp, torchrun", _torch_cli),
    "robustness": ("BPC under Gaussian embedding noise of a trained run (§7.3, Fig. 7.5)", _torch_cli),
    "sweep": ("the λ regularisation path (§7.4, Table 1 / Fig. 7.6)", _torch_cli),
    "report": ("print tables from run or sweep directories or their JSON files", _torch_cli),
    "results": (
        "the saved runs of book/results/: list, verify (replay) or run (resumable) what is not current",
        _results,
    ),
    "fetch": ("download raw WikiText-2 once (checksum-verified; needs internet)", _torch_cli),
    "check-env": ("report the Python environment: packages, versions, threads, devices", _check_env),
    "book": ("build, sync, check or render the book's notebooks, or make its PDF (authors)", _book),
    "grade": ("run your filled-in exercise notebooks and show ✓ / ✗ / not started", _grade),
    "exercises": (
        "copy the exercises to your folder; build, check or export them (otter-grader, nbgrader)",
        _exercises,
    ),
    "gpu-check": ("check the torch path on a GPU (CUDA against CPU, bf16 AMP, speed, the §7 pair)", _gpu_check),
}


def _version() -> str:
    """The installed distribution's version and, in a git checkout, the commit."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        text = version("nextword")
    except PackageNotFoundError:  # pragma: no cover - run from a source tree without installing
        text = "(not installed)"
    from nextword.provenance import git_commit

    commit, dirty = git_commit()
    return text if commit == "unknown" else f"{text} (commit {commit[:12]}{', modified' if dirty else ''})"


class _Version(argparse.Action):
    """``--version``: computed only when asked (it runs git)."""

    def __init__(self, option_strings, dest, **kw):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kw)

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"nextword {_version()}")  # on stdout, as argparse's own version action
        parser.exit(0)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="nextword",
        description="The nextword command: the book's experiments, saved runs and tools.",
        epilog="`nextword COMMAND --help` describes a command.",
    )
    parser.add_argument("--version", action=_Version, help="print the version (and git commit) and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (help_text, _) in COMMANDS.items():
        sub.add_parser(name, help=help_text, add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``nextword COMMAND ...``; the exit status of the command (2 for a mistake in it).

    A mistake the command could not catch while parsing (a file it cannot write, no network, no GPU, a
    library ValueError naming a bad argument) still ends in one ``nextword COMMAND: error: …`` line and exit
    status 2 (:func:`nextword._cli.user_errors`); ``NEXTWORD_TRACEBACK=1`` shows the traceback instead.
    """
    from nextword._cli import fail, one_line, user_errors

    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] not in COMMANDS:
        _parser().parse_args(args[:1])  # --help/--version print; anything else is one error line, exit 2
        return 2  # pragma: no cover - parse_args exits
    name = args[0]
    # idle OpenMP threads sleep instead of spinning on a core another process needs (set before torch loads)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        return COMMANDS[name][1](name, args[1:])
    except KeyboardInterrupt:
        return fail(f"nextword {name}", "interrupted")
    except user_errors() as exc:
        if os.environ.get("NEXTWORD_TRACEBACK"):
            raise
        return fail(f"nextword {name}", one_line(exc))


if __name__ == "__main__":
    sys.exit(main())
