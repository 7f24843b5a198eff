"""Kill-and-resume at scale (issue 23, item 4): the importer and, separately, the server SIGKILLed at seeded
passages of a generated German corpus (``scale_corpus``), resumed, and compared with an uninterrupted import
by document count and a SHA-256 over (id, position) of every document (``bench.firststage.resume_check``).

Run: ``nice -n 10 uv run python benchmarks/bench_scale_faults.py --n 1000000 [--seed 0]``. Prints the JSON
record (with the load average before and after) and exits 1 when the collections differ.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
os.environ["PYTHONPATH"] = os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)

from bench.firststage.resume_check import agreement, run_check  # noqa: E402 (after the path set-up)


def _reference(path: Path, n: int) -> dict[str, object] | None:
    """The uninterrupted import's digest from bench_scale_keyword.py's row for ``n`` (corpus seed 0: the
    corpus spec below; --seed chooses only the kill points)."""
    if not path.exists():
        return None
    rows = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    match = [r for r in rows if r["n"] == n and r.get("seed") == 0 and "digest" in r]
    return {**match[-1]["digest"], "seconds": match[-1]["import_seconds"]} if match else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=0, help="chooses the kill points (the corpus has seed 0)")
    ap.add_argument("--batch-size", type=int, default=500)
    ap.add_argument("--out", type=Path, default=None, help="also append the record to this JSONL file")
    ap.add_argument(
        "--reference-from",
        type=Path,
        default=None,
        help="bench_scale_keyword.py's JSONL: take the uninterrupted import's digest from its row for --n "
        "(same generator and seed) instead of importing a third time; if the row is not there yet (that "
        "benchmark still running), the kill cases run first and the row is waited for",
    )
    ap.add_argument("--wait-reference-s", type=float, default=7200.0)
    a = ap.parse_args()
    reference = _reference(a.reference_from, a.n) if a.reference_from is not None else None
    load_before = [round(x, 2) for x in os.getloadavg()]
    t0 = time.perf_counter()
    rec = run_check(f"scale_corpus:corpus:{a.n}", a.n, seed=a.seed, batch=a.batch_size, reference=reference,
                    skip_reference=a.reference_from is not None)  # fmt: skip
    if "agree" not in rec:  # the reference import was still running beside us: wait for its row
        deadline = time.monotonic() + a.wait_reference_s
        while (reference := _reference(a.reference_from, a.n)) is None and time.monotonic() < deadline:
            time.sleep(10)
        if reference is None:
            raise SystemExit(f"{a.reference_from}: no reference row for n={a.n} after {a.wait_reference_s} s")
        rec = agreement(rec, {**reference, "source": f"row n={a.n} of {a.reference_from}"})
    rec.update(
        load_before=load_before,
        load_after=[round(x, 2) for x in os.getloadavg()],
        wall_seconds=round(time.perf_counter() - t0, 1),
        measured_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        machine_note="shared 2-core development machine, loaded",
    )
    text = json.dumps(rec, indent=1)
    print(text)
    if a.out is not None:
        with a.out.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(rec) + "\n")
    if not rec["agree"]:
        raise SystemExit("the resumed collections differ from the uninterrupted import")


if __name__ == "__main__":
    main()
