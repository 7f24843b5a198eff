"""One slow latency block in its own process, for the SIGKILL test.

``python -m tests.latency.killable OUT_ROOT MARKER``: a fake adapter sleeping 50 ms per call; MARKER is
created at the 5th call, so the parent can kill the process in the middle of the block.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from bench.latency.callers import RerankerCaller
from bench.latency.harness import run_block
from bench.latency.timer import WallTimer
from bench.rerankers.protocol import ScoreResult
from tests.latency.fakes import FakeReranker, env, spec


class Marking(FakeReranker):
    def __init__(self, marker: Path) -> None:
        super().__init__(delay_s=0.05)
        self.marker = marker

    def score(self, query: str, passages: Sequence[str]) -> ScoreResult:
        if self.calls == 4:
            self.marker.touch()
        return super().score(query, passages)


def main(argv: list[str]) -> int:
    out_root, marker = Path(argv[0]), Path(argv[1])
    run_block(spec(measured=200), RerankerCaller(Marking(marker), WallTimer()), env(out_root))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
