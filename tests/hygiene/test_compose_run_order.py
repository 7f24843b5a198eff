"""Every `docker compose run` command the documents show has its options before the service:
`docker compose run --rm --entrypoint analysis bench-cpu report ...`. Written after the service
(`bench-cpu --entrypoint analysis report`), compose passes them to the container's entry point, and the
author's command fails. The commands are parsed from README.md, results/README.md and docs/*.md (inline
code and code blocks); the phase table's service cells (docs/phases.md), which the reader puts after
`docker compose run --rm`, hold a service name alone or a whole command."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from tests.hygiene.test_readme_phases import phase_rows

# Options of `docker compose run` that no `bench`/`analysis` command takes: after the service they are
# the container's arguments, never compose's. (`--publish` is left out: `bench` has an option of that name.)
COMPOSE_ONLY = frozenset(
    {
        "--rm",
        "--entrypoint",
        "--no-deps",
        "--service-ports",
        "--use-aliases",
        "--remove-orphans",
        "--volume",
        "--workdir",
        "--user",
        "--env",
        "--name",
        "--detach",
        "--build",
        "--pull",
        "--label",
        "--interactive",
        "--tty",
        "--no-TTY",
        "--cap-add",
        "--cap-drop",
        "--quiet-pull",
        "-T",
    }
)
# Options of `docker compose run` that take a value (the next word, unless written --opt=value).
WITH_VALUE = frozenset(
    {
        "--entrypoint",
        "--volume",
        "-v",
        "--workdir",
        "-w",
        "--user",
        "-u",
        "--env",
        "-e",
        "--name",
        "--label",
        "-l",
        "--publish",
        "-p",
        "--pull",
        "--cap-add",
        "--cap-drop",
        "--env-from-file",
    }
)
PLACEHOLDER = re.compile(r"^[A-Z][A-Z_]*$|^<.*>$")  # SERVICE, <service>: the document's own placeholder
CODE = re.compile(r"`([^`\n]+)`")


def services(root: Path) -> set[str]:
    text = (root / "compose.yaml").read_text(encoding="utf-8")
    block = text.split("\nservices:\n", 1)[1]
    block = re.split(r"\n\S", block, maxsplit=1)[0]
    return set(re.findall(r"^  ([A-Za-z0-9_-]+):\s*$", block, flags=re.M))


def problem(command: str, known: set[str]) -> str | None:
    """Why ``command`` (from ``docker compose run`` on) is typed wrongly, or None."""
    try:
        words = shlex.split(command.replace("\\|", "|"))
    except ValueError:
        words = command.split()
    i = words.index("run") + 1
    while i < len(words) and words[i].startswith("-"):
        i += 1 if "=" in words[i] or words[i] not in WITH_VALUE else 2
    if i >= len(words):
        return "no service named"
    service = words[i]
    optional = re.fullmatch(r"([A-Za-z0-9_-]+)\[([A-Za-z0-9_-]+)\]", service)  # bench[-cpu]: either one
    if optional and {optional[1], optional[1] + optional[2]} <= known:
        pass
    elif service not in known and not PLACEHOLDER.match(service):
        return f"{service!r} is not a compose service ({', '.join(sorted(known))})"
    after = [w for w in words[i + 1 :] if w.split("=", 1)[0] in COMPOSE_ONLY]
    if after:
        return f"{', '.join(after)} after the service {service!r}: compose options go before it"
    return None


def commands(text: str) -> list[tuple[int, str]]:
    """(line, command) for every `docker compose run` in inline code or in a code block (a backslash at
    the end of a line continues it)."""
    found = []
    in_block = False
    lines = text.splitlines()
    for n, line in enumerate(lines, 1):
        if line.lstrip().startswith("```"):
            in_block = not in_block
            continue
        if in_block:
            if "docker compose run" in line:
                cmd, k = line, n
                while cmd.rstrip().endswith("\\") and k < len(lines):
                    cmd = cmd.rstrip()[:-1] + " " + lines[k]
                    k += 1
                found.append((n, cmd[cmd.index("docker compose run") :]))
            continue
        for span in CODE.findall(line):
            if "docker compose run" in span:
                found.append((n, span[span.index("docker compose run") :]))
    return found


def documents(root: Path) -> list[Path]:
    return [root / "README.md", root / "results" / "README.md", *sorted((root / "docs").glob("*.md"))]


def test_every_documented_compose_run_has_its_options_before_the_service(repo_root: Path) -> None:
    known = services(repo_root)
    assert {"bench", "bench-cpu"} <= known
    seen, bad = 0, []
    for doc in documents(repo_root):
        if not doc.is_file():
            continue
        for n, cmd in commands(doc.read_text(encoding="utf-8-sig")):
            seen += 1
            why = problem(cmd, known)
            if why is not None:
                bad.append(f"{doc.relative_to(repo_root)}:{n}: `{cmd}`: {why}")
    assert seen >= 4, seen  # docs/phases.md alone shows several; a parser that finds none checks nothing
    assert not bad, "\n".join(bad)


def test_phase_table_service_cells_are_a_service_or_a_whole_command(repo_root: Path) -> None:
    known = services(repo_root)
    bad = []
    for row in phase_rows(repo_root):
        for span in CODE.findall(row[2]):
            if span in known or "docker compose run" in span:
                continue
            bad.append(f"{row[0]}: `{span}` in the service column (typed after `docker compose run --rm`)")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize(
    ("command", "why"),
    [
        ("docker compose run --rm bench-cpu --entrypoint analysis report --out results", "--entrypoint"),
        ("docker compose run bench --rm quality", "--rm after"),
        ("docker compose run --rm --entrypoint analysis bench-cpu report --out results", None),
        ("docker compose run --rm -e X=1 --entrypoint=analysis bench-cpu judged", None),
        ("docker compose run --rm bench quality --device cpu --study studies/quality", None),
        ("docker compose run --rm SERVICE ...", None),
        ("docker compose run --rm bench[-cpu] X", None),
        ("docker compose run --rm bench[-gpu] X", "not a compose service"),
        ("docker compose run --rm --entrypoint analysis report", "'report' is not a compose service"),
    ],
)
def test_the_parser_tells_the_orders_apart(command: str, why: str | None) -> None:
    got = problem(command, {"bench", "bench-cpu", "typesense"})
    assert (got is None) if why is None else (got is not None and why in got), got


def test_commands_found_in_inline_code_and_blocks() -> None:
    text = (
        "Type `docker compose run --rm bench quality` then:\n"
        "```\n"
        "docker compose run --rm --entrypoint analysis \\\n"
        "  bench-cpu report --out results\n"
        "```\n"
    )
    assert commands(text) == [
        (1, "docker compose run --rm bench quality"),
        (3, "docker compose run --rm --entrypoint analysis    bench-cpu report --out results"),
    ]
