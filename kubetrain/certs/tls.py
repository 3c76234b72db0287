"""A server-side TLS context whose certificate is hot-reloaded from a directory.

```python
tls = ReloadingTLS("/tmp/kubetrain/certs")    # tls.crt + tls.key (ca.crt optional)
await tls.start()                              # first load + a cheap poll every `poll_interval` s
site = web.TCPSite(runner, host, port, ssl_context=tls.ssl_context)
tls.loaded                                     # readiness: a certificate is being served
tls.reload()                                   # check the files now (tests, or after writing them)
await tls.stop()
```

How a new certificate reaches new connections without restarting the server: aiohttp keeps the
one `ssl_context` it was given; that context has an SNI callback which, during every TLS
handshake (OpenSSL calls it whether or not the client sent SNI), moves the connection onto the
most recently loaded context (`ssl_obj.context = current`). Established connections keep the
certificate they were opened with; new handshakes get the new one.

Detecting a change: kubelet updates a mounted Secret by writing a new timestamped directory and
atomically swapping the `..data` symlink, so `tls.crt -> ..data/tls.crt` resolves to a new file.
Every poll `os.stat`s both files (following symlinks) and compares (device, inode, mtime, size);
only when that changes are the files read, and only when their content changed is a new
context built. A half-written pair (certificate and key that do not match, unparsable PEM) is
logged and the previous certificate stays in service until the next poll sees a good pair.
Both TLS 1.2 and 1.3 are accepted; older protocol versions are refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import ssl
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)

TLS_CERT_FILE = "tls.crt"
TLS_KEY_FILE = "tls.key"
CA_CERT_FILE = "ca.crt"

FileSignature = tuple[tuple[int, int, int, int], ...]


def new_server_context() -> ssl.SSLContext:
    """A TLS server context with kubetrain's settings: TLS 1.2 minimum, no compression."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.options |= ssl.OP_NO_COMPRESSION | ssl.OP_CIPHER_SERVER_PREFERENCE
    return ctx


def _stat_signature(paths: list[Path]) -> FileSignature | None:
    out: list[tuple[int, int, int, int]] = []
    for p in paths:
        try:
            st = os.stat(p)
        except OSError:
            return None
        out.append((st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size))
    return tuple(out)


class ReloadingTLS:
    """The TLS server context of the webhook, following the files of a certificate directory."""

    def __init__(
        self,
        cert_dir: str | os.PathLike[str],
        *,
        cert_file: str = TLS_CERT_FILE,
        key_file: str = TLS_KEY_FILE,
        poll_interval: float = 2.0,
    ) -> None:
        self.cert_dir = Path(cert_dir)
        self.cert_path = self.cert_dir / cert_file
        self.key_path = self.cert_dir / key_file
        self.poll_interval = poll_interval
        self._signature: FileSignature | None = None
        self._digest: bytes | None = None
        self._current: ssl.SSLContext | None = None
        self.cert_pem: bytes | None = None
        self.reloads = 0
        self._listeners: list[Callable[[bytes], None]] = []
        self._task: asyncio.Task[None] | None = None
        # The context handed to the HTTPS server; it only dispatches to the current one.
        self.ssl_context = new_server_context()
        self.ssl_context.sni_callback = self._select_context

    @property
    def loaded(self) -> bool:
        """True once a certificate has been loaded and is being served."""
        return self._current is not None

    def on_reload(self, fn: Callable[[bytes], None]) -> None:
        """Call `fn(cert_pem)` after every successful (re)load."""
        self._listeners.append(fn)

    def _select_context(self, ssl_obj: ssl.SSLObject, server_name: str | None, _: ssl.SSLContext) -> None:
        current = self._current
        if current is not None:
            ssl_obj.context = current

    def reload(self) -> bool:
        """Check the directory now; returns True when a new certificate was put into service."""
        paths = [self.cert_path, self.key_path]
        signature = _stat_signature(paths)
        if signature is None:
            if self._signature is not None:
                log.warning("certificate files %s disappeared; still serving the last one", paths)
            self._signature = None
            return False
        if signature == self._signature:
            return False
        try:
            cert_pem = self.cert_path.read_bytes()
            key_pem = self.key_path.read_bytes()
        except OSError as exc:
            log.warning("cannot read the certificate in %s: %s", self.cert_dir, exc)
            return False
        digest = hashlib.sha256(cert_pem + b"\0" + key_pem).digest()
        if digest == self._digest:
            self._signature = signature
            return False
        ctx = new_server_context()
        try:
            ctx.load_cert_chain(self.cert_path, self.key_path)
        except (ssl.SSLError, OSError, ValueError) as exc:
            # Typically a rotation caught half-way (new cert, old key): retry on the next poll.
            log.warning("certificate in %s not usable yet (%s); keeping the current one", self.cert_dir, exc)
            return False
        self._current = ctx
        self._signature = signature
        self._digest = digest
        self.cert_pem = cert_pem
        self.reloads += 1
        log.info("serving the certificate from %s (load #%d)", self.cert_dir, self.reloads)
        for fn in self._listeners:
            fn(cert_pem)
        return True

    async def start(self) -> None:
        """Load what is there now and keep polling in the background."""
        self.reload()
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._poll(), name="cert-reload")

    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(self.poll_interval)
            try:
                self.reload()
            except Exception:  # never let the poller die; the next poll retries
                log.exception("certificate reload failed")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


def write_cert_dir(
    cert_dir: str | os.PathLike[str], cert_pem: bytes, key_pem: bytes, ca_pem: bytes | None = None
) -> None:
    """Write tls.crt/tls.key[/ca.crt] so that a reader never sees a torn file.

    Each file is written to a temporary name and renamed over the old one; the key is readable
    by the owner only. A reader may briefly see a new certificate with the old key, which
    `ReloadingTLS.reload` detects (mismatch) and retries.
    """
    d = Path(cert_dir)
    d.mkdir(parents=True, exist_ok=True)
    items: list[tuple[str, bytes, int]] = []
    if ca_pem is not None:
        items.append((CA_CERT_FILE, ca_pem, 0o644))
    items += [(TLS_KEY_FILE, key_pem, 0o600), (TLS_CERT_FILE, cert_pem, 0o644)]
    for name, data, mode in items:
        tmp = d / f".{name}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, d / name)
