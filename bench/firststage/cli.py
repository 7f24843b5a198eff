"""``bench first-stage STAGE``: one measured first stage (plan section "First stages").

Thin over ``bench.firststage.stages.run_stage``: verifies datasets.lock and the plan stamp
(``bench.guard.preflight("measurement")``), refuses uncommitted code (``bench.codeversion``), connects
to the study's Typesense (``BENCH_TYPESENSE_URL``, ``BENCH_TYPESENSE_API_KEY``; it must report version
30.2), loads the pinned hub files and writes ``runs/first-stage/<stage>.trec`` and
``results/first-stage/<stage>.json``.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from bench.firststage.definitions import STAGE_DEFS

IMAGE_ENV = "BENCH_TYPESENSE_IMAGE"  # set by compose from the image its typesense service starts (recorded)


def reported_image() -> str | None:
    """The Typesense image compose says it started (``BENCH_TYPESENSE_IMAGE``), or None outside compose.

    compose.yaml writes the image once (``x-typesense-image``) and hands it to both the typesense service
    and the bench services, so a value other than the plan's means an edited compose file: refused."""
    from bench.errors import BenchError
    from bench.plan import TYPESENSE_IMAGE

    value = os.environ.get(IMAGE_ENV) or None
    if value is not None and value != TYPESENSE_IMAGE:
        raise BenchError(
            f"{IMAGE_ENV} is {value}, but PLAN.md pins {TYPESENSE_IMAGE}: compose.yaml's x-typesense-image "
            "was changed. Restore the plan's image (or record a deviation) and restart "
            "`docker compose up -d typesense`."
        )
    return value


@click.command("first-stage")
@click.argument("stage", type=click.Choice(list(STAGE_DEFS)))
@click.option("--device", default="cuda", show_default=True, help="Device for the Arctic embeddings.")
@click.option("--batch-size", default=500, show_default=True, help="Documents per import request.")
@click.option(
    "--runs", "runs_dir", type=click.Path(path_type=Path), default=None, help="Default: <repo>/runs"
)
@click.option(
    "--results", "results_dir", type=click.Path(path_type=Path), default=None, help="Default: <repo>/results"
)
def first_stage(
    stage: str, device: str, batch_size: int, runs_dir: Path | None, results_dir: Path | None
) -> None:
    """Run one first stage against the pinned Typesense 30.2 and write its run and record."""
    from bench.codeversion import require_clean_code
    from bench.data.hub import corpus_71k_id_column, iter_corpus_full, read_corpus_71k
    from bench.data.miracl import hub_topics_and_qrels
    from bench.firststage.embed import arctic_embedder
    from bench.firststage.features import check_server
    from bench.firststage.server import external_typesense
    from bench.firststage.stages import run_stage
    from bench.guard import preflight
    from bench.integrity.hub import snapshot_dir
    from bench.paths import repo_root
    from bench.plan import CORPUS_71K, CORPUS_71K_PASSAGES, CORPUS_FULL, CORPUS_FULL_PASSAGES, MIRACL
    from bench.provenance import collect_manifest

    sdef = STAGE_DEFS[stage]
    image = reported_image()
    corpus_name = "corpus-71k" if sdef.corpus == "71k" else "corpus-full"
    guard = preflight("measurement", lock_names=["miracl", corpus_name])
    root = repo_root()
    require_clean_code(root)
    runs = runs_dir or root / "runs"
    results = results_dir or root / "results"
    with external_typesense() as server:
        check_server("measurement", server.version)
        queries, qrels_path = hub_topics_and_qrels(snapshot_dir(MIRACL))
        layout: dict[str, str] = {}
        if sdef.corpus == "71k":
            corpus = read_corpus_71k(snapshot_dir(CORPUS_71K))
            expected = CORPUS_71K_PASSAGES
            layout["corpus_71k_id_column"] = corpus_71k_id_column(snapshot_dir(CORPUS_71K))
        else:
            corpus = iter_corpus_full(snapshot_dir(CORPUS_FULL))  # type: ignore[assignment]
            expected = CORPUS_FULL_PASSAGES
        embedder = arctic_embedder(device=device) if sdef.vector else None
        manifest = collect_manifest(
            kind="first-stage",
            device=device if sdef.vector else None,
            server_version=server.version,
            extra={"preflight": guard},
        )
        result = run_stage(
            stage,
            server=server,
            corpus=corpus,
            queries=queries,
            embedder=embedder,
            mode="measurement",
            out_run=runs / "first-stage" / f"{stage}.trec",
            out_json=results / "first-stage" / f"{stage}.json",
            qrels_path=qrels_path,
            expected_passages=expected,
            batch_size=batch_size,
            extra={
                "manifest": manifest,
                "image_reported": image,
                "corpus_layout": layout,
            },
        )
    m = result.record.get("metrics", {})
    recall, ceiling = m.get("recall@100", float("nan")), m.get("ceiling", float("nan"))
    click.echo(f"{stage}: Recall@100 {recall:.4f}, ceiling {ceiling:.4f}")
    click.echo(f"wrote {result.run_path} and {result.json_path}", err=True)
