"""Golden files of `analysis report`: the report of a small fixed study
(tests/golden/study.py), report.md and every JSON it writes, compared byte for byte with the files committed
under tests/golden/report/.

A change to any output fails here, with the first differing lines. When the change is intended, regenerate
the files with the one documented command, review ``git diff tests/golden`` and commit them:

    GOLDEN_REGENERATE=1 uv run pytest tests/golden -q

That run rewrites tests/golden/report/ and then fails on purpose (a regeneration is never silent, and never
passes as a test run). The record of the analysis code that every file carries
(``analysis.reporting.codeinfo``: commit,
dirty flag, two digests) changes from commit to commit: the test asserts that each file carries a well-formed
one and compares (and stores) it as the placeholder ``PLACEHOLDER``. The PNG figures are not compared byte for
byte (their bytes depend on the Pillow or matplotlib, freetype, zlib and libpng builds): the golden folder
lists their names (figures.txt) and the test checks that exactly those are written and that each is a PNG of
the size recorded there.
"""

from __future__ import annotations

import difflib
import os
import shutil
import struct
from pathlib import Path

import pytest
from click.testing import CliRunner

from analysis.cli import cli
from analysis.reporting.codeinfo import read_record, well_formed, with_record, without_record

from .study import ARGS, build_study

GOLDEN = Path(__file__).resolve().parent / "report"
REGENERATE = os.environ.get("GOLDEN_REGENERATE") == "1"
INPUTS = {"judged/labels.json"}  # under --out, but an input of the judged section, not an output
# the analysis-code record's values vary by commit: stored and compared as this placeholder
PLACEHOLDER = {
    "analysis_digest": "<analysis digest>",
    "commit": "<commit>",
    "dirty": "<dirty>",
    "packages_digest": "<packages digest>",
}


def normalised(rel: str, data: bytes) -> bytes:
    """``data`` with its analysis-code record, asserted present and well-formed, replaced by PLACEHOLDER."""
    record = read_record(rel, data)
    assert well_formed(record), f"{rel}: no well-formed analysis-code record ({record!r})"
    return with_record(rel, without_record(rel, data), PLACEHOLDER)


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        raise AssertionError(f"{path} is not a PNG file")
    width, height = struct.unpack(">II", data[16:24])
    return width, height


@pytest.fixture(scope="module")
def produced(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = build_study(tmp_path_factory.mktemp("golden"))
    cwd = Path.cwd()
    os.chdir(root)  # inputs named relative to the study: no temporary path reaches an output
    try:
        result = CliRunner().invoke(cli, list(ARGS))
    finally:
        os.chdir(cwd)
    assert result.exit_code == 0, result.output
    assert result.output == "out/report.md\n"
    return root / "out"


def outputs(out: Path) -> tuple[dict[str, bytes], dict[str, tuple[int, int]]]:
    """(relative path -> bytes of every text output, relative path -> size of every figure)."""
    texts: dict[str, bytes] = {}
    figures: dict[str, tuple[int, int]] = {}
    for path in sorted(p for p in out.rglob("*") if p.is_file()):
        rel = path.relative_to(out).as_posix()
        if rel in INPUTS:
            continue
        if path.suffix == ".png":
            figures[rel] = png_size(path)
            assert well_formed(read_record(rel, path.read_bytes())), f"{rel}: no analysis-code record"
        else:
            texts[rel] = normalised(rel, path.read_bytes())
    return texts, figures


def figures_txt(figures: dict[str, tuple[int, int]]) -> bytes:
    return "".join(f"{rel} {w}x{h}\n" for rel, (w, h) in sorted(figures.items())).encode()


def regenerate(texts: dict[str, bytes], figures: dict[str, tuple[int, int]]) -> None:
    build = GOLDEN.with_name(GOLDEN.name + ".new")
    shutil.rmtree(build, ignore_errors=True)
    for rel, data in texts.items():
        (build / rel).parent.mkdir(parents=True, exist_ok=True)
        (build / rel).write_bytes(data)
    (build / "figures.txt").write_bytes(figures_txt(figures))
    shutil.rmtree(GOLDEN, ignore_errors=True)
    build.rename(GOLDEN)


def test_report_matches_the_golden_files(produced: Path) -> None:
    texts, figures = outputs(produced)
    assert "report.md" in texts and "quality/study.json" in texts and "costs.json" in texts
    assert {"pitfalls.json", "judged.json", "int8-quality.json"} <= set(texts)
    assert any(rel.startswith("latency-summary/") for rel in texts)
    if REGENERATE:
        regenerate(texts, figures)
        pytest.fail(
            f"GOLDEN_REGENERATE=1: rewrote {len(texts)} files and figures.txt under {GOLDEN}; "
            "review `git diff tests/golden`, commit, and run the test again without it"
        )
    assert GOLDEN.is_dir(), f"{GOLDEN} is missing: GOLDEN_REGENERATE=1 uv run pytest tests/golden makes it"
    golden = {
        p.relative_to(GOLDEN).as_posix(): p.read_bytes()
        for p in sorted(GOLDEN.rglob("*"))
        if p.is_file() and p != GOLDEN / "figures.txt"
    }
    assert sorted(texts) == sorted(golden), "the report writes other files than the golden ones"
    for rel, data in texts.items():
        if data != golden[rel]:
            diff = difflib.unified_diff(
                golden[rel].decode("utf-8", "replace").splitlines(),
                data.decode("utf-8", "replace").splitlines(),
                f"golden/{rel}",
                f"produced/{rel}",
                lineterm="",
                n=1,
            )
            pytest.fail(f"{rel} differs from tests/golden/report/{rel}:\n" + "\n".join(list(diff)[:40]))
    assert figures_txt(figures) == (GOLDEN / "figures.txt").read_bytes()


def test_no_temporary_path_reaches_an_output(produced: Path) -> None:
    texts, _ = outputs(produced)
    root = str(produced.parent)
    leaked = [rel for rel, data in texts.items() if root.encode() in data or b"/tmp/" in data]
    assert leaked == []
