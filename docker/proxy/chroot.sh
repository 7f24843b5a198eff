#!/usr/bin/env bash
# A Debian trixie userland with Python 3.14 from Debian's own packages (sid), in a chroot: the stand-in for
# the study's image (python:3.14.8-slim-trixie) on machines without Docker. Reusable: docker/proxy/run.sh
# builds it; anything else that needs Python 3.14 on Debian may too.
#
#   docker/proxy/chroot.sh build ROOT      debootstrap trixie into ROOT (skipped if ROOT/.proxy-base exists),
#                                          then python3.14 and python3.14-venv from sid, and the host's CA certificates
#   docker/proxy/chroot.sh exec ROOT CMD…  run CMD (bash -c) inside ROOT with /proc, /sys, /dev mounted and
#                                          a clean environment; the mounts are removed when it ends
#
# Needs root, debootstrap and a Debian mirror (DEBIAN_MIRROR, default http://deb.debian.org/debian). The mirror's
# sid may be a frozen snapshot whose Release has expired: sid is added with check-valid-until=no and trixie
# stays the default release (FIELD-NOTES.md, "The study's own stack"). A network that intercepts HTTPS needs
# its CA: every *.crt in /usr/local/share/ca-certificates of the host is copied in (pip and uv reach PyPI).
set -euo pipefail

mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
die() { echo "chroot.sh: $*" >&2; exit 2; }
[[ $# -ge 2 ]] || die "usage: chroot.sh build ROOT | chroot.sh exec ROOT COMMAND"
action="$1"; root="$2"; shift 2
[[ "$(id -u)" == 0 ]] || die "needs root (debootstrap, chroot, mount)"

in_root() {  # a clean environment: nothing of the host's (PYTHONDONTWRITEBYTECODE, PATH, proxies' vars) leaks in
  env -i HOME=/root TERM="${TERM:-dumb}" LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    chroot "$root" /bin/bash -c "$1"
}

mount_all() {
  local m
  for m in proc sys dev dev/pts; do
    mountpoint -q "$root/$m" && continue
    mkdir -p "$root/$m"
    case "$m" in
      proc) mount -t proc proc "$root/proc" ;;
      sys) mount -t sysfs sys "$root/sys" ;;
      *) mount --bind "/$m" "$root/$m" ;;
    esac
  done
  cp -L /etc/resolv.conf "$root/etc/resolv.conf"
}

enter() {  # one more session in ROOT (sessions may overlap: the last one out removes the mounts)
  mkdir -p "$root/.proxy-sessions"
  touch "$root/.proxy-sessions/$$"
  trap leave EXIT
  mount_all
}

leave() {
  rm -f "$root/.proxy-sessions/$$"
  [[ -z "$(ls -A "$root/.proxy-sessions")" ]] && umount_all
  return 0
}

umount_all() {
  local m
  for m in dev/pts dev sys proc; do
    if mountpoint -q "$root/$m"; then umount "$root/$m" || umount -l "$root/$m"; fi
  done
}

case "$action" in
  build)
    command -v debootstrap >/dev/null || die "debootstrap not found (apt-get install debootstrap)"
    if [[ ! -e "$root/.proxy-base" ]]; then
      mkdir -p "$root"
      debootstrap --variant=minbase trixie "$root" "$mirror"
      touch "$root/.proxy-base"
    fi
    enter
    cat > "$root/etc/apt/sources.list" <<SOURCES
deb $mirror trixie main
deb [check-valid-until=no] $mirror sid main
SOURCES
    printf 'APT::Default-Release "trixie";\n' > "$root/etc/apt/apt.conf.d/90default-release"
    mkdir -p "$root/usr/local/share/ca-certificates"
    cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/" 2>/dev/null || true
    in_root 'set -e; apt-get update -q
      apt-get install -y -q --no-install-recommends ca-certificates
      update-ca-certificates
      apt-get install -y -q --no-install-recommends -t sid python3.14 python3.14-venv
      python3.14 --version'
    ;;
  exec)
    [[ -e "$root/.proxy-base" ]] || die "$root is not a built proxy root (run: chroot.sh build $root)"
    [[ $# -ge 1 ]] || die "exec needs a command"
    enter
    in_root "$1"
    ;;
  *) die "unknown action '$action' (build | exec)" ;;
esac
