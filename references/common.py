"""Small helpers shared by the reference scripts (standalone: torch and transformers only)."""

from __future__ import annotations

from typing import Any


def torch_dtype(name: str | None) -> Any:
    """torch dtype from its name; None or "auto" -> "auto" (the checkpoint's own dtype)."""
    import torch

    if name in (None, "auto"):
        return "auto"
    return getattr(torch, name)


def dtype_kwarg(value: Any) -> dict[str, Any]:
    """transformers >= 4.56 takes ``dtype=``; older releases only ``torch_dtype=``."""
    import transformers

    major, minor = (int(p) for p in transformers.__version__.split(".")[:2])
    return {"dtype": value} if (major, minor) >= (4, 56) else {"torch_dtype": value}


def as_floats(tensor: Any) -> list[float]:
    """fp32 upcast before leaving torch (bf16 would collapse scores into ties)."""
    return [float(x) for x in tensor.detach().float().cpu().reshape(-1).tolist()]
