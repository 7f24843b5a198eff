#!/usr/bin/env bash
# Resolve and check the image digests pinned in docker/bench.Dockerfile (syntax frontend, base) and compose.yaml.
# Needs a Docker engine with internet access (run it on the measurement desktop, not on the dev machines).
#
#   docker/pin-digests.sh           print tag -> digest now in the registry next to the pinned digest
#   docker/pin-digests.sh --check   exit 1 if a pinned image (tag@digest) cannot be pulled, i.e. the digest is
#                                   not a real image of that tag; a tag that has moved on since is only reported
#
# The Typesense image is fixed by PLAN.md and is only checked, never re-pinned. If the Python digest has to
# change, edit the ARG in docker/bench.Dockerfile and record the change in DEVIATIONS.md (D-003 explains why).
set -euo pipefail
cd "$(dirname "$0")/.."

mode="${1:-print}"
command -v docker >/dev/null || { echo "docker not found: run this on a machine with a Docker engine" >&2; exit 2; }

pinned_refs() {
  sed -n '1s/^# syntax=\(.*@sha256:[0-9a-f]\{64\}\)$/\1/p' docker/bench.Dockerfile
  sed -n 's/^ARG PYTHON_IMAGE=\(.*\)$/\1/p' docker/bench.Dockerfile
  sed -n 's/^x-typesense-image: &typesense-image \(.*@sha256:[0-9a-f]\{64\}\)$/\1/p' compose.yaml
}

status=0
while read -r ref; do
  tag="${ref%@*}"
  pinned="${ref#*@}"
  if ! docker pull --quiet "$tag" >/dev/null; then
    echo "FAIL  $tag: cannot pull (offline?)" >&2
    status=1
    continue
  fi
  current="$(docker image inspect --format '{{range .RepoDigests}}{{println .}}{{end}}' "$tag" \
    | sed -n 's/^.*@\(sha256:[0-9a-f]\{64\}\)$/\1/p' | head -n 1)"
  if docker pull --quiet "$ref" >/dev/null 2>&1; then pullable="pullable"; else pullable="NOT pullable"; fi
  if [[ "$current" == "$pinned" ]]; then
    echo "OK    $tag  $pinned ($pullable)"
  else
    echo "MOVED $tag  pinned $pinned ($pullable), tag now points to $current"
  fi
  if [[ "$mode" == "--check" && "$pullable" != "pullable" ]]; then status=1; fi
done < <(pinned_refs)
exit "$status"
