"""Hints the commands print are written as the author types them in the container:
one helper (``bench.core.hints``) formats them, and no string the commands print says ``uv run bench``."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

from bench.core.hints import SERVICES, analysis_command, bench_command
from tests.conftest import REPO_ROOT


def test_bench_command_uses_the_readme_service_of_each_phase(tmp_path: Path) -> None:
    study = tmp_path / "studies" / "quality"
    assert bench_command("quality", "--study", study, root=tmp_path) == (
        "docker compose run --rm bench quality --study studies/quality"
    )
    assert bench_command("latency", "cpu", "--published", root=tmp_path) == (
        "docker compose run --rm bench-cpu latency cpu --published"
    )
    assert bench_command("latency", "gpu", root=tmp_path).startswith("docker compose run --rm bench latency")
    assert bench_command("judged", "run", "--dir", Path("/elsewhere/j"), root=tmp_path).endswith(
        "judged run --dir /elsewhere/j"
    )
    assert (
        bench_command("rehearse", "--resume", tmp_path / "r", root=tmp_path)
        == "uv run bench rehearse --resume r"
    )
    assert analysis_command("report", "--out", tmp_path / "results", root=tmp_path) == (
        "docker compose run --rm --entrypoint analysis bench-cpu report --out results"
    )
    assert bench_command("quality", "--study", "a b", root=tmp_path).endswith("--study 'a b'")
    with pytest.raises(KeyError, match="no compose service"):
        bench_command("no-such-phase", root=tmp_path)


def test_services_match_the_readme_phase_table() -> None:
    """Every command of the phase table (docs/phases.md) that names a service has that service in
    ``SERVICES``."""
    doc = REPO_ROOT / "docs" / "phases.md"
    table = [ln for ln in doc.read_text(encoding="utf-8").splitlines() if ln.startswith("| ")]
    checked = 0
    for line in table:
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) != 4 or not cells[2].startswith("`bench"):
            continue
        service = cells[2].split("`")[1].split()[0]
        for command in re.findall(r"`bench ([a-z0-9-]+(?: [a-z0-9-]+)?)", cells[1]):
            words = command.split()
            key = " ".join(words) if " ".join(words) in SERVICES else words[0]
            assert SERVICES[key] == service, (command, service)
            checked += 1
    assert checked >= 15


@functools.cache
def _printed_strings(path: Path) -> tuple[tuple[int, str], ...]:
    """String constants and f-string parts of a module, docstrings left out (each module parsed once for the
    three tests that read them)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    strings = [n for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    return tuple((n.lineno, n.value) for n in strings if id(n) not in docstrings)


def test_no_printed_hint_says_uv_run_bench() -> None:
    found = []
    for path in sorted((REPO_ROOT / "bench").rglob("*.py")):
        if path.name == "hints.py":  # the rehearsal's own form, outside the container, is made there
            continue
        found += [
            f"{path.relative_to(REPO_ROOT)}:{n}: {s!r}" for n, s in _printed_strings(path) if "uv run" in s
        ]
    assert found == []


def test_no_printed_instruction_names_a_bare_bench_command() -> None:
    """An instruction to run a command ("run `bench data fetch`") names it as typed in the container; only
    the rehearsal (outside the container) and ``--help`` texts, which describe commands, may say ``bench``."""
    found = []
    instruction = re.compile(r"(?i)(run|rerun|with|see|fetch it|first) \(?`bench [a-z]")
    for path in sorted((REPO_ROOT / "bench").rglob("*.py")):
        rel = path.relative_to(REPO_ROOT)
        found += [
            f"{rel}:{n}: {s!r}"
            for n, s in _printed_strings(path)
            if instruction.search(s) and "`bench rehearse" not in s
        ]
    assert found == []


def test_no_module_spells_the_container_command_by_hand() -> None:
    """Only ``bench.core.hints`` writes ``docker compose run``: a hand-written copy drifts (one wrote
    ``bench-cpu bench int8 ...``, which runs ``bench bench`` since the image's entry point is ``bench``)."""
    found = []
    for root in ("bench", "analysis"):
        for path in sorted((REPO_ROOT / root).rglob("*.py")):
            if path.name == "hints.py" or (root == "analysis" and path.name == "ecb.py"):
                continue  # analysis cannot import bench.core.hints; its one hint is checked below
            found += [
                f"{path.relative_to(REPO_ROOT)}:{n}: {s!r}"
                for n, s in _printed_strings(path)
                if "docker compose run" in s
            ]
    assert found == []


def test_analysis_ecb_hint_is_the_helper_form() -> None:
    text = (REPO_ROOT / "analysis" / "costs" / "ecb.py").read_text(encoding="utf-8")
    expected = bench_command("costs", "ecb-rates")
    assert expected in text and "bench-cpu bench " not in text
