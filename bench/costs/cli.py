"""``bench costs passage-tokens``: the mean passage tokens of the context calculation (PLAN.md, "Costs");
``bench costs ecb-rates``: the ECB's reference-rate file for the USD-to-EUR conversion
(:mod:`bench.costs.ecb`).

Thin over :mod:`bench.costs.tokens`. Order: the Voyage tokenizer must be on this machine (else a clear
refusal, nothing else is tried), then ``bench.records.guard.preflight`` (datasets.lock, plan stamp), then the
stages' candidate texts are read and counted, and one JSON record is written atomically with its manifest.
"""

from __future__ import annotations

from pathlib import Path

import click

from analysis.core.atomic import write_json_atomic
from analysis.inputs.trec import read_run_table
from bench.core import paths
from bench.core.errors import BenchError
from bench.core.folder_options import runs_option
from bench.core.hints import hint
from bench.core.plan import RERANKED_STAGES, STAGES
from bench.core.progress import Progress
from bench.core.reads import corpus_reads
from bench.costs.ecb import ECB_URL, download_ecb_rates
from bench.costs.tokens import load_voyage_tokenizer, passage_tokens_record
from bench.quality import inputs
from bench.quality.candidates import Candidates
from bench.records import codeversion, guard, provenance


@click.group()
def costs() -> None:
    """Measuring steps of the cost section (the costs are computed by `analysis report --prices`)."""


@costs.command("passage-tokens")
@runs_option(
    "Folder with first-stage/<stage>.trec.", dest="runs_dir", default=Path("runs"), show_default=True
)
@click.option(
    "--stage",
    "stages",
    multiple=True,
    type=click.Choice(sorted(STAGES)),
    help="Repeatable; default: the plan's reranked stages.",
)
@click.option("--model", default="rerank-3", show_default=True, help="Voyage model whose tokenizer counts.")
@click.option("--revision", default=None, help="Snapshot revision, when several are on disk.")
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("results/costs/passage-tokens.json"),
    show_default=True,
)
def passage_tokens(
    runs_dir: Path, stages: tuple[str, ...], model: str, revision: str | None, out: Path
) -> None:
    """Mean Voyage-tokenizer tokens of each stage's first-stage top-100 passages."""
    tok = load_voyage_tokenizer(model, revision=revision)  # refuses before anything else when absent
    codeversion.require_clean_code(paths.repo_root())
    chosen = list(stages or RERANKED_STAGES)
    pre = guard.preflight(
        "measurement", lock_names=corpus_reads(chosen)
    )  # passages only: no topics, no other
    lists: dict[str, dict[str, tuple[str, ...]]] = {}
    shas: dict[str, str] = {}
    for stage in chosen:
        path = runs_dir / "first-stage" / f"{stage}.trec"
        if not path.is_file():
            raise BenchError(f"{path}: first-stage run missing; run `{hint(f'first-stage {stage}')}` first")
        table = read_run_table(path, allow_unknown_queries=True)
        lists[stage] = {
            q: ids[:100] for q, ids in ((q, tuple(d for d, _ in rows)) for q, rows in table.as_dict().items())
        }
        shas[stage] = table.sha256 or ""
    texts = inputs.candidate_texts(Candidates(lists, shas))
    record = passage_tokens_record(
        tok, lists, texts, shas, progress_factory=lambda label, n: Progress(label, n, "passages")
    )
    record["manifest"] = provenance.collect_manifest(kind="costs-passage-tokens", extra={"preflight": pre})
    write_json_atomic(out, record)
    for stage, rec in record["stages"].items():
        click.echo(f"{stage}: {rec['passages']:,} passages, mean {rec['mean_tokens']:.1f} tokens")
    click.echo(f"written: {out}")


@costs.command("ecb-rates")
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Folder for eurofxref-hist.csv and eurofxref-hist.json. Default: <repo>/results/costs",
)
@click.option("--url", default=None, help="Default: the ECB's own eurofxref-hist.zip.")
def ecb_rates(out_dir: Path | None, url: str | None) -> None:
    """Download the ECB's historical reference rates (needs internet) into results/costs/."""
    target = out_dir or paths.repo_root() / "results" / "costs"
    manifest = provenance.collect_manifest(kind="costs-ecb-rates")
    record = download_ecb_rates(target, url=url or ECB_URL, manifest=manifest)
    usd = record["usd"]
    click.echo(
        f"ECB USD fixings {usd['first_day']} to {usd['last_day']} ({usd['fixings']:,}); "
        f"CSV SHA-256 {record['csv']['sha256']}"
    )
    click.echo(
        f"written: {target / 'eurofxref-hist.csv'} and {target / 'eurofxref-hist.json'}; commit both "
        "(`git add results/costs/eurofxref-hist.csv results/costs/eurofxref-hist.json && git commit -m "
        "'ECB reference rates'`)",
        err=True,
    )
