"""``bench check-adapters [MODEL...]``: adapter checks 1 and 3 (plan: Adapter checks). Thin over
``bench.equality.runner``; exits non-zero if any model is not rated."""

from __future__ import annotations

from pathlib import Path

import click

from bench.core import paths
from bench.core.errors import BenchError
from bench.core.folder_options import checks_option
from bench.core.hints import hint
from bench.core.plan import RERANKERS
from bench.equality import runner
from bench.equality.id_map_option import id_map_option
from bench.equality.results import SCORING_DEVICE, device_kind
from bench.equality.runner import TORCH_DTYPES, check_models, id_map_lock_names, resolve_id_map_method
from bench.records import codeversion, guard


def require_cuda_for_checks(device: str, cuda: object | None = None) -> None:
    """Refuse a CUDA check where CUDA is not usable, before anything is read or written."""
    if cuda is None:
        try:
            # lazy: torch is heavy and is needed only here
            import torch
        except ModuleNotFoundError:
            message = "CUDA requested but torch is not installed; run `uv sync` on the GPU machine."
            raise BenchError(message) from None
        cuda = torch.cuda
    if not cuda.is_available():  # type: ignore[attr-defined]
        raise BenchError(
            f"--device {device}: torch.cuda.is_available() is False on this machine. The checks run on the "
            f"device the scores are produced on (bench quality: cuda): run `{hint('check-adapters')}` on the "
            "GPU desktop; for CPU scoring (bench latency cpu) pass --device cpu."
        )


@click.command("check-adapters")
@click.argument("models", nargs=-1, type=click.Choice(list(RERANKERS)))
@click.option(
    "--device",
    default=SCORING_DEVICE,
    show_default=True,
    help="torch device for adapters and references: the one the scores will be produced on (bench quality: "
    "cuda; --device cpu for bench latency cpu)",
)
@click.option(
    "--dtype",
    type=click.Choice(TORCH_DTYPES),
    default=None,
    help="default: the adapter's choice on the device, as bench quality makes it (vendor dtype on CUDA, "
    "float32 on the CPU)",
)
@checks_option("where <model>.json go (default: results/adapter-checks)", dest="results_dir")
@id_map_option
def check_adapters(
    models: tuple[str, ...], device: str, dtype: str | None, results_dir: Path | None, id_map: str
) -> None:
    """Check adapters against their deciding references (check 1) and Voyage's pointwise scores (check 3).

    Without MODEL, every model of the plan. Writes results/adapter-checks/<model>.json (another device or
    dtype than bench quality's default: <model>@<device>-<dtype>.json), each recording the device and
    dtype it ran with; a model whose reference cannot run or that fails is "not rated" with the reason.
    """
    if device_kind(device) == "cuda":
        require_cuda_for_checks(device)
    method = resolve_id_map_method(id_map)
    record = guard.preflight("measurement", lock_names=id_map_lock_names(method))
    codeversion.require_clean_code(paths.repo_root())
    data = runner.load_equality_set(id_map_method=method)
    results = check_models(
        list(models) or list(RERANKERS),
        data,
        device=device,
        dtype=dtype,
        directory=results_dir,
        preflight_record=record,
    )
    for r in results:
        click.echo(f"{r['model']}: {'rated' if r['rated'] else 'NOT RATED'} - {r['reason']}")
    failed = [r["model"] for r in results if not r["rated"]]
    if failed:
        raise BenchError(f"not rated: {', '.join(failed)} (reasons above and in the result files)")
