#!/usr/bin/env bash
# A proxy of the study's image without Docker: a Debian trixie chroot with Python 3.14 from
# Debian (.ci/chroot-py314.sh, the builder of CI on 3.14), the commit under test cloned to /study, then THE SAME
# docker/install.sh that docker/bench.Dockerfile runs, with the Dockerfile's ENV; then the checks. On demand,
# never in CI. Results and what they mean: docs/image-proxy.md (record each run there).
#
#   docker/proxy/run.sh [STAGE ...]     default: build image help equality rehearse pytest
#
#   build     the chroot (.ci/chroot-py314.sh; reused when it exists)
#   image     clone HEAD to /study, remove the three environments, run docker/install.sh system, deps, project;
#             measure them
#   help      `bench --help` and `analysis --help` in the image's environment (nothing added)
#   tools     /study to HEAD, and the groups the image leaves out (dev, rehearsal) added to /opt/venv: what the
#             next stages need; run automatically once per invocation, before the first of equality, rehearse
#             and pytest (again after an image stage), so the checks always run HEAD; each check's log starts
#             with the commit it ran
#   equality  pytest tests/equality (the reference environments on the tiny models), one process
#   rehearse  the whole `bench rehearse`
#   pytest    the README's test command: ruff, lint-imports, mypy, pytest -q (PYTEST_ADDOPTS=-vv)
#   before    /opt as the Dockerfile of PROXY_BEFORE_REV installed it (UV_LINK_MODE=copy; the RUN lines of
#             that commit, written out below), measured the same way, in its own root PROXY_ROOT-before
#
# Environment: PROXY_ROOT (default /var/tmp/image-proxy/root), PROXY_LOGS (default
# /var/tmp/image-proxy/logs/<UTC time>), PROXY_TIMEOUT_S (per stage, default 5400), PROXY_BEFORE_REV (default
# 37c39f4, the last commit before docker/install.sh). Each stage's output goes to PROXY_LOGS/<stage>.log and one
# line per stage to PROXY_LOGS/summary.tsv: stage, exit status, wall s, user s, sys s (the stage's processes),
# load average at the start. Exit status: 1 if any stage failed.
set -euo pipefail

repo="$(cd "$(dirname "$0")/../.." && pwd)"
root="${PROXY_ROOT:-/var/tmp/image-proxy/root}"
logs="${PROXY_LOGS:-/var/tmp/image-proxy/logs/$(date -u +%Y%m%dT%H%M%SZ)}"
limit="${PROXY_TIMEOUT_S:-5400}"
before_rev="${PROXY_BEFORE_REV:-37c39f4}"
builder="$repo/.ci/chroot-py314.sh"
mkdir -p "$logs"
stages=("$@")
[[ ${#stages[@]} -gt 0 ]] || stages=(build image help equality rehearse pytest)

# docker/bench.Dockerfile's ENV, for every command in the chroot. In the image, python is /usr/local/bin/python
# (3.14.8 with pip); here it is Debian's python3.14 through a venv at /usr/local/py (Debian's own python refuses
# pip, PEP 668), ahead of the builder's own uv (/opt/uv): docker/install.sh installs the pinned uv into it.
image_env='export PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 UV_PYTHON_DOWNLOADS=never \
  UV_PROJECT_ENVIRONMENT=/opt/venv PATH=/opt/venv/bin:/usr/local/py/bin:$PATH \
  BENCH_ROOT=/study BENCH_REFERENCE_PYTHON_TF457=/opt/ref-tf457/bin/python \
  BENCH_REFERENCE_PYTHON_MXBAI=/opt/ref-mxbai/bin/python; cd /study'

# This network only (not the image): its HTTPS interception CA, which the builder copied in, for pip and uv.
net_env='export SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt PIP_CERT=/etc/ssl/certs/ca-certificates.crt'

in_chroot() { "$builder" "$1" -- /bin/bash -c "set -e; $net_env; $image_env; $2"; }

status=0
run_stage() {  # run_stage NAME: the stage's body (stage_body) timed, bounded by PROXY_TIMEOUT_S, logged
  local name="$1"
  local load t0 t1 rc
  load="$(cut -d' ' -f1-3 /proc/loadavg)"
  echo "== $name ($(date -u +%FT%TZ), load $load)" | tee -a "$logs/$name.log"
  local TIMEFORMAT="%R %U %S"
  set +e
  { time timeout --kill-after=60 "$limit" "$0" --stage "$name" >>"$logs/$name.log" 2>&1; } 2>"$logs/$name.time"
  rc=$?
  set -e
  local t2
  read -r t0 t1 t2 < <(tail -n 1 "$logs/$name.time")
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$rc" "$t0" "$t1" "$t2" "$load" | tee -a "$logs/summary.tsv"
  [[ "$rc" == 0 ]] || status=1
  return 0
}

clone_to() {  # clone_to ROOT REV: the commit (never the uncommitted work tree) at ROOT/study
  local r="$1" rev="$2"
  rm -rf "$r/study"
  git clone --quiet --no-hardlinks "$repo" "$r/study"
  git -C "$r/study" checkout --quiet --detach "$rev"
}

bootstrap_python() {  # the stand-in for the image's /usr/local/bin/python with pip
  in_chroot "$1" '[ -x /usr/local/py/bin/python ] || python3.14 -m venv /usr/local/py; python --version'
}

envs='/opt/venv /opt/ref-tf457 /opt/ref-mxbai'
measure() {  # the three environments together, each file once (du counts a hardlinked file once per call)
  in_chroot "$1" "du -sc --block-size=1M $envs; du -shc $envs; du -sh /opt/*"'
    for d in '"$envs"'; do du -sh "$d"; done
    echo "files with more than one link:"; find /opt -type f -links +1 | wc -l
    ls -d /opt/.uv-cache /root/.cache/uv 2>/dev/null || echo "no uv cache left"
    python --version; /opt/venv/bin/python --version; uv --version
    dpkg-query -W python3.14 libc6 openssl git'
}

image() {
  for d in $envs /opt/.uv-cache; do rm -rf "${root:?}$d"; done
  clone_to "$root" "$(git -C "$repo" rev-parse HEAD)"
  bootstrap_python "$root"
  in_chroot "$root" 'docker/install.sh system; docker/install.sh deps; docker/install.sh project
    git -C /study log -1 --format="commit %H %s"'
  measure "$root"
}

before() {  # the RUN lines of docker/bench.Dockerfile at 37c39f4, with its ENV (UV_LINK_MODE=copy)
  local r="$root-before"
  "$builder" "$r"
  for d in $envs /root/.cache/uv; do rm -rf "${r:?}$d"; done
  clone_to "$r" "$before_rev"
  bootstrap_python "$r"
  in_chroot "$r" 'export UV_COMPILE_BYTECODE=1 UV_LINK_MODE=copy  # that Dockerfile's ENV beside image_env's
    apt-get update && apt-get install -y --no-install-recommends git openssl ca-certificates
    python -m pip install --no-cache-dir uv==0.13.9
    uv sync --locked --no-dev --no-install-project
    UV_PROJECT_ENVIRONMENT=/opt/ref-tf457 uv sync --locked --project references/tf457 --no-install-project
    UV_PROJECT_ENVIRONMENT=/opt/ref-mxbai uv sync --locked --project references/mxbai --no-install-project
    uv sync --locked --no-dev; git -C /study log -1 --format="commit %H %s"
    echo "uv cache (left in the layers): $(du -sh /root/.cache/uv)"'
  measure "$r"
}

tools() {  # outside the image: what the tests and the rehearsal need, from the same lock; its cache removed.
  # /study moves to HEAD first (the project is installed editable, so the checks run HEAD's code; a changed
  # uv.lock makes `uv sync --locked` install its packages, and then the image stage must run again)
  clone_to "$root" "$(git -C "$repo" rev-parse HEAD)"
  in_chroot "$root" 'UV_CACHE_DIR=/var/tmp/uv-tools uv sync --locked; rm -rf /var/tmp/uv-tools'
}

at='git -C /study log -1 --format="commit %H %s"'  # what a check ran: the first line of its log
stage_body() {  # the commands of one stage (run by the script itself under timeout, see run_stage)
  case "$1" in
    build) "$builder" "$root" ;;
    image) image ;;
    before) before ;;
    help) in_chroot "$root" 'bench --help && analysis --help' ;;
    tools) tools ;;
    equality) in_chroot "$root" "$at; python -m pytest -q -n 0 tests/equality" ;;
    rehearse) in_chroot "$root" "$at; bench rehearse" ;;
    # -vv on top of the command's -q: each test's outcome in the log, so that a bounded run says what ran
    pytest) in_chroot "$root" "$at; export PYTEST_ADDOPTS=-vv
      uv run ruff check . && uv run lint-imports && uv run mypy && uv run pytest -q" ;;
    *) echo "run.sh: unknown stage '$1'" >&2; return 2 ;;
  esac
}

if [[ "${stages[0]}" == --stage ]]; then stage_body "${stages[1]}"; exit; fi
# tools before the first check (see the header): a reused root otherwise keeps the commit an earlier invocation
# left at /study (run 4, docs/image-proxy.md)
moved=no
for stage in "${stages[@]}"; do
  case "$stage" in
    equality|rehearse|pytest) [[ $moved == yes ]] || { run_stage tools; moved=yes; } ;;
    image) moved=no ;;  # the image stage clones HEAD itself, without the tools; the checks need them again
  esac
  run_stage "$stage"
done
echo "logs: $logs"
exit "$status"
