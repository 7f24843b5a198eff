"""Fixtures for the integrity tests: offline-built OpenTimestamps proofs and small study checkouts."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from opentimestamps.core.notary import BitcoinBlockHeaderAttestation, PendingAttestation
from opentimestamps.core.op import OpAppend, OpSHA256
from opentimestamps.core.serialize import BytesSerializationContext
from opentimestamps.core.timestamp import DetachedTimestampFile, Timestamp

CALENDAR = "https://alice.btc.calendar.opentimestamps.org"


def build_proof(
    data: bytes, *, pending: Sequence[str] = (CALENDAR,), bitcoin_height: int | None = None
) -> tuple[bytes, bytes | None]:
    """A detached proof for ``data`` as the `ots` client shapes it (nonce, SHA-256, calendar branch), with
    pending attestations and optionally a Bitcoin attestation. Returns (proof bytes, merkle root in header
    byte order or None)."""
    ts = Timestamp(hashlib.sha256(data).digest())
    tip = ts.ops.add(OpAppend(b"\x07" * 16)).ops.add(OpSHA256())
    for uri in pending:
        tip.attestations.add(PendingAttestation(uri))
    root: bytes | None = None
    if bitcoin_height is not None:
        leaf = tip.ops.add(OpAppend(b"block-sibling")).ops.add(OpSHA256())
        leaf.attestations.add(BitcoinBlockHeaderAttestation(bitcoin_height))
        root = leaf.msg
    ctx = BytesSerializationContext()
    DetachedTimestampFile(OpSHA256(), ts).serialize(ctx)
    return bytes(ctx.getbytes()), root


@pytest.fixture
def proof_factory() -> Callable[..., tuple[bytes, bytes | None]]:
    return build_proof


PLAN_TEXT = "# A plan\n\n## Data\nbody\n"
DEV_V1 = "# Deviations from PLAN.md\n\nheader\n"
DEV_V2 = DEV_V1 + "\n## D-001: x\n- date: 2026-11-29\n"


@pytest.fixture
def study_repo(tmp_git_repo: Callable[..., Path], monkeypatch: pytest.MonkeyPatch) -> Path:
    """A checkout with PLAN.md (first commit) and two committed DEVIATIONS.md versions; BENCH_ROOT points at
    it so that the CLI works on it."""
    root = tmp_git_repo(
        [{"PLAN.md": PLAN_TEXT}, {"DEVIATIONS.md": DEV_V1}, {"DEVIATIONS.md": DEV_V2}],
        messages=["A plan", "deviations", "D-001"],
    )
    monkeypatch.setenv("BENCH_ROOT", str(root))
    return root
