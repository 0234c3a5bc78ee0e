"""Download raw WikiText-2 once, on a machine with internet, and check it before unpacking.

Nothing in the book or the tests calls this; it backs ``nextword fetch``.
The archive is the standard ``wikitext-2-raw-v1.zip`` (Merity et al., 2017; CC BY-SA 3.0), taken from
the ``ggml-org/ci`` dataset on the Hugging Face hub pinned to a commit, with the original S3 location
as a fallback. Its size and SHA-256 are pinned below (recorded from that pinned commit; this
repository's build machine has no internet, so the value is taken from that public record, and a
mismatch stops the fetch instead of unpacking an unexpected file).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import urllib.request
import zipfile
from pathlib import Path

from nextword.data import candidate_data_dirs

__all__ = ["WIKITEXT2_URLS", "WIKITEXT2_SHA256", "WIKITEXT2_BYTES", "fetch_wikitext2", "FetchError", "sha256_of"]

WIKITEXT2_URLS = (
    "https://huggingface.co/datasets/ggml-org/ci/resolve/927b3642933080f1b0e811e2f916e14c292992f9/"
    "wikitext-2-raw-v1.zip",
    "https://s3.amazonaws.com/research.metamind.io/wikitext/wikitext-2-raw-v1.zip",
)
WIKITEXT2_SHA256 = "ef7edb566e3e2b2d31b29c1fdb0c89a4cc683597484c3dc2517919c615435a11"
WIKITEXT2_BYTES = 4_721_645


def sha256_of(path: str | Path, chunk: int = 1 << 20) -> str:
    """Hex SHA-256 of a file."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def default_target() -> Path:
    """Where ``fetch`` unpacks to: ``$NEXTWORD_DATA_DIR`` if set, else the user cache data dir."""
    env = os.environ.get("NEXTWORD_DATA_DIR")
    return Path(env).expanduser() if env else candidate_data_dirs()[-1]


class FetchError(ConnectionError):
    """No URL gave the file with the expected checksum (offline, or the file changed)."""


def fetch_wikitext2(
    target: str | Path | None = None, *, urls=WIKITEXT2_URLS, sha256: str = WIKITEXT2_SHA256, timeout: float = 60.0
) -> Path:
    """Download, verify (SHA-256) and unpack WikiText-2 raw into ``target/wikitext-2-raw/``.

    Returns the directory holding ``wiki.{train,valid,test}.raw``. Already-present files are kept.
    Raises :class:`FetchError` (an ``OSError``) if no URL yields a file with the expected checksum.
    """
    target = Path(target).expanduser() if target is not None else default_target()
    out = target / "wikitext-2-raw"
    if all((out / f).is_file() for f in ("wiki.train.raw", "wiki.valid.raw", "wiki.test.raw")):
        return out
    target.mkdir(parents=True, exist_ok=True)
    errors = []
    with tempfile.TemporaryDirectory(dir=target) as tmp:
        archive = Path(tmp) / "wikitext-2-raw-v1.zip"
        for url in urls:
            try:
                with urllib.request.urlopen(url, timeout=timeout) as r, open(archive, "wb") as f:
                    shutil.copyfileobj(r, f)
            except OSError as exc:  # URLError is an OSError
                errors.append(f"{url}: {exc}")
                continue
            digest = sha256_of(archive)
            if digest != sha256:
                errors.append(f"{url}: sha256 {digest} != expected {sha256}")
                continue
            with zipfile.ZipFile(archive) as z:
                z.extractall(tmp)
            unpacked = Path(tmp) / "wikitext-2-raw"
            out.mkdir(exist_ok=True)
            for name in ("wiki.train.raw", "wiki.valid.raw", "wiki.test.raw"):
                os.replace(unpacked / name, out / name)
            return out
    raise FetchError("could not fetch WikiText-2 (no network?): " + "; ".join(errors))
