"""What one check of ``bench doctor`` found: ok, a problem with its fix, cannot tell (and why), or info."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from bench.doctor.machine import Machine

State = Literal["ok", "problem", "cannot tell", "info"]


@dataclass(frozen=True)
class Outcome:
    check: str
    state: State
    message: str  # one line: what was found
    fix: str | None = None  # one line: what to do (a problem always has one)

    def line(self) -> str:
        text = f"{self.state.upper():<12} {self.check:<16} {self.message}"
        return f"{text}; fix: {self.fix}" if self.fix else text

    def as_json(self) -> dict[str, Any]:
        return {"check": self.check, "state": self.state, "message": self.message, "fix": self.fix}


def ok(check: str, message: str) -> Outcome:
    return Outcome(check, "ok", message)


def problem(check: str, message: str, fix: str) -> Outcome:
    return Outcome(check, "problem", message, fix)


def cannot_tell(check: str, message: str, fix: str | None = None) -> Outcome:
    return Outcome(check, "cannot tell", message, fix)


def info(check: str, message: str) -> Outcome:
    return Outcome(check, "info", message)


Check = Callable[[Machine, str], list[Outcome]]  # (the machine, the step id) -> one or more outcomes


def exit_code(outcomes: list[Outcome]) -> int:
    """0 ready, 1 not ready (a problem), 3 cannot tell (no problem, but something could not be checked)."""
    if any(o.state == "problem" for o in outcomes):
        return 1
    return 3 if any(o.state == "cannot tell" for o in outcomes) else 0
