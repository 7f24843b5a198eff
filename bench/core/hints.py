"""Commands in the hints the commands print (resume, fix), written as the author types them.

Measurements run in the container (README, "Phases and machines"): ``docker compose run --rm bench ...``
on the GPU desktop, ``docker compose run --rm bench-cpu ...`` for the phases that need no GPU, and
``--entrypoint analysis`` for ``analysis``. ``SERVICES`` is README's phase table as data: the service of
each phase. The rehearsal alone runs outside the container (``uv run bench rehearse``). Paths inside the
checkout are shown relative to its root, as the author types them in the container's working directory.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from bench.core.paths import repo_root

GPU, CPU = "bench", "bench-cpu"
# Phase (the first one or two words of the command) -> compose service, as in README's phase table.
SERVICES: dict[str, str] = {
    "timestamps": CPU,
    "data": CPU,
    "models": CPU,
    "first-stage": GPU,
    "check-adapters": GPU,
    "quality": GPU,
    "determinism": GPU,
    "dtype-check": GPU,
    "latency gpu": GPU,
    "latency cpu": CPU,
    "latency api": CPU,
    "latency first-stage": GPU,
    "int8": CPU,
    "costs": CPU,
    "judged": CPU,
    "audit": CPU,
    "status": CPU,
    "reproduce": GPU,
    "doctor": GPU,  # the desktop's service; the cpu-server's step names bench-cpu (docs/runbook.md)
}
OUTSIDE_CONTAINER = frozenset({"rehearse"})


def _show(arg: str | Path, root: Path) -> str:
    if isinstance(arg, Path):
        try:
            arg = arg.resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            arg = str(arg)
    return shlex.quote(str(arg))


def _service(words: tuple[str, ...]) -> str:
    for n in (2, 1):
        key = " ".join(words[:n])
        if len(words) >= n and key in SERVICES:
            return SERVICES[key]
    raise KeyError(f"no compose service is declared for `bench {' '.join(words[:2])}` (bench/core/hints.py)")


def bench_command(*args: str | Path, root: Path | None = None, service: str | None = None) -> str:
    """``bench ARGS`` as the author types it: ``docker compose run --rm SERVICE ARGS`` (the rehearsal:
    ``uv run bench rehearse ARGS``). Path arguments inside the checkout are shown relative to it.
    ``service`` overrides the phase's service where the machine decides it (a CPU adapter check)."""
    root = root or repo_root()
    shown = " ".join(_show(a, root) for a in args)
    words = tuple(str(a) for a in args if not isinstance(a, Path))
    if words and words[0] in OUTSIDE_CONTAINER:
        return f"uv run bench {shown}"
    return f"docker compose run --rm {service or _service(words)} {shown}"


def analysis_command(*args: str | Path, root: Path | None = None) -> str:
    """``analysis ARGS`` in the container: ``docker compose run --rm --entrypoint analysis bench-cpu ARGS``
    (compose options come before the service; what follows the service is the command)."""
    root = root or repo_root()
    return f"docker compose run --rm --entrypoint analysis {CPU} " + " ".join(_show(a, root) for a in args)


def hint(command: str, *, service: str | None = None) -> str:
    """``hint("data fetch corpus-full")``: the command line of ``bench data fetch corpus-full`` as the author
    types it (``bench_command`` on the words of ``command``)."""
    return bench_command(*shlex.split(command), service=service)
