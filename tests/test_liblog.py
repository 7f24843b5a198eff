"""Library diagnostics (the transformers load report) go to the log file, not the terminal, unless verbose;
the loggers are restored afterwards."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from bench.core.liblog import LOGGERS, library_log

REPORT = "\x1b[1mBertModel LOAD REPORT\x1b[0m from: model\nembeddings.position_ids | UNEXPECTED"


def _state() -> list[tuple[list[logging.Handler], bool, int]]:
    return [(list(lg.handlers), lg.propagate, lg.level) for lg in map(logging.getLogger, LOGGERS)]


def test_load_report_goes_to_the_file_not_the_terminal(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    import optimum.utils.logging as olog
    import transformers.utils.logging as tlog

    olog.get_logger("optimum")  # every block installs optimum's handler first; it stays after
    before = _state()
    log = tmp_path / "run" / "libraries.log"
    with library_log(log):
        log.parent.mkdir()  # the folder may appear inside the block: the file comes with the first record
        logging.getLogger("transformers.utils.loading_report").warning(REPORT)
        logging.getLogger("sentence_transformers.SentenceTransformer").warning("st says hi")
        assert not tlog.is_progress_bar_enabled()
    out, err = capfd.readouterr()
    assert "LOAD REPORT" not in err + out and "st says hi" not in err + out
    text = log.read_text(encoding="utf-8")
    assert "BertModel LOAD REPORT from: model" in text and "UNEXPECTED" in text and "\x1b[" not in text
    assert "st says hi" in text
    assert _state() == before and tlog.is_progress_bar_enabled()


def test_verbose_shows_it_on_the_terminal_too(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "libraries.log"
    with library_log(log, verbose=True):
        logging.getLogger("transformers.utils.loading_report").warning(REPORT)
    _, err = capfd.readouterr()
    assert "LOAD REPORT" in err
    assert "LOAD REPORT" in log.read_text(encoding="utf-8")


def test_nothing_logged_leaves_no_file(tmp_path: Path) -> None:
    with library_log(tmp_path / "libraries.log"):
        pass
    assert not (tmp_path / "libraries.log").exists()


OPTIMUM_STEP = """
import logging, os, sys, tempfile
from pathlib import Path
os.environ["HF_HUB_OFFLINE"] = "1"
from bench.core.liblog import library_log
from bench.core.memory import collector_paused
log = Path(sys.argv[1])
with library_log(log):
    # the rehearsal's int8 step, as its parent process does it (bench.rerankers.openvino.adapter): optimum
    # imported inside the block with the garbage collector paused (1.5 CPU-s less), then an int8 folder
    # loaded offline (a folder without a model here: the same warning, then an error)
    with collector_paused():
        from optimum.intel import OVModelForFeatureExtraction
    try:
        OVModelForFeatureExtraction.from_pretrained(tempfile.mkdtemp(), local_files_only=True)
    except Exception as exc:
        print(f"refused as expected: {type(exc).__name__}")
"""


def test_optimum_messages_of_the_int8_step_go_to_the_file(tmp_path: Path) -> None:
    """A fresh `bench rehearse` printed optimum's "Could not infer whether the model was already
    converted ..." and "[Errno 2] ... refs/main" at step 9: optimum installs its terminal handler on first
    use, which came inside the block. In a fresh interpreter (optimum not yet configured) nothing reaches
    stderr and both lines are in the log file."""
    import subprocess
    import sys

    log = tmp_path / "libraries.log"
    proc = subprocess.run(
        [sys.executable, "-c", OPTIMUM_STEP, str(log)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "refused as expected" in proc.stdout
    assert "Could not infer" not in proc.stderr and "refs/main" not in proc.stderr, proc.stderr
    text = log.read_text(encoding="utf-8")
    assert "Could not infer whether the model was already converted" in text and "refs/main" in text
