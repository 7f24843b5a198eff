"""The rehearsal quantises in a child process (bench.rehearse.quantize_child): the folder is the one the
in-process function makes, a refusal reaches the parent with its message, and the child never outlives its
parent (parent gone at start; parent killed with SIGKILL mid-quantisation).

The tests that read one finished quantisation (its folder and manifest, the parent's terminal, the library
log) share one: ``quantised`` runs ``run_in_child`` once per module, in a fresh parent process inside a
``library_log`` block as the rehearsal does (a child run costs about 12 s, most of it the child's imports)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import pytest

from bench.core.errors import BenchError
from bench.rehearse.quantize_child import run_in_child
from bench.rerankers.openvino.config import CHOSEN
from bench.rerankers.openvino.manifest import verify_folder
from tests.support.tiny_models import build_bert

ROOT = Path(__file__).resolve().parents[2]
PAIRS = [("was ist die hauptstadt", "berlin ist die hauptstadt"), ("der rhein", "ein fluss im westen")] * 6


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_bert(tmp_path_factory.mktemp("tiny") / "bert")


@dataclass(frozen=True)
class Quantised:
    """One ``run_in_child`` of ``tiny`` on ``PAIRS`` by a fresh parent process inside ``library_log(log)``:
    the parent's exit status, what it printed, the returned manifest, the quantised folder and the log."""

    proc: subprocess.CompletedProcess[str]
    manifest: dict[str, Any]
    out: Path
    log: Path


PARENT = """
import json, sys
from pathlib import Path
from typing import Any
from bench.rerankers.openvino.config import CHOSEN
from bench.core.liblog import library_log
from bench.rehearse.quantize_child import run_in_child
out, log, result, tiny = map(Path, sys.argv[1:5])
pairs = json.loads(sys.argv[5])
with library_log(log):
    manifest = run_in_child(tiny, out, task="feature-extraction", pairs=[tuple(p) for p in pairs],
                            spec=CHOSEN.to_dict(), max_length=16, record={"source_model": "tiny"})
result.write_text(json.dumps(manifest), encoding="utf-8")  # a file: the parent's stdout must stay empty
"""


@pytest.fixture(scope="module")
def quantised(tiny: Path, tmp_path_factory: pytest.TempPathFactory) -> Quantised:
    base = tmp_path_factory.mktemp("quantised")
    out, log, result = base / "q", base / "rehearsal" / "libraries.log", base / "manifest.json"
    proc = subprocess.run(
        [sys.executable, "-c", PARENT, str(out), str(log), str(result), str(tiny), json.dumps(PAIRS)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1500,
    )
    assert proc.returncode == 0, proc.stderr
    return Quantised(proc, json.loads(result.read_text(encoding="utf-8")), out, log)


@pytest.mark.model
@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_child_writes_a_verified_folder_and_returns_its_manifest(quantised: Quantised) -> None:
    manifest = quantised.manifest
    assert manifest == verify_folder(quantised.out)
    assert manifest["calibration_samples_used"] == 2 * len(PAIRS)
    assert manifest["quantization"]["overflow_fix"] == CHOSEN.overflow_fix


def test_a_refusal_in_the_child_is_raised_with_its_message(tmp_path: Path) -> None:
    empty = tmp_path / "no-model"
    empty.mkdir()
    with pytest.raises(BenchError, match=r"no-model: no config\.json"):
        run_in_child(
            empty,
            tmp_path / "q",
            task="feature-extraction",
            pairs=PAIRS,
            spec=CHOSEN.to_dict(),
            max_length=16,
            record={},
        )
    assert not (tmp_path / "q").exists()


def test_the_child_refuses_to_start_when_its_parent_is_not_the_one_named(tmp_path: Path) -> None:
    args = tmp_path / "args.json"
    args.write_text("{}", encoding="utf-8")
    ppid_not_ours = "1"  # the child's parent is this test process, not pid 1
    proc = subprocess.run(
        [sys.executable, "-m", "bench.rehearse.quantize_child", str(args), ppid_not_ours],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 75, proc.stderr
    assert "parent 1 is gone; not quantising" in proc.stderr


@pytest.mark.model
@pytest.mark.slow
def test_a_parent_killed_with_sigkill_takes_the_quantising_child_with_it(tiny: Path, tmp_path: Path) -> None:
    out = tmp_path / "q"
    # 2000 calibration samples at max_length 64: the child is still at work long after its build folder
    # appears (importing the quantiser's libraries, about 10 CPU-s, then tokenising, export, calibration); the
    # kill follows within a poll, so the child's libraries are never fully imported (no CPU spent on them)
    parent_code = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        from bench.rerankers.openvino.config import CHOSEN
        from bench.rehearse.quantize_child import run_in_child
        pairs = [("frage nummer %d" % i, "eine lange antwort " * 8) for i in range(1000)]
        run_in_child(Path({str(tiny)!r}), Path({str(out)!r}), task="feature-extraction", pairs=pairs,
                     spec=CHOSEN.to_dict(), max_length=64, record={{}})
        """
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", parent_code], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 120
        child = None
        while child is None and time.monotonic() < deadline:
            kids = psutil.Process(parent.pid).children()
            child = next((k for k in kids if "bench.rehearse.quantize_child" in " ".join(k.cmdline())), None)
            time.sleep(0.2)
        assert child is not None, "the quantising child never started"
        # the event: the child's build folder beside the target appears as its work starts, before the
        # quantiser's libraries are imported (bench.int8.quantize); the deadline only guards against a hang
        while not list(out.parent.glob(f".{out.name}.*")) and time.monotonic() < deadline + 600:
            assert child.is_running(), "the quantising child ended before it started its work"
            time.sleep(0.05)
        assert list(out.parent.glob(f".{out.name}.*")), "the child never started quantising"
        assert child.is_running()
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(timeout=30)
        gone, alive = psutil.wait_procs([child], timeout=30)
        assert child in gone and not alive, "the child outlived its parent"
    finally:
        if parent.poll() is None:
            parent.kill()
    assert not out.exists()  # a killed quantisation leaves no folder in the target's place
    leftovers = [p for p in out.parent.iterdir() if p.name.startswith(out.name)]
    assert all(not p.is_dir() or not (p / "int8-manifest.json").exists() for p in leftovers)


def test_args_file_is_json_the_child_can_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, object] = {}

    def fake_run(cmd: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        args = json.loads(Path(cmd[3]).read_text(encoding="utf-8"))
        seen.update(args)
        Path(args["result"]).write_text(json.dumps({"manifest": {"ok": 1}}), encoding="utf-8")
        assert cmd[4] == str(os.getpid())
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(subprocess, "run", fake_run)
    assert run_in_child(
        tmp_path,
        tmp_path / "q",
        task="feature-extraction",
        pairs=PAIRS[:2],
        spec=CHOSEN.to_dict(),
        max_length=16,
        record={"a": 1},
    ) == {"ok": 1}
    assert seen["pairs"] == [list(p) for p in PAIRS[:2]] and seen["record"] == {"a": 1}
    assert seen["library_log"] is None and seen["verbose"] is False


@pytest.mark.model
@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_the_childs_library_output_goes_to_the_log_not_the_terminal(quantised: Quantised) -> None:
    """Optimum's "Could not infer whether the model was already converted" (with its
    "[Errno 2] ... refs/main"), torch's TracerWarnings and "No CUDA runtime is found" reached the terminal of
    `bench rehearse` from the quantising child, beside the parent's clean libraries.log."""
    proc = quantised.proc
    assert proc.returncode == 0, proc.stderr
    library_lines = (
        "Could not infer whether",
        "refs/main",
        "TracerWarning",
        "No CUDA runtime",
        "LOAD REPORT",
    )
    assert [x for x in library_lines if x in proc.stderr] == [], proc.stderr
    text = quantised.log.read_text(encoding="utf-8")
    assert "optimum.intel.openvino.modeling_base: Could not infer whether" in text
    assert "py.warnings" in text and "TracerWarning" in text
    assert (quantised.out / "int8-manifest.json").is_file()


@pytest.mark.model
@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_nncfs_progress_bars_go_to_the_library_log_not_the_terminal(quantised: Quantised) -> None:
    """The rehearsal's step 4 (quantise) showed nncf's progress bars ("Statistics collection",
    "Applying Fast Bias correction"), a library's output, on the terminal. Inside a ``library_log`` block
    (the rehearsal's), the child's stdout, where they are printed, goes to the log file; nothing of the
    libraries reaches the parent's stdout or stderr (the child's stderr is the parent's)."""
    out, err = quantised.proc.stdout, quantised.proc.stderr
    assert out == "" and err == "", (out, err)
    text = quantised.log.read_text(encoding="utf-8")
    assert "Statistics collection" in text and "Could not infer" not in out + err
