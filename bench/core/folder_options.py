"""The study's folder options, one spelling for every ``bench`` command: ``--study``, ``--runs``,
``--first-stage`` and ``--checks`` (adapter-check results). Each is a folder (``file_okay=False``), read
as a ``Path``, default None (the command resolves it against the checkout: ``runs``, ``runs/first-stage``,
``results/adapter-checks``, the study's own folder). ``dest`` keeps a command's parameter name; ``help``
says what the command does with the folder. A leaf of bench's shared core (it imports only click).

``analysis`` has its own ``--runs`` (``analysis/cli.py``): ``analysis`` never imports ``bench``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])
FOLDER = click.Path(path_type=Path, file_okay=False)


def _folder(flag: str, dest: str | None, help: str, **extra: Any) -> Callable[[F], F]:
    names = (flag, dest) if dest is not None else (flag,)
    return click.option(*names, type=FOLDER, **{"default": None, **extra}, help=help)


def study_option(help: str, *, dest: str | None = None, **extra: Any) -> Callable[[F], F]:
    """``--study``: the study directory (journal, manifest, frozen candidates); resumed if it exists."""
    return _folder("--study", dest, help, **extra)


def runs_option(
    help: str = "Runs folder (default runs).", *, dest: str | None = None, **extra: Any
) -> Callable[[F], F]:
    """``--runs``: where the study's run files are (``<runs>/<stage>/<model>@<k>.trec``)."""
    return _folder("--runs", dest, help, **extra)


def first_stage_option(
    help: str = "Folder of the first-stage runs (default runs/first-stage).", *, dest: str | None = None
) -> Callable[[F], F]:
    """``--first-stage``: the first-stage run files (``<folder>/<stage>.trec``)."""
    return _folder("--first-stage", dest, help)


def checks_option(
    help: str = "Adapter-check results (default results/adapter-checks).", *, dest: str | None = None
) -> Callable[[F], F]:
    """``--checks``: the adapter-check results (``<folder>/<model>.json``)."""
    return _folder("--checks", dest, help)


def options(*decorators: Callable[[F], F]) -> Callable[[F], F]:
    """Several options as one decorator, in the order given (the order ``--help`` lists them)."""

    def apply(f: F) -> F:
        for decorator in reversed(decorators):
            f = decorator(f)
        return f

    return apply
