"""``benchmarks/bench_margin.py --profile N``: where the time of a CE and an exact-margin step goes (issue 49)."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TINY = ["--warmup", "0", "--batch", "2", "--block", "32", "-d", "8"]


def _bench(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, str(ROOT / "benchmarks" / "bench_margin.py"), *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)


def test_the_profile_splits_the_step_into_its_parts_and_names_the_factorisations():
    run = _bench("--profile", "1", *TINY)
    assert run.returncode == 0, run.stderr
    ce, exact = run.stdout.split("\nexact: time per labelled part")
    for part in ("model forward (CE)", "backward", "optimiser"):
        assert part in ce and part in exact
    assert "margin penalty" not in ce and "margin penalty (value and closed-form gradient)" in exact
    # the exact step's LU factorisation and the solves for its inverse are summed on one line; the CE step has none
    assert "exact: the factorisations and solves (aten::linalg_lu_factor_ex, aten::linalg_lu_solve):" in exact
    assert "linalg_lu" not in ce


def test_a_negative_profile_count_is_a_usage_error():
    run = _bench("--profile", "-1", *TINY)
    assert run.returncode == 2 and "--profile must be >= 0" in run.stderr
