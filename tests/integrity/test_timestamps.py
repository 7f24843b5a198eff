"""OpenTimestamps proofs: every verdict of `bench timestamps verify`, stamping and upgrading with fake
calendars, and the offline failure (exit 2, nothing written)."""

from __future__ import annotations

import hashlib
import json
import urllib.error
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from opentimestamps.calendar import RemoteCalendar
from opentimestamps.core.notary import BitcoinBlockHeaderAttestation, PendingAttestation
from opentimestamps.core.timestamp import Timestamp

from bench.cli import cli
from bench.core.errors import BenchError
from bench.integrity import ots, timestamps

from .conftest import CALENDAR, DEV_V1, DEV_V2, PLAN_TEXT

Factory = Callable[..., tuple[bytes, bytes | None]]
SHA_PLAN = hashlib.sha256(PLAN_TEXT.encode()).hexdigest()
SHA_V1 = hashlib.sha256(DEV_V1.encode()).hexdigest()
SHA_V2 = hashlib.sha256(DEV_V2.encode()).hexdigest()


def write_roots(root: Path, roots: dict[int, bytes]) -> None:
    doc = {
        "format": ots.MERKLE_ROOTS_FORMAT,
        "byte_order": "display",
        "roots": {str(h): r[::-1].hex() for h, r in roots.items()},
    }
    (root / "timestamps").mkdir(exist_ok=True)
    (root / timestamps.MERKLE_ROOTS).write_text(json.dumps(doc), encoding="utf-8")


def stamp_all(root: Path, proof_factory: Factory, **kw: Any) -> bytes | None:
    """Proofs for PLAN.md and both DEVIATIONS.md versions; returns the Bitcoin merkle root if any."""
    merkle = None
    for data, path in (
        (PLAN_TEXT, root / "PLAN.md.ots"),
        (DEV_V1, timestamps.deviation_proof_path(root, SHA_V1)),
        (DEV_V2, timestamps.deviation_proof_path(root, SHA_V2)),
    ):
        proof, merkle = proof_factory(data.encode(), **kw)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(proof)
    return merkle


def verify(root: Path) -> tuple[int, str, dict[str, str]]:
    result = CliRunner().invoke(cli, ["timestamps", "verify"])
    verdicts = {row.file: row.report.verdict for row in timestamps.verify_all(root).rows}
    return result.exit_code, result.output, verdicts


def test_unstamped_checkout_is_not_success(study_repo: Path) -> None:
    code, out, verdicts = verify(study_repo)
    assert code == timestamps.NOT_STAMPED_EXIT == 3
    assert verdicts["PLAN.md"] == "not stamped"
    assert sorted(verdicts.values()) == ["not stamped"] * 3
    assert SHA_V1 in out and SHA_V2 in out  # one proof name per committed version


def test_pending_proofs_pass_and_list_the_calendar(study_repo: Path, proof_factory: Factory) -> None:
    stamp_all(study_repo, proof_factory)
    code, out, verdicts = verify(study_repo)
    assert code == 0
    assert set(verdicts.values()) == {"pending"} and len(verdicts) == 3
    assert f"pending {CALENDAR}: pending" in out


def test_committed_merkle_roots_never_verify(study_repo: Path, proof_factory: Factory) -> None:
    """The repository's own merkle-roots file is the author's data; a match is shown as "checked
    against the repository's own file", never as verified (NOT YET, exit 3); a mismatch still fails."""
    merkle = stamp_all(study_repo, proof_factory, bitcoin_height=800_123)
    assert merkle is not None
    code, out, verdicts = verify(study_repo)
    assert verdicts["PLAN.md"] == "bitcoin-unchecked" and code == 3
    assert "bitcoin 800123: unchecked (no block header supplied)" in out
    assert f"ots verify -d {SHA_PLAN} PLAN.md.ots" in out
    # Each proof has its own merkle root (different digests); put PLAN's in the file only.
    plan_root = ots.parse_proof((study_repo / "PLAN.md.ots").read_bytes())
    leaf_msg = next(
        m for m, a in plan_root.timestamp.all_attestations() if isinstance(a, BitcoinBlockHeaderAttestation)
    )
    write_roots(study_repo, {800_123: leaf_msg})
    code, out, verdicts = verify(study_repo)
    assert verdicts["PLAN.md"] == "bitcoin-unchecked"
    assert "checked against the repository's own file, which is not a verification" in out
    # the deviation proofs commit to other roots at the same height: a mismatch, exit 1
    assert {v for k, v in verdicts.items() if k != "PLAN.md"} == {"bitcoin mismatch"}
    assert code == 1 and "MISMATCH" in out


def test_bitcoin_height_missing_from_roots_file_is_unchecked(
    study_repo: Path, proof_factory: Factory
) -> None:
    stamp_all(study_repo, proof_factory, bitcoin_height=5)
    write_roots(study_repo, {6: b"\x00" * 32})
    code, out, verdicts = verify(study_repo)
    assert set(verdicts.values()) == {"bitcoin-unchecked"} and code == 3
    assert "unchecked (no block header supplied)" in out


def test_wrong_digest(study_repo: Path, proof_factory: Factory) -> None:
    stamp_all(study_repo, proof_factory)
    proof, _ = proof_factory(b"another file")
    (study_repo / "PLAN.md.ots").write_bytes(proof)
    code, out, verdicts = verify(study_repo)
    assert verdicts["PLAN.md"] == "wrong digest" and code == 1
    assert hashlib.sha256(b"another file").hexdigest() in out


@pytest.mark.parametrize(
    ("mangle", "reason"),
    [
        (lambda b: b[: len(b) // 2], "truncated proof"),
        (lambda b: b[:10], "wrong magic bytes"),  # cut inside the magic: read as a bad header
        (lambda b: b"\x01" + b[1:], "wrong magic bytes"),
        (lambda b: b + b"\x00", "trailing bytes"),
        (lambda b: b"", "wrong magic bytes"),
    ],
)
def test_corrupt_proofs(
    study_repo: Path, proof_factory: Factory, mangle: Callable[[bytes], bytes], reason: str
) -> None:
    stamp_all(study_repo, proof_factory)
    path = timestamps.deviation_proof_path(study_repo, SHA_V1)
    path.write_bytes(mangle(path.read_bytes()))
    code, _out, verdicts = verify(study_repo)
    label = next(k for k in verdicts if k.startswith("DEVIATIONS.md") and verdicts[k] != "pending")
    assert verdicts[label] == "corrupt" and code == 1
    report = ots.check_proof(path, SHA_V1, roots=None)
    assert reason in report.detail


def test_proof_with_only_unknown_attestations_is_empty(tmp_path: Path) -> None:
    """The library cannot serialise a proof with no attestation at all; one whose only attestation is of an
    unknown kind proves nothing here either."""
    from opentimestamps.core.notary import UnknownAttestation
    from opentimestamps.core.op import OpSHA256
    from opentimestamps.core.serialize import BytesSerializationContext
    from opentimestamps.core.timestamp import DetachedTimestampFile

    ts = Timestamp(hashlib.sha256(b"x").digest())
    ts.attestations.add(UnknownAttestation(b"\x01" * 8, b"payload"))
    ctx = BytesSerializationContext()
    DetachedTimestampFile(OpSHA256(), ts).serialize(ctx)
    path = tmp_path / "p.ots"
    path.write_bytes(bytes(ctx.getbytes()))
    report = ots.check_proof(path, hashlib.sha256(b"x").hexdigest(), roots=None)
    assert report.verdict == "empty" and report.failed
    assert [a.kind for a in report.attestations] == ["other"]


def test_orphan_deviation_proof_fails(study_repo: Path, proof_factory: Factory) -> None:
    stamp_all(study_repo, proof_factory)
    stray, _ = proof_factory(b"an uncommitted version")
    (study_repo / timestamps.DEVIATION_PROOFS / f"{'a' * 64}.ots").write_bytes(stray)
    code, _out, verdicts = verify(study_repo)
    assert verdicts["(no version)"] == "orphan" and code == 1


def test_malformed_merkle_roots_file_is_an_error(study_repo: Path, proof_factory: Factory) -> None:
    stamp_all(study_repo, proof_factory)
    (study_repo / timestamps.MERKLE_ROOTS).write_text('{"format": "x"}', encoding="utf-8")
    with pytest.raises(BenchError, match=r"bitcoin-merkle-roots\.json"):
        timestamps.verify_all(study_repo)
    result = CliRunner().invoke(cli, ["timestamps", "verify"])
    assert result.exit_code == 1 and "bitcoin-merkle-roots.json" in result.output


# --- stamping and upgrading with fake calendars ----------------------------------------------------------


def offline_submit(self: RemoteCalendar, digest: bytes, timeout: float | None = None) -> Timestamp:
    raise urllib.error.URLError("[Errno -2] Name or service not known")


def fake_submit(self: RemoteCalendar, digest: bytes, timeout: float | None = None) -> Timestamp:
    ts = Timestamp(digest)
    ts.attestations.add(PendingAttestation(self.url.replace("pool", "calendar")))
    return ts


def test_stamp_offline_exits_2_and_writes_nothing(study_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(RemoteCalendar, "submit", offline_submit)
    before = sorted(p.relative_to(study_repo) for p in study_repo.rglob("*") if ".git" not in p.parts)
    for target in ("PLAN.md", "DEVIATIONS.md"):
        result = CliRunner().invoke(cli, ["timestamps", "stamp", target])
        assert result.exit_code == 2
        assert "offline" in result.output and "Nothing was written" in result.output
    after = sorted(p.relative_to(study_repo) for p in study_repo.rglob("*") if ".git" not in p.parts)
    assert after == before


def test_stamp_online_writes_one_proof_per_version(study_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(RemoteCalendar, "submit", fake_submit)
    assert CliRunner().invoke(cli, ["timestamps", "stamp", "PLAN.md"]).exit_code == 0
    result = CliRunner().invoke(cli, ["timestamps", "stamp", "DEVIATIONS.md"])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (study_repo / timestamps.DEVIATION_PROOFS).iterdir()) == sorted(
        [f"{SHA_V1}.ots", f"{SHA_V2}.ots"]
    )
    code, out, verdicts = verify(study_repo)
    assert code == 0 and set(verdicts.values()) == {"pending"}
    assert "https://a.calendar.opentimestamps.org" in out
    # stamping again finds nothing to do and never replaces a proof
    again = CliRunner().invoke(cli, ["timestamps", "stamp", "PLAN.md"])
    assert again.exit_code == 0 and "nothing to do" in again.output


def test_stamp_needs_two_calendars(study_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []

    def one_answers(self: RemoteCalendar, digest: bytes, timeout: float | None = None) -> Timestamp:
        calls.append(self.url)
        if len(calls) == 1:
            return fake_submit(self, digest)
        return offline_submit(self, digest)

    monkeypatch.setattr(RemoteCalendar, "submit", one_answers)
    result = CliRunner().invoke(cli, ["timestamps", "stamp", "PLAN.md"])
    assert result.exit_code == 2 and "only 1 of 4" in result.output
    assert not (study_repo / "PLAN.md.ots").exists()


def test_stamp_refuses_uncommitted_deviations(study_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(RemoteCalendar, "submit", fake_submit)
    (study_repo / "DEVIATIONS.md").write_text(DEV_V2 + "more\n", encoding="utf-8")
    result = CliRunner().invoke(cli, ["timestamps", "stamp", "DEVIATIONS.md"])
    assert result.exit_code == 1 and "uncommitted changes" in result.output


def test_upgrade_merges_the_bitcoin_attestation(
    study_repo: Path, proof_factory: Factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    stamp_all(study_repo, proof_factory)

    def completed(self: RemoteCalendar, commitment: bytes, timeout: float | None = None) -> Timestamp:
        ts = Timestamp(commitment)
        ts.attestations.add(BitcoinBlockHeaderAttestation(900_000))
        return ts

    monkeypatch.setattr(RemoteCalendar, "get_timestamp", completed)
    result = CliRunner().invoke(cli, ["timestamps", "upgrade"])
    assert result.exit_code == 0, result.output
    assert result.output.count("upgraded") == 3
    code, out, verdicts = verify(study_repo)
    assert set(verdicts.values()) == {"bitcoin-unchecked"} and "bitcoin 900000" in out and code == 3


def test_upgrade_offline_exits_2_and_changes_nothing(
    study_repo: Path, proof_factory: Factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    stamp_all(study_repo, proof_factory)
    before = (study_repo / "PLAN.md.ots").read_bytes()

    def offline(self: RemoteCalendar, commitment: bytes, timeout: float | None = None) -> Timestamp:
        raise urllib.error.URLError("no network")

    monkeypatch.setattr(RemoteCalendar, "get_timestamp", offline)
    result = CliRunner().invoke(cli, ["timestamps", "upgrade"])
    assert result.exit_code == 2 and "offline" in result.output
    assert (study_repo / "PLAN.md.ots").read_bytes() == before


def test_plan_stamp_status(study_repo: Path, proof_factory: Factory) -> None:
    assert timestamps.plan_stamp_status(study_repo)["verdict"] == "not stamped"
    stamp_all(study_repo, proof_factory)
    status = timestamps.plan_stamp_status(study_repo)
    assert status == {
        "proof": "PLAN.md.ots",
        "plan_sha256": SHA_PLAN,
        "verdict": "pending",
        "detail": "only pending calendar attestations",
    }


def test_repository_verify_runs(repo_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On this checkout: exit 0 (all proofs valid) or 3 (not stamped yet), never a failure."""
    monkeypatch.setenv("BENCH_ROOT", str(repo_root))
    result = CliRunner().invoke(cli, ["timestamps", "verify"])
    assert result.exit_code in (0, 3), result.output
    assert "PLAN.md.ots" in result.output


def test_plan_proof_is_checked_against_the_first_commit(study_repo: Path, proof_factory: Factory) -> None:
    stamp_all(study_repo, proof_factory)
    (study_repo / "PLAN.md").write_text(PLAN_TEXT + "edited\n", encoding="utf-8")
    _code, _out, verdicts = verify(study_repo)
    assert verdicts["PLAN.md"] == "pending"  # the proof still proves the committed plan
    (study_repo / "PLAN.md.ots").unlink()
    result = CliRunner().invoke(cli, ["timestamps", "stamp", "PLAN.md"])
    assert result.exit_code == 1 and "the plan is immutable" in result.output
    assert not (study_repo / "PLAN.md.ots").exists()


def test_a_root_without_the_plan_is_one_clear_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """BENCH_ROOT set to a folder that is not a checkout (a rehearsal's output folder, say): the plan's hash
    cannot be taken, and the command says which file is missing and what to do, not a FileNotFoundError."""
    folder = tmp_path / "rehearsal-out"
    folder.mkdir()
    monkeypatch.setenv("BENCH_ROOT", str(folder))
    with pytest.raises(BenchError, match=r"rehearsal-out/PLAN\.md: missing.*BENCH_ROOT=.*unset BENCH_ROOT"):
        timestamps.plan_stamp_status(folder)
    args = ["reproduce", "--bundled", "--device", "cpu", "--out", str(tmp_path / "r")]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1 and "PLAN.md: missing" in result.output and result.exception is not None
    assert "Traceback" not in result.output and not (tmp_path / "r").exists()
