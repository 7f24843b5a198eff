# syntax=docker/dockerfile:1
# The study's one container (PLAN.md, "Reproducibility and licences"): Python 3.14.8, every package from
# uv.lock, base image pinned by digest. Build and run through compose.yaml:
#   docker compose build bench && docker compose run --rm bench <phase> ...
# The checkout is mounted at /study at run time (compose.yaml), so manifests name its git commit.
# compose runs the container as the invoking user (user: "${UID}:${GID}"), who has no entry in /etc/passwd:
# the image is only read at run time (/opt/venv, /opt/ref-*, written here with umask 022), git's
# safe.directory is set system-wide, and HOME and the caches point into the mount (compose.yaml).
#
# Base image: the official Docker Hub image python:3.14.8-slim-trixie (https://hub.docker.com/_/python), pinned
# by the digest below. The digest has not yet been checked against the registry (no internet on the development
# machines; DEVIATIONS.md D-003). To confirm it, on a machine with Docker and internet:
#   docker/pin-digests.sh --check
ARG PYTHON_IMAGE=python:3.14.8-slim-trixie@sha256:89fb7d3da20043c370643435258bdd7ab755d326d359001d02988ed15ae5219e
FROM ${PYTHON_IMAGE}

# git: provenance (commit + dirty flag) of the mounted checkout; openssl: `bench data verify` benchmark.
# Debian packages come from the pinned base image's release; their versions are recorded by the manifest.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends git openssl ca-certificates \
    && rm -rf /var/lib/apt/lists/*

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    UV_COMPILE_BYTECODE=1 \
    UV_LINK_MODE=copy \
    UV_PYTHON_DOWNLOADS=never \
    UV_PROJECT_ENVIRONMENT=/opt/venv \
    PATH=/opt/venv/bin:$PATH \
    BENCH_ROOT=/study

RUN pip install --no-cache-dir uv==0.13.9

WORKDIR /study
# Dependencies first (cached layer), then the project itself; both strictly from uv.lock. The dev group
# (linters, test tools) is not part of the measuring image.
COPY pyproject.toml uv.lock README.md ./
RUN uv sync --locked --no-dev --no-install-project
# The deciding references of adapter check 1 run in their own locked environments (references/README.md),
# outside the mounted checkout; bench.equality finds them through BENCH_REFERENCE_PYTHON_<ENV>.
COPY references/tf457/pyproject.toml references/tf457/uv.lock ./references/tf457/
COPY references/mxbai/pyproject.toml references/mxbai/uv.lock ./references/mxbai/
RUN UV_PROJECT_ENVIRONMENT=/opt/ref-tf457 uv sync --locked --project references/tf457 --no-install-project \
    && UV_PROJECT_ENVIRONMENT=/opt/ref-mxbai uv sync --locked --project references/mxbai --no-install-project
ENV BENCH_REFERENCE_PYTHON_TF457=/opt/ref-tf457/bin/python \
    BENCH_REFERENCE_PYTHON_MXBAI=/opt/ref-mxbai/bin/python
COPY bench ./bench
COPY analysis ./analysis
RUN uv sync --locked --no-dev \
    && git config --system --add safe.directory /study

ENTRYPOINT ["bench"]
CMD ["--help"]
