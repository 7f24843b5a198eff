"""The hyphen probes: does the running server read a hyphen inside a query word as part of
the word, in the German keyword search and in the hybrid search the plan sends?

17 of the 305 MIRACL German dev topics hold a hyphen inside a word ("Wo ist das Gebiet der
Irokesen-Indianer in Kanada?"; the list is in docs/typesense-source.md). With ``locale: "de"`` Typesense
tokenises the query with ICU word breaks and keeps ``-`` as a token of its own; from v28.0
``Collection::process_tokens`` turns a lone ``-`` token into the exclusion operator for every locale other
than English, so "Irokesen-Indianer"
becomes "Irokesen, and not Indianer" (docs/typesense-source.md, "Hyphens inside a query word"). 0.24.1
keeps the hyphenated words. The probes ask the server, on a throwaway collection with the stage's German
fields: the query "Irokesen-Indianer" must find the one document that holds both words (and it alone:
no dropped tokens), and so must "Irokesen Indianer", the study's rewrite.

What the study sends when a probe fails (decided before any data, DEVIATIONS.md "Hyphens inside query
words"): in every German stage (keyword-71k, keyword-full, hybrid-71k) a hyphen between two letters or
digits of a topic is replaced by a space in the ``q`` sent to Typesense (``rewrite``); the text embedded for
a vector query and the text given to the rerankers stay the topic as it is. keyword-plain-71k sends the
server's defaults (no locale: the default tokeniser joins "Irokesen-Indianer" into one word, D-007's
baseline) and vector-71k sends ``q=*``; neither changes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from bench.core.plan import GERMAN_FIELDS, GERMAN_LOCALE, HYBRID_ALPHA
from bench.firststage.definitions import KEYWORD_SORT
from bench.firststage.probe_core import ProbeResult, ProbeSession
from bench.firststage.search import vector_literal

QUERY: Final = "Irokesen-Indianer"
#: a hyphen with a letter or digit on both sides ("Irokesen-Indianer", "U-Boot", "A-Ha"); a leading "-word"
#: (Typesense's exclusion operator) is not inside a word and is left alone
INSIDE_WORD: Final = re.compile(r"(?<=\w)-(?=\w)")
RULE: Final = (
    "a hyphen between two letters or digits is replaced by a space in the q sent to Typesense, in every "
    "German stage (keyword-71k, keyword-full, hybrid-71k); embedded and reranked text unchanged"
)
DOCS: Final = (
    ("y1", "Die Irokesen waren Indianer", [1.0, 0.0, 0.0, 0.0]),
    ("y2", "Die Irokesen am Ontariosee", [0.0, 1.0, 0.0, 0.0]),
    ("y3", "Indianer im Wald", [0.0, 0.0, 1.0, 0.0]),
)
BOTH: Final = "y1"
#: exact matching, every token required: only the document with both words answers
STRICT: Final = {
    "query_by": ",".join(GERMAN_FIELDS),
    "prefix": "false",
    "num_typos": 0,
    "drop_tokens_threshold": 0,
    "typo_tokens_threshold": 0,
    "per_page": 10,
    "sort_by": KEYWORD_SORT,
}


def rewrite(text: str) -> str:
    """The study's rewrite of a topic for a server whose hyphen probe failed."""
    return INSIDE_WORD.sub(" ", text)


def hyphenated(queries: Mapping[str, str]) -> list[str]:
    """The query ids whose text the rewrite changes, in the mapping's order."""
    return [q for q, t in queries.items() if rewrite(t) != t]


@dataclass(frozen=True)
class HyphenFixture:
    collection: str


def setup(s: ProbeSession) -> HyphenFixture:
    fields = [{"name": n, "type": "string", "locale": GERMAN_LOCALE, "stem": True} for n in GERMAN_FIELDS]
    name = s.create("hyphen", [*fields, {"name": "embedding", "type": "float[]", "num_dim": 4}])["name"]
    s.add(name, [{"id": i, "title": "", "text": t, "embedding": v} for i, t, v in DOCS])
    return HyphenFixture(name)


def _queries() -> dict[str, str]:
    return {QUERY: QUERY, "rewritten": rewrite(QUERY)}


def keyword(s: ProbeSession, fx: HyphenFixture) -> ProbeResult:
    items = [(fx.collection, {**STRICT, "q": q}) for q in _queries().values()]
    results = s.searches(items, record=[{"collection": c, **p} for c, p in items])
    observed = {label: s.ids(r) for label, r in zip(_queries(), results, strict=True)}
    return s.result(
        f'hyphen in a keyword query: "{QUERY}" finds the document with both words, and only it '
        f'(as "{rewrite(QUERY)}" does)',
        observed,
        {label: [BOTH] for label in _queries()},
        f'"{QUERY}" did not find what "{rewrite(QUERY)}" finds: the server read the hyphen as an operator '
        "(an exclusion drops the second word) or joined the words",
    )


def hybrid(s: ProbeSession, fx: HyphenFixture) -> ProbeResult:
    vq = vector_literal(DOCS[0][2], k=len(DOCS), alpha=HYBRID_ALPHA)
    items = [
        (fx.collection, {**STRICT, "q": q, "vector_query": vq, "exclude_fields": "embedding"})
        for q in _queries().values()
    ]
    results = s.searches(items, record=[{"collection": c, **p} for c, p in items], allow_error=True)
    observed: dict[str, Any] = {}
    for label, res in zip(_queries(), results, strict=True):
        if "error" in res:
            observed[label] = {"accepted": False, "answer": f"{res.get('code')} {res['error']}"}
        else:
            ids = s.ids(res)
            observed[label] = {"accepted": True, "first hit": ids[0] if ids else None, "found": BOTH in ids}
    return s.result(
        f'hyphen in a hybrid query: "{QUERY}" with a vector query nearest to the document with both words '
        "finds it first (an exclusion would remove it from the vector list too)",
        observed,
        {label: {"accepted": True, "first hit": BOTH, "found": True} for label in _queries()},
        f'the hybrid search with "{QUERY}" did not put the document with both words first, or the server '
        "rejected the search (see its answer)",
    )


def parsed_badly(result: ProbeResult) -> bool:
    """The server answered the hyphenated query, and wrongly (a rejected search says nothing about
    hyphens)."""
    if result.honoured:
        return False
    answers = [v for v in result.observed.values() if isinstance(v, dict)]
    return all(a.get("accepted", True) for a in answers)


def rewrite_works(result: ProbeResult) -> bool:
    """The rewritten query got the answer a server honouring hyphens gives."""
    return result.observed.get("rewritten") == result.expected.get("rewritten")
