"""The machinery of the behavioural probes (plan section "First stages"): the throwaway
collections a probe run makes on the server, the requests it sends and the answers it keeps, and the
record of one probe's verdict.

Every probe collection and stop-word set is named ``bench-probe-<host>-<pid>-<random>-<what>``: the host
(a short hash of this machine's name) and the process that made it. A probe run deletes what it made when
it ends, even on an error; one left behind by a run that was killed is deleted by the next run on the same
host once that process has ended (``sweep_probe_leftovers``). Nothing without the prefix is ever touched,
nor the leftovers of a process that still runs or of another host.

A server that answers a probe request with an error status, does not answer within ``REQUEST_TIMEOUT_S``,
or returns a body without the fields the probe reads raises ``ProbeError``: the probe's name, the request
and the server's answer, never a verdict.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import socket
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from bench.core.errors import BenchError
from bench.firststage.server import TypesenseServer

PROBE_PREFIX: Final = "bench-probe-"
REQUEST_TIMEOUT_S: Final = 10.0
ANSWER_EXCERPT: Final = 300
Verdict = Literal["honoured", "not honoured", "no answer"]
_NAME = re.compile(rf"^{re.escape(PROBE_PREFIX)}(?P<host>[0-9a-f]{{8}})-(?P<pid>\d+)-[0-9a-f]+-")


def host_tag() -> str:
    return hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]


@dataclass(frozen=True)
class ProbeResult:
    """One probe: what it asked (``requests``), the part of each answer that decides it (``observed``), what
    a server honouring the feature answers (``expected``) and the verdict."""

    name: str
    feature: str
    question: str
    requests: list[dict[str, Any]]
    observed: dict[str, Any]
    expected: dict[str, Any]
    verdict: Verdict
    detail: str

    @property
    def honoured(self) -> bool:
        return self.verdict == "honoured"

    def record(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "feature": self.feature,
            "question": self.question,
            "requests": self.requests,
            "observed": self.observed,
            "expected": self.expected,
            "verdict": self.verdict,
            "detail": self.detail,
        }


class ProbeError(BenchError):
    """A probe got no usable answer (error status, timeout, malformed body): no verdict."""

    def __init__(self, probe: str, request: Mapping[str, Any], answer: str) -> None:
        super().__init__(
            f"probe {probe}: the server gave no usable answer to {request.get('method')} "
            f"{request.get('path')}: {answer}"
        )
        self.probe = probe
        self.request = dict(request)
        self.answer = answer


def _excerpt(text: str) -> str:
    text = text.strip()
    return text if len(text) <= ANSWER_EXCERPT else text[:ANSWER_EXCERPT] + "..."


@dataclass
class ProbeSession:
    """The probe run's collections and stop-word sets on one server; ``close`` deletes them all."""

    server: TypesenseServer
    tag: str = field(
        default_factory=lambda: f"{PROBE_PREFIX}{host_tag()}-{os.getpid()}-{secrets.token_hex(3)}"
    )
    probe: str = "setup"
    feature: str = "text_search"
    collections: list[str] = field(default_factory=list)
    stopword_sets: list[str] = field(default_factory=list)
    log: list[dict[str, Any]] = field(default_factory=list)  # the current probe's requests

    def name(self, what: str) -> str:
        return f"{self.tag}-{what}"

    def start(self, probe: str, feature: str) -> None:
        self.probe, self.feature, self.log = probe, feature, []

    def send(
        self,
        method: str,
        path: str,
        *,
        json_body: Any = None,
        ok: Sequence[int] = (200, 201),
        record: Any = None,
    ) -> tuple[int, Any]:
        """One request; returns (status, parsed JSON). ``record`` is what the probe's record keeps of the
        request (default: the body); another status or a non-JSON body is a ``ProbeError``."""
        req = {"method": method, "path": path, "body": json_body if record is None else record}
        self.log.append(req)
        try:
            resp = self.server.raw(method, path, json=json_body, timeout=REQUEST_TIMEOUT_S)
        except BenchError as exc:
            raise ProbeError(self.probe, req, f"no answer ({exc.message})") from exc
        if resp.status_code not in ok:
            raise ProbeError(self.probe, req, f"{resp.status_code} {_excerpt(resp.text)}")
        try:
            return resp.status_code, resp.json() if resp.content else {}
        except json.JSONDecodeError as exc:
            raise ProbeError(
                self.probe, req, f"{resp.status_code}, not JSON: {_excerpt(resp.text)!r}"
            ) from exc

    def create(self, what: str, fields: list[dict[str, Any]]) -> dict[str, Any]:
        name = self.name(what)
        self.collections.append(name)  # before: a request that timed out may still have created it
        _, got = self.send("POST", "/collections", json_body={"name": name, "fields": fields})
        return self.shape(got, dict, "the created collection")

    def read_back(self, name: str) -> dict[str, Any]:
        _, got = self.send("GET", f"/collections/{name}")
        return self.shape(got, dict, "the collection")

    def add(self, collection: str, docs: Sequence[Mapping[str, Any]]) -> None:
        """Import ``docs`` in order (one request); every line of the answer must report success."""
        body = "\n".join(json.dumps(d, ensure_ascii=False) for d in docs).encode()
        req = {
            "method": "POST",
            "path": f"/collections/{collection}/documents/import",
            "body": f"{len(docs)} documents",
        }
        self.log.append(req)
        try:
            resp = self.server.raw(
                "POST",
                req["path"],
                params={"action": "create"},
                content=body,
                headers={"Content-Type": "text/plain"},
                timeout=REQUEST_TIMEOUT_S,
            )
        except BenchError as exc:
            raise ProbeError(self.probe, req, f"no answer ({exc.message})") from exc
        lines = resp.text.splitlines()
        try:
            good = resp.status_code == 200 and len(lines) == len(docs)
            good = good and all(json.loads(line).get("success") is True for line in lines)
        except (json.JSONDecodeError, AttributeError):
            good = False
        if not good:
            raise ProbeError(self.probe, req, f"{resp.status_code} {_excerpt(resp.text)}")

    def search(self, collection: str, params: Mapping[str, Any], *, record: Any = None) -> dict[str, Any]:
        """One search through ``/multi_search``; an error inside the answer is a ``ProbeError`` too."""
        return self.searches([(collection, params)], record=record)[0]

    def searches(
        self, items: Sequence[tuple[str, Mapping[str, Any]]], *, record: Any = None, allow_error: bool = False
    ) -> list[dict[str, Any]]:
        body = {"searches": [{"collection": c, **p} for c, p in items]}
        _, data = self.send("POST", "/multi_search", json_body=body, record=record)
        results = data.get("results") if isinstance(data, dict) else None
        if not isinstance(results, list) or len(results) != len(items):
            raise ProbeError(self.probe, self.log[-1], f"malformed answer: {_excerpt(str(data))}")
        for res in results:
            if not isinstance(res, dict):
                raise ProbeError(self.probe, self.log[-1], f"malformed answer: {_excerpt(str(data))}")
            if "error" in res and not allow_error:
                raise ProbeError(self.probe, self.log[-1], f"{res.get('code')} {res['error']}")
        return results

    def ids(self, result: Mapping[str, Any]) -> list[str]:
        return [str(h["document"]["id"]) for h in self.hits(result)]

    def hits(self, result: Mapping[str, Any]) -> list[dict[str, Any]]:
        hits = result.get("hits")
        ok = isinstance(hits, list) and all(
            isinstance(h, dict) and isinstance(h.get("document"), dict) and "id" in h["document"]
            for h in hits
        )
        if not ok:
            raise ProbeError(self.probe, self.log[-1], f"malformed answer (hits): {_excerpt(str(result))}")
        return list(hits)  # type: ignore[arg-type]

    def shape(self, value: Any, kind: type, what: str) -> Any:
        if not isinstance(value, kind):
            raise ProbeError(self.probe, self.log[-1], f"malformed answer ({what}): {_excerpt(str(value))}")
        return value

    def number(self, hit: Mapping[str, Any], *path: str) -> float:
        cur: Any = hit
        for key in path:
            cur = cur.get(key) if isinstance(cur, dict) else None
        if not isinstance(cur, int | float) or isinstance(cur, bool):
            raise ProbeError(
                self.probe, self.log[-1], f"malformed answer ({'.'.join(path)}): {_excerpt(str(hit))}"
            )
        return float(cur)

    def put_stopwords(self, what: str, words: list[str]) -> tuple[int, Any]:
        """PUT a stop-word set; a 404 (no /stopwords API: before 26.0) is returned, not raised."""
        name = self.name(what)
        self.stopword_sets.append(name)
        status, got = self.send(
            "PUT", f"/stopwords/{name}", json_body={"stopwords": words, "locale": "de"}, ok=(200, 201, 404)
        )
        if status == 404:
            self.stopword_sets.remove(name)
        return status, got

    def result(
        self,
        question: str,
        observed: dict[str, Any],
        expected: dict[str, Any],
        detail_fail: str,
        *,
        ok: bool | None = None,
    ) -> ProbeResult:
        """The verdict: ``observed == expected`` unless the probe decides (``ok``) by a rule of its own."""
        ok = observed == expected if ok is None else ok
        return ProbeResult(
            self.probe,
            self.feature,
            question,
            list(self.log),
            observed,
            expected,
            "honoured" if ok else "not honoured",
            "as expected" if ok else detail_fail,
        )

    def close(self) -> list[str]:
        """Delete everything this session made; returns what could not be deleted (said, never raised)."""
        left = []
        for name in self.collections:
            left += _delete(self.server, f"/collections/{name}")
        for name in self.stopword_sets:
            left += _delete(self.server, f"/stopwords/{name}")
        self.collections, self.stopword_sets = [], []
        return left


def _delete(server: TypesenseServer, path: str) -> list[str]:
    try:
        resp = server.raw("DELETE", path, timeout=REQUEST_TIMEOUT_S)
    except BenchError:
        return [path]
    return [] if resp.status_code in (200, 404) else [path]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_probe_leftovers(server: TypesenseServer, log: Callable[[str], None]) -> list[str]:
    """Delete the probe collections and stop-word sets a killed run on this host left behind; returns their
    names. Only names with the probe prefix, this host's tag and a process that has ended."""
    removed: list[str] = []
    for path, key in (("/collections", None), ("/stopwords", "stopwords")):
        try:
            resp = server.raw("GET", path, timeout=REQUEST_TIMEOUT_S)
            listing = resp.json() if resp.status_code == 200 else []
        except (BenchError, json.JSONDecodeError):
            continue
        items = listing.get(key, []) if key and isinstance(listing, dict) else listing
        for item in items if isinstance(items, list) else []:
            name = str(item.get("name") or item.get("id") or "") if isinstance(item, dict) else ""
            m = _NAME.match(name)
            if m is None or m["host"] != host_tag() or int(m["pid"]) == os.getpid() or _alive(int(m["pid"])):
                continue
            if not _delete(server, f"{path}/{name}"):
                removed.append(name)
                log(f"removed probe leftover {name} (its run, pid {m['pid']}, has ended)")
    return removed
