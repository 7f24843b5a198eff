"""A small quality phase run as its own process, for the SIGKILL/SIGTERM tests.

``python -m tests.quality.killable INPUT_DIR STUDY_DIR RUNS_DIR [DELAY_S]``: fake adapters (pointwise and
listwise), two stages, six queries, every depth; each call sleeps DELAY_S so a signal lands mid-phase.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from bench.core.errors import BenchError
from bench.quality.driver import execute
from bench.quality.phase import PhaseSpec
from bench.quality.study import Study
from tests.quality.fakes import make_inputs
from tests.support.fakes import FakeReranker

SPEC = PhaseSpec(
    stages=("s1", "s2"), models=("point", "listy"), depths=(20, 50, 100), per_depth=frozenset({"listy"})
)


def main(argv: list[str]) -> int:
    inputs, study_dir, runs_dir = (Path(a) for a in argv[:3])
    delay = float(argv[3]) if len(argv) > 3 else 0.0
    sources, queries, texts = make_inputs(inputs)

    def load(model: str) -> Any:
        return FakeReranker(model, listwise=model == "listy", delay_s=delay)

    plan = Path(__file__).resolve().parents[2] / "PLAN.md"
    try:
        study = Study.start(
            study_dir,
            kind="rehearsal",
            plan_path=plan,
            params={"test": 1},
            provenance={"git": {"commit": None}},
            preflight=None,
        )
        execute(
            study,
            sources=sources,
            queries=queries,
            texts=texts,
            load=load,
            spec=SPEC,
            runs_dir=runs_dir,
            resume_hint="rerun the test script",
        )
    except BenchError as exc:
        print(exc.message, file=sys.stderr)
        return exc.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
