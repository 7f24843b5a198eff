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
from tests.latency.fakes import env, ordered_fake, spec
from tests.support.fakes import FakeReranker


def marking(marker: Path) -> FakeReranker:
    """Sleeps 50 ms a call and creates ``marker`` at its 5th call."""

    def mark(fake: FakeReranker, query: str, passages: Sequence[str]) -> None:
        if len(fake.calls) == 5:
            marker.touch()

    return ordered_fake(delay_s=0.05, on_call=mark)


def main(argv: list[str]) -> int:
    out_root, marker = Path(argv[0]), Path(argv[1])
    run_block(spec(measured=200), RerankerCaller(marking(marker), WallTimer()), env(out_root))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
