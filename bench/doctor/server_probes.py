"""``bench doctor first-stages``: the running Typesense answers the behavioural probes.

The version check (``checks.typesense``) reads a number; the probes ask the server to show every feature the
first stages rely on (``bench.firststage.probes``, the same probes every ``bench first-stage`` command runs
before its stage). Each probe a plan stage needs and the server does not honour is one problem line, naming
the stages that would be refused; a probe without a usable answer is "cannot tell". The probes use a
throwaway collection that they delete; nothing of a stage is written.
"""

from __future__ import annotations

from bench.core.errors import BenchError
from bench.doctor.machine import Machine
from bench.doctor.outcome import Outcome, cannot_tell, ok, problem
from bench.firststage.definitions import STAGE_DEFS
from bench.firststage.probes import NO_ANSWER, ProbeReport, run_probes
from bench.firststage.server import KEY_ENV, URL_ENV, TypesenseServer

__all__ = ["probe_server", "typesense_probes"]

FIX = (
    "a plan stage needing it would be refused: start the plan's Typesense image "
    "(`docker compose up -d typesense`); docs/runbook.md step 4 says what to do when a probe fails"
)


def probe_server(url: str, api_key: str) -> ProbeReport:
    """Every probe against the server at ``url`` (10 s per request), quietly (the doctor prints its lines)."""
    server = TypesenseServer(url, api_key, timeout=10.0)
    try:
        return run_probes(server, None, log=lambda _line: None)
    finally:
        server.close()


def typesense_probes(m: Machine, step: str) -> list[Outcome]:
    url, key = m.env.get(URL_ENV), m.env.get(KEY_ENV)
    if not url or not key:
        return [
            cannot_tell(
                "probes",
                f"{URL_ENV} / {KEY_ENV} not set: no server to probe",
                "run in the container (compose.yaml sets both)",
            )
        ]
    try:
        report = (m.probes or probe_server)(url, key)
    except BenchError as exc:
        return [cannot_tell("probes", f"the probes could not run: {exc}", "`docker compose up -d typesense`")]
    out: list[Outcome] = []
    for r in report.results:
        needed_by = [s for s, d in STAGE_DEFS.items() if r in report.failing(d)]
        version = report.server_version
        if r.verdict == NO_ANSWER:
            out.append(
                cannot_tell(
                    f"probe {r.name}",
                    f"Typesense {version}: no usable answer, {r.detail}",
                    "check the server's log; `docker compose restart typesense`",
                )
            )
        elif needed_by:
            out.append(
                problem(
                    f"probe {r.name}",
                    f"Typesense {report.server_version} does not honour "
                    f"{r.feature} ({r.detail}); needed by {', '.join(needed_by)}",
                    FIX,
                )
            )
    if not out:
        out.append(
            ok(
                "probes",
                f"Typesense {report.server_version} honours all {len(report.results)} probes "
                f"({report.seconds:.1f} s)",
            )
        )
    return out
