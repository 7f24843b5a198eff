#!/usr/bin/env bash
# A Debian trixie userland with Python 3.14 from Debian's own packages, made with debootstrap: the stand-in for
# the study's image (python:3.14.8-slim-trixie) on machines without Docker. Used by .ci/run (the torch-free
# tests on 3.14) and reusable for the whole-image proxy. Needs root and debootstrap (apt-get install debootstrap).
#
#   .ci/chroot-py314.sh TARGET                 build (or check) the chroot in TARGET, print its Python version
#   .ci/chroot-py314.sh TARGET -- CMD [ARG..]  the same, then run CMD inside with /proc, /dev, /dev/pts, /sys
#                                              mounted and each BENCH_CHROOT_BIND="SRC:DST ..." bound (DST
#                                              inside the chroot); every mount is private to the run (its own
#                                              mount namespace) and undone on exit, failure and interrupt
#
# Idempotent: a finished chroot carries TARGET/etc/bench-chroot.env (Debian release, Python and uv versions, build
# date) and is not rebuilt; a half-built one (no such file) is completed by running the script again. TARGET must
# lie outside the repository (e.g. /var/tmp/bench-py314); it is never committed.
#
# This network (docs/field-notes.md, "The study's own stack"): trixie has no python3.14, the mirror's sid has it but its
# Release has expired, so sid is listed with [check-valid-until=no] and trixie stays the default release (only
# python3.14 and what it needs come from sid). HTTPS is intercepted: the host's extra CA certificates
# (/usr/local/share/ca-certificates/*.crt) are installed in the chroot, or pip and uv cannot reach PyPI.
# Environment: BENCH_CHROOT_MIRROR (default http://deb.debian.org/debian), BENCH_CHROOT_UV (default 0.13.9, the
# Dockerfile's pin), BENCH_CHROOT_BIND (bind mounts for the `--` form).
set -euo pipefail

if [[ $# -lt 1 || "$1" == -* ]]; then
  echo "usage: $0 TARGET [-- CMD [ARG...]]  (TARGET: the chroot directory, outside the repository)" >&2
  exit 2
fi
target=$(realpath -m "$1")
shift
mirror=${BENCH_CHROOT_MIRROR:-http://deb.debian.org/debian}
uv_version=${BENCH_CHROOT_UV:-0.13.9}
stamp="$target/etc/bench-chroot.env"
repo=$(realpath "$(dirname "$0")/..")

if [[ $(id -u) -ne 0 ]]; then
  echo "$0: needs root (debootstrap, chroot, mount); run it as root or under sudo" >&2
  exit 2
fi
case "$target/" in
  "$repo"/*) echo "$0: $target lies inside the repository $repo; choose a directory outside it" >&2; exit 2 ;;
esac

# Every mount lives in a private mount namespace of this run (unshare): two runs on one TARGET do not see or
# undo each other's mounts, and a killed run leaves none behind on the host. The trap unmounts them as well.
if [[ -z "${BENCH_CHROOT_NAMESPACE:-}" ]]; then
  command -v unshare >/dev/null || { echo "$0: unshare (util-linux) not found" >&2; exit 2; }
  BENCH_CHROOT_NAMESPACE=1 exec unshare --mount --propagation private "$0" "$target" "$@"
fi

mounted=()
cleanup() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    umount -l "${mounted[i]}" 2>/dev/null || true
  done
  mounted=()
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT TERM

mount_into() {  # mount_into DST mount-args...: mount below the chroot and remember it for cleanup
  local dst="$target$1"
  shift
  mkdir -p "$dst"
  mount "$@" "$dst"
  mounted+=("$dst")
}

mount_system() {
  mount_into /proc -t proc proc
  mount_into /sys --bind /sys
  mount_into /dev --bind /dev
  mount_into /dev/pts --bind /dev/pts
}

in_chroot() {  # a clean environment: nothing of the host's (PIP_FIND_LINKS, the venv, PATH) leaks in
  env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
    DEBIAN_FRONTEND=noninteractive SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
    chroot "$target" "$@"
}

build() {
  local t0=$SECONDS
  # a fresh machine has no debootstrap: install it from Debian's packages (CI runs as root)
  if ! command -v debootstrap >/dev/null && command -v apt-get >/dev/null; then
    apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap >&2 || true
  fi
  command -v debootstrap >/dev/null || {
    echo "$0: debootstrap not found and could not be installed; install it: apt-get install debootstrap" >&2
    exit 2
  }
  if [[ ! -x "$target/usr/bin/apt-get" ]]; then
    mkdir -p "$target"
    debootstrap --variant=minbase trixie "$target" "$mirror"
  fi
  cat > "$target/etc/apt/sources.list" <<EOF
deb $mirror trixie main
deb [check-valid-until=no] $mirror sid main
EOF
  echo 'APT::Default-Release "trixie";' > "$target/etc/apt/apt.conf.d/90bench-default-release"
  cp /etc/resolv.conf "$target/etc/resolv.conf"
  mkdir -p "$target/usr/local/share/ca-certificates"
  shopt -s nullglob
  local crt
  for crt in /usr/local/share/ca-certificates/*.crt; do
    cp "$crt" "$target/usr/local/share/ca-certificates/"
  done
  shopt -u nullglob
  mount_system
  in_chroot apt-get update -q
  # The Dockerfile's packages (git, openssl, ca-certificates) from trixie; Python 3.14 from sid.
  in_chroot apt-get install -y -q --no-install-recommends git openssl ca-certificates
  in_chroot update-ca-certificates
  in_chroot apt-get install -y -q --no-install-recommends -t sid python3.14 python3.14-venv
  # uv as the Dockerfile installs it (pip, pinned), in its own venv so that Debian's python stays untouched.
  if [[ ! -x "$target/opt/uv/bin/uv" ]] || [[ $(in_chroot /opt/uv/bin/uv --version) != "uv $uv_version"* ]]; then
    in_chroot python3.14 -m venv /opt/uv
    in_chroot /opt/uv/bin/pip install --quiet --no-cache-dir "uv==$uv_version"
  fi
  ln -sf /opt/uv/bin/uv "$target/usr/local/bin/uv"
  in_chroot apt-get clean
  cleanup
  local py deb
  py=$(in_chroot python3.14 -c 'import platform; print(platform.python_version())')
  deb=$(dpkg-query --admindir="$target/var/lib/dpkg" -W -f='${Version}' python3.14)
  {
    echo "DEBIAN_RELEASE=trixie (python3.14 from sid)"
    echo "DEBIAN_VERSION=$(cat "$target/etc/debian_version")"
    echo "PYTHON_VERSION=$py"
    echo "PYTHON_DEB=$deb"
    echo "UV_VERSION=$(in_chroot uv --version | cut -d' ' -f2)"
    echo "BUILT=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "BUILD_SECONDS=$((SECONDS - t0))"
  } > "$stamp.tmp"
  mv "$stamp.tmp" "$stamp"
}

if [[ -f "$stamp" ]] && in_chroot python3.14 -c 'pass' 2>/dev/null; then
  echo "chroot ready: $target" >&2
else
  build
  echo "chroot built: $target" >&2
fi
cat "$stamp" >&2

if [[ $# -gt 0 ]]; then
  if [[ "$1" != "--" ]]; then
    echo "usage: $0 TARGET [-- CMD [ARG...]]" >&2
    exit 2
  fi
  shift
  [[ $# -gt 0 ]] || { echo "$0: nothing to run after --" >&2; exit 2; }
  mount_system
  for pair in ${BENCH_CHROOT_BIND:-}; do
    src=${pair%%:*}
    dst=${pair#*:}
    mount_into "$dst" --bind "$src"
  done
  status=0
  in_chroot "$@" || status=$?
  cleanup
  exit "$status"
fi
