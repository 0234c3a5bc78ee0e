"""Fixtures of the rendered book's tests (``test_book_browser*.py``), shared by every module here.

They are session-scoped: the book is brought up to date (an incremental Sphinx build), served and
opened in Chromium once per test process, not once per module that reads it.

Every test that opens the book in Chromium (it uses the ``browser`` fixture, directly or through
``visit``) is marked ``browser`` here: ``make test-browser`` runs them (``.ci/run`` does, with axe-core),
``make test`` does not. They check the committed book as Chromium renders it, not your machine's
numbers, and they take a few minutes of CPU (the browser's own included); the structural checks that
read the HTML files stay in ``make test``.
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import threading
from pathlib import Path

import pytest

from nextword.booktools import notebooks

ROOT = Path(notebooks.REPO_ROOT)
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-dev-shm-usage",
]


@pytest.fixture(scope="session")
def html_dir() -> Path:
    """``_build/html``, brought up to date (incremental Sphinx build; serialised across xdist workers).

    Under ``make test``, which has just rendered it (``book-html``, then ``NEXTWORD_BOOK_HTML_FRESH=1``), as is.
    """
    index = notebooks.HTML_DIR / "index.html"
    if os.environ.get("NEXTWORD_BOOK_HTML_FRESH") == "1" and index.exists():
        return index.parent
    lock_path = ROOT / "_build" / ".book-html.lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "w") as lock:
        try:
            import fcntl

            fcntl.flock(lock, fcntl.LOCK_EX)
        except ImportError:  # Windows: no lock; run the tests without xdist there
            pass
        index = notebooks.render_book(notebooks.HTML_DIR)
    return index.parent


def _chromium() -> str | None:
    for candidate in (
        os.environ.get("CHROMIUM"),
        "/usr/bin/chromium",
        shutil.which("chromium"),
        shutil.which("chromium-browser"),
    ):
        if candidate and Path(candidate).exists():
            return candidate
    return None


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 (the base class's name)
        pass


def pytest_collection_modifyitems(items):
    for item in items:
        if "browser" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def server(html_dir):
    """The built book over HTTP on 127.0.0.1 (an ephemeral port), for the whole session."""
    handler = functools.partial(_QuietHandler, directory=str(html_dir))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_port}/"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="session")
def browser():
    executable = _chromium()
    reason = None
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        reason = "playwright is not installed (pip install -e '.[dev]')"
    if reason is None and executable is None:
        reason = "no Chromium found (Debian: apt-get install chromium): the browser test needs the system browser"
    if reason is not None:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the browser test: {reason}")
        pytest.skip(reason)
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()
