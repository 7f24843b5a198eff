"""``main([SOCKET, OWNER, PIDS])``, run in a process forked from ``tests.support.forkserver`` (tests/runbook):
a ``tests.support.pyforks`` server for the main environment's references, made from the fork server's process
instead of a new interpreter.

Why: the main environment's references (``BENCH_REFERENCE_PYTHON_MAIN``) run in the interpreter of the fork
server, which has imported torch and transformers already; a pyforks server of its own imported them a
second time (4.5-9 s CPU, 2026-12-06). The server is a grandchild of the fork server (double fork: the
request ends at once, the server lives until ``Interpreters.close``, the owner's death or ``IDLE_S``), its
pid is appended to PIDS (``Interpreters``: the file its ``close`` and CPU count read), and it listens on
SOCKET, the path a stand-in (``Interpreters.wrapper``) computes from the references' environment
(``socket_path``), so the stand-in finds it instead of starting a server. Each run is forked from it as from
any pyforks server: its own process, streams, directory, environment and argv. What a run sees that a fresh
``python SCRIPT`` would not: the fork server's preloaded modules (``forkserver.PRELOAD``), already imported;
``sys.path`` is a fresh interpreter's (the study's folder, on it by the fork server's ``-m`` and
``PYTHONPATH``, is taken off: the references run without ``PYTHONPATH``).
"""

from __future__ import annotations

import hashlib
import os
import sys
import time

from tests.support.pyforks import RUN_TIME_ENV


def socket_path(folder: str, name: str, env: dict[str, str], run_time: tuple[str, ...] = RUN_TIME_ENV) -> str:
    """The socket a stand-in made by ``Interpreters.wrapper`` (default ``run_time``, no ``key_ignore``)
    connects to when run with ``env``: the same key as the stand-in's (``pyforks.WRAPPER``)."""
    key = ascii(sorted((k, v) for k, v in env.items() if not k.startswith(run_time)))
    return os.path.join(folder, name + "-" + hashlib.sha256(key.encode()).hexdigest()[:12] + ".sock")


def main(argv: list[str]) -> None:
    sock, owner, pids = argv
    study = {os.path.realpath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p}
    study.add(os.path.realpath(os.getcwd()))
    sys.path[:] = [p for p in sys.path if p and os.path.realpath(p) not in study]
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.setsid()
            from tests.support import pyforks

            pyforks.serve(sock, int(owner), [])
            code = 0
        finally:
            os._exit(code)
    with open(pids, "a", encoding="utf-8") as f:
        f.write(f"{pid}\n")
    deadline = time.monotonic() + 120
    while not os.path.exists(sock):  # listening: the stand-ins' first run cannot miss it
        if time.monotonic() > deadline or os.waitpid(pid, os.WNOHANG)[0]:
            raise SystemExit(f"tests/support/pyforks_spawn.py: the server for {sock} did not start")
        time.sleep(0.01)
