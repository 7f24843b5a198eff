"""The behavioural probes on the real Typesense 0.24.1.

The probes must find what docs/field-notes.md says 0.24.1 does and does not honour (stem, stop-word sets, ef,
alpha and hnsw_params ignored, hybrid rejected; locale, drop_tokens_threshold, prefix, the tie sort and
flat_search_cutoff honoured), plus what they found beyond it: on fields with ``locale: "de"`` 0.24.1
applies no typo tolerance (num_typos, typo_tokens_threshold), while the same questions on fields
without a locale find the typos (so those two probes can pass on this server). Every probe that passes
here is shown failing behind a stand-in that ignores its feature (tests/firststage/test_probes_fail.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from typing import Any

import pytest

from bench.firststage import probe_text as pt
from bench.firststage.definitions import STAGE_DEFS
from bench.firststage.probe_core import PROBE_PREFIX, ProbeSession, host_tag
from bench.firststage.probes import (
    PROBE_NAMES,
    PROBES,
    RECORD_KEYS,
    ProbeRefused,
    ProbeReport,
    decide,
    run_probes,
)
from bench.firststage.server import TypesenseServer
from tests.support.typesense import HONOURED_0241, IGNORED_0241

pytestmark = pytest.mark.typesense


@pytest.fixture(scope="module")
def report(server: TypesenseServer) -> ProbeReport:
    return run_probes(server, None, log=lambda line: None)


def _probe_collections(server: TypesenseServer) -> list[str]:
    return [c["name"] for c in server.request("GET", "/collections") if c["name"].startswith(PROBE_PREFIX)]


def test_verdicts_on_0241_are_what_the_server_does(report: ProbeReport) -> None:
    assert set(PROBE_NAMES) == HONOURED_0241 | IGNORED_0241
    verdicts = {r.name: r.verdict for r in report.results}
    assert verdicts == {
        **dict.fromkeys(HONOURED_0241, "honoured"),
        **dict.fromkeys(IGNORED_0241, "not honoured"),
    }
    assert report.server_version == "0.24.1"


def test_what_decides_each_missing_feature_on_0241(report: ProbeReport) -> None:
    obs = {r.name: r.observed for r in report.results}
    assert obs["stem"] == {
        "stem field finds": [],
        "field without stem finds": [],
        "schema read back: text.stem": None,
    }
    assert obs["stopwords"] == {"set stored": False, "PUT /stopwords answered": 404}
    assert obs["hnsw_params"] == {"hnsw_params read back": None}
    assert obs["hybrid"]["accepted"] is False
    assert "Vector query is supported only on wildcard (q=*) searches." in obs["hybrid"]["answer"]
    ef = obs["ef"]
    assert ef["result lists changed"] is False and ef["exact top-10 missed at ef=10"] > 0  # the set is hard
    assert ef["exact top-10 missed at ef=10"] == ef["exact top-10 missed at ef=500"]
    assert obs["num_typos"] == {"plan": [], "num_typos=1": []}  # the plan's num_typos=2 finds no typo
    assert obs["typo_tokens_threshold"] == {"plan": ["k1"], "typo_tokens_threshold=100": ["k1"]}


def test_the_typo_probes_pass_on_fields_without_a_locale(server: TypesenseServer) -> None:
    """The same questions on fields without a locale: 0.24.1 finds the typos, so the probes can pass."""
    s = ProbeSession(server)
    try:
        s.start("typos-without-locale", "text_search")
        plain = s.create("plain", [{"name": n, "type": "string"} for n in ("title", "text")])["name"]
        s.add(plain, [{"id": i, "title": "", "text": t} for i, t in pt.DOCS])
        fx = pt.TextFixture(german=plain, stemmed=plain, stemmed_schema={})
        got = {f.__name__: f(s, fx) for f in (pt.num_typos, pt.typo_tokens_threshold)}
    finally:
        s.close()
    assert {k: r.verdict for k, r in got.items()} == dict.fromkeys(got, "honoured")
    assert got["num_typos"].observed == {"plan": ["k1"], "num_typos=1": []}


def test_every_feature_of_every_stage_has_a_probe() -> None:
    for stage in STAGE_DEFS.values():
        probed = {p.feature for p in PROBES if p.needed_by(stage)}
        assert set(stage.features) - {"text_search"} <= probed, stage.id
    needs = {sid: {p.name for p in PROBES if p.needed_by(st)} for sid, st in STAGE_DEFS.items()}
    assert needs["keyword-plain-71k"] == {"tie-order"}  # server defaults otherwise (D-007)
    assert needs["vector-71k"] == {"vector-k", "ef"}
    assert (
        needs["keyword-71k"]
        == needs["keyword-full"]
        == HONOURED_0241 - {"vector-k", "flat_search_cutoff"}
        | {"stem", "stopwords", "stopwords-after-stem", "num_typos", "typo_tokens_threshold"}
    )
    hybrid_only = {"vector-k", "ef", "hybrid", "alpha", "hyphen-hybrid"}
    assert needs["hybrid-71k"] == needs["keyword-71k"] | hybrid_only


@pytest.mark.parametrize("stage", ["keyword-71k", "hybrid-71k", "keyword-full"])
def test_a_measurement_refuses_the_plan_stages_by_the_ignored_features(
    report: ProbeReport, stage: str
) -> None:
    sdef = STAGE_DEFS[stage]
    with pytest.raises(ProbeRefused) as info:
        decide(sdef, "measurement", report.for_stage(sdef))
    want = {"stem", "stopwords", "stopwords-after-stem", "num_typos", "typo_tokens_threshold"}
    if stage == "hybrid-71k":
        want |= {"ef", "hybrid", "alpha", "hyphen-hybrid"}
    assert set(info.value.probes) == want
    assert info.value.feature == "stem" and info.value.first_version == "26.0"
    assert "probe stem (stem): not honoured" in info.value.message
    assert "'PUT /stopwords answered': 404" in info.value.message  # what the server did instead


def test_the_rehearsal_chooses_its_substitutes_from_the_verdicts(report: ProbeReport) -> None:
    kw = decide(STAGE_DEFS["keyword-71k"], "rehearsal", report.for_stage(STAGE_DEFS["keyword-71k"]))
    assert kw.keyword_substitute and set(kw.probes_substituted) == {
        "stem",
        "stopwords",
        "stopwords-after-stem",
        "num_typos",
        "typo_tokens_threshold",
    }
    vec = decide(STAGE_DEFS["vector-71k"], "rehearsal", report.for_stage(STAGE_DEFS["vector-71k"]))
    assert vec.exact_substitute and not vec.send_ef and vec.probes_substituted == ("ef",)
    plain = decide(
        STAGE_DEFS["keyword-plain-71k"], "rehearsal", report.for_stage(STAGE_DEFS["keyword-plain-71k"])
    )
    assert not plain.keyword_substitute and not plain.exact_substitute and plain.send_ef
    for stage in ("keyword-full", "hybrid-71k"):
        with pytest.raises(ProbeRefused):
            decide(STAGE_DEFS[stage], "rehearsal", report.for_stage(STAGE_DEFS[stage]))


def test_the_probes_decide_and_the_version_table_only_cross_checks(report: ProbeReport) -> None:
    # the same answers from a server that says 30.2: the table would trust it, the probes refuse
    claims = replace(report, server_version="30.2")
    disagree = {d["probe"] for d in claims.table_disagreements()}
    assert disagree == IGNORED_0241 and all(d["table_says_supported"] for d in claims.table_disagreements())
    with pytest.raises(ProbeRefused):
        decide(STAGE_DEFS["keyword-71k"], "measurement", claims.for_stage(STAGE_DEFS["keyword-71k"]))
    # every probe honoured on a server that says 0.24.1: no substitute, whatever the table says
    all_good = replace(report, results=tuple(replace(r, verdict="honoured") for r in report.results))
    kw = decide(STAGE_DEFS["keyword-71k"], "rehearsal", all_good.for_stage(STAGE_DEFS["keyword-71k"]))
    assert not kw.keyword_substitute and kw.send_ef
    assert {d["probe"] for d in all_good.table_disagreements()} == IGNORED_0241 - {
        "num_typos",
        "typo_tokens_threshold",
    }
    # on 0.24.1 the table and the probes disagree only where the table trusts text_search blindly
    assert {d["probe"] for d in report.table_disagreements()} == {"num_typos", "typo_tokens_threshold"}


def test_the_record_is_strict_and_complete(report: ProbeReport) -> None:
    rec = report.record()
    assert tuple(rec) == RECORD_KEYS and rec["format"] == "first-stage-probes/1"
    keys = ("name", "feature", "question", "requests", "observed", "expected", "verdict", "detail")
    assert all(tuple(p) == keys for p in rec["probes"])
    assert [p["name"] for p in rec["probes"]] == list(PROBE_NAMES)
    assert all(
        p["requests"] and all({"method", "path", "body"} == set(q) for q in p["requests"])
        for p in rec["probes"]
    )
    stage_rec = report.for_stage(STAGE_DEFS["vector-71k"]).record()
    assert [p["name"] for p in stage_rec["probes"]] == ["vector-k", "ef", "flat_search_cutoff", "hnsw_params"]


def test_the_probes_leave_nothing_behind(server: TypesenseServer, report: ProbeReport) -> None:
    assert report.collection_prefix.startswith(f"{PROBE_PREFIX}{host_tag()}-{os.getpid()}-")
    assert _probe_collections(server) == [] and report.not_deleted == []


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_leftovers_of_a_killed_run_are_removed_and_nothing_else(server: TypesenseServer) -> None:
    fields: list[dict[str, Any]] = [{"name": "text", "type": "string"}]
    names = {
        "dead": f"{PROBE_PREFIX}{host_tag()}-{_dead_pid()}-abcdef-de",  # a killed run here: removed
        "alive": f"{PROBE_PREFIX}{host_tag()}-{os.getppid()}-abcdef-de",  # a run that still runs: kept
        "other host": f"{PROBE_PREFIX}00000000-{_dead_pid()}-abcdef-de",  # another machine's: kept
        "ours": "miracl-de-71k-german",  # never a probe collection
    }
    for name in names.values():
        server.request("POST", "/collections", json={"name": name, "fields": fields})
    lines: list[str] = []
    try:
        got = run_probes(server, STAGE_DEFS["keyword-plain-71k"], log=lines.append)
        left = {c["name"] for c in server.request("GET", "/collections")}
    finally:
        for name in names.values():
            server.request("DELETE", f"/collections/{name}", ok=(200, 404))
    assert got.swept == [names["dead"]] and left == set(names.values()) - {names["dead"]}
    assert any(names["dead"] in line and "has ended" in line for line in lines)
    assert [r.name for r in got.results] == ["tie-order"] and got.results[0].honoured


def test_the_probes_0241_fails_pass_where_a_server_has_the_feature(server: TypesenseServer) -> None:
    """In front of 0.24.1, a stand-in doing stem, stop-word sets, hnsw_params, ef and hybrid with alpha as
    Typesense v29.0's source does (tests/support/typesense_newer.py): those probes pass, so none of them
    refuses a server that has its feature. The typo probes still fail: the stand-in leaves 0.24.1's locale
    fields as they are (they pass on fields without a locale, test above)."""
    from tests.support.typesense_newer import NewerTypesense

    with NewerTypesense(server) as newer:
        got = run_probes(newer.handle(), None, log=lambda line: None)
    verdicts = {r.name: r.verdict for r in got.results}
    assert verdicts == {
        **dict.fromkeys(PROBE_NAMES, "honoured"),
        "num_typos": "not honoured",
        "typo_tokens_threshold": "not honoured",
    }
    alpha = got.get("alpha")
    assert alpha is not None
    assert alpha.observed == {
        "0.3": {"order": ["A", "B"], "rank_fusion_score": [0.85, 0.65]},
        "0.7": {"order": ["B", "A"], "rank_fusion_score": [0.85, 0.65]},
    }
    assert _probe_collections(server) == []
