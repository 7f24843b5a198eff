"""Proof that a crashed import resumes to the same collection (issue 23, item 4; plan "First stages").

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
(``bench.firststage.resume_check:sample_corpus``) in the tests, the generated corpus at 1,000,000 in
``benchmarks/bench_scale_faults.py``.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from bench.data import Passage
from bench.errors import BenchError
from bench.firststage.collection import Backoff, collection_digest
from bench.firststage.importer import import_passages
from bench.firststage.server import TypesenseServer, local_typesense

SCHEMA: dict[str, Any] = {
    "name": "resume-check",
    "fields": [{"name": "title", "type": "string"}, {"name": "text", "type": "string"}],
}
REACHED = "REACHED"
# a restart replays the raft log: about as long as the import (docs/performance.md)
RESTART_TIMEOUT_S = 7200.0


def sample_corpus() -> list[Passage]:
    from bench.data.bundled import load_sample

    return load_sample().corpus


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
) -> dict[str, Any]:
    """The three imports; returns their digests, the kill points and whether all three agree.

    ``reference`` (a ``collection_digest`` of an uninterrupted import of the same corpus made elsewhere,
    e.g. by ``benchmarks/bench_scale_keyword.py``) replaces the first import; with ``skip_reference`` the
    caller supplies it later through ``agreement``."""
    rng = np.random.default_rng(seed)
    kill_importer_at, kill_server_at = (int(x) for x in rng.integers(batch, max(n - 1, batch + 1), size=2))
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
        # 1. uninterrupted
        t0 = time.perf_counter()
        if reference is not None:
            out["reference"] = {**reference, "source": "given (an uninterrupted import made elsewhere)"}
        elif skip_reference:
            pass
        else:
            with local_typesense(data_dir=base / "ref") as server:
                rec = _resume(server, base / "ref.json", spec, batch)
                out["reference"] = {
                    **collection_digest(server, SCHEMA["name"]),
                    "seconds": _import_seconds(t0),
                    "stalls": len(rec["stalls"]),
                }
            _report(out, "reference")
        # 2. importer killed
        t0 = time.perf_counter()
        ck = base / "imp.json"
        with local_typesense(data_dir=base / "imp") as server:
            proc = _spawn(server, ck, spec, kill_importer_at, batch, 60.0)
            _wait_reached(proc)
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            before = json.loads(ck.read_text())["imported"] if ck.exists() else 0
            rec = _resume(server, ck, spec, batch)
            out["importer_killed"] = {
                **collection_digest(server, SCHEMA["name"]),
                "seconds": _import_seconds(t0),
                "checkpoint_at_kill": before,
                "resumed_from": rec["resumed_from"],
            }
        _report(out, "importer_killed")
        # 3. server killed
        t0 = time.perf_counter()
        ck = base / "srv.json"
        with local_typesense(data_dir=base / "srv") as server:
            proc = _spawn(server, ck, spec, kill_server_at, batch, stall_budget_s)
            _wait_reached(proc)
            assert server.pid is not None
            os.kill(server.pid, signal.SIGKILL)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and _alive(server.pid):
                time.sleep(0.05)
            proc.stdin.write("go\n")
            proc.stdin.flush()
            code, _ = _finish(proc)
            before = json.loads(ck.read_text())["imported"] if ck.exists() else 0
        if code == 0:
            raise BenchError("the importer finished although its server had been killed")
        with local_typesense(data_dir=base / "srv", health_timeout=RESTART_TIMEOUT_S) as server:
            rec = _resume(server, ck, spec, batch)
            out["server_killed"] = {
                **collection_digest(server, SCHEMA["name"]),
                "seconds": _import_seconds(t0),
                "checkpoint_at_kill": before,
                "resumed_from": rec["resumed_from"],
                "importer_exit_status": code,
            }
        _report(out, "server_killed")
    return agreement(out, out["reference"]) if "reference" in out else out


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
