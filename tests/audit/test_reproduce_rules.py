"""The reproduction rule's boundary and the "same GPU" reading (issue 14; plan: "within 0.1 points", "on the
same GPU")."""

from __future__ import annotations

from bench.audit.reproduce import _gpus, compare, gpu_note


def test_the_boundary_is_inclusive() -> None:
    assert compare("s", "m", 100, 0.5, 0.5 + 0.001).verdict == "OK"  # 0.1 points exactly
    assert compare("s", "m", 100, 0.5, 0.5 + 0.0011).verdict == "FAIL"
    assert (
        compare("s", "m", 100, None, 0.5).reason
        == "results/quality/s.json has no m@100: nothing to reproduce"
    )


def test_gpu_names_from_host_records() -> None:
    smi = "name, driver_version\nNVIDIA GeForce RTX 5070 Ti, 580.1\n"
    assert _gpus({"cuda_device": "NVIDIA GeForce RTX 5070 Ti", "nvidia_smi": smi}) == [
        "NVIDIA GeForce RTX 5070 Ti"
    ]
    assert _gpus({"cuda_device": None, "nvidia_smi": smi}) == ["NVIDIA GeForce RTX 5070 Ti"]
    assert _gpus({"cuda_device": None, "nvidia_smi": None}) == []
    assert gpu_note(["A"], ["A"]) == "same GPU as the committed results (A)"
    assert gpu_note(["B"], ["A"]) == "different GPU: here B, committed results A"
    assert gpu_note([], ["A"]) == "no GPU here; the committed results were measured on A"
