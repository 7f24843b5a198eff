"""``bench first-stage STAGE``: one measured first stage (plan section "First stages").

Thin over ``bench.firststage.stages.run_stage``: verifies datasets.lock and the plan stamp
(``bench.records.guard.preflight("measurement")``), refuses uncommitted code (``bench.records.codeversion``),
connects to the study's Typesense (``BENCH_TYPESENSE_URL``, ``BENCH_TYPESENSE_API_KEY``; it must report
version 30.2), asks it the stage's behavioural probes (``bench.firststage.probes``; a failed one refuses the
stage before anything is loaded or sent), loads the pinned hub files and writes
``runs/first-stage/<stage>.trec`` and ``results/first-stage/<stage>.json``. keyword-full first predicts server
memory, disk and import time from the fitted scale model (``bench.firststage.preflight``) and refuses when
they exceed this machine, unless ``--ignore-preflight``; ``--dry-run`` prints the prediction only (offline).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import click

import bench.firststage.preflight as preflight_mod
import bench.records.guard as guard_mod
from bench.core import paths, plan
from bench.core.errors import BenchError
from bench.core.folder_options import runs_option
from bench.core.paths import cache_dir
from bench.core.plan import CORPUS_71K, CORPUS_FULL, CORPUS_FULL_PASSAGES, MIRACL, TYPESENSE_IMAGE
from bench.data import hub as data_hub
from bench.data.hub import corpus_71k_id_column
from bench.data.miracl import hub_topics_and_qrels
from bench.data.order import SORT_DIR_NAME, full_corpus_in_import_order
from bench.firststage import features, probes, stages
from bench.firststage.definitions import STAGE_DEFS
from bench.firststage.embed import arctic_embedder
from bench.firststage.preflight import check
from bench.firststage.server import external_typesense
from bench.integrity import hub as integrity_hub
from bench.records import codeversion, provenance

if TYPE_CHECKING:
    from bench.data import Passage

IMAGE_ENV = "BENCH_TYPESENSE_IMAGE"  # set by compose from the image its typesense service starts (recorded)


def reported_image() -> str | None:
    """The Typesense image compose says it started (``BENCH_TYPESENSE_IMAGE``), or None outside compose.

    compose.yaml writes the image once (``x-typesense-image``) and hands it to both the typesense service
    and the bench services, so a value other than the plan's means an edited compose file: refused."""
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
@runs_option("Default: <repo>/runs", dest="runs_dir")
@click.option(
    "--results", "results_dir", type=click.Path(path_type=Path), default=None, help="Default: <repo>/results"
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="keyword-full only: print the predicted server memory, disk and import time against this machine "
    "(offline; exit 1 if the run would be refused) and stop.",
)
@click.option(
    "--ignore-preflight",
    is_flag=True,
    help="keyword-full only: run even when the prediction exceeds this machine (recorded in the result).",
)
def first_stage(
    stage: str,
    device: str,
    batch_size: int,
    runs_dir: Path | None,
    results_dir: Path | None,
    dry_run: bool,
    ignore_preflight: bool,
) -> None:
    """Run one first stage against the pinned Typesense 30.2 and write its run and record."""
    if (dry_run or ignore_preflight) and stage != "keyword-full":
        raise BenchError("--dry-run and --ignore-preflight apply to keyword-full only (the full corpus)")
    if dry_run:
        _dry_run()
        return

    sdef = STAGE_DEFS[stage]
    image = reported_image()
    corpus_name = "corpus-71k" if sdef.corpus == "71k" else "corpus-full"
    guard = guard_mod.preflight("measurement", lock_names=["miracl", corpus_name])
    # keyword-full: before anything is sent to the server
    scale_check = _scale_check(ignore_preflight) if stage == "keyword-full" else None
    root = paths.repo_root()
    codeversion.require_clean_code(root)
    runs = runs_dir or root / "runs"
    results = results_dir or root / "results"
    with external_typesense() as server:
        features.check_server("measurement", server.version)
        # the behavioural probes before the data and the embedder are loaded: a refusal costs seconds
        report = probes.run_probes(server, sdef)
        probes.decide(sdef, "measurement", report.for_stage(sdef))
        queries, qrels_path = hub_topics_and_qrels(integrity_hub.snapshot_dir(MIRACL))
        corpus, expected, layout = _corpus(sdef.corpus)
        embedder = arctic_embedder(device=device) if sdef.vector else None
        manifest = provenance.collect_manifest(
            kind="first-stage",
            device=device if sdef.vector else None,
            server_version=server.version,
            extra={"preflight": guard},
        )
        extra = {
            "manifest": manifest,
            "image_reported": image,
            "corpus_layout": layout,
            "scale_preflight": scale_check,
        }
        result = stages.run_stage(
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
            extra=extra,
            probes=report,
        )
    m = result.record.get("metrics", {})
    recall, ceiling = m.get("recall@100", float("nan")), m.get("ceiling", float("nan"))
    click.echo(f"{stage}: Recall@100 {recall:.4f}, ceiling {ceiling:.4f}")
    click.echo(f"wrote {result.run_path} and {result.json_path}", err=True)


def _dry_run() -> None:
    """keyword-full's predicted server memory, disk and import time on this machine; exit 1 if refused."""
    prediction = preflight_mod.keyword_full_prediction()
    click.echo(prediction.text())
    if prediction.problems:
        click.echo("would refuse: " + "; ".join(prediction.problems), err=True)
        raise SystemExit(1)
    click.echo("would run: the prediction fits this machine")


def _scale_check(ignore_preflight: bool) -> dict[str, object]:
    """keyword-full's scale preflight (refuses unless ``--ignore-preflight``), recorded with the result."""
    scale_check: dict[str, object]
    try:
        prediction = preflight_mod.keyword_full_prediction()
    except BenchError:
        if not ignore_preflight:
            raise
        scale_check = {"ignored": True, "prediction": None, "reason": "no prediction (fit missing)"}
    else:
        scale_check = check(prediction, ignore=ignore_preflight)
    click.echo(f"preflight: {'ignored' if ignore_preflight else 'passed'}", err=True)
    return scale_check


def _corpus(corpus: str) -> tuple[Iterable[Passage], int, dict[str, object]]:
    """The stage's corpus from the pinned hub files, in import order, its expected size and its layout."""
    if corpus == "71k":
        passages = data_hub.read_corpus_71k(integrity_hub.snapshot_dir(CORPUS_71K))
        id_column = corpus_71k_id_column(integrity_hub.snapshot_dir(CORPUS_71K))
        return passages, plan.CORPUS_71K_PASSAGES, {"corpus_71k_id_column": id_column}

    snapshot = integrity_hub.snapshot_dir(CORPUS_FULL)
    ordered, order_info = full_corpus_in_import_order(snapshot, cache_dir() / SORT_DIR_NAME)
    return ordered, CORPUS_FULL_PASSAGES, {"corpus_full_import_order": order_info}
