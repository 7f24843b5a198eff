"""Every NOT YET row of the audit names the runbook step that completes it."""

from __future__ import annotations

from bench.audit.rows import Row
from bench.audit.steps import STEPS, with_steps
from bench.core.runbook import read_runbook
from tests.conftest import REPO_ROOT


def test_every_mapped_step_is_in_the_runbook() -> None:
    ids = {s.id for s in read_runbook(REPO_ROOT)}
    assert {*STEPS.values(), "stamp"} <= ids


def test_not_yet_rows_carry_their_step() -> None:
    rows = [
        Row(1, "plan", "OK", "fine"),
        Row(2, "timestamps", "NOT YET", "14 not stamped: stamp on a machine with internet"),
        Row(2, "timestamps", "NOT YET", "2 pending: the Bitcoin attestations are not there yet"),
        Row(5, "results", "NOT YET", "no study run committed yet", ("detail",)),
        Row(9, "reranked", "NOT YET", "no reranked run committed yet"),
        Row(42, "a row added later", "NOT YET", "not yet"),
    ]
    out = with_steps(rows, REPO_ROOT)
    assert out[0] == rows[0]
    firsts = [r.details[0] for r in out[1:]]
    assert firsts[0].startswith('completes it: runbook step stamp (docs/runbook.md, "1. ')
    # the step first writes the analysis code's record that it stamps with the plan
    assert firsts[0].endswith(
        "): docker compose run --rm --entrypoint analysis bench-cpu code-digest --out "
        "timestamps/analysis-code.json"
    )
    assert firsts[1].startswith('completes it: runbook step stamp-later (docs/runbook.md, "19. ')
    assert firsts[2].startswith('completes it: runbook step report (docs/runbook.md, "17. ')
    assert out[3].details[1:] == ("detail",)
    assert firsts[3].startswith('completes it: runbook step quality (docs/runbook.md, "6. ')
    assert firsts[4] == (
        "completes it: the runbook's steps in order (docs/runbook.md); `bench status` names the next one"
    )
