"""Atomic small-file writes: temp file in the same folder, fsync, rename (never a half-written file)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from analysis.atomic import write_bytes_atomic

__all__ = ["write_bytes_atomic", "write_json_atomic"]


def write_json_atomic(path: Path, obj: Any) -> None:
    text = json.dumps(obj, indent=2, ensure_ascii=False, sort_keys=False, allow_nan=False) + "\n"
    write_bytes_atomic(path, text.encode("utf-8"))
