"""The command-line sweep (issue 48): every subcommand × bad inputs ends in one ``error:`` line, exit 2.

Every option of every subcommand that takes a value is given the bad values of its kind (missing value,
wrong type, negative, NaN, infinite, a directory where a file is wanted, a file where a directory is wanted,
an unwritable place, a bad choice); a completeness check reads each command's ``--help`` and fails on a
value option the table below does not cover. Then the mistakes that only show once the command runs (no
network, no CUDA, an empty or foreign data file, a folder holding a run, a resume with other settings, a
file that is not a result, a folder without exercises). Each case runs in-process through
:func:`nextword.__main__.main` (parsing fails before any work, so the sweep takes seconds); two cases run
the installed command in a subprocess end to end.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from nextword.__main__ import COMMANDS, main

REPO = Path(__file__).resolve().parents[1]
torch = pytest.importorskip("torch")  # train, sweep, robustness, results and gpu-check parse with torch

#: the value options of every subcommand and the kind of value each takes (the completeness test below
#: fails on an option missing here). Kinds: int, float (both >= 0 or > 0), floats (a comma list), choice,
#: device, data, out (a folder written to), in (a folder read), path (a file or folder read), name.
OPTIONS: dict[str, dict[str, str]] = {
    "train": {
        "--config": "choice",
        "--data": "data",
        "--lambda-margin": "float",
        "--steps": "int",
        "--epochs": "int",
        "--batch-size": "int",
        "--seed": "int",
        "--margin-positions": "int",
        "--margin-method": "choice",
        "--eval-windows": "int",
        "--max-chars": "int",
        "--checkpoint-every": "int",
        "--device": "device",
        "--out": "out",
        "--threads": "int",
        "--max-steps-this-run": "int",
    },
    "robustness": {"--out": "in", "--sigmas": "floats", "--draws": "int", "--device": "device", "--threads": "int"},
    "report": {"paths": "path"},
    "fetch": {"--target": "out"},
    "results run": {"names": "name", "--seeds": "int", "--jobs": "int", "--threads": "int"},
    "results verify": {"names": "name"},
    "grade": {"part": "name", "--dir": "in", "--timeout": "int"},
    "exercises export": {"--otter": "out", "--nbgrader": "out", "--part": "name"},
    "exercises copy": {"dir": "out", "--part": "name"},
    "book build": {"paths": "path", "--jobs": "int"},
    "book sync": {"paths": "path"},
    "book render": {"--out": "out", "--jobs": "int"},
    "book pdf": {"--out": "outfile"},
    "gpu-check": {
        "--out": "out",
        "--budget": "float",
        "--device": "choice",
        "--seed": "choice",
        "--sweep-config": "choice",
    },
}
OPTIONS["sweep"] = {
    **{k: v for k, v in OPTIONS["train"].items() if k != "--max-steps-this-run"},
    "--lambdas": "floats",
    "--sigma": "float",
}
#: what each command needs besides the option under test, so that only that option is wrong
BASE = {
    "train": ["--config", "tiny", "--no-progress"],
    "sweep": ["--config", "tiny", "--no-progress"],
    "robustness": [],
    "report": [],
    "fetch": [],
    "results run": [],
    "results verify": [],
    "grade": [],
    "exercises export": [],
    "exercises copy": [],
    "gpu-check": ["--dry-run"],
    "book build": [],
    "book sync": [],
    "book render": [],
    "book pdf": [],
}


@pytest.fixture(scope="module")
def places(tmp_path_factory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("cli_sweep")
    (root / "file.txt").write_text("not a folder\n")
    (root / "empty.txt").write_text("")
    (root / "folder").mkdir()
    locked = root / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    # root writes anywhere but in /sys (EPERM): the unwritable place of a root user
    unwritable = "/sys/nextword-sweep" if os.geteuid() == 0 else str(locked / "out")
    return {
        "file": str(root / "file.txt"),
        "under_file": str(root / "file.txt" / "sub"),
        "empty": str(root / "empty.txt"),
        "folder": str(root / "folder"),
        "missing": str(root / "missing"),
        "unwritable": unwritable,
        "out": str(root / "out"),
    }


def _bad_values(kind: str, p: dict[str, str]) -> list[tuple[str, str]]:
    """``[(case label, value)]`` for one kind of option."""
    numbers = [("wrong type", "abc"), ("negative", "-5"), ("NaN", "nan"), ("infinite", "inf")]
    return {
        "int": numbers + [("float for int", "1.5")],
        "float": numbers,
        "floats": numbers + [("list with NaN", "0.1,nan"), ("empty list", ",")],
        "choice": [("bad choice", "bogus"), ("negative", "-5")],
        "device": [("bad device", "gpu"), ("NaN", "nan")],
        "data": [("missing", p["missing"]), ("empty file", p["empty"]), ("folder for file", p["folder"])],
        "out": [("file for folder", p["file"]), ("under a file", p["under_file"]), ("unwritable", p["unwritable"])],
        "in": [("missing", p["missing"]), ("file for folder", p["file"])],
        "outfile": [("folder for file", p["folder"]), ("under a file", p["under_file"] + "/x.pdf")],
        "path": [("missing", p["missing"]), ("folder for file", p["folder"]), ("foreign file", p["file"])],
        "name": [("unknown name", "no_such_thing"), ("negative", "-5")],
    }[kind]


def _cases(p: dict[str, str]) -> list[tuple[str, list[str]]]:
    cases = []
    for command, options in OPTIONS.items():
        words = command.split()
        base = list(BASE[command])
        if command in ("train", "sweep"):
            base += ["--out", p["out"] + "-" + command]
        if command == "exercises export":
            base_for = lambda opt: [] if opt in ("--otter", "--nbgrader") else ["--otter", p["out"] + "-otter"]  # noqa: E731
        elif command == "exercises copy":
            base_for = lambda opt: [] if opt == "dir" else [p["out"] + "-copy"]  # noqa: E731
        else:
            base_for = lambda opt: []  # noqa: E731
        for option, kind in options.items():
            for label, value in _bad_values(kind, p):
                if option.startswith("--"):
                    argv = [*words, *base, *base_for(option), f"{option}={value}"]
                else:
                    argv = [*words, *base, *base_for(option), value]
                cases.append((f"{command} {option} {label}", argv))
            if option.startswith("--"):
                cases.append((f"{command} {option} missing value", [*words, *base, *base_for(option), option]))
    # mistakes that show only when the command runs
    cases += [
        ("no command", []),
        ("unknown command", ["no-such-command"]),
        ("check-env extra argument", ["check-env", "extra"]),
        ("results without action", ["results"]),
        ("exercises without action", ["exercises"]),
        ("exercises unknown action", ["exercises", "bogus"]),
        ("exercises export without a target", ["exercises", "export"]),
        ("exercises copy without a folder", ["exercises", "copy"]),
        ("book without action", ["book"]),
        ("book unknown action", ["book", "bogus"]),
        ("grade unknown part", ["grade", "9"]),
        ("grade folder without exercises", ["grade", "--dir", p["folder"]]),
        ("report a folder without results", ["report", p["folder"]]),
        ("robustness folder without checkpoint", ["robustness", "--out", p["folder"]]),
        (
            "train data folder without WikiText-2",
            ["train", *BASE["train"], "--data", p["folder"], "--out", p["out"] + "-d"],
        ),
        ("train unwritable out", ["train", *BASE["train"], "--out", p["unwritable"]]),
        (
            "train epochs and steps clash",
            ["train", "--config", "tiny", "--margin-positions", "100000", "--out", p["out"]],
        ),
        ("gpu-check seed without session", ["gpu-check", "--dry-run", "--seed", "1"]),
        ("results run per-seed option on a trained run", ["results", "run", "barrier_ce", "--jobs", "2"]),
    ]
    if not torch.cuda.is_available():
        cases += [
            ("train --device cuda without CUDA", ["train", *BASE["train"], "--device", "cuda", "--out", p["out"]]),
            ("gpu-check without CUDA", ["gpu-check", "--out", p["out"] + "-gpu"]),
        ]
    return cases


def _check_one(argv: list[str], capsys) -> str | None:
    """None if ``nextword ARGV`` ends in one error line with exit 2; else what went wrong."""
    try:
        code = main(argv)
    except SystemExit as e:
        code = e.code
    except BaseException as e:  # noqa: BLE001 - the point: any escaping exception is a traceback
        return f"raised {type(e).__name__}: {e}"
    out, err = capsys.readouterr()
    lines = [ln for ln in err.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ": error: " in ln]
    if code != 2:
        return f"exit {code!r}; stderr {err[-300:]!r}"
    if "Traceback" in err or len(errors) != 1 or not re.match(r"nextword( [a-z-]+)*: error: \S", lines[-1]):
        return f"stderr is not one error line: {err[-400:]!r}"
    return None


def test_every_value_option_is_swept(capsys):
    """Each command's --help lists no value option that OPTIONS leaves out (and OPTIONS names no stale one)."""
    missing, stale = [], []
    for command, options in OPTIONS.items():
        try:
            main([*command.split(), "--help"])
        except SystemExit:
            pass
        usage = capsys.readouterr().out
        usage = usage[: usage.find("\n\n", usage.find("usage:"))]  # the usage block
        usage = re.sub(r"\[-[a-z] ([A-Z_]+)\]", lambda m: f"[--{m.group(1).lower()} {m.group(1)}]", usage)  # -j JOBS
        takes_value = set(re.findall(r"\[(--[a-z-]+)[ =](?:[A-Z_]+|\{[^}]*\})", usage))
        takes_value |= set(re.findall(r"\s(--[a-z-]+) (?:[A-Z_]+|\{[^}]*\})", usage))  # required options
        missing += [f"{command} {o}" for o in sorted(takes_value - set(options))]
        stale += [f"{command} {o}" for o in options if o.startswith("--") and o not in takes_value]
    assert not missing and not stale, (missing, stale)
    covered = {c.split()[0] for c in OPTIONS} | {"check-env"}
    assert covered == set(COMMANDS), set(COMMANDS) - covered


def test_no_case_gives_a_traceback_or_exit_0(places, capsys, monkeypatch, tmp_path):
    def offline(*args, **kwargs):
        raise urllib.error.URLError("offline (the sweep's stand-in for no network)")

    monkeypatch.setattr(urllib.request, "urlopen", offline)
    monkeypatch.setenv("NEXTWORD_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.chdir(tmp_path)  # a command that does start writes under the test's folder
    cases = _cases(places) + [("fetch offline", ["fetch", "--target", str(tmp_path / "data")])]
    failures, slow = [], []
    for label, argv in cases:
        t0 = time.perf_counter()
        if why := _check_one(argv, capsys):
            failures.append(f"{label}: {why}")
        if time.perf_counter() - t0 > 2:
            slow.append(f"{label}: {time.perf_counter() - t0:.1f} s")
    print(f"{len(cases)} cases; slow: {slow}")
    assert not failures, "\n".join(failures)
    assert len(cases) > 200  # the report quotes the count; a shrinking table is a regression


def test_runs_refuse_to_overwrite_and_say_where_they_resume(tmp_path, capsys):
    out = str(tmp_path / "run")
    train = ["train", "--config", "tiny", "--steps", "2", "--no-progress", "--out", out]
    assert main([*train, "--resume"]) == 0
    assert f"no checkpoint in {out}: starting at step 0" in capsys.readouterr().err
    assert _check_one(train, capsys) is None  # a finished run is not overwritten silently
    assert _check_one([*train, "--resume", "--seed", "3"], capsys) is None
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main([*train, "--resume", "--seed", "3"])
    assert "(seed: 0 -> 3)" in capsys.readouterr().err  # the setting that differs is named
    assert main([*train, "--resume"]) == 0
    assert "resuming from step 2" in capsys.readouterr().err
    assert main([*train, "--overwrite"]) == 0


def test_report_names_a_file_that_is_not_a_result(places, capsys, tmp_path):
    foreign = tmp_path / "foreign.json"
    foreign.write_text('{"a": 1}')
    assert _check_one(["report", str(foreign)], capsys) is None
    with pytest.raises(SystemExit):
        main(["report", str(foreign)])
    assert "is not a run's results.json" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [["grade", "--dir", "/nonexistent-nextword"], ["exercises", "export", "--nbgrader", "README.md"]],
    ids=["grade-missing-dir", "export-to-a-file"],
)
def test_the_installed_command_ends_in_one_line(argv):
    res = subprocess.run(
        [sys.executable, "-m", "nextword", *argv], capture_output=True, text=True, cwd=REPO, timeout=120
    )
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    assert res.stderr.strip().splitlines()[-1].startswith(f"nextword {argv[0]}") and ": error: " in res.stderr


def test_help_is_plain_text_and_every_value_option_states_its_default(capsys):
    """issue 48: every option that takes a value says its default in --help; no Sphinx markup in any help."""
    undocumented, markup = [], []
    for command, options in OPTIONS.items():
        try:
            main([*command.split(), "--help"])
        except SystemExit:
            pass
        text = capsys.readouterr().out
        if re.search(r"``|:(mod|func|class|data):", text):
            markup.append(command)
        listing = text[text.rfind("options:") :]  # the options list, after usage and description
        entries = re.split(r"\n  (?=-)", listing)  # one entry per option ("  -j JOBS, --jobs JOBS  help…")
        for option in (o for o in options if o.startswith("--")):
            entry = next((e for e in entries if re.search(rf"(^|, ){option}\b", e)), "")
            if not re.search(r"default|required", " ".join(entry.split())):
                undocumented.append(f"{command} {option}")
    assert not markup and not undocumented, (markup, undocumented)


def test_version_and_the_presets_in_train_help(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.startswith("nextword ")
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for preset in ("tiny:", "quick:", "cpu:", "paper:"):  # one line each in --config's help
        assert preset in text, preset
