"""`bench doctor`: each check on this machine where it can show something, and through the
machine seam (``bench.doctor.machine.Machine``) for what this machine is not: an older driver, a GPU torch
was not built for, a package that differs from uv.lock, a full disk, missing keys, a reference environment
that is the main one. Every refusal is one line with its fix. The GPU checks' passing side (a visible GPU,
the matrix products on it) cannot run here: no GPU, no NVML (docs/phases.md, "bench doctor")."""

from __future__ import annotations

import dataclasses
import functools
import importlib.metadata
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner
from packaging.markers import Marker

from bench.core import plan
from bench.core.errors import BenchError
from bench.core.runbook import read_runbook
from bench.doctor import checks, gpu, machine, packages, server_probes, space
from bench.doctor.cli import doctor
from bench.doctor.machine import (
    Machine,
    NvmlReading,
    TorchReading,
    Unreadable,
    installed_distributions,
    read_nvml,
)
from bench.doctor.outcome import Outcome, exit_code
from bench.doctor.steps import STEP_CHECKS, run_checks
from tests.conftest import REPO_ROOT

GIB = 2**30


def here(**changes: object) -> Machine:
    return dataclasses.replace(Machine.here(), **{"root": REPO_ROOT, **changes})  # type: ignore[arg-type]


def one_line_with_fix(outcomes: list[Outcome]) -> list[Outcome]:
    """The problems among ``outcomes``, each checked to be one line naming its fix."""
    found = [o for o in outcomes if o.state == "problem"]
    for o in found:
        assert o.fix and "\n" not in o.line() and o.line().endswith(f"; fix: {o.fix}"), o
    return found


def test_every_runbook_step_has_its_checks() -> None:
    assert list(STEP_CHECKS) == [s.id for s in read_runbook(REPO_ROOT)]


# --- NVML and the driver ---------------------------------------------------------------------------------


def test_no_nvml_and_no_nvidia_smi_on_this_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """This machine has neither: the real reading refuses, naming both, and says what to install."""
    monkeypatch.setenv(
        "PATH",
        os.pathsep.join(
            p for p in os.environ["PATH"].split(os.pathsep) if not (Path(p) / "nvidia-smi").exists()
        ),
    )
    with pytest.raises(Unreadable, match=r"NVML cannot be read .* nvidia-smi is not on PATH"):
        read_nvml()
    (p,) = one_line_with_fix(gpu.nvml(here(), "prepare"))
    assert "driver >= 580" in p.fix and "NVIDIA Container Toolkit" in p.fix
    assert gpu.driver(here(), "prepare")[0].state == "cannot tell"


def test_nvidia_smi_is_read_when_nvml_is_not(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho '575.51.02, NVIDIA GeForce RTX 5070 Ti'\n", encoding="utf-8")
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setitem(sys.modules, "pynvml", None)  # NVML unreadable on any machine: import fails
    assert read_nvml() == NvmlReading("575.51.02", ("NVIDIA GeForce RTX 5070 Ti",), "nvidia-smi")


def _nvml(driver: str) -> NvmlReading:
    return NvmlReading(driver, ("NVIDIA GeForce RTX 5070 Ti",), "NVML")


def test_older_driver_than_torchs_cuda_needs() -> None:
    """torch's own CUDA version (this machine's torch 2.15.0, +cu132) against an injected driver reading."""
    import torch  # lazy: heavy, not at collection

    assert torch.version.cuda is not None and torch.version.cuda.startswith("13.")
    (p,) = one_line_with_fix(gpu.driver(here(nvml=lambda: _nvml("575.51.02")), "quality"))
    assert f"CUDA {torch.version.cuda}, which needs >= 580" in p.message and "driver >= 580" in p.fix
    (o,) = gpu.driver(here(nvml=lambda: _nvml("580.65.06")), "quality")
    assert o.state == "ok" and "580.65.06 >= 580" in o.message


def _torch(**kw: object) -> TorchReading:
    base = {
        "version": "2.15.0+cu132",
        "cuda": "13.2",
        "available": True,
        "devices": ("RTX 5070 Ti",),
        "capability": (12, 0),
        "arch_list": ("sm_80", "sm_90", "sm_100", "sm_120"),
    }
    return TorchReading(**{**base, **kw})  # type: ignore[arg-type]


def test_gpu_visible_and_its_capability() -> None:
    (o,) = gpu.gpu(here(torch=_torch), "quality")
    assert o.state == "ok" and "sm_120" in o.message
    (p,) = one_line_with_fix(gpu.gpu(here(torch=lambda: _torch(arch_list=("sm_80", "sm_90"))), "quality"))
    assert "is sm_120, torch 2.15.0+cu132 is built for sm_80, sm_90" in p.message
    (p,) = one_line_with_fix(gpu.gpu(here(), "quality"))  # this machine: no GPU
    assert "sees no CUDA GPU" in p.message
    (p,) = one_line_with_fix(
        gpu.driver(here(nvml=lambda: _nvml("590.1"), torch=lambda: _torch(cuda=None)), "x")
    )
    assert "CPU build" in p.message


def test_matmul_tolerance_holds_for_a_correct_product_and_fails_a_wrong_one() -> None:
    """The check's own computation, run on the CPU (no GPU here): a correct fp16 / bf16 product is within the
    stated tolerance and not trivially exact; a product off by one bf16 rounding step per element is not."""
    results = gpu.gpu_matmul(device="cpu")
    assert [r[0] for r in results] == ["float16", "bfloat16"]
    for name, err, rtol in results:
        assert 0 < err <= rtol, (name, err, rtol)
    seam = here(torch=_torch, matmul=lambda: [("float16", 4e-3, 1e-3), ("bfloat16", 1e-3, 1.6e-2)])
    out = gpu.matmul(seam, "quality")
    assert [o.state for o in out] == ["problem", "ok"]
    one_line_with_fix(out)
    assert gpu.matmul(here(), "quality")[0].state == "cannot tell"  # no GPU to multiply on


# --- packages against uv.lock ----------------------------------------------------------------------------


def test_this_environment_is_exactly_the_lock() -> None:
    (o,) = checks.packages(here(), "quality")
    assert o.state == "ok", o


def test_expected_set_equals_uv_export() -> None:
    """The resolved set for this interpreter (groups of the image) against uv's own export of the lock."""
    uv = shutil.which("uv")
    assert uv is not None, "uv not on PATH"
    text = subprocess.run(
        [
            uv,
            "export",
            "--frozen",
            "--no-hashes",
            "--no-dev",
            "--no-group",
            "rehearsal",
            "--group",
            "bench",
            "--no-emit-project",
            "--format",
            "requirements-txt",
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    uv_set = {}
    for line in text.splitlines():
        req, _, marker = line.partition(" ; ")
        if "==" in req and not req.startswith(("#", " ")) and (not marker or Marker(marker).evaluate()):
            name, _, version = req.partition("==")
            uv_set[packages.normalise(name)] = version.strip()
    ours = packages.compare(REPO_ROOT / "uv.lock", {}).expected
    ours.pop(packages.PROJECT)
    assert ours == uv_set


def test_markers_choose_the_locked_version_per_python() -> None:
    """docs/field-notes.md: the lock resolves scipy 1.17.1 on 3.11 and 1.18.1 on 3.14 (dev group)."""
    locked = packages.read_lock(REPO_ROOT / "uv.lock")
    whole = tomllib.loads((REPO_ROOT / "uv.lock").read_text(encoding="utf-8"))["package"]
    files = {"sdist", "wheels"}
    assert any(files & p.keys() for p in whole)  # the fast path has files' lines to leave out
    assert repr(locked) == repr([{k: v for k, v in p.items() if k not in files} for p in whole])
    locked[0]["version"] = "0"  # each call its own copy
    assert packages.read_lock(REPO_ROOT / "uv.lock")[0]["version"] == whole[0]["version"]
    for full, scipy in (("3.11.7", "1.17.1"), ("3.14.8", "1.18.1")):
        env = {
            **{k: str(v) for k, v in packages.default_environment().items()},
            "python_full_version": full,
            "python_version": full.rsplit(".", 1)[0],
        }
        assert packages.expected_set(locked, ("dev",), env)["scipy"] == scipy


def test_a_changed_a_missing_and_an_extra_package_are_named(tmp_path: Path) -> None:
    real = installed_distributions()
    where = {sysconfig.get_paths()[k] for k in ("purelib", "platlib")}
    read = {}
    for dist in importlib.metadata.distributions(path=sorted(where)):
        read.setdefault(packages.normalise(dist.metadata["Name"]), dist.version)
    assert real == read and installed_distributions() is not installed_distributions()
    # the header lines read as importlib.metadata's own parse reads them, odd ones included
    for i, head in enumerate(
        [
            "Metadata-Version: 2.1\nName:  a_b \nVersion:\t1.0\r\nSummary: s\n\nName: body\n",
            "Name: a\n  folded\nVersion: 1\n",
            "Version: 2\nName: b\nName: c\n",
            "Summary: no name\n",
        ]
    ):
        info = tmp_path / f"d{i}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(head, encoding="utf-8", newline="")
        dist = importlib.metadata.PathDistribution(info)
        assert machine._name_and_version(dist) == (dist.metadata["Name"], dist.version)
    # read once per state of the folder: again once a distribution is installed, removed or upgraded there
    shutil.rmtree(tmp_path / "d1.dist-info")
    key = ((str(tmp_path), machine._mtime_ns(str(tmp_path))),)
    assert machine._distributions(key) == {"a-b ": "1.0", "b": "2"}
    (tmp_path / "d0.dist-info" / "METADATA").write_text("Name: a_b\nVersion: 1.1\n", encoding="utf-8")
    (tmp_path / "f.dist-info").mkdir()
    (tmp_path / "f.dist-info" / "METADATA").write_text("Name: F\nVersion: 3\n", encoding="utf-8")
    mtime = key[0][1]
    assert mtime is not None
    # the folder's change, also within one clock tick (importlib.metadata keeps a folder's listing per
    # modification time in seconds, as a float: a nanosecond would not show it the new folder)
    os.utime(tmp_path, ns=(mtime + 10**9, mtime + 10**9))
    fresh = machine._distributions(((str(tmp_path), machine._mtime_ns(str(tmp_path))),))
    assert fresh == {"a-b": "1.1", "b": "2", "f": "3"}
    assert machine._distributions(key) == {"a-b ": "1.0", "b": "2"}  # the earlier state's reading, kept
    fake = {**real, "numpy": "1.26.4", "left-pad": "1.0.0"}
    del fake["click"]
    out = checks.packages(here(distributions=lambda: fake), "quality")
    changed, missing, extra = one_line_with_fix(out)
    assert (
        changed.message
        == f"1 installed at another version than uv.lock's: numpy 1.26.4 (lock: {real['numpy']})"
    )
    assert missing.message == f"1 of uv.lock missing: click {real['click']}"
    assert extra.message == "1 installed that uv.lock does not have: left-pad 1.0.0"
    assert exit_code(out) == 1


def test_an_unreadable_lock_cannot_tell(tmp_path: Path) -> None:
    (tmp_path / "uv.lock").write_text("version = 1\n[[package]\n", encoding="utf-8")
    (o,) = checks.packages(here(root=tmp_path), "quality")
    assert o.state == "cannot tell" and "uv.lock: not valid TOML" in o.message
    # a lock in uv's layout, changed between two reads without changing its size or modification time
    lock = tmp_path / "uv.lock"
    wheel = '    { url = "https://x/a-1.0.0-py3-none-any.whl", hash = "sha256:00", size = 1 },\n'
    text = f'version = 1\n\n[[package]]\nname = "a"\nversion = "1.0.0"\nwheels = [\n{wheel}]\n'
    lock.write_text(text, encoding="utf-8")
    assert packages.read_lock(lock) == [{"name": "a", "version": "1.0.0"}]
    stat = lock.stat()
    lock.write_text(text.replace('version = "1.0.0"', 'version = "1.0.1"'), encoding="utf-8")
    os.utime(lock, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert packages.read_lock(lock) == [{"name": "a", "version": "1.0.1"}]
    lock.write_text(text + "x = [\n", encoding="utf-8")  # the error names the line of the whole text
    with pytest.raises(tomllib.TOMLDecodeError) as whole:
        tomllib.loads(lock.read_text(encoding="utf-8"))
    with pytest.raises(BenchError, match=re.escape(f"not valid TOML ({whole.value})")):
        packages.read_lock(lock)


# --- Typesense --------------------------------------------------------------------------------------------


@pytest.mark.typesense
def test_typesense_0241_on_the_port_is_not_ready(typesense: object) -> None:
    url, key = typesense.url, typesense.api_key  # type: ignore[attr-defined]
    env = {
        "BENCH_TYPESENSE_URL": url,
        "BENCH_TYPESENSE_API_KEY": key,
        "BENCH_TYPESENSE_IMAGE": plan.TYPESENSE_IMAGE,
    }
    out = checks.typesense(here(env=env), "first-stages")
    (p,) = one_line_with_fix(out)
    assert p.message == f"Typesense 0.24.1 answers at {url}, the plan fixes 30.2"
    assert [o.state for o in out] == ["problem", "ok"]  # the image compose names is the plan's
    bad = checks.typesense(here(env={**env, "BENCH_TYPESENSE_IMAGE": "typesense/typesense:0.24.1"}), "x")
    assert [o.check for o in one_line_with_fix(bad)] == ["typesense", "typesense-image"]


@pytest.mark.typesense
def test_the_probes_of_0241_name_what_it_does_not_honour(typesense: object) -> None:
    """bench doctor first-stages asks the running server the probes: on 0.24.1 each feature a plan
    stage needs and the server ignores is one line naming the stages and the fix."""
    url, key = typesense.url, typesense.api_key  # type: ignore[attr-defined]
    env = {"BENCH_TYPESENSE_URL": url, "BENCH_TYPESENSE_API_KEY": key}
    out = server_probes.typesense_probes(here(env=env), "first-stages")
    found = {o.check: o for o in one_line_with_fix(out)}
    assert {"probe stem", "probe stopwords", "probe ef", "probe hybrid"} <= set(found), sorted(found)
    assert "keyword-71k" in found["probe stem"].message and "keyword-full" in found["probe stem"].message
    assert "vector-71k" in found["probe ef"].message
    assert "probe locale-de" not in found  # 0.24.1 tokenises with locale de as the plan expects
    assert all(o.state == "problem" for o in out)
    assert server_probes.typesense_probes in STEP_CHECKS["first-stages"]


def test_the_probes_without_a_server_cannot_tell() -> None:
    (o,) = server_probes.typesense_probes(here(env={}), "first-stages")
    assert o.state == "cannot tell" and "not set" in o.message

    def unreachable(url: str, key: str) -> object:
        raise BenchError(f"no answer from {url}")

    (o,) = server_probes.typesense_probes(
        here(
            env={"BENCH_TYPESENSE_URL": "http://127.0.0.1:9", "BENCH_TYPESENSE_API_KEY": "k"},
            probes=unreachable,
        ),
        "first-stages",
    )
    assert (
        o.state == "cannot tell"
        and o.message == "the probes could not run: no answer from http://127.0.0.1:9"
    )


def test_typesense_not_running() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {"BENCH_TYPESENSE_URL": f"http://127.0.0.1:{port}", "BENCH_TYPESENSE_API_KEY": "k"}
    (p,) = one_line_with_fix(checks.typesense(here(env=env), "first-stages"))
    assert p.message.startswith(f"Typesense not reachable: no answer from http://127.0.0.1:{port}")
    assert p.fix == "`docker compose up -d typesense`"


# --- disk and memory ---------------------------------------------------------------------------------------


def test_full_disk_and_too_little_memory_for_keyword_full(monkeypatch: pytest.MonkeyPatch) -> None:
    # both predictions gzip the bundled sample (fixed, locked data) for their byte figures: once is enough
    # (the real figures, as tests/firststage/test_preflight.py shares them)
    from bench.firststage import preflight as pf

    monkeypatch.setattr(pf, "load_sample", functools.cache(pf.load_sample))
    monkeypatch.setattr(pf, "_sample_bytes", functools.cache(pf._sample_bytes))
    monkeypatch.setattr(pf, "_sample_sorted_ratio", functools.cache(pf._sample_sorted_ratio))
    out = space.keyword_full(here(disk_free=lambda p: 0, memory_available=lambda: GIB), "first-stages")
    found = one_line_with_fix(out)
    assert found[0].check == "memory" and {o.check for o in found[1:]} == {"disk"}
    want = r"keyword-full's Typesense needs \d+\.\d GiB \(preflight\), this machine has 1\.0 GiB available"
    assert re.fullmatch(want, found[0].message)
    assert found[1].message.endswith("has 0.0 GiB free")
    roomy = space.keyword_full(here(disk_free=lambda p: 10**15, memory_available=lambda: 10**15), "x")
    assert {o.state for o in roomy} == {"ok"}


def test_data_disk_without_locked_sizes_cannot_tell() -> None:
    (o,) = space.disk_data(here(disk_free=lambda p: 0), "data")  # the lock has no hub entries yet
    assert o.state == "cannot tell" and "has no sizes of the hub datasets yet" in o.message


def test_models_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCH_MODELS_DIR", str(tmp_path))
    (o,) = space.disk_models(here(), "models")
    assert o.state == "cannot tell" and o.message.startswith("9 snapshots to fetch")


# --- keys and the reference environments -------------------------------------------------------------------


def test_missing_keys_named_and_present_keys_never_printed(tmp_path: Path) -> None:
    (p,) = one_line_with_fix(checks.keys(here(root=tmp_path, env={}), "check-adapters"))
    assert p.message == "VOYAGE_API_KEY is not set"
    (p,) = one_line_with_fix(checks.keys(here(root=tmp_path, env={}), "judged"))
    assert p.message == "ANTHROPIC_API_KEY is not set"
    (tmp_path / ".env").write_text("VOYAGE_API_KEY=pa-secret-from-dotenv\n", encoding="utf-8")
    out = checks.keys(here(root=tmp_path, env={}), "latency-api")
    out += checks.keys(here(root=tmp_path, env={"ANTHROPIC_API_KEY": "sk-secret"}), "judged")
    assert [o.state for o in out] == ["ok", "ok"]
    assert not any("secret" in o.line() for o in out)


def test_reference_env_that_is_the_main_environment() -> None:
    env = {
        "BENCH_REFERENCE_PYTHON_TF457": sys.executable,
        "BENCH_REFERENCE_PYTHON_MXBAI": "/nonexistent/python",
    }
    tf, mx = one_line_with_fix(checks.references(here(env=env), "check-adapters"))
    assert (
        tf.message
        == f"BENCH_REFERENCE_PYTHON_TF457 is {sys.executable}, the main environment ({sys.prefix}), "
        "not references/tf457"
    )
    assert mx.message == "BENCH_REFERENCE_PYTHON_MXBAI is /nonexistent/python, which does not exist"


def test_reference_env_that_lacks_its_packages(tmp_path: Path) -> None:
    """An environment of its own (a fresh venv) without transformers: named, with the sync command."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "v")], check=True)
    py = tmp_path / "v" / "bin" / "python"
    env = {"BENCH_REFERENCE_PYTHON_TF457": str(py), "BENCH_REFERENCE_PYTHON_MXBAI": str(py)}
    for step in ("check-adapters", "prepare"):  # imported in the step that runs them, found in the others
        tf, mx = one_line_with_fix(checks.references(here(env=env), step))
        assert (
            tf.message
            == f"{py} cannot import transformers (ModuleNotFoundError: No module named 'transformers')"
        )
        assert (
            mx.message
            == f"{py} cannot import mxbai_rerank (ModuleNotFoundError: No module named 'mxbai_rerank')"
        )
        assert tf.fix == "`uv sync --locked --project references/tf457` into that environment"


def test_the_real_reference_envs_are_ready() -> None:
    """The two locked environments (synced from references/*/uv.lock as the image does)."""
    from tests.equality.reference_sync import sync_reference_env

    env = {f"BENCH_REFERENCE_PYTHON_{e.upper()}": str(sync_reference_env(e)) for e in ("tf457", "mxbai")}
    tf, mx = checks.references(here(env=env), "prepare")
    assert (tf.state, mx.state) == ("ok", "ok"), (tf, mx)
    assert re.search(r": transformers 4\.57\.\d+, torch 2\.\d+", tf.message), tf.message
    assert re.search(r": mxbai_rerank 0\.1\.6, transformers 4\.57\.\d+", mx.message), mx.message


# --- the command --------------------------------------------------------------------------------------------


def test_python_version_for_measuring_steps_only() -> None:
    (p,) = one_line_with_fix(checks.python(here(python_version="3.11.7"), "quality"))
    assert "the study measures on the image's Python 3.14.8" in p.message
    assert checks.python(here(python_version="3.11.7"), "report")[0].state == "info"
    assert checks.python(here(python_version="3.14.8"), "quality")[0].state == "ok"


def test_a_crashing_check_is_cannot_tell_not_a_crash() -> None:
    def broken() -> str:
        raise RuntimeError("no /proc")

    out = run_checks(here(cpu=broken), "stamp")
    assert out[-1] == Outcome("cpu", "cannot tell", "the check failed: RuntimeError: no /proc")


def test_cli_exit_codes_on_this_machine() -> None:
    """stamp needs nothing this machine lacks (its Python is only reported): ready, exit 0. The default
    (step 0, the whole machine) is not ready here: no GPU, no NVML, Python 3.11 (exit 1)."""
    runner = CliRunner()
    res = runner.invoke(doctor, ["stamp"])
    assert res.exit_code == 0, res.output
    assert res.output.splitlines()[-1] == "bench doctor stamp: ready (0 problem(s), 0 cannot tell)"
    res = runner.invoke(doctor, ["--json"])
    data = json.loads(res.output)
    assert res.exit_code == 1 == data["exit"] and data["step"] == "prepare" and data["verdict"] == "NOT READY"
    bad = {c["check"] for c in data["checks"] if c["state"] == "problem"}
    assert {"nvml", "gpu"} <= bad


def test_doctor_of_a_step_without_gpu_imports_no_torch() -> None:
    code = (
        "import sys\nfrom bench.cli import cli\n"
        "try:\n    cli(['doctor', 'stamp'], prog_name='bench')\nexcept SystemExit:\n    pass\n"
        "print('torch' in sys.modules)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT)
    assert proc.stdout.strip().splitlines()[-1] == "False", proc.stderr
