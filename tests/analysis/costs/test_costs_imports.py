"""analysis.costs runs without bench, torch or a server client (STYLE: analysis never imports bench)."""

from __future__ import annotations

import subprocess
import sys

FORBIDDEN = ("bench", "torch", "scipy", "transformers", "tokenizers", "httpx", "typesense")


def test_costs_imports_only_analysis() -> None:
    code = (
        "import sys\n"
        "import analysis.costs.section, analysis.figures.costs, analysis.costs.report, analysis.costs.cli\n"
        f"bad = sorted(m for m in sys.modules if m.split('.')[0] in {FORBIDDEN!r})\n"
        "print(bad)\n"
        "sys.exit(1 if bad else 0)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
