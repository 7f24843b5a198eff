#!/usr/bin/env bash
# The study image's installation, one script for docker/bench.Dockerfile (its RUN lines) and for the proxy
# of the image without Docker (docker/proxy/run.sh, docs/image-proxy.md). Run from the checkout's root as root:
#
#   docker/install.sh system    Debian packages: git (provenance of the mounted checkout), openssl
#                               (`bench data verify` benchmark), ca-certificates
#   docker/install.sh deps      uv (docker/uv-requirements.txt: version and wheel hashes), then the three
#                               environments strictly from their locks, in one step:
#                                 /opt/venv       uv.lock, groups bench (no dev, no rehearsal), no project
#                                 /opt/ref-tf457  references/tf457/uv.lock
#                                 /opt/ref-mxbai  references/mxbai/uv.lock
#   docker/install.sh project   the project itself into /opt/venv; git's safe.directory for /study
#
# Lean: the three environments share torch and the CUDA libraries. They are installed from
# one uv cache on /opt's own filesystem with UV_LINK_MODE=hardlink, so every file of a wheel that two or three
# environments hold is stored once (hardlinks); the cache is deleted at the end of the same step, so no layer
# keeps it. A cache given from outside (UV_CACHE_DIR set, as the proxy does to keep its downloads) stays.
# The rehearsal group (the all-MiniLM-L6-v2 stand-in, the PyPI Typesense 0.24.1 server) and the dev group are
# for tests and `bench rehearse`, never for the measuring image.
set -euo pipefail

VENV=/opt/venv
REF_TF457=/opt/ref-tf457
REF_MXBAI=/opt/ref-mxbai
export UV_COMPILE_BYTECODE=1 UV_PYTHON_DOWNLOADS=never UV_LINK_MODE=hardlink PYTHONDONTWRITEBYTECODE=1

step="${1:-}"
[[ -f uv.lock && -f docker/uv-requirements.txt ]] || {
  echo "docker/install.sh: run it from the checkout's root (uv.lock and docker/ not found in $PWD)" >&2
  exit 2
}

with_cache() {  # run "$@" with a uv cache on /opt's filesystem; delete it afterwards unless it came from outside
  if [[ -n "${UV_CACHE_DIR:-}" ]]; then
    "$@"
  else
    export UV_CACHE_DIR=/opt/.uv-cache
    "$@"
    rm -rf "$UV_CACHE_DIR"
    unset UV_CACHE_DIR
  fi
}

deps() {
  UV_PROJECT_ENVIRONMENT="$VENV" uv sync --locked --no-dev --no-group rehearsal --no-install-project
  UV_PROJECT_ENVIRONMENT="$REF_TF457" uv sync --locked --project references/tf457 --no-install-project
  UV_PROJECT_ENVIRONMENT="$REF_MXBAI" uv sync --locked --project references/mxbai --no-install-project
}

project() {
  UV_PROJECT_ENVIRONMENT="$VENV" uv sync --locked --no-dev --no-group rehearsal
}

case "$step" in
  system)
    apt-get update
    apt-get install -y --no-install-recommends git openssl ca-certificates
    rm -rf /var/lib/apt/lists/*
    ;;
  deps)
    python -m pip install --no-cache-dir --require-hashes --only-binary :all: -r docker/uv-requirements.txt
    mkdir -p /opt
    with_cache deps
    ;;
  project)
    with_cache project
    git config --system --add safe.directory /study
    ;;
  *)
    echo "docker/install.sh: unknown step '$step' (system | deps | project)" >&2
    exit 2
    ;;
esac
