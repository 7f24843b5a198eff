"""Read and check one OpenTimestamps proof offline (opentimestamps 0.4.5).

Plan section: preamble ("timestamped with OpenTimestamps"). A proof is checked for: parseable file (magic
bytes, version, no truncation or trailing bytes), a SHA-256 file digest equal to the expected one, and its
attestations. A Bitcoin attestation is verified only against block headers the reviewer supplies
(``bench.integrity.headers``: a file they made from their own node); without them it is "bitcoin-unchecked"
(NOT YET, with the ``ots verify`` command that checks it against the reviewer's node), never verified. A
committed file of merkle roots (``timestamps/bitcoin-merkle-roots.json``) is the author's own data: an
attestation that matches it is shown as "checked against the repository's own file", still not verified.

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

from bench.core.errors import BenchError

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
            raise BenchError(
                f"{path}: block height {shown} is not a non-negative integer of ASCII digits. "
                'Fix: write each block height in decimal digits 0-9, e.g. "840000"'
            )
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


def ots_command(proof: str, expected_sha256: str) -> str:
    """The OpenTimestamps client's command that verifies ``proof`` against the reviewer's own bitcoind."""
    return f"ots verify -d {expected_sha256} {proof}"


def _bitcoin(
    msg: bytes, height: int, roots: Mapping[int, bytes] | None, own: Mapping[int, bytes] | None
) -> tuple[Attestation, str]:
    """One Bitcoin attestation's line and its outcome: "ok", "bad", "own" (matches the repository's own
    file only) or "unchecked"."""
    shown = msg[::-1].hex()
    if roots is not None and height in roots:
        if len(msg) == 32 and msg == roots[height]:
            return Attestation("bitcoin", str(height), "ok (merkle root of your block header)"), "ok"
        return Attestation(
            "bitcoin",
            str(height),
            f"MISMATCH (proof commits to {shown}, your block header holds {roots[height][::-1].hex()})",
        ), "bad"
    where = "no block header supplied" if roots is None else "height not in your block-header file"
    if own is not None and height in own:
        if len(msg) == 32 and msg == own[height]:
            return Attestation(
                "bitcoin",
                str(height),
                f"unchecked ({where}; checked against the "
                "repository's own file, which is not a verification)",
            ), "own"
        return Attestation(
            "bitcoin",
            str(height),
            f"MISMATCH (proof commits to {shown}; the repository's own merkle-roots file holds another root)",
        ), "bad"
    return Attestation("bitcoin", str(height), f"unchecked ({where})"), "unchecked"


def _attestations(
    timestamp: Timestamp, roots: Mapping[int, bytes] | None, own: Mapping[int, bytes] | None = None
) -> tuple[tuple[Attestation, ...], dict[str, int]]:
    """Attestations, and how many Bitcoin attestations had each outcome (see ``_bitcoin``)."""
    found: list[Attestation] = []
    outcomes = {"ok": 0, "bad": 0, "own": 0, "unchecked": 0}
    for msg, att in sorted(timestamp.all_attestations(), key=lambda ma: repr(ma[1])):
        if isinstance(att, PendingAttestation):
            found.append(Attestation("pending", att.uri, "pending"))
        elif isinstance(att, BitcoinBlockHeaderAttestation):
            line, outcome = _bitcoin(msg, att.height, roots, own)
            found.append(line)
            outcomes[outcome] += 1
        else:
            found.append(Attestation("other", repr(att), "other (not checked)"))
    return tuple(found), outcomes


def _read(proof_path: Path) -> bytes | str:
    """The proof's bytes, or why it is not a proof file (a link, a directory, unreadable)."""
    if proof_path.is_symlink():
        return "a symbolic link, not a proof file: commit the proof itself in its place"
    if not proof_path.is_file():  # never opened: a FIFO would block the reader
        kind = "a folder" if proof_path.is_dir() else "not a regular file (a FIFO or a device)"
        return f"{kind}, not a proof file: move it away and commit the proof file in its place"
    try:
        return proof_path.read_bytes()
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"


def check_proof(
    proof_path: Path,
    expected_sha256: str,
    *,
    roots: Mapping[int, bytes] | None,
    shown: str | None = None,
    own_roots: Mapping[int, bytes] | None = None,
) -> ProofReport:
    """The verdict on ``proof_path`` for a file whose SHA-256 should be ``expected_sha256``. ``roots``: merkle
    roots from the reviewer's block headers (the only ones that verify); ``own_roots``: the repository's own
    merkle-roots file (shown, never verifying)."""
    name = shown or str(proof_path)
    if not proof_path.exists() and not proof_path.is_symlink():
        return ProofReport(name, expected_sha256, "not stamped", "proof file absent")
    data = _read(proof_path)
    if isinstance(data, str):
        return ProofReport(name, expected_sha256, "corrupt", f"{name} is {data}")
    try:
        dtf = parse_proof(data)
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
    atts, n = _attestations(dtf.timestamp, roots, own_roots)
    if n["bad"]:
        return ProofReport(
            name, expected_sha256, "bitcoin mismatch", f"{n['bad']} Bitcoin attestation(s) mismatch", atts
        )
    if not any(a.kind in ("pending", "bitcoin") for a in atts):
        return ProofReport(
            name, expected_sha256, "empty", "proof has no pending or Bitcoin attestation", atts
        )
    if n["ok"]:
        detail = f"{n['ok']} Bitcoin attestation(s) verified against your block headers"
        return ProofReport(name, expected_sha256, "verified", detail, atts)
    if n["own"] or n["unchecked"]:
        own = "; matches the repository's own merkle-roots file only" if n["own"] else ""
        detail = (
            f"Bitcoin attestation not verified{own}: run `{ots_command(name, expected_sha256)}` with "
            "your own bitcoind, or pass --headers FILE"
        )
        return ProofReport(name, expected_sha256, "bitcoin-unchecked", detail, atts)
    return ProofReport(name, expected_sha256, "pending", "only pending calendar attestations", atts)
