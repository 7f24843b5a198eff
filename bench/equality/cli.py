"""``bench check-adapters [MODEL...]``: adapter checks 1 and 3 (plan: Adapter checks). Thin over
``bench.equality.runner``; exits non-zero if any model is not rated."""

from __future__ import annotations

from pathlib import Path

import click

from bench.errors import BenchError
from bench.plan import RERANKERS


@click.command("check-adapters")
@click.argument("models", nargs=-1, type=click.Choice(list(RERANKERS)))
@click.option("--device", default="cpu", show_default=True, help="torch device for adapters and references")
@click.option(
    "--results-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="where <model>.json go (default: results/adapter-checks)",
)
def check_adapters(models: tuple[str, ...], device: str, results_dir: Path | None) -> None:
    """Check adapters against their deciding references (check 1) and Voyage's pointwise scores (check 3).

    Without MODEL, every model of the plan. Writes results/adapter-checks/<model>.json; a model whose
    reference cannot run or that fails is "not rated" with the reason.
    """
    from bench.equality.runner import check_models, load_equality_set
    from bench.guard import preflight
    from bench.provenance import require_clean_tree

    record = preflight("measurement", lock_names=["reranking", "reranking-id-map"])
    require_clean_tree()
    data = load_equality_set()
    results = check_models(
        list(models) or list(RERANKERS), data, device=device, directory=results_dir, preflight_record=record
    )
    for r in results:
        click.echo(f"{r['model']}: {'rated' if r['rated'] else 'NOT RATED'} - {r['reason']}")
    failed = [r["model"] for r in results if not r["rated"]]
    if failed:
        raise BenchError(f"not rated: {', '.join(failed)} (reasons above and in the result files)")
