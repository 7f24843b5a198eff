"""Behavioural probes of the search server (plan section "First stages"; DESIGN "The stack proves
itself"): before a stage sends anything of its own, the running server is asked, on a throwaway collection
of crafted German documents, the questions whose answers prove each feature the stage relies on.

``run_probes(server, stage)`` is the entry point (``bench first-stage``, ``bench rehearse``, and ``bench
doctor`` with ``stage=None``: every probe). Which probes a stage needs is read from the stage's data
(``StageDef.features`` and the parameters it sends), never listed per stage id. The decision
(``decide``): in a measurement, a stage whose probe was not honoured, or got no usable answer, is refused
by the probe's name with what the server did (``ProbeRefused``); in a rehearsal, the probes' verdicts
choose the declared substitutes (DEVIATIONS.md D-010, D-040) and anything else refuses. The version table
(``bench.firststage.features``) is only a cross-check: where it disagrees with a probe, the disagreement is
reported and recorded, and the probe decides.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from bench.core.errors import BenchError
from bench.firststage import probe_hyphen as ph
from bench.firststage import probe_text as pt
from bench.firststage import probe_vector as pv
from bench.firststage.definitions import KEYWORD_SUBSTITUTE_STAGES, STAGE_DEFS, StageDef
from bench.firststage.features import FEATURES, Feature, Mode, StageRefused, supports
from bench.firststage.probe_core import ProbeError, ProbeResult, ProbeSession, sweep_probe_leftovers
from bench.firststage.server import TypesenseServer

NO_ANSWER: Final = "no answer"
RECORD_KEYS: Final = (
    "format",
    "server_version",
    "collection_prefix",
    "seconds",
    "swept",
    "not_deleted",
    "probes",
    "table_disagreements",
)
PROBE_FORMAT: Final = "first-stage-probes/1"
#: What the rehearsal's keyword substitute (D-040) does without, by probe. It is chosen when a stem or
#: stop-word probe fails; the typo probes ride along because Typesense 0.24.1 applies no typo tolerance at
#: all on fields with a locale (found by these probes: num_typos and typo_tokens_threshold change nothing
#: there, while the same queries on fields without a locale do find typos), so the substitute has run
#: without typo tolerance all along; its record now says so.
KEYWORD_SUBSTITUTE_PROBES: Final = (
    "stem",
    "stopwords",
    "stopwords-after-stem",
    "num_typos",
    "typo_tokens_threshold",
)
_CHOOSES_KEYWORD_SUBSTITUTE: Final = ("stem", "stopwords", "stopwords-after-stem")


def _param(name: str) -> Callable[[StageDef], bool]:
    return lambda st: name in st.params


def _feature(name: str) -> Callable[[StageDef], bool]:
    return lambda st: name in st.features


@dataclass(frozen=True)
class Probe:
    """``needed_by``: the stage relies on it (it decides); ``informs``: recorded for the stage, never
    deciding (``hnsw_params``: no stage sends them; ``flat_search_cutoff``: only the rehearsal's exact
    substitute uses it, and only the rehearsal reads it)."""

    name: str
    feature: str  # the version table's name (bench.firststage.features)
    group: str  # the fixture it runs on: text, vector, hybrid, schema
    run: Callable[..., ProbeResult]
    needed_by: Callable[[StageDef], bool]
    informs: Callable[[StageDef], bool] = lambda st: False


PROBES: Final = (
    Probe("locale-de", "locale", "text", pt.locale, _feature("locale")),
    Probe("stem", "stem", "text", pt.stem, _feature("stem")),
    Probe("stopwords", "stopwords", "text", pt.stopwords, _feature("stopwords")),
    Probe("stopwords-after-stem", "stopwords", "text", pt.stopwords_after_stem, _feature("stopwords")),
    Probe("prefix", "text_search", "text", pt.prefix, _param("prefix")),
    Probe("num_typos", "text_search", "text", pt.num_typos, _param("num_typos")),
    Probe(
        "typo_tokens_threshold",
        "text_search",
        "text",
        pt.typo_tokens_threshold,
        _param("typo_tokens_threshold"),
    ),
    Probe(
        "drop_tokens_threshold",
        "text_search",
        "text",
        pt.drop_tokens_threshold,
        _param("drop_tokens_threshold"),
    ),
    Probe("tie-order", "seq_id_sort", "text", pt.tie_order, _param("sort_by")),
    Probe("vector-k", "vector_query", "vector", pv.k_and_distance, lambda st: st.vector),
    # the plan's ef rule raises ef: a vector stage relies on the server honouring it
    Probe("ef", "ef", "vector", pv.ef, lambda st: st.vector),
    Probe(
        "flat_search_cutoff",
        "vector_query",
        "vector",
        pv.flat_search_cutoff,
        lambda st: False,
        lambda st: st.vector,
    ),
    Probe("hnsw_params", "hnsw_params", "schema", pv.hnsw_params, lambda st: False, lambda st: st.vector),
    Probe("hybrid", "hybrid", "hybrid", pv.hybrid, _feature("hybrid")),
    Probe("alpha", "alpha", "hybrid", pv.alpha, _feature("alpha")),
    # every German stage records both hyphen probes: one rule for all of them (HYPHEN_PROBES, decide)
    Probe("hyphen", "hyphen_query", "hyphen", ph.keyword, _feature("locale")),
    Probe(
        "hyphen-hybrid", "hyphen_query_hybrid", "hyphen", ph.hybrid, _feature("hybrid"), _feature("locale")
    ),
)
HYPHEN_PROBES: Final = ("hyphen", "hyphen-hybrid")
PROBE_NAMES: Final = tuple(p.name for p in PROBES)
_SETUP: Final = {
    "text": pt.setup,
    "vector": pv.setup,
    "hybrid": pv.setup_hybrid,
    "hyphen": ph.setup,
    "schema": lambda s: None,
}


@dataclass(frozen=True)
class ProbeReport:
    server_version: str
    collection_prefix: str
    seconds: float
    results: tuple[ProbeResult, ...]
    swept: list[str] = field(default_factory=list)
    not_deleted: list[str] = field(default_factory=list)

    def get(self, name: str) -> ProbeResult | None:
        return next((r for r in self.results if r.name == name), None)

    def for_stage(self, stage: StageDef) -> ProbeReport:
        """The probes the stage needs or records, in registry order; a probe this report lacks is an error."""
        wanted = [p.name for p in PROBES if p.needed_by(stage) or p.informs(stage)]
        missing = [n for n in wanted if self.get(n) is None]
        if missing:
            raise BenchError(f"stage {stage.id}: the probe report lacks {', '.join(missing)}; run its probes")
        results = tuple(r for r in self.results if r.name in wanted)
        return ProbeReport(
            self.server_version, self.collection_prefix, self.seconds, results, self.swept, self.not_deleted
        )

    def failing(self, stage: StageDef) -> list[ProbeResult]:
        needed = {p.name for p in PROBES if p.needed_by(stage)}
        return [r for r in self.results if r.name in needed and not r.honoured]

    def table_disagreements(self) -> list[dict[str, Any]]:
        """Features where the version table and a probe disagree (a probe without an answer says nothing)."""
        out = []
        for r in self.results:
            if r.verdict == NO_ANSWER:
                continue
            table = supports(self.server_version, r.feature)
            if table != r.honoured:
                out.append(
                    {
                        "probe": r.name,
                        "feature": r.feature,
                        "table_says_supported": table,
                        "probe_verdict": r.verdict,
                        "first_version": FEATURES[r.feature].first_version,
                    }
                )
        return out

    def record(self) -> dict[str, Any]:
        rec = {
            "format": PROBE_FORMAT,
            "server_version": self.server_version,
            "collection_prefix": self.collection_prefix,
            "seconds": self.seconds,
            "swept": list(self.swept),
            "not_deleted": list(self.not_deleted),
            "probes": [r.record() for r in self.results],
            "table_disagreements": self.table_disagreements(),
        }
        if tuple(rec) != RECORD_KEYS:
            raise RuntimeError(f"probe record keys {tuple(rec)} differ from {RECORD_KEYS}")
        return rec

    def lines(self) -> list[str]:
        """What the probes print: one line per probe, then the cross-check and the time."""
        out = [
            f"probe {r.name} ({r.feature}): {r.verdict}" + ("" if r.honoured else f" - {r.detail}")
            for r in self.results
        ]
        for d in self.table_disagreements():
            out.append(
                f"probe {d['probe']}: the version table says Typesense {self.server_version} "
                f"{'has' if d['table_says_supported'] else 'lacks'} {d['feature']} (from "
                f"{d['first_version']}), the probe found it {d['probe_verdict']}; the probe decides"
            )
        good = sum(1 for r in self.results if r.honoured)
        out.append(
            f"probes: {good} of {len(self.results)} honoured on Typesense {self.server_version} "
            f"in {self.seconds:.1f} s"
        )
        return out


def _no_answer(probe: Probe, exc: ProbeError, requests: list[dict[str, Any]]) -> ProbeResult:
    return ProbeResult(
        probe.name,
        probe.feature,
        "(no usable answer)",
        requests,
        {"answer": exc.answer},
        {},
        NO_ANSWER,
        exc.message,
    )


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def probes_for(stage: StageDef | None) -> list[Probe]:
    return [p for p in PROBES if stage is None or p.needed_by(stage) or p.informs(stage)]


def run_probes(
    server: TypesenseServer, stage: StageDef | str | None = None, *, log: Callable[[str], None] = _log
) -> ProbeReport:
    """Run the probes ``stage`` needs (every probe for None) and print one line per probe. A probe without a
    usable answer gets the verdict ``no answer`` (the server's answer kept); what the run made on the
    server is deleted when it ends."""
    sdef = STAGE_DEFS[stage] if isinstance(stage, str) else stage
    t0 = time.perf_counter()
    swept = sweep_probe_leftovers(server, log)
    session = ProbeSession(server)
    results: list[ProbeResult] = []
    fixtures: dict[str, Any] = {}
    try:
        for probe in probes_for(sdef):
            session.start(probe.name, probe.feature)
            try:
                if probe.group not in fixtures:
                    fixtures[probe.group] = _SETUP[probe.group](session)
                fx = fixtures[probe.group]
                if isinstance(fx, ProbeError):  # its documents could not be set up: same answer
                    raise fx
                results.append(probe.run(session) if fx is None else probe.run(session, fx))
            except ProbeError as exc:
                fixtures.setdefault(probe.group, exc)
                results.append(_no_answer(probe, exc, list(session.log) or [exc.request]))
    finally:
        not_deleted = session.close()
    report = ProbeReport(
        server.version, session.tag, time.perf_counter() - t0, tuple(results), swept, not_deleted
    )
    for line in report.lines():
        log(line)
    for path in not_deleted:
        log(f"probe leftover {path} could not be deleted; the next run removes it")
    return report


class ProbeRefused(StageRefused):
    """A stage refused because a probe it needs was not honoured or got no usable answer. Like every
    ``StageRefused`` it names the first missing feature and its first version in the table."""

    def __init__(self, stage: str, server_version: str, failing: Sequence[ProbeResult]) -> None:
        missing: list[Feature] = []
        for r in failing:
            if FEATURES[r.feature] not in missing:
                missing.append(FEATURES[r.feature])
        names = "; ".join(
            f"probe {r.name} ({r.feature}): {r.verdict}: {r.detail}; the server answered {_short(r.observed)}"
            + (f", a server honouring it answers {_short(r.expected)}" if r.expected else "")
            for r in failing
        )
        BenchError.__init__(
            self,
            f"stage {stage} refused by the behavioural probes on Typesense {server_version}: {names}. "
            "Nothing of the stage was written; what to do: docs/runbook.md, step 4 (the probes).",
        )
        self.stage, self.server_version, self.missing = stage, server_version, missing
        self.feature, self.first_version = missing[0].name, missing[0].first_version
        self.probes = [r.name for r in failing]


class ProbeNoAnswer(BenchError):
    """A probe the stage needs got no usable answer (error status, timeout, malformed body): the stage does
    not run, in a measurement and in a rehearsal alike, and nothing about the server's features is
    concluded (a rehearsal stops instead of recording a refusal)."""

    def __init__(self, stage: str, server_version: str, failing: Sequence[ProbeResult]) -> None:
        names = "; ".join(f"probe {r.name} ({r.feature}): no answer: {r.detail}" for r in failing)
        super().__init__(
            f"stage {stage} not run: Typesense {server_version} gave no usable answer to a probe it needs: "
            f"{names}. Nothing of the stage was written; check the server and run the command again "
            "(docs/runbook.md, step 4)."
        )
        self.stage, self.probes = stage, [r.name for r in failing]


def _short(value: Any) -> str:
    text = str(value)
    return text if len(text) <= 300 else text[:300] + "..."


@dataclass(frozen=True)
class Decision:
    """How the stage runs on this server: the plan's settings, or (rehearsal only) a declared substitute."""

    keyword_substitute: bool = False
    probes_substituted: tuple[str, ...] = ()  # the failed probes a substitute stands in for
    send_ef: bool = True  # the ef probe was honoured: the ef rule's ladder is sent
    exact_substitute: bool = False  # rehearsal: exact search may stand in for raising ef
    hyphen_rewrite: bool = False  # a hyphen probe failed: hyphens inside words become spaces in q (ph.RULE)


def hyphen_rewrite(report: ProbeReport) -> tuple[bool, list[ProbeResult]]:
    """(rewrite q, the failed hyphen probes the rewrite stands in for), in a measurement and a rehearsal
    alike (DEVIATIONS.md "Hyphens inside query words"). Read from every hyphen probe of the report, needed
    or recorded, so all German stages on one server send the same q. A probe whose search was rejected
    (hybrid search on 0.24.1) says nothing about hyphens; a failure the rewrite does not mend is left to
    refuse the stage."""
    broken = [r for r in report.results if r.name in HYPHEN_PROBES and ph.parsed_badly(r)]
    if not broken or not all(ph.rewrite_works(r) for r in broken):
        return False, []
    return True, broken


def decide(stage: StageDef, mode: Mode, report: ProbeReport) -> Decision:
    """Refuse (``ProbeRefused``; ``ProbeNoAnswer`` when a needed probe got no usable answer) or return how
    the stage runs, from the probes' verdicts."""
    failing = report.failing(stage)
    silent = [r for r in failing if r.verdict == NO_ANSWER]
    if silent:
        raise ProbeNoAnswer(stage.id, report.server_version, silent)
    hyphen, hyphen_covered = hyphen_rewrite(report)
    if mode == "measurement":
        left = [r for r in failing if r not in hyphen_covered]
        if left:
            raise ProbeRefused(stage.id, report.server_version, left)
        return Decision(probes_substituted=tuple(r.name for r in failing), hyphen_rewrite=hyphen)
    covered: list[ProbeResult] = [r for r in failing if r in hyphen_covered]
    kw = False
    if stage.id in KEYWORD_SUBSTITUTE_STAGES:
        drops = [r for r in failing if r.name in KEYWORD_SUBSTITUTE_PROBES and r.verdict == "not honoured"]
        kw = any(r.name in _CHOOSES_KEYWORD_SUBSTITUTE for r in drops)
        covered += drops if kw else []
    ef_probe, flat = report.get("ef"), report.get("flat_search_cutoff")
    exact = False
    if stage.kind == "vector" and ef_probe is not None and ef_probe.verdict == "not honoured":
        exact = flat is not None and flat.honoured
        covered += [ef_probe] if exact else []
    left = [r for r in failing if r not in covered]
    if left:
        raise ProbeRefused(stage.id, report.server_version, left)
    return Decision(
        keyword_substitute=kw,
        probes_substituted=tuple(r.name for r in covered),
        send_ef=ef_probe is None or ef_probe.honoured,
        exact_substitute=exact,
        hyphen_rewrite=hyphen,
    )
