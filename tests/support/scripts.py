"""Modules that are not in a package (the scripts in ``benchmarks/``, the reference code in ``references/``),
loaded from their file for a test: no ``sys.path`` edit, so no other module of that folder can shadow an
import elsewhere. A module is loaded once per name and kept in ``sys.modules`` (dataclasses and pickling look
it up there)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def load_file(path: Path, name: str | None = None) -> ModuleType:
    """The module in ``path`` under ``name`` (default: the file's stem)."""
    name = name or path.stem
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path}: not a Python module file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def benchmark(name: str) -> ModuleType:
    """``benchmarks/<name>.py``."""
    return load_file(ROOT / "benchmarks" / f"{name}.py")
