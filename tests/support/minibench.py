"""``python -m tests.support.minibench ARGS``: the real ``bench`` / ``analysis`` command line on a miniature
study (tests/runbook).

What differs from ``bench ARGS`` is only the study's *size*: the counts the plan fixes (305 queries, 3,144
judgments, 71,277 and 15,866,222 passages, 712 test-B queries, the 20 check queries with 100 candidates, the
300 calibration pairs, sample sizes and warm-up calls) are set to the miniature's before any other module of
``bench`` is imported, so the row checks, samplers and loaders see the miniature's numbers everywhere. The 32
shards of the full corpus, the depths (20, 50, 100), the seeds, the thresholds, the command line, its
defaults and paths, git and the locks are the real ones. The host's load average reads as idle (the test
machine is shared; the busy-host rule is tested in tests/latency), and the desktop's 8 pinned CPUs are 1.
Never used by a measurement: the study's container runs ``bench`` itself.
"""

from __future__ import annotations

import sys

SIZES = {
    "DEV_QUERIES": 4,
    "DEV_JUDGMENTS": 12,
    "DEV_RELEVANT": 6,
    "CORPUS_71K_PASSAGES": 140,
    "CORPUS_FULL_PASSAGES": 352,  # 11 per shard, 32 shards: 212 outside the 71k, so the int8 calibration
    # draw (2 x 8 positions, the plan's seed) finds its 8 passages outside the 71k corpus
    "EQUALITY_QUERIES": 3,
    "RERANKING_QUERIES": 4,
    "INT8_CALIBRATION_PAIRS": 8,
    "INT8_SPEARMAN_QUERIES": 3,
    "CPU_SAMPLE_QUERIES": 3,  # a sample of the dev queries, as the plan's 100 of 305
    "CPU_QWEN4B_QUERIES": 2,
    "DTYPE_CHECK_QUERIES": 3,
    "WARMUP_CALLS": 2,
    "GPU_PASSES": 1,  # the plan's 3 passes repeat each GPU block (63 blocks, 21 here); several passes with
    # one chunk size across them: tests/latency/test_chunk_and_record.py
    "JUDGED_SAMPLE_PER_GROUP": 2,
    "JUDGED_CONTROL_PAIRS": 4,
    "JUDGED_CONTROL_RELEVANT": 2,
    "JUDGED_CONTROL_NOT_RELEVANT": 2,
    "JUDGED_CONTROL_MIN_AGREEMENT": 3,
    "CPU_PRE_THREADS": 1,  # the desktop's 8 of 16 CPUs; this machine may have 2
}
TEST_B_QUERIES = 12
# counts kept outside bench.core.plan (module -> name -> the miniature's value);
# tests/runbook/test_minibench.py
# checks that every module-level count of these names in bench/ is one of these or bench.core.plan's
OTHER_SIZES = {"bench.data.layout": {"TEST_B_QUERIES": TEST_B_QUERIES}}
COPIES = {"bench.data.miracl": ("TEST_B_QUERIES",)}  # `from bench.data.layout import TEST_B_QUERIES`


def miniaturise() -> None:
    import importlib

    from bench.core import plan

    for name, value in SIZES.items():
        if not hasattr(plan, name):
            raise SystemExit(f"tests/support/minibench.py: bench.core.plan has no {name}; update SIZES")
        setattr(plan, name, value)
    values: dict[str, int] = {}
    for module, sizes in OTHER_SIZES.items():
        mod = importlib.import_module(module)
        for name, value in sizes.items():
            if not hasattr(mod, name):
                raise SystemExit(f"tests/support/minibench.py: {module} has no {name}; update OTHER_SIZES")
            setattr(mod, name, value)
            values[name] = value
    for module, names in COPIES.items():  # a copy made at its import, if that came first
        mod = importlib.import_module(module)
        for name in names:
            setattr(mod, name, values[name])


def idle_host() -> None:
    """The busy-host rule judges the host's load (the load average, and the CPU other processes use); the
    machine that runs the tests is shared, so the miniature reports an idle host (the rule itself is tested
    in tests/latency)."""
    import os

    os.getloadavg = lambda: (0.0, 0.0, 0.0)
    from bench.latency import host

    # the real measurement (the window before each run, the counters around each block) with the host's busy
    # time read as our own, so no other process counts; the window is a tenth of the study's second (an idle
    # host it could only confirm: seven latency commands would each wait out the full second)
    host.system_busy_seconds = host.own_cpu_seconds
    host.FOREIGN_WINDOW_S = 0.1  # type: ignore[misc]


def gpu_preset_on_cpu() -> None:
    """`bench latency gpu` has no --device: its preset names CUDA. The miniature runs it on the CPU timer
    (the CUDA timer and NVML are tested with fakes in tests/latency/test_gpu_path.py)."""
    from dataclasses import replace
    from types import MappingProxyType

    from bench.latency import presets

    gpu = replace(presets.PRESETS["gpu"], device="cpu")
    presets.PRESETS = MappingProxyType({**presets.PRESETS, "gpu": gpu})


def deciding_references_only() -> None:
    """Adapter check 1 decides on one reference per model; the further references (mteb wrappers) are only
    reported, and each costs a process that imports torch and mteb. The miniature runs the deciding ones
    (the further ones are tested in tests/equality)."""
    from bench.equality import references

    references.FURTHER.clear()


def main(argv: list[str]) -> None:
    miniaturise()
    idle_host()
    gpu_preset_on_cpu()
    deciding_references_only()
    if argv and argv[0] == "analysis":
        from analysis.cli import main as analysis_main

        sys.argv = ["analysis", *argv[1:]]
        analysis_main()
        return
    from bench.cli import cli

    cli(args=argv, prog_name="bench")


if __name__ == "__main__":
    main(sys.argv[1:])
