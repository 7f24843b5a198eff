"""Wall time of `bench status` in a fresh process (under 2 s; it reads nothing heavy).

Prints the median of 5 runs of `bench status --json` on this checkout, the load average beside it, and
whether torch, numpy or pyarrow were imported (they must not be)."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

CHECK = (
    "HEAVY = ('torch', 'numpy', 'pyarrow')\n"
    "import sys, runpy; sys.argv = ['bench', 'status', '--json']\n"
    "from bench.cli import cli\n"
    "try:\n    cli(prog_name='bench', standalone_mode=False)\n"
    "finally:\n    print(sorted(m for m in HEAVY if m in sys.modules), file=sys.stderr)"
)


def run_once(env: dict[str, str] | None = None) -> tuple[float, str]:
    """Wall seconds of one `bench status --json` in a fresh process, and the heavy modules it imported.
    Also used by ``guard.py``."""
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, check=True, env=env)
    return time.perf_counter() - t0, proc.stderr.strip().splitlines()[-1]


def main() -> None:
    times = []
    heavy = ""
    for _ in range(5):
        seconds, heavy = run_once()
        times.append(seconds)
    print(
        f"bench status --json: median {statistics.median(times):.3f} s over 5 runs (min {min(times):.3f} s, "
        f"max {max(times):.3f} s; target < 2 s); load average {os.getloadavg()[0]:.2f}; heavy modules "
        "imported: "
        f"{heavy}"
    )


if __name__ == "__main__":
    main()
