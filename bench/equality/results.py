"""Result files of the adapter checks: ``results/adapter-checks/<model>.json`` (plan: Adapter checks).

Every file names ``rated`` (bool) and ``reason`` (str); the quality phase reads them through ``outcome`` and
skips a model that is not rated. For the Voyage models the file also carries check 3's ``pointwise`` flag,
which decides whether every depth is requested separately. Ids and numbers only, no texts.

A check holds for the device and dtype it ran with (D-036: fp32 on the CPU says little about
fp16 on the GPU). Every file records ``device`` (its kind: ``cuda``, ``cpu``; ``api`` for Voyage) and
``dtype`` (the dtype chosen for the adapter: the vendor's on CUDA, ``float32`` on the CPU, or the one asked
for; ``dtype_loaded`` is what the weights came in). ``<model>.json`` is the check in the setting ``bench
quality`` scores with by default (:data:`SCORING_DEVICE`, the vendor dtype); a check in another setting goes
to ``<model>@<device>-<dtype>.json`` beside it (``bench check-adapters --device cpu`` for ``bench latency
cpu``). ``outcome_for`` returns the check of the setting a command will score in, and a model checked only in
another setting is not rated, with both settings named.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

from analysis.core.atomic import write_json_atomic
from bench.core.errors import BenchError
from bench.core.hints import CPU, GPU, hint
from bench.core.paths import repo_root
from bench.core.plan import RERANKERS
from bench.rerankers.base import choose_dtype

#: The device ``bench quality`` (and ``bench determinism``, ``bench latency gpu``) scores on by default.
SCORING_DEVICE: Final = "cuda"


def device_kind(device: str) -> str:
    """``cuda:1`` -> ``cuda``: a check on one CUDA device holds for the GPU the manifest names."""
    return device.split(":", 1)[0]


def scoring_setting(model_id: str, device: str = SCORING_DEVICE, dtype: str | None = None) -> dict[str, str]:
    """The device kind and dtype the scores of plan model ``model_id`` are produced with on ``device`` with
    the requested ``dtype`` (None: the adapter's own choice, as every loading command makes it)."""
    plan = RERANKERS.get(model_id)
    if plan is None:
        raise BenchError(f"unknown model {model_id!r}; the plan's models: {', '.join(RERANKERS)}")
    if not plan.local:
        return {"device": "api", "dtype": "api"}
    return {"device": device_kind(device), "dtype": choose_dtype(model_id, device, dtype)}


def check_command(model_id: str, setting: dict[str, str]) -> str:
    """The command that checks ``model_id`` in ``setting``, as the author types it in the container."""
    if setting["device"] == "api":
        return hint(f"check-adapters {model_id}", service=CPU)
    service = GPU if setting["device"] == "cuda" else CPU
    args = "" if setting["device"] == SCORING_DEVICE else f" --device {setting['device']}"
    if setting["dtype"] != scoring_setting(model_id, setting["device"])["dtype"]:
        args += f" --dtype {setting['dtype']}"
    return hint(f"check-adapters {model_id}{args}", service=service)


def results_dir(root: Path | None = None) -> Path:
    return (root or repo_root()) / "results" / "adapter-checks"


def result_path(model_id: str, directory: Path, setting: dict[str, str] | None = None) -> Path:
    """``<model>.json`` for the default scoring setting (or none given), else
    ``<model>@<device>-<dtype>.json``."""
    if setting is None or model_id not in RERANKERS or setting == scoring_setting(model_id):
        return directory / f"{model_id}.json"
    return directory / f"{model_id}@{setting['device']}-{setting['dtype']}.json"


def _setting_of(payload: dict[str, Any]) -> dict[str, str] | None:
    device, dtype = payload.get("device"), payload.get("dtype")
    return {"device": device, "dtype": dtype} if isinstance(device, str) and isinstance(dtype, str) else None


def write_result(model_id: str, payload: dict[str, Any], directory: Path) -> Path:
    """Atomic write (``analysis.core.atomic.write_json_atomic``); ``payload`` must carry ``rated`` and
    ``reason``; its ``device`` and ``dtype`` choose the file (:func:`result_path`)."""
    if not isinstance(payload.get("rated"), bool) or not isinstance(payload.get("reason"), str):
        raise ValueError("an adapter-check result needs `rated` (bool) and `reason` (str)")
    path = result_path(model_id, directory, _setting_of(payload))
    write_json_atomic(path, payload)
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
    return _outcome(model_id, path, _read(model_id, path))


def outcome_for(
    model_id: str, directory: Path | None, device: str, dtype: str | None = None
) -> dict[str, Any]:
    """The check outcome of plan model ``model_id`` in the setting its scores will be produced with
    (``device``, requested ``dtype``). A check found only for another setting, or one that records none, is
    "not rated" with both settings named and the command that checks the right one."""
    directory = directory if directory is not None else results_dir()
    want = scoring_setting(model_id, device, dtype)
    others = sorted(directory.glob(f"{model_id}@*.json")) if directory.is_dir() else []
    paths = dict.fromkeys([result_path(model_id, directory, want), result_path(model_id, directory), *others])
    other: tuple[Path, dict[str, Any]] | None = None
    for path in paths:
        if path.is_file():
            data = _read(model_id, path)
            if _setting_of(data) == want:
                return {**_outcome(model_id, path, data), "setting": want}
            other = other or (path, data)
    fix = check_command(model_id, want)
    if other is None:
        return {
            "model": model_id,
            "rated": False,
            "reason": f"no adapter-check result for device {want['device']}, dtype {want['dtype']} in "
            f"{directory}; run `{fix}`",
            "missing": True,
            "setting": want,
        }
    path, data = other
    got = _setting_of(data) or {"device": "not recorded", "dtype": "not recorded"}
    verdict = "passed" if data["rated"] else "did not pass"
    return {
        "model": model_id,
        "rated": False,
        "reason": f"its adapter check ({path.name}) {verdict} on device {got['device']}, dtype "
        f"{got['dtype']}, but these scores are produced on device {want['device']}, dtype "
        f"{want['dtype']}: check it there with `{fix}`",
        "missing": False,
        "setting": want,
        "checked_setting": got,
    }


def _read(model_id: str, path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
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
    return data


def _outcome(model_id: str, path: Path, data: dict[str, Any]) -> dict[str, Any]:
    out = {
        "model": model_id,
        "rated": data["rated"],
        "reason": data["reason"],
        "missing": False,
        "file": str(path),
    }
    if "pointwise" in data:
        out["pointwise"] = data["pointwise"]
    return out


def quality_setting(root: Path, study_dir: Path | None = None) -> tuple[str, str | None]:
    """(device, requested dtype) the quality runs under ``runs/`` were scored with: read from the quality
    study (``study_dir``, default ``studies/quality``; the desktop runs the later phases too), else the
    quality phase's default (CUDA, the vendor dtype). A phase that reads those runs rates their models by
    the check in this setting (``<model>.json`` for the default, ``<model>@<device>-<dtype>.json`` else);
    here, beside the check files' naming, so that every phase may read it (no phase imports another's
    commands)."""
    path = (study_dir or root / "studies" / "quality") / "manifest.json"
    try:
        params = json.loads(path.read_text(encoding="utf-8-sig"))["study"]["params"]
        return str(params["device"]), params.get("dtype")
    except (OSError, ValueError, KeyError, TypeError):
        return SCORING_DEVICE, None
