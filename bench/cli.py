"""The ``bench`` command: one thin subcommand per phase of the plan.

Subcommands are loaded lazily from the package that owns them, so ``bench --help`` is fast and a
phase whose heavy dependencies (torch, a server client) are missing fails only when it is called,
with a message naming the missing package.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

import click

# name -> "module:attribute"; each module owns its command and keeps it thin over a library function.
COMMANDS: dict[str, str] = {
    "timestamps": "bench.integrity.cli:timestamps",
    "data": "bench.integrity.cli:data",
    "first-stage": "bench.firststage.cli:first_stage",
    "models": "bench.rerankers.cli:models",
    "check-adapters": "bench.equality.cli:check_adapters",
    "quality": "bench.quality.cli:quality",
    "determinism": "bench.quality.cli:determinism",
    "dtype-check": "bench.quality.cli:dtype_check",
    "rehearse": "bench.rehearse.cli:rehearse",
    "int8": "bench.int8.cli:int8",
    "costs": "bench.costs.cli:costs",
    "latency": "bench.latency.cli:latency",
    "judged": "bench.judged.cli:judged",
    "audit": "bench.audit.cli:audit",
    "reproduce": "bench.audit.cli:reproduce",
    "status": "bench.status.command:status",
    "doctor": "bench.doctor.cli:doctor",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            missing = exc.name or "?"
            raise click.ClickException(
                f"`bench {cmd_name}` needs the Python package {missing!r}, which is not installed. "
                "Install the measuring dependencies with `uv sync` (default groups bench, rehearsal and dev)."
            ) from exc
        command = getattr(module, attr)
        if not isinstance(command, click.Command):
            raise TypeError(f"{target} is not a click command")
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            try:
                cmd = self.get_command(ctx, name)
                help_text = cmd.get_short_help_str(limit=70) if cmd is not None else ""
            except click.ClickException as exc:
                help_text = f"(unavailable: {exc.message[:60]})"
            rows.append((name, help_text))
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup)
def cli() -> None:
    """Measure German rerankers on MIRACL-de exactly as PLAN.md fixes it."""


def main() -> None:
    root = os.environ.get("BENCH_ROOT")
    if root and not Path(root).is_dir():  # every command reads the checkout from there (bench.core.paths)
        what = "does not exist" if not Path(root).exists() else "is not a folder"
        click.echo(
            f"Error: BENCH_ROOT={root} {what}; bench reads the study's checkout from it. Fix: set "
            "BENCH_ROOT to the root folder of a checkout of the study, or unset it",
            err=True,
        )
        sys.exit(1)
    cli(prog_name="bench")


if __name__ == "__main__":
    main()
