"""The keyword probes: does the running server apply the German keyword settings of the plan
(section "First stages") as we send them? Each probe asks one question on a few crafted German documents
and compares the answer with the one a server honouring the setting gives; where a setting could be
ignored silently, the same question is also asked without it (or with another value), so an ignored
setting shows as the same answer twice.

What a server honouring each setting answers is taken from Typesense's source at v29.0 (the newest tag
readable here; docs/ holds the table of file and line) and checked on 0.24.1 where 0.24.1 has the feature:
``locale: "de"`` tokenises with ICU word breaks, lower-cases ASCII only and keeps umlauts and ß
(``src/tokenizer.cpp``); a query is stemmed by the field's stemmer and then the stop words are removed
from the stemmed tokens (``Collection::parse_search_query``, ``src/collection.cpp``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import snowballstemmer

from bench.core.plan import GERMAN_FIELDS, GERMAN_LOCALE, GERMAN_SEARCH_PARAMS
from bench.firststage.definitions import KEYWORD_SORT
from bench.firststage.probe_core import ProbeResult, ProbeSession

# import order = list order; the tie documents' ids are imported against their alphabetical order, so an
# order by id cannot pass for the import order
DOCS: Final = (
    ("l1", "Die Häuser am Fluß"),
    ("l2", "Die E-Mail-Adresse der Straße"),
    ("h1", "Das Haus am See"),
    ("b1", "Das Boot im Hafen"),
    ("p1", "Bahnhofsvorplatz"),
    ("k1", "Kartoffel"),
    ("k2", "Kartoffeln"),
    ("t-c", "Ziegelstein"),
    ("t-a", "Ziegelstein"),
    ("t-b", "Ziegelstein"),
)
STEMMED_DOCS: Final = ("h1", "b1")
STOP_WORD: Final = "welches"  # in the Snowball German list; its Snowball stem "welch" is not
#: exact matching only: no typo, prefix or dropped-token match can stand in for the feature asked about
STRICT: Final = {
    "query_by": ",".join(GERMAN_FIELDS),
    "prefix": "false",
    "num_typos": 0,
    "drop_tokens_threshold": 0,
    "typo_tokens_threshold": 0,
    "per_page": 10,
}
PLAN: Final = {**GERMAN_SEARCH_PARAMS, "per_page": 10}


def _fields(*, stem: bool) -> list[dict[str, Any]]:
    return [
        {"name": n, "type": "string", "locale": GERMAN_LOCALE, **({"stem": True} if stem else {})}
        for n in GERMAN_FIELDS
    ]


@dataclass(frozen=True)
class TextFixture:
    german: str  # locale de, no stem: every document
    stemmed: str  # locale de and stem: STEMMED_DOCS
    stemmed_schema: dict[str, Any]  # as the server read it back


def setup(s: ProbeSession) -> TextFixture:
    german = s.create("de", _fields(stem=False))["name"]
    s.add(german, [{"id": i, "title": "", "text": t} for i, t in DOCS])
    s.create("de-stem", _fields(stem=True))
    stemmed = s.name("de-stem")
    s.add(stemmed, [{"id": i, "title": "", "text": t} for i, t in DOCS if i in STEMMED_DOCS])
    return TextFixture(german, stemmed, s.read_back(stemmed))


def _found(s: ProbeSession, collection: str, queries: dict[str, dict[str, Any]]) -> dict[str, list[str]]:
    """label -> ids found, all queries in one request."""
    items = [(collection, params) for params in queries.values()]
    results = s.searches(items, record=[{"collection": c, **p} for c, p in items])
    return {label: s.ids(r) for label, r in zip(queries, results, strict=True)}


def locale(s: ProbeSession, fx: TextFixture) -> ProbeResult:
    asks = {"Häuser": ["l1"], "Hauser": [], "Fluß": ["l1"], "Fluss": [], "Mail": ["l2"], "Straße": ["l2"]}
    got = _found(s, fx.german, {q: {**STRICT, "q": q} for q in asks})
    return s.result(
        'locale "de": umlauts and ß stay letters (no folding), a hyphen splits words',
        got,
        asks,
        "the answers differ from locale-de tokenisation (see observed/expected: "
        "a server without the locale folds ä to a and joins hyphenated words)",
    )


def stem(s: ProbeSession, fx: TextFixture) -> ProbeResult:
    fields = {f.get("name"): f for f in fx.stemmed_schema.get("fields", []) if isinstance(f, dict)}
    got = _found(s, fx.stemmed, {"stem": {**STRICT, "q": "Hauses"}})
    got |= {"no stem": _found(s, fx.german, {"q": {**STRICT, "q": "Hauses"}})["q"]}
    observed = {
        "stem field finds": got["stem"],
        "field without stem finds": got["no stem"],
        "schema read back: text.stem": fields.get("text", {}).get("stem"),
    }
    expected = {
        "stem field finds": ["h1"],
        "field without stem finds": [],
        "schema read back: text.stem": True,
    }
    return s.result(
        'field stem: "Hauses" finds "Haus" with stem, not without',
        observed,
        expected,
        "the inflected form does not find the base form through the stem "
        "field (or the server did not keep stem in the schema)",
    )


def _stopword_query(s: ProbeSession, fx: TextFixture, words: list[str], label: str) -> dict[str, Any]:
    status, _ = s.put_stopwords(label, words)
    if status == 404:
        return {"set stored": False, "PUT /stopwords answered": 404}
    # the PUT answer echoes the request; only GET gives the tokens the server applies (26.0-30.x nest them in
    # "stopwords"; docs/typesense-source.md)
    _, got = s.send("GET", f"/stopwords/{s.name(label)}")
    inner = got.get("stopwords") if isinstance(got, dict) else None
    stored = inner.get("stopwords") if isinstance(inner, dict) else inner
    kept = sorted(stored) if isinstance(stored, list) else None
    q = f"{STOP_WORD} Boot"
    got = _found(
        s, fx.stemmed, {"without": {**STRICT, "q": q}, "with": {**STRICT, "q": q, "stopwords": s.name(label)}}
    )
    return {
        "set stored": kept == sorted(words),
        "without the set finds": got["without"],
        "with the set finds": got["with"],
    }


def stopwords(s: ProbeSession, fx: TextFixture) -> ProbeResult:
    words = sorted({STOP_WORD, _stem(STOP_WORD)})  # the plan's rule: the word and its stem
    observed = _stopword_query(s, fx, words, "sw-both")
    expected = {"set stored": True, "without the set finds": [], "with the set finds": ["b1"]}
    return s.result(
        f'stop-word set {words}: "{STOP_WORD} Boot" finds "Boot" only with the set',
        observed,
        expected,
        "the set did not take the stop word out of the query, or the word was dropped without the set",
    )


def stopwords_after_stem(s: ProbeSession, fx: TextFixture) -> ProbeResult:
    words = [_stem(STOP_WORD)]
    observed = _stopword_query(s, fx, words, "sw-stem")
    expected = {"set stored": True, "without the set finds": [], "with the set finds": ["b1"]}
    return s.result(
        f"the server stems the query before it removes stop words: a set of only the "
        f'stem {words} takes "{STOP_WORD}" out',
        observed,
        expected,
        "a set holding only the stem did not remove the inflected word: the server does not "
        "stem before it removes stop words (the plan's rule for the set)",
    )


def _stem(word: str) -> str:
    return str(snowballstemmer.stemmer("german").stemWord(word))


def prefix(s: ProbeSession, fx: TextFixture) -> ProbeResult:
    got = _found(
        s,
        fx.german,
        {"plan": {**PLAN, "q": "Bahnhof"}, "prefix=true": {**PLAN, "q": "Bahnhof", "prefix": "true"}},
    )
    return s.result(
        'prefix=false: "Bahnhof" does not find "Bahnhofsvorplatz" (prefix=true does)',
        got,
        {"plan": [], "prefix=true": ["p1"]},
        "prefix=false did not change what matches",
    )


def num_typos(s: ProbeSession, fx: TextFixture) -> ProbeResult:
    q = {"plan": {**PLAN, "q": "Kaxtoxfel"}, "num_typos=1": {**PLAN, "q": "Kaxtoxfel", "num_typos": 1}}
    got = _found(s, fx.german, q)
    return s.result(
        'num_typos=2: "Kaxtoxfel" (2 typos) finds "Kartoffel"; num_typos=1 does not',
        got,
        {"plan": ["k1"], "num_typos=1": []},
        "num_typos did not change what matches",
    )


def typo_tokens_threshold(s: ProbeSession, fx: TextFixture) -> ProbeResult:
    q = {
        "plan": {**PLAN, "q": "Kartoffel"},
        "typo_tokens_threshold=100": {**PLAN, "q": "Kartoffel", "typo_tokens_threshold": 100},
    }
    got = {k: sorted(v) for k, v in _found(s, fx.german, q).items()}
    return s.result(
        'typo_tokens_threshold=1: one exact hit for "Kartoffel" stops the typo '
        'search ("Kartoffeln" is found only with a higher threshold)',
        got,
        {"plan": ["k1"], "typo_tokens_threshold=100": ["k1", "k2"]},
        "typo_tokens_threshold did not change what matches",
    )


def drop_tokens_threshold(s: ProbeSession, fx: TextFixture) -> ProbeResult:
    q = {
        "plan": {**PLAN, "q": "Kartoffel Zeppelin"},
        "drop_tokens_threshold=0": {**PLAN, "q": "Kartoffel Zeppelin", "drop_tokens_threshold": 0},
    }
    got = _found(s, fx.german, q)
    return s.result(
        'drop_tokens_threshold=100: "Kartoffel Zeppelin" (no document has both) '
        'drops a word and finds "Kartoffel"; 0 finds nothing',
        got,
        {"plan": ["k1"], "drop_tokens_threshold=0": []},
        "drop_tokens_threshold did not change what matches",
    )


def tie_order(s: ProbeSession, fx: TextFixture) -> ProbeResult:
    params = {**PLAN, "q": "Ziegelstein", "sort_by": KEYWORD_SORT}
    result = s.searches([(fx.german, params)], record=[{"collection": fx.german, **params}])[0]
    hits = s.hits(result)
    scores = {s.number(h, "text_match") for h in hits}
    observed = {"order": [str(h["document"]["id"]) for h in hits], "equal text_match": len(scores) == 1}
    return s.result(
        f"ties: equal text-match scores come back in import order with sort_by={KEYWORD_SORT}",
        observed,
        {"order": ["t-c", "t-a", "t-b"], "equal text_match": True},
        "equal scores did not come back in import order",
    )
