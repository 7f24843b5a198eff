"""The costs section's one error type: bad input names the file, the line (where there is one) and the fix."""

from __future__ import annotations

from pathlib import Path


class CostInputError(ValueError):
    """A bad prices file, rate file, latency file or date. ``analysis`` turns it into exit 1 and one line."""

    def __init__(self, path: Path | str, line: int | None, problem: str, fix: str) -> None:
        self.path = str(path)
        self.line = line
        self.problem = problem
        self.fix = fix
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {problem}. Fix: {fix}")

    def __reduce__(self) -> tuple[type, tuple[str, int | None, str, str]]:
        return (type(self), (self.path, self.line, self.problem, self.fix))
