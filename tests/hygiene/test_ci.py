"""README set-up and .ci/run agree: two commands after `pip install uv`, one test command, run verbatim."""

from __future__ import annotations

import re
from pathlib import Path

TEST_COMMAND = (
    "uv run ruff check . && uv run ruff format --check . && "
    "uv run lint-imports && uv run mypy && uv run pytest -q"
)


def code_blocks(text: str) -> list[str]:
    return [b.strip() for b in re.findall(r"```sh\n(.*?)```", text, flags=re.S)]


def test_readme_setup_is_pip_install_uv_then_two_commands(repo_root: Path) -> None:
    readme = (repo_root / "README.md").read_text(encoding="utf-8")
    setup = readme.split("## Set-up", 1)[1].split("\n## ", 1)[0]
    assert code_blocks(setup) == ["pip install uv", "uv run bench rehearse", TEST_COMMAND]


def test_readme_has_exactly_one_test_command(repo_root: Path) -> None:
    readme = (repo_root / "README.md").read_text(encoding="utf-8")
    commands = [b for b in code_blocks(readme) if "pytest" in b]
    assert commands == [TEST_COMMAND]
    rehearsal = (repo_root / "docs" / "rehearsal.md").read_text(encoding="utf-8")
    assert rehearsal.count("## What the rehearsal prints") == 1  # the section moved there from README.md


def test_ci_runs_exactly_the_readme_command(repo_root: Path) -> None:
    script = repo_root / ".ci" / "run"
    assert script.stat().st_mode & 0o111, ".ci/run must be executable"
    lines = [ln.strip() for ln in script.read_text(encoding="utf-8").splitlines()]
    commands = [ln for ln in lines if ln and not ln.startswith("#")]
    assert lines[0] == "#!/usr/bin/env bash"  # comment lines (the shebang too) are not in ``commands``
    assert "set -euo pipefail" in commands
    assert commands[-1] == TEST_COMMAND
    assert sum("pytest" in c for c in commands) == 1
    assert "uv sync --locked" in commands
    assert any(c.startswith("python3 -m pip install --quiet uv") for c in commands)
    # no services started (no engine, no server); the container is only linted and validated
    assert not any(
        re.search(r"\b(docker(-compose)? (run|up|build|start)|typesense-server|nohup)\b", c) for c in commands
    )
    checks = [c for c in commands if "hadolint" in c or "docker-compose" in c]
    assert checks == [
        "uv run hadolint docker/bench.Dockerfile",
        "uv run docker-compose -f compose.yaml config -q",
        "uv run docker-compose -f compose.yaml --profile cpu config -q",
    ]
    assert all(commands.index(c) < commands.index(TEST_COMMAND) for c in checks)
    # the torch-free tests on Python 3.14: the script exists, is executable and runs before the
    # test command; the chroot builder it uses is the one shared with the image proxy
    assert ".ci/py314" in commands and commands.index(".ci/py314") < commands.index(TEST_COMMAND)
    py314 = repo_root / ".ci" / "py314"
    assert py314.stat().st_mode & 0o111 and "chroot-py314.sh" in py314.read_text(encoding="utf-8")
