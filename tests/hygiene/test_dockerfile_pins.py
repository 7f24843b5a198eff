"""docker/bench.Dockerfile read as text: every base image pinned by digest,
Python packages installed only from uv.lock, pytrec-eval in what the container installs, and a
base-image comment that cites only what a reader can check."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    out: list[tuple[str, str]] = []
    buf = ""
    for line in text.splitlines():
        if line.lstrip().startswith("#") and not buf:
            continue
        buf += line.rstrip("\\").strip() + " " if line.rstrip().endswith("\\") else line.strip()
        if not line.rstrip().endswith("\\"):
            if buf.strip():
                word, _, rest = buf.strip().partition(" ")
                out.append((word.upper(), rest.strip()))
            buf = ""
    return out


def script_commands(script: str) -> str:
    """A shell script's commands as one RUN's arguments: comments dropped, continuations joined, one `;`
    between lines."""
    lines: list[str] = []
    buf = ""
    for line in script.splitlines():
        if line.lstrip().startswith("#") and not buf:
            continue
        buf += line.strip().rstrip("\\").strip() + " "
        if not line.rstrip().endswith("\\"):
            if buf.strip():
                lines.append(buf.strip())
            buf = ""
    return " ; ".join(lines)


def dockerfile_problems(text: str, scripts: dict[str, str] | None = None) -> list[str]:
    """Problems of a Dockerfile; a RUN that calls one of ``scripts`` (path -> text, e.g. docker/install.sh) is
    checked as the commands of that script."""
    problems: list[str] = []
    steps = instructions(text)
    for i, (word, rest) in enumerate(steps):
        called = rest.split()[0] if word == "RUN" and rest else ""
        if called in (scripts or {}):
            steps[i] = ("RUN", script_commands((scripts or {})[called]))
    args = {}
    for word, rest in steps:
        if word == "ARG" and "=" in rest:
            name, _, value = rest.partition("=")
            args[name.strip()] = value.strip()
    for word, rest in steps:
        if word != "FROM":
            continue
        image = rest.split()[0]
        image = re.sub(r"\$\{?(\w+)\}?", lambda m: args.get(m.group(1), m.group(0)), image)
        if not DIGEST.search(image):
            problems.append(f"FROM {image}: not pinned by digest")
    for word, rest in steps:
        if word != "RUN":
            continue
        for cmd in re.split(r"&&|;", rest):
            cmd = " ".join(cmd.split())
            if re.search(r"(?<!uv )\bpip3? install\b", cmd) and not re.fullmatch(
                r"(python3? -m )?pip3? install (--no-cache-dir )?(uv==\d+\.\d+\.\d+|--require-hashes "
                r"--only-binary :all: -r docker/uv-requirements\.txt)",
                cmd,
            ):
                problems.append(f"RUN {cmd}: pip installs something other than an exact uv version")
            if re.search(r"\buv (pip|add|tool|run --with)\b", cmd):
                problems.append(f"RUN {cmd}: packages outside uv.lock")
            if re.search(r"\buv sync\b", cmd) and "--locked" not in cmd.split():
                problems.append(f"RUN {cmd}: uv sync without --locked")
            if re.search(r"\buv sync\b", cmd) and re.search(
                r"--(no-default-groups|only-group|only-dev)\b|--no-group bench\b", cmd
            ):
                problems.append(f"RUN {cmd}: the measuring groups would be left out")
    syncs = [r for w, r in steps if w == "RUN" and "uv sync" in r]
    if not syncs:
        problems.append("no `uv sync --locked`: packages would not come from uv.lock")
    copies = " ".join(r for w, r in steps if w == "COPY")
    if "uv.lock" not in copies:
        problems.append("uv.lock is never copied into the image")
    return problems


def test_repository_dockerfile_is_pinned_and_lock_only(repo_root: Path) -> None:
    text = (repo_root / "docker" / "bench.Dockerfile").read_text(encoding="utf-8")
    script = (repo_root / "docker" / "install.sh").read_text(encoding="utf-8")
    assert dockerfile_problems(text, {"docker/install.sh": script}) == []
    assert len(re.findall(r"uv sync --locked", script)) >= 2  # dependencies layer, then the project
    # without the script's text the RUN lines install nothing from uv.lock: the checker reads the script
    assert "no `uv sync --locked`: packages would not come from uv.lock" in dockerfile_problems(text)


def test_checker_names_each_kind_of_problem() -> None:
    bad = (
        "ARG BASE=python:3.14.8-slim\nFROM ${BASE}\nFROM debian:trixie@sha256:" + "a" * 64 + "\n"
        "COPY pyproject.toml ./\nRUN pip install torch==2.15.0 \\\n    && uv sync --frozen\n"
        "RUN uv pip install numpy; uv sync --locked --no-default-groups\n"
        "RUN docker/x.sh\n"
    )
    script = "#!/bin/sh\n# a comment\npip install uv \\\n  --upgrade\nuv sync --locked --no-group bench\n"
    problems = dockerfile_problems(bad, {"docker/x.sh": script})
    assert problems == [
        "FROM python:3.14.8-slim: not pinned by digest",
        "RUN pip install torch==2.15.0: pip installs something other than an exact uv version",
        "RUN uv sync --frozen: uv sync without --locked",
        "RUN uv pip install numpy: packages outside uv.lock",
        "RUN uv sync --locked --no-default-groups: the measuring groups would be left out",
        "RUN pip install uv --upgrade: pip installs something other than an exact uv version",
        "RUN uv sync --locked --no-group bench: the measuring groups would be left out",
        "uv.lock is never copied into the image",
    ]


def test_container_installs_pytrec_eval(repo_root: Path) -> None:
    """Plan check 2 runs in the container: pytrec-eval is a project dependency, which `uv sync --locked
    --no-dev` installs, and uv.lock pins it."""
    project = tomllib.loads((repo_root / "pyproject.toml").read_text(encoding="utf-8"))
    assert any(d.startswith("pytrec-eval-terrier") for d in project["project"]["dependencies"])
    lock = (repo_root / "uv.lock").read_text(encoding="utf-8")
    assert re.search(r'^name = "pytrec-eval-terrier"\nversion = "[\d.]+"', lock, flags=re.M)


def test_base_image_comment_cites_what_a_reader_can_check(repo_root: Path) -> None:
    text = (repo_root / "docker" / "bench.Dockerfile").read_text(encoding="utf-8")
    comments = " ".join(ln.lstrip("# ") for ln in text.splitlines() if ln.startswith("#"))
    assert "file id" not in comments and "search index" not in comments and "89fb7d3d..." not in comments
    assert "docker/pin-digests.sh --check" in comments and "D-003" in comments
    (image,) = re.findall(r"^ARG PYTHON_IMAGE=([^@\s]+)@", text, flags=re.M)
    assert f"official Docker Hub image {image}" in comments
