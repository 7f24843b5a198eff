"""A function run in a process forked from the test's own, for tests whose point is a process of its own (a
SIGKILL, a SIGTERM, an exit status) but not a fresh interpreter: the child has the test process's imports
already (a fresh ``python -c`` or ``python -m`` spends seconds importing them again). The child has its own
pid, environment (``env``), signal handling and exit status; its stdout is /dev/null, its stderr /dev/null
or a pipe (``stderr=True``), never pytest's capture objects; it ends by ``os._exit`` with the function's
return value (1 when it raised), so none of pytest's atexit functions run in it.

:class:`Forked` offers the part of ``subprocess.Popen`` the tests use: ``pid``, ``poll``, ``wait``,
``send_signal``, ``communicate``, ``stderr``, ``returncode`` (a signal's death as minus its number)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Mapping


class Forked:
    def __init__(
        self, target: Callable[[], int], *, env: Mapping[str, str] | None = None, stderr: bool = False
    ) -> None:
        read, write = os.pipe() if stderr else (-1, -1)
        self.pid = os.fork()
        if self.pid == 0:  # the child: never returns into pytest
            code = 1
            try:
                devnull = os.open(os.devnull, os.O_RDWR)
                os.dup2(devnull, 1)
                os.dup2(write if stderr else devnull, 2)
                if stderr:
                    os.close(read)
                sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__  # not pytest's capture
                if env is not None:
                    os.environ.clear()
                    os.environ.update(env)
                code = target()
            finally:
                for stream in (sys.stdout, sys.stderr):
                    if stream is not None:
                        stream.flush()
                os._exit(code)
        if stderr:
            os.close(write)
        self.stderr = os.fdopen(read, "rb") if stderr else None
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            done, status = os.waitpid(self.pid, os.WNOHANG)
            if done:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float) -> int:
        deadline = time.monotonic() + timeout
        while (code := self.poll()) is None:
            if time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(["forked", str(self.pid)], timeout)
            time.sleep(0.005)
        return code

    def send_signal(self, sig: int) -> None:
        os.kill(self.pid, sig)

    def communicate(self, timeout: float) -> tuple[bytes, bytes]:
        err = self.stderr.read() if self.stderr is not None else b""  # until the child's exit closes it
        self.wait(timeout)
        return b"", err
