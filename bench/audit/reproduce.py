"""``bench reproduce``: the plan's reproduction rule (section "Reproducibility and licences"): "a fresh clone
must reproduce nDCG@10 of two rerankers from the committed first-stage runs on the same GPU within 0.1
points".

The rerankers run through the study's own quality phase (``bench.quality.driver.execute``) on the
committed ``runs/first-stage/<stage>.trec`` at the main depth, into a new study folder (default
``reproduce/<utc-time>/``, git-ignored), never into ``runs/``. nDCG@10 of each new run is compared with the
committed ``results/quality/<stage>.json``: within ``REPRODUCTION_MAX_POINTS`` points (inclusive) is OK,
otherwise FAIL with both numbers; a new run that does not reorder the committed first stage's candidates
(``analysis.inputs.reordering``) is FAIL with the file, query and id. The machine is recorded, and the GPU is
compared with the GPUs named by the committed manifests ("same GPU"); a different or unknown GPU is said
plainly.

A MiniLM stand-in is reloaded with the input cut its study ran it with (``recorded_cuts``): the bundled
rehearsal cuts at 128 tokens, ``bench rehearse --dataset`` at the packaged model's published
``max_seq_length`` (DEVIATIONS.md D-045), and only the study's committed manifest says which; a missing or
inconsistent record is refused, never guessed.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

from analysis.core.atomic import write_json_atomic
from analysis.inputs.reordering import check_run_files
from analysis.inputs.textcheck import cut
from analysis.inputs.trec import TrecFormatError, read_qrels, read_run_table
from analysis.stats import metrics
from analysis.stats.metrics import Judgments
from bench.audit.committed import RESULTS, RUNS, study_files, tracked
from bench.core import clock
from bench.core.errors import BenchError
from bench.core.hints import bench_command
from bench.core.plan import QUALITY_DEPTH, REPRODUCTION_MAX_POINTS
from bench.quality.driver import execute
from bench.quality.phase import PhaseSpec
from bench.quality.study import MANIFEST, Study
from bench.records.provenance import host_info
from bench.rerankers.standin import standin_revision

# The two rerankers the README names for the reproduction: pointwise, small, and both in the plan's
# determinism check, so a second run is expected to agree.
DEFAULT_MODELS: tuple[str, ...] = ("bge-v2-m3", "qwen3-0.6b")
SUMMARY = "reproduce.json"
# "within 0.1 points" includes 0.1 itself; the margin absorbs binary rounding of a difference that is 0.1
# in decimal (100 * (0.501 - 0.5) = 0.10000000000000009), far below any real difference of nDCG@10.
_EPS = 1e-9
# The registry ids whose input cut a study chooses (bench.rehearse.standin.standin_cut): reloaded at the cut
# the committed manifest records, not at the registry default.
CUT_MODELS: tuple[str, ...] = ("minilm-standin",)


@dataclass(frozen=True)
class Comparison:
    stage: str
    model: str
    depth: int
    committed: float | None  # nDCG@10, 0..1
    reproduced: float | None
    difference_points: float | None
    verdict: str  # "OK" | "FAIL"
    reason: str


@dataclass
class Reproduction:
    directory: str
    comparisons: list[Comparison]
    gpu_here: list[str]
    gpu_committed: list[str]
    gpu_note: str
    max_points: float = REPRODUCTION_MAX_POINTS
    rule: str = "|reproduced - committed| <= 0.1 nDCG@10 points passes (inclusive)"
    manifest: dict[str, Any] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        return 0 if self.comparisons and all(c.verdict == "OK" for c in self.comparisons) else 1


def committed_ndcg(root: Path, stage: str, model: str, depth: int) -> float | None:
    """Mean nDCG@10 of ``<model>@<depth>`` in the committed ``results/quality/<stage>.json``."""
    path = root / RESULTS / "quality" / f"{stage}.json"
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except ValueError as exc:
        raise BenchError(f"{path}: not valid JSON ({exc}); restore it with git") from exc
    for run in doc.get("runs", []):
        if run.get("model") == model and run.get("depth") == depth:
            return float(run["means"]["ndcg@10"])
    return None


def recorded_cuts(root: Path, models: Sequence[str]) -> dict[str, int]:
    """The input cut (tokens) each of ``models`` in ``CUT_MODELS`` ran with, from the study's committed
    ``results/manifest.json`` (``models.<id>.meta``: ``max_length``, and the revision that names it); a
    missing file or entry, or a revision that is not the one this cut gives here, is a ``BenchError``."""
    wanted = [m for m in models if m in CUT_MODELS]
    if not wanted:
        return {}
    path = root / RESULTS / MANIFEST
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        first = wanted[0]
        raise BenchError(
            f"{path}: missing, so the input cut {first} ran with is not known; commit the "
            f"study's {MANIFEST} there, or leave {first} out (--model)"
        ) from None
    except (OSError, ValueError) as exc:
        raise BenchError(f"{path}: not valid JSON ({exc}); restore it with git") from exc
    return {model: _recorded_cut(path, doc, model) for model in wanted}


def _recorded_cut(path: Path, doc: Any, model: str) -> int:
    entries = doc.get("models") if isinstance(doc, dict) else None
    entry = entries.get(model) if isinstance(entries, dict) else None
    meta = entry.get("meta") if isinstance(entry, dict) else None
    cut = meta.get("max_length") if isinstance(meta, dict) else None
    if isinstance(cut, bool) or not isinstance(cut, int) or cut < 1 or not isinstance(meta, dict):
        raise BenchError(
            f"{path}: models.{model}.meta.max_length is {cut!r}, not the input cut {model} ran "
            "with; commit the manifest of the study whose runs/ these are, or leave "
            f"{model} out (--model)"
        )
    here = standin_revision(cut)
    if meta.get("revision") != here:
        raise BenchError(
            f"{path}: models.{model}.meta.revision is {meta.get('revision')!r}, but {model} at "
            f"max_length {cut} is {here!r} here; restore the file with git, or install the "
            "package version it names (`uv sync --locked` on the study's commit)"
        )
    return cut


def committed_stages(root: Path) -> list[str]:
    """Stages with a committed first-stage run and a committed quality result holding reranker runs
    (keyword-plain-71k, a reference without rerankers, has none)."""
    runs = {Path(f).stem for f in tracked(root, f"{RUNS}/first-stage") if f.endswith(".trec")}
    stages = []
    for rel in study_files(tracked(root, f"{RESULTS}/quality")):
        stage = Path(rel).stem
        if stage == "study" or stage not in runs or not rel.endswith(".json"):
            continue
        try:
            doc = json.loads((root / rel).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise BenchError(f"{root / rel}: not valid JSON ({exc}); restore it with git") from exc
        if isinstance(doc, dict) and doc.get("runs"):
            stages.append(stage)
    return sorted(stages)


def _gpus(host: Any) -> list[str]:
    """GPU names in a host record (``bench.records.provenance.host_info``): torch's ``cuda_device``, else the
    first column of the ``nvidia_smi`` CSV."""
    if not isinstance(host, Mapping):
        return []
    names = [str(host["cuda_device"])] if isinstance(host.get("cuda_device"), str) else []
    smi = host.get("nvidia_smi")
    if not names and isinstance(smi, str):
        names = [r.split(",")[0].strip() for r in smi.splitlines()[1:] if r.strip()]
    return names


def _host_records(obj: Any) -> Iterator[Mapping[str, Any]]:
    if isinstance(obj, Mapping):
        if "cuda_device" in obj or "nvidia_smi" in obj:
            yield obj
        for value in obj.values():
            yield from _host_records(value)
    elif isinstance(obj, list):
        for value in obj:
            yield from _host_records(value)


def committed_gpus(root: Path) -> list[str]:
    """Every GPU named by a host record in a committed result file (manifests, sessions' host after load)."""
    found: set[str] = set()
    for rel in study_files(tracked(root, RESULTS)):
        if not rel.endswith(".json"):
            continue
        try:
            doc = json.loads((root / rel).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        for host in _host_records(doc):
            found.update(_gpus(host))
    return sorted(found)


def gpu_note(here: Sequence[str], committed: Sequence[str]) -> str:
    if not committed:
        return "the committed manifests name no GPU: 'same GPU' cannot be checked"
    if not here:
        return f"no GPU here; the committed results were measured on {', '.join(committed)}"
    if set(here) & set(committed):
        return f"same GPU as the committed results ({', '.join(sorted(set(here) & set(committed)))})"
    return f"different GPU: here {', '.join(here)}, committed results {', '.join(committed)}"


def compare(
    stage: str, model: str, depth: int, committed: float | None, reproduced: float | None
) -> Comparison:
    if committed is None:
        return Comparison(
            stage,
            model,
            depth,
            None,
            reproduced,
            None,
            "FAIL",
            f"results/quality/{stage}.json has no {model}@{depth}: nothing to reproduce",
        )
    if reproduced is None:
        return Comparison(stage, model, depth, committed, None, None, "FAIL", "the rerun wrote no run file")
    diff = 100 * (reproduced - committed)
    ok = abs(diff) <= REPRODUCTION_MAX_POINTS + _EPS
    reason = (
        f"committed {100 * committed:.4f}, reproduced {100 * reproduced:.4f} nDCG@10 points "
        f"(difference {diff:+.4f}; rule: within {REPRODUCTION_MAX_POINTS})"
    )
    return Comparison(stage, model, depth, committed, reproduced, diff, "OK" if ok else "FAIL", reason)


def reproduce(
    root: Path,
    *,
    models: Sequence[str],
    stages: Sequence[str] | None,
    qrels: Path,
    queries: Mapping[str, str],
    texts: Mapping[str, str] | Callable[[Any], Mapping[str, str]],
    load: Callable[[str], Any],
    out_dir: Path,
    provenance: Mapping[str, Any],
    preflight: Mapping[str, Any] | None,
    kind: str = "measurement",
    stream: TextIO | None = None,
) -> Reproduction:
    """Rerun ``models`` on the committed first-stage runs of ``stages`` (default: every committed stage)
    at the main depth and compare nDCG@10 with the committed results."""
    stream = stream if stream is not None else sys.stderr
    chosen = _stages_to_rerun(root, stages)
    params = {"stages": chosen, "models": list(models), "depth": QUALITY_DEPTH, "reproduction": True}
    study = Study.start(
        out_dir,
        kind=kind,
        plan_path=root / "PLAN.md",
        params=params,
        provenance=provenance,
        preflight=preflight,
    )
    spec = PhaseSpec(stages=tuple(chosen), models=tuple(models), depths=(QUALITY_DEPTH,))
    execute(
        study,
        sources={s: root / RUNS / "first-stage" / f"{s}.trec" for s in chosen},
        queries=queries,
        texts=texts,
        load=load,
        spec=spec,
        runs_dir=out_dir / "runs",
        resume_hint=bench_command("reproduce", "--out", out_dir, root=root),
        what="reproduction",
        stream=stream,
    )
    comparisons = _comparisons(root, out_dir, chosen, models, qrels)

    here = sorted(set(_gpus(provenance.get("host"))) | set(_gpus(host_info())))  # torch is loaded by now
    theirs = committed_gpus(root)
    result = Reproduction(
        str(out_dir), comparisons, here, theirs, gpu_note(here, theirs), manifest=dict(provenance)
    )
    write_json_atomic(out_dir / SUMMARY, {**asdict(result), "exit_code": result.exit_code})
    return result


def check_inputs_cover_runs(
    root: Path,
    stages: Sequence[str] | None,
    queries: Mapping[str, str],
    texts: Mapping[str, str],
    inputs: str,
) -> None:
    """Every query and passage of the committed first-stage runs that will be reranked is in the inputs
    (``--bundled``, ``--dataset``): else BenchError naming the run file, the line and the id, before any
    folder is made (a KeyError, and a reproduce/<time>/ folder left behind)."""
    for stage in _stages_to_rerun(root, stages):
        path = root / RUNS / "first-stage" / f"{stage}.trec"
        try:
            lines = path.read_text(encoding="utf-8-sig").split("\n")
        except (OSError, UnicodeDecodeError) as exc:
            raise BenchError(
                f"{path}: cannot read the committed run ({exc}). Fix: restore it from git"
            ) from exc
        for number, line in enumerate(lines, 1):
            cols = line.split()
            if len(cols) < 3:
                continue
            missing = (
                ("query", cols[0])
                if cols[0] not in queries
                else (("passage", cols[2]) if cols[2] not in texts else None)
            )
            if missing is not None:
                raise BenchError(
                    f"{path}:{number}: the {missing[0]} {cut(missing[1])} is not in {inputs}: the committed "
                    "runs come from other inputs. Fix: reproduce with the inputs the study ran on (its "
                    "--dataset folder, or the measurement's data without --bundled/--dataset)"
                )


def _stages_to_rerun(root: Path, stages: Sequence[str] | None) -> list[str]:
    """``stages``, or every committed stage; each must have its committed first-stage run."""
    chosen = list(stages) if stages else committed_stages(root)
    if not chosen:
        raise BenchError(
            f"{root / RUNS}: no committed first-stage run with a committed quality result; "
            "nothing to reproduce (run the study and commit runs/ and results/ first)"
        )
    missing = [s for s in chosen if not (root / RUNS / "first-stage" / f"{s}.trec").is_file()]
    if missing:
        raise BenchError(f"{root / RUNS / 'first-stage'}: no committed run for {', '.join(missing)}")
    return chosen


def _comparisons(
    root: Path, out_dir: Path, stages: Sequence[str], models: Sequence[str], qrels: Path
) -> list[Comparison]:
    """Each rerun's nDCG@10 against the committed one, per stage and model."""
    judgments = Judgments.from_qrels(read_qrels(qrels))
    comparisons = []
    for stage in stages:
        for model in models:
            path = out_dir / "runs" / stage / f"{model}@{QUALITY_DEPTH}.trec"
            reproduced = None
            committed = committed_ndcg(root, stage, model, QUALITY_DEPTH)
            if path.is_file():
                first = f"{RUNS}/first-stage/{stage}.trec"  # what the rerun reranked (frozen byte for byte)
                try:
                    check_run_files(root / first, [(path, QUALITY_DEPTH)], first_name=first)
                except TrecFormatError as exc:  # the rerun's own run file breaks the plan's invariant
                    comparisons.append(
                        Comparison(stage, model, QUALITY_DEPTH, committed, None, None, "FAIL", str(exc))
                    )
                    continue
                table = read_run_table(path, qrels_qids=judgments.qids)
                reproduced = float(metrics.evaluate_table(judgments, table, ("ndcg@10",))["ndcg@10"].mean())
            comparisons.append(compare(stage, model, QUALITY_DEPTH, committed, reproduced))
    return comparisons


def format_result(result: Reproduction) -> str:
    lines = [
        "| stage | model | committed nDCG@10 | reproduced | difference (points) | verdict |",
        "|---|---|---:|---:|---:|---|",
    ]
    for c in result.comparisons:

        def pts(x: float | None) -> str:
            return "" if x is None else f"{100 * x:.4f}"

        diff = "" if c.difference_points is None else f"{c.difference_points:+.4f}"
        lines.append(
            f"| {c.stage} | {c.model}@{c.depth} | {pts(c.committed)} | {pts(c.reproduced)} | {diff} | "
            f"{c.verdict} |"
        )
    lines += ["", f"Rule: within {result.max_points} nDCG@10 points (inclusive). GPU: {result.gpu_note}."]
    lines += [f"{c.verdict}: {c.stage} {c.model}@{c.depth}: {c.reason}" for c in result.comparisons]
    lines.append(f"Everything: {result.directory}")
    return "\n".join(lines)


def new_dir(root: Path) -> Path:
    return root / "reproduce" / clock.stamp()
