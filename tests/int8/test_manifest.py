"""The quantised folder's manifest: pins, CPU flags, file hashes (a flipped byte, a missing or extra file)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.core.errors import BenchError
from bench.rerankers.openvino import manifest as man
from bench.rerankers.openvino.config import CHOSEN, PINNED_PACKAGES


def test_check_pins_names_the_pin() -> None:
    man.check_pins()  # the locked environment
    with pytest.raises(BenchError, match=r"openvino 2025\.0\.0 \(locked: 2026\.4\.1\)"):
        man.check_pins({**PINNED_PACKAGES, "openvino": "2025.0.0"})


def test_cpu_flags_from_cpuinfo(tmp_path: Path) -> None:
    info = tmp_path / "cpuinfo"
    info.write_text("model name\t: Test CPU\nflags\t\t: fpu avx2 avx512f avx512_vnni\n\nflags\t: other\n")
    got = man.cpu_flags(info)
    assert got["cpu_model"] == "Test CPU" and got["vnni"] is True
    assert got["flags"] == {
        "avx512_vnni": True,
        "avx_vnni": False,
        "amx_int8": False,
        "amx_tile": False,
        "avx512f": True,
        "avx2": True,
        "avx512_bf16": False,
        "amx_bf16": False,
    }
    assert got["bf16"] is False
    info.write_text("flags\t: fpu avx2\n")
    assert man.cpu_flags(info)["vnni"] is False
    info.write_text("flags\t: fpu avx2 avx512f amx_bf16 amx_tile\n")
    assert man.cpu_flags(info)["bf16"] is True and man.cpu_flags(info)["vnni"] is False
    assert man.cpu_flags(tmp_path / "absent")["vnni"] is None


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "q"
    (folder / "sub").mkdir(parents=True)
    (folder / "model.xml").write_bytes(b"<xml/>")
    (folder / "sub" / "model.bin").write_bytes(bytes(range(256)))
    man.write_manifest(
        folder,
        task="text-classification",
        spec=CHOSEN,
        max_length=512,
        calibration_samples=3,
        record={"source_revision": "r"},
    )
    return folder


def test_verify_accepts_the_folder_and_records_what_the_plan_asks(tmp_path: Path) -> None:
    got = man.verify_folder(_folder(tmp_path))
    assert set(got["files"]) == {"model.xml", "sub/model.bin"}
    assert got["overflow_fix"] == CHOSEN.overflow_fix and got["quantization"]["name"] == CHOSEN.name
    assert {"openvino", "nncf", "optimum-intel", "transformers"} <= set(got["packages"])
    assert "vnni" in got["cpu"] and got["source_revision"] == "r"


def test_manifest_records_the_pinned_precision(tmp_path: Path) -> None:
    from bench.rerankers.openvino.config import COMPILE_CONFIG, INFERENCE_PRECISION

    assert INFERENCE_PRECISION == "f32" and COMPILE_CONFIG == {"INFERENCE_PRECISION_HINT": "f32"}
    assert man.verify_folder(_folder(tmp_path))["inference_precision"] == "f32"


@pytest.mark.parametrize("old", ["absent", "bf16"])
def test_a_folder_without_the_pinned_precision_is_refused_with_the_remake_command(
    tmp_path: Path, old: str
) -> None:
    """A folder quantised before the precision was pinned (no field) or with another one is refused, naming
    the manifest and the container command that remakes it."""
    import json

    folder = _folder(tmp_path)
    path = folder / man.MANIFEST
    data = json.loads(path.read_text())
    if old == "absent":
        del data["inference_precision"]
    else:
        data["inference_precision"] = "bf16"
    path.write_text(json.dumps(data))
    expect = "no 'inference_precision'" if old == "absent" else "inference precision 'bf16'"
    with pytest.raises(BenchError, match=expect) as err:
        man.verify_folder(folder)
    assert str(path) in err.value.message
    assert f"docker compose run --rm bench-cpu int8 quantize --out {folder}" in err.value.message


@pytest.mark.parametrize("damage", ["flip", "missing", "extra", "versions"])
def test_verify_refuses_a_changed_folder(tmp_path: Path, damage: str) -> None:
    folder = _folder(tmp_path)
    binary = folder / "sub" / "model.bin"
    if damage == "flip":
        data = bytearray(binary.read_bytes())
        data[100] ^= 0x01
        binary.write_bytes(bytes(data))
        expect = r"sub/model\.bin: SHA-256 .* differs from int8-manifest\.json"
    elif damage == "missing":
        binary.unlink()
        expect = "listed in int8-manifest.json but missing"
    elif damage == "extra":
        (folder / "notes.txt").write_text("x")
        expect = "notes.txt: not listed in int8-manifest.json"
    else:
        path = folder / man.MANIFEST
        path.write_text(path.read_text().replace('"nncf": "3.4.0"', '"nncf": "3.3.0"'))
        expect = r"made with other versions: .*nncf 3\.3\.0 \(locked: 3\.4\.0\)"
    with pytest.raises(BenchError, match=expect):
        man.verify_folder(folder)


def test_registry_adapter_refuses_a_folder_without_manifest(tmp_path: Path) -> None:
    from bench.rerankers.registry import load_reranker

    with pytest.raises(BenchError, match="no int8 manifest"):
        load_reranker("bge-v2-m3-int8", snapshot_dir=tmp_path)
    with pytest.raises(BenchError, match="runs on the CPU in int8"):
        load_reranker("bge-v2-m3-int8", device="cuda")
