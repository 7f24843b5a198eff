"""Proof that a crashed import resumes to the same collection (plan "First stages").

Three imports of one corpus into fresh data directories of the local Typesense 0.24.1:

1. uninterrupted (the reference);
2. the importer (a child process) SIGKILLed when it reaches a passage chosen by a seeded generator, then
   resumed by a second importer from the checkpoint;
3. the server SIGKILLed when the importer reaches another seeded passage; the importer waits with its
   bounded back-off, gives up (a small budget here), the server is started again on the same data
   directory and a second importer resumes.

The collections are compared by ``collection_digest`` (document count and SHA-256 over (id, position) of
every document in sequence-id order). The kill points are exact: the child blocks at the chosen passage
and tells the parent on stdout, so nothing depends on timing.

The corpus is named by ``module:function[:n]`` (``function(n)`` or ``function()`` returns the passages in
import order), so that the child makes the very same stream: the bundled sample
(``bench.firststage.resume_check:sample_corpus[:n]``) in the tests, the generated corpus at 1,000,000 in
``benchmarks/bench_scale_faults.py``.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import hashlib
import importlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from bench.core.errors import BenchError
from bench.data import Passage
from bench.data.bundled import load_sample
from bench.firststage.collection import Backoff, collection_digest, count_documents
from bench.firststage.importer import import_passages
from bench.firststage.server import TypesenseServer, free_port, local_typesense

SCHEMA: dict[str, Any] = {
    "name": "resume-check",
    "fields": [{"name": "title", "type": "string"}, {"name": "text", "type": "string"}],
}
REACHED = "REACHED"
# a restart replays the raft log: about as long as the import (docs/performance.md)
RESTART_TIMEOUT_S = 7200.0


def sample_corpus(n: int | None = None) -> list[Passage]:
    """The bundled sample in import order (``sample_corpus``), or its first ``n`` passages
    (``sample_corpus:N``)."""
    return load_sample().corpus[:n]


def load_corpus(spec: str) -> Iterable[Passage]:
    parts = spec.split(":")
    if len(parts) not in (2, 3):
        raise BenchError(f"corpus spec {spec!r}: expected module:function[:n]")
    fn = getattr(importlib.import_module(parts[0]), parts[1])
    result: Iterable[Passage] = fn(int(parts[2])) if len(parts) == 3 else fn()
    return result


def _blocking(passages: Iterable[Passage], stop_at: int | None) -> Iterator[Passage]:
    for i, p in enumerate(passages):
        if stop_at is not None and i == stop_at:
            print(REACHED, flush=True)
            sys.stdin.readline()  # the parent kills us here, or lets us go on into a dead server
        yield p


def child(argv: list[str]) -> int:
    """``python -m bench.firststage.resume_check URL KEY CHECKPOINT SPEC STOP_AT BATCH BUDGET_S``."""
    url, key, checkpoint, spec, stop_at, batch, budget = argv
    server = TypesenseServer(url, key)
    corpus = list(load_corpus(spec)) if spec.endswith("sample_corpus") else load_corpus(spec)
    rec = import_passages(
        server,
        SCHEMA,
        _blocking(corpus, int(stop_at) if int(stop_at) >= 0 else None),
        checkpoint=Path(checkpoint),
        batch_size=int(batch),
        backoff=Backoff(first_s=0.2, factor=2.0, max_wait_s=1.0, budget_s=float(budget)),
        label="resume-check import",
    )
    print("RECORD " + json.dumps(rec.record()), flush=True)
    return 0


def main(argv: list[str]) -> int:
    try:
        return child(argv)
    except BenchError as exc:
        print(f"resume-check importer: {exc.message}", file=sys.stderr, flush=True)
        return 1


def _spawn(
    server: TypesenseServer, checkpoint: Path, spec: str, stop_at: int, batch: int, budget: float
) -> Any:
    cmd = [
        sys.executable,
        "-m",
        "bench.firststage.resume_check",
        server.url,
        server.api_key,
        str(checkpoint),
        spec,
        str(stop_at),
        str(batch),
        str(budget),
    ]
    return subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def _wait_reached(proc: Any) -> None:
    for line in proc.stdout:
        if line.strip() == REACHED:
            return
    raise BenchError(f"the importer ended (status {proc.wait()}) before reaching its kill point")


def _finish(proc: Any) -> tuple[int, dict[str, Any] | None]:
    out, _ = proc.communicate()
    rec = None
    for line in (out or "").splitlines():
        if line.startswith("RECORD "):
            rec = json.loads(line[7:])
    return proc.returncode, rec


def _resume(server: TypesenseServer, checkpoint: Path, spec: str, batch: int) -> dict[str, Any]:
    proc = _spawn(server, checkpoint, spec, -1, batch, 60.0)
    code, rec = _finish(proc)
    if code != 0 or rec is None:
        raise BenchError(f"the resumed import failed (status {code})")
    return rec


def _import_seconds(t0: float) -> float:
    return round(time.perf_counter() - t0, 2)


def kill_points(n: int, seed: int, batch: int) -> tuple[int, int]:
    """(importer kill passage, server kill passage): seeded, uniform in [batch, n - 1)."""
    rng = np.random.default_rng(seed)
    a, b = (int(x) for x in rng.integers(batch, max(n - 1, batch + 1), size=2))
    return a, b


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def corpus_digest(spec: str) -> dict[str, Any]:
    """The digest an import of ``spec`` in stream order must give, from the corpus alone (no server):
    ``collection_digest``'s SHA-256 over ``id<TAB>position<LF>`` with position = stream index."""
    h = hashlib.sha256()
    n = 0
    for p in load_corpus(spec):
        h.update(f"{p.docid}\t{n}\n".encode())
        n += 1
    return {"documents": n, "id_position_sha256": h.hexdigest()}


def reference_case(spec: str, batch: int, base: Path) -> dict[str, Any]:
    """An uninterrupted import into a fresh server: its digest and time."""
    t0 = time.perf_counter()
    with local_typesense(data_dir=base / "ref", discard=True) as server:
        t1 = time.perf_counter()
        rec = _resume(server, base / "ref.json", spec, batch)
        t2 = time.perf_counter()
        return {
            **collection_digest(server, SCHEMA["name"]),
            "seconds": _import_seconds(t0),
            "import_seconds": round(t2 - t1, 2),
            "stalls": len(rec["stalls"]),
            "load_after": _load(),
        }


def importer_case(
    spec: str, batch: int, kill_at: int, base: Path, server: TypesenseServer | None = None
) -> dict[str, Any]:
    """The importer SIGKILLed at passage ``kill_at`` (while it fills the batch holding that passage), then a
    second importer resumes from the checkpoint into the same, still running server: a fresh one, or
    ``server`` (running, without the collection ``SCHEMA`` names; this case leaves it there)."""
    t0 = time.perf_counter()
    ck = base / "imp.json"
    running = (
        contextlib.nullcontext(server)
        if server is not None
        else local_typesense(data_dir=base / "imp", discard=True)
    )
    with running as server:
        t_up = time.perf_counter()
        proc = _spawn(server, ck, spec, kill_at, batch, 60.0)
        _wait_reached(proc)
        t_kill = time.perf_counter()
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        load_at_kill = _load()
        before = json.loads(ck.read_text())["imported"] if ck.exists() else 0
        in_server = count_documents(server, SCHEMA["name"])
        t_res = time.perf_counter()
        rec = _resume(server, ck, spec, batch)
        t_done = time.perf_counter()
        return {
            **collection_digest(server, SCHEMA["name"]),
            "seconds": _import_seconds(t0),
            "kill_passage": kill_at,
            "kill_after_start_s": round(t_kill - t_up, 2),
            "load_at_kill": load_at_kill,
            "checkpoint_at_kill": before,
            "documents_at_kill": in_server,
            "resumed_from": rec["resumed_from"],
            "resume_import_seconds": round(t_done - t_res, 2),
            "resume_passages": rec["documents"] - rec["resumed_from"],
            "stalls": len(rec["stalls"]),
            "load_after": _load(),
        }


def server_case(
    spec: str, batch: int, kill_at: int, base: Path, stall_budget_s: float = 3.0, same_ports: bool = False
) -> dict[str, Any]:
    """The server SIGKILLed when the importer reaches passage ``kill_at``; the importer, let go into the
    dead server, waits with its bounded back-off and gives up; the server is started again on the same data
    directory (its restart replays what it held) and a second importer resumes. ``same_ports``: the restart
    takes the killed server's ports (as a service restarted under its configured ports would), so it need
    not wait about 10 s for its raft peer reset (``local_typesense``)."""
    t0 = time.perf_counter()
    ck = base / "srv.json"
    ports: dict[str, int] = {}
    while same_ports and len(set(ports.values())) < 2:
        ports = {"api_port": free_port(), "peering_port": free_port()}
    with _srv_server(base, ports) as server:
        t_up = time.perf_counter()
        proc = _spawn(server, ck, spec, kill_at, batch, stall_budget_s)
        _wait_reached(proc)
        assert server.pid is not None
        in_server = count_documents(server, SCHEMA["name"])
        t_kill = time.perf_counter()
        os.kill(server.pid, signal.SIGKILL)
        load_at_kill = _load()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and _alive(server.pid):
            time.sleep(0.05)
        proc.stdin.write("go\n")
        proc.stdin.flush()
        code, _ = _finish(proc)
        t_gave_up = time.perf_counter()
        before = json.loads(ck.read_text())["imported"] if ck.exists() else 0
    if code == 0:
        raise BenchError("the importer finished although its server had been killed")
    t_restart = time.perf_counter()
    # discard: the data directory is in the check's temporary folder, read by nothing after this server
    with _srv_server(base, ports, health_timeout=RESTART_TIMEOUT_S, discard=True) as server:
        t_healthy = time.perf_counter()
        deadline = time.monotonic() + RESTART_TIMEOUT_S
        while (have := _count_or_none(server)) != before and time.monotonic() < deadline:
            time.sleep(0.05)
        if have != before:
            raise BenchError(
                f"after the restart the collection holds {have} documents, the checkpoint {before}"
            )
        t_loaded = time.perf_counter()
        rec = _resume(server, ck, spec, batch)
        t_done = time.perf_counter()
        return {
            **collection_digest(server, SCHEMA["name"]),
            "seconds": _import_seconds(t0),
            "kill_passage": kill_at,
            "kill_after_start_s": round(t_kill - t_up, 2),
            "load_at_kill": load_at_kill,
            "checkpoint_at_kill": before,
            "documents_at_kill": in_server,
            "importer_exit_status": code,
            "importer_gave_up_after_s": round(t_gave_up - t_kill, 2),
            "restart_healthy_seconds": round(t_healthy - t_restart, 2),
            "restart_loaded_seconds": round(t_loaded - t_restart, 2),
            "documents_after_restart": have,
            "resumed_from": rec["resumed_from"],
            "resume_import_seconds": round(t_done - t_loaded, 2),
            "resume_passages": rec["documents"] - rec["resumed_from"],
            "stalls": len(rec["stalls"]),
            "load_after": _load(),
        }


def _srv_server(base: Path, ports: dict[str, int], **kwargs: Any) -> Any:
    """``local_typesense`` on the server case's data directory and ``ports`` (none given: free ports)."""
    api_port, peering_port = ports.get("api_port"), ports.get("peering_port")
    return local_typesense(data_dir=base / "srv", api_port=api_port, peering_port=peering_port, **kwargs)


def _count_or_none(server: TypesenseServer) -> int | None:
    try:
        return count_documents(server, SCHEMA["name"])
    except BenchError:  # the collection appears once the server has loaded it
        return None


def run_check(
    spec: str,
    n: int,
    *,
    seed: int = 0,
    batch: int = 500,
    workdir: Path | None = None,
    stall_budget_s: float = 3.0,
    reference: dict[str, Any] | None = None,
    skip_reference: bool = False,
    same_ports: bool = False,
    importer_server: TypesenseServer | None = None,
    overlap: bool = False,
) -> dict[str, Any]:
    """The three imports in sequence; returns their digests, the kill points and whether all three agree.

    ``reference`` (a ``collection_digest`` of an uninterrupted import of the same corpus made elsewhere)
    replaces the first import; with ``skip_reference`` the caller supplies it later through ``agreement``.
    ``same_ports``: the killed server restarts on its own ports (``server_case``); ``importer_server``: the
    running server the importer case imports into (``importer_case``), instead of a fresh one.
    ``overlap``: the importer case runs on a thread beside the server case (their servers and importers are
    separate processes and their kill points exact; the server case's waits for its start, restart and stop
    then hide the importer case), so the cases' timings and loads are not each one's alone.
    ``benchmarks/bench_scale_faults.py`` runs the cases one by one with their results kept on disk."""
    kill_importer_at, kill_server_at = kill_points(n, seed, batch)
    out: dict[str, Any] = {
        "passages": n,
        "seed": seed,
        "batch_size": batch,
        "corpus": spec,
        "kill_importer_at_passage": kill_importer_at,
        "kill_server_at_passage": kill_server_at,
    }
    with tempfile.TemporaryDirectory(dir=workdir, prefix="resume-check-") as tmp:
        base = Path(tmp)
        if reference is not None:
            out["reference"] = {**reference, "source": "given (an uninterrupted import made elsewhere)"}
        elif not skip_reference:
            out["reference"] = reference_case(spec, batch, base)
            _report(out, "reference")
        cases = (
            lambda: importer_case(spec, batch, kill_importer_at, base, importer_server),
            lambda: server_case(spec, batch, kill_server_at, base, stall_budget_s, same_ports),
        )
        if overlap:
            out["importer_killed"], out["server_killed"] = _beside(*cases)
            _report(out, "importer_killed")
        else:
            out["importer_killed"] = cases[0]()
            _report(out, "importer_killed")
            out["server_killed"] = cases[1]()
        _report(out, "server_killed")
    return agreement(out, out["reference"]) if "reference" in out else out


def _beside(
    first: Callable[[], dict[str, Any]], second: Callable[[], dict[str, Any]]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``first`` on a thread while ``second`` runs on this one (a server ``second`` starts belongs to this
    thread, whose end would kill it; the thread ``first`` runs on lives until ``first`` is done). An error of
    either is raised once both have ended."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="resume-check") as pool:
        pending = pool.submit(first)
        done = second()
        return pending.result(), done


def _report(out: dict[str, Any], case: str) -> None:
    """Each case as soon as it is done (stderr): a later failure does not lose it."""
    print(f"resume-check {case}: {json.dumps(out[case])}", file=sys.stderr, flush=True)


def agreement(out: dict[str, Any], reference: dict[str, Any]) -> dict[str, Any]:
    """``out`` with its reference and ``agree``: both resumed collections equal the uninterrupted one."""
    n = out["passages"]
    res = {**out, "reference": out.get("reference", reference)}
    ref = res["reference"]
    res["agree"] = all(
        res[k]["documents"] == ref["documents"] == n
        and res[k]["id_position_sha256"] == ref["id_position_sha256"]
        for k in ("importer_killed", "server_killed")
    )
    return res


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
