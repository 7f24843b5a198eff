"""The hyphen probes and the study's rule for a server that fails them, on the real
Typesense 0.24.1 and behind the probe seam.

0.24.1 keeps "Irokesen-Indianer" as two words on a ``locale: "de"`` field (the keyword probe passes) and
rejects hybrid search (the hybrid probe fails without saying anything about hyphens). The other outcome,
a server that reads the hyphen as Typesense's exclusion operator as v28.0 to the v30 branch's
``Collection::process_tokens`` does for non-English locales, is a stand-in in front of the real server:
the word after the hyphen leaves the query and every hit holding it leaves the answer
(``hyphen_as_exclusion``). Hybrid search is done by ``tests.support.typesense_newer`` (v29's rank fusion).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import snowballstemmer

from bench.firststage import probe_hyphen as ph
from bench.firststage.definitions import STAGE_DEFS
from bench.firststage.probes import HYPHEN_PROBES, ProbeRefused, ProbeReport, decide, run_probes
from bench.firststage.server import TypesenseServer
from bench.firststage.stages import run_stage
from tests.support.loopback import Request
from tests.support.typesense import drop_collections
from tests.support.typesense_newer import NewerTypesense
from tests.support.typesense_proxy import TypesenseProxy

pytestmark = pytest.mark.typesense
GERMAN = ("keyword-71k", "keyword-full", "hybrid-71k")
_AFTER_HYPHEN = re.compile(r"(?<=\w)-(\w+)")
_STEM = snowballstemmer.stemmer("german")


def _stems(text: str) -> set[str]:
    return {_STEM.stemWord(w.lower()) for w in re.findall(r"\w+", text)}


class HyphenAsExclusion:
    """Request and answer rewrites of a server that reads "A-B" as "A, and not B"; ``sent`` keeps every q."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    def request(self, req: Request, body: bytes) -> bytes:
        if not (req.method == "POST" and req.path.startswith("/multi_search")):
            return body
        data = json.loads(body)
        for s in data["searches"]:
            self.sent.append(s.get("q", ""))
            s["q"] = _AFTER_HYPHEN.sub("", s.get("q", "")) or "*"
        return json.dumps(data).encode()

    def answer(self, req: Request, body: bytes) -> bytes:
        if not (req.method == "POST" and req.path.startswith("/multi_search")):
            return body
        data = json.loads(body)
        for s, res in zip(json.loads(req.body)["searches"], data.get("results", []), strict=False):
            out = {_STEM.stemWord(w.lower()) for w in _AFTER_HYPHEN.findall(s.get("q", ""))}
            if out and "hits" in res:
                res["hits"] = [
                    h
                    for h in res["hits"]
                    if not out & _stems(f"{h['document'].get('title', '')} {h['document'].get('text', '')}")
                ]
        return json.dumps(data).encode()


def _report(server: TypesenseServer, *, newer: bool, broken: bool) -> ProbeReport:
    bug = HyphenAsExclusion()
    with NewerTypesense(server) if newer else _Same(server) as inner:
        base = inner.handle() if newer else server
        if not broken:
            return run_probes(base, None, log=lambda line: None)
        with TypesenseProxy(base, request=bug.request, answer=bug.answer) as px:
            return run_probes(px.handle(), None, log=lambda line: None)


class _Same:
    def __init__(self, server: TypesenseServer) -> None:
        self.server = server

    def __enter__(self) -> _Same:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def _all_else_honoured(report: ProbeReport) -> ProbeReport:
    """The report with every probe but the hyphen ones honoured: only the hyphen probes decide."""
    return replace(
        report,
        results=tuple(
            r if r.name in HYPHEN_PROBES else replace(r, verdict="honoured") for r in report.results
        ),
    )


def test_on_0241_the_keyword_probe_passes_and_the_rejected_hybrid_says_nothing(
    server: TypesenseServer,
) -> None:
    report = _report(server, newer=False, broken=False)
    kw, hy = report.get("hyphen"), report.get("hyphen-hybrid")
    assert kw is not None and hy is not None
    assert kw.verdict == "honoured"
    assert kw.observed == {"Irokesen-Indianer": ["y1"], "rewritten": ["y1"]}
    assert hy.verdict == "not honoured" and hy.observed["Irokesen-Indianer"]["accepted"] is False
    assert "only on wildcard" in hy.observed["Irokesen-Indianer"]["answer"]
    assert not ph.parsed_badly(hy)  # a rejected search: no rewrite chosen from it
    good = _all_else_honoured(report)
    for stage in set(STAGE_DEFS) - {"hybrid-71k"}:
        sdef = STAGE_DEFS[stage]
        assert not decide(sdef, "measurement", good.for_stage(sdef)).hyphen_rewrite
    with pytest.raises(ProbeRefused) as info:  # a hybrid stage needs a hybrid search that answers
        decide(STAGE_DEFS["hybrid-71k"], "measurement", good.for_stage(STAGE_DEFS["hybrid-71k"]))
    assert info.value.probes == ["hyphen-hybrid"] and "rejected the search" in info.value.message
    assert {d["probe"] for d in report.table_disagreements()} & set(HYPHEN_PROBES) == set()


def test_a_server_with_hybrid_search_passes_both(server: TypesenseServer) -> None:
    report = _report(server, newer=True, broken=False)
    got = {n: (r.verdict, r.observed) for n in HYPHEN_PROBES if (r := report.get(n)) is not None}
    assert got["hyphen"][0] == got["hyphen-hybrid"][0] == "honoured"
    assert got["hyphen-hybrid"][1]["Irokesen-Indianer"] == {
        "accepted": True,
        "first hit": "y1",
        "found": True,
    }


def test_a_server_reading_the_hyphen_as_exclusion_fails_both_and_every_german_stage_rewrites(
    server: TypesenseServer,
) -> None:
    report = _report(server, newer=True, broken=True)
    kw, hy = report.get("hyphen"), report.get("hyphen-hybrid")
    assert kw is not None and hy is not None
    assert kw.verdict == hy.verdict == "not honoured"
    assert kw.observed == {"Irokesen-Indianer": ["y2"], "rewritten": ["y1"]}  # "Irokesen, and not Indianer"
    assert (
        hy.observed["Irokesen-Indianer"]["found"] is False and hy.observed["rewritten"]["first hit"] == "y1"
    )
    good = _all_else_honoured(report)
    for mode in ("measurement", "rehearsal"):
        chosen = {
            s: decide(STAGE_DEFS[s], mode, good.for_stage(STAGE_DEFS[s])).hyphen_rewrite  # type: ignore[arg-type]
            for s in STAGE_DEFS
        }
        assert chosen == {s: s in GERMAN for s in STAGE_DEFS}
    # the keyword stages see the hybrid probe too (recorded, not deciding): one rule for all German stages
    assert {r.name for r in good.for_stage(STAGE_DEFS["keyword-71k"]).results} >= set(HYPHEN_PROBES)


def test_a_failure_the_rewrite_does_not_mend_refuses_the_stage(server: TypesenseServer) -> None:
    report = _all_else_honoured(_report(server, newer=True, broken=True))
    mended = tuple(
        r if r.name != "hyphen" else replace(r, observed={**r.observed, "rewritten": []})
        for r in report.results
    )
    with pytest.raises(ProbeRefused) as info:
        decide(
            STAGE_DEFS["keyword-71k"],
            "measurement",
            replace(report, results=mended).for_stage(STAGE_DEFS["keyword-71k"]),
        )
    assert info.value.probes == ["hyphen"] and info.value.feature == "hyphen_query"


def test_the_rewrite_and_the_17_dev_topics() -> None:
    assert ph.rewrite("Wo ist das Gebiet der Irokesen-Indianer in Kanada?") == (
        "Wo ist das Gebiet der Irokesen Indianer in Kanada?"
    )
    assert ph.rewrite("Wie viel wiegt ein U-Boot?") == "Wie viel wiegt ein U Boot?"
    assert ph.rewrite("Katzen -Hunde - Mäuse") == "Katzen -Hunde - Mäuse"  # not inside a word
    topics = Path("data/bundled/miracl-de-dev/topics.miracl-v1.0-de-dev.tsv").read_text(encoding="utf-8")
    queries = dict(line.split("\t", 1) for line in topics.splitlines())
    assert len(queries) == 305
    listed = Path("docs/typesense-source.md").read_text(encoding="utf-8")
    changed = ph.hyphenated(queries)
    assert len(changed) == 17
    assert all(f"`{q}`" in listed for q in changed)


def _run_keyword(
    server: TypesenseServer, small: Any, tmp: Path, bug: HyphenAsExclusion | None
) -> dict[str, Any]:
    queries, passages, _ = small
    queries = {
        "81674#0": "Wo ist das Gebiet der Irokesen-Indianer in Kanada?",
        **dict(list(queries.items())[:4]),
    }
    make: Callable[[], Any] = (
        (lambda: TypesenseProxy(server, request=bug.request, answer=bug.answer))
        if bug
        else (lambda: _Same(server))
    )
    with make() as px:
        handle = px.handle() if bug else server
        run_stage(
            "keyword-71k",
            server=handle,
            corpus=passages,
            queries=queries,
            mode="rehearsal",
            out_run=tmp / "run.trec",
            out_json=tmp / "run.json",
            warmup=0,
        )
    return dict(json.loads((tmp / "run.json").read_text(encoding="utf-8")))


def test_each_stage_records_the_rule_and_applies_it_only_where_a_probe_failed(
    server: TypesenseServer, small: Any, tmp_path: Path
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    plain = _run_keyword(server, small, tmp_path / "a", None)
    assert plain["hyphens"] == {
        "rule": ph.RULE,
        "stage_is_german": True,
        "applied": False,
        "decided_by": "the probes hyphen and hyphen-hybrid (under probes)",
        "queries_with_hyphen_inside_a_word": ["81674#0"],
    }
    drop_collections(server)
    bug = HyphenAsExclusion()
    rewritten = _run_keyword(server, small, tmp_path / "b", bug)
    assert rewritten["hyphens"]["applied"] is True
    assert "a hyphen inside a word replaced by a space" in rewritten["query_text"]
    assert any("HYPHENS:" in n for n in rewritten["notes"])
    stage_qs = [q for q in bug.sent if "Kanada" in q]
    assert stage_qs and all("-" not in q for q in stage_qs)  # what the stage sent: no hyphen inside a word
