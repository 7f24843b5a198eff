"""README and the docs say what is true now about the timestamps.

While no proof is committed none of them may claim that the plan "is timestamped" or that timestamps "prove"
anything; README's status must say that `bench timestamps verify` reports "not stamped", and the sentence
about what a proof will show (in docs/reviewing.md) stays conditional."""

from __future__ import annotations

import re
from pathlib import Path


def _text(path: Path) -> str:
    return " ".join(path.read_text(encoding="utf-8").split())


def test_readme_timestamp_claims_match_the_proofs_present(repo_root: Path) -> None:
    proofs = [repo_root / "PLAN.md.ots", *sorted((repo_root / "timestamps").rglob("*.ots"))]
    if any(p.is_file() for p in proofs):
        return  # once stamped, the claims below may become true; verify then says so per file
    documents = [repo_root / "README.md", *sorted((repo_root / "docs").glob("*.md"))]
    assert len(documents) > 1
    for doc in documents:
        text = _text(doc)
        name = doc.relative_to(repo_root)
        assert not re.search(r"\bis timestamped\b", text), f"{name}: says the plan is timestamped; no proof"
        assert not re.search(r"timestamps? (above )?proves?\b", text), f"{name}: says timestamps prove"
    readme = _text(repo_root / "README.md")
    assert "No proof exists yet" in readme
    assert 'reports every file as "not stamped" (exit 3)' in readme
    reviewing = _text(repo_root / "docs" / "reviewing.md")
    assert re.search(r"Once a version of DEVIATIONS\.md is stamped .* will show", reviewing)
