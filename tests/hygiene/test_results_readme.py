"""results/README.md names the paths the code writes (its latency layout had drifted
from the code's): the latency block path, the phases' run folders under results/ and the verdict files."""

from __future__ import annotations

import re

from analysis.latency.records import block_relpath
from bench.core.paths import DTYPE_CHECK_DIR, RUN_FOLDERS
from tests.conftest import REPO_ROOT

README = (REPO_ROOT / "results" / "README.md").read_text(encoding="utf-8")
PATHS = {p.replace("\\|", "|") for p in re.findall(r"^\| `([^`]+)`", README, flags=re.M)} | {
    p.replace("\\|", "|") for p in re.findall(r", `([^`]+)` \|", README)
}


def _template(path: str) -> str:
    return (
        path.replace("/gpu/", "/<kind>/")
        .replace("/S/", "/<session>/")
        .replace("/T/", "/<target>/")
        .replace("k20-pass1", "k<k>-pass<p>")
    )


def test_latency_layout_is_the_codes() -> None:
    written = {
        _template(
            "latency/"
            + block_relpath(published=p, kind="gpu", session="S", target="T", k=20, pass_=1).as_posix()
        )
        for p in (True, False)
    }
    assert written == {
        "latency/published/<kind>/<session>/<target>/k<k>-pass<p>.json",
        "latency/not-published/<kind>/<session>/<target>/k<k>-pass<p>.json",
    }
    assert "latency/<published|not-published>/<kind>/<session>/<target>/k<k>-pass<p>.json" in PATHS


def test_run_folders_under_results_are_documented() -> None:
    for name, folder in RUN_FOLDERS.items():
        if not folder.startswith("results/"):
            continue
        rel = folder.removeprefix("results/")
        if name.startswith("dtype-check"):
            assert rel.startswith(DTYPE_CHECK_DIR.removeprefix("results/") + "/")
            rel = rel.replace("/cpu-fp32/", "/<cpu-fp32|gpu>/").replace("/gpu/", "/<cpu-fp32|gpu>/")
        assert any(p.startswith(rel + "/") for p in PATHS), (name, rel, sorted(PATHS))
    assert {"determinism/verdicts.json", "dtype-check/verdicts.json"} <= PATHS


def test_every_file_of_the_report_is_documented() -> None:
    """What ``analysis report`` owns under results/ is listed by its name (D-025 named ``int8/quality.json``
    while the report writes ``int8-quality.json``; D-035 corrects the entry)."""
    from analysis.reporting.report import REPORT_ENTRIES, SECTIONS

    owned = {*REPORT_ENTRIES, *(e for s in SECTIONS for e in s.entries)} - {"quality", "figures"}
    assert owned == {
        "report.md",
        "latency-summary",
        "costs.json",
        "pitfalls.json",
        "judged.json",
        "int8-quality.json",
    }
    for entry in owned:
        assert any(p == entry or p.startswith(entry + "/") for p in PATHS), entry
