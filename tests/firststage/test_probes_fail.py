"""Each probe that 0.24.1 honours fails behind a stand-in that ignores its feature, and a server that
answers a probe with an error, no answer in time or a malformed body refuses the stage by the probe's name
with the server's answer, with nothing of the stage written.

The stand-in (tests/support/typesense_proxy.py) forwards to the real 0.24.1 and changes one thing; it can
also claim to be 30.2, so a measurement gets past the version pin and only the probes stand in its way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.core.plan import TYPESENSE_VERSION
from bench.firststage import probe_core
from bench.firststage.definitions import STAGE_DEFS
from bench.firststage.features import StageRefused
from bench.firststage.probe_core import PROBE_PREFIX
from bench.firststage.probes import ProbeNoAnswer, ProbeRefused, run_probes
from bench.firststage.server import TypesenseServer
from bench.firststage.stages import run_stage
from tests.firststage.conftest import HashEmbedder
from tests.support.loopback import Request, Response
from tests.support.typesense_proxy import (
    TypesenseProxy,
    drop_field_property,
    drop_search_param,
    drop_vector_option,
    search_answers,
)

pytestmark = pytest.mark.typesense
Small = tuple[dict[str, str], list, Path]


def _verdict(server: TypesenseServer, name: str, **proxy: Any) -> tuple[str, dict[str, Any]]:
    stage = next(s for s in STAGE_DEFS.values() if name in {p.name for p in _probes_of(s)})
    with TypesenseProxy(server, **proxy) as px:
        report = run_probes(px.handle(), stage, log=lambda line: None)
    result = report.get(name)
    assert result is not None
    return result.verdict, result.observed


def _probes_of(stage: Any) -> list[Any]:
    from bench.firststage.probes import probes_for

    return probes_for(stage)


def _double_distances(res: dict[str, Any]) -> None:
    for h in res.get("hits", []):
        h["vector_distance"] = 2 * h["vector_distance"]  # e.g. a squared L2 on unit vectors, not cosine


def _reverse_hits(res: dict[str, Any]) -> None:
    res["hits"] = list(reversed(res.get("hits", [])))


@pytest.mark.parametrize(
    ("probe", "proxy", "observed"),
    [
        ("locale-de", {"request": drop_field_property("locale")}, {"Hauser": ["l1"]}),  # folded: no locale
        ("prefix", {"request": drop_search_param("prefix")}, {"plan": ["p1"]}),  # the default prefix=true
        (
            "drop_tokens_threshold",
            {"request": drop_search_param("drop_tokens_threshold")},
            {"drop_tokens_threshold=0": ["k1"]},
        ),
        ("tie-order", {"request": drop_search_param("sort_by")}, {"order": ["t-b", "t-a", "t-c"]}),
        ("vector-k", {"answer": search_answers(_double_distances)}, {"vector_distance = 1 - cosine": False}),
        ("vector-k", {"answer": search_answers(_reverse_hits)}, {"nearest first": False}),
        ("flat_search_cutoff", {"request": drop_vector_option("flat_search_cutoff")}, {}),
    ],
)
def test_an_honoured_probe_fails_where_its_feature_is_ignored(
    server: TypesenseServer, probe: str, proxy: dict[str, Any], observed: dict[str, Any]
) -> None:
    assert _verdict(server, probe)[0] == "honoured"  # straight to the server
    verdict, got = _verdict(server, probe, **proxy)
    assert verdict == "not honoured"
    assert {k: got[k] for k in observed} == observed
    if probe == "flat_search_cutoff":  # HNSW instead of exact search: it misses
        assert got["missed with flat_search_cutoff=501"] > 0


@pytest.fixture
def claims_302(server: TypesenseServer) -> Iterator[Callable[..., TypesenseServer]]:
    """A stand-in that says it is the plan's version and otherwise is 0.24.1 (plus ``fail``)."""
    proxies: list[TypesenseProxy] = []

    def make(fail: Callable[[Request], Response | None] | None = None) -> TypesenseServer:
        proxies.append(TypesenseProxy(server, version=TYPESENSE_VERSION, fail=fail))
        return proxies[-1].handle()

    yield make
    for p in proxies:
        p.close()


def _outputs(tmp_path: Path) -> dict[str, Path]:
    return {"out_run": tmp_path / "run.trec", "out_json": tmp_path / "run.json"}


def _nothing_written(server: TypesenseServer, tmp_path: Path, stage: str) -> None:
    assert not (tmp_path / "run.trec").exists() and not (tmp_path / "run.json").exists()
    names = [c["name"] for c in server.request("GET", "/collections")]
    assert STAGE_DEFS[stage].collection not in names  # nothing imported
    assert not [n for n in names if n.startswith(PROBE_PREFIX)]  # the probe collections are gone


def test_a_server_claiming_302_is_refused_by_the_probes(
    server: TypesenseServer, claims_302: Callable[..., TypesenseServer], small: Small, tmp_path: Path
) -> None:
    queries, passages, _ = small
    with pytest.raises(ProbeRefused) as info:
        run_stage(
            "keyword-71k",
            server=claims_302(),
            corpus=passages,
            queries=queries,
            mode="measurement",
            **_outputs(tmp_path),
        )
    msg = info.value.message
    assert f"refused by the behavioural probes on Typesense {TYPESENSE_VERSION}" in msg
    assert info.value.feature == "stem" and "Nothing of the stage was written" in msg
    for probe in ("stem", "stopwords", "stopwords-after-stem", "num_typos", "typo_tokens_threshold"):
        assert f"probe {probe} (" in msg
    _nothing_written(server, tmp_path, "keyword-71k")


def _search_fails(reply: Response) -> Callable[[Request], Response | None]:
    return lambda req: reply if req.path.startswith("/multi_search") else None


@pytest.mark.parametrize(
    ("reply", "answer"),
    [
        (Response(500, b'{"message": "Internal error"}'), '500 {"message": "Internal error"}'),
        (Response(200, b"<html>proxy error</html>"), "not JSON: '<html>proxy error</html>'"),
        (Response(200, b'{"results": [{"hits": [{"no_document": 1}]}]}'), "malformed answer (hits)"),
        (Response(200, b'{"results": []}'), "malformed answer"),
        (Response(stall_s=5.0), "no answer (Typesense at"),
    ],
    ids=["error status", "not json", "malformed hits", "missing results", "timeout"],
)
def test_a_bad_answer_refuses_the_stage_by_the_probe_and_writes_nothing(
    server: TypesenseServer,
    claims_302: Callable[..., TypesenseServer],
    small: Small,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    reply: Response,
    answer: str,
) -> None:
    # the "timeout" case waits this out once per mode; every other request is answered within milliseconds
    monkeypatch.setattr(probe_core, "REQUEST_TIMEOUT_S", 0.5)
    queries, passages, _ = small
    for stage, mode in (("keyword-plain-71k", "measurement"), ("keyword-plain-71k", "rehearsal")):
        with pytest.raises(ProbeNoAnswer) as info:
            run_stage(
                stage,
                server=claims_302(_search_fails(reply)),
                corpus=passages,
                queries=queries,
                mode=mode,
                **_outputs(tmp_path),
            )  # type: ignore[arg-type]
        assert info.value.probes == ["tie-order"]
        # not a refusal of the stage: a rehearsal stops here instead of recording one that a resume keeps
        assert not isinstance(info.value, StageRefused)
        assert "probe tie-order (seq_id_sort): no answer" in info.value.message
        assert answer in info.value.message
        _nothing_written(server, tmp_path, stage)


def test_a_failed_setup_gives_every_probe_of_its_group_the_servers_answer(
    server: TypesenseServer, claims_302: Callable[..., TypesenseServer], tmp_path: Path
) -> None:
    def refuse_vectors(req: Request) -> Response | None:
        if req.path == "/collections" and b"float[]" in req.body:
            return Response(503, b'{"message": "Not Ready or Lagging"}')
        return None

    report = run_probes(claims_302(refuse_vectors), STAGE_DEFS["vector-71k"], log=lambda line: None)
    assert {r.name: r.verdict for r in report.results} == dict.fromkeys(
        ["vector-k", "ef", "flat_search_cutoff", "hnsw_params"], "no answer"
    )
    assert all("503" in str(r.observed["answer"]) for r in report.results)
    with pytest.raises(ProbeNoAnswer) as info:
        run_stage(
            "vector-71k",
            server=claims_302(refuse_vectors),
            corpus=[],
            queries={},
            embedder=HashEmbedder(),
            mode="rehearsal",
            **_outputs(tmp_path),
        )
    assert info.value.probes == ["vector-k", "ef"]  # no substitute stands in for a probe without an answer
