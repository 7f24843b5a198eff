"""Small inputs of the judged-sample tests (real MIRACL-shaped ids, invented texts)."""

from __future__ import annotations

from bench.judged.selection import GroupSpec


def tiny_inputs() -> tuple[list[GroupSpec], dict[str, dict[str, int]], dict[str, str], dict[str, str]]:
    """Two groups over 6 queries: ranks 1-3 mix judged (relevant / not) and unjudged passages."""
    qrels: dict[str, dict[str, int]] = {}
    run_a: dict[str, list[str]] = {}
    run_b: dict[str, list[str]] = {}
    for i in range(6):
        q = f"q{i}"
        qrels[q] = {f"{i}#rel": 1, f"{i}#non": 0}
        run_a[q] = [f"{i}#rel", f"{i}#u1", f"{i}#non", f"{i}#u2"]
        run_b[q] = [f"{i}#u1", f"{i}#u3", f"{i}#non", f"{i}#rel"]
    groups = [GroupSpec("hybrid-71k/m-a@100", run_a), GroupSpec("hybrid-71k/m-b@100", run_b)]
    docs = {d for r in (run_a, run_b) for ds in r.values() for d in ds}
    texts = {d: f"Titel {d}\nText des Passus {d}." for d in docs}
    queries = {q: f"Frage {q}?" for q in qrels}
    return groups, qrels, queries, texts
