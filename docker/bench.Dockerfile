# syntax=docker/dockerfile:1.7.1@sha256:a57df69d0ea827fb7266491f2813635de6f17269be881f696fbfdf2d83dda33e
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
# The syntax line's frontend image docker/dockerfile:1.7.1 is pinned by the digest that public Dockerfiles pin
# for that tag (read 2026-12-02; not checked against the registry here either); the same script pulls it.
ARG PYTHON_IMAGE=python:3.14.8-slim-trixie@sha256:89fb7d3da20043c370643435258bdd7ab755d326d359001d02988ed15ae5219e
FROM ${PYTHON_IMAGE}

# Every installation step is docker/install.sh (also run by the proxy of this image without Docker,
# docker/proxy/run.sh; docs/image-proxy.md): Debian packages, then uv (version and wheel hashes:
# docker/uv-requirements.txt) and the three environments from their locks in one layer, torch and the CUDA
# libraries stored once (hardlinks from one uv cache, removed in the same layer), then the project.
# The dev and rehearsal groups (linters, test tools, the PyPI Typesense 0.24.1, the all-MiniLM-L6-v2
# stand-in) are not part of the measuring image.
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    UV_PYTHON_DOWNLOADS=never \
    UV_PROJECT_ENVIRONMENT=/opt/venv \
    PATH=/opt/venv/bin:$PATH \
    BENCH_ROOT=/study

WORKDIR /study
COPY docker/install.sh docker/uv-requirements.txt ./docker/
RUN docker/install.sh system

# Dependencies first (cached layer), then the project itself; both strictly from uv.lock. The deciding
# references of adapter check 1 run in their own locked environments (references/README.md), outside the
# mounted checkout; bench.equality finds them through BENCH_REFERENCE_PYTHON_<ENV>.
COPY pyproject.toml uv.lock README.md ./
COPY references/tf457/pyproject.toml references/tf457/uv.lock ./references/tf457/
COPY references/mxbai/pyproject.toml references/mxbai/uv.lock ./references/mxbai/
RUN docker/install.sh deps
ENV BENCH_REFERENCE_PYTHON_TF457=/opt/ref-tf457/bin/python \
    BENCH_REFERENCE_PYTHON_MXBAI=/opt/ref-mxbai/bin/python
COPY bench ./bench
COPY analysis ./analysis
RUN docker/install.sh project

ENTRYPOINT ["bench"]
CMD ["--help"]
