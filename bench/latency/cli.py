"""``bench latency gpu|cpu|api|first-stage``: thin commands over ``bench.latency`` (plan section "Latency").

Each command's defaults are the plan's numbers (``bench.latency.presets``); results go to
``results/latency/{published,not-published}/...`` (format: ``analysis.latency.records``). Ctrl-C discards
the unfinished block only; the same command measures it again from its warm-up.
"""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import click

from analysis.latency.records import check_name
from bench.core.folder_options import checks_option, first_stage_option, options, runs_option
from bench.core.interrupt import whole_command
from bench.core.paths import repo_root
from bench.core.plan import CPU_PRE_THREADS, STAGES
from bench.latency.api_command import ApiRequest, run_api
from bench.latency.commands import LocalRequest, run_local
from bench.latency.firststage import convert
from bench.latency.presets import PRESETS
from bench.records import provenance

DEFAULT_STAGE = "hybrid-71k"


def _label(value: str) -> str:
    try:
        return check_name(value, "--machine")
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


_common = options(
    click.option("--models", "-m", multiple=True, help="Only these model ids (default: the preset's)."),
    click.option("--k", "depths", type=int, multiple=True, help="Only these depths (default: the plan's)."),
    click.option(
        "--stage",
        type=click.Choice(sorted(STAGES)),
        default=DEFAULT_STAGE,
        show_default=True,
        help="First stage whose top-k candidates are reranked.",
    ),
    click.option(
        "--allow-busy",
        is_flag=True,
        help="Measure although the load average is above half the cores (recorded as a mark on the block).",
    ),
    click.option(
        "--allow-unrated",
        is_flag=True,
        help="Measure models without a passed adapter check; their numbers are marked not publishable.",
    ),
    click.option(
        "--out",
        "out_root",
        type=click.Path(path_type=Path, file_okay=False),
        default=None,
        help="Results folder (default results/latency).",
    ),
    first_stage_option("First-stage run files (default runs/first-stage).", dest="first_stage_dir"),
    runs_option("Quality run files for the accuracy check (default runs).", dest="runs_dir"),
    checks_option(dest="checks_dir"),
)


def _run_local(
    preset_name: str,
    machine: str,
    models: tuple[str, ...],
    depths: tuple[int, ...],
    stage: str,
    allow_busy: bool,
    allow_unrated: bool,
    out_root: Path | None,
    first_stage_dir: Path | None,
    runs_dir: Path | None,
    checks_dir: Path | None,
    interval: float,
    cpus: int | None,
) -> None:
    root = repo_root()
    req = LocalRequest(
        preset=PRESETS[preset_name],
        machine=f"{machine} ({socket.gethostname()})",
        session=_label(machine),
        root=root,
        out_root=out_root or root / "results" / "latency",
        first_stage_dir=first_stage_dir or root / "runs" / "first-stage",
        runs_dir=runs_dir or root / "runs",
        checks_dir=checks_dir or root / "results" / "adapter-checks",
        stage=stage,
        models=models,
        depths=depths,
        allow_busy=allow_busy,
        allow_unrated=allow_unrated,
        interval_s=interval,
        cpus=cpus,
    )
    with whole_command(f"bench latency {preset_name}", "the same command (finished blocks are kept)"):
        result = run_local(req)
    click.echo(f"{len(result['blocks'])} block(s) in {req.out_root}")
    for why in result["refused"].values():
        click.echo(f"refused: {why}")


@click.group("latency")
def latency() -> None:
    """Latency of the rerankers and first stages exactly as the plan's "Latency" section fixes it."""


@latency.command("gpu")
@_common
@click.option("--machine", default="desktop-rtx-5070-ti", show_default=True, help="Machine label (folder).")
@click.option(
    "--telemetry-interval",
    "interval",
    type=click.FloatRange(min=0.05),
    default=0.5,
    show_default=True,
    help="Seconds between NVML/host telemetry samples.",
)
def gpu(machine: str, interval: float, **kw: object) -> None:
    """All seven local models, 305 queries, 3 passes, k = 20, 50, 100, on CUDA with NVML telemetry."""
    _run_local("gpu", machine, interval=interval, cpus=None, **kw)  # type: ignore[arg-type]


@latency.command("cpu")
@_common
@click.option("--published", "mode", flag_value="published", help="The CPU server run (published).")
@click.option(
    "--pre-measurement", "mode", flag_value="pre", help="The desktop run pinned to 8 CPUs (never published)."
)
@click.option("--machine", default=None, help="Machine label (folder), e.g. ccx33-fsn1.")
@click.option(
    "--cpus",
    type=click.IntRange(min=1),
    default=None,
    help="Pin to this many CPUs (pre-measurement default: the plan's 8).",
)
@click.option(
    "--telemetry-interval", "interval", type=click.FloatRange(min=0.05), default=0.5, show_default=True
)
def cpu(mode: str | None, machine: str | None, cpus: int | None, interval: float, **kw: object) -> None:
    """gte-base, bge-v2-m3, jina-v3.5, qwen3-0.6b fp32 and bge-v2-m3 int8 on 100 sampled queries, k = 20
    and 100; qwen3-4b on 5 queries at k = 20."""
    if mode is None:
        raise click.UsageError(
            "say which run this is: --published (CPU server) or --pre-measurement (desktop)"
        )
    if mode == "pre":
        _run_local("cpu-pre", machine or "desktop-8t", interval=interval, cpus=cpus or CPU_PRE_THREADS, **kw)  # type: ignore[arg-type]
    else:
        _run_local("cpu", machine or "ccx33", interval=interval, cpus=cpus, **kw)  # type: ignore[arg-type]


@latency.command("api")
@_common
@click.option(
    "--training-opt-out",
    "opt_out",
    type=click.Choice(["yes", "no"]),
    default=None,
    help="Whether the Voyage account opted out of training on API data (required, no default).",
)
@click.option("--time-of-day", "label", default=None, help="Session label (default from the UTC hour).")
@click.option("--session", default=None, help="Continue this session folder (after an interruption).")
@click.option(
    "--base-url", default=None, help="API base URL (default VOYAGE_BASE_URL, else the Voyage endpoint)."
)
def api(
    opt_out: str | None,
    label: str | None,
    session: str | None,
    base_url: str | None,
    models: tuple[str, ...],
    depths: tuple[int, ...],
    stage: str,
    allow_busy: bool,
    allow_unrated: bool,
    out_root: Path | None,
    first_stage_dir: Path | None,
    runs_dir: Path | None,
    checks_dir: Path | None,
) -> None:
    """Voyage rerank-3 and rerank-3-lite, 305 queries, k = 20 and 100, full HTTP time, no warm-up."""
    root = repo_root()
    req = ApiRequest(
        opt_out=opt_out,
        label=label,
        session=session,
        base_url=base_url,
        models=models,
        depths=depths,
        stage=stage,
        allow_busy=allow_busy,
        allow_unrated=allow_unrated,
        root=root,
        out_root=out_root or root / "results" / "latency",
        first_stage_dir=first_stage_dir or root / "runs" / "first-stage",
        runs_dir=runs_dir or root / "runs",
        checks_dir=checks_dir or root / "results" / "adapter-checks",
    )
    with whole_command(
        "bench latency api", "the same command with --session <folder> (finished blocks kept)"
    ):
        written = run_api(req, stream=sys.stderr)
    click.echo(f"{len(written)} block(s) in {req.out_root}")


@latency.command("first-stage")
@click.option(
    "--records",
    "records_dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="First-stage records (default results/first-stage).",
)
@click.option(
    "--stage",
    "stages",
    type=click.Choice(sorted(STAGES)),
    multiple=True,
    help="Only these stages (default: every stage with a record).",
)
@click.option("--machine", default="desktop", show_default=True, help="Machine label (folder).")
@click.option("--out", "out_root", type=click.Path(path_type=Path, file_okay=False), default=None)
@click.option("--not-published", is_flag=True, help="Write under not-published/ (a rehearsal's records).")
def first_stage(
    records_dir: Path | None,
    stages: tuple[str, ...],
    machine: str,
    out_root: Path | None,
    not_published: bool,
) -> None:
    """Typesense query time per stage and query (client and server), from the first-stage records."""
    root = repo_root()
    out_root = out_root or root / "results" / "latency"
    kind = "measurement" if not not_published else "rehearsal"
    manifest = provenance.collect_manifest(kind=kind, root=root)
    done = convert(
        records_dir or root / "results" / "first-stage",
        out_root,
        machine=machine,
        session=_label(machine),
        published=not not_published,
        manifest=manifest,
        stages=stages,
    )
    for block, new in done:
        click.echo(f"{block.target}: {'written' if new else 'already there, kept'} ({block.relpath()})")
