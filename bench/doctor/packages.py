"""Are the installed packages exactly uv.lock's? (PLAN "Reproducibility": every package
pinned by uv.lock).

The expected set is what ``uv sync --locked`` would install for this interpreter: uv.lock's resolution
walked from the project's own entry through its dependencies and the dependency groups that were installed
(the image installs the project and the groups named by ``IMAGE_GROUPS``), every edge kept only where its
PEP 508 marker holds for this interpreter and platform, extras followed where an edge asks for them, and
the locked version chosen by the edge where the lock holds several. Then three lists: a package installed at
another version than the lock's (changed), one the lock expects that is not installed (missing), and one
installed that is in no group of the lock (extra). Packages of groups not installed but present in the
lock (dev tools on a development machine) are neither missing nor extra.
"""

from __future__ import annotations

import copy
import functools
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.markers import Marker, default_environment
from packaging.version import InvalidVersion, Version

from bench.core.errors import BenchError
from bench.doctor.machine import normalise

LOCK = "uv.lock"
IMAGE_GROUPS = ("bench",)  # docker/install.sh deps: `--no-dev --no-group rehearsal`
PROJECT = "miracl-de-rerankers"


@dataclass(frozen=True)
class Differences:
    expected: dict[str, str]  # name -> locked version, for the groups asked for
    changed: list[tuple[str, str, str]]  # (name, locked, installed)
    missing: list[tuple[str, str]]  # (name, locked)
    extra: list[tuple[str, str]]  # (name, installed)


def read_lock(path: Path) -> list[dict[str, Any]]:
    """uv.lock's ``[[package]]`` entries as ``tomllib`` reads them, less each entry's ``sdist`` and ``wheels``
    (the files' addresses and hashes: nothing here reads them, and they are most of the lock). Each call
    gets its own copy; the parse is kept per lock content (:func:`_packages`)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise BenchError(
            f"{path}: cannot read the lock ({exc.strerror}); it belongs to the checkout"
        ) from exc
    try:
        packages = _packages(text)
    except tomllib.TOMLDecodeError as exc:
        raise BenchError(f"{path}: not valid TOML ({exc}); restore it with `git checkout uv.lock`") from exc
    if packages is None:
        raise BenchError(f"{path}: no [[package]] entries; restore it with `git checkout uv.lock`")
    return copy.deepcopy(packages)


_FILES = frozenset({"sdist", "wheels"})
# uv's own layout of a package's files: one `sdist = { ... }` line, and `wheels = [` with one `    { ... },`
# line per wheel up to a `]` line, all at the start of a line (uv writes no multi-line strings)
_SDIST = re.compile(r"^sdist = \{[^\n]*\}$", re.M)
_WHEELS = re.compile(r"^wheels = \[\n(?:    \{[^\n]*\},\n)*\]$", re.M)


@functools.lru_cache(maxsize=4)
def _packages(text: str) -> list[dict[str, Any]] | None:
    """The ``[[package]]`` entries of lock text ``text`` without their files (None: no such list), parsed
    once per content. Where the lock has uv's own layout its files' lines are blanked before the parse
    (a third of the time); the blanked text is parsed only if it reads, else the whole text (the same
    entries, the same errors as ``tomllib.loads`` of the whole)."""
    data: dict[str, Any] | None = None
    if '"""' not in text and "'''" not in text:
        blank = _WHEELS.sub(_blanked, _SDIST.sub("", text))
        try:
            data = tomllib.loads(blank)
        except tomllib.TOMLDecodeError:
            data = None
    if data is None:
        data = tomllib.loads(text)
    packages = data.get("package")
    if not isinstance(packages, list):
        return None
    return [{k: v for k, v in p.items() if k not in _FILES} if isinstance(p, dict) else p for p in packages]


def _blanked(match: re.Match[str]) -> str:
    """A match's text as as many empty lines (the lines after it keep their numbers)."""
    return "\n" * match.group(0).count("\n")


def _holds(marker: str | None, env: Mapping[str, str], extra: str | None = None) -> bool:
    if not marker:
        return True
    return _marker(marker).evaluate({**env, "extra": extra or ""})


@functools.lru_cache(maxsize=4096)
def _marker(text: str) -> Marker:
    """A PEP 508 marker parsed once per text (the lock repeats a few hundred markers on thousands of edges;
    evaluating one does not change it)."""
    return Marker(text)


def _pick(by_name: Mapping[str, list[dict[str, Any]]], edge: Mapping[str, Any], path: Path) -> dict[str, Any]:
    name = normalise(str(edge["name"]))
    candidates = by_name.get(name, [])
    if "version" in edge:
        candidates = [p for p in candidates if p.get("version") == edge["version"]]
    if len(candidates) != 1:
        raise BenchError(
            f"{path}: the lock has {len(candidates)} entries for {name} {edge.get('version', '')}".rstrip()
            + "; regenerate it with `uv lock`"
        )
    return candidates[0]


def expected_set(
    packages: list[dict[str, Any]], groups: Iterable[str], env: Mapping[str, str], path: Path = Path(LOCK)
) -> dict[str, str]:
    """name -> version of everything uv would install from the lock for ``groups`` in environment ``env``."""
    by_name: dict[str, list[dict[str, Any]]] = {}
    for p in packages:
        by_name.setdefault(normalise(str(p["name"])), []).append(p)
    root = _pick(by_name, {"name": PROJECT}, path)
    edges = list(root.get("dependencies", []))
    for g in groups:
        if g not in root.get("dev-dependencies", {}):
            raise BenchError(f"{path}: the project has no dependency group {g!r}")
        edges += root["dev-dependencies"][g]
    out = {PROJECT: str(root["version"])}
    seen: set[tuple[str, str]] = set()
    while edges:
        edge = edges.pop()
        if not _holds(edge.get("marker"), env):
            continue
        pkg = _pick(by_name, edge, path)
        name = normalise(str(pkg["name"]))
        out[name] = str(pkg["version"])
        for extra in ["", *edge.get("extra", [])]:
            if (name, extra) in seen:
                continue
            seen.add((name, extra))
            deps = (
                pkg.get("dependencies", [])
                if not extra
                else pkg.get("optional-dependencies", {}).get(extra, [])
            )
            edges += deps
    return out


def all_locked(packages: list[dict[str, Any]]) -> set[str]:
    return {normalise(str(p["name"])) for p in packages}


def _same(locked: str, installed: str) -> bool:
    try:
        return Version(locked) == Version(installed)
    except InvalidVersion:
        return locked == installed


def compare(
    lock_path: Path,
    installed: Mapping[str, str],
    *,
    groups: Iterable[str] = IMAGE_GROUPS,
    markers: Mapping[str, str] | None = None,
) -> Differences:
    packages = read_lock(lock_path)
    env = {**{k: str(v) for k, v in default_environment().items()}, **(markers or {})}
    expected = expected_set(packages, groups, env, lock_path)
    known = all_locked(packages)
    versions: dict[str, set[str]] = {}
    for p in packages:
        versions.setdefault(normalise(str(p["name"])), set()).add(str(p.get("version", "")))
    changed = []
    for name, have in sorted(installed.items()):
        want = expected.get(name)
        if want is not None and not _same(want, have):
            changed.append((name, want, have))
        elif want is None and name in known and not any(_same(v, have) for v in versions[name]):
            changed.append((name, " or ".join(sorted(versions[name])), have))
    missing = sorted((n, v) for n, v in expected.items() if n not in installed)
    extra = sorted((n, v) for n, v in installed.items() if n not in known)
    return Differences(expected, changed, missing, extra)
