"""A server that stops answering after a batch is waited for (bounded back-off, recorded), not a failure.

The stand-in answers on the tests' loopback HTTP server (``tests.support.loopback``), speaking the few
Typesense endpoints the importer uses; it keeps the upserted documents by id in arrival order (like seq ids:
an upsert keeps the first position) and can stall for a number of import requests (503 "Not Ready or
Lagging", or closing the connection without an answer).
The waits go to a fake sleep that advances a fake clock: nothing here depends on timing.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.core.errors import BenchError
from bench.data import Passage
from bench.firststage.collection import Backoff, import_batch
from bench.firststage.importer import import_passages
from bench.firststage.server import TypesenseServer
from tests.support.loopback import Loopback, Request, Response, json_response

SCHEMA = {"name": "c", "fields": [{"name": "title", "type": "string"}, {"name": "text", "type": "string"}]}


class StandIn:
    def __init__(self) -> None:
        self.docs: dict[str, dict[str, object]] = {}
        self.collection: dict[str, object] | None = None
        self.stall_plan: list[str] = []  # per import request: "ok", "503" or "drop"
        self.imports = 0


def _respond(state: StandIn, request: Request) -> Response:
    """The few Typesense endpoints the importer uses, answered from ``state``."""
    path = request.path
    if request.method == "GET":
        if path == "/debug":
            return json_response(200, {"version": "stand-in"})
        if path.startswith("/collections/c"):
            if state.collection is None:
                return json_response(404, {"message": "Not Found"})
            return json_response(200, {**state.collection, "num_documents": len(state.docs)})
        return json_response(404, {"message": "Not Found"})
    if path == "/collections":
        state.collection = request.json()
        return json_response(201, state.collection)
    if path.startswith("/collections/c/documents/import"):
        i = state.imports
        state.imports += 1
        mode = state.stall_plan[i] if i < len(state.stall_plan) else "ok"
        if mode == "503":
            return json_response(503, {"message": "Not Ready or Lagging"})
        if mode == "drop":
            return Response(drop=True)
        lines = []
        for line in request.body.decode().splitlines():
            doc = json.loads(line)
            state.docs.setdefault(doc["id"], doc)  # an upsert keeps the first position
            state.docs[doc["id"]].update(doc)
            lines.append(json.dumps({"success": True}))
        return Response(200, "\n".join(lines).encode())
    return json_response(404, {"message": "Not Found"})


@pytest.fixture()
def standin() -> Iterator[tuple[StandIn, TypesenseServer]]:
    state = StandIn()
    with Loopback(lambda request: _respond(state, request)) as httpd:
        server = TypesenseServer(httpd.url, "k", timeout=10.0)
        try:
            yield state, server
        finally:
            server.close()


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def sleep(self, s: float) -> None:
        self.sleeps.append(s)
        self.now += s

    def clock(self) -> float:
        return self.now


def _passages(n: int) -> list[Passage]:
    return [Passage(f"{i // 10 + 1}#{i % 10}", "Titel", f"Text Nummer {i}") for i in range(n)]


def test_stalls_are_waited_for_and_recorded(standin: tuple[StandIn, TypesenseServer]) -> None:
    state, server = standin
    state.collection = dict(SCHEMA)
    state.stall_plan = ["503", "drop", "503", "ok"]
    fake = FakeTime()
    stalls: list[dict[str, object]] = []
    docs = [{"id": p.docid, "title": p.title, "text": p.text} for p in _passages(5)]
    import_batch(
        server,
        "c",
        docs,
        backoff=Backoff(first_s=1, factor=2, max_wait_s=3, budget_s=100),
        stalls=stalls,
        sleep=fake.sleep,
        clock=fake.clock,
    )
    assert fake.sleeps == [1, 2, 3]  # 1, 2, then capped at max_wait_s
    assert [s["attempt"] for s in stalls] == [1, 2, 3]
    assert str(stalls[0]["reason"]).startswith("503") and "Not Ready" in str(stalls[0]["reason"])
    assert "Error" in str(stalls[1]["reason"])  # the dropped connection: a transport error
    assert list(state.docs) == [d["id"] for d in docs] and state.imports == 4


def test_budget_exhausted_is_a_clear_failure(standin: tuple[StandIn, TypesenseServer]) -> None:
    state, server = standin
    state.collection = dict(SCHEMA)
    state.stall_plan = ["503"] * 50
    fake = FakeTime()
    with pytest.raises(BenchError, match=r"back-off budget 10 s.*resumes from its checkpoint"):
        import_batch(
            server,
            "c",
            [{"id": "1#0", "title": "", "text": "x"}],
            backoff=Backoff(first_s=1, factor=2, max_wait_s=4, budget_s=10),
            sleep=fake.sleep,
            clock=fake.clock,
        )
    assert sum(fake.sleeps) <= 10 and fake.sleeps == [1, 2, 4]  # the next wait (4) would pass 10 s


def test_importer_records_stalls_and_keeps_the_order(
    standin: tuple[StandIn, TypesenseServer], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state, server = standin
    fake = FakeTime()
    monkeypatch.setattr("bench.firststage.collection.time.sleep", fake.sleep)
    state.stall_plan = ["ok", "ok", "503", "503", "ok"]  # the third batch stalls twice
    passages = _passages(1000)
    rec = import_passages(
        server,
        SCHEMA,
        passages,
        checkpoint=tmp_path / "ck.json",
        expected=1000,
        batch_size=200,
        backoff=Backoff(first_s=0.5, budget_s=60),
    )
    assert rec.documents == 1000 and len(rec.stalls) == 2
    assert {s["batch_first_id"] for s in rec.stalls} == {passages[400].docid}
    assert rec.record()["stalls"][0]["waited_s"] == 0.5 and fake.sleeps == [0.5, 1.0]
    assert list(state.docs) == [p.docid for p in passages]  # nothing lost, nothing reordered
