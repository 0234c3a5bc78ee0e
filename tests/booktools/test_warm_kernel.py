"""Warm kernels (nextword/booktools/warm_kernel.py) are the kernels a new process would be, only faster.

The notebook passes of ``make test`` fork each notebook's kernel from a parent that imported torch & co.
once. These tests hold the fork to what a cold kernel (``python -m ipykernel_launcher``) does: the same
printed outputs for the same cells (working directory, ``sys.path``, environment, threads, matplotlib's
backend and figures, C-level writes to stdout and stderr), nothing carried from one notebook to the next,
fresh random seeds, interrupts and kills that reach the kernel, and a cold kernel whenever the parent
cannot give an identical one.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from queue import Empty

import pytest

from nextword.booktools import warm_kernel

pytestmark = pytest.mark.skipif(not warm_kernel.available(), reason="warm kernels need Linux (fork)")
pytest.importorskip("ipykernel")

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK_DIR = ROOT / "book" / "part1_chapter6"  # a notebook's folder: nbval runs its kernel there

#: the environment of the parent and of every kernel here (pytest changes os.environ while tests run)
ENV = dict(os.environ)
#: cells whose printed output must be the same in a cold and a warm kernel (after the same imports)
SAME_OUTPUT = [
    "import os, sys, json\nimport numpy, torch, torch._dynamo, matplotlib, matplotlib.pyplot as plt, sympy",
    "print(os.getcwd())\nprint(sys.path)",
    "per_kernel = ('JPY_PARENT_PID', 'PYTEST_CURRENT_TEST')\n"
    "print(json.dumps({k: v for k, v in sorted(os.environ.items()) if k not in per_kernel}))",
    "print(torch.get_num_threads(), torch.get_num_interop_threads(), numpy.get_printoptions()['precision'])",
    "print(matplotlib.get_backend(), matplotlib.rcParams['figure.dpi'])",
    "plt.plot([0, 1], [1, 0]); plt.show()",
    # C-level writes reach the notebook through ipykernel's watcher of fds 1 and 2 (in its own thread: a
    # write to sys.stderr in the same cell may interleave with fd 2's either way, in both kinds of kernel)
    "n = os.write(1, b'written to fd 1\\n') + os.write(2, b'written to fd 2\\n')",
    "print('via sys.stderr', file=sys.stderr)",
    "print(type(get_ipython()).__name__, __name__, sorted(k for k in globals() if not k.startswith('_'))[:8])",
    "print(sympy.latex(sympy.sqrt(sympy.Symbol('d'))), float(torch.ones(3).sum()))",
]


def _run(kc, code: str, timeout: float = 60) -> list[tuple]:
    """Execute ``code``; the outputs as (kind, text or sorted mime types), streams merged per name."""
    msg_id = kc.execute(code)
    out: dict[str, str] = {}
    rest: list[tuple] = []
    while True:
        msg = kc.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        kind, content = msg["msg_type"], msg["content"]
        if kind == "stream":
            out[content["name"]] = out.get(content["name"], "") + content["text"]
        elif kind in ("execute_result", "display_data"):
            rest.append((kind, tuple(sorted(content["data"]))))
        elif kind == "error":
            rest.append(("error", content["ename"]))
        elif kind == "status" and content["execution_state"] == "idle":
            break
    # ipykernel's output thread may publish a stream after the idle status: collect what comes within 0.3 s
    try:
        while True:
            msg = kc.get_iopub_msg(timeout=0.3)
            if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "stream":
                name = msg["content"]["name"]
                out[name] = out.get(name, "") + msg["content"]["text"]
    except Empty:
        pass
    return sorted(out.items()) + rest


def _evaluate(kc, expression: str) -> str:
    """``repr`` of ``expression`` evaluated in the kernel, read from the shell reply (no output stream).

    After a cell's error (an interrupt included) ipykernel aborts the requests queued behind it until a
    "stop aborting" message that its shell-channel thread posts a moment later: a request sent right
    after the error's reply can race it and come back ``aborted`` (seen under load, in cold kernels as
    in warm ones). Such a request is sent again; any other status fails."""
    for _ in range(5):
        msg_id = kc.execute("", user_expressions={"value": expression})
        while True:
            reply = kc.get_shell_msg(timeout=60)
            if reply["parent_header"].get("msg_id") == msg_id:
                break
        if reply["content"]["status"] != "aborted":
            break
        time.sleep(0.1)
    assert reply["content"]["status"] == "ok", reply["content"]
    return reply["content"]["user_expressions"]["value"]["data"]["text/plain"]


@pytest.fixture(scope="module")
def parent():
    p = warm_kernel.WarmParent(env=ENV)
    assert p.ensure(), p.failed
    yield p
    p.stop()


def _kernel(parent, env: dict | None = None):
    return warm_kernel.start_new_kernel(
        parent, cwd=str(NOTEBOOK_DIR), env=ENV if env is None else env, stderr=open(os.devnull, "w")
    )


def _stop(km, kc) -> None:
    kc.stop_channels()
    km.shutdown_kernel(now=True)


def _is_warm(kc) -> bool:
    """A warm kernel has torch imported before any cell imports it."""
    return _evaluate(kc, "'torch' in __import__('sys').modules") == "True"


def test_a_warm_kernel_prints_what_a_cold_kernel_prints(parent):
    outputs = {}
    for kind, p in (("cold", None), ("warm", parent)):
        km, kc = _kernel(p)
        try:
            assert _is_warm(kc) == (kind == "warm")
            outputs[kind] = [_run(kc, cell) for cell in SAME_OUTPUT]
        finally:
            _stop(km, kc)
    for cell, cold, warm in zip(SAME_OUTPUT, outputs["cold"], outputs["warm"]):
        assert warm == cold, f"cell {cell!r}: cold kernel {cold}, warm kernel {warm}"
    assert ("display_data", ("image/png", "text/plain")) in outputs["warm"][5]  # the figure is shown inline
    assert outputs["warm"][6] == [("stderr", "written to fd 2\n"), ("stdout", "written to fd 1\n")]


def test_warm_kernels_share_nothing_but_the_imports(parent):
    first_km, first = _kernel(parent)
    second_km, second = _kernel(parent)
    try:
        assert _is_warm(first) and _is_warm(second)
        _run(first, "import json, numpy as np, random\nx = 1\njson.CHANGED = True\nnp.set_printoptions(precision=3)")
        check = (
            "import json, numpy as np\n"
            "print('x' in globals(), hasattr(json, 'CHANGED'), np.get_printoptions()['precision'])"
        )
        assert _run(second, check) == [("stdout", "False False 8\n")]
        draw = "import numpy as np, random; print(np.random.rand(), random.random())"
        assert _run(first, draw) != _run(second, draw)  # each process draws its own seeds, as a new one would
    finally:
        _stop(first_km, first)
        _stop(second_km, second)


def test_a_warm_kernel_is_interrupted_and_killed(parent):
    km, kc = _kernel(parent)
    try:
        assert _is_warm(kc)
        pid = int(_evaluate(kc, "__import__('os').getpid()"))
        assert pid != km.provisioner.process.pid  # the launcher stands in for the forked kernel
        msg_id = kc.execute("import time; time.sleep(60)")
        time.sleep(0.5)
        km.interrupt_kernel()  # a signal to the launcher, forwarded to the kernel
        while True:
            reply = kc.get_shell_msg(timeout=20)
            if reply["parent_header"].get("msg_id") == msg_id:
                break
        assert reply["content"]["status"] == "error" and reply["content"]["ename"] == "KeyboardInterrupt"
        assert _evaluate(kc, "6 * 7") == "42"  # the kernel lives on after the interrupt
    finally:
        _stop(km, kc)  # now=True: jupyter_client kills the launcher; the parent then kills the kernel
    deadline = time.monotonic() + 10
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not Path(f"/proc/{pid}").exists(), "the kernel outlived its launcher"


def test_a_kernel_is_cold_when_the_environments_differ_or_there_is_no_parent(parent, tmp_path):
    km, kc = _kernel(parent, env=dict(ENV, NEXTWORD_TEST_ONLY_VARIABLE="1"))
    try:
        assert not _is_warm(kc)  # torch could have read the variable when imported: a new process
        assert _run(kc, "import os; print(os.environ['NEXTWORD_TEST_ONLY_VARIABLE'])") == [("stdout", "1\n")]
    finally:
        _stop(km, kc)
    gone = warm_kernel.WarmParent()
    gone.path = str(tmp_path / "no-such-socket")
    gone.process = type("Stopped", (), {"poll": lambda self: 1})()
    with pytest.warns(UserWarning, match="the next kernels are cold"):
        km, kc = _kernel(gone)
    try:
        assert not _is_warm(kc)
    finally:
        _stop(km, kc)


def test_warm_kernels_are_off_unless_asked_for():
    assert not warm_kernel.enabled({})
    assert not warm_kernel.enabled({"NEXTWORD_WARM_KERNELS": "0"})
    assert warm_kernel.enabled({"NEXTWORD_WARM_KERNELS": "1"}) == warm_kernel.available()


def test_the_makefile_notebook_passes_ask_for_them():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "NBENV  := env -u MPLBACKEND FULL=0 NEXTWORD_WARM_KERNELS=1" in makefile


def test_the_parent_stops_its_kernels_when_it_stops():
    p = warm_kernel.WarmParent(env=ENV, imports=("ipykernel.kernelapp",))  # a parent of its own: light
    assert p.ensure()
    km, kc = _kernel(p)
    try:
        assert _evaluate(kc, "__import__('os').getppid()") == str(p.process.pid)  # forked by p
        pid = int(_evaluate(kc, "__import__('os').getpid()"))
        p.stop()
        deadline = time.monotonic() + 10
        while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not Path(f"/proc/{pid}").exists()
        assert km.provisioner.process.wait(timeout=10) != 0  # the launcher reports its kernel's death
    finally:
        kc.stop_channels()
        if km.is_alive():
            km.shutdown_kernel(now=True)
        else:
            km.cleanup_resources()
