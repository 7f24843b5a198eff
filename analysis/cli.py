"""The ``analysis`` command: quality numbers, intervals, tests and sentences from TREC run files.

Thin over the library: every command parses arguments and calls one function. Malformed input exits 1 with
a message naming the file, the line and the fix. Needs only numpy, click and matplotlib.
"""

from __future__ import annotations

import json
import re
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import wraps
from pathlib import Path
from typing import Any, TypeVar

import click

from analysis.core.atomic import write_json_atomic
from analysis.core.plan import RUN_IDS
from analysis.costs.cli import cost_inputs, costs_options
from analysis.inputs.textcheck import cut, one_line_problem
from analysis.inputs.trec import TrecFormatError, UnknownQueryError, read_qrels, read_run, read_run_table
from analysis.reporting import codeinfo
from analysis.reporting.codeinfo import code_record
from analysis.reporting.judged import human_agreement, read_human, read_labels, summarise
from analysis.reporting.judged import markdown as judged_markdown
from analysis.reporting.pitfalls import analyse_pitfalls
from analysis.reporting.pitfalls import markdown as pitfalls_markdown
from analysis.reporting.pytrec_check import compare_with_pytrec_eval
from analysis.reporting.report import verdict_lines, write_report
from analysis.simulation.simulate import simulate as run_simulation
from analysis.stats.metrics import MEASURES, Judgments, evaluate_table
from analysis.stats.ties import tie_warning

F = TypeVar("F", bound=Callable[..., Any])

METRICS_JSON_KEYS = tuple(m for m in MEASURES if m != "ceiling")  # the stable keys of `analysis metrics`


def _user_errors(func: F) -> F:
    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except (TrecFormatError, ValueError, RuntimeError) as exc:
            raise click.ClickException(str(exc)) from exc
        except OSError as exc:  # a full disk, a read-only folder, a file vanished: one line, no traceback
            where = f"{exc.filename}: " if exc.filename else ""
            reason = exc.strerror or str(exc)
            name = type(exc).__name__
            raise click.ClickException(
                f"{where}{reason} ({name}). Fix: check the path, free space and "
                "permissions, then run the command again"
            ) from exc

    return wrapper  # type: ignore[return-value]


_existing = click.Path(exists=True, dir_okay=False, path_type=Path)


@click.group()
def cli() -> None:
    """Quality numbers of the study from TREC runs and qrels (PLAN.md, section "Quality")."""


@cli.command()
@click.option("--qrels", required=True, type=_existing, help="TREC qrels (qid iter docid relevance).")
@click.option("--run", "runs", required=True, multiple=True, type=_existing, help="TREC run; repeatable.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object keyed by run path.")
@click.option("--allow-unknown-queries", is_flag=True, help="Ignore run queries that are not in the qrels.")
@_user_errors
def metrics(qrels: Path, runs: Sequence[Path], as_json: bool, allow_unknown_queries: bool) -> None:
    """Mean metrics over every qrels query (a query missing from a run scores 0). Each run's coverage:
    ``queries_present`` of the qrels' ``queries``, and the ``queries_missing`` by id."""
    judgments = Judgments.from_qrels(read_qrels(qrels))
    out: dict[str, dict[str, float | int | list[str]]] = {}
    for run in runs:
        try:
            table = read_run_table(
                run, qrels_qids=judgments.qids, allow_unknown_queries=allow_unknown_queries
            )
        except UnknownQueryError as exc:  # this command has the option the reader cannot know of
            raise exc.with_fix(f"{exc.fix}, or pass --allow-unknown-queries to ignore them") from exc
        values = evaluate_table(judgments, table, METRICS_JSON_KEYS)
        warning = tie_warning(judgments, table, str(run))
        if warning is not None:
            click.echo(warning, err=True)
        row: dict[str, float | int | list[str]] = {m: float(values[m].mean()) for m in METRICS_JSON_KEYS}
        row["queries"] = len(judgments.qids)
        held = set(table.qids)
        missing = [q for q in judgments.qids if q not in held]
        row["queries_present"] = len(judgments.qids) - len(missing)
        row["queries_missing"] = missing
        out[str(run)] = row
    if as_json:
        click.echo(json.dumps(out, indent=1))
        return
    for run_name, row in out.items():
        click.echo(run_name)
        for key, value in row.items():
            if key != "queries_missing":
                click.echo(f"  {key:<15} {value}")
        missing = [str(q) for q in row["queries_missing"]]  # type: ignore[union-attr]
        if missing:
            shown = ", ".join(missing[:10]) + (f", ... ({len(missing)} in all)" if len(missing) > 10 else "")
            click.echo(
                f"  missing: {len(missing)} of {row['queries']} qrels queries are not in this run; "
                f"each scores 0 in every mean above: {shown}"
            )


_folder = click.Path(exists=True, file_okay=False, path_type=Path)


@cli.command()
@click.option(
    "--runs",
    "runs_dir",
    required=True,
    type=_folder,
    help="Folder with first-stage/<stage>.trec and <stage>/<model>@<k>.trec.",
)
@click.option("--qrels", required=True, type=_existing)
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--flags",
    "flags_file",
    type=_existing,
    help="JSON object model id -> contamination note, added to the plan's flags.",
)
@click.option("--title", default=None)
@click.option("--no-figures", is_flag=True, help="Skip the PNG figures.")
@click.option(
    "--latency",
    "latency_dir",
    type=_folder,
    default=None,
    help="Latency results folder (results/latency): adds the latency section (and feeds the costs "
    "section's latencies with --prices).",
)
@costs_options
@_user_errors
def report(
    runs_dir: Path,
    qrels: Path,
    out_dir: Path,
    flags_file: Path | None,
    title: str | None,
    no_figures: bool,
    latency_dir: Path | None = None,
    **cost_options: Any,
) -> None:
    """Write quality/*.json, report.md and figures/*.png for a study (and costs.json with --prices)."""
    flags = None if flags_file is None else read_flags(flags_file)
    if title is not None and one_line_problem(title) is not None:
        raise ValueError(
            f"--title {cut(title)}: expected one line of text, found {one_line_problem(title)}; "
            "it would make Markdown structure in report.md. Fix: give a title on one line"
        )
    costs = cost_inputs(latency_dir=latency_dir, out_dir=out_dir, **cost_options)
    had_report = (out_dir / "report.md").exists()
    with interrupts_exit(out_dir):
        try:
            path = write_report(
                runs_dir,
                qrels,
                out_dir,
                title=title,
                flags=flags,
                figures=not no_figures,
                latency_dir=latency_dir,
                costs=costs,
                warn=lambda line: click.echo(f"Warning: {line}", err=True),
            )
        except OSError as exc:
            raise click.ClickException(_os_error_line(exc, out_dir, had_report)) from exc
    click.echo(str(path))
    check = json.loads((out_dir / "quality" / "study.json").read_text(encoding="utf-8"))["plan_check_2"]
    if check["passed"] is True:
        return
    lines = verdict_lines(check)
    runs = check.get("runs") or []
    if runs and all(c.get("verdict") in ("PASS", "NOT COMPARED") for c in runs):
        # nothing disagreed: some runs could not be compared in pytrec_eval's own order (every query has tied
        # scores); said aloud and recorded (passed false, verdict NOT COMPARED), not a failure
        click.echo("Warning: the report was written, but " + "\n".join(lines), err=True)
        return
    raise click.ClickException("the report was written, but " + "\n".join(lines))


@cli.command("code-digest")
@click.option(
    "--out",
    "out_file",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Where to write the record (the runbook: timestamps/analysis-code.json, then stamped).",
)
@_user_errors
def code_digest_cmd(out_file: Path) -> None:
    """Write the analysis code's record (commit, digest of analysis/ and of the locked packages it imports),
    to be timestamped before the first measurement; refuses uncommitted changes to analysis/ or uv.lock."""
    record = code_record()
    if record["commit"] is None or record["dirty"] is not False:
        raise ValueError(
            f"{codeinfo.REPO}: analysis/ or uv.lock has uncommitted changes (or this is not a "
            "git checkout); commit them, then run `analysis code-digest` again"
        )
    write_json_atomic(out_file, {codeinfo.KEY: record})
    click.echo(f"{out_file}: analysis digest {record['analysis_digest']} at commit {record['commit'][:12]}")


def _os_error_line(exc: OSError, out_dir: Path, had_report: bool) -> str:
    """One line for a full disk, a read-only folder: the file of --out being written (not the temporary
    build folder beside it, which is removed), and whether an earlier report is there."""
    name = str(exc.filename) if exc.filename else ""
    build = re.search(rf"/\.{re.escape(out_dir.name)}\.[a-z0-9_]{{8}}\.build(/|$)", name)
    if build is not None:
        name = f"{out_dir / name[build.end() :]} (being built beside {out_dir})"
    where = f"{name}: " if name else f"{out_dir}: "
    kept = (
        f"the earlier report in {out_dir} is left as it was"
        if had_report
        else f"no report was written to {out_dir}"
    )
    return (
        f"{where}{exc.strerror or exc} ({type(exc).__name__}); {kept}. Fix: check the path, free space "
        "and permissions, then run the command again"
    )


def read_flags(flags_file: Path) -> dict[str, str]:
    """``--flags``: a JSON object run id -> contamination note; an id no run can have (a misspelt model) and a
    note that would make Markdown structure are refused, naming the file and the line."""
    try:
        text = flags_file.read_text(encoding="utf-8")
        loaded = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"{flags_file}:{exc.lineno}: expected a JSON object model id -> note, found "
            f"invalid JSON ({exc.msg}, column {exc.colno}). Fix: correct the file, e.g. "
            '{"gte-base": "trained on MIRACL"} (no trailing comma)'
        ) from exc
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"{flags_file}: expected UTF-8 JSON ({exc.reason}). Fix: re-encode the file as UTF-8"
        ) from exc
    if not isinstance(loaded, dict) or not all(isinstance(v, str) for v in loaded.values()):
        raise ValueError(
            f"{flags_file}: expected a JSON object model id -> note. Fix: write it as "
            '{"gte-base": "trained on MIRACL"}'
        )
    for model, note in loaded.items():
        line = _line_of(text, json.dumps(model))
        if model not in RUN_IDS:
            raise ValueError(
                f"{flags_file}:{line}: expected a run id of the plan, found {cut(model)}; its "
                "contamination mark would be lost. Fix: use one of " + ", ".join(sorted(RUN_IDS))
            )
        problem = one_line_problem(note)
        if problem is not None:
            raise ValueError(
                f"{flags_file}:{line}: the note of {model} holds {problem}; it would make "
                "Markdown structure in report.md. Fix: write the note on one line"
            )
    return loaded


def _line_of(text: str, needle: str) -> int:
    at = text.find(needle)
    return 1 if at < 0 else text.count("\n", 0, at) + 1


@contextmanager
def interrupts_exit(out_dir: Path) -> Iterator[None]:
    """SIGINT and SIGTERM end the report with one line and exit 128 + the signal (130, 143), after the
    cleanup an interrupt runs (the build folder removed; a swap under way finishes first)."""
    got: list[int] = []

    def handler(signum: int, frame: object) -> None:
        got.append(signum)
        raise KeyboardInterrupt

    try:
        before = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    except ValueError:  # not the main thread (a test's runner): signals are not ours to handle
        yield
        return
    try:
        yield
    except KeyboardInterrupt:
        signum = got[0] if got else signal.SIGINT
        click.echo(
            f"Error: interrupted by {signal.Signals(signum).name}: {out_dir} holds a whole report, "
            "the earlier one (or none) or, when the signal came during the final swap, the new one; "
            "no half-written file is left. Fix: run the command again",
            err=True,
        )
        sys.exit(128 + signum)
    finally:
        for s, h in before.items():
            signal.signal(s, h)


@cli.command("check-pytrec")
@click.option("--qrels", required=True, type=_existing)
@click.option("--run", required=True, type=_existing)
@_user_errors
def check_pytrec(qrels: Path, run: Path) -> None:
    """Plan check 2: our nDCG@10 against pytrec_eval ndcg_cut_10 (tolerance 0.0001)."""

    q = read_qrels(qrels)
    result = compare_with_pytrec_eval(q, read_run(run, qrels_qids=q))
    click.echo(f"queries                      {result.queries}")
    click.echo(f"ours nDCG@10                 {result.ours!r}")
    click.echo(f"pytrec_eval ndcg_cut_10      {result.pytrec_eval!r}")
    click.echo(f"largest per-query difference {result.max_abs_diff!r} (query {result.worst_qid})")
    click.echo(f"queries with tied scores     {result.queries_with_ties}")
    click.echo(
        f"pytrec_eval on raw scores    {result.pytrec_eval_raw!r} (trec_eval breaks ties by docid "
        "descending; ours by first-stage rank)"
    )
    if result.own_order_run_queries:
        click.echo(
            f"own ordering, largest diff   {result.own_order_max_abs_diff!r} (query "
            f"{result.own_order_worst_qid}; {result.own_order_run_queries} run queries without tied "
            "scores, where pytrec_eval's order must equal ours)"
        )
    else:
        click.echo(
            "own ordering                 not compared (every query of the run has tied scores as "
            "pytrec_eval compares them, as 32-bit floats)"
        )
    click.echo(f"verdict                      {result.verdict} (tolerance {result.tolerance})")
    if result.verdict == "NOT COMPARED":
        raise click.ClickException(
            f"{run}: NOT COMPARED: our nDCG@10 equals pytrec_eval's in our rank order, but no query could be "
            "compared in pytrec_eval's own order, because every query of the run has tied scores. Fix: check "
            "a run whose scores are not all tied (e.g. the first-stage run), or compare the orders yourself "
            "with `analysis metrics`, which prints both nDCG@10 values"
        )
    if not result.passed:
        sys.exit(1)


@cli.command()
@click.option("--qrels", required=True, type=_existing)
@click.option("--studies", default=200, show_default=True, help="Null studies (and as many effect studies).")
@click.option("--models", default=9, show_default=True)
@click.option("--base-ndcg", default=0.5, show_default=True, help="Expected nDCG@10 under the null.")
@click.option("--correlation", default=0.5, show_default=True, help="Shared share of the models' noise.")
@click.option("--seed", default=7, show_default=True)
@_user_errors
def simulate(qrels: Path, studies: int, models: int, base_ndcg: float, correlation: float, seed: int) -> None:
    """Family-wise error under the null and power for a 2-point difference, on the real qrels."""

    result = run_simulation(
        read_qrels(qrels),
        studies=studies,
        models=models,
        base_ndcg10=base_ndcg,
        seed=seed,
        correlation=correlation,
    )
    click.echo(json.dumps(result.as_dict(), indent=1, sort_keys=True))


@cli.command()
@click.option(
    "--labels",
    "labels_file",
    required=True,
    type=_existing,
    help="results/judged/labels.json (bench judged run).",
)
@click.option(
    "--human",
    "human_file",
    type=_existing,
    default=None,
    help="A later human judgment of the same pairs: qid<TAB>docid<TAB>label (1, 0 or unclear).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the numbers as JSON instead of Markdown.")
@_user_errors
def judged(labels_file: Path, human_file: Path | None, as_json: bool) -> None:
    """Judged sample: false-negative rates (Wilson 95 %), control agreement and kappa, the plan's caveat."""
    labels = read_labels(labels_file)
    summary = summarise(labels)
    human = None
    if human_file is not None:
        human = human_agreement(labels, read_human(human_file), str(human_file))
    if as_json:
        click.echo(json.dumps({"summary": summary, "human": human}, indent=1, sort_keys=True))
        return
    click.echo("\n".join(judged_markdown(summary, human)))


@cli.command()
@click.option(
    "--runs", "runs_dir", required=True, type=_folder, help="The study's runs (first-stage/ inside)."
)
@click.option(
    "--pitfall-runs",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="bench quality --pitfalls output (results/pitfalls/runs).",
)
@click.option("--qrels", required=True, type=_existing)
@_user_errors
def pitfalls(runs_dir: Path, pitfall_runs: Path, qrels: Path) -> None:
    """Pitfalls experiment: Qwen3 variants against (a), keyword-plain-71k against keyword-71k."""
    click.echo("\n".join(pitfalls_markdown(analyse_pitfalls(runs_dir, pitfall_runs, read_qrels(qrels)))))


def main() -> None:
    cli(prog_name="analysis")


if __name__ == "__main__":
    main()
