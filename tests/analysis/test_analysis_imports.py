"""analysis installs and runs without bench, torch, scipy or server clients (issue 3)."""

from __future__ import annotations

import subprocess
import sys

FORBIDDEN = ("bench", "torch", "scipy", "statsmodels", "pytrec_eval", "transformers", "httpx", "typesense")


def test_runtime_imports_only_numpy_click_matplotlib() -> None:
    code = (
        "import sys\n"
        "import analysis.cli, analysis.report, analysis.figures, analysis.simulate, analysis.checks\n"
        "from analysis.cli import cli\n"
        "from click.testing import CliRunner\n"
        "assert CliRunner().invoke(cli, ['--help']).exit_code == 0\n"
        f"bad = sorted(m for m in sys.modules if m.split('.')[0] in {FORBIDDEN!r})\n"
        "print(bad)\n"
        "sys.exit(1 if bad else 0)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
