"""Where the study's OpenTimestamps proofs live, and the three operations on them: stamp, upgrade, verify.

Plan section: preamble. Layout (repository root):

- ``PLAN.md.ots`` commits to the SHA-256 of PLAN.md (which never changes after the first commit);
- ``timestamps/DEVIATIONS.md/<sha256>.ots`` for every committed version of DEVIATIONS.md, named by the
  SHA-256 of that version, so old versions stay provable;
- ``timestamps/analysis-code.json.ots`` for ``timestamps/analysis-code.json``, the analysis code's record
  (``analysis code-digest``, runbook step 1), when that file exists;
- ``timestamps/bitcoin-merkle-roots.json`` (optional): the author's own list of block merkle roots. An
  attestation that matches it is shown as "checked against the repository's own file", never as verified:
  only block headers the reviewer supplies (``--headers FILE`` or ``$BENCH_BITCOIN_HEADERS``, see
  ``bench.integrity.headers``) verify, or the OpenTimestamps client against the reviewer's own node.

Stamping and upgrading talk to the public calendars over HTTP; verifying is offline. Every version of
DEVIATIONS.md is read from every commit of the history, merges included; a shallow clone is refused.
"""

from __future__ import annotations

import hashlib
import os
import urllib.error
from dataclasses import dataclass, field
from pathlib import Path

from opentimestamps.calendar import DEFAULT_AGGREGATORS, DEFAULT_CALENDAR_WHITELIST, RemoteCalendar
from opentimestamps.core.notary import PendingAttestation
from opentimestamps.core.op import OpAppend, OpSHA256
from opentimestamps.core.serialize import BytesSerializationContext
from opentimestamps.core.timestamp import DetachedTimestampFile, Timestamp

from analysis.core.atomic import write_bytes_atomic
from bench.core.errors import BenchError
from bench.core.hints import hint
from bench.integrity import git, headers
from bench.integrity.ots import FAILURES, ProofReport, check_proof, load_merkle_roots, parse_proof, walk

PLAN = "PLAN.md"
DEVIATIONS = "DEVIATIONS.md"
PLAN_PROOF = "PLAN.md.ots"
DEVIATION_PROOFS = Path("timestamps") / DEVIATIONS
MERKLE_ROOTS = Path("timestamps") / "bitcoin-merkle-roots.json"
ANALYSIS_CODE = Path("timestamps") / "analysis-code.json"  # `analysis code-digest`'s record (runbook step 1)
CALENDARS: tuple[str, ...] = tuple(DEFAULT_AGGREGATORS)
MIN_CALENDARS = 2  # as the `ots` client: a proof from one calendar alone is too easy to lose
OFFLINE_EXIT = 2
NOT_STAMPED_EXIT = 3  # `verify`: nothing failed, but a file has no proof yet or no verified attestation
USER_AGENT = "miracl-de-rerankers bench (python-opentimestamps)"


def plan_bytes(root: Path) -> bytes:
    """PLAN.md as committed in the repository's first commit (the plan), or the file itself outside git."""
    if git.is_repo(root) and git.head_commit(root) is not None:
        first = git.first_commit(root)
        if PLAN in git.commit_files(root, first):
            return git.show_file(root, first, PLAN)
    try:
        return (root / PLAN).read_bytes()
    except FileNotFoundError:
        env = os.environ.get("BENCH_ROOT")
        where = f"BENCH_ROOT={env} is not the repository's root" if env else "not the repository's root"
        raise BenchError(
            f"{root / PLAN}: missing, so the plan it measures against is unknown ({where}); run bench from a "
            "checkout of the study (a rehearsal's output folder is not one), or unset BENCH_ROOT"
        ) from None


def deviation_proof_path(root: Path, sha256: str) -> Path:
    return root / DEVIATION_PROOFS / f"{sha256}.ots"


@dataclass(frozen=True)
class Row:
    """One line of the verify table."""

    file: str  # e.g. "PLAN.md" or "DEVIATIONS.md @ c27589f (2026-11-29)"
    report: ProofReport


@dataclass
class VerifyResult:
    rows: list[Row] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        verdicts = {r.report.verdict for r in self.rows}
        if verdicts & FAILURES:
            return 1
        if verdicts & {"not stamped", "bitcoin-unchecked"}:  # an unverified attestation is not a pass
            return NOT_STAMPED_EXIT
        return 0


def verify_all(root: Path, header_file: Path | None = None) -> VerifyResult:
    """Check PLAN.md.ots and the proof of every version of DEVIATIONS.md in any commit of the history.
    ``header_file``: the reviewer's block headers (default ``$BENCH_BITCOIN_HEADERS``)."""
    roots = headers.load_merkle_roots(header_file, root)
    own = load_merkle_roots(root / MERKLE_ROOTS)
    result = VerifyResult()
    plan_sha = hashlib.sha256(plan_bytes(root)).hexdigest()
    result.rows.append(
        Row(PLAN, check_proof(root / PLAN_PROOF, plan_sha, roots=roots, own_roots=own, shown=PLAN_PROOF))
    )
    expected: set[str] = set()
    for version in git.file_versions(root, DEVIATIONS):
        sha = hashlib.sha256(version.data).hexdigest()
        expected.add(sha)
        proof = deviation_proof_path(root, sha)
        label = f"{DEVIATIONS} @ {version.commit[:7]} ({version.date[:10]})"
        shown = str(proof.relative_to(root))
        result.rows.append(Row(label, check_proof(proof, sha, roots=roots, own_roots=own, shown=shown)))
    code = root / ANALYSIS_CODE
    if code.is_file() and not code.is_symlink():  # the analysis code's record, stamped before step 4
        sha = hashlib.sha256(code.read_bytes()).hexdigest()
        code_proof = f"{ANALYSIS_CODE}.ots"
        report = check_proof(root / code_proof, sha, roots=roots, own_roots=own, shown=code_proof)
        result.rows.append(Row(str(ANALYSIS_CODE), report))
    proof_dir = root / DEVIATION_PROOFS
    if proof_dir.is_dir():
        for proof in sorted(proof_dir.iterdir()):
            if proof.name.removesuffix(".ots") not in expected:
                shown = str(proof.relative_to(root))
                report = ProofReport(
                    shown, "", "orphan", "no committed DEVIATIONS.md version has this SHA-256"
                )
                result.rows.append(Row("(no version)", report))
    return result


def plan_stamp_status(root: Path) -> dict[str, str]:
    """PLAN.md's stamp for manifests and the measurement guard: proof path, plan SHA-256, verdict, detail."""
    plan_sha = hashlib.sha256(plan_bytes(root)).hexdigest()
    roots = headers.load_merkle_roots(None, root)
    own = load_merkle_roots(root / MERKLE_ROOTS)
    report = check_proof(root / PLAN_PROOF, plan_sha, roots=roots, own_roots=own, shown=PLAN_PROOF)
    return {"proof": PLAN_PROOF, "plan_sha256": plan_sha, "verdict": report.verdict, "detail": report.detail}


def _serialize(dtf: DetachedTimestampFile) -> bytes:
    ctx = BytesSerializationContext()
    dtf.serialize(ctx)
    return bytes(ctx.getbytes())


def _write_atomic(path: Path, data: bytes) -> None:
    write_bytes_atomic(path, data)


def stamp_digest(
    digest: bytes,
    *,
    calendars: tuple[str, ...] = CALENDARS,
    min_ok: int = MIN_CALENDARS,
    timeout: float = 10.0,
) -> tuple[DetachedTimestampFile, list[str]]:
    """A new proof for a SHA-256 digest, submitted to ``calendars`` (a random nonce hides the digest, as
    the ``ots`` client does). BenchError with exit code 2 when fewer than ``min_ok`` calendars answer."""
    dtf = DetachedTimestampFile(OpSHA256(), Timestamp(digest))
    tip = dtf.timestamp.ops.add(OpAppend(os.urandom(16))).ops.add(OpSHA256())
    answered: list[str] = []
    errors: list[str] = []
    for url in calendars:
        try:
            tip.merge(RemoteCalendar(url, user_agent=USER_AGENT).submit(tip.msg, timeout=timeout))
            answered.append(url)
        except Exception as exc:  # any network or calendar failure counts as "did not answer"
            errors.append(f"{url}: {type(exc).__name__}: {exc}")
    if len(answered) < min_ok:
        raise BenchError(
            f"only {len(answered)} of {len(calendars)} OpenTimestamps calendars answered (need {min_ok}); "
            f"is this machine offline? Nothing was written. Run `{hint('timestamps stamp')}` on a "
            "machine with internet.\n  " + "\n  ".join(errors),
            exit_code=OFFLINE_EXIT,
        )
    return dtf, answered


def stamp_targets(root: Path, file: str) -> list[tuple[bytes, Path]]:
    """(digest, proof path) for what ``stamp FILE`` must stamp that has no proof yet."""
    rel = Path(file).resolve().relative_to(root.resolve()) if Path(file).is_absolute() else Path(file)
    if str(rel) == PLAN:
        data = plan_bytes(root)
        if (root / PLAN).read_bytes() != data:
            raise BenchError(f"{root / PLAN} differs from the first commit's PLAN.md; the plan is immutable.")
        digest = hashlib.sha256(data).digest()
        return [] if (root / PLAN_PROOF).exists() else [(digest, root / PLAN_PROOF)]
    if str(rel) == DEVIATIONS:
        versions = git.file_versions(root, DEVIATIONS)
        if not versions:
            raise BenchError(f"{DEVIATIONS} has no committed version in {root}; commit it, then stamp.")
        head = (root / DEVIATIONS).read_bytes()
        if head != versions[-1].data:
            raise BenchError(f"{root / DEVIATIONS} has uncommitted changes; commit them first, then stamp.")
        targets: list[tuple[bytes, Path]] = []
        for v in versions:
            digest = hashlib.sha256(v.data).digest()
            proof = deviation_proof_path(root, digest.hex())
            if not proof.exists() and all(p != proof for _, p in targets):
                targets.append((digest, proof))
        return targets
    path = root / rel
    if not path.is_file():
        raise BenchError(f"{path}: no such file to stamp.")
    proof = path.with_name(path.name + ".ots")
    return [] if proof.exists() else [(hashlib.sha256(path.read_bytes()).digest(), proof)]


def stamp(root: Path, file: str, **kwargs: object) -> list[Path]:
    """Stamp ``file``: PLAN.md, DEVIATIONS.md (every committed version without proof) or any file (FILE.ots).
    All digests are submitted before anything is written, so a failure writes nothing."""
    targets = stamp_targets(root, file)
    made = [(stamp_digest(digest, **kwargs)[0], proof) for digest, proof in targets]  # type: ignore[arg-type]
    for dtf, proof in made:
        _write_atomic(proof, _serialize(dtf))
    return [proof for _, proof in made]


def all_proofs(root: Path) -> list[Path]:
    proofs = [root / PLAN_PROOF] if (root / PLAN_PROOF).exists() else []
    if (root / f"{ANALYSIS_CODE}.ots").is_file():
        proofs.append(root / f"{ANALYSIS_CODE}.ots")
    if (root / DEVIATION_PROOFS).is_dir():
        proofs += sorted((root / DEVIATION_PROOFS).glob("*.ots"))
    return proofs


def upgrade_proof(path: Path, *, timeout: float = 10.0) -> tuple[bool, list[str], int]:
    """Ask each pending attestation's calendar for the completed timestamp and merge it in.

    Returns (changed, messages, number of calendars that could not be reached); ValueError for a proof that
    is a link or not a regular file."""
    if path.is_symlink() or not path.is_file():
        raise ValueError("not a regular proof file (a link or a directory): replace it with the proof itself")
    dtf = parse_proof(path.read_bytes())
    changed = False
    messages: list[str] = []
    unreachable = 0
    for node in list(walk(dtf.timestamp)):
        for att in [a for a in node.attestations if isinstance(a, PendingAttestation)]:
            if att.uri not in DEFAULT_CALENDAR_WHITELIST:
                messages.append(f"{path.name}: skipped calendar {att.uri} (not in the default whitelist)")
                continue
            try:
                upgraded = RemoteCalendar(att.uri, user_agent=USER_AGENT).get_timestamp(
                    node.msg, timeout=timeout
                )
            except KeyError as exc:  # CommitmentNotFoundError: the calendar has not committed it yet
                messages.append(f"{path.name}: {att.uri}: not yet in a block ({exc})")
                continue
            except (urllib.error.URLError, OSError, TimeoutError) as exc:
                unreachable += 1
                messages.append(f"{path.name}: {att.uri}: unreachable ({exc})")
                continue
            before = _serialize(dtf)
            node.merge(upgraded)
            changed = changed or _serialize(dtf) != before
    if changed:
        _write_atomic(path, _serialize(dtf))
    return changed, messages, unreachable
