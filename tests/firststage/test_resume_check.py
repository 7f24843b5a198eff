"""Kill-and-resume, proven by comparison, on the first 2,000 real passages of the bundled sample (four
batches of 500, killed inside the second and the fourth); ``benchmarks/bench_scale_faults.py`` runs the same
check at 1,000,000 generated passages."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.data import Passage
from bench.data.bundled import Sample
from bench.firststage.collection import collection_digest, ensure_collection, import_all
from bench.firststage.importer import import_passages
from bench.firststage.resume_check import SCHEMA, corpus_digest, run_check
from bench.firststage.search import search
from bench.firststage.server import TypesenseServer

pytestmark = pytest.mark.typesense


SPEC = "bench.firststage.resume_check:sample_corpus:2000"
N = 2000


@pytest.mark.slow
def test_killed_importer_and_killed_server_resume_to_the_same_collection(
    server: TypesenseServer, sample: Sample, tmp_path: Path
) -> None:
    # The uninterrupted reference: the same importer (in this process) into the session's server instead of
    # a server of its own; the killed importer's case runs on that server too (the collection dropped
    # first). The killed server gives up within 0.5 s of back-off and restarts on its own ports (no 10 s raft
    # peer reset); its case still starts, kills and restarts a server of its own. The importer's case runs
    # beside the server's (overlap): each kills its own child or server at its own exact point.
    import_passages(server, SCHEMA, sample.corpus[:N], checkpoint=tmp_path / "ref.json", batch_size=500)
    reference = collection_digest(server, SCHEMA["name"])
    server.request("DELETE", f"/collections/{SCHEMA['name']}")
    out = run_check(
        SPEC,
        N,
        seed=3,
        batch=500,
        workdir=tmp_path,
        stall_budget_s=0.5,
        reference=reference,
        same_ports=True,
        importer_server=server,
        overlap=True,
    )
    ref = out["reference"]
    assert ref["documents"] == ref["count_reported"] == N
    for case, at in (
        ("importer_killed", "kill_importer_at_passage"),
        ("server_killed", "kill_server_at_passage"),
    ):
        got = out[case]
        assert 500 <= out[at] < N
        # the kill came after the last full batch before the kill point was acknowledged
        assert got["checkpoint_at_kill"] == (out[at] // 500) * 500
        assert got["resumed_from"] == got["checkpoint_at_kill"]
        assert got["documents"] == N and got["id_position_sha256"] == ref["id_position_sha256"]
        assert got["kill_passage"] == out[at] and got["documents_at_kill"] == got["checkpoint_at_kill"]
        assert got["resume_passages"] == N - got["resumed_from"]
        assert got["kill_after_start_s"] > 0 and got["resume_import_seconds"] > 0
    srv = out["server_killed"]
    assert srv["importer_exit_status"] != 0  # it gave up after its back-off budget
    # the restart lost no acknowledged batch
    assert srv["documents_after_restart"] == srv["checkpoint_at_kill"]
    assert srv["restart_loaded_seconds"] >= srv["restart_healthy_seconds"] > 0
    # a witness that needs no server: the digest the corpus stream itself dictates
    assert corpus_digest(SPEC) == {
        "documents": N,
        "id_position_sha256": ref["id_position_sha256"],
    }
    assert out["agree"] is True


def _docs(ps: list[Passage]) -> list[dict[str, str]]:
    return [{"id": p.docid, "title": p.title, "text": p.text} for p in ps]


def test_digest_sees_the_order_and_follows_seq_id(server: TypesenseServer, sample: Sample) -> None:
    ps = sample.corpus[:300]
    a = {**SCHEMA, "name": "digest-a"}
    b = {**SCHEMA, "name": "digest-b"}
    ensure_collection(server, a)
    ensure_collection(server, b)
    import_all(server, "digest-a", _docs(ps), 100)
    swapped = [*ps[:10], ps[11], ps[10], *ps[12:]]
    import_all(server, "digest-b", _docs(swapped), 100)
    da, db = collection_digest(server, "digest-a"), collection_digest(server, "digest-b")
    assert da["documents"] == db["documents"] == 300
    assert da["id_position_sha256"] != db["id_position_sha256"]  # same ids, two swapped: caught
    # export order (what the digest hashes) is the insertion order: the server's own _seq_id order
    ids = []
    for page in (1, 2):
        res = search(
            server,
            "digest-b",
            {"q": "*", "sort_by": "_seq_id:asc", "per_page": 150, "page": page, "include_fields": "id"},
        )
        ids += [h["document"]["id"] for h in res.hits]
    assert ids == [p.docid for p in swapped]
