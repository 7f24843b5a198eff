"""Bitcoin block headers that a reviewer supplies: the only block data that can make an attestation verified.

Plan section: preamble ("timestamped with OpenTimestamps"). An OpenTimestamps proof's Bitcoin attestation
commits to the merkle root of the block at its height; the proof is verified only when that merkle root
comes from a block header the reviewer obtained from a source they trust (their own node:
``bitcoin-cli getblockheader $(bitcoin-cli getblockhash HEIGHT) false``). The file is given with
``--headers FILE`` (``bench timestamps verify``, ``bench audit``) or the environment variable
``BENCH_BITCOIN_HEADERS``; a file committed in the repository is refused (the author could have written it).

Format: one block per line, ``HEIGHT HEADER`` with HEADER the raw 80-byte header in hex (160 digits, as
``getblockheader HASH false`` prints it); blank lines and lines starting with ``#`` are ignored. Each header
is checked for consistency with itself and its neighbours: its double SHA-256 meets the target its own
``nBits`` declares, that target is no easier than Bitcoin's proof-of-work limit, and where the file holds
two consecutive heights the later header names the earlier one's hash as its parent.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from bench.core.errors import BenchError
from bench.integrity import git

HEADERS_ENV = "BENCH_BITCOIN_HEADERS"
# Bitcoin mainnet's proof-of-work limit (the target of nBits 0x1d00ffff, difficulty 1)
POW_LIMIT = 0xFFFF << 208
_LINE = re.compile(r"^(\d+)\s+([0-9a-fA-F]{160})$")


def block_hash(header: bytes) -> bytes:
    """Double SHA-256 of an 80-byte header, in header (internal) byte order."""
    return hashlib.sha256(hashlib.sha256(header).digest()).digest()


def bits_target(bits: int) -> int:
    """The target a compact ``nBits`` value encodes."""
    exponent, mantissa = bits >> 24, bits & 0x007FFFFF
    return mantissa << (8 * (exponent - 3)) if exponent >= 3 else mantissa >> (8 * (3 - exponent))


def header_problem(header: bytes) -> str | None:
    """Why an 80-byte header is not consistent with itself (proof of work), or None."""
    target = bits_target(int.from_bytes(header[72:76], "little"))
    if target == 0 or target > POW_LIMIT:
        return f"its nBits target {target:#x} is not within Bitcoin's proof-of-work limit"
    if int.from_bytes(block_hash(header), "little") > target:
        return "its hash does not meet the target its own nBits declares (not a mined block header)"
    return None


def _refuse_committed(path: Path, root: Path) -> None:
    try:
        rel = path.resolve().relative_to(root.resolve())
    except ValueError:
        return
    if git.is_repo(root) and git.run_git(root, "ls-files", "--", str(rel)).strip():
        raise BenchError(
            f"{path}: this block-header file is committed in the repository, so its author could have "
            "written it; make your own from a node you trust and keep it outside the repository"
        )


def parse_headers(text: str, name: str) -> dict[int, bytes]:
    """Height -> header from the file's text; BenchError naming the line and the fix."""
    headers: dict[int, bytes] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = _LINE.match(line)
        if m is None:
            raise BenchError(
                f"{name} line {lineno}: expected 'HEIGHT HEADER' (HEADER: 160 hex digits, the "
                "raw 80-byte header as `bitcoin-cli getblockheader HASH false` prints it)"
            )
        height, header = int(m.group(1)), bytes.fromhex(m.group(2))
        if height in headers and headers[height] != header:
            raise BenchError(f"{name} line {lineno}: a second, different header for height {height}")
        problem = header_problem(header)
        if problem:
            raise BenchError(
                f"{name} line {lineno}: the header of height {height} is not a valid block "
                f"header: {problem}; copy it again from your node"
            )
        headers[height] = header
    for height, header in headers.items():
        parent = headers.get(height - 1)
        if parent is not None and header[4:36] != block_hash(parent):
            raise BenchError(
                f"{name}: the header of height {height} does not name the header of height "
                f"{height - 1} as its parent; the file is not one chain"
            )
    return headers


def load_merkle_roots(path: Path | None, root: Path) -> dict[int, bytes] | None:
    """Height -> merkle root (header byte order) from the reviewer's header file (``path``, else
    ``$BENCH_BITCOIN_HEADERS``), or None when none is given."""
    if path is None:
        env = os.environ.get(HEADERS_ENV, "").strip()
        path = Path(env) if env else None
    if path is None:
        return None
    if not path.is_file():
        raise BenchError(
            f"{path}: no such block-header file (--headers / {HEADERS_ENV}); give the file you made"
        )
    _refuse_committed(path, root)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BenchError(f"{path}: cannot read the block-header file ({exc})") from exc
    return {height: header[36:68] for height, header in parse_headers(text, str(path)).items()}
