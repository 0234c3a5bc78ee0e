"""nextword check-env: one line per requirement, failing loudly when a required one is missing."""

import subprocess
import sys

from nextword.booktools import check_env


def test_report_lists_python_every_dependency_device_and_data():
    results = check_env.run_checks()
    names = [r.name for r in results]
    assert names[0] == "python"
    for dep in check_env.REQUIRED + check_env.OPTIONAL:
        assert dep in names
    assert "torch device" in names
    assert any(n.startswith("data") for n in names)
    assert all(r.status in {"OK", "FAIL", "--"} for r in results)


def test_missing_required_module_is_a_failure(monkeypatch):
    real_import = check_env.importlib.import_module

    def fake_import(name, *args, **kwargs):
        if name == "sympy":
            raise ImportError("No module named 'sympy'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(check_env.importlib, "import_module", fake_import)
    results = {r.name: r for r in check_env.run_checks()}
    assert results["sympy"].status == "FAIL"
    assert "not importable" in results["sympy"].detail
    report = check_env.format_report(list(results.values()))
    assert report.splitlines()[-1] == "1 required item(s) failed"


def test_missing_data_is_reported_not_fatal(monkeypatch, tmp_path):
    import nextword.data as data

    monkeypatch.setenv("NEXTWORD_DATA_DIR", str(tmp_path / "nowhere"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(data, "PACKAGE_DATA_DIR", tmp_path / "package")
    results = {r.name: r for r in check_env.run_checks()}
    assert results["data: tiny Shakespeare"].status == "--"
    assert "NEXTWORD_DATA_DIR" in results["data: tiny Shakespeare"].detail


def test_data_inside_the_checkout_is_shown_relative_to_it(tmp_path):
    from pathlib import Path

    checkout = Path(check_env.__file__).resolve().parents[2]
    inside = check_env._shown_path(checkout / "nextword" / "data" / "x.txt")
    assert inside == "nextword/data/x.txt (in nextword's checkout)" and str(checkout) not in inside
    assert check_env._shown_path(tmp_path / "x.txt") == str(tmp_path / "x.txt")  # elsewhere: as found
    report = check_env.format_report(check_env.run_checks())
    assert str(checkout) + "/" not in report  # the report stored in the book names no builder's directory


def test_command_line_prints_ok_lines_and_exits_zero():
    proc = subprocess.run([sys.executable, "-m", "nextword", "check-env"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[0].startswith("[OK] python")
    assert proc.stdout.strip().endswith("environment OK")


def test_a_tool_is_looked_up_not_imported_and_a_missing_one_is_optional(monkeypatch):
    import sys

    monkeypatch.setattr(check_env, "OPTIONAL", check_env.OPTIONAL + ("no_such_tool_nextword",))
    monkeypatch.setattr(check_env, "TOOLS", check_env.TOOLS + ("no_such_tool_nextword",))
    monkeypatch.delitem(sys.modules, "jupytext", raising=False)
    results = {r.name: r for r in check_env.run_checks()}
    assert "jupytext" not in sys.modules  # its version came from the metadata
    assert results["jupytext"].status == "OK" and results["jupytext"].detail[0].isdigit()
    assert results["no_such_tool_nextword"].status == "--"
    assert "not importable" in results["no_such_tool_nextword"].detail


def test_versions_are_checked_against_pyproject_and_extras_and_system_are_reported(monkeypatch):
    """issue 48: [FAIL] for a version outside pyproject.toml's specifier; the extras, commit, OS, CPU, threads."""
    results = {r.name: r for r in check_env.run_checks()}
    assert "need" in results["numpy"].detail  # the specifier is shown beside the version
    for name in ("extra torch", "extra book", "extra instructor", "extra student", "nextword", "os", "cpu", "threads"):
        assert name in results, name
    assert "usable CPUs" in results["threads"].detail and "commit" in results["nextword"].detail
    monkeypatch.setattr(check_env, "requirements", lambda: {"": ["numpy>=99"], "x": ["no-such-dist-nextword>=1"]})
    results = {r.name: r for r in check_env.run_checks()}
    assert results["numpy"].status == "FAIL" and "need >=99" in results["numpy"].detail
    assert results["extra x"].status == "--" and "not installed" in results["extra x"].detail
