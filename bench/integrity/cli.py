"""``bench timestamps`` and ``bench data``: thin commands over bench.integrity (plan: preamble and Data).

Exit codes: 0 success; 1 a failed check or bad input; 2 the network was needed and not reachable (nothing
written); 3 (`timestamps verify` only) nothing failed but a file has no proof yet ("not stamped").
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from bench.core.errors import BenchError
from bench.core.hints import hint
from bench.core.paths import repo_root
from bench.core.plan import RERANKING_ID_MAP_PATH
from bench.data.id_map import read_id_map
from bench.integrity import coverage, datalock, hub, lockops
from bench.integrity import timestamps as ts


@click.group()
def timestamps_group() -> None:
    """OpenTimestamps proofs of PLAN.md and of every committed version of DEVIATIONS.md."""


@timestamps_group.command("stamp")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--timeout", default=10.0, show_default=True, help="Seconds per calendar request.")
def stamp_cmd(file: str, timeout: float) -> None:
    """Submit FILE's SHA-256 to the public calendars and write its proof (needs internet; exit 2 offline).

    PLAN.md -> PLAN.md.ots; DEVIATIONS.md -> timestamps/DEVIATIONS.md/<sha256>.ots for every committed
    version without a proof; any other file -> FILE.ots. Existing proofs are never replaced."""
    root = repo_root()
    written = ts.stamp(root, file, timeout=timeout)
    if not written:
        click.echo(f"{file}: every version already has a proof; nothing to do.")
    for path in written:
        upgrade = hint("timestamps upgrade")
        click.echo(f"wrote {path.relative_to(root)} (pending; run `{upgrade}` in a few hours)")


@timestamps_group.command("upgrade")
@click.option("--timeout", default=10.0, show_default=True, help="Seconds per calendar request.")
def upgrade_cmd(timeout: float) -> None:
    """Ask the calendars to complete pending proofs (Bitcoin attestations) and rewrite upgraded proofs."""
    root = repo_root()
    proofs = ts.all_proofs(root)
    if not proofs:
        raise BenchError(
            f"{root}: no proofs to upgrade (PLAN.md.ots, timestamps/DEVIATIONS.md/*.ots).", exit_code=1
        )
    asked = unreachable = 0
    for proof in proofs:
        try:
            changed, messages, missed = ts.upgrade_proof(proof, timeout=timeout)
        except ValueError as exc:
            raise BenchError(f"{proof}: {exc}") from exc
        asked += len(messages) + (1 if changed else 0)
        unreachable += missed
        for message in messages:
            click.echo(message, err=True)
        click.echo(f"{proof.relative_to(root)}: {'upgraded' if changed else 'unchanged'}")
    if asked and unreachable == asked:
        raise BenchError(
            "no calendar could be reached; is this machine offline? Nothing was changed.", exit_code=2
        )


HEADERS_OPTION = click.option(
    "--headers",
    "header_file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Your own file of Bitcoin block headers, one 'HEIGHT HEADERHEX' a line (default: "
    "$BENCH_BITCOIN_HEADERS); only these verify a Bitcoin attestation.",
)


@timestamps_group.command("verify")
@HEADERS_OPTION
def verify_cmd(header_file: Path | None) -> None:
    """Check every proof offline: it commits to exactly that file version's SHA-256; list its attestations.

    Exit 0: all proofs present and valid, every Bitcoin attestation verified against your block headers
    (pending-only proofs included); 1: any mismatch or corrupt proof; 3: nothing failed but PLAN.md or a
    DEVIATIONS.md version is not stamped, or a Bitcoin attestation is not verified (the `ots verify`
    command to run is printed)."""
    result = ts.verify_all(repo_root(), header_file)
    rows = [("file", "proof", "verdict", "attestations / detail")]
    for row in result.rows:
        atts = "; ".join(f"{a.kind} {a.detail}: {a.verdict}" for a in row.report.attestations)
        rows.append((row.file, row.report.proof, row.report.verdict, atts or row.report.detail))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    for r in rows:
        click.echo("  ".join(c.ljust(w) for c, w in zip(r[:3], widths, strict=True)) + "  " + r[3])
    code = result.exit_code
    unverified = [r.report for r in result.rows if r.report.verdict == "bitcoin-unchecked"]
    for report in unverified:
        click.echo(f"NOT YET verified: {report.proof}: {report.detail}", err=True)
    if any(r.report.verdict == "not stamped" for r in result.rows):
        click.echo(
            f"not stamped: run `{hint('timestamps stamp PLAN.md')}` / `... DEVIATIONS.md` online.", err=True
        )
    if code == 1:
        click.echo("FAILED: at least one proof does not prove its file (see the table).", err=True)
    sys.exit(code)


@click.group()
def data_group() -> None:
    """Pinned dataset snapshots and datasets.lock (SHA-256, size and rows of every file the study reads)."""


_NAMES = click.argument("names", nargs=-1, metavar="[DATASET]...")


@data_group.command("fetch")
@_NAMES
@click.option(
    "--dry-run",
    is_flag=True,
    help="Download nothing; list per dataset the files, columns and row totals that will be required.",
)
def fetch_cmd(names: tuple[str, ...], dry_run: bool) -> None:
    """Download the plan's pinned hub snapshots (German files only) into data/hub (needs internet).

    After each download the files the loaders read are checked for presence and columns, so a layout that
    differs from bench/integrity/hub.py fails here, not hours into a measurement."""
    chosen = [hub.dataset(name) for name in names or tuple(hub.HUB_DATASETS)]
    if dry_run:
        for ds in chosen:
            for line in hub.describe(ds):
                click.echo(line)
        return
    for ds in chosen:
        target = hub.fetch(ds)
        click.echo(f"{ds.name}: {len(hub.local_files(ds))} files in {target}")
        if ds.name == "reranking-id-map":
            _check_id_map(target)


def _check_id_map(target: Path) -> None:
    """Read de.gz once: an unknown line format is reported at fetch time (the check itself stays strict)."""
    try:
        entries = read_id_map(target / RERANKING_ID_MAP_PATH)
    except BenchError as exc:
        click.echo(
            f"warning: {exc.message} `bench check-adapters --id-map corpus` maps the ids without this file.",
            err=True,
        )
        return
    click.echo(f"reranking-id-map: {len(entries)} queries read from {RERANKING_ID_MAP_PATH}")


@data_group.command("lock")
@_NAMES
def lock_cmd(names: tuple[str, ...]) -> None:
    """Add lock entries computed from the files present (bundled, fetched snapshots); never overwrites."""
    result = lockops.lock(repo_root(), names or None)
    for key in result["added"]:
        click.echo(f"added      {key}")
    for note in result.get("notes", []):
        click.echo(f"note       {note}")
    click.echo(f"{len(result['added'])} added, {len(result['unchanged'])} already locked and unchanged")


@data_group.command("verify")
@_NAMES
def verify_cmd_data(names: tuple[str, ...]) -> None:
    """Hash every locked file (or those of DATASET / entry ids) and name each missing or changed one."""
    root = repo_root()
    verified = coverage.verify(root, names or None)
    total = sum(e.size for e in verified.values())
    click.echo(f"OK: {len(verified)} files, {total:,} bytes match {root / datalock.LOCK_NAME}")


# The names bench/cli.py loads (fixed there).
timestamps = timestamps_group
data = data_group
