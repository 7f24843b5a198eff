"""``bench models``: fetch the pinned model snapshots and list which are present.

Plan sections "Rerankers" (every local model at its pinned revision) and "First stages" (the Arctic embedder
at its pinned revision), plus the Voyage tokenizer of the context calculation (section "Costs"; no revision
pinned: the hub's current one, recorded by the snapshot folder). ``fetch`` needs internet and writes the
Hugging Face cache layout under ``bench.core.paths.models_dir()``; everything else reads only local files.
"""

from __future__ import annotations

import click

from bench.core.errors import BenchError
from bench.core.paths import model_snapshot_dir, models_dir
from bench.core.plan import LOCAL_RERANKERS, RERANKERS
from bench.rerankers.registry import spec_for
from bench.rerankers.snapshots import (
    EMBEDDER_SPEC,
    VOYAGE_TOKENIZER_ID,
    VOYAGE_TOKENIZER_REPO,
    SnapshotSpec,
    fetch,
    fetch_hint,
    fetch_voyage_tokenizer,
    present_revisions,
    resolve_snapshot,
)

#: Everything `bench models fetch` knows: the plan's local rerankers, the embedder, the Voyage tokenizer.
FETCHABLE = (*LOCAL_RERANKERS, EMBEDDER_SPEC.model_id, VOYAGE_TOKENIZER_ID)


def _spec(model_id: str) -> SnapshotSpec:
    return EMBEDDER_SPEC if model_id == EMBEDDER_SPEC.model_id else spec_for(model_id)


@click.group()
def models() -> None:
    """Pinned model snapshots (rerankers, embedder, Voyage tokenizer): `fetch` (needs internet) and `list`."""


@models.command("fetch")
@click.argument("model_ids", nargs=-1, type=click.Choice(FETCHABLE))
@click.option("--all", "fetch_all", is_flag=True, help="Fetch all of them.")
def fetch_cmd(model_ids: tuple[str, ...], fetch_all: bool) -> None:
    """Download MODEL_IDS at their pinned revisions (huggingface_hub; the Voyage tokenizer at the hub's
    current revision, which its folder and every passage-token record name)."""
    ids = FETCHABLE if fetch_all else model_ids
    if not ids:
        raise BenchError("Name at least one model (or --all). Choices: " + ", ".join(FETCHABLE))
    for model_id in ids:
        if model_id == VOYAGE_TOKENIZER_ID:
            path = fetch_voyage_tokenizer()
            click.echo(f"{model_id}\t{VOYAGE_TOKENIZER_REPO}@{path.parent.name}\t{path.parent}")
            continue
        for folder in fetch(_spec(model_id)):
            click.echo(f"{model_id}\t{folder}")


@models.command("list")
def list_cmd() -> None:
    """Show, per model, whether its pinned snapshot is present under the models folder."""
    click.echo(f"models folder: {models_dir()}")
    missing = 0
    for model_id in (*LOCAL_RERANKERS, EMBEDDER_SPEC.model_id):
        spec = _spec(model_id)
        plan = RERANKERS.get(model_id)
        pinned = f"{plan.model}@{plan.revision}" if plan is not None else f"{spec.repo}@{spec.revision}"
        try:
            status = f"present\t{resolve_snapshot(spec)}"
        except BenchError:
            missing += 1
            status = f"missing\t{fetch_hint(model_id)}"
        click.echo(f"{model_id}\t{pinned}\t{status}")
    found = [
        r
        for r in present_revisions(VOYAGE_TOKENIZER_REPO)
        if (model_snapshot_dir(VOYAGE_TOKENIZER_REPO, r) / "tokenizer.json").is_file()
    ]
    if found:
        status = f"present\t{', '.join(found)}"
    else:
        missing += 1
        status = f"missing\t{fetch_hint(VOYAGE_TOKENIZER_ID)}"
    click.echo(f"{VOYAGE_TOKENIZER_ID}\t{VOYAGE_TOKENIZER_REPO} (revision: the hub's at download)\t{status}")
    total = len(LOCAL_RERANKERS) + 2
    click.echo(f"{total - missing} of {total} present", err=True)
