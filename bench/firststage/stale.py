"""Owner records for the local Typesense's temporary folders, and the sweep of stale ones.

``local_typesense`` keeps the server's data and log in ``<tmp>/bench-typesense-*``. A harness killed by
SIGKILL cannot remove that folder (its server stops itself: ``bench.firststage.launcher``). So each folder
holds ``owner.json``, naming the harness and the server process, each by PID *and* start time (field 22 of
``/proc/PID/stat``), so that a PID reused by an unrelated process is not mistaken for the owner. The next
start sweeps a folder only if all of this holds: its name is ours, it belongs to this user, its owner
record is readable, and neither the owner nor the server process is alive. Anything else (another
engineer's live server, a folder written by older code without a record, a record being written) is left
alone.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from analysis.core.atomic import write_json_atomic

PREFIX = "bench-typesense-"
OWNER_FILE = "owner.json"
FORMAT = "bench-typesense-owner/1"


def process_start(pid: int) -> int | None:
    """The start time of a live process (clock ticks since boot), or None if it does not exist or is a
    zombie (exited, not yet reaped: it holds no folder and serves nothing)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2 :].split()  # the command name may contain spaces and ")"
    if not fields or fields[0] in ("Z", "X"):
        return None
    return int(fields[19])  # field 22 of proc(5); fields[0] is field 3


def is_alive(pid: Any, start: Any) -> bool:
    """Whether process ``pid`` still runs and is the one that started at ``start``."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    now = process_start(pid)
    return now is not None and now == start


def write_owner(folder: Path, server_pid: int) -> None:
    """Record this process as the owner of ``folder`` and ``server_pid`` as its server (atomic rename)."""
    record = {
        "format": FORMAT,
        "owner_pid": os.getpid(),
        "owner_start": process_start(os.getpid()),
        "server_pid": server_pid,
        "server_start": process_start(server_pid),
    }
    write_json_atomic(folder / OWNER_FILE, record)


def stale_reason(folder: Path) -> str | None:
    """Why ``folder`` may be removed, or None if it must be left alone."""
    try:
        if folder.is_symlink() or not folder.is_dir() or folder.stat().st_uid != os.getuid():
            return None
        record = json.loads((folder / OWNER_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        return None
    if is_alive(record.get("owner_pid"), record.get("owner_start")):
        return None
    if is_alive(record.get("server_pid"), record.get("server_start")):
        return None
    return f"owner process {record.get('owner_pid')} and server process {record.get('server_pid')} have ended"


def sweep_stale(root: Path | None = None, log: Callable[[str], None] | None = None) -> list[Path]:
    """Remove our stale Typesense folders under ``root`` (default: the temporary directory); returns them."""
    base = Path(root) if root is not None else Path(tempfile.gettempdir())
    removed: list[Path] = []
    try:
        candidates = sorted(p for p in base.iterdir() if p.name.startswith(PREFIX))
    except OSError:
        return removed
    for folder in candidates:
        reason = stale_reason(folder)
        if reason is None:
            continue
        try:
            shutil.rmtree(folder)
        except FileNotFoundError:  # another start swept it at the same moment
            continue
        except OSError as exc:
            if log is not None:
                log(f"could not remove stale Typesense folder {folder} ({reason}): {exc}")
            continue
        removed.append(folder)
        if log is not None:
            log(f"removed stale Typesense folder {folder} ({reason})")
    return removed
