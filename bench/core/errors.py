"""The one exception type bench raises for bad input or a refused measurement.

The CLI turns it into a message on stderr and a non-zero exit; it never prints a traceback for a user
error. Messages name the file (and line) and say how to fix it.
"""

from __future__ import annotations

import click


class BenchError(click.ClickException):
    """Bad input, a failed check or a refused measurement. ``exit_code`` defaults to 1."""

    def __init__(self, message: str, *, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code  # type: ignore[misc]
