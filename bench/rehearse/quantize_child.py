"""Quantise the rehearsal's stand-in in a child process, so the calibration's memory ends with it.

Quantising in the rehearsal's own process left about 1.4 GB of nncf, OpenVINO and calibration memory
behind; the int8 timing at k = 100 then added about 1.9 GB of OpenVINO buffers, and the first run's peak
went over the rehearsal's 4 GB budget (4.15 GB measured). In a child the memory is returned when it exits.

``run_in_child`` starts ``python -m bench.rehearse.quantize_child ARGS_JSON PARENT_PID``. The child asks
for SIGTERM when its parent dies (``prctl(PR_SET_PDEATHSIG)``, as the Typesense launcher does), so a
rehearsal killed by SIGKILL leaves no quantisation running; ``quantize_model`` builds its folder beside the
target and swaps it in whole, so a killed child leaves no half-made folder in the cache. Library messages
go where the parent's go (``bench.core.liblog.active``): the child imports torch, optimum and nncf before its
``library_log`` block starts (they install terminal handlers on import) and sends their Python warnings
(torch's TracerWarnings of the export) to the same file. A refusal (``BenchError``) is written to a result
file and raised again in the parent with the same message.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from bench.core.errors import BenchError
from bench.core.liblog import active, library_log
from bench.core.memory import collector_paused
from bench.firststage.launcher import EXIT_PARENT_GONE, set_parent_death_signal
from bench.int8.quantize import quantize_model
from bench.rerankers.openvino.config import QuantSpec
from bench.rerankers.openvino.runtime import decline_usage_telemetry

EXIT_REFUSED = 3


def run_in_child(
    source: Path,
    out: Path,
    *,
    task: str,
    pairs: list[tuple[str, str]],
    spec: dict[str, Any],
    max_length: int,
    record: dict[str, Any],
) -> dict[str, Any]:
    """``bench.int8.quantize.quantize_model`` in a child process; returns the manifest it wrote."""
    log = active()
    args = {
        "source": str(source),
        "out": str(out),
        "task": task,
        "pairs": [list(p) for p in pairs],
        "spec": spec,
        "max_length": max_length,
        "record": record,
        "library_log": str(log[0]) if log else None,
        "verbose": bool(log[1]) if log else False,
    }
    with tempfile.TemporaryDirectory(prefix="bench-quantize-") as tmp:
        args_path = Path(tmp) / "args.json"
        result_path = Path(tmp) / "result.json"
        args["result"] = str(result_path)
        args_path.write_text(json.dumps(args), encoding="utf-8")
        cmd = [sys.executable, "-m", "bench.rehearse.quantize_child", str(args_path), str(os.getpid())]
        # What the child prints on stdout is nncf's progress bars (rich, on stdout): a library's output, so it
        # goes to the library log with the rest, or to our stderr without a log or with --verbose
        # (our stdout is the rehearsal's summary). The child's stderr stays ours: its errors and tracebacks.
        with _child_stdout(log) as child_out:  # not `out`: that is the model folder (a Path) above
            code = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=child_out, check=False).returncode
        result = json.loads(result_path.read_text(encoding="utf-8")) if result_path.is_file() else {}
    if code == 0 and "manifest" in result:
        return dict(result["manifest"])
    if "error" in result:
        raise BenchError(result["error"])
    raise BenchError(
        f"int8: quantising the stand-in in a child process failed (exit {code}); its messages are above "
        "on stderr. Nothing was written to the cache; run the rehearsal again."
    )


@contextlib.contextmanager
def _child_stdout(log: tuple[Path, bool] | None) -> Iterator[IO[str] | int]:
    if log is None or log[1]:
        yield sys.__stderr__ if sys.__stderr__ is not None else 2
        return
    log[0].parent.mkdir(parents=True, exist_ok=True)
    with log[0].open("a", encoding="utf-8") as sink:
        yield sink


def _import_libraries() -> None:
    """Import what quantising uses before ``library_log`` takes the libraries' terminal handlers: torch adds
    its handler on import (``torch._logging``; its "No CUDA runtime is found" comes through it), optimum on
    first use (its "Could not infer whether the model was already converted").

    The imports make about 600,000 long-lived objects: the cyclic garbage collector is off while they are
    made (its full passes over the growing heap cost about a CPU-second) and they are frozen afterwards, so
    the export's and calibration's collections (the exporter calls ``gc.collect()`` itself) skip them."""
    decline_usage_telemetry()
    with collector_paused():
        # lazy: heavy optional libraries, only in the child that quantises
        import nncf  # noqa: F401
        import optimum.intel
        import optimum.utils.logging
        import torch  # noqa: F401

        optimum.utils.logging.get_logger("optimum")  # optimum adds its terminal handler on first use: now
    gc.freeze()


def main(argv: list[str]) -> int:
    if len(argv) != 2 or not argv[1].isdigit():
        print("usage: python -m bench.rehearse.quantize_child ARGS_JSON PARENT_PID", file=sys.stderr)
        return 2
    set_parent_death_signal()
    if os.getppid() != int(argv[1]):
        print(f"quantize_child: parent {argv[1]} is gone; not quantising", file=sys.stderr)
        return EXIT_PARENT_GONE
    args = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    result = Path(args["result"])

    if args["library_log"]:
        _import_libraries()
    block = (
        library_log(Path(args["library_log"]), verbose=args["verbose"], capture_warnings=True)
        if args["library_log"]
        else contextlib.nullcontext()
    )
    try:
        with block:
            manifest = quantize_model(
                Path(args["source"]),
                Path(args["out"]),
                task=args["task"],
                pairs=[(q, p) for q, p in args["pairs"]],
                spec=QuantSpec.from_dict(args["spec"]),
                max_length=int(args["max_length"]),
                record=args["record"],
            )
    except BenchError as exc:
        result.write_text(json.dumps({"error": exc.message}), encoding="utf-8")
        return EXIT_REFUSED
    except KeyboardInterrupt:  # Ctrl-C reaches the whole process group; the parent says what happened
        return 130
    result.write_text(json.dumps({"manifest": manifest}, default=str), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
