"""One spelling of the study's folder options across every ``bench`` command (bench.core.folder_options): the
old ``--runs-dir``, ``--checks-dir``, ``--results-dir`` and ``--first-stage-dir`` are gone, and every
``--runs``, ``--checks``, ``--first-stage`` and ``--study`` is a folder option."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from bench.cli import cli as bench_main
from bench.core import folder_options

OLD = {"--runs-dir", "--checks-dir", "--results-dir", "--first-stage-dir"}
ONE = {"--runs", "--checks", "--first-stage", "--study"}


def _commands(
    group: click.Group, ctx: click.Context, path: str = "bench"
) -> Iterator[tuple[str, click.Command]]:
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, f"{path} {name}"
        yield f"{path} {name}", command
        if isinstance(command, click.Group):
            yield from _commands(command, ctx, f"{path} {name}")


def _all_options() -> list[tuple[str, click.Option]]:
    ctx = click.Context(bench_main)
    return [
        (where, p)
        for where, command in _commands(bench_main, ctx)
        for p in command.params
        if isinstance(p, click.Option)
    ]


def test_no_old_spelling_and_one_type() -> None:
    options = _all_options()
    flags = {flag for _, option in options for flag in option.opts}
    assert not flags & OLD
    folder_options_seen = [(where, o) for where, o in options if set(o.opts) & ONE]
    # the study commands that take folders: quality, determinism, dtype-check, latency *, int8 quality,
    # judged prepare, check-adapters, first-stage, costs passage-tokens
    assert len(folder_options_seen) >= 15
    for where, option in folder_options_seen:
        assert isinstance(option.type, click.Path), where
        assert option.type.file_okay is False and option.type.dir_okay is True, (where, option.opts)


def test_check_adapters_takes_checks(tmp_path: Path) -> None:
    result = CliRunner().invoke(bench_main, ["check-adapters", "--results-dir", str(tmp_path)])
    assert result.exit_code == 2 and "No such option '--results-dir'" in result.output


@pytest.mark.parametrize("dest", [None, "runs_dir"])
def test_dest_and_default(dest: str | None) -> None:
    @click.command()
    @folder_options.options(folder_options.runs_option(dest=dest), folder_options.checks_option())
    def cmd(**kwargs: object) -> None:
        click.echo(repr(sorted(kwargs.items())))

    out = CliRunner().invoke(cmd, ["--runs", "r"]).output
    name = dest or "runs"
    assert out.strip() == repr(sorted({name: Path("r"), "checks": None}.items()))
    help_text = CliRunner().invoke(cmd, ["--help"]).output
    assert help_text.index("--runs") < help_text.index("--checks")  # the order given
