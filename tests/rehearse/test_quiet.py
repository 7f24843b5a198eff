"""A rehearsal keeps the transformers load report off the terminal and in its libraries.log.
Checked on the session's shared run (``rehearsal`` fixture), which is its own process: the report is
printed once per model load, and an in-process model cache of another test would hide it."""

from __future__ import annotations

import pytest

from tests.support.rehearsal import Rehearsal

# the shared run is made inside the first test that asks for it: up to a whole rehearsal on a loaded machine
pytestmark = [pytest.mark.typesense, pytest.mark.model, pytest.mark.timeout(1800)]


def test_load_report_is_in_the_log_not_on_the_terminal(rehearsal: Rehearsal) -> None:
    assert rehearsal.returncode == 0, rehearsal.stderr
    assert "LOAD REPORT" not in rehearsal.stderr + rehearsal.stdout
    assert "Loading weights" not in rehearsal.stderr  # transformers' progress bar is off as well
    log = (rehearsal.dir / "libraries.log").read_text(encoding="utf-8")
    assert "BertModel LOAD REPORT" in log and "UNEXPECTED" in log
    assert "rehearse: " in rehearsal.stderr  # the command's own diagnostics still reach the terminal
