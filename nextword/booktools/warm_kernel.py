"""Notebook kernels forked from a warm parent: a fresh kernel per notebook, without re-paying its imports.

``make test`` executes every notebook twice (nbval), each in a new Jupyter kernel. A new kernel is a new
Python process, and before a notebook's first line does any work it imports torch (2-3 s), torch's
compiler front end (``torch._dynamo``, imported by every optimiser's first step: 1.5-2 s), matplotlib,
sympy, scipy and IPython itself: a quarter of the notebook passes' time, measured. On Linux the passes
start instead one **warm parent** per pytest worker: a process that imports those libraries once, in the
environment the kernels would get, and then ``fork``\\ s one child per notebook. A forked child is a new
process with its own memory: it shares nothing with the other notebooks but the state the libraries had
right after being imported (:data:`WARM_IMPORTS`; nothing of the library's own code, no notebook code).

Three programs, one per role:

* ``serve`` — the warm parent (:func:`serve`): imports :data:`WARM_IMPORTS`, then answers requests on
  a Unix socket, one ``fork`` per request, and reports each child's exit status. Its Python code runs in
  one thread, so no Python lock is held by another thread when it forks (the two-thread pass's OpenBLAS
  worker threads are stopped and restarted around ``fork`` by OpenBLAS's own fork handlers).
* ``launch`` — the kernel command that jupyter_client runs (:func:`launch`, in the kernel spec that
  :func:`kernel_spec` writes). It asks the parent for a kernel, hands over its stdin, stdout and stderr,
  forwards the signals jupyter_client sends it (interrupt, terminate) to the child and exits with the
  child's status, so to jupyter_client it *is* the kernel. If the parent is not running, or its
  environment differs from the kernel's in a variable other than jupyter_client's own (``JPY_*``), it
  becomes an ordinary kernel instead (``exec`` of ``ipykernel_launcher``): a *cold* kernel, never a
  different one.
* :class:`WarmParent` — what the root ``conftest.py`` uses to start the parent when the first notebook
  needs a kernel and to stop it when pytest exits.

The child does what a new ``python -m ipykernel_launcher`` process would do differently from the parent:
it takes the kernel's working directory, environment and standard streams, drops the parent's
``sys.path[0]`` as the launcher does, draws fresh seeds for Python's and numpy's global random
generators (as a new process would), and leaves ``MPLBACKEND`` to ipykernel (the parent imported
matplotlib with the inline backend that ipykernel selects). ``tests/booktools/test_warm_kernel.py``
runs the same cells in a cold and a warm kernel and compares what they print.

Linux only (``fork`` after these imports is not safe on macOS, and Windows has no ``fork``): elsewhere, and
whenever ``NEXTWORD_WARM_KERNELS`` is not ``1`` (the Makefile's notebook passes set it), kernels are cold.
"""

from __future__ import annotations

import gc
import json
import os
import signal
import socket
import sys

#: the environment variable that enables warm kernels (``1``), read by the root ``conftest.py``
ENABLE_VARIABLE = "NEXTWORD_WARM_KERNELS"
#: what the parent imports once for all its kernels: the notebooks' heavy third-party imports
WARM_IMPORTS = (
    "ipykernel.kernelapp",
    "numpy",
    "scipy.stats",
    "scipy.optimize",
    "sympy",
    "matplotlib.pyplot",
    "torch",
    "torch._dynamo",
)
_INLINE_BACKEND = "module://matplotlib_inline.backend_inline"  # what ipykernel sets when MPLBACKEND is unset
_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2")  # forwarded by the launcher
_MAX_MESSAGE = 1 << 20


def available() -> bool:
    """True where warm kernels can run: Linux, with ``fork`` and file-descriptor passing."""
    return sys.platform.startswith("linux") and hasattr(os, "fork") and hasattr(socket, "send_fds")


def enabled(environ: dict | None = None) -> bool:
    """True when ``NEXTWORD_WARM_KERNELS=1`` and :func:`available`."""
    environ = os.environ if environ is None else environ
    return environ.get(ENABLE_VARIABLE, "").strip() == "1" and available()


def kernel_argv(path: str) -> list[str]:
    """The kernel spec's command: this module's ``launch`` with the parent's socket and the connection file."""
    return [sys.executable, "-m", "nextword.booktools.warm_kernel", "launch", path, "-f", "{connection_file}"]


def _per_kernel(name: str) -> bool:
    """Variables that differ from kernel to kernel and that no library reads when imported: jupyter_client's
    own (``JPY_*``, read by the child's ipykernel, see :func:`_become_kernel`) and pytest's name of the
    running test (``PYTEST_CURRENT_TEST``)."""
    return name.startswith("JPY_") or name == "PYTEST_CURRENT_TEST"


def _differences(kernel_env: dict, parent_env: dict) -> list[str]:
    """Variables whose values differ, other than the per-kernel ones (:func:`_per_kernel`)."""
    keys = set(kernel_env) | set(parent_env)
    return sorted(k for k in keys if not _per_kernel(k) and kernel_env.get(k) != parent_env.get(k))


# --- the warm parent -------------------------------------------------------------------------------------


def _warm_up(imports: tuple[str, ...]) -> None:
    """Import ``imports`` as a new kernel's notebook would (matplotlib under the inline backend)."""
    import importlib

    set_backend = not os.environ.get("MPLBACKEND")
    if set_backend:  # ipykernel sets it before any notebook code imports matplotlib; unset again below
        os.environ["MPLBACKEND"] = _INLINE_BACKEND
    try:
        for name in imports:
            try:
                importlib.import_module(name)
            except ImportError:  # e.g. torch not installed: its notebooks are skipped anyway
                pass
    finally:
        if set_backend:
            del os.environ["MPLBACKEND"]


def _become_kernel(request: dict, fds: list[int], parents_fds: list[int], parent_cwd: str) -> None:
    """In the forked child: turn into the kernel ``python -m ipykernel_launcher`` would have started.

    ``fds``: the kernel's stdin, stdout and stderr (from the launcher); ``parents_fds``: the parent's
    sockets, pipe and selector, closed here (the child must not hold a launcher's connection open).
    """
    code = 1
    try:
        for fd in parents_fds:
            os.close(fd)
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        if sys.path and sys.path[0] in ("", parent_cwd):  # ipykernel_launcher drops the directory it started in
            del sys.path[0]
        import random

        random.seed()  # a new process draws fresh seeds; a forked one would repeat its parent's
        if "numpy" in sys.modules:
            sys.modules["numpy"].random.seed()
        # ipykernel reads these two when imported (as its traits' defaults): the parent imported it without them
        argv = list(request["argv"])
        for trait, variable in (("parent_handle", "JPY_PARENT_PID"), ("interrupt", "JPY_INTERRUPT_EVENT")):
            if os.environ.get(variable):
                argv.append(f"--IPKernelApp.{trait}={int(os.environ[variable])}")
        sys.argv = [sys.argv[0], *argv]
        from ipykernel import kernelapp

        kernelapp.launch_new_instance(argv=argv)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # noqa: BLE001 - the child must never return into the parent's loop
        import traceback

        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def serve(path: str, imports: tuple[str, ...] = WARM_IMPORTS) -> None:
    """Run the warm parent: import ``imports``, then fork a kernel for each request on ``path``.

    A request (one ``SOCK_SEQPACKET`` message from :func:`launch`) carries the kernel's argv, cwd and
    environment, with its stdin, stdout and stderr as file descriptors. The answer is ``{"pid": ...}``, or
    ``{"cold": reason}`` when the environments differ; later, on the same connection, ``{"exit": code}``
    when the child ends (a negative code: killed by that signal). A connection closed by the launcher (it
    was killed) kills its child. The parent ends on SIGTERM or when the process that started it is gone.
    """
    import selectors

    environ = dict(os.environ)  # the kernels' environment, before the imports
    _warm_up(imports)
    # what the imports themselves put in os.environ (torch's compiler sets TORCHINDUCTOR_CACHE_DIR): a kernel
    # that imported them would have it too
    set_by_imports = {k: v for k, v in os.environ.items() if environ.get(k) != v}
    # the imported objects go to the collector's permanent generation: a child's garbage collections then
    # skip them instead of writing to (and so copying) every page of memory the child shares with the parent
    gc.collect()
    gc.freeze()
    parent_cwd, parent_pid = os.getcwd(), os.getppid()
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))

    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(path + ".tmp")
    os.rename(path + ".tmp", path)  # the socket appears only once the imports are done and it listens
    listener.listen(16)
    sel = selectors.DefaultSelector()
    sel.register(listener, selectors.EVENT_READ)
    sel.register(wake_r, selectors.EVENT_READ)
    children: dict[int, socket.socket] = {}  # child pid -> its launcher's connection

    def reap() -> None:
        while children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = children.pop(pid, None)
            if conn is not None:
                try:
                    conn.send(json.dumps({"exit": os.waitstatus_to_exitcode(status)}).encode())
                except OSError:
                    pass
                sel.unregister(conn)
                conn.close()

    try:
        while not stopping and os.getppid() == parent_pid:
            for key, _ in sel.select(timeout=1.0):
                if key.fileobj is wake_r:
                    os.read(wake_r, 4096)
                    reap()
                elif key.fileobj is listener:
                    conn, _ = listener.accept()
                    try:
                        data, fds, _, _ = socket.recv_fds(conn, _MAX_MESSAGE, 3)
                        request = json.loads(data)
                    except (OSError, ValueError):
                        conn.close()
                        continue
                    differ = _differences(request["env"], environ)
                    if differ or len(fds) != 3:
                        for fd in fds:
                            os.close(fd)
                        reason = f"environment differs in {differ}" if differ else "no standard streams"
                        print(f"cold: {reason}", flush=True)  # the parent's log
                        conn.send(json.dumps({"cold": reason}).encode())
                        conn.close()
                        continue
                    pid = os.fork()
                    if pid == 0:
                        parents_fds = [listener.fileno(), conn.fileno(), wake_r, wake_w, sel.fileno()]
                        request["env"].update(set_by_imports)
                        _become_kernel(request, fds, parents_fds + [c.fileno() for c in children.values()], parent_cwd)
                    for fd in fds:
                        os.close(fd)
                    children[pid] = conn
                    print(f"warm: {pid}", flush=True)
                    sel.register(conn, selectors.EVENT_READ)
                    conn.send(json.dumps({"pid": pid}).encode())
                elif key.fileobj in children.values():  # its launcher closed it: it was killed, so is its kernel
                    for pid, c in list(children.items()):
                        if c is key.fileobj:
                            _kill(pid)  # reaped, and its connection closed, by reap()
            reap()
    finally:
        for pid in children:
            _kill(pid)
        listener.close()
        try:
            os.unlink(path)
        except OSError:
            pass


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


# --- the kernel command ----------------------------------------------------------------------------------


def _cold(argv: list[str]) -> None:
    """Become an ordinary kernel: what the kernel spec of ``python -m ipykernel_launcher`` runs."""
    os.execv(sys.executable, [sys.executable, "-m", "ipykernel_launcher", *argv])


def launch(path: str, argv: list[str]) -> None:
    """The kernel command: a warm kernel from the parent listening at ``path``, else a cold one.

    ``argv``: ipykernel's arguments (``-f CONNECTION_FILE``). Exits with the child's exit status (or dies of
    the signal that killed it), so that jupyter_client, which watches this process, sees the kernel's own life.
    """
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        sock.connect(path)
        request = {"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ)}
        socket.send_fds(sock, [json.dumps(request).encode()], [0, 1, 2])
        reply = json.loads(sock.recv(_MAX_MESSAGE) or b'{"cold": "the parent closed the connection"}')
    except (OSError, ValueError) as exc:
        reply = {"cold": str(exc)}
    if "pid" not in reply:
        print(f"nextword.booktools.warm_kernel: a cold kernel: {reply['cold']}", file=sys.stderr, flush=True)
        sock.close()
        _cold(argv)
    pid = reply["pid"]

    def forward(signum: int, _frame: object) -> None:
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass

    for name in _SIGNALS:
        signal.signal(getattr(signal, name), forward)
    try:
        message = sock.recv(_MAX_MESSAGE)  # blocks until the child ends (retried after each forwarded signal)
        code = json.loads(message)["exit"] if message else 1
    except (OSError, ValueError):
        _kill(pid)
        code = 1
    if code < 0:  # the kernel died of a signal: so does its stand-in
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    sys.exit(code)


# --- the parent's owner ----------------------------------------------------------------------------------


class WarmParent:
    """The warm parent of one pytest process: started on the first :meth:`ensure`, stopped by :meth:`stop`."""

    def __init__(self, env: dict | None = None, imports: tuple[str, ...] = WARM_IMPORTS) -> None:
        self.env = env  # the parent's environment: the kernels' (None: this process's when it starts)
        self.imports = tuple(imports)  # what it imports before it forks
        self.process = None
        self.folder = ""  # the temporary folder of its socket and log, made by ensure()
        self.path = ""
        self.failed = ""  # why the parent is not running, if it stopped on its own (then kernels are cold)

    def ensure(self, timeout: float = 120.0) -> bool:
        """Start the parent if needed and wait until it listens; False (cold kernels) if it is not running."""
        import subprocess
        import tempfile
        import time

        if self.process is not None:
            if self.process.poll() is not None and not self.failed:
                self._failed("stopped")
            return not self.failed
        self.folder = tempfile.mkdtemp(prefix="nextword-warm-")
        self.path = os.path.join(self.folder, "kernels.sock")
        with open(os.path.join(self.folder, "parent.log"), "w") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "nextword.booktools.warm_kernel", "serve", self.path, *self.imports],
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,  # an interrupt of pytest (^C) reaches it through stop(), not twice
            )
        deadline = time.monotonic() + timeout
        while not os.path.exists(self.path):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self._failed("did not start")
                return False
            time.sleep(0.05)
        return True

    def _failed(self, what: str) -> None:
        """Record and report (a warning, with the parent's log) that the parent is gone: cold kernels from now."""
        import warnings

        log = ""
        if self.folder:
            try:
                with open(os.path.join(self.folder, "parent.log")) as f:
                    log = f.read()[-2000:]
            except OSError:
                pass
        self.failed = f"the warm-kernel parent {what}; the next kernels are cold\n{log}"
        warnings.warn(self.failed, stacklevel=3)
        self.stop()

    def stop(self) -> None:
        """Stop the parent (it kills kernels still running) and remove its socket's folder."""
        import shutil

        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except Exception:  # noqa: BLE001 - a parent that does not stop is killed
                self.process.kill()
        if self.folder:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = ""


def start_new_kernel(parent: WarmParent | None, startup_timeout: float = 60, **kwargs):
    """nbval's ``start_new_kernel`` for its current-environment kernel, with :func:`kernel_argv` as the command.

    Returns ``(KernelManager, KernelClient)`` like nbval's; ``kwargs`` go to ``KernelManager.start_kernel``
    (``cwd``, ``env``, ``stderr``). ``parent=None``, or a parent that cannot start, gives a cold kernel.
    """
    import ipykernel.kernelspec
    from jupyter_client.kernelspec import KernelSpec, KernelSpecManager
    from jupyter_client.manager import KernelManager

    spec = ipykernel.kernelspec.get_kernel_dict()
    if parent is not None and parent.ensure():
        spec["argv"] = kernel_argv(parent.path)

    class _Specs(KernelSpecManager):
        def get_kernel_spec(self, kernel_name):  # noqa: ARG002 - one kernel
            return KernelSpec(resource_dir=ipykernel.kernelspec.RESOURCES, **spec)

    km = KernelManager(kernel_name="python3", kernel_spec_manager=_Specs())
    km.start_kernel(**kwargs)
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=startup_timeout)
    except RuntimeError:
        kc.stop_channels()
        km.shutdown_kernel()
        raise
    return km, kc


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["serve"] and len(argv) >= 2:
        serve(argv[1], tuple(argv[2:]))
    elif argv[:1] == ["launch"] and len(argv) >= 2:
        launch(argv[1], argv[2:])
    else:
        sys.exit(
            "usage: python -m nextword.booktools.warm_kernel serve SOCKET [MODULE ...] | launch SOCKET -f CONNECTION_FILE"
        )


if __name__ == "__main__":
    main()
