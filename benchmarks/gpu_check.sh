#!/usr/bin/env bash
# The prepared GPU check: tests/gpu/test_gpu.py on the GPU machine, in under 10 minutes.
# The timer against CUDA events, the NVML sampler's cost, the out-of-memory path, tiny models of every family
# in fp16 and bf16, and the Qwen3 reference's memory at the real vocabulary size. Each check prints one
# "GPU-CHECK name: {json}" line; the whole output goes to the log (first argument, default
# gpu-check-<UTC time>.log) for the closing note. Without CUDA every test is skipped and the script says so.
#
# Usage (in the `bench` service, GPU passed through):  benchmarks/gpu_check.sh [LOG]
set -euo pipefail
cd "$(dirname "$0")/.."
log="${1:-gpu-check-$(date -u +%Y%m%dT%H%M%SZ).log}"
if ! uv run python -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    echo "gpu_check: no CUDA device here (torch.cuda.is_available() is False): the GPU checks are skipped" | tee "$log"
fi
uv run python -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda,
    "device", torch.cuda.get_device_name(0) if torch.cuda.is_available() else None)' | tee -a "$log"
# -s: the checks' GPU-CHECK lines; -n 0: one process, one card; a test over 300 s is stopped
timeout 570 uv run pytest -q -s -p no:randomly -n 0 --timeout 300 -m gpu tests/gpu/test_gpu.py -rA 2>&1 \
    | tee -a "$log"
status=${PIPESTATUS[0]}
echo "gpu_check: pytest exit $status; log $log" | tee -a "$log"
exit "$status"
