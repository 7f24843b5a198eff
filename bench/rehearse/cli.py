"""``bench rehearse``: thin command over ``bench.rehearse.run.rehearse``."""

from __future__ import annotations

from pathlib import Path

import click

from bench.core.hints import bench_command
from bench.core.interrupt import whole_command
from bench.core.liblog import library_log
from bench.core.paths import repo_root
from bench.rehearse.run import DEFAULT_MODELS, Options, new_dir
from bench.rehearse.run import rehearse as run_rehearsal

LIBRARY_LOG = "libraries.log"


@click.command("rehearse")
@click.option(
    "--dataset",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="A corpus in BEIR layout (corpus.jsonl, queries.jsonl, qrels/test.tsv) instead of the "
    "bundled MIRACL-de sample.",
)
@click.option(
    "--max-queries",
    type=click.IntRange(min=1),
    default=None,
    help="Only the first N query ids (sorted): a fast subset.",
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Rehearsal directory (default rehearsal/<utc-time>/).",
)
@click.option(
    "--resume",
    "resume_dir",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    default=None,
    help="Continue an interrupted rehearsal in this directory with its recorded settings.",
)
@click.option(
    "--port", type=click.IntRange(1, 65535), default=None, help="Typesense API port (default: a free one)."
)
@click.option(
    "--no-passage-cache",
    is_flag=True,
    help="The stand-in reranker encodes all k passages on every call (slow; honest per-call timing).",
)
@click.option(
    "--verbose",
    is_flag=True,
    help=f"Also show the model libraries' messages (transformers load reports) here; they always go to "
    f"{LIBRARY_LOG} in the rehearsal directory.",
)
def rehearse(
    dataset: Path | None,
    max_queries: int | None,
    out_dir: Path | None,
    resume_dir: Path | None,
    port: int | None,
    no_passage_cache: bool,
    verbose: bool,
) -> None:
    """Run the whole study end to end on CPU, offline, on the bundled real German sample."""
    if resume_dir is not None and (dataset is not None or max_queries is not None or out_dir is not None):
        raise click.UsageError(
            "--resume uses the recorded settings; do not combine it with --dataset, --max-queries or --out"
        )
    opts = Options(
        dataset=dataset,
        max_queries=max_queries,
        models=DEFAULT_MODELS,
        passage_cache=not no_passage_cache,
        port=port,
    )
    same = "the same command (or --resume DIR)"
    hint = bench_command("rehearse", "--resume", resume_dir) if resume_dir else same
    directory = resume_dir or out_dir or new_dir(repo_root())
    with whole_command("rehearsal", hint), library_log(directory / LIBRARY_LOG, verbose=verbose):
        run_rehearsal(directory, opts, root=repo_root(), resume=resume_dir is not None)
