"""Kill-and-resume at scale: the importer and, separately, the server SIGKILLed at seeded
passages of a generated German corpus (``scale_corpus``), resumed, and compared with an uninterrupted import
by document count and a SHA-256 over (id, position) of every document (``bench.firststage.resume_check``).

Four cases, each kept on disk in ``--state`` as ``<case>.json`` the moment it is done (a rerun with the same
``--state`` skips the cases already there, so a second attempt never redoes the uninterrupted import):

- ``corpus``: the digest the corpus itself dictates (ids in stream order; no server), a fourth witness;
- ``reference``: the uninterrupted import into a fresh server;
- ``importer``: the importer SIGKILLed at its seeded passage, a second importer resumes;
- ``server``: the server SIGKILLed at its seeded passage, the importer gives up after its back-off, the
  server restarts on the same data directory (replaying what it held), a second importer resumes.

Each case records its kill point (passage index and seconds after the importer started), the load average,
the restart and resume times, the document count and the digest. ``--parallel`` runs the pending cases as
concurrent child processes (they die with this one); figures then include each other's load. When the
three imports are on disk the comparison is printed (and appended to ``--out``); the exit status is 1 when a
resumed collection differs from the uninterrupted one, 3 when a case is still missing.

Run: ``nice -n 19 uv run python benchmarks/bench_scale_faults.py --n 1000000 --state DIR [--parallel]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
os.environ["PYTHONPATH"] = os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)

from analysis.core.atomic import write_json_atomic  # noqa: E402 (after the path set-up)
from bench.firststage import resume_check as rc  # noqa: E402

CASES = ("corpus", "reference", "importer", "server")


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def host() -> dict[str, Any]:
    cpu = next(
        (
            ln.split(":", 1)[1].strip()
            for ln in Path("/proc/cpuinfo").read_text().splitlines()
            if ln.startswith("model name")
        ),
        "",
    )
    return {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(), "nice": os.nice(0)}


def params(a: argparse.Namespace) -> dict[str, Any]:
    return {"n": a.n, "seed": a.seed, "batch_size": a.batch_size, "corpus": f"scale_corpus:corpus:{a.n}"}


def read_case(state: Path, case: str, want: dict[str, Any]) -> dict[str, Any] | None:
    path = state / f"{case}.json"
    if not path.exists():
        return None
    rec: dict[str, Any] = json.loads(path.read_text(encoding="utf-8-sig"))
    if rec.get("params") != want:
        raise SystemExit(
            f"{path}: made with {rec.get('params')}, this run asks for {want}; "
            "use another --state folder or delete the file to redo the case"
        )
    return rec


def run_case(case: str, a: argparse.Namespace) -> dict[str, Any]:
    p = params(a)
    kill_importer_at, kill_server_at = rc.kill_points(a.n, a.seed, a.batch_size)
    started, load_before, t0 = _now(), _load(), time.perf_counter()
    print(f"{_now()} case {case}: started (load {load_before})", file=sys.stderr, flush=True)
    with tempfile.TemporaryDirectory(dir=a.workdir, prefix=f"scale-faults-{case}-") as tmp:
        base = Path(tmp)
        if case == "corpus":
            result = rc.corpus_digest(p["corpus"])
        elif case == "reference":
            result = rc.reference_case(p["corpus"], a.batch_size, base)
        elif case == "importer":
            result = rc.importer_case(p["corpus"], a.batch_size, kill_importer_at, base)
        else:
            result = rc.server_case(p["corpus"], a.batch_size, kill_server_at, base)
    rec = {
        "case": case,
        "params": p,
        "result": result,
        "started_at": started,
        "finished_at": _now(),
        "wall_seconds": round(time.perf_counter() - t0, 1),
        "load_before": load_before,
        "load_after": _load(),
        "host": host(),
        "parallel": a.parallel or a.child_of is not None,
        "machine_note": "shared 2-core development machine, loaded (see load averages)",
    }
    write_json_atomic(a.state / f"{case}.json", rec)
    print(f"{_now()} case {case}: {json.dumps(rec)}", file=sys.stderr, flush=True)
    return rec


def scale_row(path: Path, n: int) -> dict[str, Any] | None:
    """The digest bench_scale_keyword.py recorded for its uninterrupted import of the same corpus (seed 0)
    under the keyword-71k schema: a cross-check from another server run."""
    rows = [json.loads(x) for x in path.read_text(encoding="utf-8-sig").splitlines() if x.strip()]
    match = [r for r in rows if r["n"] == n and r.get("seed") == 0 and "digest" in r]
    if not match:
        return None
    return {**match[-1]["digest"], "measured_at": match[-1]["measured_at"], "source": str(path)}


def compare(done: dict[str, dict[str, Any]], a: argparse.Namespace) -> dict[str, Any]:
    """Each resumed collection against every witness of the right answer: this harness's uninterrupted
    import, bench_scale_keyword.py's (``--reference-from``) and the corpus stream's own digest."""
    witnesses: dict[str, dict[str, Any]] = {}
    if "reference" in done:
        witnesses["uninterrupted import"] = done["reference"]["result"]
    if a.reference_from is not None and (row := scale_row(a.reference_from, a.n)) is not None:
        witnesses["bench_scale_keyword uninterrupted import"] = row
    if "corpus" in done:
        witnesses["corpus stream"] = done["corpus"]["result"]
    out: dict[str, Any] = {"params": params(a), "witnesses": witnesses}
    for case in ("importer", "server"):
        got = done[case]["result"]
        out[case] = {
            **got,
            "matches": {
                name: got["documents"] == w["documents"] == a.n
                and got["id_position_sha256"] == w["id_position_sha256"]
                for name, w in witnesses.items()
            },
        }
    digests = {w["id_position_sha256"] for w in witnesses.values()}
    out["witnesses_agree"] = len(digests) == 1 and all(w["documents"] == a.n for w in witnesses.values())
    out["agree"] = out["witnesses_agree"] and all(
        all(out[c]["matches"].values()) for c in ("importer", "server")
    )
    out["missing"] = [c for c in CASES if c not in done]
    out["cases"] = {c: {k: v for k, v in r.items() if k != "result"} for c, r in done.items()}
    out["compared_at"] = _now()
    return out


def summary(cmp: dict[str, Any]) -> str:
    lines = []
    for name, w in cmp["witnesses"].items():
        secs = f", import {w['import_seconds']:,.0f} s" if "import_seconds" in w else ""
        lines.append(f"witness {name}: {w['documents']:,} documents, {w['id_position_sha256']}{secs}")
    for case, what in (("importer", "importer SIGKILLed"), ("server", "server SIGKILLed")):
        r = cmp[case]
        extra = (
            f"restart {r['restart_loaded_seconds']:,.0f} s "
            f"(healthy after {r['restart_healthy_seconds']:,.0f} s, "
            f"{r['documents_after_restart']:,} documents back), "
            if case == "server"
            else ""
        )
        lines.append(
            f"{what} at passage {r['kill_passage']:,} "
            f"({r['kill_after_start_s']:,.0f} s after the importer started, "
            f"load {r['load_at_kill'][0]}): {r['checkpoint_at_kill']:,} in the checkpoint, "
            f"{r['documents_at_kill']:,} in the collection; {extra}resumed from {r['resumed_from']:,}, "
            f"{r['resume_passages']:,} passages in {r['resume_import_seconds']:,.0f} s; "
            f"{r['documents']:,} documents, {r['id_position_sha256']}; matches {r['matches']}"
        )
    if cmp["missing"]:
        lines.append(f"cases not run: {cmp['missing']}")
    lines.append(f"agree: {cmp['agree']}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=0, help="chooses the kill points (the corpus has seed 0)")
    ap.add_argument("--batch-size", type=int, default=500)
    ap.add_argument("--state", type=Path, required=True, help="folder where each finished case is kept")
    ap.add_argument("--cases", default=",".join(CASES), help=f"a subset of {','.join(CASES)}")
    ap.add_argument("--parallel", action="store_true", help="run the pending cases as concurrent children")
    ap.add_argument("--workdir", type=Path, default=None, help="where the data directories go")
    ap.add_argument("--out", type=Path, default=None, help="append the comparison to this JSONL file")
    ap.add_argument(
        "--reference-from",
        type=Path,
        default=None,
        help="bench_scale_keyword.py's JSONL: its row for --n adds that run's digest as a further witness",
    )
    ap.add_argument("--child-of", type=int, default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    cases = [c.strip() for c in a.cases.split(",") if c.strip()]
    if bad := [c for c in cases if c not in CASES]:
        raise SystemExit(f"--cases: unknown {bad}; choose from {','.join(CASES)}")
    if a.child_of is not None:  # a --parallel child: die with the parent (its server dies with us)
        from bench.firststage.launcher import set_parent_death_signal

        set_parent_death_signal(signal.SIGTERM)
        if os.getppid() != a.child_of:
            raise SystemExit("parent gone")
    a.state.mkdir(parents=True, exist_ok=True)
    want = params(a)
    kill_importer_at, kill_server_at = rc.kill_points(a.n, a.seed, a.batch_size)
    print(
        f"{_now()} n={a.n:,} seed={a.seed}: importer killed at passage {kill_importer_at:,}, "
        f"server killed at passage {kill_server_at:,}; state {a.state}",
        file=sys.stderr,
        flush=True,
    )
    pending = [c for c in cases if read_case(a.state, c, want) is None]
    if a.parallel and len(pending) > 1:
        base = [sys.executable, str(Path(__file__).resolve()), "--n", str(a.n), "--seed", str(a.seed)]
        base += ["--batch-size", str(a.batch_size), "--state", str(a.state), "--child-of", str(os.getpid())]
        if a.workdir is not None:
            base += ["--workdir", str(a.workdir)]
        procs = {c: subprocess.Popen([*base, "--cases", c]) for c in pending}
        try:
            codes = {c: p.wait() for c, p in procs.items()}
        finally:
            for p in procs.values():
                if p.poll() is None:
                    p.terminate()
        if failed := {c: code for c, code in codes.items() if code != 0}:
            print(f"cases failed (exit status): {failed}", file=sys.stderr, flush=True)
    else:
        for c in pending:
            run_case(c, a)
    if a.child_of is not None:
        return
    done = {c: r for c in CASES if (r := read_case(a.state, c, want)) is not None}
    if missing := [c for c in ("importer", "server") if c not in done]:
        print(f"not compared yet: {missing} missing in {a.state} (rerun with the same --state)")
        raise SystemExit(3)
    if "reference" not in done and a.reference_from is None:
        print(f"not compared yet: no uninterrupted import in {a.state} and no --reference-from")
        raise SystemExit(3)
    cmp = compare(done, a)
    print(json.dumps(cmp, indent=1))
    print(summary(cmp))
    if a.out is not None:
        with a.out.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(cmp) + "\n")
    if not cmp["agree"]:
        raise SystemExit("the resumed collections differ from the uninterrupted import")


if __name__ == "__main__":
    main()
