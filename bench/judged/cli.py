"""``bench judged prepare`` and ``bench judged run``: thin commands over ``bench.judged`` (plan section
"Judged sample of unjudged passages")."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

import bench.judged.prepare as prepare_mod
from analysis.inputs.trec import read_qrels
from bench.core.folder_options import checks_option, runs_option, study_option
from bench.core.hints import bench_command
from bench.core.interrupt import whole_command
from bench.core.paths import repo_root
from bench.core.plan import JUDGE_MODEL
from bench.equality.results import quality_setting
from bench.integrity import hashing
from bench.judged.judge import TIMEOUT_S
from bench.judged.packet import write_prepared
from bench.judged.prepare import plan_groups
from bench.judged.run import check_model, make_client, run_judge
from bench.judged.selection import select
from bench.quality import inputs
from bench.records import codeversion, guard, provenance

_dir = click.Path(path_type=Path, file_okay=False)


@click.group("judged")
def judged() -> None:
    """The judged sample of unjudged passages (LLM judge)."""


def prepare_study(root: Path, runs: Path, study: Path | None, checks: Path, out: Path) -> dict[str, Any]:
    """Preflight, the plan's groups, the selection, packet and sealed key in ``out``."""
    codeversion.require_clean_code(root)  # the packet and key must name the code that drew them
    pre = guard.preflight("measurement", lock_names=["miracl", "corpus-71k", "corpus-full"], root=root)
    queries, qrels_path = inputs.study_queries()
    qrels = read_qrels(qrels_path)

    setting = quality_setting(root, study)  # the models are rated as the quality phase rated them
    groups, record = plan_groups(runs, qrels, checks_dir=checks, study_dir=study, setting=setting)
    selection = select(groups, qrels)
    texts = prepare_mod.passage_texts({p.docid for p in selection.pairs})
    record = {
        **record,
        "qrels_sha256": sha256(qrels_path),
        "preflight": pre,
        "provenance": provenance.collect_manifest(kind="judged-prepare", root=root),
    }
    return write_prepared(out, selection, queries, texts, record)


def sha256(path: Path) -> str:
    return hashing.sha256_file(path)


@judged.command("prepare")
@runs_option("Runs folder of the quality study (default runs).")
@study_option("The study directory that wrote them; default: the runs must be committed, unchanged.")
@checks_option()
@click.option(
    "--out", type=_dir, default=None, help="Packet, key and journal folder (default studies/judged)."
)
def prepare(runs: Path | None, study: Path | None, checks: Path | None, out: Path | None) -> None:
    """Select the pairs (seed 20261009), write the judge's packet and the sealed key."""
    root = repo_root()
    out = out or root / "studies" / "judged"
    rec = prepare_study(
        root,
        runs or root / "runs",
        study,
        checks or root / "results" / "adapter-checks",
        out,
    )
    for note in rec["notes"]:
        print(f"note: {note}", file=sys.stderr)
    click.echo(
        f"{rec['pairs']} pairs: packet {out / 'packet.json'} (SHA-256 {rec['packet_sha256']}), "
        f"sealed key {out / 'key.json'} (SHA-256 {rec['key_sha256']})"
    )


@judged.command("run")
@click.option("--dir", "directory", type=_dir, default=None, help="Prepared folder (default studies/judged).")
@click.option("--model", default=JUDGE_MODEL, show_default=True, help="The judge's model id (the plan's).")
@click.option("--publish", type=_dir, default=None, help="Where labels.json goes (default results/judged).")
@click.option("--timeout", default=None, type=float, help="Seconds per HTTP attempt (default 120).")
def run(directory: Path | None, model: str, publish: Path | None, timeout: float | None) -> None:
    """Ask the judge about every pair not yet in the journal; publish ids and labels when complete."""
    root = repo_root()
    directory = directory or root / "studies" / "judged"
    check_model(model)
    client = make_client(timeout=timeout or TIMEOUT_S)  # refuses a missing key before anything is written
    codeversion.require_clean_code(root)
    pre = guard.preflight("measurement", lock_names=["miracl"], root=root)
    manifest = provenance.collect_manifest(kind="judged-run", device="api", root=root)
    session = {"preflight": pre, "provenance": manifest}

    with whole_command("judged run", bench_command("judged", "run", "--dir", directory, root=root)):
        publish_dir = publish or root / "results" / "judged"
        counts = run_judge(directory, client=client, model=model, publish_dir=publish_dir, session=session)
    click.echo(
        f"{counts['judged']} pairs judged now, {counts['already_done']} already done; {counts['unclear']} "
        f"unclear, {counts['parse_failures']} parse failures; labels: {counts.get('published')}"
    )
