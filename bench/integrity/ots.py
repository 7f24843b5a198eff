"""Read and check one OpenTimestamps proof offline (opentimestamps 0.4.5).

Plan section: preamble ("timestamped with OpenTimestamps"). A proof is checked for: parseable file (magic
bytes, version, no truncation or trailing bytes), a SHA-256 file digest equal to the expected one, and its
attestations. A Bitcoin attestation is verified offline only against a committed file of block merkle roots
(``timestamps/bitcoin-merkle-roots.json``); without it, it is listed as "unchecked", never as verified.

Merkle-roots file format (JSON)::

    {"format": "bitcoin-merkle-roots/1",
     "byte_order": "display",
     "roots": {"<block height>": "<merkle root, 64 hex digits, as block explorers and bitcoind show it>"}}

"display" order is the reverse of the bytes in the block header, which is what an OTS proof commits to.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from opentimestamps.core.notary import BitcoinBlockHeaderAttestation, PendingAttestation
from opentimestamps.core.op import OpSHA256
from opentimestamps.core.serialize import (
    BadMagicError,
    BytesDeserializationContext,
    DeserializationError,
    TrailingGarbageError,
    TruncationError,
)
from opentimestamps.core.timestamp import DetachedTimestampFile, Timestamp

from bench.errors import BenchError

MERKLE_ROOTS_FORMAT = "bitcoin-merkle-roots/1"

Verdict = Literal[
    "verified",
    "bitcoin-unchecked",
    "pending",
    "not stamped",
    "empty",
    "wrong digest",
    "bitcoin mismatch",
    "corrupt",
    "orphan",
]
FAILURES: frozenset[str] = frozenset({"empty", "wrong digest", "bitcoin mismatch", "corrupt", "orphan"})


@dataclass(frozen=True)
class Attestation:
    kind: Literal["pending", "bitcoin", "other"]
    detail: str  # calendar URL, block height or the attestation's repr
    verdict: str  # "pending", "ok", "unchecked (...)", "MISMATCH (...)", "other"


@dataclass(frozen=True)
class ProofReport:
    """The verdict on one proof file for one expected SHA-256."""

    proof: str  # path as shown to the user
    expected_sha256: str
    verdict: Verdict
    detail: str
    attestations: tuple[Attestation, ...] = ()

    @property
    def failed(self) -> bool:
        return self.verdict in FAILURES


def load_merkle_roots(path: Path) -> dict[int, bytes] | None:
    """Block height -> merkle root in header byte order, or None when the file does not exist."""
    if not path.exists():
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BenchError(f"{path}: not valid JSON ({exc}); fix or remove the merkle-roots file.") from exc
    if (
        not isinstance(doc, dict)
        or doc.get("format") != MERKLE_ROOTS_FORMAT
        or doc.get("byte_order") != "display"
    ):
        raise BenchError(
            f"{path}: expected an object with format {MERKLE_ROOTS_FORMAT!r}, "
            "byte_order 'display' and 'roots'."
        )
    roots = doc.get("roots")
    if not isinstance(roots, dict):
        raise BenchError(f"{path}: 'roots' must map block heights to merkle roots.")
    out: dict[int, bytes] = {}
    for height, root in roots.items():
        if not (isinstance(height, str) and re.fullmatch(r"[0-9]+", height)):  # "²".isdigit() is True
            shown = repr(height) if len(height) <= 40 else f"{height[:40]!r}…({len(height)} characters)"
            raise BenchError(f"{path}: block height {shown} is not a non-negative integer of ASCII digits. "
                             "Fix: write each block height in decimal digits 0-9, e.g. \"840000\"")
        if not (isinstance(root, str) and re.fullmatch(r"[0-9a-f]{64}", root)):
            raise BenchError(
                f"{path}: merkle root of block {height} must be 64 lower-case hex digits, got "
                f"{str(root)[:80]!r}."
            )
        out[int(height)] = bytes.fromhex(root)[::-1]
    return out


def parse_proof(data: bytes) -> DetachedTimestampFile:
    """Deserialize a detached proof; ValueError with a readable reason when it is not a valid one."""
    try:
        return DetachedTimestampFile.deserialize(BytesDeserializationContext(data))
    except BadMagicError as exc:
        raise ValueError("not an OpenTimestamps proof (wrong magic bytes)") from exc
    except TruncationError as exc:
        raise ValueError(f"truncated proof ({exc})") from exc
    except TrailingGarbageError as exc:
        raise ValueError(f"trailing bytes after the proof ({exc})") from exc
    except DeserializationError as exc:
        raise ValueError(f"malformed proof ({type(exc).__name__}: {exc})") from exc
    except (ValueError, TypeError, KeyError, IndexError) as exc:
        raise ValueError(f"malformed proof ({type(exc).__name__}: {exc})") from exc


def walk(timestamp: Timestamp) -> Iterator[Timestamp]:
    """Every node of a timestamp tree, root first."""
    yield timestamp
    for child in timestamp.ops.values():
        yield from walk(child)


def _attestations(
    timestamp: Timestamp, roots: Mapping[int, bytes] | None
) -> tuple[tuple[Attestation, ...], int, int]:
    """Attestations, number of Bitcoin attestations verified against ``roots``, number that mismatch."""
    found: list[Attestation] = []
    ok = bad = 0
    for msg, att in sorted(timestamp.all_attestations(), key=lambda ma: repr(ma[1])):
        if isinstance(att, PendingAttestation):
            found.append(Attestation("pending", att.uri, "pending"))
        elif isinstance(att, BitcoinBlockHeaderAttestation):
            height = str(att.height)
            if roots is None:
                found.append(Attestation("bitcoin", height, "unchecked (no merkle-roots file)"))
            elif att.height not in roots:
                found.append(Attestation("bitcoin", height, "unchecked (height not in merkle-roots file)"))
            elif len(msg) == 32 and msg == roots[att.height]:
                ok += 1
                found.append(Attestation("bitcoin", height, "ok (merkle root matches)"))
            else:
                bad += 1
                found.append(Attestation("bitcoin", height, f"MISMATCH (proof commits to {msg[::-1].hex()})"))
        else:
            found.append(Attestation("other", repr(att), "other (not checked)"))
    return tuple(found), ok, bad


def check_proof(
    proof_path: Path, expected_sha256: str, *, roots: Mapping[int, bytes] | None, shown: str | None = None
) -> ProofReport:
    """The verdict on ``proof_path`` for a file whose SHA-256 should be ``expected_sha256``."""
    name = shown or str(proof_path)
    if not proof_path.exists() and not proof_path.is_symlink():
        return ProofReport(name, expected_sha256, "not stamped", "proof file absent")
    if not proof_path.is_file():  # a folder, a dangling link, a FIFO: never opened (issue 41)
        kind = "a folder" if proof_path.is_dir() else "a dangling link" if proof_path.is_symlink() else (
            "not a regular file")
        return ProofReport(name, expected_sha256, "corrupt", f"{kind} where the proof file belongs; move it "
                           "away and stamp again")
    try:
        dtf = parse_proof(proof_path.read_bytes())
    except ValueError as exc:
        return ProofReport(name, expected_sha256, "corrupt", str(exc))
    except OSError as exc:
        return ProofReport(name, expected_sha256, "corrupt", f"unreadable ({exc.strerror or exc})")
    if not isinstance(dtf.file_hash_op, OpSHA256):
        return ProofReport(
            name, expected_sha256, "wrong digest", f"proof hashes with {dtf.file_hash_op}, not SHA-256"
        )
    got = dtf.file_digest.hex()
    if got != expected_sha256:
        return ProofReport(name, expected_sha256, "wrong digest", f"proof commits to {got}")
    atts, ok, bad = _attestations(dtf.timestamp, roots)
    if bad:
        return ProofReport(
            name, expected_sha256, "bitcoin mismatch", f"{bad} Bitcoin attestation(s) mismatch", atts
        )
    if not any(a.kind in ("pending", "bitcoin") for a in atts):
        return ProofReport(
            name, expected_sha256, "empty", "proof has no pending or Bitcoin attestation", atts
        )
    if ok:
        return ProofReport(name, expected_sha256, "verified", f"{ok} Bitcoin attestation(s) verified", atts)
    if any(a.kind == "bitcoin" for a in atts):
        return ProofReport(
            name, expected_sha256, "bitcoin-unchecked", "Bitcoin attestation not checked", atts
        )
    return ProofReport(name, expected_sha256, "pending", "only pending calendar attestations", atts)
