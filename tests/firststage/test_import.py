"""Resumable import: kill the importer midway (SIGKILL), resume, get the same collection in the same order."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.core.errors import BenchError
from bench.data.bundled import Sample
from bench.firststage.definitions import STAGE_DEFS
from bench.firststage.importer import import_passages
from bench.firststage.server import TypesenseServer

pytestmark = pytest.mark.typesense
ROOT = Path(__file__).resolve().parents[2]


def exported_ids(server: TypesenseServer, name: str) -> list[str]:
    resp = server.raw("GET", f"/collections/{name}/documents/export", params={"include_fields": "id"})
    return [json.loads(line)["id"] for line in resp.text.splitlines()]


def test_kill_and_resume(server: TypesenseServer, sample: Sample, tmp_path: Path) -> None:
    stage = STAGE_DEFS["keyword-plain-71k"]
    server.request("DELETE", f"/collections/{stage.collection}", ok=(200, 404))
    ck = tmp_path / "checkpoint.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [
            sys.executable,
            str(Path(__file__).with_name("import_worker.py")),
            server.url,
            server.api_key,
            str(ck),
        ],
        env=env,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            if ck.is_file() and json.loads(ck.read_text())["imported"] >= 1500:
                break
            if proc.poll() is not None:
                pytest.fail("importer finished before it could be killed")
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=10)
    killed_at = json.loads(ck.read_text())["imported"]
    assert 0 < killed_at < len(sample.corpus)
    corpus = sample.corpus
    rec = import_passages(server, stage.schema(), corpus, checkpoint=ck, batch_size=700)
    assert rec.resumed_from >= killed_at and not rec.created
    assert rec.documents == len(corpus) == 7402
    assert exported_ids(server, stage.collection) == [p.docid for p in corpus]  # no duplicate, import order
    # a second call finds the import complete and sends nothing
    again = import_passages(server, stage.schema(), corpus, checkpoint=ck, expected=7402)
    assert again.resumed_from == 7402 and again.seconds == 0.0


def test_count_mismatch_is_an_error(server: TypesenseServer, sample: Sample, tmp_path: Path) -> None:
    stage = STAGE_DEFS["keyword-plain-71k"]
    server.request("DELETE", f"/collections/{stage.collection}", ok=(200, 404))
    with pytest.raises(BenchError, match="should have 99"):
        import_passages(
            server, stage.schema(), sample.corpus[:50], checkpoint=tmp_path / "c.json", expected=99
        )


def test_changed_corpus_detected(server: TypesenseServer, sample: Sample, tmp_path: Path) -> None:
    stage = STAGE_DEFS["keyword-plain-71k"]
    server.request("DELETE", f"/collections/{stage.collection}", ok=(200, 404))
    ck = tmp_path / "c.json"
    import_passages(server, stage.schema(), sample.corpus[:50], checkpoint=ck, batch_size=20)
    state = json.loads(ck.read_text())
    ck.write_text(json.dumps({**state, "complete": False, "imported": 40, "last_docid": "1#1"}))
    with pytest.raises(BenchError, match="corpus changed"):
        import_passages(server, stage.schema(), sample.corpus[:60], checkpoint=ck)
