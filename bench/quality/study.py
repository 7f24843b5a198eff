"""The study directory and its manifest (plan sections "Quality" and "Reproducibility and licences").

Layout of a study directory (``studies/<name>/`` for the study, ``rehearsal/<utc-time>/`` for a rehearsal)::

    manifest.json        what the study is (plan hash, parameters, rules) and one entry per session
    candidates.json      SHA-256 of every frozen first-stage run (bench.quality.candidates)
    candidates/<stage>.trec
    journal.jsonl        one record per (stage, model, called depth, query) (bench.core.journal)

Run files go to a separate runs directory (``runs/`` of the repository for the study, ``<dir>/runs/`` for a
rehearsal). A resume must be the same study: the PLAN.md SHA-256 and the parameters (stages, models,
depths, per-depth models, kind) recorded at creation must match (one change is not a new study: a model
asked for but not rated then, rated since by ``bench check-adapters``, joins the study; the manifest's
``study.rated_later`` names the session and the check file with its SHA-256), and a measurement must run
the same code as the sessions before it (the code digest of ``bench.records.codeversion``: another commit with
the same code, for example one that only adds the finished run files, resumes); otherwise the resume is
refused with the reason (the code paths that differ) and the fix. Every session appends its provenance
(``bench.records.provenance.collect_manifest``), its preflight result and how it ended (``complete``,
``interrupted`` or ``failed``). A session that never recorded its end (SIGKILL, power loss) is marked ``ended
without a record (killed)`` by the next start of the study.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from analysis.core.atomic import write_json_atomic
from analysis.stats.ranking import TIE_RULE
from bench.core import clock
from bench.core.errors import BenchError
from bench.integrity.hashing import sha256_file
from bench.quality.depths import DEPTH_RULE, TAIL_SCORE_RULE
from bench.quality.timing import PERCENTILE_METHOD
from bench.records.codeversion import different_code

MANIFEST = "manifest.json"
JOURNAL = "journal.jsonl"
MANIFEST_VERSION = 1
KILLED = "ended without a record (killed)"


def read_manifest(study_dir: Path) -> dict[str, Any]:
    path = study_dir / MANIFEST
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BenchError(f"{path} not found: {study_dir} is not a study directory") from None
    except json.JSONDecodeError as exc:
        raise BenchError(
            f"{path}: not valid JSON ({exc}); the manifest is written atomically, so the file "
            "was edited or damaged. Restore it or start a new study directory."
        ) from exc
    if not isinstance(data, dict) or "study" not in data or "sessions" not in data:
        raise BenchError(f"{path}: not a study manifest (no 'study'/'sessions')")
    return data


class Study:
    """An open study directory. ``start`` creates or resumes it; ``end`` records how the session ended."""

    def __init__(self, directory: Path, manifest: dict[str, Any]) -> None:
        self.dir = directory
        self.manifest = manifest
        self.rated_later: list[str] = []  # models this session adds: rated since the study began

    def record_rated_later(self, checks: Mapping[str, Mapping[str, Any]], root: Path) -> None:
        """Record in the manifest, for every model this session adds (``rated_later``), that its adapter
        check passed after the study began: the session, the check file and its SHA-256."""
        index = len(self.manifest["sessions"]) - 1
        entries = self.manifest["study"].setdefault("rated_later", {})
        for m in self.rated_later:
            path = Path(str(checks[m]["file"]))
            rel = path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)
            entries[m] = {
                "session": index,
                "started_utc": self.session["started_utc"],
                "check_file": rel,
                "check_sha256": sha256_file(path),
                "reason": checks[m]["reason"],
            }
        self.session["rated_later"] = list(self.rated_later)
        self.save()

    @property
    def journal_path(self) -> Path:
        return self.dir / JOURNAL

    @property
    def session(self) -> dict[str, Any]:
        sessions: list[dict[str, Any]] = self.manifest["sessions"]
        return sessions[-1]

    @classmethod
    def start(
        cls,
        directory: Path,
        *,
        kind: str,
        plan_path: Path,
        params: Mapping[str, Any],
        provenance: Mapping[str, Any],
        preflight: Mapping[str, Any] | None,
        resume_only: bool = False,
        root: Path | None = None,
    ) -> Study:
        """Create ``directory`` as a new study, or resume the study in it (checks above). ``root`` is the
        checkout whose history names earlier sessions' code (default: the folder of ``plan_path``)."""
        plan_sha = sha256_file(plan_path)
        params = json.loads(json.dumps(dict(params)))  # normalise tuples -> lists for comparison
        rated_later: list[str] = []
        if (directory / MANIFEST).exists():
            manifest = read_manifest(directory)
            rated_later = _check_same_study(
                directory,
                manifest,
                kind=kind,
                plan_sha=plan_sha,
                params=params,
                provenance=provenance,
                directory_root=root if root is not None else plan_path.parent,
            )
            if rated_later:  # the study now covers them too; who was rated when is in "rated_later"
                manifest["study"]["params"] = params
        elif resume_only:
            raise BenchError(f"{directory / MANIFEST} not found: nothing to resume in {directory}")
        else:
            directory.mkdir(parents=True, exist_ok=True)
            manifest = {
                "version": MANIFEST_VERSION,
                "study": {
                    "kind": kind,
                    "created_utc": clock.utc_iso(),
                    "plan_sha256": plan_sha,
                    "params": params,
                    "depth_rule": DEPTH_RULE,
                    "tail_score_rule": TAIL_SCORE_RULE,
                    "tie_rule": TIE_RULE,
                    "percentiles": PERCENTILE_METHOD,
                    "errors_rule": "a failed call is recorded with no scores and no latency; the query is "
                    "absent from that run file and counts as 0 (missing-query policy of analysis)",
                },
                "sessions": [],
                "models": {},
                "skipped_models": {},
            }
        mark_killed_sessions(manifest)
        manifest["sessions"].append(
            {
                "started_utc": clock.utc_iso(),
                "ended_utc": None,
                "status": "running",
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "provenance": dict(provenance),
                "preflight": dict(preflight) if preflight is not None else None,
            }
        )
        study = cls(directory, manifest)
        study.rated_later = rated_later
        study.save()
        return study

    def save(self) -> None:
        write_json_atomic(self.dir / MANIFEST, self.manifest)

    def end(self, status: str, **fields: Any) -> None:
        self.session.update(ended_utc=clock.utc_iso(), status=status, **fields)
        self.save()


def _alive(pid: object) -> bool:
    if not isinstance(pid, int) or pid <= 0 or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def mark_killed_sessions(manifest: dict[str, Any]) -> list[int]:
    """Sessions still ``running`` whose process is gone (SIGKILL, power loss: no ``end`` was written) get
    status ``KILLED`` and ``marked_utc``; a session whose process still runs on this host is left alone
    (the journal's lock refuses a second writer). Returns the indices of the sessions marked."""
    marked = []
    host = socket.gethostname()
    for i, session in enumerate(manifest["sessions"]):
        if session.get("status") != "running":
            continue
        if session.get("host") == host and _alive(session.get("pid")):
            continue
        session.update(status=KILLED, marked_utc=clock.utc_iso())
        marked.append(i)
    return marked


def _check_same_study(
    directory: Path,
    manifest: Mapping[str, Any],
    *,
    kind: str,
    plan_sha: str,
    params: Mapping[str, Any],
    provenance: Mapping[str, Any],
    directory_root: Path | None,
) -> list[str]:
    """Refuse a resume that is not the same study (reasons above); returns the models rated since the
    study's parameters were recorded (``_rated_since``), empty when none."""
    study = manifest["study"]
    path = directory / MANIFEST
    if study["plan_sha256"] != plan_sha:
        raise BenchError(
            f"{path}: this study was started under another version of PLAN.md "
            f"(SHA-256 {study['plan_sha256']}, "
            f"now {plan_sha}). Its results belong to that plan; refusing to resume. Start a new study "
            "directory, or check out the plan the study was made for."
        )
    if study["kind"] != kind:
        raise BenchError(f"{path}: a {study['kind']} directory cannot be resumed as a {kind}")
    grown = _rated_since(study["params"], params)
    if grown is None and study["params"] != params:
        diff = sorted(
            k for k in set(study["params"]) | set(params) if study["params"].get(k) != params.get(k)
        )
        raise BenchError(
            f"{path}: resumed with different parameters ({', '.join(diff)}): recorded "
            f"{ {k: study['params'].get(k) for k in diff} }, now { {k: params.get(k) for k in diff} }. "
            "Resume with the recorded parameters, or start a new study directory."
        )
    if kind == "measurement":
        earlier = [s["provenance"].get("git") or {} for s in manifest["sessions"]]
        now = provenance.get("git") or {}
        why = different_code(earlier, now, directory_root)
        if why is not None:
            commits = sorted({str(g.get("commit")) for g in earlier})
            raise BenchError(
                f"{path}: earlier sessions ran other code ({why}). A study is measured by one version of "
                f"the code; check out the code of {', '.join(commits)} to resume, or start a new study "
                "directory."
            )
    return grown or []


RATED_KEYS = ("models", "per_depth", "devices", "dtypes")
"""Parameters that follow from the adapter checks (the rated models and what each one's check implies),
not from the command line. ``requested_models`` is what the command asked for."""


def _rated_since(recorded: Mapping[str, Any], params: Mapping[str, Any]) -> list[str] | None:
    """The models rated since ``recorded`` was written, when that is the only difference: the same
    command-line parameters (``requested_models`` included) and every model rated before still rated with
    the same per-depth calling, device and dtype. None when anything else differs (the caller refuses),
    or when ``recorded`` predates ``requested_models`` (compared strictly)."""
    if "requested_models" not in recorded:
        return None
    fixed = {k for k in set(recorded) | set(params) if k not in RATED_KEYS}
    if any(recorded.get(k) != params.get(k) for k in fixed):
        return None
    before, now = list(recorded.get("models") or []), list(params.get("models") or [])
    if not set(before) <= set(now) or not set(now) <= set(params["requested_models"]):
        return None
    for m in before:
        if (m in recorded.get("per_depth", [])) != (m in params.get("per_depth", [])):
            return None
        for key in ("devices", "dtypes"):
            if (recorded.get(key) or {}).get(m) != (params.get(key) or {}).get(m):
                return None
    return [m for m in now if m not in before]
