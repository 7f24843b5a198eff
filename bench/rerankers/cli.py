"""``bench models``: fetch the pinned reranker snapshots and list which are present.

Plan section "Rerankers" (every local model at its pinned revision). ``fetch`` needs internet and
writes the Hugging Face cache layout under ``bench.paths.models_dir()``; everything else reads only
local files.
"""

from __future__ import annotations

import click

from bench.errors import BenchError
from bench.hints import hint
from bench.paths import models_dir
from bench.plan import LOCAL_RERANKERS, RERANKERS
from bench.rerankers.snapshots import fetch, resolve_snapshot


@click.group()
def models() -> None:
    """Pinned reranker snapshots: `fetch` (needs internet) and `list`."""


@models.command("fetch")
@click.argument("model_ids", nargs=-1, type=click.Choice(LOCAL_RERANKERS))
@click.option("--all", "fetch_all", is_flag=True, help="Fetch every local reranker of the plan.")
def fetch_cmd(model_ids: tuple[str, ...], fetch_all: bool) -> None:
    """Download MODEL_IDS at their pinned revisions (huggingface_hub.snapshot_download)."""
    from bench.rerankers.registry import spec_for

    ids = LOCAL_RERANKERS if fetch_all else model_ids
    if not ids:
        raise BenchError("Name at least one model (or --all). Choices: " + ", ".join(LOCAL_RERANKERS))
    for model_id in ids:
        for path in fetch(spec_for(model_id)):
            click.echo(f"{model_id}\t{path}")


@models.command("list")
def list_cmd() -> None:
    """Show, per local reranker, whether its pinned snapshot is present under the models folder."""
    from bench.rerankers.registry import spec_for

    click.echo(f"models folder: {models_dir()}")
    missing = 0
    for model_id in LOCAL_RERANKERS:
        plan = RERANKERS[model_id]
        try:
            path = resolve_snapshot(spec_for(model_id))
            status = f"present\t{path}"
        except BenchError:
            missing += 1
            status = f"missing\t{hint(f'models fetch {model_id}')}"
        click.echo(f"{model_id}\t{plan.model}@{plan.revision}\t{status}")
    click.echo(f"{len(LOCAL_RERANKERS) - missing} of {len(LOCAL_RERANKERS)} present", err=True)
