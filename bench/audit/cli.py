"""``bench audit``: thin command over ``bench.audit.run.audit``."""

from __future__ import annotations

import time
from pathlib import Path

import click

from bench.audit.rows import exit_code, format_table
from bench.audit.run import audit as run_audit
from bench.paths import repo_root


@click.command("audit")
@click.option("--qrels", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="Qrels for recomputing results (default: found by the SHA-256 that results/quality/"
              "study.json records, among the datasets.lock files and runs/).")  # fmt: skip
@click.option("--verbose", is_flag=True, help="Every detail line of every row (default: the first 20).")
def audit(qrels: Path | None, verbose: bool) -> None:
    """Can I trust this repository? One table: OK / NOT YET / FAIL per check (no GPU, no network).

    Exit 0: every row OK; 1: a row failed; 3: nothing failed, but something is not done yet (e.g. not
    stamped, no study run committed)."""
    t0 = time.perf_counter()
    rows = run_audit(repo_root(), qrels=qrels)
    click.echo(format_table(rows, max_details=10**9 if verbose else 20))
    code = exit_code(rows)
    words = {0: "all checks OK", 1: "a check FAILED", 3: "nothing failed; something is NOT YET done"}
    click.echo(f"\n{words[code]} (exit {code}; {time.perf_counter() - t0:.1f} s)")
    raise SystemExit(code)
