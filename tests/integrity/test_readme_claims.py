"""The README says what is true now about the timestamps (issue 9 item 11): while no proof is committed it
must not claim that the plan "is timestamped" or that timestamps "prove" anything, and it must say that
`bench timestamps verify` reports "not stamped"; the sentence about what a proof will show stays
conditional."""

from __future__ import annotations

import re
from pathlib import Path


def _text(repo_root: Path) -> str:
    return " ".join((repo_root / "README.md").read_text(encoding="utf-8").split())


def test_readme_timestamp_claims_match_the_proofs_present(repo_root: Path) -> None:
    text = _text(repo_root)
    proofs = [repo_root / "PLAN.md.ots", *sorted((repo_root / "timestamps").rglob("*.ots"))]
    if any(p.is_file() for p in proofs):
        return  # once stamped, the claims below may become true; verify then says so per file
    assert not re.search(r"\bis timestamped\b", text), "README says the plan is timestamped; no proof exists"
    assert not re.search(r"timestamps? (above )?proves?\b", text), "README says timestamps prove something"
    assert "No proof exists yet" in text
    assert 'reports every file as "not stamped" (exit 3)' in text
    assert re.search(r"Once a version of DEVIATIONS\.md is stamped .* will show", text)
