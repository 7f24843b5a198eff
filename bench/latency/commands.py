"""Library behind ``bench latency gpu`` and ``bench latency cpu`` (plan section "Latency").

Every refusal comes before anything is written: unknown model ids, k outside the plan, CUDA absent, another
process on the GPU, a model without a passed adapter check (unless ``--allow-unrated``, which puts every
number of that model under ``not-published/`` with a mark), uncommitted code (``bench.records.codeversion``:
outputs do not count), a failed datasets.lock check.
A model the registry does not provide (the int8 variant until it exists) is refused by name and the
others are measured.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import bench.quality.inputs as inputs_mod
from analysis.inputs.trec import TrecFormatError, read_run
from bench.core.errors import BenchError
from bench.core.hints import hint
from bench.core.memory import free_device_memory
from bench.core.plan import CPU_INT8_MODEL, RERANKERS
from bench.core.reads import stage_reads
from bench.equality.results import outcome, outcome_for
from bench.int8.agreement import VERDICT as INT8_VERDICT
from bench.int8.agreement import int8_outcome
from bench.integrity import hashing
from bench.latency.gpu import GpuProbe, require_free_gpu
from bench.latency.host import host_state, judge_before_run, snapshot
from bench.latency.presets import INT8_ID, Preset, availability
from bench.latency.run import Inputs, Settings, finished_blocks, measure_model
from bench.latency.telemetry import Sampler, host_probes
from bench.latency.timer import CallTimer, timer_for
from bench.quality.candidates import Candidates
from bench.records import guard, provenance
from bench.records.codeversion import different_code, require_clean_code
from bench.records.provenance import attention_implementations, torch_settings
from bench.rerankers.openvino.manifest import MANIFEST, default_folder
from bench.rerankers.registry import STANDIN_IDS, load_reranker


@dataclass(frozen=True)
class LocalRequest:
    preset: Preset
    machine: str
    session: str
    root: Path
    out_root: Path
    first_stage_dir: Path
    runs_dir: Path
    checks_dir: Path
    stage: str
    models: tuple[str, ...] = ()  # empty: the preset's
    depths: tuple[int, ...] = ()  # empty: the preset's
    allow_busy: bool = False
    allow_unrated: bool = False
    interval_s: float = 0.5
    cpus: int | None = None  # pin to this many CPUs (pre-measurement: the plan's taskset to 8 threads)


def choose_models(preset: Preset, requested: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """(models to measure, refused model -> reason). Ids outside the preset are an error."""
    wanted = list(requested) or list(preset.models)
    allowed = (*preset.models, *(STANDIN_IDS if preset.device != "api" else ()))
    unknown = [m for m in wanted if m not in allowed]
    if unknown:
        raise BenchError(
            f"unknown model id {unknown[0]!r} for bench latency {preset.name}; the plan's models here are: "
            f"{', '.join(preset.models)} (stand-ins, never published: "
            f"{', '.join(allowed[len(preset.models) :])})"
        )
    refused = {m: r for m in wanted if (r := availability(m)) is not None}
    return [m for m in wanted if m not in refused], refused


def model_outcome(
    model: str, checks_dir: Path, int8_verdict: Path | None = None, *, device: str | None = None
) -> dict[str, Any]:
    """A model's rating. With ``device``, a plan model's check must have run on that device with the dtype
    it is timed in (the adapter's choice there: every latency command loads with it), else the reason names
    both settings. The int8 variant has no adapter check of its own (``bench check-adapters`` knows only
    plan models): it is rated by its base model's check (on ``device`` when given) plus the plan's int8
    agreement (the verdict of ``bench int8 agreement --against``, default ``results/int8/agreement.json``
    beside ``checks_dir``) for the quantised folder in use."""

    def base(m: str) -> dict[str, Any]:
        return (
            outcome_for(m, checks_dir, device)
            if device is not None and m in RERANKERS
            else outcome(m, checks_dir)
        )

    if model != INT8_ID:
        return base(model)

    verdict = int8_verdict if int8_verdict is not None else checks_dir.parent.parent / INT8_VERDICT
    manifest = default_folder() / MANIFEST
    digest = hashing.sha256_file(manifest) if manifest.is_file() else None
    return int8_outcome(base(CPU_INT8_MODEL), verdict, digest)


def unrated_models(
    models: Sequence[str],
    checks_dir: Path,
    allow_unrated: bool,
    *,
    int8_verdict: Path | None = None,
    device: str | None = None,
) -> dict[str, str]:
    """model -> reason for every model without a passed adapter check (see ``model_outcome``); BenchError
    unless allowed."""
    unrated = {}
    for m in models:
        out = model_outcome(m, checks_dir, int8_verdict, device=device)
        if not out["rated"]:
            unrated[m] = str(out["reason"])
    if unrated and not allow_unrated:
        first = next(iter(unrated))
        if first == INT8_ID:
            raise BenchError(
                f"{first} is not rated ({unrated[first]}); pass --allow-unrated to measure it anyway (its "
                "numbers are then marked not publishable)."
            )
        raise BenchError(
            f"{first} has no passed adapter check for this setting ({unrated[first]}); run "
            f"`{hint(f'check-adapters {first}')}` (on that device and dtype) first, or "
            "pass --allow-unrated (its numbers are then marked not publishable)."
        )
    return unrated


def pin_cpus(n: int) -> list[int]:
    """Pin this process to its first ``n`` allowed CPUs (as ``taskset -c``) and torch to ``n`` threads."""
    allowed = sorted(os.sched_getaffinity(0))
    if n > len(allowed):
        raise BenchError(f"--cpus {n}: this process may use only {len(allowed)} CPUs ({allowed})")
    chosen = allowed[:n]
    os.sched_setaffinity(0, chosen)
    os.environ["OMP_NUM_THREADS"] = str(n)
    # lazy: torch is heavy and is needed only here
    import torch

    torch.set_num_threads(n)
    return chosen


def require_same_code_as_blocks(
    out_root: Path, kind: str, session: str, now: Mapping[str, Any], root: Path
) -> None:
    """The finished blocks of one machine (or API session) are measured by one version of the code, as the
    sessions of a quality study are (``bench.records.codeversion``): a resume with other code is refused,
    naming what differs. Blocks under ``published/`` and ``not-published/`` of ``<kind>/<session>/`` count."""
    for path in sorted(out_root.glob(f"*/{kind}/{session}/*/*.json")):
        if path.name.startswith("."):
            continue  # a temporary file of an unfinished write
        try:
            earlier = (json.loads(path.read_text(encoding="utf-8")).get("manifest") or {}).get("git") or {}
        except (OSError, ValueError, AttributeError) as exc:
            raise BenchError(f"{path}: not a readable latency block ({exc}); restore it with git") from exc
        why = different_code([earlier], now, root)
        if why is not None:
            raise BenchError(
                f"{path}: this finished block was measured by other code ({why}). The blocks of "
                f"{kind}/{session} are measured by one version of the code: check out the code of commit "
                f"{earlier.get('commit')} to measure the remaining blocks, or measure under another "
                "--machine (or --session)."
            )


def study_inputs(first_stage_dir: Path, stage: str, k_max: int) -> Inputs:
    """MIRACL de dev queries, the top ``k_max`` candidates of ``stage`` and their passage texts."""
    path = first_stage_dir / f"{stage}.trec"
    if not path.is_file():
        raise BenchError(f"{path}: first-stage run missing; run `{hint(f'first-stage {stage}')}` first")
    try:
        run = read_run(path, allow_unknown_queries=True)
    except TrecFormatError as exc:
        raise BenchError(f"first-stage run {exc}") from exc
    queries, _ = inputs_mod.study_queries()
    lists = {q: tuple(d for d, _ in run.get(q, [])[:k_max]) for q in queries}
    digest = hashing.sha256_file(path)
    texts = inputs_mod.candidate_texts(Candidates({stage: lists}, {stage: digest})).for_stage(stage)
    return Inputs(queries, lists, texts, {"stage": stage, "run_file": str(path), "sha256": digest})


def _sampler_factory(kind: str, interval_s: float, gpu: Any) -> Any:
    def make() -> Sampler:
        probes = host_probes()
        if gpu is not None:
            probes["gpu"] = gpu.sample
        return Sampler(probes, interval_s=interval_s, source="nvml+host" if gpu is not None else "host")

    return make


def _host_before_run(req: LocalRequest, gpu: Any, stream: TextIO) -> dict[str, Any]:
    """The run's one busy-host window before its first block (``bench.latency.host.judge_before_run``)."""
    state, busy = judge_before_run(
        f"bench latency {req.preset.name}",
        allow_busy=req.allow_busy,
        state=(lambda: host_state(gpu.sample)) if gpu is not None else None,
    )
    if busy:
        print(f"latency: {busy}", file=stream)
    return state


def run_local(req: LocalRequest, *, stream: TextIO | None = None) -> dict[str, Any]:
    """Measure the preset's local models; returns ``{"blocks": [...paths], "refused": {...}}``."""
    stream = stream if stream is not None else sys.stderr
    preset = req.preset
    models, refused = choose_models(preset, req.models)
    depths = preset.check_depths(req.depths) if req.depths else None
    for why in refused.values():
        print(f"latency: {why}", file=stream)
    gpu = None
    if preset.device.startswith("cuda"):
        # before CUDA starts (torch would set LAZY): every kernel loads at start, none inside a timed call
        os.environ.setdefault("CUDA_MODULE_LOADING", "EAGER")
    timer: CallTimer = timer_for(preset.device)  # refuses CUDA requested and absent
    unrated = unrated_models(
        models,
        req.checks_dir,
        req.allow_unrated or not preset.published,
        int8_verdict=req.root / INT8_VERDICT,
        device=preset.device,
    )
    if not preset.published and not req.allow_unrated:
        # never published (the desktop's CPU pre-measurement): only the int8 variant may go unrated, since
        # its agreement verdict is made later on the server (runbook step 13); every other model still
        # needs its check (found by tests/runbook: the pre-measurement refused the int8 variant)
        rest = [m for m in models if m in unrated and m != INT8_ID]
        unrated_models(
            rest, req.checks_dir, False, int8_verdict=req.root / INT8_VERDICT, device=preset.device
        )
    if preset.device.startswith("cuda"):
        gpu = GpuProbe()
        require_free_gpu(gpu)
    pinned = pin_cpus(req.cpus) if req.cpus is not None else None
    require_clean_code(req.root)  # outputs (results/, runs/) do not count: bench.records.codeversion

    pre = guard.preflight("measurement", lock_names=stage_reads([req.stage]), root=req.root)
    k_max = max(max(preset.rule(m).depths) for m in models) if models else 0
    inputs = study_inputs(req.first_stage_dir, req.stage, k_max)
    extra = {
        "preset": preset.name,
        "preflight": pre,
        "pinned_cpus": pinned,
        "refused": refused,
        "host_before_run": _host_before_run(req, gpu, stream),
    }
    manifest = provenance.collect_manifest(
        kind="measurement", device=preset.device, root=req.root, extra=extra
    )
    require_same_code_as_blocks(req.out_root, preset.kind, req.session, manifest["git"], req.root)
    settings = Settings(
        preset=preset,
        machine=req.machine,
        session=req.session,
        out_root=req.out_root,
        runs_dir=req.runs_dir,
        stage=req.stage,
        depths=depths,
        allow_busy=req.allow_busy,
        unrated=unrated,
    )
    return measure_all(
        models,
        settings,
        inputs,
        timer=timer,
        manifest=manifest,
        refused=refused,
        sampler=_sampler_factory(preset.kind, req.interval_s, gpu),
        stream=stream,
        host=(lambda: snapshot(gpu.sample)) if gpu is not None else None,
    )


def measure_all(
    models: Sequence[str],
    settings: Settings,
    inputs: Inputs,
    *,
    timer: CallTimer,
    manifest: Mapping[str, Any],
    refused: dict[str, str],
    sampler: Any,
    stream: TextIO,
    load: Any = None,
    host: Any = None,
) -> dict[str, Any]:
    load = load or (lambda m: load_reranker(m, device=settings.preset.device))
    written: list[str] = []
    blocks: list[Any] = []
    for model in models:
        done = finished_blocks(model, settings, inputs)
        if done is not None:  # a rerun: every block finished, the model is not even loaded
            print(f"latency: {model}: all {len(done)} block(s) already measured, kept", file=stream)
            blocks += done
            written += [str(settings.out_root / b.relpath()) for b in done]
            continue
        try:
            reranker = load(model)
        except BenchError as exc:
            if model != INT8_ID:
                raise
            refused[model] = f"{model} refused: {exc.message}"
            print(f"latency: {refused[model]}", file=stream)
            continue
        manifest_m = {
            **manifest,
            "torch_threads_at_load": _torch_threads(),
            "torch_settings": torch_settings(),  # after the load: what the model runs with
            "attention_implementation": attention_implementations(reranker),
        }
        for block, _ in measure_model(
            model,
            reranker,
            timer,
            settings,
            inputs,
            manifest=manifest_m,
            sampler=sampler,
            stream=stream,
            host=host,
        ):
            blocks.append(block)
            written.append(str(settings.out_root / block.relpath()))
        close = getattr(reranker, "close", None)
        if callable(close):
            close()
        del reranker
        free_device_memory()  # collected, cache emptied, peaks reset: the next model loads onto an empty card
    return {"blocks": written, "refused": refused, "records": blocks}


def _torch_threads() -> int | None:
    torch = sys.modules.get("torch")
    return int(torch.get_num_threads()) if torch is not None else None
