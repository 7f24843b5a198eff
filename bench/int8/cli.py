"""``bench int8``: thin commands over ``bench.int8.commands`` (plan section "OpenVINO int8 variant")."""

from __future__ import annotations

import json
from pathlib import Path

import click

from bench.core.folder_options import checks_option, first_stage_option, runs_option, study_option
from bench.core.hints import bench_command
from bench.core.interrupt import whole_command
from bench.core.paths import repo_root
from bench.equality.id_map_option import id_map_option
from bench.int8 import commands
from bench.int8.commands import calibration_set as run
from bench.rerankers.openvino.manifest import default_folder


@click.group("int8")
def int8() -> None:
    """OpenVINO int8 bge-reranker-v2-m3: calibration set, quantisation, agreement across machines."""


@int8.command("calibration-set")
@click.option(
    "--out",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Default results/int8/calibration-set.json (ids and SHA-256 of the texts only).",
)
def calibration_set(out: Path | None) -> None:
    """300 pairs: MIRACL de test-B queries x full-corpus passages outside 71k, seed 20261009."""
    root = repo_root()
    target = out or root / "results" / "int8" / "calibration-set.json"
    record = run(target, root=root)
    click.echo(f"{target}: calibration set SHA-256 {record['calibration_sha256']}")


@int8.command("quantize")
@click.option(
    "--calibration",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Default results/int8/calibration-set.json.",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Default data/models/bge-v2-m3-int8 (where the bge-v2-m3-int8 adapter reads).",
)
@click.option(
    "--snapshot-dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="fp32 bge-reranker-v2-m3 snapshot (must be at the pinned revision).",
)
def quantize(calibration: Path | None, out: Path | None, snapshot_dir: Path | None) -> None:
    """Static int8 quantisation of bge-reranker-v2-m3 with OpenVINO, calibrated on the calibration set."""

    root = repo_root()
    target = out or default_folder()
    manifest = commands.quantize(
        calibration or root / "results" / "int8" / "calibration-set.json",
        target,
        root=root,
        snapshot_dir=snapshot_dir,
    )
    click.echo(
        f"{target}: {len(manifest['files'])} files, overflow fix {manifest['overflow_fix']!r}, "
        f"VNNI {manifest['cpu']['vnni']}"
    )


@int8.command("agreement")
@click.option(
    "--against",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="A committed int8 scores file from another machine.",
)
@click.option(
    "--write",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Write this machine's int8 scores file here.",
)
@click.option(
    "--int8-dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Quantised folder (default data/models/bge-v2-m3-int8).",
)
@id_map_option
@click.option(
    "--verdict",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Where the comparison's verdict goes (default results/int8/agreement.json; with --against).",
)
def agreement(
    against: Path | None, write: Path | None, int8_dir: Path | None, id_map: str, verdict: Path | None
) -> None:
    """Spearman per query (20 queries) of this machine's int8 scores against FILE; < 0.99 anywhere exits 1.

    FILE must have been made with the same quantisation configuration and inference precision."""

    result = commands.agreement(
        int8_dir or default_folder(),
        against=against,
        write=write,
        root=repo_root(),
        id_map=id_map,
        verdict=verdict,
    )
    shown = {k: v for k, v in result.items() if k not in ("per_query", "machines", "cpu_flags")}
    click.echo(json.dumps(shown, indent=1))
    if "cpu_flags" in result:
        click.echo(
            f"verdict: {'PASSED' if not result['failed'] else 'FAILED'} (min Spearman "
            f"{result['min_spearman']}, threshold {result['threshold']})"
        )
        click.echo(f"CPU here: {result['cpu_flags']['this']}")
        click.echo(f"CPU of {against}: {result['cpu_flags']['against']}")


@int8.command("quality")
@study_option("Study directory (default studies/int8-quality); resumed if it exists.")
@runs_option("Where run files go (default runs/).")
@first_stage_option()
@checks_option()
def quality(study: Path | None, runs: Path | None, first_stage: Path | None, checks: Path | None) -> None:
    """bge-v2-m3-int8 on hybrid-71k at k = 100 through the quality phase, its own run (resumable)."""

    root = repo_root()
    study_dir = study or root / "studies" / "int8-quality"

    with whole_command("int8 quality run", bench_command("int8", "quality", "--study", study_dir)):
        session = commands.quality(
            root,
            study_dir=study_dir,
            runs_dir=runs or root / "runs",
            first_stage_dir=first_stage or root / "runs" / "first-stage",
            checks_dir=checks or root / "results" / "adapter-checks",
        )
    click.echo(
        f"{session.outcome.scored} calls scored, {session.outcome.skipped} already done, "
        f"{session.outcome.errors} failed"
    )
