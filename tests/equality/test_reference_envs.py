"""The separate reference environments: locked, pinned as the plan says, and (tf457) able to run a reference.

``references/tf457`` and ``references/mxbai`` resolve to the same torch and tokenizers versions as the main
lock, so ``uv sync --frozen`` there reuses the main environment's cached wheels (no second torch download)
and the image stores them once; numpy differs on Python >= 3.12. Running a reference in it:
tests/equality/test_check_end_to_end.py.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from bench.core.paths import repo_root
from bench.core.plan import MXBAI_RERANK_VERSION, REFERENCE_TRANSFORMERS_VERSION, RERANKERS
from bench.equality.references import DECIDING, FURTHER

REFS = repo_root() / "references"


def locked_version(lock: Path, name: str) -> str:
    text = lock.read_text(encoding="utf-8")
    match = re.search(rf'\[\[package\]\]\nname = "{re.escape(name)}"\nversion = "([^"]+)"', text)
    assert match, f"{name} not in {lock}"
    return match.group(1)


@pytest.mark.parametrize("env", ["tf457", "mxbai"])
def test_reference_env_is_locked(env: str) -> None:
    project = tomllib.loads((REFS / env / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["requires-python"] == ">=3.11"
    lock = REFS / env / "uv.lock"
    assert lock.is_file(), f"run `uv lock` in references/{env}"
    assert locked_version(lock, "transformers").startswith(REFERENCE_TRANSFORMERS_VERSION + ".")
    if env == "mxbai":
        assert locked_version(lock, "mxbai-rerank") == MXBAI_RERANK_VERSION


def locked_versions(lock: Path, name: str) -> list[str]:
    """Every version of ``name`` in ``lock`` (one per Python-version fork where the resolution forks)."""
    text = lock.read_text(encoding="utf-8")
    return re.findall(rf'\[\[package\]\]\nname = "{re.escape(name)}"\nversion = "([^"]+)"', text)


@pytest.mark.parametrize("env", ["tf457", "mxbai"])
def test_torch_shared_with_main_lock(env: str) -> None:
    """torch (with its CUDA libraries) and tokenizers: one version in every lock, so the image stores them
    once (docker/install.sh). numpy is not shared on Python >= 3.12, the image's 3.14: the reference locks
    resolve 2.5.5 there, the main lock 2.4.6 on every Python (references/README.md)."""
    main = repo_root() / "uv.lock"
    for name in ("torch", "tokenizers"):
        assert locked_versions(REFS / env / "uv.lock", name) == locked_versions(main, name)
        assert len(locked_versions(main, name)) == 1
    assert locked_versions(main, "numpy") == ["2.4.6"]
    assert locked_versions(REFS / env / "uv.lock", "numpy") == ["2.4.6", "2.5.5"]


def test_every_local_model_has_a_deciding_reference() -> None:
    local = {m for m, p in RERANKERS.items() if p.local}
    assert set(DECIDING) == local
    assert {DECIDING[m].env for m in ("gte-base", "jina-v3.5", "querit-4b")} == {"tf457"}
    assert {DECIDING[m].env for m in ("bge-v2-m3", "qwen3-0.6b", "qwen3-4b")} == {"main"}
    assert DECIDING["mxbai-large-v2"].name == "vendor-mxbai"
    for model, further in FURTHER.items():  # further references never repeat the deciding one
        assert all(f.label != DECIDING[model].label for f in further)


def test_broken_reference_lock_fails_instead_of_skipping(tmp_path: Path) -> None:
    """A damaged references/*/uv.lock makes `uv sync` fail without any network problem: that is a failure,
    even with the offline switch set."""
    import shutil
    import subprocess

    from tests.equality.reference_sync import OFFLINE_SKIP_SWITCH, sync_failure_verdict

    uv = shutil.which("uv")
    assert uv is not None, "uv must be on PATH for the reference environments"
    project = tmp_path / "tf457"
    project.mkdir()
    shutil.copy(REFS / "tf457" / "pyproject.toml", project / "pyproject.toml")
    lock = (REFS / "tf457" / "uv.lock").read_text(encoding="utf-8")
    (project / "uv.lock").write_text(lock.replace("[[package]]", "[[package", 1), encoding="utf-8")
    proc = subprocess.run(
        [uv, "sync", "--frozen", "--offline", "--project", str(project)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode != 0
    verdict, message = sync_failure_verdict("tf457", proc.stderr, {OFFLINE_SKIP_SWITCH: "1"})
    assert verdict == "fail", message


def test_network_failure_skips_only_with_the_switch() -> None:
    from tests.equality.reference_sync import OFFLINE_SKIP_SWITCH, sync_failure_verdict

    stderr = "error: Failed to fetch: `https://pypi.org/simple/torch/`\n  Caused by: dns error"
    assert sync_failure_verdict("tf457", stderr, {})[0] == "fail"
    assert sync_failure_verdict("tf457", stderr, {OFFLINE_SKIP_SWITCH: "0"})[0] == "fail"
    assert sync_failure_verdict("tf457", stderr, {OFFLINE_SKIP_SWITCH: "1"})[0] == "skip"


def test_sync_installs_where_env_python_looks(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Inside the image UV_PROJECT_ENVIRONMENT is /opt/venv: a reference sync that inherited it would install
    references/<env> over the main environment. The sync names the environment env_python expects."""
    import subprocess

    from tests.equality import reference_sync

    target = tmp_path / "ref-tf457"
    monkeypatch.setenv("BENCH_REFERENCE_PYTHON_TF457", str(target / "bin" / "python"))
    monkeypatch.setenv("UV_PROJECT_ENVIRONMENT", str(tmp_path / "main-venv"))
    seen: list[dict[str, str] | None] = []

    def fake_run(args: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        seen.append(kwargs.get("env"))  # type: ignore[arg-type]
        (target / "bin").mkdir(parents=True)
        (target / "bin" / "python").touch()
        return subprocess.CompletedProcess(args, 0, "", "")

    monkeypatch.setattr(subprocess, "run", fake_run)
    assert reference_sync.sync_reference_env("tf457") == target / "bin" / "python"
    (env,) = seen
    assert env is not None and env["UV_PROJECT_ENVIRONMENT"] == str(target)
