"""Subprocess for the crash test: imports the bundled sample slowly so the test can SIGKILL it midway."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path

from bench.data import Passage
from bench.data.bundled import load_sample
from bench.firststage.definitions import STAGE_DEFS
from bench.firststage.importer import import_passages
from bench.firststage.server import TypesenseServer


def slow(passages: list[Passage]) -> Iterator[Passage]:
    for i, p in enumerate(passages):
        if i % 100 == 0:  # the test kills it past 1,500: 0.3 s of pauses before, 1.2 s after
            time.sleep(0.02)
        yield p


def main() -> None:
    url, key, checkpoint = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    server = TypesenseServer(url, key)
    stage = STAGE_DEFS["keyword-plain-71k"]
    import_passages(server, stage.schema(), slow(load_sample().corpus), checkpoint=checkpoint, batch_size=100)


if __name__ == "__main__":
    main()
