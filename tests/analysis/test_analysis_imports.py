"""analysis installs and runs without bench, torch, scipy or server clients."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

FORBIDDEN = ("bench", "torch", "scipy", "statsmodels", "pytrec_eval", "transformers", "httpx", "typesense")


def test_runtime_imports_only_numpy_click_matplotlib() -> None:
    code = (
        "import sys\n"
        "import analysis.cli, analysis.reporting.report, analysis.figures\n"
        "import analysis.simulation.simulate, analysis.reporting.checks\n"
        "from analysis.cli import cli\n"
        "from click.testing import CliRunner\n"
        "assert CliRunner().invoke(cli, ['--help']).exit_code == 0\n"
        f"bad = sorted(m for m in sys.modules if m.split('.')[0] in {FORBIDDEN!r})\n"
        "print(bad)\n"
        "sys.exit(1 if bad else 0)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_report_imports_no_pandas_and_without_figures_no_matplotlib(
    tmp_path: Path, miracl_qrels_path: Path
) -> None:
    """Pyarrow imports pandas on its first ``pa.array``, ``to_numpy`` or ``fill_null`` (0.5 s of a
    cold report): no report needs it. matplotlib draws every figure (analysis.figures) and is imported only
    when figures are drawn: the JSON and Markdown alone (``--no-figures``) never load it."""
    from analysis.inputs.trec import read_qrels
    from analysis.simulation.synthetic import write_study  # numpy: not at collection

    MIRACL_QRELS = miracl_qrels_path

    runs = tmp_path / "runs"
    write_study(
        runs, read_qrels(MIRACL_QRELS), stages=["hybrid-71k"], models={"bge-v2-m3": 1.5}, depths=(20,)
    )
    # one process, the plain report first: what it loaded is read before the report with figures runs
    code = "import sys\nfrom pathlib import Path\nfrom analysis.reporting.report import write_report\n"
    for figures, out in ((False, tmp_path / "plain"), (True, tmp_path / "out")):
        code += (
            f"write_report(Path({str(runs)!r}), Path({str(MIRACL_QRELS)!r}), Path({str(out)!r}), "
            f"figures={figures})\n"
            "loaded = {m.split('.')[0] for m in sys.modules}\n"
            f"print({figures}, sorted(loaded & {{'pandas', 'matplotlib'}}))\n"
            f"if 'pandas' in loaded or ('matplotlib' in loaded) != {figures}:\n"
            f"    sys.exit({2 if figures else 1})\n"
        )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    for figures, out in ((False, tmp_path / "plain"), (True, tmp_path / "out")):
        assert (out / "figures" / "hybrid-71k.png").is_file() is figures
        assert (out / "report.md").is_file()
