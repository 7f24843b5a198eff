"""``bench doctor [STEP]``: this machine checked for a step of docs/runbook.md; exit 0 ready, 1 not ready,
3 cannot tell. One line per finding (a problem with its fix); ``--json`` for one JSON object."""

from __future__ import annotations

import json

import click

from bench.doctor.machine import Machine
from bench.doctor.outcome import exit_code
from bench.doctor.steps import DEFAULT_STEP, STEP_CHECKS, run_checks

VERDICT = {0: "ready", 1: "NOT READY", 3: "cannot tell"}


@click.command("doctor")
@click.argument("step", type=click.Choice(list(STEP_CHECKS)), default=DEFAULT_STEP)
@click.option("--json", "as_json", is_flag=True, help="One JSON object on stdout.")
def doctor(step: str, as_json: bool) -> None:
    """Check this machine for a runbook STEP (default: prepare, the whole machine); exit 0 ready, 1 not
    ready, 3 cannot tell."""
    outcomes = run_checks(Machine.here(), step)
    code = exit_code(outcomes)
    if as_json:
        click.echo(
            json.dumps(
                {
                    "step": step,
                    "exit": code,
                    "verdict": VERDICT[code],
                    "checks": [o.as_json() for o in outcomes],
                },
                indent=2,
            )
        )
    else:
        for o in outcomes:
            click.echo(o.line())
        problems = sum(o.state == "problem" for o in outcomes)
        unknown = sum(o.state == "cannot tell" for o in outcomes)
        click.echo(f"bench doctor {step}: {VERDICT[code]} ({problems} problem(s), {unknown} cannot tell)")
    raise SystemExit(code)
