"""Library behind ``bench latency api`` (refusals first, then one session; see ``bench.latency.api``)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from analysis.latency.records import check_name
from bench.core.errors import BenchError
from bench.core.reads import stage_reads
from bench.latency.api import measure_api, new_session, require_opt_out
from bench.latency.commands import (
    choose_models,
    require_same_code_as_blocks,
    study_inputs,
    unrated_models,
)
from bench.latency.host import judge_before_run
from bench.latency.presets import PRESETS
from bench.records import guard, provenance
from bench.records.codeversion import require_clean_code
from bench.rerankers.voyage import VoyageReranker, base_url_from_env, read_api_key


@dataclass(frozen=True)
class ApiRequest:
    opt_out: str | None
    label: str | None
    session: str | None
    base_url: str | None
    models: tuple[str, ...]
    depths: tuple[int, ...]
    stage: str
    allow_busy: bool
    allow_unrated: bool
    root: Path
    out_root: Path
    first_stage_dir: Path
    runs_dir: Path
    checks_dir: Path
    clean_tree: bool = True


def run_api(req: ApiRequest, *, stream: TextIO | None = None, host: Any = None) -> list[Any]:
    stream = stream if stream is not None else sys.stderr
    preset = PRESETS["api"]
    opt_out = require_opt_out(req.opt_out)
    models, refused = choose_models(preset, req.models)
    depths = preset.check_depths(req.depths) if req.depths else preset.depths
    key = read_api_key()  # a missing key is refused here, before anything is written
    unrated = unrated_models(models, req.checks_dir, req.allow_unrated, device="api")
    if req.label is not None or req.session is not None:
        for value, what in ((req.label, "--time-of-day"), (req.session, "--session")):
            if value is not None:
                try:
                    check_name(value, what)
                except ValueError as exc:
                    raise BenchError(str(exc)) from None
    if req.clean_tree:
        require_clean_code(req.root)

    pre = guard.preflight("measurement", lock_names=stage_reads([req.stage]), root=req.root)
    inputs = study_inputs(req.first_stage_dir, req.stage, max(depths))
    base_url = req.base_url or base_url_from_env()
    session = new_session(opt_out, base_url, req.label, req.session)
    host_run, busy = judge_before_run("bench latency api", allow_busy=req.allow_busy, state=host)
    if busy:
        print(f"latency: {busy}", file=stream)
    manifest = provenance.collect_manifest(
        kind="measurement",
        device="api",
        root=req.root,
        extra={"preset": "api", "preflight": pre, "refused": refused, "host_before_run": host_run},
    )
    require_same_code_as_blocks(req.out_root, preset.kind, session.session, manifest["git"], req.root)

    def make(model: str) -> Any:
        return VoyageReranker(model, api_key=key, base_url=base_url)

    return measure_api(
        models,
        depths,
        inputs,
        session,
        out_root=req.out_root,
        runs_dir=req.runs_dir,
        stage=req.stage,
        manifest=manifest,
        make_reranker=make,
        allow_busy=req.allow_busy,
        unrated=unrated,
        stream=stream,
        host=host,
    )
