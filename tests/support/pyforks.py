"""Interpreters that fork (tests/runbook): an executable that stands in for a reference environment's
``python``, each run forked from one server of that environment that has already imported its heavy
libraries (torch, transformers, the vendor package).

Why: the runbook's adapter-check step starts the reference environments twice (``bench doctor
check-adapters`` imports torch and transformers in each to prove they load; ``bench check-adapters`` then
runs the references in each), and on the miniature's inputs each start is almost all import. Each run is
still a process of its own, in the real environment's interpreter (``sys.prefix``, ``sys.executable`` and
the packages are that environment's): its own pid, argv, environment, working directory, stdin, stdout,
stderr and exit status; only the server's preloads were imported before the fork. As in
``tests.support.forkserver``, libraries that read the environment at import read the server's, so there is
one server per environment, not counting the variables only ``bench`` reads (``RUN_TIME_ENV``).

The stand-in (``Interpreters.wrapper``) is a small script run by the real interpreter with ``-I -S`` (no
site, nothing from the environment); it handles the two forms ``bench`` uses, ``python -c CODE`` and ``python
SCRIPT ARGS``, passes its standard streams to the server (SCM_RIGHTS), and exits with the run's status (a
signal's death as 128 + signum). The server is this file run as a script by the real interpreter (standard
library only); it starts on the first run of its environment and ends with ``Interpreters.close``, when the
process that made the stand-in is gone, or after ``IDLE_S`` without a request. A stand-in killed while its
run goes on (a caller's timeout) kills the run.
"""

from __future__ import annotations

import ast
import os
import socket
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

RUN_TIME_ENV = ("BENCH_", "VOYAGE_", "ANTHROPIC_", "_TYPESENSE")  # as tests.support.forkserver
# a command line's run-time variables besides those: pytest's own and the terminal size
CLI_RUN_TIME = (*RUN_TIME_ENV, "PYTEST_", "COLUMNS", "LINES")
IDLE_S = 1800.0

# The stand-in runs once per command, so on its way to a running server it imports only builtins and small
# extension modules (2026-12-06: 18 ms of CPU against 47 ms with json, hashlib, socket and subprocess; the
# interpreter's own start is 16 ms): the key and the request are ``ascii()`` of plain lists and dicts (the
# server reads them with ``ast.literal_eval``), the digest sha256 from ``_sha256`` (hashlib's fallback), the
# socket ``_socket`` with SCM_RIGHTS as ``socket.send_fds`` sends them; fcntl, subprocess and time only
# where the stand-in starts a server.
WRAPPER = """#!{python} -IS
import _socket, array, os, sys
try:
    from _sha256 import sha256
except ImportError:  # Python 3.12 and later
    from _sha2 import sha256
PYTHON, SERVER, DIR, NAME, PRELOAD = {python!r}, {server!r}, {dir!r}, {name!r}, {preload!r}
OWNER = {owner!r}
env = dict(os.environ)
key = ascii(sorted((k, v) for k, v in env.items() if not k.startswith({run_time!r})))
sock_path = os.path.join(DIR, NAME + "-" + sha256(key.encode()).hexdigest()[:12] + ".sock")


LOG = sock_path + ".log"


def connect():
    s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        s.connect(sock_path)
    except OSError:
        s.close()
        raise
    return s


def start_server():
    import fcntl, subprocess, time
    with open(sock_path + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            return connect()
        except OSError:
            pass
        with open(LOG, "ab") as log:
            server = subprocess.Popen(
                [PYTHON, SERVER, sock_path, OWNER, *PRELOAD], env=env, stdin=subprocess.DEVNULL,
                stdout=log, stderr=log, start_new_session=True, cwd="/",
            )
        with open(os.path.join(DIR, "pids"), "a") as pids:
            pids.write(str(server.pid) + "\\n")
        while True:
            try:
                return connect()
            except OSError:
                if server.poll() is not None:
                    sys.exit("tests/support/pyforks.py: the server of " + NAME + " ended, see " + LOG)
                time.sleep(0.05)


try:
    conn = connect()
except OSError:
    conn = start_server()
req = ascii({{"argv": sys.argv[1:], "env": env, "cwd": os.getcwd()}}).encode() + b"\\n"
conn.sendmsg([req], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, array.array("i", [0, 1, 2]))])
answer = b""
while not answer.endswith(b"\\n"):
    chunk = conn.recv(4096)
    if not chunk:
        sys.exit("tests/support/pyforks.py: the server of " + NAME + " ended mid-run, see " + LOG)
    answer += chunk
rc = int(answer)
os._exit(rc if rc >= 0 else 128 - rc)
"""


def exit_as_python(run: Callable[[], None]) -> NoReturn:
    """A forked process's whole life: ``run``, then the exit status ``python`` would give it (0; a
    ``SystemExit``'s code, its message on stderr when it is not a number; 1 with the traceback for any other
    exception), the atexit functions, the streams flushed, and ``os._exit``: never returns into the server's
    code. Also ends the runs of tests/support/forkserver.py (this file imports nothing of the project's: it
    runs inside foreign environments too)."""
    code = 1
    try:
        try:
            run()
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if exc.code is not None and not isinstance(exc.code, int):
                print(exc.code, file=sys.stderr)
    except BaseException:  # the run's own traceback, as an uncaught exception prints it
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        try:
            import atexit

            atexit._run_exitfuncs()
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _child(req: dict[str, Any], fds: list[int], server: socket.socket) -> None:
    """In the forked process: the caller's streams, directory, environment and argv, then its code as
    ``python`` runs it; never returns."""

    def run() -> None:
        server.close()
        for fd, target in zip(fds, (0, 1, 2), strict=True):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(req["cwd"])
        os.environ.clear()
        os.environ.update(req["env"])
        argv = req["argv"]
        import runpy

        if argv[:1] == ["-c"]:  # as `python -c CODE`: the code in a fresh __main__, '' first on sys.path
            import types

            sys.argv = ["-c", *argv[2:]]
            sys.path.insert(0, "")
            main = types.ModuleType("__main__")
            sys.modules["__main__"] = main
            exec(compile(argv[1], "<string>", "exec"), main.__dict__)
        else:  # as `python SCRIPT ARGS`: the script's folder first on sys.path
            sys.argv = list(argv)
            sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))
            runpy.run_path(argv[0], run_name="__main__")

    exit_as_python(run)


def _wait(pid: int, conn: socket.socket) -> int:
    """The run's exit status; the run is killed when its stand-in goes away (the connection closes). The
    server sleeps until the run ends or the connection changes (a pidfd, Linux 5.3; where there is none, it
    looks every 20 ms)."""
    import select
    import signal

    try:
        pidfd: int | None = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = None
    watched: list[Any] = [conn] if pidfd is None else [conn, pidfd]
    try:
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return os.waitstatus_to_exitcode(status)
            ready, _, _ = select.select(watched, [], [], 0.02 if pidfd is None else None)
            if conn in ready:
                if not conn.recv(1, socket.MSG_PEEK):
                    os.kill(pid, signal.SIGKILL)
                if pidfd is not None:
                    watched.remove(conn)  # closed or (never) more bytes: from now on the run's end alone
    finally:
        if pidfd is not None:
            os.close(pidfd)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _freeze_heap() -> None:
    """The preloads' objects out of the garbage collector's view (``gc.freeze``): they live as long as the
    server, and every run forked from it would otherwise walk them at each full collection (a run's own
    ``gc.collect()`` after each model: tenths of a second each over torch and transformers)."""
    import gc

    gc.collect()
    gc.freeze()


def serve(path: str, owner: int, preload: list[str]) -> None:
    """Serve runs on the socket ``path`` until ``owner`` (the test's process) is gone or ``IDLE_S`` pass
    without a request."""
    import importlib
    import time

    for name in preload:
        importlib.import_module(name)
    # what every run imports first (``_child``), once: a run's sys.modules is the same when its code starts
    for name in ("runpy", "types"):
        importlib.import_module(name)
    _freeze_heap()
    if os.path.exists(path):  # a server that died (the stand-in that starts this one holds the lock)
        os.unlink(path)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(8)
    listener.settimeout(5.0)
    last = time.monotonic()
    while True:
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            if not _alive(owner) or time.monotonic() - last > IDLE_S:
                break
            continue
        last = time.monotonic()
        with conn:
            msg, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
            while not msg.endswith(b"\n"):
                msg += conn.recv(1 << 20)
            req = ast.literal_eval(msg.decode())
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                listener.close()
                _child(req, fds, conn)
            for fd in fds:
                os.close(fd)
            rc = _wait(pid, conn)
            try:
                conn.sendall(b"%d\n" % rc)
            except OSError:
                pass
    listener.close()
    os.unlink(path)


if __name__ == "__main__":
    del sys.path[0]  # this file's folder (tests/support): nothing of it may shadow what a run imports
    serve(sys.argv[1], int(sys.argv[2]), sys.argv[3:])


class Interpreters:
    """The caller's side: ``wrapper(name, python, preload)`` writes the stand-in for ``python`` (an
    executable path); ``close`` ends every server the stand-ins started."""

    def __init__(self) -> None:
        import tempfile

        # a short folder: a socket's path has at most 107 bytes
        self.dir = tempfile.mkdtemp(prefix="pyforks-")
        self.cpu_s = 0.0  # server_cpu_s() at close

    def wrapper(
        self,
        name: str,
        python: Any,
        preload: tuple[str, ...],
        key_ignore: tuple[str, ...] = (),
        run_time: tuple[str, ...] = RUN_TIME_ENV,
    ) -> str:
        """``run_time``: prefixes of the variables that do not choose the server (read after the fork);
        ``key_ignore``: more such prefixes, of variables that no preload reads, so runs that differ only in
        them share a server (tests/equality: ``PYTEST_CURRENT_TEST``, which names each test)."""
        path = os.path.join(self.dir, f"{name}-python")
        text = WRAPPER.format(
            python=str(python),
            server=os.path.abspath(__file__),
            dir=self.dir,
            name=name,
            preload=list(preload),
            run_time=tuple(run_time) + tuple(key_ignore),
            owner=str(os.getpid()),
        )
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(path, 0o755)
        return path

    def _pids(self) -> list[int]:
        pids_file = os.path.join(self.dir, "pids")
        if not os.path.exists(pids_file):
            return []
        with open(pids_file, encoding="utf-8") as f:
            return [int(line) for line in f if line.strip()]

    def server_cpu_s(self) -> float:
        """CPU seconds (user + system) of the servers and the runs they forked (they are not the caller's
        children, so its own accounting misses them)."""
        total = 0
        for pid in self._pids():
            try:
                with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += sum(int(x) for x in fields[11:15])  # utime, stime, cutime, cstime
        return total / os.sysconf("SC_CLK_TCK")

    def close(self) -> None:
        import shutil
        import signal
        import time

        pids = self._pids()
        self.cpu_s = self.server_cpu_s()
        for pid in pids:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 10
        for pid in pids:
            while time.monotonic() < deadline and not _ended(pid):
                time.sleep(0.02)
        shutil.rmtree(self.dir, ignore_errors=True)


@contextmanager
def stand_in_python(name: str, preload: tuple[str, ...]) -> Iterator[str]:
    """The stand-in for this environment's ``python`` (``sys.executable``) whose runs fork from one server
    that has imported ``preload`` (:data:`CLI_RUN_TIME` read after the fork); the server ends with the
    block."""
    interpreters = Interpreters()
    try:
        yield interpreters.wrapper(name, sys.executable, preload, run_time=CLI_RUN_TIME)
    finally:
        interpreters.close()


def _ended(pid: int) -> bool:
    """``pid`` has exited: gone, or a zombie (a server's parent, the stand-in, has exited before it, so the
    init process reaps it, here up to 2 s later)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return not _alive(pid)
