"""Rehearsal only: keyword-71k on Typesense 0.24.1 without stem and stop-word sets.

The substitute keeps the plan's fields with ``locale: "de"`` and the plan's search parameters, drops field
``stem`` and the ``stopwords`` parameter (0.24.1 would silently ignore both), and removes the plan's stop
set from each query on the client. A measurement never uses it: the function refuses any other mode, and a
measurement that got past the server check is refused naming ``stem``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.core.errors import BenchError
from bench.firststage import stages as stages_mod
from bench.firststage.definitions import GERMAN_SEARCH_PARAMS, KEYWORD_SORT, STAGE_DEFS
from bench.firststage.features import ServerRefused, StageRefused
from bench.firststage.probes import Decision
from bench.firststage.search import search
from bench.firststage.server import TypesenseServer
from bench.firststage.stages import keyword_substitute, run_stage
from bench.firststage.stopwords import german_stopwords, rehearsal_strip_stopwords

Small = tuple[dict[str, str], list, Path]


def test_strip_removes_exactly_the_plans_stop_words() -> None:
    sw = german_stopwords()
    assert {"wie", "ist", "der", "die", "über"} <= set(sw.words) and "papst" not in sw.words
    assert rehearsal_strip_stopwords("Wie alt ist der Papst?", sw, mode="rehearsal") == "alt Papst?"
    assert rehearsal_strip_stopwords("Über   die  Alpen", sw, mode="rehearsal") == "Alpen"  # case folded
    # a query of stop words and punctuation only leaves nothing to search for (an empty q is a wildcard)
    assert rehearsal_strip_stopwords("Was ist das?", sw, mode="rehearsal") == ""
    # every remaining word is outside the set, every removed one inside (checked word by word)
    query = "Wann wurde die erste Eisenbahn in Deutschland eröffnet und von wem?"
    kept = rehearsal_strip_stopwords(query, sw, mode="rehearsal").rstrip("?").split()
    words = query.rstrip("?").split()
    assert kept == [w for w in words if w.lower() not in set(sw.words)]
    assert len(kept) < len(words)


def test_strip_refuses_a_measurement() -> None:
    with pytest.raises(BenchError, match="never strips on the client"):
        rehearsal_strip_stopwords("Wie alt ist der Papst?", german_stopwords(), mode="measurement")


def test_substitute_only_in_a_rehearsal_of_keyword_71k_when_the_probes_chose_it() -> None:
    kw, chosen = STAGE_DEFS["keyword-71k"], Decision(keyword_substitute=True)
    assert keyword_substitute(kw, "rehearsal", chosen, "0.24.1") is not None
    assert keyword_substitute(kw, "measurement", chosen, "0.24.1") is None
    assert keyword_substitute(kw, "rehearsal", Decision(), "0.24.1") is None  # the probes found stem
    assert keyword_substitute(STAGE_DEFS["keyword-full"], "rehearsal", chosen, "0.24.1") is None
    assert keyword_substitute(STAGE_DEFS["hybrid-71k"], "rehearsal", chosen, "0.24.1") is None


def test_a_measurement_never_uses_the_substitute(
    server: TypesenseServer, small: Small, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    queries, passages, _ = small
    kwargs = dict(
        server=server,
        corpus=passages,
        queries=queries,
        mode="measurement",
        out_run=tmp_path / "r.trec",
        out_json=tmp_path / "r.json",
    )
    with pytest.raises(ServerRefused):
        run_stage("keyword-71k", **kwargs)  # type: ignore[arg-type]
    # even past the server check (as if 0.24.1 were the pinned version), it is refused, not substituted
    monkeypatch.setattr(stages_mod, "check_server", lambda mode, version: None)
    with pytest.raises(StageRefused) as info:
        run_stage("keyword-71k", **kwargs)  # type: ignore[arg-type]
    assert info.value.feature == "stem"
    assert not (tmp_path / "r.trec").exists() and not (tmp_path / "r.json").exists()


def test_rehearsal_runs_keyword_71k_with_the_substitute(
    server: TypesenseServer, small: Small, tmp_path: Path
) -> None:
    queries, passages, _ = small
    only_stop = "Was ist das?"
    queries = {**queries, "zz-stop-words-only": only_stop}
    res = run_stage(
        "keyword-71k",
        server=server,
        corpus=passages,
        queries=queries,
        mode="rehearsal",
        out_run=tmp_path / "kw.trec",
        out_json=tmp_path / "kw.json",
    )
    record = json.loads((tmp_path / "kw.json").read_text(encoding="utf-8"))
    assert record["substitute"]["kind"] == "keyword"
    assert record["substitute"]["queries_empty_after_stopwords"] == ["zz-stop-words-only"]
    assert any(n.startswith("REHEARSAL SUBSTITUTE") for n in record["notes"])
    # chosen by the probes' verdicts, which the record keeps
    assert record["substitute"]["probes_not_honoured"] == [
        "stem",
        "stopwords",
        "stopwords-after-stem",
        "num_typos",
        "typo_tokens_threshold",
    ]
    verdicts = {p["name"]: p["verdict"] for p in record["probes"]["probes"]}
    assert verdicts["stem"] == "not honoured" and verdicts["locale-de"] == verdicts["tie-order"] == "honoured"
    assert any("applied no typo tolerance on the locale fields" in n for n in record["notes"])
    assert record["stopwords"]["applied_by"] == "client (rehearsal substitute)"
    assert record["stopwords"]["id"] is None
    assert record["schema"]["fields"] == [
        {"name": "title", "type": "string", "locale": "de"},
        {"name": "text", "type": "string", "locale": "de"},
    ]
    assert record["search_params"] == {**GERMAN_SEARCH_PARAMS, "sort_by": KEYWORD_SORT}  # no stopwords
    # the stop-word-only query was not sent (an empty q would match every passage): no candidates
    assert "zz-stop-words-only" not in res.run
    assert "zz-stop-words-only" not in (tmp_path / "kw.trec").read_text()
    # reference: the same request sent by hand with the stripped query gives the same ranking
    sw = german_stopwords()
    for qid in sorted(queries)[:5]:
        q = rehearsal_strip_stopwords(queries[qid], sw, mode="rehearsal")
        hits = search(server, STAGE_DEFS["keyword-71k"].collection, {**record["search_params"], "q": q}).hits
        assert [d for d, _ in res.run[qid]] == [h["document"]["id"] for h in hits]
