"""OpenVINO's and NNCF's usage telemetry is declined before they are imported
(``bench.rerankers.openvino.runtime.decline_usage_telemetry``): without it, a missing consent file counts as
consent and `int8 quantize` sends events to Google Analytics from processes forked from its own."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

# In a process of its own (the libraries decide once per process, NNCF at its import): the libraries' own
# answer in a home folder without a consent file, then the answer after the decline and a Telemetry made
# with NNCF's arguments (nncf.telemetry.wrapper; importing NNCF itself would cost seconds of torch).
CHILD = """
import json
from openvino_telemetry import Telemetry
from openvino_telemetry.utils.opt_in_checker import OptInChecker
from bench.rerankers.openvino.runtime import decline_usage_telemetry
before = OptInChecker().check(False, disable_in_ci=True).name
decline_usage_telemetry()
after = OptInChecker().check(False, disable_in_ci=True).name
made = Telemetry(app_name="probe", app_version="0", tid="G-PROBE", backend="ga4", enable_opt_in_dialog=False,
                 disable_in_ci=True)
print(json.dumps({"before": before, "after": after, "made": made.consent}))
"""


def test_quantising_declines_the_libraries_usage_telemetry(tmp_path: Path) -> None:
    env = {
        "HOME": str(tmp_path),
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
    }
    proc = subprocess.run(
        [sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout.splitlines()[-1])
    assert seen == {"before": "NO_FILE", "after": "DECLINED", "made": False}
    assert not (tmp_path / "intel").exists()  # no consent or client-id file written to the home folder
