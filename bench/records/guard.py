"""The checks every measuring command runs before it measures anything.

Plan sections: Data (files checked against datasets.lock at the start of every measuring command) and the
preamble (the plan is timestamped before anything is measured). The rehearsal is exempt from the stamp
requirement (it measures nothing that is published) and says so on stderr.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from bench.core.errors import BenchError
from bench.core.hints import hint
from bench.core.paths import repo_root
from bench.integrity import coverage, datalock, enforce, timestamps
from bench.integrity.hashing import sha256_file

Kind = Literal["measurement", "rehearsal"]


def require_plan_stamp(root: Path) -> dict[str, str]:
    """PLAN.md.ots must exist and commit to PLAN.md's SHA-256 (pending attestations are accepted: the
    calendar commitment already fixes the time window); BenchError otherwise."""
    status = timestamps.plan_stamp_status(root)
    if status["verdict"] == "not stamped":
        raise BenchError(
            f"{root / timestamps.PLAN_PROOF} does not exist: the plan must be timestamped before anything is "
            f"measured. Run `{hint('timestamps stamp PLAN.md')}` on a machine with internet and commit "
            "the proof."
        )
    if status["verdict"] not in ("pending", "bitcoin-unchecked", "verified"):
        raise BenchError(
            f"{root / timestamps.PLAN_PROOF} does not prove PLAN.md "
            f"({status['verdict']}: {status['detail']}); "
            f"run `{hint('timestamps verify')}` for details."
        )
    return status


def preflight(kind: Kind, *, lock_names: Iterable[str], root: Path | None = None) -> dict[str, Any]:
    """Verify datasets.lock (entries ``lock_names``: ids or dataset names, the ones the command reads, see
    ``bench.core.reads``) and, for a measurement, the plan's timestamp. Returns a dict for the manifest;
    raises BenchError on any failure."""
    if kind not in ("measurement", "rehearsal"):
        raise ValueError(f"kind must be 'measurement' or 'rehearsal', got {kind!r}")
    root = root or repo_root()
    if kind == "measurement":
        stamp = require_plan_stamp(root)
    else:
        print(
            "bench: rehearsal: exempt from the plan-stamp requirement (PLAN.md.ots is required only for "
            "measurements); datasets.lock is still verified.",
            file=sys.stderr,
        )
        stamp = {**timestamps.plan_stamp_status(root), "exempt": "rehearsal"}
    lock_path = root / datalock.LOCK_NAME
    verified = coverage.verify(root, list(lock_names), lock_path=lock_path)
    enforce.activate(root, lock_path, verified)  # data files opened later are checked against this lock
    return {
        "kind": kind,
        "datasets_lock_sha256": sha256_file(lock_path),
        "verified_entries": {k: e.sha256 for k, e in sorted(verified.items())},
        "plan_stamp": stamp,
    }
