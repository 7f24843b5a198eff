"""Library diagnostics (the transformers load report) go to the log file, not the terminal, unless verbose
(issue 9 item 15); the loggers are restored afterwards."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from bench.liblog import LOGGERS, library_log

REPORT = "\x1b[1mBertModel LOAD REPORT\x1b[0m from: model\nembeddings.position_ids | UNEXPECTED"


def _state() -> list[tuple[list[logging.Handler], bool, int]]:
    return [(list(lg.handlers), lg.propagate, lg.level) for lg in map(logging.getLogger, LOGGERS)]


def test_load_report_goes_to_the_file_not_the_terminal(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    import transformers.utils.logging as tlog

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
