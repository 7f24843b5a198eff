"""The reproduction rule's boundary and the "same GPU" reading (plan: "within 0.1 points", "on the
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


def test_reproduce_verifies_the_data_of_every_committed_stage(tmp_git_repo, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Without --stage, reproduce reruns every committed stage, so its lock check names
    those stages' corpora (it verified keyword-full's data only, whatever it reran)."""
    import json

    from click.testing import CliRunner

    from bench.cli import cli

    quality = {"runs": [{"model": "bge-v2-m3", "depth": 100, "means": {"ndcg@10": 0.5}}]}
    root = tmp_git_repo(
        [
            {
                "runs/first-stage/hybrid-71k.trec": "q Q0 d 1 1.0 fs\n",
                "results/quality/hybrid-71k.json": json.dumps(quality),
            }
        ]
    )
    seen: list[list[str]] = []

    def preflight(kind: str, *, lock_names: list[str], root: object = None) -> dict[str, str]:
        seen.append(list(lock_names))
        raise SystemExit(7)  # stop here: the rest needs the hub data

    monkeypatch.setenv("BENCH_ROOT", str(root))
    monkeypatch.setattr("bench.records.guard.preflight", preflight)
    result = CliRunner().invoke(cli, ["reproduce", "--out", str(root / "reproduce" / "x")])
    assert result.exit_code == 7, result.output
    assert seen == [["miracl", "corpus-71k"]]


def test_a_measurement_reproduction_refuses_the_lexical_stand_in(tmp_git_repo, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """bm25-standin scores with the rehearsal corpus's term statistics; a measurement has no such corpus, so
    `bench reproduce --model bm25-standin` without --bundled/--dataset is one line with the fix, exit 1,
    before any lock check, data or model load, and nothing written (it was a BenchError naming
    load_reranker's keyword, raised only when the model came to be loaded)."""
    from click.testing import CliRunner

    from bench.cli import cli

    def preflight(*args: object, **kwargs: object) -> None:
        raise AssertionError("the lock check ran before the refusal")

    root = tmp_git_repo([{"runs/first-stage/keyword-71k.trec": "q Q0 d 1 1.0 fs\n"}])
    monkeypatch.setenv("BENCH_ROOT", str(root))
    monkeypatch.setattr("bench.records.guard.preflight", preflight)
    out = root / "reproduce" / "x"
    result = CliRunner().invoke(cli, ["reproduce", "--model", "bm25-standin", "--out", str(out)])
    assert result.exit_code == 1 and not out.exists()
    assert result.output == (
        "Error: bm25-standin is the rehearsal's lexical stand-in: it scores with the term statistics of the "
        "rehearsal corpus its runs came from, which a measurement does not have; reproduce it with --bundled "
        "or --dataset DIR (the rehearsal's inputs), or leave it out (--model)\n"
    )
