"""`bench rehearse` is a declared list of steps run by one loop: the declared order is
consistent (each step needs only what an earlier one gave), rehearsal.json's ``times_s`` keys are those of
the rehearsal before the loop, and the loop's interrupt check, timing, progress and study guard hold for any
step (checked on stand-in steps, without a rehearsal)."""

from __future__ import annotations

import io
import signal
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from bench.core.interrupt import EXIT_INTERRUPTED, Interrupted, _raise_interrupt, interruptible
from bench.rehearse.run import STEPS, Context, Options, Step, run_steps

# rehearsal.json "times_s" before the steps were declared (75510f8), "total" added by rehearse() itself
TIMES_KEYS = (
    "lock check",
    "load inputs",
    "int8 quantise",
    "first stages",
    "rerank",
    "latency",
    "int8",
    "report",
)


def context(tmp_path: Path) -> tuple[Context, io.StringIO]:
    err = io.StringIO()
    hint = "docker compose run --rm bench-cpu rehearse --resume X"
    return Context(tmp_path, Options(), tmp_path, False, hint, err), err


class FakeStudy:
    def __init__(self) -> None:
        self.ended: list[tuple[str, dict[str, Any]]] = []

    def end(self, status: str, **fields: Any) -> None:
        self.ended.append((status, fields))


def test_each_step_needs_only_what_an_earlier_step_gave() -> None:
    given: set[str] = set()
    for step in STEPS:
        assert set(step.needs) <= given, f"{step.name} needs {set(step.needs) - given}"
        assert not set(step.gives) & given, f"{step.name} gives {set(step.gives) & given} a second time"
        given |= set(step.gives)
        if step.study_guard:
            assert "study" in step.needs
    assert len({s.name for s in STEPS}) == len(STEPS)
    # what rehearse() reads after the loop
    after = {"inputs", "stages", "session", "int8", "table", "report", "latency_step", "judged", "title"}
    assert after <= given


def test_timed_steps_are_the_times_keys_of_before() -> None:
    assert tuple(s.name for s in STEPS if s.timed) == TIMES_KEYS
    assert [s.name for s in STEPS if s.study_guard] == ["int8 quantise", "first stages"]


def test_the_loop_passes_what_steps_gave_times_and_reports_progress(tmp_path: Path) -> None:
    seen: list[Mapping[str, Any]] = []

    def first(ctx: Context, got: Mapping[str, Any]) -> dict[str, Any]:
        return {"a": 1}

    def second(ctx: Context, got: Mapping[str, Any]) -> dict[str, Any]:
        seen.append(dict(got))
        return {"b": got["a"] + 1}

    ctx, err = context(tmp_path)
    steps = [Step("one", first, gives=("a",)), Step("two", second, ("a",), ("b",), timed=False)]
    got, times = run_steps(steps, ctx)
    assert got == {"a": 1, "b": 2} and seen == [{"a": 1}]
    assert list(times) == ["one"] and times["one"] >= 0
    assert err.getvalue() == "rehearse: step 1/2: one\nrehearse: step 2/2: two\n"
    # work a step hands to a thread (the first stages' server stop) goes on beside the later steps; the
    # rehearsal waits for it at its end, and an error of that work is raised then
    release, done = threading.Event(), []
    ctx.in_background(lambda: done.append(release.wait(60)))
    assert done == []
    release.set()
    ctx.wait_background()
    assert done == [True]

    def fails() -> None:
        raise OSError("the server did not stop")

    ctx.in_background(fails)
    with pytest.raises(OSError, match="did not stop"):
        ctx.wait_background()
    ctx.wait_background(raise_error=False)  # with an error of the rehearsal's own in flight


def test_a_swallowed_interrupt_ends_the_rehearsal_after_that_step(tmp_path: Path) -> None:
    ran: list[str] = []

    def swallows(ctx: Context, got: Mapping[str, Any]) -> dict[str, Any]:
        ran.append("swallows")
        try:
            _raise_interrupt(signal.SIGTERM, None)  # what our handler does on SIGTERM
        except KeyboardInterrupt:  # a library's bare except: the interrupt is lost
            pass
        return {}

    def later(ctx: Context, got: Mapping[str, Any]) -> dict[str, Any]:
        ran.append("later")
        return {}

    ctx, _ = context(tmp_path)
    with interruptible(), pytest.raises(KeyboardInterrupt, match="SIGTERM"):  # as under whole_command
        run_steps([Step("swallows", swallows), Step("later", later)], ctx)
    assert ran == ["swallows"]


def test_a_guarded_step_records_an_interrupt_and_a_failure_in_the_study(tmp_path: Path) -> None:
    study = FakeStudy()

    def start(ctx: Context, got: Mapping[str, Any]) -> dict[str, Any]:
        return {"study": study}

    def interrupted(ctx: Context, got: Mapping[str, Any]) -> dict[str, Any]:
        raise KeyboardInterrupt

    def fails(ctx: Context, got: Mapping[str, Any]) -> dict[str, Any]:
        raise OSError("disk full")

    ctx, _ = context(tmp_path)
    begin = Step("start", start, gives=("study",))
    with pytest.raises(Interrupted) as caught:
        run_steps([begin, Step("g", interrupted, ("study",), study_guard=True)], ctx)
    assert caught.value.exit_code == EXIT_INTERRUPTED
    assert "rehearsal interrupted" in str(caught.value) and ctx.hint in str(caught.value)
    assert study.ended == [("interrupted", {})]
    with pytest.raises(OSError, match="disk full"):
        run_steps([begin, Step("g", fails, ("study",), study_guard=True)], ctx)
    assert study.ended[1] == ("failed", {"error": "OSError: disk full"})
    with pytest.raises(KeyboardInterrupt):  # an unguarded step leaves the study to the command around it
        run_steps([begin, Step("u", interrupted, ("study",))], ctx)
    assert len(study.ended) == 2


def test_a_step_run_before_what_it_needs_or_giving_other_keys_is_refused(tmp_path: Path) -> None:
    def gives_a(ctx: Context, got: Mapping[str, Any]) -> dict[str, Any]:
        return {"a": 1}

    ctx, _ = context(tmp_path)
    with pytest.raises(RuntimeError, match="'late' needs b: no earlier step gave it"):
        run_steps([Step("early", gives_a, gives=("a",)), Step("late", gives_a, needs=("b",))], ctx)
    with pytest.raises(RuntimeError, match=r"'early' gave \['a'\], not \['c'\]"):
        run_steps([Step("early", gives_a, gives=("c",))], ctx)
