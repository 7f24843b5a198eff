"""Result files of the adapter checks: ``results/adapter-checks/<model>.json`` (plan: Adapter checks).

Every file names ``rated`` (bool) and ``reason`` (str); the quality phase reads them through ``outcome`` and
skips a model that is not rated. For the Voyage models the file also carries check 3's ``pointwise`` flag,
which decides whether every depth is requested separately. Ids and numbers only, no texts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from analysis.atomic import write_bytes_atomic
from bench.errors import BenchError
from bench.hints import hint
from bench.paths import repo_root


def results_dir(root: Path | None = None) -> Path:
    return (root or repo_root()) / "results" / "adapter-checks"


def result_path(model_id: str, directory: Path) -> Path:
    return directory / f"{model_id}.json"


def write_result(model_id: str, payload: dict[str, Any], directory: Path) -> Path:
    """Atomic write (temp file, fsync, rename); ``payload`` must carry ``rated`` and ``reason``."""
    if not isinstance(payload.get("rated"), bool) or not isinstance(payload.get("reason"), str):
        raise ValueError("an adapter-check result needs `rated` (bool) and `reason` (str)")
    path = result_path(model_id, directory)
    text = json.dumps(payload, indent=2, sort_keys=False, allow_nan=False) + "\n"
    write_bytes_atomic(path, text.encode("utf-8"))
    return path


def outcome(model_id: str, directory: Path | None = None) -> dict[str, Any]:
    """The check outcome of ``model_id``: at least ``model``, ``rated``, ``reason`` (and ``pointwise`` for
    Voyage). A model without a result file is not rated (reason says which command produces it)."""
    directory = directory if directory is not None else results_dir()
    path = result_path(model_id, directory)
    if not path.is_file():
        return {
            "model": model_id,
            "rated": False,
            "reason": f"no adapter-check result at {path}; run `{hint(f'check-adapters {model_id}')}`",
            "missing": True,
        }
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise BenchError(
            f"{path}:{exc.lineno}: not valid JSON ({exc.msg}); rerun `{hint('check-adapters')}`"
        ) from None
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("rated"), bool)
        or not isinstance(data.get("reason"), str)
    ):
        raise BenchError(f"{path}: expected an object with `rated` (bool) and `reason` (str)")
    if data.get("model", model_id) != model_id:
        raise BenchError(f"{path}: the file is for model {data.get('model')!r}, not {model_id!r}")
    out = {"model": model_id, "rated": data["rated"], "reason": data["reason"], "missing": False}
    if "pointwise" in data:
        out["pointwise"] = data["pointwise"]
    return out
