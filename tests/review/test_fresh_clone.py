"""The reviewer's lines of README.md and docs/reviewing.md, run verbatim in a fresh clone: a torch-free
environment under 500 MB, and from the clone to the audit's table in under 60 s with a warm uv cache.

The lines are the fenced ``sh`` blocks whose first line starts with ``# reviewer:``, README's first, then
docs/reviewing.md's, in one bash process (so that a variable set by one line is seen by the next), from the
clone's root. `bench audit` and `bench timestamps verify` may exit 3 (nothing failed, something not done yet:
no proof stamped, no study run committed); every other line must exit 0. Needs `uv` on PATH and, for a cold
cache only, PyPI.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

SOURCES = ("README.md", "docs/reviewing.md")
MAX_MB = 500
MAX_SECONDS = 60
NOT_YET_OK = re.compile(r"\bbench (audit|timestamps verify)\b(?!.*--example)")
MARK = "@@reviewer-line"
UNSET = {
    "VIRTUAL_ENV",
    "PYTHONPATH",
    "UV_PROJECT_ENVIRONMENT",
    "UV_NO_SYNC",
    "UV_FROZEN",
    "UV_LOCKED",
    "UV_NO_DEFAULT_GROUPS",
    "UV_DEFAULT_GROUPS",
    "UV_GROUP",
    "UV_ONLY_GROUP",
    "UV_NO_GROUP",
    "UV_DEV",
    "UV_NO_DEV",
}


def reviewer_lines(root: Path) -> list[str]:
    """Every command line of the ``# reviewer:`` blocks, in order (comments and blank lines left out)."""
    lines: list[str] = []
    for name in SOURCES:
        text = (root / name).read_text(encoding="utf-8")
        for block in re.findall(r"^```sh\n(# reviewer:.*?)^```", text, flags=re.S | re.M):
            lines += [ln for ln in block.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    return lines


def test_readme_and_reviewing_have_reviewer_lines() -> None:
    lines = reviewer_lines(REPO_ROOT)
    assert lines[0] == "uv sync --locked --no-default-groups --group review"
    assert all(ln.startswith("uv run --no-sync ") for ln in lines if ln.startswith("uv run"))
    assert sum("bench audit" in ln for ln in lines) >= 3 and any("--example" in ln for ln in lines)


def _script(lines: list[str]) -> str:
    out = []
    for n, line in enumerate(lines):
        out += [line, f'echo "{MARK} {n} rc=$? t=$(date +%s.%N)"']
    return "\n".join(out) + "\n"


@pytest.mark.slow
def test_reviewer_lines_in_a_fresh_clone(tmp_path: Path) -> None:
    if shutil.which("uv") is None:
        pytest.fail("uv is not on PATH: the reviewer's lines need it (README's set-up: pip install uv)")
    # the reviewer's shell: no venv of ours, no uv setting that changes what is synced (the cache stays)
    env = {k: v for k, v in os.environ.items() if k not in UNSET and not k.startswith("BENCH_")}
    clone = tmp_path / "clone"
    start = time.time()
    subprocess.run(["git", "clone", "-q", str(REPO_ROOT), str(clone)], check=True, env=env)
    lines = reviewer_lines(clone)  # the committed docs' lines
    done = subprocess.run(
        ["bash", "-c", _script(lines)], cwd=clone, env=env, capture_output=True, text=True, timeout=600
    )
    marks = [m.groups() for m in re.finditer(rf"^{MARK} (\d+) rc=(\d+) t=([\d.]+)$", done.stdout, re.M)]
    assert len(marks) == len(lines), done.stdout[-3000:] + done.stderr[-3000:]
    for n, rc, _ in marks:
        allowed = {"0", "3"} if NOT_YET_OK.search(lines[int(n)]) else {"0"}
        if "--example" in lines[int(n)]:
            allowed = {"3"}  # every row OK but the timestamps
        assert rc in allowed, f"{lines[int(n)]!r} exited {rc}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
    first_audit = next(int(n) for n, _, _ in marks if "bench audit" in lines[int(n)])
    seconds = float(marks[first_audit][2]) - start
    assert seconds < MAX_SECONDS, f"clone to the audit's table took {seconds:.1f} s"
    assert "FAIL" not in done.stdout.split(f"{MARK} {first_audit} ")[0].split("#  check")[-1]
    assert "EXAMPLE study built" in done.stdout and "a check FAILED" not in done.stdout
    venv = clone / ".venv"
    size = sum(p.stat().st_size for p in venv.rglob("*") if p.is_file() and not p.is_symlink()) / 2**20
    assert size < MAX_MB, f"{venv}: {size:.0f} MB"
    packages = {p.name.lower() for p in venv.glob("lib/python*/site-packages/*")}
    assert not {p for p in packages if p.startswith(("torch", "transformers", "openvino", "nvidia"))}
    probe = subprocess.run([str(venv / "bin" / "python"), "-c", "import torch"], capture_output=True)
    assert probe.returncode != 0
    print(f"clone to the audit's table: {seconds:.1f} s; .venv {size:.0f} MB")
