"""``python -m tests.support.forkserver``: runs ``tests.support.minibench`` commands in forked processes, each
forked from one process that has already imported the heavy third-party libraries (tests/runbook).

Why: a chain of ~45 commands on tiny inputs is mostly process start-ups, and most of a start-up is importing
torch, transformers, sentence-transformers, numpy and pyarrow. Each command still runs in a process of its own
(its own pid, environment, working directory, stdout and stderr, signal handlers, exit status, and the child
processes and servers it starts), from a fresh import of ``bench`` and ``analysis`` (they are never imported
here, so ``minibench`` miniaturises ``bench.core.plan`` before any module of ``bench`` is loaded, as in a
fresh process); only the third-party modules were imported before the fork. The one exception is the
``status`` server (``Forks(kind="status")``, ``preload_status``), which imports the miniature's ``bench`` for
`bench status` and nothing heavy. Libraries that read the
environment at import (huggingface_hub reads ``HF_HOME`` and ``HF_HUB_OFFLINE``) read this process's, so the
caller starts a new server whenever a command's environment differs from the one this server started with in
anything but the variables only ``bench`` reads (``RUN_TIME_ENV``).

Protocol, one JSON object per line: a request on stdin ``{"argv", "env", "cwd", "stdout", "stderr", "main"}``
(stdout and stderr: files the command's output goes to; main: the module whose ``main(argv)`` runs, null for
``tests.support.minibench``); answers on stdout ``{"pid": N}`` when the command started and
``{"rc": N, "cpu_s": S}`` when it ended (a signal's death as ``-signum``, as ``subprocess`` reports it; S: its
CPU seconds, user + system, with the children it waited for).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from tests.support.pyforks import exit_as_python

PRELOAD = (
    "numpy",
    "pyarrow",
    "pyarrow.parquet",
    "httpx",
    "click",
    "torch",
    "transformers",
    "sentence_transformers",
    # the figures' Agg canvas (analysis.figures.render, no pyplot): `analysis report`, the audit's recompute
    # and `bench reproduce` draw figures
    "matplotlib",
    "matplotlib.figure",
    "matplotlib.backends.backend_agg",
    # the int8 commands' OpenVINO models and quantiser (bench.int8): the int8 step's quantize, quality and
    # agreement and latency-cpu's agreement would each import them (0.6-0.7 s CPU each, 2026-12-06); importing
    # openvino starts only its telemetry's idle thread pool (no native thread), which sends nothing without
    # the user's consent
    "openvino",
    "nncf",
    "optimum.intel.openvino.modeling",
    "optimum.intel.openvino.modeling_base",
    "optimum.intel.openvino.quantization",
    # imported by most commands after the fork otherwise (2026-12-06, sys.modules after the preloads): the
    # proofs' OpenTimestamps (bench.integrity.timestamps, 0.12 s), the stemmer of the stop-word list and
    # probes, pytrec_eval (the evaluations: report, audit, reproduce) and Pillow (the figures' PNG writer)
    "opentimestamps.core.notary",
    "opentimestamps.core.op",
    "opentimestamps.core.serialize",
    "opentimestamps.core.timestamp",
    "snowballstemmer",
    "pytrec_eval",
    "PIL.Image",
    "PIL.PngImagePlugin",
    # the judge's client (bench.judged.run.make_client): `judged run` imported it after the fork (1.5 s CPU of
    # its 1.7 s, 2026-12-06); it reads ANTHROPIC_* when a client is made, not at import
    "anthropic",
    # the tiny BERT's modelling code (transformers loads it lazily: every command that scores with bge-v2-m3
    # or the int8 model's source imported it again) and pyarrow's dataset and CSV readers (the run and
    # corpus readers): ~0.7 s CPU across the chain's commands, 2026-12-06 (py-spy of the forked commands)
    "transformers.models.bert.configuration_bert",
    "transformers.models.bert.modeling_bert",
    "pyarrow.dataset",
    "pyarrow.csv",
)


def decline_telemetry() -> None:
    """OpenVINO's and NNCF's usage telemetry declined, as their opt-out (a consent file holding 0) declines
    it, without writing that file to the home folder. Both ask with ``enable_opt_in_dialog=False``, which
    counts a missing consent file as consent: `int8 quantize` then sent events to Google Analytics, each from
    a process forked from the command's (that fork of this server's memory, and the wait: 1.5-2 s CPU and 3 s
    wall of a 6 s command, 2026-12-06). NNCF decides at its import (here), OVC at each conversion. The
    product declines before its own imports (``bench.rerankers.openvino.runtime.decline_usage_telemetry``);
    this server imports NNCF first and no module of ``bench``, so it declines on its own."""
    from openvino_telemetry.utils.opt_in_checker import ConsentCheckResult, OptInChecker

    def declined(self: OptInChecker, *args: Any, **kwargs: Any) -> ConsentCheckResult:
        return ConsentCheckResult.DECLINED

    OptInChecker.check = declined  # type: ignore[method-assign]


def preload() -> None:
    import gc
    import importlib

    decline_telemetry()
    for name in PRELOAD:
        importlib.import_module(name)
    # the preloads' objects out of the garbage collector's view: they live as long as this server, and every
    # command forked from it would otherwise walk them at each full collection (bench releases memory with
    # gc.collect() after each model: 0.4 s each over these libraries, 2026-12-06)
    gc.collect()
    gc.freeze()


def child(req: dict[str, Any]) -> None:
    """In the forked process: the command's environment, directory and files, then the command; never
    returns (its exit status as ``python`` gives it: :func:`tests.support.pyforks.exit_as_python`)."""

    def run() -> None:
        os.chdir(req["cwd"])
        os.environ.clear()
        os.environ.update(req["env"])
        fd_in = os.open(os.devnull, os.O_RDONLY)
        fd_out = os.open(req["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        fd_err = os.open(req["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        for fd, target in ((fd_in, 0), (fd_out, 1), (fd_err, 2)):
            os.dup2(fd, target)
            os.close(fd)
        sys.argv = ["minibench", *req["argv"]]
        import importlib

        # the module whose main(argv) runs: minibench (the command line), or another the request names
        importlib.import_module(req.get("main") or "tests.support.minibench").main(req["argv"])

    exit_as_python(run)


def preload_status() -> None:
    """The ``status`` server's preload (``Forks(kind="status")``; tests/runbook runs `bench status --json`
    after every step): the miniature's ``bench`` and `bench status` imported once, ``bench.core.plan``
    miniaturised first as ``minibench`` does, instead of in each run (0.2 s of a 0.27 s run, 2026-12-06). No
    torch, nothing of the heavy preloads: `bench status` imports none of them. Since ``bench`` is imported
    here, this server is started again whenever the caller's environment changes in any variable."""
    import gc

    from tests.support import minibench

    minibench.miniaturise()
    minibench.idle_host()
    minibench.gpu_preset_on_cpu()
    minibench.deciding_references_only()
    import bench.cli
    import bench.status.command  # noqa: F401

    gc.collect()
    gc.freeze()


def serve(kind: str = "commands") -> None:
    preload_status() if kind == "status" else preload()
    answers = sys.stdout
    for line in sys.stdin:
        req = json.loads(line)
        answers.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            child(req)
        answers.write(json.dumps({"pid": pid}) + "\n")
        answers.flush()
        _, status, usage = os.wait4(pid, 0)
        rc = os.waitstatus_to_exitcode(status)
        # the command's CPU time (user + system, with the children it waited for), for the caller's log
        answers.write(json.dumps({"rc": rc, "cpu_s": usage.ru_utime + usage.ru_stime}) + "\n")
        answers.flush()
    # the end: no interpreter shutdown (it tears down every preloaded module and collects their objects: 5.4 s
    # wall at load 5, 2026-12-06); nothing is left to write (each command wrote and flushed its own files, the
    # answers are flushed), and without finalisers nanobind's leak check does not run
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    serve(*sys.argv[1:2])


RUN_TIME_ENV = ("BENCH_", "VOYAGE_", "ANTHROPIC_", "_TYPESENSE")  # read by bench at run time, never at import
# by the preloaded libraries (bench itself is imported after the fork)


def _imported_env(env: dict[str, str] | None) -> dict[str, str] | None:
    return None if env is None else {k: v for k, v in env.items() if not k.startswith(RUN_TIME_ENV)}


class Forks:
    """The caller's side: ``run(argv, env, cwd, timeout)`` -> ``subprocess.CompletedProcess``; one server per
    environment (a changed environment starts a new one, see the module docstring). ``close`` ends it."""

    def __init__(self, workdir: Any, kind: str = "commands") -> None:
        from pathlib import Path

        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._proc: Any = None
        self._env: dict[str, str] | None = None
        self._n = 0
        self._buf = b""
        self.cpu_s: list[float] = []  # the CPU seconds of each command run, in order
        self.kind = kind  # "commands" (the heavy preloads) or "status" (``preload_status``: bench imported)

    def _server(self, env: dict[str, str], cwd: str) -> Any:
        import subprocess

        imported = _imported_env if self.kind == "commands" else (lambda e: e)  # bench reads BENCH_*
        same = imported(self._env) == imported(env)
        if self._proc is not None and same and self._proc.poll() is None:
            return self._proc
        self.close()
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "tests.support.forkserver", self.kind],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=cwd,
            env=env,
        )
        self._env = dict(env)
        self._buf = b""
        return self._proc

    def start(self, env: dict[str, str], cwd: str) -> None:
        """Start the server for ``env`` now, without waiting: its imports run while the caller goes on; the
        first ``run`` with that environment waits for what is left of them."""
        self._server(env, cwd)

    def run(
        self, argv: list[str], *, env: dict[str, str], cwd: str, timeout: float, main: str | None = None
    ) -> Any:
        """``argv`` run by ``tests.support.minibench`` (or by the ``main(argv)`` of the module ``main``
        names) in a forked process."""
        import signal
        import subprocess

        proc = self._server(env, cwd)
        self._n += 1
        out, err = self.workdir / f"{self._n}.out", self.workdir / f"{self._n}.err"
        req = {"argv": argv, "env": env, "cwd": cwd, "stdout": str(out), "stderr": str(err), "main": main}
        proc.stdin.write((json.dumps(req) + "\n").encode())
        proc.stdin.flush()
        pid = json.loads(self._readline(proc, 600))["pid"]
        try:
            answer = json.loads(self._readline(proc, timeout))
        except TimeoutError:
            os.kill(pid, signal.SIGKILL)
            json.loads(self._readline(proc, 60))
            raise subprocess.TimeoutExpired(argv, timeout) from None
        done = subprocess.CompletedProcess(
            argv,
            answer["rc"],
            out.read_text(encoding="utf-8", errors="replace"),
            err.read_text(encoding="utf-8", errors="replace"),
        )
        self.cpu_s.append(answer["cpu_s"])
        return done

    def _readline(self, proc: Any, timeout: float) -> str:
        import select
        import time

        deadline = time.monotonic() + timeout
        while b"\n" not in self._buf:
            ready, _, _ = select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                raise TimeoutError
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                raise RuntimeError(f"tests.support.forkserver ended (exit {proc.wait()})")
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return line.decode()

    def close(self) -> None:
        if self._proc is not None:
            self._proc.stdin.close()
            try:
                self._proc.wait(timeout=30)
            except Exception:
                self._proc.kill()
                self._proc.wait()
            self._proc = None
