"""``analysis report`` through its command line, in process, with the options most tests need."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner, Result

from analysis.cli import cli


def invoke_report(runs: Path, qrels: Path, out: Path, *extra: str) -> Result:
    """``analysis report --runs RUNS --qrels QRELS --out OUT --no-figures [EXTRA ...]``; the click result."""
    args = ["report", "--runs", str(runs), "--qrels", str(qrels), "--out", str(out), "--no-figures", *extra]
    return CliRunner().invoke(cli, args)
