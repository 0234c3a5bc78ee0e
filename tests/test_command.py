"""The one command, ``nextword`` (``python -m nextword``): its subcommands, one-line errors, no torch
import for ``--help`` or the book's tooling, and the console script declared in pyproject.toml."""

import subprocess
import sys
from pathlib import Path

import pytest

from nextword.__main__ import COMMANDS, main

REPO = Path(__file__).resolve().parents[1]
SUBCOMMANDS = (
    "train",
    "robustness",
    "sweep",
    "report",
    "results",
    "fetch",
    "check-env",
    "book",
    "grade",
    "exercises",
    "gpu-check",
)


def _run(*args, **kw):
    return subprocess.run(
        [sys.executable, "-m", "nextword", *args], capture_output=True, text=True, cwd=REPO, timeout=120, **kw
    )


def test_help_lists_every_subcommand_without_importing_torch():
    assert tuple(COMMANDS) == SUBCOMMANDS
    code = "import sys\nfrom nextword.__main__ import main\ntry:\n    main(['--help'])\nexcept SystemExit as e:\n"
    code += "    print('exit', e.code)\nprint('torch' in sys.modules)\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().endswith("exit 0\nFalse"), out[-200:]
    for name in SUBCOMMANDS:
        assert f"\n    {name}" in out, name


def test_python_m_nextword_is_the_same_command():
    res = _run("--help")
    assert res.returncode == 0 and all(name in res.stdout for name in SUBCOMMANDS)


def test_console_script_is_declared():
    text = (REPO / "pyproject.toml").read_text()  # (tomllib is Python >= 3.11)
    assert '[project.scripts]\nnextword = "nextword.__main__:main"\n' in text


@pytest.mark.parametrize(
    "argv, message",
    [
        ([], "required: COMMAND"),
        (["no-such-command"], "invalid choice: 'no-such-command'"),
        (["check-env", "--bogus"], "unrecognized arguments: --bogus"),
        (["results", "run", "no_such_run"], "must be a saved run"),
        (["train", "--resume", "nothere"], "nextword train: error: unrecognized arguments: nothere"),
        (["sweep", "--lams", "a,b"], "nextword sweep: error: unrecognized arguments: --lams a,b"),
    ],
)
def test_mistakes_end_in_one_error_line_with_exit_2(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert message in err[-1] and err[-1].startswith("nextword")
    # the usage shown is the mistaken command's own (not another parser's list of commands)
    if len(argv) > 1 and argv[0] in ("train", "sweep"):
        assert err[0].startswith(f"usage: nextword {argv[0]} "), err[0]


def test_torch_subcommands_reach_the_torch_command_line(capsys):
    pytest.importorskip("torch")
    with pytest.raises(SystemExit) as e:
        main(["train", "--config", "quick", "--lambda-margin", "-1"])
    assert e.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith("nextword train: error:")


def test_results_list_and_grade_run(capsys):
    pytest.importorskip("torch")
    assert main(["results", "list"]) == 0
    assert "barrier_ce" in capsys.readouterr().out
    assert main(["grade", "9"]) == 2
    assert capsys.readouterr().err.strip() == "nextword grade: error: " + _grade_error("9")


def _grade_error(part):
    from nextword.booktools.exercises.grade import grade_all

    with pytest.raises(ValueError) as e:
        grade_all(part)
    return str(e.value)
